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

use crate::context::ContextMessage;
use crate::error::{Error, Result};
use crate::prompts::{self, PromptKind};
use crate::session::message::{truthy, AgentMessage, Role, ToolResultMessage};
use crate::session::{BranchSummaryBody, CustomMessageBody, Entry, EntryKind, Session};
use crate::summary::fileops::{
    compute_file_lists, upsert_file_operations, FileLists, FileOperations,
};
use crate::summary::request::{llm_messages, serialized_conversation, Purpose, SummaryRequest};
use crate::summary::serialize::{
    branch_summary_prompt, summary_prompt, truncate_for_summary, BRANCH_SUMMARY_MAX_TOKENS,
    TOOL_RESULT_MAX_CHARS,
};
use crate::tokens::{ByteEstimate, EstimateOptions, TokenCounter};
use rustc_hash::FxHashMap;
use serde_json::Value;

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

// ----- §7.1 ----------------------------------------------------------------------------

/// `collectEntriesForBranchSummary` (spec: compaction §7.1): the entries of the branch being
/// left, chronological, and the common ancestor of `old_leaf` and `target`.
///
/// - No old leaf (`None`, empty, or an id the session does not hold) ⇒ `([], None)`, as the
///   reference's walk finds nothing.
/// - The common ancestor is the deepest entry of the target's path that is also on the old
///   leaf's path (`None` when the two paths share no entry, e.g. separate roots).
/// - The entries are those after the ancestor on the old leaf's path (all of it without an
///   ancestor), compactions and metadata entries included.
///
/// Navigating to an ancestor of the old leaf gives that ancestor and everything after it;
/// navigating to a descendant of the old leaf gives no entries. `E_UNKNOWN_ENTRY` for an
/// unknown `target`.
pub fn collect_entries_for_branch_summary(
    session: &Session,
    old_leaf: Option<&str>,
    target: &str,
) -> Result<(Vec<usize>, Option<usize>)> {
    let target = session.require(target)?;
    match old_leaf
        .filter(|id| !id.is_empty())
        .and_then(|id| session.index_of(id))
    {
        Some(old) => Ok(collect_between(session, old, target)),
        None => Ok((Vec::new(), None)),
    }
}

/// [`collect_entries_for_branch_summary`] on indices.
fn collect_between(session: &Session, old: usize, target: usize) -> (Vec<usize>, Option<usize>) {
    let old_path = session.path_to(old);
    // Entry → its position on the old path.
    let on_old: FxHashMap<usize, usize> =
        old_path.iter().enumerate().map(|(p, &i)| (i, p)).collect();
    // Walking up from the target meets the deepest shared entry first.
    let mut ancestor = None;
    let mut start = 0;
    let mut cur = Some(target);
    let mut steps = 0;
    while let Some(i) = cur {
        if let Some(&p) = on_old.get(&i) {
            ancestor = Some(i);
            start = p + 1;
            break;
        }
        steps += 1;
        if steps > session.len() {
            break; // cycles are cut at load time; a guard all the same
        }
        cur = session.parent_of(i);
    }
    (old_path[start..].to_vec(), ancestor)
}

// ----- §7.2 ----------------------------------------------------------------------------

/// True when an entry gives a message to the branch summary (spec: compaction §7.2, `[N]`):
/// `message` entries except tool results flagged `useless` that are not errors;
/// `custom_message`, `branch_summary` and `compaction` entries; no metadata entry.
///
/// Only tool results are read; the rest is decided from the index.
pub fn gives_branch_message(session: &Session, index: usize) -> Result<bool> {
    let entry = entry_at(session, index)?;
    match entry.kind() {
        EntryKind::Message if entry.role() == Some(Role::ToolResult) => {
            Ok(tool_result_tokens(session, index)?.is_some())
        }
        EntryKind::Message
        | EntryKind::CustomMessage
        | EntryKind::BranchSummary
        | EntryKind::Compaction => Ok(true),
        _ => Ok(false),
    }
}

/// The message an entry gives to the branch summary (spec: compaction §7.2, `[N]`), or `None`
/// (see [`gives_branch_message`]). A `custom_message` becomes a `custom` message (with its
/// attribution), a `branch_summary` a `branchSummary`, a `compaction` a `compactionSummary`
/// (with its short summary).
pub fn branch_input_message(session: &Session, index: usize) -> Result<Option<ContextMessage>> {
    if !gives_branch_message(session, index)? {
        return Ok(None);
    }
    ContextMessage::from_entry(session, index)
}

/// The estimate of an entry for the budget walk (spec: compaction §7.3 step 2), or `None`
/// when the entry gives no message (§7.2).
///
/// A tool result counts the text the summarizer will see: its text blocks concatenated and
/// cut to 2,000 characters with the truncation marker ([`truncate_for_summary`]), 0 without
/// text. A result hidden by `contextOmitted` is not sent at all, so it counts 0 too. Every
/// other message uses the memoized per-entry estimate ([`Session::entry_tokens`]).
pub fn branch_entry_tokens(session: &Session, index: usize) -> Result<Option<u64>> {
    let entry = entry_at(session, index)?;
    match entry.kind() {
        EntryKind::Message if entry.role() == Some(Role::ToolResult) => {
            tool_result_tokens(session, index)
        }
        EntryKind::Message
        | EntryKind::CustomMessage
        | EntryKind::BranchSummary
        | EntryKind::Compaction => Ok(Some(
            session.entry_tokens(index, EstimateOptions::default()),
        )),
        _ => Ok(None),
    }
}

