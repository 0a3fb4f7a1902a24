//! What the trigger machine answers (spec: compaction §8.3, §8.5, §8.7): the [`Decision`] and
//! its parts — compaction requests, events, notices, promotion and continuation — plus the
//! machine's inspectable state.

use crate::settings::Strategy;
use crate::tokens::WindowBudgets;

/// Delay before a retry or continuation is started (spec: compaction §8.3, §8.5).
pub const CONTINUE_DELAY_MS: u64 = 100;

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

    pub(super) fn parse(s: &str) -> Option<CompactionMethod> {
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
/// `contextTokens`, `contextWindow`, `thresholdTokens`, `payloadRejection`, `budgets`
/// (`{contextWindow, thresholdTokens, reserveTokens, keepRecentTokens, keepRecentClamped,
/// shakeProtectTokens, shakeMinSavings, archiveBudgetTokens}` or `null`); every field may be
/// left out when reading (the default's value is taken).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactRequest {
    pub reason: CompactionReason,
    pub entry: EntryPoint,
    /// Retry the failed request after the compaction (overflow and incomplete recovery).
    pub will_retry: bool,
    /// The engine strategy of the first method (`remote`/`soft`/`window` → `context-full`,
    /// spec §8.3); a shell that falls back to a later method runs that one's strategy.
    pub strategy: Strategy,
    /// The usable methods of `methodOrder`, in order, for shells that walk the fallback
    /// list ([`usable_methods`](super::usable_methods): `remote` only with a remote
    /// endpoint, `snapcompact` only for an image-reading model and not after a payload
    /// rejection, `handoff` not for an overflow, `shake` not manually). Never empty in a
    /// request the machine makes.
    pub methods: Vec<CompactionMethod>,
    /// The events' `action`: the first method's, so the events name the method that runs.
    pub action: CompactionAction,
    /// Leave snapcompact out: the provider rejected the request's bytes or media.
    pub exclude_snapcompact: bool,
    /// The live context size that triggered; may stand in for `tokensBefore` (§3.5).
    pub context_tokens: u64,
    /// The window the compaction must fit (0 = unknown); the progress guard measures
    /// against it.
    pub context_window: u64,
    /// The model's compaction point (its `modelThresholds` rule applied); `None` for an
    /// unknown window or a host-made request, whose guard uses the settings' threshold.
    pub threshold_tokens: Option<u64>,
    /// Recovery from a payload rejection (§8.2 [N] step 3): no progress ⇒ warn and block.
    pub payload_rejection: bool,
    /// The budgets the compaction runs with in this window (`keepRecentTokens`, the
    /// automatic shake's protection, the snapcompact archive's room): the small-window rules
    /// of [`window_budgets`](crate::tokens::window_budgets). `None` for an unknown window.
    pub budgets: Option<WindowBudgets>,
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
            threshold_tokens: None,
            payload_rejection: false,
            budgets: None,
        }
    }
}

impl CompactRequest {
    /// The request describing a manual compaction (`/compact`), to report it through
    /// [`ContextManager::after_compaction`].
    ///
    /// [`ContextManager::after_compaction`]: super::ContextManager::after_compaction
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
///
/// [`ContextManager::after_promotion`]: super::ContextManager::after_promotion
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

/// Start the next turn after a delay (spec: compaction §8.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continuation {
    pub after_ms: u64,
    pub kind: ContinuationKind,
    /// The auto-continue prompt (`prompts/auto-continue.md`) for [`ContinuationKind::AutoContinue`].
    pub prompt: Option<&'static str>,
}

impl Continuation {
    pub(super) fn retry() -> Self {
        Continuation {
            after_ms: CONTINUE_DELAY_MS,
            kind: ContinuationKind::Retry,
            prompt: None,
        }
    }

    pub(super) fn queued_or_auto(queued: bool) -> Self {
        if queued {
            Continuation {
                after_ms: CONTINUE_DELAY_MS,
                kind: ContinuationKind::QueuedMessages,
                prompt: None,
            }
        } else {
            Continuation {
                after_ms: CONTINUE_DELAY_MS,
                kind: ContinuationKind::AutoContinue,
                prompt: Some(crate::prompts::AUTO_CONTINUE.trim_end()),
            }
        }
    }
}

