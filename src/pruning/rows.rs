//! The branch as pruning sees it (spec: compaction §6.1, §6.5): one row per tool result with the
//! per-entry facts the passes test, the `read` call each answers, and the branch-wide queries
//! (protection, keep boundary, suffix tokens, idleness).

use super::PruneConfig;
use crate::error::Result;
use crate::session::message::Role;
use crate::session::{EntryKind, FileCalls, FileTool, ResultFacts, Session};
use crate::summary::fileops::strip_read_selector;
use crate::tokens::EstimateOptions;
use rustc_hash::FxHashMap;
use std::rc::Rc;

/// One tool result on the branch, with what the passes test in their loops kept inline.
pub(super) struct Row<'a> {
    /// Position on the branch.
    pub(super) pos: usize,
    /// Entry index.
    pub(super) index: usize,
    pub(super) tokens: u64,
    pub(super) pruned: bool,
    pub(super) useless: bool,
    pub(super) is_error: bool,
    pub(super) omitted: bool,
    /// The `read` call it answers: (index into `Branch::held`, index of the call there).
    read_call: Option<(u32, u32)>,
    /// Borrowed from the entry's line where its facts were recorded: a pass over a freshly
    /// opened branch allocates nothing per result.
    pub(super) facts: ResultFacts<'a>,
}

/// The branch, its tool results and the `read` calls they answer.
pub(super) struct Branch<'a> {
    pub(super) session: &'a Session,
    pub(super) cfg: &'a PruneConfig,
    path: std::rc::Rc<Vec<usize>>,
    /// Position before which nothing is pruned (spec: compaction §6.5 step 3): the position of
    /// the boundary entry, 0 when absent or not on the branch.
    pub(super) boundary: usize,
    pub(super) rows: Vec<Row<'a>>,
    /// File calls of the assistants that some result's `read` call belongs to.
    held: Vec<FileCalls>,
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
            if session.entries()[i].role() != Some(Role::Assistant)
                || !session.may_have_read_call(i)
            {
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

/// The forward walk of [`Branch::new`]: what it carries from entry to entry. Its steps are
/// loop bodies of their own (issue 42, docs/decisions/performance-notes.md#loop-bodies).
struct Walk<'a> {
    session: &'a Session,
    cfg: &'a PruneConfig,
    /// `read` results are paired with their calls ([`needs_read_calls`]).
    pair: bool,
    every_result: bool,
    rows: Vec<Row<'a>>,
    held: Vec<FileCalls>,
    /// The calls of the last assistant and, once one of its reads was paired, their
    /// index in `held`.
    current: Option<(FileCalls, Option<u32>)>,
    all: Option<AllReads>,
}

impl<'a> Walk<'a> {
    /// An assistant message: its `read` calls are the ones the results after it answer.
    #[inline(never)]
    fn assistant(&mut self, index: usize) {
        let session = self.session;
        if !session.may_have_read_call(index) {
            self.current = None;
            return;
        }
        self.current = session
            .file_calls(index)
            .filter(|c| c.iter().any(|c| c.tool == FileTool::Read))
            .map(|c| (c, None));
    }

    /// A tool result at `pos` of `path`: its row, when the pass wants it.
    #[inline(never)]
    fn result(&mut self, path: &[usize], pos: usize, index: usize) {
        let session = self.session;
        let Some(facts) = session.result_facts(index) else {
            return;
        };
        let mut read_call = None;
        if self.pair {
            let id = &*facts.tool_call_id;
            if let Some((calls, at)) = &mut self.current {
                if let Some(k) = calls
                    .iter()
                    .position(|c| c.tool == FileTool::Read && *c.id == *id)
                {
                    let held = &mut self.held;
                    let h = *at.get_or_insert_with(|| {
                        held.push(Rc::clone(calls));
                        held.len() as u32 - 1
                    });
                    read_call = Some((h, k as u32));
                }
            }
            if read_call.is_none() && &*facts.tool_name == "read" {
                let held = &mut self.held;
                let all = self
                    .all
                    .get_or_insert_with(|| AllReads::build(session, path, held));
                read_call = all.by_id.get(id).map(|&n| all.calls[n as usize]);
            }
        }
        let cfg = self.cfg;
        let wanted = self.every_result
            || (cfg.supersede && read_call.is_some())
            || (cfg.prune_useless && facts.useless);
        if !wanted {
            return;
        }
        self.rows.push(Row {
            pos,
            index,
            tokens: session.entry_tokens(index, EstimateOptions::default()),
            pruned: facts.pruned,
            useless: facts.useless,
            is_error: facts.is_error,
            omitted: facts.context_omitted,
            read_call,
            facts,
        });
    }
}

