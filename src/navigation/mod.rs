//! Branch summaries and tree navigation (spec: compaction §7).
//!
//! Moving the leaf of a session to another entry of its tree (`/tree`, `navigateTree`) can
//! leave a branch behind. Its summary is attached at the place the user lands on, so the
//! conversation there knows what the abandoned branch did. The cycle is sans-IO, like
//! compaction:
//!
//! 1. [`plan_navigation`] collects the abandoned entries ([`collect_entries_for_branch_summary`],
//!    §7.1), picks the newest of them that fit the budget ([`prepare_branch_entries`], §7.2,
//!    §7.3), and writes at most one ready [`SummaryRequest`] (§7.4). It also works out where
//!    the leaf lands and what goes back into the editor (§7.5 step 6). Nothing changes in the
//!    session.
//! 2. The host runs the `session_before_tree` hook (§8.8) — it may cancel (then the plan is
//!    simply dropped) or supply a summary — and asks the summarizer when it still needs to.
//! 3. [`commit_navigation`] applies the outcome (§7.5 step 7): a `branch_summary` entry at
//!    the landing place, or a plain leaf move; then the label. A plan whose session moved on
//!    is refused and the session is left byte-identical.
//!
//! Entries are session indices throughout; ids appear where the result leaves the core.
//!
//! Files follow the cycle: `collect` (§7.1), `prepare` (§7.2, §7.3; `measure` sizes a tool
//! result in place), `routes` (who writes the summary, §5.8, §7.5 step 5), `plan` (§7.4
//! steps 1–3, §7.5 steps 1–6), `commit` (§7.4 step 6, §7.5 steps 7–8).
//!
//! [`SummaryRequest`]: crate::summary::request::SummaryRequest

mod collect;
mod commit;
mod measure;
mod plan;
mod prepare;
mod routes;

pub use collect::collect_entries_for_branch_summary;
pub use commit::{branch_summary_text, commit_navigation, NavigationAnswer, NavigationCommit};
pub use plan::{
    branch_prompt, branch_token_budget, plan_navigation, NavigateOptions, NavigationPlan,
};
pub use prepare::{
    branch_entry_tokens, branch_input_message, gives_branch_message, prepare_branch_entries,
    prepare_pi_branch_entries, BranchPreparation,
};
pub use routes::{branch_reserve_tokens, summary_routes, SummaryRoute};

use crate::error::{Error, Result};
use crate::session::{Entry, Session};

/// Context window assumed for the summarizer when the model reports none (spec: compaction
/// §7.4 step 1).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
/// Default of `branchSummary.reserveTokens` (spec: compaction §7.5, §9.2).
pub const DEFAULT_RESERVE_TOKENS: u64 = 16_384;
/// The summary written when the branch holds nothing the summarizer could read (spec:
/// compaction §7.4 step 2).
pub const NO_CONTENT_TO_SUMMARIZE: &str = "No content to summarize";
/// The summary written when a generated summary comes out empty (spec: compaction §7.4
/// step 6).
pub const NO_SUMMARY_GENERATED: &str = "No summary generated";
/// Id of the one summarizer request of a navigation plan.
pub const REQUEST_ID: &str = "branch-summary";
/// A summary entry that breaks the budget is still taken while less than this share of the
/// budget is used (spec: compaction §7.3 step 2).
const SUMMARY_ENTRY_SHARE: f64 = 0.9;

/// The entry at `index`, or `E_INVALID_ARGUMENT` for an index the session does not hold.
fn entry_at(session: &Session, index: usize) -> Result<&Entry> {
    session.entry(index).ok_or_else(|| Error::InvalidArgument {
        what: format!(
            "entry index {index} is out of range (the session has {} entries)",
            session.len()
        ),
    })
}

/// Checks every index of `entries` (see [`entry_at`]).
fn check_indices(session: &Session, entries: &[usize]) -> Result<()> {
    entries
        .iter()
        .try_for_each(|&i| entry_at(session, i).map(|_| ()))
}
