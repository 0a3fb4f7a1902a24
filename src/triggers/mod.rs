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

use crate::session::message::{AssistantMessage, ContentBlock, StopReason};
use crate::settings::{CompactionSettings, Strategy};
use crate::support::json::object;
use crate::tokens::{
    budget_reserve_tokens, context_tokens, has_context_token_usage, prompt_tokens, should_compact,
    threshold_tokens,
};
use serde_json::Value;

/// Consecutive no-progress recoveries of `length` stops before giving up (spec: compaction
/// §8.2 [N] step 5, `INCOMPLETE_RECOVERY_MAX_RETRIES`).
pub const INCOMPLETE_RECOVERY_MAX_RETRIES: u32 = 3;

/// Delay before a retry or continuation is started (spec: compaction §8.3, §8.5).
pub const CONTINUE_DELAY_MS: u64 = 100;

/// The second overflow of one episode (spec: compaction §8.2, pi-mono).
pub const OVERFLOW_RETRY_EXHAUSTED: &str = "Context overflow recovery failed after one \
     compact-and-retry attempt. Try reducing context or switching to a larger-context model.";

/// `COMPACTION_RECOVERY_BAND = 0.8` applied to a threshold: `floor(0.8 · threshold)` (spec:
/// compaction §8.5). Exact in integers: the float product in the reference never rounds
/// below an integer result.
pub fn recovery_band_tokens(threshold: u64) -> u64 {
    threshold * 4 / 5
}

// ----- inputs ---------------------------------------------------------------------------

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

impl ModelInfo {
    fn label(&self) -> String {
        format!("{}/{}", self.provider, self.id)
    }
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
        }
    }
}

// ----- outputs --------------------------------------------------------------------------

/// Why a compaction runs (spec: compaction §8.7; `manual` never appears in events).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompactionReason {
    Threshold,
    Overflow,
    Incomplete,
    Idle,
    #[default]
    Manual,
}

impl CompactionReason {
    /// The reason's string form.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionReason::Threshold => "threshold",
            CompactionReason::Overflow => "overflow",
            CompactionReason::Incomplete => "incomplete",
            CompactionReason::Idle => "idle",
            CompactionReason::Manual => "manual",
        }
    }

    /// The reason named by `s`.
    pub fn parse(s: &str) -> Option<CompactionReason> {
        Some(match s {
            "threshold" => CompactionReason::Threshold,
            "overflow" => CompactionReason::Overflow,
            "incomplete" => CompactionReason::Incomplete,
            "idle" => CompactionReason::Idle,
            "manual" => CompactionReason::Manual,
            _ => return None,
        })
    }
}

/// Which entry point asked for a compaction (spec: compaction §8.1); it decides what follows
/// the compaction (§8.5: only post-turn passes continue on their own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EntryPoint {
    PostTurn,
    MidRun,
    PrePrompt,
    ModelSwitch,
    Idle,
    #[default]
    Manual,
}

impl EntryPoint {
    const NAMES: [(EntryPoint, &'static str); 6] = [
        (EntryPoint::PostTurn, "post-turn"),
        (EntryPoint::MidRun, "mid-run"),
        (EntryPoint::PrePrompt, "pre-prompt"),
        (EntryPoint::ModelSwitch, "model-switch"),
        (EntryPoint::Idle, "idle"),
        (EntryPoint::Manual, "manual"),
    ];

    /// The entry point's string form.
    pub fn as_str(self) -> &'static str {
        name_of(&Self::NAMES, self)
    }

    /// The entry point named by `s`.
    pub fn parse(s: &str) -> Option<EntryPoint> {
        named(&Self::NAMES, s)
    }
}

