//! A seeded agent simulator over the core (issue 36, "Tests"): a scripted agent talks to a
//! fake provider with a hard context window through a real [`Session`], the trigger machine
//! ([`ContextManager`]) decides, and the compactions it asks for run through the core's plan
//! and commit with a fake summarizer. After every step the promise is checked:
//!
//! - a request over the window is recovered on the next request (never two unrecovered
//!   overflows in a row), and no user turn ends while its last request was over the window;
//! - every user message ever appended is in the session file (handoffs followed), and once a
//!   compaction dropped it from the context it is in what that compaction carried on: the
//!   summary (the fake summarizer copies every marker its input holds), the snapcompact
//!   archive's source text, or the handoff document;
//! - entries are never removed from a session file;
//! - every committed compaction lowers the tokens of the next request, or says why not.
//!
//! With background compaction (spec: compaction §13) on, the trigger machine's background steps
//! are carried out as the Maintainer does: a plan prepared in the band below the threshold is
//! answered a number of requests later (0, 1, 3, or never), and committed instead of an inline
//! compaction when the machine says so; the host rewrites lines of the history now and then
//! (what a prune does), so prepared results go stale. One more promise: no stale summary is
//! ever committed — every entry a committed background summary covers is on the branch before
//! the kept entries, with the text the summarizer read.
//!
//! The summarizer fails now and then, returns empty documents, providers count text at 0.5-2x
//! the core's estimate, replies stop on `length`, and overflow errors are forced at random.
//! [`run`] returns what a run did, or the first broken invariant with the seed that breaks it.

use ctxfold::archive::{archive_source_text, get_preserved_archive};
use ctxfold::compaction::commit::{
    commit_compaction, commit_handoff, commit_snapcompact, snapcompact_options,
};
use ctxfold::compaction::plan::{plan_compaction, CompactionPlan, PlanOptions};
use ctxfold::compaction::snapcompact_rescue::plan_archive_rebuild;
use ctxfold::context::{build_context, BuildOptions};
use ctxfold::render::shape::resolve::Target;
use ctxfold::render::FallbackFonts;
use ctxfold::session::{NewSession, SequentialIds};
use ctxfold::settings::{CompactionSettings, Strategy};
use ctxfold::shake::{apply_shake, drop_images, plan_shake, Preset, ShakeConfig};
use ctxfold::summary::retry::{answer_problem, classify, RetryPolicy, RetryStep};

use ctxfold::tokens::FRAME_TOKEN_ESTIMATE;
use ctxfold::triggers::speculation::SpeculationStep;
use ctxfold::triggers::{
    CompactRequest, CompactionMethod, CompactionOutcome, CompactionReport, ContextManager,
    ContinuationKind, Decision, ModelInfo, ReplyStep, Route, ShakePreset, StepInput, Walk,
    WalkInput, WalkStep,
};
use ctxfold::{AgentMessage, Session};
use serde_json::{json, Value};

use crate::rng::Rng;

/// One simulated configuration.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub seed: u64,
    /// The provider's hard context window.
    pub window: u64,
    /// The model reads images (snapcompact can run).
    pub vision: bool,
    /// The model's family: 0 Claude (Anthropic Messages), 1 GPT (OpenAI Responses), 2 Gemini.
    pub family: u8,
    /// `compaction.methodOrder`; `None` keeps the default.
    pub methods: Option<Vec<&'static str>>,
    /// Provider tokens per token of the core's estimate.
    pub ratio: f64,
    /// Share of summarizer calls that fail, and that answer an empty document.
    pub summarizer_failures: f64,
    pub empty_documents: f64,
    /// Share of replies that stop on `length`, and of requests refused as overflow anyway.
    pub length_stops: f64,
    pub forced_overflows: f64,
    /// `compaction.remoteEndpoint` is set, and the endpoint is down (every call fails).
    pub dead_remote: bool,
    pub user_turns: usize,
    /// The provider bills an archive's frames by their pixels (as Anthropic and OpenAI do: a
    /// short last frame costs less than a full one), not at the core's flat charge; a Gemini
    /// reader's provider charges a flat price per image whatever this says (its media
    /// resolution).
    pub pixel_frames: bool,
    /// The host does not know the provider's ratio (a new Maintainer, before its first
    /// answered request): the walk weighs text at the core's estimate.
    pub uncalibrated: bool,
    /// Background compaction (the Maintainer's `background`, spec: compaction §13).
    pub background: bool,
    /// Requests between a background start and its answers; `None`: never answered.
    pub background_latency: Option<u32>,
    /// Share of requests before which the host rewrites a line of the history's first half.
    pub prefix_edits: f64,
}

impl Scenario {
    /// A random scenario: windows 8k-2M, any method order, text or vision model, failures.
    pub fn random(seed: u64) -> Scenario {
        let mut r = Rng::derived(&[seed, 0xA6E7]);
        let windows = [
            8_000u64, 16_000, 32_000, 64_000, 128_000, 200_000, 1_000_000, 2_000_000,
        ];
        let all = ["remote", "snapcompact", "handoff", "shake", "soft"];
        let methods = if r.chance(0.4) {
            None
        } else {
            let n = r.range_usize(1, 4);
            Some((0..n).map(|_| *r.pick(&all)).collect())
        };
        Scenario {
            seed,
            window: *r.pick(&windows),
            vision: r.chance(0.5),
            family: r.below(3) as u8,
            methods,
            ratio: *r.pick(&[0.5, 0.8, 1.0, 1.0, 1.3, 2.0]),
            summarizer_failures: *r.pick(&[0.0, 0.1, 0.1]),
            empty_documents: *r.pick(&[0.0, 0.05]),
            length_stops: *r.pick(&[0.0, 0.05]),
            forced_overflows: *r.pick(&[0.0, 0.03]),
            dead_remote: r.chance(0.3),
            user_turns: r.range_usize(20, 60),
            // Drawn from a stream of their own: the JS port draws the fields above alike, and
            // its provider always bills frames by their pixels through a calibrating host.
            pixel_frames: Rng::derived(&[seed, 0x91C5]).chance(0.5),
            uncalibrated: Rng::derived(&[seed, 0xCA1B]).chance(0.25),
            // Background compaction, from a stream of its own (the JS port does not draw it).
            background: Rng::derived(&[seed, 0xB6C0]).chance(0.5),
            background_latency: *Rng::derived(&[seed, 0xB6C1]).pick(&[
                Some(0),
                Some(1),
                Some(3),
                None,
            ]),
            prefix_edits: *Rng::derived(&[seed, 0xB6C2]).pick(&[0.0, 0.0, 0.05]),
        }
    }

