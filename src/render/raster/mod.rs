//! The rasterizer: lays one page out on the cell grid and inks it onto a palette-index
//! canvas (spec: snapcompact §7.3–§7.8).

pub mod stretch;

use crate::render::font::{BitmapFont, FallbackCache, FallbackFonts, FontName, GlyphBox};
use crate::render::palette::bit_depth;
use crate::render::shape::catalogue::{Ink, Shape, DOC_GUTTER};
use crate::render::text::cells::place;
use crate::render::text::unicode::{is_wide, DIM_OFF, DIM_ON, NEWLINE_GLYPH};
use crate::support::text::chars;

/// The palette, shared with the PNG encoder ([`crate::render::palette`]).
pub use crate::render::palette::{BACKGROUND, BAND, BLACK, DIM, PALETTE};

/// A frame as palette indices, one byte per pixel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedCanvas {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u8>,
    /// Bit i set when palette index i was painted (the background is found by scanning).
    painted: u16,
}

impl IndexedCanvas {
    pub fn new(width: u32, height: u32) -> IndexedCanvas {
        IndexedCanvas {
            width,
            height,
            pixels: vec![BACKGROUND; width as usize * height as usize],
            painted: 0,
        }
    }

    /// Palette indices that occur in the frame, as a bit set.
    pub fn used_inks(&self) -> u16 {
        let mut used = self.painted;
        if memchr::memchr(BACKGROUND, &self.pixels).is_some() {
            used |= 1;
        }
        used
    }

    /// Fills a rectangle, clipped to the canvas.
    fn fill(&mut self, x: u32, y: u32, w: u32, h: u32, ink: u8) {
        let x1 = (x + w).min(self.width);
        let y1 = (y + h).min(self.height);
        if x >= x1 || y >= y1 {
            return;
        }
        for row in y..y1 {
            let at = row as usize * self.width as usize;
            self.pixels[at + x as usize..at + x1 as usize].fill(ink);
        }
        self.painted |= 1 << ink;
    }

    /// Sets the 1-bits of full-cell glyph rows (bit 7 = leftmost) at (`x`, `top`), clipped.
    #[inline]
    fn blit_rows(&mut self, rows: &[u8], x: u32, top: u32, ink: u8) {
        if x >= self.width {
            return;
        }
        let w = self.width as usize;
        let max_bits = (self.width - x).min(8) as usize;
        let mut any = 0u8;
        for (r, &bits) in rows.iter().enumerate() {
            let y = top as usize + r;
            if y >= self.height as usize {
                break;
            }
            if bits == 0 {
                continue;
            }
            any |= bits;
            let line = &mut self.pixels[y * w + x as usize..y * w + x as usize + max_bits];
            for (b, px) in line.iter_mut().enumerate() {
                if bits & (0x80 >> b) != 0 {
                    *px = ink;
                }
            }
        }
        if any != 0 {
            self.painted |= 1 << ink;
        }
    }

    fn set(&mut self, x: i64, y: i64, ink: u8) {
        if x >= 0 && y >= 0 && (x as u32) < self.width && (y as u32) < self.height {
            self.pixels[y as usize * self.width as usize + x as usize] = ink;
            self.painted |= 1 << ink;
        }
    }
}

/// Grid geometry and ink rules of one frame, in the pixels it is drawn at.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FrameLayout {
    /// Grid columns G (whole frame, both doc columns and the gutter).
    pub grid_cols: u32,
    pub rows: u32,
    pub cell_w: u32,
    pub cell_h: u32,
    pub repeat: u32,
    pub doc: bool,
    pub ink: Ink,
    /// Wide characters take two cells.
    pub wide: bool,
}

impl FrameLayout {
    /// The layout of `shape` at frame size `size`, drawn on cells of `cell_w × cell_h`
    /// (the shape's cell, or the font's natural cell on the stretch path).
    pub fn new(shape: &Shape, size: u32, cell_w: u32, cell_h: u32) -> FrameLayout {
        let (g, r) = shape.grid(size);
        FrameLayout {
            grid_cols: g,
            rows: r,
            cell_w,
            cell_h,
            repeat: shape.line_repeat.max(1),
            doc: shape.is_doc(),
            ink: shape.ink,
            wide: shape.font != FontName::Unifont,
        }
    }

    /// Characters per line of one doc column (spec: snapcompact §7.4).
    fn doc_col_w(&self) -> u32 {
        self.grid_cols.saturating_sub(DOC_GUTTER) / 2
    }

