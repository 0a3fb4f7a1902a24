//! The output notice of a `bashExecution` or `pythonExecution` message (spec: compaction §2.6,
//! the message's `meta` [N]): what was cut from the output and where the rest is, appended
//! to the message's text as the reference's app words it. `meta` is read as the JavaScript
//! object it was: a member that is absent, `null`, `false`, `0` or `""` counts as not there,
//! and values are written as a template string writes them.

use crate::support::json::js;
use serde_json::Value;

/// The notice for `meta` ("" when it says nothing): `\n\n[` the truncation, capture-error and
/// limit notices joined by `". "` `]`, then the LSP diagnostics block.
pub fn output_notice(meta: Option<&Value>) -> String {
    let Some(meta) = meta.filter(|m| truthy(Some(m))) else {
        return String::new();
    };
    let mut parts = Vec::new();
    if let Some(t) = member(meta, "truncation") {
        parts.push(truncation_notice(t, meta.get("source")));
    }
    if let Some(e) = member(meta, "artifactError") {
        parts.push(format!(
            "Full output was not saved completely (artifact {} failed)",
            text(Some(e))
        ));
    }
    let limits = meta.get("limits");
    for (key, what) in [
        ("matchLimit", "matches"),
        ("resultLimit", "results"),
        ("headLimit", "results"),
    ] {
        if let Some(l) = limits.and_then(|l| member(l, key)) {
            parts.push(format!(
                "{} {what} limit reached. Use limit={} for more",
                text(l.get("reached")),
                text(l.get("suggestion"))
            ));
        }
    }
    if let Some(c) = limits.and_then(|l| member(l, "columnTruncated")) {
        let unit = present(c.get("unit")).map_or_else(|| "chars".to_string(), |u| text(Some(u)));
        let mut notice = format!(
            "Some lines truncated to {} {unit}",
            text(c.get("maxColumn"))
        );
        if let Some(id) = present(c.get("artifactId")) {
            notice.push_str(&format!(
                ". Read artifact://{} for full output",
                text(Some(id))
            ));
        }
        parts.push(notice);
    }
    let mut out = String::new();
    if !parts.is_empty() {
        out = format!("\n\n[{}]", parts.join(". "));
    }
    if let Some(d) = member(meta, "diagnostics") {
        let messages: Vec<String> = match d.get("messages") {
            Some(Value::Array(m)) => m.iter().map(|v| text(Some(v))).collect(),
            _ => Vec::new(),
        };
        if !messages.is_empty() {
            out.push_str(&format!(
                "\n\nLSP Diagnostics ({}):\n{}",
                text(d.get("summary")),
                grouped_diagnostics(&messages)
            ));
        }
    }
    out
}

/// The notice of a truncated output: which lines (or bytes) are shown of how many, what the
/// cap was, where to continue, and the artifact holding the whole output.
fn truncation_notice(t: &Value, source: Option<&Value>) -> String {
    let n = |key: &str| number(t.get(key));
    let artifact = present(t.get("artifactId")).map(|id| {
        let id = text(Some(id));
        match source.filter(|s| s.get("type").and_then(Value::as_str) == Some("report")) {
            Some(s) => format!(
                "Read artifact://{id} for full report ({})",
                text(s.get("value"))
            ),
            None => format!("Read artifact://{id} for full output"),
        }
    });
    let total_lines = text(t.get("totalLines"));
    let mut notice = if t.get("direction").and_then(Value::as_str) == Some("middle") {
        let range = |key: &str| member(t, key).map(|r| (text(r.get("start")), text(r.get("end"))));
        let elided_bytes = present(t.get("elidedBytes")).map_or_else(
            || js_max0(n("totalBytes") - n("outputBytes")),
            |v| number(Some(v)),
        );
        let elided_lines = present(t.get("elidedLines")).map_or_else(
            || js_max0(n("totalLines") - n("outputLines")),
            |v| number(Some(v)),
        );
        let notice = match (range("headRange"), range("tailRange")) {
            (Some((hs, he)), Some((ts, te))) => format!(
                "Showing lines {hs}-{he} and {ts}-{te} of {total_lines}; {} middle line{} ({}) elided",
                locale_number(elided_lines),
                plural(elided_lines),
                format_bytes(elided_bytes)
            ),
            _ if elided_bytes > 0.0 => format!(
                "Showing head and tail bytes of {} line{}; {} elided",
                locale_number(n("totalLines")),
                plural(n("totalLines")),
                format_bytes(elided_bytes)
            ),
            _ => format!(
                "Showing {} of {total_lines} lines; middle elided",
                number_text(js_min(n("outputLines"), n("totalLines")))
            ),
        };
        return with_tail(notice, t, artifact);
    } else if truthy(t.get("partialLine")) {
        let line = t
            .get("shownRange")
            .and_then(|r| present(r.get("start")))
            .map_or_else(|| "1".to_string(), |s| text(Some(s)));
        let notice = format!(
            "Showing line {line} (partial, {} of {}) of {total_lines}",
            format_bytes(n("outputBytes")),
            format_bytes(n("totalBytes"))
        );
        // A partial line names no continuation.
        return match artifact {
            Some(a) => format!("{notice}. {a}"),
            None => notice,
        };
    } else {
        match member(t, "shownRange") {
            Some(r) if number(r.get("end")) >= number(r.get("start")) => format!(
                "Showing lines {}-{} of {total_lines}",
                text(r.get("start")),
                text(r.get("end"))
            ),
            _ => format!(
                "Showing {} of {total_lines} lines",
                text(t.get("outputLines"))
            ),
        }
    };
    if t.get("truncatedBy").and_then(Value::as_str) == Some("bytes") {
        let max = present(t.get("maxBytes")).map_or_else(|| n("outputBytes"), |v| number(Some(v)));
        notice.push_str(&format!(" ({} limit)", format_bytes(max)));
    }
    with_tail(notice, t, artifact)
}

