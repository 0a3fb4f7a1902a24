//! The raw text of a container [`super::parse`] keeps aside below its cut depth (see
//! [`super::deep`]): the placeholder that stands for it in the value, and its text re-printed
//! as `JSON.stringify(JSON.parse(raw))` prints it.

use super::js::{write_string, write_value};
use super::number::number;
use super::scan::{decode_str_body, skip_literal, skip_number, skip_ws, Scanner};
use rustc_hash::FxHashSet;
use serde_json::Value;

/// The character that brackets a placeholder (U+FDD0, a noncharacter).
pub const MARK: char = '\u{FDD0}';

/// The placeholder of raw text `k`.
pub(crate) fn placeholder(k: usize) -> String {
    format!("{MARK}{k}{MARK}")
}

/// A container of a raw text being re-printed: an object (with the keys it has had) or an
/// array.
enum Open {
    Object(FxHashSet<String>),
    Array,
}

/// Appends `JSON.stringify(JSON.parse(raw))` of the valid JSON value `raw` to `out`, walking
/// it with a stack on the heap: what [`write_value`] prints for what [`parse`] reads (strings
/// re-escaped, numbers re-printed, whitespace dropped). `None` when an object repeats a key.
pub(crate) fn reprint(out: &mut String, raw: &str) -> Option<()> {
    let b = raw.as_bytes();
    let mut sc = Scanner::new();
    let mut stack: Vec<Open> = Vec::new();
    let mut i = skip_ws(b, 0);
    // Writes the key at `i` and its colon; returns where its value starts.
    let key = |out: &mut String, sc: &mut Scanner, keys: &mut FxHashSet<String>, i: usize| {
        let end = sc.skip_string_body(b, i + 1).ok()?;
        let k = decode_str_body(b.get(i + 1..end - 1)?)?;
        write_string(out, &k);
        keys.insert(k.into_owned()).then_some(())?;
        let colon = skip_ws(b, end);
        (b.get(colon) == Some(&b':')).then_some(())?;
        out.push(':');
        Some(skip_ws(b, colon + 1))
    };
    loop {
        // A value starts at `i`.
        match *b.get(i)? {
            b'{' => {
                out.push('{');
                i = skip_ws(b, i + 1);
                if b.get(i) == Some(&b'}') {
                    out.push('}');
                    i += 1;
                } else {
                    let mut keys = FxHashSet::default();
                    i = key(out, &mut sc, &mut keys, i)?;
                    stack.push(Open::Object(keys));
                    continue;
                }
            }
            b'[' => {
                out.push('[');
                i = skip_ws(b, i + 1);
                if b.get(i) == Some(&b']') {
                    out.push(']');
                    i += 1;
                } else {
                    stack.push(Open::Array);
                    continue;
                }
            }
            b'"' => {
                let end = sc.skip_string_body(b, i + 1).ok()?;
                write_string(out, &decode_str_body(b.get(i + 1..end - 1)?)?);
                i = end;
            }
            c @ (b't' | b'f' | b'n') => {
                let lit: &'static [u8] = match c {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                i = skip_literal(b, i, lit).ok()?;
                out.push_str(std::str::from_utf8(lit).ok()?);
            }
            _ => {
                let end = skip_number(b, i).ok()?;
                match number(raw.get(i..end)?) {
                    Some(n) => write_value(out, &Value::Number(n)),
                    None => out.push_str("null"),
                }
                i = end;
            }
        }
        // After a value: close containers or move to the next element.
        loop {
            let Some(open) = stack.last_mut() else {
                return Some(());
            };
            i = skip_ws(b, i);
            match (*b.get(i)?, open) {
                (b',', Open::Object(keys)) => {
                    out.push(',');
                    let at = skip_ws(b, i + 1);
                    i = key(out, &mut sc, keys, at)?;
                    break;
                }
                (b',', Open::Array) => {
                    out.push(',');
                    i = skip_ws(b, i + 1);
                    break;
                }
                (b'}', Open::Object(_)) => {
                    out.push('}');
                    stack.pop();
                    i += 1;
                }
                (b']', Open::Array) => {
                    out.push(']');
                    stack.pop();
                    i += 1;
                }
                _ => return None,
            }
        }
    }
}
