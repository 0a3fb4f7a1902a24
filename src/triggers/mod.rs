//! The trigger state machine (spec: compaction §8): when to compact, retry, promote, warn or
//! continue — as a sans-IO [`ContextManager`].
//!
//! The host reports what happened (an assistant turn ended, a prompt is about to be sent, the
//! agent sat idle, a promotion or compaction finished), always with `now` in milliseconds, and
//! gets a [`Decision`] back: what to do next. The machine never reads a clock, never waits and
//! never touches the session; the host applies the decision and reports the outcome.
//!
//! Entry points (spec §8.1): [`ContextManager::after_turn`] (post-turn, and mid-run between
//! tool-loop calls), [`ContextManager::before_prompt`], [`ContextManager::before_model_switch`]
//! and [`ContextManager::on_idle`]. Answers come back through
//! [`ContextManager::after_promotion`] and [`ContextManager::after_compaction`] (which also
//! takes manual compactions, §8.6).
//!
//! The machine is here; `inputs` holds what the host reports, `decisions` what it gets back,
//! `methods` which compaction methods can run ([`usable_methods`], shared with a host that
//! walks `methodOrder` itself), `overflow` the provider wordings of an overflow, `json` the
//! host JSON of requests, events, decisions and state.
//!
//! Every threshold is the model's: its `modelThresholds` rule, if any, replaces the settings'
//! `thresholdTokens` / `thresholdPercent` ([`CompactionSettings::for_model`]). A request names
//! the usable methods in order, and its `action` and `strategy` are the first one's; when no
//! method can run for the reason and model, the machine acts as with compaction off.
//!
//! # Applying a decision
//! A [`Decision`] can ask for several things at once (an overflow drops the failed turn *and*
//! compacts). Apply them in this order:
//! 1. emit [`Decision::events`] and show [`Decision::notices`]; write
//!    [`Decision::compaction_warning`] into the latest compaction entry's `warning` field;
//! 2. [`Decision::drop_failed_turn`] (remove the assistant turn just reported from the live
//!    context; also from the session file when `durable`) or
//!    [`Decision::restore_failed_turn`] (put back a turn an earlier decision removed);
//! 3. [`Decision::promote`]: try to switch to a larger-window model, then call
//!    [`ContextManager::after_promotion`] — nothing else is set alongside it;
//! 4. [`Decision::compact`]: emit its [`CompactRequest::start_event`], run it, then call
//!    [`ContextManager::after_compaction`];
//! 5. [`Decision::continuation`]: after `after_ms`, retry the failed request, deliver the
//!    queued messages, or send the auto-continue prompt. [`Decision::block_auto_continue`]
//!    means: do not start a turn on your own (a prompt the user sends is still fine).
//!
//! # Loops
//! [`ContextManager::after_compaction`] never asks for another compaction; a compaction that
//! leaves no headroom (§8.5) blocks the continuation and pauses threshold and idle maintenance
//! until the user sends a prompt, a manual compaction succeeds, or the context falls to the
//! recovery band by other means. Overflow recovery compacts at most once per episode, length
//! stops are recovered at most [`INCOMPLETE_RECOVERY_MAX_RETRIES`] times in a row, and idle
//! maintenance runs at most once per idle period.

mod cache;
mod calibration;
mod classify;
mod decisions;
mod guard;
mod inputs;
mod json;
mod methods;
mod overflow;
pub mod speculation;
mod walk;

pub use cache::{
    break_minimum, cache_pricing, first_message_at, llm_index, rewrite_forecast, CacheClock,
    CacheForecast, CachePricing, PrefixChange, CACHE_PRICING,
};
pub use calibration::{
    count_cut, in_counted, max_count_chars, request_images, Calibration, HostCount, Rates,
    RequestImages, Sample, SentRequest, IMAGE_OMITTED,
};
pub use classify::{classify as classify_error, ErrorClass, ErrorInput};
pub use decisions::{
    compaction_error_message, CompactRequest, CompactionAction, CompactionMethod, CompactionReason,
    Continuation, ContinuationKind, Decision, DropTurn, EntryPoint, Event, ManagerState, Next,
    Notice, NoticeLevel, PromotionRequest, PrunePass, PruneStep, ReplyStep,
};
pub use guard::ProgressGuard;
pub use inputs::{
    CompactionOutcome, CompactionReport, HostRoutes, ModelInfo, PromptInput, StepInput, TurnInput,
    MAX_HOST_TOKENS,
};
pub use methods::{eligible_methods, usable_methods, why_unusable, MethodContext};
pub use overflow::{classify_turn, error_input, is_context_overflow, is_overflow_error_text};
pub use walk::{
    ArchiveFit, OutOfTurn, PruneWindows, Route, ShakePreset, Walk, WalkInput, WalkStep, DEAD_ENDS,
    FINAL_CODES, PRUNE_WINDOWS, REMOTE_COOLDOWN_MS,
};

use crate::error::Error;
use crate::session::message::{AssistantMessage, StopReason};
use crate::settings::{CompactionSettings, Strategy};
use crate::tokens::{
    context_tokens, has_context_token_usage, prompt_tokens, should_compact, threshold_tokens,
    window_budgets,
};
use inputs::{
    delivered_output, predates, same_model, terminal_text_answer, truncated_text, turn_label,
};
use overflow::{classify, usage_overflow, Failure};
use speculation::{Speculation, SpeculationInput, SpeculationStep};
use std::borrow::Cow;

