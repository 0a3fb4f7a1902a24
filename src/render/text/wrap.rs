//! Greedy word wrap for the two-column doc layout (spec: snapcompact §6.8).

use crate::render::text::cells::cells_of;
use crate::render::text::unicode::is_js_space;
use crate::support::text::{char_indices, chars};

/// `wrap(text, width, wideCells)`: split on whitespace runs; a word longer than `width`
/// cells is cut into width-sized lines (at least one visible character each); other words
/// join the current line with one space while it fits.
pub fn wrap(text: &str, width: u32, wide: bool) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut line_cells = 0u32;
    for word in text.split(is_js_space).filter(|w| !w.is_empty()) {
        let mut word = word;
        let mut word_cells: u32 = chars(word).map(|c| cells_of(c, wide)).sum();
        while word_cells > width {
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
                line_cells = 0;
            }
            let (mut used, mut end, mut visible) = (0u32, 0usize, false);
            for (i, c) in char_indices(word) {
                let n = cells_of(c, wide);
                if used + n > width && visible {
                    break;
                }
                used += n;
                end = i + c.len_utf8();
                visible |= n > 0;
            }
            lines.push(word[..end].to_string());
            word = &word[end..];
            word_cells -= used;
        }
        if word.is_empty() {
            continue;
        }
        if line.is_empty() {
            line.push_str(word);
            line_cells = word_cells;
        } else if line_cells + 1 + word_cells <= width {
            line.push(' ');
            line.push_str(word);
            line_cells += 1 + word_cells;
        } else {
            lines.push(std::mem::replace(&mut line, word.to_string()));
            line_cells = word_cells;
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spec §6.8 tests.
    #[test]
    fn spec_examples() {
        assert_eq!(wrap("aa bb cc dd", 5, false), ["aa bb", "cc dd"]);
        assert_eq!(wrap("one two three", 8, false), ["one two", "three"]);
        assert_eq!(wrap("abcd", 4, false), ["abcd"]);
        assert!(wrap("", 10, false).is_empty());
        assert_eq!(wrap("abcdefghij", 4, false), ["abcd", "efgh", "ij"]);
        assert_eq!(
            wrap("xx abcdefghij yy", 4, false),
            ["xx", "abcd", "efgh", "ij", "yy"]
        );
    }

    #[test]
    fn measures_cells() {
        assert_eq!(wrap("\u{e}ab\u{f} cd", 5, false), ["\u{e}ab\u{f} cd"]);
        assert_eq!(wrap("你好 a", 4, true), ["你好", "a"]);
        assert_eq!(wrap("你好 a", 4, false), ["你好 a"]);
        // A wide char alone wider than the line still gets a line.
        assert_eq!(wrap("你", 1, true), ["你"]);
    }
}
