//! The output notice of a `bashExecution` or `pythonExecution` message (spec: compaction §2.6,
//! the message's `meta` [N]): what was cut from the output and where the rest is, appended
//! to the message's text as the reference's app words it. `meta` is read as the JavaScript
//! object it was: a member that is absent, `null`, `false`, `0` or `""` counts as not there,
//! and values are written as a template string writes them.
//!
//! The app records a run's truncation, a failed capture and a column cap (`truncation`,
//! `artifactError`, `limits.columnTruncated`); the other limits are worded too. LSP
//! `diagnostics`, which the app records only on edit and write tool results, are not
//! rendered here (their grouped path tree costs about 3.7 KB of the `.wasm`).

use crate::support::json::js;
use serde_json::Value;

/// The notice for `meta` ("" when it says nothing): `\n\n[` the truncation, capture-error and
/// limit notices joined by `". "` `]`.
pub fn output_notice(meta: Option<&Value>) -> String {
    let Some(meta) = meta.filter(|m| truthy(Some(m))) else {
        return String::new();
    };
    let mut parts = Vec::new();
    if let Some(t) = member(meta, "truncation") {
        parts.push(truncation_notice(t, field(meta, "source")));
    }
    if let Some(e) = member(meta, "artifactError") {
        parts.push(cat(&[
            "Full output was not saved completely (artifact ",
            &text(Some(e)),
            " failed)",
        ]));
    }
    let limits = field(meta, "limits");
    for (key, what) in [
        ("matchLimit", " matches"),
        ("resultLimit", " results"),
        ("headLimit", " results"),
    ] {
        if let Some(l) = limits.and_then(|l| member(l, key)) {
            let (reached, suggestion) = (text(field(l, "reached")), text(field(l, "suggestion")));
            parts.push(cat(&[
                &reached,
                what,
                " limit reached. Use limit=",
                &suggestion,
                " for more",
            ]));
        }
    }
    if let Some(c) = limits.and_then(|l| member(l, "columnTruncated")) {
        let unit = present(field(c, "unit")).map_or_else(|| "chars".into(), |u| text(Some(u)));
        let mut notice = cat(&[
            "Some lines truncated to ",
            &text(field(c, "maxColumn")),
            " ",
            &unit,
        ]);
        if let Some(id) = present(field(c, "artifactId")) {
            notice.push_str(". ");
            notice.push_str(&full_output(&text(Some(id))));
        }
        parts.push(notice);
    }
    if parts.is_empty() {
        return String::new();
    }
    cat(&["\n\n[", &parts.join(". "), "]"])
}

/// The pieces joined, in one out-of-line function for every notice (137 B gzip smaller than a
/// `format!` per notice).
#[inline(never)]
fn cat(pieces: &[&str]) -> String {
    pieces.concat()
}

/// `Read artifact://<id> for full output`.
fn full_output(id: &str) -> String {
    cat(&["Read artifact://", id, " for full output"])
}

/// The notice of a truncated output: which lines (or bytes) are shown of how many, what the
/// cap was, where to continue, and the artifact holding the whole output.
fn truncation_notice(t: &Value, source: Option<&Value>) -> String {
    let n = |key: &str| number(field(t, key));
    let artifact = present(field(t, "artifactId")).map(|id| {
        let id = text(Some(id));
        match source.filter(|s| field(s, "type").and_then(Value::as_str) == Some("report")) {
            Some(s) => cat(&[
                "Read artifact://",
                &id,
                " for full report (",
                &text(field(s, "value")),
                ")",
            ]),
            None => full_output(&id),
        }
    });
    let total_lines = text(field(t, "totalLines"));
    let mut notice;
    if field(t, "direction").and_then(Value::as_str) == Some("middle") {
        let range =
            |key: &str| member(t, key).map(|r| (text(field(r, "start")), text(field(r, "end"))));
        let or_diff = |key: &str, total: &str, shown: &str| {
            present(field(t, key)).map_or_else(|| js_max0(n(total) - n(shown)), |v| number(Some(v)))
        };
        let elided_bytes = or_diff("elidedBytes", "totalBytes", "outputBytes");
        let elided_lines = or_diff("elidedLines", "totalLines", "outputLines");
        notice = match (range("headRange"), range("tailRange")) {
            (Some((hs, he)), Some((ts, te))) => cat(&[
                "Showing lines ",
                &hs,
                "-",
                &he,
                " and ",
                &ts,
                "-",
                &te,
                " of ",
                &total_lines,
                "; ",
                &locale_number(elided_lines),
                " middle line",
                plural(elided_lines),
                " (",
                &format_bytes(elided_bytes),
                ") elided",
            ]),
            _ if elided_bytes > 0.0 => cat(&[
                "Showing head and tail bytes of ",
                &locale_number(n("totalLines")),
                " line",
                plural(n("totalLines")),
                "; ",
                &format_bytes(elided_bytes),
                " elided",
            ]),
            _ => cat(&[
                "Showing ",
                &number_text(js_min(n("outputLines"), n("totalLines"))),
                " of ",
                &total_lines,
                " lines; middle elided",
            ]),
        };
    } else if truthy(field(t, "partialLine")) {
        let line = t
            .get("shownRange")
            .and_then(|r| present(field(r, "start")))
            .map_or_else(|| "1".into(), |s| text(Some(s)));
        notice = cat(&[
            "Showing line ",
            &line,
            " (partial, ",
            &format_bytes(n("outputBytes")),
            " of ",
            &format_bytes(n("totalBytes")),
            ") of ",
            &total_lines,
        ]);
        // A partial line names no continuation.
        if let Some(a) = artifact {
            notice.push_str(". ");
            notice.push_str(&a);
        }
        return notice;
    } else {
        notice = match member(t, "shownRange") {
            Some(r) if number(field(r, "end")) >= number(field(r, "start")) => cat(&[
                "Showing lines ",
                &text(field(r, "start")),
                "-",
                &text(field(r, "end")),
                " of ",
                &total_lines,
            ]),
            _ => cat(&[
                "Showing ",
                &text(field(t, "outputLines")),
                " of ",
                &total_lines,
                " lines",
            ]),
        };
        if field(t, "truncatedBy").and_then(Value::as_str) == Some("bytes") {
            let max =
                present(field(t, "maxBytes")).map_or_else(|| n("outputBytes"), |v| number(Some(v)));
            notice.push_str(" (");
            notice.push_str(&format_bytes(max));
            notice.push_str(" limit)");
        }
    }
    if let Some(next) = present(field(t, "nextOffset")) {
        notice.push_str(". Use :");
        notice.push_str(&text(Some(next)));
        notice.push_str(" to continue");
    }
    if let Some(a) = artifact {
        notice.push_str(". ");
        notice.push_str(&a);
    }
    notice
}