/// [`branch_entry_tokens`] of a tool result. The message is scanned in place
/// ([`measure::scan_tool_result`]): the estimate needs the flags and the size of the text the
/// summarizer will see, not the text itself, so nothing is decoded or copied.
fn tool_result_tokens(session: &Session, index: usize) -> Result<Option<u64>> {
    let scanned = session
        .message_json(index)
        .and_then(|j| measure::scan_tool_result(j.as_bytes(), TOOL_RESULT_MAX_CHARS));
    let Some(scan) = scanned else {
        // Not a well-formed object: the typed read reports why (or copes).
        return match session.message(index)? {
            AgentMessage::ToolResult(r) => Ok(typed_tool_result_tokens(&r)),
            _ => Ok(Some(0)),
        };
    };
    Ok(scan.tokens())
}

/// [`branch_entry_tokens`] of a parsed tool result: `None` for a useless result that is not
/// an error, 0 when hidden by `contextOmitted` or without text, else the byte estimate of
/// its text cut by [`truncate_for_summary`].
fn typed_tool_result_tokens(r: &ToolResultMessage) -> Option<u64> {
    if r.useless && !r.is_error {
        return None;
    }
    if truthy(r.context_omitted.as_ref()) {
        return Some(0);
    }
    let text = r.content.text();
    if text.is_empty() {
        return Some(0);
    }
    Some(ByteEstimate.count(&truncate_for_summary(&text, TOOL_RESULT_MAX_CHARS)))
}

// ----- §7.3 ----------------------------------------------------------------------------

/// What [`prepare_branch_entries`] chose (spec: compaction §7.3 `prepareBranchEntries`).
///
/// The chosen messages are kept as their entries and read on demand
/// ([`BranchPreparation::messages`], [`BranchPreparation::llm_messages`]): choosing them only
/// needs memoized estimates, so a long branch is not parsed twice.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchPreparation {
    /// The entries whose messages were chosen (each gives one message, §7.2),
    /// chronological.
    pub entries: Vec<usize>,
    /// Paths read, written and edited: the details of earlier branch summaries (pass 1) and
    /// the tool calls of every message the walk visited, including the one that broke the
    /// budget (pass 2).
    pub file_ops: FileOperations,
    /// Sum of the chosen entries' estimates ([`branch_entry_tokens`]).
    pub total_tokens: u64,
}

impl BranchPreparation {
    /// The chosen messages (§7.2), chronological.
    pub fn messages(&self, session: &Session) -> Result<Vec<ContextMessage>> {
        check_indices(session, &self.entries)?;
        let mut out = Vec::with_capacity(self.entries.len());
        for &i in &self.entries {
            if let Some(m) = ContextMessage::from_entry(session, i)? {
                out.push(m);
            }
        }
        Ok(out)
    }

    /// The chosen messages as the provider gets them (`convertToLlm`, spec: compaction
    /// §2.6): what the summarizer's transcript is written from.
    pub fn llm_messages(&self, session: &Session) -> Result<Vec<Value>> {
        check_indices(session, &self.entries)?;
        llm_messages(session, &self.entries)
    }

