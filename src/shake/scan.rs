//! Finding the large blocks of a text that shake may elide: fenced code blocks and top-level
//! XML elements, each a whole run of lines (spec: compaction §13 "Shake"; the reference's
//! region finder is the behaviour reference, conformance data in `rules/shake.json`).
//!
//! The rules, line by line (lines split at `\n`; "trimmed" = leading JavaScript whitespace
//! removed):
//! - a trimmed line starting with three backticks or three tildes opens a fence, and the next
//!   such line closes it (any fence marker closes any);
//! - outside a fence, an unindented line that is exactly one lowercase opening tag
//!   (`<name>` or `<name attrs…>`, name of `a-z`, `_`, `-`) pushes it; a trimmed line that is
//!   exactly the closing tag of the innermost open element pops it, and emptying the stack ends
//!   a top-level element;
//! - a fence or element left open at the end yields nothing;
//! - a block spans from the start of its first line to the end of its last line (the newline
//!   after it excluded); where blocks overlap, the one starting first is kept.

use crate::support::text::is_js_whitespace;
use std::ops::Range;

/// The block ranges of `text`, as byte offsets, ascending and disjoint.
pub fn block_ranges(text: &str) -> Vec<Range<usize>> {
    let mut ranges: Vec<Range<usize>> = Vec::new();
    let mut fence: Option<usize> = None;
    let mut tags: Vec<&str> = Vec::new();
    let mut element = 0;
    let mut start = 0;
    for line in text.split('\n') {
        let end = start + line.len();
        let trimmed = line.trim_start_matches(is_js_whitespace);
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            match fence.take() {
                Some(open) => ranges.push(open..end),
                None => fence = Some(start),
            }
        } else if fence.is_none() {
            if let Some(name) = opening_tag(line).filter(|_| trimmed.len() == line.len()) {
                if tags.is_empty() {
                    element = start;
                }
                tags.push(name);
            } else if closing_tag(trimmed).is_some_and(|name| tags.last() == Some(&name)) {
                tags.pop();
                if tags.is_empty() {
                    // A fenced block inside the element closed earlier: the element covers it.
                    while ranges.last().is_some_and(|r| r.start >= element) {
                        ranges.pop();
                    }
                    ranges.push(element..end);
                }
            }
        }
        start = end + 1;
    }
    // Fences cannot hold elements (tags are text inside them), so the ranges are in order.
    ranges
}

/// A tag name: one or more of `a-z`, `_`, `-`, and where it ends.
fn tag_name(s: &str) -> Option<(&str, &str)> {
    let n = s
        .bytes()
        .take_while(|b| b.is_ascii_lowercase() || *b == b'_' || *b == b'-')
        .count();
    (n > 0).then(|| s.split_at(n))
}

/// `<name>` or `<name` + whitespace + anything without `>` + `>`, the whole line.
fn opening_tag(line: &str) -> Option<&str> {
    let (name, rest) = tag_name(line.strip_prefix('<')?)?;
    let attrs = rest.strip_suffix('>')?;
    let simple = attrs.is_empty();
    let with_attrs = attrs.starts_with(is_js_whitespace) && !attrs.contains('>');
    (simple || with_attrs).then_some(name)
}

/// `</name>`, the whole (trimmed) line.
fn closing_tag(line: &str) -> Option<&str> {
    let (name, rest) = tag_name(line.strip_prefix("</")?)?;
    (rest == ">").then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(text: &str) -> Vec<&str> {
        block_ranges(text).into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn fences_and_elements_are_whole_lines() {
        let t = "intro\n```rust\nfn a() {}\n```\nmid\n<notes>\nx\n</notes>\nend";
        assert_eq!(
            blocks(t),
            ["```rust\nfn a() {}\n```", "<notes>\nx\n</notes>"]
        );
    }

    #[test]
    fn any_marker_closes_a_fence_and_indented_fences_count() {
        assert_eq!(blocks("  ~~~\na\n```"), ["  ~~~\na\n```"]);
    }

    #[test]
    fn unterminated_blocks_yield_nothing() {
        assert!(blocks("```\nopen").is_empty());
        assert!(blocks("<a>\nopen").is_empty());
    }

    #[test]
    fn tags_must_be_lowercase_and_openings_unindented() {
        assert!(blocks("<Notes>\nx\n</Notes>").is_empty());
        assert!(blocks(" <a>\nx\n</a>").is_empty());
        // A closing tag may be indented.
        assert_eq!(blocks("<a>\nx\n  </a>"), ["<a>\nx\n  </a>"]);
    }

    #[test]
    fn attributes_need_whitespace_and_no_second_bracket() {
        assert_eq!(blocks("<a href=\"x\">\n</a>"), ["<a href=\"x\">\n</a>"]);
        assert!(blocks("<ab=c>\n</ab=c>").is_empty());
        assert!(blocks("<a x>y>\n</a>").is_empty());
    }

    #[test]
    fn nested_elements_end_at_the_outer_closing_tag() {
        let t = "<a>\n<b>\n</b>\n</a>";
        assert_eq!(blocks(t), [t]);
        // A mismatched closing tag is ignored.
        assert!(blocks("<a>\n</b>").is_empty());
    }

    #[test]
    fn tags_inside_fences_are_text_and_fences_inside_elements_merge() {
        assert_eq!(blocks("```\n<a>\n```\n</a>"), ["```\n<a>\n```"]);
        let t = "<a>\n```\nx\n```\n</a>";
        assert_eq!(blocks(t), [t]);
    }

    #[test]
    fn offsets_are_bytes_of_multibyte_text() {
        let t = "é\n```\n→\n```";
        let r = block_ranges(t);
        assert_eq!(r, vec![3..t.len()]);
    }
}