/// `v[key]` of an object (one out-of-line copy of the map lookup for all the reads).
#[inline(never)]
fn field<'v>(v: &'v Value, key: &str) -> Option<&'v Value> {
    v.get(key)
}

/// A member that is there in the JavaScript sense (see the module comment).
fn member<'v>(v: &'v Value, key: &str) -> Option<&'v Value> {
    field(v, key).filter(|m| truthy(Some(m)))
}

/// Neither absent nor `null` (`!= null`, `??`).
fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// A value as a template string writes it.
fn text(v: Option<&Value>) -> String {
    match v {
        None => "undefined".into(),
        Some(Value::Null) => "null".into(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => number_text(n.as_f64().unwrap_or(f64::NAN)),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| {
                if x.is_null() {
                    String::new()
                } else {
                    text(Some(x))
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(Value::Object(_)) => "[object Object]".into(),
    }
}

/// A value as JavaScript arithmetic reads it: numbers, `null` as 0, booleans as 0 and 1, and
/// NaN for the rest (the app writes numbers; a numeric string, which JavaScript would read as
/// its number, is not worth a float parser in the `.wasm`).
fn number(v: Option<&Value>) -> f64 {
    match v {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(Value::Null) => 0.0,
        _ => f64::NAN,
    }
}

fn number_text(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let mut out = String::new();
    js::write_number(&mut out, x);
    out
}

/// `Math.max(0, x)`.
fn js_max0(x: f64) -> f64 {
    if x.is_nan() {
        x
    } else {
        x.max(0.0)
    }
}

/// `Math.min(a, b)`.
fn js_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

/// `"s"` unless exactly 1.
fn plural(x: f64) -> &'static str {
    if x == 1.0 {
        ""
    } else {
        "s"
    }
}

/// `toLocaleString()` in en-US for a whole number (digits grouped by threes); other numbers as
/// they print.
fn locale_number(x: f64) -> String {
    if !x.is_finite() || x.fract() != 0.0 || x.abs() >= 1e21 {
        return number_text(x);
    }
    let digits = number_text(x.abs());
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if x < 0.0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `formatBytes`: `N B` under 1 KiB, else KB / MB / GB with one decimal (`toFixed(1)`).
fn format_bytes(bytes: f64) -> String {
    const K: f64 = 1024.0;
    if bytes.is_nan() {
        return "NaNGB".into();
    }
    if bytes < K {
        return number_text(bytes) + "B";
    }
    let (scaled, unit) = if bytes < K * K {
        (bytes / K, "KB")
    } else if bytes < K * K * K {
        (bytes / (K * K), "MB")
    } else {
        (bytes / (K * K * K), "GB")
    };
    fixed1(scaled) + unit
}

/// `x.toFixed(1)` for a finite non-negative `x`: the nearest tenth, a tie going up. `x` is a
/// byte count over a power of two, so `x * 10` is exact wherever the byte count is.
fn fixed1(x: f64) -> String {
    if !x.is_finite() || x >= 1e20 {
        return number_text(x);
    }
    let tenths = (x * 10.0 + 0.5).floor();
    let whole = (tenths / 10.0).floor();
    number_text(whole) + "." + &number_text(tenths - whole * 10.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_helpers_write_as_javascript_does() {
        assert_eq!(locale_number(1234567.0), "1,234,567");
        assert_eq!(locale_number(999.0), "999");
        assert_eq!(locale_number(-1000.0), "-1,000");
        assert_eq!(format_bytes(1023.0), "1023B");
        assert_eq!(format_bytes(1024.0), "1.0KB");
        assert_eq!(format_bytes(1126.0), "1.1KB");
        assert_eq!(format_bytes(1075.0), "1.0KB");
        assert_eq!(format_bytes(2_500_000.0), "2.4MB");
        assert_eq!(format_bytes(5.0 * 1024.0 * 1024.0 * 1024.0), "5.0GB");
    }
}
