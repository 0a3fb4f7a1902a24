//! Archive serialization: messages → the compact transcript printed on frames, with
//! `¶user:`/`¶think:`/`¶ai:`/`¶call:` scopes, dim tool output and head+tail caps (spec:
//! snapcompact §6.1–§6.3).
//!
//! The input is a small message model of our own ([`ArchiveMessage`]); the compaction
//! engine converts its session messages into it.

use crate::render::text::dataurl::{elide_data_urls, Elision};
use crate::render::text::unicode::{is_js_space, utf16_len, DIM_OFF, DIM_ON};
use crate::support::text::{char_indices, chars};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The argument key that carries a tool call's intent on the wire (`INTENT_FIELD`).
pub const INTENT_FIELD: &str = "i";

/// One message of the transcript.
#[derive(Debug, Clone, PartialEq)]
pub enum ArchiveMessage {
    /// A user message: its string content, or its text blocks concatenated.
    User {
        text: String,
    },
    Assistant {
        blocks: Vec<AssistantBlock>,
    },
    /// A tool result: its text blocks concatenated.
    ToolResult {
        tool_call_id: String,
        text: String,
        is_error: bool,
        useless: bool,
    },
}

/// One block of an assistant message.
#[derive(Debug, Clone, PartialEq)]
pub enum AssistantBlock {
    Text(String),
    Thinking(String),
    ToolCall {
        id: String,
        name: String,
        /// Arguments in insertion order.
        arguments: Map<String, Value>,
        /// The harness-derived intent, when the host has one.
        intent: Option<String>,
    },
}

/// Serialization options (spec: snapcompact §6.1); `None` caps mean no cap (`Infinity`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SerializeOptions {
    pub tool_result_max_chars: Option<usize>,
    pub tool_arg_max_chars: Option<usize>,
    pub tool_call_max_chars: Option<usize>,
    /// Share of a cap kept from the head, clamped to [0, 1].
    pub truncate_head_ratio: f64,
    pub dim_tool_results: bool,
    pub include_thinking: bool,
}

impl Default for SerializeOptions {
    fn default() -> Self {
        SerializeOptions {
            tool_result_max_chars: Some(2000),
            tool_arg_max_chars: Some(500),
            tool_call_max_chars: Some(2000),
            truncate_head_ratio: 0.6,
            dim_tool_results: true,
            include_thinking: true,
        }
    }
}

/// Head/tail cap (spec: snapcompact §6.1): text longer than `max` UTF-16 units keeps
/// round(max × ratio) units of head and the rest of `max` from the tail around
/// ` […N ch elided…] `. A cut inside a surrogate pair drops that character (JavaScript
/// would keep a lone surrogate, which normalization then drops).
pub fn truncate(text: &str, max: Option<usize>, ratio: f64) -> String {
    let Some(max) = max else {
        return text.to_string();
    };
    let len = utf16_len(text);
    if len <= max {
        return text.to_string();
    }
    let ratio = if ratio.is_nan() {
        0.6
    } else {
        ratio.clamp(0.0, 1.0)
    };
    let head = ((max as f64 * ratio) + 0.5).floor() as usize;
    let head = head.min(max);
    let tail = max - head;
    let elided = len - max;
    let mut out = String::with_capacity(max * 2 + 32);
    let mut units = 0usize;
    let mut head_end = 0;
    for (i, c) in char_indices(text) {
        if units + c.len_utf16() > head {
            break;
        }
        units += c.len_utf16();
        head_end = i + c.len_utf8();
    }
    out.push_str(&text[..head_end]);
    out.push_str(&format!(" [\u{2026}{elided}ch elided\u{2026}] "));
    let tail_from = len - tail;
    let mut units = 0usize;
    for (i, c) in char_indices(text) {
        if units >= tail_from {
            out.push_str(&text[i..]);
            break;
        }
        units += c.len_utf16();
    }
    out
}

