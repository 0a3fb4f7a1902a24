//! The OpenAI provider-native answer readers on arbitrary bytes: V1's `/responses/compact`
//! JSON and V2's server-sent-event stream (untrusted provider output). No panic; an answer
//! that reads gives exactly what the record keeps: a compaction item of the expected type, a
//! replacement history that ends the record.
#![no_main]
use ctxfold::compaction::native::openai::{read_compact_answer, v1_record};
use ctxfold::compaction::native::openai_v2::{read_stream, v2_record};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok((history, item)) = read_compact_answer(&text) {
        let kind = item.get("type").and_then(Value::as_str);
        assert!(matches!(kind, Some("compaction" | "compaction_summary")));
        assert!(history.contains(&item));
        let record = v1_record("openai", history, item.clone());
        assert_eq!(record["compactionItem"], item);
    }
    if let Ok(streamed) = read_stream(&text) {
        assert_eq!(
            streamed.item.get("type").and_then(Value::as_str),
            Some("compaction")
        );
        let item = streamed.item.clone();
        let record = v2_record("openai", Vec::new(), streamed);
        assert_eq!(
            record["replacementHistory"]
                .as_array()
                .and_then(|h| h.last()),
            Some(&item)
        );
    }
});
