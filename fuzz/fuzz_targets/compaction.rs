//! planCompaction → answers → commit, then pruning, on arbitrary sessions: no panic, the cut is
//! never a tool result, a refused compaction leaves the bytes as they were, pruning keeps
//! every entry.
#![no_main]
use arbitrary::Unstructured;
use ctxfold::settings::Strategy;
use ctxfold_fuzz::invariants;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(keep) = u.int_in_range(0..=5_000u64) else {
        return;
    };
    let Ok(strategy) = u.choose(&[
        Strategy::ContextFull,
        Strategy::Handoff,
        Strategy::Snapcompact,
    ]) else {
        return;
    };
    let Ok(answer) = ctxfold_fuzz::text(&mut u) else {
        return;
    };
    let Ok(protect) = u.int_in_range(0..=2_000u64) else {
        return;
    };
    let Ok(spec) = ctxfold_fuzz::session(&mut u, 50) else {
        return;
    };
    let bytes = ctxfold_fuzz::spec::write(&spec);
    let Ok(mut s) = invariants::load(&bytes) else {
        return;
    };
    if let Err(e) = invariants::prune(&mut s, protect, keep % 2 == 0) {
        panic!("{e}");
    }
    if let Err(e) = invariants::compact(&mut s, *strategy, keep, &answer) {
        panic!("{e}");
    }
    if let Err(e) = invariants::compact(&mut s, Strategy::ContextFull, keep / 2, "again") {
        panic!("{e}");
    }
});
