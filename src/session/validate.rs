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
use crate::support::json::scan::{decode_str_body, skip_ws, Scanner, SyntaxError};
use crate::support::json::view::Val;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::ops::Range;
use std::rc::Rc;

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
    checked(message)
}

/// [`validate_message`] over a message's JSON text, read in place: a batch of messages
/// (`Session::from_messages`) is checked without building a value of each. A text nested
/// deep enough that the value parser might refuse it is parsed and checked as an append of it
/// would be, so both paths accept the same messages.
pub fn validate_message_text(text: &[u8]) -> Result<(), Error> {
    let start = skip_ws(text, 0);
    let end = validate_message_at(text, start)?;
    if skip_ws(text, end) != text.len() {
        return Err(trailing());
    }
    Ok(())
}

/// The refusal of a message text followed by more than whitespace.
pub(crate) fn trailing() -> Error {
    Error::InvalidMessage {
        field: String::new(),
        reason: "not JSON: trailing characters after the message".into(),
    }
}

/// [`validate_message_text`] of the message whose text starts at `start` of `text`; returns
/// the index after it (a batch holds one message per line).
pub(crate) fn validate_message_at(text: &[u8], start: usize) -> Result<usize, Error> {
    // One scan crosses the whole message: it reads the levels the checks read and tells
    // whether some string is not UTF-8 or some value nests deep.
    let mut scanner = Scanner::new();
    let (node, end) =
        scan_node(&mut scanner, text, start, LEVELS).map_err(|e| Error::InvalidMessage {
            field: String::new(),
            reason: format!("not JSON: {e}"),
        })?;
    if scanner.bad_utf8 {
        return Err(Error::InvalidMessage {
            field: String::new(),
            reason: "the message is not UTF-8".into(),
        });
    }
    if scanner.deep {
        let parsed = std::str::from_utf8(&text[start..end])
            .ok()
            .and_then(|t| crate::support::json::parse(t).ok())
            .ok_or_else(|| Error::InvalidMessage {
                field: String::new(),
                reason: "nested too deeply (128 levels or more)".into(),
            })?;
        checked(&parsed)?;
    } else {
        checked(node)?;
    }
    Ok(end)
}

