//! Commits of the compaction cycle (spec: compaction §4.6, §5.7, §8.4; snapcompact §9.2): the
//! answered plan becomes a `compaction` entry — an LLM summary, a snapcompact archive, an
//! extension's own result or a handoff into a new session — with its `preserveData` and
//! `tokensAfter`. A commit checks the plan still fits the session and changes nothing else.

use crate::archive::blocks::{history_blocks, HistoryBlock, HistoryOptions};
use crate::archive::stored::{read_archive, store_by_reference};
use crate::archive::PRESERVE_KEY;
use crate::compaction::prepare::Preparation;
use crate::compaction::snapcompact::{
    archive_budget, archive_message, compact, data_budget, frame_jobs, ArchiveBudget, ArchiveInput,
    ArchiveOptions, ArchiveResult, FrameCapInput, FrameJob, TEXT_RATIO_BOUNDS,
};
use crate::context::{build_context_with, BuildOptions, LeafSelector};
use crate::error::{Error, ErrorCode, Result};
use crate::render::shape::billing::BillingFamily;
use crate::render::shape::resolve::resolve_shape;
use crate::render::FallbackFonts;
use crate::render::SnapError;
use crate::session::message::{AgentMessage, ContentBlock, Role};
use crate::session::{CompactionBody, IdSource, NewSession, Session};
use crate::settings::{FrameStorage, Strategy};
use crate::summary::anchors::{AnchorIndex, DETAILS_KEY};
use crate::summary::fileops::{
    pi_file_lists, pi_file_operations, upsert_file_operations, FileLists,
};
use crate::summary::request::HistoryFeed;
use crate::summary::serialize::NO_PRIOR_HISTORY;
use crate::tokens::{
    estimate_message, window_budgets, ByteEstimate, EstimateOptions, FRAME_TOKEN_ESTIMATE,
};
use rustc_hash::FxHashSet;
use serde_json::{Map, Number, Value};

use crate::compaction::plan::{CompactionPlan, Fit};

/// What a commit wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Committed {
    /// Index and id of the new `compaction` entry.
    pub index: usize,
    pub id: String,
    /// Estimated tokens of the rebuilt context (also stored as `tokensAfter`).
    pub tokens_after: u64,
}

