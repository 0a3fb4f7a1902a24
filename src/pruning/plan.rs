//! Pruning plans (spec: compaction §6.3–§6.6): which results are superseded or useless, and the
//! candidates of the stale pass and of the threshold prune. Pure: the session is only read.

use super::keys::write_key;
use super::rows::{with_branch, Branch, Row};
use super::{age_notice, prune_savings, PruneConfig, PruneSubject};
use super::{MIN_PRUNE_TOKENS, SUPERSEDED_NOTICE, USELESS_NOTICE};
use crate::error::Result;
use crate::session::Session;
use rustc_hash::FxHashMap;

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
    #[cfg(test)]
    pub(super) fn to_json(&self) -> serde_json::Value {
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
///
/// [`apply_prune`]: super::apply_prune
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

    /// The first entry applying it changes (index and id), where the provider's prompt cache
    /// stops matching (issue 39 item 5); `None` for an empty plan.
    pub fn first_changed(&self) -> Option<(usize, &str)> {
        self.candidates
            .iter()
            .min_by_key(|c| c.index)
            .map(|c| (c.index, c.id.as_str()))
    }
}

impl Branch<'_> {
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

    fn candidate(&self, row: &Row<'_>, reason: PruneReason) -> PruneCandidate {
        let notice = match reason {
            PruneReason::Superseded => SUPERSEDED_NOTICE.into(),
            PruneReason::Useless => USELESS_NOTICE.into(),
            PruneReason::Age => age_notice(row.tokens),
        };
        PruneCandidate {
            index: row.index,
            id: self.session.entries()[row.index].id().into(),
            tool_name: (*row.facts.tool_name).into(),
            tool_call_id: (*row.facts.tool_call_id).into(),
            tokens_before: row.tokens,
            reason,
            savings: prune_savings(row.tokens, &notice),
            notice,
        }
    }
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
    with_branch(session, &cfg, false, false, |b| {
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
    with_branch(session, &cfg, false, false, |b| {
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
    with_branch(session, cfg, false, true, |b| {
        let marks = b.marks();
        let marked: Vec<usize> = (0..b.rows.len()).filter(|&r| marks[r].is_some()).collect();
        if marked.is_empty() {
            return plan_of(Vec::new(), cfg.now);
        }
        let boundary = b.boundary;
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
    with_branch(session, cfg, true, true, |b| {
        let marks = b.marks();
        let boundary = b.boundary;
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

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::pruning::KeepBoundary;
    use crate::session::LoadOptions;

    /// The passes read the branch from the keep boundary on: their plans are those of a walk
    /// from the start, on compacted sessions with every setting that reads what comes before.
    #[test]
    fn plans_from_the_boundary_equal_plans_from_the_start() {
        let mut planned = 0;
        for (seed, every) in [(5, 8_000), (6, 30_000), (7, 120_000)] {
            let opts = ctxfold_testkit::GenOptions {
                seed,
                entries: 3_000,
                compaction_every_tokens: Some(every),
                ..ctxfold_testkit::GenOptions::default()
            };
            let s =
                Session::load(ctxfold_testkit::generate(&opts), LoadOptions::default()).unwrap();
            let last_kept = (0..s.len())
                .rev()
                .find(|&i| s.entries()[i].kind() == crate::session::EntryKind::Compaction)
                .map(|i| s.first_kept_id(i).to_string());
            let path = s.path_of(None).unwrap();
            let middle = s.entries()[path[path.len() / 2]].id().to_string();
            for cfg in [
                PruneConfig::default(),
                PruneConfig {
                    supersede: true,
                    protect_tokens: 2_000,
                    minimum_savings: 0,
                    ..PruneConfig::default()
                },
                PruneConfig {
                    supersede: true,
                    cache_warm_suffix_tokens: Some(4_000),
                    protect_tokens: 0,
                    keep_boundary: KeepBoundary::Entry(last_kept.clone().unwrap_or_default()),
                    ..PruneConfig::default()
                },
                PruneConfig {
                    supersede: true,
                    now: i64::MAX,
                    ..PruneConfig::default()
                },
                PruneConfig {
                    supersede: true,
                    protect_tokens: 0,
                    minimum_savings: 0,
                    now: i64::MAX,
                    keep_boundary: KeepBoundary::Entry(middle.clone()),
                    ..PruneConfig::default()
                },
            ] {
                let plans = |s: &Session| {
                    (
                        plan_tool_outputs(s, &cfg).unwrap(),
                        plan_superseded_tool_results(s, &cfg).unwrap(),
                    )
                };
                let bounded = plans(&s);
                super::super::rows::UNBOUNDED.with(|u| u.set(true));
                let whole = plans(&s);
                super::super::rows::UNBOUNDED.with(|u| u.set(false));
                assert_eq!(bounded, whole, "seed {seed}, {cfg:?}");
                planned += bounded.0.candidates.len() + bounded.1.candidates.len();
            }
        }
        assert!(planned > 1_000, "{planned}");
    }
}
