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
use crate::support::json::edit::{find_path, set_member};
use crate::support::json::js;

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

/// Appends `,"key":value` (a JSON string, or `null`).
fn push_member(out: &mut String, key: &str, value: Option<&str>) {
    out.push(',');
    js::write_string(out, key);
    out.push(':');
    match value {
        Some(v) => js::write_string(out, v),
        None => out.push_str("null"),
    }
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
        // The header, written as the reference orders it; `cwd` copied as written.
        let head = self.header_json();
        let cwd = find_path(&head, &["cwd"]).ok().flatten();
        let mut header = String::from("{\"type\":\"session\",\"version\":");
        header.push_str(&crate::session::CURRENT_VERSION.to_string());
        for (key, value) in [
            ("id", Some(&options.id)),
            ("timestamp", Some(&options.timestamp)),
        ] {
            push_member(&mut header, key, value.map(String::as_str));
        }
        header.push_str(",\"cwd\":");
        header.push_str(cwd.map_or("\"\"", |span| &head[span]));
        if options.parent_session.is_some() {
            push_member(
                &mut header,
                "parentSession",
                options.parent_session.as_deref(),
            );
        }
        header.push('}');
        let mut lines: Vec<String> = Vec::with_capacity(path.len() + 2);
        lines.push(header);

        let mut taken: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
        let mut pending_labels: Vec<&str> = Vec::new();
        let mut replaced: Vec<(&str, &str)> = Vec::new();
        let mut parent: Option<&str> = None;
        for &i in &path {
            let e = &entries[i];
            if e.kind() == EntryKind::Label {
                pending_labels.push(e.id());
                continue;
            }
            for l in pending_labels.drain(..) {
                replaced.push((l, e.id()));
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
            taken.insert(e.id());
            parent = Some(e.id());
        }

        // The label each kept entry holds last (a cleared one holds none), in the order they
        // were last set, with the timestamp of the entry that set it.
        let mut latest: Vec<(String, Option<String>, usize)> = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            if e.kind() != EntryKind::Label {
                continue;
            }
            let Ok(b) = self.body::<LabelBody>(i) else {
                continue;
            };
            latest.retain(|(t, _, _)| *t != b.target_id);
            latest.push((b.target_id, b.label.filter(|l| !l.is_empty()), i));
        }
        let mut drawn: Vec<String> = Vec::new();
        let mut parent = parent.map(str::to_string);
        for (target, label, at) in latest {
            let Some(label) = label else { continue };
            if !taken.contains(target.as_str()) {
                continue;
            }
            let id = loop {
                let id = ids.draw();
                if !taken.contains(id.as_str()) && !drawn.contains(&id) {
                    break id;
                }
            };
            let text = self.entry_json(at);
            let ts = find_path(&text, &["timestamp"]).ok().flatten();
            let mut line = String::from("{\"type\":\"label\"");
            push_member(&mut line, "id", Some(&id));
            line.push_str(",\"parentId\":");
            line.push_str(&parent.as_deref().map_or_else(|| "null".to_string(), quoted));
            line.push_str(",\"timestamp\":");
            line.push_str(ts.map_or("null", |span| &text[span]));
            push_member(&mut line, "targetId", Some(&target));
            push_member(&mut line, "label", Some(&label));
            line.push('}');
            lines.push(line);
            parent = Some(id.clone());
            drawn.push(id);
        }
        let mut bytes = lines.join("\n").into_bytes();
        bytes.push(b'\n');
        Session::load(bytes, LoadOptions::default())
    }
}
