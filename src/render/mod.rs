//! snapcompact rendering: prints conversation text onto PNG frames a vision model reads back.
//!
//! Pipeline: [`text`] (messages → transcript → one drawable line → page strings) →
//! [`raster`] (palette canvas, glyphs from [`font`]) → [`png`] (indexed PNG); both read the
//! colours and the bit depth from [`palette`]. [`shape`]
//! chooses how a frame is printed and what it costs whom. Spec: `snapcompact.md` §2–§8;
//! fonts: `fonts/README.md`. Nothing here knows of sessions, compactions or archives.
//!
//! Everything here is sans-IO and deterministic: the same text, options and registered
//! fallback fonts give the same page strings and the same PNG bytes.

pub mod error;
pub mod font;
pub mod palette;
pub mod png;
pub mod raster;
pub mod shape;
pub mod text;

pub use error::SnapError;
pub use font::{FallbackFont, FallbackFonts, FontName};
pub use png::Compression;
pub use shape::billing::{BillingFamily, ImageBudgets};
pub use shape::catalogue::{Geometry, Ink, Shape, ShapeVariant};
pub use shape::resolve::{resolve_shape, resolve_shape_for_text, ModelTarget};
pub use text::normalize::{normalize, scan_renderability, Renderability};

use raster::{stretch, FrameLayout};
use shape::catalogue as shapes;
use text::cells::{grid_chars, wide_cells};
use text::paginate;
use text::unicode::{DIM_OFF, DIM_ON};

/// Default minimum frame height: some vision back-ends reject images ≤ 32 px tall (spec:
/// snapcompact §7.8). No conformance frame is shorter, so the data does not decide it.
pub const DEFAULT_MIN_HEIGHT: u32 = 64;

/// How to render frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderOptions {
    pub shape: Shape,
    /// Frame width in px; `None` = the shape's `frame_size`.
    pub size: Option<u32>,
    /// Render at most this many pages (first pages first); `None` = all.
    pub max_frames: Option<usize>,
    /// Frames are at least this tall; the area below the text stays background (§7.8).
    pub min_height: u32,
    pub compression: Compression,
}

impl RenderOptions {
    pub fn new(shape: Shape) -> RenderOptions {
        RenderOptions {
            shape,
            size: None,
            max_frames: None,
            min_height: DEFAULT_MIN_HEIGHT,
            compression: Compression::default(),
        }
    }

    /// The frame width in effect.
    pub fn frame_size(&self) -> u32 {
        self.size.unwrap_or(self.shape.frame_size)
    }

    /// Geometry at the frame width in effect.
    pub fn geometry(&self) -> Geometry {
        self.shape.geometry_at(self.frame_size())
    }

    pub(crate) fn check(&self, fallbacks: &FallbackFonts) -> Result<(), SnapError> {
        let size = self.frame_size();
        shapes::check_size(size)?;
        let mut shape = self.shape;
        shape.frame_size = size;
        shape.validate()?;
        if shape.font == FontName::Unifont && fallbacks.is_empty() {
            return Err(SnapError::Font(
                "this shape prints in the fallback font, and none is registered: call \
                 registerFallbackFont with the Unifont asset (or a TTF/OTF) first"
                    .into(),
            ));
        }
        if self.min_height > shapes::MAX_FRAME_SIZE {
            return Err(SnapError::Options(format!(
                "minHeight {} is out of range: use 0 to {}",
                self.min_height,
                shapes::MAX_FRAME_SIZE
            )));
        }
        if self.max_frames == Some(0) {
            return Err(SnapError::Options("maxFrames must be at least 1".into()));
        }
        Ok(())
    }
}

/// One rendered frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub png: Vec<u8>,
    pub width: u32,
    pub height: u32,
    /// Visible characters printed (spec: snapcompact §8).
    pub chars: u32,
    /// Characters per row (per column on doc frames).
    pub cols: u32,
    /// Grid rows (not repeated copies, not the rows used).
    pub rows: u32,
    /// The exact string laid out on this frame.
    pub page: String,
}

/// The page strings `text` prints as: normalize with the shape's font, paginate, finish
/// (spec: snapcompact §8 `renderMany`). Empty or whitespace-only text gives none.
pub fn page_texts(
    text: &str,
    opts: &RenderOptions,
    fallbacks: &FallbackFonts,
) -> Result<Vec<String>, SnapError> {
    opts.check(fallbacks)?;
    let normalized = normalize(text, opts.shape.font, fallbacks);
    let mut pages = paginate::pages(&normalized, &opts.shape, opts.frame_size());
    if let Some(max) = opts.max_frames {
        pages.truncate(max);
    }
    Ok(pages)
}

