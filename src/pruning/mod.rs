//! Tool-output pruning (spec: compaction §6): stored tool results are blanked *in place* —
//! their content becomes one short notice and `prunedAt` is stamped — so the next prompt is
//! smaller while every call keeps its result (entries are never removed).
//!
//! Two passes over a branch, each split into a plan (pure, the session is only read) and an
//! apply step (the only mutation):
//! - the per-turn **stale pass** ([`prune_superseded_tool_results`], §6.5) blanks results a
//!   newer read of the same file made stale (§6.3) and results the tool flagged `useless`
//!   (§6.4), near the tail of the branch or everywhere once the session sat idle;
//! - the **threshold prune** ([`prune_tool_outputs`], §6.6) blanks old tool output beyond the
//!   newest `protectTokens`, but only when that frees at least `minimumSavings`.
//!
//! Time is an input (`now`, ms). Token counts are the session's memoized estimates
//! ([`Session::entry_tokens`]); facts about tool results and read calls come from per-entry
//! memos ([`Session::tool_result_facts`]), so a pass over an estimated branch parses nothing.

use crate::error::{Error, Result};
use crate::session::message::Role;
use crate::session::{CompactionBody, EntryKind, FileCalls, FileTool, Session, ToolResultFacts};
use crate::settings::CompactionSettings;
use crate::summary::fileops::{split_read_selector, strip_read_selector, SelectorKind};
use crate::tokens::EstimateOptions;
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{Map, Value};
use std::fmt;
use std::rc::Rc;

// ----- constants (spec: compaction §6.1) -------------------------------------------------

/// Newest tool-output tokens the threshold prune leaves untouched (`protectTokens`).
pub const DEFAULT_PROTECT_TOKENS: u64 = 40_000;
/// Least total savings for the threshold prune to change anything (`minimumSavings`).
pub const DEFAULT_MINIMUM_SAVINGS: u64 = 20_000;
/// Age-based pruning never touches a result estimated below this (`MIN_PRUNE_TOKENS`).
pub const MIN_PRUNE_TOKENS: u64 = 50;
/// Suffix limit of the stale pass's tail rule (`suffixTokenLimit`).
pub const DEFAULT_SUFFIX_TOKEN_LIMIT: u64 = 8_000;
/// The engine's default idle flush: 30 minutes.
pub const DEFAULT_IDLE_FLUSH_MS: u64 = 30 * 60 * 1000;
/// The idle flush the coding agent's session passes: 90 minutes, longer than the 1 h
/// Anthropic cache lifetime, so an idle flush never breaks a cache that is still warm.
pub const SESSION_IDLE_FLUSH_MS: u64 = 90 * 60 * 1000;
/// `cacheWarmSuffixTokens` the coding agent's session passes to the threshold prune.
pub const SESSION_CACHE_WARM_SUFFIX_TOKENS: u64 = 8_000;
/// The tool whose results are protected by default.
pub const DEFAULT_PROTECTED_TOOL: &str = "skill";
/// Notice of a result a newer read of the same file superseded.
pub const SUPERSEDED_NOTICE: &str = "[Superseded by a newer read of this file]";
/// Notice of a result its tool flagged `useless`.
pub const USELESS_NOTICE: &str = "[Uneventful result elided]";
/// The `protectedTools` entry (JSON configs, as the reference's configs name it) that stands
/// for the predicate protecting `read` results of `skill://` paths.
pub const SKILL_READ_MATCHER: &str = "isSkillReadToolResult";

/// The age notice: `[Output truncated - N tokens]`, N = estimated tokens of the original.
pub fn age_notice(tokens: u64) -> String {
    format!("[Output truncated - {tokens} tokens]")
}

/// Tokens one prune frees (spec: compaction §6.1): `max(0, tokens − ceil(noticeChars / 4))`,
/// with characters counted as JavaScript does (UTF-16 code units).
pub fn prune_savings(tokens: u64, notice: &str) -> u64 {
    let chars: u64 = notice.chars().map(|c| c.len_utf16() as u64).sum();
    tokens.saturating_sub(chars.div_ceil(4))
}

// ----- supersede keys (spec: compaction §6.2) ----------------------------------------------

/// `readToolSupersedeKey(toolName, args)` (spec: compaction §6.2): the key under which a
/// `read` result can be superseded by a newer one.
/// - only tool `read` with a non-empty string `path`; paths containing `://` get none;
/// - no read selector (§5.10) ⇒ the path; a line-range selector ⇒ `path + "\0" + selector`
///   (its parent key is the bare path); `raw`/`conflicts`, alone or compound ⇒
///   `path + "\u{1}" + selector` (no parent: only an identical read supersedes it).
///
/// `src/foo.ts:50-200` → `"src/foo.ts\u{0}50-200"`; `db.sqlite:users` → unchanged;
/// `skill://react` → none.
pub fn read_tool_supersede_key(tool_name: &str, args: &Value) -> Option<String> {
    if tool_name != "read" {
        return None;
    }
    let mut key = String::new();
    write_key(args.get("path")?.as_str()?, &mut key)?;
    Some(key)
}

// ----- configuration -------------------------------------------------------------------------

/// Where pruning may start on the branch (spec: compaction §6.5 step 3, §6.6 step 3):
/// candidates before the boundary entry are never touched.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum KeepBoundary {
    /// The `firstKeptEntryId` of the latest compaction on the branch, as the coding agent's
    /// session passes it; no compaction ⇒ the start of the branch.
    #[default]
    LatestCompaction,
    /// This entry (`keepBoundaryId`); an id not on the branch means the start of the branch.
    Entry(String),
    /// The start of the branch (the engine's behaviour when no `keepBoundaryId` is given).
    Start,
}

