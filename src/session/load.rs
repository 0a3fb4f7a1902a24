//! Loading: split lines, read the header, skim every entry line into the index, resolve
//! parents, then migrate old formats (spec: compaction §1.1–§1.3).
//!
//! Bad input never aborts the load except where the file cannot be a session at all (no
//! header, a version newer than supported). Everything else is kept and reported:
//!
//! | input | result |
//! |---|---|
//! | a line that is not JSON, or JSON but not an object | kept verbatim, `E_JSONL_LINE` |
//! | an object without a string `type` (or, from v2 on, `id`) | kept verbatim, `E_INVALID_ENTRY` |
//! | bytes that are not UTF-8 | entry read with U+FFFD, bytes written back unchanged, `E_INVALID_UTF8` |
//! | a `parentId` naming no entry | entry becomes a root, `E_UNKNOWN_PARENT` |
//! | two entries with one id | the later one wins lookups, `E_DUPLICATE_ID` |
//! | a parent cycle | the link that closes it is ignored, `E_PARENT_CYCLE` |
//! | a line of type `session` after the header | kept verbatim, not an entry, `E_INVALID_ENTRY` |
//! | JSON nested 128 levels deep or more | kept, sent to the provider whole (`json::deep`), `E_INVALID_ENTRY_BODY` (the value parser's readers see it as empty) |
//! | empty input, or first line not a session header | error `E_NOT_A_SESSION` |
//! | header version above 4 | error `E_VERSION_TOO_NEW` |
//!
//! A UTF-8 byte order mark at the start of the file is skipped, as a reader that decodes the
//! file as text before `JSON.parse` skips it; it belongs to no line and is written back in
//! front of the first one (see `lines::BOM`), so a saved session stays byte-faithful.

use crate::error::{Error, ErrorCode, Result};
use crate::session::entry::{Entry, EntryKind};
use crate::session::facts::{clamp_tokens, shift_calls, CallFacts, FactColumns, UNKNOWN_TOKENS};
use crate::session::ids::{IdSource, RandomIds};
use crate::session::lines::{
    bom_len, HeaderInfo, Leaf, Line, LineKind, LineText, LoadWarning, CURRENT_VERSION,
    MAX_READ_VERSION,
};
use crate::session::message::Role;
use crate::session::migrate;
use crate::session::model::Session;
use crate::session::skim::{skim_line, skim_object, LineSkim, ParentField};
use crate::support::json::scan::decode_string_value;
use crate::support::json::scan::{Scanner, SyntaxError};
use memchr::memchr;
use rustc_hash::FxHashMap;

/// Options of [`Session::load`].
pub struct LoadOptions {
    /// Source of ids for migrated and appended entries.
    pub ids: Box<dyn IdSource>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            ids: Box::new(RandomIds::new(0x5EED_C0DE_F01D_AB1E)),
        }
    }
}

impl LoadOptions {
    /// Options with the given id source.
    pub fn with_ids(ids: Box<dyn IdSource>) -> Self {
        LoadOptions { ids }
    }
}

fn warn(out: &mut Vec<LoadWarning>, code: ErrorCode, line: usize, message: String) {
    out.push(LoadWarning {
        code,
        line: line as u32 + 1,
        message,
    });
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|c| matches!(c, b' ' | b'\t' | b'\r'))
}

/// End of the line starting at `from` (the index of its `\n`, or the input length).
fn line_end(bytes: &[u8], from: usize) -> usize {
    memchr(b'\n', &bytes[from..]).map_or(bytes.len(), |n| from + n)
}

fn read_header(line: &[u8], at: usize) -> Result<HeaderInfo> {
    let not = |reason: &str| Error::NotASession {
        line: at as u32 + 1,
        reason: reason.to_string(),
    };
    std::str::from_utf8(line).map_err(|_| not("the header is not valid UTF-8"))?;
    let h = crate::support::json::view::Obj::parse(line).map_err(|e| {
        not(&format!(
            "the first line is not a JSON object ({})",
            e.reason
        ))
    })?;
    if h.str("type").as_deref() != Some("session") {
        return Err(not("the first line's type is not \"session\""));
    }
    let id = h
        .string("id")
        .ok_or_else(|| not("the header has no string id"))?;
    let version = match h.opt("version") {
        None => 1,
        Some(v) => match v.f64() {
            Some(n) if n >= 1.0 && n.fract() == 0.0 => n as u64,
            _ => return Err(not("the header version is not a positive integer")),
        },
    };
    if version > MAX_READ_VERSION {
        return Err(Error::VersionTooNew {
            version,
            supported: MAX_READ_VERSION,
        });
    }
    Ok(HeaderInfo {
        id,
        version,
        version_on_disk: version,
    })
}

