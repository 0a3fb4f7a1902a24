//! OpenAI native compaction V2 (spec: compaction §13): the normal streaming Responses request
//! with a trailing `{"type":"compaction_trigger"}` input item (built by the JS shell). The
//! stream must carry exactly one `compaction` output item and end with `response.completed`;
//! the replacement history is then the real user messages of the request (the shell keeps the
//! newest within the retained budget of at most 64,000 tokens) followed by that item.

use super::{failed, text_of};
use crate::error::Result;
use crate::support::json::object;
use serde_json::Value;

/// What a complete V2 stream gave.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamedCompaction {
    /// The one `compaction` output item.
    pub item: Value,
    /// `usage` of `response.completed`: `{inputTokens, outputTokens, totalTokens,
    /// cachedInputTokens?, reasoningOutputTokens?}` when the three totals are numbers.
    pub usage: Option<Value>,
    /// The input tokens the provider reports (0 when unknown).
    pub used_tokens: u64,
}

#[derive(Default)]
struct Collected {
    outputs: usize,
    compactions: Vec<Value>,
    completed: bool,
    usage: Option<Value>,
}

fn usage_of(event: &Value) -> Option<Value> {
    let u = event.get("response")?.get("usage")?;
    let number = |v: Option<&Value>, key: &str| -> Option<Value> {
        let n = v?.get(key)?.as_f64().filter(|n| n.is_finite())?;
        Some(n.into())
    };
    let mut out = vec![
        ("inputTokens", number(Some(u), "input_tokens")?),
        ("outputTokens", number(Some(u), "output_tokens")?),
        ("totalTokens", number(Some(u), "total_tokens")?),
    ];
    for (k, parent, field) in [
        ("cachedInputTokens", "input_tokens_details", "cached_tokens"),
        (
            "reasoningOutputTokens",
            "output_tokens_details",
            "reasoning_tokens",
        ),
    ] {
        if let Some(n) = number(u.get(parent), field) {
            out.push((k, n));
        }
    }
    Some(object(out))
}

/// "V2 compaction stream response.failed (code): message" of a failure event.
fn failure_text(event: &Value, kind: &str) -> String {
    let error = [
        event.get("error"),
        event.get("response").and_then(|r| r.get("error")),
    ]
    .into_iter()
    .flatten()
    .find(|e| e.is_object());
    let mut t = format!("V2 compaction stream {kind}");
    if let Some(e) = error {
        if let Some(c) = text_of(e, "code").or_else(|| text_of(e, "type")) {
            t = t + " (" + c + ")";
        }
        if let Some(m) = text_of(e, "message") {
            t = t + ": " + m;
        }
    }
    t
}

impl Collected {
    fn event(&mut self, data: &str, name: Option<&str>) -> Result<()> {
        if data == "[DONE]" {
            return Ok(());
        }
        let event = crate::support::json::parse(data)
            .map_err(|e| failed(format!("V2 compaction stream parse failed: {e}")))?;
        let kind = text_of(&event, "type").or(name).unwrap_or("");
        match kind {
            "response.output_item.done" => {
                self.outputs += 1;
                if let Some(item) = event
                    .get("item")
                    .filter(|i| text_of(i, "type") == Some("compaction"))
                {
                    self.compactions.push(item.clone());
                }
            }
            "response.completed" | "response.done" => {
                self.completed = true;
                self.usage = usage_of(&event);
            }
            "response.failed" | "response.incomplete" => {
                return Err(failed(failure_text(&event, kind)));
            }
            _ => {}
        }
        Ok(())
    }
}

/// Hands each event of a server-sent-event stream (untrusted text) to `f`: its `data:` lines
/// joined by newlines, and its `event:` name. A blank line ends an event; a last event the text
/// leaves open is handed over too. Shared by the V2 and inline readers (`openai_inline`).
pub(crate) fn sse_events(
    text: &str,
    f: &mut dyn FnMut(&str, Option<&str>) -> Result<()>,
) -> Result<()> {
    let mut name: Option<&str> = None;
    let mut data: Vec<&str> = Vec::new();
    for line in text.split('\n').chain([""]) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            if !data.is_empty() {
                f(&data.join("\n"), name)?;
                data.clear();
            }
            name = None;
        } else if let Some(n) = line.strip_prefix("event:") {
            name = Some(n.trim());
        } else if let Some(d) = line.strip_prefix("data:") {
            data.push(d.trim_start());
        }
    }
    Ok(())
}

