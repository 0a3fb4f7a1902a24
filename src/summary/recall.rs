//! Search over the whole session (issue 38 item 2, `session.searchHistory`): every entry of
//! every branch — compacted, abandoned or on the path — and the source text of snapcompact
//! archives, so what a compaction dropped can be found again — and the artifacts the host
//! saved (shake's recovery text, pruned originals), handed in with [`HistoryIndex::add_artifact`]:
//! the session file does not hold them, so the index keeps their text.
//!
//! Ranking: entries holding one of the query's exact identifiers (the anchor harvesters'
//! words, the whole query, or a query word with a digit or an underscore) come first, then a BM25 score over lower-cased words. The
//! index is built on the first query and kept current after: appended entries are added, and
//! a rewritten line (its stamp changed, `Session::line_stamp`) is indexed again, its old
//! postings left as a tombstone. Nothing is timed or fetched here: the host owns the clock.

use crate::archive::{archive_source_text, get_preserved_archive};
use crate::error::{Error, Result};
use crate::session::message::AgentMessage;
use crate::session::{CompactionBody, EntryKind, Session};
use crate::summary::anchors::harvest::{harvest_text, Scope};
use crate::summary::anchors::{for_each_text, Source};
use rustc_hash::FxHashMap;
use serde_json::Value;

/// The search tool's name (`summary::tools`): its calls and answers are not searched.
pub const RECALL_HISTORY: &str = "recall_history";
/// The status tool's name (`summary::tools`).
pub const CONTEXT_STATUS: &str = "context_status";

/// Results a query returns without a `limit`.
pub const DEFAULT_LIMIT: usize = 10;
/// Results a query returns at most.
pub const MAX_LIMIT: usize = 200;
/// Bytes of text a snippet shows on each side of the hit.
const SNIPPET_SIDE: usize = 120;
/// BM25 parameters (the usual defaults).
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// What a query asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchOptions {
    /// At most this many results (default [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]).
    pub limit: Option<usize>,
    /// Only entries of these roles (`user`, `assistant`, `toolResult`, `bashExecution`,
    /// `custom`, `branchSummary`, `compactionSummary`, …); all when `None`.
    pub roles: Option<Vec<String>>,
    /// Only entries stamped at or after this time (milliseconds since the epoch).
    pub since: Option<i64>,
}

impl SearchOptions {
    /// Reads `{limit, roles, since}` (each optional; `null` is absent): `limit` a whole
    /// number ≥ 1, `roles` an array of strings, `since` milliseconds since the epoch.
    /// `E_INVALID_ARGUMENT` naming the field otherwise.
    pub fn from_json(v: &Value) -> Result<SearchOptions> {
        let bad = |what: &str| Error::InvalidArgument {
            what: format!("searchHistory options: {what}"),
        };
        let Some(o) = v.as_object() else {
            return if v.is_null() {
                Ok(SearchOptions::default())
            } else {
                Err(bad("expected an object"))
            };
        };
        let mut out = SearchOptions::default();
        for (k, v) in o {
            if v.is_null() {
                continue;
            }
            match k.as_str() {
                "limit" => {
                    let n = v
                        .as_f64()
                        .filter(|n| n.fract() == 0.0 && *n >= 1.0)
                        .ok_or_else(|| bad("`limit` must be a whole number of at least 1"))?;
                    out.limit = Some(n.min(MAX_LIMIT as f64) as usize);
                }
                "roles" => {
                    let roles = v
                        .as_array()
                        .and_then(|a| {
                            a.iter()
                                .map(|r| r.as_str().map(str::to_string))
                                .collect::<Option<Vec<_>>>()
                        })
                        .ok_or_else(|| bad("`roles` must be an array of strings"))?;
                    out.roles = Some(roles);
                }
                "since" => {
                    let t = v
                        .as_f64()
                        .filter(|t| t.is_finite())
                        .ok_or_else(|| bad("`since` must be a time in milliseconds"))?;
                    out.since = Some(t as i64);
                }
                other => return Err(bad(&format!("unknown option `{other}`"))),
            }
        }
        Ok(out)
    }
}

/// A text the host saved beside the session (issue 38 item 2): shake's recovery artifact,
/// a pruned result's original. Its `name` is the host's (a second artifact of the same name
/// replaces the first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    pub name: String,
    /// `shake`, `prune`, or what the host calls it.
    pub kind: String,
    pub text: String,
    /// The entry it came from, when known (a pruned result's).
    pub entry_id: Option<String>,
}