/// Whether the value parser refuses `line` for its depth (asked only of lines the scanner
/// found deep).
fn too_deep(line: &[u8]) -> bool {
    let text = String::from_utf8_lossy(line);
    crate::support::json::parse(&text)
        .is_err_and(|e| e.reason == crate::support::json::parse::TOO_DEEP)
}

fn is_title_slot(line: &[u8]) -> bool {
    skim_line(line, &mut Vec::new())
        .ok()
        .and_then(|s| s.string(line, &s.type_value).map(|t| t == "title"))
        .unwrap_or(false)
}

/// How one line of the file reads.
enum LineRead {
    Blank,
    /// A valid JSON object, with its skim (spans relative to the line).
    Object(LineSkim),
    /// Not a JSON object: the warning to give.
    Bad(ErrorCode, String),
}

fn bad_line(err: SyntaxError) -> LineRead {
    LineRead::Bad(
        ErrorCode::JsonlLine,
        format!(
            "invalid JSON at byte {}: {}; the line is kept as is and ignored",
            err.offset, err.reason
        ),
    )
}

/// The warning of an unreadable line: a last line with no line break after it is a write that
/// stopped midway (a torn last line), said so with the byte offset it starts at; it is kept as
/// is, never dropped (spec: compaction §1.1).
fn torn(bytes: &[u8], pos: usize, end: usize, message: String) -> String {
    if end < bytes.len() {
        return message;
    }
    format!("torn last line at byte offset {pos} (no line break after it, a write that stopped midway?): {message}")
}

/// Reads the line that starts at `pos`: one pass over its bytes that validates the JSON,
/// checks UTF-8, records the message's facts (its tool calls appended to `calls`, spans
/// relative to the line) and finds the line's end. Returns the read, the line's end (its
/// `\n` or the input end) and whether it holds bytes that are not UTF-8.
fn read_line(
    sc: &mut Scanner,
    b: &[u8],
    pos: usize,
    calls: &mut Vec<CallFacts>,
) -> (LineRead, usize, bool) {
    let calls_from = calls.len();
    let mut i = pos;
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\r')) {
        i += 1;
    }
    match b.get(i) {
        None => return (LineRead::Blank, b.len(), false),
        Some(b'\n') => return (LineRead::Blank, i, false),
        Some(b'{') => {
            sc.newline = false;
            sc.bad_utf8 = false;
            sc.deep = false;
            if let Ok((mut skim, end)) = skim_object(sc, b, i, calls) {
                let mut after = end;
                while matches!(b.get(after), Some(b' ' | b'\t' | b'\r')) {
                    after += 1;
                }
                if !sc.newline && matches!(b.get(after), None | Some(b'\n')) {
                    skim.shift(pos);
                    if sc.bad_utf8 {
                        // Read with U+FFFD in place of the bad bytes: parsed when asked.
                        skim.facts = None;
                        calls.truncate(calls_from);
                    } else {
                        shift_calls(calls, calls_from, pos);
                    }
                    return (LineRead::Object(skim), after, sc.bad_utf8);
                }
            }
            calls.truncate(calls_from);
        }
        Some(_) => {}
    }
    // The slow path, for lines that are not one valid object: find the line's end first,
    // then read just that line for a precise message.
    let end = line_end(b, pos);
    let line = &b[pos..end];
    let bad_utf8 = std::str::from_utf8(line).is_err();
    let read = match skim_line(line, calls) {
        Ok(skim) if skim.is_object => LineRead::Object(skim),
        Ok(_) => LineRead::Bad(
            ErrorCode::JsonlLine,
            "the line is JSON but not an object; it is kept as is and ignored".into(),
        ),
        Err(e) => bad_line(e),
    };
    (read, end, bad_utf8)
}

/// A `Line` of the source span `start..end`.
fn source_line(start: usize, end: usize, kind: LineKind) -> Line {
    Line {
        text: LineText::Source { start, end },
        kind,
        message: None,
        edited: 0,
    }
}