/// The checks, with the provider hint added to a refusal.
fn checked<J: Json>(message: J) -> Result<(), Error> {
    check(message.clone()).map_err(|(field, reason)| {
        let reason = match provider_hint(&message) {
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

/// A JSON value as the checks read it: a parsed `serde_json::Value`, or a value's text read
/// in place (`view::Val`). One set of rules serves both.
trait Json: Clone {
    /// An object of such values.
    type Object: Clone;
    /// The type's name, for "expected …, got …".
    fn kind(&self) -> &'static str;
    fn text(&self) -> Option<Cow<'_, str>>;
    /// A string (without decoding it: a message's texts are most of its bytes).
    fn is_string(&self) -> bool;
    fn number(&self) -> Option<f64>;
    fn is_bool(&self) -> bool;
    fn is_null(&self) -> bool;
    fn is_array(&self) -> bool;
    fn object(&self) -> Option<Self::Object>;
    /// The elements of an array (borrowed where the scan already holds them).
    fn items(&self) -> Option<Cow<'_, [Self]>>;
    /// The member `key` of `o` (`null` included).
    fn member(o: &Self::Object, key: &str) -> Option<Self>;
    /// The value as `JSON.stringify` writes it (for numbers in refusals).
    fn js_text(&self) -> String;
}

impl<'a> Json for &'a Value {
    type Object = &'a Map<String, Value>;
    fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
    fn text(&self) -> Option<Cow<'_, str>> {
        self.as_str().map(Cow::Borrowed)
    }
    fn is_string(&self) -> bool {
        Value::is_string(self)
    }
    fn number(&self) -> Option<f64> {
        self.as_f64()
    }
    fn is_bool(&self) -> bool {
        Value::is_boolean(self)
    }
    fn is_null(&self) -> bool {
        Value::is_null(self)
    }
    fn is_array(&self) -> bool {
        Value::is_array(self)
    }
    fn object(&self) -> Option<Self::Object> {
        self.as_object()
    }
    fn items(&self) -> Option<Cow<'_, [Self]>> {
        self.as_array().map(|a| Cow::Owned(a.iter().collect()))
    }
    fn member(o: &Self::Object, key: &str) -> Option<Self> {
        o.get(key)
    }
    fn js_text(&self) -> String {
        js::stringify(self)
    }
}

/// A value of a message's text, read in place: an object's members and an array's elements
/// located by the one scan that crossed the message (down to [`LEVELS`]; a deeper value is
/// its raw text), so the megabytes of a message's strings are crossed once.
#[derive(Clone)]
enum Node<'a> {
    Raw(Val<'a>),
    Obj(Rc<Members<'a>>),
    Array(Rc<[Node<'a>]>),
}

/// An object's members: (key span without the quotes, value) in order.
struct Members<'a> {
    b: &'a [u8],
    list: Vec<(Range<usize>, Node<'a>)>,
}

/// How many levels of a message the scan reads into nodes: the checks read down to
/// `files[i].image.data` (message, array, object, object, value).
const LEVELS: u8 = 4;

/// Crosses the value at `i` of `b`; containers `levels` deep are read into nodes. Returns the
/// node and the index after the value.
fn scan_node<'a>(
    scanner: &mut Scanner,
    b: &'a [u8],
    i: usize,
    levels: u8,
) -> Result<(Node<'a>, usize), SyntaxError> {
    match b.get(i) {
        Some(b'{') if levels > 0 => {
            let mut list = Vec::with_capacity(6);
            let end = scanner.members_custom(b, i, &mut |scanner, _, key, j| {
                let (node, end) = scan_node(scanner, b, j, levels - 1)?;
                list.push((key, node));
                Ok(end)
            })?;
            Ok((Node::Obj(Rc::new(Members { b, list })), end))
        }
        Some(b'[') if levels > 0 => {
            let mut items = Vec::new();
            let end = scanner.elements_custom(b, i, &mut |scanner, _, j| {
                let (node, end) = scan_node(scanner, b, j, levels - 1)?;
                items.push(node);
                Ok(end)
            })?;
            Ok((Node::Array(items.into()), end))
        }
        _ => {
            let end = scanner.skip_value(b, i)?;
            Ok((Node::Raw(Val::of(&b[i..end])), end))
        }
    }
}

impl<'a> Node<'a> {
    /// The first byte of the value's text: its type. A number out of `f64`'s range reads as
    /// `null`, as the value parser reads it (`1e400`).
    fn first(&self) -> u8 {
        match self {
            Node::Raw(v) => match v.raw().first().copied() {
                Some(b'-' | b'0'..=b'9') if !v.f64().is_some_and(f64::is_finite) => b'n',
                Some(c) => c,
                None => b' ',
            },
            Node::Obj(_) => b'{',
            Node::Array(_) => b'[',
        }
    }

    /// A raw container read one level into nodes (the checks never go deeper than the scan
    /// did; this serves a caller that does).
    fn opened(&self) -> Option<Node<'a>> {
        match self {
            Node::Raw(v) => scan_node(&mut Scanner::new(), v.raw(), 0, 1)
                .ok()
                .map(|(n, _)| n),
            _ => Some(self.clone()),
        }
    }
}

impl<'a> Json for Node<'a> {
    type Object = Rc<Members<'a>>;
    fn kind(&self) -> &'static str {
        match self.first() {
            b'n' => "null",
            b't' | b'f' => "a boolean",
            b'"' => "a string",
            b'[' => "an array",
            b'{' => "an object",
            _ => "a number",
        }
    }
    fn text(&self) -> Option<Cow<'_, str>> {
        match self {
            Node::Raw(v) => v.str(),
            _ => None,
        }
    }
    fn is_string(&self) -> bool {
        self.first() == b'"'
    }
    fn number(&self) -> Option<f64> {
        match self {
            Node::Raw(v) => v.f64().filter(|n| n.is_finite()),
            _ => None,
        }
    }
    fn is_bool(&self) -> bool {
        matches!(self.first(), b't' | b'f')
    }
    fn is_null(&self) -> bool {
        self.first() == b'n'
    }
    fn is_array(&self) -> bool {
        self.first() == b'['
    }
    fn object(&self) -> Option<Self::Object> {
        match self.first() {
            b'{' => match self.opened()? {
                Node::Obj(o) => Some(o),
                _ => None,
            },
            _ => None,
        }
    }
    fn items(&self) -> Option<Cow<'_, [Self]>> {
        match self {
            Node::Array(items) => Some(Cow::Borrowed(&items[..])),
            _ if self.first() == b'[' => match self.opened()? {
                Node::Array(items) => Some(Cow::Owned(items.to_vec())),
                _ => None,
            },
            _ => None,
        }
    }
    fn member(o: &Self::Object, key: &str) -> Option<Self> {
        // The last one when a key repeats, as in `JSON.parse`.
        o.list.iter().rev().find_map(|(k, v)| {
            let raw = &o.b[k.clone()];
            let matches = raw == key.as_bytes()
                || (crate::support::json::scan::has_backslash(raw)
                    && decode_str_body(raw).is_some_and(|d| d == key));
            matches.then(|| v.clone())
        })
    }
    fn js_text(&self) -> String {
        // A number as JavaScript prints it (`1e20` is "100000000000000000000").
        match (self, self.number().and_then(serde_json::Number::from_f64)) {
            (_, Some(n)) => js::stringify(&Value::Number(n)),
            (Node::Raw(v), None) => String::from_utf8_lossy(v.raw()).into_owned(),
            _ => String::new(),
        }
    }
}

