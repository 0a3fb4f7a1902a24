//! Per-entry facts, recorded while the load pass crosses each `message` line (spec:
//! compaction §3.1 estimates, §2.3 context heads, §3.2 usage, §5.10 file calls, §6 pruning):
//! what token accounting, context building, cut points and pruning read of a message, taken
//! from its raw JSON in the same pass that validates it, without building any value.
//!
//! A message's facts are either exact — equal to what parsing the message gives (the
//! property tests and the `load` fuzz target compare the two on every entry) — or absent:
//! a line that is not UTF-8, a role whose shape is rare (`fileMention`, `compactionSummary`
//! messages), tool-call arguments whose `JSON.stringify` length is not certain without
//! building them (duplicate or escaped keys, deep nesting, numbers out of range). Absent
//! facts fall back to parsing the message, as before.
//!
//! Storage is columnar and small: per entry a flags word and an index into a side table of
//! string spans (offsets within the entry's line, decoded when asked for); per tool call one
//! record. The token estimates go to the session's estimate columns.

use crate::session::message::{
    truthy, AgentMessage, Content, ContentBlock, MessageHead, Role, Usage,
};
use crate::support::json::scan::{
    decode_escape, decode_string_value, key_is, skip_literal, skip_number, Scanner, StrCount,
    SyntaxError,
};
use serde_json::Value;
use std::borrow::Cow;
use std::ops::Range;

/// Tokens charged per image (spec: README "Token accounting"); `crate::tokens` sits above the
/// session layer and says the same.
const IMAGE_TOKENS: u64 = 1200;

/// The byte estimate of one fragment: `(utf8_bytes + 3) >> 2` (spec: compaction §3.1).
#[inline(always)]
fn tok(bytes: usize) -> u64 {
    (bytes as u64 + 3) >> 2
}

/// Tokens of a measured string fragment; one that does not decode (bytes that are not UTF-8)
/// reads as `""`. A lone surrogate escape decodes, as U+FFFD (3 bytes), as the parse reads it.
#[inline(always)]
fn tok_of(c: Option<StrCount>) -> u64 {
    c.filter(|c| c.decodes).map_or(0, |c| tok(c.decoded))
}

/// A byte range within an entry's line (`NONE` when absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    start: u32,
    end: u32,
}

impl Span {
    pub const NONE: Span = Span {
        start: u32::MAX,
        end: u32::MAX,
    };

    fn of(r: Option<Range<usize>>) -> Span {
        r.map_or(Span::NONE, |r| Span {
            start: r.start as u32,
            end: r.end as u32,
        })
    }

    pub fn get(self) -> Option<Range<usize>> {
        (self != Span::NONE).then_some(self.start as usize..self.end as usize)
    }

    fn shift(&mut self, by: usize) {
        if *self != Span::NONE {
            self.start -= by as u32;
            self.end -= by as u32;
        }
    }
}

// Flags of an entry's facts.
/// Facts were recorded (else: parse the message).
pub(crate) const KNOWN: u16 = 1;
/// Parsing the message fails (`content` of the wrong type): no head, no estimate.
pub(crate) const PARSE_FAILS: u16 = 1 << 1;
/// Assistant with stopReason `aborted` or `error`.
pub(crate) const FAILED: u16 = 1 << 2;
/// Assistant with a usage object.
pub(crate) const HAS_USAGE: u16 = 1 << 3;
/// Assistant with a truthy `retryRecovery`.
pub(crate) const RETRY: u16 = 1 << 4;
/// Assistant without content blocks.
pub(crate) const NO_BLOCKS: u16 = 1 << 5;
/// Assistant error turn with nothing in it (spec: compaction §2.3).
pub(crate) const EMPTY_ERROR: u16 = 1 << 6;
/// Tool result: `isError: true`.
pub(crate) const IS_ERROR: u16 = 1 << 7;
/// Tool result: `useless: true`.
pub(crate) const USELESS: u16 = 1 << 8;
/// Tool result: `prunedAt` is a number.
pub(crate) const PRUNED: u16 = 1 << 9;
/// Tool result: `contextOmitted` is truthy.
pub(crate) const OMITTED: u16 = 1 << 10;
/// Stop reason `error` (for the head).
const STOP_ERROR: u16 = 1 << 11;
/// A top-level `attribution` member is present (user, developer, tool result).
pub(crate) const ATTRIBUTED: u16 = 1 << 12;
/// Assistant: some `toolCall` block has a truthy `contextOmitted`.
pub(crate) const CALL_OMITTED: u16 = 1 << 13;

/// One tool-call block of an assistant message: its id and, for a `read`/`write`/`edit`
/// call with a string `path` argument that is not hidden, the tool and the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CallFacts {
    pub(super) id: Span,
    pub(super) path: Span,
    /// 0: not a file call; else `FileTool` as 1 + its order.
    tool: u8,
}