impl Artifact {
    /// Reads `[{name, text, kind?, entryId?}]`: `name` and `text` strings, `name` not empty.
    /// `E_INVALID_ARGUMENT` naming the item otherwise.
    pub fn list_from_json(v: &Value) -> Result<Vec<Artifact>> {
        let bad = |what: String| Error::InvalidArgument {
            what: format!("addArtifacts: {what}"),
        };
        let items = v
            .as_array()
            .ok_or_else(|| bad("expected an array of artifacts".into()))?;
        items
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let str_of = |k: &str| a.get(k).filter(|v| !v.is_null()).map(Value::as_str);
                let (Some(Some(name)), Some(Some(text))) = (str_of("name"), str_of("text")) else {
                    return Err(bad(format!("item {i} needs a `name` and a `text` string")));
                };
                if name.is_empty() {
                    return Err(bad(format!("item {i} has an empty `name`")));
                }
                let opt = |k: &str| match str_of(k) {
                    None => Ok(None),
                    Some(Some(s)) => Ok(Some(s.to_string())),
                    Some(None) => Err(bad(format!("item {i}: `{k}` must be a string"))),
                };
                Ok(Artifact {
                    name: name.into(),
                    kind: opt("kind")?.unwrap_or_else(|| "artifact".into()),
                    text: text.into(),
                    entry_id: opt("entryId")?,
                })
            })
            .collect()
    }
}

/// One result.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// The entry (for an artifact, the one it came from; empty when unknown).
    pub entry_id: String,
    /// The artifact's name, for a hit in a saved artifact.
    pub artifact: Option<String>,
    /// The message role, or the entry type for an entry that carries no message.
    pub role: String,
    /// The entry's timestamp in milliseconds (0 when it has none).
    pub timestamp: i64,
    /// The entry holds one of the query's identifiers verbatim.
    pub exact: bool,
    pub score: f64,
    /// The text around the first hit, whitespace collapsed, `…` where it was cut.
    pub snippet: String,
}

#[derive(Debug, Clone)]
struct Doc {
    /// The entry index, or for an artifact its index in `artifacts`.
    entry: u32,
    artifact: bool,
    stamp: u64,
    len: u32,
    alive: bool,
    role: Box<str>,
    timestamp: i64,
}

/// The search index of one session.
#[derive(Debug, Clone, Default)]
pub struct HistoryIndex {
    session_id: String,
    generation: u64,
    docs: Vec<Doc>,
    /// Entry index → its live document.
    by_entry: Vec<Option<u32>>,
    terms: FxHashMap<Box<str>, u32>,
    /// Per term: (document, term frequency).
    postings: Vec<Vec<(u32, u32)>>,
    /// Exact identifiers → documents holding them.
    ids: FxHashMap<Box<str>, Vec<u32>>,
    total_len: u64,
    alive: u32,
    /// The saved artifacts, each with its live document.
    artifacts: Vec<(Artifact, Option<u32>)>,
}

/// The searchable text of an entry: the texts of its message (see `anchors::for_each_text`),
/// and a snapcompact archive's source text for a compaction. The context tools' own calls
/// and answers are left out (issue 38 item 3): a recall answer quotes what it found, and
/// would otherwise be found again by every later query for the same words.
pub fn entry_text(session: &Session, index: usize) -> (String, String) {
    let kind = session.entries()[index].kind();
    let mut text = String::new();
    let mut role = kind_name(kind).to_string();
    if let Ok(Some(m)) = session.entry_message(index) {
        let m = without_context_tools(m);
        if let Some(r) = message_role(&m) {
            role = r.to_string();
        }
        for_each_text(&m, &mut |t, source| {
            if matches!(source, Source::Text(_)) {
                text.push_str(t);
                text.push('\n');
            }
        });
    }
    if kind == EntryKind::Compaction {
        let archive = session
            .body::<CompactionBody>(index)
            .ok()
            .and_then(|b| get_preserved_archive(b.preserve_data.as_ref()));
        if let Some(source) = archive.as_ref().and_then(archive_source_text) {
            text.push_str(&source);
        }
    }
    (role, text)
}

