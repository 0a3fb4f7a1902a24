//! Anthropic on-demand compaction (beta `compact-2026-09-04`), the `remote` method's lane for
//! the Claude models that have it (spec: compaction §13, §8.3): chosen over the threshold lane
//! (`anthropic.rs`, `compact-2026-01-12`) wherever the model supports it ([`supports`], the
//! documented models as data).
//!
//! Wire facts (platform.claude.com "Compaction on demand", "Compaction that keeps recent
//! turns", "Compaction in the background"): the request carries the conversation and
//! `compaction: {type: "summarize", instructions?}` with the beta header; the API summarizes
//! every message it is sent and answers with exactly one `compaction` block (`content`, the
//! readable summary, and `signature`) and `stop_reason: "compaction"`. Later requests send the
//! block first, unchanged ("the API rejects a block with fields it did not return"), then the
//! kept turns exactly as they were, thinking blocks included. So the shell sends only the
//! plan's older part (the kept tail is left out, it stays verbatim after the block), and the
//! core keeps the whole block, member for member, under `preserveData.anthropicCompaction`
//! (the threshold lane's record, with `beta` naming this lane).
//!
//! The background swap: the plan records the prefix it sent (its leaf); when the block arrives
//! after more entries were appended on that path, [`commit_ondemand`] appends the compaction
//! at the current leaf with the plan's first kept entry, so exactly the sent prefix is replaced
//! and every appended entry stays after the block.

use super::text_of;
use crate::compaction::commit::Committed;
use crate::compaction::plan::CompactionPlan;
use crate::error::{Error, Result};
use crate::session::{EntryKind, Session};
use crate::support::json::object;
use serde_json::Value;

/// The beta header value of on-demand compaction.
pub const BETA: &str = "compact-2026-09-04";

/// The models the documentation lists for on-demand compaction (the `supportedModels` of the
/// pages above, read 2026-12-07). Data: a new model is a new line.
pub const MODELS: &[&str] = &[
    "claude-fable-5-1",
    "claude-mythos-5-1",
    "claude-fable-5",
    "claude-mythos-5",
    "claude-mythos-preview",
    "claude-opus-5-5",
    "claude-opus-5",
    "claude-opus-4-8",
    "claude-opus-4-7",
    "claude-opus-4-6",
    "claude-sonnet-5-5",
    "claude-sonnet-5",
    "claude-sonnet-4-6",
    "claude-haiku-5-5",
];

/// Whether the model id names a listed model (spec: compaction §13): its last path segment
/// (`anthropic/claude-opus-4-6`), without a Bedrock-style `anthropic.` prefix, lower case, with
/// `.` read as `-` (`claude-opus-4.6`), is a listed name or one followed by a date or a tag
/// (`-20260101`, `@20260101`, `-v1:0`), never by another version number (`claude-opus-5-9` is
/// not `claude-opus-5`).
pub fn supports(id: &str) -> bool {
    let last = id.rsplit('/').next().unwrap_or(id).to_ascii_lowercase();
    let name = last
        .strip_prefix("anthropic.")
        .unwrap_or(&last)
        .replace('.', "-");
    MODELS.iter().any(|m| {
        let Some(rest) = name.strip_prefix(m) else {
            return false;
        };
        // What follows the name: nothing, or a separator and a segment that is no one- or
        // two-digit version number of another model.
        let mut b = rest.bytes().skip(1).take_while(u8::is_ascii_alphanumeric);
        let digits = b.clone().take(3).count() <= 2 && b.all(|c| c.is_ascii_digit());
        match rest.as_bytes().first() {
            None => true,
            Some(b'-' | b'@' | b':') => {
                !(digits && rest.len() > 1 && rest.as_bytes()[1].is_ascii_digit())
            }
            _ => false,
        }
    })
}

/// What an on-demand response carried.
#[derive(Debug, Clone, PartialEq)]
pub struct OnDemandBlock {
    /// The readable summary.
    pub content: String,
    /// The block's signature (replayed with it).
    pub signature: String,
    /// The whole block as the API returned it, members in their order.
    pub block: Value,
    /// Prompt tokens the request processed (input, cache reads and writes), for display.
    pub used_tokens: Option<u64>,
}

fn failed(reason: impl Into<String>) -> Error {
    Error::Summarizer {
        reason: format!("Anthropic on-demand compaction {}", reason.into()),
    }
}

