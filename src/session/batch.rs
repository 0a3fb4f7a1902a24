//! Messages written as a batch (`Session.fromMessages`, `session.appendMessages`; spec:
//! compaction §1.6): every message is checked before any is written, so a refusal names the
//! message and leaves the session as it was; ids are drawn as one append after another would
//! draw them, so every way of building a session gives the same ids.
//!
//! A batch arrives as JSON lines, one message per line (`JSON.stringify` never writes a raw
//! newline), and each message's text is written into its entry line as it came: a history of
//! megabytes is checked in place (`validate_message_text`), never parsed into values.

use super::lines::header_text;
use super::{entry_line, ids, load, validate, LoadOptions, NewSession, Session};
use crate::error::Error;
use crate::support::json::js;
use crate::support::time::format_iso;
use rustc_hash::FxHashSet;
use serde_json::{Map, Value};

/// A batch the core refused: the position of the message at fault (`None`: not one message's
/// fault) and the error.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchError {
    pub index: Option<usize>,
    pub error: Error,
}

impl From<Error> for BatchError {
    fn from(error: Error) -> Self {
        BatchError { index: None, error }
    }
}

/// The messages of a batch: the lines of `text`, each checked (and crossed once: the check
/// finds where each line ends).
fn checked_lines(text: &[u8]) -> Result<Vec<&[u8]>, BatchError> {
    let mut lines = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let index = lines.len();
        let refused = |error| BatchError {
            index: Some(index),
            error,
        };
        let end = validate::validate_message_at(text, start).map_err(refused)?;
        match text.get(end) {
            None | Some(b'\n') => {}
            Some(_) => return Err(refused(validate::trailing())),
        }
        lines.push(&text[start..end]);
        start = end + 1;
    }
    Ok(lines)
}

/// Writes the line of a `message` entry holding the message text `message`.
fn message_line(
    out: &mut Vec<u8>,
    id: &str,
    parent: Option<&str>,
    timestamp: &str,
    message: &[u8],
) {
    let mut head = String::with_capacity(96);
    head.push_str("{\"type\":\"message\",\"id\":");
    js::write_string(&mut head, id);
    head.push_str(",\"parentId\":");
    match parent {
        Some(p) => js::write_string(&mut head, p),
        None => head.push_str("null"),
    }
    head.push_str(",\"timestamp\":");
    js::write_string(&mut head, timestamp);
    head.push_str(",\"message\":");
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(message);
    out.push(b'}');
}

impl Session {
    /// A new session holding `messages` (JSON lines, one message each), after a `custom` entry
    /// with `system`'s fields when given: the session `create` then an `append` per entry
    /// would make, byte for byte, built in one load.
    pub fn from_messages(
        init: NewSession,
        mut ids: Box<dyn ids::IdSource>,
        system: Option<Map<String, Value>>,
        messages: &[u8],
        now: i64,
    ) -> Result<Session, BatchError> {
        let lines = checked_lines(messages)?;
        let timestamp = format_iso(now);
        let mut out = Vec::with_capacity(messages.len() + lines.len() * 96 + 256);
        out.extend_from_slice(header_text(&init).as_bytes());
        out.push(b'\n');
        let mut taken: FxHashSet<String> = FxHashSet::default();
        let mut parent: Option<String> = None;
        if let Some(fields) = system {
            let id = ids::fresh_id(ids.as_mut(), |id| taken.contains(id));
            out.extend_from_slice(entry_line("custom", &id, None, &timestamp, fields).as_bytes());
            out.push(b'\n');
            taken.insert(id.clone());
            parent = Some(id);
        }
        for line in lines {
            let id = ids::fresh_id(ids.as_mut(), |id| taken.contains(id));
            message_line(&mut out, &id, parent.as_deref(), &timestamp, line);
            out.push(b'\n');
            taken.insert(id.clone());
            parent = Some(id);
        }
        Ok(load::load(out, LoadOptions::with_ids(ids))?)
    }

    /// Appends `messages` (JSON lines, one message each) after the leaf, after a `custom`
    /// entry with `system`'s fields when given; returns the new ids. All or nothing: every
    /// message is checked before the first entry is written.
    pub fn append_messages(
        &mut self,
        system: Option<Map<String, Value>>,
        messages: &[u8],
        now: i64,
    ) -> Result<Vec<String>, BatchError> {
        let lines = checked_lines(messages)?
            .into_iter()
            .map(std::str::from_utf8)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| Error::InvalidMessage {
                field: String::new(),
                reason: "the message is not UTF-8".into(),
            })?;
        let timestamp = format_iso(now);
        let mut out = Vec::with_capacity(lines.len() + 1);
        if let Some(fields) = system {
            out.push(self.append("custom", fields, now)?);
        }
        for line in lines {
            let id = self.new_id();
            let parent = self.leaf_index();
            let parent_id = parent.map(|p| self.entries[p as usize].id.to_string());
            let mut text = Vec::with_capacity(line.len() + 96);
            message_line(
                &mut text,
                &id,
                parent_id.as_deref(),
                &timestamp,
                line.as_bytes(),
            );
            let text = String::from_utf8_lossy(&text).into_owned();
            self.push_entry("message", &id, parent, text);
            out.push(id);
        }
        Ok(out)
    }
}
