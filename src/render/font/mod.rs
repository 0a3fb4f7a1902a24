//! Fonts: the four bundled bitmap fonts and the host-registered fallback fonts.
//!
//! The bitmap fonts (X.org misc-fixed 5x8, 6x12, 8x13 and unscii-8) are compiled by
//! `fonts/generate.py` into 1-bit tables (`fonts/compiled/*.glyphs`) embedded here as they are
//! drawn: each glyph a full cell of rows, one byte per row, bit 7 = leftmost pixel (spec:
//! snapcompact §7.2, §13). Plain rather than compressed: the first frame of a fresh process
//! (a cold edge worker) then need not decode 106 KB of rows first. Fallback fonts are not bundled: the host
//! registers GNU Unifont (our compact `CXFB` asset) or any TrueType/OpenType font, which covers
//! what the bitmap fonts lack (CJK, kana, hangul, rare symbols). See `fonts/README.md` for
//! sources, licences and formats.

mod outline;

use crate::render::error::SnapError;
use crate::render::font::outline::OutlineFont;
use rustc_hash::FxHashMap;
use std::sync::{Arc, OnceLock};

/// Fonts a shape can name (spec: snapcompact §3.1). `Unifont` (alias `silver`) is the
/// registered fallback font used for the whole frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FontName {
    F5x8,
    F8x8,
    F6x12,
    F8x13,
    Unifont,
}

impl FontName {
    /// Parses a font name; `silver` (the reference's TTF) is accepted for `unifont`.
    pub fn parse(name: &str) -> Result<FontName, SnapError> {
        Ok(match name {
            "5x8" => FontName::F5x8,
            "8x8" => FontName::F8x8,
            "6x12" => FontName::F6x12,
            "8x13" => FontName::F8x13,
            "unifont" | "silver" => FontName::Unifont,
            other => {
                return Err(SnapError::Font(format!(
                    "unknown font {}: use one of 5x8, 8x8, 6x12, 8x13, unifont",
                    crate::support::json::js::quoted(other)
                )))
            }
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FontName::F5x8 => "5x8",
            FontName::F8x8 => "8x8",
            FontName::F6x12 => "6x12",
            FontName::F8x13 => "8x13",
            FontName::Unifont => "unifont",
        }
    }

    /// The bundled bitmap font, or `None` for the fallback-only font.
    pub fn bitmap(self) -> Option<&'static BitmapFont> {
        match self {
            FontName::F5x8 => Some(BitmapFont::get(
                0,
                include_bytes!("../../../fonts/compiled/5x8.glyphs"),
            )),
            FontName::F8x8 => Some(BitmapFont::get(
                1,
                include_bytes!("../../../fonts/compiled/8x8.glyphs"),
            )),
            FontName::F6x12 => Some(BitmapFont::get(
                2,
                include_bytes!("../../../fonts/compiled/6x12.glyphs"),
            )),
            FontName::F8x13 => Some(BitmapFont::get(
                3,
                include_bytes!("../../../fonts/compiled/8x13.glyphs"),
            )),
            FontName::Unifont => None,
        }
    }

    /// Natural cell of the font (spec: snapcompact §3.2): 5×8, 8×8, 6×12, 8×13, 16×16.
    pub fn natural_cell(self) -> (u32, u32) {
        match self.bitmap() {
            Some(f) => (f.cell_width as u32, f.cell_height as u32),
            None => (16, 16),
        }
    }
}

/// A compiled bitmap font (format `CXGL`, written by `fonts/generate.py`).
#[derive(Debug)]
pub struct BitmapFont {
    pub cell_width: u8,
    pub cell_height: u8,
    /// Rows from the cell top to the baseline (spec: snapcompact §7.2).
    pub ascent: u8,
    /// (first code point, count, index of its first glyph)
    runs: Vec<(u32, u32, u32)>,
    /// Every glyph's `cell_height` rows, in code point order: the embedded table itself.
    bitmaps: &'static [u8],
    /// Glyph index + 1 for U+0000–U+00FF (0 = missing): the hot path of every frame.
    latin: [u16; 256],
}

