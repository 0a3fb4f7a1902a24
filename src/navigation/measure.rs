//! Sizing a tool result's text without decoding it (spec: compaction §7.3: the estimate of a
//! tool result is the byte estimate of its text cut to 2,000 characters, marker included).
//! One pass over the message JSON finds the flags and measures the text blocks, escapes
//! and all, in UTF-16 code units (the cap) and UTF-8 bytes (the estimate).

use crate::support::json::scan::{key_is, Scanner};

/// The size of a text, and of its first `limit` code units once it is longer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TextSize {
    /// UTF-16 code units.
    pub units: usize,
    /// UTF-8 bytes.
    pub bytes: usize,
    /// UTF-8 bytes of the first `limit` units, once `units > limit`. A surrogate pair cut
    /// in two leaves U+FFFD (3 bytes), as `truncate_for_summary` writes it.
    pub cut_bytes: Option<usize>,
    limit: usize,
}

impl TextSize {
    pub fn new(limit: usize) -> TextSize {
        TextSize {
            units: 0,
            bytes: 0,
            cut_bytes: None,
            limit,
        }
    }

    fn char(&mut self, units: usize, bytes: usize) {
        if self.cut_bytes.is_none() && self.units + units > self.limit {
            let split = if self.units < self.limit { 3 } else { 0 };
            self.cut_bytes = Some(self.bytes + split);
        }
        self.units += units;
        self.bytes += bytes;
    }

    /// Text without escapes (valid UTF-8: session lines are validated when loaded).
    fn run(&mut self, s: &[u8]) -> Option<()> {
        // A byte is at most one unit: runs that cannot reach the limit add up in bulk.
        if self.cut_bytes.is_some() || self.units + s.len() <= self.limit {
            self.units += utf16_units(s);
            self.bytes += s.len();
        } else if s.is_ascii() {
            self.cut_bytes = Some(self.bytes + (self.limit - self.units));
            self.units += s.len();
            self.bytes += s.len();
        } else {
            for c in std::str::from_utf8(s).ok()?.chars() {
                self.char(c.len_utf16(), c.len_utf8());
            }
        }
        Some(())
    }

    /// Measures the JSON string whose opening quote is at `b[i - 1]`; returns the index
    /// after its closing quote (`None` when malformed).
    pub fn string_body(&mut self, b: &[u8], mut i: usize) -> Option<usize> {
        loop {
            let next = i + memchr::memchr2(b'"', b'\\', b.get(i..)?)?;
            self.run(&b[i..next])?;
            if b[next] == b'"' {
                return Some(next + 1);
            }
            if b.get(next + 1) != Some(&b'u') {
                self.char(1, 1);
                i = next + 2;
                continue;
            }
            let cp = hex4(b, next + 2)?;
            let pair = (0xD800..0xDC00).contains(&cp)
                && b.get(next + 6..next + 8) == Some(b"\\u")
                && hex4(b, next + 8).is_some_and(|lo| (0xDC00..0xE000).contains(&lo));
            if pair {
                self.char(2, 4);
                i = next + 12;
                continue;
            }
            // A lone surrogate reaches the provider as U+FFFD: 3 bytes, like U+0800 up.
            let bytes = match cp {
                0..=0x7F => 1,
                0x80..=0x7FF => 2,
                _ => 3,
            };
            self.char(1, bytes);
            i = next + 6;
        }
    }

    /// The byte estimate of the text cut to `limit` units, truncation marker included
    /// (what `truncate_for_summary` returns); 0 without text.
    pub fn tokens(&self) -> u64 {
        let bytes = match self.cut_bytes {
            Some(cut) if self.units > self.limit => {
                let removed = self.units - self.limit;
                cut + format!("\n\n[... {removed} more characters truncated]").len()
            }
            _ => self.bytes,
        };
        (bytes as u64 + 3) >> 2
    }
}

/// UTF-16 length of UTF-8 bytes: one unit per sequence, two for a 4-byte one.
fn utf16_units(s: &[u8]) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    s.iter()
        .map(|&c| usize::from(c & 0xC0 != 0x80) + usize::from(c >= 0xF0))
        .sum()
}

fn hex4(b: &[u8], i: usize) -> Option<u32> {
    let digits = std::str::from_utf8(b.get(i..i + 4)?).ok()?;
    u32::from_str_radix(digits, 16).ok()
}