impl<'a> Branch<'a> {
    /// Collects the tool results of the branch in one forward walk. A result is paired with
    /// its call in the nearest assistant before it; only when that fails for a `read` result
    /// are all calls of the branch looked up (spec: compaction §6.1 "call found by id among
    /// all assistant tool calls on the branch").
    ///
    /// With `every_result` false (the stale pass) only results that can be superseded or are
    /// flagged useless are kept. Results before position `from` are left out: the walk
    /// starts at the last assistant before it, so the results it keeps pair as in a walk from
    /// the start.
    fn new(
        session: &'a Session,
        cfg: &'a PruneConfig,
        path: std::rc::Rc<Vec<usize>>,
        every_result: bool,
        from: usize,
        boundary: usize,
    ) -> Branch<'a> {
        let entries = session.entries();
        let pair = needs_read_calls(cfg);
        let walk_from = path[..from]
            .iter()
            .rposition(|&i| entries[i].role() == Some(Role::Assistant))
            .unwrap_or(from);
        let mut walk = Walk {
            session,
            cfg,
            pair,
            every_result,
            rows: Vec::new(),
            held: Vec::new(),
            current: None,
            all: None,
        };
        for (pos, &index) in path.iter().enumerate().skip(walk_from) {
            let e = &entries[index];
            match e.role() {
                Some(Role::Assistant) if pair => walk.assistant(index),
                Some(Role::ToolResult) if e.kind() == EntryKind::Message && pos >= from => {
                    walk.result(&path, pos, index)
                }
                _ => {}
            }
        }
        let Walk { rows, held, .. } = walk;
        Branch {
            session,
            cfg,
            path,
            boundary,
            rows,
            held,
        }
    }

    /// The path of the `read` call a result answers.
    pub(super) fn read_path(&self, row: &Row<'_>) -> Option<&str> {
        let (h, k) = row.read_call?;
        Some(&self.held[h as usize][k as usize].path)
    }

    /// The protection matcher (spec: compaction §6.1): protected tool names, `read` results
    /// of `skill://` paths, reads of the host's protected path (the plan file).
    pub(super) fn protected(&self, row: &Row<'_>) -> bool {
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

    /// Tokens of the `message` entries strictly after each branch position in `wanted`
    /// (ascending positions), in the same order.
    pub(super) fn suffixes(&self, wanted: &[usize]) -> Vec<u64> {
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

    /// True when the last `message` entry has a numeric message `timestamp` at least
    /// `idleFlushMs` before `now` (spec: compaction §6.5 step 2).
    pub(super) fn idle(&self) -> bool {
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
/// With `bounded` the rows start at the keep boundary: a pass prunes nothing before it, and
/// walking results newest → oldest, what comes before it decides nothing after it (marks,
/// the protect window), so a pass over the tail of a compacted session reads only the tail.
pub(super) fn with_branch<T>(
    session: &Session,
    cfg: &PruneConfig,
    every_result: bool,
    bounded: bool,
    f: impl FnOnce(&Branch<'_>) -> T,
) -> Result<T> {
    let path = session.path_of_shared(cfg.leaf.as_deref())?;
    let boundary = cfg.keep_boundary.position(session, &path);
    #[cfg(test)]
    let bounded = bounded && !UNBOUNDED.with(std::cell::Cell::get);
    let from = if bounded { boundary } else { 0 };
    Ok(f(&Branch::new(
        session,
        cfg,
        path,
        every_result,
        from,
        boundary,
    )))
}

#[cfg(test)]
thread_local! {
    /// Tests: every branch from its start (the plans must not change).
    pub(super) static UNBOUNDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}
