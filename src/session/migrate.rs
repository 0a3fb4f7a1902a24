//! Format migrations v1 → v2 → v3 (spec: compaction §1.3). They run on load and change the
//! in-memory lines; the next save writes the migrated file. A header at the current version
//! (or newer, up to the supported maximum) is left alone, so migration is idempotent.

use crate::error::{ErrorCode, Result};
use crate::session::message::Role;
use crate::session::skim::{LineSkim, ParentField};
use crate::session::{ids, LineText, Session, CURRENT_VERSION};
use crate::support::json::{edit, js};
use rustc_hash::FxHashSet;

/// v1 → v2, first half: every entry gets a fresh id and the previous entry as its parent —
/// v1 files are one linear chain. Runs before the id index is built.
pub(super) fn assign_ids(session: &mut Session, skims: &[Option<LineSkim>]) {
    let mut taken: FxHashSet<Box<str>> = FxHashSet::default();
    let mut prev: Option<Box<str>> = None;
    for i in 0..session.entries.len() {
        let id: Box<str> =
            ids::fresh_id(session.ids.as_mut(), |id| taken.contains(id)).into_boxed_str();
        taken.insert(id.clone());
        let line = session.entries[i].line as usize;
        // A line holding bytes that are not UTF-8 reads with U+FFFD in their place: its text
        // is then longer than its bytes, and the spans found in the bytes do not hold in it.
        let text = session.line_text(line);
        let exact = matches!(text, std::borrow::Cow::Borrowed(_));
        let text = text.into_owned();
        let mut id_json = String::new();
        js::write_string(&mut id_json, &id);
        let parent_json = match &prev {
            Some(p) => {
                let mut s = String::new();
                js::write_string(&mut s, p);
                s
            }
            None => "null".to_string(),
        };
        let plain = skims
            .get(i)
            .and_then(Option::as_ref)
            .is_some_and(|s| s.id_value.is_none() && s.parent == ParentField::Missing);
        let new_text = match text.rfind('}') {
            // The usual case: append both members where `JSON.stringify` would put new
            // properties, without rescanning the line. The message span does not move.
            Some(close) if plain && exact => {
                let mut t = String::with_capacity(text.len() + 40);
                t.push_str(&text[..close]);
                let empty = text[..close].trim_end().ends_with('{');
                if !empty {
                    t.push(',');
                }
                t.push_str("\"id\":");
                t.push_str(&id_json);
                t.push_str(",\"parentId\":");
                t.push_str(&parent_json);
                t.push_str(&text[close..]);
                session.lines[line].text = LineText::Owned(t.into());
                None
            }
            _ => edit::set_member(&text, &[], "id", &id_json)
                .ok()
                .flatten()
                .and_then(|t| {
                    edit::set_member(&t, &[], "parentId", &parent_json)
                        .ok()
                        .flatten()
                }),
        };
        if let Some(t) = new_text {
            session.rewrite_line(line, t);
        }
        let e = &mut session.entries[i];
        e.id = id.clone();
        e.parent_id = prev.take();
        prev = Some(id);
    }
}

/// The v1 compaction field that migration turns into an id.
struct V1Compaction {
    first_kept_entry_index: Option<serde_json::Value>,
}

impl crate::session::Body for V1Compaction {
    fn read(o: &crate::support::json::view::Obj<'_>) -> std::result::Result<Self, String> {
        Ok(V1Compaction {
            first_kept_entry_index: o.value("firstKeptEntryIndex"),
        })
    }
}

/// The rest of v1 → v2 (compaction indices to ids) and v2 → v3 (`hookMessage` → `custom`),
/// then the header stamp.
pub(super) fn upgrade(session: &mut Session) -> Result<()> {
    let from = session.header.version;
    if from < 2 {
        for i in 0..session.entries.len() {
            if session.entries[i].kind != crate::session::EntryKind::Compaction {
                continue;
            }
            let Ok(body) = session.body::<V1Compaction>(i) else {
                continue;
            };
            let Some(index) = body.first_kept_entry_index else {
                continue;
            };
            // An index into the file's array of parsed lines, header = 0.
            let target = index
                .as_u64()
                .filter(|&n| n > 0)
                .and_then(|n| session.entries.get(n as usize - 1))
                .map(|e| e.id.to_string());
            let id = target.as_deref().map(serde_json::Value::from);
            session.edit_entry(i, |t| {
                let t = match &id {
                    Some(id) => edit::set_member(t, &[], "firstKeptEntryId", &js::stringify(id))?
                        .unwrap_or_else(|| t.to_string()),
                    None => t.to_string(),
                };
                edit::remove_member(&t, &[], "firstKeptEntryIndex")
            })?;
        }
    }
    if from < 3 {
        for i in 0..session.entries.len() {
            if session.entries[i].role == Some(Role::HookMessage) {
                session.edit_entry(i, |t| {
                    edit::set_member(t, &["message"], "role", "\"custom\"")
                })?;
                session.entries[i].role = Some(Role::Custom);
            }
        }
    }
    let header_line = session.header_line;
    let text = session.line_text(header_line).into_owned();
    if let Ok(Some(t)) = edit::set_member(&text, &[], "version", &CURRENT_VERSION.to_string()) {
        session.lines[header_line].text = LineText::Owned(t.into());
    }
    session.header.version = CURRENT_VERSION;
    session.warnings.push(crate::session::LoadWarning {
        code: ErrorCode::Migrated,
        line: header_line as u32 + 1,
        message: format!(
            "migrated from format version {from} to {CURRENT_VERSION}; save the session to keep it"
        ),
    });
    Ok(())
}