impl CallFacts {
    fn shift(&mut self, by: usize) {
        self.id.shift(by);
        self.path.shift(by);
    }

    pub(super) fn file_tool(self) -> Option<FileTool> {
        match self.tool {
            1 => Some(FileTool::Read),
            2 => Some(FileTool::Write),
            3 => Some(FileTool::Edit),
            _ => None,
        }
    }
}

/// The facts of one message as the scan found them (spans relative to the scanned buffer
/// until shifted to the line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MessageFacts {
    pub tokens: u64,
    pub tokens_excluding: u64,
    pub flags: u16,
    /// Tool result: `toolCallId`; assistant: `provider`; custom: `customType`.
    a: Span,
    /// Tool result: `toolName`; assistant: `model`.
    b: Span,
    /// Tool result: the `content` value; assistant: the `usage` value.
    c: Span,
    /// Tool result: the `prunedAt` value; assistant: the `stopReason` value.
    d: Span,
    /// The message's tool-call blocks: a range of the calls the scan appended.
    calls: Range<u32>,
}

impl MessageFacts {
    /// Moves every span by `-by` (buffer offsets to line offsets); the calls are shifted by
    /// their owner.
    pub fn shift(&mut self, by: usize) {
        for s in [&mut self.a, &mut self.b, &mut self.c, &mut self.d] {
            s.shift(by);
        }
    }
}

/// What the scan of a message returns: the span of its first `role` member's string value
/// (the role the index takes) and its facts, `None` when they cannot be had exactly.
pub(crate) struct MessageScan {
    pub role: Option<Range<usize>>,
    pub facts: Option<MessageFacts>,
}

/// Shifts the calls a scan appended (from `from` on) by `-by`.
pub(crate) fn shift_calls(calls: &mut [CallFacts], from: usize, by: usize) {
    for c in calls.iter_mut().skip(from) {
        c.shift(by);
    }
}

/// How a `content` value reads.
#[derive(Clone, Copy, Default)]
enum ContentShape {
    /// Absent or `null`.
    #[default]
    Empty,
    Text,
    Blocks,
    /// Neither a string nor an array: the message does not parse.
    Invalid,
}

/// The measure of the last `content` member.
#[derive(Clone, Copy, Default)]
struct ContentScan {
    shape: ContentShape,
    /// user/developer/custom/toolResult rules: text fragments and images.
    plain: u64,
    /// Assistant rules, with and without encrypted reasoning.
    full: u64,
    excluding: u64,
    /// Some element is an object (a block).
    any_block: bool,
    /// Some block is "filled" (spec: compaction §2.3 empty error turns); for string content,
    /// the string is not blank.
    filled: bool,
    /// Something could not be measured exactly.
    unsure: bool,
    /// Some `toolCall` block has a truthy `contextOmitted`.
    call_omitted: bool,
}

/// A string member measured, with whether its text is blank (all whitespace).
#[derive(Clone, Copy)]
struct Measured {
    count: StrCount,
    /// The value's span, quotes included.
    start: usize,
    end: usize,
}

impl Measured {
    fn decodes(&self) -> bool {
        self.count.decodes
    }
}

/// True when the string body (between the quotes, still escaped) holds a character that is
/// not whitespace (`str::trim` would leave something). Stops at the first such character.
fn raw_filled(body: &[u8]) -> bool {
    let mut i = 0;
    while let Some(&c) = body.get(i) {
        let (ch, next) = match c {
            b'\\' => match decode_escape(body, i + 1) {
                Some(x) => x,
                None => return true,
            },
            c if c < 0x80 => (c as char, i + 1),
            _ => {
                let len = match c {
                    0xC0..=0xDF => 2,
                    0xE0..=0xEF => 3,
                    _ => 4,
                };
                match body
                    .get(i..i + len)
                    .and_then(|s| std::str::from_utf8(s).ok())
                    .and_then(|s| s.chars().next())
                {
                    Some(ch) => (ch, i + len),
                    None => return true,
                }
            }
        };
        if !ch.is_whitespace() {
            return true;
        }
        i = next;
    }
    false
}

/// A member's key as bytes to match on: the raw key, or its decoded text when it holds an
/// escape (rare), so `"t\u0065xt"` is `text` as `JSON.parse` reads it.
fn key_bytes(raw: &[u8]) -> Cow<'_, [u8]> {
    if crate::support::json::scan::has_backslash(raw) {
        match crate::support::json::scan::decode_str_body(raw) {
            Some(k) => Cow::Owned(k.into_owned().into_bytes()),
            // A key that does not decode matches no name.
            None => Cow::Borrowed(b"\0"),
        }
    } else {
        Cow::Borrowed(raw)
    }
}

