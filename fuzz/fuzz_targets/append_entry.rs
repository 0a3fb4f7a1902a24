//! An entry of any type appended from its fields' JSON text, as `session.append(type, json)`
//! takes it (the demo's worker hands the page the compaction it wrote that way, issue 41): the
//! text is read with the crate's parser, an object goes to `Session::append`. A refused append
//! leaves the session's bytes unchanged; an accepted one is the leaf, and the session saves,
//! reloads with the entry and saves again to the same bytes.
//!
//! Input: a generated session from the first bytes (its first byte also picks the entry type),
//! a NUL, then the fields' JSON text.
#![no_main]
use arbitrary::Unstructured;
use ctxfold::session::{LoadOptions, Session};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const TYPES: [&str; 11] = [
    "compaction",
    "custom",
    "custom_message",
    "branch_summary",
    "label",
    "model_change",
    "thinking_level_change",
    "session_info",
    "message",
    "x-unknown",
    "",
];

fuzz_target!(|data: &[u8]| {
    let Some(split) = data.iter().position(|&b| b == 0) else {
        return;
    };
    let (head, text) = (&data[..split], &data[split + 1..]);
    let entry_type = TYPES[usize::from(head.first().copied().unwrap_or(0)) % TYPES.len()];
    let mut u = Unstructured::new(head);
    let Ok(spec) = ctxfold_fuzz::session(&mut u, 12) else {
        return;
    };
    // What the wasm `append` does with the text: UTF-8, the crate's parser, an object.
    let Ok(Value::Object(fields)) = std::str::from_utf8(text)
        .map_err(|_| ())
        .and_then(|t| ctxfold::support::json::parse(t).map_err(|_| ()))
    else {
        return;
    };
    let Ok(mut s) = Session::load(ctxfold_fuzz::spec::write(&spec), LoadOptions::default()) else {
        return;
    };
    let before = s.to_bytes();
    let id = match s.append(entry_type, fields, 1_000) {
        Err(_) => {
            assert!(
                s.to_bytes() == before,
                "a refused append changed the session"
            );
            return;
        }
        Ok(id) => id,
    };
    s.index_of(&id).expect("the new entry");
    assert_eq!(s.leaf_id(), Some(id.as_str()), "the new entry is the leaf");
    let saved = s.to_bytes();
    let again = Session::load(saved.clone(), LoadOptions::default()).expect("reloads");
    again.index_of(&id).expect("kept on reload");
    assert!(again.to_bytes() == saved, "a reload saves other bytes");
});
