//! `planArchive` (spec: snapcompact §9.3): the verbatim text edges around a foveated imaged
//! middle, and the pages each tier prints.

use super::turns::opens_in_user;
use crate::archive::{HQ_EDGE_FRAMES, TEXT_EDGE_PAGES};
use crate::render::shape::catalogue::Shape;
use crate::render::text::cells::{paginate_cells, wide_cells};
use crate::render::text::unicode::utf16_len;
use crate::render::text::wrap::wrap;

/// One planned frame of the imaged middle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedPage {
    /// The page text (normalized; toggles as they fall).
    pub text: String,
    /// Printed in the dense (LQ) companion shape, not the legible (HQ) one.
    pub dense: bool,
}

/// What `planArchive` decides (spec: snapcompact §9.3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArchiveLayout {
    pub text_head: String,
    pub pages: Vec<PlannedPage>,
    pub text_tail: String,
    /// The kept source: head, the kept middle and tail (what the next compaction re-renders).
    pub kept_text: String,
    /// Characters (UTF-16 units) of middle history dropped to fit `max_frames`.
    pub truncated_chars: u64,
    /// The dropped middle history, oldest first (doc pages with their line breaks as
    /// spaces), and whether it opens inside a `¶user:` scope: the user turns in it are kept
    /// as text ([`retained_user_turns`](super::retained_user_turns)).
    pub dropped: String,
    pub dropped_opens_in_user: bool,
}

/// Byte offset after the first `units` UTF-16 units, never inside a character.
fn utf16_prefix_end(s: &str, units: usize) -> usize {
    let mut n = 0;
    for (i, c) in s.char_indices() {
        if n + c.len_utf16() > units {
            return i;
        }
        n += c.len_utf16();
    }
    s.len()
}

/// Byte offset where the last `units` UTF-16 units begin, never inside a character.
fn utf16_suffix_start(s: &str, units: usize) -> usize {
    let mut n = 0;
    for (i, c) in s.char_indices().rev() {
        if n + c.len_utf16() > units {
            return i + c.len_utf8();
        }
        n += c.len_utf16();
    }
    0
}

pub(super) fn ulen(s: &str) -> u64 {
    utf16_len(s) as u64
}

/// Splits `text` into pages of `shape` (grid: by cells; doc: wrapped line groups).
fn grid_pages<'t>(text: &'t str, shape: &Shape) -> Vec<&'t str> {
    let geo = shape.geometry();
    paginate_cells(
        text,
        geo.capacity.max(1),
        geo.cols.max(1),
        wide_cells(shape.font),
    )
}

