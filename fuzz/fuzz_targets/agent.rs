//! The agent simulator (testkit `agent`): a scripted agent, a provider with a hard window and a
//! fake summarizer through the core's trigger machine, compaction walk, plan and commit, with
//! the window, method order, model, provider ratio and failure rates drawn from the input, and
//! whether the provider bills frames by their pixels and the host knows the provider's ratio.
//! Invariants (checked by `agent::run` after every step): an overflow is recovered on the next
//! request, no user turn ends over the window, every user message is carried on, entries are
//! never removed, every compaction lowers the next request; with background compaction (its
//! latency in requests and the host's rewrites of the history drawn too), no stale summary is
//! ever committed.
#![no_main]
use arbitrary::{Result, Unstructured};
use ctxfold_testkit::agent::{run, Scenario};
use libfuzzer_sys::fuzz_target;

const WINDOWS: [u64; 8] = [
    8_000, 12_000, 16_000, 32_000, 64_000, 128_000, 200_000, 1_000_000,
];
const METHODS: [&str; 6] = ["remote", "snapcompact", "handoff", "shake", "soft", "window"];

fn scenario(u: &mut Unstructured<'_>) -> Result<Scenario> {
    let methods = if u.ratio(1, 3)? {
        None
    } else {
        let mut m = Vec::new();
        for _ in 0..u.int_in_range(1..=4u8)? {
            m.push(*u.choose(&METHODS)?);
        }
        Some(m)
    };
    Ok(Scenario {
        seed: u.arbitrary()?,
        window: *u.choose(&WINDOWS)?,
        vision: u.arbitrary()?,
        family: u.int_in_range(0..=2u8)?,
        methods,
        ratio: f64::from(u.int_in_range(5..=20u8)?) / 10.0,
        summarizer_failures: f64::from(u.int_in_range(0..=3u8)?) / 10.0,
        empty_documents: f64::from(u.int_in_range(0..=1u8)?) / 10.0,
        length_stops: f64::from(u.int_in_range(0..=2u8)?) / 20.0,
        forced_overflows: f64::from(u.int_in_range(0..=2u8)?) / 20.0,
        dead_remote: u.arbitrary()?,
        user_turns: u.int_in_range(5..=30usize)?,
        pixel_frames: u.arbitrary()?,
        uncalibrated: u.arbitrary()?,
        background: u.arbitrary()?,
        background_latency: *u.choose(&[Some(0), Some(1), Some(3), None])?,
        prefix_edits: f64::from(u.int_in_range(0..=2u8)?) / 20.0,
    })
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(s) = scenario(&mut u) else { return };
    if let Err(e) = run(&s) {
        panic!("{e}");
    }
});
