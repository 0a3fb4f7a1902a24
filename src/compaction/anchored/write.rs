//! The `<anchors>` block in what a commit writes: the summary text, snapcompact's reading
//! guide, a native lane's replay, and the entry's `details`.

use super::seen::Haystack;
use crate::archive::Archive;
use crate::compaction::plan::CompactionPlan;
use crate::summary::anchors::{anchor_block, upsert_anchor_block, AnchorIndex, DETAILS_KEY};
use crate::summary::tools::{recall_pointer, text_tokens, upsert_recall_pointer};
use serde_json::Value;

/// The heading the reading guide ends with (spec: snapcompact §9.4).
const HISTORY: &str = "\nHISTORY\n===";

impl CompactionPlan {
    /// `text` (what a method wrote for the model) with the `<anchors>` block: the ranked
    /// anchors the kept region and `text` itself do not show, within `anchorTokens`.
    /// With `recallTool`, the recall pointer follows the block (issue 38 item 3).
    pub fn with_anchors(&self, text: &str) -> String {
        let a = &self.anchors;
        let ranked = a.ranked();
        let hay = Haystack::new(text);
        let block = anchor_block(&ranked, |t| a.in_view.contains(t) || hay.shows(t), a.budget);
        let out = upsert_anchor_block(text, block.as_ref().map(|(b, _)| b.as_str()));
        match self.recall_pointer() {
            Some(p) => upsert_recall_pointer(&out, Some(&p)),
            None => out,
        }
    }

    /// The recall pointer this plan writes: with `recallTool` on and a dropped range.
    fn recall_pointer(&self) -> Option<String> {
        let range = self
            .anchors
            .range
            .as_ref()
            .filter(|_| self.settings.recall_tool)?;
        Some(recall_pointer(range))
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
        let ranked = a.ranked();
        let hay = Haystack::new(&seen);
        // The recall pointer, when it fits the room, goes with the block (and takes its room
        // first: it points at everything, the block at a few identifiers).
        let pointer = self
            .recall_pointer()
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
            (None, None) => return guide.to_string(),
            (Some(b), None) => b,
            (None, Some(p)) => p,
            (Some(b), Some(p)) => format!("{b}\n\n{p}"),
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
                o.insert(
                    DETAILS_KEY.into(),
                    AnchorIndex::details_json_of(&self.anchors.ranked()),
                );
            }
        }
        details
    }
}
