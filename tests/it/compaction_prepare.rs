//! `prepareCompaction`: conformance on large-session/prepare.json and spec compaction §10.1
//! cases 14–19 (retained history, split across a previous record, calibration, custom
//! messages, reindexed snapshots, unreadable remote compactions).

use crate::common;
use crate::common::{assistant_msg, Jsonl};
use ctxfold::compaction::prepare::{prepare_compaction, Preparation, PrepareOptions};
use ctxfold::session::Session;
use ctxfold::settings::CompactionSettings;
use ctxfold::tokens::EstimateOptions;
use ctxfold::Error;
use serde_json::json;

fn settings(keep: u64) -> CompactionSettings {
    CompactionSettings {
        keep_recent_tokens: keep,
        ..Default::default()
    }
}

fn prepare(s: &Session, keep: u64) -> Preparation {
    prepare_compaction(s, &settings(keep), &PrepareOptions::default()).unwrap()
}

fn ids(s: &Session, v: &[usize]) -> Vec<String> {
    v.iter().map(|&i| s.entries()[i].id().to_string()).collect()
}

fn tokens(s: &Session, id: &str) -> u64 {
    s.entry_tokens(s.index_of(id).unwrap(), EstimateOptions::default())
}

#[test]
fn conformance_prepare_json() {
    let s = common::fixture_session();
    let p = common::fixture_json("prepare.json");
    let want = &p["prepare"];
    let settings = CompactionSettings::from_json(&p["settings"]).unwrap();
    let prep = prepare_compaction(&s, &settings, &PrepareOptions::default()).unwrap();
    let path = s.active_path();
    let pos = |i: usize| path.iter().position(|&x| x == i).unwrap() as u64;
    assert_eq!(
        prep.first_kept_entry_id,
        want["firstKeptEntryId"].as_str().unwrap()
    );
    assert_eq!(
        pos(prep.first_kept),
        want["firstKeptBranchIndex"].as_u64().unwrap()
    );
    assert_eq!(prep.is_split_turn, want["isSplitTurn"].as_bool().unwrap());
    assert_eq!(
        prep.turn_start.map(pos),
        want["turnStartBranchIndex"].as_u64()
    );
    assert_eq!(prep.tokens_before, want["tokensBefore"].as_u64().unwrap());
    assert_eq!(
        prep.keep_recent_tokens,
        want["keepRecentTokensEffective"].as_u64().unwrap()
    );
    assert_eq!(
        prep.previous_summary.is_some(),
        want["hasPreviousSummary"].as_bool().unwrap()
    );
    let counts = &want["counts"];
    assert_eq!(
        prep.messages_to_summarize.len() as u64,
        counts["messagesToSummarize"].as_u64().unwrap()
    );
    assert_eq!(
        prep.turn_prefix.len() as u64,
        counts["turnPrefixMessages"].as_u64().unwrap()
    );
    assert_eq!(
        prep.recent.len() as u64,
        counts["recentMessages"].as_u64().unwrap()
    );
    let est = &want["estimatedTokens"];
    assert_eq!(
        prep.tokens_to_summarize,
        est["messagesToSummarize"].as_u64().unwrap()
    );
    assert_eq!(
        prep.tokens_turn_prefix,
        est["turnPrefixMessages"].as_u64().unwrap()
    );
    assert_eq!(prep.tokens_recent, est["recentMessages"].as_u64().unwrap());
    // The journal is untouched.
    assert_eq!(
        s.to_bytes(),
        Session::load(s.to_bytes(), Default::default())
            .unwrap()
            .to_bytes()
    );
}

