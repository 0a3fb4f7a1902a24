//! The compaction entry a native lane writes once its answer has been read (spec: compaction
//! §5.7 step 1, §8.4, §13): shared by the OpenAI and Anthropic lanes.

use crate::compaction::commit::{append_plan_compaction, preserve_data, Committed};
use crate::compaction::plan::CompactionPlan;
use crate::error::Result;
use crate::session::Session;
use serde_json::{Map, Value};

/// The entry's short summary after a native compaction.
pub const SHORT_SUMMARY: &str = "Remote compaction";

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
        Some(SHORT_SUMMARY.into()),
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
