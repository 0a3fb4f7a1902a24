//! `prepareCompaction` (spec: compaction §4): which messages a compaction summarizes, which
//! it keeps verbatim, and where the cut falls.
//!
//! The preparation follows the [N+] effective-sequence semantics (spec: compaction §4.4):
//! the messages since the latest readable compaction — including the original entries that
//! compaction kept — form one sequence that is partitioned into exactly three regions:
//! `messages_to_summarize`, `turn_prefix` and `recent`. Preparation never changes the session.

use crate::error::{Error, Result};
use crate::session::message::Role;
use crate::session::{CompactionBody, EntryKind, Session};
use crate::settings::CompactionSettings;
use crate::summary::fileops::FileOperations;
use crate::tokens::{self, EstimateOptions};
use serde_json::Value;

/// One item of the sequence `find_cut_point` walks (spec: compaction §4.1–§4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutItem {
    /// A `message` entry with its role and token estimate.
    Message { role: Role, tokens: u64 },
    /// A `custom_message` entry with the token estimate of the message it carries.
    CustomMessage { tokens: u64 },
    /// A `branch_summary` entry with the token estimate of the message it carries.
    BranchSummary { tokens: u64 },
    /// A `compaction` entry.
    Compaction,
    /// A `reset_boundary` entry.
    ResetBoundary,
    /// Any other entry (settings changes, labels, custom state, …).
    Metadata,
}

impl CutItem {
    /// Valid cut points (spec: compaction §4.1): messages of the roles that can start the
    /// kept region, and custom-message and branch-summary entries. Never a tool result, never
    /// metadata. A `custom`-role message is not a cut point in oh-my-pi.
    pub fn is_cut_point(self) -> bool {
        match self {
            CutItem::Message { role, .. } => matches!(
                role,
                Role::User
                    | Role::Assistant
                    | Role::BashExecution
                    | Role::HookMessage
                    | Role::BranchSummary
                    | Role::CompactionSummary
            ),
            CutItem::CustomMessage { .. } | CutItem::BranchSummary { .. } => true,
            CutItem::Compaction | CutItem::ResetBoundary | CutItem::Metadata => false,
        }
    }

    /// Entries a turn starts at (spec: compaction §4.2).
    fn starts_turn(self) -> bool {
        match self {
            CutItem::Message { role, .. } => matches!(role, Role::User | Role::BashExecution),
            CutItem::CustomMessage { .. } | CutItem::BranchSummary { .. } => true,
            _ => false,
        }
    }

    /// The estimate of the message the entry carries (0 for one that carries none).
    fn tokens(self) -> u64 {
        match self {
            CutItem::Message { tokens, .. }
            | CutItem::CustomMessage { tokens }
            | CutItem::BranchSummary { tokens } => tokens,
            _ => 0,
        }
    }

    /// True for the entries that carry a message (`message`, `custom_message`,
    /// `branch_summary`).
    fn carries_message(self) -> bool {
        matches!(
            self,
            CutItem::Message { .. } | CutItem::CustomMessage { .. } | CutItem::BranchSummary { .. }
        )
    }
}

/// Where a cut falls (spec: compaction §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutPoint {
    /// Index of the first item kept verbatim.
    pub first_kept: usize,
    /// Start of the turn the cut splits, when it splits one.
    pub turn_start: Option<usize>,
    /// True when the cut falls inside a turn (not on an entry that starts one).
    pub is_split_turn: bool,
}

