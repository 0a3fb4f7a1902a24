//! A provider message as the summarizer's transcript reads it (spec: compaction §5.1): its
//! role, its content (a string or blocks), and the few members a transcript writes. The
//! transcript reads nothing else, so a message whose provider form is its session JSON as
//! written (issue 42) is read in place from that JSON, without building a `serde_json::Value`
//! of it; a message converted by `context::convert` is viewed through its value. Both give the
//! same view: a member reads as a string only when it is one, as a flag only when it is `true`
//! or `false`, and the last of duplicate keys wins, as in `JSON.parse`.

use crate::session::message::{truthy, Role};
use crate::session::{EntryKind, Session};
use crate::support::json::scan::{key_is, skip_ws, Scanner, SyntaxError, DEEP_HINT};
use crate::support::json::view::Val;
use crate::support::json::{js, restringify};
use serde_json::Value;
use std::borrow::Cow;

/// What a transcript reads of one provider message.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct MsgView<'a> {
    pub(crate) role: Option<Cow<'a, str>>,
    pub(crate) content: Content<'a>,
    pub(crate) tool_call_id: Option<Cow<'a, str>>,
    pub(crate) tool_name: Option<Cow<'a, str>>,
    pub(crate) is_error: Option<bool>,
    pub(crate) useless: Option<bool>,
    /// `errorMessage` (read by the anchor index, `summary::anchors`, not by a transcript).
    pub(crate) error_message: Option<Cow<'a, str>>,
    /// `contextOmitted` is truthy (its value as parsed: JavaScript truthiness of the parsed
    /// value, as the typed message reads it; anchor index only).
    pub(crate) omitted: bool,
    /// `content` is present, not `null`, and neither a string nor an array: the typed
    /// reading (`AgentMessage::parse`) refuses such a message (anchor index only).
    pub(crate) mistyped: bool,
}

/// A message's `content`.
#[derive(Debug, Default, PartialEq)]
pub(crate) enum Content<'a> {
    /// Absent, or neither a string nor an array.
    #[default]
    Other,
    Text(Cow<'a, str>),
    Blocks(Vec<BlockView<'a>>),
}

/// What a transcript reads of one content block (every member `None` for an element that is
/// not an object).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct BlockView<'a> {
    pub(crate) kind: Option<Cow<'a, str>>,
    pub(crate) text: Option<Cow<'a, str>>,
    pub(crate) thinking: Option<Cow<'a, str>>,
    pub(crate) id: Option<Cow<'a, str>>,
    pub(crate) name: Option<Cow<'a, str>>,
    pub(crate) mime_type: Option<Cow<'a, str>>,
    /// A tool call's `arguments`.
    pub(crate) arguments: Option<Args<'a>>,
    /// `contextOmitted` is truthy (a call hidden from the model; anchor index only).
    pub(crate) omitted: bool,
}

/// A tool call's `arguments`: a value, or the JSON text of one read in place from the
/// session (written back as JSON without building the value, issue 42; parsed where a value
/// is needed).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Args<'a> {
    Value(&'a Value),
    Text(&'a [u8]),
}

impl<'a> Args<'a> {
    /// The arguments as a value (`null` for a text that does not parse; the scan of
    /// [`MsgView::of_json`] crossed it, so it parses).
    pub(crate) fn value(&self) -> Cow<'a, Value> {
        match *self {
            Args::Value(v) => Cow::Borrowed(v),
            Args::Text(t) => Cow::Owned(Val::of(t).value().unwrap_or(Value::Null)),
        }
    }

    /// Appends `JSON.stringify(arguments)`.
    pub(crate) fn write_json(&self, out: &mut String) {
        match *self {
            Args::Value(v) => js::write_value(out, v),
            Args::Text(t) => restringify::write_json_text(out, t),
        }
    }
}

/// Arguments are equal when their values are (a text and the value it parses to too).
impl PartialEq for Args<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.value() == other.value()
    }
}

