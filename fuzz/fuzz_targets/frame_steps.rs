//! A snapcompact commit drawn a frame at a time (issue 41): on arbitrary sessions, keeps,
//! windows and frame caps, drawing the frames `snapcompact_frame_jobs` lists (any subset, in
//! any order, some twice) before the commit never panics and never changes what the commit
//! writes or whether it fails, compared with a commit alone on a cold thread.
#![no_main]
use arbitrary::Unstructured;
use ctxfold::compaction::commit::{
    commit_snapcompact, snapcompact_frame_jobs, snapcompact_options,
};
use ctxfold::compaction::plan::{plan_compaction, PlanOptions};
use ctxfold::compaction::snapcompact::render_job;
use ctxfold::render::shape::resolve::Target;
use ctxfold::render::FallbackFonts;
use ctxfold::session::{LoadOptions, SequentialIds, Session};
use ctxfold::settings::{CompactionSettings, Strategy};
use libfuzzer_sys::fuzz_target;

struct Case {
    bytes: Vec<u8>,
    keep: u64,
    window: u64,
    max_frames: Option<u32>,
    /// Frame indexes to draw first (taken modulo the count), or `None` for the commit alone.
    draws: Option<Vec<u8>>,
}

fn commit(case: &Case) -> Result<Vec<u8>, String> {
    let Ok(mut s) = Session::load(
        case.bytes.clone(),
        LoadOptions::with_ids(Box::new(SequentialIds::new())),
    ) else {
        return Err("load".into());
    };
    let settings = CompactionSettings {
        strategy: Strategy::Snapcompact,
        keep_recent_tokens: case.keep,
        ..CompactionSettings::default()
    };
    let options = PlanOptions {
        model: Target {
            id: Some("claude-opus-4-7".into()),
            api: Some("anthropic-messages".into()),
        },
        context_window: case.window,
        ..PlanOptions::default()
    };
    let plan = plan_compaction(&s, &settings, options).map_err(|e| e.to_string())?;
    let fonts = FallbackFonts::new();
    let mut archive = snapcompact_options(&plan).map_err(|e| e.to_string())?;
    archive.max_frames = case.max_frames;
    if let Some(draws) = &case.draws {
        if let Ok(jobs) = snapcompact_frame_jobs(&s, &plan, &archive, &fonts) {
            for &k in draws {
                if let Some(job) = jobs.get(k as usize % jobs.len().max(1)) {
                    render_job(job, &fonts).expect("a listed frame draws");
                }
            }
        }
    }
    let before = s.to_bytes();
    match commit_snapcompact(&mut s, &plan, &archive, &fonts, 7) {
        Ok(_) => Ok(s.to_bytes()),
        Err(e) => {
            assert!(
                s.to_bytes() == before,
                "a refused commit changed the session"
            );
            Err(e.to_string())
        }
    }
}

fn on_cold_thread(case: Case) -> (Case, Result<Vec<u8>, String>) {
    std::thread::spawn(move || {
        let r = commit(&case);
        (case, r)
    })
    .join()
    .expect("no panic")
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(keep) = u.int_in_range(0..=6_000u64) else {
        return;
    };
    let Ok(window) = u.choose(&[0u64, 8_000, 32_000, 200_000]) else {
        return;
    };
    let Ok(max_frames) = u.arbitrary::<Option<u8>>() else {
        return;
    };
    let Ok(draws) = u.arbitrary::<Vec<u8>>() else {
        return;
    };
    let Ok(spec) = ctxfold_fuzz::session(&mut u, 50) else {
        return;
    };
    let bytes = ctxfold_fuzz::spec::write(&spec);
    let case = Case {
        bytes,
        keep,
        window: *window,
        max_frames: max_frames.map(u32::from),
        draws: None,
    };
    let (case, alone) = on_cold_thread(case);
    let (_, stepped) = on_cold_thread(Case {
        draws: Some(draws),
        ..case
    });
    assert!(alone == stepped, "drawing frames first changed the commit");
});
