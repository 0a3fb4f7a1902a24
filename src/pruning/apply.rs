//! Carrying out a pruning plan (spec: compaction §6.5 step 5): the only mutation — each
//! result's line is spliced in place — and the report of what changed.

use super::plan::{plan_superseded_tool_results, plan_tool_outputs, PruneCandidate, PrunePlan};
use super::PruneConfig;
use crate::error::{Error, Result};
use crate::session::message::Role;
use crate::session::{EntryKind, Session};
use rustc_hash::FxHashSet;
use serde_json::Value;

/// What a pass did: `{prunedCount, tokensSaved}` and the pruned results in branch order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PruneReport {
    pub pruned: Vec<PruneCandidate>,
    pub pruned_count: usize,
    pub tokens_saved: u64,
}

impl PruneReport {
    /// `{prunedCount, tokensSaved, pruned: [{index, id, toolName, toolCallId, tokensBefore,
    /// reason, notice, savings}]}`.
    pub fn to_json(&self) -> Value {
        crate::support::json::object(vec![
            ("prunedCount", self.pruned_count.into()),
            ("tokensSaved", self.tokens_saved.into()),
            (
                "pruned",
                Value::Array(self.pruned.iter().map(PruneCandidate::to_json).collect()),
            ),
        ])
    }
}

/// The line of a tool result entry with its message's `content` replaced by one text block
/// holding `notice` and `prunedAt` set to `now` (appended when absent, where JavaScript's
/// assignment puts a new property); every other byte stays. The message object (at `span`)
/// is scanned once. `None` when it is not an object.
fn pruned_line(line: &str, span: std::ops::Range<usize>, notice: &str, now: i64) -> Option<String> {
    use crate::support::json::scan::{for_each_member, key_is};
    let b = line.as_bytes();
    if b.get(span.start) != Some(&b'{') {
        return None;
    }
    let mut content = None;
    let mut pruned_at = None;
    let end = for_each_member(b, span.start, |b, m| {
        if key_is(&b[m.key.clone()], "content") {
            content = Some(m.value.clone());
        } else if key_is(&b[m.key.clone()], "prunedAt") {
            pruned_at = Some(m.value.clone());
        }
    })
    .ok()?;
    let close = end - 1;
    let mut blocks = String::with_capacity(notice.len() + 32);
    blocks.push_str("[{\"type\":\"text\",\"text\":");
    crate::support::json::js::write_string(&mut blocks, notice);
    blocks.push_str("}]");
    let stamp = now.to_string();
    // Replacements in place, then appended members, in byte order.
    let mut splices: Vec<(std::ops::Range<usize>, String)> = Vec::with_capacity(2);
    let mut appended = String::new();
    let empty = crate::support::json::scan::skip_ws(b, span.start + 1) == close;
    let mut append = |key: &str, value: &str| {
        if !(empty && appended.is_empty()) {
            appended.push(',');
        }
        crate::support::json::js::write_string(&mut appended, key);
        appended.push(':');
        appended.push_str(value);
    };
    match content {
        Some(r) => splices.push((r, blocks)),
        None => append("content", &blocks),
    }
    match pruned_at {
        Some(r) => splices.push((r, stamp)),
        None => append("prunedAt", &stamp),
    }
    splices.push((close..close, appended));
    crate::support::sort::sort_by_key(&mut splices, |(r, _)| r.start);
    let mut out = String::with_capacity(line.len() + 64);
    let mut at = 0;
    for (r, text) in splices {
        out.push_str(&line[at..r.start]);
        out.push_str(&text);
        at = r.end;
    }
    out.push_str(&line[at..]);
    Some(out)
}

