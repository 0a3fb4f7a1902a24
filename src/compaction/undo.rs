//! Undoing a compaction (issue 19): the leaf goes back to where it was before the compaction
//! was appended — the compaction entry's parent. Nothing is deleted: the compaction stays in
//! the tree as an abandoned branch, and the next append continues from the parent.
//!
//! Only the latest step can be undone: the leaf must be the compaction entry itself. Once the
//! session moved on (a message was appended after it, or the leaf went elsewhere), moving the
//! leaf back would silently abandon that work too, so the undo is refused with `E_UNDO_REFUSED`.
//! A handoff wrote a new session and left this one unchanged: there is nothing to undo here.

use crate::error::{Error, ErrorCode, Result};
use crate::session::{EntryKind, Session};

/// Moves the leaf from the compaction `entry_id` back to its parent and returns the new leaf
/// id (`None` when the compaction was a root: the leaf is cleared). `E_UNKNOWN_ENTRY` for an
/// id the session does not hold; `E_UNDO_REFUSED` when the entry is not a compaction or the
/// leaf is no longer on it. A refused undo changes nothing.
pub fn undo_compaction(session: &mut Session, entry_id: &str) -> Result<Option<String>> {
    let index = session.require(entry_id)?;
    let kind = session.entries()[index].kind();
    if kind != EntryKind::Compaction {
        let what = kind
            .type_name()
            .map_or("an entry of an unknown type".to_string(), |t| {
                format!("a `{t}` entry")
            });
        return Err(Error::coded(
            ErrorCode::UndoRefused,
            format!("Entry {entry_id} is {what}, not a compaction: there is nothing to undo"),
        ));
    }
    if session.leaf() != Some(index) {
        let leaf = session.leaf_id().unwrap_or("none");
        return Err(Error::coded(
            ErrorCode::UndoRefused,
            format!(
                "Compaction {entry_id} can no longer be undone: the session moved on (the leaf \
                 is {leaf}, not the compaction). Move the leaf with branch() instead."
            ),
        ));
    }
    match session.parent_of(index) {
        Some(parent) => {
            let id = session.entries()[parent].id().to_string();
            session.branch(&id)?;
            Ok(Some(id))
        }
        None => {
            session.reset_leaf();
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{LoadOptions, SequentialIds};

    fn session() -> Session {
        let text = concat!(
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
            "\n",
            r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
            "\n",
            r#"{"type":"compaction","id":"c1","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","summary":"s","firstKeptEntryId":"u1","tokensBefore":10}"#,
            "\n",
        );
        Session::load(
            text.as_bytes().to_vec(),
            LoadOptions::with_ids(Box::new(SequentialIds::new())),
        )
        .unwrap()
    }

    #[test]
    fn the_leaf_returns_to_the_parent_and_the_entry_stays() {
        let mut s = session();
        let before = s.to_bytes();
        assert_eq!(
            undo_compaction(&mut s, "c1").unwrap().as_deref(),
            Some("u1")
        );
        assert_eq!(s.leaf_id(), Some("u1"));
        assert_eq!(s.to_bytes(), before, "nothing is deleted");
        // Undone once: the leaf is no longer the compaction.
        let e = undo_compaction(&mut s, "c1").unwrap_err();
        assert_eq!(e.code(), ErrorCode::UndoRefused);
        assert_eq!(s.leaf_id(), Some("u1"));
    }

    #[test]
    fn refuses_other_entries_and_unknown_ids() {
        let mut s = session();
        let e = undo_compaction(&mut s, "u1").unwrap_err();
        assert_eq!(e.code(), ErrorCode::UndoRefused);
        assert!(
            e.to_string()
                .contains("is a `message` entry, not a compaction"),
            "{e}"
        );
        assert_eq!(
            undo_compaction(&mut s, "nope").unwrap_err().code(),
            ErrorCode::UnknownEntry
        );
        assert_eq!(s.leaf_id(), Some("c1"));
    }
}
