//! Compaction from JavaScript: the sans-IO plan/commit cycle as a class, and the retry
//! decisions of the async shell (`src/js/runner/compact.ts`, which awaits the summarizers and the remote
//! endpoint; spec: compaction §5.8, §8.3). The commit is the only step that writes.

use super::interop::compact::{extension_result, plan_options, settings_from};
use super::interop::options::archive_options;
use super::interop::{field_error, now_ms, options, to_js};
use super::session::WasmSession;
use super::snapcompact::fonts;
use crate::compaction::commit::{
    commit_compaction, commit_extension_compaction, commit_handoff, commit_snapcompact,
    snapcompact_frame_jobs, snapcompact_options, Committed,
};
use crate::compaction::plan::{plan_compaction, CompactionPlan};
use crate::compaction::prepare::Preparation;
use crate::compaction::snapcompact::{render_job, FrameJob};
use crate::session::{RandomIds, Session};
use crate::settings::Strategy;
use crate::summary::request::SummaryRequest;
use crate::summary::retry::{classify, parse_retry_after, RetryPolicy, RetryStep};
use crate::support::json::fields::Fields;
use crate::support::json::js::Object;
use wasm_bindgen::prelude::*;

// ----- options ---------------------------------------------------------------------------

// ----- JSON views --------------------------------------------------------------------------

/// Appends a summarizer request as the JS shell reads it.
pub(super) fn write_request(out: &mut String, r: &SummaryRequest, effort: Option<&str>) {
    let mut o = Object::open(out);
    o.str("id", &r.id);
    o.str("purpose", r.purpose.as_str());
    o.str("systemPrompt", &r.system_prompt);
    o.str("prompt", &r.prompt);
    o.num("maxTokens", r.max_tokens as f64);
    if let Some(effort) = effort {
        o.str("reasoningEffort", effort);
    }
    if let Some(w) = r.window {
        let mut m = Object::open(o.key("window"));
        m.num("index", w.index as f64);
        m.bool("last", w.last);
        m.close();
    }
    o.close();
}

/// `[…]` of the requests, each with the plan's reasoning-effort hint `effort`.
pub(super) fn requests_json<'r>(
    requests: impl IntoIterator<Item = &'r SummaryRequest>,
    effort: Option<&str>,
) -> String {
    let mut out = String::from("[");
    for (i, r) in requests.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_request(&mut out, r, effort);
    }
    out.push(']');
    out
}

/// The preparation as the hooks and the JS API see it (spec: compaction §4.5), as JSON text.
/// Written directly: region lists can hold tens of thousands of ids.
fn preparation_json(session: &Session, p: &Preparation) -> String {
    let lists = p.file_ops.file_lists();
    let id_of = |i: usize| session.entries()[i].id();
    let mut out = String::new();
    let mut o = Object::open(&mut out);
    o.str("firstKeptEntryId", &p.first_kept_entry_id);
    o.bool("isSplitTurn", p.is_split_turn);
    o.opt_str("turnStartEntryId", p.turn_start.map(id_of));
    o.num("tokensBefore", p.tokens_before as f64);
    o.num("keepRecentTokens", p.keep_recent_tokens as f64);
    let mut e = Object::open(o.key("estimatedTokens"));
    e.num("messagesToSummarize", p.tokens_to_summarize as f64);
    e.num("turnPrefixMessages", p.tokens_turn_prefix as f64);
    e.num("recentMessages", p.tokens_recent as f64);
    e.close();
    o.opt_str("previousSummary", p.previous_summary.as_deref());
    o.opt_str("previousCompactionId", p.previous_compaction.map(id_of));
    let mut f = Object::open(o.key("fileOps"));
    f.strs("read", &mut p.file_ops.read.iter().map(String::as_str));
    f.strs(
        "written",
        &mut p.file_ops.written.iter().map(String::as_str),
    );
    f.strs("edited", &mut p.file_ops.edited.iter().map(String::as_str));
    f.close();
    o.strs(
        "readFiles",
        &mut lists.read_files.iter().map(String::as_str),
    );
    o.strs(
        "modifiedFiles",
        &mut lists.modified_files.iter().map(String::as_str),
    );
    o.strs(
        "messagesToSummarize",
        &mut p.messages_to_summarize.iter().map(|&i| id_of(i)),
    );
    o.strs(
        "turnPrefixMessages",
        &mut p.turn_prefix.iter().map(|&i| id_of(i)),
    );
    o.strs("recentMessages", &mut p.recent.iter().map(|&i| id_of(i)));
    o.close();
    out
}

