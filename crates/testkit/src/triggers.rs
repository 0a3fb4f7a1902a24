//! A host loop around the trigger state machine (`ctxfold::triggers::ContextManager`) that
//! applies each decision the way an agent would and checks the invariants after every step:
//! the `triggers` fuzz target drives it with random turns, prompts, idle periods, model
//! switches, promotions and compaction outcomes. Every check returns `Err(what went wrong)`.
//!
//! Invariants:
//! - the answer to a compaction never asks for another compaction or a promotion (no loop);
//! - at most [`INCOMPLETE_RECOVERY_MAX_RETRIES`] consecutive recoveries of `length` stops
//!   without a turn that delivered output or a new prompt in between;
//! - a continuation is never scheduled in a decision that blocks automatic continuation;
//! - an overflowing turn of the current model never goes without a compact, promote or drop
//!   decision (or the episode's explicit give-up) when compaction is enabled and a method is
//!   usable;
//! - every compaction request names usable methods only (`shake` only for automatic reasons), its `action` and
//!   `strategy` are its first method's, and it survives the JSON round trip.

use ctxfold::settings::{CompactionSettings, Strategy, METHODS};
use ctxfold::triggers::{
    is_context_overflow, usable_methods, CompactRequest, CompactionMethod, CompactionOutcome,
    CompactionReason, CompactionReport, ContextManager, ContinuationKind, Decision, Event,
    MethodContext, ModelInfo, PromptInput, TurnInput, INCOMPLETE_RECOVERY_MAX_RETRIES,
};
use ctxfold::AgentMessage;
use serde_json::{json, Value};

use crate::invariants::Check;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// How an assistant turn stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Stop,
    Length,
    Error,
    ToolUse,
    Aborted,
}

impl Stop {
    fn as_str(self) -> &'static str {
        match self {
            Stop::Stop => "stop",
            Stop::Length => "length",
            Stop::Error => "error",
            Stop::ToolUse => "toolUse",
            Stop::Aborted => "aborted",
        }
    }
}

/// Error texts a provider sends: overflows in several wordings, payload rejections, and
/// errors that are neither.
pub const ERROR_TEXTS: [&str; 12] = [
    "prompt is too long: 213462 tokens > 200000 maximum",
    "This model's maximum context length is 128000 tokens. However, you requested 130000",
    "Your input exceeds the context window of this model",
    "context_length_exceeded",
    "400 status code (no body)",
    "413 Request Entity Too Large",
    "request_too_large: too many images",
    "Payload Too Large",
    "rate limit exceeded, retry after 20s",
    "Internal server error",
    "",
    "input token count (2100000) exceeds the maximum number of tokens allowed (1048576)",
];

/// How the host answers the machine's questions when one comes up during a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// The promotion to a larger model succeeded.
    pub promoted: bool,
    pub outcome: Outcome,
    pub queued_messages: bool,
}

/// How a compaction the host ran ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Committed; the rebuilt context holds this share (per mille) of the tokens before.
    Compacted {
        per_mille: u16,
    },
    NothingToCompact,
    Aborted,
    Failed,
}

/// An assistant turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub stop: Stop,
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    /// The error text of an `error` stop.
    pub error: String,
    pub text: bool,
    pub tool_call: bool,
    /// Produced by another model than the current one.
    pub foreign: bool,
    /// Timestamped before the latest compaction.
    pub stale: bool,
    pub mid_run: bool,
    pub can_promote: bool,
    pub stored_tokens: Option<u64>,
    pub freed_tokens: u64,
}

/// One step of the host loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Turn(Turn, Reply),
    Prompt {
        can_promote: bool,
        stored_tokens: Option<u64>,
        reply: Reply,
    },
    Idle {
        after_ms: u64,
        context_tokens: u64,
        reply: Reply,
    },
    Switch {
        model: usize,
        context_tokens: u64,
        reply: Reply,
    },
    /// A manual compaction.
    Manual {
        outcome: Outcome,
        interrupted_turn: bool,
    },
}

