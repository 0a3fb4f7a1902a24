//! What a host may append as a `message` entry (spec: compaction §1.6–§1.7): the message is
//! checked where it enters, so that every later read (the typed message, the context, the
//! provider view, the format writers of the JS shell) reads it back as it was written.
//!
//! The rules, per field path (an error names it, e.g. `content[2].text`):
//! - the message is an object whose `role` is one the core reads (§1.7); an unknown role
//!   would be left out of every context without a word, so an append of one is refused
//!   (a *loaded* file keeps its unknown roles: `load` never calls this);
//! - the fields each role requires are there with their types, optional fields have their
//!   type when present (`null` counts as absent), `content` is a string (where §1.7 allows
//!   one) or an array of block objects of a known type with their required fields;
//! - numbers are finite; token counts (`usage`, `tokensBefore`, …) are non-negative and below
//!   2^53 (JavaScript's exact integers), times within JavaScript's `Date` range;
//! - members the core does not read are kept as they are: pi-family files carry fields of
//!   their own, written back byte for byte.
//!
//! Objects that look like a provider's response or message (an OpenAI ChatCompletion, an
//! Anthropic Messages response, …) get a hint naming the format reader that converts them.

use crate::error::Error;
use crate::session::message::Role;
use crate::support::json::js;
use serde_json::{Map, Value};

/// Largest token count accepted: 2^53 − 1, the largest integer JavaScript holds exactly.
pub const MAX_COUNT: f64 = 9_007_199_254_740_991.0;
/// JavaScript's `Date` range: ±8.64e15 ms around the epoch.
pub const MAX_TIME_MS: f64 = 8.64e15;

/// Token counts: 0 to 2^53 − 1.
const COUNT: (f64, f64, &str) = (0.0, MAX_COUNT, "a count from 0 to 2^53 - 1");
/// Times in ms: JavaScript's `Date` range.
const TIME: (f64, f64, &str) = (
    -MAX_TIME_MS,
    MAX_TIME_MS,
    "milliseconds within the Date range, ±8.64e15",
);

/// Block types the core knows (spec: compaction §1.7, and the pi-family blocks the format
/// readers write: `aiSdkPart`). Any other `type` would be skipped by every reader.
const BLOCK_TYPES: [&str; 8] = [
    "text",
    "image",
    "thinking",
    "redactedThinking",
    "toolCall",
    "anthropicServerTool",
    "fallback",
    "aiSdkPart",
];

/// The roles an append accepts (every role [`Role::parse`] knows).
const ROLES: &str = "user, developer, assistant, toolResult, bashExecution, pythonExecution, \
                     fileMention, custom, hookMessage, branchSummary, compactionSummary";

/// Checks a message before it is appended; `Err` is `E_INVALID_MESSAGE` naming the field.
pub fn validate_message(message: &Value) -> Result<(), Error> {
    check(message).map_err(|(field, reason)| {
        let reason = match provider_hint(message) {
            Some(hint) => format!("{reason}; {hint}"),
            None => reason,
        };
        Error::InvalidMessage { field, reason }
    })
}

/// A refusal: the field's path and what is wrong with it.
type Refusal = (String, String);

fn at(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn refuse<T>(field: String, reason: impl Into<String>) -> Result<T, Refusal> {
    Err((field, reason.into()))
}

/// A JSON type's name, for "expected …, got …".
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The members of one object, read with the path they sit at.
struct Fields<'a> {
    o: &'a Map<String, Value>,
    path: &'a str,
}

