//! A compaction prepared in the background and committed after the branch grew (spec:
//! compaction §13): the commit keeps what was appended after the summary when the summarized
//! prefix is untouched, and refuses (`E_STALE_PLAN`, the session unchanged) otherwise.

use crate::common::Jsonl;
use ctxfold::compaction::commit::commit_compaction;
use ctxfold::compaction::plan::{plan_compaction, CompactionPlan, Fit, PlanOptions};
use ctxfold::context::{build_context, BuildOptions};
use ctxfold::session::{CompactionBody, Session};
use ctxfold::settings::CompactionSettings;
use ctxfold::Error;
use proptest::prelude::*;
use serde_json::{json, Number};

/// `turns` user/assistant pairs, each message `size` characters.
fn session(turns: usize, size: usize) -> Session {
    let mut j = Jsonl::new();
    let mut parent: Option<String> = None;
    for t in 0..turns {
        let u = format!("u{t}");
        let a = format!("a{t}");
        j = j.user(&u, parent.as_deref(), &format!("{t} {}", "q".repeat(size)));
        j = j.assistant(&a, Some(&u), &format!("{t} {}", "r".repeat(size)));
        parent = Some(a);
    }
    j.load()
}

fn speculative() -> PlanOptions {
    PlanOptions {
        speculative: true,
        ..PlanOptions::default()
    }
}

fn settings(keep: u64) -> CompactionSettings {
    CompactionSettings {
        keep_recent_tokens: keep,
        anchor_tokens: 0,
        ..CompactionSettings::default()
    }
}

fn answer_all(plan: &mut CompactionPlan, s: &Session) {
    while !plan.is_complete() {
        let ids: Vec<String> = plan.pending().iter().map(|r| r.id.clone()).collect();
        for id in ids {
            plan.answer(s, &id, "short summary").unwrap();
        }
    }
}

/// A compaction some other actor appended, keeping from `first_kept`.
fn other_compaction(first_kept: &str) -> CompactionBody {
    CompactionBody {
        summary: "other".into(),
        short_summary: None,
        first_kept_entry_id: first_kept.to_string(),
        tokens_before: Number::from(1),
        tokens_after: None,
        method: None,
        provider_replay_through_entry_id: None,
        details: None,
        preserve_data: None,
        from_extension: false,
        warning: None,
    }
}

/// The entries the context at the current leaf is built from: the compaction, then the
/// entries of its messages.
fn context_entries(s: &Session) -> Vec<String> {
    let ctx = build_context(s, &BuildOptions::default()).unwrap();
    ctx.messages
        .iter()
        .map(|m| s.entries()[m.entry].id().to_string())
        .collect()
}

/// What the session may do between the plan and its commit.
#[derive(Debug, Clone)]
enum Change {
    /// Appends a user message (to the current leaf).
    Append(usize),
    /// Rewrites the line of the `n`-th entry on the branch (a prune or shake does this).
    Edit(usize),
    /// Moves the leaf to the `n`-th entry on the branch, then appends there.
    Move(usize),
    /// Appends a compaction after the leaf.
    Compaction,
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        4 => (1usize..400).prop_map(Change::Append),
        1 => (0usize..64).prop_map(Change::Edit),
        1 => (0usize..64).prop_map(Change::Move),
        1 => Just(Change::Compaction),
    ]
}

#[test]
fn a_plan_accepts_answers_after_appends_and_keeps_them_after_the_summary() {
    let mut s = session(8, 400);
    let mut plan = plan_compaction(&s, &settings(400), speculative()).unwrap();
    let leaf_id = s.leaf_id().unwrap().to_string();
    s.append_message(
        json!({"role":"user","content":"meanwhile","timestamp":9}),
        9,
    )
    .unwrap();
    let appended = s.leaf_id().unwrap().to_string();
    // The strict plan refuses; the background one answers and commits.
    let strict = plan_compaction(&session(8, 400), &settings(400), PlanOptions::default());
    assert!(strict.is_ok());
    answer_all(&mut plan, &s);
    assert_eq!(
        plan.fit(&s).unwrap(),
        Fit::Grown {
            leaf: s.leaf().unwrap()
        }
    );
    let first_kept = plan.preparation.first_kept_entry_id.clone();
    let committed = commit_compaction(&mut s, &plan, 10).unwrap();
    let got = context_entries(&s);
    assert_eq!(got[0], committed.id);
    let kept_from = got.iter().position(|e| *e == first_kept).unwrap();
    assert_eq!(kept_from, 1, "the summary, then the kept entries: {got:?}");
    assert_eq!(got.last(), Some(&appended));
    assert!(got.contains(&leaf_id));
    let entry = s.entry(committed.index).unwrap();
    assert_eq!(entry.parent_id(), Some(appended.as_str()));
}