/// The name of `v` in a table of an enum's values and names.
fn name_of<T: PartialEq + Copy>(names: &[(T, &'static str)], v: T) -> &'static str {
    names.iter().find(|(x, _)| *x == v).map_or("", |(_, n)| n)
}

/// The value named `s` in a table of an enum's values and names.
fn named<T: Copy>(names: &[(T, &'static str)], s: &str) -> Option<T> {
    names.iter().find(|(_, n)| *n == s).map(|(x, _)| *x)
}

/// Compaction methods of `compaction.methodOrder` (spec: compaction §8.3, §9.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionMethod {
    Remote,
    Snapcompact,
    Handoff,
    Shake,
    Soft,
    Window,
}

impl CompactionMethod {
    const NAMES: [(CompactionMethod, &'static str); 6] = [
        (CompactionMethod::Remote, "remote"),
        (CompactionMethod::Snapcompact, "snapcompact"),
        (CompactionMethod::Handoff, "handoff"),
        (CompactionMethod::Shake, "shake"),
        (CompactionMethod::Soft, "soft"),
        (CompactionMethod::Window, "window"),
    ];

    /// The method's string form.
    pub fn as_str(self) -> &'static str {
        name_of(&Self::NAMES, self)
    }

    fn parse(s: &str) -> Option<CompactionMethod> {
        named(&Self::NAMES, s)
    }

    /// The `action` of the events for this method (spec: compaction §8.3).
    pub fn action(self) -> CompactionAction {
        match self {
            CompactionMethod::Remote => CompactionAction::Remote,
            CompactionMethod::Snapcompact => CompactionAction::Snapcompact,
            CompactionMethod::Handoff => CompactionAction::Handoff,
            CompactionMethod::Shake => CompactionAction::Shake,
            CompactionMethod::Soft | CompactionMethod::Window => CompactionAction::ContextFull,
        }
    }
}

/// The `action` of `auto_compaction_*` events (spec: compaction §8.3, §8.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompactionAction {
    #[default]
    ContextFull,
    Handoff,
    Snapcompact,
    Remote,
    Shake,
}

impl CompactionAction {
    const NAMES: [(CompactionAction, &'static str); 5] = [
        (CompactionAction::ContextFull, "context-full"),
        (CompactionAction::Handoff, "handoff"),
        (CompactionAction::Snapcompact, "snapcompact"),
        (CompactionAction::Remote, "remote"),
        (CompactionAction::Shake, "shake"),
    ];

    /// The action's string form.
    pub fn as_str(self) -> &'static str {
        name_of(&Self::NAMES, self)
    }

    /// The action named by `s`.
    pub fn parse(s: &str) -> Option<CompactionAction> {
        named(&Self::NAMES, s)
    }
}

/// A compaction the host should run now (spec: compaction §8.3 `runAutoCompaction`).
///
/// JSON (camelCase, [`CompactRequest::to_json`] / [`CompactRequest::from_json`]): `reason`,
/// `entry`, `willRetry`, `strategy`, `methods`, `action`, `excludeSnapcompact`,
/// `contextTokens`, `contextWindow`, `payloadRejection`; every field may be left out when
/// reading (the default's value is taken).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactRequest {
    pub reason: CompactionReason,
    pub entry: EntryPoint,
    /// Retry the failed request after the compaction (overflow and incomplete recovery).
    pub will_retry: bool,
    /// The engine strategy: the setting, with `handoff` replaced by `context-full` for an
    /// overflow and `snapcompact` by `context-full` when the model reads no images or the
    /// provider rejected the payload's bytes (§8.3).
    pub strategy: Strategy,
    /// The usable methods of `methodOrder`, in order, for shells that walk the fallback
    /// list: `remote` only with a remote endpoint, `snapcompact` only for an image-reading
    /// model and not after a payload rejection, `handoff` not for an overflow.
    pub methods: Vec<CompactionMethod>,
    /// The events' `action`: of the first method, else of the strategy.
    pub action: CompactionAction,
    /// Leave snapcompact out: the provider rejected the request's bytes or media.
    pub exclude_snapcompact: bool,
    /// The live context size that triggered; may stand in for `tokensBefore` (§3.5).
    pub context_tokens: u64,
    /// The window the compaction must fit (0 = unknown); the progress guard measures
    /// against it.
    pub context_window: u64,
    /// Recovery from a payload rejection (§8.2 [N] step 3): no progress ⇒ warn and block.
    pub payload_rejection: bool,
}

impl Default for CompactRequest {
    fn default() -> Self {
        CompactRequest {
            reason: CompactionReason::Manual,
            entry: EntryPoint::Manual,
            will_retry: false,
            strategy: Strategy::ContextFull,
            methods: Vec::new(),
            action: CompactionAction::ContextFull,
            exclude_snapcompact: false,
            context_tokens: 0,
            context_window: 0,
            payload_rejection: false,
        }
    }
}

impl CompactRequest {
    /// The request describing a manual compaction (`/compact`), to report it through
    /// [`ContextManager::after_compaction`].
    pub fn manual(strategy: Strategy, context_tokens: u64, context_window: u64) -> Self {
        CompactRequest {
            strategy,
            context_tokens,
            context_window,
            ..CompactRequest::default()
        }
    }

    /// `auto_compaction_start` for this request (spec: compaction §8.7); `None` for a manual
    /// compaction, which emits no automatic events.
    pub fn start_event(&self) -> Option<Event> {
        (self.reason != CompactionReason::Manual).then_some(Event::AutoCompactionStart {
            reason: self.reason,
            action: Some(self.action),
        })
    }

    /// `auto_compaction_end` for this request (spec: compaction §8.7); `error` is prefixed
    /// with [`compaction_error_message`].
    pub fn end_event(
        &self,
        aborted: bool,
        will_retry: bool,
        error: Option<&str>,
        skipped: bool,
    ) -> Event {
        Event::AutoCompactionEnd {
            action: Some(self.action),
            aborted,
            will_retry,
            error_message: error.map(|e| compaction_error_message(self.reason, e)),
            skipped,
        }
    }
}

/// The error text of a failed automatic compaction (spec: compaction §8.3): `Context overflow
/// recovery failed: `, `Incomplete response recovery failed: ` or `Auto-compaction failed: `
/// before the error; a manual compaction's error is passed through.
pub fn compaction_error_message(reason: CompactionReason, error: &str) -> String {
    let prefix = match reason {
        CompactionReason::Overflow => "Context overflow recovery failed: ",
        CompactionReason::Incomplete => "Incomplete response recovery failed: ",
        CompactionReason::Threshold | CompactionReason::Idle => "Auto-compaction failed: ",
        CompactionReason::Manual => "",
    };
    format!("{prefix}{error}")
}

/// Events for the UI/SDK (spec: compaction §8.7). The shell adds `result` to
/// `auto_compaction_end` after a successful compaction.
///
/// JSON ([`Event::to_json`]): `{type: "auto_compaction_start", reason, action?}` and
/// `{type: "auto_compaction_end", action?, aborted, willRetry, errorMessage?, skipped?}`
/// (`skipped` only when true).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    AutoCompactionStart {
        reason: CompactionReason,
        action: Option<CompactionAction>,
    },
    AutoCompactionEnd {
        action: Option<CompactionAction>,
        aborted: bool,
        will_retry: bool,
        error_message: Option<String>,
        skipped: bool,
    },
}

