//! The per-entry facts of the load pass (issue 22): equal to what parsing each message gives,
//! on the conformance sessions, on generated sessions and on hand-made edge cases, and kept
//! in step by appends and edits.

use crate::common;
use ctxfold::context::convert::{adopted_form, verify_adopted_forms};
use ctxfold::session::{LoadOptions, Session};
use ctxfold::tokens::verify_recorded_facts;
use ctxfold_testkit::{generate, GenOptions};
use serde_json::json;

fn load(bytes: Vec<u8>) -> Session {
    Session::load(bytes, LoadOptions::default()).unwrap()
}

/// Message entries whose facts the load pass records (all but the rare roles).
fn ordinary_messages(s: &Session) -> usize {
    (0..s.len())
        .filter(|&i| {
            let e = s.entry(i).unwrap();
            e.kind() == ctxfold::session::EntryKind::Message
                && !matches!(
                    e.role(),
                    Some(
                        ctxfold::session::message::Role::FileMention
                            | ctxfold::session::message::Role::CompactionSummary
                    )
                )
        })
        .count()
}

#[test]
fn conformance_sessions() {
    for file in ["large-session/session.jsonl", "rules/session.jsonl"] {
        let s = load(common::read(file));
        let compared = verify_recorded_facts(&s).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(
            compared,
            ordinary_messages(&s),
            "{file}: every message has facts"
        );
        assert!(compared > 30, "{file}: {compared}");
        let adopted = verify_adopted_forms(&s).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(adopted > 20, "{file}: {adopted} adopted");
    }
}

#[test]
fn generated_sessions() {
    for seed in 1..6 {
        let opts = GenOptions {
            seed,
            entries: 2_000,
            ..GenOptions::default()
        };
        let s = load(generate(&opts));
        let compared = verify_recorded_facts(&s).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(compared, ordinary_messages(&s), "seed {seed}");
        let adopted = verify_adopted_forms(&s).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert!(adopted > 1_000, "seed {seed}: {adopted} adopted");
    }
}

fn session_of(messages: &[&str]) -> Vec<u8> {
    common::message_chain(messages)
}

/// Shapes that stress the in-pass measure: escapes of every kind, surrogate pairs and lone
/// surrogates, repeated keys, numbers that JavaScript prints differently, blank error turns,
/// hidden calls and results, content of the wrong type.
const EDGE_CASES: &[&str] = &[
    r#"{"role":"user","content":"a\nb\u00e9\ud83d\ude00\"\\\/\t\u0001"}"#,
    r#"{"role":"user","content":"lone \ud83d here"}"#,
    r#"{"role":"user","content":[{"type":"text","text":"x"},{"type":"text","text":"yy","text":"zzzzz"},5,{"type":"image","data":"d"}]}"#,
    r#"{"role":"user","content":5}"#,
    r#"{"role":"user","content":null}"#,
    r#"{"role":"user","content":"first","content":[{"type":"text","text":"second"}]}"#,
    r#"{"role":"developer","content":[{"type":"text","text":"dev"}]}"#,
    r#"{"role":"assistant","content":[{"type":"thinking","thinking":"t","thinkingSignature":"sig\u00e9"},{"type":"redactedThinking","data":"xxxxxxxx"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"src/a.ts","n":1.50,"big":12345678901234567890,"neg":-0,"e":1e3,"s":"q\u0041\/"}},{"type":"anthropicServerTool","block":{"k":[1, 2 ,3]}}],"provider":"p","model":"m","usage":{"input":10,"output":2},"stopReason":"toolUse"}"#,
    r#"{"role":"assistant","content":[{"type":"toolCall","id":"c2","name":"edit","arguments":{"path":"a","path":"b"}}],"stopReason":"stop"}"#,
    r#"{"role":"assistant","content":[{"type":"toolCall","id":"c3","name":"write","arguments":{"p\u0061th":"x"}}]}"#,
    r#"{"role":"assistant","content":[{"type":"toolCall","id":"c4","name":"read","arguments":null,"contextOmitted":true},{"type":"toolCall","id":"c5","name":"read","arguments":{"path":"hidden"},"contextOmitted":1}]}"#,
    r#"{"role":"assistant","content":[{"type":"toolCall","id":"c6","name":"read","arguments":{"path":"\ud83d"}}]}"#,
    r#"{"role":"assistant","content":"  \n ","stopReason":"error"}"#,
    r#"{"role":"assistant","content":[{"type":"text","text":" \u00a0\n"},{"type":"thinking","thinking":"\u3000","thinkingSignature":""}],"stopReason":"error"}"#,
    r#"{"role":"assistant","content":[{"type":"thinking","thinking":" ","thinkingSignature":"s"}],"stopReason":"error","usage":{"input":5}}"#,
    r#"{"role":"assistant","content":[],"stopReason":"aborted","usage":{"input":5},"retryRecovery":{"a":1}}"#,
    r#"{"role":"assistant","stopReason":"error","retryRecovery":0,"usage":5}"#,
    r#"{"role":"assistant","content":{}}"#,
    r#"{"role":"assistant","content":[{"type":"toolCall","id":"c7","name":"read","arguments":{"path":"a","k":{"k":1,"k":2}}}]}"#,
    r#"{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"out"}],"isError":false,"useless":true,"prunedAt":1.5e3}"#,
    r#"{"role":"toolResult","toolCallId":"c\u0031","toolName":5,"content":"plain","isError":true,"isError":false,"contextOmitted":"yes"}"#,
    r#"{"role":"toolResult","toolCallId":"c2","content":[{"type":"text","text":"x"}],"contextOmitted":0}"#,
    r#"{"role":"toolResult","toolCallId":"c3","content":true}"#,
    r#"{"role":"custom","customType":"interrupted-thinking","content":[{"type":"text","text":"c"},{"type":"image"}]}"#,
    r#"{"role":"hookMessage","customType":"h","content":"legacy"}"#,
    r#"{"role":"bashExecution","command":"ls -la","output":"a\nb","exitCode":0}"#,
    r#"{"role":"pythonExecution","code":"print(1)","output":5}"#,
    r#"{"role":"branchSummary","summary":"went back","fromId":"x"}"#,
    r#"{"role":"compactionSummary","summary":"s","tokensBefore":5}"#,
    r#"{"role":"fileMention","files":[{"path":"a","content":"b"}]}"#,
    r#"{"role":"martian","content":5}"#,
    r#"{"content":[{"type":"text","text":"no role"}],"role":"user"}"#,
    r#"{"role":5,"content":"x"}"#,
];

