//! Host option objects → core values: the snapcompact options of the JavaScript API
//! (`{shape, model, frameSize, maxFrames, minHeight, compression}`). Compiled on every
//! target, so the rules are tested natively.

use crate::compaction::snapcompact::{apply_serialize_settings, ArchiveOptions};
use crate::render::error::SnapError;
use crate::render::font::FallbackFonts;
use crate::render::png::Compression;
use crate::render::shape::billing::ImageBudgets;
use crate::render::shape::catalogue::{Shape, ShapeVariant, MAX_FRAME_SIZE};
use crate::render::shape::resolve::{resolve_shape, resolve_shape_for_text, Target};
use crate::render::text::serialize::SerializeOptions;
use crate::render::RenderOptions;
use crate::settings::SerializeSettings;
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

/// Per-provider budget overrides `{images?: {provider: n}, bytes?: {provider: n}}` (spec:
/// snapcompact §5.1 `configureProviderImageBudgets` / `…ByteBudgets`).
pub fn image_budgets(v: Option<&Value>) -> Result<ImageBudgets, SnapError> {
    let mut b = ImageBudgets::default();
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(b);
    };
    if !v.is_object() {
        return Err(SnapError::Options(
            "budgets must be an object {images?, bytes?}".into(),
        ));
    }
    let map = |k: &str| -> Result<Vec<(String, f64)>, SnapError> {
        match v.get(k) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(p, n)| match n.as_f64() {
                    Some(f) if f >= 0.0 && f.is_finite() => Ok((p.clone(), f)),
                    _ => Err(SnapError::Options(format!(
                        "{k}.{p} must be a non-negative number"
                    ))),
                })
                .collect(),
            Some(_) => Err(SnapError::Options(format!(
                "{k} must be an object of provider → number"
            ))),
        }
    };
    for (p, n) in map("images")? {
        b.set_count(p, n as u32);
    }
    for (p, n) in map("bytes")? {
        b.set_bytes(p, n as u64);
    }
    Ok(b)
}

/// The serializer's options of an options object (`{toolResultMaxChars, toolArgMaxChars,
/// toolCallMaxChars, truncateHeadRatio, dimToolResults, includeThinking}`, spec:
/// snapcompact §6.1) applied to `o`: the settings' reader, as `E_OPTIONS`.
pub fn serialize_options(
    v: Option<&Value>,
    o: &mut SerializeOptions,
) -> Result<SerializeSettings, SnapError> {
    let empty = serde_json::Map::new();
    let map = match v {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(m)) => m,
        Some(_) => return Err(SnapError::Options("options must be an object".into())),
    };
    let s = SerializeSettings::read(map, "").map_err(|e| SnapError::Options(e.to_string()))?;
    apply_serialize_settings(o, &s);
    Ok(s)
}