/// `frameCount(text, opts)`: how many frames [`render_frames`] returns, without rendering.
pub fn frame_count(
    text: &str,
    opts: &RenderOptions,
    fallbacks: &FallbackFonts,
) -> Result<usize, SnapError> {
    opts.check(fallbacks)?;
    let normalized = normalize(text, opts.shape.font, fallbacks);
    let n = paginate::page_count(&normalized, &opts.shape, opts.frame_size());
    Ok(opts.max_frames.map_or(n, |m| n.min(m)))
}

/// `renderFrames(text, opts)`: every page of `text` as a PNG frame, first page first.
pub fn render_frames(
    text: &str,
    opts: &RenderOptions,
    fallbacks: &FallbackFonts,
) -> Result<Vec<Frame>, SnapError> {
    page_texts(text, opts, fallbacks)?
        .into_iter()
        .map(|page| render_page(page, opts, fallbacks))
        .collect()
}

/// Visible characters a page prints (spec: snapcompact §8 `render`).
pub fn page_chars(page: &str, opts: &RenderOptions) -> u32 {
    let geo = opts.geometry();
    if opts.shape.is_doc() {
        let n = page
            .chars()
            .filter(|&c| c != DIM_ON && c != DIM_OFF && c != '\n')
            .count();
        n.min(geo.capacity as usize) as u32
    } else {
        grid_chars(page, geo.capacity, geo.cols, wide_cells(opts.shape.font))
    }
}

/// Where each character of an already-normalized page is printed on a frame of `opts`
/// (cell boxes on the frame; for the stretch path, on the stretched frame).
pub fn layout_page(page: &str, opts: &RenderOptions) -> Vec<raster::PlacedChar> {
    let layout = FrameLayout::new(
        &opts.shape,
        opts.frame_size(),
        opts.shape.cell_width,
        opts.shape.cell_height,
    );
    raster::placements(page, &layout)
}

/// `renderFrame(page, opts)`: prints one already-normalized page (for doc shapes, wrapped
/// lines joined by `\n`) onto a frame (spec: snapcompact §7).
pub fn render_page(
    page: String,
    opts: &RenderOptions,
    fallbacks: &FallbackFonts,
) -> Result<Frame, SnapError> {
    opts.check(fallbacks)?;
    let shape = &opts.shape;
    let size = opts.frame_size();
    let geo = opts.geometry();
    let chars = page_chars(&page, opts);
    let (width, height, png) = if shape.stretches() {
        let (nw, nh) = shape.font.natural_cell();
        let native = FrameLayout::new(shape, size, nw, nh);
        let (g, _) = shape.grid(size);
        let canvas = raster::rasterize(
            &page,
            &native,
            shape.font,
            fallbacks,
            g * nw,
            native.content_height(&page),
        );
        let used_rows = native.used_rows(&page);
        let (dw, dh) = (
            g * shape.cell_width,
            used_rows * native.repeat * shape.cell_height,
        );
        let scaled = stretch::lanczos_rgb(&canvas, dw, dh);
        let height = dh.max(opts.min_height);
        let mut rgb = vec![255u8; size as usize * height as usize * 3];
        let row_bytes = dw.min(size) as usize * 3;
        for y in 0..dh as usize {
            let src = &scaled[y * dw as usize * 3..y * dw as usize * 3 + row_bytes];
            rgb[y * size as usize * 3..y * size as usize * 3 + row_bytes].copy_from_slice(src);
        }
        (
            size,
            height,
            png::encode_rgb(size, height, &rgb, opts.compression)?,
        )
    } else {
        let layout = FrameLayout::new(shape, size, shape.cell_width, shape.cell_height);
        let height = layout.content_height(&page).max(opts.min_height);
        // Plan the palette, then draw straight into PNG scanlines; if the plan turns out
        // inexact (a fully inked frame has no background), draw byte per pixel instead.
        let (inks, exact) = match raster::quick_inks(&page, &layout, shape.font) {
            Some(inks) => (inks | 1, false),
            None => (
                raster::plan_inks(&page, &layout, shape.font, fallbacks, size, height) | 1,
                true,
            ),
        };
        let mut packed = raster::PackedCanvas::new(size, height, inks);
        raster::draw(&page, &layout, shape.font, fallbacks, &mut packed);
        let all_present = || {
            let n = inks.count_ones() as u8;
            if exact {
                packed.contains(0)
            } else {
                (0..n).all(|v| packed.contains(v))
            }
        };
        let png = if !packed.unplanned && all_present() {
            let (depth, data) = (packed.depth, packed.data);
            png::write_indexed(size, height, inks, depth, &data, opts.compression)?
        } else {
            let canvas = raster::rasterize(&page, &layout, shape.font, fallbacks, size, height);
            png::encode_indexed(&canvas, opts.compression)?
        };
        (size, height, png)
    };
    Ok(Frame {
        png,
        width,
        height,
        chars,
        cols: geo.cols,
        rows: geo.rows,
        page,
    })
}