#[test]
fn edge_cases_equal_their_parse() {
    let s = load(session_of(EDGE_CASES));
    verify_recorded_facts(&s).unwrap();
    // Left to the parse: the rare roles (compactionSummary, fileMention messages), and tool
    // calls whose arguments cannot be measured without building them (a repeated key, an
    // escaped key). A lone surrogate escape is measured, as U+FFFD.
    let without: Vec<usize> = (0..s.len()).filter(|&i| !s.has_facts(i)).collect();
    assert_eq!(without, [8, 9, 18, 28, 29]);
    assert_eq!(
        s.entry_tokens(1, Default::default()),
        4,
        "lone \u{fffd} here"
    );
    let calls = s.file_call_facts(11).unwrap();
    assert_eq!(calls[0].path.as_ref(), "\u{fffd}");
    // Their estimates still come out right, through the parse.
    let t = |i| s.entry_tokens(i, Default::default());
    assert_eq!(t(8), 1 + 3, "edit + {{\"path\":\"b\"}}");
    assert_eq!(t(28), 1);
}

/// The provider message of an entry, told from its facts (what `adoptLlmParts` hands JS),
/// agrees with the conversion on every edge case, and says "convert it" where the conversion
/// rewrites more than `attribution`.
#[test]
fn adopted_forms_agree_with_the_conversion() {
    let mut cases = EDGE_CASES.to_vec();
    cases.extend([
        r#"{"role":"user","content":"x","attribution":"agent"}"#,
        r#"{"role":"user","attribution":null,"content":"x","attribution":5}"#,
        r#"{"role":"developer","content":"d"}"#,
        r#"{"role":"toolResult","toolCallId":"c9","attribution":"user","content":[{"type":"text","text":"t"}]}"#,
        r#"{"role":"toolResult","toolCallId":"c9","content":[],"prunedAt":"later"}"#,
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"c8","name":"x","arguments":{},"contextOmitted":false}]}"#,
    ]);
    let s = load(session_of(&cases));
    let compared = verify_adopted_forms(&s).unwrap();
    let form = |i| adopted_form(&s, i);
    assert_eq!(form(0), 2, "user");
    assert_eq!(form(6), 3, "developer");
    assert_eq!(form(7), 1, "assistant");
    assert_eq!(
        form(10),
        0,
        "contextOmitted tool calls are removed by the conversion"
    );
    assert_eq!(form(8), 0, "no facts: arguments with a repeated key");
    assert_eq!(form(19), 0, "a pruned result is merged by the conversion");
    assert_eq!(form(20), 0, "an omitted result is left out");
    assert_eq!(form(21), 3, "contextOmitted 0 is not truthy");
    assert_eq!(form(26), 0, "bashExecution");
    let n = EDGE_CASES.len();
    assert_eq!(form(n), 1, "a user message with its own attribution");
    assert_eq!(form(n + 1), 1);
    assert_eq!(form(n + 3), 3, "replaced in place");
    assert_eq!(form(n + 4), 3, "prunedAt that is not a number");
    assert_eq!(form(n + 5), 1, "contextOmitted false keeps the call");
    assert!(compared >= 18, "{compared}");
}

