//! OpenAI server-side compaction inside the host's own Responses request (spec: compaction §13,
//! §8.3): the request carries `context_management: [{type: "compaction", compact_threshold}]`
//! and, when the rendered input crosses the threshold, the server compacts it and the response
//! (streamed or not) carries an encrypted `compaction` output item before the reply.
//!
//! Wire facts (developers.openai.com "Compaction", "Context management", read 2026-12-07):
//! the item carries the prior state in `encrypted_content`; for stateless input chaining the
//! output items are appended as usual and the items before the latest compaction item may be
//! dropped. The documentation is thin on `configuration_update`: we infer from the issue's
//! description (issue 39: "a `configuration_update` item is re-emitted after it") that such an
//! item states the configuration the compacted context runs under, so it is kept right after
//! the compaction item in the replayed history, in its order.
//!
//! The rules are here: which models' requests carry the parameter and at which threshold
//! ([`context_management`]), what a response holds ([`read_output`]), what is stored and what
//! later requests drop ([`commit_inline`]: a compaction entry whose replay is the compaction
//! item and the items after it, the reply itself kept verbatim after it). The JS shell maps the
//! wire format only.

use super::lanes::NativeModel;
use super::openai::{PRESERVE_KEY, REMOTE_SUMMARY, RESPONSES_APIS};
use super::{failed, text_of};
use crate::compaction::commit::{leaf_context_tokens, Committed};
use crate::error::{Error, ErrorCode, Result};
use crate::session::Session;
use crate::settings::CompactionSettings;
use crate::support::json::object;
use serde_json::{Map, Value};

/// The `version` of the replay record this lane writes (V1 has none, V2 `"v2"`).
pub const VERSION: &str = "inline";

/// The `type` of Codex's explicit trigger: an input item that asks the server to compact the
/// context it is sent, which must be the request's final input item (the Responses wire types
/// `CompactionTrigger`; Codex's `compact_remote_v2` sends it by default).
pub const TRIGGER_ITEM: &str = "compaction_trigger";

/// Whether the requests of model `m` (window `window`) carry server compaction under `settings`
/// (spec: compaction §13): remote compaction is on (`remoteEnabled`), the model opted in
/// (`remoteCompaction.inline: true`: the server compacts the host's own context, which the
/// host must replay, so it is never implied), it speaks a Responses dialect whose route is not
/// opted out, and its window is known. While they carry it, the threshold is the server's
/// first (`triggers::server`).
pub fn takes(m: &NativeModel, settings: &CompactionSettings, window: u64) -> bool {
    let api = m.api.as_deref().unwrap_or("");
    settings.remote_enabled
        && m.remote.inline
        && m.remote.enabled != Some(false)
        && RESPONSES_APIS.contains(&api)
        && window > 0
}

/// The `context_management` member of a Responses request of model `m` with a window of
/// `window` tokens under `settings` (spec: compaction §13), or `None` when the request carries
/// none: the model's requests carry server compaction ([`takes`]) and it asks by threshold,
/// not with the trigger item ([`trigger_item`]). The threshold is the core's compaction
/// threshold of that window (`tokens::threshold_tokens`), so the server compacts where
/// ctxfold would.
pub fn context_management(
    m: &NativeModel,
    settings: &CompactionSettings,
    window: u64,
) -> Option<Value> {
    if m.remote.trigger || !takes(m, settings, window) {
        return None;
    }
    let threshold = crate::tokens::threshold_tokens(window, settings);
    Some(Value::Array(vec![object(vec![
        ("type", "compaction".into()),
        ("compact_threshold", threshold.into()),
    ])]))
}

/// The trigger item (`{type: "compaction_trigger"}`) the host appends last to its Responses
/// request of model `m` whose context is `tokens`, or `None` (spec: compaction §13): the
/// model's requests carry server compaction ([`takes`]), it asks with the explicit trigger
/// (`remoteCompaction.compactionTrigger: true`, as Codex does by default) and the context has
/// reached the core's compaction threshold of `window` — the point where the threshold form
/// would have the server compact.
pub fn trigger_item(
    m: &NativeModel,
    settings: &CompactionSettings,
    window: u64,
    tokens: u64,
) -> Option<Value> {
    let due = tokens >= crate::tokens::threshold_tokens(window, settings);
    (m.remote.trigger && takes(m, settings, window) && due)
        .then(|| object(vec![("type", TRIGGER_ITEM.into())]))
}

