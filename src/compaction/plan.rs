//! The sans-IO compaction cycle: `plan_compaction` prepares (spec: compaction §4) and
//! writes the summarizer requests (§5); the host answers them (through an LLM, a remote
//! endpoint or anything else); `commit_compaction` turns the answers into a `compaction`
//! entry (§4.6, §5.7, §8.4). Nothing changes in the session before the commit, and a plan
//! that no longer fits the session is refused.
//!
//! Requests come in rounds: the history summary (one request per window when the
//! conversation is larger than one call can carry, each window folding into the summary of
//! the previous one) and the turn-prefix summary go first; the short summary needs the
//! merged summary, so it follows. [`CompactionPlan::pending`] lists what can be sent now.

use crate::archive::{archive_source_text, get_preserved_archive, plain_text};
use crate::compaction::prepare::{prepare_compaction, Preparation, PrepareOptions};
use crate::error::{Error, Result};
use crate::prompts::{self, PromptKind};
use crate::session::Session;
use crate::settings::{CompactionSettings, Strategy};
use crate::summary::fileops::FileLists;
use crate::summary::request::{
    conversation_text_with, each_view, summary_reasoning_effort, with_views, HistoryFeed,
    HistoryMsg, Purpose, SummaryRequest, Window,
};
use crate::summary::serialize::{
    clamp_window, history_max_tokens, input_budget, merge_split_turn, overflow_retry_budget,
    pi_summary_max_tokens, pi_summary_prompt, plan_windows, serialize_views,
    short_summary_max_tokens, summary_prompt, summary_text_in, turn_prefix_max_tokens,
    view_size_piece, view_sizes, Dialect, NO_PRIOR_HISTORY,
};
use crate::summary::view::ViewCache;
use crate::tokens::ByteEstimate;
use rustc_hash::FxHashSet;
use serde_json::{Map, Value};

/// Inputs of a plan beyond the settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanOptions {
    /// Where and for whom to compact.
    pub prepare: PrepareOptions,
    /// `/compact <instructions>`: appended as "Additional focus".
    pub custom_instructions: Option<String>,
    /// Lines for `<additional-context>` (the `session.compacting` hook, memory backends).
    pub extra_context: Vec<String>,
    /// Replaces the base summary prompt (the `session.compacting` hook).
    pub prompt_override: Option<String>,
    /// Merged into the entry's `preserveData` (the `session.compacting` hook).
    pub preserve_data: Option<Map<String, Value>>,
    /// Context window of the summarizer model (0 = unknown: 200 000 is assumed).
    pub context_window: u64,
    /// The summarizer model's output limit (`maxTokens`; 0 = unknown): a pi-family path's
    /// history and turn-prefix requests ask for it, as pi does ([`pi_summary_max_tokens`]).
    pub output_limit: u64,
    /// The entry's `method` (default: `soft` for an LLM summary, `handoff` for a handoff).
    pub method: Option<String>,
    /// The model that reads the compacted context (`{id, api}`): a snapcompact commit takes
    /// its shape, thinking rule and image budget from it (spec: snapcompact §9.7; issue 19
    /// point 3: plan/commit and `compact()` resolve the archive the same way).
    pub model: crate::render::shape::resolve::Target,
    /// A plan prepared in the background (spec: compaction §13, `asyncEnabled`): its answers
    /// and its commit accept a branch that grew past the plan's leaf, as long as the prefix it
    /// summarizes is untouched ([`CompactionPlan::fit`]); the commit keeps what was appended
    /// after the summary. Only a `context-full` plan can be one.
    pub speculative: bool,
    /// A background plan's commit weighs the context it leaves in the host's tokens against
    /// the recovery band: the provider's tokens per token of the core's estimate (0: 1, the
    /// estimate) and the request's tokens beside the messages (system prompt, tools).
    pub provider_ratio: f64,
    pub non_message_tokens: u64,
}

/// How a plan fits the session now (spec: compaction §13, the commit check of a prepared
/// result).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Nothing was appended and the leaf did not move since the plan was made.
    Same,
    /// The branch grew: the plan's leaf is on the path to `leaf`, the current leaf, with no
    /// compaction or reset after it. A commit appends under `leaf`.
    Grown { leaf: usize },
}