/// The host loop: the machine, the current model and the clock.
pub struct Harness {
    cm: ContextManager,
    settings: CompactionSettings,
    models: Vec<ModelInfo>,
    model: usize,
    now: i64,
    latest_compaction_at: Option<i64>,
    /// Consecutive length-stop recoveries since output was delivered or a prompt was sent.
    length_recoveries: u32,
    /// Decisions checked, compactions requested, recoveries, for the fuzz log.
    pub stats: Stats,
}

/// What a run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub decisions: u64,
    pub compactions: u64,
    pub promotions: u64,
    pub overflows: u64,
}

fn assistant(
    t: &Turn,
    m: &ModelInfo,
    timestamp: i64,
) -> Result<ctxfold::session::message::AssistantMessage, String> {
    let mut content = Vec::new();
    if t.text {
        content.push(json!({"type": "text", "text": "some answer"}));
    } else {
        content.push(json!({"type": "thinking", "thinking": "thinking it over"}));
    }
    if t.tool_call {
        content.push(
            json!({"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.ts"}}),
        );
    }
    let (provider, model) = if t.foreign {
        ("elsewhere", "other-model")
    } else {
        (m.provider.as_str(), m.id.as_str())
    };
    let mut v = json!({
        "role": "assistant", "provider": provider, "model": model, "content": content,
        "stopReason": t.stop.as_str(),
        "usage": {"input": t.input, "output": t.output, "cacheRead": t.cache_read,
                  "cacheWrite": 0, "totalTokens": t.input + t.output + t.cache_read},
        "timestamp": timestamp,
    });
    if t.stop == Stop::Error {
        v["errorMessage"] = Value::from(t.error.as_str());
    }
    match AgentMessage::parse(&v.to_string(), None) {
        Ok(AgentMessage::Assistant(a)) => Ok(a),
        other => Err(format!("the harness built no assistant message: {other:?}")),
    }
}

impl Harness {
    /// A loop over `models` (at least one; the first is current) with these settings.
    pub fn new(settings: CompactionSettings, models: Vec<ModelInfo>) -> Self {
        let models = if models.is_empty() {
            vec![ModelInfo::default()]
        } else {
            models
        };
        Harness {
            cm: ContextManager::new(settings.clone()),
            settings,
            models,
            model: 0,
            now: 1_700_000_000_000,
            latest_compaction_at: None,
            length_recoveries: 0,
            stats: Stats::default(),
        }
    }

    fn current(&self) -> ModelInfo {
        self.models[self.model].clone()
    }

    /// Runs one step and checks every decision it produced.
    pub fn step(&mut self, op: &Op) -> Check {
        self.now += 1_000;
        match op {
            Op::Turn(t, reply) => self.turn(t, *reply),
            Op::Prompt {
                can_promote,
                stored_tokens,
                reply,
            } => {
                self.length_recoveries = 0;
                let m = self.current();
                let p = PromptInput {
                    stored_tokens: *stored_tokens,
                    latest_compaction_at: self.latest_compaction_at,
                    can_promote: *can_promote,
                    ..PromptInput::new(&m, self.now)
                };
                let d = self.cm.before_prompt(p);
                self.resolve(d, *reply, false).map(|_| ())
            }
            Op::Idle {
                after_ms,
                context_tokens,
                reply,
            } => {
                self.now = self
                    .now
                    .saturating_add(i64::try_from(*after_ms).unwrap_or(0));
                let m = self.current();
                let d = self.cm.on_idle(&m, *context_tokens, self.now);
                if let Some(c) = &d.compact {
                    ensure!(
                        c.reason == CompactionReason::Idle,
                        "idle asked for {:?}",
                        c.reason
                    );
                }
                self.resolve(d, *reply, false).map(|_| ())
            }
            Op::Switch {
                model,
                context_tokens,
                reply,
            } => {
                let target = self.models[model % self.models.len()].clone();
                let d = self
                    .cm
                    .before_model_switch(&target, *context_tokens, self.now);
                self.model = model % self.models.len();
                self.resolve(d, *reply, false).map(|_| ())
            }
            Op::Manual {
                outcome,
                interrupted_turn,
            } => {
                let m = self.current();
                let req = CompactRequest::manual(Strategy::ContextFull, 0, m.context_window);
                let mut report = CompactionReport::new(req, self.outcome(*outcome, 100_000));
                report.interrupted_turn = *interrupted_turn;
                if matches!(outcome, Outcome::Compacted { .. }) {
                    self.latest_compaction_at = Some(self.now);
                }
                let d = self.cm.after_compaction(&report);
                self.check(&d)?;
                ensure!(
                    d.compact.is_none(),
                    "a manual compaction asked for a compaction"
                );
                ensure!(
                    d.promote.is_none(),
                    "a manual compaction asked for a promotion"
                );
                Ok(())
            }
        }
    }