    /// True when no message was chosen.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// `prepareBranchEntries` (spec: compaction §7.3).
///
/// 1. Pass 1, over all `entries`: each `branch_summary` with `details` that an extension did
///    not write adds `details.readFiles` to the read set (selector-stripped) and
///    `details.modifiedFiles` to the edited set.
/// 2. Pass 2, newest to oldest, over the entries that give a message (§7.2): the message's
///    tool calls are recorded first (so the message that breaks the budget still counts);
///    then, when `token_budget > 0` and the message's estimate would take the total over it,
///    a `compaction` or `branch_summary` is still taken while the total is below 0.9 ·
///    budget, and the walk stops. Otherwise the message is taken.
///
/// `token_budget = 0` takes everything. `E_INVALID_ARGUMENT` for an index the session does
/// not hold. No message is converted here: the walk uses
/// memoized estimates and file calls, and scans tool results in place.
pub fn prepare_branch_entries(
    session: &Session,
    entries: &[usize],
    token_budget: u64,
) -> Result<BranchPreparation> {
    check_indices(session, entries)?;
    let mut file_ops = FileOperations::new();
    for &i in entries {
        if session.entries()[i].kind() != EntryKind::BranchSummary {
            continue;
        }
        let body: BranchSummaryBody = session.body(i)?;
        if let Some(details) = body.details.as_ref().filter(|_| !body.from_extension) {
            file_ops.add_details(details);
        }
    }

    let mut chosen: Vec<usize> = Vec::new();
    let mut total: u64 = 0;
    for &i in entries.iter().rev() {
        let Some(tokens) = branch_entry_tokens(session, i)? else {
            continue;
        };
        session.for_each_file_call(i, |tool, path| file_ops.add(tool, path));
        if token_budget > 0 && total.saturating_add(tokens) > token_budget {
            let summary_like = matches!(
                session.entries()[i].kind(),
                EntryKind::Compaction | EntryKind::BranchSummary
            );
            if summary_like && (total as f64) < SUMMARY_ENTRY_SHARE * token_budget as f64 {
                chosen.push(i);
                total = total.saturating_add(tokens);
            }
            break;
        }
        chosen.push(i);
        total = total.saturating_add(tokens);
    }
    chosen.reverse();
    Ok(BranchPreparation {
        entries: chosen,
        file_ops,
        total_tokens: total,
    })
}

// ----- §7.4 ----------------------------------------------------------------------------

/// The input budget of a branch summary (spec: compaction §7.4 step 1):
/// `(context_window || 128 000) − reserve_tokens`. A reserve as large as the window gives
/// 0, which [`prepare_branch_entries`] reads as "no limit" — as the reference, whose
/// negative budget fails its `budget > 0` test.
pub fn branch_token_budget(context_window: u64, reserve_tokens: u64) -> u64 {
    let window = if context_window > 0 {
        context_window
    } else {
        DEFAULT_CONTEXT_WINDOW
    };
    window.saturating_sub(reserve_tokens)
}

/// The user text of a branch-summary call (spec: compaction §7.4 step 3):
/// `<conversation>\n{serialized}\n</conversation>\n\n` + instructions, where
///
/// - `replace_instructions` unset (oh-my-pi `[N]`): the custom instructions when given, else
///   the branch-summary prompt;
/// - `Some(true)` (pi-mono): the custom instructions alone when given, else the prompt;
/// - `Some(false)` (pi-mono's default): the prompt, then `\n\nAdditional focus: ` + the
///   custom instructions when given.
///
/// Empty custom instructions count as none. The conversation is escaped
/// ([`crate::summary::serialize::escape_summary_boundaries`]).
pub fn branch_prompt(
    serialized: &str,
    custom_instructions: Option<&str>,
    replace_instructions: Option<bool>,
) -> String {
    let custom = custom_instructions.filter(|s| !s.is_empty());
    let default = PromptKind::BranchSummary.text();
    match (custom, replace_instructions) {
        (Some(c), None | Some(true)) => branch_summary_prompt(serialized, Some(c)),
        (Some(c), Some(false)) => summary_prompt(serialized, None, &[], &default, Some(c)),
        (None, _) => branch_summary_prompt(serialized, Some(&default)),
    }
}

/// The summary text of a summarizer answer (spec: compaction §7.4 step 6): the preamble,
/// the answer, then the `<files>` block ([`upsert_file_operations`] with the raw read set,
/// which also replaces any file block the model wrote); `"No summary generated"` if that
/// comes out empty.
pub fn branch_summary_text(answer: &str, file_ops: &FileOperations, lists: &FileLists) -> String {
    let mut text = String::with_capacity(prompts::BRANCH_SUMMARY_PREAMBLE.len() + answer.len());
    text.push_str(prompts::BRANCH_SUMMARY_PREAMBLE);
    text.push_str(answer);
    let summary = upsert_file_operations(
        &text,
        &lists.read_files,
        &lists.modified_files,
        Some(&file_ops.read),
    );
    if summary.is_empty() {
        NO_SUMMARY_GENERATED.to_string()
    } else {
        summary
    }
}

// ----- §7.5 ----------------------------------------------------------------------------

/// Options of [`plan_navigation`] (spec: compaction §7.5).
#[derive(Debug, Clone, PartialEq)]
pub struct NavigateOptions {
    /// The user asked for a summary of the branch being left.
    pub summarize: bool,
    /// Instructions for the summarizer (see [`branch_prompt`]).
    pub custom_instructions: Option<String>,
    /// pi-mono: whether the custom instructions replace the prompt (`Some(true)`) or add a
    /// focus to it (`Some(false)`); unset follows oh-my-pi (they replace it).
    pub replace_instructions: Option<bool>,
    /// Label for the summary entry, or for the target when no summary is written.
    pub label: Option<String>,
    /// Context window of the summarizer model (0 = unknown: 128 000).
    pub context_window: u64,
    /// `branchSummary.reserveTokens` (default 16 384).
    pub reserve_tokens: u64,
}

impl Default for NavigateOptions {
    fn default() -> Self {
        NavigateOptions {
            summarize: false,
            custom_instructions: None,
            replace_instructions: None,
            label: None,
            context_window: 0,
            reserve_tokens: DEFAULT_RESERVE_TOKENS,
        }
    }
}

/// A navigation waiting for its commit: the reference's `TreePreparation` (the payload of
/// the `session_before_tree` hook) plus where the leaf lands and the summary request.
#[derive(Debug, Clone, PartialEq)]
pub struct NavigationPlan {
    /// The target is the current leaf: committing changes nothing (spec: compaction §7.5
    /// step 1). Nothing else is prepared.
    pub noop: bool,
    /// The navigation target (index and id).
    pub target: usize,
    pub target_id: String,
    /// The leaf at plan time (`None` after `resetLeaf` or in an empty session).
    pub old_leaf_id: Option<String>,
    /// The deepest entry shared by the old leaf's and the target's paths (§7.1).
    pub common_ancestor_id: Option<String>,
    /// The entries of the branch being left (§7.1), chronological.
    pub entries_to_summarize: Vec<usize>,
    /// [`NavigateOptions::summarize`].
    pub user_wants_summary: bool,
    /// The summarizer instructions (change them with [`NavigationPlan::set_instructions`]).
    pub custom_instructions: Option<String>,
    pub replace_instructions: Option<bool>,
    /// Written by the commit (a hook may change it before).
    pub label: Option<String>,
    /// Where the leaf lands (§7.5 step 6): the target's parent for a user message or a
    /// `custom_message` (`None`: before the first root), else the target.
    pub new_leaf: Option<usize>,
    pub new_leaf_id: Option<String>,
    /// The text of a user message or `custom_message` target, for the editor.
    pub editor_text: Option<String>,
    /// `(context_window || 128 000) − reserve_tokens` (§7.4 step 1).
    pub token_budget: u64,
    /// The chosen messages and file operations, when a summary is wanted and there is
    /// something to summarize.
    pub preparation: Option<BranchPreparation>,
    /// The lists persisted in the summary's `details` (empty without a preparation).
    pub file_lists: FileLists,
    /// The serialized conversation of the chosen messages (empty without a request).
    pub serialized: String,
    /// The summarizer call to make, if any.
    pub request: Option<SummaryRequest>,
    /// A summary was wanted but no message was chosen (§7.4 step 2): the commit writes
    /// [`NO_CONTENT_TO_SUMMARIZE`] without asking the summarizer.
    pub no_content: bool,
    /// Entry count and leaf at plan time: the commit refuses a session that moved on.
    fingerprint: (usize, Option<String>),
}

impl NavigationPlan {
    /// Ids of [`NavigationPlan::entries_to_summarize`].
    pub fn entries_to_summarize_ids<'s>(&self, session: &'s Session) -> Vec<&'s str> {
        self.entries_to_summarize
            .iter()
            .filter_map(|&i| session.entry(i).map(|e| e.id()))
            .collect()
    }

    /// Changes the summarizer instructions (the pi-mono `session_before_tree` hook may) and
    /// rewrites the request's prompt to match.
    pub fn set_instructions(
        &mut self,
        custom_instructions: Option<String>,
        replace_instructions: Option<bool>,
    ) {
        self.custom_instructions = custom_instructions;
        self.replace_instructions = replace_instructions;
        if let Some(request) = &mut self.request {
            request.prompt = branch_prompt(
                &self.serialized,
                self.custom_instructions.as_deref(),
                self.replace_instructions,
            );
        }
    }

    fn check_fresh(&self, session: &Session) -> Result<()> {
        let now = (session.len(), session.leaf_id().map(str::to_string));
        if now != self.fingerprint {
            return Err(Error::StalePlan {
                reason: "entries were appended or the leaf moved since the navigation was planned"
                    .into(),
            });
        }
        Ok(())
    }
}