static BITMAP_FONTS: [OnceLock<BitmapFont>; 4] = [
    OnceLock::new(),
    OnceLock::new(),
    OnceLock::new(),
    OnceLock::new(),
];

impl BitmapFont {
    #[inline(always)]
    fn get(slot: usize, bytes: &'static [u8]) -> &'static BitmapFont {
        // The decoded font first: `get_or_init` stays a call when built for size.
        match BITMAP_FONTS[slot].get() {
            Some(font) => font,
            None => BITMAP_FONTS[slot].get_or_init(|| BitmapFont::parse(bytes)),
        }
    }

    /// Parses an embedded table (`CXGL` version 3: header, runs, plain rows; see
    /// fonts/README.md); the rows are used in place. The tables are generated and checked by
    /// tests, so a malformed one is a build defect; it still yields an empty font rather than
    /// a panic.
    fn parse(bytes: &'static [u8]) -> BitmapFont {
        let empty = BitmapFont {
            cell_width: 8,
            cell_height: 8,
            ascent: 7,
            runs: Vec::new(),
            bitmaps: &[],
            latin: [0; 256],
        };
        if bytes.len() < 16 || &bytes[0..4] != b"CXGL" || bytes[4] != 3 {
            return empty;
        }
        let (cw, ch, ascent) = (bytes[5], bytes[6], bytes[7]);
        let nruns = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        let nglyphs = u16::from_le_bytes([bytes[10], bytes[11]]) as usize;
        let checksum = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]);
        let runs_end = 16 + nruns * 6;
        if bytes.len() < runs_end || !(1..=8).contains(&cw) || ch == 0 {
            return empty;
        }
        let mut runs = Vec::with_capacity(nruns);
        let mut first = 0u32;
        for r in bytes[16..runs_end].chunks_exact(6) {
            let start = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
            let len = u16::from_le_bytes([r[4], r[5]]) as u32;
            runs.push((start, len, first));
            first += len;
        }
        let Some(bitmaps) = bytes
            .get(runs_end..)
            .filter(|b| b.len() == nglyphs * ch as usize)
        else {
            return empty;
        };
        // The checksum covers the header before it, the runs and the rows.
        let sum = fnv1a(
            fnv1a(fnv1a(0x811C_9DC5, &bytes[..12]), &bytes[16..runs_end]),
            bitmaps,
        );
        if first as usize != nglyphs || sum != checksum {
            return empty;
        }
        let mut font = BitmapFont {
            cell_width: cw,
            cell_height: ch,
            ascent,
            runs,
            bitmaps,
            latin: [0; 256],
        };
        for cp in 0..256u32 {
            if let Some(i) = font.search(cp) {
                font.latin[cp as usize] = (i + 1) as u16;
            }
        }
        font
    }

    fn search(&self, cp: u32) -> Option<usize> {
        let i = self.runs.partition_point(|&(start, _, _)| start <= cp);
        if i == 0 {
            return None;
        }
        let (start, len, first) = self.runs[i - 1];
        (cp < start + len).then(|| (first + cp - start) as usize)
    }

    /// The glyph's rows (top first, `cell_height` bytes), if the font has it.
    #[inline]
    pub fn glyph(&self, c: char) -> Option<&[u8]> {
        let cp = c as u32;
        let index = if cp < 256 {
            match self.latin[cp as usize] {
                0 => return None,
                i => i as usize - 1,
            }
        } else {
            self.search(cp)?
        };
        let h = self.cell_height as usize;
        self.bitmaps.get(index * h..index * h + h)
    }

    pub fn has_glyph(&self, c: char) -> bool {
        self.glyph(c).is_some()
    }

    /// Number of glyphs in the font.
    pub fn glyph_count(&self) -> usize {
        self.runs.iter().map(|r| r.1 as usize).sum()
    }

    /// Every code point the font has, in ascending order.
    pub fn code_points(&self) -> impl Iterator<Item = char> + '_ {
        self.runs
            .iter()
            .flat_map(|&(start, len, _)| (start..start + len).filter_map(char::from_u32))
    }
}

