//! The session file model (spec: compaction §1): a JSONL header plus a tree of entries linked
//! by `parentId`, with a leaf pointer selecting the active path.
//!
//! The file's bytes are kept as loaded. Every line remembers where it came from, so a save
//! writes unchanged lines back byte for byte; changed lines (migrations, edits) are spliced
//! (`json::edit`) so that their unknown fields and field order survive too. Malformed lines
//! are kept verbatim and reported with their line numbers.

pub mod message;

mod batch;
mod entry;
pub(crate) mod facts;
mod ids;
mod load;
mod messages;
mod migrate;
pub mod preserve;
mod skim;
mod state;
mod tree;
pub mod validate;

pub use batch::BatchError;
pub use entry::*;
pub(crate) use facts::PrunedLine;
pub use facts::{FactsSnapshot, FileCallFacts, ResultFacts};
pub use ids::{IdSource, RandomIds, SequentialIds};
pub use load::{LoadOptions, LoadWarning};
pub(crate) use messages::FileCall;
pub use messages::FileTool;
pub use state::PathState;

use crate::error::{Error, ErrorCode, Result};
use crate::session::message::{AgentMessage, MessageHead, Role};
use crate::support::json::view::{MemberSpan, Obj};
use crate::support::json::{edit, js};
use rustc_hash::FxHashMap;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::cell::RefCell;

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

/// Newest format version written by this library (spec: compaction §1.2).
pub const CURRENT_VERSION: u64 = 3;
/// Newest format version this library reads (v4 is a header-only stamp).
pub const MAX_READ_VERSION: u64 = 4;

/// Where the text of a line lives.
#[derive(Debug, Clone)]
pub(crate) enum LineText {
    /// Unchanged bytes of the loaded file.
    Source { start: usize, end: usize },
    /// A new or rewritten line.
    Owned(Box<str>),
}

/// What a line of the file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineKind {
    Header,
    /// The fixed-width title slot some writers put before the header (spec: compaction §1.1).
    TitleSlot,
    Entry(u32),
    /// Kept verbatim and reported: not JSON, not an object, or not a usable entry.
    Opaque,
    Blank,
}

#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub text: LineText,
    pub kind: LineKind,
    /// Span of the `message` value within the line, for `message` entries.
    pub message: Option<(u32, u32)>,
    /// The edit generation of the line's last rewrite (0: as loaded or appended).
    pub edited: u64,
}

/// What the header says (spec: compaction §1.2). The header line itself is kept verbatim.
#[derive(Debug, Clone, PartialEq)]
pub struct HeaderInfo {
    /// Session id.
    pub id: String,
    /// Format version after loading (migrations raise it to [`CURRENT_VERSION`]).
    pub version: u64,
    /// Format version found in the file (1 when absent).
    pub version_on_disk: u64,
}

/// Where the leaf pointer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leaf {
    /// The entry at this index.
    At(u32),
    /// No leaf: the next append becomes a new root (`resetLeaf`), or the session is empty.
    None,
}

/// A loaded session: lines, entry index and leaf.
pub struct Session {
    source: Vec<u8>,
    lines: Vec<Line>,
    /// Number of lines that came from the file (later lines were appended).
    source_lines: usize,
    trailing_newline: bool,
    header_line: usize,
    header: HeaderInfo,
    entries: Vec<Entry>,
    by_id: FxHashMap<Box<str>, u32>,
    leaf: Leaf,
    warnings: Vec<LoadWarning>,
    ids: Box<dyn IdSource>,
    /// Token estimates per entry (`u32::MAX` = not computed yet): recorded by the load pass
    /// for `message` entries, memoized on first use for the others.
    tokens_full: RefCell<Vec<u32>>,
    tokens_excluding: RefCell<Vec<u32>>,
    /// Memoized file-touching tool calls per assistant entry.
    file_calls: RefCell<Vec<Option<FileCalls>>>,
    /// The last path asked for (`path_shared`), moved to each new leaf by what changed:
    /// parents never change after loading, so it stays valid.
    last_path: RefCell<Option<tree::PathCache>>,
    /// The state of the last path asked about (`state`), with the edit generation it is of.
    path_state: RefCell<Option<(usize, u64, PathState)>>,
    /// Texts derived from entries, with the caller's keys (`derived_text`): the context's
    /// message of the active compaction, rebuilt on every request otherwise.
    derived: RefCell<Vec<DerivedText>>,
    /// Where the members of the last large entry line read as a body are (`body_object`). A
    /// snapcompact compaction's line is megabytes of frames, and a context build reads several
    /// of its members.
    members: RefCell<Option<KeptMembers>>,
    /// The heads of the messages contexts were built from, with the stamp of the line each
    /// was read from (`message_head_shared`): every request builds the context again.
    heads: RefCell<Vec<Option<KeptHead>>>,
    /// Counts line rewrites: what is derived from entry bodies is valid for one generation.
    generation: u64,
    /// Some entry is a `reset_boundary` (rare): without one, preparing a compaction does not
    /// look for it along the whole path.
    has_reset_boundary: bool,
    /// What the load pass recorded of each `message` entry (`facts`).
    facts: facts::FactColumns,
}

