//! The progress guard's warning on a compaction entry (spec: compaction §8.5): when a
//! compaction could not make enough room, the warning is stamped on the latest compaction
//! entry (its `warning` field), so a reader of the file sees why maintenance paused.

use crate::error::{Error, Result};
use crate::session::{EntryKind, Session};
use serde_json::Value;

/// Sets the `warning` field of the compaction entry `id`, keeping every other byte of its
/// line. `E_UNKNOWN_ENTRY` for an unknown id, `E_INVALID_ARGUMENT` for an entry that is not a
/// compaction; the session is unchanged then.
pub fn stamp_warning(session: &mut Session, id: &str, warning: &str) -> Result<()> {
    let index = session.require(id)?;
    if session.entries()[index].kind() != EntryKind::Compaction {
        return Err(Error::InvalidArgument {
            what: format!(
                "entry {id} is not a compaction: only a compaction entry carries a warning"
            ),
        });
    }
    session.set_entry_field(index, &[], "warning", &Value::String(warning.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{LoadOptions, Session};

    const FILE: &str = concat!(
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
        "\n",
        r#"{"type":"message","id":"u","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}"#,
        "\n",
        r#"{"type":"compaction","id":"c","parentId":"u","timestamp":"2026-01-01T00:00:02.000Z","summary":"s","firstKeptEntryId":"u","tokensBefore":5}"#,
        "\n",
    );

    fn load() -> Session {
        Session::load(FILE.as_bytes().to_vec(), LoadOptions::default()).expect("loads")
    }

    #[test]
    fn stamps_the_field_and_keeps_the_rest_of_the_line() {
        let mut s = load();
        stamp_warning(&mut s, "c", "paused").expect("stamps");
        let text = s.to_jsonl();
        let line = text.lines().nth(2).expect("the compaction line");
        assert!(
            line.starts_with(r#"{"type":"compaction","id":"c","#),
            "{line}"
        );
        assert!(
            line.ends_with(r#""tokensBefore":5,"warning":"paused"}"#),
            "{line}"
        );
        // A second warning replaces the first.
        stamp_warning(&mut s, "c", "again").expect("stamps");
        assert!(s.to_jsonl().contains(r#""warning":"again"}"#));
        assert!(!s.to_jsonl().contains("paused"));
    }

    #[test]
    fn refuses_other_entries_and_leaves_the_session_alone() {
        let mut s = load();
        let before = s.to_jsonl();
        assert_eq!(
            stamp_warning(&mut s, "u", "x").map_err(|e| e.code()),
            Err(crate::error::ErrorCode::InvalidArgument)
        );
        assert_eq!(
            stamp_warning(&mut s, "nope", "x").map_err(|e| e.code()),
            Err(crate::error::ErrorCode::UnknownEntry)
        );
        assert_eq!(s.to_jsonl(), before);
    }
}