/// `m` without the context tools' calls (an assistant's `recall_history` / `context_status`
/// blocks) and with no text for their results.
fn without_context_tools(m: AgentMessage) -> AgentMessage {
    use crate::session::message::{Content, ContentBlock};
    let ours = |name: &str| name == RECALL_HISTORY || name == CONTEXT_STATUS;
    let call = |b: &ContentBlock| matches!(b, ContentBlock::ToolCall { name, .. } if ours(name));
    match m {
        AgentMessage::ToolResult(mut r) if ours(&r.tool_name) => {
            r.content = Content::Blocks(Vec::new());
            AgentMessage::ToolResult(r)
        }
        AgentMessage::Assistant(mut a) if a.blocks().iter().any(call) => {
            let kept = a.blocks().iter().filter(|b| !call(b)).cloned().collect();
            a.content = Content::Blocks(kept);
            AgentMessage::Assistant(a)
        }
        m => m,
    }
}

fn message_role(m: &AgentMessage) -> Option<&'static str> {
    Some(match m {
        AgentMessage::User(_) => "user",
        AgentMessage::Developer(_) => "developer",
        AgentMessage::Assistant(_) => "assistant",
        AgentMessage::ToolResult(_) => "toolResult",
        AgentMessage::BashExecution(_) => "bashExecution",
        AgentMessage::PythonExecution(_) => "pythonExecution",
        AgentMessage::FileMention(_) => "fileMention",
        AgentMessage::Custom(_) => "custom",
        AgentMessage::BranchSummary(_) => "branchSummary",
        AgentMessage::CompactionSummary(_) => "compactionSummary",
        AgentMessage::Other => return None,
    })
}

fn kind_name(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::Message => "message",
        EntryKind::Compaction => "compactionSummary",
        EntryKind::BranchSummary => "branchSummary",
        EntryKind::CustomMessage => "custom",
        _ => "other",
    }
}

/// The lower-cased words of `text`: runs of ASCII letters, digits and `_`, 2 to 40 long
/// (non-ASCII characters split words and are left out: identifiers are ASCII).
fn words(text: &str, mut f: impl FnMut(&str)) {
    let b = text.as_bytes();
    let mut word = String::new();
    let mut at = 0;
    while at <= b.len() {
        let c = b.get(at).copied();
        match c {
            Some(c) if c.is_ascii_alphanumeric() || c == b'_' => {
                word.push(c.to_ascii_lowercase() as char)
            }
            _ => {
                if (2..=40).contains(&word.len()) {
                    f(&word);
                }
                word.clear();
            }
        }
        at += 1;
    }
}

const ALL: Scope = Scope {
    user: true,
    symbols: true,
};

impl HistoryIndex {
    /// An empty index; the first [`HistoryIndex::search`] builds it.
    pub fn new() -> HistoryIndex {
        HistoryIndex::default()
    }

    /// Entries indexed (live documents).
    pub fn len(&self) -> usize {
        self.alive as usize
    }

    /// True before anything was indexed.
    pub fn is_empty(&self) -> bool {
        self.alive == 0
    }

    /// Brings the index up to date with `session`: a new session rebuilds it, appended
    /// entries are added, rewritten ones (checked when the edit generation moved) indexed
    /// again, and entries past the end dropped.
    pub fn refresh(&mut self, session: &Session) {
        if self.session_id != session.header().id {
            let artifacts = std::mem::take(&mut self.artifacts);
            *self = HistoryIndex {
                session_id: session.header().id.clone(),
                generation: session.generation(),
                ..HistoryIndex::default()
            };
            for (a, _) in artifacts {
                self.index_artifact(session, a);
            }
        }
        let n = session.len();
        if self.generation != session.generation() || self.by_entry.len() > n {
            for i in 0..self.by_entry.len() {
                let stale = match self.by_entry[i] {
                    Some(d) => i >= n || self.docs[d as usize].stamp != session.line_stamp(i),
                    None => i < n,
                };
                if stale {
                    self.drop_entry(i);
                    if i < n {
                        self.add_entry(session, i);
                    }
                }
            }
            self.by_entry.truncate(n);
            self.generation = session.generation();
        }
        for i in self.by_entry.len()..n {
            self.by_entry.push(None);
            self.add_entry(session, i);
        }
    }

    fn drop_entry(&mut self, i: usize) {
        if let Some(d) = self.by_entry.get_mut(i).and_then(Option::take) {
            self.kill(d);
        }
    }

