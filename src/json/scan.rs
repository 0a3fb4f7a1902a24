//! A strict, allocation-free JSON scanner over raw bytes.
//!
//! It validates the JSON grammar the way `JSON.parse` does (no trailing commas, no raw control
//! characters in strings, valid escapes and numbers) while only *locating* values: loading a
//! session needs the `type`, `id` and `parentId` of every line, not its body. Strings — where
//! nearly all bytes of a session live — are crossed with `memchr2`, which uses SIMD where the
//! target has it. Nesting is tracked on an explicit stack, so deep input cannot overflow the
//! call stack. UTF-8 validity is checked separately (per line), not here.

use memchr::memchr2;
use std::borrow::Cow;
use std::ops::Range;

/// Where and why a line is not valid JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyntaxError {
    /// Byte offset within the scanned slice.
    pub offset: usize,
    /// What was expected or found.
    pub reason: &'static str,
}

fn err<T>(offset: usize, reason: &'static str) -> Result<T, SyntaxError> {
    Err(SyntaxError { offset, reason })
}

/// Index of the first non-whitespace byte at or after `i` (JSON whitespace only).
#[inline]
pub fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(&c) = b.get(i) {
        if c == b' ' || c == b'\n' || c == b'\r' || c == b'\t' {
            i += 1;
        } else {
            break;
        }
    }
    i
}

/// True if any byte is a control character (< 0x20), which JSON forbids raw inside strings.
/// Written as a branch-free fold so that it vectorizes.
#[inline]
fn has_control(chunk: &[u8]) -> bool {
    chunk.iter().fold(false, |acc, &c| acc | (c < 0x20))
}

/// Skips a string whose opening quote is at `i - 1`; returns the index after the closing quote.
pub fn skip_string_body(b: &[u8], mut i: usize) -> Result<usize, SyntaxError> {
    loop {
        let Some(rel) = memchr2(b'"', b'\\', &b[i.min(b.len())..]) else {
            return err(b.len(), "unterminated string");
        };
        if has_control(&b[i..i + rel]) {
            let at = b[i..i + rel].iter().position(|&c| c < 0x20).unwrap_or(0);
            return err(i + at, "control character in string");
        }
        i += rel;
        if b[i] == b'"' {
            return Ok(i + 1);
        }
        // A backslash escape.
        match b.get(i + 1) {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
            Some(b'u') => {
                let hex = b.get(i + 2..i + 6);
                match hex {
                    Some(h) if h.iter().all(u8::is_ascii_hexdigit) => i += 6,
                    _ => return err(i, "invalid \\u escape"),
                }
            }
            _ => return err(i, "invalid escape"),
        }
    }
}