    #[inline(always)]
    fn cells(&self, c: char) -> u32 {
        if self.wide && is_wide(c) {
            2
        } else {
            1
        }
    }

    /// Rows the page fills, in [1, rows] (spec: snapcompact §7.8).
    pub fn used_rows(&self, page: &str) -> u32 {
        let used = if self.doc {
            page.split('\n').count() as u64
        } else {
            let cols = self.grid_cols.max(1) as u64;
            crate::render::text::cells::grid_cursor(page, self.grid_cols, self.wide).div_ceil(cols)
        };
        used.clamp(1, self.rows.max(1) as u64) as u32
    }

    /// Content height in pixels.
    pub fn content_height(&self, page: &str) -> u32 {
        self.used_rows(page) * self.repeat * self.cell_h
    }
}

/// One character placed by the layout.
#[derive(Debug, Clone, Copy)]
struct Placed {
    c: char,
    x: u32,
    row: u32,
    cells: u32,
    ink: u8,
}

impl Placed {
    /// The box a fallback-font glyph of this character is fitted into: its cells on the
    /// layout, aligned to the bitmap font's baseline where there is one.
    #[inline]
    fn glyph_box(&self, l: &FrameLayout, bitmap: Option<&BitmapFont>) -> GlyphBox {
        GlyphBox {
            span: self.cells * l.cell_w,
            cell_height: l.cell_h,
            bitmap_ascent: bitmap.map(|b| b.ascent as u32),
        }
    }
}

fn is_terminator(c: char) -> bool {
    matches!(c, '.' | '!' | '?')
}

/// Walks the page through the layout state machine (spec: snapcompact §7.3, §7.4).
fn walk(page: &str, l: &FrameLayout, mut draw: impl FnMut(Placed)) {
    let mut dim = false;
    let mut sentence = 0u32;
    let mut chars = chars(page);
    let ink_of = |dim: bool, sentence: u32| -> u8 {
        if dim {
            DIM
        } else if l.ink == Ink::Bw {
            BLACK
        } else {
            1 + (sentence % 6) as u8
        }
    };
    if l.doc {
        let col_w = l.doc_col_w();
        let (mut line, mut pos) = (0u32, 0u32);
        while let Some(c) = chars.next() {
            if line >= 2 * l.rows {
                break;
            }
            match c {
                '\n' => {
                    line += 1;
                    pos = 0;
                    continue;
                }
                DIM_ON => {
                    dim = true;
                    continue;
                }
                DIM_OFF => {
                    dim = false;
                    continue;
                }
                _ => {}
            }
            let ink = ink_of(dim, sentence);
            if is_terminator(c) && matches!(chars.clone().next(), Some(' ' | NEWLINE_GLYPH | '\n'))
            {
                sentence += 1;
            }
            let n = l.cells(c);
            if n == 2 && col_w >= 1 && pos == col_w - 1 {
                pos = col_w;
            }
            if pos + n > col_w {
                pos += n;
                continue;
            }
            let column = line / l.rows;
            let x = (column * (col_w + DOC_GUTTER) + pos) * l.cell_w;
            draw(Placed {
                c,
                x,
                row: line % l.rows,
                cells: n,
                ink,
            });
            pos += n;
        }
    } else {
        let cols = l.grid_cols;
        let cap = cols * l.rows;
        let mut cursor = 0u32;
        while let Some(c) = chars.next() {
            if cursor >= cap {
                break;
            }
            match c {
                DIM_ON => {
                    dim = true;
                    continue;
                }
                DIM_OFF => {
                    dim = false;
                    continue;
                }
                '\n' => continue,
                _ => {}
            }
            let ink = ink_of(dim, sentence);
            if is_terminator(c) && matches!(chars.clone().next(), Some(' ' | NEWLINE_GLYPH)) {
                sentence += 1;
            }
            let n = l.cells(c);
            let pos = place(cursor, n, cols);
            if pos >= cap {
                break;
            }
            draw(Placed {
                c,
                x: (pos % cols) * l.cell_w,
                row: pos / cols,
                cells: n,
                ink,
            });
            cursor = pos + n;
        }
    }
}

/// A character's cell box on the frame (copy 0; repeat copies follow below it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlacedChar {
    pub c: char,
    pub x: u32,
    pub y: u32,
    /// `cells × cell width`.
    pub width: u32,
    pub height: u32,
    /// Palette index of the ink.
    pub ink: u8,
}