    fn add_entry(&mut self, session: &Session, i: usize) {
        let (role, text) = entry_text(session, i);
        let timestamp = session.timestamp_ms(i);
        if let Some(doc) = self.add_doc(&text, i as u32, false, role, timestamp) {
            self.docs[doc as usize].stamp = session.line_stamp(i);
            self.by_entry[i] = Some(doc);
        }
    }

    /// Adds a saved artifact (issue 38 item 2): searched beside the entries from now on,
    /// replacing an earlier one of the same name. Its hits name it, and the entry it came
    /// from (whose time they carry) when that is in `session`.
    pub fn add_artifact(&mut self, session: &Session, artifact: Artifact) {
        self.refresh(session);
        self.index_artifact(session, artifact);
    }

    /// Saved artifacts held.
    pub fn artifact_count(&self) -> usize {
        self.artifacts.len()
    }

    fn index_artifact(&mut self, session: &Session, artifact: Artifact) {
        let at = match self
            .artifacts
            .iter()
            .position(|(a, _)| a.name == artifact.name)
        {
            Some(at) => {
                if let Some(d) = self.artifacts[at].1.take() {
                    self.kill(d);
                }
                at
            }
            None => {
                self.artifacts.push((artifact.clone(), None));
                self.artifacts.len() - 1
            }
        };
        let timestamp = artifact
            .entry_id
            .as_deref()
            .and_then(|id| session.index_of(id))
            .map_or(0, |i| session.timestamp_ms(i));
        let doc = self.add_doc(
            &artifact.text,
            at as u32,
            true,
            "artifact".into(),
            timestamp,
        );
        self.artifacts[at] = (artifact, doc);
    }

    fn kill(&mut self, d: u32) {
        let doc = &mut self.docs[d as usize];
        if doc.alive {
            doc.alive = false;
            self.alive -= 1;
            self.total_len -= u64::from(doc.len);
        }
    }

    /// Indexes `text` as a new live document; `None` for an empty text.
    fn add_doc(
        &mut self,
        text: &str,
        entry: u32,
        artifact: bool,
        role: String,
        timestamp: i64,
    ) -> Option<u32> {
        if text.is_empty() {
            return None;
        }
        let doc = self.docs.len() as u32;
        let mut tf: FxHashMap<&str, u32> = FxHashMap::default();
        let mut len = 0u32;
        let mut owned: Vec<String> = Vec::new();
        words(text, |w| {
            len += 1;
            owned.push(w.to_string());
        });
        for w in &owned {
            *tf.entry(w.as_str()).or_insert(0) += 1;
        }
        for (w, n) in tf {
            let t = match self.terms.get(w) {
                Some(&t) => t,
                None => {
                    let t = self.postings.len() as u32;
                    self.terms.insert(w.into(), t);
                    self.postings.push(Vec::new());
                    t
                }
            };
            self.postings[t as usize].push((doc, n));
        }
        let ids = &mut self.ids;
        harvest_text(text, ALL, &mut |_, id| {
            let list = ids.entry(id.into()).or_default();
            if list.last() != Some(&doc) {
                list.push(doc);
            }
        });
        self.docs.push(Doc {
            entry,
            artifact,
            stamp: 0,
            len,
            alive: true,
            role: role.into(),
            timestamp,
        });
        self.alive += 1;
        self.total_len += u64::from(len);
        Some(doc)
    }