impl<'a> Fields<'a> {
    /// The member, `None` when absent or `null`.
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.o.get(key).filter(|v| !v.is_null())
    }

    fn field(&self, key: &str) -> String {
        at(self.path, key)
    }

    fn expected<T>(&self, key: &str, what: &str, got: &Value) -> Result<T, Refusal> {
        refuse(
            self.field(key),
            format!("expected {what}, got {}", kind(got)),
        )
    }

    fn string(&self, key: &str, required: bool) -> Result<(), Refusal> {
        match self.get(key) {
            None if required => refuse(self.field(key), "expected a string (required)"),
            None | Some(Value::String(_)) => Ok(()),
            Some(v) => self.expected(key, "a string", v),
        }
    }

    fn one_of(&self, key: &str, allowed: &[&str]) -> Result<(), Refusal> {
        match self.get(key) {
            None => Ok(()),
            Some(Value::String(s)) if allowed.contains(&s.as_str()) => Ok(()),
            Some(Value::String(s)) => refuse(
                self.field(key),
                format!("expected one of {}, got \"{s}\"", allowed.join(", ")),
            ),
            Some(v) => self.expected(key, "a string", v),
        }
    }

    fn boolean(&self, key: &str) -> Result<(), Refusal> {
        match self.get(key) {
            None | Some(Value::Bool(_)) => Ok(()),
            Some(v) => self.expected(key, "a boolean", v),
        }
    }

    fn object(&self, key: &str) -> Result<Option<Fields<'a>>, Refusal> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(o)) => Ok(Some(Fields { o, path: self.path })),
            Some(v) => self.expected(key, "an object", v),
        }
    }

    /// A finite number when present, within `[min, max]` (`range` says so in words: the
    /// message writes the numbers as JavaScript does, never with Rust's float formatting,
    /// which the `.wasm` would carry for this alone).
    fn number(
        &self,
        key: &str,
        required: bool,
        (min, max, range): (f64, f64, &str),
    ) -> Result<(), Refusal> {
        let v = match self.get(key) {
            None if required => return refuse(self.field(key), "expected a number (required)"),
            None => return Ok(()),
            Some(v) => v,
        };
        let Some(n) = v.as_f64() else {
            return self.expected(key, "a number", v);
        };
        if !n.is_finite() || n < min || n > max {
            return refuse(
                self.field(key),
                format!("{} is out of range (expected {range})", js::stringify(v)),
            );
        }
        Ok(())
    }

    /// A token count: finite, non-negative, below 2^53.
    fn count(&self, key: &str, required: bool) -> Result<(), Refusal> {
        self.number(key, required, COUNT)
    }

    /// Milliseconds since the epoch within JavaScript's `Date` range.
    fn time(&self, key: &str) -> Result<(), Refusal> {
        self.number(key, false, TIME)
    }
}

