//! buildContext on arbitrary session trees, at many leaves, LLM and transcript modes: no
//! panic, and LLM contexts keep every tool call with its result.
#![no_main]
use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(spec) = ctxfold_fuzz::session(&mut u, 60) else {
        return;
    };
    let bytes = ctxfold_fuzz::spec::write(&spec);
    let Ok(s) = ctxfold_fuzz::invariants::load(&bytes) else {
        return;
    };
    if let Err(e) = ctxfold_fuzz::invariants::contexts(&s, 8) {
        panic!("{e}");
    }
});
