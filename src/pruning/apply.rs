//! Carrying out a pruning plan (spec: compaction §6.5 step 5): the only mutation — each
//! result's line is spliced in place — and the report of what changed.

use super::plan::{plan_superseded_tool_results, plan_tool_outputs, PruneCandidate, PrunePlan};
use super::PruneConfig;
use crate::error::{Error, Result};
use crate::session::message::Role;
use crate::session::{EntryKind, PrunedLine, Session};
use rustc_hash::FxHashSet;
use serde_json::Value;
use std::ops::Range;

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
        crate::support::json::parse(&self.json()).unwrap_or(Value::Null)
    }

    /// [`PruneReport::to_json`] as JSON text, written directly: a threshold prune of a long
    /// session reports thousands of results, and a value per field of each would cost more
    /// than the prune itself.
    pub fn json(&self) -> String {
        use crate::support::json::js::{write_string, write_uint};
        let mut out = String::with_capacity(64 + self.pruned.len() * 200);
        out.push_str("{\"prunedCount\":");
        write_uint(&mut out, self.pruned_count as u64);
        out.push_str(",\"tokensSaved\":");
        write_uint(&mut out, self.tokens_saved);
        out.push_str(",\"pruned\":[");
        for (i, c) in self.pruned.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"index\":");
            write_uint(&mut out, c.index as u64);
            out.push_str(",\"id\":");
            write_string(&mut out, &c.id);
            out.push_str(",\"toolName\":");
            write_string(&mut out, &c.tool_name);
            out.push_str(",\"toolCallId\":");
            write_string(&mut out, &c.tool_call_id);
            out.push_str(",\"tokensBefore\":");
            write_uint(&mut out, c.tokens_before);
            out.push_str(",\"reason\":\"");
            out.push_str(c.reason.as_str());
            out.push_str("\",\"notice\":");
            write_string(&mut out, &c.notice);
            out.push_str(",\"savings\":");
            write_uint(&mut out, c.savings);
            out.push('}');
        }
        out.push_str("]}");
        out
    }

    /// The report as `serde_json` builds it field by field (what [`PruneReport::json`] must
    /// equal).
    #[cfg(test)]
    fn value(&self) -> Value {
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
#[cfg(test)]
fn pruned_line(line: &str, span: Range<usize>, notice: &str, now: i64) -> Option<String> {
    let (content, pruned_at) = pruned_members(line.as_bytes(), span.clone())?;
    splice_pruned(line.as_bytes(), span, content, pruned_at, notice, now).map(|p| p.text)
}

/// The value spans of the last `content` and `prunedAt` members of the message object at
/// `span` (what `JSON.parse` keeps), found by scanning it: for lines without recorded facts.
#[allow(clippy::type_complexity)]
fn pruned_members(
    b: &[u8],
    span: Range<usize>,
) -> Option<(Option<Range<usize>>, Option<Range<usize>>)> {
    use crate::support::json::scan::{for_each_member, key_is};
    if b.get(span.start) != Some(&b'{') {
        return None;
    }
    let mut content = None;
    let mut pruned_at = None;
    for_each_member(b, span.start, |b, m| {
        if key_is(&b[m.key.clone()], "content") {
            content = Some(m.value.clone());
        } else if key_is(&b[m.key.clone()], "prunedAt") {
            pruned_at = Some(m.value.clone());
        }
    })
    .ok()?;
    Some((content, pruned_at))
}

/// Splices the pruned message into its line: `content` (its value at `content`, or appended)
/// becomes one text block with `notice`, `prunedAt` (at `pruned_at`, or appended) becomes
/// `now`. Only the bytes around the two values are copied, into one string; nothing is
/// scanned. `None` when the result is not UTF-8 (it always is for a line that was).
fn splice_pruned(
    b: &[u8],
    span: Range<usize>,
    content: Option<Range<usize>>,
    pruned_at: Option<Range<usize>>,
    notice: &str,
    now: i64,
) -> Option<PrunedLine> {
    use crate::support::json::js::{write_int, write_string};
    if b.get(span.start) != Some(&b'{') || span.end > b.len() || span.end <= span.start {
        return None;
    }
    let close = span.end - 1;
    // The copied stretches end and start at ASCII bytes of the JSON structure: each is UTF-8
    // when the line is.
    let copy = |out: &mut String, r: Range<usize>| -> Option<()> {
        out.push_str(std::str::from_utf8(b.get(r)?).ok()?);
        Some(())
    };
    let value = |out: &mut String, is_content: bool| {
        let from = out.len();
        if is_content {
            out.push_str("[{\"type\":\"text\",\"text\":");
            write_string(out, notice);
            out.push_str("}]");
        } else {
            write_int(out, now);
        }
        from..out.len()
    };
    let mut out =
        String::with_capacity(b.len() - content.as_ref().map_or(0, Range::len) + notice.len() + 64);
    // Values replaced in place, in byte order, then the members appended.
    let missing = [(content.is_none(), true), (pruned_at.is_none(), false)];
    let mut values = [(content, true), (pruned_at, false)];
    if let [(Some(c), _), (Some(p), _)] = &values {
        if p.start < c.start {
            values.swap(0, 1);
        }
    }
    let mut spans = [0..0, 0..0];
    let mut moves = [(usize::MAX, 0); 2];
    let mut at = 0;
    for (k, (old, is_content)) in values.iter().enumerate() {
        let Some(old) = old else { continue };
        copy(&mut out, at..old.start)?;
        spans[usize::from(!is_content)] = value(&mut out, *is_content);
        moves[k] = (old.end, out.len() as isize - old.end as isize);
        at = old.end;
    }
    copy(&mut out, at..close)?;
    let mut first = crate::support::json::scan::skip_ws(b, span.start + 1) == close;
    for (absent, is_content) in missing {
        if absent {
            if !first {
                out.push(',');
            }
            first = false;
            write_string(&mut out, if is_content { "content" } else { "prunedAt" });
            out.push(':');
            spans[usize::from(!is_content)] = value(&mut out, is_content);
        }
    }
    let end = out.len() + 1;
    copy(&mut out, close..b.len())?;
    let [content, pruned_at] = spans;
    Some(PrunedLine {
        text: out,
        message: span.start..end,
        content,
        pruned_at,
        moves,
        notice_len: notice.len(),
    })
}

/// Carries out a plan (spec: compaction §6.5 step 5): each candidate's message gets
/// `content = [{type:"text", text: notice}]` and `prunedAt = now`, spliced into its line so
/// every other byte stays; token and fact memos of the entry are invalidated. The plan is
/// checked first and nothing changes when it no longer fits the session (`E_STALE_PLAN`: an
/// entry is gone, is not a tool result or was pruned meanwhile).
pub fn apply_prune(session: &mut Session, plan: &PrunePlan) -> Result<PruneReport> {
    let edits = pruned_lines(session, plan)?;
    session.rewrite_pruned(edits);
    Ok(PruneReport {
        pruned_count: plan.candidates.len(),
        tokens_saved: plan.tokens_saved,
        pruned: plan.candidates.clone(),
    })
}

/// [`apply_prune`] of a plan the caller gives up: its candidates become the report.
pub fn apply_prune_plan(session: &mut Session, plan: PrunePlan) -> Result<PruneReport> {
    let edits = pruned_lines(session, &plan)?;
    session.rewrite_pruned(edits);
    Ok(PruneReport {
        pruned_count: plan.candidates.len(),
        tokens_saved: plan.tokens_saved,
        pruned: plan.candidates,
    })
}

/// The new line of every candidate, all built before any line changes (so a failure leaves
/// the session as it was); the caller replaces them in one pass.
fn pruned_lines(session: &Session, plan: &PrunePlan) -> Result<Vec<(usize, PrunedLine)>> {
    let stale = |reason: String| Error::StalePlan { reason };
    let mut seen = FxHashSet::default();
    let mut edits: Vec<(usize, PrunedLine)> = Vec::with_capacity(plan.candidates.len());
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
        if session.tool_result_pruned(c.index) != Some(false) {
            return Err(stale(format!("entry {} was pruned meanwhile", c.id)));
        }
        let no_message = || stale(format!("entry {} has no message object to edit", c.id));
        let span = session.message_span(c.index).ok_or_else(no_message)?;
        let line = session.entry_line_bytes(c.index);
        // The load pass recorded where `content` and `prunedAt` are; other lines are scanned.
        let members = match session.pruning_spans(c.index) {
            Some(spans) => Some(spans),
            None => pruned_members(line, span.clone()),
        };
        let edited = members
            .and_then(|(content, pruned_at)| {
                splice_pruned(line, span, content, pruned_at, &c.notice, plan.now)
            })
            .ok_or_else(no_message)?;
        edits.push((c.index, edited));
    }
    Ok(edits)
}