/// A compaction after the plan's leaf makes the plan stale while it is on the branch; moving
/// the leaf back to the plan's leaf leaves it on a sibling branch, and the plan commits there
/// (spec: compaction §13, "still on the branch with no later compaction"). The regression a
/// CI run found: the test had kept such a plan stale.
#[test]
fn a_compaction_left_on_a_sibling_branch_does_not_make_the_plan_stale() {
    let mut s = session(7, 200);
    let mut plan = plan_compaction(&s, &settings(120), speculative()).unwrap();
    let leaf_id = s.leaf_id().unwrap().to_string();
    answer_all(&mut plan, &s);
    s.append_compaction(&other_compaction(&leaf_id), 9).unwrap();
    let before = s.to_bytes();
    match commit_compaction(&mut s, &plan, 10) {
        Err(Error::StalePlan { .. }) => assert_eq!(s.to_bytes(), before),
        other => panic!("a compaction after the plan's leaf: {other:?}"),
    }
    s.branch(&leaf_id).unwrap();
    s.append_message(json!({"role":"user","content":"moved","timestamp":11}), 11)
        .unwrap();
    let moved = s.leaf_id().unwrap().to_string();
    let committed = commit_compaction(&mut s, &plan, 12).unwrap();
    let got = context_entries(&s);
    assert_eq!(got[0], committed.id);
    assert_eq!(got.last(), Some(&moved));
    let committed_entry = s.entry(committed.index).unwrap();
    assert_eq!(committed_entry.parent_id(), Some(moved.as_str()));
}