/// Reads a session file. The steps are functions of their own (issue 42): V8 runs a wasm
/// function in its baseline tier until it is hot, then compiles it again optimized, and a
/// call already running never switches. A loader that is one large function runs every line
/// of the first load in the baseline tier while the optimizing compile of all of it is wasted;
/// with the per-line step small and apart ([`EntryPass::line`]), the lines after the first
/// few hundred run its optimized code, and the rare paths (warnings, lines kept as they are)
/// are out of it.
pub(super) fn load(bytes: Vec<u8>, options: LoadOptions) -> Result<Session> {
    let started = Started::try_new(&bytes, bytes.len())??;
    started.finish(bytes, options)
}

/// A load that has read the header and the entry lines before `pos`.
struct Started {
    header: HeaderInfo,
    header_line: usize,
    pass: EntryPass,
    pos: usize,
}

impl Started {
    /// The header of `bytes` read (`size`: the file's expected length, for the tables'
    /// capacity), or (`Err` inside `Ok`) the error of `bytes` that end before it.
    fn try_new(bytes: &[u8], size: usize) -> Result<Result<Started>> {
        let mut lines: Vec<Line> = Vec::with_capacity(size / 1024 + 16);
        let (header, pos) = match read_header_lines(bytes, &mut lines)? {
            Ok(found) => found,
            Err(missing) => return Ok(Err(missing)),
        };
        let header_line = lines.len() - 1;
        let mut pass = EntryPass::new(lines, header.version < 2, size);
        pass.trailing_newline = pos >= bytes.len() && bytes.last().is_none_or(|&c| c == b'\n');
        Ok(Ok(Started {
            header,
            header_line,
            pass,
            pos,
        }))
    }

    /// Reads the entry lines from `pos` to the end of `bytes`.
    fn read_to(&mut self, bytes: &[u8]) {
        while self.pos < bytes.len() {
            self.pos = self.pass.line(bytes, self.pos);
        }
    }

    /// Reads the lines left in the whole file `bytes`, then builds the session.
    fn finish(mut self, bytes: Vec<u8>, options: LoadOptions) -> Result<Session> {
        self.read_to(&bytes);
        finish(bytes, self.header, self.header_line, self.pass, options)
    }
}

/// A load that reads a file while it arrives in pieces (`Session.fromAsyncReader`,
/// `Session.fromStream`): each call of [`Progress::read`] reads the lines that are complete
/// so far, so the scan runs while the host fetches the next piece, and [`Progress::finish`]
/// reads the rest. A line is read only once its line break is there, and everything the read
/// of a line decides depends on its bytes up to that break alone (a torn last line is one
/// without a break, read by `finish`), so the session is the one [`Session::load`] gives for
/// the whole file: same lines, entries, facts and warnings. A header that cannot be read yet
/// (or at all) leaves the work to `finish`, which then reads the file whole.
pub(crate) struct Progress {
    state: ProgressState,
    /// The length of the file when last read (where the search for a new break starts).
    searched: usize,
    /// The file's expected length (the tables' capacity).
    size: usize,
}

/// Where a [`Progress`] stands.
enum ProgressState {
    /// No header yet: looked for again with more of the file.
    Waiting,
    /// The header read, the lines before `pos` too.
    Reading(Box<Started>),
    /// The header could not be read: `finish` reads the file whole (and says why).
    Refused,
}

impl Progress {
    /// A load of a file of about `size` bytes (0 when unknown).
    pub fn new(size: usize) -> Progress {
        Progress {
            state: ProgressState::Waiting,
            searched: 0,
            size,
        }
    }

    /// Reads the lines of `bytes` (the file so far) that end in a line break and were not
    /// read before.
    pub fn read(&mut self, bytes: &[u8]) {
        // Only what arrived since the last call can hold a new break (a long line arriving
        // in many pieces is not searched again each time).
        let from = self.searched.min(bytes.len());
        self.searched = bytes.len();
        let Some(last_break) = memchr::memrchr(b'\n', &bytes[from..]) else {
            return;
        };
        let complete = &bytes[..=from + last_break];
        if let ProgressState::Waiting = self.state {
            self.state = match Started::try_new(complete, self.size.max(bytes.len())) {
                Ok(Ok(started)) => ProgressState::Reading(Box::new(started)),
                Ok(Err(_)) => ProgressState::Waiting,
                Err(_) => ProgressState::Refused,
            };
        }
        if let ProgressState::Reading(started) = &mut self.state {
            started.read_to(complete);
        }
    }

