//! The options of an archive (spec: snapcompact §9.2): shape, frame caps, compression and
//! serialization, from the settings and the reader model.

use super::dialect::anthropic_dialect;
use crate::archive::RETAINED_USER_BUDGET_TOKENS;
use crate::error::{Error, Result};
use crate::render::png::Compression;
use crate::render::shape::billing::ImageBudgets;
use crate::render::shape::catalogue::{Shape, ShapeVariant};
use crate::render::shape::resolve::resolve_shape;
use crate::render::shape::resolve::Target;
use crate::render::text::serialize::SerializeOptions;
use crate::render::DEFAULT_MIN_HEIGHT;
use crate::settings::{SerializeSettings, SnapcompactSettings};

pub use crate::tokens::TEXT_RATIO_BOUNDS;

/// Options of [`compact`](fn@super::compact) (spec: snapcompact §9.2).
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
