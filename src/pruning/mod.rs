//! Tool-output pruning (spec: compaction §6): stored tool results are blanked *in place* —
//! their content becomes one short notice and `prunedAt` is stamped — so the next prompt is
//! smaller while every call keeps its result (entries are never removed).
//!
//! Two passes over a branch, each split into a plan (pure, the session is only read) and an
//! apply step (the only mutation):
//! - the per-turn **stale pass** ([`prune_superseded_tool_results`], §6.5) blanks results a
//!   newer read of the same file made stale (§6.3) and results the tool flagged `useless`
//!   (§6.4), near the tail of the branch or everywhere once the session sat idle;
//! - the **threshold prune** ([`prune_tool_outputs`], §6.6) blanks old tool output beyond the
//!   newest `protectTokens`, but only when that frees at least `minimumSavings`.
//!
//! Time is an input (`now`, ms). Token counts are the estimates the load pass recorded
//! ([`Session::entry_tokens`]); facts about tool results come from the facts it recorded too,
//! borrowed from their lines ([`Session::result_facts`]), and those of read calls decoded
//! once into per-entry memos, so a pass over a freshly opened branch parses no message.
//! Applying a plan splices each result's line at the `content` and `prunedAt` spans the facts
//! hold, without scanning it, and records the new line's facts from the old ones.
//!
//! Files: `config` (the settings of both passes), `keys` (supersede keys, §6.2), `rows` (the
//! branch's tool results and their facts), `plan` (marks and candidates, §6.3–§6.6), `apply`
//! (the in-place edit and its report).
//!
//! [`Session::entry_tokens`]: crate::session::Session::entry_tokens
//! [`Session::result_facts`]: crate::session::Session::result_facts

mod apply;
pub(crate) mod config;
mod keys;
mod originals;
mod plan;
mod rows;

pub use apply::{
    apply_prune, apply_prune_plan, prune_superseded_tool_results, prune_tool_outputs, PruneReport,
};
pub use config::{KeepBoundary, PruneConfig, PruneSubject, SupersedeComplete};
pub use keys::read_tool_supersede_key;
pub use originals::{
    apply_prune_originals, pruned_originals, PrunedOriginal, PRUNED_ARTIFACT_KIND,
};
pub use plan::{
    collect_superseded, collect_useless, plan_superseded_tool_results, plan_tool_outputs,
    PruneCandidate, PrunePlan, PruneReason,
};

// ----- constants (spec: compaction §6.1) -------------------------------------------------

/// Newest tool-output tokens the threshold prune leaves untouched (`protectTokens`).
pub const DEFAULT_PROTECT_TOKENS: u64 = 40_000;
/// Least total savings for the threshold prune to change anything (`minimumSavings`).
pub const DEFAULT_MINIMUM_SAVINGS: u64 = 20_000;
/// Age-based pruning never touches a result estimated below this (`MIN_PRUNE_TOKENS`).
pub const MIN_PRUNE_TOKENS: u64 = 50;
/// Suffix limit of the stale pass's tail rule (`suffixTokenLimit`).
pub const DEFAULT_SUFFIX_TOKEN_LIMIT: u64 = 8_000;
/// The engine's default idle flush: 30 minutes.
pub const DEFAULT_IDLE_FLUSH_MS: u64 = 30 * 60 * 1000;
/// The idle flush the coding agent's session passes: 90 minutes, longer than the 1 h
/// Anthropic cache lifetime, so an idle flush never breaks a cache that is still warm.
pub const SESSION_IDLE_FLUSH_MS: u64 = 90 * 60 * 1000;
/// `cacheWarmSuffixTokens` the coding agent's session passes to the threshold prune.
pub const SESSION_CACHE_WARM_SUFFIX_TOKENS: u64 = 8_000;
/// The tool whose results are protected by default.
pub const DEFAULT_PROTECTED_TOOL: &str = "skill";
/// Notice of a result a newer read of the same file superseded.
pub const SUPERSEDED_NOTICE: &str = "[Superseded by a newer read of this file]";
/// Notice of a result its tool flagged `useless`.
pub const USELESS_NOTICE: &str = "[Uneventful result elided]";
/// The `protectedTools` entry (JSON configs, as the reference's configs name it) that stands
/// for the predicate protecting `read` results of `skill://` paths.
pub const SKILL_READ_MATCHER: &str = "isSkillReadToolResult";

/// The age notice: `[Output truncated - N tokens]`, N = estimated tokens of the original.
pub fn age_notice(tokens: u64) -> String {
    let mut notice = String::with_capacity(40);
    notice.push_str("[Output truncated - ");
    crate::support::json::js::write_uint(&mut notice, tokens);
    notice.push_str(" tokens]");
    notice
}

/// Tokens one prune frees (spec: compaction §6.1): `max(0, tokens − ceil(noticeChars / 4))`,
/// with characters counted as JavaScript does (UTF-16 code units).
pub fn prune_savings(tokens: u64, notice: &str) -> u64 {
    let chars: u64 = notice.chars().map(|c| c.len_utf16() as u64).sum();
    tokens.saturating_sub(chars.div_ceil(4))
}