/// `pruneSupersededToolResults` (spec: compaction §6.5): plans and applies the stale pass.
pub fn prune_superseded_tool_results(
    session: &mut Session,
    cfg: &PruneConfig,
) -> Result<PruneReport> {
    let plan = plan_superseded_tool_results(session, cfg)?;
    apply_prune_plan(session, plan)
}

/// `pruneToolOutputs` (spec: compaction §6.6): plans and applies the threshold prune.
pub fn prune_tool_outputs(session: &mut Session, cfg: &PruneConfig) -> Result<PruneReport> {
    let plan = plan_tool_outputs(session, cfg)?;
    apply_prune_plan(session, plan)
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
    fn report_json_is_the_value() {
        let c = PruneCandidate {
            index: 3,
            id: "e\"3".into(),
            tool_name: "read".into(),
            tool_call_id: "c\n1".into(),
            tokens_before: 900,
            reason: crate::pruning::PruneReason::Age,
            notice: "[Output truncated - 900 tokens]".into(),
            savings: 892,
        };
        let report = PruneReport {
            pruned: vec![c.clone(), c],
            pruned_count: 2,
            tokens_saved: 1784,
        };
        assert_eq!(
            report.json(),
            crate::support::json::js::stringify(&report.value())
        );
        assert_eq!(report.to_json(), report.value());
        assert_eq!(
            PruneReport::default().json(),
            r#"{"prunedCount":0,"tokensSaved":0,"pruned":[]}"#
        );
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