/// FNV-1a, continued from `h` (start with 0x811C9DC5).
fn fnv1a(h: u32, bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .fold(h, |h, &b| (h ^ b as u32).wrapping_mul(0x0100_0193))
}

// ---------------------------------------------------------------------------------------------
// Fallback fonts

/// A coverage bitmap (0–255 per pixel) of one fallback glyph, placed relative to the
/// top-left of its cell span (spec: snapcompact §7.5, §7.6).
#[derive(Debug, Clone, Default)]
pub struct FallbackGlyph {
    pub left: i32,
    pub top: i32,
    pub width: usize,
    pub height: usize,
    pub coverage: Vec<u8>,
}

/// Where a fallback glyph is drawn.
#[derive(Debug, Clone, Copy)]
pub struct GlyphBox {
    /// Width of the span the glyph is centred in (cells × cell width).
    pub span: u32,
    pub cell_height: u32,
    /// Ascent of the frame's bitmap font, or `None` in a frame printed wholly in the
    /// fallback font (then the fallback's own ascent places outline glyphs).
    pub bitmap_ascent: Option<u32>,
}

/// A registered fallback font.
pub struct FallbackFont {
    kind: FallbackKind,
}

enum FallbackKind {
    Bitmap(UnifontFace),
    Outline(Box<OutlineFont>),
}

impl std::fmt::Debug for FallbackFont {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            FallbackKind::Bitmap(u) => {
                write!(f, "FallbackFont::Bitmap({} glyphs)", u.glyph_count())
            }
            FallbackKind::Outline(_) => f.write_str("FallbackFont::Outline"),
        }
    }
}

/// GNU Unifont in our compact asset format (`CXFB`, written by `fonts/generate.py`): 16 px
/// tall 1-bit glyphs, 8 or 16 px wide.
struct UnifontFace {
    height: u32,
    ascent: u32,
    /// (first code point, count, width in px, byte offset of the first glyph)
    runs: Vec<(u32, u32, u32, usize)>,
    data: Vec<u8>,
}

impl UnifontFace {
    fn parse(bytes: &[u8]) -> Result<UnifontFace, SnapError> {
        let bad = |why: &str| {
            SnapError::Font(format!(
                "invalid Unifont asset ({why}): rebuild it with fonts/generate.py"
            ))
        };
        if bytes.len() < 12 {
            return Err(bad("too short"));
        }
        if bytes[4] != 1 {
            return Err(bad("unsupported version"));
        }
        let height = bytes[5] as u32;
        let ascent = bytes[6] as u32;
        let nruns = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize;
        let runs_end = nruns
            .checked_mul(12)
            .and_then(|n| n.checked_add(12))
            .filter(|&end| end <= bytes.len())
            .ok_or_else(|| bad("truncated run table"))?;
        if height == 0 || height > 64 {
            return Err(bad("glyph height out of range"));
        }
        let data = bytes[runs_end..].to_vec();
        let mut runs = Vec::with_capacity(nruns);
        let mut last_end = 0u32;
        for r in bytes[12..runs_end].chunks_exact(12) {
            let start = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
            let len = u16::from_le_bytes([r[4], r[5]]) as u32;
            let width = r[6] as u32;
            let offset = u32::from_le_bytes([r[8], r[9], r[10], r[11]]) as usize;
            if width != 8 && width != 16 {
                return Err(bad("glyph width not 8 or 16"));
            }
            if start < last_end {
                return Err(bad("runs not sorted"));
            }
            let glyph_bytes = (width / 8 * height) as usize;
            if offset + glyph_bytes * len as usize > data.len() {
                return Err(bad("glyph data out of range"));
            }
            last_end = start + len;
            runs.push((start, len, width, offset));
        }
        Ok(UnifontFace {
            height,
            ascent,
            runs,
            data,
        })
    }

    fn glyph_count(&self) -> usize {
        self.runs.iter().map(|r| r.1 as usize).sum()
    }

