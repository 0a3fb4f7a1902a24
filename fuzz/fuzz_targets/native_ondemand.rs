//! The Anthropic on-demand compaction reader over untrusted text (raw bytes, and the bytes
//! placed inside a compaction block). No panic; an accepted response stopped for compaction
//! and carried exactly one signed compaction block with a non-empty summary, kept whole.
#![no_main]
use ctxfold::compaction::native::anthropic_ondemand::{read_response, supports};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = supports(&text);
    if let Ok(r) = read_response(&text) {
        assert!(!r.content.trim().is_empty());
        assert!(!r.signature.is_empty());
        let v: Value = ctxfold::support::json::parse(&text).expect("accepted text is JSON");
        assert_eq!(v["stop_reason"], "compaction");
        let blocks = v["content"].as_array().expect("a content array");
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0], r.block, "the block is kept whole");
    }
    let wrapped = serde_json::json!({
        "stop_reason": "compaction",
        "content": [{"type": "compaction", "content": text, "signature": text}]
    })
    .to_string();
    let read = read_response(&wrapped);
    assert_eq!(read.is_ok(), !text.trim().is_empty());
});