    /// The scenario as JSON, for the JS scripted agent (`tests/js/support/agent-sim.mjs`),
    /// which draws the same scenarios from the same seeds: the fields in camelCase, `seed` a
    /// decimal string (a `u64` does not fit a JS number), `methods` `null` for the default.
    /// `pixel_frames` and `uncalibrated` are the Rust host's own (the JS one always bills by
    /// pixels and calibrates).
    pub fn to_json(&self) -> Value {
        json!({
            "seed": self.seed.to_string(),
            "window": self.window,
            "vision": self.vision,
            "family": self.family,
            "methods": self.methods,
            "ratio": self.ratio,
            "summarizerFailures": self.summarizer_failures,
            "emptyDocuments": self.empty_documents,
            "lengthStops": self.length_stops,
            "forcedOverflows": self.forced_overflows,
            "deadRemote": self.dead_remote,
            "userTurns": self.user_turns,
        })
    }
}

/// The seeds of `tests/js/fixtures/agent-scenarios.json`: the first seeds the simulator runs,
/// and two past 2^53 (the JS port draws with `BigInt`).
pub const JS_FIXTURE_SEEDS: [u64; 14] = [
    0,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    9,
    10,
    11,
    15_865_969_511_153_367_417,
    u64::MAX,
];

/// `tests/js/fixtures/agent-scenarios.json`: [`Scenario::random`] of each of `seeds`, as
/// [`Scenario::to_json`], laid out as Biome formats JSON (`.ci/biome.sh`: an object a key a
/// line, short arrays on one line). The JS test checks that its port of the generator draws
/// the same; `js_fixture_is_current` below that this file is what the generator draws today.
pub fn js_fixture(seeds: &[u64]) -> String {
    let one = |v: &Value| match v {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(Value::to_string).collect();
            format!("[{}]", items.join(", "))
        }
        v => v.to_string(),
    };
    let scenarios: Vec<String> = seeds
        .iter()
        .map(|&seed| {
            let v = Scenario::random(seed).to_json();
            let fields: Vec<String> = v
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| format!("    {}: {}", Value::from(k.as_str()), one(v)))
                .collect();
            format!("  {{\n{}\n  }}", fields.join(",\n"))
        })
        .collect();
    format!("[\n{}\n]\n", scenarios.join(",\n"))
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub requests: u64,
    pub overflows: u64,
    pub compactions: u64,
    pub handoffs: u64,
    pub largest_request: u64,
    /// User messages a snapcompact archive took in and then dropped over its frame and
    /// user-turn budgets (lossy by design; counted, not hidden).
    pub archive_dropped_user_turns: u64,
    /// User turns that ended over the window because every method of the recovery failed
    /// on the summarizer (failures past the retry policy, empty documents): no method could
    /// run, which is outside the promise; counted, not hidden.
    pub turns_lost_to_the_summarizer: u64,
    /// Oversized snapcompact archives the dead-end rescue rebuilt with fewer frames.
    pub archive_rebuilds: u64,
    /// Background compactions started, committed, and found stale at their commit or answers.
    pub background_started: u64,
    pub background_committed: u64,
    pub background_stale: u64,
}

/// A background compaction of the simulator: its plan, the request count its answers are
/// due at (`None`: never), whether they are in, and the text of every entry it summarizes as
/// the plan read it.
struct Background {
    plan: CompactionPlan,
    due: Option<u64>,
    ready: bool,
    read: Vec<(usize, String)>,
}

// ASCII, so that no normalization (snapcompact prints normalized text) changes a marker.
/// What a request carries beside the messages (system prompt, tools), in provider tokens.
const OVERHEAD: u64 = 500;

const MARK_OPEN: &str = "[[u";
const MARK_CLOSE: &str = "]]";

fn marker(turn: usize) -> String {
    format!("{MARK_OPEN}{turn}{MARK_CLOSE}")
}

/// Every marker in `text`, in order, each once.
fn markers_in(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(MARK_OPEN) {
        let tail = &rest[start..];
        let Some(end) = tail.find(MARK_CLOSE) else {
            break;
        };
        let m = &tail[..end + MARK_CLOSE.len()];
        if !out.iter().any(|x| x == m) {
            out.push(m.to_string());
        }
        rest = &tail[end + MARK_CLOSE.len()..];
    }
    out
}

/// About `tokens` tokens of words (4 characters a token).
fn filler(r: &mut Rng, tokens: u64) -> String {
    const WORDS: [&str; 8] = [
        "alpha", "beta", "gamma", "delta", "parser", "buffer", "cache", "test",
    ];
    let mut s = String::with_capacity(tokens as usize * 4 + 8);
    while (s.len() as u64) < tokens * 4 {
        s.push_str(r.ps(&WORDS));
        s.push(' ');
    }
    s
}

/// What a provider billing images by their pixels charges for one (Anthropic's rule:
/// 28-pixel patches, at most 4,784).
fn pixel_tokens(w: u64, h: u64) -> u64 {
    (w.div_ceil(28) * h.div_ceil(28)).min(4_784)
}

/// The pixel size of every image block of `v` (`None` when its data is not a readable PNG).
fn image_sizes(v: &Value, out: &mut Vec<Option<(u64, u64)>>) {
    match v {
        Value::Array(items) => items.iter().for_each(|x| image_sizes(x, out)),
        Value::Object(o) => {
            if o.get("type").and_then(Value::as_str) == Some("image") {
                out.push(o.get("data").and_then(Value::as_str).and_then(png_size));
                return;
            }
            o.values().for_each(|x| image_sizes(x, out));
        }
        _ => {}
    }
}