#[test]
fn a_grown_commit_that_would_not_shrink_the_context_is_stale() {
    let mut s = session(6, 50);
    let mut plan = plan_compaction(&s, &settings(60), speculative()).unwrap();
    s.append_message(json!({"role":"user","content":"x","timestamp":9}), 9)
        .unwrap();
    // A summary longer than everything it replaces.
    while !plan.is_complete() {
        let ids: Vec<String> = plan.pending().iter().map(|r| r.id.clone()).collect();
        for id in ids {
            plan.answer(&s, &id, &"long ".repeat(40)).unwrap();
        }
    }
    let before = s.to_bytes();
    match commit_compaction(&mut s, &plan, 10) {
        Err(Error::StalePlan { reason }) => assert!(reason.contains("branch grew"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.to_bytes(), before);
}

#[test]
fn the_recovery_band_of_the_plans_window_bounds_a_grown_commit() {
    let mut s = session(10, 400);
    let options = PlanOptions {
        context_window: 6_000,
        ..speculative()
    };
    let mut plan = plan_compaction(&s, &settings(300), options).unwrap();
    // The appended turn alone is over 0.8 · threshold of a 6,000-token window.
    s.append_message(
        json!({"role":"user","content":"z".repeat(40_000),"timestamp":9}),
        9,
    )
    .unwrap();
    answer_all(&mut plan, &s);
    let before = s.to_bytes();
    match commit_compaction(&mut s, &plan, 10) {
        Err(Error::StalePlan { reason }) => assert!(reason.contains("recovery band"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.to_bytes(), before);
}

#[test]
fn only_a_context_full_plan_is_prepared_in_the_background() {
    let s = session(6, 400);
    let handoff = CompactionSettings {
        strategy: ctxfold::settings::Strategy::Handoff,
        ..settings(400)
    };
    assert!(matches!(
        plan_compaction(&s, &handoff, speculative()),
        Err(Error::Settings { .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A plan prepared at leaf L, any appends after L, commit ⇒ the context is the summary,
    /// the kept entries and the appended ones. Any edit of the summarized prefix, a leaf move
    /// off L's branch or a compaction after L ⇒ stale, the session unchanged.
    #[test]
    fn grown_commits_keep_the_appended_entries_and_never_commit_stale(
        turns in 4usize..12,
        size in 200usize..800,
        keep_turns in 1usize..3,
        changes in proptest::collection::vec(change(), 0..6),
    ) {
        let mut s = session(turns, size);
        let keep = (keep_turns as u64) * (size as u64 / 4 + 10) * 2;
        let Ok(mut plan) = plan_compaction(&s, &settings(keep), speculative()) else {
            return Ok(());
        };
        let prep = plan.preparation.clone();
        let snapshot_path: Vec<usize> = prep.path.clone();
        let summarized: Vec<usize> = prep
            .messages_to_summarize
            .iter()
            .chain(&prep.turn_prefix)
            .copied()
            .collect();
        let mut stale = false;
        let mut tick = 100;
        for c in &changes {
            tick += 1;
            match c {
                Change::Append(n) => {
                    s.append_message(json!({"role":"user","content":"m".repeat(*n),"timestamp":tick}), tick).unwrap();
                }
                Change::Edit(n) => {
                    let branch = s.path_to(s.leaf().unwrap());
                    let i = branch[n % branch.len()];
                    if s.entries()[i].kind() != ctxfold::session::EntryKind::Message {
                        continue;
                    }
                    s.set_entry_field(i, &["message"], "timestamp", &json!(tick)).unwrap();
                    stale |= summarized.contains(&i);
                }
                Change::Move(n) => {
                    let branch = s.path_to(s.leaf().unwrap());
                    let i = branch[n % branch.len()];
                    let id = s.entries()[i].id().to_string();
                    s.branch(&id).unwrap();
                    s.append_message(json!({"role":"user","content":"moved","timestamp":tick}), tick).unwrap();
                }
                Change::Compaction => {
                    let body = other_compaction(s.leaf_id().unwrap());
                    s.append_compaction(&body, tick).unwrap();
                }
            }
        }
        // An edit of the summarized prefix stays stale. A leaf move or a compaction counts by
        // where the leaf ends: off the plan leaf's branch, or a compaction after the plan's leaf
        // on the current branch (a compaction left behind on a sibling branch does not; spec:
        // compaction §13, "still on the branch with no later compaction").
        let leaf_path = s.path_to(s.leaf().unwrap());
        let stale = stale
            || match leaf_path.iter().position(|&i| i == prep.leaf) {
                None => true,
                Some(at) => leaf_path[at + 1..]
                    .iter()
                    .any(|&i| s.entries()[i].kind() == ctxfold::session::EntryKind::Compaction),
            };
        let answered = (|| -> Result<(), Error> {
            while !plan.is_complete() {
                let ids: Vec<String> = plan.pending().iter().map(|r| r.id.clone()).collect();
                for id in ids {
                    plan.answer(&s, &id, "brief")?;
                }
            }
            Ok(())
        })();
        let before = s.to_bytes();
        let result = answered.and_then(|()| commit_compaction(&mut s, &plan, 1_000));
        match result {
            Err(Error::StalePlan { reason }) => {
                prop_assert_eq!(s.to_bytes(), before);
                // Without a stale change, only the size check of a grown branch refuses.
                prop_assert!(stale || reason.contains("branch grew"), "{}", reason);
            }
            Err(e) => prop_assert!(false, "unexpected error {e:?}"),
            Ok(committed) => {
                prop_assert!(!stale, "a stale plan was committed: {changes:?}");
                let leaf_path = s.path_to(s.leaf().unwrap());
                // The new compaction sits at the end of the branch the plan's leaf is on.
                prop_assert_eq!(s.leaf(), Some(committed.index));
                prop_assert!(leaf_path.contains(&prep.leaf));
                // The context: summary, then every message entry from the first kept one on.
                let from = leaf_path.iter().position(|&i| i == prep.first_kept).unwrap();
                let want: Vec<String> = std::iter::once(committed.id.clone())
                    .chain(
                        leaf_path[from..]
                            .iter()
                            .filter(|&&i| s.entries()[i].kind() == ctxfold::session::EntryKind::Message)
                            .map(|&i| s.entries()[i].id().to_string()),
                    )
                    .collect();
                prop_assert_eq!(context_entries(&s), want);
                // The summary covers exactly the entries before the kept range of the snapshot.
                let cut = snapshot_path.iter().position(|&i| i == prep.first_kept).unwrap();
                let mut covered: Vec<usize> = summarized.clone();
                covered.sort_unstable();
                let mut before_cut: Vec<usize> = snapshot_path[..cut]
                    .iter()
                    .copied()
                    .filter(|&i| s.entries()[i].kind() == ctxfold::session::EntryKind::Message)
                    .collect();
                before_cut.sort_unstable();
                prop_assert_eq!(covered, before_cut);
            }
        }
    }
}
