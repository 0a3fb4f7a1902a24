//! Planning a navigation (spec: compaction §7.4 steps 1–3, §7.5 steps 1–6): the summary's input
//! budget and prompt, where the leaf lands, and the one summarizer request. Nothing changes in
//! the session.

use super::collect::collect_between;
use super::prepare::{prepare_branch_entries, prepare_pi_branch_entries, BranchPreparation};
use super::routes::SummaryRoute;
use super::{check_indices, DEFAULT_CONTEXT_WINDOW, DEFAULT_RESERVE_TOKENS, REQUEST_ID};
use crate::context::projection::is_pi_family;
use crate::error::{Error, Result};
use crate::prompts::{self, PromptKind};
use crate::session::message::{AgentMessage, Role};
use crate::session::{CustomMessageBody, EntryKind, Session};
use crate::summary::fileops::{compute_file_lists, FileLists};
use crate::summary::request::{
    serialized_conversation, summary_reasoning_effort, Purpose, SummaryRequest,
};
use crate::summary::serialize::{
    branch_summary_prompt, pi_summary_max_tokens, serialize_conversation_in, summary_prompt,
    with_pi_conversation, Dialect, BRANCH_SUMMARY_MAX_TOKENS,
};
use serde_json::Value;

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

/// Options of [`plan_navigation`] (spec: compaction §7.5).
#[derive(Debug, Clone, PartialEq)]
pub struct NavigateOptions {
    /// The user asked for a summary of the branch being left.
    pub summarize: bool,
    /// Instructions for the summarizer (see [`branch_prompt`]).
    pub custom_instructions: Option<String>,
    /// pi-mono: whether the custom instructions replace the prompt (`Some(true)`) or add a
    /// focus to it (`Some(false)`); unset follows the session's family: oh-my-pi's (they
    /// replace it), or pi's on a pi-family branch (they add a focus).
    pub replace_instructions: Option<bool>,
    /// Label for the summary entry, or for the target when no summary is written.
    pub label: Option<String>,
    /// Context window of the summarizer model (0 = unknown: 128 000).
    pub context_window: u64,
    /// The summarizer model's output limit (`maxTokens`; 0 = unknown): a pi-family branch's
    /// request asks for it, as pi does ([`pi_summary_max_tokens`]).
    pub output_limit: u64,
    /// `branchSummary.reserveTokens` (default 16 384; see [`branch_reserve_tokens`]).
    ///
    /// [`branch_reserve_tokens`]: super::branch_reserve_tokens
    pub reserve_tokens: u64,
    /// Where the summary may come from, in order ([`summary_routes`]); a route asks for a
    /// summary as [`NavigateOptions::summarize`] does.
    ///
    /// [`summary_routes`]: super::summary_routes
    pub routes: Vec<SummaryRoute>,
}

impl Default for NavigateOptions {
    fn default() -> Self {
        NavigateOptions {
            summarize: false,
            custom_instructions: None,
            replace_instructions: None,
            label: None,
            context_window: 0,
            output_limit: 0,
            reserve_tokens: DEFAULT_RESERVE_TOKENS,
            routes: Vec::new(),
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
    /// [`NavigateOptions::summarize`], or some summary route.
    pub user_wants_summary: bool,
    /// [`NavigateOptions::routes`]: the host asks them in this order, the first answer wins.
    pub routes: Vec<SummaryRoute>,
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
    /// Its reasoning-effort hint (spec: compaction §5.6; the branch being left decides,
    /// [`summary_reasoning_effort`]).
    pub reasoning_effort: Option<&'static str>,
    /// A pi-family branch's request asks for the model's output limit, fitted to the window
    /// (`(limit, window)`, [`pi_summary_max_tokens`]).
    output_limit: Option<(u64, u64)>,
    /// The branch left is a pi-family path: its request and summary entry are pi's (no tag
    /// escaped in the transcript; pi's preamble, file lists and entry fields on commit).
    pub(crate) pi: bool,
    /// A summary was wanted but no message was chosen (§7.4 step 2): the commit writes
    /// [`NO_CONTENT_TO_SUMMARIZE`] without asking the summarizer.
    ///
    /// [`NO_CONTENT_TO_SUMMARIZE`]: super::NO_CONTENT_TO_SUMMARIZE
    pub no_content: bool,
    /// Entry count and leaf at plan time: the commit refuses a session that moved on.
    pub(super) fingerprint: (usize, Option<String>),
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
            request.prompt = match self.pi {
                // pi places its transcript as it is (`generateBranchSummary`), and its custom
                // instructions add a focus unless `replaceInstructions` says otherwise (spec:
                // compaction §7.4 step 3, pi-mono).
                true => with_pi_conversation(
                    branch_prompt(
                        "",
                        self.custom_instructions.as_deref(),
                        Some(self.replace_instructions == Some(true)),
                    ),
                    &self.serialized,
                ),
                false => branch_prompt(
                    &self.serialized,
                    self.custom_instructions.as_deref(),
                    self.replace_instructions,
                ),
            };
            if let Some((limit, window)) = self.output_limit {
                request.max_tokens =
                    pi_summary_max_tokens(limit, window, &request.system_prompt, &request.prompt);
            }
        }
    }

    pub(super) fn check_fresh(&self, session: &Session) -> Result<()> {
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
    let summarize = options.summarize || !options.routes.is_empty();
    let mut plan = NavigationPlan {
        noop: false,
        target: 0,
        target_id: target_id.to_string(),
        old_leaf_id: fingerprint.1.clone(),
        common_ancestor_id: None,
        entries_to_summarize: Vec::new(),
        user_wants_summary: summarize,
        routes: options.routes,
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
        reasoning_effort: None,
        output_limit: None,
        pi: false,
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

    if summarize && !plan.entries_to_summarize.is_empty() {
        // A pi-family branch reads what pi reads: its edits applied, no tool results, pi's
        // transcript (issue 40 item 4).
        let old_path = old_leaf.map_or(Vec::new(), |l| session.path_to(l));
        let pi = is_pi_family(session, &old_path);
        plan.pi = pi;
        plan.reasoning_effort = summary_reasoning_effort(session, old_leaf, pi);
        let entries = &plan.entries_to_summarize;
        let (prep, pi_input) = match pi {
            true => {
                let (prep, input) = prepare_pi_branch_entries(session, entries, token_budget)?;
                (prep, Some(input))
            }
            false => (
                prepare_branch_entries(session, entries, token_budget)?,
                None,
            ),
        };
        if prep.is_empty() {
            plan.no_content = true;
        } else {
            plan.file_lists = compute_file_lists(&prep.file_ops);
            check_indices(session, &prep.entries)?;
            plan.serialized = match pi_input {
                Some(input) => serialize_conversation_in(&input, Dialect::Pi),
                None => serialized_conversation(session, &prep.entries)?,
            };
            // pi asks for the model's output limit (when the host gave it).
            plan.output_limit = (pi && options.output_limit > 0)
                .then_some((options.output_limit, options.context_window));
            plan.request = Some(SummaryRequest {
                id: REQUEST_ID.into(),
                purpose: Purpose::BranchSummary,
                system_prompt: prompts::SUMMARIZATION_SYSTEM.trim_end().to_string(),
                prompt: String::new(),
                max_tokens: BRANCH_SUMMARY_MAX_TOKENS,
                window: None,
            });
            let (custom, replace) = (plan.custom_instructions.take(), plan.replace_instructions);
            plan.set_instructions(custom, replace);
        }
        plan.preparation = Some(prep);
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

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
