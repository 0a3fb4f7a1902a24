//! The snapcompact strategy (spec: snapcompact §9.2–§9.4): `planArchive` (verbatim text
//! edges around a foveated imaged middle), the deterministic `compact` step that renders the
//! archive, carry-forward of earlier archives and the reading guide shown to the model.
//!
//! Everything here is sans-IO and deterministic: the same messages, previous record, options
//! and registered fallback fonts give the same record and the same PNG bytes.

use crate::archive::*;
use crate::error::{Error, Result};
use crate::render::error::SnapError;
use crate::render::font::FallbackFonts;
use crate::render::png::Compression;
use crate::render::shape::billing::{
    max_frames, FrameCapInputs, ImageBudgets, FRAME_DATA_BYTES_BUDGET, MAX_FRAMES_DEFAULT,
};
use crate::render::shape::catalogue::{Shape, ShapeVariant};
use crate::render::shape::resolve::Target;
use crate::render::shape::resolve::{dense_companion, resolve_shape, resolve_shape_for_text};
use crate::render::text::cells::{paginate_cells, wide_cells};
use crate::render::text::dataurl::{elide_data_urls, Elision};
use crate::render::text::normalize::normalize;
use crate::render::text::paginate::ends_dim;
use crate::render::text::serialize::{
    serialize_conversation, ArchiveMessage, AssistantBlock, SerializeOptions,
};
use crate::render::text::stopwords::dim_stopwords;
use crate::render::text::unicode::{utf16_len, DIM_ON, NEWLINE_GLYPH};
use crate::render::text::wrap::wrap;
use crate::render::{render_page, Frame, RenderOptions, DEFAULT_MIN_HEIGHT};
use crate::settings::{SerializeSettings, SnapcompactSettings};
use crate::summary::fileops::{format_file_operations, FileLists};
use rustc_hash::FxHashSet;
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::BTreeSet;

thread_local! {
    /// The frames of the latest archive rendered on this thread, with their options and the
    /// fallback fonts they were drawn with. The next compaction of a session prints its
    /// archive text from this one's kept text, so most of its pages come out the same and
    /// are taken from here instead of being drawn and compressed again (a page is reused
    /// only when its text, options and fonts are exactly those of the cached frame: the
    /// output does not change). Holds one archive's frames, up to 17 PNGs in practice.
    static LAST_FRAMES: RefCell<(Vec<(RenderOptions, Frame)>, FallbackFonts)> =
        RefCell::default();
}

use crate::support::base64::base64;

// ----- planArchive ------------------------------------------------------------------------

/// One planned frame of the imaged middle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedPage {
    /// The page text (normalized; toggles as they fall).
    pub text: String,
    /// Printed in the dense (LQ) companion shape, not the legible (HQ) one.
    pub dense: bool,
}

/// What `planArchive` decides (spec: snapcompact §9.3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArchiveLayout {
    pub text_head: String,
    pub pages: Vec<PlannedPage>,
    pub text_tail: String,
    /// The kept source: head, the kept middle and tail (what the next compaction re-renders).
    pub kept_text: String,
    /// Characters (UTF-16 units) of middle history dropped to fit `max_frames`.
    pub truncated_chars: u64,
    /// The dropped middle history, oldest first (doc pages with their line breaks as
    /// spaces), and whether it opens inside a `¶user:` scope: the user turns in it are kept
    /// as text ([`retained_user_turns`]).
    pub dropped: String,
    pub dropped_opens_in_user: bool,
}

/// Byte offset after the first `units` UTF-16 units, never inside a character.
fn utf16_prefix_end(s: &str, units: usize) -> usize {
    let mut n = 0;
    for (i, c) in s.char_indices() {
        if n + c.len_utf16() > units {
            return i;
        }
        n += c.len_utf16();
    }
    s.len()
}

/// Byte offset where the last `units` UTF-16 units begin, never inside a character.
fn utf16_suffix_start(s: &str, units: usize) -> usize {
    let mut n = 0;
    for (i, c) in s.char_indices().rev() {
        if n + c.len_utf16() > units {
            return i + c.len_utf8();
        }
        n += c.len_utf16();
    }
    0
}

fn ulen(s: &str) -> u64 {
    utf16_len(s) as u64
}

/// Splits `text` into pages of `shape` (grid: by cells; doc: wrapped line groups).
fn grid_pages<'t>(text: &'t str, shape: &Shape) -> Vec<&'t str> {
    let geo = shape.geometry();
    paginate_cells(
        text,
        geo.capacity.max(1),
        geo.cols.max(1),
        wide_cells(shape.font),
    )
}