/// Named prune windows in the core's estimate: as given without a host count, else scaled by
/// it ([`HostCount::window_in_estimate`]).
fn in_estimate(
    count: Option<HostCount>,
    windows: &[(&'static str, u64)],
) -> Vec<(&'static str, u64)> {
    windows
        .iter()
        .map(|&(name, tokens)| match count {
            None => (name, tokens),
            Some(c) => (name, c.window_in_estimate(name, tokens as f64) as u64),
        })
        .collect()
}

/// Consecutive no-progress recoveries of `length` stops before giving up (spec: compaction
/// §8.2 [N] step 5, `INCOMPLETE_RECOVERY_MAX_RETRIES`).
pub const INCOMPLETE_RECOVERY_MAX_RETRIES: u32 = 3;

pub use decisions::CONTINUE_DELAY_MS;

/// The second overflow of one episode (spec: compaction §8.2, pi-mono).
pub const OVERFLOW_RETRY_EXHAUSTED: &str = "Context overflow recovery failed after one \
     compact-and-retry attempt. Try reducing context or switching to a larger-context model.";

/// `floor(0.8 · threshold)`, the recovery band of the progress guard (spec: compaction §8.5).
pub use crate::tokens::recovery_band_tokens;

// ----- the machine ----------------------------------------------------------------------

#[derive(Debug, Clone)]
struct UsageMark {
    tokens: u64,
    at: Option<f64>,
}

/// The failed turn a recovery is about.
#[derive(Debug, Clone)]
struct Recovery {
    model: ModelInfo,
    /// `provider/model` that produced the turn.
    label: String,
    origin: (Option<String>, Option<String>),
    context_tokens: u64,
    payload_rejection: bool,
}

/// A post-turn decision waiting for the host's promotion attempt.
#[derive(Debug, Clone)]
enum Pending {
    Overflow(Recovery),
    Incomplete {
        rec: Recovery,
        truncated: String,
    },
    Threshold {
        model: ModelInfo,
        entry: EntryPoint,
        context_tokens: u64,
    },
}

/// The trigger state machine (spec: compaction §8). One per live session.
#[derive(Debug, Clone)]
pub struct ContextManager {
    settings: CompactionSettings,
    /// Consecutive no-progress `length` recoveries of this prompt.
    incomplete_recoveries: u32,
    /// An overflow compact-and-retry ran in this episode (pi-mono).
    overflow_recovery_attempted: bool,
    /// A compaction left no headroom: threshold and idle passes wait (§8.5).
    paused: bool,
    /// Context tokens of the last successful turn, for error turns and prompts.
    last_usage: Option<UsageMark>,
    last_activity_at: Option<i64>,
    idle_compacted: bool,
    /// The last post-turn turn was a finished text answer.
    terminal_text_answer: bool,
    /// The model a promotion moved away from (§8.2 [N] step 4).
    promoted_from: Option<(Option<String>, Option<String>)>,
    pending: Option<Pending>,
    /// The host has a remote route besides `compaction.remoteEndpoint` (§8.3 `remote`).
    remote_route: bool,
    /// `remote` failed: the walk passes it over until then (ms, upstream #13310).
    remote_blocked_until: Option<i64>,
    /// The warnings said once: a model without a context window, and the last window whose
    /// `keepRecentTokens` had to be clamped.
    warned_no_window: bool,
    warned_keep_clamp: Option<u64>,
    /// A reply that asked for tools: checked mid-run before the next request.
    mid_run: Option<AssistantMessage>,
    /// A reply waiting for its check ([`ContextManager::after_reply`]).
    reply: Option<AssistantMessage>,
    /// The host's session state at the end of its last step ([`ContextManager::settle`]).
    settled: Option<String>,
    /// Background compaction (spec: compaction §13): the host allows it, its state, and the
    /// step the last `after_reply` / `before_request` decided.
    spec: SpeculationSlot,
    /// When the provider's cache was last written (`cacheAware`, [`CacheClock`]).
    cache: CacheClock,
}

/// The background compaction's part of the machine ([`ContextManager::speculation_step`]).
#[derive(Debug, Clone, Copy, Default)]
struct SpeculationSlot {
    host: bool,
    state: Speculation,
    step: SpeculationStep,
    /// The context tokens of the last step, for the request of a start.
    tokens: u64,
}

impl ContextManager {
    /// A machine with the given settings (spec: compaction §9.2).
    pub fn new(settings: CompactionSettings) -> Self {
        ContextManager {
            settings,
            incomplete_recoveries: 0,
            overflow_recovery_attempted: false,
            paused: false,
            last_usage: None,
            last_activity_at: None,
            idle_compacted: false,
            terminal_text_answer: false,
            promoted_from: None,
            pending: None,
            remote_route: false,
            remote_blocked_until: None,
            warned_no_window: false,
            warned_keep_clamp: None,
            mid_run: None,
            reply: None,
            settled: None,
            spec: SpeculationSlot::default(),
            cache: CacheClock::default(),
        }
    }

    /// A walk's `remote` method failed at `now` (ms): it waits [`REMOTE_COOLDOWN_MS`].
    pub fn note_remote_failure(&mut self, now: i64) {
        self.remote_blocked_until = Some(now.saturating_add(REMOTE_COOLDOWN_MS));
    }

    /// Whether `remote` still waits out its cooldown at `now` (ms).
    pub fn remote_blocked(&self, now: i64) -> bool {
        self.remote_blocked_until.is_some_and(|t| now < t)
    }

    /// Tells the machine the host can run `remote` without `compaction.remoteEndpoint` (an
    /// endpoint of its own, or a provider-native lane), so requests offer it (§8.3).
    pub fn set_remote_route(&mut self, available: bool) {
        self.remote_route = available;
    }

    /// Refuses settings under which no compaction method could ever run for `model` on this
    /// host (issue 43): for every automatic reason, the methods this machine would request
    /// are walked as the host runs them ([`Walk`], with the host's summarizer and routes), and
    /// when no walk has a method to run the error is `E_SETTINGS` naming why. A configuration
    /// where some method runs for some reason is accepted: an overflow ends with `soft` when a
    /// summarizer can write it, and a remote endpoint stands in for a missing summarizer.
    /// Compaction switched off (`enabled: false`, strategy `off`, an empty `methodOrder`) is
    /// accepted as what it says.
    pub fn check_methods(&self, model: &ModelInfo, host: HostRoutes) -> Result<(), Error> {
        if !self.compaction_available() {
            return Ok(());
        }
        let reasons = [
            CompactionReason::Threshold,
            CompactionReason::Overflow,
            CompactionReason::Incomplete,
            CompactionReason::Idle,
        ];
        let walk = |reason, methods| {
            Walk::new(WalkInput {
                methods: Some(methods),
                summarizer: host.summarizer,
                remote_endpoint: host.remote_endpoint,
                native_lane: host.native_lane,
                ..WalkInput::new(reason, self.settings.clone(), model.clone())
            })
        };
        for reason in reasons {
            let requested = self.methods(reason, model, false);
            // No request for this reason: the machine acts as with compaction off.
            if !requested.is_empty() && !walk(reason, requested).methods().is_empty() {
                return Ok(());
            }
        }
        // Why, method by method, as the walks of the whole order say it.
        let order: Vec<CompactionMethod> = self
            .settings
            .method_order
            .iter()
            .filter_map(|m| CompactionMethod::named(m))
            .collect();
        let mut why: Vec<(CompactionMethod, &'static str)> = Vec::new();
        for reason in reasons {
            for &(m, text) in walk(reason, order.clone()).skipped() {
                if !why.iter().any(|(x, _)| *x == m) {
                    why.push((m, text));
                }
            }
        }
        let mut text: Vec<String> = why
            .iter()
            .map(|(m, text)| format!("{} ({text})", m.as_str()))
            .collect();
        if !host.summarizer && !order.contains(&CompactionMethod::Soft) {
            text.push(
                "and the LLM summary (soft) an overflow falls back to needs a summarizer".into(),
            );
        }
        Err(Error::Settings {
            field: "methodOrder".into(),
            reason: format!(
                "no compaction method can ever run for {} on this host: {}. Add a method \
                 that can (e.g. 'soft' with a `summarize` callback), or turn automatic \
                 compaction off with `enabled: false`",
                model.label(),
                text.join(", ")
            ),
        })
    }

    /// The settings in use.
    pub fn settings(&self) -> &CompactionSettings {
        &self.settings
    }

    /// Counters and flags, for inspection.
    pub fn state(&self) -> ManagerState {
        ManagerState {
            incomplete_recoveries: self.incomplete_recoveries,
            overflow_recovery_attempted: self.overflow_recovery_attempted,
            maintenance_paused: self.paused,
            awaiting_promotion: self.pending.is_some(),
            last_activity_at: self.last_activity_at,
            idle_compacted: self.idle_compacted,
            last_usage_tokens: self.last_usage.as_ref().map(|m| m.tokens),
        }
    }

    /// Automatic compaction can run at all: enabled, strategy not `off`, some method
    /// configured (spec §8.2 [N] step 7).
    fn compaction_available(&self) -> bool {
        self.settings.enabled
            && self.settings.strategy != Strategy::Off
            && !self.settings.method_order.is_empty()
    }

    fn note_activity(&mut self, now: i64) {
        self.last_activity_at = Some(now);
        self.idle_compacted = false;
    }

    fn idle_wake_at(&self) -> Option<i64> {
        if !self.settings.idle_enabled || !self.compaction_available() || self.idle_compacted {
            return None;
        }
        let timeout = self.settings.idle_timeout_seconds.saturating_mul(1000);
        self.last_activity_at
            .map(|t| t.saturating_add(i64::try_from(timeout).unwrap_or(i64::MAX)))
    }

    /// The settings for `model`: its `modelThresholds` rule applied.
    fn settings_for(&self, model: &ModelInfo) -> Cow<'_, CompactionSettings> {
        self.settings.for_model(&model.provider, &model.id)
    }

    /// The model's compaction point (spec: compaction §3.3, with `modelThresholds`).
    fn threshold_for(&self, model: &ModelInfo) -> u64 {
        threshold_tokens(model.context_window, &self.settings_for(model))
    }

    /// The methods that can run for this reason and model (§8.3), by the rule the host's
    /// own walk uses ([`usable_methods`]).
    fn methods(
        &self,
        reason: CompactionReason,
        model: &ModelInfo,
        payload_rejection: bool,
    ) -> Vec<CompactionMethod> {
        if !self.compaction_available() {
            return Vec::new();
        }
        let c = MethodContext {
            payload_rejection,
            remote_route: self.remote_route,
            ..MethodContext::new(reason, model)
        };
        usable_methods(&self.settings, &c)
    }

    /// Some method can run for this reason and model: the reference's
    /// `hasUsableCompactionMethod`, so a configuration that cannot compact for this reason
    /// (e.g. `methodOrder: ["handoff"]` and an overflow) is treated as compaction off.
    fn can_compact(
        &self,
        reason: CompactionReason,
        model: &ModelInfo,
        payload_rejection: bool,
    ) -> bool {
        !self.methods(reason, model, payload_rejection).is_empty()
    }

    /// Builds the request (§8.3): the usable methods in order; `action` and `strategy` are
    /// the first one's, so the events name the method that runs. `None` when no method can
    /// run.
    fn request(
        &self,
        reason: CompactionReason,
        entry: EntryPoint,
        will_retry: bool,
        model: &ModelInfo,
        context_tokens: u64,
        payload_rejection: bool,
    ) -> Option<CompactRequest> {
        let methods = self.methods(reason, model, payload_rejection);
        let first = *methods.first()?;
        Some(CompactRequest {
            reason,
            entry,
            will_retry,
            strategy: first.strategy(),
            action: first.action(),
            methods,
            exclude_snapcompact: payload_rejection,
            context_tokens,
            context_window: model.context_window,
            threshold_tokens: (model.context_window > 0).then(|| self.threshold_for(model)),
            payload_rejection,
            budgets: (model.context_window > 0)
                .then(|| window_budgets(model.context_window, &self.settings_for(model))),
        })
    }

    // ----- post-turn (§8.2) ---------------------------------------------------------------

    /// An assistant turn ended (spec: compaction §8.2, the [N] decision tree with pi-mono's
    /// one-retry-per-overflow rule and its threshold check for error turns).
    pub fn after_turn(&mut self, t: TurnInput<'_>) -> Decision {
        let mut d = self.post_turn(t);
        self.vision_notice(t.model, &mut d);
        self.model_notices(t.model, &mut d);
        d.wake_at = self.idle_wake_at();
        d
    }

    /// What the machine has to say about `model` before any turn: the once-only warnings of
    /// [`ContextManager::after_turn`] and the other entry points (a model without a context
    /// window; a `keepRecentTokens` too large for its window), so a host can surface them as
    /// soon as it knows its model. Says each at most once, here or in a later decision.
    pub fn check_model(&mut self, model: &ModelInfo) -> Decision {
        let mut d = Decision::default();
        self.model_notices(model, &mut d);
        d
    }

    /// The once-only warnings about the model (issue 36 items 10, 4): without a context
    /// window nothing is ever over the threshold, so only an overflow error would compact —
    /// said once, never silence; a `keepRecentTokens` at or above the window's threshold
    /// could summarize nothing and is clamped (tokens::window_budgets) — said once per window.
    fn model_notices(&mut self, model: &ModelInfo, d: &mut Decision) {
        if !self.compaction_available() {
            return;
        }
        let window = model.context_window;
        if window == 0 {
            if !self.warned_no_window {
                self.warned_no_window = true;
                d.notice(
                    NoticeLevel::Warning,
                    format!(
                        "The model {} has no contextWindow: automatic compaction cannot tell \
                         when the context is full, so it runs only after the provider rejects \
                         a request as too long. Give the model its contextWindow.",
                        model.label()
                    ),
                );
            }
            return;
        }
        let b = window_budgets(window, &self.settings_for(model));
        if b.keep_recent_clamped && self.warned_keep_clamp != Some(window) {
            self.warned_keep_clamp = Some(window);
            d.notice(
                NoticeLevel::Warning,
                format!(
                    "keepRecentTokens {} is at or above the compaction threshold of {} \
                     ({} tokens of a {window}-token window), so a compaction could summarize \
                     nothing; compactions keep {} recent tokens instead.",
                    self.settings.keep_recent_tokens,
                    model.label(),
                    b.threshold_tokens,
                    b.keep_recent_tokens
                ),
            );
        }
    }

    /// snapcompact was asked for by name but the model reads no images: the request runs
    /// another method, and the host is told so on every path (issue 19).
    fn vision_notice(&self, model: &ModelInfo, d: &mut Decision) {
        let Some(c) = &d.compact else { return };
        if self.settings.strategy == Strategy::Snapcompact
            && !model.accepts_images
            && c.strategy != Strategy::Snapcompact
        {
            let text = format!(
                "snapcompact needs a model with image input ({} reads text only); compacting with {} instead",
                model.id,
                c.action.as_str()
            );
            d.notice(NoticeLevel::Warning, text);
        }
    }

    fn post_turn(&mut self, t: TurnInput<'_>) -> Decision {
        self.pending = None;
        let a = t.assistant;
        self.note_activity(t.now);
        // Step 1: an aborted turn is the user's doing; nothing to recover.
        if a.stop_reason == Some(StopReason::Aborted) {
            return Decision::default();
        }
        let delivered = delivered_output(a);
        if delivered {
            self.incomplete_recoveries = 0;
        }
        if !t.mid_run {
            self.terminal_text_answer = terminal_text_answer(a);
        }
        let window = t.model.context_window;
        let failure = classify(a, window);
        if !a.failed() {
            if failure.is_none() {
                self.overflow_recovery_attempted = false;
            }
            if let Some(u) = a.usage.as_ref().filter(|u| has_context_token_usage(u)) {
                self.last_usage = Some(UsageMark {
                    tokens: context_tokens(u),
                    at: a.timestamp,
                });
            }
        }
        let same = same_model(a, t.model);
        let pre = predates(a.timestamp, t.latest_compaction_at);
        let rec = |payload_rejection: bool| Recovery {
            model: t.model.clone(),
            label: turn_label(a, t.model),
            origin: (a.provider.clone(), a.model.clone()),
            context_tokens: a
                .usage
                .as_ref()
                .map_or(0, prompt_tokens)
                .max(t.stored_tokens.unwrap_or(0)),
            payload_rejection,
        };
        if same && !pre {
            match failure {
                // Step 2: a 413-like rejection that is not about tokens.
                Some(Failure::PayloadRejected { media }) => {
                    let prompt = a.usage.as_ref().map_or(0, prompt_tokens);
                    let known_small = window > 0
                        && prompt <= window
                        && t.stored_tokens
                            .is_some_and(|s| s.saturating_mul(10) < window.saturating_mul(9));
                    let trusted = known_small
                        || (window == 0
                            && !self.can_compact(CompactionReason::Overflow, t.model, true))
                        || (media && !usage_overflow(a, window));
                    if trusted {
                        return payload_not_tokens(t.stored_tokens, window);
                    }
                    // Step 3 for an untrusted rejection.
                    return self.overflow(rec(true), t.can_promote);
                }
                // Step 3.
                Some(Failure::Overflow) => return self.overflow(rec(false), t.can_promote),
                Some(Failure::RateLimited) | None => {}
            }
        }
        // Step 4: a late error from the model we promoted away from: retry on the new one.
        if a.stop_reason == Some(StopReason::Error)
            && !same
            && self.promoted_from.as_ref() == Some(&(a.provider.clone(), a.model.clone()))
        {
            self.promoted_from = None;
            return Decision {
                drop_failed_turn: Some(DropTurn { durable: false }),
                continuation: Some(Continuation::retry()),
                ..Decision::default()
            };
        }
        // Step 5: output cut at the length limit.
        if a.stop_reason == Some(StopReason::Length) && same && !pre {
            // The trigger size is the turn's whole context, output included (18.2.3).
            let rec = Recovery {
                context_tokens: a
                    .usage
                    .as_ref()
                    .map_or(0, context_tokens)
                    .max(t.stored_tokens.unwrap_or(0)),
                ..rec(false)
            };
            return self.incomplete(rec, a, t.model, t.can_promote);
        }
        // A rate limit is waited out; compacting would not lift it (issue 39).
        if failure == Some(Failure::RateLimited) {
            return Decision::default();
        }
        // Steps 7–10: the threshold.
        self.post_turn_threshold(&t, pre)
    }

    /// Steps 7–10 of §8.2 [N]; for an error turn, pi-mono's rule: the last successful
    /// usage decides, and without one (or with one older than the latest compaction)
    /// nothing happens.
    fn post_turn_threshold(&mut self, t: &TurnInput<'_>, pre: bool) -> Decision {
        if !self.compaction_available() || (t.mid_run && !self.settings.mid_turn_enabled) {
            return Decision::default();
        }
        let a = t.assistant;
        let usage_tokens = if a.stop_reason == Some(StopReason::Error) {
            match &self.last_usage {
                Some(m) if !predates(m.at, t.latest_compaction_at) => m.tokens,
                _ => return Decision::default(),
            }
        } else if pre {
            0
        } else {
            a.usage.as_ref().map_or(0, context_tokens)
        };
        let stored = t.stored_tokens.unwrap_or(0);
        let target = usage_tokens.saturating_sub(t.freed_tokens).max(stored);
        let trigger = if t.freed_lowers_trigger {
            target
        } else {
            usage_tokens.max(stored)
        };
        let entry = if t.mid_run {
            EntryPoint::MidRun
        } else {
            EntryPoint::PostTurn
        };
        self.threshold(trigger, target, t.model, entry, t.can_promote)
    }

    /// `shouldCompact(trigger)` ⇒ promotion or a threshold compaction (§8.2 [N] step 10).
    fn threshold(
        &mut self,
        trigger: u64,
        target: u64,
        model: &ModelInfo,
        entry: EntryPoint,
        can_promote: bool,
    ) -> Decision {
        let window = model.context_window;
        if self.paused {
            let band = recovery_band_tokens(self.threshold_for(model));
            if window > 0 && trigger <= band {
                self.paused = false;
            } else {
                return Decision::default();
            }
        }
        if !should_compact(trigger, window, &self.settings_for(model)) {
            return Decision::default();
        }
        if can_promote {
            self.pending = Some(Pending::Threshold {
                model: model.clone(),
                entry,
                context_tokens: target,
            });
            return Decision {
                promote: Some(PromotionRequest {
                    reason: CompactionReason::Threshold,
                    context_tokens: trigger,
                    context_window: window,
                }),
                ..Decision::default()
            };
        }
        Decision {
            compact: self.request(
                CompactionReason::Threshold,
                entry,
                false,
                model,
                target,
                false,
            ),
            ..Decision::default()
        }
    }

    /// §8.2 [N] step 3 with pi-mono's one compact-and-retry per episode.
    fn overflow(&mut self, rec: Recovery, can_promote: bool) -> Decision {
        if self.overflow_recovery_attempted {
            return Decision {
                events: vec![Event::AutoCompactionEnd {
                    action: None,
                    aborted: false,
                    will_retry: false,
                    error_message: Some(OVERFLOW_RETRY_EXHAUSTED.to_string()),
                    skipped: false,
                }],
                block_auto_continue: true,
                ..Decision::default()
            };
        }
        let can_compact = self.can_compact(
            CompactionReason::Overflow,
            &rec.model,
            rec.payload_rejection,
        );
        if !can_compact && !can_promote {
            let mut d = Decision {
                block_auto_continue: true,
                ..Decision::default()
            };
            d.notice(NoticeLevel::Error, overflow_without_compaction(&rec));
            return d;
        }
        let d = Decision {
            drop_failed_turn: Some(DropTurn { durable: false }),
            ..Decision::default()
        };
        if can_promote {
            return self.ask_promotion(d, Pending::Overflow(rec), CompactionReason::Overflow);
        }
        self.overflow_compact(rec, d)
    }

    fn overflow_compact(&mut self, rec: Recovery, mut d: Decision) -> Decision {
        let Some(req) = self.request(
            CompactionReason::Overflow,
            EntryPoint::PostTurn,
            true,
            &rec.model,
            rec.context_tokens,
            rec.payload_rejection,
        ) else {
            // Only after a failed promotion: the turn goes back, the user decides.
            d.restore_failed_turn = true;
            d.block_auto_continue = true;
            d.notice(NoticeLevel::Error, overflow_without_compaction(&rec));
            return d;
        };
        self.overflow_recovery_attempted = true;
        d.compact = Some(req);
        d
    }

    /// §8.2 [N] step 5, as the reference 18.2.3 runs it (issue 36 item 12a): every `length`
    /// stop of the current model leaves the live context, whether or not it delivered text
    /// and however much room is left — a truncated answer is not a result to build on. The
    /// recovery is a promotion when the host can make one, else an `incomplete` compaction
    /// with a retry (a handoff may run: the input is fine). The spec's older rule (keep a
    /// truncated answer when there is room, retry without compacting otherwise) is gone with
    /// its developer reminder (the `reminder` of a continuation). With no way to recover (compaction off, no usable method, no
    /// promotion) the answer stays, with a warning: the reference drops it from the live
    /// context and says nothing, which leaves the user with neither the text nor a reason.
    fn incomplete(
        &mut self,
        rec: Recovery,
        a: &AssistantMessage,
        model: &ModelInfo,
        can_promote: bool,
    ) -> Decision {
        let truncated = truncated_text(a, model);
        let mut d = Decision::default();
        if !self.can_compact(CompactionReason::Incomplete, model, false) && !can_promote {
            d.notice(NoticeLevel::Warning, truncated);
            return d;
        }
        d.drop_failed_turn = Some(DropTurn { durable: false });
        let pending = Pending::Incomplete { rec, truncated };
        if can_promote {
            return self.ask_promotion(d, pending, CompactionReason::Incomplete);
        }
        self.incomplete_recover(pending, d)
    }

    /// The compaction half of §8.2 [N] step 5: give up after
    /// [`INCOMPLETE_RECOVERY_MAX_RETRIES`] recoveries that produced nothing (a turn that
    /// delivered text or a tool call resets the count), else count the attempt and compact
    /// with reason `incomplete` and a retry.
    fn incomplete_recover(&mut self, pending: Pending, mut d: Decision) -> Decision {
        let Pending::Incomplete { rec, truncated } = pending else {
            return d;
        };
        if !self.can_compact(CompactionReason::Incomplete, &rec.model, false) {
            // Only after a failed promotion: keep the partial answer.
            d.restore_failed_turn = true;
            d.notice(NoticeLevel::Warning, truncated);
            return d;
        }
        if self.incomplete_recoveries >= INCOMPLETE_RECOVERY_MAX_RETRIES {
            d.drop_failed_turn = Some(DropTurn { durable: true });
            d.block_auto_continue = true;
            d.notice(
                NoticeLevel::Error,
                format!(
                    "Length-stop recovery gave up after {} consecutive `length` responses \
                     from {}. Ask for a shorter answer or switch to a model with a larger \
                     output limit.",
                    self.incomplete_recoveries + 1,
                    rec.label
                ),
            );
            return d;
        }
        self.incomplete_recoveries += 1;
        d.compact = self.request(
            CompactionReason::Incomplete,
            EntryPoint::PostTurn,
            true,
            &rec.model,
            rec.context_tokens,
            false,
        );
        d
    }

    fn ask_promotion(
        &mut self,
        mut d: Decision,
        pending: Pending,
        reason: CompactionReason,
    ) -> Decision {
        let (tokens, window) = match &pending {
            Pending::Overflow(r) | Pending::Incomplete { rec: r, .. } => {
                (r.context_tokens, r.model.context_window)
            }
            Pending::Threshold {
                model,
                context_tokens,
                ..
            } => (*context_tokens, model.context_window),
        };
        d.promote = Some(PromotionRequest {
            reason,
            context_tokens: tokens,
            context_window: window,
        });
        self.pending = Some(pending);
        d
    }

    /// The host tried the promotion a decision asked for (spec: compaction §8.2 [N] steps 3,
    /// 5, 10b). Promoted after a failed turn: drop it durably and retry on the new model;
    /// promoted on the threshold: nothing more. Not promoted: the rest of the decision tree
    /// (compaction, retry or give-up). Without a pending request: nothing.
    pub fn after_promotion(&mut self, promoted: bool) -> Decision {
        let Some(pending) = self.pending.take() else {
            return Decision::default();
        };
        if promoted {
            return match pending {
                Pending::Threshold { .. } => Decision::default(),
                Pending::Overflow(rec) | Pending::Incomplete { rec, .. } => {
                    self.promoted_from = Some(rec.origin);
                    Decision {
                        drop_failed_turn: Some(DropTurn { durable: true }),
                        continuation: Some(Continuation::retry()),
                        ..Decision::default()
                    }
                }
            };
        }
        match pending {
            Pending::Overflow(rec) => self.overflow_compact(rec, Decision::default()),
            p @ Pending::Incomplete { .. } => self.incomplete_recover(p, Decision::default()),
            Pending::Threshold {
                model,
                entry,
                context_tokens,
            } => Decision {
                compact: self.request(
                    CompactionReason::Threshold,
                    entry,
                    false,
                    &model,
                    context_tokens,
                    false,
                ),
                ..Decision::default()
            },
        }
    }

    // ----- other entry points (§8.1) ----------------------------------------------------

    /// A user prompt is about to be sent (spec: compaction §8.1 pre-prompt). Starts a new
    /// prompt: the per-prompt counters reset and paused maintenance resumes. Compacts on the
    /// threshold with the last successful usage (0 when it predates the latest compaction)
    /// floored by the stored estimate; the prompt itself is the continuation.
    pub fn before_prompt(&mut self, p: PromptInput<'_>) -> Decision {
        self.pending = None;
        self.incomplete_recoveries = 0;
        self.overflow_recovery_attempted = false;
        self.paused = false;
        self.promoted_from = None;
        self.note_activity(p.now);
        let mut d = if self.compaction_available() {
            let usage_tokens = match p.last_assistant.filter(|a| !a.failed()) {
                Some(a) if predates(a.timestamp, p.latest_compaction_at) => 0,
                Some(a) => a.usage.as_ref().map_or(0, context_tokens),
                None => match &self.last_usage {
                    Some(m) if !predates(m.at, p.latest_compaction_at) => m.tokens,
                    _ => 0,
                },
            };
            let trigger = usage_tokens.max(p.stored_tokens.unwrap_or(0));
            self.threshold(
                trigger,
                trigger,
                p.model,
                EntryPoint::PrePrompt,
                p.can_promote,
            )
        } else {
            Decision::default()
        };
        self.vision_notice(p.model, &mut d);
        self.model_notices(p.model, &mut d);
        d.wake_at = self.idle_wake_at();
        d
    }

    /// The user switches to `target` (spec: compaction §8.1 `compactForTargetModel`):
    /// compact first when the live context is over the target's threshold.
    pub fn before_model_switch(
        &mut self,
        target: &ModelInfo,
        context_tokens: u64,
        now: i64,
    ) -> Decision {
        self.pending = None;
        self.note_activity(now);
        let mut d = Decision::default();
        self.model_notices(target, &mut d);
        if !self.compaction_available()
            || !should_compact(
                context_tokens,
                target.context_window,
                &self.settings_for(target),
            )
        {
            return d;
        }
        d.compact = self.request(
            CompactionReason::Threshold,
            EntryPoint::ModelSwitch,
            false,
            target,
            context_tokens,
            false,
        );
        d
    }

    /// Idle maintenance (spec: compaction §8.1 `runIdleCompaction`, §9.2): with
    /// `idleEnabled`, once `idleTimeoutSeconds` passed since the last turn or prompt and the
    /// live context is over `idleThresholdTokens`, compact with reason `idle` — at most once
    /// per idle period, never while maintenance is paused. Too early: `wake_at` says when to
    /// ask again.
    pub fn on_idle(&mut self, model: &ModelInfo, context_tokens: u64, now: i64) -> Decision {
        let mut d = self.idle_check(model, context_tokens, now);
        self.vision_notice(model, &mut d);
        self.model_notices(model, &mut d);
        d
    }

    fn idle_check(&mut self, model: &ModelInfo, context_tokens: u64, now: i64) -> Decision {
        let s = &self.settings;
        if !s.idle_enabled || !self.compaction_available() || self.idle_compacted || self.paused {
            return Decision::default();
        }
        let Some(due) = self.idle_wake_at() else {
            return Decision::default();
        };
        if now < due {
            return Decision {
                wake_at: Some(due),
                ..Decision::default()
            };
        }
        if context_tokens <= s.idle_threshold_tokens {
            return Decision::default();
        }
        self.idle_compacted = true;
        Decision {
            compact: self.request(
                CompactionReason::Idle,
                EntryPoint::Idle,
                false,
                model,
                context_tokens,
                false,
            ),
            ..Decision::default()
        }
    }

    // ----- the request/response loop (the Maintainer's policy) --------------------------

    /// The stale pass to run before a request (spec: compaction §6.5): with `supersedeReads`
    /// or `dropUseless` on, on every request, over the whole context but the newest
    /// 8,000-token tail (§6.1) and with the idle flush. `count`: the host's own count of the
    /// live context when it counts tokens itself (a `tokenCounter`), to bring the tail into
    /// the core's estimate; `None` when the host counts with the estimate.
    pub fn stale_pass(&self, count: Option<HostCount>) -> Option<PruneStep> {
        let s = &self.settings;
        if !s.supersede_reads && !s.drop_useless {
            return None;
        }
        let w = PRUNE_WINDOWS;
        Some(PruneStep {
            pass: PrunePass::Stale,
            supersede_key: s.supersede_reads,
            prune_useless: s.drop_useless,
            idle_flush_ms: Some(w.stale_idle_flush_ms),
            windows: in_estimate(count, &[("suffixTokenLimit", w.stale_suffix_tokens)]),
        })
    }

    // ----- cache-aware maintenance (issue 39 item 5) -------------------------------------

    /// A request is about to be sent: the provider's cache is written now ([`CacheClock`]).
    fn note_request(&mut self, s: &StepInput<'_>) {
        let threshold = self.threshold_for(s.model);
        self.cache
            .requested(s.now, s.model.context_window, threshold, &s.model.provider);
    }

    /// With `cacheAware`, the threshold prune of `reply` waits for a break: it runs when the
    /// turn's context is over the compaction point of the last request's model (the window
    /// needs it: spec: compaction §6.8, as without `cacheAware`) or the cache that request
    /// wrote has gone cold; otherwise its rewrites stay pending and run together at the next
    /// break ([`ContextManager::break_prune`]).
    fn prune_waits(&self, reply: &AssistantMessage) -> bool {
        // A reply without a timestamp answers the last request at once.
        let at = reply
            .timestamp
            .map_or(self.cache.last_request_at.unwrap_or(0), |t| t as i64);
        if !self.settings.cache_aware || !self.cache.warm(at) {
            return false;
        }
        let tokens = reply.usage.as_ref().map_or(0, context_tokens);
        !self.cache.window_needs(tokens)
    }

    /// The rewrites of earlier history that waited for a break, to run before a request
    /// (the Maintainer's `beforeRequest`, before the stale pass): with `cacheAware`, when the
    /// cache the last request wrote has gone cold at `now`, the threshold prune (spec:
    /// compaction §6.6) with its minimum savings raised to the break's ([`break_minimum`]: a
    /// tenth of the window, at least the pass's own) and without the warm-prefix guard (the
    /// cache it guards is gone: the whole prefix may be rewritten). `None` otherwise: the cache is warm,
    /// no request was sent yet, or `cacheAware` is off. `count` as in
    /// [`ContextManager::stale_pass`].
    pub fn break_prune(&self, count: Option<HostCount>, now: i64) -> Option<PruneStep> {
        let c = &self.cache;
        if !self.settings.cache_aware
            || !self.settings.enabled
            || c.last_request_at.is_none()
            || c.warm(now)
        {
            return None;
        }
        let w = PRUNE_WINDOWS;
        Some(self.threshold_step(
            count,
            &[
                ("protectTokens", w.protect_tokens),
                ("minimumSavings", break_minimum(c.window, w.minimum_savings)),
            ],
        ))
    }

    /// A reply the host just appended (the Maintainer's `afterResponse`). A turn that asked
    /// for tools is checked before the next request, with the tool results counted
    /// ([`ReplyStep::Deferred`]; `maintainContextMidRun`, spec: compaction §8.1). Any other
    /// reply is checked now ([`ReplyStep::Check`]): first [`ContextManager::reply_prune`], then
    /// [`ContextManager::after_reply`] with the tokens it freed.
    pub fn on_reply(&mut self, reply: AssistantMessage) -> ReplyStep {
        self.reply = None;
        if reply.stop_reason == Some(StopReason::ToolUse) {
            self.mid_run = Some(reply);
            return ReplyStep::Deferred;
        }
        self.mid_run = None;
        self.reply = Some(reply);
        ReplyStep::Check
    }

    /// The threshold prune (spec: compaction §6.6) to run before the check of the reply
    /// [`ContextManager::on_reply`] took: when compaction is enabled and the turn neither
    /// failed nor was aborted, with the 40,000 protected tokens, the 20,000 minimum savings
    /// and the 8,000-token cache-warm tail. `count` as in [`ContextManager::stale_pass`].
    pub fn reply_prune(&self, count: Option<HostCount>) -> Option<PruneStep> {
        let reply = self.reply.as_ref()?;
        let failed = matches!(
            reply.stop_reason,
            Some(StopReason::Error | StopReason::Aborted)
        );
        if failed || !self.settings.enabled || self.prune_waits(reply) {
            return None;
        }
        let w = PRUNE_WINDOWS;
        Some(self.threshold_step(
            count,
            &[
                ("protectTokens", w.protect_tokens),
                ("minimumSavings", w.minimum_savings),
                ("cacheWarmSuffixTokens", w.cache_warm_suffix_tokens),
            ],
        ))
    }

    /// A threshold prune (spec: compaction §6.6) with `windows` in the core's estimate.
    fn threshold_step(
        &self,
        count: Option<HostCount>,
        windows: &[(&'static str, u64)],
    ) -> PruneStep {
        PruneStep {
            pass: PrunePass::Threshold,
            supersede_key: false,
            prune_useless: self.settings.drop_useless,
            idle_flush_ms: None,
            windows: in_estimate(count, windows),
        }
    }

    /// The check of the reply [`ContextManager::on_reply`] took (spec: compaction §8.2): the
    /// post-turn decision, the threshold prune's `freed_tokens` lowering the trigger as well
    /// as the size the compaction reports — the turn is judged by what the next request
    /// carries (issue 19). Without a reply waiting: nothing.
    pub fn after_reply(&mut self, s: StepInput<'_>) -> Decision {
        self.spec.step = SpeculationStep::None;
        let Some(a) = self.reply.take() else {
            return Decision::default();
        };
        let t = TurnInput {
            stored_tokens: s.stored_tokens,
            latest_compaction_at: s.latest_compaction_at,
            can_promote: s.can_promote,
            freed_tokens: s.freed_tokens,
            freed_lowers_trigger: true,
            ..TurnInput::new(&a, s.model, s.now)
        };
        let tokens = speculation_tokens(Some(&a), &s);
        let mut d = self.after_turn(t);
        self.speculate(&mut d, s.model, tokens);
        d
    }

    /// A request is about to be sent (the Maintainer's `beforeRequest`, after the stale
    /// pass). `None` when the session is in the state [`ContextManager::settle`] recorded
    /// last: nothing was appended since (a retry), so there is nothing new to check. After a
    /// reply that asked for tools, the host appended their results: the mid-run check
    /// ([`ContextManager::after_turn`] with `mid_run`); otherwise a prompt: the pre-prompt
    /// check ([`ContextManager::before_prompt`]).
    pub fn before_request(&mut self, s: StepInput<'_>) -> Option<Decision> {
        self.note_request(&s);
        if s.state.is_some() && s.state == self.settled.as_deref() {
            return None;
        }
        self.spec.step = SpeculationStep::None;
        let mid_run = self.mid_run.clone();
        let tokens = speculation_tokens(mid_run.as_ref(), &s);
        let mut d = self.before_request_check(s);
        self.speculate(&mut d, s.model, tokens);
        Some(d)
    }

    /// [`ContextManager::before_request`] past its retry test.
    fn before_request_check(&mut self, s: StepInput<'_>) -> Decision {
        match self.mid_run.take() {
            Some(a) => self.after_turn(TurnInput {
                stored_tokens: s.stored_tokens,
                latest_compaction_at: s.latest_compaction_at,
                can_promote: s.can_promote,
                mid_run: true,
                ..TurnInput::new(&a, s.model, s.now)
            }),
            None => self.before_prompt(PromptInput {
                stored_tokens: s.stored_tokens,
                latest_compaction_at: s.latest_compaction_at,
                can_promote: s.can_promote,
                ..PromptInput::new(s.model, s.now)
            }),
        }
    }

    /// What a compaction the host runs for `req` keeps, in the core's estimate (spec:
    /// compaction §4.3, §3.4): `keepRecentTokens`, the request's window-fitted budget (the
    /// settings' value for a request without budgets, e.g. a manual one), and
    /// `v2RetainedMessageBudget`; scaled by the host's `count` as the prune windows are
    /// ([`HostCount::window_in_estimate`]: `keepRecentTokens` stays as it is on a path with
    /// reported usage, which the core scales by itself).
    pub fn keep_budgets(
        &self,
        req: &CompactRequest,
        count: Option<HostCount>,
    ) -> Vec<(&'static str, u64)> {
        let keep = req
            .budgets
            .as_ref()
            .map_or(self.settings.keep_recent_tokens, |b| b.keep_recent_tokens);
        in_estimate(
            count,
            &[
                ("keepRecentTokens", keep),
                (
                    "v2RetainedMessageBudget",
                    self.settings.v2_retained_message_budget,
                ),
            ],
        )
    }

    /// The host's session state at the end of a step of its loop (any call: a request, a
    /// reply, a manual or idle compaction), as it will name it to
    /// [`ContextManager::before_request`].
    pub fn settle(&mut self, state: &str) {
        if self.settled.as_deref() != Some(state) {
            self.settled = Some(state.to_string());
        }
    }

    // ----- background compaction (§13) ---------------------------------------------------

    /// Whether the host can run background compaction (spec: compaction §13, §8.8): it asked
    /// for it, has a summarizer, and no `session_before_compact` handler is registered (a
    /// prepared result would bypass the handler's veto). `asyncEnabled` is the settings'.
    pub fn set_speculation_host(&mut self, allowed: bool) {
        self.spec.host = allowed;
    }

    /// The background step the last [`ContextManager::after_reply`] or
    /// [`ContextManager::before_request`] decided. A start or refresh changed the state to
    /// running; a commit or drop to idle.
    pub fn speculation_step(&self) -> SpeculationStep {
        self.spec.step
    }

    /// The background compaction as the machine knows it.
    pub fn speculation(&self) -> Speculation {
        self.spec.state
    }

    /// The host's background plan answered every request: its result is armed.
    pub fn speculation_ready(&mut self) {
        self.spec.state = self.spec.state.ready();
    }

    /// The host's background compaction ended without a result to commit (a summarizer
    /// failure, an abort, nothing to compact, a stale result, any other compaction).
    pub fn speculation_ended(&mut self) {
        self.spec.state = Speculation::Idle;
    }

    /// The compaction request a background start prepares (spec: compaction §13): a threshold
    /// one for `model` at the context of the step that started it, so its keep budgets are
    /// those of the compaction it stands in for. `None` when no method can run.
    pub fn speculation_request(&self, model: &ModelInfo) -> Option<CompactRequest> {
        self.request(
            CompactionReason::Threshold,
            EntryPoint::PostTurn,
            false,
            model,
            self.spec.tokens,
            false,
        )
    }

    /// Background compaction is possible for `model`: the host allows it, `asyncEnabled`, a
    /// known window, and the threshold compaction's first method is an LLM summary (`soft`;
    /// the local methods are instant, and the other LLM-backed ones run inline here).
    fn speculation_enabled(&self, model: &ModelInfo) -> bool {
        self.spec.host
            && self.settings.async_enabled
            && model.context_window > 0
            && self
                .methods(CompactionReason::Threshold, model, false)
                .first()
                .is_some_and(|m| *m == CompactionMethod::Soft)
    }

    /// Decides the background step of a decision (spec: compaction §8.2 [N] step 10, §13):
    /// a deferred threshold compaction leaves the decision.
    fn speculate(&mut self, d: &mut Decision, model: &ModelInfo, tokens: u64) {
        let input = SpeculationInput {
            tokens,
            window: model.context_window,
            threshold: self.threshold_for(model),
            keep_recent_tokens: self.settings_for(model).keep_recent_tokens,
            enabled: self.speculation_enabled(model),
            compact: d.compact.as_ref().map(|c| c.reason),
            promote: d.promote.is_some(),
        };
        let decided = speculation::decide(self.spec.state, &input);
        if decided.defer {
            d.compact = None;
        }
        self.spec.state = decided.next;
        self.spec.step = decided.step;
        self.spec.tokens = tokens;
    }

    // ----- after a compaction (§8.3–§8.6) -----------------------------------------------

    /// A compaction ended (spec: compaction §8.3 events and error prefixes, §8.5 progress
    /// guard and continuation, §8.6 manual resume). Never asks for another compaction. The
    /// end event names the action of [`CompactionReport::method`] when the host says which
    /// method ran (a walk past the request's first method), else the request's.
    pub fn after_compaction(&mut self, r: &CompactionReport) -> Decision {
        let mut d = self.compaction_ended(r);
        if let Some(m) = r.method {
            for e in &mut d.events {
                if let Event::AutoCompactionEnd { action, .. } = e {
                    *action = Some(m.action());
                }
            }
        }
        d
    }

    fn compaction_ended(&mut self, r: &CompactionReport) -> Decision {
        let req = &r.request;
        let mut d = Decision::default();
        if req.reason == CompactionReason::Manual {
            if matches!(r.outcome, CompactionOutcome::Compacted { .. }) {
                self.last_usage = None;
                self.paused = false;
            }
            // §8.6: resume the interrupted turn after a commit or a no-op rejection.
            let resumable = matches!(
                r.outcome,
                CompactionOutcome::Compacted { .. } | CompactionOutcome::NothingToCompact
            );
            if resumable
                && r.interrupted_turn
                && !r.suppress_continuation
                && self.settings.auto_continue
            {
                d.continuation = Some(Continuation::queued_or_auto(r.queued_messages));
            }
            return d;
        }
        match &r.outcome {
            CompactionOutcome::Compacted {
                tokens_after,
                stored_tokens,
            } => {
                self.last_usage = None;
                if req.reason == CompactionReason::Idle {
                    // Idle passes never continue and are not guarded (§8.5).
                    d.events.push(req.end_event(false, false, None, false));
                    return d;
                }
                // The host's own measure of the rebuilt context when it has one (§8.5's stored
                // estimate: the Maintainer's is calibrated to the provider's count); the
                // core's uncalibrated `tokensAfter` otherwise. A provider counting half the
                // estimate must not be judged by the estimate (issue 36 simulator).
                let residual = stored_tokens.unwrap_or(*tokens_after);
                if let Some(text) = self.no_headroom(req, residual) {
                    self.paused = true;
                    // An overflow or length-stop recovery whose compaction brought the request
                    // back under the window retries the turn (no user turn is lost);
                    // maintenance stays paused, and a second overflow ends the episode (§8.2),
                    // a third length stop the incomplete recoveries.
                    let retry = req.will_retry
                        && matches!(
                            req.reason,
                            CompactionReason::Overflow | CompactionReason::Incomplete
                        )
                        && !req.payload_rejection
                        && (req.context_window == 0 || residual < req.context_window);
                    d.events.push(req.end_event(false, retry, None, false));
                    d.notice(NoticeLevel::Warning, text.clone());
                    d.compaction_warning = Some(text);
                    if req.will_retry {
                        // The rebuilt context holds the failed turn again.
                        d.drop_failed_turn = Some(DropTurn { durable: false });
                    }
                    if retry {
                        d.continuation = Some(Continuation::retry());
                    } else {
                        d.block_auto_continue = true;
                    }
                    return d;
                }
                d.events
                    .push(req.end_event(false, req.will_retry, None, false));
                if req.will_retry {
                    d.drop_failed_turn = Some(DropTurn { durable: false });
                    d.continuation = Some(Continuation::retry());
                } else if req.entry == EntryPoint::PostTurn {
                    if r.queued_messages {
                        d.continuation = Some(Continuation::queued_or_auto(true));
                    } else if self.settings.auto_continue && !self.terminal_text_answer {
                        // The auto-continue prompt needs `autoContinue` and a turn that was
                        // not a finished text answer (a stop with text and no tool call):
                        // the reference 18.2.3 checks `autoContinue !== false` first and then
                        // declines for a terminal text answer unless a goal is active (a mode
                        // this library does not have). After a finished answer the next turn
                        // is the user's (issue 36 item 12b: verified, kept).
                        d.continuation = Some(Continuation::queued_or_auto(false));
                    }
                }
            }
            CompactionOutcome::NothingToCompact => {
                d.events.push(req.end_event(false, false, None, true));
                if req.reason != CompactionReason::Idle {
                    self.paused = true;
                    d.notice(
                        NoticeLevel::Warning,
                        "Compaction freed too little context to make progress — pausing \
                         automatic maintenance: the recent turns alone fill the context. \
                         Shorten them, compact by hand, or switch to a larger-context model."
                            .to_string(),
                    );
                    d.block_auto_continue = true;
                    d.restore_failed_turn = req.will_retry;
                }
            }
            CompactionOutcome::Aborted => {
                d.events.push(req.end_event(true, false, None, false));
                d.restore_failed_turn = req.will_retry;
            }
            CompactionOutcome::Failed { error } => {
                d.events
                    .push(req.end_event(false, false, Some(error), false));
                d.restore_failed_turn = req.will_retry;
            }
        }
        d
    }

    /// The progress guard (spec: compaction §8.5, [`ProgressGuard`]): `Some(warning)` when
    /// the compaction left no headroom. A payload-rejection recovery must also have shrunk the
    /// context.
    fn no_headroom(&self, req: &CompactRequest, residual: u64) -> Option<String> {
        if req.payload_rejection && req.context_tokens > 0 && residual >= req.context_tokens {
            return Some(format!(
                "Compaction did not shrink the request the provider rejected as too large \
                 ({residual} tokens remain) — pausing automatic maintenance. Remove large \
                 attachments or switch models."
            ));
        }
        // The model's threshold as the request recorded it (a host-made request without one:
        // the settings' own).
        let guard = ProgressGuard::new(
            req.reason,
            req.will_retry,
            req.context_window,
            req.threshold_tokens,
            &self.settings,
        );
        let limit = guard.limit()?;
        (residual > limit).then(|| {
            format!(
                "Compaction freed too little context to make progress — pausing automatic \
                 maintenance ({residual} tokens remain; continuing needs at most {limit}). \
                 Continue by hand, compact with a focus, or switch to a larger-context model."
            )
        })
    }
}

/// The live context a background step is judged by (spec: compaction §8.2 [N] step 9): the
/// reply's reported usage less what its prune freed, floored by the stored estimate.
fn speculation_tokens(reply: Option<&AssistantMessage>, s: &StepInput<'_>) -> u64 {
    let usage = reply
        .filter(|a| a.stop_reason != Some(StopReason::Error))
        .and_then(|a| a.usage.as_ref())
        .map_or(0, context_tokens);
    usage
        .saturating_sub(s.freed_tokens)
        .max(s.stored_tokens.unwrap_or(0))
}

fn payload_not_tokens(stored: Option<u64>, window: u64) -> Decision {
    let size = match stored {
        Some(s) if window > 0 => format!(" (the context holds about {s} of {window} tokens)"),
        _ => String::new(),
    };
    let mut d = Decision {
        drop_failed_turn: Some(DropTurn { durable: false }),
        block_auto_continue: true,
        ..Decision::default()
    };
    d.notice(
        NoticeLevel::Warning,
        format!(
            "The provider rejected the request as too large, but the context is not the \
             problem{size}: an attachment or image is likely too big. The failed turn was \
             removed from the context; automatic continuation is paused."
        ),
    );
    d
}

fn overflow_without_compaction(rec: &Recovery) -> String {
    format!(
        "The request overflowed the context window of {} and automatic compaction is off. \
         Compact by hand or switch to a larger-context model.",
        rec.model.label()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_band_is_the_floor_of_four_fifths() {
        for t in [0u64, 1, 4, 5, 13_928, 85_000, 99_999] {
            assert_eq!(recovery_band_tokens(t), (0.8 * t as f64).floor() as u64);
        }
    }
}