    /// (width, rows) of a glyph.
    fn glyph(&self, c: char) -> Option<(u32, &[u8])> {
        let cp = c as u32;
        let i = self.runs.partition_point(|r| r.0 <= cp);
        if i == 0 {
            return None;
        }
        let (start, len, width, offset) = self.runs[i - 1];
        if cp >= start + len {
            return None;
        }
        let size = (width / 8 * self.height) as usize;
        let at = offset + size * (cp - start) as usize;
        Some((width, &self.data[at..at + size]))
    }

    /// Unifont glyphs are drawn at natural size when they fit, else area-averaged down to
    /// fit the span and the cell height (our rule: the reference's Silver rules of §7.5 are
    /// for an outline font), centred horizontally and set on the cell top.
    fn rasterize(&self, c: char, gbox: GlyphBox) -> Option<FallbackGlyph> {
        let (w, rows) = self.glyph(c)?;
        let h = self.height;
        let scale = (gbox.span as f32 / w as f32)
            .min(gbox.cell_height as f32 / h as f32)
            .min(1.0);
        let ow = ((w as f32 * scale).round() as usize).max(1);
        let oh = ((h as f32 * scale).round() as usize).max(1);
        let bytes_per_row = (w / 8) as usize;
        let bit = |x: usize, y: usize| -> bool {
            let byte = rows[y * bytes_per_row + x / 8];
            byte & (0x80 >> (x % 8)) != 0
        };
        let mut coverage = vec![0u8; ow * oh];
        if ow == w as usize && oh == h as usize {
            for y in 0..oh {
                for x in 0..ow {
                    if bit(x, y) {
                        coverage[y * ow + x] = 255;
                    }
                }
            }
        } else {
            // Exact box filter: each output pixel averages the source area it covers.
            let sx = w as f32 / ow as f32;
            let sy = h as f32 / oh as f32;
            for oy in 0..oh {
                let y0 = oy as f32 * sy;
                let y1 = y0 + sy;
                for ox in 0..ow {
                    let x0 = ox as f32 * sx;
                    let x1 = x0 + sx;
                    let mut sum = 0.0f32;
                    let mut y = y0.floor() as usize;
                    while (y as f32) < y1 && y < h as usize {
                        let wy = (y1.min(y as f32 + 1.0) - y0.max(y as f32)).max(0.0);
                        let mut x = x0.floor() as usize;
                        while (x as f32) < x1 && x < w as usize {
                            if bit(x, y) {
                                let wx = (x1.min(x as f32 + 1.0) - x0.max(x as f32)).max(0.0);
                                sum += wx * wy;
                            }
                            x += 1;
                        }
                        y += 1;
                    }
                    let a = (sum / (sx * sy) * 255.0).round().clamp(0.0, 255.0);
                    coverage[oy * ow + ox] = a as u8;
                }
            }
        }
        let left = (gbox.span as i32 - ow as i32).max(0) / 2;
        let top = match gbox.bitmap_ascent {
            Some(asc) => (asc as i32 - (self.ascent as f32 * scale).round() as i32).max(0),
            None => 0,
        };
        Some(FallbackGlyph {
            left,
            top,
            width: ow,
            height: oh,
            coverage,
        })
    }
}

impl FallbackFont {
    /// Reads a fallback font: the Unifont asset (`CXFB`) or any TrueType/OpenType font.
    pub fn from_bytes(bytes: &[u8]) -> Result<FallbackFont, SnapError> {
        if bytes.len() >= 4 && &bytes[0..4] == b"CXFB" {
            return Ok(FallbackFont {
                kind: FallbackKind::Bitmap(UnifontFace::parse(bytes)?),
            });
        }
        Ok(FallbackFont {
            kind: FallbackKind::Outline(Box::new(OutlineFont::parse(bytes)?)),
        })
    }

    pub fn has_glyph(&self, c: char) -> bool {
        match &self.kind {
            FallbackKind::Bitmap(u) => u.glyph(c).is_some(),
            FallbackKind::Outline(f) => f.has_glyph(c),
        }
    }

    /// Number of glyphs (code points mapped by the font).
    pub fn glyph_count(&self) -> usize {
        match &self.kind {
            FallbackKind::Bitmap(u) => u.glyph_count(),
            FallbackKind::Outline(f) => f.glyph_count(),
        }
    }