    fn turn(&mut self, t: &Turn, reply: Reply) -> Check {
        let m = self.current();
        let timestamp = match (t.stale, self.latest_compaction_at) {
            (true, Some(c)) => c - 1,
            _ => self.now,
        };
        let a = assistant(t, &m, timestamp)?;
        let delivered = t.text || t.tool_call;
        if delivered && t.stop != Stop::Aborted {
            self.length_recoveries = 0;
        }
        let ti = TurnInput {
            stored_tokens: t.stored_tokens,
            latest_compaction_at: self.latest_compaction_at,
            can_promote: t.can_promote,
            freed_tokens: t.freed_tokens,
            mid_run: t.mid_run,
            ..TurnInput::new(&a, &m, self.now)
        };
        let d = self.cm.after_turn(ti);
        let stale = t.stale && self.latest_compaction_at.is_some();
        let ours = !t.foreign && !stale;
        let overflow = ours && is_context_overflow(&a, m.context_window);
        let length = ours && t.stop == Stop::Length;
        let resolved = self.resolve(d, reply, length)?;
        if overflow {
            self.stats.overflows += 1;
            let usable = self.settings.enabled
                && self.settings.strategy != Strategy::Off
                && !usable_methods(
                    &self.settings,
                    &MethodContext {
                        payload_rejection: true,
                        ..MethodContext::new(CompactionReason::Overflow, &m)
                    },
                )
                .is_empty();
            if usable {
                let gave_up = resolved.block_auto_continue
                    && resolved.events.iter().any(|e| {
                        matches!(
                            e,
                            Event::AutoCompactionEnd {
                                error_message: Some(_),
                                ..
                            }
                        )
                    });
                ensure!(
                    resolved.compact.is_some() || resolved.promoted || resolved.dropped || gave_up,
                    "an overflowing turn ({:?}, window {}) got no compact, promote or drop \
                     decision",
                    t,
                    m.context_window
                );
            }
        }
        let state = self.cm.state();
        ensure!(
            state.incomplete_recoveries <= INCOMPLETE_RECOVERY_MAX_RETRIES,
            "{} incomplete recoveries in a row",
            state.incomplete_recoveries
        );
        ensure!(
            self.length_recoveries <= INCOMPLETE_RECOVERY_MAX_RETRIES,
            "{} length-stop recoveries in a row without progress",
            self.length_recoveries
        );
        Ok(())
    }

    fn outcome(&self, o: Outcome, before: u64) -> CompactionOutcome {
        match o {
            Outcome::Compacted { per_mille } => CompactionOutcome::Compacted {
                tokens_after: before.saturating_mul(u64::from(per_mille.min(1000))) / 1000,
                stored_tokens: None,
            },
            Outcome::NothingToCompact => CompactionOutcome::NothingToCompact,
            Outcome::Aborted => CompactionOutcome::Aborted,
            Outcome::Failed => CompactionOutcome::Failed {
                error: "the summarizer failed".into(),
            },
        }
    }