/// Options of a snapcompact commit from the JS options object over `base` (the plan's own,
/// `snapcompact_options`): `{model, shape, frameSize, maxFrames, minHeight, compression,
/// imageBudgets, nonMessageTokens, textRatio, imageRatio}` and the serializer's options (spec: snapcompact §9.2). A
/// field overrides the plan's; a `model` brings its thinking rule unless `includeThinking` is
/// given. Unlike [`render_options`] the shape stays "auto" until the archive text is known.
pub fn archive_options(
    v: Option<&Value>,
    base: ArchiveOptions,
) -> Result<ArchiveOptions, SnapError> {
    let empty = serde_json::Map::new();
    let o = match v {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(o)) => o,
        Some(_) => return Err(SnapError::Options("options must be an object".into())),
    };
    let mut opts = base;
    if o.get("model").is_some_and(|m| !m.is_null()) {
        let model = target(o.get("model"))?;
        opts.serialize.include_thinking = ArchiveOptions::for_model(model.clone())
            .serialize
            .include_thinking;
        opts.model = model;
    }
    if let Some(shape) = shape_arg(o.get("shape"), &opts.model)? {
        opts.shape = Some(shape);
    } else if o.get("shape").and_then(Value::as_str) == Some("auto") {
        opts.shape = None;
    }
    if let Some(n) = uint(o, "frameSize", 1, MAX_FRAME_SIZE)? {
        opts.frame_size = Some(n);
    }
    if let Some(n) = uint(o, "maxFrames", 1, u32::MAX)? {
        opts.max_frames = Some(n);
    }
    if o.get("compression").is_some_and(|c| !c.is_null()) {
        opts.compression = compression(o)?;
    }
    if let Some(h) = uint(o, "minHeight", 0, MAX_FRAME_SIZE)? {
        opts.min_height = h;
    }
    if o.get("imageBudgets").is_some_and(|b| !b.is_null()) {
        opts.image_budgets = image_budgets(o.get("imageBudgets"))?;
    }
    if let Some(v) = o.get("nonMessageTokens").filter(|v| !v.is_null()) {
        opts.non_message_tokens =
            fields::count("nonMessageTokens", v).map_err(|e| SnapError::Options(e.to_string()))?;
    }
    if let Some(v) = o.get("limitTokens").filter(|v| !v.is_null()) {
        opts.limit_tokens =
            Some(fields::count("limitTokens", v).map_err(|e| SnapError::Options(e.to_string()))?);
    }
    let ratio = |key: &str| -> Result<Option<f64>, SnapError> {
        let Some(v) = o.get(key).filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let r = fields::number(key, v).map_err(|e| SnapError::Options(e.to_string()))?;
        if !(r.is_finite() && r > 0.0) {
            return Err(SnapError::Options(format!(
                "{key} must be a positive number (provider tokens per estimated token)"
            )));
        }
        Ok(Some(r))
    };
    if let Some(r) = ratio("textRatio")? {
        opts.text_ratio = Some(r);
    }
    if let Some(r) = ratio("imageRatio")? {
        opts.image_ratio = r;
    }
    serialize_options(Some(&Value::Object(o.clone())), &mut opts.serialize)?;
    Ok(opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_archive_options() {
        let d = ArchiveOptions::default;
        let o = archive_options(
            Some(&json!({"model": "claude-opus-4-7", "maxFrames": 12,
            "compression": "fast"})),
            d(),
        )
        .expect("valid");
        assert_eq!(o.model.id.as_deref(), Some("claude-opus-4-7"));
        assert_eq!(o.max_frames, Some(12));
        assert_eq!(o.shape, None, "resolved once the archive text is known");
        assert_eq!(o.compression, Compression::parse("fast").expect("known"));
        // A Claude reader leaves thinking out, unless told otherwise.
        assert!(!o.serialize.include_thinking);
        let o = archive_options(
            Some(&json!({"model": "claude-opus-4-7", "includeThinking": true,
                "toolResultMaxChars": "Infinity", "imageBudgets": {"images": {"x": 3}},
                "nonMessageTokens": 900})),
            d(),
        )
        .expect("valid");
        assert!(o.serialize.include_thinking);
        assert_eq!(o.serialize.tool_result_max_chars, None);
        assert_eq!(o.image_budgets.provider_image_budget("x", None), 3);
        assert_eq!(o.non_message_tokens, 900);
        // Nothing given: the base (the plan's options) as it is.
        let base = ArchiveOptions::for_model(Target {
            id: Some("claude-sonnet-4-5".into()),
            api: Some("anthropic-messages".into()),
        });
        assert_eq!(archive_options(None, base.clone()).expect("valid"), base);
        assert_eq!(
            archive_options(Some(&json!({})), base.clone()).expect("valid"),
            base
        );
        for bad in [
            json!({"maxFrames": 0}),
            json!({"model": 3}),
            json!({"truncateHeadRatio": "half"}),
            json!({"toolArgMaxChars": -1}),
            json!({"imageBudgets": {"images": {"x": -1}}}),
            json!({"nonMessageTokens": "many"}),
        ] {
            assert!(archive_options(Some(&bad), d()).is_err(), "{bad}");
        }
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
