//! What the branch summary reads (spec: compaction §7.2, §7.3): which entries give a message,
//! their estimates for the budget walk, and `prepareBranchEntries`, which picks the newest
//! messages that fit.

use super::measure;
use super::{check_indices, entry_at, SUMMARY_ENTRY_SHARE};
use crate::context::ContextMessage;
use crate::error::Result;
use crate::session::message::{truthy, AgentMessage, Role, ToolResultMessage};
use crate::session::{BranchSummaryBody, EntryKind, Session};
use crate::summary::fileops::FileOperations;
use crate::summary::request::llm_messages;
use crate::summary::serialize::{truncate_for_summary, TOOL_RESULT_MAX_CHARS};
use crate::tokens::{ByteEstimate, EstimateOptions, TokenCounter};
use serde_json::Value;

/// True when an entry gives a message to the branch summary (spec: compaction §7.2, `[N]`):
/// `message` entries except tool results flagged `useless` that are not errors;
/// `custom_message`, `branch_summary` and `compaction` entries; no metadata entry.
///
/// Only tool results are read; the rest is decided from the index.
pub fn gives_branch_message(session: &Session, index: usize) -> Result<bool> {
    let entry = entry_at(session, index)?;
    match entry.kind() {
        EntryKind::Message if entry.role() == Some(Role::ToolResult) => {
            Ok(tool_result_tokens(session, index)?.is_some())
        }
        EntryKind::Message
        | EntryKind::CustomMessage
        | EntryKind::BranchSummary
        | EntryKind::Compaction => Ok(true),
        _ => Ok(false),
    }
}

/// The message an entry gives to the branch summary (spec: compaction §7.2, `[N]`), or `None`
/// (see [`gives_branch_message`]). A `custom_message` becomes a `custom` message (with its
/// attribution), a `branch_summary` a `branchSummary`, a `compaction` a `compactionSummary`
/// (with its short summary).
pub fn branch_input_message(session: &Session, index: usize) -> Result<Option<ContextMessage>> {
    if !gives_branch_message(session, index)? {
        return Ok(None);
    }
    ContextMessage::from_entry(session, index)
}

/// The estimate of an entry for the budget walk (spec: compaction §7.3 step 2), or `None`
/// when the entry gives no message (§7.2).
///
/// A tool result counts the text the summarizer will see: its text blocks concatenated and
/// cut to 2,000 characters with the truncation marker ([`truncate_for_summary`]), 0 without
/// text. A result hidden by `contextOmitted` is not sent at all, so it counts 0 too. Every
/// other message uses the memoized per-entry estimate ([`Session::entry_tokens`]).
pub fn branch_entry_tokens(session: &Session, index: usize) -> Result<Option<u64>> {
    let entry = entry_at(session, index)?;
    match entry.kind() {
        EntryKind::Message if entry.role() == Some(Role::ToolResult) => {
            tool_result_tokens(session, index)
        }
        EntryKind::Message
        | EntryKind::CustomMessage
        | EntryKind::BranchSummary
        | EntryKind::Compaction => Ok(Some(
            session.entry_tokens(index, EstimateOptions::default()),
        )),
        _ => Ok(None),
    }
}

/// [`branch_entry_tokens`] of a tool result. The message is scanned in place
/// ([`measure::scan_tool_result`]): the estimate needs the flags and the size of the text the
/// summarizer will see, not the text itself, so nothing is decoded or copied.
fn tool_result_tokens(session: &Session, index: usize) -> Result<Option<u64>> {
    let scanned = session
        .message_json(index)
        .and_then(|j| measure::scan_tool_result(j.as_bytes(), TOOL_RESULT_MAX_CHARS));
    let Some(scan) = scanned else {
        // Not a well-formed object: the typed read reports why (or copes).
        return match session.message(index)? {
            AgentMessage::ToolResult(r) => Ok(typed_tool_result_tokens(&r)),
            _ => Ok(Some(0)),
        };
    };
    Ok(scan.tokens())
}

