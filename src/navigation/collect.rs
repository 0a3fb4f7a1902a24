//! The branch being left (spec: compaction §7.1): the entries after the common ancestor of the
//! old leaf and the navigation target.

use crate::error::Result;
use crate::session::Session;
use rustc_hash::FxHashMap;

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
pub(super) fn collect_between(
    session: &Session,
    old: usize,
    target: usize,
) -> (Vec<usize>, Option<usize>) {
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