/// Carries out a plan (spec: compaction §6.5 step 5): each candidate's message gets
/// `content = [{type:"text", text: notice}]` and `prunedAt = now`, spliced into its line so
/// every other byte stays; token and fact memos of the entry are invalidated. The plan is
/// checked first and nothing changes when it no longer fits the session (`E_STALE_PLAN`: an
/// entry is gone, is not a tool result or was pruned meanwhile).
pub fn apply_prune(session: &mut Session, plan: &PrunePlan) -> Result<PruneReport> {
    let stale = |reason: String| Error::StalePlan { reason };
    let mut seen = FxHashSet::default();
    let mut edits: Vec<(usize, String)> = Vec::with_capacity(plan.candidates.len());
    for c in &plan.candidates {
        let entry = session
            .entry(c.index)
            .filter(|e| e.id() == c.id)
            .ok_or_else(|| stale(format!("entry {} is not at index {}", c.id, c.index)))?;
        if entry.role() != Some(Role::ToolResult) || entry.kind() != EntryKind::Message {
            return Err(stale(format!("entry {} is not a tool result", c.id)));
        }
        if !seen.insert(c.index) {
            return Err(Error::InvalidArgument {
                what: format!("the prune plan lists entry {} twice", c.id),
            });
        }
        match session.tool_result_facts(c.index) {
            Some(f) if !f.pruned => {}
            _ => return Err(stale(format!("entry {} was pruned meanwhile", c.id))),
        }
        let text = session.entry_json(c.index);
        let edited = session
            .message_span(c.index)
            .and_then(|span| pruned_line(&text, span, &c.notice, plan.now))
            .ok_or_else(|| stale(format!("entry {} has no message object to edit", c.id)))?;
        edits.push((c.index, edited));
    }
    for (index, text) in edits {
        let line = session.entries()[index].line_index() as usize;
        session.rewrite_line(line, text);
    }
    Ok(PruneReport {
        pruned_count: plan.candidates.len(),
        tokens_saved: plan.tokens_saved,
        pruned: plan.candidates.clone(),
    })
}

/// `pruneSupersededToolResults` (spec: compaction §6.5): plans and applies the stale pass.
pub fn prune_superseded_tool_results(
    session: &mut Session,
    cfg: &PruneConfig,
) -> Result<PruneReport> {
    let plan = plan_superseded_tool_results(session, cfg)?;
    apply_prune(session, &plan)
}

/// `pruneToolOutputs` (spec: compaction §6.6): plans and applies the threshold prune.
pub fn prune_tool_outputs(session: &mut Session, cfg: &PruneConfig) -> Result<PruneReport> {
    let plan = plan_tool_outputs(session, cfg)?;
    apply_prune(session, &plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pruning::SUPERSEDED_NOTICE;

    fn prune(line: &str, notice: &str, now: i64) -> Option<String> {
        let start = line.find("\"message\":")? + "\"message\":".len();
        let end = crate::support::json::scan::skip_value(line.as_bytes(), start).ok()?;
        pruned_line(line, start..end, notice, now)
    }

    #[test]
    fn pruned_line_splices_content_and_stamp() {
        let line = r#"{"type":"message","id":"a","message":{"role":"toolResult","toolCallId":"c","content":[{"type":"text","text":"long\nout"},{"type":"image","data":"x","mimeType":"image/png"}],"isError":false,"details":{"k":1}},"extra":true}"#;
        assert_eq!(
            prune(line, SUPERSEDED_NOTICE, 42).unwrap(),
            r#"{"type":"message","id":"a","message":{"role":"toolResult","toolCallId":"c","content":[{"type":"text","text":"[Superseded by a newer read of this file]"}],"isError":false,"details":{"k":1},"prunedAt":42},"extra":true}"#
        );
        // An existing non-numeric `prunedAt` is replaced in place; a missing `content` is
        // appended before the stamp; notices are JSON-escaped.
        let line = r#"{"message":{"role":"toolResult","prunedAt":null ,"isError":false}}"#;
        assert_eq!(
            prune(line, "a \"q\"", 7).unwrap(),
            r#"{"message":{"role":"toolResult","prunedAt":7 ,"isError":false,"content":[{"type":"text","text":"a \"q\""}]}}"#
        );
        assert_eq!(prune(r#"{"message":[1]}"#, "n", 1), None);
    }
}
