//! Format migrations v1 → v2 → v3 (spec: compaction §1.3). They run on load and change the
//! in-memory lines; the next save writes the migrated file. A header at the current version
//! (or newer, up to the supported maximum) is left alone, so migration is idempotent.

use crate::error::{ErrorCode, Result};
use crate::session::message::Role;
use crate::session::{ids, LineText, Session, CURRENT_VERSION};
use crate::support::json::{edit, js};
use rustc_hash::FxHashMap;

/// v1 → v2, first half: every entry gets a fresh id and the previous entry as its parent —
/// v1 files are one linear chain. It builds the id index as it goes (fresh ids never repeat)
/// and links each entry to the one before it, so the load neither indexes the ids nor
/// resolves the parents again. `plain[i]`: entry `i`'s line is valid UTF-8 and has neither
/// member yet, so both are appended to its bytes (the usual case, no rescan of the line).
#[inline(never)]
pub(super) fn assign_ids(session: &mut Session, plain: &[bool]) {
    let n = session.entries.len();
    let mut ids = Assigning {
        by_id: FxHashMap::default(),
        id_json: String::new(),
        parent_json: String::from("null"),
    };
    ids.by_id.reserve(n);
    for i in 0..n {
        ids.assign(session, i, plain.get(i) == Some(&true));
    }
    session.by_id = ids.by_id;
}

/// What [`assign_ids`] carries from one entry to the next.
struct Assigning {
    by_id: FxHashMap<Box<str>, u32>,
    /// The id being assigned and the one before it (its parent), as JSON.
    id_json: String,
    parent_json: String,
}

impl Assigning {
    /// Gives entry `i` a fresh id and the entry before as its parent. A loop body of its own
    /// (issue 42, docs/decisions/performance-notes.md#loop-bodies).
    #[inline(never)]
    fn assign(&mut self, session: &mut Session, i: usize, plain: bool) {
        let by_id = &mut self.by_id;
        let id: Box<str> =
            ids::fresh_id(session.ids.as_mut(), |id| by_id.contains_key(id)).into_boxed_str();
        by_id.insert(id.clone(), i as u32);
        self.id_json.clear();
        js::write_string(&mut self.id_json, &id);
        let line = session.entries[i].line as usize;
        if !(plain && append_members(session, line, &self.id_json, &self.parent_json)) {
            set_members(session, line, &self.id_json, &self.parent_json);
        }
        let parent = i.checked_sub(1);
        let parent_id = parent.map(|p| session.entries[p].id.clone());
        let e = &mut session.entries[i];
        e.id = id;
        e.parent_id = parent_id;
        e.parent = parent.map(|p| p as u32);
        // This entry's id is the next one's parent.
        std::mem::swap(&mut self.id_json, &mut self.parent_json);
    }
}

/// Appends `"id"` and `"parentId"` to the object of `line` where `JSON.stringify` would put
/// new properties (before its closing brace), on the line's bytes; false when the line has no
/// closing brace (never, for a line read as an object). The message span does not move.
fn append_members(session: &mut Session, line: usize, id_json: &str, parent_json: &str) -> bool {
    let bytes = session.line_bytes(line);
    let Some(close) = memchr::memrchr(b'}', bytes) else {
        return false;
    };
    let head = &bytes[..close];
    // An empty object: JSON whitespace only between its braces.
    let empty = head
        .iter()
        .rev()
        .find(|c| !matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
        == Some(&b'{');
    let comma = if empty { &b""[..] } else { b"," };
    let parts: [&[u8]; 7] = [
        head,
        comma,
        b"\"id\":",
        id_json.as_bytes(),
        b",\"parentId\":",
        parent_json.as_bytes(),
        &bytes[close..],
    ];
    // Allocated at its length: the boxed slice keeps the allocation.
    let mut text = Vec::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        text.extend_from_slice(p);
    }
    session.lines[line].text = LineText::Bytes(text.into_boxed_slice());
    true
}

