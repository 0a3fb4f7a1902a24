//! The first tier of the dead-end rescue (spec: compaction §8.3 "No preparation ... dead-end
//! rescue", §8.5): the latest compaction of the live branch is a snapcompact archive that is
//! itself what fills the context, and nothing after it can be summarized. No plan of any
//! method helps then, and neither the shake nor dropping images reach a compaction entry;
//! the archive is built again from its own carried text with fewer frames (the oldest text
//! goes first) and appended as a new snapcompact compaction that keeps the same
//! `firstKeptEntryId`, so the kept tail is untouched. Local only: no summarizer, no network.
//!
//! [`plan_archive_rebuild`] makes the plan (a snapcompact plan with nothing new to archive);
//! [`commit_snapcompact`](super::commit::commit_snapcompact) commits it with its usual fit
//! and reduction tests, under the limit the walk asks for
//! ([`ArchiveOptions::limit_tokens`](super::snapcompact::ArchiveOptions::limit_tokens)).

use crate::archive::get_preserved_archive;
use crate::compaction::plan::{plan_prepared, CompactionPlan, PlanOptions};
use crate::compaction::prepare::Preparation;
use crate::error::{Error, Result};
use crate::session::{CompactionBody, EntryKind, Session};
use crate::settings::{CompactionSettings, Strategy};
use crate::summary::fileops::FileOperations;
use crate::tokens::{self, EstimateOptions};

fn nothing(reason: &str) -> Error {
    Error::NothingToCompact {
        reason: reason.into(),
    }
}

/// The plan that rebuilds the latest snapcompact archive of the branch at `options.prepare`'s
/// leaf (default: the session's) with nothing new in it (module docs). `E_NOTHING_TO_COMPACT`
/// when the latest compaction is not a snapcompact archive of more than one frame (a reset
/// boundary after it counts as none), or its first kept entry is not on the branch.
pub fn plan_archive_rebuild(
    session: &Session,
    settings: &CompactionSettings,
    options: PlanOptions,
) -> Result<CompactionPlan> {
    let settings = CompactionSettings {
        strategy: Strategy::Snapcompact,
        ..settings.clone()
    };
    let settings = &*settings.for_window(options.context_window);
    let leaf = options
        .prepare
        .leaf
        .or_else(|| session.leaf())
        .ok_or_else(|| nothing("the session has no leaf"))?;
    let path = session.path_to(leaf);
    let entries = session.entries();
    let kind = |i: usize| entries[i].kind();
    let Some(at) = path.iter().rposition(|&i| kind(i) == EntryKind::Compaction) else {
        return Err(nothing("no compaction to rebuild"));
    };
    if path[at..]
        .iter()
        .any(|&i| kind(i) == EntryKind::ResetBoundary)
    {
        return Err(nothing("a reset boundary follows the latest compaction"));
    }
    let stale: CompactionBody = session.body(path[at])?;
    let frames = get_preserved_archive(stale.preserve_data.as_ref()).map_or(0, |a| a.frames.len());
    if frames <= 1 {
        return Err(nothing(
            "the latest compaction is not a snapcompact archive of more than one frame",
        ));
    }
    // The kept tail: the retained entries before the archive, then everything after it.
    let from = path[..at]
        .iter()
        .position(|&i| entries[i].id() == stale.first_kept_entry_id)
        .unwrap_or(at + 1);
    let carries = |i: usize| {
        matches!(
            kind(i),
            EntryKind::Message | EntryKind::CustomMessage | EntryKind::BranchSummary
        )
    };
    let recent: Vec<usize> = path[from..]
        .iter()
        .copied()
        .filter(|&i| carries(i))
        .collect();
    let first_kept = *path
        .get(from)
        .filter(|_| from < at)
        .or_else(|| recent.first())
        .ok_or_else(|| nothing("the latest compaction keeps nothing to anchor a rebuild"))?;
    let mut file_ops = FileOperations::new();
    if let Some(details) = stale.details.as_ref().filter(|_| !stale.from_extension) {
        file_ops.add_details(details);
    }
    let tokens_before = session
        .last_assistant_usage(&path)
        .map(|(_, u)| tokens::context_tokens(&u))
        .or_else(|| stale.tokens_before.as_u64())
        .unwrap_or(0);
    let tokens_recent = recent
        .iter()
        .map(|&i| session.entry_tokens(i, EstimateOptions::default()))
        .sum();
    let prep = Preparation {
        leaf,
        previous_compaction: Some(path[at]),
        previous_summary: Some(stale.summary),
        previous_preserve_data: stale.preserve_data,
        previous_from_extension: stale.from_extension,
        messages_to_summarize: Vec::new(),
        turn_prefix: Vec::new(),
        recent,
        first_kept,
        first_kept_entry_id: entries[first_kept].id().to_string(),
        is_split_turn: false,
        turn_start: None,
        tokens_before,
        keep_recent_tokens: settings.keep_recent_tokens,
        ratio: 0.0,
        file_ops,
        tokens_to_summarize: 0,
        tokens_turn_prefix: 0,
        tokens_recent,
        path,
    };
    plan_prepared(session, settings, options, prep)
}