/// Severity of a notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeLevel {
    Info,
    Warning,
    Error,
}

impl NoticeLevel {
    /// The level's string form.
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeLevel::Info => "info",
            NoticeLevel::Warning => "warning",
            NoticeLevel::Error => "error",
        }
    }
}

/// A message for the user (`emitNotice(level, text, "compaction")`, spec: compaction §8.7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub level: NoticeLevel,
    pub text: String,
}

/// Remove the assistant turn just reported from the live context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropTurn {
    /// Also remove it from the session file (it is kept there otherwise, for history).
    pub durable: bool,
}

/// Ask the host to switch to a larger-window model (spec: compaction §8.2 [N] steps 3, 5,
/// 10b; `contextPromotion`). The host picks the model and answers with
/// [`ContextManager::after_promotion`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromotionRequest {
    pub reason: CompactionReason,
    /// The live context size the new model must hold comfortably.
    pub context_tokens: u64,
    /// The current model's window.
    pub context_window: u64,
}

/// What starts the next turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContinuationKind {
    /// Re-run the failed request (`agent.continue()`).
    Retry,
    /// Deliver the queued steer/follow-up messages.
    QueuedMessages,
    /// Send [`Continuation::prompt`] as an agent-authored developer message.
    AutoContinue,
}

impl ContinuationKind {
    /// The kind's string form.
    pub fn as_str(self) -> &'static str {
        match self {
            ContinuationKind::Retry => "retry",
            ContinuationKind::QueuedMessages => "queued-messages",
            ContinuationKind::AutoContinue => "auto-continue",
        }
    }
}

/// The developer reminder for a length-stop retry (spec: compaction §8.2 [N] step 5,
/// `length-stop-retry.md`): the host words it from these numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LengthStopReminder {
    pub output_tokens: u64,
    pub retry_count: u32,
    pub max_retries: u32,
}

/// Start the next turn after a delay (spec: compaction §8.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continuation {
    pub after_ms: u64,
    pub kind: ContinuationKind,
    /// The auto-continue prompt (`prompts/auto-continue.md`) for [`ContinuationKind::AutoContinue`].
    pub prompt: Option<&'static str>,
    /// For a length-stop retry whose response spent output tokens.
    pub reminder: Option<LengthStopReminder>,
}

impl Continuation {
    fn retry() -> Self {
        Continuation {
            after_ms: CONTINUE_DELAY_MS,
            kind: ContinuationKind::Retry,
            prompt: None,
            reminder: None,
        }
    }

    fn queued_or_auto(queued: bool) -> Self {
        if queued {
            Continuation {
                after_ms: CONTINUE_DELAY_MS,
                kind: ContinuationKind::QueuedMessages,
                prompt: None,
                reminder: None,
            }
        } else {
            Continuation {
                after_ms: CONTINUE_DELAY_MS,
                kind: ContinuationKind::AutoContinue,
                prompt: Some(crate::prompts::AUTO_CONTINUE.trim_end()),
                reminder: None,
            }
        }
    }
}

/// What the host must do (see the module docs for the order). The default does nothing.
///
/// JSON ([`Decision::to_json`]): the fields in camelCase, absent options as `null`:
/// `events`, `notices` (`{level, text}`), `compactionWarning`, `dropFailedTurn`
/// (`{durable}`), `restoreFailedTurn`, `promote` (`{reason, contextTokens, contextWindow}`),
/// `compact` ([`CompactRequest`]), `continuation` (`{afterMs, kind, prompt, reminder:
/// {outputTokens, retryCount, maxRetries}}`), `blockAutoContinue`, `wakeAt`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Decision {
    pub events: Vec<Event>,
    pub notices: Vec<Notice>,
    /// Stamp this warning on the latest compaction entry (`warning`, spec §8.5).
    pub compaction_warning: Option<String>,
    pub drop_failed_turn: Option<DropTurn>,
    pub restore_failed_turn: bool,
    pub promote: Option<PromotionRequest>,
    pub compact: Option<CompactRequest>,
    pub continuation: Option<Continuation>,
    pub block_auto_continue: bool,
    /// When to call [`ContextManager::on_idle`] (idle maintenance enabled only).
    pub wake_at: Option<i64>,
}