/// `findCutPoint(entries, start, end, keepRecentTokens)` (spec: compaction §4.3, as the
/// reference 18.2.3 runs it): walk back from the end summing the estimate of every entry
/// that carries a message — `custom_message` and `branch_summary` entries included, so a
/// large branch summary weighs on the kept region like any message — and test the budget
/// only at valid cut points: a cut point is accepted while the total from it to the end is
/// within `keep_recent_tokens`, and the walk stops at the first one over it. The kept region
/// is thus the oldest run of whole groups that fits, and the newest group is kept even when
/// it alone exceeds the budget (`conformance/large-session/prepare.json` pins this).
///
/// A cut on an entry that starts a turn (user, `bashExecution`, custom message, branch
/// summary) is not a split turn; otherwise the turn start is searched backwards from the
/// cut. Then entries that carry no message just before the cut (settings changes, labels)
/// are pulled into the kept region, stopping at a compaction or reset boundary.
pub fn find_cut_point(
    items: &[CutItem],
    start: usize,
    end: usize,
    keep_recent_tokens: u64,
) -> CutPoint {
    let end = end.min(items.len());
    let cuts: Vec<usize> = (start..end).filter(|&i| items[i].is_cut_point()).collect();
    let Some(&last_cut) = cuts.last() else {
        return CutPoint {
            first_kept: start,
            turn_start: None,
            is_split_turn: false,
        };
    };
    let mut cut = last_cut;
    // The candidates still to test, newest last.
    let mut candidates = cuts.as_slice();
    let mut acc = 0u64;
    for i in (start..end).rev() {
        acc = acc.saturating_add(items[i].tokens());
        let Some((&candidate, older)) = candidates.split_last() else {
            break;
        };
        if i != candidate {
            continue;
        }
        if acc > keep_recent_tokens {
            break;
        }
        cut = i;
        candidates = older;
    }
    let starts_turn = items[cut].starts_turn();
    let turn_start = if starts_turn {
        None
    } else {
        (start..=cut).rev().find(|&i| items[i].starts_turn())
    };
    while cut > start
        && !matches!(items[cut - 1], CutItem::Compaction | CutItem::ResetBoundary)
        && !items[cut - 1].carries_message()
    {
        cut -= 1;
    }
    CutPoint {
        first_kept: cut,
        turn_start,
        is_split_turn: turn_start.is_some(),
    }
}

/// Options of [`prepare_compaction`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PrepareOptions {
    /// Provider of the model that will read the context (decides whether a provider-native
    /// compaction can be reused; spec: compaction §4.4 "Readability").
    pub active_provider: Option<String>,
    /// The leaf to compact; default: the session's leaf.
    pub leaf: Option<usize>,
}

/// What a compaction will do (spec: compaction §4.5 `CompactionPreparation`). Indices are
/// entry indices of the session.
#[derive(Debug, Clone, PartialEq)]
pub struct Preparation {
    /// The compacted path, root first.
    pub path: Vec<usize>,
    /// The leaf at preparation time (commit refuses a session that moved on).
    pub leaf: usize,
    /// The previous (readable) compaction the summary builds on.
    pub previous_compaction: Option<usize>,
    pub previous_summary: Option<String>,
    pub previous_preserve_data: Option<Value>,
    /// Whether the previous compaction came from an extension (its file lists are not
    /// carried forward).
    pub previous_from_extension: bool,
    /// The effective sequence, partitioned into the three regions below.
    pub messages_to_summarize: Vec<usize>,
    pub turn_prefix: Vec<usize>,
    pub recent: Vec<usize>,
    /// The first entry kept verbatim.
    pub first_kept: usize,
    pub first_kept_entry_id: String,
    pub is_split_turn: bool,
    /// Where the split turn starts.
    pub turn_start: Option<usize>,
    /// Context tokens of the last valid usage on the path (spec: compaction §3.5).
    pub tokens_before: u64,
    /// `keepRecentTokens` after the usage/estimate adaptation (spec: compaction §3.4).
    pub keep_recent_tokens: u64,
    /// `promptTokens / estimate` (0 without usage).
    pub ratio: f64,
    /// File operations of the summarized messages (and a split turn's prefix), seeded from
    /// the previous compaction's lists unless an extension wrote it (spec: compaction §4.4
    /// step 11, §5.10).
    pub file_ops: FileOperations,
    /// Estimated tokens per region.
    pub tokens_to_summarize: u64,
    pub tokens_turn_prefix: u64,
    pub tokens_recent: u64,
}

/// Why an entry is in the sequence, and how the cut walk sees it.
fn cut_item(session: &Session, index: usize) -> CutItem {
    let e = &session.entries()[index];
    match e.kind() {
        EntryKind::Message => CutItem::Message {
            role: e.role().unwrap_or(Role::Other),
            tokens: session.entry_tokens(index, EstimateOptions::default()),
        },
        EntryKind::CustomMessage => CutItem::CustomMessage {
            tokens: session.entry_tokens(index, EstimateOptions::default()),
        },
        EntryKind::BranchSummary => CutItem::BranchSummary {
            tokens: session.entry_tokens(index, EstimateOptions::default()),
        },
        EntryKind::Compaction => CutItem::Compaction,
        EntryKind::ResetBoundary => CutItem::ResetBoundary,
        _ => CutItem::Metadata,
    }
}

