//! Exported snapcompact functions: shapes, billing, text pipeline and frame rendering
//! (spec: snapcompact §3–§8). Options arrive as JSON text; frames leave as JS objects
//! holding a `Uint8Array` of PNG bytes. The registered fallback fonts live here, the only
//! process-wide state of the binding.

use super::interop::options::{render_options, serialize_options, shape_arg, shape_for, target};
use super::interop::snapcompact::{arg, budgets, parse_messages};
use super::interop::{opt_string_arg, to_js};
use super::session::WasmSession;
use crate::render::shape::billing::{frame_tokens, BillingFamily};
use crate::render::shape::resolve::Target;
use crate::render::text::dataurl::{elide_data_urls, Elision};
use crate::render::text::serialize::{serialize_conversation, SerializeOptions};
use crate::render::text::{stopwords, wrap};
use crate::render::{
    self, normalize, scan_renderability, FallbackFont, FallbackFonts, Frame, SnapError,
};
use crate::support::json::js::{self, Object};
use serde_json::Value;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

thread_local! {
    static FALLBACKS: RefCell<Rc<FallbackFonts>> = RefCell::new(Rc::new(FallbackFonts::new()));
}

/// The registered fallback fonts (one non-generic accessor: every call site of a generic
/// `LocalKey::with` would be a copy of it in the module).
pub(super) fn fonts() -> Rc<FallbackFonts> {
    FALLBACKS.with(|f| f.borrow().clone())
}

/// A JSON array of strings, as text.
fn strings(items: &mut dyn Iterator<Item = &str>) -> String {
    let mut out = String::from("[");
    for (i, s) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        js::write_string(&mut out, s);
    }
    out.push(']');
    out
}

fn with_fonts<T>(f: impl FnOnce(&FallbackFonts) -> T) -> T {
    f(&fonts())
}

fn set(obj: &js_sys::Object, key: &str, value: JsValue) {
    let _ = js_sys::Reflect::set(obj, &JsValue::from_str(key), &value);
}

fn frame_object(f: Frame) -> JsValue {
    let obj = js_sys::Object::new();
    set(
        &obj,
        "png",
        js_sys::Uint8Array::from(f.png.as_slice()).into(),
    );
    set(&obj, "width", f.width.into());
    set(&obj, "height", f.height.into());
    set(&obj, "chars", f.chars.into());
    set(&obj, "cols", f.cols.into());
    set(&obj, "rows", f.rows.into());
    set(&obj, "page", JsValue::from_str(&f.page));
    obj.into()
}

/// Registers a fallback font (the Unifont asset or a TTF/OTF); returns its glyph count.
#[wasm_bindgen(js_name = snapcompactRegisterFallbackFont)]
pub fn register_fallback_font(bytes: &[u8]) -> Result<u32, JsValue> {
    let font = FallbackFont::from_bytes(bytes).map_err(to_js)?;
    let n = font.glyph_count() as u32;
    FALLBACKS.with(|fonts| Rc::make_mut(&mut fonts.borrow_mut()).push(font));
    Ok(n)
}

/// Forgets every registered fallback font.
#[wasm_bindgen(js_name = snapcompactClearFallbackFonts)]
pub fn clear_fallback_fonts() {
    FALLBACKS.with(|fonts| *fonts.borrow_mut() = Rc::new(FallbackFonts::new()));
}

/// `resolveShape(model, variant)` → shape record JSON. With `text`, applies the text rules
/// of §4.5 (fallback-font shape for CJK-heavy or unprintable text).
#[wasm_bindgen(js_name = snapcompactResolveShape)]
pub fn resolve_shape(
    model_json: Option<String>,
    shape_json: Option<String>,
    text: Option<String>,
) -> Result<String, JsValue> {
    let target = target(arg(model_json, "model")?.as_ref()).map_err(to_js)?;
    let shape = arg(shape_json, "shape")?;
    let s =
        with_fonts(|f| shape_for(shape.as_ref(), &target, text.as_deref(), f)).map_err(to_js)?;
    Ok(js::stringify(&s.to_json()))
}