/// `planArchive(text, high, low, maxFrames)` (spec: snapcompact §9.3). `high` and `low`
/// carry their frame size. The text head and tail are one HQ capacity each (UTF-16 units,
/// cut on character boundaries); the middle is imaged: all HQ when it fits `max_frames`,
/// else up to [`HQ_EDGE_FRAMES`] HQ frames at each end around a dense LQ centre whose
/// oldest pages are dropped first. Doc shapes are not foveated: the first page and the
/// newest `max_frames − 1` are kept.
pub fn plan_archive(text: &str, high: &Shape, low: &Shape, max_frames: usize) -> ArchiveLayout {
    let edge = TEXT_EDGE_PAGES * high.geometry().capacity as usize;
    let total = utf16_len(text);
    if total <= 2 * edge {
        return ArchiveLayout {
            text_head: text.to_string(),
            kept_text: text.to_string(),
            ..ArchiveLayout::default()
        };
    }
    let head_end = utf16_prefix_end(text, edge);
    let tail_start = utf16_suffix_start(text, edge).max(head_end);
    let (head, middle, tail) = (
        &text[..head_end],
        &text[head_end..tail_start],
        &text[tail_start..],
    );
    if max_frames < 1 {
        return ArchiveLayout {
            text_head: head.to_string(),
            text_tail: tail.to_string(),
            kept_text: format!("{head}{tail}"),
            truncated_chars: ulen(middle),
            pages: Vec::new(),
            dropped: middle.to_string(),
            dropped_opens_in_user: opens_in_user(head),
        };
    }
    let mut out = ArchiveLayout {
        text_head: head.to_string(),
        text_tail: tail.to_string(),
        ..ArchiveLayout::default()
    };
    if high.is_doc() {
        let size = high.frame_size;
        let pages = shape_pages_raw(middle, high, size);
        if pages.len() > max_frames {
            let keep_tail = max_frames - 1;
            let dropped = &pages[1..pages.len() - keep_tail];
            out.truncated_chars = dropped.iter().map(|p| ulen(p)).sum();
            let flat = |p: &String| p.replace('\n', " ");
            out.dropped = dropped.iter().map(flat).collect::<Vec<_>>().join(" ");
            out.dropped_opens_in_user = opens_in_user(&format!("{head}{}", flat(&pages[0])));
            let kept: Vec<String> = std::iter::once(&pages[0])
                .chain(&pages[pages.len() - keep_tail..])
                .cloned()
                .collect();
            let flat: Vec<String> = kept.iter().map(|p| p.replace('\n', " ")).collect();
            out.kept_text = format!("{head}{}{tail}", flat.join(" "));
            out.pages = kept
                .into_iter()
                .map(|text| PlannedPage { text, dense: false })
                .collect();
        } else {
            out.kept_text = text.to_string();
            out.pages = pages
                .into_iter()
                .map(|text| PlannedPage { text, dense: false })
                .collect();
        }
        return out;
    }
    let hi = grid_pages(middle, high);
    if hi.len() <= max_frames {
        out.kept_text = text.to_string();
        out.pages = hi
            .into_iter()
            .map(|p| PlannedPage {
                text: p.to_string(),
                dense: false,
            })
            .collect();
        return out;
    }
    // Foveate: E legible frames at each end, a dense centre, oldest centre dropped first.
    let e = HQ_EDGE_FRAMES.min((max_frames - 1) / 2);
    let head_pages = &hi[..e];
    let tail_pages = &hi[hi.len() - e..];
    let head_len: usize = head_pages.iter().map(|p| p.len()).sum();
    let tail_len: usize = tail_pages.iter().map(|p| p.len()).sum();
    let centre = &middle[head_len..middle.len() - tail_len];
    let lo = grid_pages(centre, low);
    let budget = max_frames - 2 * e;
    let drop = lo.len().saturating_sub(budget);
    out.truncated_chars = lo[..drop].iter().map(|p| ulen(p)).sum();
    out.dropped = lo[..drop].concat();
    let dropped_at = head_end + head_len;
    out.dropped_opens_in_user = opens_in_user(&text[..dropped_at]);
    let kept_lo = &lo[drop..];
    let mut kept = String::with_capacity(text.len());
    kept.push_str(head);
    for p in head_pages.iter().chain(kept_lo).chain(tail_pages) {
        kept.push_str(p);
    }
    kept.push_str(tail);
    out.kept_text = kept;
    out.pages = head_pages
        .iter()
        .map(|p| (p, false))
        .chain(kept_lo.iter().map(|p| (p, true)))
        .chain(tail_pages.iter().map(|p| (p, false)))
        .map(|(p, dense)| PlannedPage {
            text: p.to_string(),
            dense,
        })
        .collect();
    out
}

// ----- user turns of a dropped middle ------------------------------------------------------

/// The scope prefixes of the archive transcript (spec: snapcompact §6.1).
const SCOPES: [&str; 4] = [
    crate::render::text::serialize::USER,
    crate::render::text::serialize::THINK,
    crate::render::text::serialize::AI,
    crate::render::text::serialize::CALL,
];

/// The next scope prefix in `text` from byte `from`: its offset and whether it is `¶user:`.
fn next_scope(text: &str, from: usize) -> Option<(usize, bool)> {
    let mut at = from;
    while let Some(off) = text[at..].find('\u{b6}') {
        let i = at + off;
        if let Some(p) = SCOPES.iter().find(|p| text[i..].starts_with(**p)) {
            return Some((i, *p == SCOPES[0]));
        }
        at = i + '\u{b6}'.len_utf8();
    }
    None
}

/// Whether text continuing `before` is inside a `¶user:` scope (its last scope prefix).
fn opens_in_user(before: &str) -> bool {
    let mut user = false;
    let mut from = 0;
    while let Some((at, is_user)) = next_scope(before, from) {
        user = is_user;
        from = at + '\u{b6}'.len_utf8();
    }
    user
}

/// The user turns of a dropped middle, each opening with `¶user:`, oldest first; a turn cut
/// by the start of `dropped` (`opens_in_user`) is kept from there.
pub fn user_turns(dropped: &str, opens_in_user: bool) -> Vec<String> {
    let mut turns = Vec::new();
    let mut user = opens_in_user;
    let mut start = 0;
    let push = |piece: &str, turns: &mut Vec<String>| {
        let piece = piece.trim_end_matches(NEWLINE_GLYPH);
        if piece.is_empty() || piece == SCOPES[0] {
            return;
        }
        if piece.starts_with(SCOPES[0]) {
            turns.push(piece.to_string());
        } else {
            turns.push(format!("{}{piece}", SCOPES[0]));
        }
    };
    let mut from = 0;
    while let Some((at, is_user)) = next_scope(dropped, from) {
        if user {
            push(&dropped[start..at], &mut turns);
        }
        user = is_user;
        start = at;
        from = at + '\u{b6}'.len_utf8();
    }
    if user {
        push(&dropped[start..], &mut turns);
    }
    turns
}