/// The text of a string value span when it needs no decoding (no escape): the usual case for
/// the type names and roles a scan compares.
fn plain_string<'b>(b: &'b [u8], r: &Range<usize>) -> Option<Cow<'b, str>> {
    decode_string_value(&b[r.clone()])
}

/// Crosses a value at `i`: measured when it is a string, else skipped. `None` in the result
/// when it is not a string.
fn string_or_skip(
    sc: &mut Scanner,
    b: &[u8],
    i: usize,
) -> Result<(usize, Option<Measured>), SyntaxError> {
    if b.get(i) == Some(&b'"') {
        let (end, count) = sc.skip_string_counting(b, i + 1)?;
        Ok((
            end,
            Some(Measured {
                count,
                start: i,
                end,
            }),
        ))
    } else {
        Ok((sc.skip_value(b, i)?, None))
    }
}

fn filled(b: &[u8], m: &Option<Measured>) -> bool {
    m.as_ref()
        .is_some_and(|m| m.decodes() && raw_filled(&b[m.start + 1..m.end - 1]))
}

/// The value span of a string member (`None` for other values).
fn string_span(b: &[u8], value: Range<usize>) -> Option<Range<usize>> {
    (b.get(value.start) == Some(&b'"')).then_some(value)
}

/// Length of `JSON.stringify(JSON.parse(raw))` for a validated JSON value, as this crate's
/// reader and writer produce it (`support::json::parse`, `js::stringify`); `None` when that
/// is not certain without building the value: keys with escapes or repeated keys (the
/// reader keeps the last), strings that do not decode (not UTF-8; a lone surrogate escape
/// decodes, as U+FFFD written as is), numbers other than short integers
/// whose value parsing may refuse, nesting near the reader's limit.
pub(crate) fn stringify_len(raw: &[u8]) -> Option<usize> {
    let mut sc = Scanner::new();
    let start = sc.skip_ws(raw, 0);
    value_len(&mut sc, raw, start, 0).map(|(_, n)| n)
}

const UNSURE: SyntaxError = SyntaxError {
    offset: 0,
    reason: "not measurable",
};

/// [`value_len`] of the object at `b[i]`, and, when `find_path`, the span of its `path` member
/// when that is a string (keys are all plain here: a key with an escape is not measured).
fn object_len(
    sc: &mut Scanner,
    b: &[u8],
    i: usize,
    depth: usize,
    find_path: bool,
) -> Option<(usize, usize, Option<Range<usize>>)> {
    let mut len = 2;
    let mut path = None;
    // The keys seen, to find a repeated one (tool arguments have a handful; more than fit
    // here are left to the parse).
    let mut keys = [(0usize, 0usize); 16];
    let mut n = 0;
    let end = sc
        .members_custom(b, i, &mut |sc, b, key, v| {
            let k = &b[key.clone()];
            if crate::support::json::scan::has_backslash(k)
                || n == keys.len()
                || keys[..n].iter().any(|&(s, e)| &b[s..e] == k)
            {
                return Err(UNSURE);
            }
            if n > 0 {
                len += 1;
            }
            len += k.len() + 3;
            keys[n] = (key.start, key.end);
            n += 1;
            let (end, n) = value_len(sc, b, v, depth + 1).ok_or(UNSURE)?;
            len += n;
            if find_path && k == b"path" {
                path = string_span(b, v..end);
            }
            Ok(end)
        })
        .ok()?;
    Some((end, len, path))
}

fn value_len(sc: &mut Scanner, b: &[u8], i: usize, depth: usize) -> Option<(usize, usize)> {
    if depth > 100 {
        return None;
    }
    match *b.get(i)? {
        b'{' => object_len(sc, b, i, depth, false).map(|(end, len, _)| (end, len)),
        b'[' => {
            let mut len = 2;
            let mut count = 0;
            let end = sc
                .elements_custom(b, i, &mut |sc, b, v| {
                    if count > 0 {
                        len += 1;
                    }
                    count += 1;
                    let (end, n) = value_len(sc, b, v, depth + 1).ok_or(UNSURE)?;
                    len += n;
                    Ok(end)
                })
                .ok()?;
            Some((end, len))
        }
        b'"' => {
            let (end, c) = sc.skip_string_counting(b, i + 1).ok()?;
            c.decodes.then_some((end, c.stringified))
        }
        // Checked: the load pass measures values it has not validated yet (`scan_arguments`).
        b't' => skip_literal(b, i, b"true").ok().map(|end| (end, 4)),
        b'f' => skip_literal(b, i, b"false").ok().map(|end| (end, 5)),
        b'n' => skip_literal(b, i, b"null").ok().map(|end| (end, 4)),
        _ => {
            let end = skip_number(b, i).ok()?;
            let n = &b[i..end];
            let digits = n.strip_prefix(b"-").unwrap_or(n);
            let short_int = digits.iter().all(u8::is_ascii_digit)
                && digits.len() <= 15
                && n != b"-0"
                && (digits.len() == 1 || digits[0] != b'0');
            if short_int {
                return Some((end, n.len()));
            }
            let v = crate::support::json::parse_bytes(n)?;
            Some((end, crate::support::json::js::stringify(&v).len()))
        }
    }
}

