//! Committing a navigation (spec: compaction §7.4 step 6, §7.5 steps 7–8): the summary text of
//! the answer, then a `branch_summary` entry at the landing place or a plain leaf move, and the
//! label.

use super::plan::NavigationPlan;
use super::{NO_CONTENT_TO_SUMMARIZE, NO_SUMMARY_GENERATED};
use crate::error::{Error, Result};
use crate::prompts;
use crate::session::Session;
use crate::summary::fileops::{
    pi_file_lists, pi_file_operations, upsert_file_operations, FileLists, FileOperations,
};
use serde_json::{Map, Value};

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

/// The preamble pi 1.6 puts before a branch summary (`generateBranchSummary`), verbatim: the
/// summary a pi-family branch gets is pi's.
pub const PI_BRANCH_SUMMARY_PREAMBLE: &str =
    "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n";

/// pi 1.6's `branchWithSummary` (a pi-family branch): the leaf moves to `from` (`None`: before
/// the first root) and a `branch_summary` child is appended there with `fromId` (the leaf
/// left, or `"root"`), `summary`, `details` and `fromHook`, in pi's order.
fn pi_branch_with_summary(
    session: &mut Session,
    from: Option<&str>,
    summary: String,
    details: Option<Value>,
    from_hook: bool,
    now: i64,
) -> Result<String> {
    let parent = match from {
        Some(id) => Some(session.require(id)? as u32),
        None => None,
    };
    // pi names the leaf being left (oh-my-pi the landing place).
    let left = session.leaf_id().unwrap_or("root").to_string();
    let mut fields = Map::new();
    fields.insert("fromId".into(), left.into());
    fields.insert("summary".into(), summary.into());
    if let Some(d) = details {
        fields.insert("details".into(), d);
    }
    fields.insert("fromHook".into(), from_hook.into());
    session.append_with_parent("branch_summary", fields, parent, now)
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
/// request; `E_SUMMARIZER` for an empty answer or one far over the request's `maxTokens`
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
            if plan.pi {
                // pi 1.6's `generateBranchSummary`: its preamble, the answer, its file lists.
                let lists = pi_file_lists(&prep.file_ops);
                let text = format!(
                    "{PI_BRANCH_SUMMARY_PREAMBLE}{text}{}",
                    pi_file_operations(&lists)
                );
                Some((text, Some(lists.to_json()), false))
            } else {
                let lists = &plan.file_lists;
                Some((
                    branch_summary_text(&text, &prep.file_ops, lists),
                    Some(lists.to_json()),
                    false,
                ))
            }
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
            let id = match plan.pi {
                true => pi_branch_with_summary(session, new_leaf_id, text, details, from_ext, now)?,
                false => session.branch_with_summary(new_leaf_id, &text, details, from_ext, now)?,
            };
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
