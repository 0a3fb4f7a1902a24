//! Host option objects → core values: the snapcompact options of the JavaScript API
//! (`{shape, model, frameSize, maxFrames, minHeight, compression}`). Compiled on every
//! target, so the rules are tested natively.

use crate::compaction::snapcompact::ArchiveOptions;
use crate::render::error::SnapError;
use crate::render::font::FallbackFonts;
use crate::render::png::Compression;
use crate::render::shape::catalogue::{Shape, ShapeVariant, MAX_FRAME_SIZE};
use crate::render::shape::resolve::{resolve_shape, resolve_shape_for_text, Target};
use crate::render::RenderOptions;
use crate::support::json::fields;
use serde_json::Value;

/// A model target: `undefined`/`null` → no target; a string → a model id; `{id?, api?}`.
pub fn target(v: Option<&Value>) -> Result<Target, SnapError> {
    let field =
        |o: &serde_json::Map<String, Value>, k: &str| -> Result<Option<String>, SnapError> {
            match o.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(SnapError::Options(format!("model.{k} must be a string"))),
            }
        };
    match v {
        None | Some(Value::Null) => Ok(Target::default()),
        Some(Value::String(id)) => Ok(Target {
            id: Some(id.clone()),
            api: None,
        }),
        Some(Value::Object(o)) => Ok(Target {
            id: field(o, "id")?,
            api: field(o, "api")?,
        }),
        Some(_) => Err(SnapError::Options(
            "model must be a model id string or an object {id?, api?}".into(),
        )),
    }
}

/// A shape argument: `undefined`/`"auto"` (resolve for the target), a variant name (priced
/// for the target's API), or a shape record. `None` means "auto".
pub fn shape_arg(v: Option<&Value>, target: &Target) -> Result<Option<Shape>, SnapError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s == "auto" => Ok(None),
        Some(Value::String(name)) => Ok(Some(resolve_shape(
            target.as_ref(),
            Some(ShapeVariant::parse_or_err(name)?),
        ))),
        Some(v @ Value::Object(_)) => Shape::from_json(v).map(Some),
        Some(_) => Err(SnapError::Shape(
            "a shape must be a shape name or a shape record".into(),
        )),
    }
}

/// The shape a call uses: the explicit one, else the target's shape for `text` (which may
/// switch to the fallback font for CJK-heavy or otherwise unprintable text, §4.5).
pub fn shape_for(
    shape: Option<&Value>,
    target: &Target,
    text: Option<&str>,
    fallbacks: &FallbackFonts,
) -> Result<Shape, SnapError> {
    if let Some(s) = shape_arg(shape, target)? {
        return Ok(s);
    }
    Ok(match text {
        Some(t) => resolve_shape_for_text(t, target.as_ref(), None, fallbacks),
        None => resolve_shape(target.as_ref(), None),
    })
}

/// A whole-number option from `min` to `max` (the shared reader, as `E_OPTIONS`).
fn uint(
    o: &serde_json::Map<String, Value>,
    key: &str,
    min: u32,
    max: u32,
) -> Result<Option<u32>, SnapError> {
    o.get(key)
        .filter(|v| !v.is_null())
        .map(|v| fields::whole(key, v, u64::from(min), u64::from(max)).map(|n| n as u32))
        .transpose()
        .map_err(|e| SnapError::Options(e.to_string()))
}

/// Render options from the JS options object; `text` is the text to be rendered when
/// known (for automatic shape choice).
pub fn render_options(
    v: Option<&Value>,
    text: Option<&str>,
    fallbacks: &FallbackFonts,
) -> Result<RenderOptions, SnapError> {
    let empty = serde_json::Map::new();
    let o = match v {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(o)) => o,
        Some(_) => return Err(SnapError::Options("options must be an object".into())),
    };
    let target = target(o.get("model"))?;
    let shape = shape_for(o.get("shape"), &target, text, fallbacks)?;
    let mut opts = RenderOptions::new(shape);
    opts.size = uint(o, "frameSize", 1, MAX_FRAME_SIZE)?;
    opts.max_frames = uint(o, "maxFrames", 1, u32::MAX)?.map(|n| n as usize);
    if let Some(h) = uint(o, "minHeight", 0, MAX_FRAME_SIZE)? {
        opts.min_height = h;
    }
    opts.compression = compression(o)?;
    Ok(opts)
}

