//! The input of an OpenAI native request, measured (spec: compaction §5.7 step 1, §13): fitted
//! to the model's window the way the reference does — whole, unless trailing tool outputs alone
//! push the request over — and V2's retained messages, the newest real user messages within the
//! retained budget (at most 64,000 tokens; the first that does not fit is truncated into what
//! is left). The JS shell (`src/js/providers/native-openai.ts`, sent by `src/js/runner/native.ts`) writes the Responses items and sends the
//! requests; the measures and choices are made here.

use crate::support::json::{js, object};
use serde_json::{Map, Value};

/// What an oversized trailing tool output becomes to fit the window.
pub const TRUNCATED_OUTPUT: &str = "Output: exceeded available model context → truncated.";
/// The label of the user message that carries a tool result's images.
const TOOL_IMAGE_LABEL: &str = "Attached image(s) from tool result:";
/// Flat charges of the window check: the request frame, and each image.
const REQUEST_OVERHEAD_TOKENS: u64 = 256;
const IMAGE_TOKENS: u64 = 12_000;
/// V2: the retained messages' ceiling, and what a retained image is charged.
pub const RETAINED_MAX: u64 = 64_000;
const RETAINED_IMAGE_TOKENS: u64 = 765;
/// Openings of user messages that carry harness context rather than the user's words.
const CONTEXTUAL: [&str; 6] = [
    "<environment_context>",
    "<user_instructions>",
    "<additional_context>",
    "<skills",
    "<token_budget>",
    "<model_switch>",
];

fn kind(v: &Value) -> Option<&str> {
    v.get("type").and_then(Value::as_str)
}

fn parts(item: &Value) -> &[Value] {
    item.get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `v` as the window check serializes it (image data as `<image>`), and its images.
fn for_estimate(v: &Value, images: &mut u64) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.iter().map(|x| for_estimate(x, images)).collect()),
        Value::Object(o) => {
            if kind(v) == Some("input_image") {
                *images += 1;
            }
            let m: Map<String, Value> = o
                .iter()
                .map(|(k, x)| {
                    let x = if k == "image_url" {
                        "<image>".into()
                    } else {
                        for_estimate(x, images)
                    };
                    (k.clone(), x)
                })
                .collect();
            Value::Object(m)
        }
        _ => v.clone(),
    }
}

/// The serialized bytes of `v` for the window check, and its images.
fn measure(v: &Value) -> (u64, u64) {
    let mut images = 0;
    let text = js::stringify(&for_estimate(v, &mut images));
    (text.len() as u64, images)
}

/// The request's tokens by the local estimate: its JSON (`instructions`, `input`, `tools`)
/// at four bytes per token, image data charged flat, plus the request frame.
fn tokens_of(bytes: u64, images: u64) -> u64 {
    bytes.div_ceil(4) + images * IMAGE_TOKENS + REQUEST_OVERHEAD_TOKENS
}

fn is_tool_image_attachment(i: &Value) -> bool {
    if kind(i) != Some("message") || i.get("role").and_then(Value::as_str) != Some("user") {
        return false;
    }
    let p = parts(i);
    p.iter().any(|p| kind(p) == Some("input_image"))
        && p.iter().any(|p| {
            kind(p) == Some("input_text")
                && p.get("text").and_then(Value::as_str) == Some(TOOL_IMAGE_LABEL)
        })
}

/// The rewrite of a trailing tool output that fits the window, or `None` for an item that
/// ends the run of tool outputs.
fn shrunk(item: &Value) -> Option<Value> {
    let mut out = item.as_object()?.clone();
    match kind(item)? {
        "function_call_output" | "custom_tool_call_output" => {
            out.insert("output".into(), TRUNCATED_OUTPUT.into());
        }
        "tool_search_output" => {
            out.insert("tools".into(), Value::Array(Vec::new()));
        }
        _ => return None,
    }
    Some(Value::Object(out))
}

