//! OpenAI provider-native compaction (spec: compaction §5.7 step 1, §13): the provider
//! compacts the history sent as Responses input items and answers with a `compaction` item
//! whose encrypted state replaces that history. The entry keeps the replacement history under
//! `preserveData.openaiRemoteCompaction`; a later context for the same provider replays it
//! (§2.3), any other reader gets the summary text.
//!
//! The JS shell (`src/js/providers/native-openai.ts`, sent by `src/js/runner/native.ts`) builds and sends the requests from the plan's
//! messages ([`native_messages`]); the core reads the answers, which are untrusted: V1's JSON
//! ([`read_compact_answer`]) and V2's event stream ([`super::openai_v2::read_stream`]), and
//! writes the entry ([`commit_openai`]).

use super::openai_v2;
use super::Lane;
use super::{failed, text_of};
use crate::compaction::commit::Committed;
use crate::compaction::plan::CompactionPlan;
use crate::error::Result;
use crate::session::Session;
use crate::support::json::object;
use serde_json::Value;

/// Key of the replay record in `preserveData`.
pub const PRESERVE_KEY: &str = crate::session::preserve::OPENAI_REMOTE;
/// The Responses dialects that can carry native compaction (and replay it).
pub const RESPONSES_APIS: [&str; 3] = [
    "openai-responses",
    "azure-openai-responses",
    "openai-codex-responses",
];
/// The entry's summary after a native compaction: the history lives in the payload.
pub const REMOTE_SUMMARY: &str =
    "Remote compaction preserved provider-native history for this session.";
pub use super::commit::SHORT_SUMMARY;

// ----- the V1 answer ------------------------------------------------------------------------

/// The replacement history and compaction item of a `/responses/compact` answer (untrusted
/// JSON): the `compaction` / `compaction_summary` items and the user and assistant messages
/// of `output`; the compaction item is the last `compaction` with `encrypted_content` or
/// `compaction_summary`. `E_SUMMARIZER` for text that is not JSON or has no such item.
pub fn read_compact_answer(text: &str) -> Result<(Vec<Value>, Value)> {
    let v = crate::support::json::parse(text)
        .map_err(|e| failed(format!("Remote compaction returned invalid JSON: {e}")))?;
    let history: Vec<Value> = v
        .get("output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|i| match text_of(i, "type") {
            Some("compaction" | "compaction_summary") => true,
            Some("message") => matches!(text_of(i, "role"), Some("assistant" | "user")),
            _ => false,
        })
        .cloned()
        .collect();
    let item = history
        .iter()
        .rev()
        .find(|i| match text_of(i, "type") {
            Some("compaction") => i.get("encrypted_content").is_some_and(Value::is_string),
            _ => text_of(i, "type") == Some("compaction_summary"),
        })
        .cloned()
        .ok_or_else(|| failed("Remote compaction response missing compaction item".into()))?;
    Ok((history, item))
}

/// The V1 replay record: `{provider, replacementHistory, compactionItem}`.
pub fn v1_record(provider: &str, history: Vec<Value>, item: Value) -> Value {
    object(vec![
        ("provider", provider.into()),
        ("replacementHistory", Value::Array(history)),
        ("compactionItem", item),
    ])
}

// ----- the plan's messages and the commit ---------------------------------------------------

/// What a native request is built from (spec: compaction §5.7 step 1): every message of the
/// plan as provider messages — a previous local summary first, as its context message, when
/// no native record precedes; then the history, the turn prefix and the kept messages — and
/// the previous native record (`openaiRemoteCompaction`), whose replacement history comes
/// first when its provider is the reader's.
pub fn native_messages(session: &Session, plan: &CompactionPlan) -> Result<(Vec<Value>, Value)> {
    let prep = &plan.preparation;
    let previous = previous_record(plan).cloned().unwrap_or(Value::Null);
    let mut messages = Vec::new();
    if let (Some(summary), true) = (&prep.previous_summary, leads_with_summary(plan)) {
        let text = object(vec![
            ("type", "text".into()),
            ("text", crate::prompts::compaction_context(summary).into()),
        ]);
        messages.push(object(vec![
            ("role", "user".into()),
            ("content", Value::Array(vec![text])),
        ]));
    }
    let mut entries = prep.messages_to_summarize.clone();
    entries.extend(&prep.turn_prefix);
    entries.extend(&prep.recent);
    messages.extend(crate::summary::request::llm_messages(session, &entries)?);
    Ok((messages, previous))
}

/// The previous OpenAI native record of the plan (`openaiRemoteCompaction`), if any.
fn previous_record(plan: &CompactionPlan) -> Option<&Value> {
    plan.preparation
        .previous_preserve_data
        .as_ref()
        .and_then(|p| p.get(PRESERVE_KEY))
        .filter(|v| !v.is_null())
}

/// The plan's native messages start with the previous summary as its context message
/// ([`native_messages`]): there is one, and no OpenAI native record stands in for it.
pub fn leads_with_summary(plan: &CompactionPlan) -> bool {
    plan.preparation.previous_summary.is_some() && previous_record(plan).is_none()
}

/// The previous native record a request of `provider` replays (spec: compaction §13): only
/// its author's (its replacement history is that provider's opaque state); any record when
/// no provider is named; `Value::Null` for none.
pub fn replayed_record(previous: Value, provider: Option<&str>) -> Value {
    match provider {
        Some(p) if previous.get("provider").and_then(Value::as_str) != Some(p) => Value::Null,
        _ => previous,
    }
}

