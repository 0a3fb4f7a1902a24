//! The dead-end rescue's first tier (spec: compaction §8.3, §8.5; issue 36 finding 3): the
//! latest snapcompact archive of a branch, oversized and with nothing left to summarize after
//! it, is rebuilt with fewer frames (`compaction::snapcompact_rescue`) under the limit the walk
//! asks for, or refused with the session unchanged.

use crate::common::fallbacks;
use ctxfold::archive::get_preserved_archive;
use ctxfold::compaction::commit::{commit_snapcompact, snapcompact_options};
use ctxfold::compaction::plan::{plan_compaction, PlanOptions};
use ctxfold::compaction::snapcompact_rescue::plan_archive_rebuild;
use ctxfold::context::{build_context, BuildOptions};
use ctxfold::render::shape::resolve::Target;
use ctxfold::session::{NewSession, SequentialIds};
use ctxfold::settings::CompactionSettings;
use ctxfold::Session;
use serde_json::{json, Value};

const WINDOW: u64 = 200_000;

fn words(seed: usize, tokens: usize) -> String {
    const W: [&str; 8] = [
        "alpha", "beta", "gamma", "delta", "parser", "buffer", "cache", "test",
    ];
    let mut s = String::new();
    let mut i = seed;
    while s.len() < tokens * 4 {
        s.push_str(W[i % W.len()]);
        s.push(' ');
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    s
}

fn settings() -> CompactionSettings {
    CompactionSettings::from_json(&json!({"keepRecentTokens": 4_000, "strategy": "snapcompact"}))
        .unwrap()
}

fn plan_options() -> PlanOptions {
    PlanOptions {
        context_window: WINDOW,
        model: Target {
            id: Some("gemini-2.5-pro".into()),
            api: Some("google-generative-ai".into()),
        },
        ..PlanOptions::default()
    }
}

/// A long history archived by snapcompact, then one more user message after the archive.
fn archived_session() -> Session {
    let mut s = Session::create(
        NewSession {
            id: "rescue".into(),
            cwd: "/repo".into(),
            now: 1_000,
            parent_session: None,
        },
        Box::new(SequentialIds::new()),
    );
    let mut now = 1_000;
    for turn in 0..40 {
        now += 1_000;
        let text = format!("[[u{turn}]] {}", words(turn, 3_000));
        s.append_message(
            json!({"role": "user", "content": text, "timestamp": now}),
            now,
        )
        .unwrap();
        now += 1_000;
        s.append_message(
            json!({"role": "assistant", "content": [{"type": "text", "text": words(turn + 99, 150)}],
                   "provider": "google", "model": "gemini-2.5-pro", "stopReason": "stop",
                   "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
                   "timestamp": now}),
            now,
        )
        .unwrap();
    }
    let plan = plan_compaction(&s, &settings(), plan_options()).unwrap();
    let options = snapcompact_options(&plan).unwrap();
    commit_snapcompact(&mut s, &plan, &options, &fallbacks(), now + 1).unwrap();
    s.append_message(
        json!({"role": "user", "content": format!("[[u40]] {}", words(40, 2_000)), "timestamp": now + 2}),
        now + 2,
    )
    .unwrap();
    s
}

fn live_tokens(s: &Session) -> u64 {
    build_context(s, &BuildOptions::default())
        .unwrap()
        .estimated_tokens(s)
}

/// The latest compaction entry of the branch, as JSON.
fn latest_compaction(s: &Session) -> Value {
    let ctx = build_context(s, &BuildOptions::default()).unwrap();
    serde_json::from_str(&s.entry_json(ctx.compaction.expect("a compaction"))).unwrap()
}

fn frames(entry: &Value) -> usize {
    get_preserved_archive(entry.get("preserveData")).map_or(0, |a| a.frames.len())
}

#[test]
fn an_oversized_archive_is_rebuilt_with_fewer_frames_under_the_limit() {
    let mut s = archived_session();
    let stale = latest_compaction(&s);
    let stale_frames = frames(&stale);
    assert!(
        stale_frames > 4,
        "the archive has frames to lose: {stale_frames}"
    );
    let before = live_tokens(&s);
    // Three frames' worth below the context now.
    let limit = before - 3 * 5_024;
    let plan = plan_archive_rebuild(&s, &settings(), plan_options()).unwrap();
    assert!(plan.preparation.messages_to_summarize.is_empty());
    let mut options = snapcompact_options(&plan).unwrap();
    // A host that measured its provider at the estimate: a rebuild trades frames for text,
    // which an unmeasured rate weighs at 3x too (and these dense words lose there).
    options.text_ratio = Some(1.0);
    options.limit_tokens = Some(limit);
    let entries = s.len();
    let c = commit_snapcompact(&mut s, &plan, &options, &fallbacks(), 99_000).unwrap();
    assert_eq!(s.len(), entries + 1, "one compaction entry appended");
    let rebuilt = latest_compaction(&s);
    assert_eq!(rebuilt["id"], Value::from(c.id.clone()));
    assert_eq!(rebuilt["method"], "snapcompact");
    assert_eq!(rebuilt["firstKeptEntryId"], stale["firstKeptEntryId"]);
    assert!(
        frames(&rebuilt) < stale_frames,
        "{} frames, were {stale_frames}",
        frames(&rebuilt)
    );
    let after = live_tokens(&s);
    assert!(after <= limit, "{after} tokens against a limit of {limit}");
    // The message after the archive is still sent verbatim.
    let ctx = build_context(&s, &BuildOptions::default()).unwrap();
    assert!(ctx.to_json(&s).contains("[[u40]]"));
}

#[test]
fn a_rebuild_that_cannot_fit_or_has_no_archive_changes_nothing() {
    let mut s = archived_session();
    let file = s.to_jsonl();
    let plan = plan_archive_rebuild(&s, &settings(), plan_options()).unwrap();
    let mut options = snapcompact_options(&plan).unwrap();
    // Below what the kept tail alone takes: no archive can fit.
    options.limit_tokens = Some(1_000);
    let e = commit_snapcompact(&mut s, &plan, &options, &fallbacks(), 99_000).unwrap_err();
    assert!(
        matches!(e.code().as_str(), "E_NO_REDUCTION" | "E_NOTHING_TO_COMPACT"),
        "{e}"
    );
    assert_eq!(s.to_jsonl(), file, "the session is byte-identical");

    // A branch without a snapcompact archive has nothing to rebuild.
    let mut plain = Session::create(
        NewSession {
            id: "plain".into(),
            cwd: "/repo".into(),
            now: 1,
            parent_session: None,
        },
        Box::new(SequentialIds::new()),
    );
    plain
        .append_message(json!({"role": "user", "content": "hi", "timestamp": 2}), 2)
        .unwrap();
    let e = plan_archive_rebuild(&plain, &settings(), plan_options())
        .map(|_| ())
        .unwrap_err();
    assert_eq!(e.code().as_str(), "E_NOTHING_TO_COMPACT");
}