fn skip_number(b: &[u8], start: usize) -> Result<usize, SyntaxError> {
    let mut i = start;
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            while matches!(b.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        _ => return err(i, "invalid number"),
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !matches!(b.get(i), Some(b'0'..=b'9')) {
            return err(i, "invalid number fraction");
        }
        while matches!(b.get(i), Some(b'0'..=b'9')) {
            i += 1;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !matches!(b.get(i), Some(b'0'..=b'9')) {
            return err(i, "invalid number exponent");
        }
        while matches!(b.get(i), Some(b'0'..=b'9')) {
            i += 1;
        }
    }
    Ok(i)
}

fn skip_literal(b: &[u8], i: usize, lit: &'static [u8]) -> Result<usize, SyntaxError> {
    if b.get(i..i + lit.len()) == Some(lit) {
        Ok(i + lit.len())
    } else {
        err(i, "invalid literal")
    }
}

/// Expects `"key" :` at `i` (after whitespace); returns the index of the value (after ws).
fn skip_key_colon(b: &[u8], i: usize) -> Result<usize, SyntaxError> {
    if b.get(i) != Some(&b'"') {
        return err(i, "expected object key");
    }
    let i = skip_ws(b, skip_string_body(b, i + 1)?);
    if b.get(i) != Some(&b':') {
        return err(i, "expected ':'");
    }
    Ok(skip_ws(b, i + 1))
}

/// Skips one JSON value starting exactly at `start`; returns the index just after it.
pub fn skip_value(b: &[u8], start: usize) -> Result<usize, SyntaxError> {
    // true = object, false = array.
    let mut stack: Vec<bool> = Vec::new();
    let mut i = start;
    loop {
        // A value starts at `i`.
        match b.get(i) {
            Some(b'{') => {
                i = skip_ws(b, i + 1);
                if b.get(i) == Some(&b'}') {
                    i += 1;
                } else {
                    stack.push(true);
                    i = skip_key_colon(b, i)?;
                    continue;
                }
            }
            Some(b'[') => {
                i = skip_ws(b, i + 1);
                if b.get(i) == Some(&b']') {
                    i += 1;
                } else {
                    stack.push(false);
                    continue;
                }
            }
            Some(b'"') => i = skip_string_body(b, i + 1)?,
            Some(b't') => i = skip_literal(b, i, b"true")?,
            Some(b'f') => i = skip_literal(b, i, b"false")?,
            Some(b'n') => i = skip_literal(b, i, b"null")?,
            Some(b'-' | b'0'..=b'9') => i = skip_number(b, i)?,
            Some(_) => return err(i, "expected a value"),
            None => return err(i, "unexpected end of input"),
        }
        // After a value: close containers or move to the next element.
        loop {
            let Some(&is_object) = stack.last() else {
                return Ok(i);
            };
            i = skip_ws(b, i);
            match b.get(i) {
                Some(b',') => {
                    i = skip_ws(b, i + 1);
                    if is_object {
                        i = skip_key_colon(b, i)?;
                    }
                    break;
                }
                Some(b'}') if is_object => {
                    stack.pop();
                    i += 1;
                }
                Some(b']') if !is_object => {
                    stack.pop();
                    i += 1;
                }
                Some(_) => return err(i, "expected ',' or a closing bracket"),
                None => return err(i, "unexpected end of input"),
            }
        }
    }
}

/// One member of a JSON object: the key's raw bytes (between the quotes, still escaped) and
/// the value's span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Span of the key text between its quotes.
    pub key: Range<usize>,
    /// Span of the whole member (`"key":value`), for edits that remove it.
    pub span: Range<usize>,
    /// Span of the value.
    pub value: Range<usize>,
}

/// Walks the members of the object that starts at `start` (which must be `{`), calling `f`
/// for each. Returns the index just after the closing brace.
pub fn for_each_member(
    b: &[u8],
    start: usize,
    mut f: impl FnMut(&[u8], &Member),
) -> Result<usize, SyntaxError> {
    if b.get(start) != Some(&b'{') {
        return err(start, "expected an object");
    }
    let mut i = skip_ws(b, start + 1);
    if b.get(i) == Some(&b'}') {
        return Ok(i + 1);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return err(i, "expected object key");
        }
        let key_start = i + 1;
        let key_end = skip_string_body(b, key_start)?;
        let mut j = skip_ws(b, key_end);
        if b.get(j) != Some(&b':') {
            return err(j, "expected ':'");
        }
        j = skip_ws(b, j + 1);
        let value_end = skip_value(b, j)?;
        let member = Member {
            key: key_start..key_end - 1,
            span: i..value_end,
            value: j..value_end,
        };
        f(b, &member);
        i = skip_ws(b, value_end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return Ok(i + 1),
            Some(_) => return err(i, "expected ',' or '}'"),
            None => return err(i, "unexpected end of input"),
        }
    }
}

/// The first member named `name` of the object at `start`, walking only as far as needed.
/// Meant for keys that writers put first (a message's `role`): it stops at the match, so the
/// rest of the object is not scanned (and not validated) by this call.
pub fn find_first_member(
    b: &[u8],
    start: usize,
    name: &str,
) -> Result<Option<Member>, SyntaxError> {
    if b.get(start) != Some(&b'{') {
        return err(start, "expected an object");
    }
    let mut i = skip_ws(b, start + 1);
    if b.get(i) == Some(&b'}') {
        return Ok(None);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return err(i, "expected object key");
        }
        let key_start = i + 1;
        let key_end = skip_string_body(b, key_start)?;
        let mut j = skip_ws(b, key_end);
        if b.get(j) != Some(&b':') {
            return err(j, "expected ':'");
        }
        j = skip_ws(b, j + 1);
        let value_end = skip_value(b, j)?;
        if key_is(&b[key_start..key_end - 1], name) {
            return Ok(Some(Member {
                key: key_start..key_end - 1,
                span: i..value_end,
                value: j..value_end,
            }));
        }
        i = skip_ws(b, value_end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return Ok(None),
            Some(_) => return err(i, "expected ',' or '}'"),
            None => return err(i, "unexpected end of input"),
        }
    }
}

/// Collects the members of the object at `start` (see [`for_each_member`]).
pub fn members(b: &[u8], start: usize) -> Result<(Vec<Member>, usize), SyntaxError> {
    let mut out = Vec::new();
    let end = for_each_member(b, start, |_, m| out.push(m.clone()))?;
    Ok((out, end))
}

