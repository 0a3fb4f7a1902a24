//! The dead-end rescue's last tier (spec: compaction §8.3, §8.5; issue 36): a kept tail of
//! attached images that no plan, archive rebuild or shake can reduce is mended by dropping
//! the images (`shake::drop_images`), driven through the core's walk as a host runs it.

use ctxfold::compaction::commit::commit_compaction;
use ctxfold::compaction::plan::{plan_compaction, CompactionPlan, PlanOptions};
use ctxfold::compaction::snapcompact_rescue::plan_archive_rebuild;
use ctxfold::context::{build_context, BuildOptions};
use ctxfold::session::{NewSession, SequentialIds};
use ctxfold::settings::{CompactionSettings, Strategy};
use ctxfold::shake::{apply_shake, drop_images, plan_shake, Preset, ShakeConfig, IMAGE_REMOVED};
use ctxfold::triggers::{CompactionMethod, CompactionReason, ModelInfo, Walk, WalkInput, WalkStep};
use ctxfold::Session;
use serde_json::json;

const WINDOW: u64 = 32_000;
const IMG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

fn model() -> ModelInfo {
    ModelInfo {
        provider: "anthropic".into(),
        id: "claude-sonnet-4-5".into(),
        context_window: WINDOW,
        max_output_tokens: 0,
        accepts_images: true,
    }
}

fn session() -> Session {
    Session::create(
        NewSession {
            id: "images".into(),
            cwd: "/repo".into(),
            now: 1_000,
            parent_session: None,
        },
        Box::new(SequentialIds::new()),
    )
}

fn user(s: &mut Session, text: &str, images: usize, now: i64) {
    let mut content = vec![json!({"type": "text", "text": text})];
    content.extend(
        (0..images).map(|_| json!({"type": "image", "data": IMG, "mimeType": "image/png"})),
    );
    s.append_message(
        json!({"role": "user", "content": content, "timestamp": now}),
        now,
    )
    .unwrap();
}

fn assistant(s: &mut Session, text: &str, now: i64) {
    s.append_message(
        json!({"role": "assistant", "content": [{"type": "text", "text": text}],
               "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "stop",
               "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
               "timestamp": now}),
        now,
    )
    .unwrap();
}

/// `turns` turns of plain text.
fn history(s: &mut Session, turns: i64) {
    for turn in 0..turns {
        let text = format!(
            "turn {turn}: {}",
            "notes on the parser and its cache ".repeat(300)
        );
        user(s, &text, 0, 2_000 + turn * 2_000);
        assistant(s, "Done.", 3_000 + turn * 2_000);
    }
}

fn live(s: &Session) -> u64 {
    build_context(s, &BuildOptions::default())
        .unwrap()
        .estimated_tokens(s)
}

fn plan(s: &Session, strategy: Strategy) -> ctxfold::Result<CompactionPlan> {
    let settings = CompactionSettings {
        strategy,
        ..CompactionSettings::default()
    };
    let options = PlanOptions {
        context_window: WINDOW,
        ..PlanOptions::default()
    };
    plan_compaction(s, &settings, options)
}

/// Answers every summary request of `p`, round after round.
fn answer_all(s: &Session, p: &mut CompactionPlan) {
    for _ in 0..20 {
        let ids: Vec<String> = p.pending().iter().map(|r| r.id.clone()).collect();
        if ids.is_empty() {
            return;
        }
        for id in ids {
            p.answer(s, &id, "## Goal\nLook at the screenshots.")
                .unwrap();
        }
    }
    panic!("the plan never completes");
}

/// Runs a walk of `methods` for `reason` on `s` as a host does; `images_tier` off answers the
/// image drop as if nothing were attached (the walk as it was before the tier). Returns the
/// last step and the images dropped.
fn run(
    s: &mut Session,
    reason: CompactionReason,
    methods: &[CompactionMethod],
    images_tier: bool,
) -> (WalkStep, u64) {
    let mut input = WalkInput::new(reason, CompactionSettings::default(), model());
    input.methods = Some(methods.to_vec());
    input.live_tokens = live(s);
    input.estimated_tokens = live(s);
    let mut walk = Walk::new(input);
    let mut work: Option<CompactionPlan> = None;
    let mut dropped = 0;
    for _ in 0..100 {
        match walk.poll() {
            WalkStep::Plan { strategy, .. } => match plan(s, strategy) {
                Ok(p) => {
                    work = Some(p);
                    walk.handle_planned().unwrap();
                }
                Err(e) => walk
                    .handle_plan_failed(e.code().as_str(), &e.to_string())
                    .unwrap(),
            },
            WalkStep::RebuildArchive { .. } => {
                // No snapcompact archive on this branch: nothing to rebuild.
                let settings = CompactionSettings {
                    strategy: Strategy::Snapcompact,
                    ..CompactionSettings::default()
                };
                let options = PlanOptions {
                    context_window: WINDOW,
                    ..PlanOptions::default()
                };
                assert!(plan_archive_rebuild(s, &settings, options).is_err());
                walk.handle_rebuild_failed().unwrap();
            }
            WalkStep::Shake { preset } => {
                assert_eq!(preset, ctxfold::triggers::ShakePreset::Rescue);
                let shake = plan_shake(s, &ShakeConfig::preset(Preset::Rescue)).unwrap();
                let r = apply_shake(s, &shake, None, 9_000).unwrap();
                let n = (r.tool_results_dropped + r.blocks_dropped) as u64;
                walk.handle_shaken(n, r.tokens_freed, Some(live(s)))
                    .unwrap();
            }
            WalkStep::DropImages => {
                let removed = if images_tier {
                    drop_images(s, None).unwrap().removed
                } else {
                    0
                };
                dropped += removed;
                walk.handle_images_dropped(removed, Some(live(s))).unwrap();
            }
            WalkStep::Summarize { .. } => {
                answer_all(s, work.as_mut().unwrap());
                walk.handle_summarized().unwrap();
            }
            WalkStep::Commit { .. } => {
                let c = commit_compaction(s, &work.take().unwrap(), 9_500)
                    .unwrap_or_else(|e| panic!("commit: {e}"));
                walk.handle_committed(c.tokens_after, Some(live(s)))
                    .unwrap();
            }
            WalkStep::Warn { .. } => {}
            end @ (WalkStep::Done { .. } | WalkStep::Failed { .. } | WalkStep::Skipped { .. }) => {
                return (end, dropped)
            }
        }
    }
    panic!("the walk did not end");
}

