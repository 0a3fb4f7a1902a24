//! Host-registered TrueType/OpenType fallback fonts: parsed with `ttf-parser` (TrueType `glyf`
//! and CFF/CFF2 outlines, every `cmap` format), flattened and rasterized to coverage here.
//!
//! The geometry follows what `fontdue` 0.9 (which the spec names, and which this replaces to
//! keep its GSUB/kern loading, eager outline cache and hash maps out of the `.wasm`) does, so
//! frames keep their pixels: curves are flattened in font units by halving the parameter
//! interval while the triangle of a piece's ends and its midpoint is larger than
//! `0.15 × unitsPerEm` units² (fontdue's 3 px at its 40 px design scale), the glyph box is the
//! box of the flattened lines that are not horizontal, its origin is placed on the pixel grid
//! as fontdue's `metrics_raw` places it, and each pixel gets the exact area the outline covers
//! (non-zero winding folded by the absolute value, capped at one), `× 255.9` truncated.
//! `tests/it/snapcompact_render.rs` compares the result with fontdue's for DejaVu (TrueType
//! quadratics) and, where installed, Unifont's OTF (CFF cubics).

use crate::render::error::SnapError;

/// A parsed outline font: its bytes (parsed again for each glyph drawn; frames cache their
/// glyphs) and its character map.
pub(crate) struct OutlineFont {
    data: Vec<u8>,
    /// (code point, glyph id), sorted by code point; glyph ids are never 0.
    map: Vec<(u32, u16)>,
    units_per_em: f32,
    ascender: f32,
}

/// A rasterized glyph: fontdue's `Metrics` fields that snapcompact uses, and the coverage rows
/// (top row first, `width × height`).
pub(crate) struct OutlineGlyph {
    pub xmin: i32,
    pub ymin: i32,
    pub width: usize,
    pub height: usize,
    pub advance_width: f32,
    pub coverage: Vec<u8>,
}

/// The tables the library reads, parsed from the table directory (not `ttf_parser::Face`,
/// which also parses colour, bitmap, naming and other tables we never use).
struct Tables<'a> {
    units_per_em: u16,
    ascender: i16,
    cmap: Option<ttf_parser::cmap::Table<'a>>,
    hmtx: Option<ttf_parser::hmtx::Table<'a>>,
    glyf: Option<ttf_parser::glyf::Table<'a>>,
    cff: Option<ttf_parser::cff::Table<'a>>,
}

impl<'a> Tables<'a> {
    fn parse(data: &'a [u8]) -> Result<Tables<'a>, String> {
        use ttf_parser::{cff, cmap, glyf, head, hhea, hmtx, loca, maxp, os2, RawFace, Tag};
        let raw = RawFace::parse(data, 0).map_err(|e| e.to_string())?;
        let table = |tag: &[u8; 4]| raw.table(Tag::from_bytes(tag));
        let head = table(b"head").and_then(head::Table::parse);
        let hhea = table(b"hhea").and_then(hhea::Table::parse);
        let maxp = table(b"maxp").and_then(maxp::Table::parse);
        let (Some(head), Some(hhea), Some(maxp)) = (head, hhea, maxp) else {
            return Err("the head, hhea or maxp table is missing or malformed".into());
        };
        let glyphs = maxp.number_of_glyphs;
        let os2 = table(b"OS/2").and_then(os2::Table::parse);
        // The ascender as ttf-parser's Face::ascender() reads it (no variations).
        let ascender = match os2 {
            Some(t) if t.use_typographic_metrics() => t.typographic_ascender(),
            _ if hhea.ascender != 0 => hhea.ascender,
            Some(t) if t.typographic_ascender() != 0 => t.typographic_ascender(),
            Some(t) => t.windows_ascender(),
            None => 0,
        };
        let loca = table(b"loca")
            .and_then(|d| loca::Table::parse(glyphs, head.index_to_location_format, d));
        Ok(Tables {
            units_per_em: head.units_per_em,
            ascender,
            cmap: table(b"cmap").and_then(cmap::Table::parse),
            hmtx: table(b"hmtx")
                .and_then(|d| hmtx::Table::parse(hhea.number_of_metrics, glyphs, d)),
            glyf: loca.and_then(|l| table(b"glyf").and_then(|d| glyf::Table::parse(l, d))),
            cff: table(b"CFF ").and_then(cff::Table::parse),
        })
    }
}

impl OutlineFont {
    pub(crate) fn parse(bytes: &[u8]) -> Result<OutlineFont, SnapError> {
        let face = Tables::parse(bytes).map_err(|e| {
            SnapError::Font(format!(
                "not a font this library can read ({e}): pass the Unifont asset \
                 (unifont.cxfb) or a TrueType/OpenType file"
            ))
        })?;
        // Every subtable, later ones winning for a code point they share (as fontdue maps).
        let mut map: Vec<(u32, u16)> = Vec::new();
        if let Some(cmap) = face.cmap {
            for sub in cmap.subtables {
                sub.codepoints(|cp| {
                    if let Some(g) = sub.glyph_index(cp) {
                        if g.0 != 0 && char::from_u32(cp).is_some() {
                            map.push((cp, g.0));
                        }
                    }
                });
            }
        }
        crate::support::sort::sort_by_key(&mut map, |&(cp, _)| cp);
        // Stable sort: of equal code points the last one pushed is last; keep it.
        let mut kept: Vec<(u32, u16)> = Vec::with_capacity(map.len());
        for entry in map {
            match kept.last_mut() {
                Some(last) if last.0 == entry.0 => *last = entry,
                _ => kept.push(entry),
            }
        }
        kept.shrink_to_fit();
        Ok(OutlineFont {
            data: bytes.to_vec(),
            map: kept,
            units_per_em: face.units_per_em as f32,
            ascender: face.ascender as f32,
        })
    }