/// Where every drawn character of a page lands (clipped doc characters excluded).
pub(crate) fn placements(page: &str, l: &FrameLayout) -> Vec<PlacedChar> {
    let mut out = Vec::new();
    walk(page, l, |p| {
        out.push(PlacedChar {
            c: p.c,
            x: p.x,
            y: p.row * l.repeat * l.cell_h,
            width: p.cells * l.cell_w,
            height: l.cell_h,
            ink: p.ink,
        })
    });
    out
}

/// Something a page can be inked onto: palette indices are the global ones (§3.4).
pub(crate) trait Surface {
    fn width(&self) -> u32;
    fn fill(&mut self, x: u32, y: u32, w: u32, h: u32, ink: u8);
    fn blit_rows(&mut self, rows: &[u8], x: u32, top: u32, ink: u8);
    fn set(&mut self, x: i64, y: i64, ink: u8);
}

impl Surface for IndexedCanvas {
    fn width(&self) -> u32 {
        self.width
    }
    fn fill(&mut self, x: u32, y: u32, w: u32, h: u32, ink: u8) {
        IndexedCanvas::fill(self, x, y, w, h, ink)
    }
    fn blit_rows(&mut self, rows: &[u8], x: u32, top: u32, ink: u8) {
        IndexedCanvas::blit_rows(self, rows, x, top, ink)
    }
    fn set(&mut self, x: i64, y: i64, ink: u8) {
        IndexedCanvas::set(self, x, y, ink)
    }
}

/// Two-level quantisation of fallback coverage (spec: snapcompact §7.5): the ink where
/// coverage is high, a gray fringe for black ink, nothing where it is low.
#[inline]
fn quantise(a: u8, ink: u8) -> Option<u8> {
    if a >= 170 {
        Some(ink)
    } else if ink == BLACK && a >= 56 {
        Some(DIM)
    } else if a >= 110 {
        Some(ink)
    } else {
        None
    }
}

/// Inks one page onto `surface` with the layout's cells (spec: snapcompact §7.3–§7.5).
pub(crate) fn draw<S: Surface>(
    page: &str,
    l: &FrameLayout,
    font: FontName,
    fallbacks: &FallbackFonts,
    surface: &mut S,
) {
    let bitmap = font.bitmap();
    let width = surface.width();
    if l.repeat > 1 {
        for r in 0..l.used_rows(page) {
            for k in 1..l.repeat {
                surface.fill(0, (r * l.repeat + k) * l.cell_h, width, l.cell_h, BAND);
            }
        }
    }
    let mut cache = FallbackCache::default();
    walk(page, l, |p| {
        if p.c == NEWLINE_GLYPH {
            for k in 0..l.repeat {
                let top = (p.row * l.repeat + k) * l.cell_h;
                surface.fill(p.x, top, l.cell_w, l.cell_h, BLACK);
            }
            return;
        }
        if let Some(rows) = bitmap.and_then(|b| b.glyph(p.c)) {
            for k in 0..l.repeat {
                surface.blit_rows(rows, p.x, (p.row * l.repeat + k) * l.cell_h, p.ink);
            }
            return;
        }
        let Some(g) = cache.get(fallbacks, p.c, p.glyph_box(l, bitmap)) else {
            return;
        };
        for k in 0..l.repeat {
            let top = ((p.row * l.repeat + k) * l.cell_h) as i64 + g.top as i64;
            let left = p.x as i64 + g.left as i64;
            for gy in 0..g.height {
                for gx in 0..g.width {
                    if let Some(ink) = quantise(g.coverage[gy * g.width + gx], p.ink) {
                        surface.set(left + gx as i64, top + gy as i64, ink);
                    }
                }
            }
        }
    });
}

