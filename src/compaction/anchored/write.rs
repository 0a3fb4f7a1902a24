//! The `<anchors>` block in what a commit writes: the summary text, snapcompact's reading
//! guide, a native lane's replay, and the entry's `details`.

use super::plan::{plan_anchors, PlanAnchors};
use super::seen::Haystack;
use crate::archive::Archive;
use crate::compaction::plan::CompactionPlan;
use crate::error::Result;
use crate::session::Session;
use crate::settings::Strategy;
use crate::summary::anchors::{anchor_block, upsert_anchor_block, AnchorIndex, DETAILS_KEY};
use crate::summary::tools::{recall_pointer, text_tokens, upsert_recall_pointer};
use serde_json::Value;

/// The heading the reading guide ends with (spec: snapcompact §9.4).
const HISTORY: &str = "\nHISTORY\n===";

impl CompactionPlan {
    /// The plan's anchors ([`plan_anchors`]), harvested from `session` on the first call: a
    /// commit writes them (the block, `details`), a plan's requests do not need them, so a
    /// plan answers without the harvest (issue 42). `session` is the one the plan was made
    /// on (its entries are where the preparation says: a commit reads them before it
    /// appends).
    pub fn anchors(&self, session: &Session) -> Result<&PlanAnchors> {
        if let Some(a) = self.anchors.get() {
            return Ok(a);
        }
        let a = plan_anchors(
            session,
            &self.preparation,
            &self.file_lists,
            self.settings.anchor_tokens,
            self.strategy == Strategy::Handoff,
        )?;
        Ok(self.anchors.get_or_init(|| a))
    }

    /// The anchors when a commit (or [`CompactionPlan::anchors`]) harvested them already.
    pub fn harvested_anchors(&self) -> Option<&PlanAnchors> {
        self.anchors.get()
    }

    /// `text` (what a method wrote for the model) with the `<anchors>` block: the ranked
    /// anchors the kept region and `text` itself do not show, within `anchorTokens`.
    /// With `recallTool`, the recall pointer follows the block (issue 38 item 3).
    /// `session`: the plan's ([`CompactionPlan::anchors`]).
    pub fn with_anchors(&self, session: &Session, text: &str) -> Result<String> {
        let a = self.anchors(session)?;
        let ranked = a.ranked();
        let hay = Haystack::new(text);
        let block = anchor_block(&ranked, |t| a.in_view.contains(t) || hay.shows(t), a.budget);
        let out = upsert_anchor_block(text, block.as_ref().map(|(b, _)| b.as_str()));
        Ok(match self.recall_pointer(a) {
            Some(p) => upsert_recall_pointer(&out, Some(&p)),
            None => out,
        })
    }

    /// The recall pointer this plan writes: with `recallTool` on and a dropped range.
    fn recall_pointer(&self, a: &PlanAnchors) -> Option<String> {
        let range = a.range.as_ref().filter(|_| self.settings.recall_tool)?;
        Some(recall_pointer(range))
    }

    /// snapcompact's reading guide with the `<anchors>` block before its HISTORY heading (spec:
    /// snapcompact §9.4; text beside the frames, which render prose well and identifiers
    /// poorly): anchors the archive's own text (head, tail, kept user turns) shows are left
    /// out, the frames' text is not counted as seen.
    /// `room` caps the block's tokens below `anchorTokens` (what the archive saved).
    pub fn guide_with_anchors(
        &self,
        session: &Session,
        guide: &str,
        archive: &Archive,
        room: u64,
    ) -> Result<String> {
        let a = self.anchors(session)?;
        let mut seen = String::from(guide);
        for t in [&archive.text_head, &archive.text_tail, &archive.user_turns]
            .into_iter()
            .flatten()
        {
            seen.push('\n');
            seen.push_str(t);
        }
        let ranked = a.ranked();
        let hay = Haystack::new(&seen);
        // The recall pointer, when it fits the room, goes with the block (and takes its room
        // first: it points at everything, the block at a few identifiers).
        let pointer = self
            .recall_pointer(a)
            .filter(|p| text_tokens(p) + 10 <= room);
        let room = room.saturating_sub(pointer.as_deref().map_or(0, |p| text_tokens(p) + 2));
        let block = anchor_block(
            &ranked,
            |t| a.in_view.contains(t) || hay.shows(t),
            // A margin for how the estimate rounds the block inside the whole message.
            a.budget.min(room.saturating_sub(8)),
        )
        .map(|(b, _)| b);
        let block = match (block, pointer) {
            (None, None) => return Ok(guide.to_string()),
            (Some(b), None) => b,
            (None, Some(p)) => p,
            (Some(b), Some(p)) => format!("{b}\n\n{p}"),
        };
        Ok(match guide.rfind(HISTORY) {
            Some(at) => format!("{}\n\n{block}\n{}", guide[..at].trim_end(), &guide[at..]),
            None => upsert_anchor_block(guide, Some(&block)),
        })
    }

    /// A native lane's record with the `<anchors>` block as a developer message after the
    /// replacement history an OpenAI reader replays in place of the summary (spec: compaction
    /// §13; issue 38: the block goes beside a native lane's replay). An Anthropic record
    /// carries it in its `filesText` instead. Nothing without a block.
    pub(crate) fn anchor_replay_item(&self, session: &Session, record: &mut Value) -> Result<()> {
        let block = self.with_anchors(session, "")?;
        let Some(Value::Array(items)) = record.get_mut("replacementHistory") else {
            return Ok(());
        };
        if block.is_empty() {
            return Ok(());
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
        Ok(())
    }

    /// The `details` of the entry: the file lists (spec: compaction §5.10) and, when there
    /// are any, the ranked anchors the next compaction carries.
    pub fn details_json(&self, session: &Session) -> Result<Value> {
        let mut details = self.file_lists.to_json();
        let a = self.anchors(session)?;
        if !a.index.is_empty() {
            if let Value::Object(o) = &mut details {
                o.insert(
                    DETAILS_KEY.into(),
                    AnchorIndex::details_json_of(&a.ranked()),
                );
            }
        }
        Ok(details)
    }
}
