//! Arbitrary JSON appended as a message to a loaded session (a generated tree): a refused
//! append leaves the bytes unchanged and is `E_INVALID_MESSAGE`; an accepted one reads back
//! equal through the message readers, the context (LLM view, provider messages, transcript),
//! the recorded facts and a save and reload.
//!
//! Input: a generated session from the first bytes, a NUL, then the message's JSON text. JSON
//! is read with the crate's parser, which reads numbers exactly as JavaScript does (serde_json's
//! default float reading is off by an ulp on long mantissas: the first run's only finding).
#![no_main]
use ctxfold_testkit::invariants::same_as_js;
use arbitrary::Unstructured;
use ctxfold::context::{build_context, convert::convert_to_llm, BuildOptions};
use ctxfold::error::ErrorCode;
use ctxfold::session::{LoadOptions, Session};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some(split) = data.iter().position(|&b| b == 0) else {
        return;
    };
    let (head, text) = (&data[..split], &data[split + 1..]);
    let mut u = Unstructured::new(head);
    let Ok(spec) = ctxfold_fuzz::session(&mut u, 12) else {
        return;
    };
    let Ok(message) = std::str::from_utf8(text)
        .map_err(|_| ())
        .and_then(|t| ctxfold::support::json::parse(t).map_err(|_| ()))
    else {
        return;
    };
    let Ok(mut s) = Session::load(ctxfold_fuzz::spec::write(&spec), LoadOptions::default()) else {
        return;
    };
    let before = s.to_bytes();
    let warnings = s.warnings().len();
    let id = match s.append_message(message.clone(), 1_000) {
        Err(e) => {
            assert_eq!(e.code(), ErrorCode::InvalidMessage, "{e}");
            assert!(
                s.to_bytes() == before,
                "a refused append changed the session"
            );
            return;
        }
        Ok(id) => id,
    };
    let i = s.index_of(&id).expect("the new entry");
    let back: Value =
        ctxfold::support::json::parse(&s.message_json(i).expect("its message")).unwrap();
    assert!(same_as_js(&back, &message), "read back {back} for {message}");
    s.message(i).expect("the typed message");
    s.message_head(i).expect("the message head");
    if let Err(e) = ctxfold::tokens::verify_recorded_facts(&s) {
        panic!("recorded facts differ from the parse: {e}");
    }
    match build_context(&s, &BuildOptions::default()) {
        Ok(ctx) => {
            convert_to_llm(&s, &ctx);
        }
        Err(e) => {
            // Only an unreadable entry of the generated tree may fail the build, never the
            // new message: the path before the append fails the same way.
            let old = Session::load(before.clone(), LoadOptions::default()).unwrap();
            assert!(
                build_context(&old, &BuildOptions::default()).is_err(),
                "the appended message broke the context: {e}"
            );
        }
    }
    let transcript = BuildOptions {
        transcript: true,
        ..BuildOptions::default()
    };
    let _ = build_context(&s, &transcript);
    let again = Session::load(s.to_bytes(), LoadOptions::default()).expect("reloads");
    assert_eq!(again.warnings().len(), warnings, "{:?}", again.warnings());
    let j = again.index_of(&id).expect("kept on reload");
    let back: Value = ctxfold::support::json::parse(&again.message_json(j).unwrap()).unwrap();
    assert!(same_as_js(&back, &message), "reloaded as {back} for {message}");
});
