//! Arbitrary bytes as a session file: loading never panics; whatever loads can be indexed,
//! saved, and its context built; the facts the load pass recorded of each message equal the
//! facts a parse of the message gives, and the provider message each tells (`adopted_form`)
//! is the one the conversion makes.
#![no_main]
use ctxfold::context::{build_context, BuildOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = ctxfold_fuzz::invariants::load(data) else {
        return;
    };
    for i in 0..s.len() {
        let _ = s.entry_json(i);
        let _ = s.message(i);
        let _ = s.timestamp_ms(i);
    }
    if let Err(e) = ctxfold::tokens::verify_recorded_facts(&s) {
        panic!("recorded facts differ from the parse: {e}");
    }
    if let Err(e) = ctxfold::context::convert::verify_adopted_forms(&s) {
        panic!("an adopted form differs from the conversion: {e}");
    }
    let _ = s.labels();
    let _ = s.to_bytes();
    let _ = build_context(&s, &BuildOptions::default());
});