/// The last top-level string member `name` of the object `raw` (a validated value), as a
/// value span within `raw`; `None` when `raw` is not an object or the member is absent or
/// not a string.
fn last_string_member(raw: &[u8], name: &str) -> Option<Range<usize>> {
    if raw.first() != Some(&b'{') {
        return None;
    }
    let mut found = None;
    crate::support::json::scan::for_each_member(raw, 0, |b, m| {
        if key_is(&b[m.key.clone()], name) {
            found = string_span(b, m.value.clone());
        }
    })
    .ok()?;
    found
}

/// A tool call's arguments measured in the pass that crosses them: the length of their
/// `JSON.stringify` ([`stringify_len`]) and the span of their last top-level `path` member
/// when it is a string ([`last_string_member`]), both as those give them.
struct ArgsMeasure {
    len: usize,
    path: Option<Range<usize>>,
}

/// Crosses the arguments value at `b[v]`, measuring it when it can be (one pass where a skip,
/// a measure and a search for the path were three; a `write` or `edit` call's arguments hold
/// a whole file). When it cannot (see [`stringify_len`]), or the value is not valid JSON, the
/// value is skipped from its start, as before: the skip gives the error, and the measure and
/// the path are left to the slower readers.
fn scan_arguments(
    sc: &mut Scanner,
    b: &[u8],
    v: usize,
) -> Result<(usize, Option<ArgsMeasure>), SyntaxError> {
    let measured = if b.get(v) == Some(&b'{') {
        object_len(sc, b, v, 0, true)
    } else {
        value_len(sc, b, v, 0).map(|(end, len)| (end, len, None))
    };
    match measured {
        Some((end, len, path)) => Ok((end, Some(ArgsMeasure { len, path }))),
        None => Ok((sc.skip_value(b, v)?, None)),
    }
}

/// One content block's members (the last of each key, as `JSON.parse` keeps).
#[derive(Default)]
struct BlockScan {
    ty: Option<Range<usize>>,
    text: Option<Measured>,
    thinking: Option<Measured>,
    signature: Option<Measured>,
    data: Option<Measured>,
    id: Option<Range<usize>>,
    name: Option<Measured>,
    arguments: Option<Range<usize>>,
    /// The arguments measured as they were crossed (`None`: left to [`stringify_len`] and
    /// [`last_string_member`], which then find them not measurable, or find the path).
    args_measured: Option<ArgsMeasure>,
    block: Option<Range<usize>>,
    omitted: bool,
}

fn scan_block(sc: &mut Scanner, b: &[u8], start: usize) -> Result<(usize, BlockScan), SyntaxError> {
    let mut s = BlockScan::default();
    let end = sc.members_custom(b, start, &mut |sc, b, key, v| {
        let k = key_bytes(&b[key]);
        let slot = match &*k {
            b"text" => &mut s.text,
            b"thinking" => &mut s.thinking,
            b"thinkingSignature" => &mut s.signature,
            b"data" => &mut s.data,
            b"name" => &mut s.name,
            b"arguments" => {
                let (end, measured) = scan_arguments(sc, b, v)?;
                s.arguments = Some(v..end);
                s.args_measured = measured;
                return Ok(end);
            }
            k => {
                let end = sc.skip_value(b, v)?;
                match k {
                    b"type" => s.ty = string_span(b, v..end),
                    b"id" => s.id = string_span(b, v..end),
                    b"block" => s.block = Some(v..end),
                    b"contextOmitted" => {
                        s.omitted = crate::support::json::view::Val::truthy_raw(&b[v..end])
                    }
                    _ => {}
                }
                return Ok(end);
            }
        };
        let (end, m) = string_or_skip(sc, b, v)?;
        *slot = m;
        Ok(end)
    })?;
    Ok((end, s))
}

