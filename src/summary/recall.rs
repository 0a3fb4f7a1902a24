//! Search over the whole session (issue 38 item 2, `session.searchHistory`): every entry of
//! every branch — compacted, abandoned or on the path — and the source text of snapcompact
//! archives, so what a compaction dropped can be found again.
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

/// One result.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub entry_id: String,
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
    entry: u32,
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
            *self = HistoryIndex {
                session_id: session.header().id.clone(),
                generation: session.generation(),
                ..HistoryIndex::default()
            };
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
            let doc = &mut self.docs[d as usize];
            doc.alive = false;
            self.alive -= 1;
            self.total_len -= u64::from(doc.len);
        }
    }

    fn add_entry(&mut self, session: &Session, i: usize) {
        let (role, text) = entry_text(session, i);
        if text.is_empty() {
            return;
        }
        let doc = self.docs.len() as u32;
        let mut tf: FxHashMap<&str, u32> = FxHashMap::default();
        let mut len = 0u32;
        let mut owned: Vec<String> = Vec::new();
        words(&text, |w| {
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
        harvest_text(&text, ALL, &mut |_, id| {
            let list = ids.entry(id.into()).or_default();
            if list.last() != Some(&doc) {
                list.push(doc);
            }
        });
        self.docs.push(Doc {
            entry: i as u32,
            stamp: session.line_stamp(i),
            len,
            alive: true,
            role: role.into(),
            timestamp: session.timestamp_ms(i),
        });
        self.by_entry[i] = Some(doc);
        self.alive += 1;
        self.total_len += u64::from(len);
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
                let (_, text) = entry_text(session, i);
                SearchHit {
                    entry_id: session.entries()[i].id().to_string(),
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
    /// `{entryId, role, timestamp, exact, score, snippet}` (`timestamp` null when unknown).
    pub fn to_json(&self) -> Value {
        crate::support::json::object(vec![
            ("entryId", self.entry_id.as_str().into()),
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
        ])
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
