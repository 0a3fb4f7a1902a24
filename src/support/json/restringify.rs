//! `JSON.stringify(JSON.parse(text))` written from JSON text without building the value
//! (issue 42): tool-call arguments read in place go into the summarizer's transcript this way.
//! A text the walk cannot write as the value path would (a repeated or escaped key, deep
//! nesting, many keys, not JSON) is handed to the parser (`write_parsed`). Kept apart from
//! [`js`](super::js), which the parser's own writers use.

use crate::support::json::js::{write_number, write_string, write_value};
use crate::support::json::scan::{
    decode_str_body, has_backslash, skip_literal, skip_number, Scanner, SyntaxError,
};

/// Appends `JSON.stringify(JSON.parse(text))`, `text` being the JSON text of one value: what
/// [`write_value`] writes of the value [`parse_bytes`](super::parse_bytes) reads from it, or
/// `null` when that reads nothing. No value is built when every object's keys are distinct
/// and unescaped (the usual case): strings are decoded and written again, numbers read as
/// doubles and printed, the rest copied without its whitespace. Otherwise the text is parsed
/// (a repeated key keeps its first place and its last value, as in `JSON.parse`).
pub fn write_json_text(out: &mut String, text: &[u8]) {
    let mark = out.len();
    let mut sc = Scanner::new();
    let start = sc.skip_ws(text, 0);
    let done = std::str::from_utf8(text).is_ok_and(|t| {
        restringify(out, &mut sc, t, start, 0).is_ok_and(|end| sc.skip_ws(text, end) == text.len())
    });
    if !done {
        out.truncate(mark);
        write_parsed(out, text);
    }
}

/// [`write_value`] of the parse of `text` (`null` when it does not parse): where
/// [`restringify`] hands over.
#[cold]
#[inline(never)]
fn write_parsed(out: &mut String, text: &[u8]) {
    match super::parse_bytes(text) {
        Some(v) => write_value(out, &v),
        None => out.push_str("null"),
    }
}

/// A text [`restringify`] leaves to the parser: a repeated or escaped key, nesting deeper
/// than [`RESTRINGIFY_DEPTH`], an object of more than [`RESTRINGIFY_KEYS`] keys, or not JSON.
#[derive(Debug)]
pub(crate) struct Handover;

impl From<SyntaxError> for Handover {
    fn from(_: SyntaxError) -> Handover {
        Handover
    }
}

/// The nesting [`restringify`] follows (the parser refuses from 128 levels on).
const RESTRINGIFY_DEPTH: usize = 64;
/// The keys of one object [`restringify`] checks against each other.
const RESTRINGIFY_KEYS: usize = 32;

/// Writes the value at `t[i]` as [`write_json_text`] does, without a value; the index after
/// it. On `Err` `out` holds part of it: the caller cuts it and parses instead.
pub(crate) fn restringify(
    out: &mut String,
    sc: &mut Scanner,
    t: &str,
    i: usize,
    depth: usize,
) -> Result<usize, Handover> {
    let b = t.as_bytes();
    match b.get(i) {
        Some(b'"') => {
            let end = sc.skip_string_body(b, i + 1)?;
            let body = t.get(i + 1..end - 1).ok_or(Handover)?;
            if has_backslash(body.as_bytes()) {
                write_string(out, &decode_str_body(body.as_bytes()).ok_or(Handover)?);
            } else {
                // No escape: the scanner refused control characters, so `write_string` would
                // write the text as it is.
                out.push('"');
                out.push_str(body);
                out.push('"');
            }
            Ok(end)
        }
        Some(b'{') if depth < RESTRINGIFY_DEPTH => {
            out.push('{');
            let end = write_members(out, sc, t, i, depth, [",", "\"", "\":"])?;
            out.push('}');
            Ok(end)
        }
        Some(b'[') if depth < RESTRINGIFY_DEPTH => {
            out.push('[');
            let end = each_element(sc, t, i, &mut |sc, k, at| {
                if k > 0 {
                    out.push(',');
                }
                restringify(out, sc, t, at, depth + 1)
            })?;
            out.push(']');
            Ok(end)
        }
        Some(b'-' | b'0'..=b'9') => {
            let end = skip_number(b, i)?;
            let n = t.get(i..end).ok_or(Handover)?;
            let digits = n.strip_prefix('-').unwrap_or(n);
            // An integer of at most 15 digits is exact as a double and printed as written
            // (`-0` prints as `0`).
            if digits.len() <= 15 && digits.bytes().all(|c| c.is_ascii_digit()) && n != "-0" {
                out.push_str(n);
            } else {
                match super::number::number(n).and_then(|n| n.as_f64()) {
                    Some(x) => write_number(out, x),
                    None => out.push_str("null"),
                }
            }
            Ok(end)
        }
        Some(b't') => literal(out, b, i, "true"),
        Some(b'f') => literal(out, b, i, "false"),
        Some(b'n') => literal(out, b, i, "null"),
        _ => Err(Handover),
    }
}