/// Measures a `content` array's blocks, appending the tool-call blocks to `calls`.
fn scan_blocks(
    sc: &mut Scanner,
    b: &[u8],
    start: usize,
    calls: &mut Vec<CallFacts>,
) -> Result<(usize, ContentScan), SyntaxError> {
    let mut c = ContentScan {
        shape: ContentShape::Blocks,
        ..ContentScan::default()
    };
    let end = sc.elements_custom(b, start, &mut |sc, b, i| {
        if b.get(i) != Some(&b'{') {
            return sc.skip_value(b, i);
        }
        let (end, s) = scan_block(sc, b, i)?;
        c.any_block = true;
        let ty = s.ty.as_ref().and_then(|r| plain_string(b, r));
        let ty = ty.as_deref().unwrap_or("");
        match ty {
            "text" => {
                let t = tok_of(s.text.map(|m| m.count));
                c.plain += t;
                c.full += t;
                c.excluding += t;
                c.filled |= filled(b, &s.text);
            }
            "image" => {
                c.plain += IMAGE_TOKENS;
                c.full += IMAGE_TOKENS;
                c.excluding += IMAGE_TOKENS;
            }
            "thinking" => {
                let t = tok_of(s.thinking.map(|m| m.count));
                c.full += t;
                c.excluding += t;
                // A signature that does not decode reads as absent.
                let sig = s.signature.filter(Measured::decodes);
                c.full += tok_of(sig.map(|m| m.count));
                c.filled |= filled(b, &s.thinking) || sig.is_some_and(|m| m.count.decoded > 0);
            }
            "redactedThinking" => c.full += tok_of(s.data.map(|m| m.count)),
            "toolCall" => {
                c.filled = true;
                let name = s
                    .name
                    .filter(Measured::decodes)
                    .and_then(|m| decode_string_value(&b[m.start..m.end]));
                let mut call = CallFacts {
                    id: Span::of(s.id.clone()),
                    path: Span::NONE,
                    tool: 0,
                };
                c.call_omitted |= s.omitted;
                if !s.omitted {
                    let args_len = match s.arguments.clone().filter(|r| &b[r.clone()] != b"null") {
                        None => Some(2),
                        Some(r) => match &s.args_measured {
                            Some(m) => Some(m.len),
                            None => stringify_len(&b[r]),
                        },
                    };
                    match args_len {
                        Some(n) => {
                            let t = tok_of(s.name.map(|m| m.count)) + tok(n);
                            c.full += t;
                            c.excluding += t;
                        }
                        None => c.unsure = true,
                    }
                    let tool = match name.as_deref() {
                        Some("read") => 1,
                        Some("write") => 2,
                        Some("edit") => 3,
                        _ => 0,
                    };
                    if tool > 0 {
                        if let Some(args) = s.arguments.clone() {
                            let path = match &s.args_measured {
                                Some(m) => m
                                    .path
                                    .clone()
                                    .map(|p| p.start - args.start..p.end - args.start),
                                None => last_string_member(&b[args.clone()], "path"),
                            };
                            if let Some(p) = path {
                                let p = args.start + p.start..args.start + p.end;
                                // A path that does not decode reads as no path.
                                if decode_string_value(&b[p.clone()]).is_some() {
                                    call.path = Span::of(Some(p));
                                    call.tool = tool;
                                }
                            }
                        }
                    }
                }
                calls.push(call);
            }
            _ => {
                // Other blocks: `anthropicServerTool` counts its payload unless excluded.
                if ty == "anthropicServerTool" {
                    if let Some(r) = s.block.clone().filter(|r| &b[r.clone()] != b"null") {
                        match stringify_len(&b[r]) {
                            Some(n) => c.full += tok(n),
                            None => c.unsure = true,
                        }
                    }
                }
            }
        }
        Ok(end)
    })?;
    Ok((end, c))
}

/// The members of a message that its facts read (the last of each, as `JSON.parse` keeps).
#[derive(Default)]
struct Members {
    role: Option<Range<usize>>,
    role_seen: bool,
    content: ContentScan,
    content_span: Option<Range<usize>>,
    calls_from: usize,
    tool_call_id: Option<Range<usize>>,
    tool_name: Option<Range<usize>>,
    custom_type: Option<Range<usize>>,
    provider: Option<Range<usize>>,
    model: Option<Range<usize>>,
    stop_reason: Option<Range<usize>>,
    usage: Option<Range<usize>>,
    pruned_at: Option<Range<usize>>,
    context_omitted: Option<Range<usize>>,
    is_error: bool,
    useless: bool,
    retry: bool,
    attributed: bool,
    summary: Option<Measured>,
    command: Option<Measured>,
    output: Option<Measured>,
    code: Option<Measured>,
}

