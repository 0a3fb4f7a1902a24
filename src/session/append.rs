//! Appending entries (spec: compaction §1.6–§1.8): a new entry line is a child of the leaf
//! (or of a chosen parent) and becomes the leaf; labels are read back from the `label`
//! entries appended.

use crate::error::{Error, Result};
use crate::session::entry::{BranchSummaryBody, CompactionBody, Entry, EntryKind, LabelBody};
use crate::session::ids;
use crate::session::lines::{entry_line, Leaf, Line, LineKind, LineText};
use crate::session::model::Session;
use crate::session::validate;
use serde_json::{Map, Value};

impl Session {
    /// Draws a fresh entry id.
    pub fn new_id(&mut self) -> String {
        let by_id = &self.by_id;
        ids::fresh_id(self.ids.as_mut(), |id| by_id.contains_key(id))
    }

    /// Appends an entry of `entry_type` with `fields` as a child of the leaf and advances the
    /// leaf to it. The line is written as `{"type","id","parentId","timestamp",…fields}`.
    pub fn append(
        &mut self,
        entry_type: &str,
        fields: Map<String, Value>,
        now: i64,
    ) -> Result<String> {
        self.append_with_parent(entry_type, fields, self.leaf_index(), now)
    }

    /// The leaf's entry index.
    pub(super) fn leaf_index(&self) -> Option<u32> {
        match self.leaf {
            Leaf::At(i) => Some(i),
            Leaf::None => None,
        }
    }

    pub(crate) fn append_with_parent(
        &mut self,
        entry_type: &str,
        fields: Map<String, Value>,
        parent: Option<u32>,
        now: i64,
    ) -> Result<String> {
        if entry_type.is_empty() {
            return Err(Error::InvalidArgument {
                what: "an entry type must be a non-empty string".into(),
            });
        }
        if entry_type == "message" {
            // Checked before anything changes: a refused message leaves the session as it was
            // (spec: compaction §1.6–§1.7; `validate`).
            let message = fields.get("message").ok_or_else(|| Error::InvalidMessage {
                field: String::new(),
                reason: "a message entry needs a `message` object".into(),
            })?;
            validate::validate_message(message)?;
        }
        let id = self.new_id();
        let parent_id = parent.map(|p| self.entries[p as usize].id.clone());
        let timestamp = crate::support::time::format_iso(now);
        let text = entry_line(entry_type, &id, parent_id.as_deref(), &timestamp, fields);
        self.push_entry(entry_type, &id, parent, text);
        Ok(id)
    }

    /// Adds the entry line `text` (of `entry_type`, with `id`, a child of `parent`) at the end
    /// of the file and moves the leaf to it.
    pub(super) fn push_entry(
        &mut self,
        entry_type: &str,
        id: &str,
        parent: Option<u32>,
        text: String,
    ) {
        let parent_id = parent.map(|p| self.entries[p as usize].id.clone());
        let index = self.entries.len() as u32;
        let line = self.lines.len();
        self.lines.push(Line {
            text: LineText::Source { start: 0, end: 0 },
            kind: LineKind::Entry(index),
            message: None,
            edited: 0,
        });
        let kind = EntryKind::from_type(entry_type);
        self.has_reset_boundary |= kind == EntryKind::ResetBoundary;
        self.entries.push(Entry {
            line: line as u32,
            kind,
            id: id.into(),
            parent_id,
            parent,
            // A message's role is read from its line by `set_line`.
            role: None,
        });
        self.set_line(line, text);
        self.by_id.insert(id.into(), index);
        self.leaf = Leaf::At(index);
    }

    /// Appends a `message` entry (spec: compaction §1.6).
    pub fn append_message(&mut self, message: Value, now: i64) -> Result<String> {
        let mut fields = Map::new();
        fields.insert("message".into(), message);
        self.append("message", fields, now)
    }

    /// Appends a `compaction` entry as a child of the leaf (spec: compaction §1.8
    /// `appendCompaction`).
    pub fn append_compaction(&mut self, body: &CompactionBody, now: i64) -> Result<String> {
        if self.index_of(&body.first_kept_entry_id).is_none() {
            return Err(Error::UnknownEntry {
                id: body.first_kept_entry_id.clone(),
            });
        }
        self.append("compaction", body.to_fields(), now)
    }

    /// Moves the leaf to `from` (or resets it for `None`) and appends a `branch_summary`
    /// child there whose `fromId` is `from` or `"root"` (spec: compaction §1.8
    /// `branchWithSummary`).
    pub fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        summary: &str,
        details: Option<Value>,
        from_extension: bool,
        now: i64,
    ) -> Result<String> {
        let parent = match from {
            Some(id) => Some(self.require(id)? as u32),
            None => None,
        };
        let body = BranchSummaryBody {
            from_id: from.unwrap_or("root").to_string(),
            summary: summary.to_string(),
            details,
            from_extension,
        };
        self.append_with_parent("branch_summary", body.to_fields(), parent, now)
    }

    /// Appends a `label` entry for `target` (an empty or missing label clears it).
    pub fn append_label(&mut self, target: &str, label: Option<&str>, now: i64) -> Result<String> {
        self.require(target)?;
        let body = LabelBody {
            target_id: target.to_string(),
            label: label.map(str::to_string),
        };
        self.append("label", body.to_fields(), now)
    }

    /// The label of every labelled entry (target id → label string), in the order of the
    /// targets: the last `label` entry for a target wins; an empty or missing label clears it.
    pub fn labels(&self) -> Map<String, Value> {
        let mut out = Map::new();
        for (i, e) in self.entries.iter().enumerate() {
            if e.kind != EntryKind::Label {
                continue;
            }
            if let Ok(b) = self.body::<LabelBody>(i) {
                match b.label.filter(|l| !l.is_empty()) {
                    Some(l) => {
                        out.insert(b.target_id, l.into());
                    }
                    None => {
                        out.remove(&b.target_id);
                    }
                }
            }
        }
        let mut pairs: Vec<(String, Value)> = out.into_iter().collect();
        crate::support::sort::sort_by_key(&mut pairs, |(id, _)| self.index_of(id));
        pairs.into_iter().collect()
    }
}