/// Width and height of a base64 PNG, from its IHDR chunk.
fn png_size(data: &str) -> Option<(u64, u64)> {
    let head = ctxfold::support::base64::base64_decode(data.get(..32)?)?;
    if head.get(12..16)? != b"IHDR" {
        return None;
    }
    let word = |at: usize| -> Option<u64> {
        Some(u64::from(u32::from_be_bytes(
            head.get(at..at + 4)?.try_into().ok()?,
        )))
    };
    Some((word(16)?, word(20)?))
}

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// The host: the live session, the earlier ones a handoff replaced, the machine and the clock.
struct Host {
    s: Scenario,
    r: Rng,
    session: Session,
    earlier: Vec<Session>,
    cm: ContextManager,
    settings: CompactionSettings,
    model: ModelInfo,
    now: i64,
    latest_compaction_at: Option<i64>,
    markers: Vec<String>,
    /// Markers the summarizer inputs of the current compaction held.
    fed: Vec<String>,
    /// Markers a snapcompact archive took in and dropped (see [`Report`]).
    archive_dropped: Vec<String>,
    /// The last compaction failed because its summarizer did (every method that ran).
    summarizer_gave_up: bool,
    report: Report,
    sessions_made: u64,
    fonts: FallbackFonts,
    /// The model's API (the summarizer transcript's dialect, the archive's shape).
    api: &'static str,
    /// The background compaction in flight or armed, and whether this step may commit it.
    bg: Option<Background>,
    bg_commit: bool,
}

/// What the core estimates for the live context, and what the provider counts.
fn estimate(session: &Session) -> Result<u64, String> {
    let ctx = build_context(session, &BuildOptions::default()).map_err(|e| e.to_string())?;
    Ok(ctx.estimated_tokens(session))
}

impl Host {
    /// What the provider counts: text at its ratio to the core's estimate, images (the
    /// archive's frames) at the core's flat charge, as providers bill images by their pixels
    /// whatever their tokenizer; plus the request overhead.
    /// The live session's state as the Maintainer names it for `before_request` and
    /// `settle`: which session (a handoff replaces it), its size and its leaf.
    fn state(&self) -> String {
        format!(
            "{}:{}:{}",
            self.earlier.len(),
            self.session.len(),
            self.session.leaf_id().unwrap_or("")
        )
    }

    fn provider_tokens(&self) -> Result<u64, String> {
        let ctx =
            build_context(&self.session, &BuildOptions::default()).map_err(|e| e.to_string())?;
        let all = ctx.estimated_tokens(&self.session);
        let json = ctx.to_json(&self.session);
        let count = json.matches("\"type\":\"image\"").count() as u64;
        // The core's estimate charges each image the flat rate; that part is not text.
        let flat = (count * FRAME_TOKEN_ESTIMATE).min(all);
        let billed = if self.s.pixel_frames {
            let v: Value = serde_json::from_str(&json).map_err(|e| e.to_string())?;
            let mut sizes = Vec::new();
            image_sizes(&v, &mut sizes);
            // Unreadable sizes bill the flat rate.
            sizes
                .iter()
                .map(|s| match *s {
                    // Gemini bills a flat price per image (its media resolution), not pixels.
                    Some((w, h)) if self.s.family != 2 => pixel_tokens(w, h),
                    _ => FRAME_TOKEN_ESTIMATE,
                })
                .sum::<u64>()
                + FRAME_TOKEN_ESTIMATE * (count.saturating_sub(sizes.len() as u64))
        } else {
            flat
        };
        Ok(((all - flat) as f64 * self.s.ratio).ceil() as u64 + billed + OVERHEAD)
    }

    fn append(&mut self, message: Value) -> Result<String, String> {
        self.now += 1_000;
        let before = self.session.len();
        let id = self
            .session
            .append_message(message, self.now)
            .map_err(|e| format!("append: {e}"))?;
        ensure!(
            self.session.len() == before + 1,
            "an append did not add one entry"
        );
        Ok(id)
    }

    fn assistant(&self, v: &Value) -> Result<ctxfold::session::message::AssistantMessage, String> {
        match AgentMessage::parse(&v.to_string(), None) {
            Ok(AgentMessage::Assistant(a)) => Ok(a),
            other => Err(format!("not an assistant message: {other:?}")),
        }
    }

    /// The text of the live context (summaries included) and the archive's source text.
    fn carried_text(&self) -> Result<String, String> {
        let ctx =
            build_context(&self.session, &BuildOptions::default()).map_err(|e| e.to_string())?;
        let mut text = ctx.to_json(&self.session);
        if let Some(i) = ctx.compaction {
            let entry: Value =
                serde_json::from_str(&self.session.entry_json(i)).map_err(|e| e.to_string())?;
            if let Some(a) = get_preserved_archive(entry.get("preserveData")) {
                let src = archive_source_text(&a).unwrap_or_default();
                if std::env::var("SIM_DEBUG").is_ok() {
                    eprintln!("archive source {} chars, markers {:?}, frames {}, truncated {}, total {}, text {:?}, head {:?}, tail {:?}, userTurns {:?}", src.len(), markers_in(&src), a.frames.len(), a.truncated_chars, a.total_chars, a.text.as_ref().map(|t| t.len()), a.text_head.as_ref().map(|t| t.len()), a.text_tail.as_ref().map(|t| t.len()), a.user_turns.as_deref().map(markers_in));
                }
                text.push_str(&src);
                // User turns the archive's frame budget dropped, kept verbatim.
                text.push_str(a.user_turns.as_deref().unwrap_or_default());
            }
        }
        Ok(text)
    }