/// The catalogue ideal for a model id (`{variant, frameSize?}` JSON, or `null`).
#[wasm_bindgen(js_name = snapcompactIdealShapeVariant)]
pub fn ideal_shape_variant(model_id: &str) -> String {
    match render::shape::resolve::ideal_shape_variant(model_id) {
        Some(i) => {
            let mut out = String::new();
            let mut o = Object::open(&mut out);
            o.str("variant", i.variant.name());
            if let Some(size) = i.frame_size {
                o.num("frameSize", f64::from(size));
            }
            o.close();
            out
        }
        None => "null".into(),
    }
}

/// `geometry(shape, size?)` → `{cols, rows, capacity}` JSON.
#[wasm_bindgen(js_name = snapcompactGeometry)]
pub fn geometry(shape_json: &str, size: Option<u32>) -> Result<String, JsValue> {
    let shape = shape_arg(
        arg(Some(shape_json.to_string()), "shape")?.as_ref(),
        &Target::default(),
    )
    .map_err(to_js)?
    .ok_or_else(|| {
        to_js(SnapError::Shape(
            "geometry needs a shape name or record, not \"auto\"".into(),
        ))
    })?;
    let size = size.unwrap_or(shape.frame_size);
    render::shape::catalogue::check_size(size).map_err(to_js)?;
    let g = shape.geometry_at(size);
    Ok(format!(
        "{{\"cols\":{},\"rows\":{},\"capacity\":{}}}",
        g.cols, g.rows, g.capacity
    ))
}

/// `isShape(value)`.
#[wasm_bindgen(js_name = snapcompactIsShape)]
pub fn is_shape(json: &str) -> bool {
    crate::support::json::parse(json).is_ok_and(|v| render::shape::catalogue::is_shape(&v))
}

/// The constants the JS API re-exports, so they have one source (JSON object): frame budgets
/// of `shape::billing`, inline imaging's floors, the notice of an image the provider's budget
/// left out, and the shape-name aliases.
#[wasm_bindgen(js_name = snapcompactConstants)]
pub fn snapcompact_constants() -> String {
    use crate::render::shape::billing as b;
    let mut out = String::new();
    let mut o = Object::open(&mut out);
    o.num("maxFramesDefault", b::MAX_FRAMES_DEFAULT as f64);
    o.num("frameTokenEstimate", b::FRAME_TOKEN_ESTIMATE as f64);
    o.num(
        "frameDataBytesEstimate",
        b::FRAME_DATA_BYTES_ESTIMATE as f64,
    );
    o.num("frameDataBytesBudget", b::FRAME_DATA_BYTES_BUDGET as f64);
    o.num(
        "defaultProviderImageBudget",
        b::DEFAULT_PROVIDER_IMAGE_BUDGET as f64,
    );
    o.num(
        "inlineMinToolResultTokens",
        crate::context::inline::MIN_TOOL_RESULT_TOKENS as f64,
    );
    o.num(
        "inlineMaxSystemPromptFrames",
        crate::context::inline::MAX_SYSTEM_PROMPT_FRAMES as f64,
    );
    o.str("imageOmittedNotice", crate::triggers::IMAGE_OMITTED);
    let mut aliases = Object::open(o.key("shapeAliases"));
    for (alias, v) in render::ShapeVariant::ALIASES {
        aliases.str(alias, v.name());
    }
    aliases.close();
    o.close();
    out
}

/// The catalogue names, in declaration order (JSON array).
#[wasm_bindgen(js_name = snapcompactShapeNames)]
pub fn shape_names() -> String {
    strings(&mut render::ShapeVariant::ALL.iter().map(|v| v.name()))
}

fn shape_of(shape_json: Option<String>, text: &str) -> Result<render::Shape, JsValue> {
    let v = arg(shape_json, "shape")?;
    with_fonts(|f| shape_for(v.as_ref(), &Target::default(), Some(text), f)).map_err(to_js)
}

/// `normalize(text, shape)`.
#[wasm_bindgen(js_name = snapcompactNormalize)]
pub fn normalize_text(text: &str, shape_json: Option<String>) -> Result<String, JsValue> {
    let shape = shape_of(shape_json, text)?;
    Ok(with_fonts(|f| normalize(text, shape.font, f)))
}

