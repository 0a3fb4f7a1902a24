//! `createBranchedSession(leafId)` (issue 40 item 5; pi's and oh-my-pi's SessionManager): a
//! new session file holding one path of this one. Label entries on the path are dropped (the
//! entries after one are re-chained to the entry before it, and a compaction whose
//! `firstKeptEntryId` named a dropped label names the next kept entry), then every label that
//! holds for an entry of the path is written again at the end, chained after the last entry,
//! with the timestamp of the label entry that set it. Entry lines are kept byte for byte but
//! for the rewritten `parentId` / `firstKeptEntryId`. The header is new: `id`, `timestamp`
//! (`now`, an argument: the core has no clock), the source's `cwd`, and `parentSession` when
//! given.

use crate::error::{Error, Result};
use crate::session::ids::IdSource;
use crate::session::{EntryKind, LabelBody, LoadOptions, Session};
use crate::support::json::{edit::set_member, js, view::Obj};
use serde_json::Value;

/// What the new header says beyond the source's `cwd`.
#[derive(Debug, Clone, Default)]
pub struct BranchedOptions {
    /// The new session's id.
    pub id: String,
    /// ISO-8601 time of the new header.
    pub timestamp: String,
    /// The source session's file, as `parentSession`.
    pub parent_session: Option<String>,
}

fn quoted(s: &str) -> String {
    let mut out = String::new();
    js::write_string(&mut out, s);
    out
}

fn set(line: &str, key: &str, value: &str, id: &str) -> Result<String> {
    set_member(line, &[], key, value)
        .ok()
        .flatten()
        .ok_or_else(|| Error::InvalidArgument {
            what: format!("entry {id} is not a JSON object"),
        })
}

impl Session {
    /// A new session holding the path from the root to `leaf` (see the module comment).
    /// Label ids are drawn from `ids`, skipping ids the path holds. The source is unchanged.
    pub fn branched(
        &self,
        leaf: usize,
        options: &BranchedOptions,
        ids: &mut dyn IdSource,
    ) -> Result<Session> {
        let entries = self.entries();
        let path = self.path_to(leaf);
        let mut lines: Vec<String> = Vec::with_capacity(path.len() + 2);
        let mut header = serde_json::Map::new();
        header.insert("type".into(), "session".into());
        header.insert("version".into(), crate::session::CURRENT_VERSION.into());
        header.insert("id".into(), options.id.clone().into());
        header.insert("timestamp".into(), options.timestamp.clone().into());
        let cwd = Obj::parse(self.header_json().as_bytes())
            .ok()
            .and_then(|o| o.value("cwd"))
            .unwrap_or(Value::String(String::new()));
        header.insert("cwd".into(), cwd);
        if let Some(p) = &options.parent_session {
            header.insert("parentSession".into(), p.clone().into());
        }
        lines.push(js::stringify(&Value::Object(header)));

        let mut kept: Vec<usize> = Vec::with_capacity(path.len());
        let mut pending_labels: Vec<&str> = Vec::new();
        let mut replaced: Vec<(String, String)> = Vec::new();
        let mut parent: Option<&str> = None;
        for &i in &path {
            let e = &entries[i];
            if e.kind() == EntryKind::Label {
                pending_labels.push(e.id());
                continue;
            }
            for l in pending_labels.drain(..) {
                replaced.push((l.to_string(), e.id().to_string()));
            }
            let mut line = self.entry_json(i).into_owned();
            if e.parent_id() != parent {
                let v = parent.map_or_else(|| "null".to_string(), quoted);
                line = set(&line, "parentId", &v, e.id())?;
            }
            if e.kind() == EntryKind::Compaction {
                let first = self.first_kept_id(i);
                if let Some((_, to)) = replaced.iter().find(|(from, _)| **from == *first) {
                    line = set(&line, "firstKeptEntryId", &quoted(to), e.id())?;
                }
            }
            lines.push(line);
            kept.push(i);
            parent = Some(e.id());
        }

        // The labels that hold for the kept entries, in the order they were last set.
        let mut latest: Vec<(String, Option<String>, String)> = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            if e.kind() != EntryKind::Label {
                continue;
            }
            let Ok(b) = self.body::<LabelBody>(i) else {
                continue;
            };
            latest.retain(|(t, _, _)| *t != b.target_id);
            let ts = Obj::parse(self.entry_json(i).as_bytes())
                .ok()
                .and_then(|o| o.string("timestamp"))
                .unwrap_or_default();
            latest.push((b.target_id, b.label.filter(|l| !l.is_empty()), ts));
        }
        let mut taken: rustc_hash::FxHashSet<String> =
            kept.iter().map(|&i| entries[i].id().to_string()).collect();
        let mut parent = parent.map(str::to_string);
        for (target, label, ts) in latest {
            let Some(label) = label else { continue };
            if !kept.iter().any(|&i| entries[i].id() == target) {
                continue;
            }
            let id = loop {
                let id = ids.draw();
                if !taken.contains(&id) {
                    break id;
                }
            };
            taken.insert(id.clone());
            let mut o = serde_json::Map::new();
            o.insert("type".into(), "label".into());
            o.insert("id".into(), id.clone().into());
            o.insert(
                "parentId".into(),
                parent.clone().map_or(Value::Null, Value::from),
            );
            o.insert("timestamp".into(), ts.into());
            o.insert("targetId".into(), target.into());
            o.insert("label".into(), label.into());
            lines.push(js::stringify(&Value::Object(o)));
            parent = Some(id);
        }
        let mut bytes = lines.join("\n").into_bytes();
        bytes.push(b'\n');
        Session::load(bytes, LoadOptions::default())
    }
}