/// A compaction's provider-native replay payload, if it has one: `(provider, through entry)`.
fn native_replay(body: &CompactionBody) -> Option<Option<String>> {
    let payload = body
        .preserve_data
        .as_ref()?
        .get(crate::session::preserve::OPENAI_REMOTE)?;
    Some(
        payload
            .get("provider")
            .and_then(Value::as_str)
            .map(str::to_string),
    )
}

/// Whether a previous compaction can be read by the next request (spec: compaction §4.4
/// "Readability"): local summaries always; a provider-native replay only with remote
/// compaction enabled and an active model of the payload's provider (or no active model,
/// when the payload is reused as is).
fn readable(
    body: &CompactionBody,
    settings: &CompactionSettings,
    active_provider: Option<&str>,
) -> bool {
    match native_replay(body) {
        None => true,
        Some(provider) => {
            settings.remote_enabled
                && match active_provider {
                    None => true,
                    Some(active) => provider.as_deref() == Some(active),
                }
        }
    }
}

/// Position in `path` of the entry with `id`. Ids are unique, so the search runs from the
/// end: the entries a compaction keeps lie just before it, and a long history is not walked.
/// (A file with duplicate ids falls back to the first entry on `path` that has it.)
fn position_before(session: &Session, path: &[usize], id: &str) -> Option<usize> {
    let index = session.index_of(id)?;
    path.iter()
        .rposition(|&i| i == index)
        .or_else(|| path.iter().position(|&i| session.entries()[i].id() == id))
}

