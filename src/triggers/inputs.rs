//! What the host reports to the trigger machine (spec: compaction §8.1, §8.2, §8.3–§8.6): the
//! model, an ended turn, a prompt about to be sent, a compaction's outcome — and the facts the
//! machine reads off a reported assistant turn.

use super::{CompactRequest, CompactionMethod};
use crate::session::message::{AssistantMessage, ContentBlock, StopReason};

/// The model a turn runs on, as far as the triggers need it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelInfo {
    pub provider: String,
    pub id: String,
    /// Context window in tokens; 0 = unknown.
    pub context_window: u64,
    /// Maximum output tokens per response; 0 = unknown.
    pub max_output_tokens: u64,
    /// Whether the model reads images (snapcompact needs it, spec: compaction §8.3).
    pub accepts_images: bool,
}

/// The largest token count a host can hand over exactly: 2^53 − 1, JavaScript's safe integers.
pub const MAX_HOST_TOKENS: u64 = (1 << 53) - 1;

impl ModelInfo {
    /// The images a request to this model carries at most: `provider_budget` (its route's,
    /// spec: snapcompact §5.1), none for a model that reads no images.
    pub fn image_budget(&self, provider_budget: u32) -> u32 {
        if self.accepts_images {
            provider_budget
        } else {
            0
        }
    }

    pub(super) fn label(&self) -> String {
        format!("{}/{}", self.provider, self.id)
    }

    /// The model a host describes, its sizes checked (the one check of the package: the
    /// Maintainer's model, a promoted model, and every model a `ContextManager` call takes).
    /// `contextWindow` sets the thresholds (spec: compaction §3.3): a number of tokens from 1
    /// to 2^53 − 1, or absent when unknown; `maxTokens` from 0. Fractions are floored. The
    /// error names the field and the value.
    pub fn from_host(
        provider: String,
        id: String,
        context_window: Option<f64>,
        max_tokens: Option<f64>,
        accepts_images: bool,
    ) -> Result<ModelInfo, String> {
        Ok(ModelInfo {
            provider,
            id,
            context_window: host_size("contextWindow", context_window, 1)?,
            max_output_tokens: host_size("maxTokens", max_tokens, 0)?,
            accepts_images,
        })
    }
}

/// A size of a host's model: absent (0, unknown) or a number of tokens from `min` to
/// [`MAX_HOST_TOKENS`].
fn host_size(field: &str, v: Option<f64>, min: u64) -> Result<u64, String> {
    let Some(v) = v else { return Ok(0) };
    if v >= min as f64 && v <= MAX_HOST_TOKENS as f64 {
        return Ok(v as u64);
    }
    let shown = if v.is_nan() {
        "NaN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else {
        v.to_string()
    };
    let unknown = if min > 0 {
        " (leave it out when unknown)"
    } else {
        ""
    };
    Err(format!(
        "{field} must be a number of tokens from {min} to 2^53 - 1{unknown}, got {shown}"
    ))
}

/// What the host can compact with besides the settings (spec: compaction §8.3): whether a
/// `ContextManager`'s requests can be carried out at all on this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostRoutes {
    /// A summarizer callback: `soft` and `handoff` need one.
    pub summarizer: bool,
    /// A remote endpoint of the host's own (it stands in for a missing summarizer).
    pub remote_endpoint: bool,
    /// A provider-native lane of the model (it serves `remote`).
    pub native_lane: bool,
}

/// An assistant turn that just ended (spec: compaction §8.2).
#[derive(Debug, Clone, Copy)]
pub struct TurnInput<'a> {
    pub assistant: &'a AssistantMessage,
    /// The model now in use (the turn may come from another one).
    pub model: &'a ModelInfo,
    pub now: i64,
    /// The host's local estimate of the live context (system prompt, tools, messages),
    /// counted without encrypted reasoning: the compaction floor of §3.2.
    pub stored_tokens: Option<u64>,
    /// Timestamp (ms) of the latest compaction on the branch; a turn older than it reports
    /// usage of a context that no longer exists (spec §8.2 `errorBeforeCompaction`).
    pub latest_compaction_at: Option<i64>,
    /// `contextPromotion.enabled` and a larger-window model with credentials exists: the
    /// machine may ask the host to promote instead of compacting.
    pub can_promote: bool,
    /// Tokens the host's threshold prune (§6.6) just freed; lowers the size reported to the
    /// compaction, not the trigger (§8.2 [N] step 9).
    pub freed_tokens: u64,
    /// The freed tokens lower the trigger too: the prune ran before the comparison, so the
    /// turn is judged by what the next request will carry (issue 19, the Maintainer's rule;
    /// the reference 18.2.3 compares the billed usage, §6.8).
    pub freed_lowers_trigger: bool,
    /// Between tool-loop provider calls (`maintainContextMidRun`): the run goes on by
    /// itself, so only the threshold is checked and nothing is continued.
    pub mid_run: bool,
}