/// `scanRenderability(text, shape)` → `{unrenderableRatio, isSafe}` JSON.
#[wasm_bindgen(js_name = snapcompactScanRenderability)]
pub fn scan(text: &str, shape_json: Option<String>) -> Result<String, JsValue> {
    let shape = shape_of(shape_json, text)?;
    let r = with_fonts(|f| scan_renderability(text, shape.font, f));
    let mut out = String::new();
    let mut o = Object::open(&mut out);
    o.num("unrenderableRatio", r.unrenderable_ratio);
    o.bool("isSafe", r.is_safe);
    o.close();
    Ok(out)
}

/// `dimStopwords(text)`.
#[wasm_bindgen(js_name = snapcompactDimStopwords)]
pub fn dim_stopwords(text: &str) -> String {
    stopwords::dim_stopwords(text)
}

/// `wrap(text, width, wideCells)` → JSON array of lines.
#[wasm_bindgen(js_name = snapcompactWrap)]
pub fn wrap_text(text: &str, width: u32, wide_cells: bool) -> String {
    strings(
        &mut wrap::wrap(text, width, wide_cells)
            .iter()
            .map(String::as_str),
    )
}

/// `elideDataUrls(text, mode)`: mode `source` (default) or `archive`.
#[wasm_bindgen(js_name = snapcompactElideDataUrls)]
pub fn elide(text: &str, archive: bool) -> String {
    elide_data_urls(
        text,
        if archive {
            Elision::Archive
        } else {
            Elision::Source
        },
    )
    .into_owned()
}

/// `serializeConversation(messages, options)` (§6.1): messages in the agent's JSON shape.
#[wasm_bindgen(js_name = snapcompactSerialize)]
pub fn serialize(messages_json: &str, options_json: Option<String>) -> Result<String, JsValue> {
    let messages = arg(Some(messages_json.to_string()), "messages")?.unwrap_or(Value::Null);
    let messages = parse_messages(&messages).map_err(to_js)?;
    let mut o = SerializeOptions::default();
    let v = arg(options_json, "options")?;
    serialize_options(v.as_ref(), &mut o).map_err(to_js)?;
    Ok(serialize_conversation(&messages, &o))
}

/// `frameCount(text, options)`.
#[wasm_bindgen(js_name = snapcompactFrameCount)]
pub fn frame_count(text: &str, options_json: Option<String>) -> Result<u32, JsValue> {
    let v = arg(options_json, "options")?;
    with_fonts(|f| {
        let opts = render_options(v.as_ref(), Some(text), f)?;
        render::frame_count(text, &opts, f)
    })
    .map(|n| n as u32)
    .map_err(to_js)
}

/// The page strings of `text` (JSON array), as `renderFrames` would print them.
#[wasm_bindgen(js_name = snapcompactPages)]
pub fn pages(text: &str, options_json: Option<String>) -> Result<String, JsValue> {
    let v = arg(options_json, "options")?;
    with_fonts(|f| {
        let opts = render_options(v.as_ref(), Some(text), f)?;
        render::page_texts(text, &opts, f)
    })
    .map(|p| strings(&mut p.iter().map(String::as_str)))
    .map_err(to_js)
}

/// `renderFrames(text, options)` → array of `{png, width, height, chars, cols, rows, page}`.
#[wasm_bindgen(js_name = snapcompactRenderFrames)]
pub fn render_frames(text: &str, options_json: Option<String>) -> Result<js_sys::Array, JsValue> {
    let v = arg(options_json, "options")?;
    let frames = with_fonts(|f| {
        let opts = render_options(v.as_ref(), Some(text), f)?;
        render::render_frames(text, &opts, f)
    })
    .map_err(to_js)?;
    Ok(frames.into_iter().map(frame_object).collect())
}

/// `renderFrame(page, options)`: one already-normalized page.
#[wasm_bindgen(js_name = snapcompactRenderFrame)]
pub fn render_frame(page: &str, options_json: Option<String>) -> Result<JsValue, JsValue> {
    let v = arg(options_json, "options")?;
    with_fonts(|f| {
        let opts = render_options(v.as_ref(), None, f)?;
        render::render_page(page.to_string(), &opts, f)
    })
    .map(frame_object)
    .map_err(to_js)
}