fn check(message: &Value) -> Result<(), Refusal> {
    let Value::Object(o) = message else {
        return refuse(
            String::new(),
            format!("a message must be an object, got {}", kind(message)),
        );
    };
    let f = Fields { o, path: "" };
    let role = match o.get("role") {
        Some(Value::String(r)) => r.as_str(),
        None | Some(Value::Null) => return refuse("role".into(), "expected a string (required)"),
        Some(v) => return f.expected("role", "a string", v),
    };
    if looks_like_provider_object(o, role) {
        return refuse(
            String::new(),
            "not an agent message (spec: compaction §1.7) but a provider's object",
        );
    }
    f.time("timestamp")?;
    f.one_of("attribution", &["user", "agent"])?;
    match Role::parse(role) {
        Role::User | Role::Developer => content(&f, true)?,
        Role::Assistant => {
            match f.get("content") {
                Some(Value::Array(_)) => content(&f, false)?,
                Some(v) => return f.expected("content", "an array of blocks", v),
                None => return refuse("content".into(), "expected an array of blocks (required)"),
            }
            for k in ["api", "provider", "model", "errorMessage"] {
                f.string(k, false)?;
            }
            f.one_of(
                "stopReason",
                &["stop", "length", "toolUse", "error", "aborted"],
            )?;
            if let Some(u) = f.object("usage")? {
                let u = Fields {
                    o: u.o,
                    path: "usage",
                };
                for k in [
                    "input",
                    "output",
                    "cacheRead",
                    "cacheWrite",
                    "totalTokens",
                    "contextTokens",
                    "premiumRequests",
                ] {
                    u.count(k, false)?;
                }
                if let Some(r) = u.object("orchestration")? {
                    let r = Fields {
                        o: r.o,
                        path: "usage.orchestration",
                    };
                    for k in ["input", "output", "cacheRead"] {
                        r.count(k, false)?;
                    }
                }
                if let Some(c) = u.object("cost")? {
                    let c = Fields {
                        o: c.o,
                        path: "usage.cost",
                    };
                    for k in ["input", "output", "cacheRead", "cacheWrite", "total"] {
                        c.count(k, false)?;
                    }
                }
            }
        }
        Role::ToolResult => {
            f.string("toolCallId", true)?;
            f.string("toolName", false)?;
            content(&f, true)?;
            f.boolean("isError")?;
            f.boolean("useless")?;
            f.time("prunedAt")?;
        }
        Role::BashExecution | Role::PythonExecution => {
            let source = if Role::parse(role) == Role::BashExecution {
                "command"
            } else {
                "code"
            };
            f.string(source, true)?;
            f.string("output", true)?;
            f.number(
                "exitCode",
                false,
                (-MAX_COUNT, MAX_COUNT, "an integer-sized number"),
            )?;
            for k in ["cancelled", "truncated", "excludeFromContext"] {
                f.boolean(k)?;
            }
            f.string("fullOutputPath", false)?;
            blocks(&f, "images", Some("image"))?;
        }
        Role::FileMention => {
            let files = match f.get("files") {
                Some(Value::Array(items)) => items,
                Some(v) => return f.expected("files", "an array", v),
                None => return refuse("files".into(), "expected an array (required)"),
            };
            for (i, file) in files.iter().enumerate() {
                let path = format!("files[{i}]");
                let Value::Object(o) = file else {
                    return refuse(path, format!("expected an object, got {}", kind(file)));
                };
                let g = Fields { o, path: &path };
                g.string("path", true)?;
                g.string("content", true)?;
                g.count("lineCount", false)?;
                if let Some(image) = g.get("image") {
                    block(image, &g.field("image"), Some("image"))?;
                }
            }
        }
        Role::Custom | Role::HookMessage => {
            f.string("customType", true)?;
            content(&f, true)?;
            f.boolean("display")?;
        }
        Role::BranchSummary => {
            f.string("summary", true)?;
            f.string("fromId", true)?;
        }
        Role::CompactionSummary => {
            f.string("summary", true)?;
            f.count("tokensBefore", true)?;
            f.count("tokensAfter", false)?;
            for k in ["shortSummary", "method", "warning"] {
                f.string(k, false)?;
            }
            blocks(&f, "blocks", None)?;
            if let Some(v) = f.get("images") {
                if !v.is_array() {
                    return f.expected("images", "an array", v);
                }
            }
        }
        Role::Other => {
            return refuse(
                "role".into(),
                format!(
                    "unknown role \"{role}\" (the context would leave the message out); \
                     expected one of {ROLES}"
                ),
            )
        }
    }
    Ok(())
}

/// A provider's response or message that would pass the role's checks but lose what it
/// carries (its tool calls, its choices): it is refused with the hint of [`provider_hint`].
fn looks_like_provider_object(o: &Map<String, Value>, role: &str) -> bool {
    let s = |k: &str| o.get(k).and_then(Value::as_str);
    o.contains_key("choices")
        || o.contains_key("candidates")
        || matches!(s("object"), Some("chat.completion" | "response"))
        || (role == "assistant"
            && (o.contains_key("tool_calls")
                || o.contains_key("function_call")
                || (s("type") == Some("message")
                    && !o.contains_key("stopReason")
                    && !o.contains_key("api"))))
}

/// `content`: a string where `text_ok`, or an array of blocks; required.
fn content(f: &Fields<'_>, text_ok: bool) -> Result<(), Refusal> {
    match f.get("content") {
        Some(Value::String(_)) if text_ok => Ok(()),
        Some(Value::Array(_)) => blocks(f, "content", None),
        Some(v) => f.expected(
            "content",
            if text_ok {
                "a string or an array of blocks"
            } else {
                "an array of blocks"
            },
            v,
        ),
        None => refuse(
            f.field("content"),
            "expected a string or an array of blocks (required)",
        ),
    }
}

/// An optional array of blocks at `key` (of type `only` when given).
fn blocks(f: &Fields<'_>, key: &str, only: Option<&str>) -> Result<(), Refusal> {
    match f.get(key) {
        None => Ok(()),
        Some(Value::Array(items)) => {
            let path = f.field(key);
            for (i, b) in items.iter().enumerate() {
                block(b, &format!("{path}[{i}]"), only)?;
            }
            Ok(())
        }
        Some(v) => f.expected(key, "an array of blocks", v),
    }
}

