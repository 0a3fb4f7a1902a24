//! OpenAI server compaction inside the host's own Responses request (spec: compaction §13):
//! the compaction entry a reply's `compaction` item makes, its replay for the provider that
//! wrote it (the item, the `configuration_update` after it, then the reply; everything before
//! dropped), the summary text for others, refusals that change nothing, and the reader over
//! arbitrary output item lists.

use crate::common::Jsonl;
use ctxfold::compaction::native::openai::PRESERVE_KEY;
use ctxfold::compaction::native::openai_inline::{check_carried, commit_inline, read_output};
use ctxfold::context::convert::convert_to_llm;
use ctxfold::context::{build_context, BuildOptions};
use ctxfold::error::ErrorCode;
use ctxfold::session::{CompactionBody, Session};
use proptest::prelude::*;
use serde_json::{json, Value};

fn llm_for(s: &Session, provider: Option<&str>) -> Vec<Value> {
    let opts = BuildOptions {
        replay_provider: provider.map(str::to_string),
        ..Default::default()
    };
    convert_to_llm(s, &build_context(s, &opts).unwrap())
}

fn session() -> Session {
    let mut j = Jsonl::new();
    let mut parent: Option<String> = None;
    for i in 0..4 {
        let (u, a) = (format!("u{i}"), format!("a{i}"));
        j = j.user(&u, parent.as_deref(), &format!("question {i} ").repeat(30));
        j = j.message(
            &a,
            Some(&u),
            json!({"role": "assistant", "content": [{"type": "text", "text": format!("answer {i}")}],
            "provider": "openai", "model": "gpt-5", "api": "openai-responses", "stopReason": "stop",
            "usage": {"input": 100, "output": 5, "cacheRead": 0, "cacheWrite": 0}}),
        );
        parent = Some(a);
    }
    j.load()
}

const REPLY: &str = r#"{"id":"resp_1","object":"response","status":"completed","output":[
    {"type":"compaction","id":"cmp_1","encrypted_content":"gAAAAB-state"},
    {"type":"configuration_update","id":"cu_1","instructions":"be brief"},
    {"type":"message","role":"assistant","content":[{"type":"output_text","text":"the reply"}]}]}"#;

/// Appends the reply of `REPLY` (as the host's afterResponse does) and returns its id.
fn append_reply(s: &mut Session) -> String {
    s.append_message(
        json!({"role": "assistant", "content": [{"type": "text", "text": "the reply"}],
            "provider": "openai", "model": "gpt-5", "api": "openai-responses", "stopReason": "stop",
            "usage": {"input": 90_000, "output": 5, "cacheRead": 0, "cacheWrite": 0}, "timestamp": 1}),
        10,
    )
    .unwrap()
}

#[test]
fn a_reply_with_a_compaction_item_drops_what_came_before_it() {
    let mut s = session();
    let reply = append_reply(&mut s);
    let c = read_output(REPLY).unwrap().unwrap();
    let committed = commit_inline(&mut s, "openai", &reply, &c, 11).unwrap();
    let body: CompactionBody = s.body(committed.index).unwrap();
    assert_eq!(body.first_kept_entry_id, reply);
    assert_eq!(body.method.as_deref(), Some("remote"));
    let record = &body.preserve_data.as_ref().unwrap()[PRESERVE_KEY];
    assert_eq!(record["version"], "inline");
    assert_eq!(
        record["compactionItem"]["encrypted_content"],
        "gAAAAB-state"
    );
    // The provider that wrote it: the item and the update after it, then the reply; nothing
    // of the four turns before.
    let llm = llm_for(&s, Some("openai"));
    assert_eq!(llm.len(), 2);
    assert_eq!(
        llm[0]["providerPayload"]["items"],
        json!([{"type":"compaction","id":"cmp_1","encrypted_content":"gAAAAB-state"},
               {"type":"configuration_update","id":"cu_1","instructions":"be brief"}])
    );
    assert!(llm[1].to_string().contains("the reply"));
    assert!(!llm.iter().any(|m| m.to_string().contains("question 0")));
    // Another provider gets the summary text (no opaque state).
    let other = llm_for(&s, Some("anthropic"));
    assert_eq!(other[0]["providerPayload"], Value::Null);
    assert!(body.tokens_before.as_u64().unwrap() > 0);
}

#[test]
fn refusals_change_nothing() {
    let mut s = session();
    let reply = append_reply(&mut s);
    let c = read_output(REPLY).unwrap().unwrap();
    let before = s.to_jsonl();
    for (provider, id) in [("openai", "a0"), ("", reply.as_str()), ("openai", "nope")] {
        let e = commit_inline(&mut s, provider, id, &c, 11).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        assert_eq!(s.to_jsonl(), before);
    }
    // A reply without a compaction item commits nothing.
    assert_eq!(
        read_output(r#"{"output":[{"type":"message","role":"assistant","content":[]}]}"#).unwrap(),
        None
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any item list, as an array, a response or a stream: no panic, the three forms agree,
    /// and what is found is the last compaction item with the updates after it.
    #[test]
    fn the_three_forms_read_alike(
        kinds in prop::collection::vec(
            (prop_oneof![Just("compaction"), Just("configuration_update"), Just("message"), Just("reasoning")],
             prop::option::of(prop_oneof![Just(json!("E")), Just(json!("")), Just(json!(1))])),
            0..6),
    ) {
        let items: Vec<Value> = kinds.iter().enumerate().map(|(i, (t, e))| {
            let mut v = json!({"type": t, "n": i});
            if let Some(e) = e { v["encrypted_content"] = e.clone(); }
            v
        }).collect();
        let array = Value::Array(items.clone()).to_string();
        let response = json!({"output": items}).to_string();
        let mut stream = String::new();
        for i in &items {
            stream += &format!("data: {}\n\n", json!({"type":"response.output_item.done","item":i}));
        }
        stream += "data: {\"type\":\"response.completed\"}\n\ndata: [DONE]\n\n";
        let a = read_output(&array);
        let r = read_output(&response);
        let st = read_output(&stream);
        prop_assert_eq!(a.as_ref().ok(), r.as_ref().ok());
        prop_assert_eq!(a.as_ref().ok(), st.as_ref().ok());
        let last = items.iter().rposition(|i| i["type"] == "compaction");
        match (a, last) {
            (Ok(None), None) => {}
            (Ok(Some(c)), Some(at)) => {
                prop_assert_eq!(&c.item, &items[at]);
                prop_assert_eq!(c.updates.len(),
                    items[at + 1..].iter().filter(|i| i["type"] == "configuration_update").count());
            }
            (Err(e), Some(at)) => {
                prop_assert_eq!(e.code(), ErrorCode::Summarizer);
                prop_assert!(items[at]["encrypted_content"] != json!("E"));
            }
            (other, last) => prop_assert!(false, "{:?} for {:?}", other, last),
        }
        // Cut streams never panic and never commit.
        prop_assert!(read_output(&stream[..stream.len() / 2]).is_err() || stream.len() < 4);
        // A reply's `serverCompaction` (the item array) is accepted exactly when it reads as a
        // compaction; any other is refused as a message (E_INVALID_MESSAGE).
        match check_carried(&array) {
            Ok(()) => prop_assert!(matches!(read_output(&array), Ok(Some(_)))),
            Err(e) => {
                prop_assert_eq!(e.code(), ErrorCode::InvalidMessage);
                prop_assert!(!matches!(read_output(&array), Ok(Some(_))));
            }
        }
    }
}
