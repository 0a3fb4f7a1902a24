//! Character classes used by normalization and cell accounting.
//!
//! The property tables are generated from the Unicode Character Database by
//! `fonts/generate.py` (see `unicode_tables.rs`); the small fixed sets (JavaScript `\s`,
//! East Asian wide ranges) are restated from the spec.

use crate::render::text::unicode_tables::{DROPPED, EXTENDED_PICTOGRAPHIC, FORMAT, NFKD_FOLD};
use std::sync::OnceLock;

/// Shift-out: dim ink on (spec: snapcompact §2 `DIM_ON`). Zero-width.
pub const DIM_ON: char = '\u{0E}';
/// Shift-in: dim ink off (spec: snapcompact §2 `DIM_OFF`). Zero-width.
pub const DIM_OFF: char = '\u{0F}';
/// Printed in place of any whitespace run that held a line break (spec: snapcompact §2).
pub const NEWLINE_GLYPH: char = '\u{2588}';

/// Reads the LEB128 number at `*at` and moves past it.
fn varint(b: &[u8], at: &mut usize) -> u32 {
    let (mut v, mut shift) = (0u32, 0);
    loop {
        let x = b[*at];
        *at += 1;
        v |= ((x & 0x7F) as u32) << shift;
        if x < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// Expands a range table of `unicode_tables.rs`: per range, the gap from the previous
/// range's end + 1 and last − first, as LEB128 numbers.
fn ranges(blob: &[u8]) -> Vec<(u32, u32)> {
    let (mut out, mut at, mut after) = (Vec::new(), 0, 0);
    while at < blob.len() {
        let lo = after + varint(blob, &mut at);
        let hi = lo + varint(blob, &mut at);
        out.push((lo, hi));
        after = hi + 1;
    }
    out
}

type Table = OnceLock<Vec<(u32, u32)>>;

fn in_table(table: &'static Table, blob: &[u8], cp: u32) -> bool {
    table
        .get_or_init(|| ranges(blob))
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// The NFKD folds, expanded: code points in order, and where each one's fold ends in `text`.
struct Folds {
    cps: Vec<u32>,
    ends: Vec<u32>,
    text: String,
}

/// Expands `NFKD_FOLD`: per run, its first code point (gap from the previous run's end), its
/// length, the fold's length and the fold in Latin-1; the code points of a longer run fold
/// to consecutive single characters.
fn folds() -> &'static Folds {
    static FOLDS: OnceLock<Folds> = OnceLock::new();
    FOLDS.get_or_init(|| {
        let b = NFKD_FOLD;
        let mut f = Folds {
            cps: Vec::new(),
            ends: Vec::new(),
            text: String::new(),
        };
        let (mut at, mut after) = (0, 0);
        while at < b.len() {
            let first = after + varint(b, &mut at);
            let n = varint(b, &mut at);
            let len = b[at] as usize;
            let fold = &b[at + 1..at + 1 + len];
            at += 1 + len;
            for k in 0..n {
                f.cps.push(first + k);
                if n == 1 {
                    f.text.extend(fold.iter().map(|&c| c as char));
                } else {
                    f.text.push((fold[0] as u32 + k) as u8 as char);
                }
                f.ends.push(f.text.len() as u32);
            }
            after = first + n;
        }
        f
    })
}

/// JavaScript `\s`: ASCII whitespace, NBSP, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F,
/// U+205F, U+3000, U+FEFF (spec: snapcompact §6.4 step 2).
pub fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// General category Cf.
pub fn is_format(c: char) -> bool {
    static T: Table = OnceLock::new();
    (c as u32) >= 0xAD && in_table(&T, FORMAT, c as u32)
}

/// Categories Cc, Mn, Me (Cs cannot occur in a Rust string).
pub fn is_dropped(c: char) -> bool {
    // Below U+0300 (the first combining mark) only the controls are in the table.
    if (c as u32) < 0x300 {
        return c.is_control();
    }
    static T: Table = OnceLock::new();
    in_table(&T, DROPPED, c as u32)
}

/// Emoji property Extended_Pictographic.
pub fn is_extended_pictographic(c: char) -> bool {
    static T: Table = OnceLock::new();
    (c as u32) >= 0xA9 && in_table(&T, EXTENDED_PICTOGRAPHIC, c as u32)
}

/// The NFKD fold of §6.4 step 4.7, if the character has one.
pub fn nfkd_fold(c: char) -> Option<&'static str> {
    let f = folds();
    let i = f.cps.binary_search(&(c as u32)).ok()?;
    let start = if i == 0 { 0 } else { f.ends[i - 1] as usize };
    Some(&f.text[start..f.ends[i] as usize])
}

/// East Asian Wide/Fullwidth ranges that take two cells in bitmap-font frames (spec:
/// snapcompact §6.9).
pub fn is_wide(c: char) -> bool {
    let cp = c as u32;
    if cp < 0x1100 {
        return false;
    }
    matches!(cp,
        0x1100..=0x115F
        | 0x2E80..=0x2EFF
        | 0x2F00..=0x2FDF
        | 0x3000..=0x303E
        | 0x3041..=0x33FF
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xA000..=0xA4CF
        | 0xAC00..=0xD7A3
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x20000..=0x2FFFD
        | 0x30000..=0x3FFFD)
}

/// Kept as is by normalization: U+0020–U+007E and U+00A0–U+00FF (§6.4 step 4.1).
pub fn is_latin(c: char) -> bool {
    matches!(c, ' '..='~' | '\u{A0}'..='\u{FF}')
}

/// Length of a string in UTF-16 code units, the unit JavaScript's `length` counts (spec:
/// snapcompact §14.1).
pub fn utf16_len(s: &str) -> usize {
    crate::support::text::chars(s).map(char::len_utf16).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shortcut below U+0300 agrees with the table.
    #[test]
    fn dropped_shortcut_matches_the_table() {
        static T: Table = OnceLock::new();
        for c in (0..0x300).filter_map(char::from_u32) {
            assert_eq!(is_dropped(c), in_table(&T, DROPPED, c as u32), "{c:?}");
        }
    }

    #[test]
    fn classes() {
        assert!(is_format('\u{200B}'));
        assert!(is_format('\u{FEFF}'));
        assert!(is_format('\u{AD}'));
        assert!(!is_format('a'));
        assert!(is_dropped('\u{0301}'));
        assert!(is_dropped('\u{FE0F}'));
        assert!(is_dropped('\u{07}'));
        assert!(!is_dropped('a'));
        assert!(is_extended_pictographic('\u{1F39E}'));
        assert!(is_extended_pictographic('\u{2122}'));
        assert!(!is_extended_pictographic('A'));
        assert_eq!(nfkd_fold('\u{FB01}'), Some("fi"));
        assert_eq!(nfkd_fold('\u{2153}'), Some("1/3"));
        assert_eq!(nfkd_fold('\u{1D407}'), Some("H"));
        assert_eq!(nfkd_fold('\u{2122}'), Some("TM"));
        assert_eq!(nfkd_fold('a'), None);
        assert!(is_wide('你'));
        assert!(is_wide('\u{AC00}'));
        assert!(!is_wide('a'));
        assert_eq!(utf16_len("a\u{1F600}"), 3);
    }
}