#[test]
fn lines_that_are_not_utf8_are_parsed_when_asked() {
    let mut bytes = session_of(&[r#"{"role":"user","content":"caf_ ok"}"#]);
    let at = bytes.iter().position(|&b| b == b'_').unwrap();
    bytes[at] = 0xff;
    let s = load(bytes);
    assert!(!s.has_facts(0));
    assert_eq!(s.entry_tokens(0, Default::default()), 3);
}

#[test]
fn appends_and_edits_keep_facts_in_step() {
    let mut s = load(session_of(&[
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"r1","name":"read","arguments":{"path":"a.ts"}}],"stopReason":"toolUse","usage":{"input":100,"output":5}}"#,
        r#"{"role":"toolResult","toolCallId":"r1","toolName":"read","content":[{"type":"text","text":"0123456789"}]}"#,
    ]));
    s.append_message(
        json!({"role":"user","content":[{"type":"text","text":"next question"}]}),
        1,
    )
    .unwrap();
    assert!(s.has_facts(2));
    assert_eq!(s.entry_tokens(2, Default::default()), 4);
    s.set_entry_field(
        1,
        &["message"],
        "content",
        &json!([{"type":"text","text":"a much longer output than before"}]),
    )
    .unwrap();
    s.set_entry_field(1, &["message"], "prunedAt", &json!(7))
        .unwrap();
    assert!(s.has_facts(1));
    assert_eq!(s.entry_tokens(1, Default::default()), 8);
    assert!(s.result_facts(1).unwrap().pruned);
    verify_recorded_facts(&s).unwrap();
    let calls = s.file_call_facts(0).unwrap();
    assert_eq!(
        (calls[0].path.as_ref(), calls[0].id.as_ref()),
        ("a.ts", "r1")
    );
}

/// A prune records the facts of the lines it rewrites from the old facts and the edit, without
/// scanning them: they equal the parse and a fresh load of the saved file on every shape of
/// tool result (members before and after the replaced values, absent ones appended, escaped
/// keys, repeated members, whitespace, hidden and attributed results, blocks that are gone).
#[test]
fn pruned_lines_keep_facts_in_step() {
    use ctxfold::pruning::{apply_prune, PruneCandidate, PrunePlan, PruneReason};
    let results = [
        r#"{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"0123456789abcdef"}],"isError":false}"#,
        r#"{"role":"toolResult","prunedAt":null,"toolCallId":"c2","toolName":"bash","content":"plain text"}"#,
        r#"{"role":"toolResult","toolCallId":"c3","toolName":"read","isError":true}"#,
        r#"{"role":"toolResult","toolCallId":"c\u0034","c\u006fntent":[{"type":"text","text":"esc"}],"t\u006folName":"grep"}"#,
        r#"{"role":"toolResult","attribution":"user","useless":true,"toolCallId":"c5","content":[{"type":"image","data":"x","mimeType":"image/png"}],"toolName":"read"}"#,
        r#"{"role":"toolResult","toolCallId":"c6","content":[{"type":"toolCall","id":"x","name":"read","arguments":{},"contextOmitted":true}],"toolName":"t"}"#,
        r#"{"role":"toolResult","toolCallId":"c7","toolName":"read","content":[{"type":"text","text":"hidden"}],"contextOmitted":true}"#,
        r#"{"role":"toolResult" , "toolCallId" : "c8" , "content" : [ ] , "toolName" : "x" }"#,
        r#"{"role":"toolResult","content":"first","toolCallId":"c9","content":[{"type":"text","text":"second"}],"toolName":"édit","prunedAt":"later"}"#,
        r#"{"role":"toolResult","prunedAt":false,"content":[{"type":"text","text":"z"}],"toolName":"n","toolCallId":"c10","details":{"k":[1,2]}}"#,
    ];
    let mut s = load(session_of(&results));
    let candidates: Vec<PruneCandidate> = (0..s.len())
        .map(|i| PruneCandidate {
            index: i,
            id: s.entry(i).unwrap().id().to_string(),
            tool_name: String::new(),
            tool_call_id: String::new(),
            tokens_before: 0,
            reason: PruneReason::Age,
            notice: if i % 2 == 0 {
                "[Output truncated - 12 tokens]".into()
            } else {
                "a \"quoted\"\nnotice é".into()
            },
            savings: 0,
        })
        .collect();
    assert!((0..s.len()).all(|i| s.has_facts(i)));
    let plan = PrunePlan {
        candidates,
        tokens_saved: 0,
        now: 1_767_600_000_000,
    };
    apply_prune(&mut s, &plan).unwrap();
    verify_recorded_facts(&s).unwrap();
    let fresh = load(s.to_bytes());
    for i in 0..s.len() {
        assert!(s.has_facts(i), "{i}");
        assert_eq!(s.recorded_facts(i), fresh.recorded_facts(i), "{i}");
        assert_eq!(s.message_json(i), fresh.message_json(i), "{i}");
        assert!(s.result_facts(i).unwrap().pruned, "{i}");
    }
    assert_eq!(s.entry_tokens(6, Default::default()), 0, "hidden");
    assert_eq!(s.entry_tokens(1, Default::default()), 5);
}

