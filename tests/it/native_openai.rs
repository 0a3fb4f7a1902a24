//! The OpenAI provider-native lanes (spec: compaction §5.7 step 1, §13): the plan's messages a
//! request is built from, the answer readers on untrusted text (V1 JSON, V2 event streams),
//! the commit and its `preserveData` record, a failed commit leaving the session byte-identical,
//! and the replay: the OpenAI reader gets the replacement history, any other reader the summary
//! and the kept messages (§2.3).

use crate::common::{assistant_msg, Jsonl};
use ctxfold::archive::blocks::HistoryOptions;
use ctxfold::compaction::native::openai::{
    commit_openai, leads_with_summary, native_messages, read_compact_answer, replayed_record,
    REMOTE_SUMMARY,
};
use ctxfold::compaction::native::openai_v2::read_stream;
use ctxfold::compaction::native::Lane;
use ctxfold::compaction::plan::{plan_compaction, CompactionPlan, PlanOptions};
use ctxfold::context::convert::convert_to_llm;
use ctxfold::context::{build_context, build_counted_context, BuildOptions};
use ctxfold::error::ErrorCode;
use ctxfold::session::message::AgentMessage;
use ctxfold::session::Session;
use ctxfold::settings::CompactionSettings;
use ctxfold::tokens::{estimate_message, ByteEstimate, EstimateOptions};
use proptest::prelude::*;
use serde_json::{json, Value};

fn openai(text: &str) -> Value {
    let mut a = assistant_msg(text, "stop");
    a["provider"] = "openai".into();
    a["api"] = "openai-responses".into();
    a["model"] = "gpt-5".into();
    a
}

/// Four turns with long texts; the last one is kept.
fn session() -> Session {
    let mut j = Jsonl::new();
    let mut parent: Option<String> = None;
    for i in 0..4 {
        let (u, a) = (format!("u{i}"), format!("a{i}"));
        j = j
            .user(&u, parent.as_deref(), &format!("question {i} ").repeat(40))
            .message(&a, Some(&u), openai(&format!("answer {i} ").repeat(40)));
        parent = Some(a);
    }
    j.load()
}

fn plan(s: &Session) -> CompactionPlan {
    let settings = CompactionSettings {
        keep_recent_tokens: 150,
        ..Default::default()
    };
    let options = PlanOptions {
        method: Some("remote".into()),
        ..Default::default()
    };
    plan_compaction(s, &settings, options).unwrap()
}

const V1_ANSWER: &str = r#"{"output":[{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]},
    {"type":"reasoning","id":"r"},{"type":"compaction","encrypted_content":"ENC"}]}"#;

fn stream(events: &[Value]) -> String {
    events.iter().map(|e| format!("data: {e}\n\n")).collect()
}

#[test]
fn the_plan_gives_every_message_to_the_native_request() {
    let s = session();
    let p = plan(&s);
    let (messages, previous) = native_messages(&s, &p).unwrap();
    // History, then the kept turn: all eight messages, no previous record.
    assert_eq!(messages.len(), 8);
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[7]["role"], "assistant");
    assert_eq!(previous, Value::Null);
}

#[test]
fn a_v1_commit_writes_the_record_and_the_placeholder() {
    let mut s = session();
    let p = plan(&s);
    let c = commit_openai(
        &mut s,
        &p,
        "openai",
        Lane::OpenAiV1,
        V1_ANSWER,
        Vec::new(),
        5,
    )
    .unwrap();
    let entry: Value = serde_json::from_str(&s.entry_json(c.index)).unwrap();
    assert_eq!(entry["method"], "remote");
    assert_eq!(entry["shortSummary"], "Remote compaction");
    assert!(entry["summary"]
        .as_str()
        .unwrap()
        .starts_with(REMOTE_SUMMARY));
    assert_eq!(
        entry["firstKeptEntryId"],
        p.preparation.first_kept_entry_id.as_str()
    );
    assert_eq!(
        entry["preserveData"],
        json!({"openaiRemoteCompaction":{"provider":"openai",
            "replacementHistory":[{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]},
                                  {"type":"compaction","encrypted_content":"ENC"}],
            "compactionItem":{"type":"compaction","encrypted_content":"ENC"}}})
    );
}