/// `planArchive(text, high, low, maxFrames)` (spec: snapcompact §9.3). `high` and `low`
/// carry their frame size. The text head and tail are one HQ capacity each (UTF-16 units,
/// cut on character boundaries); the middle is imaged: all HQ when it fits `max_frames`,
/// else up to [`HQ_EDGE_FRAMES`] HQ frames at each end around a dense LQ centre whose
/// oldest pages are dropped first. Doc shapes are not foveated: the first page and the
/// newest `max_frames − 1` are kept.
pub fn plan_archive(text: &str, high: &Shape, low: &Shape, max_frames: usize) -> ArchiveLayout {
    let edge = TEXT_EDGE_PAGES * high.geometry().capacity as usize;
    let total = utf16_len(text);
    if total <= 2 * edge {
        return ArchiveLayout {
            text_head: text.to_string(),
            kept_text: text.to_string(),
            ..ArchiveLayout::default()
        };
    }
    let head_end = utf16_prefix_end(text, edge);
    let tail_start = utf16_suffix_start(text, edge).max(head_end);
    let (head, middle, tail) = (
        &text[..head_end],
        &text[head_end..tail_start],
        &text[tail_start..],
    );
    if max_frames < 1 {
        return ArchiveLayout {
            text_head: head.to_string(),
            text_tail: tail.to_string(),
            kept_text: format!("{head}{tail}"),
            truncated_chars: ulen(middle),
            pages: Vec::new(),
            dropped: middle.to_string(),
            dropped_opens_in_user: opens_in_user(head),
        };
    }
    let mut out = ArchiveLayout {
        text_head: head.to_string(),
        text_tail: tail.to_string(),
        ..ArchiveLayout::default()
    };
    if high.is_doc() {
        let size = high.frame_size;
        let pages = shape_pages_raw(middle, high, size);
        if pages.len() > max_frames {
            let keep_tail = max_frames - 1;
            let dropped = &pages[1..pages.len() - keep_tail];
            out.truncated_chars = dropped.iter().map(|p| ulen(p)).sum();
            let flat = |p: &String| p.replace('\n', " ");
            out.dropped = dropped.iter().map(flat).collect::<Vec<_>>().join(" ");
            out.dropped_opens_in_user = opens_in_user(&format!("{head}{}", flat(&pages[0])));
            let kept: Vec<String> = std::iter::once(&pages[0])
                .chain(&pages[pages.len() - keep_tail..])
                .cloned()
                .collect();
            let flat: Vec<String> = kept.iter().map(|p| p.replace('\n', " ")).collect();
            out.kept_text = format!("{head}{}{tail}", flat.join(" "));
            out.pages = kept
                .into_iter()
                .map(|text| PlannedPage { text, dense: false })
                .collect();
        } else {
            out.kept_text = text.to_string();
            out.pages = pages
                .into_iter()
                .map(|text| PlannedPage { text, dense: false })
                .collect();
        }
        return out;
    }
    let hi = grid_pages(middle, high);
    if hi.len() <= max_frames {
        out.kept_text = text.to_string();
        out.pages = hi
            .into_iter()
            .map(|p| PlannedPage {
                text: p.to_string(),
                dense: false,
            })
            .collect();
        return out;
    }
    // Foveate: E legible frames at each end, a dense centre, oldest centre dropped first.
    let e = HQ_EDGE_FRAMES.min((max_frames - 1) / 2);
    let head_pages = &hi[..e];
    let tail_pages = &hi[hi.len() - e..];
    let head_len: usize = head_pages.iter().map(|p| p.len()).sum();
    let tail_len: usize = tail_pages.iter().map(|p| p.len()).sum();
    let centre = &middle[head_len..middle.len() - tail_len];
    let lo = grid_pages(centre, low);
    let budget = max_frames - 2 * e;
    let drop = lo.len().saturating_sub(budget);
    out.truncated_chars = lo[..drop].iter().map(|p| ulen(p)).sum();
    out.dropped = lo[..drop].concat();
    let dropped_at = head_end + head_len;
    out.dropped_opens_in_user = opens_in_user(&text[..dropped_at]);
    let kept_lo = &lo[drop..];
    let mut kept = String::with_capacity(text.len());
    kept.push_str(head);
    for p in head_pages.iter().chain(kept_lo).chain(tail_pages) {
        kept.push_str(p);
    }
    kept.push_str(tail);
    out.kept_text = kept;
    out.pages = head_pages
        .iter()
        .map(|p| (p, false))
        .chain(kept_lo.iter().map(|p| (p, true)))
        .chain(tail_pages.iter().map(|p| (p, false)))
        .map(|(p, dense)| PlannedPage {
            text: p.to_string(),
            dense,
        })
        .collect();
    out
}

/// Doc pages (`docPages`): wrapped lines in groups of `2 × rows`, joined by `\n`, without
/// the finishing pass (the render pass applies it with the carried dim state).
fn shape_pages_raw(text: &str, shape: &Shape, size: u32) -> Vec<String> {
    let geo = shape.geometry_at(size);
    let lines = wrap(text, geo.cols, wide_cells(shape.font));
    let per_page = (2 * geo.rows).max(1) as usize;
    lines.chunks(per_page).map(|c| c.join("\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_edges_do_not_split_pairs() {
        let s = "a😀b";
        assert_eq!(utf16_prefix_end(s, 2), 1);
        assert_eq!(utf16_suffix_start(s, 2), 5);
    }
}