/// The shape `renderFrames(text, options)` would use (JSON record).
#[wasm_bindgen(js_name = snapcompactShapeFor)]
pub fn shape_for_options(text: &str, options_json: Option<String>) -> Result<String, JsValue> {
    let v = arg(options_json, "options")?;
    with_fonts(|f| render_options(v.as_ref(), Some(text), f))
        .map(|o| js::stringify(&o.shape.with_frame_size(o.frame_size()).to_json()))
        .map_err(to_js)
}

/// Billed tokens of one square frame of `size` px for a wire API (§4.2).
#[wasm_bindgen(js_name = snapcompactFrameTokens)]
pub fn frame_tokens_for(api: JsValue, size: u32) -> Result<u32, JsValue> {
    let api = opt_string_arg(&api, "api")?;
    Ok(frame_tokens(BillingFamily::of_api(api.as_deref()), size))
}

/// Billing family of a wire API: `anthropic`, `openai`, `google` or `unknown`.
#[wasm_bindgen(js_name = snapcompactBillingFamily)]
pub fn billing_family(api: JsValue) -> Result<String, JsValue> {
    let api = opt_string_arg(&api, "api")?;
    Ok(BillingFamily::of_api(api.as_deref()).as_str().into())
}

/// `providerImageBudget(provider, api, overrides)` (§5.1).
#[wasm_bindgen(js_name = snapcompactProviderImageBudget)]
pub fn provider_image_budget(
    provider: &str,
    api: JsValue,
    overrides_json: Option<String>,
) -> Result<u32, JsValue> {
    let api = opt_string_arg(&api, "api")?;
    Ok(budgets(overrides_json)?.provider_image_budget(provider, api.as_deref()))
}

/// `providerImageByteBudget(provider, overrides)` (§5.1): `undefined` unless configured.
#[wasm_bindgen(js_name = snapcompactProviderImageByteBudget)]
pub fn provider_image_byte_budget(
    provider: &str,
    overrides_json: Option<String>,
) -> Result<Option<f64>, JsValue> {
    Ok(budgets(overrides_json)?
        .provider_image_byte_budget(provider)
        .map(|n| n as f64))
}

/// `providerFrameBudget(provider, api, overrides)` = min(image budget, 80) (§2).
#[wasm_bindgen(js_name = snapcompactProviderFrameBudget)]
pub fn provider_frame_budget(
    provider: &str,
    api: JsValue,
    overrides_json: Option<String>,
) -> Result<u32, JsValue> {
    let api = opt_string_arg(&api, "api")?;
    Ok(budgets(overrides_json)?.provider_frame_budget(provider, api.as_deref()))
}

#[wasm_bindgen]
impl WasmSession {
    /// Rewrites the file's snapcompact frames to `to` (`"reference"`: each frame stored once,
    /// later entries refer to it; `"inline"`: the reference's format) and returns what it did
    /// as JSON `{entries, frames, missing, bytesBefore, bytesAfter}` (`archive::stored`).
    /// Throws `E_INVALID_ARGUMENT` for another `to`; the session is unchanged then.
    #[wasm_bindgen(js_name = migrateFramesJson)]
    pub fn migrate_frames_json(&mut self, to: &str) -> Result<String, JsValue> {
        let to = crate::settings::FrameStorage::parse(to).ok_or_else(|| {
            to_js(crate::error::Error::InvalidArgument {
                what: format!("`to` must be \"inline\" or \"reference\", not {to:?}"),
            })
        })?;
        let m = crate::archive::stored::migrate_frames(self.s_mut(), to);
        let mut out = String::new();
        let mut o = Object::open(&mut out);
        o.num("entries", m.entries as f64);
        o.num("frames", m.frames as f64);
        o.num("missing", m.missing as f64);
        o.num("bytesBefore", m.bytes_before as f64);
        o.num("bytesAfter", m.bytes_after as f64);
        o.close();
        Ok(out)
    }
}