/// Reads an on-demand compaction response (untrusted text, spec: compaction §13): `stop_reason`
/// `"compaction"` and exactly one content block, a `compaction` block with a non-empty string
/// summary and a non-empty string `signature`. `E_SUMMARIZER` otherwise: invalid JSON, an error
/// object, another stop reason (no summary was written: the documentation's "missing summary"),
/// no, several or extra blocks, an empty summary, a missing or malformed signature.
pub fn read_response(text: &str) -> Result<OnDemandBlock> {
    let v = crate::support::json::parse(text)
        .map_err(|e| failed(format!("returned invalid JSON: {e}")))?;
    if text_of(&v, "type") == Some("error") {
        let message = v
            .get("error")
            .and_then(|e| text_of(e, "message"))
            .unwrap_or("");
        return Err(failed(format!("failed: {message}")));
    }
    match v.get("stop_reason") {
        Some(Value::String(s)) if s == "compaction" => {}
        Some(Value::String(s)) => {
            return Err(failed(format!("stopped with \"{s}\": no summary")));
        }
        _ => return Err(failed("response has no stop_reason \"compaction\"")),
    }
    let Some(content) = v.get("content").and_then(Value::as_array) else {
        return Err(failed("response has no content array"));
    };
    let block = match content.as_slice() {
        [one] if text_of(one, "type") == Some("compaction") => one,
        [] => return Err(failed("returned no summary")),
        _ => {
            return Err(failed(format!(
                "response carried {} blocks; expected one compaction block",
                content.len()
            )))
        }
    };
    let summary = block.get("content").and_then(Value::as_str).unwrap_or("");
    if summary.trim().is_empty() {
        return Err(failed("returned no summary"));
    }
    let signature = match block.get("signature") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        None | Some(Value::Null) => return Err(failed("block has no signature")),
        Some(_) => return Err(failed("block has a malformed signature")),
    };
    let used_tokens = v.get("usage").map(|u| {
        [
            "input_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ]
        .iter()
        .filter_map(|k| u.get(*k).and_then(Value::as_u64))
        .fold(0u64, |a, b| a.saturating_add(b))
    });
    Ok(OnDemandBlock {
        content: summary.to_string(),
        signature,
        block: block.clone(),
        used_tokens,
    })
}

/// The `preserveData.anthropicCompaction` record of this lane: the threshold lane's members
/// (provider, summary, files section, model, tokens) plus `beta` (which lane wrote it), the
/// `signature` and the whole `block` the API signed, replayed as it came.
pub fn preserve_record(
    provider: &str,
    model: &str,
    answer: &OnDemandBlock,
    files_text: &str,
) -> Value {
    let mut record = vec![
        ("provider", provider.into()),
        ("beta", BETA.into()),
        ("content", answer.content.as_str().into()),
        ("signature", answer.signature.as_str().into()),
        ("block", answer.block.clone()),
    ];
    if !files_text.is_empty() {
        record.push(("filesText", files_text.into()));
    }
    record.push(("model", model.into()));
    if let Some(t) = answer.used_tokens {
        record.push(("usedTokens", t.into()));
    }
    object(record)
}

/// Whether the session only grew on the plan's path since the plan was made (spec: compaction
/// §13, the background swap): the plan's leaf is on the current leaf's path and no compaction
/// was appended after it. `E_STALE_PLAN` otherwise (the leaf moved to another branch, or
/// another compaction landed first).
pub fn check_appended_only(session: &Session, plan: &CompactionPlan) -> Result<usize> {
    let stale = |why: &str| Error::StalePlan { reason: why.into() };
    let sent = plan.preparation.leaf;
    let Some(leaf) = session.leaf() else {
        return Err(stale("the session has no leaf"));
    };
    if sent >= session.len() {
        return Err(stale("the plan's leaf is not in the session"));
    }
    let path = session.path_to(leaf);
    let Some(at) = path.iter().position(|&i| i == sent) else {
        return Err(stale(
            "the leaf moved off the path the compaction was sent from",
        ));
    };
    if path[at + 1..]
        .iter()
        .any(|&i| session.entries()[i].kind() == EntryKind::Compaction)
    {
        return Err(stale(
            "another compaction was committed after the request was sent",
        ));
    }
    Ok(leaf)
}

/// Whether the kept tail keeps the API's thinking rules after the block (spec: compaction §13,
/// preserved thinking): true when none of its assistant messages carries thinking; else only
/// when the request was the host's (`live`: it carried the host request's system prompt and
/// tools, which the kept thinking was written under, as Anthropic requires them to match) and
/// the tail starts with a user message (else the thinking would continue a turn whose start the
/// block replaced). The record is replayed as the summary text otherwise (`thinkingSafe: false`).
fn thinking_safe(session: &Session, plan: &CompactionPlan, live: bool) -> bool {
    let recent = &plan.preparation.recent;
    let starts_with_user = recent
        .first()
        .and_then(|&i| session.entries()[i].role())
        .is_some_and(|r| r == crate::session::message::Role::User);
    if live && starts_with_user {
        return true;
    }
    !recent.iter().any(|&i| {
        session.entries()[i].role() == Some(crate::session::message::Role::Assistant)
            && session.message_json(i).is_some_and(|m| {
                m.contains("\"type\":\"thinking\"") || m.contains("\"type\":\"redactedThinking\"")
            })
    })
}

