//! The Anthropic server-compaction response reader over untrusted text (raw bytes, and the
//! bytes placed inside a compaction block). No panic; an accepted response has exactly one
//! compaction block with a non-empty summary.
#![no_main]
use ctxfold::compaction::native::anthropic::read_response;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(s) = read_response(&text) {
        assert!(!s.content.trim().is_empty());
        // The crate's parser: it reads what `JSON.parse` reads (lone surrogates, `1e400`),
        // where serde_json refuses.
        let v: Value = ctxfold::support::json::parse(&text).expect("accepted text is JSON");
        let blocks = v["content"].as_array().expect("a content array");
        assert_eq!(
            blocks.iter().filter(|b| b["type"] == "compaction").count(),
            1
        );
    }
    // The same bytes as a block's summary and signature.
    let wrapped = serde_json::json!({
        "content": [{"type": "compaction", "content": text, "encrypted_content": text}]
    })
    .to_string();
    let read = read_response(&wrapped);
    assert_eq!(read.is_ok(), !text.trim().is_empty());
});