/// The members of one object, read with the path they sit at.
struct Fields<'p, J: Json> {
    o: J::Object,
    path: &'p str,
}

impl<'p, J: Json> Fields<'p, J> {
    fn at(o: J::Object, path: &'p str) -> Self {
        Fields { o, path }
    }

    /// The member, `None` when absent or `null`.
    fn get(&self, key: &str) -> Option<J> {
        J::member(&self.o, key).filter(|v| !v.is_null())
    }

    fn has(&self, key: &str) -> bool {
        J::member(&self.o, key).is_some()
    }

    fn text(&self, key: &str) -> Option<String> {
        J::member(&self.o, key).and_then(|v| v.text().map(Cow::into_owned))
    }

    fn field(&self, key: &str) -> String {
        at(self.path, key)
    }

    fn expected<T>(&self, key: &str, what: &str, got: &J) -> Result<T, Refusal> {
        refuse(
            self.field(key),
            format!("expected {what}, got {}", got.kind()),
        )
    }

    fn string(&self, key: &str, required: bool) -> Result<(), Refusal> {
        match self.get(key) {
            None if required => refuse(self.field(key), "expected a string (required)"),
            None => Ok(()),
            Some(v) if v.is_string() => Ok(()),
            Some(v) => self.expected(key, "a string", &v),
        }
    }

    fn one_of(&self, key: &str, allowed: &[&str]) -> Result<(), Refusal> {
        let Some(v) = self.get(key) else {
            return Ok(());
        };
        match v.text() {
            Some(s) if allowed.contains(&s.as_ref()) => Ok(()),
            Some(s) => refuse(
                self.field(key),
                format!("expected one of {}, got \"{s}\"", allowed.join(", ")),
            ),
            None => self.expected(key, "a string", &v),
        }
    }

    fn boolean(&self, key: &str) -> Result<(), Refusal> {
        match self.get(key) {
            None => Ok(()),
            Some(v) if v.is_bool() => Ok(()),
            Some(v) => self.expected(key, "a boolean", &v),
        }
    }