/// Sets `"id"` and `"parentId"` on the object of `line` by editing its text (a line that
/// already has either member, or holds bytes that are not UTF-8 and is read with U+FFFD): the
/// line is left as it is when the edit fails.
#[cold]
#[inline(never)]
fn set_members(session: &mut Session, line: usize, id_json: &str, parent_json: &str) {
    let text = session.line_text(line).into_owned();
    let new_text = edit::set_member(&text, &[], "id", id_json)
        .ok()
        .flatten()
        .and_then(|t| {
            edit::set_member(&t, &[], "parentId", parent_json)
                .ok()
                .flatten()
        });
    if let Some(t) = new_text {
        session.rewrite_line(line, t);
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
#[inline(never)]
pub(super) fn upgrade(session: &mut Session) -> Result<()> {
    let from = session.header.version;
    // Each loop calls a function per entry it edits: loop bodies of their own (issue 42,
    // docs/decisions/performance-notes.md#loop-bodies).
    if from < 2 {
        for i in 0..session.entries.len() {
            if session.entries[i].kind == crate::session::EntryKind::Compaction {
                kept_index_to_id(session, i)?;
            }
        }
    }
    if from < 3 {
        for i in 0..session.entries.len() {
            if session.entries[i].role == Some(Role::HookMessage) {
                hook_to_custom(session, i)?;
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

/// v1 → v2, second half, for the compaction entry `i`: `firstKeptEntryIndex` (an index into
/// the file's lines) becomes `firstKeptEntryId`.
#[inline(never)]
fn kept_index_to_id(session: &mut Session, i: usize) -> Result<()> {
    let Ok(body) = session.body::<V1Compaction>(i) else {
        return Ok(());
    };
    let Some(index) = body.first_kept_entry_index else {
        return Ok(());
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
    })
}

/// v2 → v3 for the entry `i`: a `hookMessage` becomes a `custom` message.
#[inline(never)]
fn hook_to_custom(session: &mut Session, i: usize) -> Result<()> {
    session.edit_entry(i, |t| {
        edit::set_member(t, &["message"], "role", "\"custom\"")
    })?;
    session.entries[i].role = Some(Role::Custom);
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::session::{LoadOptions, SequentialIds, Session};
    use crate::support::json::edit;
    use proptest::prelude::*;

    /// What the v1 migration makes of an entry line, the simple way (the way it was written
    /// before `assign_ids` worked on bytes): the members appended to the text when the line
    /// is valid UTF-8 and has neither yet, else both set by the text editor on the text as
    /// read (U+FFFD for bad bytes); unchanged when that fails.
    fn migrated_line(line: &[u8], id: &str, parent: Option<&str>) -> Vec<u8> {
        let text = String::from_utf8_lossy(line);
        let exact = std::str::from_utf8(line).is_ok();
        let id_json = format!("\"{id}\"");
        let parent_json = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        let obj: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&text).expect("an entry line");
        // An `id` that is not a string is no id: the appended one follows it (and wins).
        let plain = !obj.get("id").is_some_and(serde_json::Value::is_string)
            && !obj.contains_key("parentId");
        if let Some(close) = text.rfind('}').filter(|_| plain && exact) {
            let mut t = text[..close].to_string();
            if !t.trim_end().ends_with('{') {
                t.push(',');
            }
            t.push_str(&format!("\"id\":{id_json},\"parentId\":{parent_json}"));
            t.push_str(&text[close..]);
            return t.into_bytes();
        }
        edit::set_member(&text, &[], "id", &id_json)
            .ok()
            .flatten()
            .and_then(|t| {
                edit::set_member(&t, &[], "parentId", &parent_json)
                    .ok()
                    .flatten()
            })
            .map_or_else(|| line.to_vec(), String::into_bytes)
    }

    /// Whether the v1 loader reads `line` as an entry (a JSON object with a string `type`
    /// other than `session`; a `type` holding bytes that are not UTF-8 is no string).
    fn is_entry(line: &[u8]) -> bool {
        serde_json::from_str::<serde_json::Value>(&String::from_utf8_lossy(line))
            .ok()
            .and_then(|v| {
                v.get("type")?
                    .as_str()
                    .map(|t| t != "session" && !t.contains('\u{fffd}'))
            })
            .unwrap_or(false)
    }

    fn line_strategy() -> impl Strategy<Value = Vec<u8>> {
        let value = prop_oneof![
            Just(b"\"x\"".to_vec()),
            Just(b"\"caf\xc3\xa9 \\\" \\n\"".to_vec()),
            Just(b"\"bad \xff byte\"".to_vec()),
            Just(b"12.5".to_vec()),
            Just(b"null".to_vec()),
            Just(b"{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"}\"}]}".to_vec()),
            Just(b"[1,{\"id\":2}]".to_vec()),
            Just(b"\"abc\"".to_vec()),
        ];
        let key = prop_oneof![
            Just("type"),
            Just("message"),
            Just("id"),
            Just("parentId"),
            Just("x"),
            Just("timestamp"),
            Just("\\u0069d"),
        ];
        let ws = prop_oneof![Just(""), Just(" "), Just("\t"), Just(" \r")];
        let typ = prop_oneof![
            Just(b"\"message\"".to_vec()),
            Just(b"\"custom\"".to_vec()),
            Just(b"\"session\"".to_vec()),
            Just(b"7".to_vec()),
        ];
        prop_oneof![
            8 => (
                typ,
                proptest::collection::vec((key, value), 0..4),
                ws.clone(),
                ws,
                any::<bool>(),
            )
                .prop_map(|(typ, members, inner, after, type_first)| {
                    let mut parts: Vec<Vec<u8>> = members
                        .into_iter()
                        .map(|(k, v)| [format!("\"{k}\":").into_bytes(), v].concat())
                        .collect();
                    let t = [b"\"type\":".to_vec(), typ].concat();
                    if type_first {
                        parts.insert(0, t);
                    } else {
                        parts.push(t);
                    }
                    let mut line = b"{".to_vec();
                    line.extend(parts.join(&b","[..]));
                    line.extend(inner.as_bytes());
                    line.push(b'}');
                    line.extend(after.as_bytes());
                    line
                }),
            1 => Just(b"{}".to_vec()),
            1 => Just(b"{ \"type\":\"x\" }".to_vec()),
            1 => Just(b"not json".to_vec()),
            1 => Just(b"".to_vec()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// A v1 file loads with every entry line migrated as the simple way does it, the ids
        /// in order (each entry the child of the one before), other lines unchanged.
        #[test]
        fn v1_ids_are_assigned_as_the_simple_path_does(
            lines in proptest::collection::vec(line_strategy(), 0..12),
        ) {
            let mut file = b"{\"type\":\"session\",\"id\":\"s\"}".to_vec();
            for l in &lines {
                file.push(b'\n');
                file.extend_from_slice(l);
            }
            let s = Session::load(file, LoadOptions::with_ids(Box::new(SequentialIds::new())))
                .expect("a session");
            let out = s.to_bytes();
            let mut got = out.split(|&c| c == b'\n').skip(1);
            let mut n = 0u64;
            for l in &lines {
                let want = if is_entry(l) {
                    n += 1;
                    let id = format!("{n:08x}");
                    let parent = (n > 1).then(|| format!("{:08x}", n - 1));
                    migrated_line(l, &id, parent.as_deref())
                } else {
                    l.clone()
                };
                prop_assert_eq!(
                    got.next().map(String::from_utf8_lossy),
                    Some(String::from_utf8_lossy(&want))
                );
            }
            prop_assert_eq!(s.entries.len() as u64, n);
            for (i, e) in s.entries.iter().enumerate() {
                prop_assert_eq!(&*e.id, format!("{:08x}", i + 1));
                prop_assert_eq!(e.parent, i.checked_sub(1).map(|p| p as u32));
                prop_assert_eq!(s.index_of(&e.id), Some(i));
            }
        }
    }
}
