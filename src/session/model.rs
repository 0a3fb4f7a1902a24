//! The loaded session (spec: compaction §1): its lines, entry index, leaf and the caches of
//! what is derived from them, with the readers every other part of the session builds on
//! (entries, line texts, bodies, messages) and the writer that gives the file back.
//!
//! Only this file defines [`Session`]; the files that load, edit, append to and walk a session
//! add their methods in their own `impl Session` blocks on top of these.

use crate::error::{Error, ErrorCode, Result};
use crate::session::entry::{Body, Entry, EntryBase, EntryKind, FirstKept};
use crate::session::facts::{FactColumns, FileCalls};
use crate::session::ids::IdSource;
use crate::session::lines::{
    bom_len, header_text, utf8_text, HeaderInfo, Leaf, Line, LineKind, LineText, LoadWarning,
    NewSession, BOM, CURRENT_VERSION,
};
use crate::session::message::{AgentMessage, MessageHead};
use crate::session::state::PathState;
use crate::support::json::view::{MemberSpan, Obj};
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

/// Lines from this many bytes on keep their member spans between body reads (`body_object`).
const KEEP_MEMBERS_FROM: usize = 64 * 1024;

/// A text `derived_text` keeps: (entry, its line's stamp, the caller's key, the text).
type DerivedText = (usize, u64, [u64; 3], std::rc::Rc<str>);
/// A head `message_head_shared` keeps: (its line's stamp, the head).
type KeptHead = (u64, std::rc::Rc<MessageHead>);
/// The member spans `body_object` keeps: (entry, its line's stamp, spans).
type KeptMembers = (usize, u64, Vec<MemberSpan>);

/// Texts `derived_text` keeps: of the active compaction, its first kept entry and its
/// context message with inline frames, frame references and without frame data.
const DERIVED_TEXTS: usize = 4;
/// The `derived_text` key of [`Session::first_kept_id`] (the context's keys end in 0–2).
const FIRST_KEPT_KEY: [u64; 3] = [u64::MAX; 3];

/// A loaded session: lines, entry index and leaf.
pub struct Session {
    pub(super) source: Vec<u8>,
    pub(super) lines: Vec<Line>,
    /// Number of lines that came from the file (later lines were appended).
    pub(super) source_lines: usize,
    pub(super) trailing_newline: bool,
    pub(super) header_line: usize,
    pub(super) header: HeaderInfo,
    pub(super) entries: Vec<Entry>,
    pub(super) by_id: FxHashMap<Box<str>, u32>,
    pub(super) leaf: Leaf,
    pub(super) warnings: Vec<LoadWarning>,
    pub(super) ids: Box<dyn IdSource>,
    /// Token estimates per entry (`u32::MAX` = not computed yet): recorded by the load pass
    /// for `message` entries, memoized on first use for the others.
    pub(super) tokens_full: RefCell<Vec<u32>>,
    pub(super) tokens_excluding: RefCell<Vec<u32>>,
    /// Memoized file-touching tool calls per assistant entry.
    pub(super) file_calls: RefCell<Vec<Option<FileCalls>>>,
    /// The last path asked for (`path_shared`), moved to each new leaf by what changed:
    /// parents never change after loading, so it stays valid.
    pub(super) last_path: RefCell<Option<PathCache>>,
    /// The state of the last path asked about (`path_state`), with the edit generation it is of.
    pub(super) path_state: RefCell<Option<(usize, u64, PathState)>>,
    /// Texts derived from entries, with the caller's keys (`derived_text`): the context's
    /// message of the active compaction, rebuilt on every request otherwise.
    pub(super) derived: RefCell<Vec<DerivedText>>,
    /// Where the members of the last large entry line read as a body are (`body_object`). A
    /// snapcompact compaction's line is megabytes of frames, and a context build reads several
    /// of its members.
    pub(super) members: RefCell<Option<KeptMembers>>,
    /// The heads of the messages contexts were built from, with the stamp of the line each
    /// was read from (`message_head_shared`): every request builds the context again.
    pub(super) heads: RefCell<Vec<Option<KeptHead>>>,
    /// Counts line rewrites: what is derived from entry bodies is valid for one generation.
    pub(super) generation: u64,
    /// Some entry is a `reset_boundary` (rare): without one, preparing a compaction does not
    /// look for it along the whole path.
    pub(super) has_reset_boundary: bool,
    /// How far [`Session::may_hold_pi_entries`] has scanned the entries, at which edit
    /// generation, and whether it met one.
    pub(super) pi_scan: std::cell::Cell<(usize, u64, bool)>,
    /// What the load pass recorded of each `message` entry (`facts`).
    pub(super) facts: FactColumns,
    /// Which lines the rewrites since the oldest tracked generation touched (`journal`).
    pub(super) journal: crate::session::rewrites::Journal,
}

