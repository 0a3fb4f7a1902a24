//! `JSON.stringify` as JavaScript writes it.
//!
//! Token estimates count the UTF-8 bytes of `JSON.stringify(arguments)` (spec: compaction
//! §3.1) and the summarizer renders tool arguments the same way (§5.1), so our output must be
//! the JavaScript one byte for byte: compact, keys in insertion order, JavaScript's escaping and
//! JavaScript's number formatting (`Number.prototype.toString`), with numbers read as IEEE
//! doubles just as `JSON.parse` reads them.

use serde_json::Value;
use std::fmt::Write;

/// `JSON.stringify(value)`.
pub fn stringify(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

/// `s` as a JSON string literal: error messages quote names with it rather than with `{:?}`,
/// whose escaping pulls core's Unicode printability tables into the `.wasm`.
pub fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_string(&mut out, s);
    out
}

/// Appends `JSON.stringify(value)` to `out`.
pub fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_f64() {
            Some(f) => write_number(out, f),
            None => out.push_str("null"),
        },
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// An object written straight as `JSON.stringify` text, members in call order: for results
/// that go to JavaScript as text, with no `Value` tree built (and dropped) on the way. A
/// nested object is another `Object` opened on [`Object::key`].
pub struct Object<'o> {
    out: &'o mut String,
    empty: bool,
}

impl<'o> Object<'o> {
    /// Writes `{`; [`Object::close`] writes `}`.
    pub fn open(out: &'o mut String) -> Object<'o> {
        out.push('{');
        Object { out, empty: true }
    }

    /// Writes `"k":` (after a comma where needed); the caller writes the value.
    pub fn key(&mut self, k: &str) -> &mut String {
        if !self.empty {
            self.out.push(',');
        }
        self.empty = false;
        write_string(self.out, k);
        self.out.push(':');
        self.out
    }

    pub fn null(&mut self, k: &str) {
        self.key(k).push_str("null");
    }

    pub fn str(&mut self, k: &str, v: &str) {
        write_string(self.key(k), v);
    }

    /// A string, or `null` for `None`.
    pub fn opt_str(&mut self, k: &str, v: Option<&str>) {
        match v {
            Some(v) => self.str(k, v),
            None => self.null(k),
        }
    }

    /// A number as `JSON.stringify` writes it ([`write_number`]).
    pub fn num(&mut self, k: &str, v: f64) {
        write_number(self.key(k), v);
    }

    /// A number, or `null` for `None`.
    pub fn opt_num(&mut self, k: &str, v: Option<f64>) {
        match v {
            Some(v) => self.num(k, v),
            None => self.null(k),
        }
    }

    pub fn bool(&mut self, k: &str, v: bool) {
        self.key(k).push_str(if v { "true" } else { "false" });
    }

    /// A boolean, or `null` for `None`.
    pub fn opt_bool(&mut self, k: &str, v: Option<bool>) {
        match v {
            Some(v) => self.bool(k, v),
            None => self.null(k),
        }
    }

    /// An array of strings.
    pub fn strs(&mut self, k: &str, items: &mut dyn Iterator<Item = &str>) {
        let out = self.key(k);
        out.push('[');
        for (i, s) in items.enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_string(out, s);
        }
        out.push(']');
    }

    /// Writes `}`.
    pub fn close(self) {
        self.out.push('}');
    }
}

/// Appends an integer in decimal, as `String(n)` prints it: without the formatting machinery
/// (a prune writes tens of thousands of them).
pub fn write_int(out: &mut String, n: i64) {
    if n < 0 {
        out.push('-');
    }
    write_uint(out, n.unsigned_abs());
}

/// [`write_int`] of an unsigned integer.
pub fn write_uint(out: &mut String, v: u64) {
    if v >= 10 {
        write_uint(out, v / 10);
    }
    out.push(char::from(b'0' + (v % 10) as u8));
}