/// `prepareCompaction` (spec: compaction §4.4 with the [N+] effective sequence). Errors:
/// `E_ALREADY_COMPACTED` when the path ends with a compaction, `E_NOTHING_TO_COMPACT` when
/// nothing would be summarized.
pub fn prepare_compaction(
    session: &Session,
    settings: &CompactionSettings,
    options: &PrepareOptions,
) -> Result<Preparation> {
    let leaf = options
        .leaf
        .or_else(|| session.leaf())
        .ok_or(Error::NothingToCompact {
            reason: "the session has no leaf".into(),
        })?;
    let path_vec = session.path_to(leaf);
    // Slices, not the `Vec`: its indexing stays a call when built for size.
    let (path, entries) = (path_vec.as_slice(), session.entries());
    let kind_at = |pos: usize| entries[path[pos]].kind();
    if path
        .last()
        .is_some_and(|&i| entries[i].kind() == EntryKind::Compaction)
    {
        return Err(Error::AlreadyCompacted);
    }
    if crate::context::projection::is_pi_family(session, path) {
        return pi_preparation(session, settings, leaf, path_vec);
    }

    // The latest readable compaction, and the latest reset boundary after it.
    let mut previous: Option<(usize, CompactionBody)> = None;
    for pos in (0..path.len()).rev() {
        if kind_at(pos) != EntryKind::Compaction {
            continue;
        }
        if let Some(body) = readable_body(session, path[pos], settings, options)? {
            previous = Some((pos, body));
            break;
        }
    }
    let reset = if session.has_reset_boundary() {
        path.iter()
            .rposition(|&i| entries[i].kind() == EntryKind::ResetBoundary)
    } else {
        None
    };
    if let (Some(r), Some((p, _))) = (reset, &previous) {
        if r > *p {
            previous = None;
        }
    }
    // An older reset boundary stays a lower bound for recovering retained entries.
    let floor = reset.map_or(0, |r| r + 1);

    // The effective sequence: positions in `path` of the entries that carry messages.
    let mut positions: Vec<usize> = Vec::new();
    let carries = |pos: usize| {
        matches!(
            kind_at(pos),
            EntryKind::Message | EntryKind::CustomMessage | EntryKind::BranchSummary
        )
    };
    match &previous {
        None => positions.extend((floor..path.len()).filter(|&p| carries(p))),
        Some((p, body)) => {
            let start = match native_replay(body) {
                // A reusable provider-native compaction: start after the entry its replay
                // covers when that is an older snapshot, else after the record.
                Some(_) => body
                    .provider_replay_through_entry_id
                    .as_deref()
                    .and_then(|id| position_before(session, &path[..*p], id))
                    .map_or(p + 1, |q| q + 1),
                // A local summary: its retained original entries come back first (unless
                // `firstKeptEntryId` names an entry after the record).
                None => position_before(session, &path[..*p], &body.first_kept_entry_id)
                    .map_or(p + 1, |k| k.max(floor)),
            };
            positions.extend((start..path.len()).filter(|&q| carries(q)));
        }
    }
    let sequence: Vec<usize> = positions.iter().map(|&p| path[p]).collect();
    let items: Vec<CutItem> = sequence.iter().map(|&i| cut_item(session, i)).collect();

    // tokensBefore, and the keep budget scaled by the provider/estimate ratio (§3.4, §3.5).
    let last_usage = session.last_assistant_usage(path);
    let tokens_before = last_usage
        .as_ref()
        .map_or(0, |(_, u)| tokens::context_tokens(u));
    let estimate: u64 = sequence
        .iter()
        .map(|&i| session.entry_tokens(i, EstimateOptions::default()))
        .sum();
    let (keep, ratio) = match &last_usage {
        Some((_, u)) => tokens::adapt_keep_recent_tokens(
            settings.keep_recent_tokens,
            tokens::prompt_tokens(u),
            estimate,
        ),
        None => (settings.keep_recent_tokens, 0.0),
    };

    if items.is_empty() {
        return Err(Error::NothingToCompact {
            reason: "no messages since the last compaction".into(),
        });
    }
    let cut = find_cut_point(&items, 0, items.len(), keep);
    let history_end = if cut.is_split_turn {
        cut.turn_start.unwrap_or(cut.first_kept)
    } else {
        cut.first_kept
    };
    let messages_to_summarize = sequence[..history_end].to_vec();
    let turn_prefix = match cut.turn_start {
        Some(t) if cut.is_split_turn => sequence[t..cut.first_kept].to_vec(),
        _ => Vec::new(),
    };
    let recent = sequence[cut.first_kept..].to_vec();
    if messages_to_summarize.is_empty() && turn_prefix.is_empty() {
        return Err(Error::NothingToCompact {
            reason: "everything since the last compaction fits in the kept region".into(),
        });
    }
    let sum = |v: &[usize]| -> u64 {
        v.iter()
            .map(|&i| session.entry_tokens(i, EstimateOptions::default()))
            .sum()
    };
    let first_kept = sequence[cut.first_kept];
    let mut file_ops = FileOperations::new();
    if let Some((_, body)) = &previous {
        if let Some(details) = body.details.as_ref().filter(|_| !body.from_extension) {
            file_ops.add_details(details);
        }
    }
    for &i in messages_to_summarize.iter().chain(&turn_prefix) {
        session.for_each_file_call(i, |tool, path| file_ops.add(tool, path));
    }
    let (previous_compaction, previous_summary, previous_preserve_data, previous_from_extension) =
        match previous {
            Some((p, body)) => (
                Some(path[p]),
                Some(body.summary),
                body.preserve_data,
                body.from_extension,
            ),
            None => (None, None, None, false),
        };
    Ok(Preparation {
        leaf,
        previous_compaction,
        previous_summary,
        previous_preserve_data,
        previous_from_extension,
        file_ops,
        tokens_to_summarize: sum(&messages_to_summarize),
        tokens_turn_prefix: sum(&turn_prefix),
        tokens_recent: sum(&recent),
        messages_to_summarize,
        turn_prefix,
        recent,
        first_kept,
        first_kept_entry_id: session.entries()[first_kept].id().to_string(),
        is_split_turn: cut.is_split_turn,
        turn_start: cut.turn_start.map(|t| sequence[t]),
        tokens_before,
        keep_recent_tokens: keep,
        ratio,
        path: path_vec,
    })
}

/// The body of the compaction entry `i` when a compaction can build on it ([`readable`]).
/// The body of the search over the path, a function of its own (issue 42,
/// docs/decisions/performance-notes.md#loop-bodies).
#[inline(never)]
fn readable_body(
    session: &Session,
    i: usize,
    settings: &CompactionSettings,
    options: &PrepareOptions,
) -> Result<Option<CompactionBody>> {
    let body: CompactionBody = session.body(i)?;
    Ok(readable(&body, settings, options.active_provider.as_deref()).then_some(body))
}

/// The entries that carry `messages`, in order, each once.
fn carrying_entries(messages: &[crate::context::ContextMessage]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for m in messages {
        if out.last() != Some(&m.entry) {
            out.push(m.entry);
        }
    }
    out
}