impl<'a> TurnInput<'a> {
    /// A turn with no optional facts.
    pub fn new(assistant: &'a AssistantMessage, model: &'a ModelInfo, now: i64) -> Self {
        TurnInput {
            assistant,
            model,
            now,
            stored_tokens: None,
            latest_compaction_at: None,
            can_promote: false,
            freed_tokens: 0,
            freed_lowers_trigger: false,
            mid_run: false,
        }
    }
}

/// A user prompt is about to be sent (spec: compaction §8.1 pre-prompt).
#[derive(Debug, Clone, Copy)]
pub struct PromptInput<'a> {
    pub model: &'a ModelInfo,
    pub now: i64,
    /// The last assistant message of the live context, if the host has it at hand;
    /// otherwise the usage remembered from the last reported turn is used.
    pub last_assistant: Option<&'a AssistantMessage>,
    pub stored_tokens: Option<u64>,
    pub latest_compaction_at: Option<i64>,
    pub can_promote: bool,
}

impl<'a> PromptInput<'a> {
    /// A prompt with no optional facts.
    pub fn new(model: &'a ModelInfo, now: i64) -> Self {
        PromptInput {
            model,
            now,
            last_assistant: None,
            stored_tokens: None,
            latest_compaction_at: None,
            can_promote: false,
        }
    }
}

/// What a request/response host reports at a step of its loop (the Maintainer's
/// `beforeRequest` and `afterResponse`): the facts of [`TurnInput`] and [`PromptInput`] the
/// core cannot know.
#[derive(Debug, Clone, Copy)]
pub struct StepInput<'a> {
    /// The model requests go to now.
    pub model: &'a ModelInfo,
    pub now: i64,
    /// The host's estimate of the live context with the request overhead (see
    /// [`TurnInput::stored_tokens`]), measured after the step's prune.
    pub stored_tokens: Option<u64>,
    pub latest_compaction_at: Option<i64>,
    pub can_promote: bool,
    /// [`ContextManager::after_reply`]: the tokens the reply's threshold prune freed.
    ///
    /// [`ContextManager::after_reply`]: super::ContextManager::after_reply
    pub freed_tokens: u64,
    /// [`ContextManager::before_request`]: the live session's state as the host names it
    /// (which session, its size, its leaf); the state [`ContextManager::settle`] last
    /// recorded means nothing was appended since.
    ///
    /// [`ContextManager::before_request`]: super::ContextManager::before_request
    /// [`ContextManager::settle`]: super::ContextManager::settle
    pub state: Option<&'a str>,
    /// [`ContextManager::before_request`]: the request carries the provider's compaction
    /// (spec: compaction §13: the model opted in and the host writes a Responses request,
    /// `compaction::native::openai_inline`): the threshold is the server's first.
    ///
    /// [`ContextManager::before_request`]: super::ContextManager::before_request
    pub server_compaction: bool,
}

impl<'a> StepInput<'a> {
    /// A step with no optional facts.
    pub fn new(model: &'a ModelInfo, now: i64) -> Self {
        StepInput {
            model,
            now,
            stored_tokens: None,
            latest_compaction_at: None,
            can_promote: false,
            freed_tokens: 0,
            state: None,
            server_compaction: false,
        }
    }
}

/// How a compaction the host ran ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompactionOutcome {
    /// The entry was appended. `tokens_after` is its `tokensAfter` (estimate of the rebuilt
    /// context); `stored_tokens` the host's fresh local estimate, if it has one.
    Compacted {
        tokens_after: u64,
        stored_tokens: Option<u64>,
    },
    /// Nothing to summarize (no preparation), after any dead-end rescue the shell tried.
    NothingToCompact,
    /// Aborted by the host or cancelled by a `session_before_compact` hook.
    Aborted,
    /// Every candidate failed; `error` is the last error's message (unprefixed).
    Failed { error: String },
}