/// A host subject of a prune decision: one tool result and the `read` call it answers.
#[derive(Debug, Clone, Copy)]
pub struct PruneSubject<'a> {
    /// Entry index of the tool result (read its message with [`Session::message`]).
    pub index: usize,
    pub tool_name: &'a str,
    pub tool_call_id: &'a str,
    pub is_error: bool,
    /// The `path` argument of the paired `read` call.
    pub path: &'a str,
}

/// `supersedeComplete` (spec: compaction §6.3): does this successful read result hold the
/// whole file (or range) it names? A partial result (a summary, one page, a notice) still
/// supersedes identical older reads but not the ranges its bare path is the parent of.
pub type SupersedeComplete = Rc<dyn Fn(&Session, &PruneSubject<'_>) -> bool>;

/// Configuration of both pruning passes (spec: compaction §6.1, §6.5, §6.6). `Default` is the
/// engine's `DEFAULT_PRUNE_CONFIG`; [`PruneConfig::session_stale_pass`] and
/// [`PruneConfig::session_threshold`] are what the coding agent's session passes.
#[derive(Clone)]
pub struct PruneConfig {
    /// Threshold prune: the newest tool-output tokens left untouched (40 000).
    pub protect_tokens: u64,
    /// Threshold prune: below these total savings nothing changes (20 000).
    pub minimum_savings: u64,
    /// Tool names whose results are never pruned (`["skill"]`).
    pub protected_tools: Vec<String>,
    /// Protect `read` results whose call path starts with `skill://` (on by default).
    pub protect_skill_reads: bool,
    /// Protect `read` results of this path (the active plan file), with or without a read
    /// selector (spec: compaction §6.1 "session-added protection").
    pub protected_path: Option<String>,
    /// Blank results flagged `useless` (`pruneUseless`, on by default).
    pub prune_useless: bool,
    /// Blank results superseded by newer reads (`supersedeKey` = `readToolSupersedeKey`). Off
    /// in the engine default and in the session's threshold prune.
    pub supersede: bool,
    /// The host's `supersedeComplete`; `None` treats every successful result as complete.
    pub supersede_complete: Option<SupersedeComplete>,
    /// Threshold prune: results followed by more than this many message tokens sit in the
    /// provider's warm cache prefix and are kept (`cacheWarmSuffixTokens`; `None` = no guard).
    pub cache_warm_suffix_tokens: Option<u64>,
    /// Candidates before this entry are never pruned.
    pub keep_boundary: KeepBoundary,
    /// Stale pass: idle when the last message is at least this old (ms).
    pub idle_flush_ms: u64,
    /// Stale pass, not idle: only candidates followed by at most this many message tokens.
    pub suffix_token_limit: u64,
    /// The current time (ms since the epoch), written as `prunedAt`; also the idle clock.
    pub now: i64,
    /// The leaf whose branch is pruned (`None` = the session's leaf).
    pub leaf: Option<String>,
}

impl Default for PruneConfig {
    fn default() -> Self {
        PruneConfig {
            protect_tokens: DEFAULT_PROTECT_TOKENS,
            minimum_savings: DEFAULT_MINIMUM_SAVINGS,
            protected_tools: vec![DEFAULT_PROTECTED_TOOL.to_string()],
            protect_skill_reads: true,
            protected_path: None,
            prune_useless: true,
            supersede: false,
            supersede_complete: None,
            cache_warm_suffix_tokens: None,
            keep_boundary: KeepBoundary::LatestCompaction,
            idle_flush_ms: DEFAULT_IDLE_FLUSH_MS,
            suffix_token_limit: DEFAULT_SUFFIX_TOKEN_LIMIT,
            now: 0,
            leaf: None,
        }
    }
}

impl fmt::Debug for PruneConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PruneConfig")
            .field("protect_tokens", &self.protect_tokens)
            .field("minimum_savings", &self.minimum_savings)
            .field("protected_tools", &self.protected_tools)
            .field("protect_skill_reads", &self.protect_skill_reads)
            .field("protected_path", &self.protected_path)
            .field("prune_useless", &self.prune_useless)
            .field("supersede", &self.supersede)
            .field(
                "supersede_complete",
                &self.supersede_complete.as_ref().map(|_| "<host predicate>"),
            )
            .field("cache_warm_suffix_tokens", &self.cache_warm_suffix_tokens)
            .field("keep_boundary", &self.keep_boundary)
            .field("idle_flush_ms", &self.idle_flush_ms)
            .field("suffix_token_limit", &self.suffix_token_limit)
            .field("now", &self.now)
            .field("leaf", &self.leaf)
            .finish()
    }
}

fn bad(field: &str, reason: &str) -> Error {
    Error::Settings {
        field: field.to_string(),
        reason: reason.to_string(),
    }
}

fn want_count(field: &str, v: &Value) -> Result<u64> {
    match v.as_f64() {
        Some(f) if f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f <= 9.0e15 => Ok(f as u64),
        _ => Err(bad(field, "expected a non-negative whole number")),
    }
}

fn want_bool(field: &str, v: &Value) -> Result<bool> {
    v.as_bool()
        .ok_or_else(|| bad(field, "expected true or false"))
}

fn want_string(field: &str, v: &Value) -> Result<String> {
    v.as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .ok_or_else(|| bad(field, "expected a non-empty string"))
}

