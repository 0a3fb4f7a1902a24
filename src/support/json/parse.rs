//! JSON text to `serde_json::Value`, on the crate's scanner.
//!
//! The values are the ones `serde_json::from_str` builds (integers as `u64` / `i64` where
//! they fit, `-0` and larger integers as floats, objects in text order with the last of
//! duplicate keys winning, nesting refused from 128 levels), so the crate needs no second JSON reader: serde_json's text deserializer stays
//! out of the `.wasm` (about 10 KB of code), and with it the generic visitor calls that a
//! size-optimized build does not inline. Floats are parsed correctly rounded, as
//! `JSON.parse` does (`serde_json`'s default fast path can be one unit in the last place off
//! on long mantissas).
//!
//! Two deliberate differences, both where serde_json refuses a text that `JSON.parse` reads,
//! so that a session line the reference reads does not lose its message here:
//! - a lone surrogate escape (`"\ud800"`, which `JSON.stringify` writes for a JavaScript
//!   string holding half a pair) reads as U+FFFD (see `scan::decode_escape`);
//! - a number beyond the `f64` range (`1e400`) reads as `null`: `JSON.parse` makes it
//!   ±Infinity, which `JSON.stringify` (the request body) writes as `null`.

use crate::support::json::scan::{
    decode_escape, skip_literal, skip_number, skip_str_run, Scanner, SyntaxError,
};
use serde_json::{Map, Value};

/// The container depth that `serde_json` refuses (its recursion limit). Deeper texts are read
/// by `deep::parse_deep`, for the provider view.
const MAX_DEPTH: usize = 128;

/// The reason of the error for a text nested [`MAX_DEPTH`] deep or more.
pub(crate) const TOO_DEEP: &str = "nesting too deep";

fn err<T>(offset: usize, reason: &'static str) -> Result<T, SyntaxError> {
    Err(SyntaxError { offset, reason })
}

/// Parses one JSON value surrounded by optional whitespace.
pub fn parse(text: &str) -> Result<Value, SyntaxError> {
    let b = text.as_bytes();
    let mut p = Parser {
        text,
        sc: Scanner::new(),
        cut: usize::MAX,
        raws: Vec::new(),
    };
    let start = p.sc.skip_ws(b, 0);
    let (value, end) = p.value(start, 0)?;
    let end = p.sc.skip_ws(b, end);
    if end != b.len() {
        return err(end, "trailing characters after the value");
    }
    Ok(value)
}

/// [`parse`] with every container from depth `cut` down re-printed into `raws` (no depth
/// limit) and its placeholder in its place (see `deep`).
pub(crate) fn parse_cut(
    text: &str,
    cut: usize,
    raws: &mut Vec<String>,
) -> Result<Value, SyntaxError> {
    let b = text.as_bytes();
    let mut p = Parser {
        text,
        sc: Scanner::new(),
        cut,
        raws: std::mem::take(raws),
    };
    let start = p.sc.skip_ws(b, 0);
    let parsed = p.value(start, 0);
    *raws = p.raws;
    let (value, end) = parsed?;
    let end = p.sc.skip_ws(b, end);
    if end != b.len() {
        return err(end, "trailing characters after the value");
    }
    Ok(value)
}

struct Parser<'a> {
    text: &'a str,
    sc: Scanner,
    /// From this depth on, containers go to `raws` (`usize::MAX`: never).
    cut: usize,
    raws: Vec<String>,
}