impl CompactionOutcome {
    /// How a compaction that threw an error with `code` ended (spec: compaction §8.3):
    /// `E_NOTHING_TO_COMPACT` and `E_ALREADY_COMPACTED` found nothing to compact,
    /// `E_ABORTED` and `E_CANCELLED` (a `session_before_compact` hook) were aborted, any
    /// other error failed with `message`.
    pub fn of_error(code: Option<&str>, message: &str) -> CompactionOutcome {
        match code {
            Some("E_NOTHING_TO_COMPACT" | "E_ALREADY_COMPACTED") => {
                CompactionOutcome::NothingToCompact
            }
            Some("E_ABORTED" | "E_CANCELLED") => CompactionOutcome::Aborted,
            _ => CompactionOutcome::Failed {
                error: message.to_string(),
            },
        }
    }
}

/// The host's report of a compaction (spec: compaction §8.3–§8.6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionReport {
    /// The request the host ran: the one a decision carried, or [`CompactRequest::manual`].
    pub request: CompactRequest,
    pub outcome: CompactionOutcome,
    /// A steer or follow-up message is queued: it drives the next turn (§8.5).
    pub queued_messages: bool,
    /// Manual compaction only: it interrupted a running turn, to be resumed (§8.6).
    pub interrupted_turn: bool,
    /// Manual compaction only: the caller does not want the turn resumed (§8.6).
    pub suppress_continuation: bool,
    /// The method that ran, when the host knows it (its walk may pass the request's first
    /// method over): the end event names its action.
    pub method: Option<CompactionMethod>,
}

impl CompactionReport {
    /// A report with no queued messages and no manual-compaction flags.
    pub fn new(request: CompactRequest, outcome: CompactionOutcome) -> Self {
        CompactionReport {
            request,
            outcome,
            queued_messages: false,
            interrupted_turn: false,
            suppress_continuation: false,
            method: None,
        }
    }
}

/// Text or a tool call: the turn made progress (spec §8.2 [N] step 1).
pub(super) fn delivered_output(a: &AssistantMessage) -> bool {
    a.blocks().iter().any(|b| match b {
        ContentBlock::Text { text } => !text.trim().is_empty(),
        ContentBlock::ToolCall { .. } => true,
        _ => false,
    })
}

/// A finished text answer: nothing left to continue (spec §8.5).
pub(super) fn terminal_text_answer(a: &AssistantMessage) -> bool {
    let blocks = a.blocks();
    a.stop_reason == Some(StopReason::Stop)
        && blocks
            .iter()
            .any(|b| matches!(b, ContentBlock::Text { text } if !text.trim().is_empty()))
        && !blocks
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolCall { .. }))
}

/// Provider and model of the turn equal the current model's. A message that does not say
/// which model produced it is taken as the current model's (the reference would treat it
/// as foreign and never recover it).
pub(super) fn same_model(a: &AssistantMessage, m: &ModelInfo) -> bool {
    a.provider.as_deref().is_none_or(|p| p == m.provider)
        && a.model.as_deref().is_none_or(|id| id == m.id)
}

/// Older than the latest compaction (spec §8.2 `errorBeforeCompaction`).
pub(super) fn predates(timestamp: Option<f64>, compaction_at: Option<i64>) -> bool {
    match (timestamp, compaction_at) {
        (Some(t), Some(c)) => t < c as f64,
        _ => false,
    }
}

pub(super) fn turn_label(a: &AssistantMessage, m: &ModelInfo) -> String {
    match (&a.provider, &a.model) {
        (Some(p), Some(id)) => format!("{p}/{id}"),
        _ => m.label(),
    }
}

pub(super) fn truncated_text(a: &AssistantMessage, m: &ModelInfo) -> String {
    let out = a.usage.as_ref().map_or(0.0, |u| u.output);
    let limit = if out > 0.0 {
        out as u64
    } else {
        m.max_output_tokens
    };
    format!(
        "Response hit the {} output limit ({limit} tokens) and was truncated.",
        turn_label(a, m)
    )
}
