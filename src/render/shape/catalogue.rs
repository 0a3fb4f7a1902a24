//! Shapes: how a frame prints text (font, cell pitch, ink, columns, repeat, frame size), the
//! geometry alone (spec: snapcompact §3). What a shape costs is decided in
//! [`crate::render::shape::billing`], which shape a reader gets in
//! [`crate::render::shape::resolve`].

use crate::render::error::SnapError;
use crate::render::font::FontName;
use serde_json::{Map, Value};

/// Largest accepted frame edge (spec: snapcompact §2 `MAX_FRAME_SIZE`).
pub const MAX_FRAME_SIZE: u32 = 16384;
/// Cells between the two columns of a doc page (spec: snapcompact §2 `DOC_GUTTER`).
pub const DOC_GUTTER: u32 = 3;

/// Ink scheme (the record's `variant` field): `sent` cycles six hues per sentence, `bw` is
/// black (spec: snapcompact §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ink {
    Sent,
    Bw,
}

impl Ink {
    pub fn parse(s: &str) -> Result<Ink, SnapError> {
        match s {
            "sent" => Ok(Ink::Sent),
            "bw" => Ok(Ink::Bw),
            other => Err(SnapError::Shape(format!(
                "unknown variant {}: use \"sent\" or \"bw\"",
                crate::support::json::js::quoted(other)
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Ink::Sent => "sent",
            Ink::Bw => "bw",
        }
    }
}

/// OpenAI resolution hint forwarded with each image (spec: snapcompact §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageDetail {
    Auto,
    Low,
    High,
    Original,
}

impl ImageDetail {
    pub fn parse(s: &str) -> Result<ImageDetail, SnapError> {
        Ok(match s {
            "auto" => ImageDetail::Auto,
            "low" => ImageDetail::Low,
            "high" => ImageDetail::High,
            "original" => ImageDetail::Original,
            other => {
                return Err(SnapError::Shape(format!(
                    "unknown imageDetail {}: use auto, low, high or original",
                    crate::support::json::js::quoted(other)
                )))
            }
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ImageDetail::Auto => "auto",
            ImageDetail::Low => "low",
            ImageDetail::High => "high",
            ImageDetail::Original => "original",
        }
    }
}

/// The shape record (spec: snapcompact §3.1). "Geometry" is everything but the two billing
/// fields `frame_token_estimate` and `image_detail`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    pub font: FontName,
    pub cell_width: u32,
    pub cell_height: u32,
    /// `Some(false)`: glyphs stay natural size on a bigger cell; unset or `Some(true)`: a cell
    /// that differs from the font's natural cell is reached by Lanczos resampling (§7.7).
    pub stretch: Option<bool>,
    pub ink: Ink,
    pub stopword_dim: bool,
    /// 1, or 2 for the two-column "doc" page.
    pub columns: u32,
    pub line_repeat: u32,
    pub frame_size: u32,
    pub frame_token_estimate: u32,
    pub image_detail: Option<ImageDetail>,
}

/// Columns, rows and capacity of a shape at a frame size (spec: snapcompact §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Geometry {
    /// Characters per row (per column on doc shapes).
    pub cols: u32,
    /// Text rows (not counting repeated copies).
    pub rows: u32,
    /// Cells per frame (nominal for doc shapes).
    pub capacity: u32,
}

impl Shape {
    pub fn is_doc(&self) -> bool {
        self.columns == 2
    }

    /// Whether the frame is reached by the Lanczos stretch path (spec: snapcompact §7.7).
    pub fn stretches(&self) -> bool {
        if self.stretch == Some(false) || self.font == FontName::Unifont {
            return false;
        }
        self.font.natural_cell() != (self.cell_width, self.cell_height)
    }

    /// Grid columns and rows of the whole frame: `G = size / cellWidth`,
    /// `R = size / cellHeight / lineRepeat` (spec: snapcompact §3.3).
    pub fn grid(&self, size: u32) -> (u32, u32) {
        let g = size / self.cell_width.max(1);
        let r = size / self.cell_height.max(1) / self.line_repeat.max(1);
        (g, r)
    }