/// A tool result whose line is not UTF-8 has no recorded facts: pruning reads them from the
/// parse, scans the line for the members to replace, and the new line (its bad bytes were in
/// the content) gets facts again.
#[test]
fn pruning_a_result_that_is_not_utf8() {
    use ctxfold::pruning::{apply_prune, PruneCandidate, PrunePlan, PruneReason};
    let mut bytes = session_of(&[
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"r1","name":"read","arguments":{"path":"a"}}]}"#,
        r#"{"role":"toolResult","toolCallId":"r1","toolName":"read","content":[{"type":"text","text":"bad _ byte"}]}"#,
    ]);
    let at = bytes.iter().position(|&b| b == b'_').unwrap();
    bytes[at] = 0xff;
    let mut s = load(bytes);
    assert!(!s.has_facts(1));
    let f = s.result_facts(1).unwrap();
    assert_eq!(
        (&*f.tool_call_id, &*f.tool_name, f.pruned),
        ("r1", "read", false)
    );
    assert!(s.result_facts(0).is_none());
    let plan = PrunePlan {
        candidates: vec![PruneCandidate {
            index: 1,
            id: "e1".into(),
            tool_name: "read".into(),
            tool_call_id: "r1".into(),
            tokens_before: 3,
            reason: PruneReason::Age,
            notice: "[Output truncated - 3 tokens]".into(),
            savings: 0,
        }],
        tokens_saved: 0,
        now: 5,
    };
    apply_prune(&mut s, &plan).unwrap();
    assert!(s.has_facts(1));
    assert!(s.result_facts(1).unwrap().pruned);
    verify_recorded_facts(&s).unwrap();
    assert_eq!(
        s.message_json(1).unwrap(),
        r#"{"role":"toolResult","toolCallId":"r1","toolName":"read","content":[{"type":"text","text":"[Output truncated - 3 tokens]"}],"prunedAt":5}"#
    );
}

/// Tool-call arguments are measured in the pass that validates them (`scan_arguments`): on
/// arguments valid or not (a literal cut short, a repeated or escaped key, deep or odd
/// values), the load takes the line as an entry exactly when it is JSON, and the facts of
/// the entries equal their parse.
#[test]
fn arguments_measured_while_crossed_equal_their_parse() {
    use proptest::prelude::*;
    let atom = prop_oneof![
        Just("true"),
        Just("false"),
        Just("null"),
        Just("tru"),
        Just("nul"),
        Just("truex"),
        Just("12"),
        Just("-0"),
        Just("1.50"),
        Just("1e3"),
        Just("01"),
        Just("\"p\""),
        Just("\"a\\nb\\u00e9\""),
        Just("\"\\ud83d\""),
        Just("\"bad\\x\""),
        Just("[]"),
        Just("{}"),
        Just("[1,]"),
    ];
    let key = prop_oneof![Just("path"), Just("p\\u0061th"), Just("content"), Just("n")];
    let args =
        proptest::collection::vec((key, atom.clone(), 0usize..3), 0..5).prop_map(|members| {
            let inner: Vec<String> = members
                .into_iter()
                .map(|(k, v, nest)| format!("\"{k}\":{}{v}{}", "[".repeat(nest), "]".repeat(nest)))
                .collect();
            format!("{{{}}}", inner.join(","))
        });
    let args = prop_oneof![4 => args, 1 => atom.prop_map(str::to_string)];
    let name = prop_oneof![Just("read"), Just("edit"), Just("bash")];
    proptest!(ProptestConfig::with_cases(600), |(args in args, name in name)| {
        let message = format!(
            r#"{{"role":"assistant","content":[{{"type":"toolCall","id":"c1","name":"{name}","arguments":{args}}}],"stopReason":"toolUse"}}"#
        );
        let bytes = session_of(&[&message]);
        // serde_json refuses the lone surrogate, which `JSON.parse` (and the load) accept.
        let valid =
            serde_json::from_str::<serde_json::Value>(&message.replace("\\ud83d", "\\ufffd"))
                .is_ok();
        let s = load(bytes);
        prop_assert_eq!(s.len(), usize::from(valid), "{}", message);
        verify_recorded_facts(&s).map_err(|e| TestCaseError::fail(format!("{message}: {e}")))?;
    });
}