    /// The best entries for `query` (refreshing the index first). `E_INVALID_ARGUMENT` for a
    /// query with nothing to search for.
    pub fn search(
        &mut self,
        session: &Session,
        query: &str,
        options: &SearchOptions,
    ) -> Result<Vec<SearchHit>> {
        let query = query.trim();
        let mut terms = Vec::new();
        words(query, |w| terms.push(w.to_string()));
        terms.sort();
        terms.dedup();
        let mut exact_ids: Vec<&str> = vec![query];
        harvest_text(query, ALL, &mut |_, id| exact_ids.push(id));
        if terms.is_empty() && query.is_empty() {
            return Err(Error::InvalidArgument {
                what: "searchHistory: the query is empty".into(),
            });
        }
        self.refresh(session);
        let limit = options.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let keep = |doc: &Doc| {
            doc.alive
                && options.since.is_none_or(|s| doc.timestamp >= s)
                && options
                    .roles
                    .as_ref()
                    .is_none_or(|r| r.iter().any(|x| x.as_str() == &*doc.role))
        };
        let mut scores: FxHashMap<u32, (bool, f64)> = FxHashMap::default();
        let mut exact = |d: u32| {
            if keep(&self.docs[d as usize]) {
                scores.entry(d).or_insert((true, 0.0)).0 = true;
            }
        };
        for id in &exact_ids {
            self.ids
                .get(*id)
                .into_iter()
                .flatten()
                .for_each(|&d| exact(d));
        }
        // An identifier-shaped word of the query (`zebra42`, `deploy_target`) is exact too
        // where the entry holds that word.
        for t in terms
            .iter()
            .filter(|t| t.bytes().any(|b| b.is_ascii_digit() || b == b'_'))
        {
            if let Some(&ti) = self.terms.get(t.as_str()) {
                self.postings[ti as usize]
                    .iter()
                    .for_each(|&(d, _)| exact(d));
            }
        }
        let n = f64::from(self.alive.max(1));
        let avg = self.total_len as f64 / n;
        for t in &terms {
            let Some(&ti) = self.terms.get(t.as_str()) else {
                continue;
            };
            let list = &self.postings[ti as usize];
            let df = list
                .iter()
                .filter(|(d, _)| self.docs[*d as usize].alive)
                .count() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(d, tf) in list {
                let doc = &self.docs[d as usize];
                if !keep(doc) {
                    continue;
                }
                let tf = f64::from(tf);
                let norm = tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * f64::from(doc.len) / avg));
                scores.entry(d).or_insert((false, 0.0)).1 += idf * norm;
            }
        }
        let mut ranked: Vec<(u32, bool, f64)> =
            scores.into_iter().map(|(d, (e, s))| (d, e, s)).collect();
        // Exact hits first, then score, then the newer entry; the document id breaks ties.
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.total_cmp(&a.2)).then(b.0.cmp(&a.0)));
        ranked.truncate(limit);
        let needles: Vec<&str> = exact_ids
            .iter()
            .copied()
            .filter(|s| !s.is_empty())
            .chain(terms.iter().map(String::as_str))
            .collect();
        Ok(ranked
            .into_iter()
            .map(|(d, exact, score)| {
                let doc = &self.docs[d as usize];
                let i = doc.entry as usize;
                let (entry_id, artifact, text) = if doc.artifact {
                    let a = &self.artifacts[i].0;
                    let from = a.entry_id.clone().unwrap_or_default();
                    (from, Some(a.name.clone()), a.text.clone())
                } else {
                    let (_, text) = entry_text(session, i);
                    (session.entries()[i].id().to_string(), None, text)
                };
                SearchHit {
                    entry_id,
                    artifact,
                    role: doc.role.to_string(),
                    timestamp: doc.timestamp,
                    exact,
                    score,
                    snippet: snippet(&text, &needles),
                }
            })
            .collect())
    }
}

impl SearchHit {
    /// `{entryId, role, timestamp, exact, score, snippet}` (`timestamp` null when unknown),
    /// and `artifact` (its name) for a hit in a saved artifact, whose `entryId` is null when
    /// the entry it came from is not known.
    pub fn to_json(&self) -> Value {
        let mut fields = vec![
            (
                "entryId",
                if self.entry_id.is_empty() {
                    Value::Null
                } else {
                    self.entry_id.as_str().into()
                },
            ),
            ("role", self.role.as_str().into()),
            (
                "timestamp",
                if self.timestamp == 0 {
                    Value::Null
                } else {
                    self.timestamp.into()
                },
            ),
            ("exact", self.exact.into()),
            ("score", (((self.score * 1e4).round()) / 1e4).into()),
            ("snippet", self.snippet.as_str().into()),
        ];
        if let Some(name) = &self.artifact {
            fields.insert(1, ("artifact", name.as_str().into()));
        }
        crate::support::json::object(fields)
    }
}