    /// Geometry at `size` (spec: snapcompact §3.3).
    pub fn geometry_at(&self, size: u32) -> Geometry {
        let (g, r) = self.grid(size);
        if self.is_doc() {
            let cols = g.saturating_sub(DOC_GUTTER) / 2;
            Geometry {
                cols,
                rows: r,
                capacity: 2 * cols * r,
            }
        } else {
            Geometry {
                cols: g,
                rows: r,
                capacity: g * r,
            }
        }
    }

    /// Geometry at the shape's own frame size.
    pub fn geometry(&self) -> Geometry {
        self.geometry_at(self.frame_size)
    }

    /// The same geometry at another frame size (billing unchanged: re-price separately).
    pub fn with_frame_size(mut self, size: u32) -> Shape {
        self.frame_size = size;
        self
    }

    /// Checks the record's ranges (spec: snapcompact §4.7) and that the frame holds at least
    /// one cell (§7.1).
    pub fn validate(&self) -> Result<(), SnapError> {
        check_size(self.frame_size)?;
        let positive = [
            ("cellWidth", self.cell_width),
            ("cellHeight", self.cell_height),
            ("lineRepeat", self.line_repeat),
            ("frameTokenEstimate", self.frame_token_estimate),
        ];
        for (name, v) in positive {
            if v == 0 {
                return Err(SnapError::Shape(format!(
                    "{name} must be a whole number above 0"
                )));
            }
        }
        if self.columns != 1 && self.columns != 2 {
            return Err(SnapError::Shape(format!(
                "columns must be 1 or 2, not {}",
                self.columns
            )));
        }
        self.check_fits(self.frame_size)
    }

    /// Errors when a frame of `size` cannot hold one cell of this shape.
    pub fn check_fits(&self, size: u32) -> Result<(), SnapError> {
        let (g, r) = self.grid(size);
        let doc_cols = if self.is_doc() {
            g.saturating_sub(DOC_GUTTER) / 2
        } else {
            g
        };
        if g == 0 || r == 0 || doc_cols == 0 {
            return Err(SnapError::Shape(format!(
                "frame size {size} cannot fit a {}x{} cell grid (repeat {}{}): use a larger frame \
                 or smaller cells",
                self.cell_width,
                self.cell_height,
                self.line_repeat,
                if self.is_doc() { ", two columns" } else { "" }
            )));
        }
        Ok(())
    }

    /// Reads a shape record as JavaScript writes it (camelCase fields), checking every field
    /// (spec: snapcompact §4.7).
    pub fn from_json(v: &Value) -> Result<Shape, SnapError> {
        let obj = v
            .as_object()
            .ok_or_else(|| SnapError::Shape("a shape must be an object or a shape name".into()))?;
        let font = FontName::parse(req_str(obj, "font")?)
            .map_err(|e| SnapError::Shape(e.message().into()))?;
        let stretch = opt_bool(obj, "stretch")?;
        let stopword_dim = opt_bool(obj, "stopwordDim")?.unwrap_or(false);
        let columns = match obj.get("columns") {
            None | Some(Value::Null) => 1,
            Some(_) => req_uint(obj, "columns")?,
        };
        let image_detail = match obj.get("imageDetail") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(ImageDetail::parse(s)?),
            Some(_) => return Err(SnapError::Shape("imageDetail must be a string".into())),
        };
        let shape = Shape {
            font,
            cell_width: req_uint(obj, "cellWidth")?,
            cell_height: req_uint(obj, "cellHeight")?,
            stretch,
            ink: Ink::parse(req_str(obj, "variant")?)?,
            stopword_dim,
            columns,
            line_repeat: req_uint(obj, "lineRepeat")?,
            frame_size: req_uint(obj, "frameSize")?,
            frame_token_estimate: req_uint(obj, "frameTokenEstimate")?,
            image_detail,
        };
        shape.validate()?;
        Ok(shape)
    }