    /// Applies a decision: answers a promotion, runs a compaction and reports it, checking
    /// every decision on the way. Returns what the chain asked for in all.
    fn resolve(&mut self, d: Decision, reply: Reply, length: bool) -> Result<Resolved, String> {
        self.check(&d)?;
        let mut r = Resolved {
            compact: d.compact.clone(),
            promoted: d.promote.is_some(),
            dropped: d.drop_failed_turn.is_some(),
            block_auto_continue: d.block_auto_continue,
            events: d.events.clone(),
        };
        let mut d = d;
        if d.promote.is_some() {
            self.stats.promotions += 1;
            ensure!(
                d.compact.is_none(),
                "a decision asked to promote and compact at once"
            );
            d = self.cm.after_promotion(reply.promoted);
            self.check(&d)?;
            ensure!(
                d.promote.is_none(),
                "a promotion answer asked for another promotion"
            );
            if reply.promoted {
                // A larger model: the next in the list, when there is one.
                self.model = (self.model + 1).min(self.models.len() - 1);
            }
            r.compact = r.compact.or(d.compact.clone());
            r.dropped |= d.drop_failed_turn.is_some();
            r.block_auto_continue |= d.block_auto_continue;
            r.events.extend(d.events.iter().cloned());
        }
        if length && !reply_promoted(&r, reply) {
            let retry = d
                .continuation
                .as_ref()
                .is_some_and(|c| c.kind == ContinuationKind::Retry);
            let incomplete = d
                .compact
                .as_ref()
                .is_some_and(|c| c.reason == CompactionReason::Incomplete);
            if retry || incomplete {
                self.length_recoveries += 1;
            }
        }
        if let Some(req) = d.compact.clone() {
            self.stats.compactions += 1;
            let report = CompactionReport {
                queued_messages: reply.queued_messages,
                ..CompactionReport::new(
                    req.clone(),
                    self.outcome(reply.outcome, req.context_tokens),
                )
            };
            if matches!(reply.outcome, Outcome::Compacted { .. }) {
                self.latest_compaction_at = Some(self.now);
            }
            let after = self.cm.after_compaction(&report);
            self.check(&after)?;
            ensure!(
                after.compact.is_none(),
                "after a compaction the machine asked for another one: {:?}",
                after.compact
            );
            ensure!(
                after.promote.is_none(),
                "after a compaction the machine asked to promote"
            );
        }
        Ok(r)
    }

    /// The checks every single decision passes.
    fn check(&mut self, d: &Decision) -> Check {
        self.stats.decisions += 1;
        ensure!(
            !(d.block_auto_continue && d.continuation.is_some()),
            "a decision blocks automatic continuation and schedules one: {:?}",
            d.continuation
        );
        ensure!(
            !(d.restore_failed_turn && d.drop_failed_turn.is_some()),
            "a decision drops and restores the failed turn"
        );
        if let Some(c) = &d.compact {
            ensure!(
                !c.methods.is_empty(),
                "a compaction request without a usable method"
            );
            ensure!(
                c.reason != CompactionReason::Manual
                    || !c.methods.contains(&CompactionMethod::Shake),
                "shake offered to a manual compaction"
            );
            ensure!(
                c.action == c.methods[0].action() && c.strategy == c.methods[0].strategy(),
                "action {:?} / strategy {:?} are not the first method's ({:?})",
                c.action,
                c.strategy,
                c.methods[0]
            );
            let back = CompactRequest::from_json(&c.to_json())?;
            ensure!(
                &back == c,
                "the request does not survive JSON: {back:?} vs {c:?}"
            );
        }
        Ok(())
    }
}

fn reply_promoted(r: &Resolved, reply: Reply) -> bool {
    r.promoted && reply.promoted
}

/// What a decision chain asked for.
#[derive(Debug, Clone, Default)]
struct Resolved {
    compact: Option<CompactRequest>,
    promoted: bool,
    dropped: bool,
    block_auto_continue: bool,
    events: Vec<Event>,
}