    /// The position after the lines read so far (0 before the header).
    pub fn position(&self) -> usize {
        match &self.state {
            ProgressState::Reading(started) => started.pos,
            _ => 0,
        }
    }

    /// The session of the whole file `bytes` (what came before read already, the rest now).
    pub fn finish(self, bytes: Vec<u8>, options: LoadOptions) -> Result<Session> {
        match self.state {
            ProgressState::Reading(started) => started.finish(bytes, options),
            _ => load(bytes, options),
        }
    }
}

/// The header (optionally after the title slot), skipping blank lines and a byte order mark:
/// the header and the position after its line, or (`Err` inside `Ok`) the error of an input
/// that ends before it — a file still arriving may yet bring it.
#[inline(never)]
fn read_header_lines(
    bytes: &[u8],
    lines: &mut Vec<Line>,
) -> Result<std::result::Result<(HeaderInfo, usize), Error>> {
    let mut pos = bom_len(bytes);
    let mut title_seen = false;
    loop {
        if pos >= bytes.len() {
            return Ok(Err(Error::NotASession {
                line: lines.len() as u32 + 1,
                reason: if title_seen {
                    "a title slot without a header after it".into()
                } else {
                    "the input is empty".into()
                },
            }));
        }
        let end = line_end(bytes, pos);
        let raw = &bytes[pos..end];
        if is_blank(raw) {
            lines.push(source_line(pos, end, LineKind::Blank));
        } else if !title_seen && is_title_slot(raw) {
            title_seen = true;
            lines.push(source_line(pos, end, LineKind::TitleSlot));
        } else {
            let header = read_header(raw, lines.len())?;
            lines.push(source_line(pos, end, LineKind::Header));
            return Ok(Ok((header, end + 1)));
        }
        pos = end + 1;
    }
}

/// What the pass over the entry lines builds.
struct EntryPass {
    lines: Vec<Line>,
    warnings: Vec<LoadWarning>,
    entries: Vec<Entry>,
    /// For a v1 file, per entry: its line can take its id by an append (see
    /// `migrate::assign_ids`).
    plain: Vec<bool>,
    sc: Scanner,
    facts: FactColumns,
    tokens_full: Vec<u32>,
    tokens_excluding: Vec<u32>,
    /// A v1 file: entries get ids from the migration.
    needs_ids: bool,
    trailing_newline: bool,
}

impl EntryPass {
    fn new(lines: Vec<Line>, needs_ids: bool, len: usize) -> EntryPass {
        EntryPass {
            lines,
            warnings: Vec::new(),
            entries: Vec::with_capacity(len / 2048 + 16),
            plain: Vec::new(),
            sc: Scanner::new(),
            facts: FactColumns::with_capacity(len / 2048 + 16),
            tokens_full: Vec::with_capacity(len / 2048 + 16),
            tokens_excluding: Vec::with_capacity(len / 2048 + 16),
            needs_ids,
            trailing_newline: false,
        }
    }

    /// Reads the line at `pos` (an entry, a blank line, or one kept as it is with a
    /// warning); returns the position after it.
    #[inline(never)]
    fn line(&mut self, bytes: &[u8], pos: usize) -> usize {
        let calls_before = self.facts.calls.len();
        let (read, end, bad_utf8) = read_line(&mut self.sc, bytes, pos, &mut self.facts.calls);
        let li = self.lines.len();
        self.lines.push(source_line(pos, end, LineKind::Blank));
        self.trailing_newline = end < bytes.len();
        let raw = &bytes[pos..end];
        if bad_utf8 || self.sc.deep {
            self.unusual_line(li, raw, &read, bad_utf8);
        }
        let skim = match read {
            LineRead::Blank => return end + 1,
            LineRead::Bad(code, message) => {
                let message = torn(bytes, pos, end, message);
                self.kept_as_is(li, calls_before, code, message);
                return end + 1;
            }
            LineRead::Object(skim) => skim,
        };
        self.entry(li, raw, calls_before, skim, bad_utf8);
        end + 1
    }