/// Commits an on-demand answer for model `model` of `provider` (spec: compaction §13, §8.4):
/// the summary with the plan's `<files>` block as the entry's summary, `method: "remote"`, the
/// block under `preserveData.anthropicCompaction`. The session may have grown on the plan's
/// path meanwhile (the background swap: [`check_appended_only`]); the entry then goes at the
/// current leaf and keeps what was appended. `live`: the request carried the host request's
/// system prompt and tools ([`thinking_safe`]). `E_SUMMARIZER` / `E_STALE_PLAN` leave the
/// session unchanged.
pub fn commit_ondemand(
    session: &mut Session,
    plan: &CompactionPlan,
    provider: &str,
    model: &str,
    response: &str,
    live: bool,
    now: i64,
) -> Result<Committed> {
    let leaf = check_appended_only(session, plan)?;
    let answer = read_response(response)?;
    let mut record = preserve_record(
        provider,
        model,
        &answer,
        &super::files_block(plan, session, "")?,
    );
    if !thinking_safe(session, plan, live) {
        if let Some(o) = record.as_object_mut() {
            o.insert("thinkingSafe".into(), false.into());
        }
    }
    super::commit::commit_native_at(
        session,
        plan,
        leaf,
        super::anthropic::PRESERVE_KEY,
        record,
        &answer.content,
        now,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use serde_json::json;

    #[test]
    fn listed_models_and_their_dated_ids() {
        for yes in [
            "claude-opus-4-6",
            "claude-opus-4.6",
            "anthropic/claude-sonnet-4-6",
            "claude-opus-5-20270101",
            "claude-opus-5@20270101",
            "anthropic.claude-opus-4-7-v1:0",
            "Claude-Haiku-5-5",
            "claude-mythos-preview",
        ] {
            assert!(supports(yes), "{yes}");
        }
        for no in [
            "claude-opus-4-5",
            "claude-opus-5-9",
            "claude-haiku-4-6",
            "claude-opus-4",
            "claude-opus-46",
            "gpt-5",
            "",
        ] {
            assert!(!supports(no), "{no}");
        }
    }

    #[test]
    fn the_reader_takes_one_signed_block() {
        let good = r#"{"type":"message","role":"assistant","stop_reason":"compaction",
            "content":[{"type":"compaction","content":"The summary.","signature":"EuYB=="}],
            "usage":{"input_tokens":60000,"cache_read_input_tokens":100,"output_tokens":5}}"#;
        let r = read_response(good).unwrap();
        assert_eq!(r.content, "The summary.");
        assert_eq!(r.signature, "EuYB==");
        assert_eq!(r.used_tokens, Some(60_100));
        assert_eq!(
            r.block,
            json!({"type":"compaction","content":"The summary.","signature":"EuYB=="})
        );
        // Members the client does not know are kept, in their order.
        let extra = r#"{"stop_reason":"compaction","content":[{"signature":"s","type":"compaction","tool_changes":[1],"content":"S"}]}"#;
        let r = read_response(extra).unwrap();
        assert_eq!(
            crate::support::json::js::stringify(&r.block),
            r#"{"signature":"s","type":"compaction","tool_changes":[1],"content":"S"}"#
        );
        for (bad, says) in [
            ("{", "invalid JSON"),
            (
                r#"{"type":"error","error":{"message":"overloaded"}}"#,
                "overloaded",
            ),
            (
                r#"{"stop_reason":"end_turn","content":[{"type":"text","text":"hi"}]}"#,
                "stopped with \"end_turn\"",
            ),
            (r#"{"content":[]}"#, "no stop_reason"),
            (r#"{"stop_reason":"compaction"}"#, "no content array"),
            (r#"{"stop_reason":"compaction","content":[]}"#, "no summary"),
            (
                r#"{"stop_reason":"compaction","content":[{"type":"compaction","content":"a","signature":"s"},{"type":"text","text":"b"}]}"#,
                "2 blocks",
            ),
            (
                r#"{"stop_reason":"compaction","content":[{"type":"compaction","content":" ","signature":"s"}]}"#,
                "no summary",
            ),
            (
                r#"{"stop_reason":"compaction","content":[{"type":"compaction","content":"a"}]}"#,
                "no signature",
            ),
            (
                r#"{"stop_reason":"compaction","content":[{"type":"compaction","content":"a","signature":7}]}"#,
                "malformed signature",
            ),
        ] {
            let e = read_response(bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::Summarizer, "{bad}");
            assert!(e.to_string().contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_record_names_its_beta_and_keeps_the_block() {
        let a = OnDemandBlock {
            content: "S".into(),
            signature: "G".into(),
            block: json!({"type":"compaction","content":"S","signature":"G"}),
            used_tokens: Some(3),
        };
        assert_eq!(
            preserve_record("anthropic", "claude-opus-4-6", &a, ""),
            json!({"provider":"anthropic","beta":"compact-2026-09-04","content":"S","signature":"G",
                   "block":{"type":"compaction","content":"S","signature":"G"},
                   "model":"claude-opus-4-6","usedTokens":3})
        );
    }
}