/// True if the raw (still escaped) key bytes equal `name`. Keys with escapes are decoded.
#[inline]
pub fn key_is(raw: &[u8], name: &str) -> bool {
    if raw == name.as_bytes() {
        return true;
    }
    raw.contains(&b'\\') && decode_str_body(raw).is_some_and(|k| k == name)
}

/// Decodes the body of a string (between the quotes). `None` if it is not valid JSON string
/// content or not valid UTF-8.
pub fn decode_str_body(raw: &[u8]) -> Option<Cow<'_, str>> {
    if !raw.contains(&b'\\') {
        return std::str::from_utf8(raw).ok().map(Cow::Borrowed);
    }
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    serde_json::from_slice::<String>(&quoted)
        .ok()
        .map(Cow::Owned)
}

/// Decodes a value span that must be a JSON string (with its quotes).
pub fn decode_string_value(raw: &[u8]) -> Option<Cow<'_, str>> {
    if raw.len() >= 2 && raw[0] == b'"' && raw[raw.len() - 1] == b'"' {
        decode_str_body(&raw[1..raw.len() - 1])
    } else {
        None
    }
}

/// Validates that `b` holds exactly one JSON value surrounded by optional whitespace.
pub fn validate(b: &[u8]) -> Result<(), SyntaxError> {
    let i = skip_ws(b, 0);
    let end = skip_value(b, i)?;
    let end = skip_ws(b, end);
    if end != b.len() {
        return err(end, "trailing characters after the value");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) {
        assert_eq!(validate(s.as_bytes()), Ok(()), "{s}");
        assert!(serde_json::from_str::<serde_json::Value>(s).is_ok(), "{s}");
    }
    fn bad(s: &str) {
        assert!(validate(s.as_bytes()).is_err(), "accepted {s:?}");
        assert!(serde_json::from_str::<serde_json::Value>(s).is_err(), "{s}");
    }

    #[test]
    fn accepts_what_json_parse_accepts() {
        for s in [
            "{}",
            "[]",
            " { \"a\" : [1, -2.5e+3, 0, true, false, null, \"x\\u00e9\\n\"] } ",
            "\"str\"",
            "0",
            "-0.0",
            "{\"a\":{\"b\":{\"c\":[[[]]]}}}",
            "{\"k\\\"ey\":1}",
            "\"é→😀\"",
        ] {
            ok(s);
        }
    }

    #[test]
    fn rejects_what_json_parse_rejects() {
        for s in [
            "",
            "{",
            "{\"a\":1,}",
            "[1,]",
            "{\"a\" 1}",
            "{a:1}",
            "01",
            "1.",
            "1e",
            "-",
            "\"tab\there\"",
            "\"bad \\x escape\"",
            "\"\\u12g4\"",
            "tru",
            "nul",
            "{\"a\":1}}",
            "[1 2]",
            "{\"a\":1]",
            "\"unterminated",
        ] {
            bad(s);
        }
    }

    #[test]
    fn deep_nesting_does_not_overflow_the_stack() {
        let depth = 200_000;
        let s = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert_eq!(validate(s.as_bytes()), Ok(()));
        let s = "[".repeat(depth);
        assert!(validate(s.as_bytes()).is_err());
    }

    #[test]
    fn members_and_keys() {
        let s = br#"{"type":"message","id":"ab","p\u0061rentId":null,"message":{"role":"user"}}"#;
        let (ms, end) = members(s, 0).unwrap();
        assert_eq!(end, s.len());
        assert_eq!(ms.len(), 4);
        assert!(key_is(&s[ms[0].key.clone()], "type"));
        assert!(key_is(&s[ms[2].key.clone()], "parentId"));
        assert_eq!(&s[ms[2].value.clone()], b"null");
        assert_eq!(
            decode_string_value(&s[ms[1].value.clone()]).as_deref(),
            Some("ab")
        );
        assert_eq!(&s[ms[3].span.clone()], br#""message":{"role":"user"}"#);
    }

    #[test]
    fn decodes_escaped_strings() {
        assert_eq!(
            decode_str_body(br"a\nb\u00e9\ud83d\ude00").as_deref(),
            Some("a\nbé😀")
        );
        assert_eq!(decode_str_body(b"plain").as_deref(), Some("plain"));
        assert_eq!(decode_str_body(b"\xff"), None);
    }
}