/// Appends a string literal with JavaScript's escaping: `"`, `\`, the five short control
/// escapes, and `\u00xx` (lowercase hex) for the other control characters.
pub fn write_string(out: &mut String, s: &str) {
    out.push('"');
    let b = s.as_bytes();
    let (mut start, mut i) = (0, 0);
    // Plain ASCII is crossed many bytes at a time; only ASCII bytes are escaped, so
    // `start` and `i` stay on character boundaries.
    while i < b.len() {
        i = crate::support::json::scan::skip_plain(b, i);
        let Some(&c) = b.get(i) else { break };
        let esc = match c {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => {
                i += 1;
                continue;
            }
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            let _ = write!(out, "\\u{c:04x}");
        } else {
            out.push_str(esc);
        }
        i += 1;
        start = i;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Hands JSON text `json` to `f` with every non-ASCII character written as `\\uXXXX` escapes
/// (UTF-16 units, a pair above U+FFFF). Outside strings JSON text is ASCII, so the pieces are
/// JSON of the same value. JavaScript decodes ASCII text many times faster than text with a
/// few wide characters, which makes all of it two-byte (the whole-path transcript of a
/// 200 MB session: 0.10 s against 0.34 s to decode, issue 22).
pub fn write_ascii_json(f: &mut dyn FnMut(&str), json: &str) {
    let b = json.as_bytes();
    let (mut start, mut i) = (0, 0);
    loop {
        // ASCII crossed eight bytes at a time.
        while let Some(w) = b.get(i..).and_then(<[u8]>::first_chunk::<8>) {
            if u64::from_le_bytes(*w) & 0x8080_8080_8080_8080 != 0 {
                break;
            }
            i += 8;
        }
        let Some(&lead) = b.get(i) else { break };
        if lead < 0x80 {
            i += 1;
            continue;
        }
        // `i` starts a character: the bytes before it from `start` on are ASCII.
        f(&json[start..i]);
        let (len, mut cp) = match lead {
            0xf0.. => (4, u32::from(lead & 0x07)),
            0xe0.. => (3, u32::from(lead & 0x0f)),
            _ => (2, u32::from(lead & 0x1f)),
        };
        for k in 1..len {
            cp = (cp << 6) | (u32::from(b.get(i + k).copied().unwrap_or(0x80)) & 0x3f);
        }
        let mut esc = String::with_capacity(12);
        if cp >= 0x10000 {
            let hi = 0xd800 + ((cp - 0x10000) >> 10);
            let _ = write!(esc, "\\u{:02x}{:02x}", (hi >> 8) as u8, hi as u8);
            cp = 0xdc00 + (cp & 0x3ff);
        }
        let _ = write!(esc, "\\u{:02x}{:02x}", (cp >> 8) as u8, cp as u8);
        f(&esc);
        i += len;
        start = i;
    }
    f(&json[start..]);
}

/// A number as `String(x)` prints it in JavaScript (see [`write_number`]); for messages, which
/// would otherwise link Rust's own float formatting into the `.wasm` just for them.
pub fn number(x: f64) -> String {
    let mut out = String::new();
    write_number(&mut out, x);
    out
}

/// Appends a number the way `Number.prototype.toString` prints it (ECMA-262
/// Number::toString): shortest round-trip digits, plain notation for decimal exponents in
/// (-7, 21], exponent notation with an explicit sign otherwise. Non-finite → `null`.
pub fn write_number(out: &mut String, x: f64) {
    if !x.is_finite() {
        out.push_str("null");
        return;
    }
    if x == 0.0 {
        out.push('0');
        return;
    }
    if x < 0.0 {
        out.push('-');
    }
    // serde_json (through its float formatter) gives the shortest round-trip digits; read
    // them and their decimal exponent off its text, whatever notation it chose.
    let text = serde_json::Number::from_f64(x.abs()).map_or_else(String::new, |n| n.to_string());
    let (mantissa, exp) = text.split_once(['e', 'E']).unwrap_or((text.as_str(), "0"));
    let e: i64 = exp.parse().unwrap_or(0);
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all = format!("{int}{frac}");
    let lead = all.len() - all.trim_start_matches('0').len();
    let digits = all.trim_matches('0').to_string();
    if digits.is_empty() {
        out.push('0');
        return;
    }
    // The value is 0.digits × 10^n: n counts the integer digits, shifted by the exponent.
    let n = int.len() as i64 + e - lead as i64;
    let k = digits.len() as i64;
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if n >= 1 { '+' } else { '-' });
        let _ = write!(out, "{}", (n - 1).abs());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_json_is_json_of_the_same_value() {
        for v in [
            serde_json::json!({"a": "plain", "é": ["ünï", "漢字", "😀 x", "\u{7f}\u{80}\u{ffff}"], "n": [1, -0.5]}),
            serde_json::json!("\u{10ffff}\u{10000}"),
            serde_json::json!([]),
        ] {
            let text = stringify(&v);
            let mut out = String::new();
            write_ascii_json(&mut |p| out.push_str(p), &text);
            assert!(out.is_ascii(), "{out}");
            assert_eq!(crate::support::json::parse(&out).unwrap(), v, "{out}");
        }
        let mut out = String::new();
        write_ascii_json(&mut |p| out.push_str(p), "\"😀é\"");
        assert_eq!(out, "\"\\ud83d\\ude00\\u00e9\"");
    }

    fn num(x: f64) -> String {
        let mut s = String::new();
        write_number(&mut s, x);
        s
    }

    #[test]
    fn integers_print_as_javascript_does() {
        for n in [0, 7, -7, 10, 1_767_600_000_000, i64::MIN, i64::MAX] {
            let mut s = String::new();
            write_int(&mut s, n);
            assert_eq!(s, n.to_string());
        }
        let mut s = String::new();
        write_uint(&mut s, u64::MAX);
        assert_eq!(s, u64::MAX.to_string());
    }

    #[test]
    fn numbers_match_javascript() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (-1.5, "-1.5"),
            (0.1, "0.1"),
            (123456789.0, "123456789"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (1e-7, "1e-7"),
            (1152921504606846976.0, "1152921504606847000"),
            (9007199254740993.0, "9007199254740992"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (123.456, "123.456"),
            (f64::NAN, "null"),
        ];
        for (x, want) in cases {
            assert_eq!(num(*x), *want, "{x}");
        }
    }

    #[test]
    fn strings_and_containers_match_javascript() {
        let v: Value = serde_json::from_str(
            r#"{"b":1,"a":[true,null,"q\"\\\n\t\u0001 é"],"n":1.0,"big":9007199254740993}"#,
        )
        .unwrap();
        assert_eq!(
            stringify(&v),
            r#"{"b":1,"a":[true,null,"q\"\\\n\t\u0001 é"],"n":1,"big":9007199254740992}"#
        );
    }
}
