//! Frames stored by reference (ours, not the reference's format; issue 43 item 5).
//!
//! Every snapcompact compaction re-renders its whole archive from the kept text (spec:
//! snapcompact §9.2, last paragraph), and the pages that did not change come out as the same
//! PNG bytes: stored inline, as the reference writes them (§9.1), a session file grows with the
//! square of its length. With `snapcompact.frameStorage: "reference"` a frame whose bytes an
//! earlier compaction entry already stores is written as
//!
//! ```json
//! {"dataRef":{"entry":"<entry id>","frame":<position in its frames>,"bytes":<base64 length>},
//!  "mimeType":"image/png","cols":…,"rows":…,"chars":…}
//! ```
//!
//! in place of `"data"`. The writers name the entry that holds the bytes inline (never another
//! reference), anywhere in the file: the entry need not be on the path being read. A reader
//! follows a chain a hostile or migrated file may hold, up to [`MAX_HOPS`] references.
//! The reference's reader keeps only frames with a `data` string, so it reads such an archive
//! without those frames (its text edges stay).
//!
//! Reading resolves a reference by id in the file ([`Resolver`]); one that does not resolve (a
//! hostile or cut file: unknown entry, no such frame, a frame that is itself a reference, bytes
//! of another length) is a load warning ([`check`]) and a placeholder text block in the
//! context (`blocks::history_blocks`), never an error. [`migrate_frames`] converts a file
//! both ways; the round trip gives the same bytes back.

pub use crate::archive::frame_ref::{FrameRef, DATA_REF_KEY};
use crate::archive::{get_preserved_archive, Archive, BLOB_PREFIX};
use crate::error::{ErrorCode, Result};
use crate::session::{CompactionBody, EntryKind, LoadWarning, Session};
use crate::settings::FrameStorage;
use crate::support::json::js;
use crate::support::json::scan::{decode_str_body, for_each_member, key_is, skip_value, skip_ws};
use rustc_hash::FxHashMap;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::ops::Range;

/// Why a reference does not resolve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unresolved {
    Malformed,
    NoSuchEntry,
    NotAnArchive,
    NoSuchFrame,
    NotInline,
    OtherLength,
}

impl Unresolved {
    fn says(self) -> &'static str {
        match self {
            Unresolved::Malformed => {
                "is malformed (it needs an entry id, a frame position and a length)"
            }
            Unresolved::NoSuchEntry => "names an entry the file does not hold",
            Unresolved::NotAnArchive => {
                "names an entry that is not a compaction with snapcompact frames"
            }
            Unresolved::NoSuchFrame => "names a frame position its entry does not have",
            Unresolved::NotInline => {
                "names a frame that holds no bytes (nor a reference that leads to them)"
            }
            Unresolved::OtherLength => "names a frame whose bytes have another length",
        }
    }
}

/// What a frame object of a line holds.
enum Payload<'b> {
    /// The body of a non-empty `data` string, still escaped.
    Inline(&'b [u8]),
    Ref(FrameRef),
    /// Neither (an invalid frame; `getPreservedArchive` skips it).
    None,
}

/// One element of an entry line's `preserveData.snapcompact.frames`.
struct FrameSlot<'b> {
    /// The member to replace on a migration: `data` for an inline frame, `dataRef` for one
    /// stored by reference (empty for [`Payload::None`]).
    member: Range<usize>,
    payload: Payload<'b>,
}

/// The value of the last `key` member of the object at `start` (as `JSON.parse` reads it).
fn member_value(b: &[u8], start: usize, key: &str) -> Option<Range<usize>> {
    if b.get(start) != Some(&b'{') {
        return None;
    }
    let mut found = None;
    for_each_member(b, start, |b, m| {
        if key_is(&b[m.key.clone()], key) {
            found = Some(m.value.clone());
        }
    })
    .ok()?;
    found
}

