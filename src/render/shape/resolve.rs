//! Shape resolution: which shape a reader model gets, priced for the gateway that carries
//! the request (spec: snapcompact §4.3–§4.6).

use crate::render::font::{FallbackFonts, FontName};
use crate::render::shape::billing::BillingFamily;
use crate::render::shape::catalogue::{Shape, ShapeVariant};
pub(crate) use crate::render::shape::reader::lower_for_matching;
pub use crate::render::shape::reader::{ModelTarget, Target};
use crate::render::text::normalize::{
    collapse_whitespace, has_ansi_introducer, scan_renderability,
};
use crate::render::text::unicode::{is_dropped, is_wide, DIM_OFF, DIM_ON, NEWLINE_GLYPH};

/// The measured-best variant for a model id, with the frame size it earned (spec:
/// snapcompact §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdealShape {
    pub variant: ShapeVariant,
    pub frame_size: Option<u32>,
}

/// Claude kinds the id parser knows (spec: snapcompact §4.3 step 1).
const CLAUDE_KINDS: [&str; 4] = ["opus", "sonnet", "fable", "mythos"];

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Candidate versions at `s[at..]`: 1–3 components of 1–2 digits joined by `.` or `-`, as
/// (components, end), longest first, so callers can backtrack like a regex would.
fn versions_at(s: &[u8], at: usize) -> Vec<(Vec<u32>, usize)> {
    fn rec(s: &[u8], at: usize, comps: &mut Vec<u32>, out: &mut Vec<(Vec<u32>, usize)>) {
        for len in [2usize, 1] {
            let end = at + len;
            if end > s.len() || !s[at..end].iter().all(u8::is_ascii_digit) {
                continue;
            }
            let v = s[at..end]
                .iter()
                .fold(0u32, |a, d| a * 10 + (d - b'0') as u32);
            comps.push(v);
            if comps.len() < 3 && end < s.len() && matches!(s[end], b'.' | b'-') {
                rec(s, end + 1, comps, out);
            }
            out.push((comps.clone(), end));
            comps.pop();
        }
    }
    let mut out = Vec::new();
    rec(s, at, &mut Vec::new(), &mut out);
    // Longest match first (most components, then most digits), like a greedy regex: a
    // stable insertion sort by end, descending (a handful of candidates).
    for i in 1..out.len() {
        let mut j = i;
        while j > 0 && out[j - 1].1 < out[j].1 {
            out.swap(j - 1, j);
            j -= 1;
        }
    }
    out
}

fn boundary_at(s: &[u8], end: usize) -> bool {
    end == s.len() || !is_word(s[end]) || !is_word(s[end - 1])
}

/// Parses `claude-<kind>-<version>` or `claude-<version>-<kind>` anywhere in a lowercase id
/// (spec: snapcompact §4.3 step 1).
fn parse_claude(id: &str) -> Option<(&'static str, Vec<u32>)> {
    let s = id.as_bytes();
    let starts: Vec<usize> = id.match_indices("claude-").map(|(i, _)| i + 7).collect();
    // kind first, anywhere; then version first.
    for &at in &starts {
        for kind in CLAUDE_KINDS {
            let rest = &s[at..];
            if rest.starts_with(kind.as_bytes()) && rest.get(kind.len()) == Some(&b'-') {
                let v_at = at + kind.len() + 1;
                if let Some((v, _)) = versions_at(s, v_at)
                    .into_iter()
                    .find(|(_, end)| boundary_at(s, *end))
                {
                    return Some((kind, v));
                }
            }
        }
    }
    for &at in &starts {
        for (v, end) in versions_at(s, at) {
            if s.get(end) != Some(&b'-') {
                continue;
            }
            for kind in CLAUDE_KINDS {
                let k_end = end + 1 + kind.len();
                if s[end + 1..].starts_with(kind.as_bytes()) && boundary_at(s, k_end) {
                    return Some((kind, v));
                }
            }
        }
    }
    None
}

fn version_at_least(v: &[u32], min: &[u32]) -> bool {
    for i in 0..v.len().max(min.len()) {
        let (a, b) = (
            v.get(i).copied().unwrap_or(0),
            min.get(i).copied().unwrap_or(0),
        );
        if a != b {
            return a > b;
        }
    }
    true
}

