//! Shake on arbitrary input: the region finder over arbitrary text (fences, tags, indentation,
//! multi-byte characters) keeps its invariants; plan → apply on arbitrary sessions with
//! arbitrary presets and overrides never panics, touches only the lines it reports and
//! refuses a stale plan (`ctxfold_testkit::invariants::shake`); the dead-end rescue's image drop
//! after it rewrites only the lines it reports (`invariants::drop_images`).
#![no_main]
use arbitrary::Unstructured;
use ctxfold::shake::{Preset, ShakeConfig};
use ctxfold_fuzz::invariants;
use libfuzzer_sys::fuzz_target;

/// Lines that open and close blocks, mixed with arbitrary text.
fn blocky(u: &mut Unstructured<'_>) -> arbitrary::Result<String> {
    let mut s = String::new();
    for _ in 0..u.int_in_range(0..=40u8)? {
        let line = u.choose(&[
            "```",
            "~~~",
            "  ```ts",
            "<a>",
            "</a>",
            "<b x=\"1\">",
            "</b>",
            "  </a>",
            " <a>",
            "<A>",
            "</A>",
            "<a x>y>",
            "text",
            "",
        ])?;
        s.push_str(line);
        if u.ratio(1, 6)? {
            s.push_str(&u.arbitrary::<String>()?);
        }
        s.push('\n');
    }
    Ok(s)
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(text) = blocky(&mut u) else {
        return;
    };
    if let Err(e) = invariants::block_ranges(&text) {
        panic!("{e}");
    }
    let Ok(preset) = u.choose(&[Preset::Default, Preset::Aggressive, Preset::Rescue]) else {
        return;
    };
    let mut cfg = ShakeConfig::preset(*preset);
    let Ok(protect) = u.int_in_range(0..=3_000u64) else {
        return;
    };
    let Ok(fence) = u.int_in_range(0..=500u64) else {
        return;
    };
    cfg.protect_tokens = protect;
    cfg.fence_min_tokens = fence;
    cfg.min_savings = 0;
    let artifact = u.ratio(1, 2).unwrap_or(false).then_some("A1");
    let Ok(spec) = ctxfold_fuzz::session(&mut u, 40) else {
        return;
    };
    let bytes = ctxfold_fuzz::spec::write(&spec);
    let Ok(mut s) = invariants::load(&bytes) else {
        return;
    };
    if let Err(e) = invariants::shake(&mut s, &cfg, artifact) {
        panic!("{e}");
    }
    // Then the rescue's last tier on what the shake left.
    if let Err(e) = invariants::drop_images(&mut s) {
        panic!("{e}");
    }
});