/// One content block (spec: compaction §1.7).
fn block(b: &Value, path: &str, only: Option<&str>) -> Result<(), Refusal> {
    let Value::Object(o) = b else {
        return refuse(
            path.to_string(),
            format!("expected a block object, got {}", kind(b)),
        );
    };
    let g = Fields { o, path };
    let ty = match o.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(v) => return g.expected("type", "a string", v),
        None => return refuse(g.field("type"), "expected a string (required)"),
    };
    if let Some(only) = only {
        if ty != only {
            return refuse(
                g.field("type"),
                format!("expected \"{only}\", got \"{ty}\""),
            );
        }
    }
    match ty {
        "text" => {
            g.string("text", true)?;
            g.string("textSignature", false)
        }
        "image" => {
            g.string("data", true)?;
            g.string("mimeType", true)
        }
        "thinking" => {
            g.string("thinking", true)?;
            g.string("thinkingSignature", false)
        }
        "redactedThinking" => g.string("data", true),
        "toolCall" => {
            g.string("id", true)?;
            g.string("name", true)?;
            match o.get("arguments") {
                Some(Value::Object(_)) => Ok(()),
                Some(v) => g.expected("arguments", "an object", v),
                None => refuse(g.field("arguments"), "expected an object (required)"),
            }
        }
        t if BLOCK_TYPES.contains(&t) => Ok(()),
        t => refuse(
            g.field("type"),
            format!(
                "unknown block type \"{t}\" (every reader would skip it); expected one of {}",
                BLOCK_TYPES.join(", ")
            ),
        ),
    }
}