impl PruneConfig {
    /// The stale pass as the coding agent's session runs it after every turn (spec:
    /// compaction §6.5 "Gates", §6.1): superseded reads when `supersedeReads`, useless results
    /// when `dropUseless`, idle flush after 90 min, the latest compaction as boundary. A
    /// prefix-binding model (`model.thinking.prefixBinding`) gets a suffix limit of 0.
    pub fn session_stale_pass(
        settings: &CompactionSettings,
        now: i64,
        prefix_binding: bool,
    ) -> PruneConfig {
        PruneConfig {
            supersede: settings.supersede_reads,
            prune_useless: settings.drop_useless,
            idle_flush_ms: SESSION_IDLE_FLUSH_MS,
            suffix_token_limit: if prefix_binding {
                0
            } else {
                DEFAULT_SUFFIX_TOKEN_LIMIT
            },
            now,
            ..PruneConfig::default()
        }
    }

    /// The threshold prune as the coding agent's session runs it (spec: compaction §6.6, §6.1):
    /// default protection and savings, no supersede key, useless results when `dropUseless`,
    /// an 8 000-token cache-warm guard (0 for a prefix-binding model), the latest compaction
    /// as boundary.
    pub fn session_threshold(
        settings: &CompactionSettings,
        now: i64,
        prefix_binding: bool,
    ) -> PruneConfig {
        PruneConfig {
            prune_useless: settings.drop_useless,
            cache_warm_suffix_tokens: Some(if prefix_binding {
                0
            } else {
                SESSION_CACHE_WARM_SUFFIX_TOKENS
            }),
            now,
            ..PruneConfig::default()
        }
    }

    /// Reads a configuration from a JSON object (camelCase keys, as the reference's configs;
    /// absent or `null` keys keep their defaults):
    /// `protectTokens`, `minimumSavings`, `suffixTokenLimit`, `idleFlushMs`, `now` (numbers);
    /// `protectedTools` (tool names, replacing the default list; the entry
    /// `"isSkillReadToolResult"` stands for the `skill://` read protection);
    /// `protectedPath` (string); `pruneUseless` (bool); `supersedeKey` (`true`/`false` or
    /// `"readToolSupersedeKey"`); `cacheWarmSuffixTokens` (number); `keepBoundaryId` (an entry
    /// id, or `false` for the start of the branch; absent = the latest compaction); `leafId`.
    /// A bad value or an unknown key is `E_SETTINGS` naming the field.
    pub fn from_json(v: &Value) -> Result<PruneConfig> {
        let mut c = PruneConfig::default();
        let map: &Map<String, Value> = match v {
            Value::Null => return Ok(c),
            Value::Object(m) => m,
            _ => return Err(bad("prune", "expected an object")),
        };
        for (k, v) in map {
            if v.is_null() {
                continue;
            }
            let f = k.as_str();
            match f {
                "protectTokens" => c.protect_tokens = want_count(f, v)?,
                "minimumSavings" => c.minimum_savings = want_count(f, v)?,
                "suffixTokenLimit" => c.suffix_token_limit = want_count(f, v)?,
                "idleFlushMs" => c.idle_flush_ms = want_count(f, v)?,
                "now" => c.now = want_count(f, v)? as i64,
                "cacheWarmSuffixTokens" => c.cache_warm_suffix_tokens = Some(want_count(f, v)?),
                "pruneUseless" => c.prune_useless = want_bool(f, v)?,
                "protectedPath" => c.protected_path = Some(want_string(f, v)?),
                "leafId" => c.leaf = Some(want_string(f, v)?),
                "supersedeKey" => {
                    c.supersede = match v {
                        Value::Bool(b) => *b,
                        Value::String(s) if s == "readToolSupersedeKey" => true,
                        _ => {
                            return Err(bad(f, "expected true, false or \"readToolSupersedeKey\""))
                        }
                    }
                }
                "keepBoundaryId" => {
                    c.keep_boundary = match v {
                        Value::Bool(false) => KeepBoundary::Start,
                        Value::String(s) if !s.is_empty() => KeepBoundary::Entry(s.clone()),
                        _ => {
                            return Err(bad(
                                f,
                                "expected an entry id, or false for the start of the branch",
                            ))
                        }
                    }
                }
                "protectedTools" => {
                    let list = v
                        .as_array()
                        .ok_or_else(|| bad(f, "expected an array of tool names"))?;
                    c.protected_tools.clear();
                    c.protect_skill_reads = false;
                    for t in list {
                        match t.as_str() {
                            Some(SKILL_READ_MATCHER) => c.protect_skill_reads = true,
                            Some(name) if !name.is_empty() => {
                                c.protected_tools.push(name.to_string())
                            }
                            _ => return Err(bad(f, "expected non-empty tool name strings")),
                        }
                    }
                }
                _ => return Err(bad(f, "unknown pruning setting (check the spelling)")),
            }
        }
        Ok(c)
    }
}

// ----- plans and reports ---------------------------------------------------------------------

/// Why a result is pruned; decides its notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PruneReason {
    /// A newer read of the same file superseded it (§6.3): [`SUPERSEDED_NOTICE`].
    Superseded,
    /// Its tool flagged it `useless` (§6.4): [`USELESS_NOTICE`].
    Useless,
    /// Old output beyond the protect window (§6.6): [`age_notice`].
    Age,
}

impl PruneReason {
    /// The reason's name in reports (`superseded`, `useless`, `age`).
    pub fn as_str(self) -> &'static str {
        match self {
            PruneReason::Superseded => "superseded",
            PruneReason::Useless => "useless",
            PruneReason::Age => "age",
        }
    }
}

/// One tool result a pass prunes (or pruned).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PruneCandidate {
    /// Entry index.
    pub index: usize,
    /// Entry id.
    pub id: String,
    pub tool_name: String,
    pub tool_call_id: String,
    /// Estimated tokens of the result before pruning.
    pub tokens_before: u64,
    pub reason: PruneReason,
    /// The text that replaces the content.
    pub notice: String,
    /// `max(0, tokens − ceil(noticeChars / 4))`.
    pub savings: u64,
}

