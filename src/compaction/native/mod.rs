//! Provider-native compaction lanes of the `remote` method (spec: compaction §5.7 step 1, §13):
//! the provider compacts the history itself and returns opaque state that later requests to
//! the same provider replay. Each lane is sans-IO: a plan holds the ready request, the JS shell
//! sends it, a commit reads the (untrusted) answer and writes the entry.

pub mod anthropic;
pub mod fit;
pub mod lanes;
pub mod openai;
pub mod openai_v2;
pub mod retry;

use crate::compaction::commit::{append_plan_compaction, preserve_data, Committed};
use crate::compaction::plan::CompactionPlan;
use crate::error::{Error, ErrorCode, Result};
use crate::session::Session;
use serde_json::{Map, Value};

/// `v[key]` when it is a string.
pub(crate) fn text_of<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

/// An unusable answer of a lane: `E_SUMMARIZER` with exactly `message`.
pub(crate) fn failed(message: String) -> Error {
    Error::coded(ErrorCode::Summarizer, message)
}

/// Drops the native records of an earlier compaction from a new compaction's `preserveData`
/// (spec: compaction §5.7 step 6): the history they replay is the one being compacted again.
pub(crate) fn drop_native_records(preserve: &mut Map<String, Value>) {
    for key in crate::session::preserve::NATIVE {
        preserve.remove(key);
    }
}

/// The lane a native request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// OpenAI `POST …/responses/compact`.
    OpenAiV1,
    /// OpenAI streaming Responses with a trailing `compaction_trigger` item.
    OpenAiV2,
}

/// Appends the compaction of a native lane (spec: compaction §8.4, §13) once its answer has
/// been read: `summary` with the plan's `<files>` block as the entry's summary, `shortSummary`
/// "Remote compaction", `method` "remote", and `preserveData` with the lane's `record` under
/// `key` in place of any earlier native record.
pub(crate) fn commit_native(
    session: &mut Session,
    plan: &CompactionPlan,
    key: &str,
    mut record: Value,
    summary: &str,
    now: i64,
) -> Result<Committed> {
    let prep = &plan.preparation;
    plan.anchor_replay_item(&mut record);
    let mut preserve = match preserve_data(
        prep.previous_preserve_data.as_ref(),
        plan.options.preserve_data.as_ref(),
    ) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    preserve.insert(key.into(), record);
    append_plan_compaction(
        session,
        plan,
        files_block(plan, summary),
        Some(openai::SHORT_SUMMARY.into()),
        "remote",
        Some(Value::Object(preserve)),
        now,
    )
}

/// `text` with the plan's `<files>` block.
pub(crate) fn files_block(plan: &CompactionPlan, text: &str) -> String {
    crate::summary::fileops::upsert_file_operations(
        &plan.with_anchors(text),
        &plan.file_lists.read_files,
        &plan.file_lists.modified_files,
        Some(&plan.preparation.file_ops.read),
    )
}
