//! Configuration of both pruning passes (spec: compaction §6.1, §6.5, §6.6): the engine's
//! defaults, what the coding agent's session passes, and the JSON form of the reference's configs.

use super::{
    DEFAULT_IDLE_FLUSH_MS, DEFAULT_MINIMUM_SAVINGS, DEFAULT_PROTECTED_TOOL, DEFAULT_PROTECT_TOKENS,
    DEFAULT_SUFFIX_TOKEN_LIMIT, SESSION_CACHE_WARM_SUFFIX_TOKENS, SESSION_IDLE_FLUSH_MS,
    SKILL_READ_MATCHER,
};
use crate::error::{Error, Result};
use crate::session::{EntryKind, Session};
use crate::settings::CompactionSettings;
use crate::support::json::fields;
use serde_json::{Map, Value};
use std::fmt;
use std::rc::Rc;

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

impl KeepBoundary {
    /// Position on `path` before which nothing is touched: the position of the boundary
    /// entry, 0 when there is none or it is not on the path.
    pub fn position(&self, session: &Session, path: &[usize]) -> usize {
        let entries = session.entries();
        let id = match self {
            KeepBoundary::Start => return 0,
            KeepBoundary::Entry(id) => id.clone(),
            KeepBoundary::LatestCompaction => {
                let latest = path
                    .iter()
                    .rev()
                    .find(|&&i| entries[i].kind() == EntryKind::Compaction);
                match latest {
                    Some(&i) => session.first_kept_id(i).to_string(),
                    None => return 0,
                }
            }
        };
        session
            .index_of(&id)
            .and_then(|at| session.position_on_path(path, at))
            .unwrap_or(0)
    }
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

pub(crate) fn bad(field: &str, reason: &str) -> Error {
    Error::Settings {
        field: field.to_string(),
        reason: reason.to_string(),
    }
}

/// `keepBoundaryId` of a JSON config: an entry id, or `false` for the start of the branch.
pub(crate) fn keep_boundary_of(f: &str, v: &Value) -> Result<KeepBoundary> {
    match v {
        Value::Bool(false) => Ok(KeepBoundary::Start),
        Value::String(s) if !s.is_empty() => Ok(KeepBoundary::Entry(s.clone())),
        _ => Err(bad(
            f,
            "expected an entry id, or false for the start of the branch",
        )),
    }
}

/// `protectedTools` of a JSON config: the tool names, and which of the named `matchers`
/// (e.g. `"isSkillReadToolResult"`) the list holds, as bit `k` for `matchers[k]`.
pub(crate) fn protected_tools_of(
    f: &str,
    v: &Value,
    matchers: &[&str],
) -> Result<(Vec<String>, u32)> {
    let list = v
        .as_array()
        .ok_or_else(|| bad(f, "expected an array of tool names"))?;
    let mut tools = Vec::new();
    let mut matched = 0;
    for t in list {
        match t.as_str() {
            Some(name) if matchers.contains(&name) => {
                matched |= 1 << matchers.iter().position(|m| *m == name).unwrap_or(0)
            }
            Some(name) if !name.is_empty() => tools.push(name.to_string()),
            _ => return Err(bad(f, "expected non-empty tool name strings")),
        }
    }
    Ok((tools, matched))
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
                "protectTokens" => c.protect_tokens = fields::safe_count(f, v)?,
                "minimumSavings" => c.minimum_savings = fields::safe_count(f, v)?,
                "suffixTokenLimit" => c.suffix_token_limit = fields::safe_count(f, v)?,
                "idleFlushMs" => c.idle_flush_ms = fields::safe_count(f, v)?,
                "now" => c.now = fields::safe_count(f, v)? as i64,
                "cacheWarmSuffixTokens" => {
                    c.cache_warm_suffix_tokens = Some(fields::safe_count(f, v)?)
                }
                "pruneUseless" => c.prune_useless = fields::boolean(f, v)?,
                "protectedPath" => {
                    c.protected_path = Some(fields::non_empty_string(f, v)?.to_string())
                }
                "leafId" => c.leaf = Some(fields::non_empty_string(f, v)?.to_string()),
                "supersedeKey" => {
                    c.supersede = match v {
                        Value::Bool(b) => *b,
                        Value::String(s) if s == "readToolSupersedeKey" => true,
                        _ => {
                            return Err(bad(f, "expected true, false or \"readToolSupersedeKey\""))
                        }
                    }
                }
                "keepBoundaryId" => c.keep_boundary = keep_boundary_of(f, v)?,
                "protectedTools" => {
                    let (tools, matched) = protected_tools_of(f, v, &[SKILL_READ_MATCHER])?;
                    c.protected_tools = tools;
                    c.protect_skill_reads = matched & 1 != 0;
                }
                _ => return Err(bad(f, "unknown pruning setting (check the spelling)")),
            }
        }
        Ok(c)
    }
}