impl Decision {
    /// True when the decision asks for nothing but, perhaps, a wake-up.
    pub fn is_none(&self) -> bool {
        self.events.is_empty()
            && self.notices.is_empty()
            && self.compaction_warning.is_none()
            && self.drop_failed_turn.is_none()
            && !self.restore_failed_turn
            && self.promote.is_none()
            && self.compact.is_none()
            && self.continuation.is_none()
            && !self.block_auto_continue
    }

    fn notice(&mut self, level: NoticeLevel, text: String) {
        self.notices.push(Notice { level, text });
    }
}

/// Counters and flags of the machine, for inspection (JSON: [`ManagerState::to_json`], the
/// fields in camelCase).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagerState {
    pub incomplete_recoveries: u32,
    pub overflow_recovery_attempted: bool,
    pub maintenance_paused: bool,
    pub awaiting_promotion: bool,
    pub last_activity_at: Option<i64>,
    pub idle_compacted: bool,
    pub last_usage_tokens: Option<u64>,
}

// ----- JSON --------------------------------------------------------------------------------
// The JS-facing shapes, written out by hand (one code path instead of one serde
// monomorphization per type). The `serde` impls below delegate to them.

/// `null` or the value.
fn opt<T: Into<Value>>(v: Option<T>) -> Value {
    v.map_or(Value::Null, Into::into)
}

impl CompactRequest {
    /// The request as the JS API carries it.
    pub fn to_json(&self) -> Value {
        object(vec![
            ("reason", self.reason.as_str().into()),
            ("entry", self.entry.as_str().into()),
            ("willRetry", self.will_retry.into()),
            ("strategy", self.strategy.as_str().into()),
            (
                "methods",
                Value::Array(self.methods.iter().map(|m| m.as_str().into()).collect()),
            ),
            ("action", self.action.as_str().into()),
            ("excludeSnapcompact", self.exclude_snapcompact.into()),
            ("contextTokens", self.context_tokens.into()),
            ("contextWindow", self.context_window.into()),
            ("payloadRejection", self.payload_rejection.into()),
        ])
    }

    /// Reads a request from its JSON form: every field may be left out (the default's value
    /// is taken), unknown fields are ignored, a present field must have its type.
    pub fn from_json(v: &Value) -> Result<CompactRequest, String> {
        fn name<T>(v: &Value, key: &str, parse: impl Fn(&str) -> Option<T>) -> Result<T, String> {
            match v.as_str() {
                Some(s) => parse(s).ok_or_else(|| format!("unknown {key} \"{s}\"")),
                None => Err(format!("`{key}` must be a string")),
            }
        }
        let flag = |v: &Value, key: &str| v.as_bool().ok_or(format!("`{key}` must be a boolean"));
        let count = |v: &Value, key: &str| {
            v.as_u64()
                .ok_or(format!("`{key}` must be a non-negative integer"))
        };
        let o = v
            .as_object()
            .ok_or("a compaction request must be an object")?;
        let mut r = CompactRequest::default();
        for (key, v) in o {
            let k = key.as_str();
            match k {
                "reason" => r.reason = name(v, k, CompactionReason::parse)?,
                "entry" => r.entry = name(v, k, EntryPoint::parse)?,
                "willRetry" => r.will_retry = flag(v, k)?,
                "strategy" => r.strategy = name(v, k, Strategy::parse)?,
                "methods" => {
                    r.methods = v
                        .as_array()
                        .ok_or("`methods` must be an array")?
                        .iter()
                        .map(|m| name(m, "method", CompactionMethod::parse))
                        .collect::<Result<_, _>>()?
                }
                "action" => r.action = name(v, k, CompactionAction::parse)?,
                "excludeSnapcompact" => r.exclude_snapcompact = flag(v, k)?,
                "contextTokens" => r.context_tokens = count(v, k)?,
                "contextWindow" => r.context_window = count(v, k)?,
                "payloadRejection" => r.payload_rejection = flag(v, k)?,
                _ => {}
            }
        }
        Ok(r)
    }
}

impl Event {
    /// The event as the JS API carries it (absent options and a false `skipped` left out).
    pub fn to_json(&self) -> Value {
        let mut m = Vec::new();
        let mut put = |k: &'static str, v: Value| m.push((k, v));
        match self {
            Event::AutoCompactionStart { reason, action } => {
                put("type", "auto_compaction_start".into());
                put("reason", reason.as_str().into());
                if let Some(a) = action {
                    put("action", a.as_str().into());
                }
            }
            Event::AutoCompactionEnd {
                action,
                aborted,
                will_retry,
                error_message,
                skipped,
            } => {
                put("type", "auto_compaction_end".into());
                if let Some(a) = action {
                    put("action", a.as_str().into());
                }
                put("aborted", (*aborted).into());
                put("willRetry", (*will_retry).into());
                if let Some(e) = error_message {
                    put("errorMessage", e.as_str().into());
                }
                if *skipped {
                    put("skipped", true.into());
                }
            }
        }
        object(m)
    }
}