#[derive(Debug, Clone, PartialEq)]
enum Slot {
    /// Not needed.
    Skip,
    /// Waiting to be requested.
    Queued,
    /// Requested, no answer yet.
    Pending(SummaryRequest),
    Done(String),
}

/// A compaction waiting for its summaries.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionPlan {
    pub preparation: Preparation,
    pub strategy: Strategy,
    pub file_lists: FileLists,
    /// The anchor index of the dropped region (issue 38), harvested on first use
    /// ([`CompactionPlan::anchors`]): only a commit writes it, so a plan's first answer
    /// (its requests) does not wait for it (issue 42).
    pub(crate) anchors: std::cell::OnceCell<crate::compaction::anchored::PlanAnchors>,
    pub(super) settings: CompactionSettings,
    pub(super) options: PlanOptions,
    /// Entry count and leaf at plan time: the commit refuses a session that moved on.
    fingerprint: (usize, Option<String>),
    /// The session's edit generation at plan time: a line stamped later was rewritten since.
    generation: u64,
    /// History: read a window at a time from the session.
    feed: HistoryFeed,
    /// The transcript form of every request ([`summary_dialect`]).
    dialect: Dialect,
    /// `toolCallId`s of the useless results anywhere in the history (spec: compaction §5.1):
    /// a message's window size leaves their calls out, as sizing the whole history does.
    useless: FxHashSet<Box<str>>,
    /// The provider messages read so far (`null` for those of summarized windows; most read
    /// in place from the session, issue 42) and the windows planned over them.
    history_messages: Vec<HistoryMsg>,
    history_sizes: Vec<u64>,
    /// Each message's own transcript when a window can be joined from it
    /// ([`view_size_piece`]), written while sizing it: the window's request then reads no
    /// message again.
    history_pieces: Vec<Option<String>>,
    windows: Vec<std::ops::Range<usize>>,
    next_window: usize,
    history: Slot,
    /// The summary carried from window to window.
    carried: Option<String>,
    /// The previous summary this summary builds on ([`previous_summary_for_llm`]).
    previous_summary: Option<String>,
    turn_prefix: Slot,
    short: Slot,
    handoff: Slot,
    history_max_tokens: u64,
    /// The reasoning-effort hint of every request ([`summary_reasoning_effort`]).
    pub reasoning_effort: Option<&'static str>,
}

/// The history read so far with the size of each message (spec: compaction §5.5: the token
/// count of its own serialization, calls of useless results left out).
struct SizedHistory<'p> {
    feed: &'p mut HistoryFeed,
    messages: &'p mut Vec<HistoryMsg>,
    sizes: &'p mut Vec<u64>,
    pieces: &'p mut Vec<Option<String>>,
    useless: FxHashSet<&'p str>,
    dialect: Dialect,
    /// The buffer each message's transcript is written into before its piece is copied out.
    scratch: String,
}

impl SizedHistory<'_> {
    /// Reads and sizes the next message(s); false at the end of the history.
    /// The views `cache` holds are read from it (the plan's, shared with its anchor harvest).
    fn read(&mut self, session: &Session, cache: &ViewCache<'_>) -> Result<bool> {
        let first = self.messages.len();
        if !self.feed.read_in_place(session, self.messages, cache)? {
            return Ok(false);
        }
        each_view(session, &self.messages[first..], cache, &mut |m| {
            let (size, piece) = view_size_piece(
                m,
                &self.useless,
                self.dialect,
                &ByteEstimate,
                &mut self.scratch,
            );
            self.sizes.push(size);
            self.pieces.push(piece);
        });
        Ok(true)
    }
}

/// Prepares a compaction and writes its first requests. Errors: `E_ALREADY_COMPACTED`,
/// `E_NOTHING_TO_COMPACT`, `E_SETTINGS` (strategy `off` or one this engine does not plan).
pub fn plan_compaction(
    session: &Session,
    settings: &CompactionSettings,
    options: PlanOptions,
) -> Result<CompactionPlan> {
    let strategy = settings.strategy;
    if !matches!(
        strategy,
        Strategy::ContextFull | Strategy::Handoff | Strategy::Snapcompact
    ) {
        return Err(Error::Settings {
            field: "strategy".into(),
            reason: format!(
                "strategy \"{}\" has no plan; use \"context-full\", \"handoff\" or \
                 \"snapcompact\"",
                strategy.as_str()
            ),
        });
    }
    if options.speculative && strategy != Strategy::ContextFull {
        return Err(Error::Settings {
            field: "strategy".into(),
            reason: "only a \"context-full\" plan can be prepared in the background".into(),
        });
    }
    // The keep budget of the reading model's window (small windows: tokens::window_budgets).
    let settings = &*settings.for_window(options.context_window);
    let prep = prepare_compaction(session, settings, &options.prepare)?;
    plan_prepared(session, settings, options, prep)
}