/// Text of string content, or of its text blocks concatenated with no separator.
fn value_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// Where the leaf lands and the editor text (spec: compaction §7.5 step 6). A `parentId`
/// naming no entry reads as the root (`None`), as the path does.
fn landing(session: &Session, target: usize) -> Result<(Option<usize>, Option<String>)> {
    let entry = &session.entries()[target];
    match entry.kind() {
        EntryKind::Message if entry.role() == Some(Role::User) => {
            let text = match session.message(target)? {
                AgentMessage::User(u) => u.content.text(),
                _ => String::new(),
            };
            Ok((session.parent_of(target), Some(text)))
        }
        EntryKind::CustomMessage => {
            let body: CustomMessageBody = session.body(target)?;
            Ok((session.parent_of(target), Some(value_text(&body.content))))
        }
        _ => Ok((Some(target), None)),
    }
}

/// Plans moving the leaf to `target_id` (spec: compaction §7.5 steps 1–6, §7.4 steps 1–3).
///
/// - `target_id` is the current leaf ⇒ a no-op plan ([`NavigationPlan::noop`]).
/// - Unknown `target_id` ⇒ `E_UNKNOWN_ENTRY` (`Entry <id> not found`).
/// - With `summarize` and a non-empty branch: the newest messages within
///   [`branch_token_budget`] are chosen, converted and serialized, and one request is
///   written (purpose `branch-summary`, the summarization system prompt, [`branch_prompt`],
///   2,048 output tokens). When no message is chosen the plan is marked
///   [`NavigationPlan::no_content`] instead.
///
/// The session is not changed (only its memoized estimates fill in).
pub fn plan_navigation(
    session: &Session,
    target_id: &str,
    options: NavigateOptions,
) -> Result<NavigationPlan> {
    let fingerprint = (session.len(), session.leaf_id().map(str::to_string));
    let old_leaf = session.leaf();
    let token_budget = branch_token_budget(options.context_window, options.reserve_tokens);
    let mut plan = NavigationPlan {
        noop: false,
        target: 0,
        target_id: target_id.to_string(),
        old_leaf_id: fingerprint.1.clone(),
        common_ancestor_id: None,
        entries_to_summarize: Vec::new(),
        user_wants_summary: options.summarize,
        custom_instructions: options.custom_instructions,
        replace_instructions: options.replace_instructions,
        label: options.label,
        new_leaf: old_leaf,
        new_leaf_id: fingerprint.1.clone(),
        editor_text: None,
        token_budget,
        preparation: None,
        file_lists: FileLists::default(),
        serialized: String::new(),
        request: None,
        no_content: false,
        fingerprint,
    };
    if session.leaf_id() == Some(target_id) {
        plan.noop = true;
        plan.target = old_leaf.unwrap_or_default();
        return Ok(plan);
    }
    let target = session.require(target_id)?;
    plan.target = target;
    let (entries, ancestor) = match old_leaf {
        Some(old) => collect_between(session, old, target),
        None => (Vec::new(), None),
    };
    plan.common_ancestor_id = ancestor.map(|a| session.entries()[a].id().to_string());
    let (new_leaf, editor_text) = landing(session, target)?;
    plan.new_leaf = new_leaf;
    plan.new_leaf_id = new_leaf.map(|i| session.entries()[i].id().to_string());
    plan.editor_text = editor_text;
    plan.entries_to_summarize = entries;

    if options.summarize && !plan.entries_to_summarize.is_empty() {
        let prep = prepare_branch_entries(session, &plan.entries_to_summarize, token_budget)?;
        if prep.is_empty() {
            plan.no_content = true;
        } else {
            plan.file_lists = compute_file_lists(&prep.file_ops);
            check_indices(session, &prep.entries)?;
            plan.serialized = serialized_conversation(session, &prep.entries)?;
            plan.request = Some(SummaryRequest {
                id: REQUEST_ID.into(),
                purpose: Purpose::BranchSummary,
                system_prompt: prompts::SUMMARIZATION_SYSTEM.trim_end().to_string(),
                prompt: branch_prompt(
                    &plan.serialized,
                    plan.custom_instructions.as_deref(),
                    plan.replace_instructions,
                ),
                max_tokens: BRANCH_SUMMARY_MAX_TOKENS,
                window: None,
            });
        }
        plan.preparation = Some(prep);
    }
    Ok(plan)
}