impl Decision {
    /// The decision as the JS API carries it.
    pub fn to_json(&self) -> Value {
        object(vec![
            (
                "events",
                Value::Array(self.events.iter().map(Event::to_json).collect()),
            ),
            (
                "notices",
                Value::Array(
                    self.notices
                        .iter()
                        .map(|n| {
                            object(vec![
                                ("level", n.level.as_str().into()),
                                ("text", n.text.as_str().into()),
                            ])
                        })
                        .collect(),
                ),
            ),
            ("compactionWarning", opt(self.compaction_warning.as_deref())),
            (
                "dropFailedTurn",
                opt(self
                    .drop_failed_turn
                    .map(|d| object(vec![("durable", d.durable.into())]))),
            ),
            ("restoreFailedTurn", self.restore_failed_turn.into()),
            (
                "promote",
                opt(self.promote.map(|p| {
                    object(vec![
                        ("reason", p.reason.as_str().into()),
                        ("contextTokens", p.context_tokens.into()),
                        ("contextWindow", p.context_window.into()),
                    ])
                })),
            ),
            (
                "compact",
                opt(self.compact.as_ref().map(CompactRequest::to_json)),
            ),
            (
                "continuation",
                opt(self.continuation.as_ref().map(|c| {
                    object(vec![
                        ("afterMs", c.after_ms.into()),
                        ("kind", c.kind.as_str().into()),
                        ("prompt", opt(c.prompt)),
                        (
                            "reminder",
                            opt(c.reminder.map(|r| {
                                object(vec![
                                    ("outputTokens", r.output_tokens.into()),
                                    ("retryCount", r.retry_count.into()),
                                    ("maxRetries", r.max_retries.into()),
                                ])
                            })),
                        ),
                    ])
                })),
            ),
            ("blockAutoContinue", self.block_auto_continue.into()),
            ("wakeAt", opt(self.wake_at)),
        ])
    }
}

impl ManagerState {
    /// The counters and flags as the JS API carries them.
    pub fn to_json(&self) -> Value {
        object(vec![
            ("incompleteRecoveries", self.incomplete_recoveries.into()),
            (
                "overflowRecoveryAttempted",
                self.overflow_recovery_attempted.into(),
            ),
            ("maintenancePaused", self.maintenance_paused.into()),
            ("awaitingPromotion", self.awaiting_promotion.into()),
            ("lastActivityAt", opt(self.last_activity_at)),
            ("idleCompacted", self.idle_compacted.into()),
            ("lastUsageTokens", opt(self.last_usage_tokens)),
        ])
    }
}

macro_rules! serialize_as_json {
    ($($t:ty),*) => {$(
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                serde::Serialize::serialize(&self.to_json(), s)
            }
        }
    )*};
}
serialize_as_json!(CompactRequest, Event, Decision, ManagerState);

impl<'de> serde::Deserialize<'de> for CompactRequest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = <Value as serde::Deserialize>::deserialize(d)?;
        CompactRequest::from_json(&v).map_err(serde::de::Error::custom)
    }
}

// ----- overflow detection ---------------------------------------------------------------

/// Provider wordings of a context overflow (spec: compaction §8.2), lower case. `#` is one or
/// more digits, `*` any text, `~` a space or an underscore.
const OVERFLOW_PATTERNS: [&str; 12] = [
    "prompt is too long",
    "exceeds the context window",
    "input token count*exceeds the maximum",
    "maximum prompt length is #",
    "reduce the length of the messages",
    "maximum context length is # tokens",
    "exceeds the limit of #",
    "exceeds the available context size",
    "greater than the context length",
    "context~length~exceeded",
    "too many tokens",
    "token limit exceeded",
];

/// Wordings of an HTTP 413-like payload rejection (our list; the reference's classifier is
/// richer, spec: compaction §8.2 [N] step 2), lower case.
const PAYLOAD_PATTERNS: [&str; 4] = [
    "payload too large",
    "request entity too large",
    "request~too~large",
    "request size exceeds",
];

/// Words that tie a payload rejection to attachments rather than tokens (our list).
const MEDIA_WORDS: [&str; 4] = ["image", "media", "attachment", "pdf"];

fn match_here(t: &[u8], p: &[u8]) -> bool {
    match p.split_first() {
        None => true,
        Some((b'*', rest)) => matches_anywhere(t, rest),
        Some((b'#', rest)) => {
            let n = t.iter().take_while(|c| c.is_ascii_digit()).count();
            n > 0 && match_here(&t[n..], rest)
        }
        Some((b'~', rest)) => matches!(t.first(), Some(b' ' | b'_')) && match_here(&t[1..], rest),
        Some((c, rest)) => t.first() == Some(c) && match_here(&t[1..], rest),
    }
}

fn matches_anywhere(t: &[u8], p: &[u8]) -> bool {
    let first = p.first().copied();
    (0..=t.len()).any(|i| {
        // Cheap pre-filter on a literal first byte.
        match first {
            Some(c) if !matches!(c, b'*' | b'#' | b'~') => {
                t.get(i) == Some(&c) && match_here(&t[i..], p)
            }
            _ => match_here(&t[i..], p),
        }
    })
}