pub(super) fn committed_json(session: &Session, c: &Committed, from_extension: bool) -> String {
    committed_json_with(session, c, from_extension, None)
}

/// [`committed_json`], with the prompt tokens the provider reported for the request the
/// compaction replaced (`providerTokensBefore`) when known.
pub(super) fn committed_json_with(
    session: &Session,
    c: &Committed,
    from_extension: bool,
    provider_tokens_before: Option<u64>,
) -> String {
    // The entry itself (megabytes with an archive's frames) is read by the JS shell when the
    // host asks for it (`src/js/core/raw.ts` `committed`).
    let timestamp = session
        .body::<crate::session::EntryBase>(c.index)
        .ok()
        .and_then(|b| b.timestamp);
    let mut out = String::new();
    let mut o = Object::open(&mut out);
    o.str("entryId", &c.id);
    o.num("tokensAfter", c.tokens_after as f64);
    o.bool("fromExtension", from_extension);
    o.opt_str("timestamp", timestamp.as_deref());
    if let Some(p) = provider_tokens_before {
        o.num("providerTokensBefore", p as f64);
    }
    o.close();
    out
}

// ----- the plan class ----------------------------------------------------------------------

/// A compaction plan: requests to answer, then `commitCompaction`.
#[wasm_bindgen]
pub struct WasmCompactionPlan {
    pub(super) plan: CompactionPlan,
    /// Written on first use: for a long history it lists tens of thousands of entry ids.
    preparation: Option<String>,
}

#[wasm_bindgen]
impl WasmCompactionPlan {
    /// The requests that can be sent now, as JSON.
    #[wasm_bindgen(js_name = pendingJson)]
    pub fn pending_json(&self) -> String {
        requests_json(self.plan.pending(), self.plan.reasoning_effort)
    }

    /// The preparation (cut, regions, file operations), as JSON; `session` is the plan's
    /// own (entries are only ever appended, so its indices still name the same entries).
    #[wasm_bindgen(js_name = preparationJson)]
    pub fn preparation_json(&mut self, session: &WasmSession) -> String {
        self.preparation
            .get_or_insert_with(|| preparation_json(session.s(), &self.plan.preparation))
            .clone()
    }

    /// Records the answer to a pending request; the next history window is read from
    /// `session` (the plan's own, unchanged: `E_STALE_PLAN` otherwise).
    pub fn answer(&mut self, session: &WasmSession, id: &str, text: &str) -> Result<(), JsValue> {
        self.plan.answer(session.s(), id, text).map_err(to_js)
    }

    /// A history window overflowed the summarizer's context: plan it at half the budget.
    #[wasm_bindgen(js_name = retrySmaller)]
    pub fn retry_smaller(
        &mut self,
        session: &WasmSession,
        id: &str,
        tokens_sent: Option<f64>,
    ) -> Result<(), JsValue> {
        self.plan
            .retry_smaller(session.s(), id, tokens_sent.map(|t| t.max(0.0) as u64))
            .map_err(to_js)
    }

    /// True when every request is answered.
    #[wasm_bindgen(getter, js_name = isComplete)]
    pub fn is_complete(&self) -> bool {
        self.plan.is_complete()
    }

    /// `"context-full"` or `"handoff"`.
    #[wasm_bindgen(getter)]
    pub fn strategy(&self) -> String {
        self.plan.strategy.as_str().to_string()
    }
}

