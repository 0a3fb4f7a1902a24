//! The method walk of one compaction (spec: compaction §8.3 `runAutoCompaction`, §8.5 progress
//! guard, §8.6 manual, §13 shake) as a sans-IO state machine.
//!
//! The host builds a [`Walk`] from what it knows (reason, methods, model, routes, live size),
//! then loops: [`Walk::poll`] says what to do next ([`WalkStep`]), the host does it (plans,
//! shakes, asks a summarizer, commits) and reports the outcome through one of the `handle`
//! methods. The walk never touches the session and never waits; it decides which method runs,
//! which one comes next when one fails, which errors end the walk, when the dead-end rescue
//! shakes, and whether a commit left the agent room to go on.
//!
//! Rules:
//! - the methods are the eligible ones ([`eligible_methods`]) of the trigger's list, of an
//!   explicit strategy (its method, then `soft`), or of `methodOrder`; an overflow always ends
//!   with `soft` (issue 43);
//! - a method that fails hands over to the next one with a warning, whatever its error, unless
//!   the error is one no method can mend ([`FINAL_CODES`]): the user's abort or a hook's
//!   cancel, a busy session, bad arguments or settings, an unknown entry;
//! - a plan that finds nothing to summarize (`E_NOTHING_TO_COMPACT`, `E_ALREADY_COMPACTED`) is a
//!   dead end of every method alike: an automatic walk (not idle) runs the tiered rescue
//!   (§8.3): for a model that reads images, first the latest snapcompact archive is rebuilt
//!   with fewer frames ([`WalkStep::RebuildArchive`]; an archive is the one cost no shake
//!   reaches), and the progress guard is tested again; then it shakes with the rescue preset
//!   and plans again; when that shake elided nothing or the plan still dead-ends, every image
//!   attached to the branch is dropped ([`WalkStep::DropImages`], the last tier) and it plans
//!   again; a dead end after that leaves the rebuild, the shake or the dropped images as the
//!   reduction; a method's own refusal after a plan (snapcompact's "kept history fills the
//!   window") only hands over;
//! - `remote` asks only the remote route (a provider-native lane, then the endpoint), never the
//!   summarizer callbacks; its failure is reported ([`Walk::remote_failed`]) so the host's
//!   [`ContextManager`](super::ContextManager) starts the cooldown;
//! - after a commit the progress guard's test (the window minus the reserve for an overflow,
//!   80 % of the model's threshold otherwise, nothing for a manual compaction) asks for the
//!   rescue when the kept tail is still too big: the archive rebuild after a snapcompact
//!   commit, then one shake, then (still too big) the image drop; the commit stands either
//!   way;
//! - an overflow proves the provider counted more than the window: when the host measured
//!   less, the rebuild aims lower by that factor (an uncalibrated host, issue 36);
//! - an automatic `shake` hands over when it dropped nothing, or (not for idle) when the
//!   context stays above 80 % of the threshold;
//! - an automatic walk (any reason but `manual`) with the strategy `off` or `enabled: false`
//!   ends at once ([`WalkStep::Skipped`]); a manual one ignores `off` (spec: compaction §9.2);
//! - the settings' strategy as the host wrote it (not `off`) is walked first, like an explicit
//!   one, unless a list of methods is given;
//! - a handoff commit carries the document to save ([`Artifact`]) when `handoffSaveToDisk` is
//!   set and the reason is not `manual` (§5.9), named from the walk's `now`.

use super::methods::{eligible_methods, why_unusable, MethodContext, Skip};
use super::{compaction_error_message, CompactionMethod, CompactionReason};
use super::{CompactionSettings, ModelInfo, ProgressGuard};
use crate::settings::Strategy;
use crate::support::time::format_iso;
use crate::tokens::threshold_tokens;

/// Errors no other method can mend: they end the walk (spec: compaction §8.3).
pub const FINAL_CODES: [&str; 6] = [
    "E_ABORTED",
    "E_CANCELLED",
    "E_BUSY",
    "E_INVALID_ARGUMENT",
    "E_SETTINGS",
    "E_UNKNOWN_ENTRY",
];

/// Plan errors that mean nothing is left to summarize, whatever the method.
pub const DEAD_ENDS: [&str; 2] = ["E_NOTHING_TO_COMPACT", "E_ALREADY_COMPACTED"];

/// A `remote` method that failed is not tried again for this long (upstream #13310).
pub const REMOTE_COOLDOWN_MS: i64 = 10 * 60 * 1000;

/// The shake presets the walk asks for (spec: compaction §13).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShakePreset {
    /// The automatic `shake` method: protects the newest results.
    Default,
    /// A `shake` asked for by hand.
    Aggressive,
    /// The dead-end rescue: reaches into the kept tail (§8.3).
    Rescue,
}

impl ShakePreset {
    pub fn as_str(self) -> &'static str {
        match self {
            ShakePreset::Default => "default",
            ShakePreset::Aggressive => "aggressive",
            ShakePreset::Rescue => "rescue",
        }
    }
}

/// Who writes the summary of a planned method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// A provider-native lane of the model (OpenAI Responses compaction, Anthropic server
    /// compaction); it commits itself. The host reports [`Walk::handle_native_unavailable`]
    /// when no lane applies to this plan.
    Native,
    /// The remote endpoint only (spec: compaction §5.8).
    Endpoint,
    /// The host's summarizer callbacks.
    Callbacks,
}

impl Route {
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Native => "native",
            Route::Endpoint => "endpoint",
            Route::Callbacks => "callbacks",
        }
    }

    /// The host sends the route's requests one after the other, and the first failure ends
    /// the method: a failing endpoint sees no more POSTs than one request's retry policy
    /// allows (spec: compaction §5.8; issue 36 item 5). Callbacks answer a round at once.
    pub fn one_at_a_time(self) -> bool {
        self == Route::Endpoint
    }
}

/// A document the host saves through its `saveArtifact` callback after a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// The file name, e.g. `handoff-2026-12-07T06-51-19-123Z.md`.
    pub name: String,
    /// What it is (`handoff`).
    pub kind: &'static str,
}

/// The file name of a handoff document saved at `now` (ms since the epoch, kept within the
/// JavaScript `Date` range): `handoff-` and the ISO time with `:` and `.` as `-`, then `.md`
/// (spec: compaction §5.9 `handoffSaveToDisk`).
pub fn handoff_document_name(now: i64) -> String {
    const DATE_RANGE: i64 = 8_640_000_000_000_000;
    let iso = format_iso(now.clamp(-DATE_RANGE, DATE_RANGE));
    format!("handoff-{}.md", iso.replace([':', '.'], "-"))
}

/// What the host does next.
#[derive(Debug, Clone, PartialEq)]
pub enum WalkStep {
    /// Plan `method` (engine `strategy`, the remote lane only for `remote`).
    Plan {
        method: CompactionMethod,
        strategy: Strategy,
        remote_enabled: bool,
    },
    /// Shake the live branch with `preset`.
    Shake { preset: ShakePreset },
    /// The dead-end rescue's first tier (spec: compaction §8.3, §8.5): rebuild the latest
    /// snapcompact archive of the branch with fewer frames
    /// (`compaction::snapcompact_rescue::plan_archive_rebuild`, then a snapcompact commit)
    /// so that the context with the request overhead takes at most `limit_tokens` provider
    /// tokens (`None`: the window's budget); the host reports [`Walk::handle_rebuilt`] or
    /// [`Walk::handle_rebuild_failed`].
    RebuildArchive { limit_tokens: Option<u64> },
    /// The dead-end rescue's last tier (spec: compaction §8.3): drop every image attached to
    /// the live branch (`shake::drop_images`); the host reports [`Walk::handle_images_dropped`].
    DropImages,
    /// Answer the plan's summary requests through `route`.
    Summarize {
        method: CompactionMethod,
        route: Route,
    },
    /// Commit the plan (with its answers; snapcompact prints its frames); then save
    /// `artifact`, the commit's document, if any (a handoff's, §5.9).
    Commit {
        method: CompactionMethod,
        artifact: Option<Artifact>,
    },
    /// Emit a `compaction_warning` event (given once by [`Walk::poll`]).
    Warn {
        message: String,
        method: Option<CompactionMethod>,
    },
    /// The walk ended with a reduction: `method` ran (`None`: a hook supplied the compaction).
    Done { method: Option<CompactionMethod> },
    /// The walk did not run: automatic compaction is off ([`Skip::of`]); nothing changed.
    Skipped { why: Skip },
    /// The walk ended without one: reject with `code`; `message` is the error's text and
    /// `error_message` the `auto_compaction_end` text (§8.3 prefixes).
    Failed {
        code: String,
        message: String,
        error_message: String,
    },
}

/// The inputs of a walk.
#[derive(Debug, Clone)]
pub struct WalkInput {
    pub reason: CompactionReason,
    /// The failed request is retried after the compaction (overflow and length-stop
    /// recovery): the progress guard then only asks that it fit (§8.5). [`WalkInput::new`]
    /// sets it for those two reasons.
    pub will_retry: bool,
    /// A trigger's list (`CompactRequest::methods`): walked as given (eligibility re-checked).
    pub methods: Option<Vec<CompactionMethod>>,
    /// An explicit strategy: its method, then `soft` behind it.
    pub explicit: Option<Strategy>,
    /// The settings' `strategy` as the host wrote it (`None`: unset). Not `off`, and with no
    /// `methods`, it is the explicit strategy (spec: compaction §9.2).
    pub strategy: Option<Strategy>,
    /// The host's clock, ms since the epoch: the name of a handoff document saved to disk.
    pub now: i64,
    /// The settings, defaults filled in (their `methodOrder` when neither of the above).
    pub settings: CompactionSettings,
    /// The reading model (window 0 = unknown).
    pub model: ModelInfo,
    /// Whether the model's input list is known (`accepts_images` means something): an unknown
    /// model reads images only when snapcompact is asked for by name.
    pub input_known: bool,
    pub summarizer: bool,
    /// A remote endpoint besides the settings' `remoteEndpoint` (the host's own).
    pub remote_endpoint: bool,
    /// A provider-native lane may apply to the model.
    pub native_lane: bool,
    /// `remote` waits out its cooldown.
    pub remote_blocked: bool,
    pub exclude_snapcompact: bool,
    pub custom_instructions: bool,
    /// The live context in the provider's tokens, request overhead included (0 = unknown).
    pub live_tokens: u64,
    /// The request overhead (system prompt, tools) in the provider's tokens.
    pub overhead_tokens: u64,
    /// The provider's tokens per token of the core's estimate; `None` when the host has not
    /// measured it (a new Maintainer before its first answered request, `compact()` without
    /// `providerRatio`): the walk's window tests weigh the estimate at 1, and a snapcompact
    /// commit reads the rate from the provider's reported usage ([`ArchiveFit::text_ratio`]).
    pub provider_ratio: Option<f64>,
    /// The core's estimate of the live context's messages (0 = unknown): with `live_tokens`,
    /// how far the host's measure runs above what the ratio makes of the estimate (the
    /// dead-end rescue's archive rebuild aims lower by as much).
    pub estimated_tokens: u64,
    /// The provider's tokens per token of the core's flat image charge (1 when unknown).
    pub image_ratio: f64,
    /// A turn is under way at the session's leaf (`Session::turn_under_way`,
    /// `MethodContext::mid_turn`).
    pub mid_turn: bool,
}