/// spec: compaction §10.1 case 14 — retained history across two compactions.
#[test]
fn retained_history_is_re_expanded() {
    let j = Jsonl::new()
        .user("A", None, "aaaa aaaa aaaa aaaa")
        .user("B1", Some("A"), "b1 text here")
        .entry("model_change", "mc", Some("B1"), json!({"model":"x/y"}))
        .user("B2", Some("mc"), "b2 text is here too");
    let s = j.load();
    let keep = tokens(&s, "B1") + tokens(&s, "B2");
    let p = prepare(&s, keep);
    assert_eq!(ids(&s, &p.messages_to_summarize), ["A"]);
    assert_eq!(ids(&s, &p.recent), ["B1", "B2"]);

    let j = j
        .compaction("C1", Some("B2"), "Summary A", "B1")
        .entry(
            "thinking_level_change",
            "t",
            Some("C1"),
            json!({"thinkingLevel":"high"}),
        )
        .user("C", Some("t"), "c is the next one");
    let s = j.load();
    let before = s.to_bytes();
    let keep = tokens(&s, "B2") + tokens(&s, "C");
    let p = prepare(&s, keep);
    assert_eq!(p.previous_summary.as_deref(), Some("Summary A"));
    assert_eq!(ids(&s, &p.messages_to_summarize), ["B1"]);
    assert!(p.turn_prefix.is_empty());
    assert_eq!(ids(&s, &p.recent), ["B2", "C"]);
    assert_eq!(p.first_kept_entry_id, "B2");
    assert_eq!(
        s.to_bytes(),
        before,
        "preparation never changes the journal"
    );

    let j = j
        .compaction("C2", Some("C"), "Summary A+B1", "B2")
        .user("D", Some("C2"), "d");
    let s = j.load();
    let ctx = ctxfold::context::build_context(&s, &Default::default()).unwrap();
    assert_eq!(ctx.messages.len(), 4, "summary, B2, C, D");
    let p = prepare(&s, tokens(&s, "D"));
    assert_eq!(p.previous_summary.as_deref(), Some("Summary A+B1"));
    assert_eq!(ids(&s, &p.messages_to_summarize), ["B2", "C"]);
    assert_eq!(ids(&s, &p.recent), ["D"]);
    assert_eq!(p.first_kept_entry_id, "D");
}