/// The frames of an entry line, with what each holds; `None` without a frames array.
fn frame_slots(b: &[u8]) -> Option<Vec<FrameSlot<'_>>> {
    let mut at = skip_ws(b, 0);
    for key in ["preserveData", crate::archive::PRESERVE_KEY, "frames"] {
        at = member_value(b, at, key)?.start;
    }
    if b.get(at) != Some(&b'[') {
        return None;
    }
    let mut out = Vec::new();
    let mut i = skip_ws(b, at + 1);
    if b.get(i) == Some(&b']') {
        return Some(out);
    }
    loop {
        let (slot, end) = frame_slot(b, i)?;
        out.push(slot);
        i = skip_ws(b, end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b']') => return Some(out),
            _ => return None,
        }
    }
}

/// The frame at `start` and the index after it (`None`: not JSON).
fn frame_slot(b: &[u8], start: usize) -> Option<(FrameSlot<'_>, usize)> {
    let none = FrameSlot {
        member: start..start,
        payload: Payload::None,
    };
    if b.get(start) != Some(&b'{') {
        return Some((none, skip_value(b, start).ok()?));
    }
    let (mut data, mut data_ref) = (None, None);
    let end = for_each_member(b, start, |b, m| {
        if key_is(&b[m.key.clone()], "data") {
            data = Some(m.clone());
        } else if key_is(&b[m.key.clone()], DATA_REF_KEY) {
            data_ref = Some(m.clone());
        }
    })
    .ok()?;
    // `data` wins when it is a non-empty string (`ArchiveFrame::from_json`).
    if let Some(m) = data {
        let v = &b[m.value.clone()];
        if v.len() > 2 && v[0] == b'"' {
            let slot = FrameSlot {
                member: m.span,
                payload: Payload::Inline(&v[1..v.len() - 1]),
            };
            return Some((slot, end));
        }
    }
    let slot = match data_ref {
        Some(m) => FrameSlot {
            payload: Payload::Ref(FrameRef::from_json(
                &crate::support::json::parse_bytes(&b[m.value.clone()]).unwrap_or(Value::Null),
            )),
            member: m.span,
        },
        None => none,
    };
    Some((slot, end))
}

/// The base64 text of an inline payload body (`None`: not a usable string).
fn decoded(body: &[u8]) -> Option<Cow<'_, str>> {
    decode_str_body(body).filter(|d| !d.is_empty() && !d.starts_with(BLOB_PREFIX))
}

/// References a reader follows to reach the bytes: the writers never write a chain (they name
/// the entry holding the bytes), but a migrated hostile file may hold one, and following it
/// keeps every migration from changing what a context reads.
const MAX_HOPS: usize = 16;

/// What a frame position of a target entry holds.
#[derive(Clone)]
enum Hop<'s> {
    Inline(&'s [u8]),
    Ref(FrameRef),
    Nothing,
}

/// Finds the bytes of [`FrameRef`]s in a session, reading each named entry's line once.
pub struct Resolver<'s> {
    session: &'s Session,
    /// Per entry index: what its frames hold, by position (`None`: not an archive).
    targets: FxHashMap<usize, Option<Vec<Hop<'s>>>>,
}

impl<'s> Resolver<'s> {
    pub fn new(session: &'s Session) -> Self {
        Resolver {
            session,
            targets: FxHashMap::default(),
        }
    }

    /// What the frames of entry `index` hold (`None`: it is not an archive), read once.
    fn hops_of(&mut self, index: usize) -> Option<&[Hop<'s>]> {
        let session = self.session;
        self.targets
            .entry(index)
            .or_insert_with(|| {
                if session.entries()[index].kind() != EntryKind::Compaction {
                    return None;
                }
                let slots = frame_slots(session.entry_line_bytes(index))?;
                Some(
                    slots
                        .into_iter()
                        .map(|s| match s.payload {
                            Payload::Inline(body) => Hop::Inline(body),
                            Payload::Ref(r) => Hop::Ref(r),
                            Payload::None => Hop::Nothing,
                        })
                        .collect(),
                )
            })
            .as_deref()
    }