fn strip_dim(s: &str) -> Cow<'_, str> {
    if s.contains([DIM_ON, DIM_OFF]) {
        Cow::Owned(chars(s).filter(|&c| c != DIM_ON && c != DIM_OFF).collect())
    } else {
        Cow::Borrowed(s)
    }
}

fn squash_whitespace(s: &str) -> String {
    s.split(is_js_space)
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The transcript under construction: parts joined by a blank line; content with the same
/// scope as the previous part is appended to it on a new line.
struct Transcript {
    parts: Vec<(&'static str, String)>,
}

impl Transcript {
    fn append(&mut self, prefix: &'static str, content: &str) {
        if let Some((p, body)) = self.parts.last_mut() {
            if *p == prefix {
                if !body.ends_with('\n') && !content.starts_with('\n') {
                    body.push('\n');
                }
                body.push_str(content);
                return;
            }
        }
        self.parts.push((prefix, format!("{prefix}{content}")));
    }

    fn finish(self) -> String {
        self.parts
            .into_iter()
            .map(|(_, b)| b)
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

pub const USER: &str = "\u{b6}user:";
pub const THINK: &str = "\u{b6}think:";
pub const AI: &str = "\u{b6}ai:";
pub const CALL: &str = "\u{b6}call:";

fn result_block(text: &str, o: &SerializeOptions) -> String {
    let body = strip_dim(text);
    let body = elide_data_urls(&body, Elision::Source);
    let body = truncate(&body, o.tool_result_max_chars, o.truncate_head_ratio);
    if o.dim_tool_results {
        format!("<out>\n{DIM_ON}{body}{DIM_OFF}\n</out>")
    } else {
        format!("<out>\n{body}\n</out>")
    }
}

fn call_line(
    name: &str,
    arguments: &Map<String, Value>,
    intent: Option<&str>,
    o: &SerializeOptions,
) -> String {
    let args: Vec<String> = arguments
        .iter()
        .filter(|(k, _)| k.as_str() != INTENT_FIELD)
        .map(|(k, v)| {
            let json = crate::support::json::js::stringify(v);
            let json = elide_data_urls(&json, Elision::Source);
            format!(
                "{k}={}",
                truncate(&json, o.tool_arg_max_chars, o.truncate_head_ratio)
            )
        })
        .collect();
    let args = truncate(
        &args.join(", "),
        o.tool_call_max_chars,
        o.truncate_head_ratio,
    );
    let intent = intent
        .map(str::to_string)
        .or_else(|| {
            arguments
                .get(INTENT_FIELD)
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .map(|i| squash_whitespace(&strip_dim(&i)))
        .filter(|i| !i.is_empty());
    match intent {
        Some(i) => format!("{name}({args})//{i}"),
        None => format!("{name}({args})"),
    }
}

/// `serializeConversation(messages, options)` (spec: snapcompact §6.1).
pub fn serialize_conversation(messages: &[ArchiveMessage], o: &SerializeOptions) -> String {
    let mut useless = rustc_hash::FxHashSet::default();
    let mut results = rustc_hash::FxHashMap::default();
    for m in messages {
        if let ArchiveMessage::ToolResult {
            tool_call_id,
            text,
            is_error,
            useless: u,
        } = m
        {
            if *u && !*is_error {
                useless.insert(tool_call_id.as_str());
            } else if !text.is_empty() {
                results.insert(tool_call_id.as_str(), text.as_str());
            }
        }
    }
    let mut merged = rustc_hash::FxHashSet::default();
    let mut t = Transcript { parts: Vec::new() };
    for m in messages {
        match m {
            ArchiveMessage::User { text } => {
                if !text.is_empty() {
                    t.append(USER, &strip_dim(text));
                }
            }
            ArchiveMessage::Assistant { blocks } => {
                let mut thinking: Vec<String> = Vec::new();
                let mut texts: Vec<String> = Vec::new();
                let flush =
                    |t: &mut Transcript, thinking: &mut Vec<String>, texts: &mut Vec<String>| {
                        if !thinking.is_empty() {
                            t.append(THINK, &thinking.join("\n"));
                            thinking.clear();
                        }
                        if !texts.is_empty() {
                            t.append(AI, &texts.join("\n"));
                            texts.clear();
                        }
                    };
                for b in blocks {
                    match b {
                        AssistantBlock::Text(s) => {
                            let s = strip_dim(s);
                            if !s.trim().is_empty() {
                                texts.push(s.into_owned());
                            }
                        }
                        AssistantBlock::Thinking(s) => {
                            if o.include_thinking {
                                let s = strip_dim(s);
                                if !s.trim().is_empty() {
                                    thinking.push(s.into_owned());
                                }
                            }
                        }
                        AssistantBlock::ToolCall {
                            id,
                            name,
                            arguments,
                            intent,
                        } => {
                            if useless.contains(id.as_str()) {
                                continue;
                            }
                            flush(&mut t, &mut thinking, &mut texts);
                            let mut content = call_line(name, arguments, intent.as_deref(), o);
                            if let Some(r) = results.get(id.as_str()) {
                                content.push('\n');
                                content.push_str(&result_block(r, o));
                                merged.insert(id.as_str());
                            }
                            t.append(CALL, &content);
                        }
                    }
                }
                flush(&mut t, &mut thinking, &mut texts);
            }
            ArchiveMessage::ToolResult {
                tool_call_id,
                text,
                is_error,
                useless: u,
            } => {
                if (*u && !*is_error) || merged.contains(tool_call_id.as_str()) || text.is_empty() {
                    continue;
                }
                t.append(CALL, &format!("\n{}", result_block(text, o)));
            }
        }
    }
    t.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(s: &str) -> ArchiveMessage {
        ArchiveMessage::User { text: s.into() }
    }
    fn asst(blocks: Vec<AssistantBlock>) -> ArchiveMessage {
        ArchiveMessage::Assistant { blocks }
    }
    fn text(s: &str) -> AssistantBlock {
        AssistantBlock::Text(s.into())
    }
    fn call(id: &str, name: &str, args: Value) -> AssistantBlock {
        AssistantBlock::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.as_object().cloned().unwrap_or_default(),
            intent: None,
        }
    }
    fn result(id: &str, s: &str) -> ArchiveMessage {
        ArchiveMessage::ToolResult {
            tool_call_id: id.into(),
            text: s.into(),
            is_error: false,
            useless: false,
        }
    }
    fn no_dim() -> SerializeOptions {
        SerializeOptions {
            dim_tool_results: false,
            ..Default::default()
        }
    }
    fn ser(m: &[ArchiveMessage], o: &SerializeOptions) -> String {
        serialize_conversation(m, o)
    }

    /// The examples of spec §6.2.
    #[test]
    fn spec_examples() {
        let d = SerializeOptions::default();
        assert_eq!(
            ser(&[user("do the thing"), asst(vec![text("done")])], &d),
            "¶user:do the thing\n\n¶ai:done"
        );
        assert_eq!(
            ser(
                &[
                    asst(vec![call(
                        "c1",
                        "bash",
                        json!({"i": "Running tests", "command": "bun test"})
                    )]),
                    result("c1", "3 pass")
                ],
                &no_dim()
            ),
            "¶call:bash(command=\"bun test\")//Running tests\n<out>\n3 pass\n</out>"
        );
        let think = asst(vec![
            AssistantBlock::Thinking("weigh options".into()),
            text("the answer"),
        ]);
        assert_eq!(
            ser(std::slice::from_ref(&think), &d),
            "¶think:weigh options\n\n¶ai:the answer"
        );
        let no_think = SerializeOptions {
            include_thinking: false,
            ..d
        };
        assert_eq!(ser(&[think], &no_think), "¶ai:the answer");
        assert_eq!(
            ser(
                &[asst(vec![
                    AssistantBlock::Thinking("plan first".into()),
                    call("c1", "read", json!({"path": "a.ts"}))
                ])],
                &d
            ),
            "¶think:plan first\n\n¶call:read(path=\"a.ts\")"
        );
        assert_eq!(
            ser(&[result("zz", "ok")], &no_dim()),
            "¶call:\n<out>\nok\n</out>"
        );
        assert_eq!(
            ser(
                &[
                    asst(vec![
                        text("before"),
                        call("c1", "read", json!({"path": "a.ts"})),
                        text("after")
                    ]),
                    result("c1", "file body")
                ],
                &no_dim()
            ),
            "¶ai:before\n\n¶call:read(path=\"a.ts\")\n<out>\nfile body\n</out>\n\n¶ai:after"
        );
        let useless = ArchiveMessage::ToolResult {
            tool_call_id: "c1".into(),
            text: "x".into(),
            is_error: false,
            useless: true,
        };
        assert_eq!(
            ser(
                &[
                    asst(vec![
                        text("before"),
                        call("c1", "search", json!({"q": "x"})),
                        text("after")
                    ]),
                    useless
                ],
                &d
            ),
            "¶ai:before\nafter"
        );
        assert_eq!(
            ser(
                &[
                    user("hello"),
                    user("world"),
                    asst(vec![text("hi")]),
                    asst(vec![text("there")])
                ],
                &d
            ),
            "¶user:hello\nworld\n\n¶ai:hi\nthere"
        );
        assert_eq!(
            ser(
                &[asst(vec![
                    call("a", "read", json!({"path": "a.ts"})),
                    call("b", "read", json!({"path": "b.ts"}))
                ])],
                &d
            ),
            "¶call:read(path=\"a.ts\")\nread(path=\"b.ts\")"
        );
        let long = format!("HEAD-{}-TAIL", "x".repeat(5000));
        let out = ser(
            &[
                asst(vec![call("c1", "bash", json!({}))]),
                result("c1", &long),
            ],
            &d,
        );
        assert!(out.contains("[…3010ch elided…]"), "{out}");
        assert!(out.ends_with("-TAIL\u{f}\n</out>"));
        let out = ser(
            &[asst(vec![call(
                "c1",
                "write",
                json!({"path": "a.ts", "content": "y".repeat(3000)}),
            )])],
            &d,
        );
        assert!(out.contains("write(path=\"a.ts\", content="), "{out}");
        assert!(out.contains("[…2502ch elided…]"), "{out}");
    }

    #[test]
    fn toggles_in_input_are_stripped() {
        assert_eq!(
            ser(&[user("a\u{e}b\u{f}")], &SerializeOptions::default()),
            "¶user:ab"
        );
    }

    /// Spec §11 case 92: a flood of brackets serialises quickly and exactly.
    #[test]
    fn bracket_flood() {
        let flood = format!("{};base64,", "[".repeat(80_000));
        let out = ser(&[result("zz", &flood)], &SerializeOptions::default());
        let want = format!(
            "¶call:\n<out>\n\u{e}{} […78008ch elided…] {};base64,\u{f}\n</out>",
            "[".repeat(1200),
            "[".repeat(792)
        );
        assert_eq!(out, want);
    }

    #[test]
    fn data_urls_are_elided_before_caps() {
        let png = format!("data:image/png;base64,{}", "QUFB".repeat(1000));
        let out = ser(&[result("zz", &format!("see {png} end"))], &no_dim());
        assert_eq!(
            out,
            "¶call:\n<out>\nsee [data URL omitted: image/png, 4000 base64 chars] end\n</out>"
        );
    }

    #[test]
    fn truncation_counts_utf16_units() {
        assert_eq!(truncate("abcdef", Some(4), 0.5), "ab […2ch elided…] ef");
        assert_eq!(truncate("abc", Some(4), 0.5), "abc");
        assert_eq!(truncate("abc", None, 0.5), "abc");
        // 😀 is two units: a cut through it drops it.
        assert_eq!(truncate("a😀bcdef", Some(4), 0.5), "a […4ch elided…] ef");
    }
}