/// The input fitted to `window` (0: unknown, kept whole): whole when the request fits;
/// otherwise the trailing tool outputs, from the newest back to the first item that is not
/// one (a tool result's image attachment is passed over), become a truncation notice until it
/// fits. When even that does not fit, the input goes as it was.
pub fn fit_to_window(
    input: &[Value],
    instructions: Option<&str>,
    tools: Option<&Value>,
    window: u64,
) -> Vec<Value> {
    let mut request = Vec::new();
    if let Some(t) = instructions {
        request.push(("instructions", Value::from(t)));
    }
    request.push(("input", Value::Array(input.to_vec())));
    if let Some(t) = tools {
        request.push(("tools", t.clone()));
    }
    let (mut bytes, mut images) = measure(&object(request));
    if window == 0 || tokens_of(bytes, images) <= window {
        return input.to_vec();
    }
    let mut fitted = input.to_vec();
    for i in (0..fitted.len()).rev() {
        if is_tool_image_attachment(&fitted[i]) {
            continue;
        }
        let Some(rewritten) = shrunk(&fitted[i]) else {
            break;
        };
        // The request's text changes by the item's: the rest is measured once.
        let (old_bytes, old_images) = measure(&fitted[i]);
        let (new_bytes, new_images) = measure(&rewritten);
        bytes = (bytes + new_bytes).saturating_sub(old_bytes);
        images = (images + new_images).saturating_sub(old_images);
        fitted[i] = rewritten;
        if tokens_of(bytes, images) <= window {
            return fitted;
        }
    }
    input.to_vec()
}

/// `ceil(length / 4)` with the length in UTF-16 units: the estimate the retained budget is
/// measured with (the reference's).
fn approx_tokens(text: &str) -> u64 {
    (text.encode_utf16().count() as u64).div_ceil(4)
}

fn is_text_part(p: &Value) -> bool {
    matches!(kind(p), Some("input_text" | "output_text"))
}

fn text_of(p: &Value) -> &str {
    p.get("text").and_then(Value::as_str).unwrap_or("")
}

/// A user message in the user's words: not one that opens with harness context.
fn is_real_user(i: &Value) -> bool {
    if kind(i) != Some("message") || i.get("role").and_then(Value::as_str) != Some("user") {
        return false;
    }
    !parts(i).iter().any(|p| {
        if kind(p) != Some("input_text") {
            return false;
        }
        let Some(t) = p.get("text").and_then(Value::as_str) else {
            return false;
        };
        let t = t.trim_start().to_ascii_lowercase();
        CONTEXTUAL.iter().any(|c| t.starts_with(c))
    })
}

fn item_tokens(i: &Value) -> u64 {
    parts(i)
        .iter()
        .map(|p| match kind(p) {
            Some("input_image") => RETAINED_IMAGE_TOKENS,
            _ if is_text_part(p) => approx_tokens(text_of(p)),
            _ => 0,
        })
        .sum()
}

/// UTF-16 units `from..to` of `u` as text (a cut surrogate pair becomes U+FFFD).
fn units(u: &[u16], from: usize, to: usize) -> String {
    String::from_utf16_lossy(&u[from..to])
}

/// `text` within `max` tokens: its head and tail around a `…N tokens truncated…` marker.
fn truncate_text(text: &str, max: u64) -> String {
    let u: Vec<u16> = text.encode_utf16().collect();
    let chars = (max as usize).saturating_mul(4);
    if u.len() <= chars {
        return text.to_string();
    }
    let cut = approx_tokens(text).saturating_sub(max).max(1);
    let marker = format!("…{cut} tokens truncated…");
    let marker_len = marker.encode_utf16().count();
    if chars <= marker_len + 2 {
        return units(&u, 0, chars);
    }
    let side = ((chars - marker_len) / 2).max(1);
    units(&u, 0, side) + &marker + &units(&u, u.len() - side, u.len())
}

/// `item` within `max` tokens: its parts in order while they fit, the first text part that does
/// not truncated into what is left; `None` when nothing is left of it.
fn truncate_item(item: &Value, max: u64) -> Option<Value> {
    let mut left = max;
    let mut kept = Vec::new();
    for p in parts(item) {
        if kind(p) == Some("input_image") {
            if left >= RETAINED_IMAGE_TOKENS {
                kept.push(p.clone());
                left -= RETAINED_IMAGE_TOKENS;
            }
            continue;
        }
        if !is_text_part(p) || left == 0 {
            continue;
        }
        let text = text_of(p);
        let tokens = approx_tokens(text);
        if tokens <= left {
            kept.push(p.clone());
            left -= tokens;
            continue;
        }
        let cut = truncate_text(text, left);
        left = 0;
        if !cut.is_empty() {
            let mut p = p.as_object()?.clone();
            p.insert("text".into(), cut.into());
            kept.push(Value::Object(p));
        }
    }
    if kept.is_empty() {
        return None;
    }
    let mut out = item.as_object()?.clone();
    out.insert("content".into(), Value::Array(kept));
    Some(Value::Object(out))
}