/// How the summary of a navigation turned out.
#[derive(Debug, Clone, PartialEq)]
pub enum NavigationAnswer {
    /// No summarizer answer: no summary was wanted, or the host skips it. The one exception
    /// is a [`NavigationPlan::no_content`] plan, whose summary needs no summarizer: it is
    /// written as the reference does.
    None,
    /// The summarizer's text (spec: compaction §7.4 steps 4–6): the commit writes the
    /// preamble, the text and the `<files>` block, with `details {readFiles, modifiedFiles}`.
    /// Only for a plan with a [`NavigationPlan::request`].
    Summary(String),
    /// A summary from the `session_before_tree` hook (spec: compaction §7.5 step 4, §8.8):
    /// written as given with `fromExtension: true`, but only when the user asked for a
    /// summary (it is ignored otherwise, as in the reference). An empty summary writes none.
    Extension {
        summary: String,
        details: Option<Value>,
    },
}

/// What [`commit_navigation`] did: the payload of the `session_tree` event plus the editor
/// text (spec: compaction §7.5 steps 7–8, §8.8).
#[derive(Debug, Clone, PartialEq)]
pub struct NavigationCommit {
    /// The session's leaf after the commit: the summary entry, the landing entry (`None`:
    /// before the first root), or — as in the reference, where a label is an appended
    /// entry — the label entry.
    pub new_leaf_id: Option<String>,
    pub old_leaf_id: Option<String>,
    pub summary_entry_id: Option<String>,
    pub label_entry_id: Option<String>,
    pub editor_text: Option<String>,
    /// Whether the summary came from a hook; `None` when no summary was written.
    pub from_extension: Option<bool>,
}

/// Applies a navigation plan (spec: compaction §7.5 step 7).
///
/// - A summary (see [`NavigationAnswer`]) ⇒ `branchWithSummary(new leaf, text, details,
///   fromExtension)`: the summary is attached at the landing place, not on the abandoned
///   branch; landing before the first root makes it a new root with `fromId: "root"`.
/// - No summary ⇒ `resetLeaf()` when landing before the first root, else `branch(new leaf)`.
/// - A non-empty label is attached to the summary entry, or to the target without a summary
///   (pi-mono).
///
/// Errors leave the session unchanged: `E_STALE_PLAN` when entries were appended or the leaf
/// moved since the plan; `E_INVALID_ARGUMENT` for a summarizer answer to a plan without a
/// request; `E_SUMMARIZER` for an answer far over the request's `maxTokens`
/// ([`crate::summary::retry::answer_problem`]). A no-op plan changes nothing.
pub fn commit_navigation(
    session: &mut Session,
    plan: &NavigationPlan,
    answer: NavigationAnswer,
    now: i64,
) -> Result<NavigationCommit> {
    plan.check_fresh(session)?;
    let old_leaf_id = plan.fingerprint.1.clone();
    if plan.noop {
        return Ok(NavigationCommit {
            new_leaf_id: old_leaf_id.clone(),
            old_leaf_id,
            summary_entry_id: None,
            label_entry_id: None,
            editor_text: None,
            from_extension: None,
        });
    }
    let summary: Option<(String, Option<Value>, bool)> = match answer {
        NavigationAnswer::None if plan.no_content => Some((
            NO_CONTENT_TO_SUMMARIZE.to_string(),
            Some(FileLists::default().to_json()),
            false,
        )),
        NavigationAnswer::None => None,
        NavigationAnswer::Summary(text) => {
            let Some(prep) = plan.preparation.as_ref().filter(|_| plan.request.is_some()) else {
                return Err(Error::InvalidArgument {
                    what: "this navigation plan has no summary request to answer; commit it \
                           without a summary"
                        .into(),
                });
            };
            let max_tokens = plan.request.as_ref().map_or(0, |r| r.max_tokens);
            if let Some(reason) = crate::summary::retry::answer_problem(&text, max_tokens) {
                return Err(Error::Summarizer { reason });
            }
            let lists = &plan.file_lists;
            Some((
                branch_summary_text(&text, &prep.file_ops, lists),
                Some(lists.to_json()),
                false,
            ))
        }
        NavigationAnswer::Extension { summary, details } => {
            (plan.user_wants_summary && !summary.is_empty()).then_some((summary, details, true))
        }
    };
    let new_leaf_id = plan.new_leaf_id.as_deref();
    let label = plan.label.as_deref().filter(|l| !l.is_empty());
    // Everything that could fail is checked before the first change.
    if let Some(id) = new_leaf_id {
        session.require(id)?;
    }
    if label.is_some() && summary.is_none() {
        session.require(&plan.target_id)?;
    }

    let mut summary_entry_id = None;
    let mut from_extension = None;
    let label_target = match summary {
        Some((text, details, from_ext)) => {
            let id = session.branch_with_summary(new_leaf_id, &text, details, from_ext, now)?;
            from_extension = Some(from_ext);
            summary_entry_id = Some(id.clone());
            id
        }
        None => {
            match new_leaf_id {
                None => session.reset_leaf(),
                Some(id) => session.branch(id)?,
            }
            plan.target_id.clone()
        }
    };
    let label_entry_id = match label {
        Some(l) => Some(session.append_label(&label_target, Some(l), now)?),
        None => None,
    };
    Ok(NavigationCommit {
        new_leaf_id: session.leaf_id().map(str::to_string),
        old_leaf_id,
        summary_entry_id,
        label_entry_id,
        editor_text: plan.editor_text.clone(),
        from_extension,
    })
}