impl Parser<'_> {
    // `value` runs once per value of a message, so V8 compiles it again with its optimizing
    // tier during a first plan; wasm has no on-stack replacement, so a walk over an object's
    // members or an array's items runs in whatever tier its function had when it started.
    // The walks and the number reader are functions of their own: each gets compiled as it
    // gets hot, and `value` itself, the dispatch, stays small
    // (docs/decisions/performance-notes.md#outlining).

    /// The value starting exactly at `i`, and the index after it.
    fn value(&mut self, i: usize, depth: usize) -> Result<(Value, usize), SyntaxError> {
        let b = self.text.as_bytes();
        match b.get(i) {
            Some(b'{' | b'[') if depth + 1 >= self.cut => self.raw(i),
            Some(b'{' | b'[') if depth + 1 >= MAX_DEPTH => err(i, TOO_DEEP),
            Some(b'{') => self.object(i, depth),
            Some(b'[') => self.array(i, depth),
            Some(b'"') => {
                let (s, end) = self.string(i)?;
                Ok((Value::String(s), end))
            }
            Some(b't') => Ok((Value::Bool(true), skip_literal(b, i, b"true")?)),
            Some(b'f') => Ok((Value::Bool(false), skip_literal(b, i, b"false")?)),
            Some(b'n') => Ok((Value::Null, skip_literal(b, i, b"null")?)),
            Some(b'-' | b'0'..=b'9') => self.number(i),
            Some(_) => err(i, "expected a value"),
            None => err(i, "unexpected end of input"),
        }
    }

    /// The object whose `{` is at `i` (at `depth`, below the limit), and the index after it.
    #[inline(never)]
    fn object(&mut self, i: usize, depth: usize) -> Result<(Value, usize), SyntaxError> {
        let b = self.text.as_bytes();
        let mut map = Map::new();
        let mut j = self.sc.skip_ws(b, i + 1);
        if matches!(b.get(j), Some(b'}')) {
            return Ok((Value::Object(map), j + 1));
        }
        loop {
            if !matches!(b.get(j), Some(b'"')) {
                return err(j, "expected object key");
            }
            let (key, after) = self.string(j)?;
            j = self.sc.skip_ws(b, after);
            if !matches!(b.get(j), Some(b':')) {
                return err(j, "expected ':'");
            }
            j = self.sc.skip_ws(b, j + 1);
            let (value, after) = self.value(j, depth + 1)?;
            map.insert(key, value);
            j = self.sc.skip_ws(b, after);
            match b.get(j) {
                Some(b',') => j = self.sc.skip_ws(b, j + 1),
                Some(b'}') => return Ok((Value::Object(map), j + 1)),
                _ => return err(j, "expected ',' or '}'"),
            }
        }
    }

    /// The array whose `[` is at `i` (at `depth`, below the limit), and the index after it.
    #[inline(never)]
    fn array(&mut self, i: usize, depth: usize) -> Result<(Value, usize), SyntaxError> {
        let b = self.text.as_bytes();
        let mut items = Vec::new();
        let mut j = self.sc.skip_ws(b, i + 1);
        if matches!(b.get(j), Some(b']')) {
            return Ok((Value::Array(items), j + 1));
        }
        loop {
            let (value, after) = self.value(j, depth + 1)?;
            items.push(value);
            j = self.sc.skip_ws(b, after);
            match b.get(j) {
                Some(b',') => j = self.sc.skip_ws(b, j + 1),
                Some(b']') => return Ok((Value::Array(items), j + 1)),
                _ => return err(j, "expected ',' or ']'"),
            }
        }
    }

    /// The number starting at `i` (null when out of range), and the index after it.
    #[inline(never)]
    fn number(&mut self, i: usize) -> Result<(Value, usize), SyntaxError> {
        let b = self.text.as_bytes();
        let end = skip_number(b, i)?;
        let n = self.text.get(i..end).and_then(super::number::number);
        Ok((n.map_or(Value::Null, Value::Number), end))
    }

    /// The container at `i` re-printed into `raws`, its placeholder, and the index after it.
    /// Rare (a value nested near the limit): out of [`Parser::value`], which V8 recompiles
    /// with its optimizing tier in a first call (issue 42).
    #[cold]
    #[inline(never)]
    fn raw(&mut self, i: usize) -> Result<(Value, usize), SyntaxError> {
        let end = self.sc.skip_value(self.text.as_bytes(), i)?;
        let mut text = String::new();
        let raw = self.text.get(i..end).unwrap_or_default();
        if super::raw::reprint(&mut text, raw).is_none() {
            return err(i, "a deep object repeats a key");
        }
        self.raws.push(text);
        let k = self.raws.len() - 1;
        Ok((Value::String(super::raw::placeholder(k)), end))
    }

    /// The string whose opening quote is at `i`, decoded, and the index after it. One pass:
    /// the text is a `str`, so the runs between escapes are copied as they are (no UTF-8
    /// check) and the string is not scanned once to find its end and again to decode it.
    fn string(&mut self, i: usize) -> Result<(String, usize), SyntaxError> {
        let (text, b) = (self.text, self.text.as_bytes());
        let mut out = String::new();
        let mut j = i + 1;
        loop {
            let run = skip_str_run(b, j);
            let plain = text.get(j..run).unwrap_or_default();
            match b.get(run) {
                Some(b'"') if out.is_empty() => return Ok((plain.to_owned(), run + 1)),
                Some(b'"') => {
                    out.push_str(plain);
                    return Ok((out, run + 1));
                }
                Some(b'\\') => {
                    out.push_str(plain);
                    match decode_escape(b, run + 1) {
                        Some((ch, next)) => {
                            out.push(ch);
                            j = next;
                        }
                        None => return err(run, "invalid escape"),
                    }
                }
                Some(_) => return err(run, "control character in string"),
                None => return err(b.len(), "unterminated string"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Number;

    /// serde_json's value of `s`, its lone surrogate escapes read as U+FFFD as ours are.
    fn theirs(s: &str) -> Option<Value> {
        serde_json::from_slice(&crate::support::json::scan::lone_surrogates_as_fffd(
            s.as_bytes(),
        ))
        .ok()
    }

    #[test]
    fn values_equal_serde_json() {
        for s in [
            r#"{"a":[1,2.5,"x",true,false,null],"b":{"c":{}},"d":[]}"#,
            " \t\r\n[ 1 , -2 , 3e2 , -0 , -0.0 , 0 , 1E-2 ] ",
            r#""caf\u00e9 \ud83d\ude00 \" \\ \/ \b\f\n\r\t""#,
            r#"{"k":1,"k":2,"j":3}"#,
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "1.7976931348623157e308",
            "5e-324",
            "0.1",
            "123456.789e-3",
            r#"{"k\u0041y":"v"}"#,
            "\"é→😀\"",
            r#"["\ud83d","\ude00x","\ud83d\u0041",{"\ud800":"\udbff\udfff"}]"#,
        ] {
            assert_eq!(parse(s).ok(), theirs(s), "{s}");
            assert!(parse(s).is_ok(), "{s}");
        }
    }

    /// What `JSON.stringify` writes for JavaScript strings holding half a surrogate pair
    /// parses, each lone surrogate as U+FFFD (serde_json refuses it); in keys too.
    #[test]
    fn lone_surrogates_read_as_replacement_characters() {
        let v = parse(r#"{"content":"a\ud800b","\udc00":["\ud83d\ud83d\ude00","\\ud800"]}"#);
        let want = serde_json::json!({"content":"a\u{fffd}b","\u{fffd}":["\u{fffd}😀","\\ud800"]});
        assert_eq!(v, Ok(want));
        assert!(serde_json::from_str::<Value>(r#""a\ud800b""#).is_err());
        let e = parse(r#"["\ud83d\u12"]"#).unwrap_err();
        assert_eq!((e.offset, e.reason), (8, "invalid escape"));
    }

    #[test]
    fn refuses_what_serde_json_refuses() {
        for s in [
            "",
            " ",
            "{",
            "[1,]",
            r#"{"a":1,}"#,
            "01",
            "1.",
            "-",
            r#""\ud83d\u12""#,
            r#""\ud83d\uzzzz""#,
            r#""\ude00\x""#,
            r#""\ud83d"#,
            "\"tab\there\"",
            "tru",
            "[1] x",
            "{\"a\" 1}",
        ] {
            assert!(parse(s).is_err(), "accepted {s:?}");
            assert!(theirs(s).is_none(), "serde_json accepts {s:?}");
        }
    }

    /// A number beyond the `f64` range reads as `null`, what the reference sends for it
    /// (`JSON.parse` gives ±Infinity, `JSON.stringify` writes `null`); serde_json refuses it.
    #[test]
    fn numbers_out_of_range_read_as_null() {
        let v = parse(r#"{"n":1e400,"m":[-1e400,1.5,2e308],"tiny":1e-400}"#);
        let want = serde_json::json!({"n":null,"m":[null,1.5,null],"tiny":0.0});
        assert_eq!(v, Ok(want));
        assert!(serde_json::from_str::<Value>("1e400").is_err());
        assert_eq!(parse("1e400"), Ok(Value::Null));
    }

    #[test]
    fn nesting_limit_is_serde_jsons() {
        for depth in [1, 100, 127, 128, 129, 1000] {
            let s = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            assert_eq!(parse(&s).is_ok(), theirs(&s).is_some(), "depth {depth}");
            let o = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
            assert_eq!(
                parse(&o).is_ok(),
                theirs(&o).is_some(),
                "object depth {depth}"
            );
        }
    }

    /// Escapes, control characters and multi-byte UTF-8 at every position of short strings,
    /// keys included: the same value as serde_json (lone surrogates aside, see `theirs`), or
    /// an error for both.
    #[test]
    fn strings_agree_with_serde_json() {
        let specials = [
            "\\\"",
            "\\\\",
            "\\n",
            "\\u00e9",
            "\\ud83d\\ude00",
            "\\ud83d",
            "\\ude00",
            "\u{1}",
            "é",
            "😀",
            "\\x",
        ];
        // Past 16 bytes on either side: the runs between escapes cross whole words.
        for len in 0..40 {
            for pos in 0..=len {
                for sp in specials {
                    let body = "a".repeat(pos) + sp + &"b".repeat(len - pos);
                    let doc = format!("{{\"{body}\":[\"{body}\",{len}.5e1]}}");
                    assert_eq!(parse(&doc).ok(), theirs(&doc), "{doc:?}");
                }
            }
        }
    }

    /// Documents printed by serde_json from pseudo-random values parse back to them.
    #[test]
    fn printed_values_parse_back() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        fn build(next: &mut dyn FnMut() -> u64, depth: u32) -> Value {
            match next() % if depth > 3 { 6 } else { 8 } {
                0 => Value::Null,
                1 => Value::Bool(next().is_multiple_of(2)),
                2 => (next() as i64 >> (next() % 64)).into(),
                3 => next().into(),
                4 => Number::from_f64(f64::from_bits(next())).map_or(Value::Null, Value::Number),
                5 => Value::String(
                    (0..next() % 8)
                        .filter_map(|_| char::from_u32((next() % 0x11_0000) as u32))
                        .collect(),
                ),
                6 => Value::Array((0..next() % 5).map(|_| build(next, depth + 1)).collect()),
                _ => Value::Object(
                    (0..next() % 5)
                        .map(|k| (format!("k{}", k % 3), build(next, depth + 1)))
                        .collect(),
                ),
            }
        }
        for _ in 0..2000 {
            let v = build(&mut next, 0);
            let text = serde_json::to_string(&v).unwrap();
            assert_eq!(parse(&text).ok(), Some(v.clone()), "{text}");
            let pretty = serde_json::to_string_pretty(&v).unwrap();
            assert_eq!(parse(&pretty).ok(), Some(v), "{pretty}");
        }
    }

    /// Long mantissas read correctly rounded, as Rust's `f64` parser and `JSON.parse` read
    /// them. serde_json 1.0.154 without its `float_roundtrip` feature reads these two one unit
    /// in the last place off (found by comparing it with `str::parse` on pseudo-random 17–22
    /// digit mantissas); with the feature it agrees, but its reader would add 19.5 KB gzip -9
    /// to the `.wasm` and was no faster (A/B of 2026-12-01, issue 18).
    #[test]
    fn floats_are_correctly_rounded() {
        for s in [
            "8.7187459083785414e111",
            "4.400653569891814150e-55",
            "2.2250738585072011e-308",
            "0.1",
        ] {
            let want: f64 = s.parse().expect(s);
            assert_eq!(parse(s).ok().and_then(|v| v.as_f64()), Some(want), "{s}");
        }
    }

    #[test]
    fn errors_say_where() {
        let e = parse(r#"{"a" 1}"#).unwrap_err();
        assert_eq!((e.offset, e.reason), (5, "expected ':'"));
        let e = parse("[1] x").unwrap_err();
        assert_eq!(e.offset, 4);
    }
}