/// The plan of a preparation made elsewhere (the archive rebuild of the dead-end rescue,
/// `snapcompact_rescue`); `settings` already resolved for the window.
pub(super) fn plan_prepared(
    session: &Session,
    settings: &CompactionSettings,
    options: PlanOptions,
    prep: Preparation,
) -> Result<CompactionPlan> {
    // Each message is read once for the plan's readers (issue 42): the history feed's check
    // and sizing, the turn prefix. snapcompact writes no request, a handoff's one reads each
    // message once: they read without the cache.
    let views = match settings.strategy {
        Strategy::Snapcompact | Strategy::Handoff => ViewCache::default(),
        _ => plan_views(session, &prep),
    };
    plan_prepared_with(session, settings, options, prep, &views)
}

/// The views a plan of `prep` shares between its readers ([`ViewCache`]): the history's
/// and the turn prefix's messages (the kept region is read when a commit harvests the
/// anchors, or when the short summary is asked for).
fn plan_views<'s>(session: &'s Session, prep: &Preparation) -> ViewCache<'s> {
    ViewCache::read(session, &[&prep.messages_to_summarize, &prep.turn_prefix])
}

/// Checks the plan made with each message's view shared by its readers (issue 42) against
/// the plan made with each reader reading every message itself: the same plan (windows,
/// sizes, requests). The number of views shared, or the difference.
pub fn verify_shared_views(
    session: &Session,
    settings: &CompactionSettings,
    options: PlanOptions,
) -> std::result::Result<usize, String> {
    let shared = plan_compaction(session, settings, options.clone()).map_err(|e| e.to_string())?;
    let settings = &*settings.for_window(options.context_window);
    let prep =
        prepare_compaction(session, settings, &options.prepare).map_err(|e| e.to_string())?;
    let views = plan_views(session, &prep).len();
    let own = plan_prepared_with(session, settings, options, prep, &ViewCache::default())
        .map_err(|e| e.to_string())?;
    if shared != own {
        return Err(format!(
            "the plans differ: requests {:?} against {:?}",
            shared.pending(),
            own.pending(),
        ));
    }
    Ok(views)
}