/// Scans the message object at `b[start]` (a `{`), validating all of it as
/// [`Scanner::skip_value`] does and recording its facts; tool-call blocks are appended to
/// `calls`. Returns the index after the object.
pub(crate) fn scan_message(
    sc: &mut Scanner,
    b: &[u8],
    start: usize,
    calls: &mut Vec<CallFacts>,
) -> Result<(usize, MessageScan), SyntaxError> {
    let calls_from = calls.len();
    let mut m = Members {
        calls_from,
        ..Members::default()
    };
    let end = sc.members_custom(b, start, &mut |sc, b, key, v| {
        let k = key_bytes(&b[key]);
        let slot = match &*k {
            b"content" => {
                // A repeated `content`: only the last one counts.
                calls.truncate(m.calls_from);
                let (end, c) = match b.get(v) {
                    Some(b'[') => scan_blocks(sc, b, v, calls)?,
                    Some(b'"') => {
                        let (end, count) = sc.skip_string_counting(b, v + 1)?;
                        let t = tok_of(Some(count));
                        let c = ContentScan {
                            shape: ContentShape::Text,
                            plain: t,
                            full: t,
                            excluding: t,
                            filled: count.decodes && raw_filled(&b[v + 1..end - 1]),
                            ..ContentScan::default()
                        };
                        (end, c)
                    }
                    _ => {
                        let end = sc.skip_value(b, v)?;
                        let shape = if &b[v..end] == b"null" {
                            ContentShape::Empty
                        } else {
                            ContentShape::Invalid
                        };
                        (
                            end,
                            ContentScan {
                                shape,
                                ..ContentScan::default()
                            },
                        )
                    }
                };
                m.content = c;
                m.content_span = Some(v..end);
                return Ok(end);
            }
            b"summary" => &mut m.summary,
            b"command" => &mut m.command,
            b"output" => &mut m.output,
            b"code" => &mut m.code,
            k => {
                let end = sc.skip_value(b, v)?;
                let value = v..end;
                let raw = &b[v..end];
                match k {
                    b"role" if !m.role_seen => {
                        m.role_seen = true;
                        m.role = string_span(b, value);
                    }
                    b"toolCallId" => m.tool_call_id = string_span(b, value),
                    b"toolName" => m.tool_name = string_span(b, value),
                    b"customType" => m.custom_type = string_span(b, value),
                    b"provider" => m.provider = string_span(b, value),
                    b"model" => m.model = string_span(b, value),
                    b"stopReason" => m.stop_reason = string_span(b, value),
                    b"usage" => m.usage = Some(value),
                    b"prunedAt" => m.pruned_at = Some(value),
                    b"contextOmitted" => m.context_omitted = Some(value),
                    b"isError" => m.is_error = raw == b"true",
                    b"useless" => m.useless = raw == b"true",
                    b"attribution" => m.attributed = true,
                    b"retryRecovery" => m.retry = crate::support::json::view::Val::truthy_raw(raw),
                    _ => {}
                }
                return Ok(end);
            }
        };
        let (end, measured) = string_or_skip(sc, b, v)?;
        *slot = measured;
        Ok(end)
    })?;
    let role = m
        .role
        .as_ref()
        .and_then(|r| decode_string_value(&b[r.clone()]))
        .map_or(Role::Other, |r| Role::parse(&r));
    let facts = facts_of(b, role, &m, calls);
    if role != Role::Assistant || facts.is_none() {
        calls.truncate(calls_from);
    }
    Ok((
        end,
        MessageScan {
            role: m.role.clone(),
            facts,
        },
    ))
}