/// `idealShapeVariant(modelId)` (spec: snapcompact §4.3): the high-res Claude tier at
/// 1932 px, Gemini at 2048 px, then the measured family defaults; `None` when unmeasured.
pub fn ideal_shape_variant(model_id: &str) -> Option<IdealShape> {
    let id = lower_for_matching(model_id);
    let hi_res = IdealShape {
        variant: ShapeVariant::V11on16Bw,
        frame_size: Some(1932),
    };
    if let Some((kind, version)) = parse_claude(&id) {
        if kind == "fable"
            || kind == "mythos"
            || (kind == "opus" && version_at_least(&version, &[4, 7]))
        {
            return Some(hi_res);
        }
    }
    if let Some(at) = id.find("claude") {
        let after = &id[at..];
        if after.contains("fable") || after.contains("mythos") {
            return Some(hi_res);
        }
        return Some(IdealShape {
            variant: ShapeVariant::V11on16Bw,
            frame_size: None,
        });
    }
    if id.contains("gemini") {
        return Some(IdealShape {
            variant: ShapeVariant::V8on22Bw,
            frame_size: Some(2048),
        });
    }
    if id.contains("gpt") || id.contains("codex") || id.contains("kimi") {
        return Some(IdealShape {
            variant: ShapeVariant::V8on22Bw,
            frame_size: None,
        });
    }
    if id.contains("glm") {
        return Some(IdealShape {
            variant: ShapeVariant::V8on16Bw,
            frame_size: None,
        });
    }
    None
}

/// The family's default variant (spec: snapcompact §4.4 step 4): anthropic → `11on16-bw`,
/// everything else → `8on22-bw`.
pub fn family_default(family: BillingFamily) -> ShapeVariant {
    match family {
        BillingFamily::Anthropic => ShapeVariant::V11on16Bw,
        _ => ShapeVariant::V8on22Bw,
    }
}

/// `resolveShape(target, variant)` (spec: snapcompact §4.4). A forced variant (anything but
/// `None`, i.e. not `auto`) ignores the model id.
pub fn resolve_shape(target: ModelTarget<'_>, variant: Option<ShapeVariant>) -> Shape {
    let family = BillingFamily::of_api(target.api);
    if let Some(v) = variant {
        return v.shape(family);
    }
    let ideal = target.id.and_then(ideal_shape_variant);
    let name = ideal
        .map(|i| i.variant)
        .unwrap_or_else(|| family_default(family));
    let mut geometry = name.geometry();
    if let Some(size) = ideal.and_then(|i| i.frame_size) {
        geometry.frame_size = size;
    }
    crate::render::shape::billing::price_geometry(geometry, family)
}

/// CJK-heavy text (spec: snapcompact §4.5): over the whitespace-collapsed code points,
/// ignoring spaces, toggles, the block glyph and unrenderable code points, at least 8 wide
/// characters making at least a quarter of the graphic ones.
pub fn is_cjk_heavy(text: &str) -> bool {
    // A wide character takes three or four UTF-8 bytes with a lead byte of 0xE1 or more, and
    // printable ASCII always counts as graphic (unless ANSI escapes, which are stripped,
    // hold some): byte counts settle most texts without the full pass.
    if !has_ansi_introducer(text) {
        let (mut leads, mut ascii) = (0usize, 0usize);
        for &b in text.as_bytes() {
            if b >= 0xE1 {
                leads += 1;
            } else if matches!(b, 0x21..=0x7E) {
                ascii += 1;
            }
        }
        if leads < 8 || leads * 4 < ascii {
            return false;
        }
    }
    cjk_heavy_by_count(text)
}

fn cjk_heavy_by_count(text: &str) -> bool {
    let (mut graphic, mut wide) = (0usize, 0usize);
    for c in collapse_whitespace(text).chars() {
        if c == ' ' || c == DIM_ON || c == DIM_OFF || c == NEWLINE_GLYPH || is_dropped(c) {
            continue;
        }
        graphic += 1;
        if is_wide(c) {
            wide += 1;
        }
    }
    wide >= 8 && wide * 4 >= graphic
}

/// `resolveShapeForText(text, target, variant)` (spec: snapcompact §4.5): switch to the
/// fallback-font shape when the text is unsafe in the resolved shape but safe in Unifont, or
/// when it is CJK-heavy and safe in Unifont. Needs a registered fallback font to switch.
pub fn resolve_shape_for_text(
    text: &str,
    target: ModelTarget<'_>,
    variant: Option<ShapeVariant>,
    fallbacks: &FallbackFonts,
) -> Shape {
    let shape = resolve_shape(target, variant);
    if variant.is_some() {
        return shape;
    }
    let unifont = || resolve_shape(target, Some(ShapeVariant::Unifont16Bw));
    let unifont_safe =
        || !fallbacks.is_empty() && scan_renderability(text, FontName::Unifont, fallbacks).is_safe;
    if !scan_renderability(text, shape.font, fallbacks).is_safe {
        return if unifont_safe() { unifont() } else { shape };
    }
    if shape.font != FontName::Unifont
        && !fallbacks.is_empty()
        && is_cjk_heavy(text)
        && unifont_safe()
    {
        return unifont();
    }
    shape
}