fn make_plan(
    session: &Session,
    settings_json: Option<String>,
    options_json: Option<String>,
) -> Result<WasmCompactionPlan, JsValue> {
    let settings = settings_from(settings_json)?;
    let o = options(options_json, "plan options")?;
    // `rebuildArchive`: the dead-end rescue's rebuild of the latest snapcompact archive
    // (spec: compaction §8.3; `compaction::snapcompact_rescue`).
    let plan = if o.get("rebuildArchive").and_then(|v| v.as_bool()) == Some(true) {
        crate::compaction::snapcompact_rescue::plan_archive_rebuild(
            session,
            &settings,
            plan_options(session, &o)?,
        )
    } else {
        plan_compaction(session, &settings, plan_options(session, &o)?)
    }
    .map_err(to_js)?;
    Ok(WasmCompactionPlan {
        plan,
        preparation: None,
    })
}

#[wasm_bindgen]
impl WasmSession {
    /// Prepares a compaction without writing requests: the cut, the regions, the file
    /// operations (spec: compaction §4.5), as JSON.
    #[wasm_bindgen(js_name = prepareCompactionJson)]
    pub fn prepare_compaction_json(
        &self,
        settings_json: Option<String>,
        options_json: Option<String>,
    ) -> Result<String, JsValue> {
        let session = self.s();
        let settings = settings_from(settings_json)?;
        let o = options(options_json, "prepare options")?;
        let prep = crate::compaction::prepare::prepare_compaction(
            session,
            &settings,
            &plan_options(session, &o)?.prepare,
        )
        .map_err(to_js)?;
        Ok(preparation_json(session, &prep))
    }

    /// Stamps the progress guard's warning on a compaction entry (spec: compaction §8.5).
    #[wasm_bindgen(js_name = stampCompactionWarning)]
    pub fn stamp_compaction_warning(&mut self, id: &str, warning: &str) -> Result<(), JsValue> {
        crate::compaction::warning::stamp_warning(self.s_mut(), id, warning).map_err(to_js)
    }

    /// Plans a compaction (sans-IO): prepares and writes the first summarizer requests.
    #[wasm_bindgen(js_name = planCompaction)]
    pub fn plan_compaction(
        &self,
        settings_json: Option<String>,
        options_json: Option<String>,
    ) -> Result<WasmCompactionPlan, JsValue> {
        make_plan(self.s(), settings_json, options_json)
    }

    /// Commits a complete plan: appends the compaction entry. Returns `{entryId,
    /// tokensAfter, compactionEntry, fromExtension}` as JSON.
    /// A `snapcompact` plan builds its archive here (spec: snapcompact §9.2) with
    /// `snapcompact_json` (`{model, shape, frameSize, maxFrames, minHeight, compression}`) and
    /// the registered fallback fonts.
    #[wasm_bindgen(js_name = commitCompaction)]
    pub fn commit_compaction(
        &mut self,
        plan: &WasmCompactionPlan,
        now: f64,
        snapcompact_json: Option<String>,
    ) -> Result<String, JsValue> {
        let now = now_ms(now)?;
        let c = if plan.plan.strategy == Strategy::Snapcompact {
            let v = options(snapcompact_json, "snapcompact options")?;
            let base = snapcompact_options(&plan.plan).map_err(to_js)?;
            let opts = archive_options(Some(&v), base).map_err(to_js)?;
            commit_snapcompact(self.s_mut(), &plan.plan, &opts, &fonts(), now)
        } else {
            commit_compaction(self.s_mut(), &plan.plan, now)
        }
        .map_err(to_js)?;
        Ok(committed_json(self.s(), &c, false))
    }