impl WalkInput {
    /// A walk of `methodOrder` for `reason` with a summarizer and nothing else known.
    pub fn new(reason: CompactionReason, settings: CompactionSettings, model: ModelInfo) -> Self {
        WalkInput {
            reason,
            will_retry: matches!(
                reason,
                CompactionReason::Overflow | CompactionReason::Incomplete
            ),
            methods: None,
            explicit: None,
            strategy: None,
            now: 0,
            settings,
            model,
            input_known: true,
            summarizer: true,
            remote_endpoint: false,
            native_lane: false,
            remote_blocked: false,
            exclude_snapcompact: false,
            custom_instructions: false,
            live_tokens: 0,
            overhead_tokens: 0,
            provider_ratio: None,
            estimated_tokens: 0,
            image_ratio: 1.0,
            mid_turn: false,
        }
    }
}

/// Where the walk stands.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    /// Planning methods[i] (`rescued`: after a rescue shake for this plan).
    Plan(usize),
    /// The `shake` method methods[i].
    ShakeMethod(usize),
    /// The rescue shake after a dead-end plan of methods[i].
    RescuePlan(usize, String, String),
    Summarize(usize, Route),
    Commit(usize),
    /// The rescue shake after a commit of methods[i] that left too much.
    RescueCommit(usize),
    /// The archive rebuild (the rescue's first tier) after a dead-end plan of methods[i]
    /// (its code and message), or (`None`) after a snapcompact commit of methods[i] that left
    /// too much.
    RescueArchive(usize, Option<(String, String)>),
    /// The image drop (the rescue's last tier) after the rescue shake of a dead-end plan of
    /// methods[i] (its code and message) did not restore progress, or (`None`) after the rescue
    /// of a commit of methods[i] that still left too much.
    RescueImages(usize, Option<(String, String)>),
    End(WalkStep),
}

/// A host report that does not fit the step the walk asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfTurn(pub &'static str);

impl std::fmt::Display for OutOfTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the compaction walk did not ask for {}", self.0)
    }
}

/// The walk of one compaction (module docs).
#[derive(Debug, Clone)]
pub struct Walk {
    input: WalkInput,
    methods: Vec<CompactionMethod>,
    skipped: Vec<(CompactionMethod, &'static str)>,
    phase: Phase,
    warnings: Vec<WalkStep>,
    /// A rescue shake ran (at most one per walk).
    rescued: bool,
    /// The rescue shake lowered the live context.
    rescue_lowered: bool,
    /// The reading model takes images: an archive can be rendered again.
    vision: bool,
    /// The archive rebuild was asked for (at most once per walk), and it committed.
    rebuild_tried: bool,
    rebuilt: bool,
    /// The image drop was asked for (at most once per walk), and it removed images.
    images_tried: bool,
    images_dropped: bool,
    /// The live context (provider tokens, overhead included) the latest commit or rebuild
    /// left, as the progress guard tested it.
    left: u64,
    /// The host's measure over what the walk makes of the core's estimate (≥ 1): from the
    /// inputs, then from the latest commit.
    model_short: f64,
    remote_failed: bool,
}

fn code_in(code: &str, list: &[&str]) -> bool {
    list.contains(&code)
}

impl Walk {
    /// The walk for `input`: its eligible methods, or the failure when none can run, or
    /// [`WalkStep::Skipped`] when automatic compaction is off.
    pub fn new(mut input: WalkInput) -> Walk {
        // The settings' strategy picks the method unless a list is given; `off` never does
        // (spec: compaction §9.2).
        if let (Some(s), None) = (input.strategy, &input.methods) {
            if s != Strategy::Off {
                input.explicit = Some(s);
            }
        }
        input.explicit = input.explicit.filter(|s| *s != Strategy::Off);
        let asked = input.explicit.and_then(CompactionMethod::of_strategy);
        let listed = input.methods.is_some();
        let mut model = input.model.clone();
        if !input.input_known {
            model.accepts_images = asked == Some(CompactionMethod::Snapcompact);
        }
        let vision = model.accepts_images;
        let remote_route = input.remote_endpoint || input.native_lane;
        let c = MethodContext {
            payload_rejection: input.exclude_snapcompact,
            remote_route,
            custom_instructions: input.custom_instructions,
            remote_blocked: input.remote_blocked,
            listed,
            asked,
            host_walk: !listed,
            summarizer: input.summarizer,
            live_tokens: input.live_tokens,
            mid_turn: input.mid_turn,
            ..MethodContext::new(input.reason, &model)
        };
        let s = &input.settings;
        let wanted: Vec<CompactionMethod> = match (&input.methods, asked) {
            (Some(list), _) => list.clone(),
            (None, Some(m)) => vec![m, CompactionMethod::Soft],
            (None, None) => s
                .method_order
                .iter()
                .filter_map(|m| CompactionMethod::named(m))
                .collect(),
        };
        let mut methods = eligible_methods(&wanted, s, &c);
        let mut skipped = Vec::new();
        for &m in &wanted {
            if let Some(why) = why_unusable(m, s, &c) {
                if !skipped.iter().any(|(x, _)| *x == m) {
                    skipped.push((m, why));
                }
            }
        }
        // A remote endpoint stands in for the summary when no callback is given.
        let endpoint = input.remote_endpoint || s.remote_endpoint.is_some();
        if methods.is_empty() && endpoint && s.remote_enabled && !input.remote_blocked {
            methods.push(CompactionMethod::Remote);
        }
        let mut warnings = Vec::new();
        if let Some((_, why)) = skipped
            .iter()
            .find(|(m, _)| *m == CompactionMethod::Snapcompact && asked == Some(*m))
        {
            warnings.push(WalkStep::Warn {
                message: format!(
                    "snapcompact skipped ({why}); compacting with an LLM summary (context-full) instead"
                ),
                method: None,
            });
        }
        let reason = input.reason;
        let skip = Skip::of(reason, &input.settings);
        if skip.is_some() {
            warnings.clear();
        }
        let phase = match methods.first() {
            _ if skip.is_some() => Phase::End(WalkStep::Skipped {
                why: skip.unwrap_or(Skip::Off),
            }),
            Some(_) => Walk::start(&methods, 0),
            None if skipped
                .iter()
                .any(|(m, why)| *m == CompactionMethod::Soft && *why == "no summarizer") =>
            {
                Phase::End(failed(
                    reason,
                    "E_INVALID_ARGUMENT",
                    "compact() needs `summarize` (a function returning a Promise of the summary \
                     text) or `remoteEndpoint`",
                ))
            }
            None => {
                let list: Vec<String> = skipped
                    .iter()
                    .map(|(m, why)| format!("{} ({why})", m.as_str()))
                    .collect();
                let list = if list.is_empty() {
                    "compaction.methodOrder is empty".to_string()
                } else {
                    list.join(", ")
                };
                Phase::End(failed(
                    reason,
                    "E_SETTINGS",
                    &format!("No compaction method can run: {list}"),
                ))
            }
        };
        Walk {
            input,
            methods,
            skipped,
            phase,
            warnings,
            rescued: false,
            rescue_lowered: false,
            vision,
            rebuild_tried: false,
            rebuilt: false,
            images_tried: false,
            images_dropped: false,
            left: 0,
            model_short: 1.0,
            remote_failed: false,
        }
        .measured()
    }

    /// `model_short` from the inputs.
    fn measured(mut self) -> Walk {
        let est = self.input.estimated_tokens;
        if est > 0 {
            self.model_short = short(self.input.live_tokens, self.live_of(est));
        }
        self
    }

    fn start(methods: &[CompactionMethod], i: usize) -> Phase {
        if methods[i] == CompactionMethod::Shake {
            Phase::ShakeMethod(i)
        } else {
            Phase::Plan(i)
        }
    }

    /// Who the summarizer calls of `method` say started them when the host does not say: a
    /// handoff is the agent's own request (spec: compaction §5.9, the agent-attributed
    /// prompt); the other methods leave it to the host.
    pub fn summary_initiator(method: CompactionMethod) -> Option<&'static str> {
        (method == CompactionMethod::Handoff).then_some("agent")
    }

    /// The methods the walk may run, in order.
    pub fn methods(&self) -> &[CompactionMethod] {
        &self.methods
    }

