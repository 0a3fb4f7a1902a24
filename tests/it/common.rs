//! Helpers shared by the modules of the integration tests.

use ctxfold::session::{LoadOptions, SequentialIds, Session};
use serde_json::{json, Value};
use std::path::PathBuf;

/// A version 3 session file whose entries hold `messages` (each a message's JSON text) in a
/// chain: `e0` the root, each next entry the child of the one before.
pub fn message_chain<S: AsRef<str>>(messages: &[S]) -> Vec<u8> {
    let mut text = String::from(
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
    );
    text.push('\n');
    for (n, m) in messages.iter().enumerate() {
        let parent = if n == 0 {
            "null".to_string()
        } else {
            format!("\"e{}\"", n - 1)
        };
        text.push_str(&format!(
            r#"{{"type":"message","id":"e{n}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{}}}"#,
            m.as_ref()
        ));
        text.push('\n');
    }
    text.into_bytes()
}

/// The conformance data directory, `../shared/conformance` next to the repository. Missing
/// data is a failure, never a skip: every run compares against the reference.
pub fn conformance_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance");
    assert!(
        dir.is_dir(),
        "conformance data missing at {}: the conformance tests need the shared/ folder beside \
         the repository",
        dir.display()
    );
    dir
}

/// Reads a file of the conformance data (`rel` below [`conformance_dir`]).
pub fn read(rel: &str) -> Vec<u8> {
    let path = conformance_dir().join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Builds v3 session files entry by entry, with explicit ids and parents.
#[derive(Debug, Clone)]
pub struct Jsonl {
    lines: Vec<String>,
    tick: i64,
}

impl Default for Jsonl {
    fn default() -> Self {
        Self::new()
    }
}

impl Jsonl {
    pub fn new() -> Self {
        let header = json!({"type":"session","version":3,"id":"sess-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"});
        Jsonl {
            lines: vec![header.to_string()],
            tick: 0,
        }
    }

    /// Appends an entry `{type,id,parentId,timestamp,...fields}`.
    pub fn entry(mut self, ty: &str, id: &str, parent: Option<&str>, fields: Value) -> Self {
        self.tick += 1000;
        let mut obj = serde_json::Map::new();
        obj.insert("type".into(), ty.into());
        obj.insert("id".into(), id.into());
        obj.insert("parentId".into(), parent.map_or(Value::Null, Value::from));
        obj.insert(
            "timestamp".into(),
            ctxfold::support::time::format_iso(1_767_225_600_000 + self.tick).into(),
        );
        if let Value::Object(f) = fields {
            obj.extend(f);
        }
        self.lines.push(Value::Object(obj).to_string());
        self
    }

    pub fn message(self, id: &str, parent: Option<&str>, message: Value) -> Self {
        self.entry("message", id, parent, json!({ "message": message }))
    }

    pub fn user(self, id: &str, parent: Option<&str>, text: &str) -> Self {
        self.message(
            id,
            parent,
            json!({"role":"user","content":text,"timestamp":1}),
        )
    }

    pub fn assistant(self, id: &str, parent: Option<&str>, text: &str) -> Self {
        self.message(id, parent, assistant_msg(text, "stop"))
    }

    pub fn compaction(
        self,
        id: &str,
        parent: Option<&str>,
        summary: &str,
        first_kept: &str,
    ) -> Self {
        self.entry(
            "compaction",
            id,
            parent,
            json!({"summary":summary,"firstKeptEntryId":first_kept,"tokensBefore":1000}),
        )
    }

    pub fn text(&self) -> String {
        let mut s = self.lines.join("\n");
        s.push('\n');
        s
    }

    pub fn load(&self) -> Session {
        Session::load(
            self.text().into_bytes(),
            LoadOptions::with_ids(Box::new(SequentialIds::new())),
        )
        .expect("load")
    }
}

/// An assistant message with one text block.
pub fn assistant_msg(text: &str, stop: &str) -> Value {
    json!({"role":"assistant","content":[{"type":"text","text":text}],"api":"anthropic-messages",
        "provider":"anthropic","model":"claude-sonnet-4-5",
        "usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15},
        "stopReason":stop,"timestamp":2})
}

/// The large-session fixture, migrated with the reference's deterministic ids.
pub fn fixture_session() -> Session {
    let bytes = read("large-session/session.jsonl");
    Session::load(bytes, LoadOptions::with_ids(Box::new(SequentialIds::new())))
        .expect("the fixture loads")
}

/// A JSON file of the large-session conformance data.
pub fn fixture_json(name: &str) -> Value {
    serde_json::from_slice(&read(&format!("large-session/{name}"))).expect("valid JSON")
}

/// A JSON array of strings (conformance data).
pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|s| s.as_str().expect("string").to_string())
        .collect()
}

/// A set of paths in the order the reference sorts them (UTF-16 code units).
pub fn sorted(set: &std::collections::BTreeSet<String>) -> Vec<String> {
    let mut v: Vec<String> = set.iter().cloned().collect();
    v.sort_by(|a, b| ctxfold::summary::fileops::cmp_utf16(a, b));
    v
}

/// Compares two long texts and, when they differ, reports the first differing position
/// with some context on each side.
pub fn assert_same_text(what: &str, got: &str, want: &str) {
    if got == want {
        return;
    }
    let at = got
        .char_indices()
        .zip(want.chars())
        .find(|((_, a), b)| a != b)
        .map(|((i, _), _)| i)
        .unwrap_or(got.len().min(want.len()));
    let from = at.saturating_sub(120);
    let ctx = |s: &str| -> String {
        let start = (0..=from)
            .rev()
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(0);
        s[start..].chars().take(300).collect()
    };
    panic!(
        "{what}: differs at byte {at} (lengths {} vs {})\n--- got ---\n{:?}\n--- want ---\n{:?}",
        got.len(),
        want.len(),
        ctx(got),
        ctx(want)
    );
}

/// The compiled GNU Unifont asset as the only fallback font.
pub fn fallbacks() -> ctxfold::render::FallbackFonts {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fonts/compiled/unifont.cxfb");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut f = ctxfold::render::FallbackFonts::new();
    f.push(ctxfold::render::FallbackFont::from_bytes(&bytes).expect("Unifont asset"));
    f
}