/// Reads a V2 answer: the whole server-sent-event stream as text (untrusted). Events are
/// `data:` lines (joined by newlines) ended by a blank line, named by `event:` when their
/// JSON has no `type`. `E_SUMMARIZER` when an event is not JSON, the provider reports
/// `response.failed` / `response.incomplete`, the stream ends before `response.completed`
/// (a cut stream), or it did not carry exactly one `compaction` output item.
pub fn read_stream(text: &str) -> Result<StreamedCompaction> {
    let mut c = Collected::default();
    sse_events(text, &mut |data, name| c.event(data, name))?;
    if !c.completed {
        return Err(failed(
            "V2 compaction stream closed before response.completed".into(),
        ));
    }
    let n = c.compactions.len();
    let Some(item) = c.compactions.pop().filter(|_| n == 1) else {
        return Err(failed(format!(
            "V2 compaction expected exactly one compaction output item, got {n} from {} output items",
            c.outputs
        )));
    };
    let used_tokens = c
        .usage
        .as_ref()
        .and_then(|u| u.get("inputTokens")?.as_f64())
        .map_or(0, |t| t.max(0.0) as u64);
    Ok(StreamedCompaction {
        item,
        usage: c.usage,
        used_tokens,
    })
}

/// The V2 replay record: `{version: "v2", provider, replacementHistory: [...retained,
/// item], usedTokens, usage?, retainedImageCount}`.
pub fn v2_record(provider: &str, mut retained: Vec<Value>, streamed: StreamedCompaction) -> Value {
    let images = retained
        .iter()
        .filter_map(|m| m.get("content")?.as_array())
        .flatten()
        .filter(|p| text_of(p, "type") == Some("input_image"))
        .count();
    retained.push(streamed.item);
    let mut r = vec![
        ("version", "v2".into()),
        ("provider", provider.into()),
        ("replacementHistory", Value::Array(retained)),
        ("usedTokens", streamed.used_tokens.into()),
    ];
    if let Some(u) = streamed.usage {
        r.push(("usage", u));
    }
    r.push(("retainedImageCount", images.into()));
    object(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use serde_json::json;

    fn sse(events: &[Value]) -> String {
        events.iter().map(|e| format!("data: {e}\n\n")).collect()
    }

    fn done(item: Value) -> Value {
        json!({"type":"response.output_item.done","item":item})
    }

    fn completed() -> Value {
        json!({"type":"response.completed","response":{"usage":{"input_tokens":1200,"output_tokens":30,"total_tokens":1230,"input_tokens_details":{"cached_tokens":100}}}})
    }

    #[test]
    fn a_good_stream_gives_its_compaction_item_and_usage() {
        let text = sse(&[
            json!({"type":"response.created"}),
            done(json!({"type":"reasoning"})),
            done(json!({"type":"compaction","encrypted_content":"E"})),
            completed(),
        ]) + "data: [DONE]\n\n";
        let s = read_stream(&text).unwrap();
        assert_eq!(s.item, json!({"type":"compaction","encrypted_content":"E"}));
        assert_eq!(s.used_tokens, 1200);
        assert_eq!(
            s.usage,
            Some(
                json!({"inputTokens":1200.0,"outputTokens":30.0,"totalTokens":1230.0,"cachedInputTokens":100.0})
            )
        );
        // CRLF lines, event names, multi-line data and no final blank line read the same.
        let text = "event: response.output_item.done\r\ndata: {\"item\":\r\ndata: {\"type\":\"compaction\"}}\r\n\r\n\
                    event: response.completed\r\ndata: {}";
        let s = read_stream(text).unwrap();
        assert_eq!(s.item, json!({"type":"compaction"}));
        assert_eq!((s.usage, s.used_tokens), (None, 0));
    }

    #[test]
    fn bad_streams_are_coded_errors() {
        let item = || done(json!({"type":"compaction"}));
        let cases = [
            (sse(&[item()]), "closed before response.completed"),
            (sse(&[completed()]), "got 0 from 0"),
            (sse(&[item(), item(), completed()]), "got 2 from 2"),
            (
                "data: {\"type\":\"response.output_item.done\",\"item\":{\"ty".to_string(),
                "parse failed",
            ),
            (
                sse(&[
                    json!({"type":"response.failed","response":{"error":{"code":"server_error","message":"boom"}}}),
                ]),
                "V2 compaction stream response.failed (server_error): boom",
            ),
            (String::new(), "closed before"),
        ];
        for (text, want) in cases {
            let e = read_stream(&text).unwrap_err();
            assert_eq!(e.code(), ErrorCode::Summarizer);
            assert!(e.to_string().contains(want), "{e} ∌ {want}");
        }
    }

    #[test]
    fn the_v2_record_keeps_the_retained_messages_then_the_item() {
        let user = json!({"type":"message","role":"user","content":[{"type":"input_text","text":"q"},{"type":"input_image","image_url":"x"}]});
        let item = json!({"type":"compaction"});
        let streamed = StreamedCompaction {
            item: item.clone(),
            usage: None,
            used_tokens: 7,
        };
        let record = v2_record("openai", vec![user.clone()], streamed);
        assert_eq!(
            record,
            json!({"version":"v2","provider":"openai","replacementHistory":[user,item],"usedTokens":7,"retainedImageCount":1})
        );
    }
}