/// What a response carried of a server compaction.
#[derive(Debug, Clone, PartialEq)]
pub struct InlineCompaction {
    /// The latest `compaction` output item, as sent.
    pub item: Value,
    /// The `configuration_update` items after it, in their order.
    pub updates: Vec<Value>,
}

/// The output items of a response text: a Responses object (`{output: [...]}`), an array of
/// output items, or a server-sent-event stream (the items of `response.output_item.done`, or
/// the `output` of `response.completed` when it has one). A stream must end with
/// `response.completed`; `response.failed` / `response.incomplete` / `error` events and a cut
/// stream are failures (the reply did not complete: nothing of it is committed).
fn output_items(text: &str) -> Result<Vec<Value>> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let v = crate::support::json::parse(text)
            .map_err(|e| failed(format!("Inline compaction response is not JSON: {e}")))?;
        return match v {
            Value::Array(items) => Ok(items),
            Value::Object(mut o) => match o.remove("output") {
                Some(Value::Array(items)) => Ok(items),
                _ => Err(failed(
                    "Inline compaction response has no output array".into(),
                )),
            },
            _ => Err(failed(
                "Inline compaction response has no output array".into(),
            )),
        };
    }
    let mut done: Vec<Value> = Vec::new();
    let mut completed: Option<Vec<Value>> = None;
    super::openai_v2::sse_events(text, &mut |data, name| {
        if data == "[DONE]" {
            return Ok(());
        }
        let mut event = crate::support::json::parse(data)
            .map_err(|e| failed(format!("Inline compaction stream event is not JSON: {e}")))?;
        let kind = text_of(&event, "type").or(name).unwrap_or("");
        match kind {
            "response.output_item.done" => done.extend(event.get_mut("item").map(Value::take)),
            "response.completed" | "response.done" => {
                let output = event.get_mut("response").and_then(|r| r.get_mut("output"));
                completed = Some(match output.map(Value::take) {
                    Some(Value::Array(o)) if !o.is_empty() => o,
                    _ => Vec::new(),
                });
            }
            "response.failed" | "response.incomplete" | "error" => {
                return Err(failed(format!("Inline compaction stream reported {kind}")));
            }
            _ => {}
        }
        Ok(())
    })?;
    match completed {
        None => Err(failed(
            "Inline compaction stream ended before response.completed".into(),
        )),
        Some(output) if output.is_empty() => Ok(done),
        Some(output) => Ok(output),
    }
}

/// Reads the server compaction of a response text (untrusted, spec: compaction §13): `None`
/// when it carries no `compaction` item; else the latest one — it must hold a non-empty string
/// `encrypted_content` — and the `configuration_update` items after it. `E_SUMMARIZER` for a
/// text that is no response, a failed or cut stream, a malformed compaction item.
pub fn read_output(text: &str) -> Result<Option<InlineCompaction>> {
    let items = output_items(text)?;
    let Some(at) = items
        .iter()
        .rposition(|i| text_of(i, "type") == Some("compaction"))
    else {
        return Ok(None);
    };
    let item = &items[at];
    if text_of(item, "encrypted_content").is_none_or(str::is_empty) {
        return Err(failed(
            "Inline compaction item has no encrypted_content".into(),
        ));
    }
    let updates = items[at + 1..]
        .iter()
        .filter(|i| text_of(i, "type") == Some("configuration_update"))
        .cloned()
        .collect();
    Ok(Some(InlineCompaction {
        item: item.clone(),
        updates,
    }))
}

