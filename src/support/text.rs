//! Character iteration for the text loops of the library.
//!
//! Built for size (the package's `.wasm` used `opt-level = "z"` until 2026-12-01;
//! docs/decisions/size-budget.md), LLVM keeps `str::Chars::next` an out-of-line call per
//! character. These iterators inline the ASCII step and leave only multi-byte sequences to a call.

/// JavaScript's `\s` / `trim` whitespace: Rust's `White_Space` plus U+FEFF, minus U+0085.
pub(crate) fn is_js_whitespace(c: char) -> bool {
    c == '\u{feff}' || (c != '\u{85}' && c.is_whitespace())
}

/// The characters of `s`, like `s.chars()`, with the ASCII step always inlined.
pub(crate) fn chars(s: &str) -> Chars<'_> {
    Chars {
        bytes: s.as_bytes(),
        at: 0,
    }
}

/// The character at byte offset `at` of `s` (a character boundary), like
/// `s[at..].chars().next()`; `None` at the end.
#[inline(always)]
pub(crate) fn char_at(s: &str, at: usize) -> Option<char> {
    Chars {
        bytes: s.as_bytes(),
        at,
    }
    .next()
}

/// The characters of `s` with their byte offsets, like `s.char_indices()` (see [`chars`]).
pub(crate) fn char_indices(s: &str) -> CharIndices<'_> {
    CharIndices(chars(s))
}

/// Iterator of [`chars`].
#[derive(Clone)]
pub(crate) struct Chars<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Chars<'_> {
    /// The multi-byte sequence led by `lead` (the bytes are a `str`, so it is complete).
    #[inline(never)]
    fn decode(&mut self, lead: u8) -> char {
        let (len, init) = match lead {
            0xC0..=0xDF => (2, lead & 0x1F),
            0xE0..=0xEF => (3, lead & 0x0F),
            _ => (4, lead & 0x07),
        };
        let tail = self
            .bytes
            .get(self.at + 1..self.at + len)
            .unwrap_or_default();
        let cp = tail
            .iter()
            .fold(u32::from(init), |cp, &b| cp << 6 | u32::from(b & 0x3F));
        self.at += len;
        char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER)
    }
}

impl Iterator for Chars<'_> {
    type Item = char;

    #[inline(always)]
    fn next(&mut self) -> Option<char> {
        let &lead = self.bytes.get(self.at)?;
        if lead < 0x80 {
            self.at += 1;
            return Some(lead as char);
        }
        Some(self.decode(lead))
    }
}

/// Iterator of [`char_indices`].
#[derive(Clone)]
pub(crate) struct CharIndices<'a>(Chars<'a>);

impl Iterator for CharIndices<'_> {
    type Item = (usize, char);

    #[inline(always)]
    fn next(&mut self) -> Option<(usize, char)> {
        let at = self.0.at;
        self.0.next().map(|c| (at, c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Our iterators give what `str::chars` / `char_indices` give, for every UTF-8 length.
    #[test]
    fn chars_match_std() {
        for s in [
            "",
            "abc",
            "é→😀x",
            "\u{7F}\u{80}\u{7FF}\u{800}\u{FFFF}\u{10000}\u{10FFFF}",
            "a\nb\u{0}",
        ] {
            assert_eq!(chars(s).collect::<String>(), s);
            for (i, c) in s.char_indices() {
                assert_eq!(char_at(s, i), Some(c));
            }
            assert_eq!(char_at(s, s.len()), None);
            assert!(char_indices(s).eq(s.char_indices()), "{s:?}");
        }
    }
}