    /// The methods left out, with why.
    pub fn skipped(&self) -> &[(CompactionMethod, &'static str)] {
        &self.skipped
    }

    /// `remote` ran and failed: the host starts its cooldown
    /// ([`ContextManager::note_remote_failure`](super::ContextManager::note_remote_failure)).
    pub fn remote_failed(&self) -> bool {
        self.remote_failed
    }

    /// A rescue shake ran.
    pub fn rescued(&self) -> bool {
        self.rescued
    }

    /// What to do next. A warning is given once; any other step again until handled.
    pub fn poll(&mut self) -> WalkStep {
        if !self.warnings.is_empty() {
            return self.warnings.remove(0);
        }
        let method = |i: usize| self.methods[i];
        match &self.phase {
            Phase::Plan(i) => {
                let m = method(*i);
                WalkStep::Plan {
                    method: m,
                    strategy: m.strategy(),
                    remote_enabled: m == CompactionMethod::Remote,
                }
            }
            Phase::ShakeMethod(_) => WalkStep::Shake {
                preset: if self.input.reason == CompactionReason::Manual {
                    ShakePreset::Aggressive
                } else {
                    ShakePreset::Default
                },
            },
            Phase::RescuePlan(..) | Phase::RescueCommit(_) => WalkStep::Shake {
                preset: ShakePreset::Rescue,
            },
            Phase::RescueArchive(..) => WalkStep::RebuildArchive {
                limit_tokens: self.rebuild_limit(),
            },
            Phase::RescueImages(..) => WalkStep::DropImages,
            Phase::Summarize(i, route) => WalkStep::Summarize {
                method: method(*i),
                route: *route,
            },
            Phase::Commit(i) => WalkStep::Commit {
                method: method(*i),
                artifact: self.artifact(method(*i)),
            },
            Phase::End(step) => step.clone(),
        }
    }

    /// The document a commit of `m` leaves to save: a handoff's, when `handoffSaveToDisk` is
    /// set and the reason is not `manual` (spec: compaction §5.9).
    fn artifact(&self, m: CompactionMethod) -> Option<Artifact> {
        (m == CompactionMethod::Handoff
            && self.input.settings.handoff_save_to_disk
            && self.input.reason != CompactionReason::Manual)
            .then(|| Artifact {
                name: handoff_document_name(self.input.now),
                kind: "handoff",
            })
    }

    /// The walk has ended (`Done`, `Failed` or `Skipped`).
    pub fn is_over(&self) -> bool {
        matches!(self.phase, Phase::End(_))
    }

    /// The plan asked for is made.
    pub fn handle_planned(&mut self) -> Result<(), OutOfTurn> {
        let Phase::Plan(i) = self.phase else {
            return Err(OutOfTurn("a plan"));
        };
        self.phase = match self.methods[i] {
            CompactionMethod::Snapcompact => Phase::Commit(i),
            CompactionMethod::Remote => Phase::Summarize(i, self.remote_route(None)),
            _ => Phase::Summarize(i, Route::Callbacks),
        };
        Ok(())
    }

    /// The remote route after `tried`: a native lane first, then the endpoint.
    fn remote_route(&self, tried: Option<Route>) -> Route {
        let endpoint = self.input.remote_endpoint || self.input.settings.remote_endpoint.is_some();
        match tried {
            None if self.input.native_lane => Route::Native,
            None if endpoint => Route::Endpoint,
            Some(Route::Native) if endpoint => Route::Endpoint,
            // Nothing to try: the method fails in `handle_native_unavailable`.
            _ => Route::Native,
        }
    }

    /// The rescue's first tier may run: once, for a model that reads images, in a walk the
    /// rescue applies to.
    fn can_rebuild(&self) -> bool {
        self.vision && !self.rebuild_tried && self.can_rescue()
    }

    fn can_rescue(&self) -> bool {
        !self.rescued && self.rescue_applies()
    }

    /// The rescue is for automatic walks that need room to go on: not manual, not idle.
    fn rescue_applies(&self) -> bool {
        !matches!(
            self.input.reason,
            CompactionReason::Manual | CompactionReason::Idle
        )
    }

    /// The rescue's last tier may run: once, after the rescue shake (§8.3 tier order).
    fn can_drop_images(&self) -> bool {
        self.rescued && !self.images_tried && self.rescue_applies()
    }

    /// How a dead end (`code`, `message`) ends once no tier is left: the rebuilt archive,
    /// else the rescue shake or the dropped images when they lowered the context, is the
    /// reduction; otherwise the dead end stands.
    fn dead_end(&self, code: &str, message: &str) -> Phase {
        if self.rebuilt {
            // The rebuilt archive is the reduction (a compaction entry; a shake or an image
            // drop after it may have added to it).
            Phase::End(WalkStep::Done {
                method: Some(CompactionMethod::Snapcompact),
            })
        } else if self.rescued && (self.rescue_lowered || self.images_dropped) {
            // The rescue shake (or its image drop, the reference's `shake images`) was the
            // reduction.
            Phase::End(WalkStep::Done {
                method: Some(CompactionMethod::Shake),
            })
        } else {
            // It elided something the context does not hold: no reduction.
            Phase::End(failed(self.input.reason, code, message))
        }
    }

    /// The plan failed with `code`.
    pub fn handle_plan_failed(&mut self, code: &str, message: &str) -> Result<(), OutOfTurn> {
        let Phase::Plan(i) = self.phase else {
            return Err(OutOfTurn("a plan"));
        };
        if code_in(code, &DEAD_ENDS) {
            // Nothing to summarize, for every method alike (§8.3 dead-end rescue).
            self.phase = if self.can_drop_images() {
                // The rescue shake did not restore progress: the last tier drops the
                // attached images, then plans again (§8.3).
                Phase::RescueImages(i, Some((code.to_string(), message.to_string())))
            } else if self.rescued {
                self.dead_end(code, message)
            } else if self.can_rebuild() {
                // Tier 1 first: nothing is left to summarize, so an oversized archive is
                // the cost no shake reaches (§8.3).
                Phase::RescueArchive(i, Some((code.to_string(), message.to_string())))
            } else if self.can_rescue() {
                Phase::RescuePlan(i, code.to_string(), message.to_string())
            } else {
                Phase::End(failed(self.input.reason, code, message))
            };
            return Ok(());
        }
        self.method_failed(i, code, message);
        Ok(())
    }

    /// A session_before_compact hook supplied the compaction and the host committed it.
    pub fn handle_extension_committed(&mut self) -> Result<(), OutOfTurn> {
        if !matches!(self.phase, Phase::Summarize(..) | Phase::Commit(_)) {
            return Err(OutOfTurn("an extension's compaction"));
        }
        self.phase = Phase::End(WalkStep::Done { method: None });
        Ok(())
    }

    /// The summaries are answered.
    pub fn handle_summarized(&mut self) -> Result<(), OutOfTurn> {
        let Phase::Summarize(i, route) = self.phase else {
            return Err(OutOfTurn("a summary"));
        };
        if route == Route::Native {
            return Err(OutOfTurn(
                "a summary from a native lane (it commits itself)",
            ));
        }
        self.phase = Phase::Commit(i);
        Ok(())
    }

    /// No native lane applies to this plan: the endpoint, if any, else the method fails.
    pub fn handle_native_unavailable(&mut self) -> Result<(), OutOfTurn> {
        let Phase::Summarize(i, Route::Native) = self.phase else {
            return Err(OutOfTurn("a native lane"));
        };
        if self.remote_route(Some(Route::Native)) == Route::Endpoint {
            self.phase = Phase::Summarize(i, Route::Endpoint);
        } else {
            self.method_failed(
                i,
                "E_SUMMARIZER",
                "remote compaction: nothing to send natively and no remote endpoint",
            );
        }
        Ok(())
    }

    /// The method committed; `live_after` is the live context in the provider's tokens with
    /// the request overhead, measured by the host, or `None` to derive it from the core's
    /// `core_tokens_after` (times the provider ratio, plus the overhead).
    pub fn handle_committed(
        &mut self,
        core_tokens_after: u64,
        live_after: Option<u64>,
    ) -> Result<(), OutOfTurn> {
        let i = match self.phase {
            Phase::Commit(i) | Phase::Summarize(i, Route::Native) => i,
            _ => return Err(OutOfTurn("a commit")),
        };
        let m = self.methods[i];
        if let (Some(live), true) = (live_after, core_tokens_after > 0) {
            self.model_short = short(live, self.live_of(core_tokens_after));
        }
        let left = live_after.unwrap_or_else(|| self.live_of(core_tokens_after));
        self.left = left;
        // The progress guard's test (§8.5): a kept tail too large to go on from asks for the
        // rescue shake, which reaches into it (§8.3); the commit stands either way.
        self.phase = if m != CompactionMethod::Handoff
            && self.can_rescue()
            && left > self.headroom_limit()
        {
            if m == CompactionMethod::Snapcompact && self.can_rebuild() {
                // The archive just written may be what is too big: rebuild it with fewer
                // frames before the shake (§8.3 tier 1).
                Phase::RescueArchive(i, None)
            } else {
                Phase::RescueCommit(i)
            }
        } else {
            Phase::End(WalkStep::Done { method: Some(m) })
        };
        Ok(())
    }

    /// The method (its plan's summaries, its lane or its commit) failed with `code`;
    /// `status` is the HTTP status of a remote failure, if any.
    pub fn handle_method_failed(
        &mut self,
        code: &str,
        message: &str,
        status: Option<u16>,
    ) -> Result<(), OutOfTurn> {
        let i = match &self.phase {
            Phase::Summarize(i, _) | Phase::Commit(i) => *i,
            _ => return Err(OutOfTurn("a method failure")),
        };
        if let Phase::Summarize(_, Route::Native) = self.phase {
            // A native lane failed: the endpoint may still answer (§5.7 step 1).
            if !code_in(code, &FINAL_CODES)
                && self.remote_route(Some(Route::Native)) == Route::Endpoint
            {
                self.phase = Phase::Summarize(i, Route::Endpoint);
                return Ok(());
            }
        }
        let _ = status;
        self.method_failed(i, code, message);
        Ok(())
    }

    /// A shake ran: `dropped` tool results and blocks, `tokens_freed` in the core's estimate,
    /// `live_after` the live context the host measured after it (provider tokens), if any.
    pub fn handle_shaken(
        &mut self,
        dropped: u64,
        tokens_freed: u64,
        live_after: Option<u64>,
    ) -> Result<(), OutOfTurn> {
        match self.phase.clone() {
            Phase::ShakeMethod(i) => {
                let manual = self.input.reason == CompactionReason::Manual;
                if dropped == 0 {
                    let text = if manual {
                        "Nothing to shake"
                    } else {
                        "Auto-shake found nothing eligible to drop"
                    };
                    self.method_failed(i, "E_NO_REDUCTION", text);
                    return Ok(());
                }
                let after = live_after.unwrap_or_else(|| {
                    let freed = (self.ratio() * tokens_freed as f64).ceil() as u64;
                    self.input.live_tokens.saturating_sub(freed)
                });
                let guarded = !manual
                    && self.input.reason != CompactionReason::Idle
                    && self.input.model.context_window > 0;
                if guarded && after > self.recovery_band() {
                    // What it elided stays elided; the next method goes on from there.
                    let text = format!(
                        "Auto-shake reclaimed ~{tokens_freed} tokens but context is still above the threshold"
                    );
                    self.method_failed(i, "E_NO_REDUCTION", &text);
                } else {
                    self.phase = Phase::End(WalkStep::Done {
                        method: Some(CompactionMethod::Shake),
                    });
                }
            }
            Phase::RescuePlan(i, code, message) => {
                self.rescued = true;
                // Whether the rescue made the context smaller as the host measures it (a
                // shake of lines a provider-native replay stands in for changes nothing).
                self.rescue_lowered = dropped > 0
                    && match live_after {
                        Some(after) => {
                            self.input.live_tokens == 0 || after < self.input.live_tokens
                        }
                        None => tokens_freed > 0,
                    };
                self.phase = if dropped == 0 && self.can_drop_images() {
                    // Nothing to elide: the last tier drops the attached images (§8.3).
                    Phase::RescueImages(i, Some((code, message)))
                } else if dropped == 0 {
                    self.dead_end(&code, &message)
                } else {
                    // Plan the same method again on the shaken branch.
                    Phase::Plan(i)
                };
            }
            Phase::RescueCommit(i) => {
                self.rescued = true;
                // The progress guard again (§8.5): a kept tail still too big asks for the
                // image drop; the commit stands either way.
                let after = live_after.unwrap_or_else(|| {
                    let freed = (self.ratio() * tokens_freed as f64).ceil() as u64;
                    self.left.saturating_sub(freed)
                });
                self.phase = if after > self.headroom_limit() && self.can_drop_images() {
                    Phase::RescueImages(i, None)
                } else {
                    Phase::End(WalkStep::Done {
                        method: Some(self.methods[i]),
                    })
                };
            }
            _ => return Err(OutOfTurn("a shake")),
        }
        Ok(())
    }

    /// The archive rebuild committed; `core_tokens_after` and `live_after` as for
    /// [`Walk::handle_committed`]. The walk re-tests the progress guard: room to go on ends
    /// it, else the rescue shake runs (tier 2).
    pub fn handle_rebuilt(
        &mut self,
        core_tokens_after: u64,
        live_after: Option<u64>,
    ) -> Result<(), OutOfTurn> {
        let Phase::RescueArchive(i, dead_end) = self.phase.clone() else {
            return Err(OutOfTurn("an archive rebuild"));
        };
        self.rebuild_tried = true;
        self.rebuilt = true;
        let left = live_after.unwrap_or_else(|| {
            (self.live_of(core_tokens_after) as f64 * self.model_short).ceil() as u64
        });
        let left = (left as f64 * self.undercount()).ceil() as u64;
        self.left = left;
        self.phase = if left <= self.headroom_limit() {
            Phase::End(WalkStep::Done {
                method: Some(CompactionMethod::Snapcompact),
            })
        } else {
            match dead_end {
                Some((code, message)) => Phase::RescuePlan(i, code, message),
                None => Phase::RescueCommit(i),
            }
        };
        Ok(())
    }

    /// The archive rebuild did not run or was refused (no snapcompact archive to rebuild,
    /// or none with fewer frames made the context smaller): the rescue shake runs.
    pub fn handle_rebuild_failed(&mut self) -> Result<(), OutOfTurn> {
        let Phase::RescueArchive(i, dead_end) = self.phase.clone() else {
            return Err(OutOfTurn("an archive rebuild"));
        };
        self.rebuild_tried = true;
        self.phase = match dead_end {
            Some((code, message)) => Phase::RescuePlan(i, code, message),
            None => Phase::RescueCommit(i),
        };
        Ok(())
    }

    /// The image drop ran: `removed` images went, `live_after` is the live context the host
    /// measured after it (provider tokens), if any. After a dead-end plan the walk plans the
    /// method again when images went (the re-test of §8.3), else the dead end ends it as the
    /// earlier tiers leave it; after a commit the commit stands.
    pub fn handle_images_dropped(
        &mut self,
        removed: u64,
        live_after: Option<u64>,
    ) -> Result<(), OutOfTurn> {
        let Phase::RescueImages(i, dead_end) = self.phase.clone() else {
            return Err(OutOfTurn("an image drop"));
        };
        self.images_tried = true;
        if removed > 0 {
            // The images are gone for good: the host says so (a `compaction_warning`).
            self.warnings.push(WalkStep::Warn {
                message: images_dropped_notice(removed),
                method: None,
            });
        }
        self.images_dropped = removed > 0
            && match live_after {
                Some(after) => self.input.live_tokens == 0 || after < self.input.live_tokens,
                None => true,
            };
        self.phase = match dead_end {
            Some(_) if removed > 0 => Phase::Plan(i),
            Some((code, message)) => self.dead_end(&code, &message),
            None => Phase::End(WalkStep::Done {
                method: Some(self.methods[i]),
            }),
        };
        Ok(())
    }

    /// Hand over from methods[i] after a failure, or end the walk.
    fn method_failed(&mut self, i: usize, code: &str, message: &str) {
        let m = self.methods[i];
        if m == CompactionMethod::Remote {
            self.remote_failed = true;
        }
        if code_in(code, &FINAL_CODES) {
            self.phase = Phase::End(failed(self.input.reason, code, message));
            return;
        }
        let next = i + 1;
        if next >= self.methods.len() {
            self.phase = Phase::End(failed(self.input.reason, code, message));
            return;
        }
        self.warnings.push(WalkStep::Warn {
            message: format!(
                "{} compaction failed: {message}; trying the next preferred compaction method.",
                m.as_str()
            ),
            method: Some(m),
        });
        self.phase = Walk::start(&self.methods, next);
    }

    fn ratio(&self) -> f64 {
        self.known_ratio().unwrap_or(1.0)
    }

    /// The provider's text rate, when the host measured one (a positive number).
    fn known_ratio(&self) -> Option<f64> {
        self.input
            .provider_ratio
            .filter(|r| r.is_finite() && *r > 0.0)
    }

    /// How much more than the host's measure the provider counted: a provider that refused
    /// a request as over the window counted at least `window + 1` tokens of it, whatever the
    /// host measured (an uncalibrated host: issue 36 finding 3). 1 when the host's measure
    /// already says so, and for any other reason.
    fn undercount(&self) -> f64 {
        let (w, live) = (self.input.model.context_window, self.input.live_tokens);
        if self.input.reason == CompactionReason::Overflow && w > 0 && live > 0 && live <= w {
            (w + 1) as f64 / live as f64
        } else {
            1.0
        }
    }

    /// What the dead-end rescue's archive rebuild must land under, in the walk's model of
    /// the provider (the core's estimate at `provider_ratio`, plus the overhead, which is how
    /// the commit's fit test counts): the progress guard's limit, and the recovery band at
    /// most, so that the next turn does not trip the threshold into the same dead end (the
    /// reference 18.2.3 aims its frame budget at the band); lowered by what the host's
    /// measure runs above that model, and by what an overflow proves the host undercounts.
    fn rebuild_limit(&self) -> Option<u64> {
        let limit = self.guard().limit()?.min(self.recovery_band());
        Some((limit as f64 / (self.undercount() * self.model_short)).floor() as u64)
    }

    /// The reading model's compaction threshold (its `modelThresholds` rule applied), for
    /// the shakes the walk asks for: the automatic preset scales its protection and savings
    /// floor to it in a small window (`tokens::shake_budgets`). `None` for an unknown window.
    pub fn threshold_tokens(&self) -> Option<u64> {
        let m = &self.input.model;
        (m.context_window > 0).then(|| {
            let s = self.input.settings.for_model(&m.provider, &m.id);
            threshold_tokens(m.context_window, &s)
        })
    }

    /// What a snapcompact commit must know of the provider for its frame cap, fit and
    /// reduction tests (spec: snapcompact §9.2) with a kept tail of `recent_estimate` tokens
    /// (the preparation's recent messages, core estimate); the host copies it into the
    /// archive options.
    pub fn archive_fit(&self, recent_estimate: u64) -> ArchiveFit {
        let over = self.ratio() - 1.0;
        let undercount = if over > 0.0 {
            (over * recent_estimate as f64).ceil() as u64
        } else {
            0
        };
        ArchiveFit {
            non_message_tokens: self.input.overhead_tokens.saturating_add(undercount),
            text_ratio: self.known_ratio(),
            image_ratio: positive_or_one(self.input.image_ratio),
        }
    }

    /// The live context after a commit whose core figure is `core`, in the provider's tokens.
    fn live_of(&self, core: u64) -> u64 {
        ((self.ratio() * core as f64).ceil() as u64).saturating_add(self.input.overhead_tokens)
    }

    /// 80 % of the model's threshold (its `modelThresholds` rule applied).
    fn recovery_band(&self) -> u64 {
        self.guard().recovery_band()
    }

    /// The progress guard of this compaction (§8.5, [`ProgressGuard`]): the model's threshold,
    /// the settings' reserve.
    pub fn guard(&self) -> ProgressGuard {
        let w = self.input.model.context_window;
        ProgressGuard::new(
            self.input.reason,
            self.input.will_retry,
            w,
            self.threshold_tokens(),
            &self.input.settings,
        )
    }

    /// The most context a compaction may leave for the agent to go on ([`Walk::guard`]);
    /// `u64::MAX` when the pass is not guarded.
    pub fn headroom_limit(&self) -> u64 {
        self.guard().limit().unwrap_or(u64::MAX)
    }
}

/// The windows of the prune passes an agent loop runs around its requests, as the coding agent
/// sets them (spec: compaction §6.1, §6.5, §6.6): the per-request stale pass and the threshold
/// prune before the threshold decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PruneWindows {
    /// Stale pass: a flush after this long idle (§6.5, §6.8).
    pub stale_idle_flush_ms: u64,
    /// Stale pass: only candidates followed by at most this many tokens (§6.1).
    pub stale_suffix_tokens: u64,
    /// Threshold prune: the newest tokens it never touches (§6.6).
    pub protect_tokens: u64,
    /// Threshold prune: it runs only when it saves at least this much (§6.6).
    pub minimum_savings: u64,
    /// Threshold prune: the prompt-cache-warm tail it leaves alone (§6.1).
    pub cache_warm_suffix_tokens: u64,
}