/// History, then a prompt that attached twelve screenshots, compacted: the kept tail is the
/// screenshots (more than the progress guard allows), and the leaf is the compaction. Nothing is left to summarize, the
/// archive rebuild has no archive, the rescue shake elides no image. Without the last tier the
/// walk fails with the dead end; with it, the images go and the context fits again.
#[test]
fn a_dead_end_of_attached_images_is_mended_by_dropping_them() {
    let build = || {
        let mut s = session();
        history(&mut s, 4);
        user(&mut s, "Why do these screens differ?", 12, 20_000);
        let mut p = plan(&s, Strategy::ContextFull).unwrap();
        answer_all(&s, &mut p);
        commit_compaction(&mut s, &p, 22_000).unwrap();
        s
    };
    let limit = Walk::new(WalkInput::new(
        CompactionReason::Threshold,
        CompactionSettings::default(),
        model(),
    ))
    .headroom_limit();
    let mut s = build();
    assert!(
        live(&s) > limit,
        "the images fill the context: {}",
        live(&s)
    );
    let code = plan(&s, Strategy::ContextFull)
        .err()
        .map(|e| e.code().as_str().to_string());
    assert_eq!(code.as_deref(), Some("E_ALREADY_COMPACTED"));
    // The walk without the tier: the dead end stands.
    let before = s.to_jsonl();
    let (end, _) = run(
        &mut s,
        CompactionReason::Threshold,
        &[CompactionMethod::Soft],
        false,
    );
    assert!(
        matches!(&end, WalkStep::Failed { code, .. } if code == "E_ALREADY_COMPACTED"),
        "{end:?}"
    );
    assert_eq!(s.to_jsonl(), before, "nothing was reduced");
    // With it: the images are the reduction, and the context is back under the guard.
    let mut s = build();
    let entries = s.len();
    let (end, dropped) = run(
        &mut s,
        CompactionReason::Threshold,
        &[CompactionMethod::Soft],
        true,
    );
    assert_eq!(
        end,
        WalkStep::Done {
            method: Some(CompactionMethod::Shake)
        }
    );
    assert_eq!(dropped, 12);
    assert!(live(&s) <= limit, "{} > {limit}", live(&s));
    assert_eq!(s.len(), entries, "nothing appended");
    let text = s.to_jsonl();
    assert!(!text.contains("\"type\":\"image\""));
    assert!(text.contains("Why do these screens differ?"));
    let reloaded = Session::load(text.into_bytes(), Default::default()).unwrap();
    assert_eq!(reloaded.len(), entries);
}

/// A soft compaction in the walk summarizes the history before a prompt of twelve
/// screenshots, but that kept tail alone leaves no room: the progress guard's rescue shake elides nothing, so the image drop
/// runs; the commit stands and the context fits again.
#[test]
fn a_kept_tail_of_images_after_a_commit_is_dropped() {
    let build = || {
        let mut s = session();
        history(&mut s, 6);
        user(&mut s, "Compare these screenshots.", 12, 20_000);
        s
    };
    let limit = Walk::new(WalkInput::new(
        CompactionReason::Threshold,
        CompactionSettings::default(),
        model(),
    ))
    .headroom_limit();
    // Without the tier: the commit stands but leaves no room.
    let mut s = build();
    let (end, _) = run(
        &mut s,
        CompactionReason::Threshold,
        &[CompactionMethod::Soft],
        false,
    );
    assert_eq!(
        end,
        WalkStep::Done {
            method: Some(CompactionMethod::Soft)
        }
    );
    assert!(live(&s) > limit, "{} <= {limit}", live(&s));
    let mut s = build();
    let (end, dropped) = run(
        &mut s,
        CompactionReason::Threshold,
        &[CompactionMethod::Soft],
        true,
    );
    assert_eq!(
        end,
        WalkStep::Done {
            method: Some(CompactionMethod::Soft)
        }
    );
    assert_eq!(dropped, 12);
    assert!(live(&s) <= limit, "{} > {limit}", live(&s));
    assert!(
        !s.to_jsonl().contains(IMAGE_REMOVED),
        "text was kept beside the images"
    );
}