/// Tokens of retained text, with the model-free estimate (spec: README "Token accounting").
fn estimate(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// The user turns kept verbatim beside the frames (issue 19 point 3: user turns are never
/// silently dropped when the archive overflows). Every `¶user:` turn of the middle history
/// `planArchive` drops joins those an earlier compaction kept; the newest turns are kept
/// within `budget_tokens` (default [`RETAINED_USER_BUDGET_TOKENS`], the budget OpenAI's V2
/// compaction keeps user messages under, spec: compaction §9.2
/// `compaction.v2RetainedMessageBudget`), a turn alone over the budget keeping its newest
/// part. `None` when nothing is kept. Turns are joined by the newline glyph, in order.
pub fn retained_user_turns(
    previous: Option<&str>,
    dropped: &[String],
    budget_tokens: u64,
) -> Option<String> {
    let glyph = NEWLINE_GLYPH.to_string();
    let mut turns: Vec<&str> = Vec::new();
    if let Some(p) = previous.filter(|p| !p.is_empty()) {
        let mut start = 0;
        let sep = format!("{glyph}{}", SCOPES[0]);
        // Each turn opens with `¶user:`: look for the next one after it.
        while let Some(off) = p.get(start + SCOPES[0].len()..).and_then(|r| r.find(&sep)) {
            let at = start + SCOPES[0].len() + off;
            turns.push(&p[start..at]);
            start = at + glyph.len();
        }
        turns.push(&p[start..]);
    }
    turns.extend(dropped.iter().map(String::as_str));
    let mut kept: Vec<String> = Vec::new();
    let mut used = 0u64;
    for t in turns.iter().rev() {
        let cost = estimate(t) + 1;
        if used + cost <= budget_tokens {
            used += cost;
            kept.push((*t).to_string());
            continue;
        }
        if kept.is_empty() && budget_tokens > 0 {
            // The newest turn alone is over the budget: keep its end.
            let bytes = (budget_tokens as usize).saturating_mul(4);
            let mut cut = t.len().saturating_sub(bytes);
            while !t.is_char_boundary(cut) {
                cut += 1;
            }
            kept.push(format!("{}{}", SCOPES[0], &t[cut..]));
        }
        break;
    }
    kept.reverse();
    (!kept.is_empty()).then(|| kept.join(&glyph))
}

/// Doc pages (`docPages`): wrapped lines in groups of `2 × rows`, joined by `\n`, without
/// the finishing pass (the render pass applies it with the carried dim state).
fn shape_pages_raw(text: &str, shape: &Shape, size: u32) -> Vec<String> {
    let geo = shape.geometry_at(size);
    let lines = wrap(text, geo.cols, wide_cells(shape.font));
    let per_page = (2 * geo.rows).max(1) as usize;
    lines.chunks(per_page).map(|c| c.join("\n")).collect()
}

// ----- the reader's dialect -----------------------------------------------------------------

/// How a model-id matcher of the reference's model taxonomy compares (ranked in this order,
/// strongest first, then by token length).
#[derive(Clone, Copy)]
enum Match {
    /// The bare id (after the last `/`) equals the token.
    Exact(&'static str),
    /// The bare id is the token or starts with it followed by `-`, `_`, `.`, `:` or a digit.
    Bounded(&'static str),
    /// A `/`-separated part of the id equals the token.
    Namespace(&'static str),
    /// A `/`, `.` or `:`-separated part of the id matches the token bounded.
    NamespaceBounded(&'static str),
    /// The bare id starts with the token.
    Prefix(&'static str),
    /// The bare id contains the token (the taxonomy's only glob is `*distill-qwen*`).
    Contains(&'static str),
}

impl Match {
    fn rank(self) -> (u8, usize) {
        match self {
            Match::Exact(t) => (4, t.len()),
            Match::Bounded(t) => (3, t.len()),
            Match::Namespace(t) | Match::NamespaceBounded(t) => (2, t.len()),
            Match::Prefix(t) => (1, t.len()),
            // The glob's token counts its `*`s too.
            Match::Contains(t) => (0, t.len() + 2),
        }
    }

    fn matches(self, lower: &str, bare: &str) -> bool {
        fn bounded(value: &str, token: &str) -> bool {
            value.strip_prefix(token).is_some_and(|rest| {
                rest.bytes()
                    .next()
                    .is_none_or(|b| matches!(b, b'-' | b'_' | b'.' | b':' | b'0'..=b'9'))
            })
        }
        match self {
            Match::Exact(t) => bare == t,
            Match::Bounded(t) => bounded(bare, t),
            Match::Namespace(t) => lower.split('/').any(|p| p == t),
            Match::NamespaceBounded(t) => lower
                .split(['/', '.', ':'])
                .any(|p| !p.is_empty() && bounded(p, t)),
            Match::Prefix(t) => bare.starts_with(t),
            Match::Contains(t) => bare.contains(t),
        }
    }
}

/// The model classes of the reference's taxonomy (`pi-catalog` 18.2.3 `rules.json`) with
/// their matchers, in declaration order; facts needed to classify an id the same way.
const MODEL_CLASSES: &[(&str, &[Match])] = {
    use Match::*;
    &[
        ("ai21", &[Bounded("jamba"), Namespace("ai21")]),
        (
            "amazon",
            &[
                Bounded("nova"),
                Bounded("titan"),
                NamespaceBounded("amazon"),
            ],
        ),
        (
            "anthropic",
            &[
                NamespaceBounded("anthropic"),
                Bounded("anthropic"),
                Bounded("claude"),
            ],
        ),
        ("baidu", &[Bounded("ernie")]),
        ("bytedance", &[Bounded("doubao")]),
        ("cohere", &[Bounded("command"), Namespace("cohere")]),
        (
            "deepseek",
            &[NamespaceBounded("deepseek"), Bounded("deepseek")],
        ),
        ("gemini", &[Bounded("gemini")]),
        ("gemma", &[Bounded("gemma")]),
        ("glm", &[Bounded("glm"), Bounded("zai-glm")]),
        (
            "gpt-oss",
            &[NamespaceBounded("gpt-oss"), Bounded("gpt-oss")],
        ),
        ("kimi", &[Namespace("moonshotai"), Bounded("kimi")]),
        (
            "meta",
            &[
                Bounded("muse-spark"),
                Bounded("llama"),
                Namespace("meta-llama"),
            ],
        ),
        ("mimo", &[Bounded("mimo")]),
        (
            "minimax",
            &[Namespace("minimax"), Bounded("minimax"), Bounded("hailuo")],
        ),
        ("mistral", &[Bounded("mistral"), Bounded("mixtral")]),
        (
            "openai",
            &[
                Namespace("openai"),
                NamespaceBounded("openai"),
                Prefix("gpt-"),
                Prefix("chatgpt-"),
                Prefix("codex-"),
                Exact("o1"),
                Prefix("o1-"),
                Prefix("o1."),
                Exact("o3"),
                Prefix("o3-"),
                Prefix("o3."),
                Exact("o4"),
                Prefix("o4-"),
                Prefix("o4."),
            ],
        ),
        (
            "qwen",
            &[
                Bounded("qwen"),
                Bounded("deepseek-r1-distill-qwen"),
                Contains("distill-qwen"),
            ],
        ),
        ("stepfun", &[Bounded("step")]),
        (
            "xai",
            &[
                Prefix("cursor-grok-"),
                Bounded("grok"),
                Namespace("x-ai"),
                Namespace("xai"),
            ],
        ),
    ]
};

/// Variant suffixes the taxonomy collapses before classifying (the longest that ends the
/// id wins; `-max` not on a `qwen…` id).
const VARIANT_SUFFIXES: [&str; 9] = [
    "-thinking",
    "-extra-high",
    "-none",
    "-minimal",
    "-medium",
    "-xhigh",
    "-high",
    "-low",
    "-max",
];

/// The class of a model id as the reference's `classifyModel("", id, {lenient: true})`
/// decides it: variant suffix collapsed, then the strongest matcher over all classes (a
/// tie between two classes at the strongest rank → `unknown`). Provider-scoped rules do not
/// apply without a provider, and the provider-less overrides name no class of interest.
///
/// The matchers are ASCII: lowering without Unicode's case tables
/// ([`lower_for_matching`]) decides the same as `toLowerCase`.
pub fn model_class(model_id: &str) -> &'static str {
    use crate::render::shape::resolve::lower_for_matching;
    let trimmed = model_id.trim_matches(crate::render::text::unicode::is_js_space);
    let mut logical = trimmed;
    if trimmed.len() == model_id.len() {
        let lower = lower_for_matching(trimmed);
        let bare = lower.rsplit('/').next().unwrap_or("");
        let suffix = VARIANT_SUFFIXES
            .iter()
            .filter(|s| lower.ends_with(*s) && !(**s == "-max" && bare.starts_with("qwen")))
            .max_by_key(|s| s.len());
        if let Some(s) = suffix {
            // The suffix is ASCII, so its lowercase has the same length.
            logical = &trimmed[..trimmed.len() - s.len()];
        }
    }
    let lower = lower_for_matching(logical.trim_matches(crate::render::text::unicode::is_js_space));
    let bare = lower.rsplit('/').next().unwrap_or("");
    let mut winner: Option<((u8, usize), &'static str)> = None;
    let mut tied = false;
    for &(class, matchers) in MODEL_CLASSES {
        for &m in matchers {
            if !m.matches(&lower, bare) {
                continue;
            }
            let rank = m.rank();
            match winner {
                Some((r, c)) if r == rank && c != class => tied = true,
                Some((r, _)) if r >= rank => {}
                _ => {
                    winner = Some((rank, class));
                    tied = false;
                }
            }
        }
    }
    match winner {
        Some((_, class)) if !tied => class,
        _ => "unknown",
    }
}

/// `preferredDialect(model) === "anthropic"`: the reader speaks the Anthropic dialect. The
/// app leaves thinking out of a snapcompact archive for such readers, because the archive is
/// replayed as text into every later request and Claude refuses inputs that reproduce its
/// own reasoning (spec: README "App rules over library defaults", snapcompact §9.5, §9.7;
/// issue 19 point 3).
pub fn anthropic_dialect(model_id: &str) -> bool {
    model_class(model_id) == "anthropic"
}

// ----- compact -----------------------------------------------------------------------------

/// The provider's tokens per token of the core's estimate of text that a host may meet, low
/// and high: the bounds of the rate a snapcompact commit reads from reported usage when the
/// host has not measured it ([`ArchiveOptions::text_ratio`]), and of what the Maintainer's
/// calibration learns (`triggers::calibration`).
pub const TEXT_RATIO_BOUNDS: (f64, f64) = (0.5, 3.0);

/// Options of [`compact`] (spec: snapcompact §9.2).
#[derive(Debug, Clone, PartialEq)]
pub struct ArchiveOptions {
    /// Transcript caps and switches; `include_thinking: false` also scrubs carried text.
    pub serialize: SerializeOptions,
    /// The reader model (`{api, id}`).
    pub model: Target,
    /// An explicit shape (else resolved for the model and the text).
    pub shape: Option<Shape>,
    /// Frame width (default: the shape's).
    pub frame_size: Option<u32>,
    /// Frame cap, clamped to [1, 80] (default 80).
    pub max_frames: Option<u32>,
    /// Minimum frame height in px (spec §7.8; default [`DEFAULT_MIN_HEIGHT`]).
    pub min_height: u32,
    pub compression: Compression,
    /// Token budget of the user turns kept verbatim from a dropped middle (default
    /// [`RETAINED_USER_BUDGET_TOKENS`]; 0 keeps none).
    pub retained_user_tokens: u64,
    /// The host's per-provider image and byte budgets (the commit's frame cap).
    pub image_budgets: ImageBudgets,
    /// Tokens of what the request carries beside the messages (system prompt, tools), for
    /// the commit's frame cap (default 0).
    pub non_message_tokens: u64,
    /// The provider's tokens per token of the core's estimate of text: the commit's fit and
    /// reduction tests weigh text (the archive's edges and guide, the kept tail) by it, frames
    /// stay at their flat charge (issue 36: a provider counting 2x overflowed after snapcompact
    /// compactions whose text edges fit only by the estimate). `None` (the default): the host
    /// has not measured it; the fit weighs text at 1, and the reduction test at 1, at the
    /// rate the provider's last reported usage on the path shows (within
    /// [`TEXT_RATIO_BOUNDS`]; less `non_message_tokens` and the frames it carried), and at the
    /// highest rate of [`TEXT_RATIO_BOUNDS`].
    pub text_ratio: Option<f64>,
    /// The provider's tokens per token of the core's flat frame charge (default 1: providers
    /// bill an image by its pixels, often below the charge), for the same tests.
    pub image_ratio: f64,
    /// The most the compacted context may take in the provider's tokens with the non-message
    /// tokens, when it must land lower than the window's archive budget (the dead-end rescue
    /// rebuilding an oversized archive aims at the progress guard's limit, spec: compaction
    /// §8.3, §8.5); `None`: the window's budget alone.
    pub limit_tokens: Option<u64>,
}

impl Default for ArchiveOptions {
    fn default() -> Self {
        ArchiveOptions {
            serialize: SerializeOptions::default(),
            model: Target::default(),
            shape: None,
            frame_size: None,
            max_frames: None,
            min_height: DEFAULT_MIN_HEIGHT,
            compression: Compression::default(),
            retained_user_tokens: RETAINED_USER_BUDGET_TOKENS,
            image_budgets: ImageBudgets::default(),
            non_message_tokens: 0,
            text_ratio: None,
            image_ratio: 1.0,
            limit_tokens: None,
        }
    }
}

impl ArchiveOptions {
    /// The options the app compacts with for a reader `model` (spec: README "App rules over
    /// library defaults"): the library defaults, with thinking left out of the archive when
    /// the model speaks the Anthropic dialect ([`anthropic_dialect`]).
    pub fn for_model(model: Target) -> ArchiveOptions {
        let mut o = ArchiveOptions::default();
        o.serialize.include_thinking = !model.id.as_deref().is_some_and(anthropic_dialect);
        o.model = model;
        o
    }

    /// [`ArchiveOptions::for_model`] with the `snapcompact.*` settings applied: a named
    /// `snapcompact.shape` (priced for the model's API; `E_SETTINGS` for an unknown name) and
    /// the serializer's options (an explicit `includeThinking` beats the model's rule).
    pub fn from_settings(model: Target, settings: &SnapcompactSettings) -> Result<ArchiveOptions> {
        let mut o = ArchiveOptions::for_model(model);
        apply_serialize_settings(&mut o.serialize, &settings.serialize);
        if let Some(name) = &settings.shape {
            let variant = ShapeVariant::parse_or_err(name).map_err(|e| Error::Settings {
                field: "snapcompact.shape".into(),
                reason: e.to_string(),
            })?;
            o.shape = Some(resolve_shape(o.model.as_ref(), Some(variant)));
        }
        Ok(o)
    }
}

/// Applies the serializer's settings that are set (spec: snapcompact §6.1).
pub fn apply_serialize_settings(o: &mut SerializeOptions, s: &SerializeSettings) {
    let cap = |c: Option<u64>| c.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    if let Some(c) = s.tool_result_max_chars {
        o.tool_result_max_chars = cap(c);
    }
    if let Some(c) = s.tool_arg_max_chars {
        o.tool_arg_max_chars = cap(c);
    }
    if let Some(c) = s.tool_call_max_chars {
        o.tool_call_max_chars = cap(c);
    }
    if let Some(r) = s.truncate_head_ratio {
        o.truncate_head_ratio = r;
    }
    if let Some(b) = s.dim_tool_results {
        o.dim_tool_results = b;
    }
    if let Some(b) = s.include_thinking {
        o.include_thinking = b;
    }
}

// ----- the frame cap of a compaction ----------------------------------------------------------

/// Tokens the summary template adds to an archive with frames (spec: snapcompact §5.2).
const SUMMARY_TEMPLATE_TOKENS: u64 = 2000;

/// What the frame cap of a compaction depends on (spec: snapcompact §5.2, §9.7).
#[derive(Debug, Clone, Copy)]
pub struct FrameCapInput<'a> {
    /// Context window of the reading model; 0 = unknown.
    pub context_window: u64,
    /// `effectiveReserveTokens` for that window.
    pub reserve_tokens: u64,
    /// Tokens outside the messages (system prompt, tools) plus the kept recent messages.
    pub kept_tokens: u64,
    /// HQ capacity of the shape the archive will use (its text edges are one each).
    pub edge_capacity: u32,
    /// Provider and API of the reading model (unknown provider: the floor of 5 images).
    pub provider: Option<&'a str>,
    pub api: Option<&'a str>,
    pub budgets: &'a ImageBudgets,
}

/// What a compaction's archive may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveBudget {
    pub max_frames: u32,
    /// Tokens for the user turns of a dropped middle ([`retained_user_turns`]).
    pub user_turn_tokens: u64,
}

/// The most frames a compaction may archive (spec: snapcompact §5.2, the cap the coding agent
/// computes): `min(frame tokens / 5024, 80, the request byte budget / 170,000, the provider's
/// image budget)`, at least 1 so a text-only archive can land; `None` when the kept history
/// alone fills the window (the method is skipped). With a known window the retained user
/// turns (issue 19 point 3) take at most a quarter of the frame tokens, within
/// `user_turn_tokens`, and the frames share the rest; without one they get
/// `user_turn_tokens`.
pub fn archive_budget(input: &FrameCapInput<'_>, user_turn_tokens: u64) -> Option<ArchiveBudget> {
    let mut user = user_turn_tokens;
    let mut input = *input;
    if input.context_window > 0 {
        let total = input.context_window.saturating_sub(input.reserve_tokens);
        let edges = (2 * u64::from(input.edge_capacity) * 115).div_ceil(400);
        let frames = total
            .saturating_sub(input.kept_tokens)
            .saturating_sub(edges + SUMMARY_TEMPLATE_TOKENS);
        user = user.min(frames / 4);
        if input.kept_tokens < total {
            input.kept_tokens = input.kept_tokens.saturating_add(user);
        }
    }
    Some(ArchiveBudget {
        max_frames: archive_frame_cap(&input)?,
        user_turn_tokens: user,
    })
}

/// The frame cap alone (see [`archive_budget`]).
pub fn archive_frame_cap(input: &FrameCapInput<'_>) -> Option<u32> {
    let provider_frame_budget = input
        .budgets
        .provider_frame_budget(input.provider.unwrap_or(""), input.api);
    let frame_budget_tokens = if input.context_window == 0 {
        None
    } else {
        let total = input.context_window.saturating_sub(input.reserve_tokens);
        if input.kept_tokens >= total {
            return None;
        }
        let edges = (2 * u64::from(input.edge_capacity) * 115).div_ceil(400);
        Some(total as i64 - input.kept_tokens as i64 - (edges + SUMMARY_TEMPLATE_TOKENS) as i64)
    };
    Some(max_frames(FrameCapInputs {
        frame_budget_tokens,
        data_budget_bytes: data_budget(input.budgets, input.provider),
        provider_frame_budget,
    }))
}

/// Base64 bytes one request may carry: the provider's configured byte budget, else the
/// default [`FRAME_DATA_BYTES_BUDGET`] (spec: snapcompact §5.1, §5.4).
pub fn data_budget(budgets: &ImageBudgets, provider: Option<&str>) -> u64 {
    provider
        .and_then(|p| budgets.provider_image_byte_budget(p))
        .unwrap_or(FRAME_DATA_BYTES_BUDGET)
}

/// What the archive is built from (a compaction preparation, spec: snapcompact §9.2).
#[derive(Debug, Clone, Copy)]
pub struct ArchiveInput<'a> {
    /// `messagesToSummarize ++ turnPrefixMessages`, in order.
    pub messages: &'a [ArchiveMessage],
    pub previous_summary: Option<&'a str>,
    pub previous_preserve_data: Option<&'a Value>,
    pub file_lists: &'a FileLists,
    /// The cumulative raw read set (marks modified files `(RW)`).
    pub read_set: Option<&'a BTreeSet<String>>,
}

/// The result of [`compact`].
#[derive(Debug, Clone, PartialEq)]
pub struct ArchiveResult {
    /// The reading guide (or `No prior history.`).
    pub summary: String,
    pub short_summary: String,
    /// The record persisted under `preserveData.snapcompact`.
    pub archive: Archive,
    /// The previous `preserveData` minus a provider replacement history, plus the record.
    pub preserve_data: Value,
    /// The archive serialization of the new messages.
    pub serialized: String,
    /// The HQ shape at the frame size in effect.
    pub shape: Shape,
    /// The rendered frames (PNG bytes, sizes, page texts), oldest first.
    pub frames: Vec<Frame>,
    /// A previous text summary was folded into the archive head.
    pub included_previous_summary: bool,
}

fn snap_options(shape: Shape, o: &ArchiveOptions) -> RenderOptions {
    RenderOptions {
        shape,
        size: Some(shape.frame_size),
        max_frames: None,
        min_height: o.min_height,
        compression: o.compression,
    }
}

/// `compact(preparation, options)` (spec: snapcompact §9.2): serializes the messages, folds
/// in the previous archive's kept source (or a previous text summary), plans and renders the
/// archive, and writes the reading guide. No model is asked anything.
pub fn compact(
    input: ArchiveInput<'_>,
    options: &ArchiveOptions,
    fallbacks: &FallbackFonts,
) -> std::result::Result<ArchiveResult, SnapError> {
    let serialized = serialize_conversation(input.messages, &options.serialize);
    let previous = get_preserved_archive(input.previous_preserve_data);
    let mut previous_text = previous.as_ref().map(printed_source).unwrap_or_default();
    if !previous_text.is_empty() {
        previous_text = elide_data_urls(&previous_text, Elision::Archive).into_owned();
        if !options.serialize.include_thinking {
            previous_text = scrub_thinking(&previous_text);
        }
    }
    let previous_summary = input.previous_summary.filter(|s| !s.is_empty());
    let included_previous_summary = previous_text.is_empty() && previous_summary.is_some();

    let target = options.model.as_ref();
    let shape = match options.shape {
        Some(s) => s,
        None => {
            let probe = renderability_probe_text(
                &serialized,
                input.previous_preserve_data,
                input.previous_summary,
            );
            resolve_shape_for_text(&probe, target, None, fallbacks)
        }
    };
    let size = options.frame_size.unwrap_or(shape.frame_size);
    let high = shape.with_frame_size(size);
    let low = dense_companion(&high, target.api);
    let max_frames = options
        .max_frames
        .unwrap_or(MAX_FRAMES_DEFAULT)
        .clamp(1, MAX_FRAMES_DEFAULT) as usize;
    snap_options(high, options).check(fallbacks)?;

    let mut archive_text = normalize(&serialized, high.font, fallbacks);
    if included_previous_summary {
        let summary = normalize(previous_summary.unwrap_or_default(), high.font, fallbacks);
        let head = format!("{EARLIER_SUMMARY_LABEL} {summary}");
        archive_text = if archive_text.is_empty() {
            head
        } else {
            format!("{head} {RECENT_LABEL} {archive_text}")
        };
    }
    let mut truncated = previous.as_ref().map_or(0, |p| p.truncated_chars);
    if !previous_text.is_empty() {
        archive_text = if archive_text.is_empty() {
            previous_text
        } else {
            format!("{previous_text}{NEWLINE_GLYPH}{archive_text}")
        };
    }
    let archive_text = elide_data_urls(&archive_text, Elision::Source).into_owned();
    let layout = plan_archive(&archive_text, &high, &low, max_frames);
    truncated += layout.truncated_chars;
    let user_turns = retained_user_turns(
        previous.as_ref().and_then(|p| p.user_turns.as_deref()),
        &user_turns(&layout.dropped, layout.dropped_opens_in_user),
        options.retained_user_tokens,
    );

    // Render, carrying the dim state from the text head through the frames (§9.2 step 11).
    let (mut reusable, fonts) = LAST_FRAMES.with(RefCell::take);
    if !fonts.same_as(fallbacks) {
        reusable.clear();
    }
    let mut rendered = Vec::with_capacity(layout.pages.len());
    let mut dim_open = ends_dim(&layout.text_head);
    let mut frames = Vec::with_capacity(layout.pages.len());
    let mut records = Vec::with_capacity(layout.pages.len());
    for page in &layout.pages {
        let shape = if page.dense { low } else { high };
        let mut text = String::with_capacity(page.text.len() + 1);
        if dim_open {
            text.push(DIM_ON);
        }
        text.push_str(&page.text);
        dim_open = ends_dim(&text);
        let text = if shape.stopword_dim {
            dim_stopwords(&text)
        } else {
            text
        };
        let opts = snap_options(shape, options);
        let frame = match reusable
            .iter()
            .position(|(o, f)| *o == opts && f.page == text)
        {
            Some(i) => reusable.swap_remove(i).1,
            None => render_page(text, &opts, fallbacks)?,
        };
        records.push(frame_record(&frame, &shape));
        rendered.push((opts, frame.clone()));
        frames.push(frame);
    }
    LAST_FRAMES.with(|c| c.replace((rendered, fallbacks.clone())));
    let text_tail = if layout.text_tail.is_empty() {
        String::new()
    } else if dim_open {
        format!("{DIM_ON}{}", layout.text_tail)
    } else {
        layout.text_tail.clone()
    };
    let text_head = layout.text_head.clone();
    let total_chars =
        records.iter().map(|f| f.chars).sum::<u64>() + ulen(&text_head) + ulen(&text_tail);
    let mut kept = layout.kept_text.clone();
    if text_tail.len() != layout.text_tail.len() {
        kept.truncate(kept.len() - layout.text_tail.len());
        kept.push_str(&text_tail);
    }

    let archive = Archive {
        frames: records,
        total_chars,
        truncated_chars: truncated,
        text: (!kept.is_empty()).then_some(kept),
        text_head: (!text_head.is_empty()).then_some(text_head),
        text_tail: (!text_tail.is_empty()).then_some(text_tail),
        user_turns,
    };
    let files = files_section(input.file_lists, input.read_set);
    let summary = if archive.frames.is_empty()
        && archive.text_head.is_none()
        && archive.text_tail.is_none()
        && archive.user_turns.is_none()
        && files.is_none()
    {
        NO_PRIOR_HISTORY.to_string()
    } else {
        reading_guide(&GuideFacts {
            frames: &archive.frames,
            high: &high,
            truncated_chars: archive.truncated_chars,
            included_previous_summary,
            user_turns: archive.user_turns.is_some(),
            files: files.as_deref(),
        })
    };
    let short_summary = short_summary(&archive);
    let mut preserve = match input.previous_preserve_data {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    crate::compaction::native::drop_native_records(&mut preserve);
    preserve.insert(PRESERVE_KEY.into(), archive.to_json());
    Ok(ArchiveResult {
        summary,
        short_summary,
        archive,
        preserve_data: Value::Object(preserve),
        serialized,
        shape: high,
        frames,
        included_previous_summary,
    })
}

fn frame_record(frame: &Frame, shape: &Shape) -> ArchiveFrame {
    ArchiveFrame {
        data: base64(&frame.png),
        mime_type: "image/png".into(),
        cols: frame.cols.into(),
        rows: frame.rows.into(),
        chars: frame.chars.into(),
        font: Some(shape.font.as_str().into()),
        variant: Some(shape.ink.as_str().into()),
        line_repeat: (shape.line_repeat != 1).then_some(shape.line_repeat.into()),
        columns: (shape.columns == 2).then_some(2),
        stopword_dim: shape.stopword_dim.then_some(true),
        detail: shape.image_detail.map(|d| d.as_str().into()),
        data_ref: None,
    }
}

/// `1234567` → `1,234,567` (the reference's `toLocaleString()` in en-US).
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The short summary (spec: snapcompact §9.2 step 19).
pub fn short_summary(archive: &Archive) -> String {
    let n = archive.frames.len();
    let mut s = format!(
        "Archived {} chars of history onto {n} snapcompact frame{}",
        thousands(archive.total_chars),
        if n == 1 { "" } else { "s" }
    );
    let text_chars = archive.text_edge_chars();
    if text_chars > 0 {
        s.push_str(&format!(" (+{} chars as text)", thousands(text_chars)));
    }
    s
}

/// The FILES tree (spec: snapcompact §9.2 step 15): the grouped tree of the `<files>` block,
/// without its tags; `None` without files.
fn files_section(lists: &FileLists, read_set: Option<&BTreeSet<String>>) -> Option<String> {
    let block = format_file_operations(&lists.read_files, &lists.modified_files, read_set);
    let inner = block
        .strip_prefix("<files>\n")?
        .strip_suffix("\n</files>")?;
    Some(inner.to_string())
}

// ----- reading guide -------------------------------------------------------------------------

/// Heading underline of the guide (19 `=`, spec: snapcompact §9.4).
const RULE: &str = "===================";

/// The facts the reading guide states (spec: snapcompact §9.4).
pub struct GuideFacts<'a> {
    pub frames: &'a [ArchiveFrame],
    /// The HQ shape at the frame size in effect.
    pub high: &'a Shape,
    pub truncated_chars: u64,
    pub included_previous_summary: bool,
    /// User turns of dropped middle history are kept as text.
    pub user_turns: bool,
    /// The FILES tree.
    pub files: Option<&'a str>,
}

/// The width note: distinct frame widths in first-seen order joined by ` or `, else the HQ
/// width (spec: snapcompact §9.2 step 14).
pub fn width_note(frames: &[ArchiveFrame], high: &Shape) -> String {
    let mut seen: Vec<u64> = Vec::new();
    for f in frames {
        if !seen.contains(&f.cols) {
            seen.push(f.cols);
        }
    }
    if seen.is_empty() {
        seen.push(high.geometry().cols.into());
    }
    seen.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(" or ")
}

/// The reading guide (spec: snapcompact §9.4), in our own words: how the archived history
/// below is laid out (scopes, verbatim text edges, imaged middle and its grid geometry,
/// inks), what was folded in or dropped, the FILES tree, and the HISTORY heading the
/// history blocks follow.
pub fn reading_guide(f: &GuideFacts<'_>) -> String {
    let geo = f.high.geometry();
    let mut s = String::with_capacity(2048);
    s.push_str(
        "Context note: the conversation so far was compacted. Its earlier turns are archived \
         under HISTORY at the end of this message, from oldest to newest. Read all of HISTORY, \
         then carry on with the live conversation that follows it.\n\n",
    );
    s.push_str("How the archived transcript is written:\n");
    s.push_str(
        "- Scope markers `¶user:`, `¶think:`, `¶ai:` and `¶call:` open a user turn, assistant \
         reasoning, an assistant reply and a tool call.\n",
    );
    s.push_str(
        "- A line with no marker belongs to the scope above it; when blocks of the same kind \
         follow each other the marker is written only once.\n",
    );
    s.push_str(
        "- A tool call reads `¶call:name(args)//intent`, where the `//intent` part may be \
         absent; `<out>…</out>` encloses the tool's output.\n\n",
    );
    s.push_str("How to read HISTORY:\n");
    s.push_str("- Plain text there is the verbatim transcript: take it as exact.\n");
    if !f.frames.is_empty() {
        s.push_str(
            "- The middle of the transcript is given as images instead of text. Each image \
             is one page of the same transcript, in reading order, between delimiter lines. A \
             solid black cell stands for a line break, and runs of spaces are printed as one.\n",
        );
        let cols = width_note(f.frames, f.high);
        if f.high.is_doc() {
            s.push_str(&format!(
                "  - Page layout: two columns side by side, each {cols} characters wide and \
                 up to {} rows tall; read the left column from top to bottom, then the right \
                 one.\n",
                geo.rows
            ));
        } else {
            s.push_str(&format!(
                "  - Page layout: a single grid {cols} characters wide and up to {} rows \
                 tall, read left to right and top to bottom. Text is not word-wrapped, so a \
                 word can continue on the next row.\n",
                geo.rows
            ));
        }
        if f.high.ink == crate::render::shape::catalogue::Ink::Sent {
            s.push_str("  - Sentences cycle through six ink colours, one colour per sentence.\n");
        }
        if f.high.stopword_dim {
            s.push_str("  - Function words are printed in dim gray, content words in full ink.\n");
        }
        if f.high.line_repeat > 1 {
            s.push_str(
                "  - Every line is printed twice, first on white and then on a pale yellow \
                 band; the two copies are identical.\n",
            );
        }
    }
    if f.included_previous_summary {
        s.push_str(
            "- HISTORY begins with a condensed digest of still-older context, written before \
             the archived turns.\n",
        );
    }
    if f.truncated_chars > 0 {
        s.push_str(&format!(
            "- About {} characters of older middle history were left out to keep the archive \
             within its budget.\n",
            f.truncated_chars
        ));
    }
    if f.user_turns {
        s.push_str(
            "- The user's own messages from that left-out history are still given word for \
             word, in the text block marked as the kept user turns.\n",
        );
    }
    s.push_str(
        "- When an exact earlier detail matters and its section is hard to read, recover it \
         from the workspace (re-read the file, re-run the command) instead of guessing.\n",
    );
    if let Some(files) = f.files {
        s.push_str(&format!("\nFILES\n{RULE}\n{files}\n"));
    }
    s.push_str(&format!("\nHISTORY\n{RULE}"));
    s
}

// ----- messages ------------------------------------------------------------------------------

/// A provider message (the output of `convertToLlm`: roles `user`, `developer`, `assistant`,
/// `toolResult`) → the transcript's message model (`None` for other roles, `developer`
/// included: the reference's archive serializer prints user, assistant and tool-result
/// messages only, so custom messages and text file mentions stay out, as in the summarizer's
/// plain transcript; conformance `rules/`). `useless` holds the `toolCallId`s of results
/// flagged useless (spec: snapcompact §6.1: those pairs are skipped).
pub fn archive_message(m: &Value, useless: &FxHashSet<Box<str>>) -> Option<ArchiveMessage> {
    let text_of = |v: Option<&Value>| -> String {
        match v {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect(),
            _ => String::new(),
        }
    };
    let s = |b: &Value, k: &str| b.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    match m.get("role").and_then(Value::as_str) {
        Some("user") => Some(ArchiveMessage::User {
            text: text_of(m.get("content")),
        }),
        Some("assistant") => {
            let blocks = m
                .get("content")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                    Some("text") => Some(AssistantBlock::Text(s(b, "text"))),
                    Some("thinking") => Some(AssistantBlock::Thinking(s(b, "thinking"))),
                    Some("toolCall") => Some(AssistantBlock::ToolCall {
                        id: s(b, "id"),
                        name: s(b, "name"),
                        arguments: b
                            .get("arguments")
                            .and_then(Value::as_object)
                            .cloned()
                            .unwrap_or_default(),
                        intent: b.get("intent").and_then(Value::as_str).map(str::to_string),
                    }),
                    _ => None,
                })
                .collect();
            Some(ArchiveMessage::Assistant { blocks })
        }
        Some("toolResult") => {
            let id = s(m, "toolCallId");
            Some(ArchiveMessage::ToolResult {
                useless: useless.contains(id.as_str())
                    || m.get("useless").and_then(Value::as_bool) == Some(true),
                tool_call_id: id,
                text: text_of(m.get("content")),
                is_error: m.get("isError").and_then(Value::as_bool) == Some(true),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_class_tokens_are_lowercase_ascii() {
        // What lets `model_class` lower ids without Unicode's case tables.
        for &(_, matchers) in MODEL_CLASSES {
            for m in matchers {
                let (Match::Exact(t)
                | Match::Bounded(t)
                | Match::Namespace(t)
                | Match::NamespaceBounded(t)
                | Match::Prefix(t)
                | Match::Contains(t)) = *m;
                assert!(
                    t.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()),
                    "{t}"
                );
            }
        }
        assert_eq!(
            model_class("CLAUDE-OPUS-4-7"),
            model_class("claude-opus-4-7")
        );
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(297190), "297,190");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn utf16_edges_do_not_split_pairs() {
        let s = "a😀b";
        assert_eq!(utf16_prefix_end(s, 2), 1);
        assert_eq!(utf16_suffix_start(s, 2), 5);
    }
}
