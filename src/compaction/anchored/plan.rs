//! The anchors of a plan: harvested from the region it drops, seeded from the previous
//! compaction, marked in view where the kept region shows them.

use super::seen::Haystack;
use crate::compaction::prepare::Preparation;
use crate::error::Result;
use crate::session::{CompactionBody, Session};
use crate::summary::anchors::{visible_text_of, Anchor, AnchorIndex, MAX_CARRIED};
use crate::summary::fileops::FileLists;
use crate::summary::tools::CompactedRange;
use rustc_hash::FxHashSet;

/// The anchors of a plan.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanAnchors {
    /// The index: the region's identifiers and the carried ones.
    pub index: AnchorIndex,
    /// Texts of the index the kept region shows verbatim (they need no block line).
    pub in_view: FxHashSet<String>,
    /// Budget of the block in tokens: `anchorTokens`, at most half the dropped region's.
    pub budget: u64,
    /// [`AnchorIndex::ranked_order`] of `index`, ranked once for all the plan writes.
    order: Vec<u32>,
    /// What the plan drops, for the recall pointer (`recallTool`); none for a handoff, whose
    /// new session does not hold the entries `recall_history` would search.
    pub range: Option<crate::summary::tools::CompactedRange>,
}

impl PlanAnchors {
    /// The index's anchors, best first ([`AnchorIndex::ranked`]).
    pub fn ranked(&self) -> Vec<&Anchor> {
        let all = self.index.all();
        self.order.iter().map(|&i| &all[i as usize]).collect()
    }
}

/// The plan's anchors: harvested from the dropped region, seeded from the previous
/// compaction (not an extension's), with the ones the kept region or the `<files>` block
/// shows marked in view. A handoff (`whole`) drops the kept region too: the new session
/// starts from its document alone, so the whole path is harvested and nothing is in view.
/// None with a budget of 0.
pub(super) fn plan_anchors(
    session: &Session,
    prep: &Preparation,
    files: &FileLists,
    budget: u64,
    whole: bool,
) -> Result<PlanAnchors> {
    let mut index = AnchorIndex::new();
    let range = dropped_range(session, prep, whole);
    if budget == 0 {
        // `anchorTokens: 0`: no block, and nothing carried.
        return Ok(PlanAnchors {
            range,
            ..PlanAnchors::default()
        });
    }
    if let Some(p) = prep
        .previous_compaction
        .filter(|_| !prep.previous_from_extension)
    {
        if let Some(details) = session
            .body::<CompactionBody>(p)
            .ok()
            .and_then(|b| b.details)
        {
            index.add_details(&details);
        }
    }
    let mut region = prep.tokens_to_summarize + prep.tokens_turn_prefix;
    let kept_text = if whole {
        index.add_region(
            session,
            &[&prep.messages_to_summarize, &prep.turn_prefix, &prep.recent],
        );
        region += prep.tokens_recent;
        String::new()
    } else {
        index.add_region(session, &[&prep.messages_to_summarize, &prep.turn_prefix]);
        visible_text_of(session, &prep.recent)
    };
    let hay = Haystack::new(&kept_text);
    // Only the best ranked can reach the block or `details`. The paths of the `<files>`
    // block (spec: compaction §5.10) are written there already.
    let listed = files.listed();
    let order = index.ranked_order();
    let all = index.all();
    let best: Vec<&str> = order
        .iter()
        .map(|&i| all[i as usize].text.as_str())
        .take(4 * MAX_CARRIED)
        .collect();
    // `hay.shows` of each, in one scan of the kept text (`Haystack::shows_each`).
    let in_view = best
        .iter()
        .zip(hay.shows_each(&best))
        .filter(|&(a, shown)| shown || listed.contains(a))
        .map(|(a, _)| a.to_string())
        .collect();
    Ok(PlanAnchors {
        index,
        in_view,
        order,
        range,
        // At most half of what the region weighed: the block never outweighs what it stands
        // in for, so it cannot make a small compaction grow the context.
        budget: budget.min(region / 2),
    })
}

/// What a plan drops, as the recall pointer names it: the path from its first message to
/// the last entry of the summarized region and turn prefix. None for a handoff (`whole`):
/// the new session the model reads next does not hold those entries.
fn dropped_range(session: &Session, prep: &Preparation, whole: bool) -> Option<CompactedRange> {
    if whole {
        return None;
    }
    let last = prep
        .turn_prefix
        .last()
        .or(prep.messages_to_summarize.last())?;
    let end = prep.path.iter().position(|i| i == last)? + 1;
    CompactedRange::of(session, &prep.path, end)
}