/// A seeded random run of `steps` host steps (the fuzz target's mix, drawn from [`Rng`]): for
/// the native property tests. Returns what the run did, or the first broken invariant.
///
/// [`Rng`]: crate::rng::Rng
pub fn random_run(seed: u64, steps: usize) -> Result<Stats, String> {
    let mut r = crate::rng::Rng::new(seed);
    let mut v = json!({
        "autoContinue": r.chance(0.8),
        "idleEnabled": r.chance(0.5),
        "idleTimeoutSeconds": r.below(600),
        "idleThresholdTokens": r.below(300_000),
        "midTurnEnabled": r.chance(0.7),
    });
    if r.chance(0.1) {
        v["enabled"] = false.into();
    }
    if r.chance(0.3) {
        v["strategy"] = r
            .ps(&["context-full", "handoff", "snapcompact", "shake", "off"])
            .into();
    }
    if r.chance(0.5) {
        let order: Vec<&str> = (0..r.below(6)).map(|_| r.ps(&METHODS)).collect();
        v["methodOrder"] = order.into();
    }
    if r.chance(0.3) {
        v["reserveTokens"] = r.below(100_000).into();
    }
    if r.chance(0.3) {
        let value: Value = match r.below(3) {
            0 => r.range(1, 300_000).into(),
            1 => format!("{}k", r.range(1, 300)).into(),
            _ => format!("{}%", r.range(1, 100)).into(),
        };
        v["modelThresholds"] = json!({ r.ps(&["p/m0", "p/*", "q/*"]): value });
    }
    if r.chance(0.3) {
        v["remoteEndpoint"] = "https://summarizer.example/c".into();
    }
    let settings = CompactionSettings::from_json(&v).map_err(|e| format!("settings: {e}"))?;
    let windows = [0u64, 8_000, 32_000, 128_000, 200_000];
    let models: Vec<ModelInfo> = (0..r.range(1, 3))
        .map(|i| ModelInfo {
            provider: r.ps(&["p", "q"]).into(),
            id: format!("m{i}"),
            context_window: *r.pick(&windows),
            max_output_tokens: r.below(64_000),
            accepts_images: r.chance(0.5),
        })
        .collect();
    let window = models[0].context_window;
    let mut h = Harness::new(settings, models);
    for _ in 0..steps {
        let tokens = |r: &mut crate::rng::Rng| match r.below(3) {
            0 => window.saturating_sub(r.below(20_000)),
            1 => window + r.below(5_000),
            _ => r.below(window.max(50_000) * 2),
        };
        let reply = |r: &mut crate::rng::Rng| Reply {
            promoted: r.chance(0.25),
            outcome: match r.below(6) {
                0 => Outcome::NothingToCompact,
                1 => Outcome::Aborted,
                2 => Outcome::Failed,
                _ => Outcome::Compacted {
                    per_mille: r.below(1200) as u16,
                },
            },
            queued_messages: r.chance(0.2),
        };
        let op = match r.below(10) {
            0 => Op::Prompt {
                can_promote: r.chance(0.25),
                stored_tokens: r.chance(0.5).then(|| tokens(&mut r)),
                reply: reply(&mut r),
            },
            1 => Op::Idle {
                after_ms: r.below(900_000),
                context_tokens: tokens(&mut r),
                reply: reply(&mut r),
            },
            2 => Op::Switch {
                model: r.index(3),
                context_tokens: tokens(&mut r),
                reply: reply(&mut r),
            },
            3 => Op::Manual {
                outcome: reply(&mut r).outcome,
                interrupted_turn: r.chance(0.5),
            },
            _ => {
                let stop = *r.pick(&[
                    Stop::Stop,
                    Stop::ToolUse,
                    Stop::Length,
                    Stop::Length,
                    Stop::Error,
                    Stop::Error,
                    Stop::Aborted,
                ]);
                Op::Turn(
                    Turn {
                        stop,
                        input: tokens(&mut r),
                        output: r.below(40_000),
                        cache_read: if r.chance(0.25) { tokens(&mut r) } else { 0 },
                        error: r.ps(&ERROR_TEXTS).to_string(),
                        text: r.chance(0.5),
                        tool_call: r.chance(0.3),
                        foreign: r.chance(0.1),
                        stale: r.chance(0.1),
                        mid_run: r.chance(0.15),
                        can_promote: r.chance(0.2),
                        stored_tokens: r.chance(0.5).then(|| tokens(&mut r)),
                        freed_tokens: if r.chance(0.25) { r.below(50_000) } else { 0 },
                    },
                    reply(&mut r),
                )
            }
        };
        h.step(&op)
            .map_err(|e| format!("seed {seed}: {e}\nafter {op:?}"))?;
    }
    Ok(h.stats)
}