/// The inks a page paints on a `width × height` frame, exactly (clipping included), as a
/// bit set of global palette indices; the background is not included.
pub(crate) fn plan_inks(
    page: &str,
    l: &FrameLayout,
    font: FontName,
    fallbacks: &FallbackFonts,
    width: u32,
    height: u32,
) -> u16 {
    let bitmap = font.bitmap();
    let mut inks = 0u16;
    if l.repeat > 1 && l.cell_h < height {
        inks |= 1 << BAND;
    }
    let mut cache = FallbackCache::default();
    walk(page, l, |p| {
        for k in 0..l.repeat {
            let top = (p.row * l.repeat + k) * l.cell_h;
            if top >= height || p.x >= width {
                return;
            }
            if p.c == NEWLINE_GLYPH {
                inks |= 1 << BLACK;
                return;
            }
            if let Some(rows) = bitmap.and_then(|b| b.glyph(p.c)) {
                let keep = if width - p.x >= 8 {
                    0xFF
                } else {
                    0xFFu8 << (8 - (width - p.x))
                };
                let visible = (height - top) as usize;
                if rows.iter().take(visible).any(|&r| r & keep != 0) {
                    inks |= 1 << p.ink;
                }
                continue;
            }
            let Some(g) = cache.get(fallbacks, p.c, p.glyph_box(l, bitmap)) else {
                return;
            };
            let (top, left) = (top as i64 + g.top as i64, p.x as i64 + g.left as i64);
            for gy in 0..g.height {
                let y = top + gy as i64;
                if y < 0 || y >= height as i64 {
                    continue;
                }
                for gx in 0..g.width {
                    let x = left + gx as i64;
                    if x < 0 || x >= width as i64 {
                        continue;
                    }
                    if let Some(ink) = quantise(g.coverage[gy * g.width + gx], p.ink) {
                        inks |= 1 << ink;
                    }
                }
            }
        }
    });
    inks
}

/// A superset of the inks a `bw` page paints, read off the page text alone (no layout):
/// black, dim when the page dims or needs the fallback font (its gray fringe), the band
/// when lines repeat. `None` for `sent` pages, whose hues depend on the layout. The caller
/// checks after drawing that every planned ink occurs.
pub(crate) fn quick_inks(page: &str, l: &FrameLayout, font: FontName) -> Option<u16> {
    if l.ink != Ink::Bw {
        return None;
    }
    let mut inks = 1u16 << BLACK;
    if l.repeat > 1 {
        inks |= 1 << BAND;
    }
    let bitmap = font.bitmap()?;
    let needs_gray = chars(page).any(|c| {
        c == DIM_ON || (c > '\u{7e}' && c != NEWLINE_GLYPH && c != DIM_OFF && !bitmap.has_glyph(c))
    });
    if needs_gray {
        inks |= 1 << DIM;
    }
    Some(inks)
}

/// Rasterizes one page onto a palette-index canvas `width` px wide and `height` px tall.
pub(crate) fn rasterize(
    page: &str,
    l: &FrameLayout,
    font: FontName,
    fallbacks: &FallbackFonts,
    width: u32,
    height: u32,
) -> IndexedCanvas {
    let mut canvas = IndexedCanvas::new(width, height);
    draw(page, l, font, fallbacks, &mut canvas);
    canvas
}

/// Doubles every bit of `b` (bit 7 → bits 15 and 14, …): a glyph row as 2-bit pixel masks.
#[inline(always)]
fn spread2(b: u8) -> u16 {
    let mut x = u16::from(b);
    x = (x | (x << 4)) & 0x0F0F;
    x = (x | (x << 2)) & 0x3333;
    x = (x | (x << 1)) & 0x5555;
    x | (x << 1)
}

/// A frame drawn straight into PNG scanlines: each row is a filter byte (0, None) followed
/// by pixels packed MSB-first at 1, 2 or 4 bits, as local palette indices. This skips the
/// byte-per-pixel canvas and its packing pass (spec: snapcompact §7.9).
pub(crate) struct PackedCanvas {
    pub width: u32,
    pub height: u32,
    pub depth: u8,
    /// Bytes per scanline, filter byte included.
    pub stride: usize,
    pub data: Vec<u8>,
    /// Global palette index → local index.
    local: [u8; 16],
    /// Local index → 1 bit per pixel run pattern (the index replicated across a byte).
    pattern: [u8; 16],
    /// A pixel was drawn with an ink outside the plan (the caller falls back).
    pub unplanned: bool,
}

