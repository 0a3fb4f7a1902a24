//! Arbitrary bytes as a session file: loading never panics; whatever loads can be indexed,
//! saved, and its context built; the facts the load pass recorded of each message equal the
//! facts a parse of the message gives, and the provider message each tells (`adopted_form`)
//! is the one the conversion makes. The provider view's JSON text is JSON, and what the plain
//! conversion writes wherever the value parser reads the message (deeper ones are read by
//! `support::json::deep`).
#![no_main]
use ctxfold::context::convert::{convert_message, write_message_json};
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
    let Ok(ctx) = build_context(&s, &BuildOptions::default()) else {
        return;
    };
    // The provider view as JSON text (what `toLlmMessages` parses): valid JSON, and for every
    // message the value parser reads, exactly the conversion of its value.
    for (pos, m) in ctx.messages.iter().enumerate() {
        let next = ctx.messages.get(pos + 1);
        let mut text = String::new();
        write_message_json(&mut text, &s, m, next);
        let array = format!("[{text}]");
        if let Err(e) = ctxfold::support::json::scan::validate(array.as_bytes()) {
            panic!("message {pos}: the provider view is not JSON ({e}): {array}");
        }
        if ctxfold::support::json::parse(&m.json(&s)).is_ok() {
            let mut values = Vec::new();
            convert_message(&mut values, &s, m, next);
            let plain: Vec<String> = values
                .iter()
                .map(ctxfold::support::json::js::stringify)
                .collect();
            assert_eq!(text, plain.join(","), "message {pos}");
        }
    }
});
