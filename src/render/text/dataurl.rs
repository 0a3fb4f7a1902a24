//! Data-URL elision: inline `data:…;base64,…` payloads become a placeholder before any cap
//! or slicing, so a cut never leaves an undecodable image reference behind (spec:
//! snapcompact §6.3).

use std::borrow::Cow;

/// Payloads this long count as real (damaged) data URLs even when not canonical base64
/// (spec: snapcompact §2 "data-URL damage floor").
pub const DAMAGE_FLOOR: usize = 40;

/// Which text is being healed (spec: snapcompact §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elision {
    /// Fresh text: replace only canonical, marker-carrying or long payloads.
    Source,
    /// Text persisted by older versions, possibly cut anywhere: replace every match.
    Archive,
}

fn is_type_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'+' | b'-')
}

fn is_b64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')
}

fn span(s: &[u8], at: usize, pred: impl Fn(u8) -> bool) -> usize {
    s[at.min(s.len())..]
        .iter()
        .take_while(|&&b| pred(b))
        .count()
}

/// A `[…Nch elided…]` / `[...Nch elided...]` marker at `at`: (length in bytes, N).
fn marker_at(s: &[u8], at: usize) -> Option<(usize, u64)> {
    let rest = s.get(at..)?;
    let open: &[u8] = if rest.starts_with("[\u{2026}".as_bytes()) {
        "[\u{2026}".as_bytes()
    } else if rest.starts_with(b"[...") {
        b"[..."
    } else {
        return None;
    };
    let mut i = open.len();
    let digits = span(rest, i, |b| b.is_ascii_digit());
    if digits == 0 {
        return None;
    }
    let n: u64 = std::str::from_utf8(&rest[i..i + digits])
        .ok()?
        .parse()
        .ok()?;
    i += digits;
    let close_uni = "ch elided\u{2026}]".as_bytes();
    let close_ascii: &[u8] = b"ch elided...]";
    if rest[i..].starts_with(close_uni) {
        Some((i + close_uni.len(), n))
    } else if rest[i..].starts_with(close_ascii) {
        Some((i + close_ascii.len(), n))
    } else {
        None
    }
}

/// A parsed data URL starting at `start` (the `d` of `data:`).
struct DataUrl {
    /// type/subtype plus parameters, as written.
    mime_end: usize,
    mime_start: usize,
    /// End of the payload (and of the marker part, when present).
    payload_end: usize,
    /// Base64 characters, marker excluded.
    payload_chars: usize,
    marker: Option<u64>,
    /// Canonical base64 (checked only without a marker).
    canonical: bool,
    /// End including a captured trailing `)` (equal to `payload_end` when none).
    end: usize,
}

fn parse_at(s: &[u8], start: usize) -> Option<DataUrl> {
    let mut i = start + 5;
    let mime_start = i;
    let t = span(s, i, is_type_char);
    if t == 0 || s.get(i + t) != Some(&b'/') {
        return None;
    }
    i += t + 1;
    let st = span(s, i, is_type_char);
    if st == 0 {
        return None;
    }
    i += st;
    loop {
        if s.get(i) != Some(&b';') {
            return None;
        }
        if s.len() >= i + 8 && s[i + 1..i + 8].eq_ignore_ascii_case(b"base64,") {
            break;
        }
        // ;name=value
        let name = span(s, i + 1, |b| !matches!(b, b';' | b'=' | b',') && !is_ws(b));
        if name == 0 || s.get(i + 1 + name) != Some(&b'=') {
            return None;
        }
        let value = span(s, i + 2 + name, |b| !matches!(b, b';' | b',') && !is_ws(b));
        if value == 0 {
            return None;
        }
        i += 2 + name + value;
    }
    let mime_end = i;
    i += 8;
    let p0 = i;
    let head = span(s, i, is_b64);
    i += head;
    let mut payload_chars = head;
    let mut marker = None;
    let ws1 = span(s, i, is_ws);
    if let Some((mlen, n)) = marker_at(s, i + ws1) {
        let mut j = i + ws1 + mlen;
        j += span(s, j, is_ws);
        let tail = span(s, j, is_b64);
        j += tail;
        payload_chars += tail;
        marker = Some(n);
        i = j;
    }
    let payload_end = i;
    let canonical = marker.is_none() && {
        let p = &s[p0..payload_end];
        let pad = p.iter().rev().take_while(|&&b| b == b'=').count();
        !p.is_empty()
            && p.len().is_multiple_of(4)
            && pad <= 2
            && !p[..p.len() - pad].contains(&b'=')
    };
    let ws = span(s, i, is_ws);
    let end = if s.get(i + ws) == Some(&b')') {
        i + ws + 1
    } else {
        i
    };
    Some(DataUrl {
        mime_start,
        mime_end,
        payload_end,
        payload_chars,
        marker,
        canonical,
        end,
    })
}