impl PackedCanvas {
    /// `inks`: the global indices in the palette, background included.
    pub fn new(width: u32, height: u32, inks: u16) -> PackedCanvas {
        let mut local = [0xFFu8; 16];
        let mut n = 0u8;
        for (i, slot) in local.iter_mut().enumerate().take(PALETTE.len()) {
            if inks & (1 << i) != 0 {
                *slot = n;
                n += 1;
            }
        }
        let depth = bit_depth(n as u32);
        let stride = 1 + (width as usize * depth as usize).div_ceil(8);
        let mut pattern = [0u8; 16];
        for (v, p) in pattern.iter_mut().enumerate() {
            *p = match depth {
                1 => {
                    if v & 1 == 1 {
                        0xFF
                    } else {
                        0
                    }
                }
                2 => (v as u8 & 3) * 0x55,
                _ => (v as u8 & 15) * 0x11,
            };
        }
        PackedCanvas {
            width,
            height,
            depth,
            stride,
            data: vec![0; stride * height as usize],
            local,
            pattern,
            unplanned: false,
        }
    }

    #[inline(always)]
    fn local_of(&mut self, ink: u8) -> Option<u8> {
        match self.local.get(ink as usize).copied() {
            Some(v) if v != 0xFF => Some(v),
            _ => {
                self.unplanned = true;
                None
            }
        }
    }

    #[inline(always)]
    fn put(&mut self, x: u32, y: u32, v: u8) {
        let d = self.depth as usize;
        let bit = x as usize * d;
        let at = y as usize * self.stride + 1 + bit / 8;
        let shift = 8 - d - bit % 8;
        let mask = (((1u16 << d) - 1) as u8) << shift;
        let px = &mut self.data.as_mut_slice()[at];
        *px = (*px & !mask) | (v << shift);
    }

    /// Does local index `v` occur among the frame's pixels?
    pub fn contains(&self, v: u8) -> bool {
        let d = self.depth as usize;
        let per_byte = 8 / d;
        let full = self.width as usize / per_byte;
        let rest = self.width as usize % per_byte;
        let pat = self.pattern[v as usize];
        for row in self.data.chunks_exact(self.stride) {
            let px = &row[1..];
            for &b in &px[..full] {
                if b == pat {
                    return true;
                }
                let x = b ^ pat;
                for k in 0..per_byte {
                    if (x >> (k * d)) & ((1 << d) - 1) == 0 {
                        return true;
                    }
                }
            }
            if rest > 0 {
                let x = px[full] ^ pat;
                for k in 0..rest {
                    if (x >> (8 - d * (k + 1))) & ((1 << d) - 1) == 0 {
                        return true;
                    }
                }
            }
        }
        false
    }
}

impl Surface for PackedCanvas {
    fn width(&self) -> u32 {
        self.width
    }

    fn fill(&mut self, x: u32, y: u32, w: u32, h: u32, ink: u8) {
        let Some(v) = self.local_of(ink) else { return };
        let x1 = (x + w).min(self.width);
        let y1 = (y + h).min(self.height);
        if x >= x1 || y >= y1 {
            return;
        }
        let (stride, pattern) = (self.stride, self.pattern);
        let data = self.data.as_mut_slice();
        if x == 0 && x1 == self.width {
            let pat = pattern[v as usize];
            for row in y..y1 {
                let at = row as usize * stride;
                data[at + 1..at + stride].fill(pat);
            }
            return;
        }
        if self.depth == 1 && v == 1 {
            // Set the bit range [x, x1) of each row: partial bytes at the ends, whole between.
            let (b0, b1) = (x as usize, x1 as usize);
            for row in y..y1 {
                let base = row as usize * stride + 1;
                let mut b = b0;
                while b < b1 {
                    let (byte, bit) = (b / 8, b % 8);
                    let n = (8 - bit).min(b1 - b);
                    data[base + byte] |= ((0xFFu16 << (8 - n)) as u8) >> bit;
                    b += n;
                }
            }
            return;
        }
        for row in y..y1 {
            for col in x..x1 {
                self.put(col, row, v);
            }
        }
    }