impl PruneCandidate {
    fn to_json(&self) -> Value {
        crate::support::json::object(vec![
            ("index", self.index.into()),
            ("id", self.id.as_str().into()),
            ("toolName", self.tool_name.as_str().into()),
            ("toolCallId", self.tool_call_id.as_str().into()),
            ("tokensBefore", self.tokens_before.into()),
            ("reason", self.reason.as_str().into()),
            ("notice", self.notice.as_str().into()),
            ("savings", self.savings.into()),
        ])
    }
}

/// What a pass would change: the candidates in branch order and their total savings. Nothing
/// has changed yet; [`apply_prune`] carries it out. An empty plan is a no-op.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PrunePlan {
    pub candidates: Vec<PruneCandidate>,
    pub tokens_saved: u64,
    /// `prunedAt` to write.
    pub now: i64,
}

impl PrunePlan {
    /// True when applying it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.candidates.is_empty()
    }
}

/// What a pass did: `{prunedCount, tokensSaved}` and the pruned results in branch order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PruneReport {
    pub pruned: Vec<PruneCandidate>,
    pub pruned_count: usize,
    pub tokens_saved: u64,
}

impl PruneReport {
    /// `{prunedCount, tokensSaved, pruned: [{index, id, toolName, toolCallId, tokensBefore,
    /// reason, notice, savings}]}`.
    pub fn to_json(&self) -> Value {
        crate::support::json::object(vec![
            ("prunedCount", self.pruned_count.into()),
            ("tokensSaved", self.tokens_saved.into()),
            (
                "pruned",
                Value::Array(self.pruned.iter().map(PruneCandidate::to_json).collect()),
            ),
        ])
    }
}

// ----- the branch as pruning sees it -----------------------------------------------------------

/// One tool result on the branch, with what the passes test in their loops kept inline.
struct Row {
    /// Position on the branch.
    pos: usize,
    /// Entry index.
    index: usize,
    tokens: u64,
    pruned: bool,
    useless: bool,
    is_error: bool,
    omitted: bool,
    /// The `read` call it answers: (index into `Branch::held`, index of the call there).
    read_call: Option<(u32, u32)>,
    facts: Rc<ToolResultFacts>,
}

/// Writes the supersede key of a `read` path (spec: compaction §6.2) into `out` (cleared
/// first): the path, or `path + "\0" + selector` for a line range, or `path + "\u{1}" +
/// selector` for `raw`/`conflicts`. Returns `None` when the path has no key, else the length
/// of its parent key (the bare path) for a line range, `Some(None)` otherwise.
fn write_key(path: &str, out: &mut String) -> Option<Option<usize>> {
    if path.is_empty() || path.contains("://") {
        return None;
    }
    out.clear();
    let target = split_read_selector(path);
    Some(match target.selector {
        None => {
            out.push_str(path);
            None
        }
        Some((selector, kind)) => {
            out.push_str(target.path);
            out.push(match kind {
                SelectorKind::Lines => '\u{0}',
                SelectorKind::Verbatim => '\u{1}',
            });
            out.push_str(selector);
            (kind == SelectorKind::Lines).then_some(target.path.len())
        }
    })
}

/// The branch, its tool results and the `read` calls they answer.
struct Branch<'a> {
    session: &'a Session,
    cfg: &'a PruneConfig,
    path: Vec<usize>,
    rows: Vec<Row>,
    /// File calls of the assistants that some result's `read` call belongs to.
    held: Vec<FileCalls>,
}

fn resolve_path(session: &Session, cfg: &PruneConfig) -> Result<Vec<usize>> {
    Ok(match &cfg.leaf {
        Some(id) => session.path_to(session.require(id)?),
        None => session.active_path(),
    })
}

/// Does this pass need the `read` calls at all?
fn needs_read_calls(cfg: &PruneConfig) -> bool {
    cfg.supersede || cfg.protect_skill_reads || cfg.protected_path.is_some()
}

/// Every `read` call on the branch by id (the last one wins when ids repeat): the fallback
/// for a result whose call is not in the assistant right before it.
struct AllReads {
    /// Call id → index into `calls`: (index into `Branch::held`, index of the call there).
    /// The map's type is the session's id index type (one `HashMap` instantiation less).
    by_id: FxHashMap<Box<str>, u32>,
    calls: Vec<(u32, u32)>,
}

impl AllReads {
    fn build(session: &Session, path: &[usize], held: &mut Vec<FileCalls>) -> AllReads {
        let mut by_id = FxHashMap::default();
        let mut all = Vec::new();
        for &i in path {
            if session.entries()[i].role() != Some(Role::Assistant) {
                continue;
            }
            let Some(calls) = session.file_calls(i) else {
                continue;
            };
            if !calls.iter().any(|c| c.tool == FileTool::Read) {
                continue;
            }
            let h = held.len() as u32;
            for (k, c) in calls.iter().enumerate() {
                if c.tool == FileTool::Read {
                    by_id.insert(c.id.clone(), all.len() as u32);
                    all.push((h, k as u32));
                }
            }
            held.push(calls);
        }
        AllReads { by_id, calls: all }
    }
}