/// Checks the server compaction a reply carries (`serverCompaction`, its output items, JSON)
/// before the reply is appended (spec: compaction §13): it must read as a server compaction
/// ([`read_output`]). `E_INVALID_MESSAGE` otherwise, so a malformed one refuses the whole
/// reply and the session stays as it was.
pub fn check_carried(items_json: &str) -> Result<()> {
    match read_output(items_json) {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(Error::coded(
            ErrorCode::InvalidMessage,
            "serverCompaction holds no compaction item",
        )),
        Err(e) => Err(Error::coded(
            ErrorCode::InvalidMessage,
            format!("serverCompaction is malformed: {e}"),
        )),
    }
}

/// The replay record: `{provider, version: "inline", replacementHistory: [item, updates…],
/// compactionItem}` — what later requests of `provider` send in place of everything before
/// the item (spec: compaction §13, the items before the latest compaction item dropped).
pub fn inline_record(provider: &str, c: &InlineCompaction) -> Value {
    let mut history = vec![c.item.clone()];
    history.extend(c.updates.iter().cloned());
    object(vec![
        ("provider", provider.into()),
        ("version", VERSION.into()),
        ("replacementHistory", Value::Array(history)),
        ("compactionItem", c.item.clone()),
    ])
}

/// Commits a server compaction read from the reply whose entry is `reply_id` (the session's
/// leaf, just appended), for `provider` (spec: compaction §13, §8.4): a `compaction` entry
/// below the leaf that keeps the reply verbatim (`firstKeptEntryId`: the reply) and replays the
/// record for `provider`; every entry before the reply is dropped from later contexts (the item
/// carries them). `tokensBefore` is the context estimate before the entry. `E_INVALID_ARGUMENT`
/// when `reply_id` is not the leaf or no provider is named; the session is unchanged then.
pub fn commit_inline(
    session: &mut Session,
    provider: &str,
    reply_id: &str,
    compaction: &InlineCompaction,
    now: i64,
) -> Result<Committed> {
    let invalid = |m: &str| Error::coded(ErrorCode::InvalidArgument, m.to_string());
    if provider.is_empty() {
        return Err(invalid(
            "an inline compaction needs the provider that wrote it",
        ));
    }
    let leaf = session
        .leaf()
        .filter(|&l| session.entries()[l].id() == reply_id)
        .ok_or_else(|| invalid("the reply of an inline compaction must be the session's leaf"))?;
    let before = leaf_context_tokens(session)?;
    let mut preserve = Map::new();
    preserve.insert(PRESERVE_KEY.into(), inline_record(provider, compaction));
    let entry = super::commit::RemoteEntry {
        summary: REMOTE_SUMMARY.to_string(),
        first_kept_entry_id: reply_id.to_string(),
        tokens_before: before,
        details: None,
        preserve,
    };
    super::commit::append_remote(session, leaf, entry, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn model(inline: bool) -> NativeModel {
        let mut m = NativeModel {
            id: "gpt-5".into(),
            provider: Some("openai".into()),
            api: Some("openai-responses".into()),
            ..NativeModel::default()
        };
        m.remote.inline = inline;
        m
    }

    #[test]
    fn the_parameter_goes_where_the_model_opted_in() {
        let s = CompactionSettings::default();
        let t = crate::tokens::threshold_tokens(200_000, &s);
        assert_eq!(
            context_management(&model(true), &s, 200_000),
            Some(json!([{"type":"compaction","compact_threshold": t}]))
        );
        assert!(t > 0 && t < 200_000);
        assert_eq!(context_management(&model(false), &s, 200_000), None);
        assert_eq!(context_management(&model(true), &s, 0), None);
        let mut chat = model(true);
        chat.api = Some("openai-completions".into());
        assert_eq!(context_management(&chat, &s, 200_000), None);
        let mut off = model(true);
        off.remote.enabled = Some(false);
        assert_eq!(context_management(&off, &s, 200_000), None);
        let no_remote = CompactionSettings {
            remote_enabled: false,
            ..CompactionSettings::default()
        };
        assert_eq!(context_management(&model(true), &no_remote, 200_000), None);
    }

    #[test]
    fn the_trigger_item_goes_at_the_threshold_instead_of_the_parameter() {
        let s = CompactionSettings::default();
        let t = crate::tokens::threshold_tokens(200_000, &s);
        let mut m = model(true);
        m.remote.trigger = true;
        assert_eq!(context_management(&m, &s, 200_000), None);
        assert_eq!(trigger_item(&m, &s, 200_000, t - 1), None);
        let item = Some(json!({"type": "compaction_trigger"}));
        assert_eq!(trigger_item(&m, &s, 200_000, t), item);
        assert_eq!(trigger_item(&m, &s, 200_000, t + 10_000), item);
        // Only for a model whose requests carry server compaction, and only when it asks so.
        assert_eq!(trigger_item(&model(true), &s, 200_000, t), None);
        let mut off = m.clone();
        off.remote.inline = false;
        assert_eq!(trigger_item(&off, &s, 200_000, t), None);
        assert_eq!(trigger_item(&m, &s, 0, t), None);
        let no_remote = CompactionSettings {
            remote_enabled: false,
            ..CompactionSettings::default()
        };
        assert_eq!(trigger_item(&m, &no_remote, 200_000, t), None);
    }

    #[test]
    fn a_response_object_an_item_array_and_a_stream_are_read_alike() {
        let items = json!([
            {"type":"compaction","encrypted_content":"old"},
            {"type":"reasoning","summary":[]},
            {"type":"compaction","id":"cmp_1","encrypted_content":"new"},
            {"type":"configuration_update","id":"cu_1","tools":[]},
            {"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}
        ]);
        let want = Some(InlineCompaction {
            item: json!({"type":"compaction","id":"cmp_1","encrypted_content":"new"}),
            updates: vec![json!({"type":"configuration_update","id":"cu_1","tools":[]})],
        });
        assert_eq!(read_output(&items.to_string()).unwrap(), want);
        let response = json!({"id":"resp_1","status":"completed","output": items});
        assert_eq!(read_output(&response.to_string()).unwrap(), want);
        let mut sse = String::new();
        for i in items.as_array().unwrap() {
            sse += &format!(
                "event: response.output_item.done\ndata: {}\n\n",
                json!({"type":"response.output_item.done","item": i})
            );
        }
        let done = format!(
            "event: response.completed\ndata: {}\n\n",
            json!({"type":"response.completed","response":{"output":[]}})
        );
        assert_eq!(read_output(&(sse.clone() + &done)).unwrap(), want);
        // A cut stream, a failed one.
        assert!(read_output(&sse).is_err());
        let failed_ = sse + "data: {\"type\":\"response.failed\"}\n\n";
        assert!(read_output(&failed_).is_err());
        // No compaction item: nothing to commit.
        assert_eq!(read_output(r#"{"output":[]}"#).unwrap(), None);
        for bad in [
            "{",
            "7",
            r#"{"output":{}}"#,
            r#"[{"type":"compaction"}]"#,
            r#"[{"type":"compaction","encrypted_content":""}]"#,
        ] {
            let e = read_output(bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::Summarizer, "{bad}");
        }
    }

    #[test]
    fn a_carried_compaction_is_checked_as_a_message() {
        let good =
            r#"[{"type":"compaction","encrypted_content":"e"},{"type":"configuration_update"}]"#;
        assert!(check_carried(good).is_ok());
        for bad in [
            "{}",
            "[]",
            r#"[{"type":"compaction"}]"#,
            r#"[{"type":"configuration_update"}]"#,
            "[7",
        ] {
            let e = check_carried(bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidMessage, "{bad}");
        }
    }

    #[test]
    fn the_record_replays_the_item_then_its_updates() {
        let c = InlineCompaction {
            item: json!({"type":"compaction","encrypted_content":"e"}),
            updates: vec![json!({"type":"configuration_update"})],
        };
        assert_eq!(
            inline_record("openai", &c),
            json!({"provider":"openai","version":"inline",
                   "replacementHistory":[{"type":"compaction","encrypted_content":"e"},{"type":"configuration_update"}],
                   "compactionItem":{"type":"compaction","encrypted_content":"e"}})
        );
    }
}