/// `denseCompanion(high, api)` (spec: snapcompact §4.6): the LQ tier of a foveated archive,
/// `8on16-bw` at the HQ frame size, when it holds strictly more characters.
pub fn dense_companion(high: &Shape, api: Option<&str>) -> Shape {
    if high.is_doc() || high.font == FontName::Unifont {
        return *high;
    }
    let low = ShapeVariant::V8on16Bw
        .geometry()
        .with_frame_size(high.frame_size);
    let low = crate::render::shape::billing::price_geometry(low, BillingFamily::of_api(api));
    if low.geometry().capacity > high.geometry().capacity {
        low
    } else {
        *high
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::shape::catalogue::ImageDetail;

    fn t<'a>(id: Option<&'a str>, api: Option<&'a str>) -> ModelTarget<'a> {
        ModelTarget { id, api }
    }

    #[test]
    fn lowering_matches_unicode_lower_case() {
        for id in [
            "Claude-Opus-4-7",
            "CLAUDE-\u{212A}IMI",
            "\u{212A}imi-2",
            "G\u{130}MINI",
            "Ωmega-ΣΑΣ-claude-3-5-SONNET",
            "ÀÉÎ-gpt-5",
        ] {
            assert_eq!(
                ideal_shape_variant(id),
                ideal_shape_variant(&id.to_lowercase()),
                "{id}"
            );
            let ascii = |s: &str| s.bytes().filter(u8::is_ascii).collect::<Vec<u8>>();
            assert_eq!(ascii(&lower_for_matching(id)), ascii(&id.to_lowercase()));
        }
        assert_eq!(
            ideal_shape_variant("\u{212A}imi-k2").map(|i| i.variant),
            Some(ShapeVariant::V8on22Bw)
        );
    }

    /// Spec §11 case 13.
    #[test]
    fn presets_by_api() {
        let anthropic = resolve_shape(t(None, Some("anthropic-messages")), None);
        assert_eq!(
            (
                anthropic.cell_width,
                anthropic.cell_height,
                anthropic.frame_size
            ),
            (11, 16, 1568)
        );
        assert_eq!(anthropic.frame_token_estimate, 3293);
        let openai = resolve_shape(t(None, Some("openai-responses")), None);
        assert_eq!(
            openai,
            resolve_shape(t(None, Some("azure-openai-responses")), None)
        );
        assert_eq!(
            (openai.cell_height, openai.image_detail),
            (22, Some(ImageDetail::Original))
        );
        assert_eq!(openai.frame_token_estimate, 2882);
        let google = resolve_shape(t(None, Some("google-generative-ai")), None);
        assert_eq!(
            (google.cell_height, google.frame_token_estimate),
            (22, 1120)
        );
        let unknown = resolve_shape(t(None, Some("mistral-conversations")), None);
        assert_eq!(unknown, resolve_shape(t(None, None), None));
        assert_eq!(
            (
                unknown.cell_height,
                unknown.frame_token_estimate,
                unknown.image_detail
            ),
            (22, 3293, None)
        );
    }

    /// Spec §11 case 14.
    #[test]
    fn model_ids_across_gateways() {
        let fable = resolve_shape(
            t(Some("anthropic/claude-fable-5"), Some("openai-completions")),
            None,
        );
        assert_eq!(fable.font, FontName::F8x13);
        assert_eq!((fable.cell_width, fable.frame_size), (11, 1932));
        assert_eq!(fable.frame_token_estimate, (61 * 61 * 12u32).div_ceil(10));
        assert_eq!(fable.image_detail, Some(ImageDetail::Original));
        let vertex = resolve_shape(
            t(Some("claude-fable-5@20260101"), Some("google-vertex")),
            None,
        );
        assert_eq!(
            (
                vertex.cell_width,
                vertex.frame_size,
                vertex.frame_token_estimate
            ),
            (11, 1932, 1120)
        );
        for id in [
            "claude-opus-4-8",
            "anthropic--claude-4.8-opus",
            "claude-opus-4-10",
            "anthropic/claude-fable-latest",
            "~anthropic/claude-fable-latest",
            "claude-opus-5",
            "claude-opus-6",
            "CLAUDE-OPUS-5",
            "claude-opus-5-11",
            "claude-opus-4-8-20250929",
            "claude-opus-4-7",
        ] {
            assert_eq!(
                resolve_shape(t(Some(id), Some("anthropic-messages")), None).frame_size,
                1932,
                "{id}"
            );
        }
        let preset = resolve_shape(t(None, Some("anthropic-messages")), None);
        for id in ["claude-opus-4-6", "claude-3-5-sonnet", "claude-sonnet-5"] {
            assert_eq!(
                resolve_shape(t(Some(id), Some("anthropic-messages")), None),
                preset,
                "{id}"
            );
        }
        let gemini = resolve_shape(
            t(Some("gemini-3.5-flash"), Some("google-generative-ai")),
            None,
        );
        assert_eq!(
            (
                gemini.frame_size,
                gemini.columns,
                gemini.cell_height,
                gemini.frame_token_estimate
            ),
            (2048, 1, 22, 1120)
        );
        let kimi = resolve_shape(
            t(Some("moonshotai/kimi-k2.6"), Some("openai-completions")),
            None,
        );
        assert_eq!(
            kimi,
            resolve_shape(
                t(None, Some("openai-completions")),
                Some(ShapeVariant::V8on22Bw)
            )
        );
        let glm = resolve_shape(t(Some("z-ai/glm-4.6v"), Some("openai-completions")), None);
        assert_eq!(
            glm,
            resolve_shape(
                t(None, Some("openai-completions")),
                Some(ShapeVariant::V8on16Bw)
            )
        );
        let qwen = resolve_shape(t(Some("qwen/qwen3-vl"), Some("openai-completions")), None);
        assert_eq!(
            qwen,
            resolve_shape(t(None, Some("openai-completions")), None)
        );
        assert_eq!(ideal_shape_variant("qwen/qwen3-vl"), None);
        let forced = resolve_shape(
            t(Some("claude-fable-5"), Some("anthropic-messages")),
            Some(ShapeVariant::V8x8rBw),
        );
        assert_eq!((forced.line_repeat, forced.frame_size), (2, 1568));
    }

    /// Spec §11 cases 15–16.
    #[test]
    fn forced_variants_are_repriced() {
        let s = resolve_shape(
            t(None, Some("anthropic-messages")),
            Some(ShapeVariant::V6x6uSent),
        );
        assert_eq!(
            (s.cell_width, s.ink, s.frame_token_estimate, s.image_detail),
            (6, crate::render::shape::catalogue::Ink::Sent, 3293, None)
        );
        let s = resolve_shape(
            t(None, Some("openai-responses")),
            Some(ShapeVariant::V8x8rBw),
        );
        assert_eq!(
            (s.line_repeat, s.frame_token_estimate, s.image_detail),
            (2, 2882, Some(ImageDetail::Original))
        );
        let s = resolve_shape(
            t(None, Some("google-generative-ai")),
            Some(ShapeVariant::V5x8Bw),
        );
        assert_eq!((s.frame_size, s.frame_token_estimate), (2576, 1120));
        let s = resolve_shape(
            t(None, Some("anthropic-messages")),
            Some(ShapeVariant::V5x8Bw),
        );
        assert_eq!(s.frame_token_estimate, 5024);
        for v in ShapeVariant::ALL {
            for api in [Some("openai-responses"), None] {
                let s = resolve_shape(t(None, api), Some(v));
                assert!(
                    crate::render::shape::catalogue::is_shape(&s.to_json()),
                    "{v:?}"
                );
            }
        }
    }

    #[test]
    fn dense_companions() {
        let high = resolve_shape(t(Some("claude-opus-4-7"), Some("anthropic-messages")), None);
        let low = dense_companion(&high, Some("anthropic-messages"));
        assert_eq!(
            (low.cell_width, low.frame_size, low.geometry().capacity),
            (8, 1932, 28920)
        );
        let doc = ShapeVariant::Doc8on16Bw.shape(BillingFamily::Google);
        assert_eq!(dense_companion(&doc, None), doc);
        let dense = ShapeVariant::V6x12Dim.shape(BillingFamily::Anthropic);
        assert_eq!(dense_companion(&dense, None), dense);
    }

    #[test]
    fn cjk_heavy() {
        assert!(is_cjk_heavy("こんにちは 你好 안녕 世界 한국어"));
        assert!(!is_cjk_heavy("const a = '你好世界';"));
        // The byte-count shortcut agrees with the count around its thresholds.
        for wide in [0, 7, 8, 9, 20] {
            for ascii in [0, 10, 31, 32, 33, 36, 80] {
                for extra in ["", " \n\t", "é😀", "\u{1b}[31mred\u{1b}[0m"] {
                    let t = format!("{}{}{extra}", "字".repeat(wide), "a".repeat(ascii));
                    assert_eq!(is_cjk_heavy(&t), cjk_heavy_by_count(&t), "{t:?}");
                }
            }
        }
        // Without a registered fallback, resolution keeps the bitmap shape.
        let s = resolve_shape_for_text(
            "こんにちは 你好 안녕 世界 한국어",
            t(None, Some("anthropic-messages")),
            None,
            &FallbackFonts::new(),
        );
        assert_eq!(s.font, FontName::F8x13);
    }
}