    /// What frame `r.frame` of entry `r.entry` holds.
    fn hop(&mut self, r: &FrameRef) -> std::result::Result<Hop<'s>, Unresolved> {
        if r.entry.is_empty() || r.bytes == 0 {
            return Err(Unresolved::Malformed);
        }
        let index = self
            .session
            .index_of(&r.entry)
            .ok_or(Unresolved::NoSuchEntry)?;
        let frames = self.hops_of(index).ok_or(Unresolved::NotAnArchive)?;
        usize::try_from(r.frame)
            .ok()
            .and_then(|k| frames.get(k))
            .cloned()
            .ok_or(Unresolved::NoSuchFrame)
    }

    /// The base64 payload `r` names (following at most [`MAX_HOPS`] references).
    pub fn resolve(&mut self, r: &FrameRef) -> std::result::Result<Cow<'s, str>, Unresolved> {
        let data = self.payload(r)?;
        if data.len() as u64 != r.bytes {
            return Err(Unresolved::OtherLength);
        }
        Ok(data)
    }

    /// The payload at the end of `r`'s chain, whatever its length.
    fn payload(&mut self, r: &FrameRef) -> std::result::Result<Cow<'s, str>, Unresolved> {
        let mut at = r.clone();
        for _ in 0..MAX_HOPS {
            match self.hop(&at)? {
                Hop::Inline(body) => return decoded(body).ok_or(Unresolved::NotInline),
                Hop::Ref(next) => at = next,
                Hop::Nothing => return Err(Unresolved::NotInline),
            }
        }
        Err(Unresolved::NotInline)
    }
}

/// Fills the payload of `archive`'s frames stored by reference; returns how many do not
/// resolve (they keep an empty `data`: placeholders in the context).
pub fn resolve(session: &Session, archive: &mut Archive) -> usize {
    if archive.frames.iter().all(|f| f.data_ref.is_none()) {
        return 0;
    }
    let mut resolver = Resolver::new(session);
    let mut missing = 0;
    for f in &mut archive.frames {
        let Some(r) = f.data_ref.as_ref().filter(|_| f.data.is_empty()) else {
            continue;
        };
        match resolver.resolve(r) {
            Ok(data) => f.data = data.into_owned(),
            Err(_) => missing += 1,
        }
    }
    missing
}

/// The archive of compaction entry `index` with its frames' payloads resolved (spec:
/// snapcompact §9.1 `getPreservedArchive`, with [`resolve`]); `None` without an archive.
pub fn read_archive(session: &Session, index: usize) -> Result<Option<Archive>> {
    let body = session.body::<CompactionBody>(index)?;
    let Some(mut archive) = get_preserved_archive(body.preserve_data.as_ref()) else {
        return Ok(None);
    };
    resolve(session, &mut archive);
    Ok(Some(archive))
}

/// The JSON text of entry `index`'s `preserveData.snapcompact.frames` with every reference
/// that resolves replaced by its `data` (what a host copies frames from); `[]` without one.
pub fn frames_json(session: &Session, index: usize) -> String {
    let b = session.entry_line_bytes(index);
    let text = session.entry_json(index);
    let span = crate::support::json::edit::find_path(
        &text,
        &["preserveData", crate::archive::PRESERVE_KEY, "frames"],
    );
    let span = match span {
        Ok(Some(span)) if text.as_bytes().get(span.start) == Some(&b'[') => span,
        _ => return "[]".into(),
    };
    let has_refs = text.len() == b.len()
        && memchr::memmem::find(&b[span.clone()], DATA_REF_KEY.as_bytes()).is_some();
    if !has_refs {
        return text[span].into();
    }
    let Some(slots) = frame_slots(b) else {
        return text[span].into();
    };
    let mut resolver = Resolver::new(session);
    let mut out = String::with_capacity(span.len());
    let mut at = span.start;
    for s in &slots {
        let Payload::Ref(r) = &s.payload else {
            continue;
        };
        if let Ok(data) = resolver.resolve(r) {
            out.push_str(&text[at..s.member.start]);
            out.push_str("\"data\":");
            js::write_string(&mut out, &data);
            at = s.member.end;
        }
    }
    out.push_str(&text[at..span.end]);
    out
}