impl Continuation {
    /// What the host does with it in a request/response loop (the Maintainer's `next`):
    /// [`Next::Retry`] resends the request, [`Next::Continue`] sends the auto-continue prompt
    /// as a new message, and queued messages are the host's own to deliver ([`Next::Done`]).
    pub fn next(&self) -> Next {
        match self.kind {
            ContinuationKind::Retry => Next::Retry,
            ContinuationKind::AutoContinue if self.prompt.is_some() => Next::Continue,
            _ => Next::Done,
        }
    }
}

/// What a request/response host does after a reply or a manual compaction (the Maintainer's
/// `next`, spec: compaction §8.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Next {
    /// Nothing more from the core: run the reply's tool calls, if any.
    #[default]
    Done,
    /// Send the auto-continue prompt as a new user message.
    Continue,
    /// Send the request again (the failed turn is out of the context).
    Retry,
}

impl Next {
    /// The step's string form.
    pub fn as_str(self) -> &'static str {
        match self {
            Next::Done => "done",
            Next::Continue => "continue",
            Next::Retry => "retry",
        }
    }
}

/// A prune pass of the per-turn policy (spec: compaction §6.5, §6.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrunePass {
    /// The stale pass before every request: superseded reads, useless results (§6.5).
    Stale,
    /// The threshold prune before a reply is checked against the threshold (§6.6).
    Threshold,
}

impl PrunePass {
    /// The pass's string form.
    pub fn as_str(self) -> &'static str {
        match self {
            PrunePass::Stale => "stale",
            PrunePass::Threshold => "threshold",
        }
    }
}

/// A prune the host runs now, with these options and its clock: `Session::prune_stale` for
/// [`PrunePass::Stale`], `Session::prune` for [`PrunePass::Threshold`].
///
/// JSON: `{pass, options}`, the options as the session's prune calls name them
/// (`supersedeKey` for the stale pass only, `pruneUseless`, `idleFlushMs` for the stale pass
/// only, and the windows: `suffixTokenLimit`, or `protectTokens`, `minimumSavings` and
/// `cacheWarmSuffixTokens`), the windows in the core's estimate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PruneStep {
    pub pass: PrunePass,
    /// Supersede reads by their key (`supersedeReads`, stale pass).
    pub supersede_key: bool,
    /// Prune results marked useless (`dropUseless`).
    pub prune_useless: bool,
    /// The stale pass flushes everything after this long idle.
    pub idle_flush_ms: Option<u64>,
    /// The token windows, named as the prune options name them, in the core's estimate.
    pub windows: Vec<(&'static str, u64)>,
}

/// What the core makes of a reply (the Maintainer's `afterResponse`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyStep {
    /// A turn that asked for tools: nothing now; the next request is checked mid-run, with
    /// the tool results counted ([`ContextManager::before_request`]).
    ///
    /// [`ContextManager::before_request`]: super::ContextManager::before_request
    Deferred,
    /// Checked now: run [`ContextManager::reply_prune`], if any, then report what it freed to
    /// [`ContextManager::after_reply`].
    ///
    /// [`ContextManager::reply_prune`]: super::ContextManager::reply_prune
    /// [`ContextManager::after_reply`]: super::ContextManager::after_reply
    Check,
}

/// What the host must do (see the module docs for the order). The default does nothing.
///
/// JSON ([`Decision::to_json`]): the fields in camelCase, absent options as `null`:
/// `events`, `notices` (`{level, text}`), `compactionWarning`, `dropFailedTurn`
/// (`{durable}`), `restoreFailedTurn`, `promote` (`{reason, contextTokens, contextWindow}`),
/// `compact` ([`CompactRequest`]), `continuation` (`{afterMs, kind, prompt}`),
/// `blockAutoContinue`, `wakeAt`.
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
    ///
    /// [`ContextManager::on_idle`]: super::ContextManager::on_idle
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

    pub(super) fn notice(&mut self, level: NoticeLevel, text: String) {
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