/// The text around the first of `needles` found in `text` (exact first, then ASCII
/// case-insensitive), whitespace collapsed, cut at character boundaries with `…`.
pub fn snippet(text: &str, needles: &[&str]) -> String {
    let lower = text.to_ascii_lowercase();
    let at = needles
        .iter()
        .find_map(|n| {
            memchr::memmem::find(text.as_bytes(), n.as_bytes())
                .or_else(|| {
                    memchr::memmem::find(lower.as_bytes(), n.to_ascii_lowercase().as_bytes())
                })
                .map(|at| (at, n.len()))
        })
        .unwrap_or((0, 0));
    let mut start = at.0.saturating_sub(SNIPPET_SIDE);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (at.0 + at.1 + SNIPPET_SIDE).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.push_str(
        &text[start..end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    );
    if end < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked() {
        use serde_json::json;
        let o =
            SearchOptions::from_json(&json!({"limit": 5, "roles": ["user"], "since": 10})).unwrap();
        assert_eq!(o.limit, Some(5));
        assert_eq!(o.roles.as_deref(), Some(&["user".to_string()][..]));
        assert_eq!(o.since, Some(10));
        assert_eq!(
            SearchOptions::from_json(&Value::Null).unwrap(),
            SearchOptions::default()
        );
        for bad in [
            json!({"limit": 0}),
            json!({"limit": 1.5}),
            json!({"roles": "user"}),
            json!({"roles": [1]}),
            json!({"since": "yesterday"}),
            json!({"other": 1}),
            json!([]),
        ] {
            let e = SearchOptions::from_json(&bad).unwrap_err();
            assert_eq!(e.code(), crate::error::ErrorCode::InvalidArgument, "{bad}");
        }
    }

    fn session(id: &str, words: &[&str]) -> Session {
        let mut lines = vec![format!(
            r#"{{"type":"session","version":3,"id":"{id}","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}}"#
        )];
        let mut parent = "null".to_string();
        for (i, w) in words.iter().enumerate() {
            lines.push(format!(
                r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"2025-01-01T00:00:0{i}.000Z","message":{{"role":"user","content":"{w}","timestamp":1}}}}"#
            ));
            parent = format!("\"e{i}\"");
        }
        Session::load(
            lines.join("\n").into_bytes(),
            crate::session::LoadOptions::default(),
        )
        .unwrap()
    }

    fn artifact(name: &str, text: &str, entry: Option<&str>) -> Artifact {
        Artifact {
            name: name.into(),
            kind: "prune".into(),
            text: text.into(),
            entry_id: entry.map(str::to_string),
        }
    }

    #[test]
    fn artifacts_are_searched_beside_entries() {
        let s = session("s1", &["deploy the api", "check port 8443", "all good"]);
        let mut index = HistoryIndex::new();
        let o = SearchOptions::default();
        let before: Vec<_> = index.search(&s, "port 8443", &o).unwrap();
        assert!(index.search(&s, "zebra_77f3", &o).unwrap().is_empty());
        index.add_artifact(
            &s,
            artifact(
                "pruned-e1.txt",
                "the log said zebra_77f3 failed",
                Some("e1"),
            ),
        );
        index.add_artifact(
            &s,
            artifact("shake.md", "### region 1\nquokka_99 text", None),
        );
        let hits = index.search(&s, "zebra_77f3", &o).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].artifact.as_deref(), Some("pruned-e1.txt"));
        assert_eq!(hits[0].entry_id, "e1");
        assert_eq!(hits[0].role, "artifact");
        assert!(hits[0].exact && hits[0].snippet.contains("zebra_77f3"));
        assert_eq!(hits[0].timestamp, s.timestamp_ms(1));
        let json = hits[0].to_json();
        assert_eq!(json["artifact"], "pruned-e1.txt");
        let shaken = index.search(&s, "quokka_99", &o).unwrap();
        assert_eq!(shaken[0].artifact.as_deref(), Some("shake.md"));
        assert_eq!(shaken[0].to_json()["entryId"], Value::Null);
        // Entry hits are what they were (their scores move with the corpus size only).
        let after = index.search(&s, "port 8443", &o).unwrap();
        let ids = |h: &[SearchHit]| h.iter().map(|h| h.entry_id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&before), ids(&after));
        assert!(after.iter().all(|h| h.artifact.is_none()));
        // Roles filter artifacts like entries.
        let users = SearchOptions {
            roles: Some(vec!["user".into()]),
            ..SearchOptions::default()
        };
        assert!(index.search(&s, "zebra_77f3", &users).unwrap().is_empty());
        // The same name replaces; a new session keeps what the host handed in.
        index.add_artifact(&s, artifact("pruned-e1.txt", "now okapi_5", Some("e1")));
        assert!(index.search(&s, "zebra_77f3", &o).unwrap().is_empty());
        assert_eq!(index.artifact_count(), 2);
        let other = session("s2", &["fresh"]);
        let hits = index.search(&other, "okapi_5", &o).unwrap();
        assert_eq!(hits[0].artifact.as_deref(), Some("pruned-e1.txt"));
        assert_eq!(hits[0].timestamp, 0);
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// On generated sessions: a planted identifier only an artifact holds is found there,
        /// named, with its source entry; the entries' own exact hits and the documents indexed
        /// for them are what they were; the session is not touched.
        #[test]
        fn planted_artifact_identifiers_are_found(
            seed in 0u64..10_000,
            entries in 20usize..400,
            at in any::<prop::sample::Index>(),
            tag in 0u32..1_000_000,
        ) {
            let opts = ctxfold_testkit::GenOptions {
                seed,
                entries,
                ..ctxfold_testkit::GenOptions::default()
            };
            let s = Session::load(ctxfold_testkit::generate(&opts), crate::session::LoadOptions::default())
                .unwrap();
            let bytes = s.to_bytes();
            let from = s.entries()[at.index(s.len())].id().to_string();
            let planted = format!("zq_{tag}_planted");
            let mut index = HistoryIndex::new();
            let all = SearchOptions { limit: Some(MAX_LIMIT), ..SearchOptions::default() };
            let exact_ids = |index: &mut HistoryIndex, q: &str| {
                let mut ids: Vec<String> = index
                    .search(&s, q, &all)
                    .unwrap()
                    .into_iter()
                    .filter(|h| h.exact && h.artifact.is_none())
                    .map(|h| h.entry_id)
                    .collect();
                ids.sort();
                ids
            };
            // An identifier of the chosen entry's own text (any word when it has none).
            let (_, text) = entry_text(&s, at.index(s.len()));
            let mut probe = String::from("the");
            harvest_text(&text, ALL, &mut |_, id| {
                if probe == "the" {
                    probe = id.to_string();
                }
            });
            let before = (exact_ids(&mut index, &probe), index.len());
            prop_assert!(index.search(&s, &planted, &all).unwrap().is_empty());
            index.add_artifact(&s, artifact("pruned.txt", &format!("output\n{planted} failed"), Some(&from)));
            let hits = index.search(&s, &planted, &all).unwrap();
            prop_assert_eq!(hits.len(), 1);
            prop_assert_eq!(hits[0].artifact.as_deref(), Some("pruned.txt"));
            prop_assert_eq!(&hits[0].entry_id, &from);
            prop_assert!(hits[0].exact && hits[0].snippet.contains(&planted));
            prop_assert_eq!((exact_ids(&mut index, &probe), index.len() - 1), before);
            prop_assert_eq!(s.to_bytes(), bytes);
        }
    }

    #[test]
    fn artifact_lists_are_checked() {
        use serde_json::json;
        let list = Artifact::list_from_json(&json!([
            {"name": "a", "text": "t"},
            {"name": "b", "text": "u", "kind": "shake", "entryId": "e1"}
        ]))
        .unwrap();
        assert_eq!(list[0].kind, "artifact");
        assert_eq!(list[1].entry_id.as_deref(), Some("e1"));
        for bad in [
            json!({}),
            json!([{"name": "a"}]),
            json!([{"name": "", "text": "t"}]),
            json!([{"name": "a", "text": 1}]),
            json!([{"name": "a", "text": "t", "entryId": 3}]),
        ] {
            let e = Artifact::list_from_json(&bad).unwrap_err();
            assert_eq!(e.code(), crate::error::ErrorCode::InvalidArgument, "{bad}");
        }
    }

    #[test]
    fn words_are_lowercased_runs() {
        let mut out = Vec::new();
        words("Deploy deploy_target to PORT 8443; x é ab", |w| {
            out.push(w.to_string())
        });
        assert_eq!(out, ["deploy", "deploy_target", "to", "port", "8443", "ab"]);
    }

    #[test]
    fn snippets_center_on_the_hit() {
        let text = format!(
            "{} the needle abc1234 here {}",
            "a ".repeat(200),
            "b ".repeat(200)
        );
        let s = snippet(&text, &["abc1234"]);
        assert!(s.starts_with('…') && s.ends_with('…'));
        assert!(s.contains("the needle abc1234 here"));
        assert!(s.len() < 2 * SNIPPET_SIDE + 20);
        // Case-insensitive fallback, and a multi-byte text cut on boundaries.
        let wide = format!("{}NEEDLE{}", "é".repeat(100), "ü".repeat(100));
        assert!(snippet(&wide, &["needle"]).contains("NEEDLE"));
        assert_eq!(snippet("short", &["zzz"]), "short");
    }
}