/// [`prepare_compaction`] of a pi-family path: pi's preparation on the edited projection
/// ([`prepare_pi_compaction`]; `conformance/pi-1.6` `prepareCompaction`), its regions given as
/// the entries that carry the edited messages (an entry an edit omitted is in none).
fn pi_preparation(
    session: &Session,
    settings: &CompactionSettings,
    leaf: usize,
    path: Vec<usize>,
) -> Result<Preparation> {
    let Some(p) = prepare_pi_compaction(session, &path, settings.keep_recent_tokens)? else {
        return Err(Error::NothingToCompact {
            reason: "everything since the last compaction fits in the kept region".into(),
        });
    };
    let messages_to_summarize = carrying_entries(&p.messages_to_summarize);
    let turn_prefix = carrying_entries(&p.turn_prefix);
    let sum = |v: &[usize]| -> u64 {
        v.iter()
            .map(|&i| session.entry_tokens(i, EstimateOptions::default()))
            .sum()
    };
    let previous = match p.previous_compaction {
        Some(c) => Some(session.body::<CompactionBody>(c)?),
        None => None,
    };
    Ok(Preparation {
        leaf,
        previous_compaction: p.previous_compaction,
        previous_summary: p.previous_summary,
        previous_from_extension: previous.as_ref().is_some_and(|b| b.from_extension),
        previous_preserve_data: previous.and_then(|b| b.preserve_data),
        file_ops: p.file_ops,
        tokens_to_summarize: sum(&messages_to_summarize),
        tokens_turn_prefix: sum(&turn_prefix),
        tokens_recent: sum(&p.recent),
        messages_to_summarize,
        turn_prefix,
        recent: p.recent,
        first_kept: p.first_kept,
        first_kept_entry_id: p.first_kept_entry_id,
        is_split_turn: p.is_split_turn,
        turn_start: p.turn_start,
        tokens_before: p.tokens_before,
        // pi keeps its setting as it is (no usage/estimate adaptation).
        keep_recent_tokens: settings.keep_recent_tokens,
        ratio: 0.0,
        path,
    })
}