/// The coding agent's prune windows ([`PruneWindows`]).
pub const PRUNE_WINDOWS: PruneWindows = PruneWindows {
    stale_idle_flush_ms: 90 * 60 * 1000,
    stale_suffix_tokens: 8_000,
    protect_tokens: 40_000,
    minimum_savings: 20_000,
    cache_warm_suffix_tokens: 8_000,
};

/// What a snapcompact commit needs of the provider ([`Walk::archive_fit`]): the archive
/// options' `non_message_tokens`, `text_ratio` and `image_ratio`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArchiveFit {
    /// The request overhead, plus what the provider counts above the core's estimate of the
    /// kept tail when it counts more.
    pub non_message_tokens: u64,
    /// The provider's tokens per estimated token of text (`None`: not measured, the commit's
    /// reduction test then reads it from the reported usage), and of the flat image charge.
    pub text_ratio: Option<f64>,
    pub image_ratio: f64,
}

/// `measured / modeled` when the measure is the larger (both known), else 1.
fn short(measured: u64, modeled: u64) -> f64 {
    if modeled > 0 && measured > modeled {
        measured as f64 / modeled as f64
    } else {
        1.0
    }
}

/// A ratio the host passed, or 1 when it is not a positive number.
fn positive_or_one(r: f64) -> f64 {
    if r.is_finite() && r > 0.0 {
        r
    } else {
        1.0
    }
}

/// What the host is told when the rescue's last tier dropped `n` images.
fn images_dropped_notice(n: u64) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("Dead-end rescue: dropped {n} attached image{s} from the branch to make room for compaction.")
}