/// [`branch_entry_tokens`] of a parsed tool result: `None` for a useless result that is not
/// an error, 0 when hidden by `contextOmitted` or without text, else the byte estimate of
/// its text cut by [`truncate_for_summary`].
fn typed_tool_result_tokens(r: &ToolResultMessage) -> Option<u64> {
    if r.useless && !r.is_error {
        return None;
    }
    if truthy(r.context_omitted.as_ref()) {
        return Some(0);
    }
    let text = r.content.text();
    if text.is_empty() {
        return Some(0);
    }
    Some(ByteEstimate.count(&truncate_for_summary(&text, TOOL_RESULT_MAX_CHARS)))
}

// ----- §7.3 ----------------------------------------------------------------------------

/// What [`prepare_branch_entries`] chose (spec: compaction §7.3 `prepareBranchEntries`).
///
/// The chosen messages are kept as their entries and read on demand
/// ([`BranchPreparation::messages`], [`BranchPreparation::llm_messages`]): choosing them only
/// needs memoized estimates, so a long branch is not parsed twice.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchPreparation {
    /// The entries whose messages were chosen (each gives one message, §7.2),
    /// chronological.
    pub entries: Vec<usize>,
    /// Paths read, written and edited: the details of earlier branch summaries (pass 1) and
    /// the tool calls of every message the walk visited, including the one that broke the
    /// budget (pass 2).
    pub file_ops: FileOperations,
    /// Sum of the chosen entries' estimates ([`branch_entry_tokens`]).
    pub total_tokens: u64,
}

impl BranchPreparation {
    /// The chosen messages (§7.2), chronological.
    pub fn messages(&self, session: &Session) -> Result<Vec<ContextMessage>> {
        check_indices(session, &self.entries)?;
        let mut out = Vec::with_capacity(self.entries.len());
        for &i in &self.entries {
            if let Some(m) = ContextMessage::from_entry(session, i)? {
                out.push(m);
            }
        }
        Ok(out)
    }

    /// The chosen messages as the provider gets them (`convertToLlm`, spec: compaction
    /// §2.6): what the summarizer's transcript is written from.
    pub fn llm_messages(&self, session: &Session) -> Result<Vec<Value>> {
        check_indices(session, &self.entries)?;
        llm_messages(session, &self.entries)
    }