/// The path to the last leaf asked about (`Session::path_shared`, tree.rs).
#[derive(Debug, Default)]
pub(super) struct PathCache {
    pub(super) leaf: Option<usize>,
    /// Root first.
    pub(super) path: Rc<Vec<usize>>,
    /// Per entry, its position on `path` (`u32::MAX` when it is not on it); entries appended
    /// since the last call are added on the next.
    pub(super) pos: Vec<u32>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("header", &self.header)
            .field("entries", &self.entries.len())
            .field("lines", &self.lines.len())
            .field("warnings", &self.warnings.len())
            .finish()
    }
}

impl Session {
    /// A new, empty session (header only, format version 3).
    pub fn create(init: NewSession, ids: Box<dyn IdSource>) -> Session {
        let text = header_text(&init);
        Session {
            source: Vec::new(),
            lines: vec![Line {
                text: LineText::Owned(text.into()),
                kind: LineKind::Header,
                message: None,
                edited: 0,
            }],
            source_lines: 0,
            trailing_newline: true,
            header_line: 0,
            header: HeaderInfo {
                id: init.id,
                version: CURRENT_VERSION,
                version_on_disk: CURRENT_VERSION,
            },
            entries: Vec::new(),
            by_id: FxHashMap::default(),
            leaf: Leaf::None,
            warnings: Vec::new(),
            ids,
            tokens_full: RefCell::default(),
            tokens_excluding: RefCell::default(),
            file_calls: RefCell::default(),
            last_path: RefCell::default(),
            path_state: RefCell::default(),
            derived: RefCell::default(),
            members: RefCell::default(),
            heads: RefCell::default(),
            generation: 0,
            has_reset_boundary: false,
            pi_scan: Default::default(),
            facts: FactColumns::default(),
            journal: Default::default(),
        }
    }

    // ----- header, warnings ------------------------------------------------------------

    /// What the header says.
    pub fn header(&self) -> &HeaderInfo {
        &self.header
    }