/// Text of bytes that are almost always valid UTF-8: `from_utf8` validates far faster than
/// `from_utf8_lossy`, which is only needed for the rare invalid line (U+FFFD replacements).
fn utf8_text(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// The file tool calls of an assistant entry.
pub(crate) type FileCalls = std::rc::Rc<[FileCall]>;

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

/// Fields of a new session's header.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    pub id: String,
    pub cwd: String,
    /// Creation time (ms since the epoch).
    pub now: i64,
    pub parent_session: Option<String>,
}

/// An entry line as `append` writes it: `{"type","id","parentId","timestamp",…fields}` (the
/// fields' own members of those four names are left out).
pub(crate) fn entry_line(
    entry_type: &str,
    id: &str,
    parent_id: Option<&str>,
    timestamp: &str,
    fields: Map<String, Value>,
) -> String {
    let mut obj = Map::new();
    obj.insert("type".into(), entry_type.into());
    obj.insert("id".into(), id.into());
    obj.insert("parentId".into(), parent_id.map_or(Value::Null, Into::into));
    obj.insert("timestamp".into(), timestamp.into());
    for (k, v) in fields {
        if !matches!(k.as_str(), "type" | "id" | "parentId" | "timestamp") {
            obj.insert(k, v);
        }
    }
    js::stringify(&Value::Object(obj))
}