/// A load warning for each frame reference of the session that does not resolve (code
/// `E_INVALID_ENTRY_BODY`, the referring entry's line); the context shows a placeholder in
/// its place. Lines without a `dataRef` are not parsed.
pub fn check(session: &Session) -> Vec<LoadWarning> {
    let mut out = Vec::new();
    let mut resolver = Resolver::new(session);
    let mut lengths: FxHashMap<(String, u64), std::result::Result<u64, Unresolved>> =
        FxHashMap::default();
    let data_ref = memchr::memmem::Finder::new(DATA_REF_KEY);
    for (i, e) in session.entries().iter().enumerate() {
        if e.kind() != EntryKind::Compaction {
            continue;
        }
        if data_ref.find(session.entry_line_bytes(i)).is_none() {
            continue;
        }
        check_entry(session, i, e, &mut resolver, &mut lengths, &mut out);
    }
    out
}

/// The frame references of the compaction entry `i` (whose line names a `dataRef`) that do
/// not resolve, pushed onto `out` ([`check`]). A loop body of its own (issue 42,
/// docs/decisions/performance-notes.md#loop-bodies).
#[inline(never)]
fn check_entry<'s>(
    session: &'s Session,
    i: usize,
    e: &crate::session::Entry,
    resolver: &mut Resolver<'s>,
    lengths: &mut FxHashMap<(String, u64), std::result::Result<u64, Unresolved>>,
    out: &mut Vec<LoadWarning>,
) {
    // The line is read once, for its references and as the target of later ones.
    let refs: Vec<(usize, FrameRef)> = resolver
        .hops_of(i)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(k, h)| match h {
            Hop::Ref(r) => Some((k, r.clone())),
            _ => None,
        })
        .collect();
    for (k, r) in &refs {
        // Later archives name the same stored frames again: each is decoded once.
        let key = (r.entry.clone(), r.frame);
        let length = match lengths.get(&key) {
            Some(&l) => l,
            None => {
                let l = resolver.payload(r).map(|d| d.len() as u64);
                lengths.insert(key, l);
                l
            }
        };
        let resolved = length.and_then(|l| {
            if l == r.bytes {
                Ok(())
            } else {
                Err(Unresolved::OtherLength)
            }
        });
        if let Err(why) = resolved {
            out.push(LoadWarning {
                code: ErrorCode::InvalidEntryBody,
                line: session.line_number(i),
                message: format!(
                    "entry {}: snapcompact frame {k} is stored by reference, and the \
                     reference {} (entry {:?}, frame {}); the context shows a placeholder \
                     for it",
                    e.id(),
                    why.says(),
                    r.entry,
                    r.frame
                ),
            });
        }
    }
}

/// The payloads of the frames compaction `index` stores or refers to, each with the
/// reference a new entry can store in its place (the entry that holds the bytes inline).
fn stored_frames<'s>(
    session: &'s Session,
    index: usize,
    resolver: &mut Resolver<'s>,
    out: &mut FxHashMap<Cow<'s, str>, FrameRef>,
) {
    let id = session.entries()[index].id();
    // With duplicate ids, a reference to this id would name another entry.
    let own = session.index_of(id) == Some(index);
    for (k, s) in frame_slots(session.entry_line_bytes(index))
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        match s.payload {
            Payload::Inline(body) if own => {
                if let Some(data) = decoded(body) {
                    let r = FrameRef {
                        entry: id.to_string(),
                        frame: k as u64,
                        bytes: data.len() as u64,
                    };
                    out.entry(data).or_insert(r);
                }
            }
            Payload::Ref(r) => {
                if let Ok(data) = resolver.resolve(&r) {
                    out.entry(data).or_insert(r);
                }
            }
            _ => {}
        }
    }
}