/// What to do with a message that looks like a provider's object rather than an agent
/// message: the `appendMessages` call with the format reader that converts it.
fn provider_hint(message: &Value) -> Option<&'static str> {
    let o = message.as_object()?;
    let s = |k: &str| o.get(k).and_then(Value::as_str);
    let has = |k: &str| o.contains_key(k);
    Some(
        if has("choices") || s("object") == Some("chat.completion") {
            "this looks like an OpenAI ChatCompletion response: append `choices[0].message` with \
         session.appendMessages([message], { format: 'openai-chat' })"
        } else if s("object") == Some("response") || o.get("output").is_some_and(Value::is_array) {
            "this looks like an OpenAI Responses response: append its `output` items with \
         session.appendMessages(response.output, { format: 'openai-responses' })"
        } else if s("type") == Some("message") && s("role") == Some("assistant") {
            "this looks like an Anthropic Messages response: append it with \
         session.appendMessages([{ role: 'assistant', content: response.content }], { format: 'anthropic' })"
        } else if has("candidates") || s("role") == Some("model") || has("parts") && !has("id") {
            "this looks like a Gemini response or content: append its contents with \
         session.appendMessages(contents, { format: 'gemini' })"
        } else if has("parts") {
            "this looks like an AI SDK UIMessage: append it with \
         session.appendMessages([message], { format: 'ai-sdk-ui' })"
        } else if has("tool_calls")
            || has("function_call")
            || has("refusal")
            || s("role") == Some("tool")
            || s("role") == Some("function")
            || (s("role") == Some("assistant") && !o.get("content").is_some_and(Value::is_array))
        {
            "this looks like an OpenAI Chat Completions message: append it with \
         session.appendMessages([message], { format: 'openai-chat' })"
        } else if s("role") == Some("system") {
            "a system prompt is not a message entry: pass it as the `system` option of \
         session.appendMessages() or Session.fromMessages()"
        } else if s("role").is_none() && has("content") {
            "an agent message needs a `role`"
        } else {
            return None;
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refusal(v: Value) -> String {
        match validate_message(&v) {
            Err(e) => {
                assert_eq!(e.code(), crate::error::ErrorCode::InvalidMessage);
                e.to_string()
            }
            Ok(()) => panic!("accepted {v}"),
        }
    }

    #[test]
    fn accepts_the_shapes_of_every_role() {
        for v in [
            json!({"role": "user", "content": "hi", "timestamp": 1, "extra": {"kept": true}}),
            json!({"role": "developer", "content": [{"type": "text", "text": "x"}]}),
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "t", "thinkingSignature": "s"},
                {"type": "text", "text": "hi"},
                {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}},
                {"type": "anthropicServerTool", "block": {}}],
                "api": "a", "provider": "p", "model": "m", "stopReason": "toolUse",
                "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0,
                          "totalTokens": 3, "cost": {"total": 0.5}}}),
            json!({"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                   "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}],
                   "isError": false}),
            json!({"role": "bashExecution", "command": "ls", "output": "", "exitCode": null}),
            json!({"role": "pythonExecution", "code": "1", "output": "1", "exitCode": 0}),
            json!({"role": "fileMention", "files": [{"path": "a", "content": "b", "lineCount": 1}]}),
            json!({"role": "custom", "customType": "x", "content": "y", "display": true}),
            json!({"role": "hookMessage", "customType": "x", "content": []}),
            json!({"role": "branchSummary", "summary": "s", "fromId": "root"}),
            json!({"role": "compactionSummary", "summary": "s", "tokensBefore": 10}),
        ] {
            assert_eq!(validate_message(&v), Ok(()), "{v}");
        }
    }

    #[test]
    fn refusals_name_the_field() {
        let cases = [
            (
                json!({"role": "user", "content": 42}),
                "content: expected a string or an array of blocks, got a number",
            ),
            (
                json!({"role": "user", "content": null}),
                "content: expected a string or an array of blocks (required)",
            ),
            (json!({"role": "robot"}), "role: unknown role \"robot\""),
            (json!({"role": 5}), "role: expected a string, got a number"),
            (json!([1]), "a message must be an object, got an array"),
            (
                json!({"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text"}, 3]}),
                "content[1].text: expected a string (required)",
            ),
            (
                json!({"role": "user", "content": [{"type": "text", "text": "a"}, null]}),
                "content[1]: expected a block object, got null",
            ),
            (
                json!({"role": "assistant", "content": [{"type": "tool_use", "id": "x"}]}),
                "content[0].type: unknown block type \"tool_use\"",
            ),
            (
                json!({"role": "assistant", "content": [], "usage": {"input": 1e20}}),
                "usage.input: 100000000000000000000 is out of range",
            ),
            (
                json!({"role": "assistant", "content": [], "usage": {"output": -1}}),
                "usage.output: -1 is out of range",
            ),
            (
                json!({"role": "assistant", "content": [], "stopReason": "done"}),
                "stopReason: expected one of",
            ),
            (
                json!({"role": "user", "content": "x", "timestamp": 9e15}),
                "timestamp: 9000000000000000 is out of range",
            ),
            (
                json!({"role": "toolResult", "content": "x"}),
                "toolCallId: expected a string (required)",
            ),
            (
                json!({"role": "fileMention", "files": [{"path": "a", "content": 1}]}),
                "files[0].content: expected a string, got a number",
            ),
        ];
        for (v, want) in cases {
            let got = refusal(v.clone());
            assert!(got.contains(want), "{v}: {got}");
        }
    }

    #[test]
    fn provider_objects_get_a_hint() {
        let completion = json!({"id": "chatcmpl-1", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]});
        assert!(refusal(completion).contains("OpenAI ChatCompletion"));
        let chat = json!({"role": "assistant", "content": "hi", "tool_calls": []});
        assert!(refusal(chat).contains("format: 'openai-chat'"));
        let anthropic = json!({"id": "msg_1", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "t", "name": "n", "input": {}}]});
        assert!(refusal(anthropic).contains("format: 'anthropic'"));
        let anthropic_text = json!({"id": "msg_1", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn"});
        assert!(refusal(anthropic_text).contains("format: 'anthropic'"));
        let chat_calls = json!({"role": "assistant", "content": [], "tool_calls": [{"id": "x"}]});
        assert!(refusal(chat_calls).contains("format: 'openai-chat'"));
        let responses = json!({"object": "response", "output": [{"type": "message"}]});
        assert!(refusal(responses).contains("format: 'openai-responses'"));
        assert!(refusal(json!({"foo": 1})).contains("role: expected a string (required)"));
    }
}
