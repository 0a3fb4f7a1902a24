//! The anchor index of a compaction (issue 38 items 1 and 4): harvested when the plan is made
//! from the region it drops (`messagesToSummarize ++ turnPrefix`), seeded from the previous
//! compaction's `details.anchors` unless an extension wrote it (as file lists are, spec:
//! compaction §5.10 "Cumulative sources"), and checked against the kept region the model
//! still reads. Every commit appends the block to what it writes for the model and stores the
//! ranked list in `details`; [`loss_report`] says afterwards what of the region the model
//! can no longer see.

use crate::archive::blocks::HistoryOptions;
use crate::archive::Archive;
use crate::compaction::plan::CompactionPlan;
use crate::compaction::prepare::Preparation;
use crate::context::{build_context_with, BuildOptions};
use crate::error::Result;
use crate::session::{CompactionBody, Session};
use crate::summary::anchors::harvest::{harvest_text, Scope};
use crate::summary::anchors::{
    anchor_block, upsert_anchor_block, visible_text, AnchorIndex, DETAILS_KEY, MAX_CARRIED,
};
use crate::summary::fileops::FileLists;
use rustc_hash::FxHashSet;
use serde_json::Value;

/// The heading the reading guide ends with (spec: snapcompact §9.4).
const HISTORY: &str = "\nHISTORY\n===";

/// The anchors of a plan.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanAnchors {
    /// The index: the region's identifiers and the carried ones.
    pub index: AnchorIndex,
    /// Texts of the index the kept region shows verbatim (they need no block line).
    pub in_view: FxHashSet<String>,
    /// Budget of the block in tokens: `anchorTokens`, at most half the dropped region's.
    pub budget: u64,
}

/// What the model sees of `text`: its words (every harvester's scope) for quick lookups,
/// and the text itself for identifiers that are not one word.
struct Haystack<'t> {
    words: FxHashSet<&'t str>,
    text: &'t str,
}