/// The header line of a new session (format version 3).
fn header_text(init: &NewSession) -> String {
    let mut header = Map::new();
    header.insert("type".into(), "session".into());
    header.insert("version".into(), CURRENT_VERSION.into());
    header.insert("id".into(), init.id.clone().into());
    header.insert(
        "timestamp".into(),
        crate::support::time::format_iso(init.now).into(),
    );
    header.insert("cwd".into(), init.cwd.clone().into());
    if let Some(p) = &init.parent_session {
        header.insert("parentSession".into(), p.clone().into());
    }
    js::stringify(&Value::Object(header))
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
            facts: facts::FactColumns::default(),
        }
    }

    /// Loads a session file (spec: compaction §1.1–§1.3): parse, index, migrate.
    pub fn load(bytes: Vec<u8>, options: LoadOptions) -> Result<Session> {
        load::load(bytes, options)
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

    /// What building a context reads of a `message` entry's message (see
    /// [`MessageHead`](crate::session::message::MessageHead)); fails where [`Session::message`] fails.
    pub fn message_head(&self, index: usize) -> Result<crate::session::message::MessageHead> {
        if self.entries[index].kind == EntryKind::Message {
            if let Some(head) = self.recorded_head(index) {
                return head.map_err(|()| {
                    self.message(index).err().unwrap_or_else(|| {
                        self.body_error(
                            index,
                            "the message does not have the shape its role requires",
                        )
                    })
                });
            }
        }
        let json = self
            .message_json(index)
            .ok_or_else(|| self.body_error(index, "the entry has no message object"))?;
        crate::session::message::MessageHead::read(&json, self.entries[index].role)
            .map_err(|e| self.body_error(index, &e.to_string()))
    }

    /// [`Session::message_head`], kept per entry until its line changes: a context is built
    /// again on every request, mostly from the same messages.
    pub fn message_head_shared(&self, index: usize) -> Result<std::rc::Rc<MessageHead>> {
        let stamp = self.line_stamp(index);
        if let Some(Some((s, head))) = self.heads.borrow().get(index) {
            if *s == stamp {
                return Ok(head.clone());
            }
        }
        let head = std::rc::Rc::new(self.message_head(index)?);
        let mut heads = self.heads.borrow_mut();
        if heads.len() <= index {
            heads.resize(index + 1, None);
        }
        heads[index] = Some((stamp, head.clone()));
        Ok(head)
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

    fn body_error(&self, index: usize, reason: &str) -> Error {
        Error::InvalidEntryBody {
            id: self.entries[index].id.to_string(),
            line: self.line_number(index),
            reason: reason.to_string(),
        }
    }

    pub(crate) fn line_text(&self, line: usize) -> Cow<'_, str> {
        match &self.lines[line].text {
            LineText::Owned(s) => Cow::Borrowed(s),
            LineText::Source { start, end } => utf8_text(&self.source[*start..*end]),
        }
    }

    pub(crate) fn line_bytes(&self, line: usize) -> &[u8] {
        match &self.lines[line].text {
            LineText::Owned(s) => s.as_bytes(),
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
        if load::bom_len(&self.source) > 0 {
            f(load::BOM);
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

    /// Replaces the text of an entry's line, keeping the index and the entry's facts in
    /// step (the new line is scanned like a loaded one). What was derived from the old text is
    /// stale now: the edit generation moves on.
    pub(crate) fn rewrite_line(&mut self, line: usize, text: String) {
        self.rewrite_known(line, text, None);
    }

    /// [`Session::rewrite_line`], with the span of the new line's message object and its facts
    /// when the caller knows them (a prune): the line is not scanned again.
    pub(crate) fn rewrite_known(
        &mut self,
        line: usize,
        text: String,
        known: Option<(std::ops::Range<usize>, facts::MessageFacts)>,
    ) {
        let entry = match self.lines[line].kind {
            LineKind::Entry(i) => Some(i as usize),
            _ => None,
        };
        let state_kept = entry.is_some_and(|i| self.path_state_ignores(i));
        let from = self.generation;
        self.generation += 1;
        self.lines[line].edited = self.generation;
        match (known, entry) {
            (Some((message, facts)), Some(i)) => {
                // What a scan of the new line would find (the tests check every such edit).
                #[cfg(debug_assertions)]
                {
                    let skim = skim::skim_line(text.as_bytes(), &mut Vec::new()).ok();
                    debug_assert_eq!(
                        skim.as_ref().and_then(|s| s.message.clone()),
                        Some(message.clone())
                    );
                    debug_assert_eq!(skim.and_then(|s| s.facts), Some(facts.clone()));
                }
                let l = &mut self.lines[line];
                l.message = Some((message.start as u32, message.end as u32));
                l.text = LineText::Owned(text.into());
                self.record_facts(i, Some(&facts));
            }
            _ => self.set_line(line, text),
        }
        if state_kept && entry.is_some_and(|i| self.path_state_ignores(i)) {
            self.keep_path_state(from);
        }
    }

    /// Sets the text of a line as [`Session::rewrite_line`] does, without moving the edit
    /// generation: for a line just added, which nothing has been derived from yet.
    fn set_line(&mut self, line: usize, text: String) {
        let mut calls = std::mem::take(&mut self.facts.calls);
        let calls_from = calls.len();
        let skim = skim::skim_line(text.as_bytes(), &mut calls).ok();
        let message = skim
            .as_ref()
            .and_then(|s| s.message.clone())
            .map(|r| (r.start as u32, r.end as u32));
        let l = &mut self.lines[line];
        l.message = message;
        l.text = LineText::Owned(text.into());
        let LineKind::Entry(i) = l.kind else {
            calls.truncate(calls_from);
            self.facts.calls = calls;
            return;
        };
        let i = i as usize;
        let is_message = self.entries[i].kind == EntryKind::Message;
        let facts = skim
            .as_ref()
            .and_then(|s| s.facts.as_ref())
            .filter(|_| is_message);
        if facts.is_none() {
            calls.truncate(calls_from);
        }
        self.facts.calls = calls;
        if let Some(skim) = skim.as_ref().filter(|_| is_message) {
            let role = skim
                .string(self.line_bytes(line), &skim.role_value)
                .map_or(Role::Other, |r| Role::parse(&r));
            self.entries[i].role = Some(role);
        }
        self.record_facts(i, facts);
    }

    /// Records the facts of entry `i`'s new line (its tool calls already appended) and its
    /// estimates; what was memoized from the old line goes.
    fn record_facts(&mut self, i: usize, facts: Option<&facts::MessageFacts>) {
        self.facts.set(i, facts);
        self.invalidate_tokens(i);
        if let Some(f) = facts {
            self.set_tokens(i, f.tokens, f.tokens_excluding);
        }
    }

    /// Replaces the lines of several entries at once (`(entry index, new line)`), each as
    /// [`Session::rewrite_line`] does: the bulk edit of a prune. The caller builds every new
    /// line before calling, so an edit that cannot be made leaves the session unchanged.
    pub(crate) fn rewrite_entries(&mut self, edits: Vec<(usize, String)>) {
        for (index, text) in edits {
            let line = self.entries[index].line as usize;
            self.rewrite_line(line, text);
        }
    }

    /// The bytes of an entry's line.
    pub(crate) fn entry_line_bytes(&self, index: usize) -> &[u8] {
        self.line_bytes(self.entries[index].line as usize)
    }

    /// Applies a splice edit to an entry's line.
    pub(crate) fn edit_entry(
        &mut self,
        index: usize,
        f: impl FnOnce(
            &str,
        )
            -> std::result::Result<Option<String>, crate::support::json::scan::SyntaxError>,
    ) -> Result<()> {
        let line = self.entries[index].line as usize;
        let edited = f(&self.line_text(line)).map_err(|e| self.body_error(index, e.reason))?;
        match edited {
            Some(text) => {
                self.rewrite_line(line, text);
                Ok(())
            }
            None => Err(self.body_error(index, "the edited member is not an object")),
        }
    }

    /// Sets a member of an entry (a top-level field when `path` is empty, else inside the
    /// object at `path`, e.g. `["message"]`), keeping every other byte of the line.
    pub fn set_entry_field(
        &mut self,
        index: usize,
        path: &[&str],
        key: &str,
        value: &Value,
    ) -> Result<()> {
        let value = js::stringify(value);
        self.edit_entry(index, |t| edit::set_member(t, path, key, &value))
    }

    // ----- appending ---------------------------------------------------------------------

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
    fn leaf_index(&self) -> Option<u32> {
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
    fn push_entry(&mut self, entry_type: &str, id: &str, parent: Option<u32>, text: String) {
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

    /// Warnings collected while loading with the given code.
    pub fn warnings_with(&self, code: ErrorCode) -> impl Iterator<Item = &LoadWarning> {
        self.warnings.iter().filter(move |w| w.code == code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