    /// The warnings of a line that holds bytes that are not UTF-8, or nests deep.
    #[cold]
    #[inline(never)]
    fn unusual_line(&mut self, li: usize, raw: &[u8], read: &LineRead, bad_utf8: bool) {
        let deep = self.sc.deep && matches!(read, LineRead::Object(_)) && too_deep(raw);
        if bad_utf8 {
            warn(
                &mut self.warnings,
                ErrorCode::InvalidUtf8,
                li,
                "the line holds bytes that are not UTF-8: it is read with U+FFFD in their place \
                 and written back unchanged"
                    .into(),
            );
        }
        if deep {
            warn(
                &mut self.warnings,
                ErrorCode::InvalidEntryBody,
                li,
                "the line nests JSON 128 levels deep or more: it is kept, and its message is sent \
                 to the provider whole, but the readers of its fields (summaries, shake, \
                 pruning) read it as empty"
                    .into(),
            );
        }
    }

    /// The line stays in the file as it is, read as no entry, with a warning naming it.
    #[cold]
    #[inline(never)]
    fn kept_as_is(&mut self, li: usize, calls_before: usize, code: ErrorCode, message: String) {
        self.facts.calls.truncate(calls_before);
        self.lines[li].kind = LineKind::Opaque;
        warn(&mut self.warnings, code, li, message);
    }

    /// Records the entry of the object line `li` (or keeps the line as it is when it is not
    /// one).
    fn entry(
        &mut self,
        li: usize,
        raw: &[u8],
        calls_before: usize,
        skim: LineSkim,
        bad_utf8: bool,
    ) {
        let needs_ids = self.needs_ids;
        let Some(kind_text) = skim.string(raw, &skim.type_value) else {
            return self.kept_as_is(
                li,
                calls_before,
                ErrorCode::InvalidEntry,
                "the object has no string `type`; it is kept as is and ignored".into(),
            );
        };
        // A v1 file's entries all get fresh ids (and parents) from the migration.
        let id = if needs_ids {
            None
        } else {
            skim.string(raw, &skim.id_value)
        };
        if !needs_ids && id.as_deref().is_none_or(str::is_empty) {
            return self.kept_as_is(
                li,
                calls_before,
                ErrorCode::InvalidEntry,
                "the entry has no string `id`; it is kept as is and ignored".into(),
            );
        }
        let parent_id = match &skim.parent {
            ParentField::Id(r) if !needs_ids => {
                decode_string_value(&raw[r.clone()]).map(|p| p.into())
            }
            _ => None,
        };
        if skim.parent == ParentField::Invalid && !needs_ids {
            self.invalid_parent(li);
        }
        if kind_text == "session" {
            // The reader filters header records out of the entries wherever they stand.
            return self.kept_as_is(
                li,
                calls_before,
                ErrorCode::InvalidEntry,
                "a second session header; it is kept as is and ignored".into(),
            );
        }
        let kind = EntryKind::from_type(&kind_text);
        let role = if kind == EntryKind::Message {
            Some(
                skim.string(raw, &skim.role_value)
                    .map_or(Role::Other, |r| Role::parse(&r)),
            )
        } else {
            None
        };
        let index = self.entries.len() as u32;
        let message_facts = skim.facts.as_ref().filter(|_| kind == EntryKind::Message);
        if message_facts.is_none() {
            self.facts.calls.truncate(calls_before);
        }
        self.facts.set(index as usize, message_facts);
        let (full, excluding) = message_facts.map_or((UNKNOWN_TOKENS, UNKNOWN_TOKENS), |f| {
            (clamp_tokens(f.tokens), clamp_tokens(f.tokens_excluding))
        });
        self.tokens_full.push(full);
        self.tokens_excluding.push(excluding);
        self.lines[li].kind = LineKind::Entry(index);
        self.lines[li].message = skim
            .message
            .as_ref()
            .map(|r| (r.start as u32, r.end as u32));
        self.entries.push(Entry {
            line: li as u32,
            kind,
            id: id
                .map(|i| i.into_owned().into_boxed_str())
                .unwrap_or_default(),
            parent_id,
            parent: None,
            role,
        });
        if needs_ids {
            self.plain
                .push(!bad_utf8 && skim.id_value.is_none() && skim.parent == ParentField::Missing);
        }
    }

    #[cold]
    #[inline(never)]
    fn invalid_parent(&mut self, li: usize) {
        warn(
            &mut self.warnings,
            ErrorCode::InvalidEntry,
            li,
            "`parentId` is neither a string nor null; the entry is read as a root".into(),
        );
    }
}

