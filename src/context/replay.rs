//! What a provider-native compaction weighs in the context (spec: compaction §2.3, §3.1, §13).
//! After an OpenAI native compaction, a request to the provider that wrote it carries the
//! stored replacement history — the retained user messages (up to 64,000 tokens of them for
//! V2), V1's output messages and the encrypted compaction item — in place of the summary
//! message, and none of the kept entries the history holds. The context tokens of such a path
//! are those of that request: the accounting builds the path as that provider reads it
//! ([`super::counted`]) and weighs the replayed message by its items ([`replay_tokens`]).

use crate::tokens::{TokenCounter, IMAGE_TOKENS};
use serde_json::Value;

/// Members of a Responses item whose strings the model does not read as text (kinds, ids,
/// flags).
const STRUCTURAL: [&str; 7] = ["type", "role", "id", "call_id", "status", "phase", "detail"];

/// Tokens of an opaque base64 blob (`encrypted_content`): its decoded bytes at four per token
/// (our estimate; the provider expands it into the state it encrypted).
fn opaque_tokens(b64: &str) -> u64 {
    (b64.len() as u64 * 3 / 4).div_ceil(4)
}

/// Walks what a provider reads of a replayed value: each text the model reads goes to
/// `text`; an opaque blob ([`opaque_tokens`]) and an image (the flat image charge) add their
/// fixed tokens to `fixed`.
fn visit(v: &Value, key: Option<&str>, text: &mut dyn FnMut(&str), fixed: &mut u64) {
    match v {
        Value::String(s) => match key {
            Some("encrypted_content") => *fixed += opaque_tokens(s),
            Some("image_url") => *fixed += IMAGE_TOKENS,
            Some(k) if STRUCTURAL.contains(&k) => {}
            _ if s.is_empty() => {}
            _ => text(s),
        },
        Value::Array(items) => {
            for x in items {
                visit(x, key, text, fixed);
            }
        }
        // Parsed JSON nests at most 128 deep (`support::json::parse`).
        Value::Object(o) => {
            for (k, x) in o {
                visit(x, Some(k), text, fixed);
            }
        }
        _ => {}
    }
}

/// Tokens of the Responses items a replay carries: the text the model reads (message parts,
/// summaries, tool calls and outputs) by `counter`, each image at the flat image charge, each
/// encrypted item by [`opaque_tokens`].
pub fn replayed_items_tokens(items: &[Value], counter: &dyn TokenCounter) -> u64 {
    let mut counted = 0;
    let mut fixed = 0;
    for item in items {
        visit(item, None, &mut |t| counted += counter.count(t), &mut fixed);
    }
    counted + fixed
}

/// What a host's token counter must weigh of a message's `providerPayload` (the LLM view's
/// OpenAI replay, `openaiResponsesHistory`): the texts the model reads, and the tokens of what
/// no text counter measures (encrypted items, images) at the core's estimate. `None` for a
/// payload that is not a replay: the message is read as it is.
pub fn replay_pieces(payload: &Value) -> Option<(Vec<String>, u64)> {
    if payload.get("type")?.as_str()? != "openaiResponsesHistory" {
        return None;
    }
    let mut texts = Vec::new();
    let mut fixed = 0;
    for item in payload.get("items")?.as_array()? {
        visit(item, None, &mut |t| texts.push(t.to_string()), &mut fixed);
    }
    Some((texts, fixed))
}

/// The tokens of the replayed items of a summary message's JSON, when it carries an OpenAI
/// replay.
pub(super) fn replay_tokens(json: &str, counter: &dyn TokenCounter) -> Option<u64> {
    let span = crate::support::json::edit::find_path(json, &["providerPayload"]).ok()??;
    let payload = crate::support::json::parse(&json[span]).ok()?;
    if payload.get("type")?.as_str()? != "openaiResponsesHistory" {
        return None;
    }
    Some(replayed_items_tokens(
        payload.get("items")?.as_array()?,
        counter,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::ByteEstimate;
    use serde_json::json;

    #[test]
    fn replayed_items_weigh_their_text_images_and_encrypted_state() {
        let items = [
            json!({"type":"message","role":"user","id":"msg_1","content":[
                {"type":"input_text","text":"a".repeat(400)},
                {"type":"input_image","detail":"auto","image_url":"data:image/png;base64,AAAA"}]}),
            json!({"type":"function_call","call_id":"c","name":"read","arguments":"{\"p\":1}"}),
            json!({"type":"compaction","encrypted_content":"A".repeat(1600)}),
        ];
        let t = replayed_items_tokens(&items, &ByteEstimate);
        // 100 text + 1200 image + 1 + 2 (name, arguments) + 300 (1,200 decoded bytes).
        assert_eq!(t, 100 + IMAGE_TOKENS + 1 + 2 + 300);
        assert_eq!(replayed_items_tokens(&[], &ByteEstimate), 0);
    }

    #[test]
    fn only_an_openai_replay_is_weighed_by_its_items() {
        let openai = json!({"role":"compactionSummary","summary":"s","providerPayload":
            {"type":"openaiResponsesHistory","provider":"openai","items":[{"type":"message","role":"user",
             "content":[{"type":"input_text","text":"b".repeat(800)}]}]}});
        assert_eq!(replay_tokens(&openai.to_string(), &ByteEstimate), Some(200));
        let anthropic = json!({"role":"compactionSummary","summary":"s","providerPayload":
            {"type":"anthropicCompaction","provider":"anthropic","content":"s"}});
        assert_eq!(replay_tokens(&anthropic.to_string(), &ByteEstimate), None);
        assert_eq!(replay_tokens(r#"{"summary":"s"}"#, &ByteEstimate), None);
    }
}
