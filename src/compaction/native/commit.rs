//! The compaction entry a native lane writes once its answer has been read (spec: compaction
//! §5.7 step 1, §8.4, §13): shared by the OpenAI and Anthropic lanes.

use crate::compaction::commit::{append_with_tokens_after, preserve_data, Committed};
use crate::compaction::plan::CompactionPlan;
use crate::error::Result;
use crate::session::{CompactionBody, Session};
use serde_json::{Map, Number, Value};

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
    record: Value,
    summary: &str,
    now: i64,
) -> Result<Committed> {
    let leaf = plan.preparation.leaf;
    commit_native_at(session, plan, leaf, key, record, summary, now)
}

/// [`commit_native`] with the entry appended below `leaf` (the plan's leaf, or a leaf the
/// session grew to on its path since: the background swap of the on-demand lane, spec:
/// compaction §13). The entries between the plan's leaf and `leaf` stay kept after it.
pub(crate) fn commit_native_at(
    session: &mut Session,
    plan: &CompactionPlan,
    leaf: usize,
    key: &str,
    mut record: Value,
    summary: &str,
    now: i64,
) -> Result<Committed> {
    let prep = &plan.preparation;
    plan.anchor_replay_item(session, &mut record)?;
    let mut preserve = match preserve_data(
        prep.previous_preserve_data.as_ref(),
        plan.options.preserve_data.as_ref(),
    ) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    preserve.insert(key.into(), record);
    let remote = RemoteEntry {
        summary: files_block(plan, session, summary)?,
        first_kept_entry_id: prep.first_kept_entry_id.clone(),
        tokens_before: prep.tokens_before,
        details: Some(plan.details_json(session)?),
        preserve,
    };
    append_remote(session, leaf, remote, now)
}

/// What a `method: "remote"` compaction entry holds beyond its fixed members.
pub(crate) struct RemoteEntry {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
    pub details: Option<Value>,
    pub preserve: Map<String, Value>,
}

/// Appends a `method: "remote"` compaction entry below `leaf` (`shortSummary` "Remote
/// compaction"), with its `tokensAfter`: shared by the plan lanes and the inline lane.
pub(crate) fn append_remote(
    session: &mut Session,
    leaf: usize,
    e: RemoteEntry,
    now: i64,
) -> Result<Committed> {
    let body = CompactionBody {
        summary: e.summary,
        short_summary: Some(SHORT_SUMMARY.into()),
        first_kept_entry_id: e.first_kept_entry_id,
        tokens_before: Number::from(e.tokens_before),
        tokens_after: None,
        method: Some("remote".into()),
        provider_replay_through_entry_id: None,
        details: e.details,
        preserve_data: Some(Value::Object(e.preserve)),
        from_extension: false,
        warning: None,
    };
    append_with_tokens_after(session, leaf, &body, now)
}

/// `text` with the plan's `<files>` block.
pub(crate) fn files_block(plan: &CompactionPlan, session: &Session, text: &str) -> Result<String> {
    Ok(crate::summary::fileops::upsert_file_operations(
        &plan.with_anchors(session, text)?,
        &plan.file_lists.read_files,
        &plan.file_lists.modified_files,
        Some(&plan.preparation.file_ops.read),
    ))
}