/// True when the active path ends with a compaction ("Already compacted").
pub fn already_compacted(session: &Session) -> bool {
    session
        .leaf()
        .is_some_and(|l| session.entries()[l].kind() == EntryKind::Compaction)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(role: Role, tokens: u64) -> CutItem {
        CutItem::Message { role, tokens }
    }

    /// spec: compaction §10.1 case 20.
    #[test]
    fn cut_points() {
        // 10 user/assistant pairs of 500 tokens each, keep 2 500: cut at a user or assistant.
        let items: Vec<CutItem> = (0..20)
            .map(|i| {
                m(
                    if i % 2 == 0 {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    500,
                )
            })
            .collect();
        let c = find_cut_point(&items, 0, items.len(), 2500);
        assert!(items[c.first_kept].is_cut_point());
        assert_eq!(c.first_kept, 15);
        // A single assistant, keep 1 000: index 0. Everything fits: 0.
        assert_eq!(
            find_cut_point(&[m(Role::Assistant, 100)], 0, 1, 1000).first_kept,
            0
        );
        assert_eq!(find_cut_point(&items, 0, items.len(), 50_000).first_kept, 0);
        // A turn of 3 assistants: a cut on an assistant splits the turn at the user.
        let items = [
            m(Role::User, 10),
            m(Role::Assistant, 10),
            m(Role::User, 1000),
            m(Role::Assistant, 1500),
            m(Role::Assistant, 1500),
            m(Role::Assistant, 1500),
        ];
        let c = find_cut_point(&items, 0, items.len(), 3000);
        assert_eq!(c.first_kept, 4);
        assert!(c.is_split_turn);
        assert_eq!(c.turn_start, Some(2));
    }

    #[test]
    fn a_newest_tool_round_over_the_budget_is_kept_and_the_rest_summarized() {
        // The budget is crossed inside the tool results of the newest assistant: no cut point
        // follows, so the cut is that assistant (the reference keeps the newest group).
        let items = [
            m(Role::User, 500),
            m(Role::Assistant, 500),
            m(Role::User, 500),
            m(Role::Assistant, 50),
            m(Role::ToolResult, 9_666),
            m(Role::ToolResult, 16_217),
        ];
        let c = find_cut_point(&items, 0, items.len(), 20_000);
        assert_eq!(c.first_kept, 3);
        assert!(c.is_split_turn);
        assert_eq!(c.turn_start, Some(2));
    }

    #[test]
    fn never_cuts_at_a_tool_result_and_pulls_metadata_back() {
        let items = [
            m(Role::User, 10),
            m(Role::Assistant, 10),
            CutItem::Metadata,
            CutItem::BranchSummary { tokens: 0 },
            m(Role::ToolResult, 100),
            m(Role::Assistant, 10),
        ];
        // The walk passes the tool result; the next cut point, the branch summary, is over
        // the budget: the cut stays on the newest assistant.
        let c = find_cut_point(&items, 0, items.len(), 105);
        assert_eq!(c.first_kept, 5);
        // A cut on a branch summary (a turn start) is no split; the metadata right before it
        // is kept with it.
        let items = [
            m(Role::User, 10),
            m(Role::Assistant, 10),
            CutItem::Metadata,
            CutItem::BranchSummary { tokens: 0 },
            m(Role::User, 100),
        ];
        let c = find_cut_point(&items, 0, items.len(), 100);
        assert_eq!(c.first_kept, 2);
        assert!(!c.is_split_turn);
        assert_eq!(c.turn_start, None);
        // Metadata is not pulled back over a compaction or reset boundary.
        let items = [
            CutItem::Compaction,
            CutItem::Metadata,
            m(Role::User, 100),
            CutItem::ResetBoundary,
            CutItem::Metadata,
            m(Role::User, 100),
        ];
        assert_eq!(find_cut_point(&items, 0, items.len(), 100).first_kept, 4);
        assert_eq!(find_cut_point(&items, 0, items.len(), 200).first_kept, 1);
        // No cut point at all: keep everything from the start.
        let c = find_cut_point(&[m(Role::ToolResult, 5)], 0, 1, 1);
        assert_eq!(c.first_kept, 0);
        assert!(!c.is_split_turn);
    }

    /// Issue 36 item 6: a custom message or branch summary in the recent region weighs on the
    /// budget like a message (the reference counts every entry that carries one).
    #[test]
    fn branch_summaries_and_custom_messages_count_against_the_budget() {
        for big in [
            CutItem::BranchSummary { tokens: 2_004 },
            CutItem::CustomMessage { tokens: 2_004 },
        ] {
            let items = [
                m(Role::User, 50),
                m(Role::Assistant, 1_000),
                big,
                m(Role::User, 8),
                m(Role::Assistant, 200),
            ];
            // Over the budget at the big entry: only the last turn is kept, unsplit.
            let c = find_cut_point(&items, 0, items.len(), 400);
            assert_eq!(c.first_kept, 3, "{big:?}");
            assert!(!c.is_split_turn);
            // Within the budget at the big entry, over it at the assistant before: the big
            // entry starts the kept region, and it starts a turn (no split).
            let c = find_cut_point(&items, 0, items.len(), 3_000);
            assert_eq!(c.first_kept, 2, "{big:?}");
            assert!(!c.is_split_turn);
            assert_eq!(c.turn_start, None);
        }
    }
}

/// One entry of a pi-family sequence for the cut-point search (pi 1.6 `findCutPoint` /
/// `findProjectedCutPoint`): its messages (after edits, for a projection), whether it
/// carries a message before edits, and for a `context_edit` its target and whether it
/// replaces (rather than omits).
#[derive(Debug, Clone)]
struct PiItem {
    kind: EntryKind,
    id: String,
    roles: Vec<&'static str>,
    tokens: u64,
    empty: bool,
    intrinsically_visible: bool,
    /// A `message` entry holding an assistant message.
    assistant: bool,
    edit: Option<(String, bool)>,
}

const PI_CUT_ROLES: [&str; 6] = [
    "user",
    "assistant",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
];
const PI_TURN_ROLES: [&str; 5] = [
    "user",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
];

fn pi_role(v: &Value) -> &'static str {
    let r = v.get("role").and_then(Value::as_str).unwrap_or_default();
    PI_CUT_ROLES
        .iter()
        .chain(&["toolResult", "system"])
        .find(|x| **x == r)
        .copied()
        .unwrap_or("")
}

fn pi_item(
    session: &Session,
    entry: usize,
    messages: &[crate::context::ContextMessage],
    raw_count: usize,
) -> PiItem {
    let e = &session.entries()[entry];
    let values: Vec<Value> = messages
        .iter()
        .map(|m| crate::support::json::parse(&m.json(session)).unwrap_or_default())
        .collect();
    let edit = (e.kind() == EntryKind::ContextEdit)
        .then(|| session.body::<crate::session::ContextEditBody>(entry).ok())
        .flatten()
        .map(|b| (b.target_id, b.replacement.is_some()));
    PiItem {
        kind: e.kind(),
        id: e.id().to_string(),
        roles: values.iter().map(pi_role).collect(),
        tokens: values.iter().map(tokens::estimate_pi_message).sum(),
        empty: values.is_empty(),
        intrinsically_visible: e.kind() != EntryKind::ContextEdit && raw_count > 0,
        assistant: e.kind() == EntryKind::Message && e.role() == Some(Role::Assistant),
        edit,
    }
}