fn compression(o: &serde_json::Map<String, Value>) -> Result<Compression, SnapError> {
    match o.get("compression") {
        None | Some(Value::Null) => Ok(Compression::default()),
        Some(Value::String(s)) => Compression::parse(s),
        Some(Value::Number(n)) => Compression::level(n.as_u64().unwrap_or(0) as u32),
        Some(_) => Err(SnapError::Options(
            "compression must be \"tuned\", \"fast\", \"balanced\", \"high\" or a level 1-9".into(),
        )),
    }
}

/// Options of a snapcompact compaction from the JS options object (`{model, shape,
/// frameSize, maxFrames, minHeight, compression}`, spec: snapcompact §9.2): unlike
/// [`render_options`] the shape stays "auto" until the archive text is known.
pub fn archive_options(v: Option<&Value>) -> Result<ArchiveOptions, SnapError> {
    let empty = serde_json::Map::new();
    let o = match v {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(o)) => o,
        Some(_) => return Err(SnapError::Options("options must be an object".into())),
    };
    let model = target(o.get("model"))?;
    let mut opts = ArchiveOptions {
        shape: shape_arg(o.get("shape"), &model)?,
        model,
        frame_size: uint(o, "frameSize", 1, MAX_FRAME_SIZE)?,
        max_frames: uint(o, "maxFrames", 1, u32::MAX)?,
        compression: compression(o)?,
        ..ArchiveOptions::default()
    };
    if let Some(h) = uint(o, "minHeight", 0, MAX_FRAME_SIZE)? {
        opts.min_height = h;
    }
    Ok(opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_archive_options() {
        let o = archive_options(Some(&json!({"model": "claude-opus-4-7", "maxFrames": 12,
            "compression": "fast"})))
        .expect("valid");
        assert_eq!(o.model.id.as_deref(), Some("claude-opus-4-7"));
        assert_eq!(o.max_frames, Some(12));
        assert_eq!(o.shape, None, "resolved once the archive text is known");
        assert_eq!(o.compression, Compression::parse("fast").expect("known"));
        assert!(archive_options(Some(&json!({"maxFrames": 0}))).is_err());
        assert!(archive_options(Some(&json!({"model": 3}))).is_err());
    }

    #[test]
    fn reads_options() {
        let f = FallbackFonts::new();
        let o = render_options(
            Some(
                &json!({"shape": "8on22-bw", "frameSize": 2048, "maxFrames": 3,
            "minHeight": 0, "compression": "high"}),
            ),
            None,
            &f,
        )
        .expect("valid");
        assert_eq!(
            (o.shape.cell_height, o.size, o.max_frames, o.min_height),
            (22, Some(2048), Some(3), 0)
        );
        assert_eq!(o.compression, Compression::High);
        let o = render_options(
            Some(&json!({"model": {"id": "claude-opus-4-7", "api": "anthropic-messages"}})),
            Some("hi"),
            &f,
        )
        .expect("valid");
        assert_eq!((o.shape.cell_width, o.shape.frame_size), (11, 1932));
        let o = render_options(None, None, &f).expect("defaults");
        assert_eq!(o.shape.cell_height, 22);
        for bad in [
            json!({"shape": "zebra"}),
            json!({"frameSize": 0}),
            json!({"frameSize": 1.5}),
            json!({"compression": 12}),
            json!({"model": 5}),
            json!({"maxFrames": 0}),
            json!([]),
        ] {
            assert!(render_options(Some(&bad), None, &f).is_err(), "{bad}");
        }
    }

    #[test]
    fn shape_records_and_names() {
        let t = Target {
            id: None,
            api: Some("openai-responses".into()),
        };
        let s = shape_arg(Some(&json!("8x8r-bw")), &t)
            .expect("ok")
            .expect("shape");
        assert_eq!(s.frame_token_estimate, 2882);
        let rec = s.to_json();
        assert_eq!(shape_arg(Some(&rec), &t).expect("ok"), Some(s));
        assert_eq!(shape_arg(Some(&json!("auto")), &t).expect("ok"), None);
        assert!(shape_arg(Some(&json!({"font": "9x9"})), &t).is_err());
    }
}