    /// Coverage of `c` placed in `gbox`.
    pub fn rasterize(&self, c: char, gbox: GlyphBox) -> Option<FallbackGlyph> {
        match &self.kind {
            FallbackKind::Bitmap(u) => u.rasterize(c, gbox),
            FallbackKind::Outline(f) => {
                // spec: snapcompact §7.5 (pixel size, horizontal centring by advance,
                // baseline from the bitmap font's ascent) and §7.6 (own ascent).
                let px = gbox.span.min(gbox.cell_height).max(1) as f32;
                let g = f.rasterize(c, px)?;
                let ascent = match gbox.bitmap_ascent {
                    Some(a) => a as f32,
                    None => f.ascent(px),
                };
                let adv = g.advance_width.ceil() as i32;
                let left = (gbox.span as i32 - adv).max(0) / 2 + g.xmin;
                let top = (ascent - g.height as f32 - g.ymin as f32).round() as i32;
                Some(FallbackGlyph {
                    left,
                    top,
                    width: g.width,
                    height: g.height,
                    coverage: g.coverage,
                })
            }
        }
    }
}

/// The fallback fonts in effect, first registered first asked.
#[derive(Debug, Clone, Default)]
pub struct FallbackFonts {
    fonts: Vec<Arc<FallbackFont>>,
}

impl FallbackFonts {
    pub fn new() -> FallbackFonts {
        FallbackFonts::default()
    }

    pub fn push(&mut self, font: FallbackFont) {
        self.fonts.push(Arc::new(font));
    }

    pub fn is_empty(&self) -> bool {
        self.fonts.is_empty()
    }

    /// The same fonts, registered in the same order (the same objects, not equal copies).
    pub fn same_as(&self, other: &FallbackFonts) -> bool {
        self.fonts.len() == other.fonts.len()
            && self
                .fonts
                .iter()
                .zip(&other.fonts)
                .all(|(a, b)| Arc::ptr_eq(a, b))
    }

    pub fn has_glyph(&self, c: char) -> bool {
        self.fonts.iter().any(|f| f.has_glyph(c))
    }

    /// The first font that has `c`.
    pub fn font_for(&self, c: char) -> Option<&FallbackFont> {
        self.fonts
            .iter()
            .map(|f| f.as_ref())
            .find(|f| f.has_glyph(c))
    }
}

/// Does `font` (its bitmap font, or the fallback fonts for `unifont`) draw `c`?
/// U+000A, U+000E, U+000F and U+2588 always count (spec: snapcompact §7.1).
pub fn font_supports(font: FontName, fallbacks: &FallbackFonts, c: char) -> bool {
    bitmap_supports(font.bitmap(), fallbacks, c)
}

/// [`font_supports`] for a font already looked up with [`FontName::bitmap`] (per-character
/// loops look it up once).
pub(crate) fn bitmap_supports(
    bitmap: Option<&BitmapFont>,
    fallbacks: &FallbackFonts,
    c: char,
) -> bool {
    if matches!(c, '\n' | '\u{0E}' | '\u{0F}' | '\u{2588}') {
        return true;
    }
    match bitmap {
        Some(b) => b.has_glyph(c),
        None => fallbacks.has_glyph(c),
    }
}

/// The subset of `chars` that `font` can draw, in input order (spec: snapcompact §7.1
/// `supportedChars`).
pub fn supported_chars(font: FontName, fallbacks: &FallbackFonts, chars: &str) -> String {
    chars
        .chars()
        .filter(|&c| font_supports(font, fallbacks, c))
        .collect()
}

/// Per-frame cache of rasterized fallback glyphs.
#[derive(Default)]
pub(crate) struct FallbackCache {
    glyphs: FxHashMap<(char, u32), Option<FallbackGlyph>>,
}