/// spec: compaction §10.1 case 15 — a split turn that starts before the previous record.
#[test]
fn split_turn_across_a_previous_record() {
    let call = json!({"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"retained.ts"}}],"stopReason":"toolUse"});
    let result = json!({"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"export const x = 1;"}],"isError":false});
    let s = Jsonl::new()
        .user("A", None, "first")
        .user("B", Some("A"), "please read retained.ts")
        .message("call", Some("B"), call)
        .message("result", Some("call"), result)
        .compaction("P", Some("result"), "Summary A", "B")
        .message("answer", Some("P"), assistant_msg("done", "stop"))
        .load();
    let p = prepare(&s, 1);
    assert_eq!(p.previous_summary.as_deref(), Some("Summary A"));
    assert!(p.is_split_turn);
    assert!(p.messages_to_summarize.is_empty());
    assert_eq!(ids(&s, &p.turn_prefix), ["B", "call", "result"]);
    assert_eq!(ids(&s, &p.recent), ["answer"]);
    assert_eq!(p.first_kept_entry_id, "answer");
}

/// spec: compaction §10.1 case 16 — the keep budget is calibrated over the retained region.
#[test]
fn calibration_includes_the_retained_region() {
    let long = "B is long. ".repeat(400);
    let j = Jsonl::new()
        .user("A", None, "a")
        .user("B", Some("A"), &long)
        .compaction("P", Some("B"), "Summary", "B")
        .user("C", Some("P"), "c asks something");
    let with_answer = |input: u64| {
        let mut answer = assistant_msg("the answer", "stop");
        answer["usage"] = json!({"input": input, "output": 1, "cacheRead": 0, "cacheWrite": 0});
        j.clone().message("answer", Some("C"), answer).load()
    };
    // The provider saw B, C and the answer: with B counted in the estimate the ratio is 1
    // and the keep budget stays as configured.
    let s0 = with_answer(0);
    let s = with_answer(tokens(&s0, "B") + tokens(&s0, "C") + tokens(&s0, "answer"));
    let keep = tokens(&s, "C") + tokens(&s, "answer");
    let p = prepare(&s, keep);
    assert_eq!(p.ratio, 1.0);
    assert_eq!(ids(&s, &p.messages_to_summarize), ["B"]);
    assert_eq!(ids(&s, &p.recent), ["C", "answer"]);
    assert_eq!(p.first_kept_entry_id, "C");
}

/// spec: compaction §10.1 case 17 — retained custom messages and branch summaries.
#[test]
fn retained_custom_messages_and_branch_summaries() {
    let s = Jsonl::new()
        .user("A", None, "a")
        .entry(
            "custom_message",
            "note",
            Some("A"),
            json!({"customType":"n","content":"Retained note","display":true}),
        )
        .entry(
            "branch_summary",
            "bs",
            Some("note"),
            json!({"fromId":"A","summary":"Retained branch context"}),
        )
        .compaction("P", Some("bs"), "Summary", "note")
        .entry(
            "custom",
            "state",
            Some("P"),
            json!({"customType":"x","data":{}}),
        )
        .user("C1", Some("state"), "c1")
        .user("C2", Some("C1"), "c2")
        .load();
    let p = prepare(&s, 1);
    assert_eq!(ids(&s, &p.messages_to_summarize), ["note", "bs", "C1"]);
    assert_eq!(ids(&s, &p.recent), ["C2"]);
}

/// spec: compaction §10.1 case 18 — `firstKeptEntryId` naming an entry after the record.
#[test]
fn first_kept_after_the_record() {
    let s = Jsonl::new()
        .user("A", None, "a")
        .compaction("P", Some("A"), "Summary", "C")
        .user("B", Some("P"), "b")
        .user("C", Some("B"), "c")
        .user("D", Some("C"), "d")
        .load();
    let p = prepare(&s, 1);
    assert_eq!(ids(&s, &p.messages_to_summarize), ["B", "C"]);
    assert_eq!(ids(&s, &p.recent), ["D"]);
}

/// spec: compaction §10.1 case 19 — an unreadable provider-native compaction is skipped.
#[test]
fn unreadable_remote_compactions_are_re_expanded() {
    let s = Jsonl::new()
        .user("A", None, "a")
        .user("B", Some("A"), "b")
        .compaction("L", Some("B"), "Summary A", "B")
        .user("C", Some("L"), "c")
        .entry(
            "compaction",
            "R",
            Some("C"),
            json!({"summary":"remote","firstKeptEntryId":"C","tokensBefore":9,
                "preserveData":{"openaiRemoteCompaction":{"provider":"openai","replacementHistory":[]}}}),
        )
        .user("D", Some("R"), "d")
        .user("E", Some("D"), "e")
        .load();
    // Remote enabled, no active model: the payload is reused.
    let p = prepare(&s, 1);
    assert_eq!(p.previous_summary.as_deref(), Some("remote"));
    assert_eq!(ids(&s, &p.messages_to_summarize), ["D"]);
    assert_eq!(ids(&s, &p.recent), ["E"]);
    // An Anthropic active model cannot read it: back to the local summary.
    let p = prepare_compaction(
        &s,
        &settings(1),
        &PrepareOptions {
            active_provider: Some("anthropic".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(p.previous_summary.as_deref(), Some("Summary A"));
    assert_eq!(ids(&s, &p.messages_to_summarize), ["B", "C", "D"]);
    assert_eq!(ids(&s, &p.recent), ["E"]);
}

#[test]
fn already_compacted_and_nothing_to_compact() {
    let s = Jsonl::new()
        .user("A", None, "a")
        .compaction("P", Some("A"), "S", "A")
        .load();
    assert_eq!(
        prepare_compaction(&s, &settings(1), &PrepareOptions::default()),
        Err(Error::AlreadyCompacted)
    );
    let s = Jsonl::new().user("A", None, "short").load();
    assert!(matches!(
        prepare_compaction(&s, &settings(20_000), &PrepareOptions::default()),
        Err(Error::NothingToCompact { .. })
    ));
    let s = Jsonl::new().load();
    assert!(matches!(
        prepare_compaction(&s, &settings(1), &PrepareOptions::default()),
        Err(Error::NothingToCompact { .. })
    ));
    // A reset boundary after the last compaction discards it.
    let s = Jsonl::new()
        .user("A", None, "a")
        .compaction("P", Some("A"), "S", "A")
        .user("B", Some("P"), "b")
        .entry("reset_boundary", "R", Some("B"), json!({}))
        .user("C", Some("R"), "c")
        .user("D", Some("C"), "d")
        .load();
    let p = prepare(&s, 1);
    assert_eq!(p.previous_summary, None);
    assert_eq!(ids(&s, &p.messages_to_summarize), ["C"]);
    // The same when the boundary is appended to a loaded session without one.
    let mut s = Jsonl::new()
        .user("A", None, "a")
        .compaction("P", Some("A"), "S", "A")
        .user("B", Some("P"), "b")
        .load();
    assert!(prepare(&s, 1).previous_summary.is_some());
    s.append("reset_boundary", serde_json::Map::new(), 0)
        .unwrap();
    for text in ["c", "d"] {
        let m = json!({"role": "user", "content": text, "timestamp": 0});
        s.append_message(m, 0).unwrap();
    }
    let p = prepare(&s, 1);
    assert_eq!(p.previous_summary, None);
    assert_eq!(p.messages_to_summarize.len(), 1);
}