/// The facts of a scanned message of `role` (spec: compaction §3.1 per-role estimator, §2.3
/// heads, §6 tool results); `None` when they are not exact.
fn facts_of(b: &[u8], role: Role, m: &Members, calls: &[CallFacts]) -> Option<MessageFacts> {
    let mut f = MessageFacts {
        tokens: 0,
        tokens_excluding: 0,
        flags: KNOWN,
        a: Span::NONE,
        b: Span::NONE,
        c: Span::NONE,
        d: Span::NONE,
        calls: 0..0,
    };
    let c = m.content;
    let reads_content = matches!(
        role,
        Role::User
            | Role::Developer
            | Role::Assistant
            | Role::ToolResult
            | Role::Custom
            | Role::HookMessage
    );
    if reads_content && matches!(c.shape, ContentShape::Invalid) {
        f.flags |= PARSE_FAILS;
        return Some(f);
    }
    let plain = c.plain;
    if m.attributed {
        f.flags |= ATTRIBUTED;
    }
    if c.call_omitted {
        f.flags |= CALL_OMITTED;
    }
    match role {
        Role::User | Role::Developer => f.tokens = plain,
        Role::Custom | Role::HookMessage => {
            f.tokens = plain;
            f.a = Span::of(m.custom_type.clone());
        }
        Role::ToolResult => {
            let omitted = m
                .context_omitted
                .as_ref()
                .is_some_and(|r| truthy(crate::support::json::parse_bytes(&b[r.clone()]).as_ref()));
            if omitted {
                f.flags |= OMITTED;
            } else {
                f.tokens = plain;
            }
            if m.is_error {
                f.flags |= IS_ERROR;
            }
            if m.useless {
                f.flags |= USELESS;
            }
            if m.pruned_at
                .as_ref()
                .is_some_and(|r| matches!(b[r.start], b'-' | b'0'..=b'9'))
            {
                f.flags |= PRUNED;
            }
            f.a = Span::of(m.tool_call_id.clone());
            f.b = Span::of(m.tool_name.clone());
            f.c = Span::of(m.content_span.clone());
            f.d = Span::of(m.pruned_at.clone());
        }
        Role::Assistant => {
            if c.unsure {
                return None;
            }
            f.tokens = c.full;
            f.tokens_excluding = c.excluding;
            let stop = m
                .stop_reason
                .as_ref()
                .and_then(|r| decode_string_value(&b[r.clone()]));
            match stop.as_deref() {
                Some("error") => f.flags |= FAILED | STOP_ERROR,
                Some("aborted") => f.flags |= FAILED,
                _ => {}
            }
            if m.usage.as_ref().is_some_and(|r| b[r.start] == b'{') {
                f.flags |= HAS_USAGE;
            }
            if m.retry {
                f.flags |= RETRY;
            }
            let text_content = matches!(c.shape, ContentShape::Text);
            if !text_content && !c.any_block {
                f.flags |= NO_BLOCKS;
            }
            if f.flags & STOP_ERROR != 0 && !c.filled {
                f.flags |= EMPTY_ERROR;
            }
            f.a = Span::of(m.provider.clone());
            f.b = Span::of(m.model.clone());
            f.c = Span::of(m.usage.clone().filter(|r| b[r.start] == b'{'));
            f.d = Span::of(m.stop_reason.clone());
            f.calls = m.calls_from as u32..calls.len() as u32;
        }
        Role::BashExecution => {
            f.tokens = tok_of(m.command.map(|x| x.count)) + tok_of(m.output.map(|x| x.count))
        }
        Role::PythonExecution => {
            f.tokens = tok_of(m.code.map(|x| x.count)) + tok_of(m.output.map(|x| x.count))
        }
        Role::BranchSummary => f.tokens = tok_of(m.summary.map(|x| x.count)),
        // Rare roles with richer shapes: parsed when asked for.
        Role::FileMention | Role::CompactionSummary => return None,
        Role::Other => {}
    }
    if role != Role::Assistant {
        f.tokens_excluding = f.tokens;
    }
    Some(f)
}

/// The fact columns of a session, one slot per entry (spec: see the module doc).
#[derive(Debug, Default)]
pub(crate) struct FactColumns {
    /// Flags per entry (0: no facts).
    flags: Vec<u16>,
    /// Index into `spans` per entry (`u32::MAX`: none).
    at: Vec<u32>,
    /// The four spans and the tool-call range of each message with facts.
    spans: Vec<([Span; 4], u32, u32)>,
    /// Tool-call blocks of assistant messages; a message's calls are a range of it.
    pub calls: Vec<CallFacts>,
}

impl FactColumns {
    /// The flags of entry `index` (0 without facts).
    pub fn flags_of(&self, index: usize) -> u16 {
        self.flags.get(index).copied().unwrap_or(0)
    }

    /// The four spans and the tool-call range of entry `index`, when it has any.
    pub fn spans_of(&self, index: usize) -> Option<&([Span; 4], u32, u32)> {
        let at = *self.at.get(index)?;
        self.spans.get(at as usize)
    }

    pub fn with_capacity(n: usize) -> FactColumns {
        FactColumns {
            flags: Vec::with_capacity(n),
            at: Vec::with_capacity(n),
            spans: Vec::with_capacity(n / 2),
            calls: Vec::new(),
        }
    }

    /// Sets the facts of entry `index` (calls already appended to `self.calls`).
    pub fn set(&mut self, index: usize, facts: Option<&MessageFacts>) {
        if self.flags.len() <= index {
            self.flags.resize(index + 1, 0);
            self.at.resize(index + 1, u32::MAX);
        }
        let Some(f) = facts else {
            self.flags[index] = 0;
            return;
        };
        self.flags[index] = f.flags;
        let record = ([f.a, f.b, f.c, f.d], f.calls.start, f.calls.end);
        let needs = [f.a, f.b, f.c, f.d].iter().any(|s| *s != Span::NONE) || !f.calls.is_empty();
        match self.at[index] {
            u32::MAX if !needs => {}
            u32::MAX => {
                self.at[index] = self.spans.len() as u32;
                self.spans.push(record);
            }
            at => self.spans[at as usize] = record,
        }
    }
}

/// A tool result line as a prune rewrote it (`pruning::apply`): its text, where its message
/// object and that message's `content` and `prunedAt` values are now, and how far the bytes
/// after each replaced value of the old line moved.
pub(crate) struct PrunedLine {
    pub text: String,
    pub message: Range<usize>,
    pub content: Range<usize>,
    pub pruned_at: Range<usize>,
    /// `(old offset, shift)` per replaced value in byte order (`usize::MAX`: none): an old
    /// offset at or after one moved by its shift.
    pub moves: [(usize, isize); 2],
    /// UTF-8 bytes of the notice, the text of the one content block.
    pub notice_len: usize,
}