/// The session of a finished pass: ids of a v1 file assigned, the id index, the parents, the
/// migration to the current version, the leaf, the warnings in line order.
#[inline(never)]
fn finish(
    bytes: Vec<u8>,
    header: HeaderInfo,
    header_line: usize,
    pass: EntryPass,
    options: LoadOptions,
) -> Result<Session> {
    let EntryPass {
        lines,
        warnings,
        entries,
        plain,
        facts,
        tokens_full,
        tokens_excluding,
        needs_ids,
        trailing_newline,
        ..
    } = pass;
    let has_reset_boundary = has_reset_boundary(&entries);
    let mut session = Session {
        source: bytes,
        source_lines: lines.len(),
        lines,
        trailing_newline,
        header_line,
        header,
        entries,
        by_id: FxHashMap::default(),
        leaf: Leaf::None,
        warnings,
        ids: options.ids,
        tokens_full: std::cell::RefCell::new(tokens_full),
        tokens_excluding: std::cell::RefCell::new(tokens_excluding),
        facts,
        file_calls: Default::default(),
        last_path: Default::default(),
        path_state: Default::default(),
        derived: Default::default(),
        members: Default::default(),
        heads: Default::default(),
        generation: 0,
        has_reset_boundary,
        pi_scan: Default::default(),
        journal: Default::default(),
    };
    if needs_ids {
        // Fresh ids, each entry the child of the one before: indexed and linked as assigned.
        migrate::assign_ids(&mut session, &plain);
    } else {
        session.index_ids();
        session.resolve_parents();
    }
    drop(plain);
    if session.header.version < CURRENT_VERSION {
        migrate::upgrade(&mut session)?;
    }
    session.leaf = match session.entries.len() {
        0 => Leaf::None,
        n => Leaf::At(n as u32 - 1),
    };
    sort_warnings(&mut session.warnings);
    let clean = all_from_source(&session.lines);
    session.start_journal(clean);
    Ok(session)
}

// The steps of `finish` below, like `index_ids` and `resolve_parents`, are functions of their
// own for the reason `load` gives: each loops over every entry or line once, and a loop in a
// function of its own can run optimized code from its next call on, where one inside
// `finish` runs in the baseline tier for the whole (single) call.

/// Whether any entry is a reset boundary.
#[inline(never)]
fn has_reset_boundary(entries: &[Entry]) -> bool {
    entries.iter().any(|e| e.kind == EntryKind::ResetBoundary)
}

/// The warnings in line order (then by code).
#[inline(never)]
fn sort_warnings(warnings: &mut [LoadWarning]) {
    crate::support::sort::sort_by(warnings, |a, b| {
        a.line
            .cmp(&b.line)
            .then(a.code.as_str().cmp(b.code.as_str()))
    });
}

/// Whether every line is still the file's own (the load rewrote none).
#[inline(never)]
fn all_from_source(lines: &[Line]) -> bool {
    lines
        .iter()
        .all(|l| matches!(l.text, LineText::Source { .. }))
}

impl Session {
    /// Loads a session file (spec: compaction §1.1–§1.3): parse, index, migrate.
    pub fn load(bytes: Vec<u8>, options: LoadOptions) -> Result<Session> {
        load(bytes, options)
    }

    /// Builds the id index; later duplicates win, as in a `Map` filled in file order.
    #[inline(never)]
    pub(super) fn index_ids(&mut self) {
        let mut by_id: FxHashMap<Box<str>, u32> = FxHashMap::default();
        by_id.reserve(self.entries.len());
        for (i, e) in self.entries.iter().enumerate() {
            if let Some(prev) = by_id.insert(e.id.clone(), i as u32) {
                let prev_line = self.entries[prev as usize].line + 1;
                warn(
                    &mut self.warnings,
                    ErrorCode::DuplicateId,
                    e.line as usize,
                    format!(
                        "id {} was already used on line {prev_line}; lookups find this later entry",
                        e.id
                    ),
                );
            }
        }
        self.by_id = by_id;
    }

    /// Resolves `parentId` links to indices and breaks parent cycles.
    #[inline(never)]
    pub(super) fn resolve_parents(&mut self) {
        // With no id used twice, an entry whose parent is the entry before it (nearly every
        // entry of a file: a path is written in order) needs no lookup.
        let unique = self.by_id.len() == self.entries.len();
        for i in 0..self.entries.len() {
            let parent = match self.entries[i].parent_id.as_deref() {
                None => None,
                Some(pid) if unique && i > 0 && *self.entries[i - 1].id == *pid => {
                    Some(i as u32 - 1)
                }
                Some(pid) => match self.by_id.get(pid) {
                    Some(&p) => Some(p),
                    None => {
                        let line = self.entries[i].line as usize;
                        warn(
                            &mut self.warnings,
                            ErrorCode::UnknownParent,
                            line,
                            format!(
                                "parent {pid} of entry {} does not exist; the entry starts its own path",
                                self.entries[i].id
                            ),
                        );
                        None
                    }
                },
            };
            self.entries[i].parent = parent;
        }
        self.break_cycles();
    }