    /// The record as JavaScript reads it; optional fields appear only when set, like the
    /// reference's records.
    pub fn to_json(&self) -> Value {
        let mut m: Vec<(&str, Value)> = vec![
            ("font", self.font.as_str().into()),
            ("cellWidth", self.cell_width.into()),
            ("cellHeight", self.cell_height.into()),
        ];
        if let Some(s) = self.stretch {
            m.push(("stretch", s.into()));
        }
        m.push(("variant", self.ink.as_str().into()));
        if self.stopword_dim {
            m.push(("stopwordDim", true.into()));
        }
        if self.columns == 2 {
            m.push(("columns", 2.into()));
        }
        m.push(("lineRepeat", self.line_repeat.into()));
        m.push(("frameSize", self.frame_size.into()));
        m.push(("frameTokenEstimate", self.frame_token_estimate.into()));
        if let Some(d) = self.image_detail {
            m.push(("imageDetail", d.as_str().into()));
        }
        Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }
}

/// `isShape(value)` (spec: snapcompact §4.7).
pub fn is_shape(v: &Value) -> bool {
    Shape::from_json(v).is_ok()
}

/// Frame sizes must be 1..=16384 (spec: snapcompact §7.1).
pub fn check_size(size: u32) -> Result<(), SnapError> {
    if size == 0 || size > MAX_FRAME_SIZE {
        return Err(SnapError::Options(format!(
            "frame size {size} is out of range: use 1 to {MAX_FRAME_SIZE} pixels"
        )));
    }
    Ok(())
}

fn req_str<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<&'a str, SnapError> {
    obj.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| SnapError::Shape(format!("shape field {key} must be a string")))
}

fn req_uint(obj: &Map<String, Value>, key: &str) -> Result<u32, SnapError> {
    let v = obj
        .get(key)
        .and_then(Value::as_f64)
        .ok_or_else(|| SnapError::Shape(format!("shape field {key} must be a number")))?;
    if !(v >= 1.0 && v.fract() == 0.0 && v <= u32::MAX as f64) {
        return Err(SnapError::Shape(format!(
            "shape field {key} must be a whole number above 0, not {}",
            crate::support::json::js::number(v)
        )));
    }
    Ok(v as u32)
}

fn opt_bool(obj: &Map<String, Value>, key: &str) -> Result<Option<bool>, SnapError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(SnapError::Shape(format!(
            "shape field {key} must be true or false"
        ))),
    }
}

/// The variant catalogue, in declaration order (spec: snapcompact §3.2). `Unifont16Bw`
/// replaces the reference's `silver16-bw` (accepted as an alias).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShapeVariant {
    V8x8rBw,
    V8x8rSent,
    V8x8uBw,
    V8x8uSent,
    V6x6uBw,
    V6x6uSent,
    V5x8Bw,
    V5x8Sent,
    V6x12Dim,
    V8x13Bw,
    V8on16Bw,
    V8on22Bw,
    V11on16Bw,
    Unifont16Bw,
    Doc8on16Bw,
    Doc8on16Sent,
    Doc8on16SentDim,
}

