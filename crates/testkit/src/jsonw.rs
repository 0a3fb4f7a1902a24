//! Minimal JSON output helpers that write exactly what JavaScript's `JSON.stringify` writes
//! for the values the generator produces (strings, integers, finite doubles, booleans).

/// Appends `s` as a JSON string literal: `"` and `\` escaped, `\b \f \n \r \t` short forms,
/// other control characters as `\u00xx` (lowercase hex), everything else raw (UTF-8).
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(s.len() + 2);
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\t' => b"\\t",
            b'\r' => b"\\r",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if esc.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Appends an unsigned integer.
pub fn write_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&tmp[i..]);
}

/// Appends a signed integer.
pub fn write_i64(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    write_u64(out, n.unsigned_abs());
}

/// Appends a finite double the way `Number.prototype.toString` renders it (shortest
/// round-trip digits; exponent form below 1e-6 and from 1e21 on). Non-finite → `null`.
pub fn write_f64(out: &mut Vec<u8>, x: f64) {
    use std::io::Write as _;
    if !x.is_finite() {
        out.extend_from_slice(b"null");
        return;
    }
    if x == 0.0 {
        out.push(b'0');
        return;
    }
    let a = x.abs();
    if (1e-6..1e21).contains(&a) {
        let _ = write!(out, "{x}");
    } else {
        // Rust `{:e}` gives `1.5e-7` / `1e21`; JavaScript writes `1.5e-7` / `1e+21`.
        let s = format!("{x:e}");
        match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => {
                out.extend_from_slice(m.as_bytes());
                out.extend_from_slice(b"e+");
                out.extend_from_slice(e.as_bytes());
            }
            _ => out.extend_from_slice(s.as_bytes()),
        }
    }
}

/// Appends `"key":`.
pub fn write_key(out: &mut Vec<u8>, key: &str) {
    out.push(b'"');
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
}

/// Days since 1970-01-01 → (year, month, day) (proleptic Gregorian).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Unix milliseconds → `YYYY-MM-DDTHH:MM:SS.mmmZ` (as `Date.prototype.toISOString`).
pub fn iso8601(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, mo, d) = civil_from_days(days);
    let h = rem / 3_600_000;
    let mi = (rem / 60_000) % 60;
    let s = (rem / 1000) % 60;
    let milli = rem % 1000;
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> String {
        let mut v = Vec::new();
        write_str(&mut v, x);
        String::from_utf8(v).unwrap_or_default()
    }

    fn f(x: f64) -> String {
        let mut v = Vec::new();
        write_f64(&mut v, x);
        String::from_utf8(v).unwrap_or_default()
    }

    #[test]
    fn strings_match_json_stringify() {
        assert_eq!(s("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(s("\n\t\r\u{8}\u{c}"), r#""\n\t\r\b\f""#);
        assert_eq!(s("\u{1}\u{1f}\u{7f}"), "\"\\u0001\\u001f\u{7f}\"");
        assert_eq!(s("é→日本🚀"), "\"é→日本🚀\"");
        // serde_json agrees on everything we emit.
        let x = "q\"\\\n\t\u{2}é\u{1b}[0m";
        assert_eq!(s(x), serde_json::to_string(x).unwrap_or_default());
    }

    #[test]
    fn numbers_match_js() {
        assert_eq!(f(0.0), "0");
        assert_eq!(f(0.000009), "0.000009");
        assert_eq!(f(0.0396837), "0.0396837");
        assert_eq!(f(3e-7), "3e-7");
        assert_eq!(f(1.5e-7), "1.5e-7");
        assert_eq!(f(12.0), "12");
        assert_eq!(f(1e21), "1e+21");
        let mut v = Vec::new();
        write_u64(&mut v, 0);
        v.push(b' ');
        write_i64(&mut v, -1763681630793);
        assert_eq!(v, b"0 -1763681630793");
    }

    #[test]
    fn iso_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_763_681_630_793), "2025-11-20T23:33:50.793Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