/// [`plan_prepared`] with the views `views` holds.
fn plan_prepared_with(
    session: &Session,
    settings: &CompactionSettings,
    options: PlanOptions,
    prep: Preparation,
    views: &ViewCache<'_>,
) -> Result<CompactionPlan> {
    let strategy = settings.strategy;
    let file_lists = prep.file_ops.file_lists();

    let reserve = settings.reserve_or_default();
    let history_max = history_max_tokens(reserve);
    // snapcompact asks no model anything (spec: snapcompact §9.2): no short-summary prompt.
    // A pi-family path's requests read pi's input, serialized as pi does (issue 40 item 4).
    let dialect = match crate::context::projection::is_pi_family(session, &prep.path) {
        true => Dialect::Pi,
        false => summary_dialect(&options),
    };
    let mut plan = CompactionPlan {
        strategy,
        file_lists,
        anchors: std::cell::OnceCell::new(),
        settings: settings.clone(),
        fingerprint: (session.len(), session.leaf_id().map(str::to_string)),
        generation: session.generation(),
        history: Slot::Queued,
        feed: HistoryFeed::for_dialect(
            session,
            &prep.path,
            prep.messages_to_summarize.clone(),
            dialect,
        )?,
        dialect,
        // An error flagged useless stays (spec: compaction §5.1; issue 36 item 7).
        useless: prep
            .messages_to_summarize
            .iter()
            .filter(|&&i| session.result_facts(i).is_some_and(|f| !f.is_error))
            .filter_map(|&i| session.useless_tool_call(i))
            .collect(),
        history_messages: Vec::new(),
        history_sizes: Vec::new(),
        history_pieces: Vec::new(),
        windows: Vec::new(),
        next_window: 0,
        carried: None,
        previous_summary: None,
        turn_prefix: if prep.is_split_turn && !prep.turn_prefix.is_empty() {
            Slot::Queued
        } else {
            Slot::Skip
        },
        short: Slot::Queued,
        handoff: Slot::Skip,
        history_max_tokens: history_max,
        reasoning_effort: summary_reasoning_effort(
            session,
            prep.path.last().copied(),
            dialect == Dialect::Pi,
        ),
        preparation: prep,
        options,
    };
    if strategy == Strategy::Snapcompact {
        // The archive carries the previous one itself (spec: snapcompact §9.2 step 2).
        plan.history = Slot::Skip;
        plan.turn_prefix = Slot::Skip;
        plan.short = Slot::Skip;
        return Ok(plan);
    }
    plan.previous_summary = previous_summary_for_llm(&plan.preparation);
    plan.carried = plan.previous_summary.clone();
    if strategy == Strategy::Handoff {
        plan.history = Slot::Skip;
        plan.turn_prefix = Slot::Skip;
        plan.short = Slot::Skip;
        let mut all = plan.preparation.messages_to_summarize.clone();
        all.extend(&plan.preparation.turn_prefix);
        all.extend(&plan.preparation.recent);
        let conversation =
            conversation_text_with(session, &plan.preparation.path, &all, plan.dialect, views)?;
        let prompt = plan.prompt(
            &conversation,
            plan.previous_summary.as_deref(),
            &plan.options.extra_context,
            &prompts::handoff_prompt(plan.options.custom_instructions.as_deref()),
            None,
        );
        plan.handoff = Slot::Pending(SummaryRequest {
            id: "handoff".into(),
            purpose: Purpose::Handoff,
            system_prompt: prompts::SUMMARIZATION_SYSTEM.trim_end().to_string(),
            prompt,
            // A handoff document uses the provider's default; the history budget is a
            // sensible cap for hosts that need one.
            max_tokens: history_max,
            window: None,
        });
        return Ok(plan);
    }
    if plan.dialect == Dialect::Pi {
        // pi 1.6's `compact` asks for the history and the turn prefix only: no short summary.
        plan.short = Slot::Skip;
    }
    plan.queue_history_window(session, views)?;
    plan.queue_turn_prefix(session, views)?;
    plan.queue_short(session)?;
    Ok(plan)
}

/// The transcript form of a plan's requests (spec: compaction §5.1): the dialect the
/// reference picks for the model (`preferredDialect(model.id)`, from the model class of
/// [`crate::compaction::snapcompact::model_class`]), or the plain transcript when the plan
/// names no model. The summarizer is the plan's model (`PlanOptions::model`), as in the
/// reference, where one model reads the context and writes its summary.
pub fn summary_dialect(options: &PlanOptions) -> Dialect {
    match options.model.id.as_deref() {
        Some(id) => Dialect::for_model_class(crate::compaction::snapcompact::model_class(id)),
        None => Dialect::Plain,
    }
}

/// The previous summary an LLM summary (or a handoff) builds on (spec: compaction §5.7 step 7,
/// snapcompact §9.1 `archiveSourceText`, §9.7): the previous compaction's summary, and when
/// that compaction was a snapcompact one, its archive's plain source text after it — the
/// reading guide alone says nothing of the history, and the commit drops the archive
/// (`preserve_data`), so without it everything the archive held would be lost (issue 36 item
/// 2). The user turns the archive kept from a dropped middle go with it.
pub fn previous_summary_for_llm(prep: &Preparation) -> Option<String> {
    let archive = get_preserved_archive(prep.previous_preserve_data.as_ref());
    let archive_text = archive.as_ref().and_then(|a| {
        let source = archive_source_text(a).unwrap_or_default();
        let turns = a.user_turns.as_deref().map(plain_text).unwrap_or_default();
        (!source.is_empty() || !turns.is_empty())
            .then(|| prompts::snapcompact_archive_context(&source, &turns))
    });
    match (prep.previous_summary.as_deref(), archive_text) {
        (Some(summary), Some(archive)) if !summary.is_empty() => {
            Some(format!("{summary}\n\n{archive}"))
        }
        (_, Some(archive)) => Some(archive),
        (summary, None) => summary.map(str::to_string),
    }
}

impl CompactionPlan {
    fn system_prompt() -> String {
        prompts::SUMMARIZATION_SYSTEM.trim_end().to_string()
    }