impl ShapeVariant {
    pub const ALL: [ShapeVariant; 17] = [
        ShapeVariant::V8x8rBw,
        ShapeVariant::V8x8rSent,
        ShapeVariant::V8x8uBw,
        ShapeVariant::V8x8uSent,
        ShapeVariant::V6x6uBw,
        ShapeVariant::V6x6uSent,
        ShapeVariant::V5x8Bw,
        ShapeVariant::V5x8Sent,
        ShapeVariant::V6x12Dim,
        ShapeVariant::V8x13Bw,
        ShapeVariant::V8on16Bw,
        ShapeVariant::V8on22Bw,
        ShapeVariant::V11on16Bw,
        ShapeVariant::Unifont16Bw,
        ShapeVariant::Doc8on16Bw,
        ShapeVariant::Doc8on16Sent,
        ShapeVariant::Doc8on16SentDim,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ShapeVariant::V8x8rBw => "8x8r-bw",
            ShapeVariant::V8x8rSent => "8x8r-sent",
            ShapeVariant::V8x8uBw => "8x8u-bw",
            ShapeVariant::V8x8uSent => "8x8u-sent",
            ShapeVariant::V6x6uBw => "6x6u-bw",
            ShapeVariant::V6x6uSent => "6x6u-sent",
            ShapeVariant::V5x8Bw => "5x8-bw",
            ShapeVariant::V5x8Sent => "5x8-sent",
            ShapeVariant::V6x12Dim => "6x12-dim",
            ShapeVariant::V8x13Bw => "8x13-bw",
            ShapeVariant::V8on16Bw => "8on16-bw",
            ShapeVariant::V8on22Bw => "8on22-bw",
            ShapeVariant::V11on16Bw => "11on16-bw",
            ShapeVariant::Unifont16Bw => "unifont16-bw",
            ShapeVariant::Doc8on16Bw => "doc-8on16-bw",
            ShapeVariant::Doc8on16Sent => "doc-8on16-sent",
            ShapeVariant::Doc8on16SentDim => "doc-8on16-sent-dim",
        }
    }

    /// Other names accepted for catalogue shapes: the reference's `silver16-bw` is printed in
    /// Unifont here.
    pub const ALIASES: [(&'static str, ShapeVariant); 1] =
        [("silver16-bw", ShapeVariant::Unifont16Bw)];

    /// `isShapeVariantName`: the 17 catalogue names plus the aliases; not `auto`.
    pub fn parse(name: &str) -> Option<ShapeVariant> {
        if let Some(&(_, v)) = ShapeVariant::ALIASES
            .iter()
            .find(|(alias, _)| *alias == name)
        {
            return Some(v);
        }
        ShapeVariant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// Like [`ShapeVariant::parse`], with an error that lists the names.
    pub fn parse_or_err(name: &str) -> Result<ShapeVariant, SnapError> {
        ShapeVariant::parse(name).ok_or_else(|| {
            let names: Vec<&str> = ShapeVariant::ALL.iter().map(|v| v.name()).collect();
            SnapError::Shape(format!(
                "unknown shape {}: use one of {}",
                crate::support::json::js::quoted(name),
                names.join(", ")
            ))
        })
    }

    /// The variant's geometry (billing fields zero until priced).
    pub fn geometry(self) -> Shape {
        use FontName::*;
        use ShapeVariant::*;
        let (font, cw, ch, stretch, ink, dim, columns, repeat, size) = match self {
            V8x8rBw => (F8x8, 8, 8, None, Ink::Bw, false, 1, 2, 1568),
            V8x8rSent => (F8x8, 8, 8, None, Ink::Sent, false, 1, 2, 1568),
            V8x8uBw => (F8x8, 8, 8, None, Ink::Bw, false, 1, 1, 1568),
            V8x8uSent => (F8x8, 8, 8, None, Ink::Sent, false, 1, 1, 1568),
            V6x6uBw => (F8x8, 6, 6, None, Ink::Bw, false, 1, 1, 1568),
            V6x6uSent => (F8x8, 6, 6, None, Ink::Sent, false, 1, 1, 1568),
            V5x8Bw => (F5x8, 5, 8, None, Ink::Bw, false, 1, 1, 2576),
            V5x8Sent => (F5x8, 5, 8, None, Ink::Sent, false, 1, 1, 2576),
            V6x12Dim => (F6x12, 6, 12, None, Ink::Bw, true, 1, 1, 1568),
            V8x13Bw => (F8x13, 8, 13, None, Ink::Bw, false, 1, 1, 1568),
            V8on16Bw => (F8x13, 8, 16, Some(false), Ink::Bw, false, 1, 1, 1568),
            V8on22Bw => (F8x13, 8, 22, Some(false), Ink::Bw, false, 1, 1, 1568),
            V11on16Bw => (F8x13, 11, 16, Some(false), Ink::Bw, false, 1, 1, 1568),
            Unifont16Bw => (Unifont, 16, 16, None, Ink::Bw, false, 1, 1, 1568),
            Doc8on16Bw => (F8x13, 8, 16, Some(false), Ink::Bw, false, 2, 1, 1568),
            Doc8on16Sent => (F8x13, 8, 16, Some(false), Ink::Sent, false, 2, 1, 1568),
            Doc8on16SentDim => (F8x13, 8, 16, Some(false), Ink::Sent, true, 2, 1, 1568),
        };
        Shape {
            font,
            cell_width: cw,
            cell_height: ch,
            stretch,
            ink,
            stopword_dim: dim,
            columns,
            line_repeat: repeat,
            frame_size: size,
            frame_token_estimate: 0,
            image_detail: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo(name: &str, size: u32) -> (u32, u32, u32) {
        let g = ShapeVariant::parse(name)
            .expect(name)
            .geometry()
            .geometry_at(size);
        (g.cols, g.rows, g.capacity)
    }

    /// The capacity table of spec §3.3.
    #[test]
    fn capacities() {
        assert_eq!(geo("11on16-bw", 1568), (142, 98, 13916));
        assert_eq!(geo("11on16-bw", 1932), (175, 120, 21000));
        assert_eq!(geo("8on22-bw", 1568), (196, 71, 13916));
        assert_eq!(geo("8on22-bw", 2048), (256, 93, 23808));
        assert_eq!(geo("8on16-bw", 1568), (196, 98, 19208));
        assert_eq!(geo("8on16-bw", 1932), (241, 120, 28920));
        assert_eq!(geo("8on16-bw", 2048), (256, 128, 32768));
        assert_eq!(geo("8x13-bw", 1568), (196, 120, 23520));
        assert_eq!(geo("6x12-dim", 1568), (261, 130, 33930));
        assert_eq!(geo("8x8u-bw", 1568), (196, 196, 38416));
        assert_eq!(geo("8x8r-sent", 1568), (196, 98, 19208));
        assert_eq!(geo("6x6u-sent", 1568), (261, 261, 68121));
        assert_eq!(geo("5x8-bw", 2576), (515, 322, 165830));
        assert_eq!(geo("silver16-bw", 1568), (98, 98, 9604));
        assert_eq!(geo("unifont16-bw", 1932), (120, 120, 14400));
        assert_eq!(geo("unifont16-bw", 2048), (128, 128, 16384));
        assert_eq!(geo("doc-8on16-sent-dim", 1568), (96, 98, 18816));
        assert_eq!(geo("doc-8on16-bw", 2048), (126, 128, 32256));
        // Legacy 5x8 @320 (test 23), 8x8r-bw @320 (test 24), 11on16 @320 (test 25).
        assert_eq!(geo("5x8-sent", 320), (64, 40, 2560));
        assert_eq!(geo("8x8r-bw", 320), (40, 20, 800));
        assert_eq!(geo("11on16-bw", 320), (29, 20, 580));
        assert_eq!(geo("6x6u-sent", 320).0, 53);
    }

    #[test]
    fn names() {
        assert_eq!(ShapeVariant::ALL.len(), 17);
        for v in ShapeVariant::ALL {
            assert_eq!(ShapeVariant::parse(v.name()), Some(v));
        }
        assert_eq!(
            ShapeVariant::parse("silver16-bw"),
            Some(ShapeVariant::Unifont16Bw)
        );
        assert_eq!(ShapeVariant::parse("auto"), None);
        assert_eq!(ShapeVariant::parse("6x10-sent"), None);
    }

    #[test]
    fn only_6x6u_stretches() {
        for v in ShapeVariant::ALL {
            let s = v.geometry();
            assert_eq!(
                s.stretches(),
                matches!(v, ShapeVariant::V6x6uBw | ShapeVariant::V6x6uSent),
                "{v:?}"
            );
        }
    }
}
