//! Anthropic server-side compaction, the `remote` method's provider-native lane for Claude
//! models (spec: compaction §13, §8.3). Sans-IO like the rest of the cycle: the JS shell
//! (`src/js/providers/native-anthropic.ts`, sent by `src/js/runner/native.ts`) writes the Messages API request from the plan's messages,
//! [`request_parts`] and [`plan_instructions`], and POSTs it (whether the lane applies is
//! `lanes`); [`commit_anthropic`] reads the
//! answer ([`read_response`]: exactly one `compaction` block with a summary, untrusted) and
//! appends the compaction: the summary text is the entry's summary (other providers read it),
//! and the block with its opaque `encrypted_content` (the signature the API checks on replay)
//! is stored under `preserveData.anthropicCompaction`, which the context replays for Anthropic
//! readers of the same provider (`context::build`).

use super::text_of;
use crate::compaction::commit::Committed;
use crate::compaction::plan::CompactionPlan;
use crate::error::{Error, Result};
use crate::session::Session;
use crate::support::json::object;
use serde_json::Value;

/// The `preserveData` key of the stored block.
pub const PRESERVE_KEY: &str = crate::session::preserve::ANTHROPIC;

/// What the shell needs of a plan beyond its messages to write the request: the previous
/// `anthropicCompaction` record (or null; replayed as its block for the same provider), how
/// many of the messages are the kept tail (`recent`, for the instructions' scope), the base
/// summary prompt (the hook's override or the default), the caller's focus, the hook's extra
/// context and the output budget.
pub fn request_parts(
    session: &Session,
    plan: &CompactionPlan,
) -> Result<Vec<(&'static str, Value)>> {
    let prep = &plan.preparation;
    let o = &plan.options;
    let recent = crate::summary::request::llm_messages(session, &prep.recent)?.len();
    Ok(vec![
        (
            "anthropic",
            prep.previous_preserve_data
                .as_ref()
                .and_then(|p| p.get(PRESERVE_KEY))
                .cloned()
                .unwrap_or(Value::Null),
        ),
        ("recent", recent.into()),
        (
            "prompt",
            o.prompt_override
                .as_deref()
                .unwrap_or(crate::prompts::COMPACTION_SUMMARY)
                .into(),
        ),
        ("customInstructions", o.custom_instructions.clone().into()),
        ("extraContext", o.extra_context.clone().into()),
        (
            "maxTokens",
            crate::summary::serialize::history_max_tokens(plan.settings.reserve_or_default())
                .into(),
        ),
    ])
}

/// The previous summary as the `compaction` block the API signed, for a request of `provider`
/// (spec: compaction §13): `{content, encryptedContent?, block?}` when the plan's messages start with
/// the previous summary (`leads_with_summary`: no OpenAI record precedes it), the stored
/// `anthropicCompaction` record was written by that same provider (a non-empty name) and its
/// `content` is a non-empty text; else `None`, and the summary goes as the context message it
/// is. The block replaces that first message; the opaque state is replayed only to its author.
pub fn replayed_block(plan: &CompactionPlan, provider: Option<&str>) -> Option<Value> {
    let provider = provider.filter(|p| !p.is_empty())?;
    if !super::openai::leads_with_summary(plan) {
        return None;
    }
    let record = plan
        .preparation
        .previous_preserve_data
        .as_ref()?
        .get(PRESERVE_KEY)?;
    let text = |key: &str| {
        record
            .get(key)
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
    };
    if record.get("provider").and_then(Value::as_str) != Some(provider) {
        return None;
    }
    let mut block = vec![("content", text("content")?.into())];
    if let Some(e) = text("encryptedContent") {
        block.push(("encryptedContent", e.into()));
    }
    // An on-demand record's whole block, sent back as the API returned it (its signature
    // covers it: `anthropic_ondemand`).
    if let Some(b) = record.get("block").filter(|b| b.is_object()) {
        block.push(("block", b.clone()));
    }
    Some(object(block))
}

/// The input tokens the compaction edit triggers at: the API refuses a trigger below this.
/// The lane needs a live context of `lanes::ANTHROPIC_MIN_CONTEXT_TOKENS`, a margin above it.
pub const TRIGGER_TOKENS: u64 = 50_000;