    /// Every user message is in a session file, and in what the live context carries.
    fn check_nothing_lost(&self, after: &str) -> Result<(), String> {
        let carried = self.carried_text()?;
        let mut files = self.session.to_jsonl();
        for e in &self.earlier {
            files.push_str(&e.to_jsonl());
        }
        for m in &self.markers {
            if self.archive_dropped.contains(m) {
                continue;
            }
            ensure!(
                files.contains(m.as_str()),
                "user message {m} is gone from the session files"
            );
            ensure!(
                carried.contains(m.as_str()),
                "user message {m} is gone from the context after {after} (fed to the summarizer: {})",
                self.fed.contains(m)
            );
        }
        Ok(())
    }

    /// The fake summarizer: every marker of its input, or a failure, or an empty document.
    fn summarize(&mut self, prompt: &str) -> Result<String, ()> {
        if self.r.chance(self.s.summarizer_failures) {
            return Err(());
        }
        if self.r.chance(self.s.empty_documents) {
            return Ok(String::new());
        }
        let found = markers_in(prompt);
        if std::env::var("SIM_DEBUG").is_ok() {
            eprintln!(
                "--- summarizer input ({} chars, markers {:?}):\n{}",
                prompt.len(),
                found,
                &prompt[..prompt.len().min(3000)]
            );
        }
        for m in &found {
            if !self.fed.contains(m) {
                self.fed.push(m.clone());
            }
        }
        Ok(format!(
            "## Goal\nKeep fixing tests.\n## Users said\n{}\n",
            found.join(" ")
        ))
    }