/// `". Use :<nextOffset> to continue"` when there is one, then `". <artifact>"`.
fn with_tail(mut notice: String, t: &Value, artifact: Option<String>) -> String {
    if let Some(next) = present(t.get("nextOffset")) {
        notice.push_str(&format!(". Use :{} to continue", text(Some(next))));
    }
    if let Some(a) = artifact {
        notice.push_str(". ");
        notice.push_str(&a);
    }
    notice
}

/// Diagnostics (`path:line:col message`) grouped under their files as a folded directory
/// tree (one `#` per level, a blank line before each top-level item and each directory),
/// the file's diagnostics indented under it; messages without a path follow after a blank
/// line. Without any path, the messages one per line.
fn grouped_diagnostics(messages: &[String]) -> String {
    let mut files: Vec<(String, Vec<String>)> = Vec::new();
    let mut ungrouped = Vec::new();
    for m in messages {
        match split_diagnostic(m) {
            Some((path, rest)) => {
                let path = path.replace('\\', "/");
                match files.iter_mut().find(|(p, _)| *p == path) {
                    Some((_, list)) => list.push(format!("  {rest}")),
                    None => files.push((path, vec![format!("  {rest}")])),
                }
            }
            None => ungrouped.push(m.as_str()),
        }
    }
    if files.is_empty() {
        return ungrouped.join("\n");
    }
    let mut tree = vec![Dir::default()];
    for (k, (path, _)) in files.iter().enumerate() {
        if is_url_like(path) {
            tree[0].add_file(path.clone(), k);
            continue;
        }
        let trimmed = path.strip_suffix('/').unwrap_or(path);
        if trimmed.is_empty() {
            continue;
        }
        let segments: Vec<&str> = trimmed.split('/').collect();
        let (name, dirs) = segments.split_last().unwrap_or((&"", &[]));
        let mut at = 0;
        for seg in dirs {
            at = match tree[at]
                .dirs
                .iter()
                .copied()
                .find(|&d| tree[d].name == *seg)
            {
                Some(d) => d,
                None => {
                    tree.push(Dir {
                        name: (*seg).to_string(),
                        ..Dir::default()
                    });
                    let d = tree.len() - 1;
                    tree[at].dirs.push(d);
                    d
                }
            };
        }
        tree[at].add_file((*name).to_string(), k);
    }
    let mut lines = Vec::new();
    walk(&tree, 0, 0, &files, &mut lines);
    if !ungrouped.is_empty() {
        lines.push(String::new());
        lines.extend(ungrouped.iter().map(|m| m.to_string()));
    }
    lines.join("\n")
}

/// A directory of the diagnostics tree: its files (name, index into the file list) and
/// subdirectories (indices into the tree), in first-seen order.
#[derive(Default)]
struct Dir {
    name: String,
    files: Vec<(String, usize)>,
    dirs: Vec<usize>,
}