impl<'a> MsgView<'a> {
    /// The view of a message value.
    pub(crate) fn of_value(v: &'a Value) -> MsgView<'a> {
        MsgView {
            role: value_str(v, "role"),
            content: match v.get("content") {
                Some(Value::String(s)) => Content::Text(Cow::Borrowed(s)),
                Some(Value::Array(blocks)) => {
                    Content::Blocks(blocks.iter().map(BlockView::of_value).collect())
                }
                _ => Content::Other,
            },
            tool_call_id: value_str(v, "toolCallId"),
            tool_name: value_str(v, "toolName"),
            is_error: v.get("isError").and_then(Value::as_bool),
            useless: v.get("useless").and_then(Value::as_bool),
            error_message: value_str(v, "errorMessage"),
            omitted: truthy(v.get("contextOmitted")),
            mistyped: v
                .get("content")
                .is_some_and(|c| !matches!(c, Value::Null | Value::String(_) | Value::Array(_))),
        }
    }

    /// The view of a message object read in place from its JSON text, in one scan of it
    /// (the blocks of an array `content` located as it is crossed); `None` where [`readable`]
    /// is false.
    pub(crate) fn of_json(text: &'a [u8]) -> Option<MsgView<'a>> {
        let mut sc = Scanner::new();
        let start = skip_ws(text, 0);
        // The value of each key the view reads, located as it is crossed (the last of
        // duplicate keys wins, as in `JSON.parse`): no list of members, no lookup after.
        let mut spans: [Option<std::ops::Range<usize>>; MESSAGE_KEYS.len()] = Default::default();
        // The blocks of the last `content` member (the last of duplicate keys wins), when it
        // is an array.
        let mut blocks: Option<Vec<BlockView<'a>>> = None;
        let end = sc
            .members_custom(text, start, &mut |sc, _, key, at| {
                let raw = &text[key];
                let k = MESSAGE_KEYS.iter().position(|name| key_is(raw, name));
                let is_content = k == Some(0);
                let end = if is_content && text.get(at) == Some(&b'[') {
                    let mut found = Vec::new();
                    let end = sc.elements_custom(text, at, &mut |sc, _, i| {
                        let (block, end) = block_at(sc, text, i)?;
                        found.push(block);
                        Ok(end)
                    })?;
                    blocks = Some(found);
                    end
                } else {
                    if is_content {
                        blocks = None;
                    }
                    sc.skip_value(text, at)?
                };
                if let Some(k) = k {
                    spans[k] = Some(at..end);
                }
                Ok(end)
            })
            .ok()?;
        if sc.deep || sc.bad_utf8 || skip_ws(text, end) != text.len() {
            return None;
        }
        let get = |k: usize| spans[k].clone().map(|r| Val::of(&text[r]));
        let string = |k: usize| get(k).and_then(|v| v.str());
        let content = get(0).filter(|v| !v.is_null());
        Some(MsgView {
            role: string(1),
            content: match (blocks, content) {
                (Some(blocks), _) => Content::Blocks(blocks),
                (None, Some(v)) if v.raw().first() == Some(&b'"') => {
                    v.str().map_or(Content::Other, Content::Text)
                }
                _ => Content::Other,
            },
            tool_call_id: string(2),
            tool_name: string(3),
            is_error: get(4).and_then(|v| v.bool()),
            useless: get(5).and_then(|v| v.bool()),
            error_message: string(6),
            // Parsed as the typed message parses it (rare: an omitted result).
            omitted: get(7)
                .filter(|v| !v.is_null())
                .is_some_and(|v| truthy(v.value().as_ref())),
            // A string that does not decode is refused too (the scan checked escapes and UTF-8,
            // so only the type can be wrong).
            mistyped: content.is_some_and(|v| match v.raw().first() {
                Some(b'"') => v.str().is_none(),
                Some(b'[') => false,
                _ => true,
            }),
        })
    }

    /// The id of a tool result flagged `useless` that is not an error (spec: compaction §5.1;
    /// issue 36 item 7: an error is never left out).
    pub(crate) fn useless_result_id(&self) -> Option<&str> {
        (self.role.as_deref() == Some("toolResult")
            && self.useless == Some(true)
            && self.is_error != Some(true))
        .then_some(self.tool_call_id.as_deref())
        .flatten()
    }
}

impl<'a> BlockView<'a> {
    fn of_value(b: &'a Value) -> BlockView<'a> {
        BlockView {
            kind: value_str(b, "type"),
            text: value_str(b, "text"),
            thinking: value_str(b, "thinking"),
            id: value_str(b, "id"),
            name: value_str(b, "name"),
            mime_type: value_str(b, "mimeType"),
            arguments: b.get("arguments").map(Args::Value),
            omitted: truthy(b.get("contextOmitted")),
        }
    }
}

/// The block at `i` of a `content` array (members located as they are crossed; an element
/// that is not an object reads as no members), and the index after it.
fn block_at<'a>(
    sc: &mut Scanner,
    b: &'a [u8],
    i: usize,
) -> Result<(BlockView<'a>, usize), SyntaxError> {
    if b.get(i) != Some(&b'{') {
        return Ok((BlockView::default(), sc.skip_value(b, i)?));
    }
    // The value of each key a block view reads, located as it is crossed (the last of
    // duplicate keys wins, as in `JSON.parse`): no list of members, no lookup after.
    let mut spans: [Option<std::ops::Range<usize>>; BLOCK_KEYS.len()] = Default::default();
    let end = sc.members_custom(b, i, &mut |sc, b, key, at| {
        let end = sc.skip_value(b, at)?;
        let raw = &b[key];
        if let Some(k) = BLOCK_KEYS.iter().position(|name| key_is(raw, name)) {
            spans[k] = Some(at..end);
        }
        Ok(end)
    })?;
    let val = |k: usize| spans[k].clone().map(|r| Val::of(&b[r]));
    let string = |k: usize| val(k).and_then(|v| v.str());
    let block = BlockView {
        kind: string(0),
        text: string(1),
        thinking: string(2),
        id: string(3),
        name: string(4),
        mime_type: string(5),
        arguments: val(6).map(|a| Args::Text(a.raw())),
        omitted: val(7).is_some_and(|v| v.truthy()),
    };
    Ok((block, end))
}

/// The keys of a message [`MsgView::of_json`] reads, in the order of its spans (`content`
/// first).
const MESSAGE_KEYS: [&str; 8] = [
    "content",
    "role",
    "toolCallId",
    "toolName",
    "isError",
    "useless",
    "errorMessage",
    "contextOmitted",
];

/// The keys of a block [`block_at`] reads, in the order of its spans.
const BLOCK_KEYS: [&str; 8] = [
    "type",
    "text",
    "thinking",
    "id",
    "name",
    "mimeType",
    "arguments",
    "contextOmitted",
];

/// True when `text` is one JSON object that [`MsgView::of_json`] reads as the value parser
/// would: no value nested near the parser's depth limit (such a message goes through the
/// value path, which has its own handling), and every string UTF-8.
pub(crate) fn readable(text: &[u8]) -> bool {
    let mut sc = Scanner::new();
    let start = skip_ws(text, 0);
    text.get(start) == Some(&b'{')
        && sc
            .skip_value(text, start)
            .is_ok_and(|end| skip_ws(text, end) == text.len())
        && !sc.deep
        && !sc.bad_utf8
}

/// The views of a plan's messages, each read once from its JSON and shared by the plan's
/// readers (issue 42): the anchor harvest ([`crate::summary::anchors`]), the history's sizing
/// and the kept region's transcript and visible text, which read the same messages. Only a
/// user, developer, assistant or tool-result `message` entry whose JSON is held as written
/// (valid UTF-8) and that [`MsgView::of_json`] reads is kept; a reader reads any other as it
/// does without the cache. Held only while a plan is made, and for at most
/// [`ViewCache::MAX_BYTES`] of stored lines (a larger region is read as before, each reader on
/// its own).
#[derive(Debug, Default)]
pub(crate) struct ViewCache<'s> {
    /// By entry index, ascending.
    views: Vec<(usize, MsgView<'s>)>,
}

impl<'s> ViewCache<'s> {
    /// The stored bytes of the messages a cache holds at most.
    pub(crate) const MAX_BYTES: usize = 2 << 20;

    /// The views of the entries of `lists` (none when their lines weigh more than
    /// [`ViewCache::MAX_BYTES`]).
    pub(crate) fn read(session: &'s Session, lists: &[&[usize]]) -> ViewCache<'s> {
        let mut cache = ViewCache::default();
        // Plain loops over each list (no chained iterators): this runs once per plan, and a
        // loop's body is what V8 charges its tier-up budget with on every turn (issue 42,
        // docs/decisions/performance-notes.md#loop-bodies).
        let mut bytes = 0;
        // A path's entries follow one another in the file, so the lists of one path are in
        // ascending order, as the lookup needs; anything else (not a plan's lists) is not
        // cached.
        let mut last = None;
        for list in lists {
            for &i in *list {
                if last.is_some_and(|l| l >= i) {
                    return cache;
                }
                last = Some(i);
                bytes += session.entry_line_bytes(i).len();
            }
        }
        if bytes > ViewCache::MAX_BYTES {
            return cache;
        }
        cache.views.reserve(lists.iter().map(|l| l.len()).sum());
        for list in lists {
            for &i in *list {
                if let Some(view) = cached_view(session, i) {
                    cache.views.push((i, view));
                }
            }
        }
        cache
    }

    /// The number of views held.
    pub(crate) fn len(&self) -> usize {
        self.views.len()
    }

    /// The view of entry `i`, when the cache holds it: [`MsgView::of_json`] of its message.
    pub(crate) fn get(&self, i: usize) -> Option<&MsgView<'s>> {
        let at = self.views.binary_search_by_key(&i, |v| v.0).ok()?;
        Some(&self.views[at].1)
    }
}

/// The view [`ViewCache::read`] keeps of entry `i`: a message read in place. A loop body
/// of its own (issue 42, docs/decisions/performance-notes.md#loop-bodies).
#[inline(never)]
fn cached_view(session: &Session, i: usize) -> Option<MsgView<'_>> {
    in_place_role(session, i)?;
    // The stored bytes, unchecked: a view read from them has every string checked UTF-8 and
    // the rest is JSON's ASCII, so they are the text `message_json` lends (a message that is
    // not UTF-8 gives no view and is read as before).
    MsgView::of_json(message_bytes(session, i)?)
}

/// The stored bytes of the message of entry `i` (what [`Session::message_json`] reads, not
/// checked UTF-8).
fn message_bytes(session: &Session, i: usize) -> Option<&[u8]> {
    session.entry_line_bytes(i).get(session.message_span(i)?)
}

/// True when [`readable`] accepts the message of entry `i` as [`Session::message_json`] gives
/// it, without checking its UTF-8 first when it needs no check: stored bytes that read are
/// UTF-8 (every string checked, the rest JSON's ASCII) and so that text; bytes that do not read
/// are asked again through the text, which replaces what is not UTF-8.
pub(crate) fn readable_message(session: &Session, i: usize) -> bool {
    let Some(bytes) = message_bytes(session, i) else {
        return false;
    };
    readable(bytes)
        || (std::str::from_utf8(bytes).is_err()
            && session
                .message_json(i)
                .is_some_and(|json| readable(json.as_bytes())))
}

/// [`readable_message`], answered by `cache` without a second scan when it can be: a message
/// it holds a view of was read by [`MsgView::of_json`] (the same grammar and UTF-8 checks as
/// [`readable`]), and one with fewer than [`DEEP_HINT`] `{` and `[` bytes cannot nest as deep
/// as `readable` refuses (each level opens with one); any other is scanned.
pub(crate) fn readable_cached(session: &Session, i: usize, cache: &ViewCache<'_>) -> bool {
    let shallow = |b: &[u8]| {
        memchr::memchr2_iter(b'{', b'[', b)
            .nth(DEEP_HINT - 1)
            .is_none()
    };
    (cache.get(i).is_some() && message_bytes(session, i).is_some_and(shallow))
        || readable_message(session, i)
}

/// The role of entry `i` when it is a `message` entry of a role whose message is read in
/// place (user, developer, assistant, tool result).
pub(crate) fn in_place_role(session: &Session, i: usize) -> Option<Role> {
    let e = session.entry(i)?;
    match (e.kind(), e.role()) {
        (
            EntryKind::Message,
            Some(role @ (Role::User | Role::Developer | Role::Assistant | Role::ToolResult)),
        ) => Some(role),
        _ => None,
    }
}

fn value_str<'a>(v: &'a Value, key: &str) -> Option<Cow<'a, str>> {
    v.get(key).and_then(Value::as_str).map(Cow::Borrowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two readings agree, member by member, on shapes the transcript meets and on odd
    /// ones (duplicate and escaped keys, wrong types, non-object blocks, escapes).
    #[test]
    fn in_place_reading_equals_the_value_reading() {
        for text in [
            r#"{"role":"user","content":"hi"}"#,
            r#"{"role":"user","content":[{"type":"text","text":"a\nb"},{"type":"image","data":"x","mimeType":"image/png"},"odd",3,null]}"#,
            r#"{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.ts","n":1.50,"e":1e3,"d":{"x":1,"x":2}}},{"type":"thinking","thinking":"t","thinkingSignature":"s"}],"stopReason":"toolUse"}"#,
            r#"{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"\u00e9\ud83d\ude00 \ud800"}],"isError":false,"useless":true}"#,
            r#"{"r\u006fle":"toolResult","role":"user","content":{"a":1},"isError":1,"useless":"yes","toolCallId":7}"#,
            r#" { "role" : "assistant" , "content" : [ { "type" : "toolCall" , "arguments" : [ 1 , "x" ] } ] } "#,
            r#"{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n","arguments":null},{"type":"toolCall"}]}"#,
            r#"{}"#,
            r#"{"role":"user","content":[{"type":"text","text":"first"}],"content":"second"}"#,
            r#"{"role":"user","content":"first","c\u006fntent":[{"type":"text","text":"second"}]}"#,
            r#"{"role":"user","content":[{"type":"text","text":"a"}],"content":null}"#,
        ] {
            let value = crate::support::json::parse(text).unwrap();
            let raw = MsgView::of_json(text.as_bytes()).unwrap();
            assert_eq!(raw, MsgView::of_value(&value), "{text}");
        }
        assert!(!readable(b"[1]"));
        assert!(!readable(br#"{"a":1} x"#));
        let deep = format!(
            r#"{{"role":"user","content":{}1{}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        );
        assert!(!readable(deep.as_bytes()));
    }
}