    /// The frames a commit of a snapcompact `plan` with `snapcompact_json` draws, to draw
    /// one at a time before the commit (spec: snapcompact §9.2; issue 41: progress). The
    /// commit then takes them and writes the same bytes as without.
    #[wasm_bindgen(js_name = snapcompactFrames)]
    pub fn snapcompact_frames(
        &self,
        plan: &WasmCompactionPlan,
        snapcompact_json: Option<String>,
    ) -> Result<WasmSnapcompactFrames, JsValue> {
        let v = options(snapcompact_json, "snapcompact options")?;
        let base = snapcompact_options(&plan.plan).map_err(to_js)?;
        let opts = archive_options(Some(&v), base).map_err(to_js)?;
        let jobs = snapcompact_frame_jobs(self.s(), &plan.plan, &opts, &fonts()).map_err(to_js)?;
        Ok(WasmSnapcompactFrames { jobs })
    }

    /// Commits a compaction supplied by a hook for a plan's preparation.
    #[wasm_bindgen(js_name = commitExtensionCompaction)]
    pub fn commit_extension_compaction(
        &mut self,
        plan: &WasmCompactionPlan,
        result_json: &str,
        now: f64,
    ) -> Result<String, JsValue> {
        let now = now_ms(now)?;
        let result = extension_result(result_json)?;
        let s = self.s_mut();
        let c =
            commit_extension_compaction(s, &plan.plan.preparation, result, now).map_err(to_js)?;
        Ok(committed_json(s, &c, true))
    }

    /// Undoes a compaction: the leaf returns to the compaction's parent; returns the new leaf
    /// id (`undefined` when the compaction was a root). `E_UNDO_REFUSED` unless the leaf is
    /// that compaction entry.
    #[wasm_bindgen(js_name = undoCompaction)]
    pub fn undo_compaction(&mut self, entry_id: &str) -> Result<Option<String>, JsValue> {
        crate::compaction::undo::undo_compaction(self.s_mut(), entry_id).map_err(to_js)
    }

    /// Commits a handoff plan: a new session holding the handoff document.
    #[wasm_bindgen(js_name = commitHandoff)]
    pub fn commit_handoff(
        &self,
        plan: &WasmCompactionPlan,
        new_session_id: Option<String>,
        now: f64,
    ) -> Result<WasmSession, JsValue> {
        let now = now_ms(now)?;
        let seed = (js_sys::Math::random() * 9.0e15) as u64;
        let id = new_session_id.unwrap_or_else(|| {
            let mut r = RandomIds::new(seed ^ 0xA5A5);
            use crate::session::IdSource;
            format!("{}-{}", r.draw(), r.draw())
        });
        let next = commit_handoff(
            self.s(),
            &plan.plan,
            id,
            Box::new(RandomIds::new(seed)),
            now,
        )
        .map_err(to_js)?;
        Ok(WasmSession::wrap(next))
    }
}

// ----- retries (the async shell in src/js/runner/compact.ts asks; the core decides) -----------------

/// Why a summarizer's answer to a request with this `maxTokens` cannot be used (the empty
/// string when it can): the shell treats a non-empty reason as a failed call.
#[wasm_bindgen(js_name = answerProblem)]
pub fn answer_problem(text: &str, max_tokens: f64) -> String {
    let max = if max_tokens.is_finite() && max_tokens > 0.0 {
        max_tokens as u64
    } else {
        0
    };
    crate::summary::retry::answer_problem(text, max).unwrap_or_default()
}

/// The telemetry tag of a summarize call for a request of `purpose` (`history`, …; spec:
/// compaction §5.3), or undefined for an unknown purpose.
#[wasm_bindgen(js_name = telemetryTag)]
pub fn telemetry_tag(purpose: &str) -> Option<String> {
    crate::summary::request::Purpose::parse(purpose).map(|p| p.telemetry_tag().to_string())
}