/// A bare `400`/`413`/`429` `[status code] (no body)` message.
fn bare_status_without_body(lower: &str, codes: &[&str]) -> bool {
    let t = lower.trim_start();
    codes.iter().any(|code| {
        t.strip_prefix(code).is_some_and(|rest| {
            let rest = rest.trim_start();
            let rest = rest
                .strip_prefix("status code")
                .unwrap_or(rest)
                .trim_start();
            rest.starts_with("(no body)")
        })
    })
}

/// Whether an error text says the context overflowed (spec: compaction §8.2 list,
/// case-insensitive, plus the bare 400/413/429 status with no body).
pub fn is_overflow_error_text(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    OVERFLOW_PATTERNS
        .iter()
        .any(|p| matches_anywhere(lower.as_bytes(), p.as_bytes()))
        || bare_status_without_body(&lower, &["400", "413", "429"])
}

/// Whether an error text is an HTTP 413-like rejection of the request's size.
fn is_payload_rejection_text(lower: &str) -> bool {
    PAYLOAD_PATTERNS
        .iter()
        .any(|p| matches_anywhere(lower.as_bytes(), p.as_bytes()))
        || lower.trim_start().starts_with("413")
}

/// `input + cacheRead` above a known window: the provider took more than fits (spec §8.2).
fn usage_overflow(a: &AssistantMessage, window: u64) -> bool {
    window > 0
        && a.usage
            .as_ref()
            .is_some_and(|u| u.input + u.cache_read > window as f64)
}