/// Rewrites the frames of a new archive record (`preserveData.snapcompact`) whose bytes the
/// previous compaction `previous` stores, or refers to, as [`FrameRef`]s to the entry that
/// holds them (`snapcompact.frameStorage: "reference"`). Returns how many it rewrote.
pub fn store_by_reference(session: &Session, previous: Option<usize>, record: &mut Value) -> usize {
    let Some(previous) = previous.filter(|&p| p < session.len()) else {
        return 0;
    };
    let mut known = FxHashMap::default();
    let mut resolver = Resolver::new(session);
    stored_frames(session, previous, &mut resolver, &mut known);
    let Some(frames) = record.get_mut("frames").and_then(Value::as_array_mut) else {
        return 0;
    };
    let mut rewritten = 0;
    for f in frames.iter_mut() {
        let Some(o) = f.as_object_mut() else {
            continue;
        };
        let Some(r) = o
            .get("data")
            .and_then(Value::as_str)
            .and_then(|d| known.get(d))
        else {
            continue;
        };
        // `dataRef` where `data` was, the other members in their order.
        let members = std::mem::take(o);
        let mut kept = Map::with_capacity(members.len());
        for (k, v) in members {
            if k == "data" {
                kept.insert(DATA_REF_KEY.into(), r.to_json());
            } else {
                kept.insert(k, v);
            }
        }
        *o = kept;
        rewritten += 1;
    }
    rewritten
}

/// What [`migrate_frames`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameMigration {
    /// Compaction entries rewritten.
    pub entries: usize,
    /// Frames converted.
    pub frames: usize,
    /// References left as they are because they do not resolve (to inline only).
    pub missing: usize,
    /// The file's size before and after.
    pub bytes_before: u64,
    pub bytes_after: u64,
}

/// Converts every snapcompact frame of the file to `to`: `Reference` writes each frame whose
/// bytes an earlier compaction entry (file order) holds inline as a reference to it;
/// `Inline` writes every reference that resolves as its bytes. Only the `data` / `dataRef`
/// member of a frame changes, in its place, so converting one way and back gives the file's
/// bytes back (for `data` strings written as `JSON.stringify` writes them). References that do
/// not resolve stay as they are and are counted. Nothing else in the session changes.
pub fn migrate_frames(session: &mut Session, to: FrameStorage) -> FrameMigration {
    let bytes_before = session.byte_len() as u64;
    let mut edits: Vec<(usize, String)> = Vec::new();
    let (mut frames, mut missing) = (0, 0);
    {
        let s: &Session = session;
        let mut resolver = Resolver::new(s);
        let mut known: FxHashMap<Cow<'_, str>, FrameRef> = FxHashMap::default();
        for (i, e) in s.entries().iter().enumerate() {
            if e.kind() != EntryKind::Compaction {
                continue;
            }
            let b = s.entry_line_bytes(i);
            let text = s.entry_json(i);
            // Spans are of the bytes: a line read with U+FFFD replacements is left alone.
            if text.len() != b.len() {
                continue;
            }
            let Some(slots) = frame_slots(b) else {
                continue;
            };
            let own = s.index_of(e.id()) == Some(i);
            let mut pieces: Vec<(Range<usize>, String)> = Vec::new();
            for (k, slot) in slots.iter().enumerate() {
                match (&slot.payload, to) {
                    (Payload::Inline(body), FrameStorage::Reference) => {
                        let Some(data) = decoded(body) else {
                            continue;
                        };
                        if let Some(r) = known.get(&data) {
                            pieces.push((slot.member.clone(), r.member_text()));
                        } else if own {
                            let r = FrameRef {
                                entry: e.id().to_string(),
                                frame: k as u64,
                                bytes: data.len() as u64,
                            };
                            known.insert(data, r);
                        }
                    }
                    (Payload::Ref(r), FrameStorage::Inline) => match resolver.resolve(r) {
                        Ok(data) => {
                            let mut member = String::from("\"data\":");
                            js::write_string(&mut member, &data);
                            pieces.push((slot.member.clone(), member));
                        }
                        Err(_) => missing += 1,
                    },
                    _ => {}
                }
            }
            if pieces.is_empty() {
                continue;
            }
            frames += pieces.len();
            let mut line = String::with_capacity(text.len());
            let mut at = 0;
            for (span, member) in pieces {
                line.push_str(&text[at..span.start]);
                line.push_str(&member);
                at = span.end;
            }
            line.push_str(&text[at..]);
            edits.push((i, line));
        }
    }
    let entries = edits.len();
    if entries > 0 {
        session.rewrite_entries(edits);
    }
    FrameMigration {
        entries,
        frames,
        missing,
        bytes_before,
        bytes_after: session.byte_len() as u64,
    }
}