/// The summarization instructions of the compaction edit (they replace the API's own), spec:
/// compaction §13: the scope — the kept tail, `(count, role of its first message)` of the wire
/// messages, stays verbatim after the summary, so it is not summarized — the host's extra
/// context, the summary prompt with the caller's focus, and no tool calls (a summarization
/// that calls a tool yields no summary).
pub fn compaction_instructions(
    prompt: &str,
    focus: Option<&str>,
    extra_context: &[String],
    tail: Option<(usize, &str)>,
) -> String {
    let mut out = match tail {
        None => "SCOPE: The conversation above is the transcript to summarize. The API replaces \
                 everything before your summary with it, so nothing you leave out survives into \
                 the next context window."
            .to_string(),
        Some((n, role)) => {
            let mut scope = if n == 1 {
                format!("SCOPE: The conversation's final {role} message stays in context verbatim after your summary.")
            } else {
                let article = if role == "user" { "a" } else { "an" };
                format!(
                    "SCOPE: The conversation's final {n} messages, starting with {article} {role} \
                     message, stay in context verbatim after your summary."
                )
            };
            scope.push_str(
                " Summarize ONLY the history before those messages. You MUST NOT restate \
                 anything from those final messages — the reader sees them right after the \
                 summary — and you MUST treat them as the most recent state when describing \
                 progress and next steps.",
            );
            scope
        }
    };
    out.push_str("\n\n");
    if !extra_context.is_empty() {
        out.push_str("<additional-context>\n");
        for line in extra_context {
            out.push_str("- ");
            out.push_str(line);
            out.push('\n');
        }
        out.push_str("</additional-context>\n\n");
    }
    out.push_str(prompt.trim_end_matches(crate::support::text::is_js_whitespace));
    if let Some(f) = focus.filter(|f| !f.is_empty()) {
        out.push_str("\n\nAdditional focus: ");
        out.push_str(f);
    }
    out.push_str(
        "\n\nYou MUST NOT call any tools while writing the summary; respond with the summary \
         text only.",
    );
    out
}

/// [`compaction_instructions`] of a plan: its prompt (the hook's override or the default), the
/// caller's focus and the hook's extra context.
pub fn plan_instructions(plan: &CompactionPlan, tail: Option<(usize, &str)>) -> String {
    let o = &plan.options;
    compaction_instructions(
        o.prompt_override
            .as_deref()
            .unwrap_or(crate::prompts::COMPACTION_SUMMARY),
        o.custom_instructions.as_deref(),
        &o.extra_context,
        tail,
    )
}

// ----- the answer ---------------------------------------------------------------------------

/// What a compaction response carried.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeSummary {
    /// The summary the API wrote.
    pub content: String,
    /// The opaque state the API attached to the block (replayed verbatim).
    pub encrypted_content: Option<String>,
    /// Prompt tokens the request processed (input, cache reads and writes), for display.
    pub used_tokens: Option<u64>,
}

fn failed(reason: impl Into<String>) -> Error {
    Error::Summarizer {
        reason: format!("Anthropic compaction {}", reason.into()),
    }
}

/// Reads a Messages API response (untrusted text): exactly one `compaction` block with a
/// non-empty string summary; `encrypted_content`, when present, a string. `E_SUMMARIZER`
/// otherwise: invalid JSON, an error object, no or several compaction blocks (the API answers
/// the prompt instead when its input stayed below the trigger), an empty summary (the model
/// called a tool while summarizing).
pub fn read_response(text: &str) -> Result<NativeSummary> {
    let v = crate::support::json::parse(text)
        .map_err(|e| failed(format!("returned invalid JSON: {e}")))?;
    if text_of(&v, "type") == Some("error") {
        let message = v
            .get("error")
            .and_then(|e| text_of(e, "message"))
            .unwrap_or("");
        return Err(failed(format!("failed: {message}")));
    }
    let Some(content) = v.get("content").and_then(Value::as_array) else {
        return Err(failed("response has no content array"));
    };
    let blocks: Vec<&Value> = content
        .iter()
        .filter(|b| text_of(b, "type") == Some("compaction"))
        .collect();
    let block = match blocks.as_slice() {
        [one] => *one,
        [] if text_of(&v, "stop_reason") == Some("compaction") => {
            return Err(failed("returned no summary"))
        }
        [] => return Err(failed("response carried no compaction block")),
        many => {
            return Err(failed(format!(
                "response carried {} compaction blocks; expected one",
                many.len()
            )))
        }
    };
    let summary = block.get("content").and_then(Value::as_str).unwrap_or("");
    if summary.trim().is_empty() {
        return Err(failed("returned no summary"));
    }
    let encrypted_content = match block.get("encrypted_content") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()).filter(|s| !s.is_empty()),
        Some(_) => return Err(failed("block has a malformed encrypted_content")),
    };
    let used_tokens = v.get("usage").map(|u| {
        [
            "input_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ]
        .iter()
        .filter_map(|k| u.get(*k).and_then(Value::as_u64))
        .sum()
    });
    Ok(NativeSummary {
        content: summary.to_string(),
        encrypted_content,
        used_tokens,
    })
}

/// The `preserveData.anthropicCompaction` record: provider, summary, the opaque state,
/// the harness's `<files>` section (kept apart so the block stays byte-identical to what the
/// API signed), the model and the tokens the request processed.
pub fn preserve_record(
    provider: &str,
    model: &str,
    summary: &NativeSummary,
    files_text: &str,
) -> Value {
    let mut record = vec![
        ("provider", provider.into()),
        ("content", summary.content.as_str().into()),
    ];
    if let Some(e) = &summary.encrypted_content {
        record.push(("encryptedContent", e.as_str().into()));
    }
    if !files_text.is_empty() {
        record.push(("filesText", files_text.into()));
    }
    record.push(("model", model.into()));
    if let Some(t) = summary.used_tokens {
        record.push(("usedTokens", t.into()));
    }
    object(record)
}

