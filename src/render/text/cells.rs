//! Cell accounting shared by the text side and the rasterizer: it must agree exactly, or
//! pages overflow their frames (spec: snapcompact §6.9, §7.3, §14.8).

use crate::render::font::FontName;
use crate::render::text::unicode::{is_wide, DIM_OFF, DIM_ON};
use crate::support::text::{char_indices, chars};

/// Do wide (CJK) characters take two cells? Yes in every bitmap-font frame; in frames
/// printed wholly in the fallback font every character takes one (spec: snapcompact §6.9).
pub fn wide_cells(font: FontName) -> bool {
    font != FontName::Unifont
}

/// Cells a character takes: toggles and the doc line separator 0, wide characters 2 when
/// `wide`, everything else 1.
#[inline]
pub fn cells_of(c: char, wide: bool) -> u32 {
    if c == DIM_ON || c == DIM_OFF || c == '\n' {
        0
    } else if wide && is_wide(c) {
        2
    } else {
        1
    }
}

/// Width of a string in cells.
pub fn cell_len(s: &str, wide: bool) -> u32 {
    chars(s).map(|c| cells_of(c, wide)).sum()
}

/// Where a `cells`-wide character lands when the cursor is at `cursor`: a 2-cell character
/// whose start is the last column of a row is pushed to the next row (spec: §6.9).
#[inline]
pub fn place(cursor: u32, cells: u32, cols: u32) -> u32 {
    if cells == 2 && cols >= 2 && cursor % cols == cols - 1 {
        cursor + 1
    } else {
        cursor
    }
}

/// `paginateCells(text, capacity, cols, wide)` (spec: snapcompact §6.9): contiguous pages
/// that each fit `capacity` cells; toggles stay on the page they follow; no pages for
/// empty or toggle-only text; a single over-wide character still gets a page.
pub fn paginate_cells(text: &str, capacity: u32, cols: u32, wide: bool) -> Vec<&str> {
    let mut pages = Vec::new();
    let mut start = 0;
    let mut cursor = 0u32;
    let mut visible = false;
    for (i, c) in char_indices(text) {
        let n = cells_of(c, wide);
        if n == 0 {
            continue;
        }
        let mut pos = place(cursor, n, cols);
        if pos + n > capacity && visible {
            pages.push(&text[start..i]);
            start = i;
            pos = 0;
        }
        cursor = pos + n;
        visible = true;
    }
    if visible {
        pages.push(&text[start..]);
    }
    pages
}

/// Visible characters of a grid page that fit `capacity` (stop at the first that does not):
/// the `chars` a grid frame reports (spec: snapcompact §8).
pub fn grid_chars(page: &str, capacity: u32, cols: u32, wide: bool) -> u32 {
    let mut cursor = 0u32;
    let mut count = 0;
    for c in chars(page) {
        let n = cells_of(c, wide);
        if n == 0 {
            continue;
        }
        let pos = place(cursor, n, cols);
        if pos + n > capacity {
            break;
        }
        cursor = pos + n;
        count += 1;
    }
    count
}

/// Cells the whole page advances through, padding included (spec: snapcompact §7.8).
pub fn grid_cursor(page: &str, cols: u32, wide: bool) -> u64 {
    let mut cursor = 0u64;
    for c in chars(page) {
        let n = cells_of(c, wide);
        if n == 0 {
            continue;
        }
        if n == 2 && cols >= 2 && cursor % cols as u64 == cols as u64 - 1 {
            cursor += 1;
        }
        cursor += n as u64;
    }
    cursor
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_wide_at_row_end() {
        // 你 at the last column of a 3-column row moves to the next row.
        assert_eq!(place(2, 2, 3), 3);
        assert_eq!(place(1, 2, 3), 1);
        assert_eq!(place(2, 1, 3), 2);
    }

    /// Spec §11 case 34 (cell side): 8on16 @64 has capacity 32 on 8 columns.
    #[test]
    fn paginates_wide_text() {
        assert_eq!(paginate_cells(&"你".repeat(16), 32, 8, true).len(), 1);
        assert_eq!(paginate_cells(&"你".repeat(17), 32, 8, true).len(), 2);
        assert_eq!(paginate_cells(&"a".repeat(32), 32, 8, true).len(), 1);
        assert_eq!(paginate_cells(&"你".repeat(16), 16, 4, false).len(), 1);
        assert!(paginate_cells("", 10, 5, true).is_empty());
        assert!(paginate_cells("\u{e}\u{f}", 10, 5, true).is_empty());
        // Toggles stay with the page they follow.
        assert_eq!(
            paginate_cells("ab\u{f}cd", 2, 2, true),
            vec!["ab\u{f}", "cd"]
        );
        // A character wider than the page still gets one.
        assert_eq!(paginate_cells("你a", 1, 1, true), vec!["你", "a"]);
    }

    #[test]
    fn counts_chars_that_fit() {
        assert_eq!(grid_chars(&"x".repeat(600), 580, 29, true), 580);
        assert_eq!(grid_chars("a█b", 10, 5, true), 3);
        assert_eq!(grid_cursor("ab你", 3, true), 5);
    }
}