/// `preserveData` of a new compaction (spec: compaction §5.7 step 6): the previous one minus a
/// stale provider-native payload and a migrated snapcompact archive, plus the hook's data.
pub(crate) fn preserve_data(
    previous: Option<&Value>,
    extra: Option<&Map<String, Value>>,
) -> Option<Value> {
    let mut out = match previous {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    crate::compaction::native::drop_native_records(&mut out);
    out.remove(crate::session::preserve::SNAPCOMPACT);
    if let Some(extra) = extra {
        for (k, v) in extra {
            out.insert(k.clone(), v.clone());
        }
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// The estimated tokens of the context at the session's leaf, archives counted without their
/// data. A native compaction's replay counts as its provider will be sent it (spec: §2.3, §13).
pub(crate) fn leaf_context_tokens(session: &Session) -> Result<u64> {
    let ctx = crate::context::build_counted_context(
        session,
        &BuildOptions::default(),
        &HistoryOptions::WITHOUT_DATA,
    )?;
    Ok(ctx.estimated_tokens(session))
}

/// Appends the compaction under `leaf`, the leaf it was prepared for (which need not be the
/// session's current leaf: `PrepareOptions::leaf`), then stores `tokensAfter`.
pub(crate) fn append_with_tokens_after(
    session: &mut Session,
    leaf: usize,
    body: &CompactionBody,
    now: i64,
) -> Result<Committed> {
    session.require(&body.first_kept_entry_id)?;
    if session.leaf() != Some(leaf) {
        let leaf_id = session.entries()[leaf].id().to_string();
        session.branch(&leaf_id)?;
    }
    let id = session.append_compaction(body, now)?;
    let index = session.require(&id)?;
    let tokens_after = leaf_context_tokens(session)?;
    session.set_entry_field(index, &[], "tokensAfter", &Value::from(tokens_after))?;
    Ok(Committed {
        index,
        id,
        tokens_after,
    })
}

/// Turns a complete plan into a `compaction` entry (spec: compaction §5.7, §8.4): the merged
/// summary with its `<files>` block, the short summary, `details`, `tokensBefore`,
/// `tokensAfter` and `method`. Errors leave the session unchanged: `E_PLAN_INCOMPLETE`,
/// `E_STALE_PLAN`, `E_SETTINGS` for a handoff plan (use [`commit_handoff`]).
pub fn commit_compaction(
    session: &mut Session,
    plan: &CompactionPlan,
    now: i64,
) -> Result<Committed> {
    if plan.strategy == Strategy::Handoff {
        return Err(Error::Settings {
            field: "strategy".into(),
            reason: "a handoff plan is committed with commitHandoff".into(),
        });
    }
    if plan.strategy == Strategy::Snapcompact {
        return commit_snapcompact(
            session,
            plan,
            &snapcompact_options(plan)?,
            &FallbackFonts::new(),
            now,
        );
    }
    if !plan.is_complete() {
        return Err(Error::PlanIncomplete {
            missing: plan.missing(),
        });
    }
    plan.check_fresh(session)?;
    let merged = plan
        .merged_summary()
        .unwrap_or_else(|| NO_PRIOR_HISTORY.to_string());
    // A pi-family path gets what pi 1.6's `compact` writes: its file lists appended.
    let pi_lists = plan
        .is_pi()
        .then(|| pi_file_lists(&plan.preparation.file_ops));
    let summary = match &pi_lists {
        Some(lists) => merged + &pi_file_operations(lists),
        None => upsert_file_operations(
            &plan.with_anchors(session, &merged)?,
            &plan.file_lists.read_files,
            &plan.file_lists.modified_files,
            Some(&plan.preparation.file_ops.read),
        ),
    };
    // A background plan commits under the current leaf when the branch grew (spec: §13).
    let leaf = match plan
        .is_speculative()
        .then(|| plan.fit(session))
        .transpose()?
    {
        Some(Fit::Grown { leaf }) => {
            check_grown_projection(session, plan, &summary, leaf)?;
            leaf
        }
        _ => plan.preparation.leaf,
    };
    if let Some(lists) = pi_lists {
        return append_pi_compaction(session, plan, leaf, (summary, &lists), now);
    }
    let preserve = preserve_data(
        plan.preparation.previous_preserve_data.as_ref(),
        plan.options.preserve_data.as_ref(),
    );
    let method = plan.options.method.as_deref().unwrap_or("soft");
    append_plan_compaction_at(
        session,
        plan,
        leaf,
        (summary, plan.short_summary()),
        method,
        preserve,
        now,
    )
}

/// The size check of a background plan committed after the branch grew (spec: compaction
/// §13): the context it leaves — the summary, the kept entries and everything appended
/// since — must stay under the recovery band (`0.8 · threshold` of the plan's window, when
/// known; ours: and below the speculation band, `threshold − lead`), in the host's tokens
/// (`PlanOptions::provider_ratio`, `non_message_tokens`), and below the context as it is now
/// (the local estimate on both sides); else the result is stale: committing it would leave
/// little headroom or grow the context.
fn check_grown_projection(
    session: &Session,
    plan: &CompactionPlan,
    summary: &str,
    leaf: usize,
) -> Result<()> {
    let (projected, current) = grown_projection(session, plan, summary, leaf)?;
    let window = plan.options.context_window;
    if window > 0 {
        // The recovery band, and (ours) below the speculation band: a commit that left the
        // context where the next preparation starts at once would compact again soon after,
        // where an inline compaction down to `keepRecentTokens` would not (small windows,
        // whose lead is a large share of the threshold).
        let threshold = crate::tokens::threshold_tokens(window, &plan.settings);
        let band = crate::tokens::recovery_band_tokens(threshold)
            .min(threshold.saturating_sub(crate::tokens::speculation_lead_tokens(threshold)));
        // In the host's tokens, as its thresholds are.
        let ratio = plan.options.provider_ratio;
        let ratio = if ratio.is_finite() && ratio > 0.0 {
            ratio
        } else {
            1.0
        };
        let hosted = (projected as f64 * ratio) as u64 + plan.options.non_message_tokens;
        if hosted > band {
            return Err(Error::StalePlan {
                reason: format!(
                    "the branch grew: the compacted context would be {hosted} tokens, over \
                     the recovery band of {band}"
                ),
            });
        }
    }
    if projected >= current {
        return Err(Error::StalePlan {
            reason: format!(
                "the branch grew: the compacted context would be {projected} tokens, not below \
                 the {current} of the context now"
            ),
        });
    }
    Ok(())
}

/// The estimated tokens of the context a commit of `plan` under `leaf` would leave (its
/// summary, then every message from the first kept entry to `leaf`) and of the context at
/// `leaf` now.
pub(crate) fn grown_projection(
    session: &Session,
    plan: &CompactionPlan,
    summary: &str,
    leaf: usize,
) -> Result<(u64, u64)> {
    let leaf_id = session.entries()[leaf].id().to_string();
    let opts = BuildOptions {
        leaf: LeafSelector::Id(leaf_id),
        ..BuildOptions::default()
    };
    let ctx = crate::context::build_counted_context(session, &opts, &HistoryOptions::WITHOUT_DATA)?;
    let current = ctx.estimated_tokens(session);
    let from = ctx
        .path
        .iter()
        .position(|&i| i == plan.preparation.first_kept)
        .unwrap_or(ctx.path.len());
    let kept: FxHashSet<usize> = ctx.path[from..].iter().copied().collect();
    let opts = EstimateOptions::default();
    let kept_tokens: u64 = ctx
        .messages
        .iter()
        .filter(|m| kept.contains(&m.entry) && m.role() != Role::CompactionSummary)
        .map(|m| {
            if m.is_entry_json() {
                session.entry_tokens(m.entry, opts)
            } else {
                estimate_message(&m.message(session), &ByteEstimate, opts)
            }
        })
        .sum();
    let summary_tokens = crate::tokens::TokenCounter::count(
        &ByteEstimate,
        &crate::prompts::compaction_context(summary),
    );
    Ok((summary_tokens + kept_tokens, current))
}

/// Appends the compaction `plan` was made for (spec: compaction §5.7 step 6) — its first kept
/// entry, `tokensBefore` and file lists (`details`) — with `summary`, `short_summary`,
/// `method` and `preserve_data`, then records `tokensAfter`.
pub(crate) fn append_plan_compaction(
    session: &mut Session,
    plan: &CompactionPlan,
    summary: String,
    short_summary: Option<String>,
    method: &str,
    preserve_data: Option<Value>,
    now: i64,
) -> Result<Committed> {
    append_plan_compaction_at(
        session,
        plan,
        plan.preparation.leaf,
        (summary, short_summary),
        method,
        preserve_data,
        now,
    )
}

/// [`append_plan_compaction`] under `leaf` (a background plan's branch grew past its leaf).
fn append_plan_compaction_at(
    session: &mut Session,
    plan: &CompactionPlan,
    leaf: usize,
    (summary, short_summary): (String, Option<String>),
    method: &str,
    preserve_data: Option<Value>,
    now: i64,
) -> Result<Committed> {
    let prep = &plan.preparation;
    let body = CompactionBody {
        summary,
        short_summary,
        first_kept_entry_id: prep.first_kept_entry_id.clone(),
        tokens_before: Number::from(prep.tokens_before),
        tokens_after: None,
        method: Some(method.into()),
        provider_replay_through_entry_id: None,
        details: Some(plan.details_json(session)?),
        preserve_data,
        from_extension: false,
        warning: None,
    };
    append_with_tokens_after(session, leaf, &body, now)
}

/// pi 1.6's `appendCompaction` of a summary its `compact` wrote, under `leaf` (a pi-family
/// path): `summary`, `firstKeptEntryId`, `tokensBefore`, `details {readFiles, modifiedFiles}`
/// and `fromHook: false`, in pi's order, then the `systemMessage` checkpoint of the path
/// ([`crate::context::projection::pi_system_checkpoint`]); none of ctxfold's fields
/// (`shortSummary`, `method`, `tokensAfter`). The returned `tokens_after` is still the estimate of the rebuilt context.
fn append_pi_compaction(
    session: &mut Session,
    plan: &CompactionPlan,
    leaf: usize,
    (summary, lists): (String, &FileLists),
    now: i64,
) -> Result<Committed> {
    let prep = &plan.preparation;
    session.require(&prep.first_kept_entry_id)?;
    // Read before anything changes: a failure leaves the session as it was.
    let checkpoint =
        crate::context::projection::pi_system_checkpoint(session, &session.path_to(leaf), now)?;
    if session.leaf() != Some(leaf) {
        let leaf_id = session.entries()[leaf].id().to_string();
        session.branch(&leaf_id)?;
    }
    let mut fields = Map::new();
    fields.insert("summary".into(), summary.into());
    fields.insert(
        "firstKeptEntryId".into(),
        prep.first_kept_entry_id.clone().into(),
    );
    fields.insert("tokensBefore".into(), prep.tokens_before.into());
    fields.insert("details".into(), lists.to_json());
    fields.insert("fromHook".into(), false.into());
    if let Some(checkpoint) = checkpoint {
        fields.insert("systemMessage".into(), checkpoint);
    }
    let id = session.append("compaction", fields, now)?;
    let index = session.require(&id)?;
    Ok(Committed {
        index,
        id,
        tokens_after: leaf_context_tokens(session)?,
    })
}

/// The archive options of a snapcompact plan when the host gives none: the app's rules for
/// the plan's reading model (`PlanOptions::model`) with the `snapcompact.*` settings (spec:
/// snapcompact §9.7). `compact()` and a plain plan/commit both start from these, so the same
/// model and settings give the same archive (issue 19 point 3).
pub fn snapcompact_options(plan: &CompactionPlan) -> Result<ArchiveOptions> {
    ArchiveOptions::from_settings(plan.options.model.clone(), &plan.settings.snapcompact)
}

/// The frame cap of a snapcompact commit (spec: snapcompact §5.2): the host's `maxFrames`
/// (if any) within what the reading model's window, the request byte budget and the
/// provider's image budget allow. `E_NOTHING_TO_COMPACT` when the kept history alone fills
/// the window.
fn frame_cap(plan: &CompactionPlan, options: &ArchiveOptions) -> Result<ArchiveBudget> {
    let shape = options
        .shape
        .unwrap_or_else(|| resolve_shape(options.model.as_ref(), None));
    let shape = shape.with_frame_size(options.frame_size.unwrap_or(shape.frame_size));
    let window = plan.options.context_window;
    let budget = archive_budget(
        &FrameCapInput {
            context_window: window,
            // What the window leaves the archive (small windows: the recovery band).
            reserve_tokens: window
                .saturating_sub(window_budgets(window, &plan.settings).archive_budget_tokens),
            kept_tokens: options
                .non_message_tokens
                .saturating_add(plan.preparation.tokens_recent),
            edge_capacity: shape.geometry().capacity,
            provider: plan.options.prepare.active_provider.as_deref(),
            api: options.model.api.as_deref(),
            budgets: &options.image_budgets,
        },
        options.retained_user_tokens,
    )
    .ok_or_else(|| Error::NothingToCompact {
        reason: "the kept recent history alone fills the context window, so an archive \
                 cannot make room; compact with a smaller keepRecentTokens or another method"
            .into(),
    })?;
    let cap = budget.max_frames;
    Ok(ArchiveBudget {
        max_frames: options.max_frames.map_or(cap, |m| m.clamp(1, cap)),
        ..budget
    })
}

/// Builds the snapcompact archive of a snapcompact plan without touching the session (spec:
/// snapcompact §9.2): the messages to summarize and the turn prefix, converted as the
/// summarizer would see them, serialized, folded onto the previous archive (or previous text
/// summary), planned and rendered, with at most the frames the reading model's provider
/// accepts ([`frame_cap`]). Frames that together run heavier than the request byte budget
/// (the cap assumes 170,000 base64 bytes a frame) are rendered again with fewer frames,
/// never rejected. `E_SETTINGS` for a plan of another strategy, `E_STALE_PLAN` when the
/// session moved on, `E_NOTHING_TO_COMPACT` when the kept history alone fills the window,
/// `E_INVALID_ARGUMENT` for bad render options, `E_OPTIONS` when a single frame is over the
/// byte budget.
pub fn build_snapcompact(
    session: &Session,
    plan: &CompactionPlan,
    options: &ArchiveOptions,
    fallbacks: &FallbackFonts,
) -> Result<ArchiveResult> {
    if plan.strategy != Strategy::Snapcompact {
        return Err(Error::Settings {
            field: "strategy".into(),
            reason: "only a snapcompact plan builds an archive".into(),
        });
    }
    let messages = archive_messages(session, plan)?;
    let prep = &plan.preparation;
    let input = ArchiveInput {
        messages: &messages,
        previous_summary: prep.previous_summary.as_deref(),
        previous_preserve_data: prep.previous_preserve_data.as_ref(),
        file_lists: &plan.file_lists,
        read_set: Some(&prep.file_ops.read),
    };
    let options = capped_options(plan, options)?;
    first_archive(plan, input, options, fallbacks)
}

/// The messages a snapcompact plan archives, as the summarizer would see them (spec:
/// snapcompact §9.2): `E_STALE_PLAN` when the session moved on.
fn archive_messages(
    session: &Session,
    plan: &CompactionPlan,
) -> Result<Vec<crate::render::text::serialize::ArchiveMessage>> {
    plan.check_fresh(session)?;
    let prep = &plan.preparation;
    if prep.first_kept_entry_id.is_empty() {
        return Err(Error::InvalidArgument {
            what: "first kept entry has no ID".into(),
        });
    }
    let mut entries = prep.messages_to_summarize.clone();
    entries.extend(&prep.turn_prefix);
    let useless: FxHashSet<Box<str>> = entries
        .iter()
        .filter_map(|&i| session.useless_tool_call(i))
        .collect();
    // Converted a message at a time: the archive keeps their text, not their JSON values.
    let mut messages = Vec::with_capacity(entries.len());
    let mut feed = HistoryFeed::new(entries);
    let mut converted = Vec::new();
    while feed.read(session, &mut converted)? {
        messages.extend(
            converted
                .drain(..)
                .filter_map(|m| archive_message(&m, &useless)),
        );
    }
    Ok(messages)
}

/// The host's archive options within the frame cap of the plan ([`frame_cap`]).
fn capped_options(plan: &CompactionPlan, options: &ArchiveOptions) -> Result<ArchiveOptions> {
    let mut options = options.clone();
    let budget = frame_cap(plan, &options)?;
    options.max_frames = Some(budget.max_frames);
    options.retained_user_tokens = budget.user_turn_tokens;
    Ok(options)
}

/// The frames a snapcompact commit of `plan` draws first, in order, without drawing them
/// (spec: snapcompact §9.2; issue 41): a host draws them one at a time with
/// [`render_job`](crate::compaction::snapcompact::render_job) to report "frames k of n" or
/// to keep its thread responsive, then commits; the commit takes the drawn frames and
/// writes the very bytes a commit alone writes. An archive the commit must shrink (over the
/// byte budget or the window) draws its fewer frames itself. Errors as [`build_snapcompact`].
pub fn snapcompact_frame_jobs(
    session: &Session,
    plan: &CompactionPlan,
    options: &ArchiveOptions,
    fallbacks: &FallbackFonts,
) -> Result<Vec<FrameJob>> {
    if plan.strategy != Strategy::Snapcompact {
        return Err(Error::Settings {
            field: "strategy".into(),
            reason: "only a snapcompact plan builds an archive".into(),
        });
    }
    let messages = archive_messages(session, plan)?;
    let prep = &plan.preparation;
    let input = ArchiveInput {
        messages: &messages,
        previous_summary: prep.previous_summary.as_deref(),
        previous_preserve_data: prep.previous_preserve_data.as_ref(),
        file_lists: &plan.file_lists,
        read_set: Some(&prep.file_ops.read),
    };
    Ok(frame_jobs(
        input,
        &capped_options(plan, options)?,
        fallbacks,
    )?)
}

/// [`build_snapcompact`]'s drawing: the archive, drawn again with fewer frames while its
/// frames run heavier than the request byte budget.
fn first_archive(
    plan: &CompactionPlan,
    input: ArchiveInput<'_>,
    mut options: ArchiveOptions,
    fallbacks: &FallbackFonts,
) -> Result<ArchiveResult> {
    let budget = data_budget(
        &options.image_budgets,
        plan.options.prepare.active_provider.as_deref(),
    );
    loop {
        let built = compact(input, &options, fallbacks)?;
        let frames = built.archive.frames.len() as u64;
        let bytes: u64 = built
            .archive
            .frames
            .iter()
            .map(|f| f.data.len() as u64)
            .sum();
        if bytes <= budget {
            return Ok(built);
        }
        if frames <= 1 {
            return Err(SnapError::Options(format!(
                "one archive frame takes {bytes} base64 bytes, more than the request budget of \
                 {budget}; use a smaller frameSize"
            ))
            .into());
        }
        // As many frames as fit at this run's average weight, and always fewer than now.
        let fit = (budget / bytes.div_ceil(frames)).clamp(1, frames - 1);
        options.max_frames = Some(fit as u32);
    }
}

/// What a snapcompact commit is measured against (spec: compaction §8.3, "a failed or
/// unproductive method advances to the next"): the context of the plan's leaf as it stands,
/// and the part of it the new compaction keeps, with the estimator of `tokensAfter` (frames
/// at their flat rate, payloads not copied).
struct Baseline {
    /// The whole context, thinking signatures and redacted reasoning left out.
    before: u64,
    /// The kept messages, counted the same way.
    kept: u64,
    /// The kept messages as `tokensAfter` counts them (everything in).
    kept_full: u64,
    /// The part of `before` that is the previous archive's frames (at their flat charge).
    before_frames: u64,
    /// The same frames weighed by the pixels the provider bills ([`frame_charge`]).
    before_frames_billed: u64,
    /// The request the provider last reported usage for (the latest assistant message with
    /// usage in the context): its prompt tokens, and the core's estimate of the messages it
    /// carried (everything in) with the frames among them at their flat charge. `None`
    /// without usage, or when that request carried a context the latest compaction replaced.
    reported: Option<Reported>,
}

/// A request the provider reported usage for ([`Baseline::reported`]).
struct Reported {
    prompt: u64,
    estimate: u64,
    frames: u64,
}

/// Below this estimate of text a reported request says little about the provider's rate
/// (as for the Maintainer's calibration).
const MIN_REPORTED_TEXT: u64 = 1_000;

impl Reported {
    /// The provider's tokens per token of the core's estimate of text this request shows
    /// (spec: compaction §3.4 reads the same usage for the keep budget): its prompt tokens
    /// less the request's `non_message` tokens and its frames (at their flat charge, the most
    /// a provider bills for one, times `image_ratio`), over its estimated text; within
    /// [`TEXT_RATIO_BOUNDS`]. `None` when it carried too little text to tell.
    fn text_rate(&self, non_message: u64, image_ratio: f64) -> Option<f64> {
        let text = self.estimate.saturating_sub(self.frames);
        if text < MIN_REPORTED_TEXT {
            return None;
        }
        let frames = (self.frames as f64 * image_ratio).ceil() as u64;
        let counted = self
            .prompt
            .saturating_sub(non_message)
            .saturating_sub(frames);
        let (low, high) = TEXT_RATIO_BOUNDS;
        Some((counted as f64 / text as f64).clamp(low, high))
    }
}

/// Width and height of a base64 PNG (its IHDR chunk), if `data` is one.
fn png_size(data: &str) -> Option<(u32, u32)> {
    // The signature (8 bytes), the chunk length and type (8), then width and height (8).
    let head = crate::support::base64::base64_decode(data.get(..32)?)?;
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(head.get(at..at + 4)?.try_into().ok()?))
    };
    (head.get(12..16)? == b"IHDR").then_some(())?;
    Some((word(16)?, word(20)?))
}

/// A frame's share of the core's flat frame charge, weighed by its pixels the way the reading
/// model's provider bills an image (spec: snapcompact §4.2; issue 36 finding 4): a full square
/// frame costs the flat charge, a short last frame proportionally less. Frames re-rendered
/// from the same text change their heights, so counting every frame at the flat charge can
/// call an archive smaller than the one it replaces while the provider bills it larger. A
/// frame whose size cannot be read (a stored reference) costs the flat charge.
fn frame_charge(data: &str, family: BillingFamily) -> u64 {
    let Some((w, h)) = png_size(data).filter(|&(w, h)| w > 0 && h > 0) else {
        return FRAME_TOKEN_ESTIMATE;
    };
    let billed = |w: u32, h: u32| -> u64 {
        let patches = |edge: u32, cap: u64| {
            (u64::from(w.div_ceil(edge)) * u64::from(h.div_ceil(edge))).min(cap)
        };
        match family {
            BillingFamily::Anthropic | BillingFamily::Unknown => patches(28, 4_784),
            BillingFamily::OpenAi => patches(32, 10_000),
            // A flat price per image.
            BillingFamily::Google => 1,
        }
    };
    let full = billed(w.max(h), w.max(h)).max(1);
    let own = billed(w, h).min(full);
    (FRAME_TOKEN_ESTIMATE * own).div_ceil(full)
}

/// The frames of an archive at their billed weight ([`frame_charge`]).
fn frames_charge(frames: &[crate::archive::ArchiveFrame], family: BillingFamily) -> u64 {
    frames.iter().map(|f| frame_charge(&f.data, family)).sum()
}

/// Measures the context at the plan's leaf and its kept part: the messages of entries from
/// the first kept entry on, less the previous compaction's summary. Opaque reasoning
/// (signatures, redacted thinking) has no trustworthy local price, so the reduction is
/// judged without it on both sides: summarized signatures cannot make an archive that grows
/// the context look smaller (the reference's guard does the same). Messages only the rebuilt
/// context loses (a result whose call was summarized) are still counted: the projection
/// never undercounts what the commit measures.
fn baseline(session: &Session, plan: &CompactionPlan, family: BillingFamily) -> Result<Baseline> {
    let prep = &plan.preparation;
    let leaf_id = session
        .entry(prep.leaf)
        .map(|e| e.id().to_string())
        .ok_or_else(|| Error::StalePlan {
            reason: "the plan's leaf is not in the session".into(),
        })?;
    let opts = BuildOptions {
        leaf: LeafSelector::Id(leaf_id),
        ..BuildOptions::default()
    };
    let ctx = build_context_with(session, &opts, &HistoryOptions::WITHOUT_DATA)?;
    let from = ctx
        .path
        .iter()
        .position(|&i| session.entries()[i].id() == prep.first_kept_entry_id)
        .unwrap_or(ctx.path.len());
    let kept: FxHashSet<usize> = ctx.path[from..].iter().copied().collect();
    let lean = EstimateOptions {
        exclude_encrypted_reasoning: true,
    };
    let mut out = Baseline {
        before: 0,
        kept: 0,
        kept_full: 0,
        before_frames: 0,
        before_frames_billed: 0,
        reported: None,
    };
    // The latest reported usage, if the request it answered is the context built here up to
    // that message (the context's messages come in path order, the summary first): not an
    // answer from before the latest compaction (a kept message answered the whole history).
    let usage = session.last_assistant_usage(&ctx.path).filter(|(e, u)| {
        // A reply that reports no prompt tokens reports nothing.
        crate::tokens::usage_is_current(&ctx.path, ctx.compaction, *e)
            && crate::tokens::prompt_tokens(u) > 0
    });
    let mut reported = usage.as_ref().map(|(_, u)| Reported {
        prompt: crate::tokens::prompt_tokens(u),
        estimate: 0,
        frames: 0,
    });
    let mut answered = false;
    for m in &ctx.messages {
        let message = m.message(session);
        let tokens = estimate_message(&message, &ByteEstimate, lean);
        out.before += tokens;
        answered |= usage.as_ref().is_some_and(|(at, _)| *at == m.entry);
        let in_request = !answered;
        if let AgentMessage::CompactionSummary(c) = &message {
            let frames = match (&c.blocks, &c.images) {
                (Some(blocks), _) => blocks
                    .iter()
                    .filter(|b| !matches!(b, ContentBlock::Text { .. }))
                    .count(),
                (None, Some(images)) => images.len(),
                (None, None) => 0,
            };
            let flat = frames as u64 * FRAME_TOKEN_ESTIMATE;
            out.before_frames += flat;
            if let (true, Some(r)) = (in_request, reported.as_mut()) {
                r.frames += flat;
            }
            // The archive's own frames, with their payloads, weighed by their pixels.
            let archive = ctx
                .compaction
                .and_then(|i| read_archive(session, i).ok().flatten())
                .filter(|a| a.frames.len() == frames);
            out.before_frames_billed += archive.map_or(flat, |a| frames_charge(&a.frames, family));
        }
        let kept_here = m.role() != Role::CompactionSummary && kept.contains(&m.entry);
        if in_request || kept_here {
            let full = estimate_message(&message, &ByteEstimate, EstimateOptions::default());
            if let (true, Some(r)) = (in_request, reported.as_mut()) {
                r.estimate += full;
            }
            if kept_here {
                out.kept += tokens;
                out.kept_full += full;
            }
        }
    }
    out.reported = reported.filter(|_| answered);
    Ok(out)
}

/// Estimated tokens of the compaction-summary message the context build makes of a new
/// snapcompact entry (spec: compaction §2.3, snapcompact §9.6): the reading guide and the
/// archive's history blocks, frames at their flat rate.
fn summary_tokens(built: &ArchiveResult) -> u64 {
    let blocks = history_blocks(&built.archive, &HistoryOptions::WITHOUT_DATA);
    let message = crate::support::json::object(vec![
        ("role", "compactionSummary".into()),
        ("summary", built.summary.as_str().into()),
        ("shortSummary", built.short_summary.as_str().into()),
        ("tokensBefore", 0.into()),
        (
            "blocks",
            Value::Array(blocks.iter().map(HistoryBlock::to_json).collect()),
        ),
    ]);
    let json = crate::support::json::js::stringify(&message);
    AgentMessage::parse(&json, Some(Role::CompactionSummary)).map_or(0, |m| {
        estimate_message(&m, &ByteEstimate, EstimateOptions::default())
    })
}

/// The provider text rates the reduction test weighs an archive at: the host's; else the
/// core's estimate, the rate the provider's last reported usage shows ([`Reported::text_rate`],
/// `learned`: a reported request tells it only roughly, low rather than high), and the highest
/// rate a provider may count (an archive rebuilt with fewer frames and more text costs more
/// where text is dear: the agent fuzz target's 2x provider behind an uncalibrated host).
/// Before and after are linear in the rate, so a context smaller at the lowest and the
/// highest of them is smaller at every rate between; an archive that adds frames and drops
/// text, the usual one, is smaller at every higher rate once it is at the lowest.
fn text_rates(known: Option<f64>, learned: Option<f64>) -> Vec<f64> {
    match (known, learned) {
        (Some(r), _) => vec![r],
        (None, Some(r)) => vec![r, 1.0, TEXT_RATIO_BOUNDS.1],
        (None, None) => vec![1.0, TEXT_RATIO_BOUNDS.1],
    }
}

fn no_reduction(message: String) -> Error {
    Error::coded(ErrorCode::NoReduction, message)
}

/// Builds the archive of a snapcompact plan that the commit may write (spec: compaction §8.3,
/// snapcompact §5.2): its projected context must be smaller than the one it replaces, and
/// when the plan knows the window, within `contextWindow − reserve` with the request's
/// non-message tokens. An archive over the window is rendered again with fewer frames (as
/// many fewer as the excess is worth at the flat frame rate, at least one), down to one:
/// the dead-end rescue's first tier, an oversized archive rebuilt with fewer frames.
/// `E_NO_REDUCTION` when no archive qualifies; nothing is written.
fn qualified_archive(
    session: &Session,
    plan: &CompactionPlan,
    options: &ArchiveOptions,
    fallbacks: &FallbackFonts,
) -> Result<ArchiveResult> {
    let window = plan.options.context_window;
    let budget = (window > 0).then(|| window_budgets(window, &plan.settings).archive_budget_tokens);
    // A limit the walk asks for (the dead-end rescue's rebuild) only ever lowers the budget.
    let limit = match (budget, options.limit_tokens) {
        (Some(b), Some(l)) => Some(b.min(l)),
        (b, l) => b.or(l),
    };
    let mut options = options.clone();
    let mut base: Option<Baseline> = None;
    let family =
        BillingFamily::of_reader(options.model.id.as_deref(), options.model.api.as_deref());
    loop {
        let built = build_snapcompact(session, plan, &options, fallbacks)?;
        let base = match &base {
            Some(b) => b,
            None => base.insert(baseline(session, plan, family)?),
        };
        let summary = summary_tokens(&built);
        // The archive's text at the provider's rate, its frames at their flat charge.
        let frames_tokens =
            (built.archive.frames.len() as u64).saturating_mul(FRAME_TOKEN_ESTIMATE);
        let text = summary.saturating_sub(frames_tokens) as f64;
        // The frames as the provider bills them (their pixels), at the flat charge's scale.
        let frames_billed = frames_charge(&built.archive.frames, family);
        let positive = |r: f64| if r.is_finite() && r > 0.0 { r } else { 1.0 };
        // The provider's text rate, when the host measured it; else the fit weighs text at
        // the core's estimate and the reduction test also at the rate reported usage shows.
        let known = options.text_ratio.filter(|r| r.is_finite() && *r > 0.0);
        let ratio = known.unwrap_or(1.0);
        let image_ratio = positive(options.image_ratio);
        let learned = base
            .reported
            .as_ref()
            .and_then(|r| r.text_rate(options.non_message_tokens, image_ratio));
        let rates = text_rates(known, learned);
        let at_image_ratio = |t: u64| (t as f64 * image_ratio).ceil() as u64;
        let projected = ((text * ratio).ceil() as u64)
            .saturating_add(at_image_ratio(frames_tokens))
            .saturating_add(base.kept_full)
            .saturating_add(options.non_message_tokens);
        let frames = built.archive.frames.len();
        let excess = limit.map_or(0, |l| projected.saturating_sub(l));
        let over = excess > 0;
        if over && frames > 1 {
            // The frames the excess is worth at their flat rate, and always one fewer at
            // least: text edges and the guide do not shrink with the frame count.
            let drop = excess
                .div_ceil(at_image_ratio(FRAME_TOKEN_ESTIMATE).max(1))
                .max(1) as usize;
            options.max_frames = Some(frames.saturating_sub(drop).max(1) as u32);
            continue;
        }
        // Smaller as the provider counts it: text at its rate, frames (the new archive's and
        // the old one's) at theirs — a provider counting text at 0.6x pays relatively more
        // for a frame, one counting 2x text and billing frames below their charge less. The
        // frames weighed both ways: at the flat charge each, and by their pixels (a provider
        // bills a short frame less; re-rendering the same text changes the frames' heights,
        // issue 36 finding 4), so that neither way of billing pays more after the commit.
        // A rate the host has not measured is read from the provider's last reported usage
        // ([`text_rates`]): a context smaller at 1 may be larger where text is cheap and
        // frames are not (the agent simulator's provider counting 0.5x behind an
        // uncalibrated host, issue 36).
        let measure = |rate: f64, text: u64, old: u64, new: u64| {
            let at_rate = |t: u64| (t as f64 * rate).ceil() as u64;
            let before = at_rate(base.before.saturating_sub(base.before_frames))
                .saturating_add(at_image_ratio(old));
            let after = at_rate(text)
                .saturating_add(at_image_ratio(new))
                .saturating_add(at_rate(base.kept));
            (before, after)
        };
        // The first rate (and way of billing frames) at which the archive does not reduce,
        // and the least it saves over all of them, in estimated tokens of text.
        let mut refused: Option<(f64, u64, u64)> = None;
        let mut saved = u64::MAX;
        for &rate in &rates {
            let flat = measure(rate, text as u64, base.before_frames, frames_tokens);
            let billed = measure(rate, text as u64, base.before_frames_billed, frames_billed);
            for (before, after) in [billed, flat] {
                if after >= before {
                    refused = refused.or(Some((rate, before, after)));
                }
            }
            saved = saved.min(((flat.0.saturating_sub(flat.1)) as f64 / rate) as u64);
        }
        // And smaller by the core's own estimate: the rates are a host's calibration, which
        // may be off by a little.
        let after_estimate = summary.saturating_add(base.kept);
        if refused.is_some() || after_estimate >= base.before {
            let (rate, before, after) = refused.unwrap_or((1.0, base.before, after_estimate));
            let at = match known {
                None if rate == TEXT_RATIO_BOUNDS.1 => format!(
                    " with text counted at {rate:.2}x the estimate, the most a provider may \
                     count (its rate is not known)"
                ),
                None if rate != 1.0 => format!(
                    " with text counted at {rate:.2}x the estimate, as the provider's last \
                     reported usage shows"
                ),
                _ => String::new(),
            };
            return Err(no_reduction(format!(
                "snapcompact would not reduce the context: the archived context would take \
                 about {after} tokens, the current one {before}{at}; compact with an LLM \
                 summary instead"
            )));
        }
        if let (true, Some(limit)) = (over, limit) {
            return Err(no_reduction(format!(
                "snapcompact could not bring the context under the limit: about {projected} \
                 tokens with {frames} frame{} against {limit} ({}); compact with an LLM \
                 summary instead",
                if frames == 1 { "" } else { "s" },
                if budget == Some(limit) {
                    format!("context window {window} less the reserve")
                } else {
                    "the dead-end rescue's limit".to_string()
                }
            )));
        }
        // The anchor block (issue 38) within what the archive saved, by every measure and
        // under the limit: it never undoes the reduction.
        let room = saved
            .min(base.before - after_estimate)
            .min(limit.map_or(u64::MAX, |l| ((l - projected) as f64 / ratio) as u64));
        let mut built = built;
        built.summary = plan.guide_with_anchors(session, &built.summary, &built.archive, room)?;
        return Ok(built);
    }
}

/// Commits a snapcompact plan (spec: snapcompact §9.2, compaction §8.4): the archive is built
/// locally ([`build_snapcompact`]) and stored under `preserveData.snapcompact`; the summary is
/// the reading guide, `method` is `snapcompact`, and `tokensAfter` counts the rebuilt context
/// with its frames. The hook's `preserveData` is merged in. An archive that would not make
/// the context smaller, or not fit the known window even with fewer frames, is refused with
/// `E_NO_REDUCTION` before anything is written (spec: compaction §8.3). Errors leave the
/// session unchanged.
pub fn commit_snapcompact(
    session: &mut Session,
    plan: &CompactionPlan,
    options: &ArchiveOptions,
    fallbacks: &FallbackFonts,
    now: i64,
) -> Result<Committed> {
    let built = qualified_archive(session, plan, options, fallbacks)?;
    let mut preserve = match built.preserve_data {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    if plan.settings.snapcompact.frame_storage == FrameStorage::Reference {
        // Frames the previous archive already stores are written as references to them
        // (ours, not the reference's format: `archive::stored`).
        if let Some(record) = preserve.get_mut(PRESERVE_KEY) {
            store_by_reference(session, plan.preparation.previous_compaction, record);
        }
    }
    if let Some(extra) = &plan.options.preserve_data {
        for (k, v) in extra {
            if k != PRESERVE_KEY {
                preserve.insert(k.clone(), v.clone());
            }
        }
    }
    let method = plan.options.method.as_deref().unwrap_or("snapcompact");
    append_plan_compaction(
        session,
        plan,
        built.summary,
        Some(built.short_summary),
        method,
        Some(Value::Object(preserve)),
        now,
    )
}

/// A compaction supplied by a `session_before_compact` hook (spec: compaction §8.8): stored
/// as is with `fromExtension: true` and no `method`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExtensionCompaction {
    pub summary: String,
    pub short_summary: Option<String>,
    /// Default: the preparation's first kept entry.
    pub first_kept_entry_id: Option<String>,
    /// Default: the preparation's `tokensBefore`.
    pub tokens_before: Option<u64>,
    pub details: Option<Value>,
    pub preserve_data: Option<Value>,
}

/// Commits a hook-supplied compaction for a preparation. `E_UNKNOWN_ENTRY` for a first kept
/// entry the session does not hold; `E_STALE_PLAN` if the leaf moved.
pub fn commit_extension_compaction(
    session: &mut Session,
    prep: &Preparation,
    result: ExtensionCompaction,
    now: i64,
) -> Result<Committed> {
    if session.leaf() != Some(prep.leaf) {
        return Err(Error::StalePlan {
            reason: "the leaf moved since the preparation".into(),
        });
    }
    let body = CompactionBody {
        summary: result.summary,
        short_summary: result.short_summary,
        first_kept_entry_id: result
            .first_kept_entry_id
            .unwrap_or_else(|| prep.first_kept_entry_id.clone()),
        tokens_before: Number::from(result.tokens_before.unwrap_or(prep.tokens_before)),
        tokens_after: None,
        method: None,
        provider_replay_through_entry_id: None,
        details: result.details,
        preserve_data: result.preserve_data,
        from_extension: true,
        warning: None,
    };
    append_with_tokens_after(session, prep.leaf, &body, now)
}

/// Commits a handoff plan (spec: compaction §5.9, issue: strategies): a new session whose
/// first entry is a `custom_message` of type `handoff` holding the document. The old session
/// is not changed. The new header names the old session as `parentSession`.
pub fn commit_handoff(
    session: &Session,
    plan: &CompactionPlan,
    new_session_id: String,
    ids: Box<dyn IdSource>,
    now: i64,
) -> Result<Session> {
    let document = plan
        .handoff_document()
        .ok_or_else(|| Error::PlanIncomplete {
            missing: plan.missing(),
        })?;
    plan.check_fresh(session)?;
    let cwd = crate::support::json::parse(&session.header_json())
        .ok()
        .and_then(|h| h.get("cwd").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_default();
    let mut next = Session::create(
        NewSession {
            id: new_session_id,
            cwd,
            now,
            parent_session: Some(session.header().id.clone()),
        },
        ids,
    );
    let summary = upsert_file_operations(
        &plan.with_anchors(session, document)?,
        &plan.file_lists.read_files,
        &plan.file_lists.modified_files,
        Some(&plan.preparation.file_ops.read),
    );
    let mut fields = Map::new();
    fields.insert("customType".into(), "handoff".into());
    fields.insert("content".into(), summary.into());
    fields.insert("display".into(), true.into());
    fields.insert(
        "details".into(),
        crate::support::json::object(vec![
            ("fromSession", session.header().id.as_str().into()),
            ("tokensBefore", plan.preparation.tokens_before.into()),
            ("readFiles", plan.file_lists.read_files.clone().into()),
            (
                "modifiedFiles",
                plan.file_lists.modified_files.clone().into(),
            ),
            (
                DETAILS_KEY,
                AnchorIndex::details_json_of(&plan.anchors(session)?.ranked()),
            ),
        ]),
    );
    fields.insert("attribution".into(), "agent".into());
    next.append("custom_message", fields, now)?;
    // The unanswered request the leaf ends with (the prompt a pre-request check found over the
    // threshold) goes on after the document as the user wrote it: the reference hands off
    // before the prompt joins the session and then sends it, and a summary is no place for a
    // question nobody has answered yet.
    // As a batch of their texts: copied as written, without a parse and a rewrite.
    let mut request = Vec::new();
    for i in unanswered_request(session, &plan.preparation.path) {
        if let Some(json) = session.message_json(i) {
            request.extend_from_slice(json.as_bytes());
            request.push(b'\n');
        }
    }
    next.append_messages(None, &request, now)
        .map_err(|e| e.error)?;
    Ok(next)
}

/// The user's messages at the end of `path` with no assistant message after them (in order):
/// the request the handoff must not leave to its summary.
fn unanswered_request(session: &Session, path: &[usize]) -> Vec<usize> {
    let mut out: Vec<usize> = path
        .iter()
        .rev()
        .take_while(|&&i| session.is_request(i))
        .copied()
        .collect();
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::base64::base64;

    /// The first bytes of a PNG of `w` × `h`: the signature and the IHDR chunk.
    fn png_head(w: u32, h: u32) -> String {
        let mut b = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13];
        b.extend_from_slice(b"IHDR");
        b.extend_from_slice(&w.to_be_bytes());
        b.extend_from_slice(&h.to_be_bytes());
        b.extend_from_slice(&[8, 2, 0, 0, 0, 0, 0, 0, 0]);
        base64(&b)
    }

    /// A session of `turns` turns; each a user message and an answer of about `tokens`
    /// estimated tokens, and (`tool_tokens` > 0) a tool call between them whose result holds
    /// about that many tokens of a file (long lines the archive's transcript trims). With a
    /// `rate`, every answer reports the prompt tokens of a provider counting at that rate.
    fn session_of(turns: usize, tokens: usize, tool_tokens: usize, rate: Option<f64>) -> Session {
        use crate::session::{NewSession, SequentialIds};
        use serde_json::json;
        let mut s = Session::create(
            NewSession {
                id: "ratio".into(),
                cwd: "/w".into(),
                now: 0,
                parent_session: None,
            },
            Box::new(SequentialIds::new()),
        );
        let words = |t: usize, n: usize| -> String {
            (0..n / 2)
                .map(|i| format!("w{t}x{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let assistant = |s: &Session, content: Value, stop: &str, now: i64| {
            let mut a = json!({"role": "assistant", "api": "anthropic-messages",
                "provider": "anthropic", "model": "claude-opus-4-7", "content": content,
                "stopReason": stop, "timestamp": now});
            if let Some(rate) = rate {
                let input = provider_count(s, rate);
                a["usage"] = json!({"input": input, "output": 50, "cacheRead": 0,
                    "cacheWrite": 0, "totalTokens": input + 50});
            }
            a
        };
        for t in 0..turns {
            let now = t as i64 * 1_000;
            let user = json!({"role": "user", "content": words(t, tokens), "timestamp": now});
            s.append_message(user, now).expect("user");
            if tool_tokens > 0 {
                let call = json!([{"type": "toolCall", "id": format!("c{t}"), "name": "read",
                    "arguments": {"path": format!("/w/f{t}.rs")}}]);
                let a = assistant(&s, call, "toolUse", now + 1);
                s.append_message(a, now + 1).expect("call");
                let file = "x".repeat(tool_tokens * 4);
                let result = json!({"role": "toolResult", "toolCallId": format!("c{t}"),
                    "toolName": "read", "content": [{"type": "text", "text": file}],
                    "isError": false, "timestamp": now + 2});
                s.append_message(result, now + 2).expect("result");
            }
            let answer = json!([{"type": "text", "text": words(t + 1_000, tokens)}]);
            let a = assistant(&s, answer, "stop", now + 3);
            s.append_message(a, now + 3).expect("assistant");
        }
        s
    }

    /// The live context as a provider counting text at `rate` times the core's estimate
    /// counts it, each image at the flat frame charge.
    fn provider_count(s: &Session, rate: f64) -> u64 {
        let ctx = crate::context::build_context(s, &BuildOptions::default()).expect("context");
        let all = ctx.estimated_tokens(s);
        let images = ctx.to_json(s).matches("\"type\":\"image\"").count() as u64;
        let flat = (images * FRAME_TOKEN_ESTIMATE).min(all);
        ((all - flat) as f64 * rate).ceil() as u64 + flat
    }

    /// A snapcompact plan of `s` for an Opus reader, keeping little.
    fn snap_plan(s: &Session) -> CompactionPlan {
        use crate::compaction::plan::{plan_compaction, PlanOptions};
        use crate::render::shape::resolve::Target;
        use crate::settings::CompactionSettings;
        let settings = CompactionSettings {
            strategy: Strategy::Snapcompact,
            keep_recent_tokens: 100,
            ..CompactionSettings::default()
        };
        let options = PlanOptions {
            model: Target {
                id: Some("claude-opus-4-7".into()),
                api: Some("anthropic-messages".into()),
            },
            ..PlanOptions::default()
        };
        plan_compaction(s, &settings, options).expect("plan")
    }

    /// Issue 36, the agent fuzz target's finding: behind a host that has not measured the
    /// provider's text rate, an archive smaller only where text costs what the core estimates
    /// is refused when the provider's reported usage shows it counts text at half. The 12
    /// turns of dense words print into frames that take about as many tokens as the text they
    /// replace: smaller at 1x, but a provider counting text at 0.5x, which bills the frames
    /// all the same, would count the next request about two thirds larger.
    #[test]
    fn an_archive_smaller_only_at_the_estimate_is_refused_when_usage_shows_cheap_text() {
        let fonts = FallbackFonts::new();
        let (turns, tokens) = (12, 1_500);
        let mut s = session_of(turns, tokens, 0, Some(0.5));
        let plan = snap_plan(&s);
        let bytes = s.to_bytes();
        let unknown = snapcompact_options(&plan).expect("options");
        assert_eq!(unknown.text_ratio, None);
        let e = commit_snapcompact(&mut s, &plan, &unknown, &fonts, 1).expect_err("refused");
        assert_eq!(e.code(), ErrorCode::NoReduction, "{e}");
        assert!(e.to_string().contains("reported usage"), "{e}");
        assert_eq!(s.to_bytes(), bytes, "nothing written");
        // A host that says the provider counts at the estimate gets it: smaller at 1x, and
        // larger at 0.5x — what the refusal spared the uncalibrated host.
        let at = |rate: f64| ArchiveOptions {
            text_ratio: Some(rate),
            ..unknown.clone()
        };
        let (before_1x, before_half) = (provider_count(&s, 1.0), provider_count(&s, 0.5));
        commit_snapcompact(&mut s, &plan, &at(1.0), &fonts, 1).expect("committed at 1x");
        assert!(provider_count(&s, 1.0) < before_1x);
        assert!(provider_count(&s, 0.5) > before_half);
        // The same history reported at 1x is archived behind an uncalibrated host.
        let mut s = session_of(turns, tokens, 0, Some(1.0));
        let plan = snap_plan(&s);
        commit_snapcompact(&mut s, &plan, &unknown, &fonts, 1).expect("committed");
    }

    /// Whatever the session and the rate its provider reported usage at, an archive committed
    /// behind a host that has not measured the rate lowers the next request as that provider
    /// counts it; and tool outputs the archive's transcript trims are archived at every rate
    /// (the test is not the refusal of every archive).
    #[test]
    fn an_archive_committed_at_an_unmeasured_rate_is_smaller_at_the_reported_rate() {
        let fonts = FallbackFonts::new();
        let mut committed = 0;
        for rate in [TEXT_RATIO_BOUNDS.0, 0.8, 1.0, 2.0, TEXT_RATIO_BOUNDS.1] {
            for (turns, tokens, tool) in [
                (6, 200, 0),
                (12, 1_500, 0),
                (20, 1_500, 0),
                (6, 200, 8_000),
                (10, 600, 20_000),
            ] {
                let mut s = session_of(turns, tokens, tool, Some(rate));
                let plan = snap_plan(&s);
                let before = provider_count(&s, rate);
                let options = snapcompact_options(&plan).expect("options");
                if commit_snapcompact(&mut s, &plan, &options, &fonts, 1).is_err() {
                    continue;
                }
                committed += 1;
                let after = provider_count(&s, rate);
                assert!(
                    after < before,
                    "{turns} turns of {tokens} (tool {tool}): {before} -> {after} at {rate}x"
                );
            }
        }
        assert!(committed >= 10, "only {committed} committed");
    }

    /// Issue 36 finding 4: a short frame weighs less than a full one, as a provider billing
    /// pixels charges it; a flat-priced provider, or a frame whose size is unknown, the flat
    /// charge.
    #[test]
    fn frames_weigh_what_their_pixels_cost() {
        assert_eq!(png_size(&png_head(1568, 704)), Some((1568, 704)));
        assert_eq!(png_size("blob:sha256:abcd"), None);
        let full = frame_charge(&png_head(1568, 1568), BillingFamily::Anthropic);
        assert_eq!(full, FRAME_TOKEN_ESTIMATE);
        let short = frame_charge(&png_head(1568, 704), BillingFamily::Anthropic);
        // 56 × 26 patches of 56 × 56.
        assert_eq!(short, (FRAME_TOKEN_ESTIMATE * 56 * 26).div_ceil(56 * 56));
        let openai = frame_charge(&png_head(1024, 512), BillingFamily::OpenAi);
        assert_eq!(openai, FRAME_TOKEN_ESTIMATE.div_ceil(2));
        assert_eq!(
            frame_charge(&png_head(1568, 704), BillingFamily::Google),
            FRAME_TOKEN_ESTIMATE
        );
        assert_eq!(
            frame_charge("blob:sha256:abcd", BillingFamily::Anthropic),
            FRAME_TOKEN_ESTIMATE
        );
    }
}
