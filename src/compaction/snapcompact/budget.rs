//! The frame cap of a compaction (spec: snapcompact §5): how many frames and base64 bytes the
//! archive may hold in the reader's request.

use crate::render::shape::billing::{
    max_frames, FrameCapInputs, ImageBudgets, FRAME_DATA_BYTES_BUDGET,
};

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
    /// Tokens for the user turns of a dropped middle
    /// ([`retained_user_turns`](super::retained_user_turns)).
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