/// What to do after a failed summarizer call (spec: compaction §8.3), as a JSON object:
/// `{"action":"wait","ms":N}`, `{"action":"next"}` (the next candidate), `{"action":"shrink"}`
/// (a context overflow: plan the window smaller) or `{"action":"give-up"}`. `status` and
/// `retry_after_ms` are negative when unknown. `shrinkable`: whether the request is a history
/// window (`false`: an overflow gives up, `RetryStep::for_request`; unset: as a window).
#[wasm_bindgen(js_name = retryStep)]
pub fn retry_step(
    attempt: u32,
    message: &str,
    status: f64,
    retry_after_ms: f64,
    more_candidates: bool,
    policy_json: Option<String>,
    shrinkable: Option<bool>,
) -> Result<String, JsValue> {
    let p = options(policy_json, "retry options")?;
    let d = RetryPolicy::default();
    let f = Fields::of(Some(&p), "retry options").map_err(field_error)?;
    let policy = RetryPolicy {
        enabled: f
            .boolean("enabled")
            .map_err(field_error)?
            .unwrap_or(d.enabled),
        max_retries: f
            .count("maxRetries")
            .map_err(field_error)?
            .map_or(d.max_retries, |n| n.min(u64::from(u32::MAX)) as u32),
        base_delay_ms: f
            .count("baseDelayMs")
            .map_err(field_error)?
            .unwrap_or(d.base_delay_ms),
        max_wait_ms: f
            .count("maxWaitMs")
            .map_err(field_error)?
            .unwrap_or(d.max_wait_ms),
    };
    let status = (status >= 0.0).then_some(status as u16);
    let retry_after = (retry_after_ms >= 0.0).then_some(retry_after_ms as u64);
    let kind = classify(message, status);
    let step = policy.next(attempt, kind, retry_after, more_candidates);
    let (action, wait) = match step.for_request(shrinkable.unwrap_or(true)) {
        RetryStep::Wait(ms) => ("wait", Some(ms)),
        RetryStep::NextCandidate => ("next", None),
        RetryStep::Shrink => ("shrink", None),
        RetryStep::GiveUp => ("give-up", None),
    };
    let mut out = String::new();
    let mut o = Object::open(&mut out);
    o.str("action", action);
    if let Some(ms) = wait {
        o.num("ms", ms as f64);
    }
    o.close();
    Ok(out)
}

/// A `Retry-After` header value in milliseconds (seconds or an HTTP date); negative when
/// it cannot be read.
#[wasm_bindgen(js_name = retryAfterMs)]
pub fn retry_after_ms(value: &str, now: f64) -> f64 {
    parse_retry_after(value, now as i64).map_or(-1.0, |ms| ms as f64)
}

/// The handoff instruction alone (spec: compaction §5.9), with `customInstructions` as its
/// focus block: the shell sends it as the agent-attributed user message after the live
/// history when the host keeps the cache prefix.
#[wasm_bindgen(js_name = handoffPrompt)]
pub fn handoff_prompt(custom_instructions: Option<String>) -> String {
    crate::prompts::handoff_prompt(custom_instructions.as_deref())
}

/// The frames of a snapcompact commit, drawn one at a time (`Session.snapcompactFrames`).
#[wasm_bindgen]
pub struct WasmSnapcompactFrames {
    jobs: Vec<FrameJob>,
}

#[wasm_bindgen]
impl WasmSnapcompactFrames {
    /// How many frames the commit draws.
    #[wasm_bindgen(getter)]
    pub fn count(&self) -> u32 {
        self.jobs.len() as u32
    }

    /// Draws frame `k` (0-based) and returns its PNG; the next commit takes it as drawn.
    /// `E_INVALID_ARGUMENT` for `k` out of range.
    pub fn render(&self, k: u32) -> Result<Vec<u8>, JsValue> {
        let job = self.jobs.get(k as usize).ok_or_else(|| {
            to_js(crate::error::Error::InvalidArgument {
                what: format!("frame {k} of {} frames", self.jobs.len()),
            })
        })?;
        render_job(job, &fonts())
            .map(|f| f.png)
            .map_err(|e| to_js(crate::error::Error::from(e)))
    }
}