    fn glyph_id(&self, c: char) -> Option<u16> {
        let cp = c as u32;
        let i = self.map.partition_point(|&(k, _)| k < cp);
        self.map.get(i).filter(|e| e.0 == cp).map(|e| e.1)
    }

    pub(crate) fn has_glyph(&self, c: char) -> bool {
        self.glyph_id(c).is_some()
    }

    /// Number of code points the font maps to a glyph.
    pub(crate) fn glyph_count(&self) -> usize {
        self.map.len()
    }

    /// The font's ascent at `px` pixels per em.
    pub(crate) fn ascent(&self, px: f32) -> f32 {
        self.ascender * px / self.units_per_em
    }

    /// Coverage of `c` at `px` pixels per em, or `None` if the font does not map it.
    pub(crate) fn rasterize(&self, c: char, px: f32) -> Option<OutlineGlyph> {
        let gid = ttf_parser::GlyphId(self.glyph_id(c)?);
        let face = Tables::parse(&self.data).ok()?;
        let scale = px / self.units_per_em;
        let mut lines = Lines::new(0.15 * self.units_per_em);
        if let Some(glyf) = face.glyf {
            glyf.outline(gid, &mut lines);
        } else if let Some(cff) = face.cff {
            let _ = cff.outline(gid, &mut lines);
        }
        let advance_width = face
            .hmtx
            .and_then(|t| t.advance(gid))
            .map_or(0.0, f32::from)
            * scale;
        let [x0, y0, x1, y1] = if lines.segs.is_empty() {
            [0.0; 4]
        } else {
            lines.bounds
        };
        // Box and grid offset as fontdue's metrics_raw.
        let (bx, by, bw, bh) = (x0 * scale, y0 * scale, (x1 - x0) * scale, (y1 - y0) * scale);
        let ox = positive_fract(bx);
        let oy = positive_fract(1.0 - bh.fract() - by.fract());
        let width = (bw + ox).ceil().max(0.0) as usize;
        let height = (bh + oy).ceil().max(0.0) as usize;
        // A glyph that reaches far outside its em box (a damaged or hostile font) would need a
        // huge coverage buffer; it is not drawn (cells are at most a few dozen pixels).
        if width.saturating_mul(height) > 1 << 20 {
            return None;
        }
        let mut acc = Coverage::new(width, height);
        for &[ax, ay, cx, cy] in &lines.segs {
            acc.line(
                (ax - x0) * scale + ox,
                (y1 - ay) * scale + oy,
                (cx - x0) * scale + ox,
                (y1 - cy) * scale + oy,
            );
        }
        Some(OutlineGlyph {
            xmin: bx.floor() as i32,
            ymin: by.floor() as i32,
            width,
            height,
            advance_width,
            coverage: acc.finish(),
        })
    }
}

fn positive_fract(v: f32) -> f32 {
    let f = v.fract();
    if f < 0.0 {
        f + 1.0
    } else {
        f
    }
}

/// Outline flattened to line segments in font units (y up), with the box of the segments that
/// are not horizontal.
struct Lines {
    segs: Vec<[f32; 4]>,
    bounds: [f32; 4],
    start: (f32, f32),
    last: (f32, f32),
    max_area: f32,
    /// The pieces still to flatten, kept between curves.
    stack: Vec<Piece>,
}

/// A piece of a curve: its ends and their parameters.
type Piece = ((f32, f32), f32, (f32, f32), f32);

impl Lines {
    fn new(max_area: f32) -> Lines {
        Lines {
            segs: Vec::new(),
            bounds: [f32::MAX, f32::MAX, f32::MIN, f32::MIN],
            start: (0.0, 0.0),
            last: (0.0, 0.0),
            max_area,
            stack: Vec::new(),
        }
    }

    fn push(&mut self, a: (f32, f32), b: (f32, f32)) {
        if a.1 == b.1 {
            return; // horizontal: no coverage
        }
        self.segs.push([a.0, a.1, b.0, b.1]);
        let bx = &mut self.bounds;
        for (x, y) in [a, b] {
            bx[0] = bx[0].min(x);
            bx[1] = bx[1].min(y);
            bx[2] = bx[2].max(x);
            bx[3] = bx[3].max(y);
        }
    }