impl<'a> Branch<'a> {
    /// Collects the tool results of the branch in one forward walk. A result is paired with
    /// its call in the nearest assistant before it; only when that fails for a `read` result
    /// are all calls of the branch looked up (spec: compaction §6.1 "call found by id among
    /// all assistant tool calls on the branch").
    ///
    /// With `every_result` false (the stale pass) only results that can be superseded or are
    /// flagged useless are kept.
    fn new(
        session: &'a Session,
        cfg: &'a PruneConfig,
        path: Vec<usize>,
        every_result: bool,
    ) -> Branch<'a> {
        let opts = EstimateOptions::default();
        let entries = session.entries();
        let pair = needs_read_calls(cfg);
        let mut rows = Vec::new();
        let mut held: Vec<FileCalls> = Vec::new();
        // The calls of the last assistant and, once one of its reads was paired, their
        // index in `held`.
        let mut current: Option<(FileCalls, Option<u32>)> = None;
        let mut all: Option<AllReads> = None;
        for (pos, &index) in path.iter().enumerate() {
            let e = &entries[index];
            match e.role() {
                Some(Role::Assistant) if pair => {
                    current = session
                        .file_calls(index)
                        .filter(|c| c.iter().any(|c| c.tool == FileTool::Read))
                        .map(|c| (c, None));
                    continue;
                }
                Some(Role::ToolResult) if e.kind() == EntryKind::Message => {}
                _ => continue,
            }
            let Some(facts) = session.tool_result_facts(index) else {
                continue;
            };
            let mut read_call = None;
            if pair {
                let id = &*facts.tool_call_id;
                if let Some((calls, at)) = &mut current {
                    if let Some(k) = calls
                        .iter()
                        .position(|c| c.tool == FileTool::Read && *c.id == *id)
                    {
                        let h = *at.get_or_insert_with(|| {
                            held.push(Rc::clone(calls));
                            held.len() as u32 - 1
                        });
                        read_call = Some((h, k as u32));
                    }
                }
                if read_call.is_none() && &*facts.tool_name == "read" {
                    let all = all.get_or_insert_with(|| AllReads::build(session, &path, &mut held));
                    read_call = all.by_id.get(id).map(|&n| all.calls[n as usize]);
                }
            }
            let wanted = every_result
                || (cfg.supersede && read_call.is_some())
                || (cfg.prune_useless && facts.useless);
            if !wanted {
                continue;
            }
            rows.push(Row {
                pos,
                index,
                tokens: session.entry_tokens(index, opts),
                pruned: facts.pruned,
                useless: facts.useless,
                is_error: facts.is_error,
                omitted: facts.context_omitted,
                read_call,
                facts,
            });
        }
        Branch {
            session,
            cfg,
            path,
            rows,
            held,
        }
    }

    /// The path of the `read` call a result answers.
    fn read_path(&self, row: &Row) -> Option<&str> {
        let (h, k) = row.read_call?;
        Some(&self.held[h as usize][k as usize].path)
    }

    /// The protection matcher (spec: compaction §6.1): protected tool names, `read` results
    /// of `skill://` paths, reads of the host's protected path (the plan file).
    fn protected(&self, row: &Row) -> bool {
        let cfg = self.cfg;
        if cfg
            .protected_tools
            .iter()
            .any(|t| **t == *row.facts.tool_name)
        {
            return true;
        }
        let Some(path) = self.read_path(row) else {
            return false;
        };
        (cfg.protect_skill_reads && path.starts_with("skill://"))
            || cfg
                .protected_path
                .as_deref()
                .is_some_and(|p| path == p || strip_read_selector(path) == p)
    }

    /// Position on the branch before which nothing is pruned (spec: compaction §6.5 step 3):
    /// the position of the boundary entry, 0 when absent or not on the branch.
    fn boundary(&self) -> usize {
        let entries = self.session.entries();
        let id = match &self.cfg.keep_boundary {
            KeepBoundary::Start => return 0,
            KeepBoundary::Entry(id) => id.clone(),
            KeepBoundary::LatestCompaction => {
                let latest = self
                    .path
                    .iter()
                    .rev()
                    .find(|&&i| entries[i].kind() == EntryKind::Compaction);
                match latest.and_then(|&i| self.session.body::<CompactionBody>(i).ok()) {
                    Some(b) => b.first_kept_entry_id,
                    None => return 0,
                }
            }
        };
        self.session
            .index_of(&id)
            .and_then(|at| self.path.iter().position(|&i| i == at))
            .unwrap_or(0)
    }

    /// Tokens of the `message` entries strictly after each branch position in `wanted`
    /// (ascending positions), in the same order.
    fn suffixes(&self, wanted: &[usize]) -> Vec<u64> {
        let mut out = vec![0; wanted.len()];
        let Some(&first) = wanted.first() else {
            return out;
        };
        let opts = EstimateOptions::default();
        let entries = self.session.entries();
        let mut suffix = 0u64;
        let mut w = wanted.len();
        for pos in (first..self.path.len()).rev() {
            while w > 0 && wanted[w - 1] == pos {
                w -= 1;
                out[w] = suffix;
            }
            let i = self.path[pos];
            if entries[i].kind() == EntryKind::Message {
                suffix += self.session.entry_tokens(i, opts);
            }
        }
        out
    }

    /// Marks superseded results (spec: compaction §6.3), indexed like `rows`. Newest →
    /// oldest, `newer[key]` records whether a newer result of that key succeeded and whether
    /// one was complete; errors only create the record.
    fn mark_superseded(&self, marks: &mut [Option<PruneReason>]) {
        #[derive(Default, Clone, Copy, PartialEq, Eq)]
        struct Newer {
            success: bool,
            complete: bool,
        }
        // Keys are owned by the map (a few hundred distinct files at most, so they stay in
        // cache); each read writes its key into one reused buffer to look it up.
        let mut newer: FxHashMap<Box<str>, Newer> = FxHashMap::default();
        let mut key = String::new();
        for (r, row) in self.rows.iter().enumerate().rev() {
            if row.pruned || row.omitted {
                continue;
            }
            let Some(path) = self.read_path(row) else {
                continue;
            };
            if self.protected(row) {
                continue;
            }
            let Some(parent_len) = write_key(path, &mut key) else {
                continue;
            };
            // A line range's parent is the bare path; `raw`/`conflicts` reads have none.
            let parent = parent_len.and_then(|n| newer.get(&key[..n]).copied());
            let same = newer.get(key.as_str()).copied();
            let superseded = if row.is_error {
                same.is_some() || parent.is_some_and(|p| p.success)
            } else {
                same.is_some_and(|s| s.success) || parent.is_some_and(|p| p.complete)
            };
            if superseded {
                marks[r] = Some(PruneReason::Superseded);
            }
            // Update `newer[key]`: errors only create the record; a success sets `success`
            // and `complete ||= supersedeComplete(result)` (not asked once complete).
            if row.is_error {
                if same.is_none() {
                    newer.insert(key.as_str().into(), Newer::default());
                }
                continue;
            }
            let complete = same.is_some_and(|s| s.complete)
                || match &self.cfg.supersede_complete {
                    None => true,
                    Some(hook) => hook(
                        self.session,
                        &PruneSubject {
                            index: row.index,
                            tool_name: &row.facts.tool_name,
                            tool_call_id: &row.facts.tool_call_id,
                            is_error: row.is_error,
                            path,
                        },
                    ),
                };
            let record = Newer {
                success: true,
                complete,
            };
            if same == Some(record) {
                continue;
            }
            match newer.get_mut(key.as_str()) {
                Some(r) => *r = record,
                None => {
                    newer.insert(key.as_str().into(), record);
                }
            }
        }
    }

    /// Marks useless results (spec: compaction §6.4) that are not already marked superseded.
    fn mark_useless(&self, marks: &mut [Option<PruneReason>]) {
        for (r, row) in self.rows.iter().enumerate() {
            if !row.useless || row.pruned || row.is_error || row.omitted || marks[r].is_some() {
                continue;
            }
            if prune_savings(row.tokens, USELESS_NOTICE) == 0 || self.protected(row) {
                continue;
            }
            marks[r] = Some(PruneReason::Useless);
        }
    }

    /// Superseded (when `supersede`) and useless (when `pruneUseless`) marks, by row.
    fn marks(&self) -> Vec<Option<PruneReason>> {
        let mut marks = vec![None; self.rows.len()];
        if self.cfg.supersede {
            self.mark_superseded(&mut marks);
        }
        if self.cfg.prune_useless {
            self.mark_useless(&mut marks);
        }
        marks
    }

    fn candidate(&self, row: &Row, reason: PruneReason) -> PruneCandidate {
        let notice = match reason {
            PruneReason::Superseded => SUPERSEDED_NOTICE.to_string(),
            PruneReason::Useless => USELESS_NOTICE.to_string(),
            PruneReason::Age => age_notice(row.tokens),
        };
        PruneCandidate {
            index: row.index,
            id: self.session.entries()[row.index].id().to_string(),
            tool_name: row.facts.tool_name.to_string(),
            tool_call_id: row.facts.tool_call_id.to_string(),
            tokens_before: row.tokens,
            reason,
            savings: prune_savings(row.tokens, &notice),
            notice,
        }
    }

    /// True when the last `message` entry has a numeric message `timestamp` at least
    /// `idleFlushMs` before `now` (spec: compaction §6.5 step 2).
    fn idle(&self) -> bool {
        let entries = self.session.entries();
        let last = self
            .path
            .iter()
            .rev()
            .find(|&&i| entries[i].kind() == EntryKind::Message);
        let Some(&last) = last else {
            return false;
        };
        let Some(json) = self.session.message_json(last) else {
            return false;
        };
        let Ok(o) = crate::support::json::view::Obj::parse(json.as_bytes()) else {
            return false;
        };
        o.f64("timestamp")
            .is_some_and(|ts| self.cfg.now as f64 - ts >= self.cfg.idle_flush_ms as f64)
    }
}