fn failed(reason: CompactionReason, code: &str, message: &str) -> WalkStep {
    WalkStep::Failed {
        code: code.to_string(),
        message: message.to_string(),
        error_message: compaction_error_message(reason, message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{budget_reserve_tokens, recovery_band_tokens};
    use crate::triggers::{
        CompactRequest, CompactionOutcome, CompactionReport, ContextManager, EntryPoint, TurnInput,
    };
    use serde_json::{json, Value};
    use CompactionMethod::{Handoff, Remote, Shake, Snapcompact, Soft};

    fn settings(v: Value) -> CompactionSettings {
        CompactionSettings::from_json(&v).expect("settings")
    }

    fn model(window: u64, images: bool) -> ModelInfo {
        ModelInfo {
            provider: "p".into(),
            id: "m".into(),
            context_window: window,
            max_output_tokens: 0,
            accepts_images: images,
        }
    }

    fn input(reason: CompactionReason, order: &[&str], window: u64) -> WalkInput {
        WalkInput::new(
            reason,
            settings(json!({ "methodOrder": order })),
            model(window, true),
        )
    }

    fn listed(reason: CompactionReason, methods: &[CompactionMethod]) -> WalkInput {
        WalkInput {
            methods: Some(methods.to_vec()),
            ..input(reason, &[], 32_000)
        }
    }

    fn plan(m: CompactionMethod) -> WalkStep {
        WalkStep::Plan {
            method: m,
            strategy: m.strategy(),
            remote_enabled: m == Remote,
        }
    }

    fn done(m: CompactionMethod) -> WalkStep {
        WalkStep::Done { method: Some(m) }
    }

    fn code_of(step: &WalkStep) -> &str {
        match step {
            WalkStep::Failed { code, .. } => code,
            _ => "",
        }
    }

    #[test]
    fn eligibility_follows_the_reason_and_the_host() {
        let order = crate::settings::METHODS;
        // Manual: remote, snapcompact and soft of methodOrder (§8.6); no endpoint, no remote.
        let w = Walk::new(input(CompactionReason::Manual, &order, 32_000));
        assert_eq!(w.methods(), [Snapcompact, Soft]);
        let why: Vec<_> = w.skipped().iter().map(|(m, _)| *m).collect();
        assert!(why.contains(&Remote) && why.contains(&Handoff) && why.contains(&Shake));
        // A trigger's list: handoff and shake too; `window` has no engine (as in the
        // reference). methodOrder walked by the host: handoff and shake only by name.
        let all = [
            Remote,
            Snapcompact,
            Handoff,
            Shake,
            Soft,
            CompactionMethod::Window,
        ];
        let w = Walk::new(listed(CompactionReason::Threshold, &all));
        assert_eq!(w.methods(), [Snapcompact, Handoff, Shake, Soft]);
        let w = Walk::new(input(CompactionReason::Threshold, &order, 32_000));
        assert_eq!(w.methods(), [Snapcompact, Soft]);
        // Overflow: no handoff. A text-only model: no snapcompact. An endpoint: remote.
        let mut i = input(CompactionReason::Overflow, &order, 32_000);
        i.model.accepts_images = false;
        i.remote_endpoint = true;
        assert_eq!(Walk::new(i.clone()).methods(), [Remote, Soft]);
        i.remote_blocked = true;
        assert_eq!(Walk::new(i).methods(), [Soft]);
        // A payload rejection and focus text rule snapcompact out.
        let mut i = input(CompactionReason::Threshold, &order, 32_000);
        i.exclude_snapcompact = true;
        assert!(!Walk::new(i).methods().contains(&Snapcompact));
        let mut i = input(CompactionReason::Manual, &order, 32_000);
        i.custom_instructions = true;
        assert_eq!(Walk::new(i).methods(), [Soft]);
        // An unknown model reads images only when snapcompact is asked for by name.
        let mut i = input(CompactionReason::Manual, &order, 32_000);
        i.input_known = false;
        assert_eq!(Walk::new(i.clone()).methods(), [Soft]);
        i.explicit = Some(Strategy::Snapcompact);
        assert_eq!(Walk::new(i).methods(), [Snapcompact, Soft]);
        // A handoff whose request would not fit the window is passed over.
        let mut i = listed(CompactionReason::Threshold, &[Handoff, Soft]);
        i.live_tokens = 32_000;
        assert_eq!(Walk::new(i).methods(), [Soft]);
        // An automatic handoff waits for the next prompt while a turn is under way; a manual
        // one (asked for by name) runs.
        let mut i = listed(CompactionReason::Threshold, &[Handoff, Soft]);
        i.mid_turn = true;
        assert_eq!(Walk::new(i).methods(), [Soft]);
        let mut i = input(CompactionReason::Manual, &order, 32_000);
        i.explicit = Some(Strategy::Handoff);
        i.mid_turn = true;
        assert_eq!(Walk::new(i).methods(), [Handoff, Soft]);
        // A manual walk runs handoff and shake only when asked for.
        let mut i = input(CompactionReason::Manual, &order, 32_000);
        i.explicit = Some(Strategy::Handoff);
        assert_eq!(Walk::new(i).methods(), [Handoff, Soft]);
    }

    #[test]
    fn nothing_eligible_fails_with_the_reasons() {
        let mut w = Walk::new(input(CompactionReason::Threshold, &["window"], 32_000));
        let step = w.poll();
        assert_eq!(code_of(&step), "E_SETTINGS");
        assert!(format!("{step:?}").contains("'window' has no compaction engine"));
        let mut i = input(CompactionReason::Manual, &["soft"], 32_000);
        i.summarizer = false;
        assert_eq!(code_of(&Walk::new(i.clone()).poll()), "E_INVALID_ARGUMENT");
        // A remote endpoint stands in for the summary.
        i.remote_endpoint = true;
        assert_eq!(Walk::new(i).methods(), [Remote]);
    }

    #[test]
    fn explicit_snapcompact_on_a_text_model_warns_and_summarizes() {
        let mut i = input(CompactionReason::Manual, &["soft"], 32_000);
        i.model.accepts_images = false;
        i.explicit = Some(Strategy::Snapcompact);
        let mut w = Walk::new(i);
        assert!(
            matches!(w.poll(), WalkStep::Warn { message, .. } if message.starts_with("snapcompact skipped"))
        );
        assert_eq!(w.poll(), plan(Soft));
    }

    /// Issue 36 item 1: a method's own refusal after its plan (snapcompact's "kept history
    /// fills the window") hands over to the next method; it does not end the walk.
    #[test]
    fn a_method_refusal_hands_over() {
        let mut w = Walk::new(listed(CompactionReason::Threshold, &[Snapcompact, Soft]));
        assert_eq!(w.poll(), plan(Snapcompact));
        w.handle_planned().unwrap();
        assert_eq!(
            w.poll(),
            WalkStep::Commit {
                method: Snapcompact,
                artifact: None
            }
        );
        w.handle_method_failed(
            "E_NOTHING_TO_COMPACT",
            "kept history fills the window",
            None,
        )
        .unwrap();
        assert!(
            matches!(w.poll(), WalkStep::Warn { message, method: Some(Snapcompact) }
            if message == "snapcompact compaction failed: kept history fills the window; trying the next preferred compaction method.")
        );
        assert_eq!(w.poll(), plan(Soft));
        w.handle_planned().unwrap();
        assert_eq!(
            w.poll(),
            WalkStep::Summarize {
                method: Soft,
                route: Route::Callbacks
            }
        );
        w.handle_summarized().unwrap();
        assert_eq!(
            w.poll(),
            WalkStep::Commit {
                method: Soft,
                artifact: None
            }
        );
        w.handle_committed(1_000, None).unwrap();
        assert_eq!(w.poll(), done(Soft));
        assert!(w.is_over());
    }

    #[test]
    fn final_codes_end_the_walk_and_the_last_failure_is_reported() {
        for code in FINAL_CODES {
            let mut w = Walk::new(listed(CompactionReason::Threshold, &[Soft, Handoff]));
            w.handle_planned().unwrap();
            w.handle_method_failed(code, "stop", None).unwrap();
            assert_eq!(code_of(&w.poll()), code);
        }
        let mut w = Walk::new(listed(CompactionReason::Overflow, &[Soft]));
        w.handle_planned().unwrap();
        w.handle_method_failed("E_SUMMARIZER", "boom", Some(500))
            .unwrap();
        assert_eq!(
            w.poll(),
            WalkStep::Failed {
                code: "E_SUMMARIZER".into(),
                message: "boom".into(),
                error_message: "Context overflow recovery failed: boom".into(),
            }
        );
        // A plan error other than a dead end is the method's failure.
        let mut w = Walk::new(listed(CompactionReason::Threshold, &[Handoff, Soft]));
        w.handle_plan_failed("E_SUMMARIZER", "x").unwrap();
        assert!(matches!(w.poll(), WalkStep::Warn { .. }));
        assert_eq!(w.poll(), plan(Soft));
        // Reports out of turn are refused.
        assert!(w.handle_committed(0, None).is_err());
        assert!(w.handle_shaken(1, 1, None).is_err());
    }

    #[test]
    fn a_dead_end_plan_is_rescued_once() {
        // Rescued, planned again, committed (a text model: no archive to rebuild first).
        let text = |reason, methods: &[CompactionMethod]| WalkInput {
            model: model(32_000, false),
            ..listed(reason, methods)
        };
        let mut w = Walk::new(text(CompactionReason::Threshold, &[Soft]));
        w.handle_plan_failed("E_NOTHING_TO_COMPACT", "fits")
            .unwrap();
        assert_eq!(
            w.poll(),
            WalkStep::Shake {
                preset: ShakePreset::Rescue
            }
        );
        w.handle_shaken(2, 500, None).unwrap();
        assert_eq!(w.poll(), plan(Soft));
        // A second dead end: the last tier drops the attached images; with none, the shake
        // was the reduction.
        w.handle_plan_failed("E_NOTHING_TO_COMPACT", "fits")
            .unwrap();
        assert_eq!(w.poll(), WalkStep::DropImages);
        w.handle_images_dropped(0, None).unwrap();
        assert_eq!(w.poll(), done(Shake));
        // It elided lines the context does not hold (a provider-native replay stands in
        // for them): the live context did not go down, so the dead end stands.
        let mut w = Walk::new(WalkInput {
            live_tokens: 4_965,
            ..text(CompactionReason::Incomplete, &[Soft])
        });
        w.handle_plan_failed("E_ALREADY_COMPACTED", "done").unwrap();
        w.handle_shaken(3, 0, Some(4_965)).unwrap();
        w.handle_plan_failed("E_ALREADY_COMPACTED", "done").unwrap();
        w.handle_images_dropped(0, Some(4_965)).unwrap();
        assert_eq!(code_of(&w.poll()), "E_ALREADY_COMPACTED");
        // The rescue dropped nothing, nor did the image drop: the dead end stands.
        let mut w = Walk::new(text(CompactionReason::Overflow, &[Soft]));
        w.handle_plan_failed("E_ALREADY_COMPACTED", "done").unwrap();
        w.handle_shaken(0, 0, None).unwrap();
        assert_eq!(w.poll(), WalkStep::DropImages);
        w.handle_images_dropped(0, None).unwrap();
        assert_eq!(code_of(&w.poll()), "E_ALREADY_COMPACTED");
        // Manual and idle walks never rescue.
        for reason in [CompactionReason::Manual, CompactionReason::Idle] {
            let mut w = Walk::new(input(reason, &["soft"], 32_000));
            w.handle_plan_failed("E_NOTHING_TO_COMPACT", "fits")
                .unwrap();
            assert_eq!(code_of(&w.poll()), "E_NOTHING_TO_COMPACT");
        }
    }

    /// Issue 36 (spec: compaction §8.3 dead-end rescue, last tier): when the rescue shake did
    /// not restore progress, the walk drops the attached images, once, and plans again.
    #[test]
    fn a_dead_end_drops_the_images_after_the_shake() {
        let walk = |live| {
            let mut w = Walk::new(WalkInput {
                model: model(32_000, false),
                live_tokens: live,
                ..listed(CompactionReason::Threshold, &[Soft])
            });
            w.handle_plan_failed("E_NOTHING_TO_COMPACT", "fits")
                .unwrap();
            assert_eq!(
                w.poll(),
                WalkStep::Shake {
                    preset: ShakePreset::Rescue
                }
            );
            w
        };
        // The shake found nothing to elide: the images go and the method is planned again;
        // its commit ends the walk (the rescue ran: no second one).
        let mut w = walk(30_000);
        w.handle_shaken(0, 0, Some(30_000)).unwrap();
        assert_eq!(w.poll(), WalkStep::DropImages);
        assert!(w.handle_shaken(1, 1, None).is_err(), "not a shake");
        assert!(w.handle_planned().is_err(), "not a plan");
        w.handle_images_dropped(3, Some(12_000)).unwrap();
        assert!(w.handle_images_dropped(3, None).is_err(), "asked once");
        assert_eq!(
            w.poll(),
            WalkStep::Warn {
                message: "Dead-end rescue: dropped 3 attached images from the branch to make room for compaction.".into(),
                method: None
            }
        );
        assert_eq!(w.poll(), plan(Soft));
        w.handle_planned().unwrap();
        w.handle_summarized().unwrap();
        w.handle_committed(0, Some(31_000)).unwrap();
        assert_eq!(w.poll(), done(Soft));
        // The plan still dead-ends: the dropped images were the reduction.
        let mut w = walk(30_000);
        w.handle_shaken(0, 0, Some(30_000)).unwrap();
        w.handle_images_dropped(3, Some(12_000)).unwrap();
        assert!(matches!(w.poll(), WalkStep::Warn { .. }));
        w.handle_plan_failed("E_NOTHING_TO_COMPACT", "fits")
            .unwrap();
        assert_eq!(w.poll(), done(Shake));
        // The shake elided something but the plan dead-ends again: the images go next.
        let mut w = walk(30_000);
        w.handle_shaken(2, 100, Some(29_000)).unwrap();
        assert_eq!(w.poll(), plan(Soft));
        w.handle_plan_failed("E_NOTHING_TO_COMPACT", "fits")
            .unwrap();
        assert_eq!(w.poll(), WalkStep::DropImages);
        w.handle_images_dropped(1, None).unwrap();
        assert!(
            matches!(w.poll(), WalkStep::Warn { message, .. } if message.contains("dropped 1 attached image from"))
        );
        assert_eq!(w.poll(), plan(Soft));
        w.handle_plan_failed("E_NOTHING_TO_COMPACT", "fits")
            .unwrap();
        assert_eq!(w.poll(), done(Shake));
        // Images went but the host measures no less (a provider-native replay stands in for
        // those lines): the dead end stands.
        let mut w = walk(30_000);
        w.handle_shaken(0, 0, Some(30_000)).unwrap();
        w.handle_images_dropped(2, Some(30_000)).unwrap();
        assert!(matches!(w.poll(), WalkStep::Warn { .. }));
        w.handle_plan_failed("E_NOTHING_TO_COMPACT", "fits")
            .unwrap();
        assert_eq!(code_of(&w.poll()), "E_NOTHING_TO_COMPACT");
    }

    /// Issue 36 finding 3 (spec: compaction §8.3 dead-end rescue, tier 1): when nothing is
    /// left to summarize, a model that reads images first has the latest snapcompact archive
    /// rebuilt with fewer frames, under the progress guard's limit and the recovery band; the
    /// guard is tested again after it, then the shake runs.
    #[test]
    fn a_dead_end_rebuilds_the_archive_before_the_shake() {
        let s = CompactionSettings::default();
        let w = 200_000;
        let band = recovery_band_tokens(threshold_tokens(w, &s));
        let fit = w - budget_reserve_tokens(w, &s);
        let walk = |reason| {
            let mut walk = Walk::new(WalkInput {
                methods: Some(vec![Snapcompact, Soft]),
                ..WalkInput::new(reason, s.clone(), model(w, true))
            });
            assert_eq!(walk.poll(), plan(Snapcompact));
            walk.handle_plan_failed("E_NOTHING_TO_COMPACT", "fits")
                .unwrap();
            walk
        };
        let rebuild = WalkStep::RebuildArchive {
            limit_tokens: Some(band),
        };
        // The rebuild made room for the retry: the walk ends with it.
        let mut o = walk(CompactionReason::Overflow);
        assert_eq!(o.poll(), rebuild);
        assert!(o.handle_shaken(1, 1, None).is_err(), "not a shake yet");
        o.handle_rebuilt(100_000, Some(fit)).unwrap();
        assert_eq!(o.poll(), done(Snapcompact));
        // Still too big: the shake (tier 2); it dropping nothing leaves the rebuild as the
        // reduction.
        let mut o = walk(CompactionReason::Overflow);
        o.handle_rebuilt(100_000, Some(fit + 1)).unwrap();
        assert_eq!(
            o.poll(),
            WalkStep::Shake {
                preset: ShakePreset::Rescue
            }
        );
        o.handle_shaken(0, 0, None).unwrap();
        assert_eq!(o.poll(), WalkStep::DropImages);
        o.handle_images_dropped(0, None).unwrap();
        assert_eq!(o.poll(), done(Snapcompact));
        // It dropped something: the methods are planned again; a second dead end (and no
        // image to drop) ends with the reduction made.
        let mut o = walk(CompactionReason::Threshold);
        o.handle_rebuilt(100_000, Some(band + 1)).unwrap();
        o.handle_shaken(2, 300, Some(band + 1)).unwrap();
        assert_eq!(o.poll(), plan(Snapcompact));
        o.handle_plan_failed("E_NOTHING_TO_COMPACT", "fits")
            .unwrap();
        o.handle_images_dropped(0, None).unwrap();
        assert_eq!(o.poll(), done(Snapcompact));
        // Nothing to rebuild: the shake, as before; no rebuild is asked twice.
        let mut o = walk(CompactionReason::Overflow);
        o.handle_rebuild_failed().unwrap();
        assert!(matches!(o.poll(), WalkStep::Shake { .. }));
        o.handle_shaken(1, 10, None).unwrap();
        assert_eq!(o.poll(), plan(Snapcompact));
        o.handle_plan_failed("E_NOTHING_TO_COMPACT", "fits")
            .unwrap();
        o.handle_images_dropped(0, None).unwrap();
        assert_eq!(o.poll(), done(Shake));
        // A snapcompact commit that left too much has its own archive rebuilt first.
        let mut o = Walk::new(WalkInput {
            methods: Some(vec![Snapcompact]),
            ..WalkInput::new(CompactionReason::Threshold, s.clone(), model(w, true))
        });
        o.handle_planned().unwrap();
        o.handle_committed(0, Some(band + 1)).unwrap();
        assert_eq!(o.poll(), rebuild);
        o.handle_rebuilt(0, Some(band)).unwrap();
        assert_eq!(o.poll(), done(Snapcompact));
        let mut o = Walk::new(WalkInput {
            methods: Some(vec![Snapcompact]),
            ..WalkInput::new(CompactionReason::Threshold, s.clone(), model(w, true))
        });
        o.handle_planned().unwrap();
        o.handle_committed(0, Some(band + 1)).unwrap();
        o.handle_rebuild_failed().unwrap();
        assert!(matches!(o.poll(), WalkStep::Shake { .. }));
        o.handle_shaken(0, 0, None).unwrap();
        assert_eq!(o.poll(), WalkStep::DropImages);
        o.handle_images_dropped(0, None).unwrap();
        assert_eq!(o.poll(), done(Snapcompact));
        // An overflow the host measured at half the window: the provider counts at least
        // twice what the host does, so the rebuild aims at half the band.
        let mut o = Walk::new(WalkInput {
            methods: Some(vec![Snapcompact, Soft]),
            live_tokens: w / 2,
            ..WalkInput::new(CompactionReason::Overflow, s.clone(), model(w, true))
        });
        o.handle_plan_failed("E_NOTHING_TO_COMPACT", "fits")
            .unwrap();
        let half = (band as f64 / ((w + 1) as f64 / (w / 2) as f64)).floor() as u64;
        assert_eq!(
            o.poll(),
            WalkStep::RebuildArchive {
                limit_tokens: Some(half)
            }
        );
        // The re-test reads the host's measure the same way: half the window is not room.
        o.handle_rebuilt(0, Some(fit / 2 + 1)).unwrap();
        assert!(matches!(o.poll(), WalkStep::Shake { .. }));
        // A text model, a manual or an idle walk: no rebuild.
        let mut o = Walk::new(WalkInput {
            methods: Some(vec![Soft]),
            ..WalkInput::new(CompactionReason::Overflow, s.clone(), model(w, false))
        });
        o.handle_plan_failed("E_NOTHING_TO_COMPACT", "fits")
            .unwrap();
        assert!(matches!(o.poll(), WalkStep::Shake { .. }));
        for reason in [CompactionReason::Manual, CompactionReason::Idle] {
            let mut o = Walk::new(input(reason, &["snapcompact"], w));
            o.handle_plan_failed("E_NOTHING_TO_COMPACT", "fits")
                .unwrap();
            assert_eq!(code_of(&o.poll()), "E_NOTHING_TO_COMPACT");
        }
    }

    #[test]
    fn the_progress_guard_asks_for_one_rescue_after_a_commit() {
        let s = CompactionSettings::default();
        let band = recovery_band_tokens(threshold_tokens(32_000, &s));
        let run = |reason, live: u64| {
            let mut w = Walk::new(WalkInput {
                methods: Some(vec![Soft]),
                ..WalkInput::new(reason, s.clone(), model(32_000, false))
            });
            w.handle_planned().unwrap();
            w.handle_summarized().unwrap();
            w.handle_committed(0, Some(live)).unwrap();
            w
        };
        assert_eq!(run(CompactionReason::Threshold, band).poll(), done(Soft));
        let mut w = run(CompactionReason::Threshold, band + 1);
        assert_eq!(
            w.poll(),
            WalkStep::Shake {
                preset: ShakePreset::Rescue
            }
        );
        // The shake elided nothing and the kept tail is still too big: the image drop; the
        // commit stands whatever it does.
        w.handle_shaken(0, 0, None).unwrap();
        assert_eq!(w.poll(), WalkStep::DropImages);
        w.handle_images_dropped(2, Some(band)).unwrap();
        assert!(matches!(w.poll(), WalkStep::Warn { .. }));
        assert_eq!(w.poll(), done(Soft));
        // A shake that made room ends the walk without it.
        let mut w = run(CompactionReason::Threshold, band + 1);
        w.handle_shaken(1, 10, Some(band)).unwrap();
        assert_eq!(w.poll(), done(Soft));
        // Without a measure, the commit's figure less what the shake freed.
        let mut w = run(CompactionReason::Threshold, band + 5);
        w.handle_shaken(1, 5, None).unwrap();
        assert_eq!(w.poll(), done(Soft));
        let mut w = run(CompactionReason::Threshold, band + 5);
        w.handle_shaken(1, 4, None).unwrap();
        assert_eq!(w.poll(), WalkStep::DropImages);
        // An overflow only has to fit the window minus the reserve.
        let fit = 32_000 - budget_reserve_tokens(32_000, &s);
        assert_eq!(run(CompactionReason::Overflow, fit).poll(), done(Soft));
        assert!(matches!(
            run(CompactionReason::Overflow, fit + 1).poll(),
            WalkStep::Shake { .. }
        ));
        // Manual: no guard.
        assert_eq!(run(CompactionReason::Manual, 1_000_000).poll(), done(Soft));
        // Without a measure: the core's figure through the ratio, plus the overhead.
        let mut w = Walk::new(WalkInput {
            methods: Some(vec![Soft]),
            provider_ratio: Some(2.0),
            overhead_tokens: 10,
            ..WalkInput::new(CompactionReason::Threshold, s.clone(), model(32_000, false))
        });
        w.handle_planned().unwrap();
        w.handle_summarized().unwrap();
        w.handle_committed(band / 2, None).unwrap();
        assert!(matches!(w.poll(), WalkStep::Shake { .. }));
    }

    /// One progress guard (§8.5): the walk asks for the rescue shake after a commit exactly
    /// when the ContextManager would then find no headroom, for every automatic reason (a
    /// length-stop recovery retries, so its request only has to fit, as an overflow's).
    #[test]
    fn the_walk_and_the_context_manager_share_the_progress_guard() {
        let s = CompactionSettings::default();
        let w = 32_000;
        let m = model(w, false);
        let band = recovery_band_tokens(threshold_tokens(w, &s));
        let fit = w - budget_reserve_tokens(w, &s);
        for reason in [
            CompactionReason::Threshold,
            CompactionReason::Overflow,
            CompactionReason::Incomplete,
        ] {
            let will_retry = reason != CompactionReason::Threshold;
            for residual in [band - 1, band, band + 1, fit - 1, fit, fit + 1] {
                let mut walk = Walk::new(WalkInput {
                    methods: Some(vec![Soft]),
                    ..WalkInput::new(reason, s.clone(), m.clone())
                });
                walk.handle_planned().unwrap();
                walk.handle_summarized().unwrap();
                walk.handle_committed(0, Some(residual)).unwrap();
                let rescues = matches!(walk.poll(), WalkStep::Shake { .. });
                let mut cm = ContextManager::new(s.clone());
                let req = CompactRequest {
                    reason,
                    entry: EntryPoint::PostTurn,
                    will_retry,
                    methods: vec![Soft],
                    context_window: w,
                    threshold_tokens: Some(threshold_tokens(w, &s)),
                    ..CompactRequest::default()
                };
                let d = cm.after_compaction(&CompactionReport::new(
                    req,
                    CompactionOutcome::Compacted {
                        tokens_after: residual,
                        stored_tokens: Some(residual),
                    },
                ));
                assert_eq!(
                    rescues,
                    d.compaction_warning.is_some(),
                    "{reason:?} with {residual} tokens left (band {band}, fit {fit})"
                );
            }
        }
    }

    #[test]
    fn the_shake_method_hands_over_unless_it_made_room() {
        let s = CompactionSettings::default();
        let band = recovery_band_tokens(threshold_tokens(32_000, &s));
        let walk = |reason| {
            Walk::new(WalkInput {
                methods: Some(vec![Shake, Soft]),
                live_tokens: band + 1_000,
                ..WalkInput::new(reason, s.clone(), model(32_000, false))
            })
        };
        let mut w = walk(CompactionReason::Threshold);
        assert_eq!(
            w.poll(),
            WalkStep::Shake {
                preset: ShakePreset::Default
            }
        );
        w.handle_shaken(0, 0, None).unwrap();
        assert!(
            matches!(w.poll(), WalkStep::Warn { message, .. } if message.contains("found nothing eligible"))
        );
        assert_eq!(w.poll(), plan(Soft));
        let mut w = walk(CompactionReason::Threshold);
        w.handle_shaken(3, 500, None).unwrap();
        assert!(
            matches!(w.poll(), WalkStep::Warn { message, .. } if message.contains("still above the threshold"))
        );
        let mut w = walk(CompactionReason::Threshold);
        w.handle_shaken(3, 1_000, None).unwrap();
        assert_eq!(w.poll(), done(Shake));
        // Idle is not guarded; a manual shake uses the aggressive preset.
        let mut w = walk(CompactionReason::Idle);
        w.handle_shaken(1, 1, None).unwrap();
        assert_eq!(w.poll(), done(Shake));
        let mut w = Walk::new(WalkInput {
            explicit: Some(Strategy::Shake),
            ..WalkInput::new(CompactionReason::Manual, s.clone(), model(32_000, false))
        });
        assert_eq!(
            w.poll(),
            WalkStep::Shake {
                preset: ShakePreset::Aggressive
            }
        );
    }

    /// Issue 36 item 5: `remote` asks only the remote route; its failure hands over to `soft`
    /// with a warning and is reported for the cooldown.
    #[test]
    fn remote_uses_only_the_remote_route_and_starts_the_cooldown() {
        let mut i = listed(CompactionReason::Manual, &[Remote, Soft]);
        i.remote_endpoint = true;
        let mut w = Walk::new(i.clone());
        assert_eq!(w.poll(), plan(Remote));
        w.handle_planned().unwrap();
        assert_eq!(
            w.poll(),
            WalkStep::Summarize {
                method: Remote,
                route: Route::Endpoint
            }
        );
        w.handle_method_failed(
            "E_SUMMARIZER",
            "Remote compaction failed (502 Bad Gateway)",
            Some(502),
        )
        .unwrap();
        assert!(w.remote_failed());
        assert!(matches!(w.poll(), WalkStep::Warn { message, .. }
            if message == "remote compaction failed: Remote compaction failed (502 Bad Gateway); trying the next preferred compaction method."));
        assert_eq!(w.poll(), plan(Soft));
        w.handle_planned().unwrap();
        assert_eq!(
            w.poll(),
            WalkStep::Summarize {
                method: Soft,
                route: Route::Callbacks
            }
        );

        // A native lane first, then the endpoint; without an endpoint the method fails.
        i.native_lane = true;
        let mut w = Walk::new(i.clone());
        w.handle_planned().unwrap();
        assert_eq!(
            w.poll(),
            WalkStep::Summarize {
                method: Remote,
                route: Route::Native
            }
        );
        w.handle_method_failed("E_SUMMARIZER", "native", None)
            .unwrap();
        assert_eq!(
            w.poll(),
            WalkStep::Summarize {
                method: Remote,
                route: Route::Endpoint
            }
        );
        i.remote_endpoint = false;
        let mut w = Walk::new(i.clone());
        w.handle_planned().unwrap();
        w.handle_native_unavailable().unwrap();
        assert!(w.remote_failed());
        assert!(matches!(w.poll(), WalkStep::Warn { .. }));
        // A native lane commits itself.
        let mut w = Walk::new(i);
        w.handle_planned().unwrap();
        w.handle_committed(10, None).unwrap();
        assert_eq!(w.poll(), done(Remote));

        // The ContextManager keeps the cooldown.
        let mut cm = ContextManager::new(CompactionSettings::default());
        assert!(!cm.remote_blocked(0));
        cm.note_remote_failure(1_000);
        assert!(cm.remote_blocked(1_000 + REMOTE_COOLDOWN_MS - 1));
        assert!(!cm.remote_blocked(1_000 + REMOTE_COOLDOWN_MS));
    }

    /// Issue 43 item 1: an overflow always ends with `soft`, so a one-method methodOrder does
    /// not leave every later request overflowing.
    #[test]
    fn an_overflow_falls_back_to_soft() {
        for (order, want) in [
            (vec!["shake"], vec![Shake, Soft]),
            (vec!["handoff"], vec![Soft]),
            (vec!["snapcompact"], vec![Snapcompact, Soft]),
        ] {
            let named: Vec<_> = order
                .iter()
                .filter_map(|m| CompactionMethod::named(m))
                .collect();
            let w = Walk::new(listed(CompactionReason::Overflow, &named));
            assert_eq!(w.methods(), want, "{order:?}");
            // The trigger machine's rule is the same one: it compacts an overflow.
            let mut cm = ContextManager::new(settings(json!({ "methodOrder": order })));
            let raw = json!({
                "role": "assistant", "content": [], "provider": "p", "model": "m",
                "stopReason": "error", "errorMessage": "prompt is too long: 40000 tokens > 32000 maximum",
                "timestamp": 1_000,
            });
            let a = match crate::session::message::AgentMessage::parse(&raw.to_string(), None) {
                Ok(crate::session::message::AgentMessage::Assistant(a)) => a,
                other => panic!("not an assistant: {other:?}"),
            };
            let m = model(32_000, true);
            let d = cm.after_turn(TurnInput::new(&a, &m, 0));
            let req = d.compact.expect("an overflow compacts");
            assert_eq!(req.methods, want, "{order:?}");
        }
        // Other reasons keep the list as it is.
        let w = Walk::new(listed(CompactionReason::Threshold, &[Shake]));
        assert_eq!(w.methods(), [Shake]);
    }

    /// Issue 36 item 1: an overflow compaction that brought the request under the window
    /// retries the turn even without the full reserve of headroom.
    #[test]
    fn an_overflow_under_the_window_retries() {
        let mut cm = ContextManager::new(CompactionSettings::default());
        let req = CompactRequest {
            reason: CompactionReason::Overflow,
            entry: EntryPoint::PostTurn,
            will_retry: true,
            context_tokens: 40_000,
            context_window: 32_000,
            ..CompactRequest::default()
        };
        let report = |tokens_after| {
            CompactionReport::new(
                req.clone(),
                CompactionOutcome::Compacted {
                    tokens_after,
                    stored_tokens: None,
                },
            )
        };
        let d = cm.after_compaction(&report(31_000));
        assert_eq!(
            d.continuation.map(|c| c.kind),
            Some(crate::triggers::ContinuationKind::Retry)
        );
        assert!(
            d.compaction_warning.is_some(),
            "the guard still warns and pauses"
        );
        let d = cm.after_compaction(&report(32_500));
        assert!(d.continuation.is_none() && d.block_auto_continue);
    }

    /// Drives `w` with the outcomes `choices` pick (cycled); returns the steps taken and
    /// whether a method was planned twice without a shake between.
    pub(crate) fn drive(w: &mut Walk, choices: &[u8]) -> (usize, bool) {
        let codes = [
            "E_SUMMARIZER",
            "E_NOTHING_TO_COMPACT",
            "E_ALREADY_COMPACTED",
            "E_ABORTED",
            "E_NO_REDUCTION",
            "E_STALE_PLAN",
        ];
        let mut planned: Vec<CompactionMethod> = Vec::new();
        let mut twice = false;
        let mut n = 0usize;
        loop {
            let c = usize::from(choices.get(n % choices.len().max(1)).copied().unwrap_or(0));
            n += 1;
            if n > 1_000 {
                return (n, twice);
            }
            let code = codes[c % codes.len()];
            let r = match w.poll() {
                WalkStep::Done { .. } | WalkStep::Failed { .. } | WalkStep::Skipped { .. } => {
                    return (n, twice)
                }
                WalkStep::Warn { .. } => Ok(()),
                WalkStep::Plan { method, .. } => {
                    twice |= planned.contains(&method);
                    planned.push(method);
                    if c % 3 == 0 {
                        w.handle_plan_failed(code, "x")
                    } else {
                        w.handle_planned()
                    }
                }
                WalkStep::RebuildArchive { .. } => {
                    if c % 2 == 0 {
                        w.handle_rebuild_failed()
                    } else {
                        w.handle_rebuilt(c as u64 * 300, (c % 4 == 1).then_some(c as u64 * 900))
                    }
                }
                WalkStep::DropImages => {
                    // A reduction like a shake: the method may be planned again after it.
                    planned.clear();
                    w.handle_images_dropped((c % 2) as u64, (c % 4 == 1).then_some(c as u64 * 800))
                }
                WalkStep::Shake { .. } => {
                    planned.clear();
                    w.handle_shaken(
                        (c % 2) as u64,
                        (c * 100) as u64,
                        (c % 4 == 0).then_some(c as u64 * 1_000),
                    )
                }
                WalkStep::Summarize { route, .. } => match c % 4 {
                    0 => w.handle_method_failed(code, "x", None),
                    1 if route == Route::Native => w.handle_native_unavailable(),
                    1 | 2 if route == Route::Native => w.handle_committed(c as u64 * 500, None),
                    3 => w.handle_extension_committed(),
                    _ => w.handle_summarized(),
                },
                WalkStep::Commit { .. } => {
                    if c % 3 == 0 {
                        w.handle_method_failed(code, "x", Some(502))
                    } else {
                        w.handle_committed(c as u64 * 700, None)
                    }
                }
            };
            assert!(
                r.is_ok(),
                "the walk refused the outcome of its own step: {r:?}"
            );
        }
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn method() -> impl proptest::strategy::Strategy<Value = CompactionMethod> {
            prop::sample::select(vec![
                Remote,
                Snapcompact,
                Handoff,
                Shake,
                Soft,
                CompactionMethod::Window,
            ])
        }

        fn reason() -> impl proptest::strategy::Strategy<Value = CompactionReason> {
            prop::sample::select(vec![
                CompactionReason::Threshold,
                CompactionReason::Overflow,
                CompactionReason::Incomplete,
                CompactionReason::Idle,
                CompactionReason::Manual,
            ])
        }

        proptest! {
            /// The walk ends within a bound of steps, and never plans a method twice without a
            /// shake between, whatever the host reports.
            #[test]
            fn the_walk_terminates(
                methods in prop::option::of(prop::collection::vec(method(), 0..8)),
                reason in reason(),
                flags in any::<[bool; 7]>(),
                window in prop::sample::select(vec![0u64, 8_000, 32_000, 200_000]),
                live in 0u64..300_000,
                choices in prop::collection::vec(any::<u8>(), 1..64),
            ) {
                let i = WalkInput {
                    methods,
                    summarizer: flags[0],
                    remote_endpoint: flags[1],
                    native_lane: flags[2],
                    remote_blocked: flags[3],
                    exclude_snapcompact: flags[4],
                    custom_instructions: flags[5],
                    input_known: flags[6],
                    live_tokens: live,
                    ..WalkInput::new(reason, CompactionSettings::default(), model(window, true))
                };
                let mut w = Walk::new(i);
                let bound = 8 * w.methods().len() + 8;
                let (steps, twice) = drive(&mut w, &choices);
                prop_assert!(steps <= bound, "{} steps for {} methods", steps, w.methods().len());
                prop_assert!(!twice);
                prop_assert!(w.is_over());
            }
        }
    }

    #[test]
    fn the_archive_counts_the_overhead_and_the_providers_surplus_on_the_kept_tail() {
        let mut input = input(CompactionReason::Threshold, &["soft"], 64_000);
        input.overhead_tokens = 500;
        input.provider_ratio = Some(2.0);
        let fitted = |input: &WalkInput| {
            let f = Walk::new(input.clone()).archive_fit(10_000);
            (f.non_message_tokens, f.text_ratio, f.image_ratio)
        };
        assert_eq!(fitted(&input), (10_500, Some(2.0), 1.0));
        input.provider_ratio = Some(0.5);
        input.image_ratio = 0.6;
        assert_eq!(fitted(&input), (500, Some(0.5), 0.6));
        // A rate the host has not measured (or not a positive number) is passed on as not
        // known, and the kept tail is weighed at the estimate.
        for unknown in [None, Some(0.0), Some(f64::NAN)] {
            input.provider_ratio = unknown;
            assert_eq!(fitted(&input), (500, None, 0.6));
        }
    }

    /// Issue 36 (one engine): automatic compaction that is off ends the walk before any step,
    /// whatever the list; `off` wins over `enabled: false`; a manual walk ignores both.
    #[test]
    fn an_automatic_walk_with_compaction_off_is_skipped() {
        let off = settings(json!({ "strategy": "off", "methodOrder": ["snapcompact", "soft"] }));
        let disabled = settings(json!({ "enabled": false, "methodOrder": ["soft"] }));
        let both = settings(json!({ "enabled": false, "strategy": "off" }));
        for reason in [
            CompactionReason::Threshold,
            CompactionReason::Overflow,
            CompactionReason::Incomplete,
            CompactionReason::Idle,
        ] {
            for (s, why) in [
                (&off, Skip::Off),
                (&disabled, Skip::Disabled),
                (&both, Skip::Off),
            ] {
                // With an explicit strategy that would warn (snapcompact on a text model), a
                // list, or neither: the skip is the first and the last step.
                let mut i = WalkInput::new(reason, s.clone(), model(32_000, false));
                i.explicit = Some(Strategy::Snapcompact);
                for methods in [None, Some(vec![Soft])] {
                    let mut w = Walk::new(WalkInput {
                        methods,
                        ..i.clone()
                    });
                    assert_eq!(w.poll(), WalkStep::Skipped { why }, "{reason:?}");
                    assert!(w.is_over());
                    assert_eq!(w.poll(), WalkStep::Skipped { why });
                    assert!(w.handle_planned().is_err());
                }
            }
        }
        // A manual walk runs methodOrder: `off` is not a method.
        for (s, first) in [(&off, Snapcompact), (&disabled, Soft)] {
            let mut i = WalkInput::new(CompactionReason::Manual, s.clone(), model(32_000, true));
            i.strategy = Some(s.strategy);
            assert_eq!(Walk::new(i).poll(), plan(first));
        }
    }

    /// Issue 36 (one engine): the settings' strategy as written is walked first, its method
    /// then `soft`, unless a list is given; `off` and an unset strategy walk methodOrder.
    #[test]
    fn the_settings_strategy_is_walked_first_unless_a_list_is_given() {
        let order = crate::settings::METHODS;
        let walk = |strategy: Option<Strategy>, methods: Option<Vec<CompactionMethod>>| {
            let mut s = settings(json!({ "methodOrder": order }));
            if let Some(st) = strategy {
                s.strategy = st;
            }
            Walk::new(WalkInput {
                strategy,
                methods,
                ..WalkInput::new(CompactionReason::Manual, s, model(32_000, true))
            })
        };
        assert_eq!(walk(None, None).methods(), [Snapcompact, Soft]);
        assert_eq!(
            walk(Some(Strategy::Off), None).methods(),
            [Snapcompact, Soft]
        );
        assert_eq!(
            walk(Some(Strategy::Handoff), None).methods(),
            [Handoff, Soft]
        );
        assert_eq!(walk(Some(Strategy::ContextFull), None).methods(), [Soft]);
        assert_eq!(
            walk(Some(Strategy::Handoff), Some(vec![Shake, Soft])).methods(),
            [Shake, Soft]
        );
        // It wins over an `explicit` the host passed; `off` leaves that one standing.
        let mut i = WalkInput::new(
            CompactionReason::Manual,
            settings(json!({ "methodOrder": order })),
            model(32_000, true),
        );
        i.explicit = Some(Strategy::Handoff);
        i.strategy = Some(Strategy::Shake);
        assert_eq!(Walk::new(i.clone()).methods(), [Shake, Soft]);
        i.strategy = Some(Strategy::Off);
        assert_eq!(Walk::new(i).methods(), [Handoff, Soft]);
    }

    /// Issue 36 (one engine): a handoff's commit step names the document to save, from the
    /// walk's clock, only for an automatic reason with `handoffSaveToDisk`.
    #[test]
    fn a_handoff_commit_carries_the_document_to_save() {
        let now = 1_796_626_279_123; // 2026-12-07T06:51:19.123Z
        let commit = |reason, save: bool| {
            let s = settings(json!({ "handoffSaveToDisk": save }));
            let mut w = Walk::new(WalkInput {
                methods: Some(vec![Handoff, Soft]),
                explicit: Some(Strategy::Handoff),
                now,
                ..WalkInput::new(reason, s, model(200_000, true))
            });
            assert_eq!(w.poll(), plan(Handoff), "{reason:?}");
            w.handle_planned().unwrap();
            w.handle_summarized().unwrap();
            w.poll()
        };
        assert_eq!(
            commit(CompactionReason::Threshold, true),
            WalkStep::Commit {
                method: Handoff,
                artifact: Some(Artifact {
                    name: "handoff-2026-12-07T06-51-19-123Z.md".into(),
                    kind: "handoff",
                }),
            }
        );
        for (reason, save) in [
            (CompactionReason::Manual, true),
            (CompactionReason::Threshold, false),
        ] {
            assert_eq!(
                commit(reason, save),
                WalkStep::Commit {
                    method: Handoff,
                    artifact: None
                }
            );
        }
        // Other methods save nothing.
        let s = settings(json!({ "handoffSaveToDisk": true }));
        let mut w = Walk::new(WalkInput {
            methods: Some(vec![Soft]),
            now,
            ..WalkInput::new(CompactionReason::Threshold, s, model(200_000, true))
        });
        w.handle_planned().unwrap();
        w.handle_summarized().unwrap();
        assert!(matches!(w.poll(), WalkStep::Commit { artifact: None, .. }));
        // The JavaScript date range bounds the name (expanded years, as `toISOString`).
        assert_eq!(
            handoff_document_name(i64::MAX),
            "handoff-+275760-09-13T00-00-00-000Z.md"
        );
        assert_eq!(
            handoff_document_name(0),
            "handoff-1970-01-01T00-00-00-000Z.md"
        );
    }

    /// Issue 36 (one engine): the summarize step's plumbing is the core's: the endpoint one
    /// request at a time, a handoff's calls agent-initiated, the events' action of a method.
    #[test]
    fn the_summarize_plumbing_and_the_action_are_the_cores() {
        assert!(Route::Endpoint.one_at_a_time());
        assert!(!Route::Callbacks.one_at_a_time() && !Route::Native.one_at_a_time());
        assert_eq!(Walk::summary_initiator(Handoff), Some("agent"));
        for m in [Remote, Snapcompact, Shake, Soft, CompactionMethod::Window] {
            assert_eq!(Walk::summary_initiator(m), None, "{m:?}");
        }
        // The events' action (spec: compaction §8.7), as the core names it for the JS.
        let actions: Vec<_> = [Remote, Soft, Snapcompact, Handoff, Shake]
            .iter()
            .map(|m| m.action().as_str())
            .collect();
        assert_eq!(
            actions,
            ["remote", "context-full", "snapcompact", "handoff", "shake"]
        );
    }
}