impl Dir {
    fn add_file(&mut self, name: String, file: usize) {
        if !self.files.iter().any(|(n, _)| *n == name) {
            self.files.push((name, file));
        }
    }
}

/// Writes directory `at`'s files, then its subdirectories (single-child chains folded).
fn walk(
    tree: &[Dir],
    at: usize,
    depth: usize,
    files: &[(String, Vec<String>)],
    lines: &mut Vec<String>,
) {
    let hashes = "#".repeat(depth + 1);
    for (name, k) in &tree[at].files {
        if !lines.is_empty() && depth == 0 {
            lines.push(String::new());
        }
        lines.push(format!("{hashes} {name}"));
        lines.extend(files[*k].1.iter().cloned());
    }
    for &d in &tree[at].dirs {
        let mut d = d;
        let mut name = tree[d].name.clone();
        while tree[d].files.is_empty() && tree[d].dirs.len() == 1 {
            d = tree[d].dirs[0];
            name.push('/');
            name.push_str(&tree[d].name);
        }
        if !lines.is_empty() {
            lines.push(String::new());
        }
        lines.push(format!("{hashes} {name}/"));
        walk(tree, d, depth + 1, files, lines);
    }
}

/// `path:line:col message` → (path, `line:col message`), the path as short as it can be; a
/// message with a line break has no path.
fn split_diagnostic(m: &str) -> Option<(&str, &str)> {
    if m.contains(['\n', '\r', '\u{2028}', '\u{2029}']) {
        return None;
    }
    m.char_indices()
        .skip(1)
        .filter(|&(_, c)| c == ':')
        .map(|(i, _)| (&m[..i], &m[i + 1..]))
        .find(|(_, rest)| is_position_then_text(rest))
}

/// `\d+:\d+\s+.*`.
fn is_position_then_text(s: &str) -> bool {
    let digits = |s: &str| s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let a = digits(s);
    if a == 0 || !s[a..].starts_with(':') {
        return false;
    }
    let s = &s[a + 1..];
    let b = digits(s);
    b > 0 && s[b..].starts_with(is_js_space)
}

/// JavaScript's `\s`.
fn is_js_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{FEFF}'
}

/// A `scheme://…` path (kept whole, at the root of the tree).
fn is_url_like(path: &str) -> bool {
    let Some((scheme, _)) = path.split_once("://") else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
}

/// A member that is there in the JavaScript sense (see the module comment).
fn member<'v>(v: &'v Value, key: &str) -> Option<&'v Value> {
    v.get(key).filter(|m| truthy(Some(m)))
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

/// A value as JavaScript arithmetic reads it (numbers and numeric strings; NaN otherwise).
fn number(v: Option<&Value>) -> f64 {
    match v {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(Value::String(s)) if s.trim().is_empty() => 0.0,
        Some(Value::String(s)) => s.trim().parse().unwrap_or(f64::NAN),
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
        return format!("{}B", number_text(bytes));
    }
    let (scaled, unit) = if bytes < K * K {
        (bytes / K, "KB")
    } else if bytes < K * K * K {
        (bytes / (K * K), "MB")
    } else {
        (bytes / (K * K * K), "GB")
    };
    format!("{}{unit}", fixed1(scaled))
}

/// `x.toFixed(1)` for a finite non-negative `x`: the nearest tenth, a tie going up. `x` is a
/// byte count over a power of two, so `x * 10` is exact wherever the byte count is.
fn fixed1(x: f64) -> String {
    if !x.is_finite() || x >= 1e20 {
        return number_text(x);
    }
    let tenths = (x * 10.0 + 0.5).floor();
    let whole = (tenths / 10.0).floor();
    format!(
        "{}.{}",
        number_text(whole),
        number_text(tenths - whole * 10.0)
    )
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

    #[test]
    fn diagnostics_split_at_the_first_position() {
        assert_eq!(
            split_diagnostic("C:\\a.ts:1:2 error"),
            Some(("C:\\a.ts", "1:2 error"))
        );
        assert_eq!(split_diagnostic("a.ts:1:2error"), None);
        assert_eq!(split_diagnostic(":1:2 x"), None);
        assert_eq!(split_diagnostic("a.ts:1:2 x\ny"), None);
    }
}