/// The messages of a request of `provider` (spec: compaction §13): a message's own Responses
/// history (`providerPayload` of type `openaiResponsesHistory`) is that provider's opaque state
/// and replays only to its author — the payload's `provider`, else the assistant message's —
/// so it is taken off the messages for another provider (they are then sent as they read).
/// Without `provider`, every payload stays.
pub fn replayed_messages(messages: &mut [Value], provider: Option<&str>) {
    let Some(provider) = provider else {
        return;
    };
    for m in messages.iter_mut() {
        let Some(obj) = m.as_object_mut() else {
            continue;
        };
        let Some(p) = obj.get("providerPayload") else {
            continue;
        };
        if p.get("type").and_then(Value::as_str) != Some("openaiResponsesHistory") {
            continue;
        }
        let author = p.get("provider").and_then(Value::as_str).or_else(|| {
            (obj.get("role").and_then(Value::as_str) == Some("assistant"))
                .then(|| obj.get("provider").and_then(Value::as_str))
                .flatten()
        });
        if author.is_some_and(|a| a != provider) {
            obj.remove("providerPayload");
        }
    }
}

/// Commits the answer of one lane (spec: compaction §5.7 step 1, §8.4) for `provider`: the
/// entry has the placeholder summary (with the input tokens V2 reports) and the `<files>`
/// block, `shortSummary` "Remote compaction", `method` "remote", and `preserveData` with the
/// lane's record in place of any earlier native record. V2's record keeps `retained` (the
/// real user messages the request carried, as the shell chose them within the retained
/// budget) before the compaction item. The answer is read before anything is written:
/// `E_SUMMARIZER` for an unusable answer, `E_STALE_PLAN` for a session that moved on.
pub fn commit_openai(
    session: &mut Session,
    plan: &CompactionPlan,
    provider: &str,
    lane: Lane,
    answer: &str,
    retained: Vec<Value>,
    now: i64,
) -> Result<Committed> {
    plan.check_fresh(session)?;
    let (record, used_tokens) = match lane {
        Lane::OpenAiV1 => {
            let (history, item) = read_compact_answer(answer)?;
            (v1_record(provider, history, item), 0)
        }
        Lane::OpenAiV2 => {
            let streamed = openai_v2::read_stream(answer)?;
            let used = streamed.used_tokens;
            (openai_v2::v2_record(provider, retained, streamed), used)
        }
    };
    let mut summary = REMOTE_SUMMARY.to_string();
    if used_tokens > 0 {
        summary = format!("{summary} Compaction processed {used_tokens} input tokens.");
    }
    super::commit_native(session, plan, PRESERVE_KEY, record, &summary, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use serde_json::json;

    #[test]
    fn compact_answers_are_read() {
        let (history, item) = read_compact_answer(
            r#"{"output":[{"type":"message","role":"developer","content":[]},{"type":"reasoning"},
                {"type":"message","role":"user","content":[]},{"type":"function_call_output"},
                {"type":"compaction","encrypted_content":"new"}, 7]}"#,
        )
        .unwrap();
        assert_eq!(history.len(), 2);
        assert_eq!(item, json!({"type":"compaction","encrypted_content":"new"}));
        let (_, item) =
            read_compact_answer(r#"{"output":[{"type":"compaction_summary","summary":"s"}]}"#)
                .unwrap();
        assert_eq!(item["type"], "compaction_summary");
        for bad in [
            "",
            "{",
            "[]",
            r#"{"output":{}}"#,
            r#"{"output":[{"type":"compaction"}]}"#,
        ] {
            let e = read_compact_answer(bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::Summarizer, "{bad}");
        }
        assert_eq!(
            v1_record("openai", vec![], json!({"type":"compaction"})),
            json!({"provider":"openai","replacementHistory":[],"compactionItem":{"type":"compaction"}})
        );
    }

    #[test]
    fn a_message_history_replays_only_to_its_author() {
        let payload = |provider: Option<&str>| {
            let mut p = json!({"type":"openaiResponsesHistory","items":[{"type":"message"}]});
            if let Some(provider) = provider {
                p["provider"] = provider.into();
            }
            p
        };
        let all = vec![
            json!({"role":"user","content":"a","providerPayload": payload(Some("openai"))}),
            json!({"role":"user","content":"b","providerPayload": payload(Some("azure"))}),
            json!({"role":"assistant","provider":"azure","content":[],"providerPayload": payload(None)}),
            json!({"role":"assistant","provider":"openai","content":[],"providerPayload": payload(None)}),
            json!({"role":"user","content":"c","providerPayload": payload(None)}),
            json!({"role":"user","content":"d","providerPayload": {"type":"other","provider":"azure"}}),
        ];
        let kept = |provider| {
            let mut m = all.clone();
            replayed_messages(&mut m, provider);
            m.iter()
                .map(|m| m.get("providerPayload").is_some())
                .collect::<Vec<_>>()
        };
        // Its author's (the payload's provider, else the assistant's), one naming none, and
        // payloads of other kinds stay; another provider's history goes.
        assert_eq!(kept(Some("openai")), [true, false, false, true, true, true]);
        assert_eq!(kept(Some("azure")), [false, true, true, false, true, true]);
        assert_eq!(kept(None), [true; 6]);
        let mut m = all.clone();
        replayed_messages(&mut m, Some("openai"));
        assert_eq!(m[1]["content"], "b", "the message itself stays");
    }

    #[test]
    fn v1_records_name_their_provider() {
        assert_eq!(
            v1_record("openai", vec![], json!({"type":"compaction"})),
            json!({"provider":"openai","replacementHistory":[],"compactionItem":{"type":"compaction"}})
        );
    }
}