    /// The object at `key`, read at `path`.
    fn object<'q>(&self, key: &str, path: &'q str) -> Result<Option<Fields<'q, J>>, Refusal> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.object() {
            Some(o) => Ok(Some(Fields::at(o, path))),
            None => self.expected(key, "an object", &v),
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
        let Some(n) = v.number() else {
            return self.expected(key, "a number", &v);
        };
        if !n.is_finite() || n < min || n > max {
            return refuse(
                self.field(key),
                format!("{} is out of range (expected {range})", v.js_text()),
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

fn check<J: Json>(message: J) -> Result<(), Refusal> {
    let Some(o) = message.object() else {
        return refuse(
            String::new(),
            format!("a message must be an object, got {}", message.kind()),
        );
    };
    let f = Fields::<J>::at(o, "");
    let Some(role_value) = f.get("role") else {
        return refuse("role".into(), "expected a string (required)");
    };
    let Some(role) = role_value.text() else {
        return f.expected("role", "a string", &role_value);
    };
    let role = role.as_ref();
    if looks_like_provider_object(&f, role) {
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
                Some(v) if v.is_array() => content(&f, false)?,
                Some(v) => return f.expected("content", "an array of blocks", &v),
                None => return refuse("content".into(), "expected an array of blocks (required)"),
            }
            for k in ["api", "provider", "model", "errorMessage"] {
                f.string(k, false)?;
            }
            f.one_of(
                "stopReason",
                &["stop", "length", "toolUse", "error", "aborted"],
            )?;
            if let Some(u) = f.object("usage", "usage")? {
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
                if let Some(r) = u.object("orchestration", "usage.orchestration")? {
                    for k in ["input", "output", "cacheRead"] {
                        r.count(k, false)?;
                    }
                }
                if let Some(c) = u.object("cost", "usage.cost")? {
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
            let Some(files_value) = f.get("files") else {
                return refuse("files".into(), "expected an array (required)");
            };
            let Some(files) = files_value.items() else {
                return f.expected("files", "an array", &files_value);
            };
            for (i, file) in files.iter().enumerate() {
                let path = format!("files[{i}]");
                let Some(o) = file.object() else {
                    return refuse(path, format!("expected an object, got {}", file.kind()));
                };
                let g = Fields::<J>::at(o, &path);
                g.string("path", true)?;
                g.string("content", true)?;
                g.count("lineCount", false)?;
                if let Some(image) = g.get("image") {
                    block(&image, &g.field("image"), Some("image"))?;
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
                    return f.expected("images", "an array", &v);
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
fn looks_like_provider_object<J: Json>(f: &Fields<'_, J>, role: &str) -> bool {
    let s = |k: &str| f.text(k);
    f.has("choices")
        || f.has("candidates")
        || matches!(s("object").as_deref(), Some("chat.completion" | "response"))
        || (role == "assistant"
            && (f.has("tool_calls")
                || f.has("function_call")
                || (s("type").as_deref() == Some("message")
                    && !f.has("stopReason")
                    && !f.has("api"))))
}

/// `content`: a string where `text_ok`, or an array of blocks; required.
fn content<J: Json>(f: &Fields<'_, J>, text_ok: bool) -> Result<(), Refusal> {
    match f.get("content") {
        Some(v) if text_ok && v.is_string() => Ok(()),
        Some(v) if v.is_array() => blocks(f, "content", None),
        Some(v) => f.expected(
            "content",
            if text_ok {
                "a string or an array of blocks"
            } else {
                "an array of blocks"
            },
            &v,
        ),
        None => refuse(
            f.field("content"),
            "expected a string or an array of blocks (required)",
        ),
    }
}

/// An optional array of blocks at `key` (of type `only` when given).
fn blocks<J: Json>(f: &Fields<'_, J>, key: &str, only: Option<&str>) -> Result<(), Refusal> {
    let Some(v) = f.get(key) else {
        return Ok(());
    };
    let Some(items) = v.items() else {
        return f.expected(key, "an array of blocks", &v);
    };
    let path = f.field(key);
    for (i, b) in items.iter().enumerate() {
        block(b, &format!("{path}[{i}]"), only)?;
    }
    Ok(())
}

/// One content block (spec: compaction §1.7).
fn block<J: Json>(b: &J, path: &str, only: Option<&str>) -> Result<(), Refusal> {
    let Some(o) = b.object() else {
        return refuse(
            path.to_string(),
            format!("expected a block object, got {}", b.kind()),
        );
    };
    let g = Fields::<J>::at(o, path);
    let Some(type_value) = J::member(&g.o, "type") else {
        return refuse(g.field("type"), "expected a string (required)");
    };
    let Some(ty) = type_value.text() else {
        return g.expected("type", "a string", &type_value);
    };
    let ty = ty.as_ref();
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
            match J::member(&g.o, "arguments") {
                Some(v) if v.object().is_some() => Ok(()),
                Some(v) => g.expected("arguments", "an object", &v),
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
fn provider_hint<J: Json>(message: &J) -> Option<&'static str> {
    let f = Fields::<J>::at(message.object()?, "");
    let s = |k: &str| f.text(k);
    let has = |k: &str| f.has(k);
    let role = s("role");
    let role = role.as_deref();
    Some(
        if has("choices") || s("object").as_deref() == Some("chat.completion") {
            "this looks like an OpenAI ChatCompletion response: append `choices[0].message` with \
         session.appendMessages([message], { format: 'openai-chat' })"
        } else if s("object").as_deref() == Some("response")
            || J::member(&f.o, "output").is_some_and(|v| v.is_array())
        {
            "this looks like an OpenAI Responses response: append its `output` items with \
         session.appendMessages(response.output, { format: 'openai-responses' })"
        } else if s("type").as_deref() == Some("message") && role == Some("assistant") {
            "this looks like an Anthropic Messages response: append it with \
         session.appendMessages([{ role: 'assistant', content: response.content }], { format: 'anthropic' })"
        } else if has("candidates") || role == Some("model") || has("parts") && !has("id") {
            "this looks like a Gemini response or content: append its contents with \
         session.appendMessages(contents, { format: 'gemini' })"
        } else if has("parts") {
            "this looks like an AI SDK UIMessage: append it with \
         session.appendMessages([message], { format: 'ai-sdk-ui' })"
        } else if has("tool_calls")
            || has("function_call")
            || has("refusal")
            || role == Some("tool")
            || role == Some("function")
            || (role == Some("assistant")
                && !J::member(&f.o, "content").is_some_and(|v| v.is_array()))
        {
            "this looks like an OpenAI Chat Completions message: append it with \
         session.appendMessages([message], { format: 'openai-chat' })"
        } else if role == Some("system") {
            "a system prompt is not a message entry: pass it as the `system` option of \
         session.appendMessages() or Session.fromMessages()"
        } else if role.is_none() && has("content") {
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