    /// The output budget of a history or turn-prefix request: `budget`, or on a pi-family
    /// path with the model's output limit given, that limit fitted to the window as pi 1.6
    /// does (summaries sized by the model's output limit).
    fn output_budget(&self, prompt: &str, budget: u64) -> u64 {
        match self.options.output_limit {
            limit if limit > 0 && self.dialect == Dialect::Pi => pi_summary_max_tokens(
                limit,
                self.options.context_window,
                &Self::system_prompt(),
                prompt,
            ),
            _ => budget,
        }
    }

    /// True when the plan was made for a pi-family path: its requests and its entry are pi's.
    pub fn is_pi(&self) -> bool {
        self.dialect == Dialect::Pi
    }

    /// [`summary_prompt`], or on a pi-family path [`pi_summary_prompt`] (no tag escaped).
    fn prompt(
        &self,
        serialized: &str,
        previous_summary: Option<&str>,
        extra_context: &[String],
        base_prompt: &str,
        custom_instructions: Option<&str>,
    ) -> String {
        let write = match self.dialect {
            Dialect::Pi => pi_summary_prompt,
            _ => summary_prompt,
        };
        write(
            serialized,
            previous_summary,
            extra_context,
            base_prompt,
            custom_instructions,
        )
    }

    fn base_prompt(&self, kind: PromptKind) -> String {
        match (&self.options.prompt_override, kind) {
            (Some(p), PromptKind::Summary | PromptKind::UpdateSummary) => p.clone(),
            _ => kind.text().into_owned(),
        }
    }

    /// Plans the window after the last one (spec: compaction §5.5, greedy packing: a new
    /// window starts when the current one is non-empty and the next message would exceed
    /// the budget), reading the history as far as it needs. Packing from a window's start
    /// does not depend on what follows, so this gives the windows an up-front
    /// [`plan_windows`] over the whole history gives. False when the history is used up.
    fn plan_next_window(&mut self, session: &Session, views: &ViewCache<'_>) -> Result<bool> {
        let budget = input_budget(self.options.context_window, self.history_max_tokens).budget;
        let start = self.windows.last().map_or(0, |w| w.end);
        let mut history = self.sized_history();
        let mut end = start;
        let mut total: u64 = 0;
        loop {
            if end == history.messages.len() && !history.read(session, views)? {
                break;
            }
            let size = history.sizes[end];
            if end > start && total.saturating_add(size) > budget {
                break;
            }
            total = total.saturating_add(size);
            end += 1;
        }
        if end == start {
            return Ok(false);
        }
        self.windows.push(start..end);
        Ok(true)
    }

    /// True when no message follows the window `index` (reads one message ahead).
    fn is_last_window(
        &mut self,
        session: &Session,
        index: usize,
        views: &ViewCache<'_>,
    ) -> Result<bool> {
        let end = self.windows[index].end;
        if index + 1 < self.windows.len() || end < self.history_messages.len() {
            return Ok(false);
        }
        Ok(!self.sized_history().read(session, views)?)
    }