impl FallbackCache {
    pub(crate) fn get(
        &mut self,
        fallbacks: &FallbackFonts,
        c: char,
        gbox: GlyphBox,
    ) -> Option<&FallbackGlyph> {
        self.glyphs
            .entry((c, gbox.span))
            .or_insert_with(|| fallbacks.font_for(c).and_then(|f| f.rasterize(c, gbox)))
            .as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_fonts_cover_ascii_with_reference_ascents() {
        for (font, cell, ascent) in [
            (FontName::F5x8, (5, 8), 7),
            (FontName::F8x8, (8, 8), 7),
            (FontName::F6x12, (6, 12), 10),
            (FontName::F8x13, (8, 13), 11),
        ] {
            let f = font.bitmap().expect("bitmap font");
            assert_eq!(
                (f.cell_width as u32, f.cell_height as u32),
                cell,
                "{font:?}"
            );
            assert_eq!(f.ascent, ascent, "{font:?}");
            for c in ' '..='~' {
                assert!(f.has_glyph(c), "{font:?} lacks {c:?}");
            }
        }
        assert_eq!(FontName::F5x8.bitmap().map(|f| f.glyph_count()), Some(191));
        assert_eq!(FontName::F8x8.bitmap().map(|f| f.glyph_count()), Some(255));
        assert_eq!(
            FontName::F6x12.bitmap().map(|f| f.glyph_count()),
            Some(4531)
        );
        assert_eq!(
            FontName::F8x13.bitmap().map(|f| f.glyph_count()),
            Some(3703)
        );
    }

    /// A damaged table decodes to an empty font, never to wrong glyphs or a panic.
    #[test]
    fn damaged_glyph_tables_give_an_empty_font() {
        let good: &[u8] = include_bytes!("../../../fonts/compiled/5x8.glyphs");
        assert_eq!(BitmapFont::parse(good).glyph_count(), 191);
        for at in [4, 11, 13, 17, 40, good.len() / 2] {
            let mut bad = good.to_vec();
            bad[at] ^= 0x5A;
            // `parse` keeps the rows in place, so the table must live on, as embedded ones do.
            let f = BitmapFont::parse(bad.leak());
            assert_eq!(f.glyph_count(), 0, "byte {at}");
        }
        for len in [0, 15, 20, good.len() / 2] {
            let f = BitmapFont::parse(&good[..len]);
            assert_eq!(f.glyph_count(), 0, "cut at {len}");
        }
    }

    /// The zero inks its middle band more than the letter O (spec: snapcompact §7.2).
    #[test]
    fn zero_differs_from_letter_o() {
        for font in [
            FontName::F5x8,
            FontName::F6x12,
            FontName::F8x13,
            FontName::F8x8,
        ] {
            let f = font.bitmap().expect("bitmap font");
            let (zero, o) = (f.glyph('0').expect("0"), f.glyph('O').expect("O"));
            let h = zero.len();
            let band =
                |g: &[u8]| -> u32 { g[h / 3..h - h / 3].iter().map(|r| r.count_ones()).sum() };
            assert!(band(zero) > band(o), "{font:?}");
        }
    }

    #[test]
    fn font_names() {
        assert_eq!(FontName::parse("silver"), Ok(FontName::Unifont));
        assert!(matches!(FontName::parse("9x9"), Err(SnapError::Font(_))));
    }

    #[test]
    fn bad_fallback_bytes_are_an_error() {
        assert!(matches!(
            FallbackFont::from_bytes(b"nope"),
            Err(SnapError::Font(_))
        ));
        assert!(matches!(
            FallbackFont::from_bytes(b"CXFB\x01"),
            Err(SnapError::Font(_))
        ));
        let mut bytes = b"CXFB\x01\x10\x0e\x00\x01\x00\x00\x00".to_vec();
        bytes.extend_from_slice(&[0x41, 0, 0, 0, 1, 0, 8, 0, 0, 0, 0, 0]);
        assert!(matches!(
            FallbackFont::from_bytes(&bytes),
            Err(SnapError::Font(_))
        ));
        bytes.extend_from_slice(&[0xFF; 16]);
        let f = FallbackFont::from_bytes(&bytes).expect("valid one-glyph asset");
        assert!(f.has_glyph('A'));
        assert!(!f.has_glyph('B'));
    }
}