/// Runs `f` on the branch the configuration names (see [`Branch::new`] for `every_result`).
fn with_branch<T>(
    session: &Session,
    cfg: &PruneConfig,
    every_result: bool,
    f: impl FnOnce(&Branch<'_>) -> T,
) -> Result<T> {
    let path = resolve_path(session, cfg)?;
    Ok(f(&Branch::new(session, cfg, path, every_result)))
}

fn collect_marked(branch: &Branch<'_>, reason: PruneReason) -> Vec<PruneCandidate> {
    let marks = branch.marks();
    branch
        .rows
        .iter()
        .zip(&marks)
        .filter(|(_, m)| **m == Some(reason))
        .map(|(row, _)| branch.candidate(row, reason))
        .collect()
}

/// The results of the branch a newer read of the same file supersedes (spec: compaction
/// §6.3), in branch order, whatever `cfg.supersede` says. Protection applies; boundary and
/// tail rules do not (they belong to the passes).
pub fn collect_superseded(session: &Session, cfg: &PruneConfig) -> Result<Vec<PruneCandidate>> {
    let cfg = PruneConfig {
        supersede: true,
        prune_useless: false,
        ..cfg.clone()
    };
    with_branch(session, &cfg, false, |b| {
        collect_marked(b, PruneReason::Superseded)
    })
}

/// The `useless` results of the branch (spec: compaction §6.4), in branch order: not pruned,
/// not errors, not protected, with positive savings, and not superseded when `cfg.supersede`
/// (a superseded result gets the supersede notice instead).
pub fn collect_useless(session: &Session, cfg: &PruneConfig) -> Result<Vec<PruneCandidate>> {
    let cfg = PruneConfig {
        prune_useless: true,
        ..cfg.clone()
    };
    with_branch(session, &cfg, false, |b| {
        collect_marked(b, PruneReason::Useless)
    })
}

fn plan_of(candidates: Vec<PruneCandidate>, now: i64) -> PrunePlan {
    PrunePlan {
        tokens_saved: candidates.iter().map(|c| c.savings).sum(),
        candidates,
        now,
    }
}

/// Plans the per-turn stale pass `pruneSupersededToolResults` (spec: compaction §6.5):
/// 1. candidates = superseded (when `supersede`) + useless (when `pruneUseless`);
/// 2. idle ⇔ the last message is at least `idleFlushMs` old;
/// 3. only candidates at or after the keep boundary;
/// 4. idle ⇒ all of them; else only those followed by at most `suffixTokenLimit` message
///    tokens (the tail, whose cache prefix is rewritten anyway).
///
/// There is no minimum-savings gate and no age window here.
pub fn plan_superseded_tool_results(session: &Session, cfg: &PruneConfig) -> Result<PrunePlan> {
    with_branch(session, cfg, false, |b| {
        let marks = b.marks();
        let marked: Vec<usize> = (0..b.rows.len()).filter(|&r| marks[r].is_some()).collect();
        if marked.is_empty() {
            return plan_of(Vec::new(), cfg.now);
        }
        let boundary = b.boundary();
        let marked: Vec<usize> = marked
            .into_iter()
            .filter(|&r| b.rows[r].pos >= boundary)
            .collect();
        let keep: Vec<usize> = if b.idle() {
            marked
        } else {
            let positions: Vec<usize> = marked.iter().map(|&r| b.rows[r].pos).collect();
            let suffixes = b.suffixes(&positions);
            marked
                .into_iter()
                .zip(suffixes)
                .filter(|&(_, s)| s <= cfg.suffix_token_limit)
                .map(|(r, _)| r)
                .collect()
        };
        let candidates = keep
            .into_iter()
            .filter_map(|r| marks[r].map(|m| b.candidate(&b.rows[r], m)))
            .collect();
        plan_of(candidates, cfg.now)
    })
}

/// Plans the threshold prune `pruneToolOutputs` (spec: compaction §6.6). Walking tool results
/// newest → oldest with `acc` = the tool-result tokens seen so far:
/// - already pruned, in the warm cache prefix (followed by more than
///   `cacheWarmSuffixTokens` message tokens), or before the keep boundary ⇒ kept;
/// - neither superseded nor useless, and inside the protect window (`acc < protectTokens`),
///   protected, or under [`MIN_PRUNE_TOKENS`] ⇒ kept;
/// - else a candidate (superseded and useless results thus skip the age window).
///
/// The plan is empty unless the candidates save at least `minimumSavings` in total.
pub fn plan_tool_outputs(session: &Session, cfg: &PruneConfig) -> Result<PrunePlan> {
    with_branch(session, cfg, true, |b| {
        let marks = b.marks();
        let boundary = b.boundary();
        let suffixes = match cfg.cache_warm_suffix_tokens {
            Some(_) => {
                let positions: Vec<usize> = b.rows.iter().map(|r| r.pos).collect();
                b.suffixes(&positions)
            }
            None => Vec::new(),
        };
        let mut acc = 0u64;
        let mut picked: Vec<usize> = Vec::new();
        for (r, row) in b.rows.iter().enumerate().rev() {
            let t = row.tokens;
            let counted = acc;
            acc += t;
            if row.pruned || row.omitted {
                continue;
            }
            let warm = cfg
                .cache_warm_suffix_tokens
                .is_some_and(|limit| suffixes[r] > limit);
            if warm || row.pos < boundary {
                continue;
            }
            if marks[r].is_none()
                && (counted < cfg.protect_tokens || t < MIN_PRUNE_TOKENS || b.protected(row))
            {
                continue;
            }
            picked.push(r);
        }
        picked.reverse();
        let candidates: Vec<PruneCandidate> = picked
            .into_iter()
            .map(|r| b.candidate(&b.rows[r], marks[r].unwrap_or(PruneReason::Age)))
            .collect();
        let plan = plan_of(candidates, cfg.now);
        if plan.tokens_saved < cfg.minimum_savings {
            return plan_of(Vec::new(), cfg.now);
        }
        plan
    })
}

/// The line of a tool result entry with its message's `content` replaced by one text block
/// holding `notice` and `prunedAt` set to `now` (appended when absent, where JavaScript's
/// assignment puts a new property); every other byte stays. The message object (at `span`)
/// is scanned once. `None` when it is not an object.
fn pruned_line(line: &str, span: std::ops::Range<usize>, notice: &str, now: i64) -> Option<String> {
    use crate::support::json::scan::{for_each_member, key_is};
    let b = line.as_bytes();
    if b.get(span.start) != Some(&b'{') {
        return None;
    }
    let mut content = None;
    let mut pruned_at = None;
    let end = for_each_member(b, span.start, |b, m| {
        if key_is(&b[m.key.clone()], "content") {
            content = Some(m.value.clone());
        } else if key_is(&b[m.key.clone()], "prunedAt") {
            pruned_at = Some(m.value.clone());
        }
    })
    .ok()?;
    let close = end - 1;
    let mut blocks = String::with_capacity(notice.len() + 32);
    blocks.push_str("[{\"type\":\"text\",\"text\":");
    crate::support::json::js::write_string(&mut blocks, notice);
    blocks.push_str("}]");
    let stamp = now.to_string();
    // Replacements in place, then appended members, in byte order.
    let mut splices: Vec<(std::ops::Range<usize>, String)> = Vec::with_capacity(2);
    let mut appended = String::new();
    let empty = crate::support::json::scan::skip_ws(b, span.start + 1) == close;
    let mut append = |key: &str, value: &str| {
        if !(empty && appended.is_empty()) {
            appended.push(',');
        }
        crate::support::json::js::write_string(&mut appended, key);
        appended.push(':');
        appended.push_str(value);
    };
    match content {
        Some(r) => splices.push((r, blocks)),
        None => append("content", &blocks),
    }
    match pruned_at {
        Some(r) => splices.push((r, stamp)),
        None => append("prunedAt", &stamp),
    }
    splices.push((close..close, appended));
    crate::support::sort::sort_by_key(&mut splices, |(r, _)| r.start);
    let mut out = String::with_capacity(line.len() + 64);
    let mut at = 0;
    for (r, text) in splices {
        out.push_str(&line[at..r.start]);
        out.push_str(&text);
        at = r.end;
    }
    out.push_str(&line[at..]);
    Some(out)
}

/// Carries out a plan (spec: compaction §6.5 step 5): each candidate's message gets
/// `content = [{type:"text", text: notice}]` and `prunedAt = now`, spliced into its line so
/// every other byte stays; token and fact memos of the entry are invalidated. The plan is
/// checked first and nothing changes when it no longer fits the session (`E_STALE_PLAN`: an
/// entry is gone, is not a tool result or was pruned meanwhile).
pub fn apply_prune(session: &mut Session, plan: &PrunePlan) -> Result<PruneReport> {
    let stale = |reason: String| Error::StalePlan { reason };
    let mut seen = FxHashSet::default();
    let mut edits: Vec<(usize, String)> = Vec::with_capacity(plan.candidates.len());
    for c in &plan.candidates {
        let entry = session
            .entry(c.index)
            .filter(|e| e.id() == c.id)
            .ok_or_else(|| stale(format!("entry {} is not at index {}", c.id, c.index)))?;
        if entry.role() != Some(Role::ToolResult) || entry.kind() != EntryKind::Message {
            return Err(stale(format!("entry {} is not a tool result", c.id)));
        }
        if !seen.insert(c.index) {
            return Err(Error::InvalidArgument {
                what: format!("the prune plan lists entry {} twice", c.id),
            });
        }
        match session.tool_result_facts(c.index) {
            Some(f) if !f.pruned => {}
            _ => return Err(stale(format!("entry {} was pruned meanwhile", c.id))),
        }
        let text = session.entry_json(c.index);
        let edited = session
            .message_span(c.index)
            .and_then(|span| pruned_line(&text, span, &c.notice, plan.now))
            .ok_or_else(|| stale(format!("entry {} has no message object to edit", c.id)))?;
        edits.push((c.index, edited));
    }
    for (index, text) in edits {
        let line = session.entries()[index].line_index() as usize;
        session.rewrite_line(line, text);
    }
    Ok(PruneReport {
        pruned_count: plan.candidates.len(),
        tokens_saved: plan.tokens_saved,
        pruned: plan.candidates.clone(),
    })
}

/// `pruneSupersededToolResults` (spec: compaction §6.5): plans and applies the stale pass.
pub fn prune_superseded_tool_results(
    session: &mut Session,
    cfg: &PruneConfig,
) -> Result<PruneReport> {
    let plan = plan_superseded_tool_results(session, cfg)?;
    apply_prune(session, &plan)
}

/// `pruneToolOutputs` (spec: compaction §6.6): plans and applies the threshold prune.
pub fn prune_tool_outputs(session: &mut Session, cfg: &PruneConfig) -> Result<PruneReport> {
    let plan = plan_tool_outputs(session, cfg)?;
    apply_prune(session, &plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prune(line: &str, notice: &str, now: i64) -> Option<String> {
        let start = line.find("\"message\":")? + "\"message\":".len();
        let end = crate::support::json::scan::skip_value(line.as_bytes(), start).ok()?;
        pruned_line(line, start..end, notice, now)
    }

    #[test]
    fn pruned_line_splices_content_and_stamp() {
        let line = r#"{"type":"message","id":"a","message":{"role":"toolResult","toolCallId":"c","content":[{"type":"text","text":"long\nout"},{"type":"image","data":"x","mimeType":"image/png"}],"isError":false,"details":{"k":1}},"extra":true}"#;
        assert_eq!(
            prune(line, SUPERSEDED_NOTICE, 42).unwrap(),
            r#"{"type":"message","id":"a","message":{"role":"toolResult","toolCallId":"c","content":[{"type":"text","text":"[Superseded by a newer read of this file]"}],"isError":false,"details":{"k":1},"prunedAt":42},"extra":true}"#
        );
        // An existing non-numeric `prunedAt` is replaced in place; a missing `content` is
        // appended before the stamp; notices are JSON-escaped.
        let line = r#"{"message":{"role":"toolResult","prunedAt":null ,"isError":false}}"#;
        assert_eq!(
            prune(line, "a \"q\"", 7).unwrap(),
            r#"{"message":{"role":"toolResult","prunedAt":7 ,"isError":false,"content":[{"type":"text","text":"a \"q\""}]}}"#
        );
        assert_eq!(prune(r#"{"message":[1]}"#, "n", 1), None);
    }

    #[test]
    fn keys_are_written_like_the_reference() {
        let mut k = String::new();
        assert_eq!(write_key("a.ts:1-2", &mut k), Some(Some(4)));
        assert_eq!(k, "a.ts\u{0}1-2");
        assert_eq!(write_key("a.ts:raw", &mut k), Some(None));
        assert_eq!(k, "a.ts\u{1}raw");
        assert_eq!(write_key("a.ts", &mut k), Some(None));
        assert_eq!(k, "a.ts");
        assert_eq!(write_key("local://x", &mut k), None);
        assert_eq!(write_key("", &mut k), None);
    }
}