    /// The header line's JSON text.
    pub fn header_json(&self) -> Cow<'_, str> {
        self.line_text(self.header_line)
    }

    /// Problems found while loading, in line order.
    pub fn warnings(&self) -> &[LoadWarning] {
        &self.warnings
    }

    /// Adds problems a reader above this layer found in the loaded file (frame references
    /// that do not resolve, `archive::stored::check`), after the loader's own.
    pub fn add_warnings(&mut self, warnings: Vec<LoadWarning>) {
        self.warnings.extend(warnings);
    }

    // ----- entries -----------------------------------------------------------------------

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the session has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// All entries in file (append) order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// True if some entry is a `reset_boundary`.
    pub fn has_reset_boundary(&self) -> bool {
        self.has_reset_boundary
    }

    /// Whether some entry could make a path pi-family (spec: compaction §1.6;
    /// `context::projection::is_pi_family`): a `context_edit` or `usage` entry, a message of a
    /// role oh-my-pi does not write (pi's `system`), or a compaction whose line names
    /// `systemMessage`. A superset of what `is_pi_family` looks for, so `false` answers it for
    /// every path without walking one: an oh-my-pi session's turn does not walk its history.
    /// Entries are only appended; each is scanned once (again after a line rewrite).
    pub fn may_hold_pi_entries(&self) -> bool {
        let (mut from, generation, mut seen) = self.pi_scan.get();
        if generation != self.generation || from > self.entries.len() {
            (from, seen) = (0, false);
        }
        while !seen && from < self.entries.len() {
            let e = &self.entries[from];
            seen = match e.kind() {
                EntryKind::ContextEdit | EntryKind::Usage => true,
                EntryKind::Message => e.role() == Some(crate::session::message::Role::Other),
                // The line's bytes as stored: no UTF-8 check of a compaction's whole line
                // (archives run to megabytes) for an ASCII name.
                EntryKind::Compaction => {
                    memchr::memmem::find(self.entry_line_bytes(from), b"systemMessage").is_some()
                }
                _ => false,
            };
            from += 1;
        }
        self.pi_scan
            .set((self.entries.len(), self.generation, seen));
        seen
    }

    /// The entry at `index`.
    pub fn entry(&self, index: usize) -> Option<&Entry> {
        self.entries.get(index)
    }

    /// The index of the entry with `id` (the last one, if ids are duplicated).
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).map(|&i| i as usize)
    }

    /// The edit generation: it changes whenever a line is rewritten, so what was derived from
    /// entry bodies can be kept as long as it stays the same (appends leave it alone).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// True when two entries share an id (the index finds the later one).
    pub fn has_duplicate_ids(&self) -> bool {
        self.by_id.len() != self.entries.len()
    }

    /// The index of `id`, or `E_UNKNOWN_ENTRY`.
    pub fn require(&self, id: &str) -> Result<usize> {
        self.index_of(id)
            .ok_or_else(|| Error::UnknownEntry { id: id.to_string() })
    }

    /// 1-based line number of an entry in the file as it would be written now.
    pub fn line_number(&self, index: usize) -> u32 {
        self.entries[index].line + 1
    }

    /// The JSON text of an entry's line.
    pub fn entry_json(&self, index: usize) -> Cow<'_, str> {
        self.line_text(self.entries[index].line as usize)
    }

    /// Names the present text of an entry's line: it changes whenever the line is rewritten
    /// and never comes back, so what was derived from the line while it had a stamp holds
    /// while the stamp is the same.
    pub fn line_stamp(&self, index: usize) -> u64 {
        self.lines[self.entries[index].line as usize].edited
    }

    /// The JSON text of a `message` entry's message object.
    pub fn message_json(&self, index: usize) -> Option<Cow<'_, str>> {
        let line = self.entries[index].line as usize;
        let (s, e) = self.lines[line].message?;
        // Slice the bytes first: the span is a byte range of the line as loaded.
        let bytes = self.line_bytes(line).get(s as usize..e as usize)?;
        Some(utf8_text(bytes))
    }

    /// Byte range of a `message` entry's message object within its line
    /// ([`Session::entry_json`]).
    pub(crate) fn message_span(&self, index: usize) -> Option<std::ops::Range<usize>> {
        let (s, e) = self.lines[self.entries[index].line as usize].message?;
        Some(s as usize..e as usize)
    }

    /// Parses the message of a `message` entry.
    pub fn message(&self, index: usize) -> Result<AgentMessage> {
        let json = self
            .message_json(index)
            .ok_or_else(|| self.body_error(index, "the entry has no message object"))?;
        AgentMessage::parse(&json, self.entries[index].role)
            .map_err(|e| self.body_error(index, &e.to_string()))
    }

    /// Reads an entry's body as `T` (one of the `*Body` types).
    pub fn body<T: Body>(&self, index: usize) -> Result<T> {
        let text = self.entry_json(index);
        let o = self.body_object(index, &text)?;
        T::read(&o).map_err(|e| self.body_error(index, &e))
    }

    /// The entry's object for [`Session::body`], outside the type parameter (one copy of the
    /// parse and its error path instead of one per body type).
    /// A line of at least [`KEEP_MEMBERS_FROM`] bytes keeps where its members are until the
    /// next rewrite, so reading it again skips the scan.
    fn body_object<'t>(&self, index: usize, text: &'t str) -> Result<Obj<'t>> {
        let keep = text.len() >= KEEP_MEMBERS_FROM;
        let stamp = self.line_stamp(index);
        if keep {
            if let Some((i, s, spans)) = self.members.borrow().as_ref() {
                if (*i, *s) == (index, stamp) {
                    return Ok(Obj::from_members(text.as_bytes(), spans.clone()));
                }
            }
        }
        let o = Obj::parse(text.as_bytes()).map_err(|e| self.body_error(index, e.reason))?;
        if keep {
            *self.members.borrow_mut() = Some((index, stamp, o.members().to_vec()));
        }
        Ok(o)
    }

    /// `firstKeptEntryId` of the compaction entry `index` (empty when absent or unreadable),
    /// kept like [`Session::derived_text`]: every context build and prune reads it, and the
    /// line of a snapcompact compaction is megabytes of frames to cross.
    pub fn first_kept_id(&self, index: usize) -> std::rc::Rc<str> {
        self.derived_text(index, FIRST_KEPT_KEY, &mut || {
            Ok(Some(
                self.body::<FirstKept>(index)
                    .map(|b| b.0)
                    .unwrap_or_default(),
            ))
        })
        .ok()
        .flatten()
        .unwrap_or_else(|| "".into())
    }

    /// The text `make` derives from entry `index` (`None`: nothing to derive), kept under
    /// `key` until the entry's line changes, for the last few entries and keys: what a context
    /// build derives from the active compaction on every request.
    pub(crate) fn derived_text(
        &self,
        index: usize,
        key: [u64; 3],
        make: &mut dyn FnMut() -> Result<Option<String>>,
    ) -> Result<Option<std::rc::Rc<str>>> {
        let stamp = self.line_stamp(index);
        if let Some((.., text)) = self
            .derived
            .borrow()
            .iter()
            .find(|(i, s, k, _)| (*i, *s, *k) == (index, stamp, key))
        {
            return Ok(Some(text.clone()));
        }
        let Some(text) = make()? else {
            return Ok(None);
        };
        let text: std::rc::Rc<str> = text.into();
        let mut kept = self.derived.borrow_mut();
        // What was derived from an earlier text of the line goes with the new one.
        kept.retain(|(i, _, k, _)| (*i, *k) != (index, key));
        if kept.len() >= DERIVED_TEXTS {
            kept.remove(0);
        }
        kept.push((index, stamp, key, text.clone()));
        Ok(Some(text))
    }

    /// The entry's `timestamp` as milliseconds (0 when absent or unreadable).
    pub fn timestamp_ms(&self, index: usize) -> i64 {
        self.body::<EntryBase>(index)
            .ok()
            .and_then(|b| b.timestamp)
            .and_then(|t| crate::support::time::parse_iso(&t))
            .unwrap_or(0)
    }

    pub(super) fn body_error(&self, index: usize, reason: &str) -> Error {
        Error::InvalidEntryBody {
            id: self.entries[index].id.to_string(),
            line: self.line_number(index),
            reason: reason.to_string(),
        }
    }

    pub(crate) fn line_text(&self, line: usize) -> Cow<'_, str> {
        match &self.lines[line].text {
            LineText::Owned(s) => Cow::Borrowed(s),
            LineText::Bytes(b) => utf8_text(b),
            LineText::Source { start, end } => utf8_text(&self.source[*start..*end]),
        }
    }

    pub(crate) fn line_bytes(&self, line: usize) -> &[u8] {
        match &self.lines[line].text {
            LineText::Owned(s) => s.as_bytes(),
            LineText::Bytes(b) => b,
            LineText::Source { start, end } => &self.source[*start..*end],
        }
    }

    // ----- writing -----------------------------------------------------------------------

    /// The session as JSONL bytes: unchanged lines exactly as loaded, changed lines spliced,
    /// appended lines at the end.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.byte_len());
        self.write_segments(|seg| out.extend_from_slice(seg));
        out
    }

    /// The length of [`Session::to_bytes`].
    pub fn byte_len(&self) -> usize {
        let mut n = 0;
        self.write_segments(|seg| n += seg.len());
        n
    }

    /// Hands the bytes of [`Session::to_bytes`] to `f` in order, as slices of the session's
    /// own memory: runs of unchanged lines as one slice of the loaded file (an unmodified
    /// session is one slice), new and rewritten lines and the newlines between them on
    /// their own. A caller can copy them out without building the file a second time.
    pub fn write_segments(&self, mut f: impl FnMut(&[u8])) {
        // A byte order mark the file started with (it belongs to no line).
        if bom_len(&self.source) > 0 {
            f(BOM);
        }
        // A pending run [start, end) of the source, newlines included.
        let mut run: Option<(usize, usize)> = None;
        for (i, line) in self.lines.iter().enumerate() {
            // A source line right after the run (its newline between them) extends it.
            if let (LineText::Source { start, end }, Some((rs, re))) = (&line.text, run) {
                if i > 0 && *start == re + 1 && self.source.get(re) == Some(&b'\n') {
                    run = Some((rs, *end));
                    continue;
                }
            }
            if let Some((rs, re)) = run.take() {
                f(&self.source[rs..re]);
            }
            if i > 0 {
                f(b"\n");
            }
            match &line.text {
                LineText::Source { start, end } => run = Some((*start, *end)),
                LineText::Owned(text) => f(text.as_bytes()),
                LineText::Bytes(bytes) => f(bytes),
            }
        }
        if let Some((rs, re)) = run {
            f(&self.source[rs..re]);
        }
        if self.trailing_newline || self.lines.len() > self.source_lines {
            f(b"\n");
        }
    }

    /// [`Session::to_bytes`] as a string (bytes that are not UTF-8 are replaced by U+FFFD;
    /// use `to_bytes` to keep them).
    pub fn to_jsonl(&self) -> String {
        match String::from_utf8(self.to_bytes()) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }
    }

    /// The bytes of an entry's line.
    pub(crate) fn entry_line_bytes(&self, index: usize) -> &[u8] {
        self.line_bytes(self.entries[index].line as usize)
    }

    /// Warnings collected while loading with the given code.
    pub fn warnings_with(&self, code: ErrorCode) -> impl Iterator<Item = &LoadWarning> {
        self.warnings.iter().filter(move |w| w.code == code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{LoadOptions, ModeChangeBody};
    use serde_json::{Map, Value};

    const FILE: &str = concat!(
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
        "\n",
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"one"}}"#,
        "\n",
        r#"{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"two"}}"#,
        "\n",
        r#"{"type":"message","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"three"}}"#,
    );

    fn segments(s: &Session) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        s.write_segments(|seg| out.push(seg.to_vec()));
        out
    }

    #[test]
    fn appends_keep_the_edit_generation_rewrites_move_it() {
        let mut s = Session::load(FILE.as_bytes().to_vec(), LoadOptions::default()).unwrap();
        let g = s.generation();
        s.append_message(serde_json::json!({"role": "user", "content": "four"}), 0)
            .unwrap();
        assert_eq!(s.generation(), g, "an append derives nothing stale");
        let a = s.require("a").unwrap();
        s.set_entry_field(a, &[], "label", &Value::from("x"))
            .unwrap();
        assert_eq!(s.generation(), g + 1, "a rewrite does");
    }

    #[test]
    fn a_large_body_read_again_follows_its_rewritten_line() {
        let mut s = Session::load(FILE.as_bytes().to_vec(), LoadOptions::default()).unwrap();
        let mut fields = Map::new();
        fields.insert("mode".into(), Value::from("plan"));
        fields.insert("data".into(), Value::from("x".repeat(KEEP_MEMBERS_FROM)));
        let id = s.append("mode_change", fields, 0).unwrap();
        let i = s.require(&id).unwrap();
        let mode = |s: &Session| s.body::<ModeChangeBody>(i).unwrap().mode;
        assert_eq!(mode(&s).as_deref(), Some("plan"));
        assert!(s.members.borrow().is_some(), "the spans are kept");
        assert_eq!(
            mode(&s).as_deref(),
            Some("plan"),
            "read from the kept spans"
        );
        // A longer value moves every span after it: the rewrite drops the kept ones.
        s.set_entry_field(i, &[], "mode", &Value::from("plan-b"))
            .unwrap();
        assert_eq!(mode(&s).as_deref(), Some("plan-b"));
        s.set_entry_field(i, &[], "data", &Value::from("y"))
            .unwrap();
        assert_eq!(
            mode(&s).as_deref(),
            Some("plan-b"),
            "a short line reads afresh"
        );
    }

    #[test]
    fn unchanged_lines_are_written_as_one_slice_of_the_file() {
        for file in [FILE.to_string(), format!("{FILE}\n")] {
            let s = Session::load(file.clone().into_bytes(), LoadOptions::default()).unwrap();
            let segs = segments(&s);
            assert_eq!(segs[0], FILE.as_bytes(), "one run of the source");
            assert_eq!(segs.concat(), file.as_bytes());
            assert_eq!(s.byte_len(), file.len());
        }
    }

    #[test]
    fn a_rewritten_line_splits_the_runs_around_it() {
        let mut s = Session::load(FILE.as_bytes().to_vec(), LoadOptions::default()).unwrap();
        let b = s.index_of("b").unwrap();
        let line = s.entries()[b].line as usize;
        let old = s.entry_json(b).into_owned();
        let new = old.replace("two", "TWO");
        s.rewrite_line(line, new);
        let expected = FILE.replace("two", "TWO");
        let segs = segments(&s);
        assert_eq!(segs.concat(), expected.as_bytes());
        assert_eq!(s.to_bytes(), expected.as_bytes());
        assert_eq!(s.byte_len(), expected.len());
        // header + a | \n | b' | \n | c
        assert_eq!(segs.len(), 5, "{segs:?}");
        assert!(std::str::from_utf8(&segs[0])
            .unwrap()
            .ends_with(r#""one"}}"#));
    }
}