    #[inline(always)]
    fn blit_rows(&mut self, rows: &[u8], x: u32, top: u32, ink: u8) {
        if x >= self.width {
            return;
        }
        let Some(v) = self.local_of(ink) else { return };
        // Slices bound once: `Vec` indexing is a call in the size-optimized build.
        let (stride, pattern) = (self.stride, self.pattern);
        let data = self.data.as_mut_slice();
        let keep = if self.width - x >= 8 {
            0xFF
        } else {
            0xFFu8 << (8 - (self.width - x))
        };
        let y_end = (self.height.saturating_sub(top) as usize).min(rows.len());
        if self.depth == 1 && v == 1 {
            let (byte, shift) = (1 + (x / 8) as usize, x % 8);
            for (r, &bits) in rows[..y_end].iter().enumerate() {
                let bits = bits & keep;
                if bits == 0 {
                    continue;
                }
                let at = (top as usize + r) * stride + byte;
                data[at] |= bits >> shift;
                // `keep` cut the glyph at the frame's right edge, so a non-zero spill lies
                // inside the row; a zero one may point past the row's last byte.
                let spill = if shift == 0 { 0 } else { bits << (8 - shift) };
                if spill != 0 {
                    data[at + 1] |= spill;
                }
            }
            return;
        }
        if self.depth == 2 {
            // Each glyph bit becomes two pixel bits; the row's 16 bits land on up to three
            // bytes from bit offset 2·(x mod 4). Bytes the mask does not touch are left
            // alone, so nothing is written past the row (`keep` clipped the glyph).
            let pat = pattern[v as usize];
            let (byte, off) = (1 + (x / 4) as usize, 2 * (x % 4));
            for (r, &bits) in rows[..y_end].iter().enumerate() {
                let bits = bits & keep;
                if bits == 0 {
                    continue;
                }
                let mask = (u32::from(spread2(bits)) << 8) >> off;
                let at = (top as usize + r) * stride + byte;
                for (i, m) in mask.to_be_bytes()[1..].iter().enumerate() {
                    if *m != 0 {
                        let px = &mut data[at + i];
                        *px = (*px & !m) | (pat & m);
                    }
                }
            }
            return;
        }
        for (r, &bits) in rows[..y_end].iter().enumerate() {
            let mut bits = bits & keep;
            while bits != 0 {
                let b = bits.leading_zeros();
                bits &= !(0x80 >> b);
                self.put(x + b, top + r as u32, v);
            }
        }
    }

    fn set(&mut self, x: i64, y: i64, ink: u8) {
        if x >= 0 && y >= 0 && (x as u32) < self.width && (y as u32) < self.height {
            if let Some(v) = self.local_of(ink) {
                self.put(x as u32, y as u32, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pixel `(x, y)` of a packed canvas as a local palette index.
    fn packed_at(c: &PackedCanvas, x: u32, y: u32) -> u8 {
        let d = c.depth as usize;
        let bit = x as usize * d;
        let byte = c.data[y as usize * c.stride + 1 + bit / 8];
        (byte >> (8 - d - bit % 8)) & ((1 << d) - 1) as u8
    }

    /// The packed 2-bit blit paints exactly what the byte-per-pixel canvas paints: every
    /// x offset modulo 4, glyphs cut by the right and bottom edges, inks overwriting a band.
    #[test]
    fn packed_two_bit_blits_match_the_indexed_canvas() {
        let inks = (1 << 0) | (1 << BLACK) | (1 << BAND) | (1 << DIM);
        let glyph: Vec<u8> = (0..12u32).map(|i| (i * 0x9D + 0x5B) as u8 | 0x81).collect();
        for width in [13, 16, 21] {
            let height = 14;
            let mut packed = PackedCanvas::new(width, height, inks);
            let mut plain = IndexedCanvas::new(width, height);
            assert_eq!(packed.depth, 2);
            for s in [
                &mut packed as &mut dyn Surface,
                &mut plain as &mut dyn Surface,
            ] {
                s.fill(0, 4, width, 3, BAND);
                for (k, x) in (0..width).step_by(3).enumerate() {
                    let ink = if k % 2 == 0 { BLACK } else { DIM };
                    s.blit_rows(&glyph, x, (k as u32 % 5) * 2, ink);
                }
            }
            let local = |g: u8| packed.local[g as usize];
            for y in 0..height {
                for x in 0..width {
                    let want = local(plain.pixels[(y * width + x) as usize]);
                    assert_eq!(
                        packed_at(&packed, x, y),
                        want,
                        "({x}, {y}) at width {width}"
                    );
                }
            }
            // No glyph bit past the last pixel of a row (full-width band fills may set the
            // padding bits, which PNG leaves unspecified).
            let used = (width as usize * 2).div_ceil(8);
            let spare = (used * 8 - width as usize * 2) as u32;
            for (y, row) in packed.data.chunks_exact(packed.stride).enumerate() {
                if !(4..7).contains(&y) {
                    assert_eq!(row[used] & ((1u16 << spare) - 1) as u8, 0, "row {y}");
                }
            }
        }
    }
}