/// What the estimate needs of a tool result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ToolResultScan {
    pub useless: bool,
    pub is_error: bool,
    pub context_omitted: bool,
    /// The text blocks (or string content), concatenated.
    pub text: TextSize,
}

impl ToolResultScan {
    /// The estimate of `typed_tool_result_tokens`, from the scan.
    pub fn tokens(&self) -> Option<u64> {
        if self.useless && !self.is_error {
            None
        } else if self.context_omitted {
            Some(0)
        } else {
            Some(self.text.tokens())
        }
    }
}

/// Scans a tool result's JSON: `None` when it is not a well-formed object.
pub(super) fn scan_tool_result(b: &[u8], limit: usize) -> Option<ToolResultScan> {
    let mut sc = Scanner::new();
    let mut out = ToolResultScan {
        useless: false,
        is_error: false,
        context_omitted: false,
        text: TextSize::new(limit),
    };
    let start = sc.skip_ws(b, 0);
    object(&mut sc, b, start, |sc, key, at| {
        if key_is(key, "content") {
            // The last of repeated keys wins, as in `JSON.parse`.
            out.text = TextSize::new(limit);
            return content(sc, b, at, &mut out.text);
        }
        let end = sc.skip_value(b, at).ok()?;
        let value = &b[at..end];
        if key_is(key, "useless") {
            out.useless = value == b"true";
        } else if key_is(key, "isError") {
            out.is_error = value == b"true";
        } else if key_is(key, "contextOmitted") {
            let v = crate::support::json::parse_bytes(value);
            out.context_omitted = crate::session::message::truthy(v.as_ref());
        }
        Some(end)
    })?;
    Some(out)
}

/// Walks the members of the object at `b[start]`: `value(scanner, raw key, value start)`
/// consumes each value and returns its end. Returns the index after the object.
fn object<'b>(
    sc: &mut Scanner,
    b: &'b [u8],
    start: usize,
    mut value: impl FnMut(&mut Scanner, &'b [u8], usize) -> Option<usize>,
) -> Option<usize> {
    if b.get(start) != Some(&b'{') {
        return None;
    }
    let mut i = sc.skip_ws(b, start + 1);
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = sc.skip_string_body(b, i + 1).ok()?;
        let key = &b[i + 1..key_end - 1];
        let colon = sc.skip_ws(b, key_end);
        if b.get(colon) != Some(&b':') {
            return None;
        }
        let at = sc.skip_ws(b, colon + 1);
        let end = value(sc, key, at)?;
        i = sc.skip_ws(b, end);
        match b.get(i)? {
            b',' => i = sc.skip_ws(b, i + 1),
            b'}' => return Some(i + 1),
            _ => return None,
        }
    }
}

/// Measures `content`: a string, or the `text` of its `text` blocks.
fn content(sc: &mut Scanner, b: &[u8], at: usize, text: &mut TextSize) -> Option<usize> {
    match b.get(at)? {
        b'"' => text.string_body(b, at + 1),
        b'[' => {
            let mut i = sc.skip_ws(b, at + 1);
            if b.get(i) == Some(&b']') {
                return Some(i + 1);
            }
            loop {
                let end = if b.get(i) == Some(&b'{') {
                    block(sc, b, i, text)?
                } else {
                    sc.skip_value(b, i).ok()?
                };
                i = sc.skip_ws(b, end);
                match b.get(i)? {
                    b',' => i = sc.skip_ws(b, i + 1),
                    b']' => return Some(i + 1),
                    _ => return None,
                }
            }
        }
        _ => sc.skip_value(b, at).ok(),
    }
}

/// Measures the `text` of a `text` block. Writers put `type` first, so the text is
/// measured as it is crossed; a `text` seen before its `type` is measured afterwards.
fn block(sc: &mut Scanner, b: &[u8], at: usize, text: &mut TextSize) -> Option<usize> {
    let mut is_text = false;
    let mut measured = false;
    let mut pending = None;
    let end = object(sc, b, at, |sc, key, v| {
        if key_is(key, "type") {
            let end = sc.skip_value(b, v).ok()?;
            is_text = &b[v..end] == b"\"text\"";
            return Some(end);
        }
        if key_is(key, "text") && b.get(v) == Some(&b'"') {
            if is_text && !measured {
                measured = true;
                return text.string_body(b, v + 1);
            }
            pending = Some(v);
        }
        sc.skip_value(b, v).ok()
    })?;
    if let (true, false, Some(v)) = (is_text, measured, pending) {
        text.string_body(b, v + 1)?;
    }
    Some(end)
}
