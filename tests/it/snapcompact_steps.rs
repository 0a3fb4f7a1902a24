//! The snapcompact commit drawn a frame at a time (issue 41 Deliver 5): the frames
//! `snapcompact_frame_jobs` lists, drawn with `render_job` before the commit, are the frames
//! the commit writes, and the session it leaves is byte for byte the one a commit alone
//! leaves (spec: snapcompact §9.2, "the same inputs give the same PNG bytes").

use crate::common;
use ctxfold::compaction::commit::{
    commit_snapcompact, snapcompact_frame_jobs, snapcompact_options,
};
use ctxfold::compaction::plan::{plan_compaction, CompactionPlan, PlanOptions};
use ctxfold::compaction::snapcompact::{render_job, ArchiveOptions};
use ctxfold::render::shape::resolve::Target;
use ctxfold::render::FallbackFonts;
use ctxfold::session::{LoadOptions, SequentialIds, Session};
use ctxfold::settings::{CompactionSettings, Strategy};
use ctxfold::support::base64::base64;
use serde_json::Value;

fn load(bytes: &[u8]) -> Session {
    Session::load(
        bytes.to_vec(),
        LoadOptions::with_ids(Box::new(SequentialIds::new())),
    )
    .expect("loads")
}

fn opus() -> Target {
    Target {
        id: Some("claude-opus-4-7".into()),
        api: Some("anthropic-messages".into()),
    }
}

fn plan_of(s: &Session, keep: u64, window: u64) -> Option<CompactionPlan> {
    let settings = CompactionSettings {
        strategy: Strategy::Snapcompact,
        keep_recent_tokens: keep,
        ..CompactionSettings::default()
    };
    let mut o = PlanOptions {
        model: opus(),
        context_window: window,
        ..PlanOptions::default()
    };
    o.prepare.active_provider = Some("anthropic".into());
    plan_compaction(s, &settings, o).ok()
}

/// What a commit on a thread with a cold frame cache leaves: the session's bytes (or the
/// error), and with `steps` the PNGs drawn first, one `render_job` a frame.
fn commit_on_fresh_thread(
    bytes: Vec<u8>,
    keep: u64,
    window: u64,
    max_frames: Option<u32>,
    steps: bool,
) -> (Result<Vec<u8>, String>, Vec<Vec<u8>>) {
    std::thread::spawn(move || {
        let mut s = load(&bytes);
        let Some(plan) = plan_of(&s, keep, window) else {
            return (Err("no plan".into()), Vec::new());
        };
        let fonts = FallbackFonts::new();
        let mut options: ArchiveOptions = snapcompact_options(&plan).expect("options");
        options.max_frames = max_frames;
        let mut drawn = Vec::new();
        if steps {
            match snapcompact_frame_jobs(&s, &plan, &options, &fonts) {
                Ok(jobs) => {
                    for job in &jobs {
                        drawn.push(render_job(job, &fonts).expect("a listed frame draws").png);
                    }
                }
                Err(e) => return (Err(e.to_string()), drawn),
            }
        }
        let r = commit_snapcompact(&mut s, &plan, &options, &fonts, 7)
            .map(|_| s.to_bytes())
            .map_err(|e| e.to_string());
        (r, drawn)
    })
    .join()
    .expect("no panic")
}

/// The frames of the latest compaction of `bytes`, as base64.
fn written_frames(bytes: &[u8]) -> Vec<String> {
    let s = load(bytes);
    let line = s.entry_json(s.len() - 1).into_owned();
    let v: Value = serde_json::from_str(&line).expect("json");
    v["preserveData"]["snapcompact"]["frames"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| f["data"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn check_same(bytes: Vec<u8>, keep: u64, window: u64, max_frames: Option<u32>) -> usize {
    let (alone, _) = commit_on_fresh_thread(bytes.clone(), keep, window, max_frames, false);
    let (stepped, drawn) = commit_on_fresh_thread(bytes, keep, window, max_frames, true);
    assert!(
        alone == stepped,
        "the stepwise commit differs from the commit alone"
    );
    if let Ok(after) = &stepped {
        let written = written_frames(after);
        // The frames drawn first are the ones written when the commit keeps them all.
        if written.len() == drawn.len() {
            let drawn: Vec<String> = drawn.iter().map(|p| base64(p)).collect();
            assert_eq!(written, drawn, "the drawn frames are the written ones");
        }
        return written.len();
    }
    0
}

/// The large conformance session: the commit drawn frame by frame writes the bytes of the
/// commit alone, and its frames are the ones drawn.
#[test]
fn stepwise_commit_of_the_conformance_session_writes_the_same_bytes() {
    let bytes = common::fixture_session().to_bytes();
    let frames = check_same(bytes, 20_000, 200_000, None);
    assert!(frames > 1, "the case draws frames ({frames})");
}

/// A frame cap that forces fewer frames than the layout's first pass is still the same.
#[test]
fn stepwise_commit_with_a_frame_cap_writes_the_same_bytes() {
    let bytes = common::fixture_session().to_bytes();
    check_same(bytes, 20_000, 200_000, Some(3));
}

mod properties {
    use super::*;
    use ctxfold_testkit::{generate, GenOptions};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 16, failure_persistence: None, ..ProptestConfig::default() })]

        /// Generated sessions, windows and caps: drawing the frames first never changes what
        /// the commit writes, nor whether it fails.
        #[test]
        fn drawing_frames_first_never_changes_the_commit(
            seed in any::<u64>(),
            entries in 20usize..200,
            images in any::<bool>(),
            window in prop::sample::select(vec![0u64, 32_000, 64_000, 200_000]),
            keep in 300u64..6_000,
            frames in prop::option::of(1u32..17),
        ) {
            let gen = GenOptions { seed, entries, images, size_scale: 0.4, ..GenOptions::default() };
            let bytes = ctxfold_testkit::invariants::load(&generate(&gen)).expect("loads").to_bytes();
            check_same(bytes, keep, window, frames);
        }
    }
}