    /// Parent links normally point backwards (to earlier lines); only links to later entries
    /// can close a cycle. Walk each chain once (colouring visited entries) and cut the link
    /// that returns to the chain being walked.
    fn break_cycles(&mut self) {
        const NEW: u8 = 0;
        const ON_WALK: u8 = 1;
        const DONE: u8 = 2;
        if self
            .entries
            .iter()
            .enumerate()
            .all(|(i, e)| e.parent.is_none_or(|p| (p as usize) < i))
        {
            return;
        }
        let mut state = vec![NEW; self.entries.len()];
        let mut walk = Vec::new();
        for start in 0..self.entries.len() {
            let mut cur = start;
            while state[cur] == NEW {
                state[cur] = ON_WALK;
                walk.push(cur);
                match self.entries[cur].parent {
                    Some(p) if state[p as usize] == ON_WALK => {
                        let line = self.entries[cur].line as usize;
                        warn(
                            &mut self.warnings,
                            ErrorCode::ParentCycle,
                            line,
                            format!(
                                "the parent link of entry {} closes a cycle; the entry is read as a root",
                                self.entries[cur].id
                            ),
                        );
                        self.entries[cur].parent = None;
                        break;
                    }
                    Some(p) => cur = p as usize,
                    None => break,
                }
            }
            for &w in &walk {
                state[w] = DONE;
            }
            walk.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::session::SequentialIds;
    use proptest::prelude::*;

    proptest! {
        /// Parents resolved with the shortcut for the entry before are those a lookup of
        /// every `parentId` finds (ids used twice, unknown parents, cycles, roots), with the
        /// same warnings.
        #[test]
        fn parents_equal_the_lookup_of_every_parent_id(
            links in proptest::collection::vec((0u8..6, prop::option::of(0u8..7)), 0..14),
        ) {
            let mut file = String::from("{\"type\":\"session\",\"version\":3,\"id\":\"s\"}");
            for (id, parent) in &links {
                let parent = parent.map_or("null".to_string(), |p| format!("\"e{p}\""));
                file.push_str(&format!(
                    "\n{{\"type\":\"custom\",\"id\":\"e{id}\",\"parentId\":{parent}}}"
                ));
            }
            let s = Session::load(
                file.into_bytes(),
                LoadOptions::with_ids(Box::new(SequentialIds::new())),
            )
            .expect("a session");
            // The simple path: every parent looked up, then the cycles broken.
            let mut want: Vec<Option<u32>> = Vec::new();
            let mut warnings = Vec::new();
            for e in &s.entries {
                let p = e.parent_id.as_deref().and_then(|pid| s.by_id.get(pid).copied());
                if p.is_none() && e.parent_id.is_some() {
                    warnings.push(e.line + 1);
                }
                want.push(p);
            }
            let mut simple = s.entries.clone();
            for (e, p) in simple.iter_mut().zip(&want) {
                e.parent = *p;
            }
            let mut check = Session { entries: simple, warnings: Vec::new(), ..Session::load(
                b"{\"type\":\"session\",\"version\":3,\"id\":\"s\"}".to_vec(),
                LoadOptions::default(),
            ).expect("a session") };
            check.break_cycles();
            let got: Vec<Option<u32>> = s.entries.iter().map(|e| e.parent).collect();
            let want: Vec<Option<u32>> = check.entries.iter().map(|e| e.parent).collect();
            prop_assert_eq!(got, want);
            let unknown: Vec<u32> = s
                .warnings
                .iter()
                .filter(|w| w.code == ErrorCode::UnknownParent)
                .map(|w| w.line)
                .collect();
            prop_assert_eq!(unknown, warnings);
        }
    }

    #[test]
    fn finds_line_ends() {
        assert_eq!(line_end(b"ab\ncd", 0), 2);
        assert_eq!(line_end(b"ab\ncd", 3), 5);
    }
}