/// Sizing a tool result's text without decoding it (spec: compaction §7.3: the estimate of a
/// tool result is the byte estimate of its text cut to 2,000 characters, marker included).
/// One pass over the message JSON finds the flags and measures the text blocks, escapes
/// and all, in UTF-16 code units (the cap) and UTF-8 bytes (the estimate).
mod measure {
    use crate::support::json::scan::{key_is, Scanner};

    /// The size of a text, and of its first `limit` code units once it is longer.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) struct TextSize {
        /// UTF-16 code units.
        pub units: usize,
        /// UTF-8 bytes.
        pub bytes: usize,
        /// UTF-8 bytes of the first `limit` units, once `units > limit`. A surrogate pair cut
        /// in two leaves U+FFFD (3 bytes), as `truncate_for_summary` writes it.
        pub cut_bytes: Option<usize>,
        limit: usize,
    }

    impl TextSize {
        pub fn new(limit: usize) -> TextSize {
            TextSize {
                units: 0,
                bytes: 0,
                cut_bytes: None,
                limit,
            }
        }

        fn char(&mut self, units: usize, bytes: usize) {
            if self.cut_bytes.is_none() && self.units + units > self.limit {
                let split = if self.units < self.limit { 3 } else { 0 };
                self.cut_bytes = Some(self.bytes + split);
            }
            self.units += units;
            self.bytes += bytes;
        }

        /// Text without escapes (valid UTF-8: session lines are validated when loaded).
        fn run(&mut self, s: &[u8]) -> Option<()> {
            // A byte is at most one unit: runs that cannot reach the limit add up in bulk.
            if self.cut_bytes.is_some() || self.units + s.len() <= self.limit {
                self.units += utf16_units(s);
                self.bytes += s.len();
            } else if s.is_ascii() {
                self.cut_bytes = Some(self.bytes + (self.limit - self.units));
                self.units += s.len();
                self.bytes += s.len();
            } else {
                for c in std::str::from_utf8(s).ok()?.chars() {
                    self.char(c.len_utf16(), c.len_utf8());
                }
            }
            Some(())
        }

        /// Measures the JSON string whose opening quote is at `b[i - 1]`; returns the index
        /// after its closing quote (`None` when malformed).
        pub fn string_body(&mut self, b: &[u8], mut i: usize) -> Option<usize> {
            loop {
                let next = i + memchr::memchr2(b'"', b'\\', b.get(i..)?)?;
                self.run(&b[i..next])?;
                if b[next] == b'"' {
                    return Some(next + 1);
                }
                if b.get(next + 1) != Some(&b'u') {
                    self.char(1, 1);
                    i = next + 2;
                    continue;
                }
                let cp = hex4(b, next + 2)?;
                let pair = (0xD800..0xDC00).contains(&cp)
                    && b.get(next + 6..next + 8) == Some(b"\\u")
                    && hex4(b, next + 8).is_some_and(|lo| (0xDC00..0xE000).contains(&lo));
                if pair {
                    self.char(2, 4);
                    i = next + 12;
                    continue;
                }
                // A lone surrogate reaches the provider as U+FFFD: 3 bytes, like U+0800 up.
                let bytes = match cp {
                    0..=0x7F => 1,
                    0x80..=0x7FF => 2,
                    _ => 3,
                };
                self.char(1, bytes);
                i = next + 6;
            }
        }

        /// The byte estimate of the text cut to `limit` units, truncation marker included
        /// (what `truncate_for_summary` returns); 0 without text.
        pub fn tokens(&self) -> u64 {
            let bytes = match self.cut_bytes {
                Some(cut) if self.units > self.limit => {
                    let removed = self.units - self.limit;
                    cut + format!("\n\n[... {removed} more characters truncated]").len()
                }
                _ => self.bytes,
            };
            (bytes as u64 + 3) >> 2
        }
    }

    /// UTF-16 length of UTF-8 bytes: one unit per sequence, two for a 4-byte one.
    fn utf16_units(s: &[u8]) -> usize {
        if s.is_ascii() {
            return s.len();
        }
        s.iter()
            .map(|&c| usize::from(c & 0xC0 != 0x80) + usize::from(c >= 0xF0))
            .sum()
    }

    fn hex4(b: &[u8], i: usize) -> Option<u32> {
        let digits = std::str::from_utf8(b.get(i..i + 4)?).ok()?;
        u32::from_str_radix(digits, 16).ok()
    }

    /// What the estimate needs of a tool result.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) struct ToolResultScan {
        pub useless: bool,
        pub is_error: bool,
        pub context_omitted: bool,
        /// The text blocks (or string content), concatenated.
        pub text: TextSize,
    }

    impl ToolResultScan {
        /// The estimate of `typed_tool_result_tokens`, from the scan.
        pub fn tokens(&self) -> Option<u64> {
            if self.useless && !self.is_error {
                None
            } else if self.context_omitted {
                Some(0)
            } else {
                Some(self.text.tokens())
            }
        }
    }

    /// Scans a tool result's JSON: `None` when it is not a well-formed object.
    pub(super) fn scan_tool_result(b: &[u8], limit: usize) -> Option<ToolResultScan> {
        let mut sc = Scanner::new();
        let mut out = ToolResultScan {
            useless: false,
            is_error: false,
            context_omitted: false,
            text: TextSize::new(limit),
        };
        let start = sc.skip_ws(b, 0);
        object(&mut sc, b, start, |sc, key, at| {
            if key_is(key, "content") {
                // The last of repeated keys wins, as in `JSON.parse`.
                out.text = TextSize::new(limit);
                return content(sc, b, at, &mut out.text);
            }
            let end = sc.skip_value(b, at).ok()?;
            let value = &b[at..end];
            if key_is(key, "useless") {
                out.useless = value == b"true";
            } else if key_is(key, "isError") {
                out.is_error = value == b"true";
            } else if key_is(key, "contextOmitted") {
                let v = crate::support::json::parse_bytes(value);
                out.context_omitted = crate::session::message::truthy(v.as_ref());
            }
            Some(end)
        })?;
        Some(out)
    }

    /// Walks the members of the object at `b[start]`: `value(scanner, raw key, value start)`
    /// consumes each value and returns its end. Returns the index after the object.
    fn object<'b>(
        sc: &mut Scanner,
        b: &'b [u8],
        start: usize,
        mut value: impl FnMut(&mut Scanner, &'b [u8], usize) -> Option<usize>,
    ) -> Option<usize> {
        if b.get(start) != Some(&b'{') {
            return None;
        }
        let mut i = sc.skip_ws(b, start + 1);
        if b.get(i) == Some(&b'}') {
            return Some(i + 1);
        }
        loop {
            if b.get(i) != Some(&b'"') {
                return None;
            }
            let key_end = sc.skip_string_body(b, i + 1).ok()?;
            let key = &b[i + 1..key_end - 1];
            let colon = sc.skip_ws(b, key_end);
            if b.get(colon) != Some(&b':') {
                return None;
            }
            let at = sc.skip_ws(b, colon + 1);
            let end = value(sc, key, at)?;
            i = sc.skip_ws(b, end);
            match b.get(i)? {
                b',' => i = sc.skip_ws(b, i + 1),
                b'}' => return Some(i + 1),
                _ => return None,
            }
        }
    }

    /// Measures `content`: a string, or the `text` of its `text` blocks.
    fn content(sc: &mut Scanner, b: &[u8], at: usize, text: &mut TextSize) -> Option<usize> {
        match b.get(at)? {
            b'"' => text.string_body(b, at + 1),
            b'[' => {
                let mut i = sc.skip_ws(b, at + 1);
                if b.get(i) == Some(&b']') {
                    return Some(i + 1);
                }
                loop {
                    let end = if b.get(i) == Some(&b'{') {
                        block(sc, b, i, text)?
                    } else {
                        sc.skip_value(b, i).ok()?
                    };
                    i = sc.skip_ws(b, end);
                    match b.get(i)? {
                        b',' => i = sc.skip_ws(b, i + 1),
                        b']' => return Some(i + 1),
                        _ => return None,
                    }
                }
            }
            _ => sc.skip_value(b, at).ok(),
        }
    }

    /// Measures the `text` of a `text` block. Writers put `type` first, so the text is
    /// measured as it is crossed; a `text` seen before its `type` is measured afterwards.
    fn block(sc: &mut Scanner, b: &[u8], at: usize, text: &mut TextSize) -> Option<usize> {
        let mut is_text = false;
        let mut measured = false;
        let mut pending = None;
        let end = object(sc, b, at, |sc, key, v| {
            if key_is(key, "type") {
                let end = sc.skip_value(b, v).ok()?;
                is_text = &b[v..end] == b"\"text\"";
                return Some(end);
            }
            if key_is(key, "text") && b.get(v) == Some(&b'"') {
                if is_text && !measured {
                    measured = true;
                    return text.string_body(b, v + 1);
                }
                pending = Some(v);
            }
            sc.skip_value(b, v).ok()
        })?;
        if let (true, false, Some(v)) = (is_text, measured, pending) {
            text.string_body(b, v + 1)?;
        }
        Some(end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn typed(m: &Value) -> Option<u64> {
        match AgentMessage::parse(&m.to_string(), None) {
            Ok(AgentMessage::ToolResult(r)) => typed_tool_result_tokens(&r),
            other => panic!("not a tool result: {other:?}"),
        }
    }

    fn scanned(text: &str) -> Option<u64> {
        measure::scan_tool_result(text.as_bytes(), TOOL_RESULT_MAX_CHARS)
            .expect("well-formed")
            .tokens()
    }

    fn result(content: Value) -> Value {
        json!({"role":"toolResult","toolCallId":"c1","toolName":"bash","content":content,"isError":false})
    }

    fn text(t: &str) -> Value {
        json!({"type":"text","text":t})
    }

    #[test]
    fn scanned_estimate_matches_the_typed_one() {
        let long = "x".repeat(5000);
        let lines = "line of output\n\"quoted\" \\ tab\t".repeat(200);
        let accents = "é€".repeat(1500);
        let emoji_cut = format!("a{}", "\u{1f600}".repeat(1500));
        let emoji_even = "\u{1f600}".repeat(1500);
        let mut cases = vec![
            result(json!("plain string content")),
            result(json!(long)),
            result(json!([text(&long)])),
            result(json!([text(&lines)])),
            result(json!([text(&accents)])),
            result(json!([text(&emoji_cut)])),
            result(json!([text(&emoji_even)])),
            result(json!([
                text("x".repeat(1999).as_str()),
                text("\u{1f600}yz")
            ])),
            result(
                json!([text("short"), {"type":"image","data":"AAAA","mimeType":"image/png"}, text(&long)]),
            ),
            result(json!([{"type":"image","data":"AAAA","mimeType":"image/png"}])),
            result(json!([])),
            result(json!(null)),
            result(json!([text(""), text("")])),
            result(json!([{"text":"text before its type","type":"text"}])),
            result(json!([{"type":"thinking","thinking":"not text"}, 5, "stray"])),
        ];
        for i in [0usize, 1999, 2000, 2001] {
            cases.push(result(json!([text(&"y".repeat(i))])));
            cases.push(result(json!([text(&format!(
                "{}é\u{1f600}",
                "z".repeat(i)
            ))])));
        }
        let mut useless = result(json!([text("nothing found")]));
        useless["useless"] = json!(true);
        cases.push(useless.clone());
        useless["isError"] = json!(true);
        cases.push(useless);
        for omitted in [
            json!(true),
            json!(1),
            json!("yes"),
            json!(0),
            json!(""),
            json!(null),
        ] {
            let mut m = result(json!([text("hidden")]));
            m["contextOmitted"] = omitted;
            cases.push(m);
        }
        for m in &cases {
            assert_eq!(scanned(&m.to_string()), typed(m), "{m}");
        }
        // Escapes written as `\uXXXX` (our writer only escapes what it must).
        let escaped = r#"{"role":"toolResult","content":[{"type":"text","text":"\u00e9\u20ac\ud83d\ude00\u0041\n"}]}"#;
        let want = typed(&serde_json::from_str(escaped).unwrap());
        assert_eq!(scanned(escaped), want);
        assert_eq!(want, Some((2u64 + 3 + 4 + 1 + 1).div_ceil(4)));
        let cut = format!(
            r#"{{"role":"toolResult","content":"{}\ud83d\ude00tail"}}"#,
            "a".repeat(1999)
        );
        assert_eq!(scanned(&cut), typed(&serde_json::from_str(&cut).unwrap()));
    }

    #[test]
    fn scan_sizes_of_the_cap() {
        // 5000 ASCII characters: 2000 kept, then the marker.
        let m = result(json!([text(&"x".repeat(5000))]));
        let marker = "\n\n[... 3000 more characters truncated]";
        assert_eq!(
            scanned(&m.to_string()),
            Some((2000 + marker.len() as u64).div_ceil(4))
        );
        // No text: 0. Useless, not an error: no message at all.
        assert_eq!(scanned(&result(json!([])).to_string()), Some(0));
        let mut u = result(json!([text("x")]));
        u["useless"] = json!(true);
        assert_eq!(scanned(&u.to_string()), None);
        assert!(measure::scan_tool_result(b"[1]", 2000).is_none());
        assert!(measure::scan_tool_result(br#"{"content":"#, 2000).is_none());
    }

    #[test]
    fn budget_and_prompt_rules() {
        assert_eq!(branch_token_budget(0, 16_384), 111_616);
        assert_eq!(branch_token_budget(200_000, 16_384), 183_616);
        assert_eq!(branch_token_budget(10_000, 16_384), 0);
        let base = PromptKind::BranchSummary.text();
        let wrap = "<conversation>\n[User]: hi\n</conversation>\n\n";
        assert_eq!(
            branch_prompt("[User]: hi", None, None),
            format!("{wrap}{base}")
        );
        assert_eq!(
            branch_prompt("[User]: hi", Some(""), Some(false)),
            format!("{wrap}{base}")
        );
        assert_eq!(
            branch_prompt("[User]: hi", Some("Brief."), None),
            format!("{wrap}Brief.")
        );
        assert_eq!(
            branch_prompt("[User]: hi", Some("Brief."), Some(true)),
            format!("{wrap}Brief.")
        );
        assert_eq!(
            branch_prompt("[User]: hi", Some("Brief."), Some(false)),
            format!("{wrap}{base}\n\nAdditional focus: Brief.")
        );
        assert_eq!(
            branch_prompt("[User]: hi", None, Some(true)),
            format!("{wrap}{base}")
        );
    }
}