    /// Flattens the curve `at(t)`, t in 0..1, from the last point to `end`.
    fn flatten(&mut self, end: (f32, f32), at: &dyn Fn(f32) -> (f32, f32)) {
        let mut stack = std::mem::take(&mut self.stack);
        stack.push((self.last, 0.0, end, 1.0));
        while let Some((a, ta, c, tc)) = stack.pop() {
            let tb = (ta + tc) * 0.5;
            let b = at(tb);
            let area = (b.0 - a.0) * (c.1 - a.1) - (c.0 - a.0) * (b.1 - a.1);
            if area.abs() > self.max_area {
                stack.push((a, ta, b, tb));
                stack.push((b, tb, c, tc));
            } else {
                self.push(a, c);
            }
        }
        self.stack = stack;
        self.last = end;
    }
}

impl ttf_parser::OutlineBuilder for Lines {
    fn move_to(&mut self, x: f32, y: f32) {
        self.start = (x, y);
        self.last = (x, y);
    }

    fn line_to(&mut self, x: f32, y: f32) {
        self.push(self.last, (x, y));
        self.last = (x, y);
    }

    fn quad_to(&mut self, x1: f32, y1: f32, x: f32, y: f32) {
        let p0 = self.last;
        self.flatten((x, y), &|t| {
            let m = 1.0 - t;
            let (a, b, c) = (m * m, 2.0 * m * t, t * t);
            (a * p0.0 + b * x1 + c * x, a * p0.1 + b * y1 + c * y)
        });
    }

    fn curve_to(&mut self, x1: f32, y1: f32, x2: f32, y2: f32, x: f32, y: f32) {
        let p0 = self.last;
        self.flatten((x, y), &|t| {
            let m = 1.0 - t;
            let (a, b, c, d) = (m * m * m, 3.0 * m * m * t, 3.0 * m * t * t, t * t * t);
            (
                a * p0.0 + b * x1 + c * x2 + d * x,
                a * p0.1 + b * y1 + c * y2 + d * y,
            )
        });
    }

    fn close(&mut self) {
        if self.start != self.last {
            self.push(self.last, self.start);
        }
        self.last = self.start;
    }
}

/// Signed-area accumulation: each line adds, to the pixels it crosses, the area between it and
/// the pixel's right edge (`height × (1 − mid x)`) and the rest to the next pixel; a running
/// sum over the rows then gives the covered area of each pixel.
struct Coverage {
    w: usize,
    h: usize,
    acc: Vec<f32>,
    /// The grid crossings of the line being added, kept between lines.
    ts: Vec<f32>,
}

impl Coverage {
    fn new(w: usize, h: usize) -> Coverage {
        Coverage {
            w,
            h,
            acc: vec![0.0; w * h + 2],
            ts: Vec::new(),
        }
    }

    fn add(&mut self, x: f32, y: f32, dy: f32, mid_x: f32) {
        // Column `w` is the right of the box: the running sum carries it into the next row's
        // first cell, where the row's other edges cancel it. Rounding past the box is clamped.
        let col = (x.max(0.0) as usize).min(self.w);
        let row = (y.max(0.0) as usize).min(self.h.saturating_sub(1));
        let i = row * self.w + col;
        let m = dy * mid_x;
        if let Some(v) = self.acc.get_mut(i) {
            *v += dy - m;
        }
        if let Some(v) = self.acc.get_mut(i + 1) {
            *v += m;
        }
    }

    /// Adds the line from (x0, y0) to (x1, y1), pixel units, y down, split at every pixel
    /// boundary it crosses.
    fn line(&mut self, x0: f32, y0: f32, x1: f32, y1: f32) {
        if y0 == y1 || self.w == 0 || self.h == 0 {
            return;
        }
        let (dx, dy) = (x1 - x0, y1 - y0);
        // Parameters t in (0, 1) where the line crosses a vertical or horizontal grid line.
        let mut ts = std::mem::take(&mut self.ts);
        ts.clear();
        let mut crossings = |a: f32, b: f32, d: f32| {
            if d != 0.0 {
                let (lo, hi) = (a.min(b), a.max(b));
                let mut k = lo.floor() + 1.0;
                while k < hi {
                    ts.push((k - a) / d);
                    k += 1.0;
                }
            }
        };
        crossings(x0, x1, dx);
        crossings(y0, y1, dy);
        crate::support::sort::sort_by(&mut ts, |a, b| a.total_cmp(b));
        let (mut px, mut py) = (x0, y0);
        for &t in ts.iter().chain(&[1.0]) {
            let (nx, ny) = if t >= 1.0 {
                (x1, y1)
            } else {
                (x0 + dx * t, y0 + dy * t)
            };
            let (mx, my) = ((px + nx) * 0.5, (py + ny) * 0.5);
            if ny != py {
                self.add(mx, my, ny - py, mx - mx.floor());
            }
            (px, py) = (nx, ny);
        }
        self.ts = ts;
    }

    fn finish(self) -> Vec<u8> {
        let mut sum = 0.0f32;
        self.acc[..self.w * self.h]
            .iter()
            .map(|&a| {
                sum += a;
                (sum.abs() * 255.9).clamp(0.0, 255.0) as u8
            })
            .collect()
    }
}