    /// Answers every request of `plan`; `Err` when the summarizer failed.
    fn answer_all(&mut self, plan: &mut CompactionPlan) -> Result<bool, String> {
        let mut rounds = 0;
        while !plan.is_complete() {
            rounds += 1;
            ensure!(rounds < 10_000, "a plan never completes");
            let pending: Vec<(String, String)> = plan
                .pending()
                .iter()
                .map(|r| (r.id.clone(), format!("{}\n{}", r.system_prompt, r.prompt)))
                .collect();
            ensure!(
                !pending.is_empty(),
                "an incomplete plan with no pending request"
            );
            for (id, prompt) in pending {
                // A failed call is a transient error (a 503): retried as the core's policy
                // says, as the JS shell does (`retryStep`).
                let policy = RetryPolicy::default();
                let mut attempt = 0;
                let max_tokens = plan
                    .pending()
                    .iter()
                    .find(|r| r.id == id)
                    .map_or(0, |r| r.max_tokens);
                let text = loop {
                    // An unusable answer (an empty document) fails as the shell fails it.
                    let failure = match self.summarize(&prompt) {
                        Ok(text) => match answer_problem(&text, max_tokens) {
                            None => break Some(text),
                            Some(problem) => classify(&problem, None),
                        },
                        Err(()) => classify("503 Service Unavailable", Some(503)),
                    };
                    match policy.next(attempt, failure, None, false) {
                        RetryStep::Wait(ms) => {
                            self.now += ms as i64;
                            attempt += 1;
                        }
                        _ => break None,
                    }
                };
                let Some(text) = text else {
                    return Ok(false);
                };
                if plan.answer(&self.session, &id, &text).is_err() {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn plan(&self, strategy: Strategy) -> ctxfold::Result<CompactionPlan> {
        let (settings, options) = self.plan_inputs(strategy);
        plan_compaction(&self.session, &settings, options)
    }

    /// The dead-end rescue's archive rebuild ([`WalkStep::RebuildArchive`]).
    fn plan_rebuild(&self) -> ctxfold::Result<CompactionPlan> {
        let (settings, options) = self.plan_inputs(Strategy::Snapcompact);
        plan_archive_rebuild(&self.session, &settings, options)
    }

    fn plan_inputs(&self, strategy: Strategy) -> (CompactionSettings, PlanOptions) {
        let settings = CompactionSettings {
            strategy,
            remote_enabled: false,
            ..self.settings.clone()
        };
        let options = PlanOptions {
            context_window: self.model.context_window,
            model: Target {
                id: Some(self.model.id.clone()),
                api: Some(self.api.to_string()),
            },
            ..PlanOptions::default()
        };
        (settings, options)
    }

    /// Commits a planned method: `Ok(core tokens after)` or the error's code.
    fn commit(
        &mut self,
        m: CompactionMethod,
        plan: &CompactionPlan,
        walk: &Walk,
        limit_tokens: Option<u64>,
    ) -> Result<Result<u64, ctxfold::Error>, String> {
        match m {
            CompactionMethod::Snapcompact => {
                // What the archive takes in: the carried text and the messages it prints.
                let mut input = self.carried_text()?;
                let p = &plan.preparation;
                for &i in p.messages_to_summarize.iter().chain(&p.turn_prefix) {
                    input.push_str(&self.session.message_json(i).unwrap_or_default());
                }
                let fed = markers_in(&input);
                let mut options = snapcompact_options(plan).map_err(|e| e.to_string())?;
                let fit = walk.archive_fit(plan.preparation.tokens_recent);
                options.non_message_tokens = fit.non_message_tokens;
                options.text_ratio = fit.text_ratio;
                options.image_ratio = fit.image_ratio;
                options.limit_tokens = limit_tokens;
                let result =
                    commit_snapcompact(&mut self.session, plan, &options, &self.fonts, self.now);
                let Ok(c) = result else {
                    return Ok(result.map(|c| c.tokens_after));
                };
                let carried = self.carried_text()?;
                for m in &fed {
                    if !self.fed.contains(m) {
                        self.fed.push(m.clone());
                    }
                    if !carried.contains(m.as_str()) && !self.archive_dropped.contains(m) {
                        self.archive_dropped.push(m.clone());
                        self.report.archive_dropped_user_turns += 1;
                    }
                }
                Ok(Ok(c.tokens_after))
            }
            CompactionMethod::Handoff => {
                self.sessions_made += 1;
                let id = format!("sim-{}", self.sessions_made);
                let ids = Box::new(SequentialIds::starting_at(self.sessions_made * 1_000_000));
                match commit_handoff(&self.session, plan, id, ids, self.now) {
                    Ok(next) => {
                        let old = std::mem::replace(&mut self.session, next);
                        self.earlier.push(old);
                        self.report.handoffs += 1;
                        Ok(Ok(estimate(&self.session)?))
                    }
                    Err(e) => Ok(Err(e)),
                }
            }
            _ => Ok(commit_compaction(&mut self.session, plan, self.now).map(|c| c.tokens_after)),
        }
    }

    /// Runs the compaction a decision asks for through the core's walk (`triggers::Walk`):
    /// the simulator only plans, shakes, summarizes and commits as each step says.
    fn compact(&mut self, req: &CompactRequest) -> Result<CompactionOutcome, String> {
        self.fed.clear();
        self.summarizer_gave_up = false;
        let before = self.provider_tokens()?;
        let entries_before = self.session.len();
        let mut input = WalkInput::new(req.reason, self.settings.clone(), self.model.clone());
        input.methods = Some(req.methods.clone());
        input.exclude_snapcompact = req.exclude_snapcompact;
        input.mid_turn = self.session.turn_under_way();
        input.remote_blocked = self.cm.remote_blocked(self.now);
        input.live_tokens = before;
        input.estimated_tokens = estimate(&self.session)?;
        input.overhead_tokens = OVERHEAD;
        // An uncalibrated host knows neither rate (its measure of the live context is the
        // provider's all the same: the request it just sent, or the overflow's count).
        input.provider_ratio = (!self.s.uncalibrated).then_some(self.s.ratio);
        let mut walk = Walk::new(input);
        let mut plan: Option<CompactionPlan> = None;
        let mut changed = false;
        let out_of_turn = |e: ctxfold::triggers::OutOfTurn| e.to_string();
        for _ in 0..200 {
            match walk.poll() {
                WalkStep::Plan { strategy, .. } => match self.plan(strategy) {
                    Ok(p) => {
                        plan = Some(p);
                        walk.handle_planned().map_err(out_of_turn)?;
                    }
                    Err(e) => walk
                        .handle_plan_failed(e.code().as_str(), &e.to_string())
                        .map_err(out_of_turn)?,
                },
                WalkStep::Shake { preset } => {
                    let preset = match preset {
                        ShakePreset::Default => Preset::Default,
                        ShakePreset::Aggressive => Preset::Aggressive,
                        ShakePreset::Rescue => Preset::Rescue,
                    };
                    // The automatic preset scales to the model's threshold in a small window.
                    let mut cfg = ShakeConfig::preset(preset);
                    if preset == Preset::Default {
                        if let Some(t) = walk.threshold_tokens() {
                            (cfg.protect_tokens, cfg.min_savings) =
                                ctxfold::tokens::shake_budgets(t);
                        }
                    }
                    let shake = plan_shake(&self.session, &cfg).map_err(|e| e.to_string())?;
                    let r = apply_shake(&mut self.session, &shake, None, self.now)
                        .map_err(|e| e.to_string())?;
                    let dropped = (r.tool_results_dropped + r.blocks_dropped) as u64;
                    changed |= dropped > 0;
                    let live = self.provider_tokens()?;
                    walk.handle_shaken(dropped, r.tokens_freed, Some(live))
                        .map_err(out_of_turn)?;
                }
                WalkStep::DropImages => {
                    let r = drop_images(&mut self.session, None).map_err(|e| e.to_string())?;
                    changed |= r.removed > 0;
                    let live = self.provider_tokens()?;
                    walk.handle_images_dropped(r.removed, Some(live))
                        .map_err(out_of_turn)?;
                }
                WalkStep::RebuildArchive { limit_tokens } => {
                    let rebuilt = match self.plan_rebuild() {
                        Ok(p) => {
                            self.commit(CompactionMethod::Snapcompact, &p, &walk, limit_tokens)?
                        }
                        Err(e) => Err(e),
                    };
                    match rebuilt {
                        Ok(tokens_after) => {
                            changed = true;
                            self.report.compactions += 1;
                            self.report.archive_rebuilds += 1;
                            self.latest_compaction_at = Some(self.now);
                            let live = self.provider_tokens()?;
                            walk.handle_rebuilt(tokens_after, Some(live))
                                .map_err(out_of_turn)?;
                        }
                        Err(_) => walk.handle_rebuild_failed().map_err(out_of_turn)?,
                    }
                }
                WalkStep::Summarize { route, .. } => match route {
                    // No provider-native lane in the simulation.
                    Route::Native => walk.handle_native_unavailable().map_err(out_of_turn)?,
                    Route::Endpoint if self.s.dead_remote => walk
                        .handle_method_failed("E_SUMMARIZER", "502 Bad Gateway", Some(502))
                        .map_err(out_of_turn)?,
                    _ => {
                        let p = plan.as_mut().ok_or("a summary without a plan")?;
                        if self.answer_all(p)? {
                            walk.handle_summarized().map_err(out_of_turn)?;
                        } else {
                            walk.handle_method_failed(
                                "E_SUMMARIZER",
                                "the summarizer failed",
                                None,
                            )
                            .map_err(out_of_turn)?;
                        }
                    }
                },
                WalkStep::Commit { method, .. } => {
                    let p = plan.take().ok_or("a commit without a plan")?;
                    match self.commit(method, &p, &walk, None)? {
                        Ok(tokens_after) => {
                            changed = true;
                            self.report.compactions += 1;
                            self.latest_compaction_at = Some(self.now);
                            let live = self.provider_tokens()?;
                            walk.handle_committed(tokens_after, Some(live))
                                .map_err(out_of_turn)?;
                        }
                        Err(e) => walk
                            .handle_method_failed(e.code().as_str(), &e.to_string(), None)
                            .map_err(out_of_turn)?,
                    }
                }
                WalkStep::Warn { .. } => {}
                // The simulated settings never turn automatic compaction off.
                WalkStep::Skipped { why } => return Err(format!("the walk was skipped: {why:?}")),
                WalkStep::Done { method } => {
                    if walk.remote_failed() {
                        self.cm.note_remote_failure(self.now);
                    }
                    let after = self.provider_tokens()?;
                    ensure!(
                        after < before || method == Some(CompactionMethod::Handoff),
                        "{method:?} for {:?} did not lower the request: {before} -> {after}",
                        req.reason
                    );
                    if method != Some(CompactionMethod::Handoff) {
                        ensure!(
                            self.session.len() >= entries_before,
                            "a compaction removed entries"
                        );
                    }
                    self.check_nothing_lost(&format!("{method:?} ({:?})", req.reason))?;
                    return Ok(CompactionOutcome::Compacted {
                        tokens_after: estimate(&self.session)?,
                        stored_tokens: Some(after),
                    });
                }
                WalkStep::Failed { code, message, .. } => {
                    if walk.remote_failed() {
                        self.cm.note_remote_failure(self.now);
                    }
                    // A shake that ran stays applied; the context may still have changed.
                    let _ = changed;
                    self.summarizer_gave_up = code == "E_SUMMARIZER";
                    return Ok(match code.as_str() {
                        "E_NOTHING_TO_COMPACT" | "E_ALREADY_COMPACTED" => {
                            CompactionOutcome::NothingToCompact
                        }
                        _ => CompactionOutcome::Failed { error: message },
                    });
                }
            }
        }
        Err("the compaction walk did not end in 200 steps".into())
    }

    /// Applies a decision with the background step the machine decided with it (as the
    /// Maintainer's `#applyWithBackground`): a drop or refresh discards the run, a commit lets
    /// the decision's compaction take the armed plan, a start begins a run afterwards.
    fn apply_with_background(
        &mut self,
        d: Decision,
        failed: Option<&str>,
    ) -> Result<Option<ContinuationKind>, String> {
        let step = self.cm.speculation_step();
        if matches!(step, SpeculationStep::Drop | SpeculationStep::Refresh) {
            self.bg = None;
        }
        self.bg_commit = step == SpeculationStep::Commit;
        let out = self.apply(d, failed);
        self.bg_commit = false;
        let out = out?;
        if matches!(step, SpeculationStep::Start | SpeculationStep::Refresh) {
            self.start_background();
        }
        Ok(out)
    }

    /// Plans a background compaction for the machine's threshold request.
    fn start_background(&mut self) {
        self.bg = None;
        let Some(req) = self.cm.speculation_request(&self.model) else {
            self.cm.speculation_ended();
            return;
        };
        let keep = self.cm.keep_budgets(&req, None);
        let (mut settings, mut options) = self.plan_inputs(Strategy::ContextFull);
        if let Some(&(_, k)) = keep.iter().find(|(n, _)| *n == "keepRecentTokens") {
            settings.keep_recent_tokens = k;
        }
        options.speculative = true;
        options.method = Some("soft".into());
        // The commit's size check in provider tokens, as the Maintainer passes it.
        options.provider_ratio = if self.s.uncalibrated {
            1.0
        } else {
            self.s.ratio
        };
        options.non_message_tokens = OVERHEAD;
        match plan_compaction(&self.session, &settings, options) {
            Ok(plan) => {
                let p = &plan.preparation;
                let read = p
                    .messages_to_summarize
                    .iter()
                    .chain(&p.turn_prefix)
                    .map(|&i| (i, self.session.entry_json(i).into_owned()))
                    .collect();
                self.report.background_started += 1;
                self.bg = Some(Background {
                    plan,
                    due: self
                        .s
                        .background_latency
                        .map(|l| self.report.requests + u64::from(l)),
                    ready: false,
                    read,
                });
            }
            Err(_) => self.cm.speculation_ended(),
        }
    }

    /// Before a request: the background answers that are due arrive (summarized with the
    /// session as it is then; a prefix that changed makes them stale).
    fn background_answers(&mut self) -> Result<(), String> {
        let due = match &self.bg {
            Some(b) if !b.ready => b.due.is_some_and(|d| self.report.requests >= d),
            _ => false,
        };
        if !due {
            return Ok(());
        }
        let Some(mut b) = self.bg.take() else {
            return Ok(());
        };
        let fed = std::mem::take(&mut self.fed);
        let answered = self.answer_all(&mut b.plan)?;
        self.fed = fed;
        if answered {
            b.ready = true;
            self.bg = Some(b);
            self.cm.speculation_ready();
        } else {
            self.report.background_stale += 1;
            self.cm.speculation_ended();
        }
        Ok(())
    }

    /// The host rewrites a line of the first half of the branch (what a prune does).
    fn edit_prefix(&mut self) -> Result<(), String> {
        let Some(leaf) = self.session.leaf() else {
            return Ok(());
        };
        let path = self.session.path_to(leaf);
        let i = path[self.r.below((path.len() / 2).max(1) as u64) as usize];
        let n = self.now;
        self.session
            .set_entry_field(i, &[], "simEdited", &json!(n))
            .map_err(|e| e.to_string())
    }

    /// A compaction the machine said to take from the armed background plan: its commit, or
    /// `None` (no armed plan, or stale: the compaction runs inline). Checks that no stale
    /// summary is ever committed.
    fn commit_background(
        &mut self,
        req: &CompactRequest,
    ) -> Result<Option<CompactionOutcome>, String> {
        let Some(b) = self.bg.take() else {
            return Ok(None);
        };
        if !self.bg_commit || !b.ready {
            return Ok(None);
        }
        let before = self.provider_tokens()?;
        match commit_compaction(&mut self.session, &b.plan, self.now) {
            Err(e) => {
                ensure!(
                    matches!(e, ctxfold::Error::StalePlan { .. }),
                    "a background commit failed with {e}"
                );
                self.report.background_stale += 1;
                Ok(None)
            }
            Ok(c) => {
                // No stale summary, ever: every entry it covers is on the branch before the
                // kept entries, with the text the summarizer read.
                let path = self.session.path_to(c.index);
                let kept = path
                    .iter()
                    .position(|&i| i == b.plan.preparation.first_kept)
                    .ok_or("a background commit's first kept entry is off its branch")?;
                for (i, text) in &b.read {
                    ensure!(
                        path[..kept].contains(i),
                        "a background summary covers entry {i}, not before the kept ones"
                    );
                    ensure!(
                        self.session.entry_json(*i) == text.as_str(),
                        "a background summary was committed over a rewritten entry {i}"
                    );
                }
                // Nothing compacted the branch between the plan's leaf and this commit.
                let leaf = path
                    .iter()
                    .position(|&i| i == b.plan.preparation.leaf)
                    .ok_or("a background commit's plan leaf is off its branch")?;
                ensure!(
                    !path[leaf + 1..path.len() - 1].iter().any(|&i| matches!(
                        self.session.entries()[i].kind(),
                        ctxfold::session::EntryKind::Compaction
                    )),
                    "a background summary was committed after a later compaction"
                );
                self.report.background_committed += 1;
                self.report.compactions += 1;
                self.latest_compaction_at = Some(self.now);
                let after = self.provider_tokens()?;
                ensure!(
                    after < before,
                    "a background commit for {:?} did not lower the request: {before} -> {after}",
                    req.reason
                );
                self.check_nothing_lost(&format!("a background commit ({:?})", req.reason))?;
                Ok(Some(CompactionOutcome::Compacted {
                    tokens_after: c.tokens_after,
                    stored_tokens: Some(after),
                }))
            }
        }
    }

    /// Applies a decision; returns its continuation kind.
    fn apply(
        &mut self,
        mut d: Decision,
        failed: Option<&str>,
    ) -> Result<Option<ContinuationKind>, String> {
        for _ in 0..8 {
            if std::env::var("SIM_DEBUG").is_ok() {
                eprintln!(
                    "decision: compact {:?} drop {:?} continuation {:?} block {} notices {:?} warning {:?}",
                    d.compact.as_ref().map(|c| (c.reason, &c.methods, c.context_tokens)),
                    d.drop_failed_turn,
                    d.continuation.as_ref().map(|c| c.kind),
                    d.block_auto_continue,
                    d.notices.iter().map(|n| &n.text).collect::<Vec<_>>(),
                    d.compaction_warning
                );
            }
            if d.drop_failed_turn.is_some() {
                // A handoff may have replaced the session the failed turn is in.
                if let Some(i) = failed.and_then(|id| self.session.index_of(id)) {
                    if self.session.leaf() == Some(i) {
                        match self.session.entries()[i].parent_id() {
                            Some(p) => {
                                let p = p.to_string();
                                self.session.branch(&p).map_err(|e| e.to_string())?;
                            }
                            None => self.session.reset_leaf(),
                        }
                    }
                }
            }
            if d.promote.is_some() {
                d = self.cm.after_promotion(false);
                continue;
            }
            if let Some(req) = d.compact.clone() {
                let outcome = match self.commit_background(&req)? {
                    Some(outcome) => outcome,
                    None => self.compact(&req)?,
                };
                if std::env::var("SIM_DEBUG").is_ok() {
                    eprintln!(
                        "compaction outcome: {outcome:?}, live now {}",
                        self.provider_tokens()?
                    );
                }
                d = self
                    .cm
                    .after_compaction(&CompactionReport::new(req, outcome));
                ensure!(
                    d.compact.is_none(),
                    "a compaction's answer asked for another"
                );
                continue;
            }
            return Ok(d.continuation.map(|c| c.kind));
        }
        Err("a decision chain did not settle".into())
    }

    fn user_turn(&mut self, turn: usize) -> Result<(), String> {
        let size = match self.r.below(10) {
            0 => self.s.window / 6,
            1..=3 => self.s.window / 40,
            _ => self.s.window / 200 + 20,
        };
        let text = format!("{} {}", marker(turn), filler(&mut self.r, size));
        self.append(json!({"role": "user", "content": text, "timestamp": self.now}))?;
        self.markers.push(marker(turn));
        let mut over_in_a_row = 0;
        let mut tools = 0;
        for _ in 0..60 {
            if self.s.background && self.r.chance(self.s.prefix_edits) {
                self.edit_prefix()?;
            }
            self.background_answers()?;
            // Before each request, as the Maintainer's `beforeRequest`: the core picks the
            // check (the pre-prompt one, the mid-run one after a tool-use reply, none when
            // nothing was appended since the last call).
            let stored = Some(self.provider_tokens()?);
            let state = self.state();
            let d = self.cm.before_request(StepInput {
                stored_tokens: stored,
                latest_compaction_at: self.latest_compaction_at,
                state: Some(&state),
                ..StepInput::new(&self.model, self.now)
            });
            if let Some(d) = d {
                self.apply_with_background(d, None)?;
            }
            let state = self.state();
            self.cm.settle(&state);
            let tokens = self.provider_tokens()?;
            if std::env::var("SIM_DEBUG").is_ok() {
                eprintln!("request: {tokens} provider tokens (turn {turn})");
            }
            self.report.requests += 1;
            self.report.largest_request = self.report.largest_request.max(tokens);
            let over = tokens > self.s.window;
            let forced = !over && self.r.chance(self.s.forced_overflows);
            let base = json!({
                "role": "assistant", "provider": self.model.provider, "model": self.model.id,
                "timestamp": self.now + 1_000,
            });
            let mut v = base;
            let stop;
            if over || forced {
                self.report.overflows += 1;
                over_in_a_row += 1;
                ensure!(
                    !over || over_in_a_row < 2,
                    "two overflows in a row at turn {turn}: {tokens} > {}",
                    self.s.window
                );
                v["content"] = json!([]);
                v["stopReason"] = "error".into();
                v["errorMessage"] = format!(
                    "prompt is too long: {} tokens > {} maximum",
                    tokens.max(self.s.window + 1),
                    self.s.window
                )
                .into();
                v["usage"] = json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0});
                stop = "error";
            } else {
                over_in_a_row = 0;
                let out = self.r.range(50, 400);
                let tool = tools < 4 && self.r.chance(0.5);
                let length = !tool && self.r.chance(self.s.length_stops);
                let mut content = vec![
                    json!({"type": "text", "text": format!("Working on it. {}", filler(&mut self.r, out))}),
                ];
                if tool {
                    content.push(json!({"type": "toolCall", "id": format!("call{}", self.report.requests),
                                        "name": "read", "arguments": {"path": format!("src/f{}.rs", self.r.below(50))}}));
                }
                stop = if tool {
                    "toolUse"
                } else if length {
                    "length"
                } else {
                    "stop"
                };
                v["content"] = Value::Array(content);
                v["stopReason"] = stop.into();
                v["usage"] = json!({"input": tokens, "output": out, "cacheRead": 0, "cacheWrite": 0, "totalTokens": tokens + out});
            }
            let a = self.assistant(&v)?;
            let call = a
                .tool_call_ids()
                .next()
                .map(str::to_string)
                .unwrap_or_default();
            let id = self.append(v)?;
            // After the reply, as the Maintainer's `afterResponse`: a tool-use reply waits for
            // the next request's check; any other is checked now (the simulator does not
            // prune: no tokens freed). The call ends with the state settled, as the
            // Maintainer's does: what the host appends afterwards (the tool result) is what
            // the next request's check sees as new.
            let next = match self.cm.on_reply(a) {
                ReplyStep::Deferred => None,
                ReplyStep::Check => {
                    let d = self.cm.after_reply(StepInput {
                        stored_tokens: Some(self.provider_tokens()?),
                        latest_compaction_at: self.latest_compaction_at,
                        ..StepInput::new(&self.model, self.now)
                    });
                    self.apply_with_background(d, Some(id.as_str()))?
                }
            };
            let state = self.state();
            self.cm.settle(&state);
            if stop == "toolUse" {
                tools += 1;
                let size = self.r.range(50, (self.s.window / 30).max(60));
                let body = filler(&mut self.r, size);
                self.append(
                    json!({"role": "toolResult", "toolCallId": call, "toolName": "read",
                                   "content": [{"type": "text", "text": body}], "isError": false,
                                   "timestamp": self.now}),
                )?;
            }
            match next {
                Some(ContinuationKind::Retry) => continue,
                Some(ContinuationKind::AutoContinue | ContinuationKind::QueuedMessages) => {
                    self.append(json!({"role": "user", "content": "Continue.", "attribution": "agent", "timestamp": self.now}))?;
                    continue;
                }
                None if stop == "toolUse" => continue,
                None => {
                    if stop == "error" && over && self.summarizer_gave_up {
                        self.report.turns_lost_to_the_summarizer += 1;
                        return Ok(());
                    }
                    ensure!(
                        stop != "error" || !over,
                        "user turn {turn} ended while its request was over the window ({tokens} > {})",
                        self.s.window
                    );
                    return Ok(());
                }
            }
        }
        Err(format!("user turn {turn} did not end in 60 requests"))
    }
}

/// Runs a scenario; `Err` names the first broken invariant.
pub fn run(s: &Scenario) -> Result<Report, String> {
    let mut settings = json!({});
    if s.dead_remote {
        settings["remoteEndpoint"] = "https://summarizer.invalid/compact".into();
    }
    if let Some(m) = &s.methods {
        settings["methodOrder"] = json!(m);
    }
    let settings = CompactionSettings::from_json(&settings).map_err(|e| e.to_string())?;
    let (provider, id, api) = match s.family {
        0 => ("anthropic", "claude-sonnet-4-5", "anthropic-messages"),
        1 => ("openai", "gpt-5", "openai-responses"),
        _ => ("google", "gemini-2.5-pro", "google-generative-ai"),
    };
    let model = ModelInfo {
        provider: provider.into(),
        id: id.into(),
        context_window: s.window,
        max_output_tokens: 8_000,
        accepts_images: s.vision,
    };
    let now = 1_750_000_000_000;
    let session = Session::create(
        NewSession {
            id: "sim-0".into(),
            cwd: "/repo".into(),
            now,
            parent_session: None,
        },
        Box::new(SequentialIds::new()),
    );
    let mut host = Host {
        r: Rng::derived(&[s.seed, 0x51A]),
        s: s.clone(),
        session,
        earlier: Vec::new(),
        cm: ContextManager::new(settings.clone()),
        settings,
        model,
        now,
        latest_compaction_at: None,
        markers: Vec::new(),
        fed: Vec::new(),
        archive_dropped: Vec::new(),
        summarizer_gave_up: false,
        report: Report::default(),
        sessions_made: 0,
        fonts: FallbackFonts::new(),
        api,
        bg: None,
        bg_commit: false,
    };
    host.cm.set_speculation_host(s.background);
    for turn in 0..s.user_turns {
        host.user_turn(turn)
            .map_err(|e| format!("seed {} ({s:?}): {e}", s.seed))?;
    }
    host.check_nothing_lost("the run")
        .map_err(|e| format!("seed {} ({s:?}): {e}", s.seed))?;
    Ok(host.report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JS scripted agent's scenarios are the simulator's (issue 36, "Tests"). After a
    /// change to [`Scenario::random`], regenerate the fixture:
    /// `CTXFOLD_BLESS=1 cargo test -p ctxfold-testkit --features invariants js_fixture_is_current`.
    #[test]
    fn js_fixture_is_current() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/js/fixtures/agent-scenarios.json"
        );
        let want = js_fixture(&JS_FIXTURE_SEEDS);
        if std::env::var_os("CTXFOLD_BLESS").is_some() {
            std::fs::write(path, &want).unwrap();
            return;
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            have == want,
            "{path} is stale (regenerate it: CTXFOLD_BLESS=1 cargo test -p ctxfold-testkit \
             --features invariants js_fixture_is_current); the generator draws:\n{want}"
        );
    }

    #[test]
    fn scenario_json_names_every_field() {
        let s = Scenario::random(u64::MAX);
        let v = s.to_json();
        assert_eq!(v["seed"], u64::MAX.to_string());
        assert_eq!(v["window"], s.window);
        assert_eq!(v["userTurns"], s.user_turns);
        assert_eq!(v.as_object().map(|o| o.len()), Some(12));
    }
}
