//! The lines of a session file (spec: compaction §1.1–§1.2): what each line is, where its text
//! lives, what the header says, and how the lines a new session or an append writes look. The
//! loader, the session model and the migrations all read these; none of them is needed here.

use crate::error::ErrorCode;
use crate::support::json::js;
use serde_json::{Map, Value};
use std::borrow::Cow;

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
    /// A line the v1 migration gave an id, as bytes: its text is read as a source line's is
    /// (checked as UTF-8 when asked), so the load neither checks nor copies it twice.
    Bytes(Box<[u8]>),
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
pub(super) enum Leaf {
    /// The entry at this index.
    At(u32),
    /// No leaf: the next append becomes a new root (`resetLeaf`), or the session is empty.
    None,
}

/// Something found while loading that did not stop the load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadWarning {
    /// What kind of problem (e.g. `E_JSONL_LINE`) or event (`E_MIGRATED`).
    pub code: ErrorCode,
    /// 1-based line number in the loaded file (0 for file-wide notes).
    pub line: u32,
    /// What happened and what was done about it.
    pub message: String,
}

/// The UTF-8 byte order mark. A file that starts with it is read from the byte after it, and
/// `Session::write_segments` writes it back first: it is kept on save (byte-faithful).
pub(crate) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The length of the byte order mark `bytes` start with (0 or 3).
pub(crate) fn bom_len(bytes: &[u8]) -> usize {
    if bytes.starts_with(BOM) {
        BOM.len()
    } else {
        0
    }
}

/// Text of bytes that are almost always valid UTF-8: `from_utf8` validates far faster than
/// `from_utf8_lossy`, which is only needed for the rare invalid line (U+FFFD replacements).
pub(super) fn utf8_text(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
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
pub(super) fn header_text(init: &NewSession) -> String {
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