    fn sized_history(&mut self) -> SizedHistory<'_> {
        SizedHistory {
            feed: &mut self.feed,
            messages: &mut self.history_messages,
            sizes: &mut self.history_sizes,
            pieces: &mut self.history_pieces,
            useless: self.useless.iter().map(|s| &**s).collect(),
            dialect: self.dialect,
            scratch: String::new(),
        }
    }

    /// Writes the request for the next history window; the history is skipped when there is
    /// nothing to summarize.
    /// The views `views` holds are read from it.
    fn queue_history_window(&mut self, session: &Session, views: &ViewCache<'_>) -> Result<()> {
        if self.history != Slot::Queued {
            return Ok(());
        }
        if self.next_window == self.windows.len() && !self.plan_next_window(session, views)? {
            if self.next_window == 0 {
                self.history = Slot::Skip;
            }
            return Ok(());
        }
        let last = self.is_last_window(session, self.next_window, views)?;
        let range = self.windows[self.next_window].clone();
        let serialized = self.window_text(session, range);
        let budget = input_budget(self.options.context_window, self.history_max_tokens).budget;
        let tokens = crate::tokens::TokenCounter::count(&ByteEstimate, &serialized);
        let serialized = clamp_window(&serialized, tokens, budget);
        let kind = PromptKind::history(self.carried.is_some());
        let prompt = self.prompt(
            &serialized,
            self.carried.as_deref(),
            &self.options.extra_context,
            &self.base_prompt(kind),
            self.options.custom_instructions.as_deref(),
        );
        let max_tokens = self.output_budget(&prompt, self.history_max_tokens);
        self.history = Slot::Pending(SummaryRequest {
            id: format!("history-{}", self.next_window + 1),
            purpose: Purpose::History,
            system_prompt: Self::system_prompt(),
            prompt,
            max_tokens,
            window: Some(Window {
                index: self.next_window + 1,
                last,
            }),
        });
        Ok(())
    }

    /// The transcript of the history messages `range` (escaped): joined from their pieces
    /// when each has one ([`view_size_piece`]), else written from their views.
    fn window_text(&self, session: &Session, range: std::ops::Range<usize>) -> String {
        let pieces = &self.history_pieces[range.clone()];
        if pieces.iter().all(Option::is_some) {
            let parts: Vec<&str> = pieces
                .iter()
                .flatten()
                .filter(|p| !p.is_empty())
                .map(String::as_str)
                .collect();
            return parts.join("\n\n");
        }
        self.window_text_read(session, range)
    }

    /// [`CompactionPlan::window_text`] written from the messages' views.
    fn window_text_read(&self, session: &Session, range: std::ops::Range<usize>) -> String {
        with_views(session, &self.history_messages[range], |views| {
            summary_text_in(serialize_views(views, self.dialect), self.dialect)
        })
    }

    /// Checks the pending history window's transcript joined from its pieces against the one
    /// written from its messages (issue 42); the number of messages joined.
    pub fn verify_joined_window(&self, session: &Session) -> std::result::Result<usize, String> {
        let Some(range) = self.windows.get(self.next_window).cloned() else {
            return Ok(0);
        };
        let joined = self.history_pieces[range.clone()]
            .iter()
            .filter(|p| p.is_some())
            .count();
        let (got, want) = (
            self.window_text(session, range.clone()),
            self.window_text_read(session, range),
        );
        if got != want {
            return Err(format!(
                "window {}: the joined transcript differs {}",
                self.next_window,
                crate::summary::request::first_difference(&got, &want)
            ));
        }
        Ok(joined)
    }

    fn queue_turn_prefix(&mut self, session: &Session, views: &ViewCache<'_>) -> Result<()> {
        if self.turn_prefix != Slot::Queued {
            return Ok(());
        }
        let prep = &self.preparation;
        let serialized =
            conversation_text_with(session, &prep.path, &prep.turn_prefix, self.dialect, views)?;
        // pi 1.6's `compact` asks for the turn prefix with the custom instructions as a focus
        // too (the spec is silent there); ctxfold's own request has none.
        let focus = match self.dialect {
            Dialect::Pi => self.options.custom_instructions.as_deref(),
            _ => None,
        };
        let prompt = self.prompt(
            &serialized,
            None,
            &self.options.extra_context,
            &PromptKind::TurnPrefix.text(),
            focus,
        );
        let budget = turn_prefix_max_tokens(self.settings.reserve_or_default());
        let max_tokens = self.output_budget(&prompt, budget);
        self.turn_prefix = Slot::Pending(SummaryRequest {
            id: "turn-prefix".into(),
            purpose: Purpose::TurnPrefix,
            system_prompt: Self::system_prompt(),
            prompt,
            max_tokens,
            window: None,
        });
        Ok(())
    }

    /// The short summary needs the merged summary: it is written once history and turn
    /// prefix are done, with the kept region's transcript (read then: issue 42).
    fn queue_short(&mut self, session: &Session) -> Result<()> {
        if self.short != Slot::Queued {
            return Ok(());
        }
        let Some(merged) = self.merged_summary() else {
            return Ok(());
        };
        let prep = &self.preparation;
        let recent = conversation_text_with(
            session,
            &prep.path,
            &prep.recent,
            self.dialect,
            &ViewCache::default(),
        )?;
        let prompt = summary_prompt(
            &recent,
            Some(&merged),
            &self.options.extra_context,
            &PromptKind::ShortSummary.text(),
            None,
        );
        self.short = Slot::Pending(SummaryRequest {
            id: "short-summary".into(),
            purpose: Purpose::ShortSummary,
            system_prompt: Self::system_prompt(),
            prompt,
            max_tokens: short_summary_max_tokens(self.settings.reserve_or_default()),
            window: None,
        });
        Ok(())
    }

    /// The summary of spec: compaction §5.7 step 2, once its parts are in: a split turn
    /// merges history and prefix (§4.6); otherwise the history summary, else the previous
    /// summary reused verbatim, else "No prior history.".
    /// The short summary, when one was asked for and answered with text.
    pub(super) fn short_summary(&self) -> Option<String> {
        match &self.short {
            Slot::Done(t) if !t.is_empty() => Some(t.clone()),
            _ => None,
        }
    }

    pub(super) fn merged_summary(&self) -> Option<String> {
        let history = match &self.history {
            Slot::Done(text) => Some(text.clone()),
            Slot::Skip => None,
            _ => return None,
        };
        let history_text = history
            .or_else(|| self.previous_summary.clone())
            .unwrap_or_else(|| NO_PRIOR_HISTORY.to_string());
        match &self.turn_prefix {
            Slot::Done(prefix) => Some(merge_split_turn(&history_text, prefix)),
            Slot::Skip => Some(history_text),
            _ => None,
        }
    }

    /// The requests that can be sent now (they do not depend on each other).
    pub fn pending(&self) -> Vec<&SummaryRequest> {
        [&self.history, &self.turn_prefix, &self.short, &self.handoff]
            .into_iter()
            .filter_map(|s| match s {
                Slot::Pending(r) => Some(r),
                _ => None,
            })
            .collect()
    }

    /// True when every request is answered.
    pub fn is_complete(&self) -> bool {
        [&self.history, &self.turn_prefix, &self.short, &self.handoff]
            .iter()
            .all(|s| matches!(s, Slot::Skip | Slot::Done(_)))
    }

    fn slot_of(&mut self, id: &str) -> Option<&mut Slot> {
        [
            &mut self.history,
            &mut self.turn_prefix,
            &mut self.short,
            &mut self.handoff,
        ]
        .into_iter()
        .find(|s| matches!(s, Slot::Pending(r) if r.id == id))
    }

    /// Records the answer to a pending request and writes what follows from it (the next
    /// history window, then the short summary). `E_INVALID_ARGUMENT` for an id that is not
    /// pending; `E_SUMMARIZER` for an empty answer or one far over the request's `maxTokens`
    /// ([`crate::summary::retry::answer_problem`]; the plan is unchanged and the request stays pending).
    /// `session` is the session the plan was made for (`E_STALE_PLAN` otherwise): the next
    /// window is read from it.
    pub fn answer(&mut self, session: &Session, id: &str, text: &str) -> Result<()> {
        self.check_fresh(session)?;
        let text = text.trim().to_string();
        let is_history = matches!(&self.history, Slot::Pending(r) if r.id == id);
        let slot = self.slot_of(id).ok_or_else(|| Error::InvalidArgument {
            what: format!("no pending summary request \"{id}\""),
        })?;
        if let Slot::Pending(r) = &*slot {
            if let Some(reason) = crate::summary::retry::answer_problem(&text, r.max_tokens) {
                return Err(Error::Summarizer { reason });
            }
        }
        *slot = Slot::Done(text.clone());
        if is_history {
            let more = self.next_window + 1 < self.windows.len()
                || !self.is_last_window(session, self.next_window, &ViewCache::default())?;
            // A summarized window is never read again (a retry re-plans the pending one
            // only): its messages go, so a long history is held a window at a time.
            let done = self.windows[self.next_window].clone();
            self.history_messages[done.clone()].fill(HistoryMsg::Value(Value::Null));
            self.history_pieces[done].fill(None);
            self.next_window += 1;
            if more {
                self.carried = Some(text);
                self.history = Slot::Queued;
                self.queue_history_window(session, &ViewCache::default())?;
            }
        }
        self.queue_short(session)
    }

    /// The summarizer said a history window overflowed its context (spec: compaction §5.5):
    /// the window is planned again at half the budget (`tokens_sent` is what the request
    /// carried, when known). `E_SUMMARIZER` when halving would go below the floor, or for a
    /// request that is not a pending history window.
    pub fn retry_smaller(
        &mut self,
        session: &Session,
        id: &str,
        tokens_sent: Option<u64>,
    ) -> Result<()> {
        self.check_fresh(session)?;
        let Slot::Pending(req) = &self.history else {
            return Err(Error::Summarizer {
                reason: format!("\"{id}\" overflowed and is not a history window"),
            });
        };
        if req.id != id {
            return Err(Error::Summarizer {
                reason: format!("\"{id}\" overflowed and is not a history window"),
            });
        }
        let budget = input_budget(self.options.context_window, self.history_max_tokens);
        let sent = tokens_sent
            .unwrap_or_else(|| crate::tokens::TokenCounter::count(&ByteEstimate, &req.prompt));
        let Some(halved) = overflow_retry_budget(budget.budget, sent, budget.min_input) else {
            return Err(Error::Summarizer {
                reason: "the summarizer's context overflowed even at the smallest window".into(),
            });
        };
        let range = self.windows[self.next_window].clone();
        let dialect = self.dialect;
        let sizes = with_views(session, &self.history_messages[range.clone()], |views| {
            view_sizes(views, dialect, &ByteEstimate)
        });
        let sub: Vec<std::ops::Range<usize>> = plan_windows(&sizes, halved)
            .into_iter()
            .map(|r| r.start + range.start..r.end + range.start)
            .collect();
        self.windows
            .splice(self.next_window..=self.next_window, sub);
        self.history = Slot::Queued;
        self.queue_history_window(session, &ViewCache::default())
    }

    /// Request ids still waiting for an answer (pending or not yet written).
    pub fn missing(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (name, s) in [
            ("history", &self.history),
            ("turn-prefix", &self.turn_prefix),
            ("short-summary", &self.short),
            ("handoff", &self.handoff),
        ] {
            match s {
                Slot::Pending(r) => out.push(r.id.clone()),
                Slot::Queued => out.push(name.to_string()),
                _ => {}
            }
        }
        out
    }

    pub(super) fn check_fresh(&self, session: &Session) -> Result<()> {
        if self.options.speculative {
            return self.fit(session).map(|_| ());
        }
        let now = (session.len(), session.leaf_id().map(str::to_string));
        if now != self.fingerprint {
            return Err(Error::StalePlan {
                reason: "entries were appended or the leaf moved since the plan was made".into(),
            });
        }
        Ok(())
    }

    /// True for a plan prepared in the background ([`PlanOptions::speculative`]).
    pub fn is_speculative(&self) -> bool {
        self.options.speculative
    }

    /// How a background plan fits the session now (spec: compaction §13): `E_STALE_PLAN` with
    /// the reason when an entry the summary covers was rewritten since the plan was made (a
    /// prune, a shake), when the plan's leaf is no longer on the current branch (the leaf
    /// moved elsewhere), or when a compaction or reset follows it on the branch. The size
    /// check of a grown branch is the commit's ([`crate::compaction::commit`]).
    pub fn fit(&self, session: &Session) -> Result<Fit> {
        let stale = |reason: &str| Error::StalePlan {
            reason: reason.into(),
        };
        let prep = &self.preparation;
        let covered = prep
            .messages_to_summarize
            .iter()
            .chain(&prep.turn_prefix)
            .chain(&prep.previous_compaction);
        for &i in covered {
            if i >= session.len() || session.line_stamp(i) > self.generation {
                return Err(stale(
                    "an entry the summary covers was rewritten (pruned, shaken or edited) since the plan was made",
                ));
            }
        }
        let now = (session.len(), session.leaf_id().map(str::to_string));
        if now == self.fingerprint {
            return Ok(Fit::Same);
        }
        let Some(leaf) = session.leaf() else {
            return Err(stale("the session has no leaf any more"));
        };
        let path = session.path_shared(leaf);
        let Some(at) = path.iter().position(|&i| i == prep.leaf) else {
            return Err(stale("the plan's leaf is no longer on the current branch"));
        };
        let after = &path[at + 1..];
        if after.iter().any(|&i| {
            matches!(
                session.entries()[i].kind(),
                crate::session::EntryKind::Compaction | crate::session::EntryKind::ResetBoundary
            )
        }) {
            return Err(stale(
                "a compaction or reset follows the plan's leaf on the branch",
            ));
        }
        if after.is_empty() {
            return Ok(Fit::Same);
        }
        Ok(Fit::Grown { leaf })
    }

    /// The handoff document, once answered.
    pub fn handoff_document(&self) -> Option<&str> {
        match &self.handoff {
            Slot::Done(t) => Some(t),
            _ => None,
        }
    }
}
