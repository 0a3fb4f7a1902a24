//! The compaction method walk (`triggers::Walk`) driven with arbitrary inputs and arbitrary host
//! outcomes: any method list, reason, window, routes and live size; any plan error, shake
//! report, summary, native-lane answer, commit or failure code, in or out of turn. No panic;
//! a report out of turn is refused and changes nothing; the walk ends within a bound of steps;
//! it never plans a method twice without a shake between; a final code ends it.
#![no_main]
use arbitrary::{Result, Unstructured};
use ctxfold::settings::{CompactionSettings, Strategy};
use ctxfold::triggers::{
    CompactionMethod, CompactionReason, ModelInfo, Walk, WalkInput, WalkStep, FINAL_CODES,
};
use libfuzzer_sys::fuzz_target;

const METHODS: [&str; 7] = ["remote", "snapcompact", "handoff", "shake", "soft", "window", "x"];
const REASONS: [CompactionReason; 5] = [
    CompactionReason::Threshold,
    CompactionReason::Overflow,
    CompactionReason::Incomplete,
    CompactionReason::Idle,
    CompactionReason::Manual,
];
const CODES: [&str; 10] = [
    "E_SUMMARIZER",
    "E_NOTHING_TO_COMPACT",
    "E_ALREADY_COMPACTED",
    "E_NO_REDUCTION",
    "E_STALE_PLAN",
    "E_ABORTED",
    "E_CANCELLED",
    "E_INVALID_ARGUMENT",
    "E_SETTINGS",
    "",
];
const WINDOWS: [u64; 5] = [0, 8_000, 32_000, 200_000, 1_000_000];

fn input(u: &mut Unstructured<'_>) -> Result<WalkInput> {
    let mut order = Vec::new();
    for _ in 0..u.int_in_range(0..=7u8)? {
        order.push(*u.choose(&METHODS)?);
    }
    let mut v = serde_json::json!({ "methodOrder": order });
    if u.arbitrary()? {
        v["remoteEndpoint"] = "https://summarizer.example/compact".into();
    }
    if u.arbitrary()? {
        v["remoteEnabled"] = false.into();
    }
    if u.arbitrary()? {
        v["reserveTokens"] = u.int_in_range(0..=100_000u64)?.into();
    }
    let settings = CompactionSettings::from_json(&v).unwrap_or_default();
    let methods = if u.arbitrary()? {
        let mut list = Vec::new();
        for _ in 0..u.int_in_range(0..=7u8)? {
            list.extend(CompactionMethod::named(u.choose(&METHODS)?));
        }
        Some(list)
    } else {
        None
    };
    let explicit = if u.ratio(1, 4)? {
        Strategy::parse(u.choose(&["context-full", "snapcompact", "handoff", "shake", "off"])?)
    } else {
        None
    };
    let window = *u.choose(&WINDOWS)?;
    let model = ModelInfo {
        provider: "anthropic".into(),
        id: "claude".into(),
        context_window: window,
        max_output_tokens: 0,
        accepts_images: u.arbitrary()?,
    };
    Ok(WalkInput {
        methods,
        explicit,
        input_known: u.arbitrary()?,
        summarizer: u.arbitrary()?,
        remote_endpoint: u.arbitrary()?,
        native_lane: u.arbitrary()?,
        remote_blocked: u.arbitrary()?,
        exclude_snapcompact: u.arbitrary()?,
        custom_instructions: u.arbitrary()?,
        live_tokens: u.int_in_range(0..=window.saturating_mul(3).max(10_000))?,
        overhead_tokens: u.int_in_range(0..=20_000u64)?,
        provider_ratio: Some(f64::from(u.int_in_range(0..=40u8)?) / 10.0),
        ..WalkInput::new(*u.choose(&REASONS)?, settings, model)
    })
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let mut w = Walk::new(input(u)?);
    let bound = 8 * w.methods().len() + 8;
    let mut planned: Vec<CompactionMethod> = Vec::new();
    let mut steps = 0usize;
    // The step a refused report left standing (asked again, not a new step).
    let mut again = false;
    loop {
        let step = w.poll();
        steps += 1;
        assert!(steps <= bound, "{steps} steps for {} methods", w.methods().len());
        match &step {
            WalkStep::Done { .. } | WalkStep::Failed { .. } | WalkStep::Skipped { .. } => {
                assert!(w.is_over());
                assert_eq!(w.poll(), step, "the end stays the end");
                return Ok(());
            }
            WalkStep::Warn { .. } => continue,
            WalkStep::Plan { method, .. } if !again => {
                assert!(!planned.contains(method), "{method:?} planned twice without a shake");
                planned.push(*method);
            }
            WalkStep::Shake { .. } | WalkStep::DropImages => planned.clear(),
            _ => {}
        }
        again = false;
        let code = *u.choose(&CODES)?;
        let n = u.int_in_range(0..=200_000u64)?;
        let live = if u.arbitrary()? { Some(n) } else { None };
        // Any outcome, in turn or not: one out of turn is refused and changes nothing.
        let before = w.poll();
        let r = match u.int_in_range(0..=10u8)? {
            10 => w.handle_images_dropped(u.int_in_range(0..=3u64)?, live),
            8 => w.handle_rebuilt(n, live),
            9 => w.handle_rebuild_failed(),
            0 => w.handle_planned(),
            1 => w.handle_plan_failed(code, "x"),
            2 => w.handle_summarized(),
            3 => w.handle_native_unavailable(),
            4 => w.handle_committed(n, live),
            5 => w.handle_method_failed(code, "x", None),
            6 => w.handle_shaken(u.int_in_range(0..=3u64)?, n, live),
            _ => w.handle_extension_committed(),
        };
        if r.is_err() {
            assert_eq!(w.poll(), before, "a refused report changes nothing");
            // Not counted: the host tries again.
            steps -= 1;
            again = true;
            if u.is_empty() {
                return Ok(());
            }
            continue;
        }
        if FINAL_CODES.contains(&code) && matches!(w.poll(), WalkStep::Failed { .. }) {
            assert!(w.is_over());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});