/// Commits a plan with the API's answer for the model `model` of `provider` (spec: compaction
/// §13, §8.4): the summary with the plan's `<files>` block as the entry's summary, `method:
/// "remote"`, and the block under `preserveData.anthropicCompaction`. A response that cannot
/// be used (`E_SUMMARIZER`) or a session that moved on (`E_STALE_PLAN`) leaves the session
/// unchanged.
pub fn commit_anthropic(
    session: &mut Session,
    plan: &CompactionPlan,
    provider: &str,
    model: &str,
    response: &str,
    now: i64,
) -> Result<Committed> {
    plan.check_fresh(session)?;
    let answer = read_response(response)?;
    let record = preserve_record(
        provider,
        model,
        &answer,
        &super::files_block(plan, session, "")?,
    );
    super::commit_native(session, plan, PRESERVE_KEY, record, &answer.content, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn response_reader() {
        let good = r#"{"type":"message","model":"claude-opus-4-6","stop_reason":"compaction",
            "content":[{"type":"compaction","content":"The summary.","encrypted_content":"sig=="}],
            "usage":{"input_tokens":60000,"cache_read_input_tokens":100,"output_tokens":5}}"#;
        assert_eq!(
            read_response(good).unwrap(),
            NativeSummary {
                content: "The summary.".into(),
                encrypted_content: Some("sig==".into()),
                used_tokens: Some(60_100),
            }
        );
        // No signature: the block is kept without one (the API documents it as optional).
        let unsigned =
            r#"{"content":[{"type":"text","text":"x"},{"type":"compaction","content":"S"}]}"#;
        let s = read_response(unsigned).unwrap();
        assert_eq!(
            (s.content.as_str(), s.encrypted_content, s.used_tokens),
            ("S", None, None)
        );
        for (bad, says) in [
            ("{", "invalid JSON"),
            ("[]", "no content"),
            (
                r#"{"type":"error","error":{"message":"overloaded"}}"#,
                "overloaded",
            ),
            (
                r#"{"content":[{"type":"text","text":"an answer"}],"stop_reason":"end_turn"}"#,
                "no compaction block",
            ),
            (r#"{"content":[],"stop_reason":"compaction"}"#, "no summary"),
            (
                r#"{"content":[{"type":"compaction","content":null}]}"#,
                "no summary",
            ),
            (
                r#"{"content":[{"type":"compaction","content":" "}]}"#,
                "no summary",
            ),
            (
                r#"{"content":[{"type":"compaction","content":"a"},{"type":"compaction","content":"b"}]}"#,
                "2 compaction blocks",
            ),
            (
                r#"{"content":[{"type":"compaction","content":"a","encrypted_content":7}]}"#,
                "malformed",
            ),
        ] {
            let e = read_response(bad).unwrap_err();
            assert_eq!(e.code(), crate::error::ErrorCode::Summarizer);
            assert!(e.to_string().contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn record() {
        let s = NativeSummary {
            content: "S".into(),
            encrypted_content: Some("E".into()),
            used_tokens: Some(7),
        };
        assert_eq!(
            preserve_record(
                "anthropic",
                "claude-opus-4-6",
                &s,
                "<read-files>\na\n</read-files>"
            ),
            json!({"provider": "anthropic", "content": "S", "encryptedContent": "E",
                   "filesText": "<read-files>\na\n</read-files>", "model": "claude-opus-4-6", "usedTokens": 7})
        );
    }
}

#[cfg(test)]
mod instruction_tests {
    use super::compaction_instructions as ins;

    const NO_TOOLS: &str =
        "\n\nYou MUST NOT call any tools while writing the summary; respond with the summary text only.";
    const ONLY: &str = " Summarize ONLY the history before those messages. You MUST NOT restate anything from those final messages — the reader sees them right after the summary — and you MUST treat them as the most recent state when describing progress and next steps.";

    #[test]
    fn the_wording_of_each_scope() {
        assert_eq!(
            ins("Summarize.  \n", None, &[], None),
            format!("SCOPE: The conversation above is the transcript to summarize. The API replaces everything before your summary with it, so nothing you leave out survives into the next context window.\n\nSummarize.{NO_TOOLS}")
        );
        assert_eq!(
            ins("P", Some("focus on tests"), &["ctx one".into(), "ctx two".into()], Some((1, "user"))),
            format!("SCOPE: The conversation's final user message stays in context verbatim after your summary.{ONLY}\n\n<additional-context>\n- ctx one\n- ctx two\n</additional-context>\n\nP\n\nAdditional focus: focus on tests{NO_TOOLS}")
        );
        assert_eq!(
            ins("P\t", Some(""), &[], Some((3, "assistant"))),
            format!("SCOPE: The conversation's final 3 messages, starting with an assistant message, stay in context verbatim after your summary.{ONLY}\n\nP{NO_TOOLS}")
        );
        assert_eq!(
            ins("P", None, &[], Some((2, "user"))),
            format!("SCOPE: The conversation's final 2 messages, starting with a user message, stay in context verbatim after your summary.{ONLY}\n\nP{NO_TOOLS}")
        );
    }
}