/// Replaces every inline data URL by `[data URL omitted: <mime>, <n> base64 chars]`
/// (spec: snapcompact §6.3). Linear in the input length.
pub fn elide_data_urls(text: &str, mode: Elision) -> Cow<'_, str> {
    let s = text.as_bytes();
    let mut out = String::new();
    let mut emitted = 0usize;
    let mut search = 0usize;
    while let Some(rel) = memchr::memchr(b':', &s[search..]) {
        let colon = search + rel;
        search = colon + 1;
        if colon < 4 || !s[colon - 4..colon].eq_ignore_ascii_case(b"data") {
            continue;
        }
        let start = colon - 4;
        if start < emitted {
            continue;
        }
        let Some(url) = parse_at(s, start) else {
            continue;
        };
        let replace = match mode {
            Elision::Archive => true,
            Elision::Source => {
                url.marker.is_some() || url.canonical || url.payload_chars >= DAMAGE_FLOOR
            }
        };
        if !replace {
            continue;
        }
        let n = url.payload_chars as u64 + url.marker.unwrap_or(0);
        // The mime is ASCII (type chars and parameter tokens without whitespace), but a
        // parameter may hold any non-ASCII text: slice on char boundaries only.
        let mime = text.get(url.mime_start..url.mime_end).unwrap_or("");
        let placeholder = format!("[data URL omitted: {mime}, {n} base64 chars]");
        // Markdown image/link wrapper: `![label](data:…)` collapses whole.
        let mut cut = start;
        let mut keep_tail = url.end > url.payload_end;
        let mut before = start;
        while before > emitted && is_ws(s[before - 1]) {
            before -= 1;
        }
        if url.end > url.payload_end && before >= emitted + 2 && &s[before - 2..before] == b"](" {
            let close = before - 2;
            let mut j = close;
            let mut open = None;
            while j > emitted {
                j -= 1;
                match s[j] {
                    b']' | b'\n' => break,
                    b'[' => open = Some(j),
                    _ => {}
                }
            }
            if let Some(o) = open {
                cut = if o > emitted && s[o - 1] == b'!' {
                    o - 1
                } else {
                    o
                };
                keep_tail = false;
            }
        }
        out.push_str(&text[emitted..cut]);
        out.push_str(&placeholder);
        if keep_tail {
            out.push_str(&text[url.payload_end..url.end]);
        }
        emitted = url.end;
        search = url.end;
    }
    if emitted == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[emitted..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(s: &str) -> String {
        elide_data_urls(s, Elision::Source).into_owned()
    }

    #[test]
    fn canonical_payloads_are_replaced() {
        assert_eq!(
            src("see data:image/png;base64,QUFBQQ== end"),
            "see [data URL omitted: image/png, 8 base64 chars] end"
        );
        assert_eq!(
            src("x DATA:IMAGE/PNG;BASE64,QUFB y"),
            "x [data URL omitted: IMAGE/PNG, 4 base64 chars] y"
        );
        assert_eq!(
            src("data:text/plain;charset=utf-8;base64,aGk="),
            "[data URL omitted: text/plain;charset=utf-8, 4 base64 chars]"
        );
    }

    #[test]
    fn short_prose_is_left_alone_in_source_mode() {
        assert_eq!(
            src("data:image/png;base64,abc"),
            "data:image/png;base64,abc"
        );
        assert_eq!(
            elide_data_urls("data:image/png;base64,abc", Elision::Archive),
            "[data URL omitted: image/png, 3 base64 chars]"
        );
        assert_eq!(
            elide_data_urls("data:image/png;base64,", Elision::Archive),
            "[data URL omitted: image/png, 0 base64 chars]"
        );
        let long = format!("data:image/png;base64,{}", "a".repeat(41));
        assert_eq!(src(&long), "[data URL omitted: image/png, 41 base64 chars]");
    }

    /// Spec §11 case 91.
    #[test]
    fn markers_restore_the_original_size() {
        assert_eq!(
            elide_data_urls(
                "data:image/png;base64,QUFB [...900ch elided...] QUFB",
                Elision::Archive
            ),
            "[data URL omitted: image/png, 908 base64 chars]"
        );
        assert_eq!(
            src("data:image/png;base64,QUFB […900ch elided…] QUFB"),
            "[data URL omitted: image/png, 908 base64 chars]"
        );
    }

    #[test]
    fn markdown_wrappers_collapse() {
        assert_eq!(
            src("a ![shot](data:image/png;base64,QUFBQQ==) b"),
            "a [data URL omitted: image/png, 8 base64 chars] b"
        );
        assert_eq!(
            src("(see data:image/png;base64,QUFBQQ==)"),
            "(see [data URL omitted: image/png, 8 base64 chars])"
        );
        assert_eq!(
            src("![shot](data:image/png;base64,QUFBQQ== rest"),
            "![shot]([data URL omitted: image/png, 8 base64 chars] rest"
        );
    }

    #[test]
    fn linear_on_bracket_floods() {
        let text = format!("{};base64,", "[".repeat(80_000));
        assert_eq!(src(&text), text);
        let text = format!("{}](data:image/png;base64,QUFBQQ==)", "[".repeat(80_000));
        assert_eq!(src(&text), "[data URL omitted: image/png, 8 base64 chars]");
    }
}