impl PrunedLine {
    /// The facts of the new line, from the `flags` and `old` spans recorded of the line it
    /// replaces and the edit: one text block holding the notice, `prunedAt` a number, the
    /// other members moved — exactly as a scan of the new line would record them.
    pub fn facts(&self, flags: u16, old: [Span; 4]) -> MessageFacts {
        let moved = |s: Span| match s.get() {
            None => s,
            Some(r) => {
                let by = self
                    .moves
                    .iter()
                    .rev()
                    .find(|m| m.0 <= r.start)
                    .map_or(0, |m| m.1);
                Span::of(Some(
                    r.start.wrapping_add_signed(by)..r.end.wrapping_add_signed(by),
                ))
            }
        };
        let tokens = if flags & OMITTED != 0 {
            0
        } else {
            tok(self.notice_len)
        };
        MessageFacts {
            tokens,
            tokens_excluding: tokens,
            flags: flags & (KNOWN | ATTRIBUTED | IS_ERROR | USELESS | OMITTED) | PRUNED,
            a: moved(old[0]),
            b: moved(old[1]),
            c: Span::of(Some(self.content.clone())),
            d: Span::of(Some(self.pruned_at.clone())),
            calls: 0..0,
        }
    }
}

/// The facts of a tool result entry that pruning reads (spec: compaction §6.3–§6.6), with
/// its strings borrowed from the line where they need no decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultFacts<'s> {
    pub tool_call_id: Cow<'s, str>,
    pub tool_name: Cow<'s, str>,
    pub is_error: bool,
    pub useless: bool,
    pub pruned: bool,
    pub context_omitted: bool,
}

/// One `read`/`write`/`edit` call of an assistant entry, borrowed from its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCallFacts<'s> {
    pub tool: FileTool,
    pub path: Cow<'s, str>,
    pub id: Cow<'s, str>,
}

/// Everything the facts of an entry say, in one comparable value: what the property tests
/// and the fuzz target compare between the load pass and a parse of the message.
#[derive(Debug, Clone, PartialEq)]
pub struct FactsSnapshot {
    pub tokens: u64,
    pub tokens_excluding: u64,
    /// `Err` where parsing the message fails.
    pub head: Result<MessageHead, ()>,
    pub result: Option<(String, String, bool, bool, bool, bool)>,
    pub file_calls: Vec<(FileTool, String, String)>,
    pub usage: Option<Usage>,
    pub failed: bool,
}

/// One `read`/`write`/`edit` tool call of an assistant entry (memoized per entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileCall {
    pub tool: FileTool,
    /// The call's string `path` argument, as written.
    pub path: Box<str>,
    /// The call's id, which its tool result names as `toolCallId`.
    pub id: Box<str>,
}

/// The file tools whose calls are memoized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileTool {
    Read,
    Write,
    Edit,
}

impl FileTool {
    pub fn as_str(self) -> &'static str {
        match self {
            FileTool::Read => "read",
            FileTool::Write => "write",
            FileTool::Edit => "edit",
        }
    }
}

/// Marks an unknown memoized estimate.
pub(crate) const UNKNOWN_TOKENS: u32 = u32::MAX;

/// An estimate as the columns store it (saturating below [`UNKNOWN_TOKENS`]).
pub(crate) fn clamp_tokens(t: u64) -> u32 {
    t.min(u64::from(UNKNOWN_TOKENS - 1)) as u32
}

/// Calls `f(tool, path, call id)` for every `read`/`write`/`edit` tool call of an assistant
/// message with a string `path` that is not hidden by `contextOmitted` (spec: compaction
/// §5.10 "Extraction").
pub(crate) fn file_calls_of(m: &AgentMessage, mut f: impl FnMut(FileTool, &str, &str)) {
    let AgentMessage::Assistant(a) = m else {
        return;
    };
    let Content::Blocks(blocks) = &a.content else {
        return;
    };
    for b in blocks {
        if let ContentBlock::ToolCall {
            id,
            name,
            arguments,
            context_omitted: false,
        } = b
        {
            let tool = match name.as_str() {
                "read" => FileTool::Read,
                "write" => FileTool::Write,
                "edit" => FileTool::Edit,
                _ => continue,
            };
            if let Some(path) = arguments.get("path").and_then(Value::as_str) {
                f(tool, path, id);
            }
        }
    }
}

/// The file tool calls of an assistant entry.
pub(crate) type FileCalls = std::rc::Rc<[FileCall]>;