impl PiItem {
    fn is_cut_point(&self) -> bool {
        self.kind != EntryKind::Compaction && self.roles.iter().any(|r| PI_CUT_ROLES.contains(r))
    }
    fn starts_turn(&self) -> bool {
        self.kind != EntryKind::Compaction && self.roles.iter().any(|r| PI_TURN_ROLES.contains(r))
    }
    fn omitted(&self) -> bool {
        self.intrinsically_visible && self.empty
    }
}

/// pi 1.6 `findCutPoint` over `items[start..end]` (`projected`: `findProjectedCutPoint`,
/// which also steps over a closed suffix of omitted recovery attempts).
fn pi_find_cut(items: &[PiItem], start: usize, end: usize, keep: u64, projected: bool) -> CutPoint {
    let cuts: Vec<usize> = (start..end).filter(|&i| items[i].is_cut_point()).collect();
    let Some(&first_cut) = cuts.first() else {
        return CutPoint {
            first_kept: start,
            turn_start: None,
            is_split_turn: false,
        };
    };
    let mut cut = first_cut;
    let mut exceeded = false;
    let mut acc = 0u64;
    for i in (start..end).rev() {
        if items[i].tokens == 0 {
            continue;
        }
        acc += items[i].tokens;
        if acc >= keep {
            exceeded = true;
            cut = cuts
                .iter()
                .copied()
                .find(|&c| c >= i)
                .unwrap_or(cuts[cuts.len() - 1]);
            break;
        }
    }
    if projected && cut < end {
        let suffix = &items[cut + 1..end];
        let omitted: Vec<&str> = suffix
            .iter()
            .filter(|e| e.omitted())
            .map(|e| e.id.as_str())
            .collect();
        let external = suffix.iter().any(
            |e| matches!(&e.edit, Some((target, true)) if !omitted.contains(&target.as_str())),
        );
        let recovery = exceeded
            && !external
            && suffix.iter().any(|e| e.assistant && e.omitted())
            && suffix.iter().all(|e| {
                e.kind != EntryKind::Compaction && (!e.intrinsically_visible || e.omitted())
            });
        if recovery {
            cut += 1;
        }
    }
    while cut > start {
        let prev = &items[cut - 1];
        if prev.kind == EntryKind::Compaction || !prev.empty {
            break;
        }
        cut -= 1;
    }
    let starts = items.get(cut).is_some_and(PiItem::starts_turn);
    let turn_start = if starts {
        None
    } else {
        (start..=cut.min(end.saturating_sub(1)))
            .rev()
            .find(|&i| items[i].starts_turn())
    };
    CutPoint {
        first_kept: cut,
        turn_start,
        is_split_turn: !starts && turn_start.is_some(),
    }
}

/// pi 1.6 `findCutPoint` on the context entries of a pi-family path, before edits (what a
/// pi-family file's raw entries give; `conformance/pi-1.6` `findCutPointOnContextEntries`):
/// positions in [`crate::context::projection::context_entries`].
pub fn find_pi_cut_point_on_entries(
    session: &Session,
    path: &[usize],
    keep: u64,
) -> Result<CutPoint> {
    let entries = crate::context::projection::context_entries(session, path);
    let mut items = Vec::with_capacity(entries.len());
    for &i in &entries {
        let raw = crate::context::projection::entry_messages(session, i)?;
        items.push(pi_item(session, i, &raw, raw.len()));
    }
    Ok(pi_find_cut(&items, 0, items.len(), keep, false))
}

/// Files a pi-family summary reports (pi 1.6 `fileOps`), each set sorted.
pub type PiFileOps = FileOperations;

/// A pi-family preparation (pi 1.6 `prepareCompaction` on the edited projection).
#[derive(Debug, Clone)]
pub struct PiPreparation {
    pub first_kept: usize,
    pub first_kept_entry_id: String,
    pub is_split_turn: bool,
    /// pi's `estimateProjectedContextTokens` of the path.
    pub tokens_before: u64,
    pub previous_summary: Option<String>,
    /// The edited messages to summarize (system messages left out).
    pub messages_to_summarize: Vec<crate::context::ContextMessage>,
    pub turn_prefix: Vec<crate::context::ContextMessage>,
    pub file_ops: PiFileOps,
    /// The latest compaction of the projection (its summary is `previous_summary`).
    pub previous_compaction: Option<usize>,
    /// Where the split turn starts (an entry).
    pub turn_start: Option<usize>,
    /// The entries kept verbatim that carry messages (system messages left out).
    pub recent: Vec<usize>,
}