    /// True when no message was chosen.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Pass 1 of `prepareBranchEntries` (spec: compaction §7.3 step 1), after checking every
/// index: the files of the earlier branch summaries among `entries` that an extension did
/// not write.
fn summaries_files(session: &Session, entries: &[usize]) -> Result<FileOperations> {
    check_indices(session, entries)?;
    let mut file_ops = FileOperations::new();
    for &i in entries {
        if session.entries()[i].kind() != EntryKind::BranchSummary {
            continue;
        }
        let body: BranchSummaryBody = session.body(i)?;
        if let Some(details) = body.details.as_ref().filter(|_| !body.from_extension) {
            file_ops.add_details(details);
        }
    }
    Ok(file_ops)
}

/// `prepareBranchEntries` (spec: compaction §7.3).
///
/// 1. Pass 1, over all `entries`: each `branch_summary` with `details` that an extension did
///    not write adds `details.readFiles` to the read set (selector-stripped) and
///    `details.modifiedFiles` to the edited set.
/// 2. Pass 2, newest to oldest, over the entries that give a message (§7.2): the message's
///    tool calls are recorded first (so the message that breaks the budget still counts);
///    then, when `token_budget > 0` and the message's estimate would take the total over it,
///    a `compaction` or `branch_summary` is still taken while the total is below 0.9 ·
///    budget, and the walk stops. Otherwise the message is taken.
///
/// `token_budget = 0` takes everything. `E_INVALID_ARGUMENT` for an index the session does
/// not hold. No message is converted here: the walk uses
/// memoized estimates and file calls, and scans tool results in place.
pub fn prepare_branch_entries(
    session: &Session,
    entries: &[usize],
    token_budget: u64,
) -> Result<BranchPreparation> {
    let mut file_ops = summaries_files(session, entries)?;

    let mut chosen: Vec<usize> = Vec::new();
    let mut total: u64 = 0;
    for &i in entries.iter().rev() {
        let Some(tokens) = branch_entry_tokens(session, i)? else {
            continue;
        };
        session.for_each_file_call(i, |tool, path| file_ops.add(tool, path));
        if token_budget > 0 && total.saturating_add(tokens) > token_budget {
            let summary_like = matches!(
                session.entries()[i].kind(),
                EntryKind::Compaction | EntryKind::BranchSummary
            );
            if summary_like && (total as f64) < SUMMARY_ENTRY_SHARE * token_budget as f64 {
                chosen.push(i);
                total = total.saturating_add(tokens);
            }
            break;
        }
        chosen.push(i);
        total = total.saturating_add(tokens);
    }
    chosen.reverse();
    Ok(BranchPreparation {
        entries: chosen,
        file_ops,
        total_tokens: total,
    })
}

/// pi 1.6 `prepareBranchEntries` of a pi-family branch (issue 40 item 4): §7.3's walk on the
/// messages pi reads — the newest `context_edit` among `entries` applied to the message or
/// custom message it targets (an omitted one gives none), tool results left out, a
/// `branch_summary` or `compaction` as its summary (edits do not apply to them), metadata
/// entries nothing — each counted with pi's estimate ([`crate::tokens::estimate_pi_message`])
/// and its `read`/`write`/`edit` calls' paths recorded as written. Also gives the chosen
/// messages converted as pi converts them (`convertToLlm`), what the request serializes.
pub fn prepare_pi_branch_entries(
    session: &Session,
    entries: &[usize],
    token_budget: u64,
) -> Result<(BranchPreparation, Vec<Value>)> {
    use crate::context::projection::{edited_messages, newest_edits};
    let mut prep = BranchPreparation {
        entries: Vec::new(),
        file_ops: summaries_files(session, entries)?,
        total_tokens: 0,
    };
    let edits = newest_edits(session, entries);
    let mut chosen: Vec<(usize, ContextMessage)> = Vec::new();
    let mut total: u64 = 0;
    for &i in entries.iter().rev() {
        let e = &session.entries()[i];
        let message = match e.kind() {
            EntryKind::Message if e.role() == Some(Role::ToolResult) => None,
            EntryKind::Message | EntryKind::CustomMessage => {
                edited_messages(session, i, &edits)?.into_iter().next()
            }
            EntryKind::BranchSummary | EntryKind::Compaction => {
                ContextMessage::from_entry(session, i)?
            }
            _ => None,
        };
        let Some(message) = message else {
            continue;
        };
        let value = crate::support::json::parse(&message.json(session)).unwrap_or_default();
        prep.file_ops.add_pi_calls(&value);
        let tokens = crate::tokens::estimate_pi_message(&value);
        if token_budget > 0 && total.saturating_add(tokens) > token_budget {
            let summary_like = matches!(e.kind(), EntryKind::Compaction | EntryKind::BranchSummary);
            if summary_like && (total as f64) < SUMMARY_ENTRY_SHARE * token_budget as f64 {
                chosen.push((i, message));
                total = total.saturating_add(tokens);
            }
            break;
        }
        chosen.push((i, message));
        total = total.saturating_add(tokens);
    }
    chosen.reverse();
    let mut llm = Vec::with_capacity(chosen.len());
    for (i, m) in &chosen {
        prep.entries.push(*i);
        crate::context::convert::convert_pi_message(&mut llm, session, m);
    }
    prep.total_tokens = total;
    Ok((prep, llm))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn typed(m: &Value) -> Option<u64> {
        match AgentMessage::parse(&m.to_string(), None) {
            Ok(AgentMessage::ToolResult(r)) => typed_tool_result_tokens(&r),
            other => panic!("not a tool result: {other:?}"),
        }
    }

    fn scanned(text: &str) -> Option<u64> {
        measure::scan_tool_result(text.as_bytes(), TOOL_RESULT_MAX_CHARS)
            .expect("well-formed")
            .tokens()
    }

    fn result(content: Value) -> Value {
        json!({"role":"toolResult","toolCallId":"c1","toolName":"bash","content":content,"isError":false})
    }

    fn text(t: &str) -> Value {
        json!({"type":"text","text":t})
    }

    #[test]
    fn scanned_estimate_matches_the_typed_one() {
        let long = "x".repeat(5000);
        let lines = "line of output\n\"quoted\" \\ tab\t".repeat(200);
        let accents = "é€".repeat(1500);
        let emoji_cut = format!("a{}", "\u{1f600}".repeat(1500));
        let emoji_even = "\u{1f600}".repeat(1500);
        let mut cases = vec![
            result(json!("plain string content")),
            result(json!(long)),
            result(json!([text(&long)])),
            result(json!([text(&lines)])),
            result(json!([text(&accents)])),
            result(json!([text(&emoji_cut)])),
            result(json!([text(&emoji_even)])),
            result(json!([
                text("x".repeat(1999).as_str()),
                text("\u{1f600}yz")
            ])),
            result(
                json!([text("short"), {"type":"image","data":"AAAA","mimeType":"image/png"}, text(&long)]),
            ),
            result(json!([{"type":"image","data":"AAAA","mimeType":"image/png"}])),
            result(json!([])),
            result(json!(null)),
            result(json!([text(""), text("")])),
            result(json!([{"text":"text before its type","type":"text"}])),
            result(json!([{"type":"thinking","thinking":"not text"}, 5, "stray"])),
        ];
        for i in [0usize, 1999, 2000, 2001] {
            cases.push(result(json!([text(&"y".repeat(i))])));
            cases.push(result(json!([text(&format!(
                "{}é\u{1f600}",
                "z".repeat(i)
            ))])));
        }
        let mut useless = result(json!([text("nothing found")]));
        useless["useless"] = json!(true);
        cases.push(useless.clone());
        useless["isError"] = json!(true);
        cases.push(useless);
        for omitted in [
            json!(true),
            json!(1),
            json!("yes"),
            json!(0),
            json!(""),
            json!(null),
        ] {
            let mut m = result(json!([text("hidden")]));
            m["contextOmitted"] = omitted;
            cases.push(m);
        }
        for m in &cases {
            assert_eq!(scanned(&m.to_string()), typed(m), "{m}");
        }
        // Escapes written as `\uXXXX` (our writer only escapes what it must).
        let escaped = r#"{"role":"toolResult","content":[{"type":"text","text":"\u00e9\u20ac\ud83d\ude00\u0041\n"}]}"#;
        let want = typed(&serde_json::from_str(escaped).unwrap());
        assert_eq!(scanned(escaped), want);
        assert_eq!(want, Some((2u64 + 3 + 4 + 1 + 1).div_ceil(4)));
        let cut = format!(
            r#"{{"role":"toolResult","content":"{}\ud83d\ude00tail"}}"#,
            "a".repeat(1999)
        );
        assert_eq!(scanned(&cut), typed(&serde_json::from_str(&cut).unwrap()));
    }

    #[test]
    fn scan_sizes_of_the_cap() {
        // 5000 ASCII characters: 2000 kept, then the marker.
        let m = result(json!([text(&"x".repeat(5000))]));
        let marker = "\n\n[... 3000 more characters truncated]";
        assert_eq!(
            scanned(&m.to_string()),
            Some((2000 + marker.len() as u64).div_ceil(4))
        );
        // No text: 0. Useless, not an error: no message at all.
        assert_eq!(scanned(&result(json!([])).to_string()), Some(0));
        let mut u = result(json!([text("x")]));
        u["useless"] = json!(true);
        assert_eq!(scanned(&u.to_string()), None);
        assert!(measure::scan_tool_result(b"[1]", 2000).is_none());
        assert!(measure::scan_tool_result(br#"{"content":"#, 2000).is_none());
    }
}
