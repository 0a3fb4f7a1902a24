//! The reader of OpenAI server compaction inside a normal Responses reply over untrusted text
//! (a response object, an item array or an event stream). No panic; a compaction it finds has
//! a non-empty `encrypted_content`, and its updates are `configuration_update` items. The check
//! of a reply's `serverCompaction` accepts exactly what the reader reads as a compaction.
#![no_main]
use ctxfold::compaction::native::openai_inline::{check_carried, inline_record, read_output};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let found = matches!(read_output(&text), Ok(Some(_)));
    assert_eq!(check_carried(&text).is_ok(), found);
    if let Ok(Some(c)) = read_output(&text) {
        assert_eq!(c.item["type"], "compaction");
        assert!(c.item["encrypted_content"]
            .as_str()
            .is_some_and(|e| !e.is_empty()));
        assert!(c.updates.iter().all(|u| u["type"] == "configuration_update"));
        let r = inline_record("openai", &c);
        assert_eq!(r["replacementHistory"][0], c.item);
    }
    // The same bytes as the encrypted state of a streamed item.
    let item = serde_json::json!({"type": "compaction", "encrypted_content": text});
    let event = serde_json::json!({"type": "response.output_item.done", "item": item});
    let stream = format!("data: {event}\n\ndata: {{\"type\":\"response.completed\"}}\n\n");
    let read = read_output(&stream);
    assert_eq!(read.map(|c| c.is_some()).unwrap_or(false), !text.is_empty());
});
