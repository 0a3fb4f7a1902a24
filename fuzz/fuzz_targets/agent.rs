//! The agent simulator (testkit `agent`): a scripted agent, a provider with a hard window and a
//! fake summarizer through the core's trigger machine, compaction walk, plan and commit, with
//! the window, method order, model, provider ratio and failure rates drawn from the input, and
//! whether the provider bills frames by their pixels and the host knows the provider's ratio.
//! Invariants (checked by `agent::run` after every step): an overflow is recovered on the next
//! request, no user turn ends over the window, every user message is carried on, entries are
//! never removed, every compaction lowers the next request; with background compaction (its
//! latency in requests and the host's rewrites of the history drawn too), no stale summary is
//! ever committed. The work per input is bounded ([`TURN_TOKENS`]) so every input runs in well
//! under a second.
#![no_main]
use arbitrary::{Result, Unstructured};
use ctxfold_testkit::agent::{run, run_cached, Scenario};
use libfuzzer_sys::fuzz_target;

const WINDOWS: [u64; 8] = [
    8_000, 12_000, 16_000, 32_000, 64_000, 128_000, 200_000, 1_000_000,
];
const METHODS: [&str; 6] = ["remote", "snapcompact", "handoff", "shake", "soft", "window"];

/// The work of one input, in user turns times window tokens. Each request builds and measures
/// a context of up to a window and each compaction may print one onto frames, so the work grows
/// with turns × window: 30 turns of a 1M window took seconds (one 21-byte input 2.7 s alone,
/// past the 30 s limit under load), and at 1.6M the slowest corpus input still took 0.6 s of
/// CPU. Every window keeps at least one user turn (a turn holds up to 60 requests: enough to
/// cross the threshold and compact); 8k-16k windows keep their 30.
const TURN_TOKENS: u64 = 800_000;

/// The user turns a scenario of `turns` runs in a window of `window` tokens within the budget.
fn bounded_turns(turns: usize, window: u64) -> usize {
    let most = (TURN_TOKENS / window.max(1)).max(1);
    turns.min(usize::try_from(most).unwrap_or(usize::MAX))
}

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
    let seed = u.arbitrary()?;
    let window = *u.choose(&WINDOWS)?;
    Ok(Scenario {
        seed,
        window,
        vision: u.arbitrary()?,
        family: u.int_in_range(0..=2u8)?,
        methods,
        ratio: f64::from(u.int_in_range(5..=20u8)?) / 10.0,
        summarizer_failures: f64::from(u.int_in_range(0..=3u8)?) / 10.0,
        empty_documents: f64::from(u.int_in_range(0..=1u8)?) / 10.0,
        length_stops: f64::from(u.int_in_range(0..=2u8)?) / 20.0,
        forced_overflows: f64::from(u.int_in_range(0..=2u8)?) / 20.0,
        dead_remote: u.arbitrary()?,
        user_turns: bounded_turns(u.int_in_range(5..=30usize)?, window),
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
    // One input in three without the Maintainer's prunes; the others with them and cache
    // accounting, `cacheAware` on or off (issue 39 item 5: a prune changes nothing before the
    // `prefixChangedAt` it reports).
    let cached = match u.int_in_range(0..=2u8).unwrap_or(0) {
        0 => None,
        n => Some(n == 1),
    };
    let result = match cached {
        None => run(&s),
        Some(on) => run_cached(&s, on).map(|(r, _)| r),
    };
    if let Err(e) = result {
        panic!("{e}");
    }
});