/// Writes the members of the object at `t[i]` (a `{`, at `depth`) without its braces: each
/// key between `marks[1]` and `marks[2]`, then its value, members parted by `marks[0]` (`,`,
/// `"` and `":` for JSON). A repeated or escaped key, or more than [`RESTRINGIFY_KEYS`],
/// hands over. The index after the object.
pub(crate) fn write_members(
    out: &mut String,
    sc: &mut Scanner,
    t: &str,
    i: usize,
    depth: usize,
    marks: [&str; 3],
) -> Result<usize, Handover> {
    let mut keys: [&str; RESTRINGIFY_KEYS] = [""; RESTRINGIFY_KEYS];
    let mut n = 0;
    each_member(sc, t, i, &mut |sc, key, at| {
        if n == RESTRINGIFY_KEYS || keys[..n].contains(&key) {
            return Err(Handover);
        }
        keys[n] = key;
        if n > 0 {
            out.push_str(marks[0]);
        }
        n += 1;
        // An unescaped key is its string's text, written as it is (see the strings above).
        out.push_str(marks[1]);
        out.push_str(key);
        out.push_str(marks[2]);
        restringify(out, sc, t, at, depth + 1)
    })
}

fn literal(out: &mut String, b: &[u8], i: usize, lit: &'static str) -> Result<usize, Handover> {
    let end = skip_literal(b, i, lit.as_bytes())?;
    out.push_str(lit);
    Ok(end)
}

/// Walks the elements of the array at `t[i]` (a `[`): `f` gets each one's position and index,
/// and returns the index after it. The index after the array.
pub(crate) fn each_element(
    sc: &mut Scanner,
    t: &str,
    i: usize,
    f: &mut dyn FnMut(&mut Scanner, usize, usize) -> Result<usize, Handover>,
) -> Result<usize, Handover> {
    let b = t.as_bytes();
    let mut j = sc.skip_ws(b, i + 1);
    if b.get(j) == Some(&b']') {
        return Ok(j + 1);
    }
    let mut k = 0;
    loop {
        j = f(sc, k, j)?;
        k += 1;
        j = sc.skip_ws(b, j);
        match b.get(j) {
            Some(b',') => j = sc.skip_ws(b, j + 1),
            Some(b']') => return Ok(j + 1),
            _ => return Err(Handover),
        }
    }
}

/// Walks the members of the object at `t[i]` (a `{`): `f` gets each unescaped key and the
/// index of its value, and returns the index after the value. A key with an escape hands
/// over. The index after the object.
fn each_member<'t>(
    sc: &mut Scanner,
    t: &'t str,
    i: usize,
    f: &mut dyn FnMut(&mut Scanner, &'t str, usize) -> Result<usize, Handover>,
) -> Result<usize, Handover> {
    let b = t.as_bytes();
    let mut j = sc.skip_ws(b, i + 1);
    if b.get(j) == Some(&b'}') {
        return Ok(j + 1);
    }
    loop {
        if b.get(j) != Some(&b'"') {
            return Err(Handover);
        }
        let after = sc.skip_string_body(b, j + 1)?;
        let key = t.get(j + 1..after - 1).ok_or(Handover)?;
        if has_backslash(key.as_bytes()) {
            return Err(Handover);
        }
        j = sc.skip_ws(b, after);
        if b.get(j) != Some(&b':') {
            return Err(Handover);
        }
        j = sc.skip_ws(b, j + 1);
        j = f(sc, key, j)?;
        j = sc.skip_ws(b, j);
        match b.get(j) {
            Some(b',') => j = sc.skip_ws(b, j + 1),
            Some(b'}') => return Ok(j + 1),
            _ => return Err(Handover),
        }
    }
}
