//! Pagination: normalized text → the exact string printed on each frame (spec:
//! snapcompact §6.9, §8).

use crate::render::shape::catalogue::Shape;
use crate::render::text::cells::{paginate_cells, wide_cells};
use crate::render::text::stopwords::dim_stopwords;
use crate::render::text::unicode::{DIM_OFF, DIM_ON};
use crate::render::text::wrap::wrap;

/// Splits normalized text into page strings at frame size `size`: grid shapes by cells,
/// doc shapes by wrapped lines (`docPages`: groups of `2 × rows` lines joined by `\n`).
/// Each page is finished by [`finish_pages`].
pub fn pages(normalized: &str, shape: &Shape, size: u32) -> Vec<String> {
    let geo = shape.geometry_at(size);
    let wide = wide_cells(shape.font);
    let raw: Vec<String> = if shape.is_doc() {
        let lines = wrap(normalized, geo.cols, wide);
        let per_page = (2 * geo.rows).max(1) as usize;
        lines.chunks(per_page).map(|c| c.join("\n")).collect()
    } else {
        paginate_cells(normalized, geo.capacity.max(1), geo.cols.max(1), wide)
            .into_iter()
            .map(str::to_string)
            .collect()
    };
    finish_pages(raw, shape)
}

/// Number of frames [`pages`] would give, without building the pages (spec: snapcompact §8
/// `frames`).
pub fn page_count(normalized: &str, shape: &Shape, size: u32) -> usize {
    let geo = shape.geometry_at(size);
    let wide = wide_cells(shape.font);
    if shape.is_doc() {
        wrap(normalized, geo.cols, wide)
            .len()
            .div_ceil((2 * geo.rows).max(1) as usize)
    } else {
        paginate_cells(normalized, geo.capacity.max(1), geo.cols.max(1), wide).len()
    }
}

/// Does `text` end inside an open dim span (a DIM_ON after the last DIM_OFF)?
pub fn ends_dim(text: &str) -> bool {
    match (text.rfind(DIM_ON), text.rfind(DIM_OFF)) {
        (Some(on), Some(off)) => on > off,
        (Some(_), None) => true,
        _ => false,
    }
}

/// Re-opens a dim span that the previous page boundary cut (so tool output stays dim on
/// the next frame), then dims stopwords when the shape asks for it. The reference does the
/// re-opening for doc pages and archives but not for grid pages of `renderMany` (spec:
/// snapcompact §15.8); we do it for every page.
pub fn finish_pages(raw: Vec<String>, shape: &Shape) -> Vec<String> {
    let mut dim_open = false;
    raw.into_iter()
        .map(|page| {
            let page = if dim_open {
                let mut p = String::with_capacity(page.len() + 1);
                p.push(DIM_ON);
                p.push_str(&page);
                p
            } else {
                page
            };
            dim_open = ends_dim(&page);
            if shape.stopword_dim {
                dim_stopwords(&page)
            } else {
                page
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::shape::billing::BillingFamily;
    use crate::render::shape::catalogue::ShapeVariant;

    #[test]
    fn reopens_cut_dim_spans() {
        let shape = ShapeVariant::V11on16Bw.shape(BillingFamily::Anthropic);
        let pages = finish_pages(
            vec!["a\u{e}bc".into(), "de\u{f}f".into(), "g".into()],
            &shape,
        );
        assert_eq!(pages, ["a\u{e}bc", "\u{e}de\u{f}f", "g"]);
    }

    /// Spec §11 case 33: 2 × capacity + 10 characters make 3 frames.
    #[test]
    fn counts_pages() {
        let shape = ShapeVariant::V5x8Sent.shape(BillingFamily::Anthropic);
        let cap = shape.geometry_at(320).capacity as usize;
        let text = "x".repeat(2 * cap + 10);
        assert_eq!(pages(&text, &shape, 320).len(), 3);
        assert_eq!(page_count(&text, &shape, 320), 3);
        assert_eq!(page_count("", &shape, 320), 0);
        let doc = ShapeVariant::Doc8on16Bw.shape(BillingFamily::Anthropic);
        let words = "word ".repeat(4000);
        assert_eq!(
            page_count(words.trim_end(), &doc, 320),
            pages(words.trim_end(), &doc, 320).len()
        );
    }
}