#[test]
fn a_v2_commit_keeps_the_retained_messages_and_the_usage() {
    let mut s = session();
    let p = plan(&s);
    let answer = stream(&[
        json!({"type":"response.output_item.done","item":{"type":"compaction","encrypted_content":"E2"}}),
        json!({"type":"response.completed","response":{"usage":{"input_tokens":900,"output_tokens":5,"total_tokens":905}}}),
    ]);
    let retained =
        vec![json!({"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]})];
    let c = commit_openai(
        &mut s,
        &p,
        "openai",
        Lane::OpenAiV2,
        &answer,
        retained.clone(),
        5,
    )
    .unwrap();
    let entry: Value = serde_json::from_str(&s.entry_json(c.index)).unwrap();
    let record = &entry["preserveData"]["openaiRemoteCompaction"];
    assert_eq!(record["version"], "v2");
    assert_eq!(record["usedTokens"], 900);
    assert_eq!(
        record["replacementHistory"],
        json!([retained[0], {"type":"compaction","encrypted_content":"E2"}])
    );
    assert!(entry["summary"]
        .as_str()
        .unwrap()
        .contains("Compaction processed 900 input tokens."));
}

#[test]
fn bad_answers_and_stale_plans_leave_the_session_byte_identical() {
    let mut s = session();
    let p = plan(&s);
    let before = s.to_bytes();
    for (lane, answer) in [
        (Lane::OpenAiV1, "{"),
        (Lane::OpenAiV1, r#"{"output":[]}"#),
        (
            Lane::OpenAiV2,
            "data: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"compaction\"}}\n\n",
        ),
        (
            Lane::OpenAiV2,
            "data: {\"type\":\"response.completed\"}\n\n",
        ),
    ] {
        let e = commit_openai(&mut s, &p, "openai", lane, answer, Vec::new(), 5).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Summarizer, "{answer}");
        assert_eq!(s.to_bytes(), before);
    }
    s.append_message(json!({"role":"user","content":"later"}), 9)
        .unwrap();
    let moved = s.to_bytes();
    let e = commit_openai(
        &mut s,
        &p,
        "openai",
        Lane::OpenAiV1,
        V1_ANSWER,
        Vec::new(),
        5,
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::StalePlan);
    assert_eq!(s.to_bytes(), moved);
}

#[test]
fn the_openai_reader_replays_the_history_other_readers_get_summary_and_kept_turns() {
    let mut s = session();
    let p = plan(&s);
    commit_openai(
        &mut s,
        &p,
        "openai",
        Lane::OpenAiV1,
        V1_ANSWER,
        Vec::new(),
        5,
    )
    .unwrap();
    let kept = p.preparation.recent.len();
    assert!(kept > 0);
    let reader = |provider: Option<&str>| {
        let opts = BuildOptions {
            replay_provider: provider.map(str::to_string),
            ..Default::default()
        };
        let ctx = build_context(&s, &opts).unwrap();
        convert_to_llm(&s, &ctx)
    };
    let own = reader(Some("openai"));
    assert_eq!(own.len(), 1, "the kept turn is inside the replayed history");
    assert_eq!(own[0]["providerPayload"]["type"], "openaiResponsesHistory");
    assert_eq!(own[0]["providerPayload"]["provider"], "openai");
    assert_eq!(
        own[0]["providerPayload"]["items"].as_array().unwrap().len(),
        2
    );
    for other in [Some("azure"), None] {
        let msgs = reader(other);
        assert_eq!(msgs.len(), 1 + kept, "{other:?}");
        assert!(msgs[0].get("providerPayload").is_none());
        assert!(msgs[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains(REMOTE_SUMMARY));
    }
    // The display transcript is not a replay: every message shows.
    let t = build_context(
        &s,
        &BuildOptions {
            transcript: true,
            replay_provider: Some("openai".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(t.messages.len() >= 8);
    // A second native plan starts after the record and carries it as the previous one.
    s.append_message(json!({"role":"user","content":"next ".repeat(60)}), 9)
        .unwrap();
    s.append_message(openai(&"ok ".repeat(60)), 10).unwrap();
    s.append_message(json!({"role":"user","content":"last"}), 11)
        .unwrap();
    s.append_message(openai("k"), 12).unwrap();
    let settings = CompactionSettings {
        keep_recent_tokens: 10,
        ..Default::default()
    };
    let mut options = PlanOptions::default();
    options.prepare.active_provider = Some("openai".into());
    let second = plan_compaction(&s, &settings, options).unwrap();
    let (messages, previous) = native_messages(&s, &second).unwrap();
    assert_eq!(previous["provider"], "openai");
    assert_eq!(messages[0]["content"], "next ".repeat(60));
    // Issue 36 (one engine): the record is replayed only to the provider that wrote it (the
    // core's answer, not the shell's); no record stands for the summary of another provider.
    assert!(!leads_with_summary(&second));
    assert_eq!(replayed_record(previous.clone(), Some("openai")), previous);
    assert_eq!(replayed_record(previous.clone(), None), previous);
    for other in ["azure-openai-responses", ""] {
        assert_eq!(replayed_record(previous.clone(), Some(other)), Value::Null);
    }
}

/// Ten turns whose user messages are long (what V2 retains) and whose answers are short; the
/// last two turns are kept.
fn long_questions() -> Session {
    let mut j = Jsonl::new();
    let mut parent: Option<String> = None;
    for i in 0..10 {
        let (u, a) = (format!("u{i}"), format!("a{i}"));
        j = j
            .user(
                &u,
                parent.as_deref(),
                &format!("requirement {i}: ").repeat(150),
            )
            .message(&a, Some(&u), openai(&format!("noted {i}")));
        parent = Some(a);
    }
    j.load()
}

/// The local estimate of what a request to `provider` sends for the session's context: the
/// replayed Responses items (each retained user message as the user message it was, the
/// encrypted item by its bytes) and every other message as converted.
fn sent_tokens(s: &Session, provider: &str) -> u64 {
    let opts = BuildOptions {
        replay_provider: Some(provider.into()),
        ..Default::default()
    };
    let sent = convert_to_llm(s, &build_context(s, &opts).unwrap());
    let mut total = 0;
    for m in &sent {
        let items = m["providerPayload"]["items"].as_array();
        for item in items.into_iter().flatten() {
            if item["type"] == "compaction" {
                total += item["encrypted_content"].as_str().unwrap().len() as u64 * 3 / 16;
                continue;
            }
            let text: String = item["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect();
            let user = json!({"role":"user","content":[{"type":"text","text":text}]});
            let user = AgentMessage::parse(&user.to_string(), None).unwrap();
            total += estimate_message(&user, &ByteEstimate, EstimateOptions::default());
        }
        if items.is_none() {
            let m = AgentMessage::parse(&m.to_string(), None).unwrap();
            total += estimate_message(&m, &ByteEstimate, EstimateOptions::default());
        }
    }
    total
}

#[test]
fn after_a_v2_compaction_the_context_tokens_count_the_replayed_history() {
    let mut s = long_questions();
    let settings = CompactionSettings {
        keep_recent_tokens: 600,
        ..Default::default()
    };
    let options = PlanOptions {
        method: Some("remote".into()),
        ..Default::default()
    };
    let p = plan_compaction(&s, &settings, options).unwrap();
    // The shell retains every real user message (within the 64,000-token budget).
    let retained: Vec<Value> = (0..10)
        .map(|i| {
            let text = format!("requirement {i}: ").repeat(150);
            json!({"type":"message","role":"user","content":[{"type":"input_text","text":text}]})
        })
        .collect();
    let answer = stream(&[
        json!({"type":"response.output_item.done","item":{"type":"compaction","encrypted_content":"RU5D".repeat(200)}}),
        json!({"type":"response.completed","response":{"usage":{"input_tokens":5000,"output_tokens":90,"total_tokens":5090}}}),
    ]);
    let c = commit_openai(&mut s, &p, "openai", Lane::OpenAiV2, &answer, retained, 5).unwrap();
    let sent = sent_tokens(&s, "openai");
    assert!(
        sent > 4000,
        "the request replays the retained questions ({sent} tokens)"
    );
    let within = |t: u64| t.abs_diff(sent) * 10 <= sent;
    assert!(
        within(c.tokens_after),
        "tokensAfter {} for {sent} sent",
        c.tokens_after
    );
    let entry: Value = serde_json::from_str(&s.entry_json(c.index)).unwrap();
    assert_eq!(entry["tokensAfter"], c.tokens_after);
    // The accounting without a named reader counts the same, a turn later too.
    s.append_message(json!({"role":"user","content":"next ".repeat(100)}), 9)
        .unwrap();
    let sent = sent_tokens(&s, "openai");
    let counted = build_counted_context(&s, &BuildOptions::default(), &HistoryOptions::default())
        .unwrap()
        .estimated_tokens(&s);
    assert!(within(counted), "{counted} counted for {sent} sent");
    // Another provider's reader is sent the summary and the kept turns: counted as such.
    let other = BuildOptions {
        replay_provider: Some("azure".into()),
        ..Default::default()
    };
    let ctx = build_counted_context(&s, &other, &HistoryOptions::default()).unwrap();
    let plain = build_context(&s, &other).unwrap();
    assert_eq!(ctx.estimated_tokens(&s), plain.estimated_tokens(&s));
    assert!(ctx.estimated_tokens(&s) < sent / 2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any text: the V1 reader answers or refuses with E_SUMMARIZER; an answer's item is a
    /// compaction kept in the history.
    #[test]
    fn the_v1_reader_reads_or_refuses(text in ".{0,300}") {
        match read_compact_answer(&text) {
            Ok((history, item)) => prop_assert!(history.contains(&item)),
            Err(e) => prop_assert_eq!(e.code(), ErrorCode::Summarizer),
        }
    }

    /// Streams cut anywhere: exactly the complete ones read, and a cut before
    /// `response.completed` is a coded error.
    #[test]
    fn a_v2_stream_cut_anywhere_reads_only_when_complete(cut in 0usize..400, items in 0usize..3) {
        let mut events: Vec<Value> = (0..items)
            .map(|_| json!({"type":"response.output_item.done","item":{"type":"compaction","encrypted_content":"E"}}))
            .collect();
        events.push(json!({"type":"response.completed"}));
        let text = stream(&events);
        let end = cut.min(text.len());
        let result = read_stream(&text[..end]);
        let complete = end >= text.len() - 2;
        match result {
            Ok(s) => {
                prop_assert!(complete && items == 1);
                prop_assert_eq!(&s.item["type"], "compaction");
            }
            Err(e) => {
                prop_assert_eq!(e.code(), ErrorCode::Summarizer);
                prop_assert!(!complete || items != 1);
            }
        }
    }

    /// Arbitrary event lines never panic the V2 reader.
    #[test]
    fn the_v2_reader_takes_any_lines(lines in proptest::collection::vec("(data: |event: |: )?.{0,40}", 0..12)) {
        let _ = read_stream(&lines.join("\n"));
    }
}