impl<'t> Haystack<'t> {
    fn new(text: &'t str) -> Haystack<'t> {
        let mut words = FxHashSet::default();
        let scope = Scope {
            user: true,
            symbols: true,
        };
        harvest_text(text, scope, &mut |_, w| {
            words.insert(w);
        });
        Haystack { words, text }
    }

    fn shows(&self, anchor: &str) -> bool {
        self.words.contains(anchor)
            || memchr::memmem::find(self.text.as_bytes(), anchor.as_bytes()).is_some()
    }
}

/// The plan's anchors: harvested from the dropped region, seeded from the previous
/// compaction (not an extension's), with the ones the kept region or the `<files>` block
/// shows marked in view. A handoff (`whole`) drops the kept region too: the new session
/// starts from its document alone, so the whole path is harvested and nothing is in view.
/// None with a budget of 0.
pub(crate) fn plan_anchors(
    session: &Session,
    prep: &Preparation,
    files: &FileLists,
    budget: u64,
    whole: bool,
) -> Result<PlanAnchors> {
    let mut index = AnchorIndex::new();
    if budget == 0 {
        // `anchorTokens: 0`: no block, and nothing carried.
        return Ok(PlanAnchors::default());
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
    index.add_entries(session, &prep.messages_to_summarize);
    index.add_entries(session, &prep.turn_prefix);
    let mut region = prep.tokens_to_summarize + prep.tokens_turn_prefix;
    let kept: Vec<_> = if whole {
        index.add_entries(session, &prep.recent);
        region += prep.tokens_recent;
        Vec::new()
    } else {
        prep.recent
            .iter()
            .filter_map(|&i| session.entry_message(i).ok().flatten())
            .collect()
    };
    let kept_text = visible_text(&kept);
    let hay = Haystack::new(&kept_text);
    // Only the best ranked can reach the block or `details`. The paths of the `<files>`
    // block (spec: compaction §5.10) are written there already.
    let listed: FxHashSet<&str> = files
        .read_files
        .iter()
        .chain(&files.modified_files)
        .map(String::as_str)
        .collect();
    let in_view = index
        .ranked()
        .into_iter()
        .take(4 * MAX_CARRIED)
        .filter(|a| listed.contains(a.text.as_str()) || hay.shows(&a.text))
        .map(|a| a.text.clone())
        .collect();
    Ok(PlanAnchors {
        index,
        in_view,
        // At most half of what the region weighed: the block never outweighs what it stands
        // in for, so it cannot make a small compaction grow the context.
        budget: budget.min(region / 2),
    })
}

impl CompactionPlan {
    /// `text` (what a method wrote for the model) with the `<anchors>` block: the ranked
    /// anchors the kept region and `text` itself do not show, within `anchorTokens`.
    pub fn with_anchors(&self, text: &str) -> String {
        let a = &self.anchors;
        let ranked = a.index.ranked();
        let hay = Haystack::new(text);
        let block = anchor_block(&ranked, |t| a.in_view.contains(t) || hay.shows(t), a.budget);
        upsert_anchor_block(text, block.as_ref().map(|(b, _)| b.as_str()))
    }

    /// snapcompact's reading guide with the `<anchors>` block before its HISTORY heading (spec:
    /// snapcompact §9.4; text beside the frames, which render prose well and identifiers
    /// poorly): anchors the archive's own text (head, tail, kept user turns) shows are left
    /// out, the frames' text is not counted as seen.
    /// `room` caps the block's tokens below `anchorTokens` (what the archive saved).
    pub fn guide_with_anchors(&self, guide: &str, archive: &Archive, room: u64) -> String {
        let a = &self.anchors;
        let mut seen = String::from(guide);
        for t in [&archive.text_head, &archive.text_tail, &archive.user_turns]
            .into_iter()
            .flatten()
        {
            seen.push('\n');
            seen.push_str(t);
        }
        let ranked = a.index.ranked();
        let hay = Haystack::new(&seen);
        let Some((block, _)) =
            // A margin for how the estimate rounds the block inside the whole message.
            anchor_block(&ranked, |t| a.in_view.contains(t) || hay.shows(t), a.budget.min(room.saturating_sub(8)))
        else {
            return guide.to_string();
        };
        match guide.rfind(HISTORY) {
            Some(at) => format!("{}\n\n{block}\n{}", guide[..at].trim_end(), &guide[at..]),
            None => upsert_anchor_block(guide, Some(&block)),
        }
    }

    /// A native lane's record with the `<anchors>` block as a developer message after the
    /// replacement history an OpenAI reader replays in place of the summary (spec: compaction
    /// §13; issue 38: the block goes beside a native lane's replay). An Anthropic record
    /// carries it in its `filesText` instead. Nothing without a block.
    pub(crate) fn anchor_replay_item(&self, record: &mut Value) {
        let block = self.with_anchors("");
        let Some(Value::Array(items)) = record.get_mut("replacementHistory") else {
            return;
        };
        if block.is_empty() {
            return;
        }
        let part = crate::support::json::object(vec![
            ("type", "input_text".into()),
            ("text", block.into()),
        ]);
        items.push(crate::support::json::object(vec![
            ("type", "message".into()),
            ("role", "developer".into()),
            ("content", Value::Array(vec![part])),
        ]));
    }

    /// The `details` of the entry: the file lists (spec: compaction §5.10) and, when there
    /// are any, the ranked anchors the next compaction carries.
    pub fn details_json(&self) -> Value {
        let mut details = self.file_lists.to_json();
        if !self.anchors.index.is_empty() {
            if let Value::Object(o) = &mut details {
                o.insert(DETAILS_KEY.into(), self.anchors.index.details_json());
            }
        }
        details
    }
}

/// What a compaction left the model (issue 38 item 4).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LossReport {
    /// Identifiers of the dropped region that nothing the model still sees shows: not the
    /// summary, not the anchor block, not a kept message, not an archive's text.
    pub lost: Vec<String>,
    /// Identifiers the anchor block holds.
    pub anchored: Vec<String>,
}

/// The loss report of `plan` once committed into `session` (the session the model reads
/// next: the compacted one, or a handoff's new session): the context at its leaf, as built
/// for the model (frames as images, which show no text), against the region's identifiers.
pub fn loss_report(session: &Session, plan: &CompactionPlan) -> Result<LossReport> {
    let ctx = build_context_with(
        session,
        &BuildOptions::default(),
        &HistoryOptions::WITHOUT_DATA,
    )?;
    let messages: Vec<_> = ctx.messages.iter().map(|m| m.message(session)).collect();
    let text = visible_text(&messages);
    let hay = Haystack::new(&text);
    // The `<files>` block shows its paths grouped by folder (spec: compaction §5.10), never
    // whole: a path it lists is in view.
    let files = &plan.file_lists;
    let listed: FxHashSet<&str> = files
        .read_files
        .iter()
        .chain(&files.modified_files)
        .map(String::as_str)
        .collect();
    let lost = plan
        .anchors
        .index
        .harvested()
        .filter(|a| !listed.contains(a.text.as_str()) && !hay.shows(&a.text))
        .map(|a| a.text.clone())
        .collect();
    let mut anchored = Vec::new();
    let mut rest = text.as_str();
    while let Some(open) = rest.find("<anchors>\n") {
        let body = &rest[open..];
        let end = body.find("</anchors>").unwrap_or(body.len());
        for line in body[..end].lines() {
            if let Some((_, t)) = line.strip_prefix("- ").and_then(|l| l.split_once(": ")) {
                anchored.push(t.to_string());
            }
        }
        rest = &body[end..];
    }
    Ok(LossReport { lost, anchored })
}
