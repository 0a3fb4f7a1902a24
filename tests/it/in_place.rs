//! The summarizer transcripts read in place (issue 42 item 1): a message whose provider form
//! is its session JSON as written is serialized from that JSON, without a parsed value; the
//! transcripts and the per-message window sizes equal those of the converted values, in every
//! dialect, on the conformance sessions, generated sessions and hand-made edge cases.

use crate::common;
use ctxfold::compaction::plan::{plan_compaction, PlanOptions};
use ctxfold::session::{LoadOptions, Session};
use ctxfold::settings::CompactionSettings;
use ctxfold::summary::request::verify_in_place_transcripts;
use ctxfold_testkit::{generate, GenOptions};

fn load(bytes: Vec<u8>) -> Session {
    Session::load(bytes, LoadOptions::default()).unwrap()
}

#[test]
fn conformance_sessions() {
    for file in ["large-session/session.jsonl", "rules/session.jsonl"] {
        let s = load(common::read(file));
        let compared = verify_in_place_transcripts(&s).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(compared > 30, "{file}: {compared}");
    }
}

#[test]
fn generated_sessions() {
    for seed in 1..4 {
        let opts = GenOptions {
            seed,
            entries: 1_500,
            ..GenOptions::default()
        };
        let s = load(generate(&opts));
        let compared =
            verify_in_place_transcripts(&s).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert!(compared > 1_000, "seed {seed}: {compared}");
    }
}

fn session_of(messages: &[String]) -> Session {
    load(common::message_chain(messages))
}

/// Shapes where reading in place could part from the converted value: escapes (a lone
/// surrogate, escaped keys), duplicate keys, members of the wrong type, blocks that are not
/// objects, arguments JavaScript prints differently from their text, useless pairs (one an
/// error), pruned and omitted results, omitted calls, an assistant before an
/// interrupted-thinking marker (its trailing unsigned thinking goes), nesting near the value
/// parser's limit, images, string content, and a long result cut for the summarizer.
fn edge_cases() -> Vec<String> {
    let deep = format!(
        r#"{{"role":"user","content":[{{"type":"text","text":"deep","meta":{}1{}}}]}}"#,
        "[".repeat(120),
        "]".repeat(120)
    );
    let long = format!(
        r#"{{"role":"toolResult","toolCallId":"c9","toolName":"bash","content":[{{"type":"text","text":"{}"}}]}}"#,
        "line é\\n".repeat(600)
    );
    let mut m: Vec<String> = [
        r#"{"role":"user","content":"look at <conversation> and \ud83d alone, \u00e9\ud83d\ude00"}"#,
        r#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b","text":"c"},5,"s",{"type":"image","data":"x","mimeType":"image/png"},{"type":"image","data":"y"}]}"#,
        r#"{"r\u006fle":"user","content":"escaped key"}"#,
        r#"{"role":"user","content":{"type":"text","text":"object content"}}"#,
        r#"{"role":"developer","content":"HANDOFF: goal"}"#,
        r#"{"role":"assistant","content":[{"type":"thinking","thinking":"<thinking>nested</thinking>"},{"type":"text","text":"t1"},{"type":"text","text":"t2"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a<b>.ts","n":1.50,"big":12345678901234567890,"neg":-0,"e":1e3,"s":"q\u0041\/","d":1,"d":2}},{"type":"toolCall","id":"u1","name":"ls","arguments":[1,"x",null]},{"type":"toolCall","id":"c2","name":"bash","arguments":null},{"type":"toolCall","id":"c3","name":"functions.x"}],"stopReason":"toolUse"}"#,
        r#"{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"body"}],"isError":false}"#,
        r#"{"role":"toolResult","toolCallId":"u1","toolName":"ls","content":"noise","useless":true}"#,
        r#"{"role":"toolResult","toolCallId":"c2","toolName":"bash","content":[{"type":"text","text":"boom"}],"isError":true,"useless":true}"#,
        r#"{"role":"toolResult","toolCallId":"c3","toolName":"x","content":[{"type":"text","text":"old"},{"type":"image","data":"z"}],"prunedAt":1}"#,
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"c4","name":"read","arguments":{},"contextOmitted":true},{"type":"toolCall","id":"c5","name":"read","arguments":{"path":"kept"}}]}"#,
        r#"{"role":"toolResult","toolCallId":"c4","toolName":"read","content":"hidden","contextOmitted":true}"#,
        r#"{"role":"toolResult","toolCallId":"c5","toolName":"read","content":"shown","attribution":"agent"}"#,
        r#"{"role":"assistant","content":"plain string answer","stopReason":"stop"}"#,
        r#"{"role":"assistant","content":[{"type":"text","text":"before"},{"type":"thinking","thinking":"signed","thinkingSignature":"s"},{"type":"thinking","thinking":"cut"}],"stopReason":"aborted"}"#,
        r#"{"role":"custom","customType":"interrupted-thinking","content":"stopped","display":false}"#,
        r#"{"role":"assistant","content":[{"type":"thinking","thinking":"only thought"}],"stopReason":"stop"}"#,
        r#"{"role":"assistant","content":5}"#,
        r#"{"role":"toolResult","toolCallId":7,"content":[]}"#,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    m.push(deep);
    m.push(long);
    m.push(r#"{"role":"user","content":"thanks"}"#.to_string());
    m
}

#[test]
fn edge_case_messages() {
    let s = session_of(&edge_cases());
    let compared = verify_in_place_transcripts(&s).unwrap_or_else(|e| panic!("{e}"));
    assert!(compared >= 20, "{compared}");
}

/// The plan's first history request reads its window in place: it carries what the
/// converted messages give (the window is the whole history here).
#[test]
fn plan_requests_carry_the_converted_transcript() {
    // Without the messages the typed reading refuses (content of the wrong type), which the oracle
    // below converts through that reading.
    let mut messages = edge_cases();
    messages.retain(|m| !m.contains("object content") && !m.contains(r#""content":5"#));
    let s = session_of(&messages);
    for model in [
        None,
        Some("claude-sonnet-4-5"),
        Some("gpt-5"),
        Some("glm-4.6"),
    ] {
        let settings = CompactionSettings {
            keep_recent_tokens: 1,
            ..Default::default()
        };
        let plan = plan_compaction(&s, &settings, plan_options(model)).unwrap();
        let history = plan.pending()[0].prompt.clone();
        let entries = &plan.preparation.messages_to_summarize;
        assert!(entries.len() > 15, "{model:?}: {}", entries.len());
        let dialect = ctxfold::compaction::plan::summary_dialect(&plan_options(model));
        let want = ctxfold::summary::serialize::serialize_conversation_for_summary_in(
            &converted(&s, entries),
            dialect,
        );
        assert!(
            history.starts_with(&format!("<conversation>\n{want}\n</conversation>")),
            "{model:?}"
        );
    }
}

fn plan_options(model: Option<&str>) -> PlanOptions {
    let mut options = PlanOptions::default();
    options.model.id = model.map(str::to_string);
    options
}

/// The provider messages of `entries`, converted (the context's view of the session).
fn converted(s: &Session, entries: &[usize]) -> Vec<serde_json::Value> {
    let messages: Vec<ctxfold::context::ContextMessage> = entries
        .iter()
        .filter_map(|&i| ctxfold::context::ContextMessage::from_entry(s, i).unwrap())
        .collect();
    ctxfold::context::convert::convert_messages(s, &messages)
}