/// `isContextOverflow(msg, window?)` (spec: compaction §8.2): an `error` stop whose text
/// matches a provider's overflow wording, or a `stop` whose `input + cacheRead` exceeds the
/// window (silent overflow; needs a known window, 0 = unknown).
pub fn is_context_overflow(a: &AssistantMessage, context_window: u64) -> bool {
    match a.stop_reason {
        Some(StopReason::Error) => a
            .error_message
            .as_deref()
            .is_some_and(is_overflow_error_text),
        Some(StopReason::Stop) => usage_overflow(a, context_window),
        _ => false,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    Overflow,
    PayloadRejected { media: bool },
}

fn classify(a: &AssistantMessage, window: u64) -> Option<Failure> {
    match a.stop_reason {
        Some(StopReason::Error) => {
            let lower = a
                .error_message
                .as_deref()
                .unwrap_or("")
                .to_ascii_lowercase();
            if is_payload_rejection_text(&lower) {
                let media = MEDIA_WORDS.iter().any(|w| lower.contains(w));
                Some(Failure::PayloadRejected { media })
            } else if is_overflow_error_text(&lower) {
                Some(Failure::Overflow)
            } else {
                None
            }
        }
        Some(StopReason::Stop) if usage_overflow(a, window) => Some(Failure::Overflow),
        _ => None,
    }
}

// ----- turn facts -----------------------------------------------------------------------

/// Text or a tool call: the turn made progress (spec §8.2 [N] step 1).
fn delivered_output(a: &AssistantMessage) -> bool {
    a.blocks().iter().any(|b| match b {
        ContentBlock::Text { text } => !text.trim().is_empty(),
        ContentBlock::ToolCall { .. } => true,
        _ => false,
    })
}

/// A finished text answer: nothing left to continue (spec §8.5).
fn terminal_text_answer(a: &AssistantMessage) -> bool {
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
fn same_model(a: &AssistantMessage, m: &ModelInfo) -> bool {
    a.provider.as_deref().is_none_or(|p| p == m.provider)
        && a.model.as_deref().is_none_or(|id| id == m.id)
}

/// Older than the latest compaction (spec §8.2 `errorBeforeCompaction`).
fn predates(timestamp: Option<f64>, compaction_at: Option<i64>) -> bool {
    match (timestamp, compaction_at) {
        (Some(t), Some(c)) => t < c as f64,
        _ => false,
    }
}

fn turn_label(a: &AssistantMessage, m: &ModelInfo) -> String {
    match (&a.provider, &a.model) {
        (Some(p), Some(id)) => format!("{p}/{id}"),
        _ => m.label(),
    }
}

fn truncated_text(a: &AssistantMessage, m: &ModelInfo) -> String {
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
        exhausted: bool,
        output_tokens: u64,
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
        }
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

    /// Builds the request: strategy and methods usable for this reason and model (§8.3).
    fn request(
        &self,
        reason: CompactionReason,
        entry: EntryPoint,
        will_retry: bool,
        model: &ModelInfo,
        context_tokens: u64,
        payload_rejection: bool,
    ) -> CompactRequest {
        let s = &self.settings;
        let exclude_snapcompact = payload_rejection;
        let snapcompact_ok = model.accepts_images && !exclude_snapcompact;
        let strategy = match s.strategy {
            Strategy::Handoff if reason == CompactionReason::Overflow => Strategy::ContextFull,
            Strategy::Snapcompact if !snapcompact_ok => Strategy::ContextFull,
            other => other,
        };
        let methods: Vec<CompactionMethod> = s
            .method_order
            .iter()
            .filter_map(|m| CompactionMethod::parse(m))
            .filter(|m| match m {
                CompactionMethod::Remote => s.remote_enabled && s.remote_endpoint.is_some(),
                CompactionMethod::Snapcompact => snapcompact_ok,
                CompactionMethod::Handoff => reason != CompactionReason::Overflow,
                _ => true,
            })
            .collect();
        let action = methods.first().map_or(
            match strategy {
                Strategy::Handoff => CompactionAction::Handoff,
                Strategy::Shake => CompactionAction::Shake,
                Strategy::Snapcompact => CompactionAction::Snapcompact,
                Strategy::ContextFull | Strategy::Off => {
                    if s.remote_enabled && s.remote_endpoint.is_some() {
                        CompactionAction::Remote
                    } else {
                        CompactionAction::ContextFull
                    }
                }
            },
            |m| m.action(),
        );
        CompactRequest {
            reason,
            entry,
            will_retry,
            strategy,
            methods,
            action,
            exclude_snapcompact,
            context_tokens,
            context_window: model.context_window,
            payload_rejection,
        }
    }

    // ----- post-turn (§8.2) ---------------------------------------------------------------

    /// An assistant turn ended (spec: compaction §8.2, the [N] decision tree with pi-mono's
    /// one-retry-per-overflow rule and its threshold check for error turns).
    pub fn after_turn(&mut self, t: TurnInput<'_>) -> Decision {
        let mut d = self.post_turn(t);
        d.wake_at = self.idle_wake_at();
        d
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
                        || (window == 0 && !self.compaction_available())
                        || (media && !usage_overflow(a, window));
                    if trusted {
                        return payload_not_tokens(t.stored_tokens, window);
                    }
                    // Step 3 for an untrusted rejection.
                    return self.overflow(rec(true), t.can_promote);
                }
                // Step 3.
                Some(Failure::Overflow) => return self.overflow(rec(false), t.can_promote),
                None => {}
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
            return self.incomplete(rec(false), a, t.model, delivered, t.can_promote);
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
        let trigger = usage_tokens.max(stored);
        let target = usage_tokens.saturating_sub(t.freed_tokens).max(stored);
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
            let band = recovery_band_tokens(threshold_tokens(window, &self.settings));
            if window > 0 && trigger <= band {
                self.paused = false;
            } else {
                return Decision::default();
            }
        }
        if !should_compact(trigger, window, &self.settings) {
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
            compact: Some(self.request(
                CompactionReason::Threshold,
                entry,
                false,
                model,
                target,
                false,
            )),
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
        if !self.compaction_available() && !can_promote {
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
        if !self.compaction_available() {
            // Only after a failed promotion: the turn goes back, the user decides.
            d.restore_failed_turn = true;
            d.block_auto_continue = true;
            d.notice(NoticeLevel::Error, overflow_without_compaction(&rec));
            return d;
        }
        self.overflow_recovery_attempted = true;
        d.compact = Some(self.request(
            CompactionReason::Overflow,
            EntryPoint::PostTurn,
            true,
            &rec.model,
            rec.context_tokens,
            rec.payload_rejection,
        ));
        d
    }

    /// §8.2 [N] step 5.
    fn incomplete(
        &mut self,
        rec: Recovery,
        a: &AssistantMessage,
        model: &ModelInfo,
        delivered: bool,
        can_promote: bool,
    ) -> Decision {
        let window = model.context_window;
        let exhausted = window == 0
            || a.usage.as_ref().map_or(0, context_tokens)
                > threshold_tokens(window, &self.settings);
        let truncated = truncated_text(a, model);
        let mut d = Decision::default();
        if (!exhausted && delivered) || (!self.compaction_available() && !can_promote) {
            // Keep the partial answer; there is room, or nothing could make any.
            d.notice(NoticeLevel::Warning, truncated);
            return d;
        }
        d.drop_failed_turn = Some(DropTurn { durable: false });
        let output_tokens = a.usage.as_ref().map_or(0.0, |u| u.output).max(0.0) as u64;
        let pending = Pending::Incomplete {
            rec,
            exhausted,
            output_tokens,
            truncated,
        };
        if can_promote {
            return self.ask_promotion(d, pending, CompactionReason::Incomplete);
        }
        self.incomplete_recover(pending, d)
    }

    fn incomplete_recover(&mut self, pending: Pending, mut d: Decision) -> Decision {
        let Pending::Incomplete {
            rec,
            exhausted,
            output_tokens,
            truncated,
        } = pending
        else {
            return d;
        };
        if !self.compaction_available() {
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
        if exhausted {
            d.compact = Some(self.request(
                CompactionReason::Incomplete,
                EntryPoint::PostTurn,
                true,
                &rec.model,
                rec.context_tokens,
                false,
            ));
        } else {
            let mut c = Continuation::retry();
            c.reminder = (output_tokens > 0).then_some(LengthStopReminder {
                output_tokens,
                retry_count: self.incomplete_recoveries,
                max_retries: INCOMPLETE_RECOVERY_MAX_RETRIES,
            });
            d.continuation = Some(c);
        }
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
                compact: Some(self.request(
                    CompactionReason::Threshold,
                    entry,
                    false,
                    &model,
                    context_tokens,
                    false,
                )),
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
        if !self.compaction_available()
            || !should_compact(context_tokens, target.context_window, &self.settings)
        {
            return Decision::default();
        }
        Decision {
            compact: Some(self.request(
                CompactionReason::Threshold,
                EntryPoint::ModelSwitch,
                false,
                target,
                context_tokens,
                false,
            )),
            ..Decision::default()
        }
    }

    /// Idle maintenance (spec: compaction §8.1 `runIdleCompaction`, §9.2): with
    /// `idleEnabled`, once `idleTimeoutSeconds` passed since the last turn or prompt and the
    /// live context is over `idleThresholdTokens`, compact with reason `idle` — at most once
    /// per idle period, never while maintenance is paused. Too early: `wake_at` says when to
    /// ask again.
    pub fn on_idle(&mut self, model: &ModelInfo, context_tokens: u64, now: i64) -> Decision {
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
            compact: Some(self.request(
                CompactionReason::Idle,
                EntryPoint::Idle,
                false,
                model,
                context_tokens,
                false,
            )),
            ..Decision::default()
        }
    }

    // ----- after a compaction (§8.3–§8.6) -----------------------------------------------

    /// A compaction ended (spec: compaction §8.3 events and error prefixes, §8.5 progress
    /// guard and continuation, §8.6 manual resume). Never asks for another compaction.
    pub fn after_compaction(&mut self, r: &CompactionReport) -> Decision {
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
                let residual = (*tokens_after).max(stored_tokens.unwrap_or(0));
                if let Some(text) = self.no_headroom(req, residual) {
                    self.paused = true;
                    d.events.push(req.end_event(false, false, None, false));
                    d.notice(NoticeLevel::Warning, text.clone());
                    d.compaction_warning = Some(text);
                    d.block_auto_continue = true;
                    if req.will_retry {
                        // The rebuilt context holds the failed turn again.
                        d.drop_failed_turn = Some(DropTurn { durable: false });
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

    /// The progress guard (spec: compaction §8.5): `Some(warning)` when the compaction left
    /// no headroom. Threshold/incomplete: `max(live, stored) ≤ floor(0.8 · threshold)`;
    /// overflow: `≤ W − budget reserve`; unknown window: always headroom. A payload-rejection
    /// recovery must also have shrunk the context.
    fn no_headroom(&self, req: &CompactRequest, residual: u64) -> Option<String> {
        let w = req.context_window;
        if req.payload_rejection && req.context_tokens > 0 && residual >= req.context_tokens {
            return Some(format!(
                "Compaction did not shrink the request the provider rejected as too large \
                 ({residual} tokens remain) — pausing automatic maintenance. Remove large \
                 attachments or switch models."
            ));
        }
        if w == 0 {
            return None;
        }
        let limit = if req.reason == CompactionReason::Overflow {
            w.saturating_sub(budget_reserve_tokens(w, &self.settings))
        } else {
            recovery_band_tokens(threshold_tokens(w, &self.settings))
        };
        (residual > limit).then(|| {
            format!(
                "Compaction freed too little context to make progress — pausing automatic \
                 maintenance ({residual} tokens remain; continuing needs at most {limit}). \
                 Continue by hand, compact with a focus, or switch to a larger-context model."
            )
        })
    }
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
    fn pattern_matcher() {
        let m = |t: &str, p: &str| matches_anywhere(t.as_bytes(), p.as_bytes());
        assert!(m(
            "xx maximum prompt length is 131072 yy",
            "maximum prompt length is #"
        ));
        assert!(!m(
            "maximum prompt length is unknown",
            "maximum prompt length is #"
        ));
        assert!(m(
            "input token count (2000000) exceeds the maximum",
            "input token count*exceeds the maximum"
        ));
        assert!(!m(
            "exceeds the maximum; input token count",
            "input token count*exceeds the maximum"
        ));
        assert!(m("context_length_exceeded", "context~length~exceeded"));
        assert!(m("context length exceeded", "context~length~exceeded"));
        assert!(!m("contextlengthexceeded", "context~length~exceeded"));
        assert!(m("", ""));
    }

    #[test]
    fn bare_status() {
        let b = |t: &str| bare_status_without_body(&t.to_ascii_lowercase(), &["400", "413", "429"]);
        assert!(b("400 status code (no body)"));
        assert!(b("413 (no body)"));
        assert!(b("  429 Status Code (no body)"));
        assert!(!b("500 status code (no body)"));
        assert!(!b("400 Bad Request"));
        assert!(!b("error 400 status code (no body)"));
    }

    #[test]
    fn recovery_band_is_the_floor_of_four_fifths() {
        for t in [0u64, 1, 4, 5, 13_928, 85_000, 99_999] {
            assert_eq!(recovery_band_tokens(t), (0.8 * t as f64).floor() as u64);
        }
    }
}