/// pi 1.6 `prepareCompaction` for a pi-family path (spec: compaction §4; `conformance/pi-1.6`
/// `prepareCompaction`): the cut is searched on the edited projection after the latest
/// compaction, whose kept entries are already part of it; `tokensBefore` is the projected
/// estimate. `Ok(None)` when the path ends with a compaction or nothing would be summarized.
pub fn prepare_pi_compaction(
    session: &Session,
    path: &[usize],
    keep_recent_tokens: u64,
) -> Result<Option<PiPreparation>> {
    let entries = session.entries();
    if path
        .last()
        .is_some_and(|&i| entries[i].kind() == EntryKind::Compaction)
    {
        return Ok(None);
    }
    let projected = crate::context::projection::project(session, path)?;
    let mut items = Vec::with_capacity(projected.len());
    for p in &projected {
        let raw = crate::context::projection::entry_messages(session, p.entry)?.len();
        items.push(pi_item(session, p.entry, &p.messages, raw));
    }
    let previous = projected
        .iter()
        .position(|p| entries[p.entry].kind() == EntryKind::Compaction && !p.messages.is_empty());
    let previous_body = match previous {
        Some(p) => Some(session.body::<CompactionBody>(projected[p].entry)?),
        None => None,
    };
    let start = previous.map_or(0, |p| p + 1);
    let end = projected.len();
    let tokens_before =
        crate::context::projection::estimate_projected_context_tokens(session, &projected, path)
            .tokens;
    let cut = pi_find_cut(&items, start, end, keep_recent_tokens, true);
    let Some(first) = projected.get(cut.first_kept) else {
        return Ok(None);
    };
    let history_end = if cut.is_split_turn {
        cut.turn_start.unwrap_or(cut.first_kept)
    } else {
        cut.first_kept
    };
    let take = |range: std::ops::Range<usize>| -> Vec<crate::context::ContextMessage> {
        let mut out = Vec::new();
        for p in &projected[range] {
            // System messages stay out (the checkpoint replays them), as do compactions.
            if entries[p.entry].kind() == EntryKind::Compaction
                || crate::context::projection::is_system_message(session, p.entry)
            {
                continue;
            }
            out.extend_from_slice(&p.messages);
        }
        out
    };
    let messages_to_summarize = take(start..history_end.max(start));
    let turn_prefix = match cut.turn_start {
        Some(t) if cut.is_split_turn => take(t..cut.first_kept),
        _ => Vec::new(),
    };
    if messages_to_summarize.is_empty() && turn_prefix.is_empty() {
        return Ok(None);
    }
    let mut file_ops = PiFileOps::default();
    if let Some(details) = previous_body
        .as_ref()
        .filter(|b| !b.from_extension)
        .and_then(|b| b.details.as_ref())
    {
        for (k, set) in [
            ("readFiles", &mut file_ops.read),
            ("modifiedFiles", &mut file_ops.edited),
        ] {
            for v in details
                .get(k)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(path) = v.as_str() {
                    set.insert(path.to_string());
                }
            }
        }
    }
    for m in messages_to_summarize.iter().chain(&turn_prefix) {
        file_ops.add_pi_calls(&crate::support::json::parse(&m.json(session)).unwrap_or_default());
    }
    let recent = projected[cut.first_kept..]
        .iter()
        .filter(|p| entries[p.entry].kind() != EntryKind::Compaction && !p.messages.is_empty())
        .filter(|p| !crate::context::projection::is_system_message(session, p.entry))
        .map(|p| p.entry)
        .collect();
    Ok(Some(PiPreparation {
        previous_compaction: previous.map(|p| projected[p].entry),
        turn_start: cut
            .turn_start
            .filter(|_| cut.is_split_turn)
            .map(|t| projected[t].entry),
        recent,
        first_kept: first.entry,
        first_kept_entry_id: entries[first.entry].id().to_string(),
        is_split_turn: cut.is_split_turn,
        tokens_before,
        previous_summary: previous_body.map(|b| b.summary),
        messages_to_summarize,
        turn_prefix,
        file_ops,
    }))
}