/// V2's retained messages (spec: compaction §13): the real user messages of `input`, newest
/// first within `budget` tokens (at most 64,000, at least 1; unset: 64,000) — the first that
/// does not fit is truncated into what is left — in their order.
pub fn retained_messages(input: &[Value], budget: Option<f64>) -> Vec<Value> {
    let budget = budget.filter(|b| b.is_finite()).map_or(RETAINED_MAX, |b| {
        b.floor().max(1.0).min(RETAINED_MAX as f64) as u64
    });
    let mut left = budget;
    let mut kept = Vec::new();
    for i in input.iter().rev() {
        if left == 0 {
            break;
        }
        if !is_real_user(i) {
            continue;
        }
        let tokens = item_tokens(i).max(1);
        if tokens <= left {
            kept.push(i.clone());
            left -= tokens;
        } else {
            kept.extend(truncate_item(i, left));
            left = 0;
        }
    }
    kept.reverse();
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(text: &str) -> Value {
        json!({"type":"message","role":"user","content":[{"type":"input_text","text":text}]})
    }

    fn output(call: &str, text: &str) -> Value {
        json!({"type":"function_call_output","call_id":call,"output":text})
    }

    #[test]
    fn a_request_that_fits_is_kept_whole() {
        let input = vec![user("hi"), output("c", &"x".repeat(4000))];
        assert_eq!(fit_to_window(&input, Some("sys"), None, 0), input);
        assert_eq!(fit_to_window(&input, Some("sys"), None, 5_000), input);
    }

    #[test]
    fn trailing_tool_outputs_are_truncated_newest_first_until_it_fits() {
        let big = "x".repeat(40_000);
        let input = vec![
            user("hi"),
            output("a", &big),
            user("again"),
            output("b", &big),
            output("c", &big),
        ];
        // Two outputs must go: the newest two, not the one before the user message.
        let fitted = fit_to_window(&input, Some("sys"), None, 12_000);
        assert_eq!(fitted[4]["output"], TRUNCATED_OUTPUT);
        assert_eq!(fitted[3]["output"], TRUNCATED_OUTPUT);
        assert_eq!(fitted[1]["output"], big.as_str());
        // When the trailing outputs are not enough, the input goes as it was.
        assert_eq!(fit_to_window(&input, Some("sys"), None, 2_000), input);
        // The incremental measure agrees with measuring the fitted request anew.
        let request = json!({"instructions":"sys","input":fitted});
        let (bytes, images) = measure(&request);
        assert!(tokens_of(bytes, images) <= 12_000);
    }

    #[test]
    fn images_are_charged_flat_and_their_data_is_not_counted() {
        let image = json!({"type":"message","role":"user","content":[
            {"type":"input_image","image_url":format!("data:image/png;base64,{}", "A".repeat(100_000))}]});
        let (bytes, images) = measure(&image);
        assert_eq!(images, 1);
        assert!(bytes < 200);
    }

    #[test]
    fn retained_messages_are_the_newest_real_user_messages_within_the_budget() {
        let input = vec![
            user(&"a".repeat(400)),
            json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}),
            user("<environment_context>cwd</environment_context>"),
            user(&"b".repeat(400)),
            user(&"c".repeat(400)),
        ];
        // 100 tokens each: the newest two fit in 250, the third is cut to the 50 left.
        let kept = retained_messages(&input, Some(250.0));
        assert_eq!(kept.len(), 3);
        assert_eq!(kept[1], input[3]);
        assert_eq!(kept[2], input[4]);
        let cut = kept[0]["content"][0]["text"].as_str().unwrap();
        assert!(cut.contains("…50 tokens truncated…"), "{cut}");
        assert_eq!(cut.encode_utf16().count(), 200 - 1);
        assert!(cut.starts_with("aaa") && cut.ends_with("aaa"));
        // Unset, huge or absurd budgets stay within 1..=64,000.
        assert_eq!(retained_messages(&input, None).len(), 3);
        assert_eq!(retained_messages(&input, Some(f64::NAN)).len(), 3);
        assert_eq!(retained_messages(&input, Some(-5.0)).len(), 1);
    }

    #[test]
    fn truncation_is_safe_on_any_text() {
        for text in ["", "é", "😀😀😀😀😀😀😀😀😀😀", &"ß".repeat(1000)] {
            for max in [0, 1, 3, 10, 1000] {
                let t = truncate_text(text, max);
                assert!(
                    t.encode_utf16().count() <= text.encode_utf16().count().max(max as usize * 4)
                );
            }
        }
    }
}
