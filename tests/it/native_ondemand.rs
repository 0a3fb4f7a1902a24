//! Anthropic on-demand compaction (beta `compact-2026-09-04`, spec: compaction §13): the commit
//! of the API's signed block, its replay (the whole block, for the provider that wrote it),
//! the background swap (the block replaces exactly the sent prefix; entries appended meanwhile
//! stay after it), the preserved-thinking fallback and the reader over arbitrary responses.
//! The request is written by the JS shell (tests/js/native-ondemand.test.mjs).

use crate::common::Jsonl;
use ctxfold::compaction::native::anthropic::{replayed_block, PRESERVE_KEY};
use ctxfold::compaction::native::anthropic_ondemand::{commit_ondemand, read_response, supports};
use ctxfold::compaction::native::lanes::{anthropic_ineligibility, anthropic_lanes, NativeModel};
use ctxfold::compaction::plan::{plan_compaction, CompactionPlan, PlanOptions};
use ctxfold::context::convert::convert_to_llm;
use ctxfold::context::{build_context, BuildOptions};
use ctxfold::error::ErrorCode;
use ctxfold::session::{CompactionBody, Session};
use ctxfold::settings::CompactionSettings;
use proptest::prelude::*;
use serde_json::{json, Value};

const MODEL: &str = "claude-opus-4-6";

fn llm_for(s: &Session, provider: Option<&str>) -> Vec<Value> {
    let opts = BuildOptions {
        replay_provider: provider.map(str::to_string),
        replay_anthropic: true,
        ..Default::default()
    };
    let ctx = build_context(s, &opts).unwrap();
    convert_to_llm(s, &ctx)
}

/// Six turns of ~100 tokens; `thinking`: the last assistants open with a signed thinking block.
fn session(thinking: bool) -> Session {
    let mut j = Jsonl::new();
    let mut parent: Option<String> = None;
    for i in 0..6 {
        let (u, a) = (format!("u{i}"), format!("a{i}"));
        j = j.user(&u, parent.as_deref(), &format!("question {i} ").repeat(30));
        let mut content = vec![json!({"type": "text", "text": format!("answer {i} ").repeat(30)})];
        if thinking {
            content.insert(
                0,
                json!({"type": "thinking", "thinking": "hmm", "thinkingSignature": format!("sig{i}")}),
            );
        }
        j = j.message(
            &a,
            Some(&u),
            json!({"role": "assistant", "content": content,
            "provider": "anthropic", "model": MODEL, "stopReason": "stop",
            "usage": {"input": if i == 5 { 80_000 } else { 10 }, "output": 5, "cacheRead": 0, "cacheWrite": 0}}),
        );
        parent = Some(a);
    }
    j.load()
}

fn plan_for(s: &Session) -> CompactionPlan {
    let o = CompactionSettings {
        keep_recent_tokens: 60,
        remote_enabled: true,
        ..Default::default()
    };
    plan_compaction(
        s,
        &o,
        PlanOptions {
            method: Some("remote".into()),
            ..Default::default()
        },
    )
    .unwrap()
}

/// The server's answer, as compact JSON text.
fn answer(summary: &str) -> String {
    format!(
        r#"{{"id":"msg_1","type":"message","role":"assistant","model":"{MODEL}","content":[{{"type":"compaction","content":"{summary}","signature":"EuYBCkQYAiJA=="}}],"stop_reason":"compaction","usage":{{"input_tokens":70000,"output_tokens":900}}}}"#
    )
}

const BLOCK: &str = r#"{"type":"compaction","content":"SUMMARY","signature":"EuYBCkQYAiJA=="}"#;

#[test]
fn the_lane_is_chosen_where_the_model_has_it() {
    let m = |id: &str| NativeModel {
        id: id.into(),
        provider: Some("anthropic".into()),
        ..NativeModel::default()
    };
    // On demand first where the model has it, then the threshold lane as its fallback.
    assert_eq!(
        anthropic_lanes(&m("claude-opus-4-6")),
        ["ondemand", "threshold"]
    );
    assert_eq!(
        anthropic_lanes(&m("claude-sonnet-4-6-20260101")),
        ["ondemand", "threshold"]
    );
    // Threshold compaction without the on-demand beta (a line the on-demand list lacks).
    assert!(!supports("claude-sonnet-4-7"));
    assert_eq!(anthropic_lanes(&m("claude-sonnet-4-7")), ["threshold"]);
    // On demand only: a line the threshold lane does not list is now eligible.
    assert_eq!(anthropic_lanes(&m("claude-haiku-5-5")), ["ondemand"]);
    // The host keeps a model on the threshold lane.
    let mut pinned = m("claude-opus-4-6");
    pinned.remote.no_on_demand = true;
    assert_eq!(anthropic_lanes(&pinned), ["threshold"]);
    assert_eq!(
        anthropic_ineligibility(Some(&m("claude-haiku-5-5")), None),
        None
    );
    assert!(anthropic_ineligibility(Some(&m("claude-haiku-4-5")), None).is_some());
}

#[test]
fn the_signed_block_round_trips_byte_for_byte() {
    let mut s = session(false);
    let plan = plan_for(&s);
    let c = commit_ondemand(
        &mut s,
        &plan,
        "anthropic",
        MODEL,
        &answer("SUMMARY"),
        true,
        5,
    )
    .unwrap();
    let body: CompactionBody = s.body(c.index).unwrap();
    assert_eq!(body.summary, "SUMMARY");
    assert_eq!(body.method.as_deref(), Some("remote"));
    let record = &body.preserve_data.as_ref().unwrap()[PRESERVE_KEY];
    assert_eq!(record["beta"], "compact-2026-09-04");
    assert_eq!(record["signature"], "EuYBCkQYAiJA==");
    assert_eq!(
        ctxfold::support::json::js::stringify(&record["block"]),
        BLOCK
    );
    // The replay for the provider that wrote it carries the whole block, unchanged.
    let llm = llm_for(&s, Some("anthropic"));
    let payload = &llm[0]["providerPayload"];
    assert_eq!(payload["type"], "anthropicCompaction");
    assert_eq!(
        ctxfold::support::json::js::stringify(&payload["block"]),
        BLOCK
    );
    // Another provider reads the summary text only.
    assert_eq!(
        llm_for(&s, Some("bedrock"))[0]["providerPayload"],
        Value::Null
    );
    // The next compaction's request replays the same block (the shell sends `block`).
    let text = format!(
        "{}{}\n",
        s.to_jsonl(),
        json!({"type": "message", "id": "u9", "parentId": c.id, "timestamp": "2026-01-02T00:00:00.000Z",
            "message": {"role": "user", "content": "more ".repeat(200), "timestamp": 3}})
    );
    let s2 = Session::load(text.into_bytes(), Default::default()).unwrap();
    let again = plan_for(&s2);
    let replayed = replayed_block(&again, Some("anthropic")).unwrap();
    assert_eq!(
        ctxfold::support::json::js::stringify(&replayed["block"]),
        BLOCK
    );
}

#[test]
fn the_background_swap_keeps_what_was_appended_meanwhile() {
    let mut s = session(false);
    let plan = plan_for(&s);
    let kept_before = plan.preparation.recent.len();
    // The conversation goes on while the request runs: two turns are appended, nothing edited.
    s.append_message(
        json!({"role": "user", "content": "meanwhile one", "timestamp": 1}),
        10,
    )
    .unwrap();
    s.append_message(
        json!({"role": "assistant", "content": [{"type": "text", "text": "meanwhile two"}],
            "provider": "anthropic", "model": MODEL, "stopReason": "stop",
            "usage": {"input": 10, "output": 1, "cacheRead": 0, "cacheWrite": 0}, "timestamp": 2}),
        11,
    )
    .unwrap();
    // The plain commit refuses a session that moved on; the on-demand commit swaps.
    let c = commit_ondemand(
        &mut s,
        &plan,
        "anthropic",
        MODEL,
        &answer("SUMMARY"),
        true,
        12,
    )
    .unwrap();
    let llm = llm_for(&s, None);
    let texts: Vec<String> = llm.iter().map(|m| m.to_string()).collect();
    assert!(texts[0].contains("SUMMARY"));
    // Exactly the sent prefix is replaced: the kept tail, then both appended turns, in order.
    let tail = &texts[1..];
    assert!(tail.len() >= 2);
    assert!(tail[tail.len() - 2].contains("meanwhile one"));
    assert!(tail[tail.len() - 1].contains("meanwhile two"));
    assert!(!texts.iter().any(|t| t.contains("question 0")));
    assert_eq!(tail.len(), kept_before + 2);
    // The compaction went below the newest entry.
    assert_eq!(s.leaf(), Some(c.index));
}

#[test]
fn a_swap_after_the_leaf_left_the_path_or_another_compaction_is_stale() {
    let mut s = session(false);
    let plan = plan_for(&s);
    // The leaf moved to an earlier entry (another branch): nothing is written.
    s.branch("a2").unwrap();
    s.append_message(
        json!({"role": "user", "content": "elsewhere", "timestamp": 1}),
        10,
    )
    .unwrap();
    let before = s.to_jsonl();
    let e = commit_ondemand(&mut s, &plan, "anthropic", MODEL, &answer("S"), true, 12).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StalePlan);
    assert_eq!(s.to_jsonl(), before);
    // Another compaction landed first.
    let mut s = session(false);
    let plan = plan_for(&s);
    commit_ondemand(
        &mut s,
        &plan,
        "anthropic",
        MODEL,
        &answer("FIRST"),
        true,
        12,
    )
    .unwrap();
    let before = s.to_jsonl();
    let e = commit_ondemand(&mut s, &plan, "anthropic", MODEL, &answer("S"), true, 13).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StalePlan);
    assert_eq!(s.to_jsonl(), before);
}

#[test]
fn failed_answers_change_nothing() {
    let mut s = session(false);
    let plan = plan_for(&s);
    let before = s.to_jsonl();
    for bad in [
        "",
        "{",
        r#"{"stop_reason":"end_turn","content":[{"type":"text","text":"x"}]}"#,
        r#"{"stop_reason":"compaction","content":[{"type":"compaction","content":"S"}]}"#,
    ] {
        let e = commit_ondemand(&mut s, &plan, "anthropic", MODEL, bad, true, 5).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Summarizer, "{bad}");
        assert_eq!(s.to_jsonl(), before);
    }
}

#[test]
fn thinking_in_a_tail_that_starts_mid_turn_falls_back_to_the_summary_text() {
    // A kept tail that opens with the user's message keeps its thinking valid: the block replays.
    let mut s = session(true);
    let plan = plan_for(&s);
    let first = plan.preparation.recent[0];
    let starts_with_user = s.message_json(first).unwrap().contains("\"role\":\"user\"");
    commit_ondemand(
        &mut s,
        &plan,
        "anthropic",
        MODEL,
        &answer("SUMMARY"),
        true,
        5,
    )
    .unwrap();
    let payload = llm_for(&s, Some("anthropic"))[0]["providerPayload"].clone();
    assert_eq!(payload.is_null(), !starts_with_user);
    // A tail of the whole last turn (it opens with the user's message): after a request that
    // carried the host's system prompt and tools the block replays before its thinking; after
    // one without them the thinking was written under other ones, so the summary goes as text.
    for live in [true, false] {
        let mut s = session(true);
        let mut plan = plan_for(&s);
        plan.preparation.recent = vec![s.require("u5").unwrap(), s.require("a5").unwrap()];
        let c = commit_ondemand(
            &mut s,
            &plan,
            "anthropic",
            MODEL,
            &answer("SUMMARY"),
            live,
            5,
        );
        c.unwrap();
        let llm = llm_for(&s, Some("anthropic"));
        assert_eq!(llm[0]["providerPayload"].is_null(), !live, "live: {live}");
        assert!(llm[0].to_string().contains("SUMMARY"));
    }
    // Without thinking in the tail, the block replays either way.
    let mut s = session(false);
    let plan = plan_for(&s);
    commit_ondemand(
        &mut s,
        &plan,
        "anthropic",
        MODEL,
        &answer("SUMMARY"),
        false,
        5,
    )
    .unwrap();
    assert!(!llm_for(&s, Some("anthropic"))[0]["providerPayload"].is_null());
    // A tail cut inside a turn (its first kept message is the assistant's, with thinking):
    // the block would continue a turn whose start it replaced, so the summary goes as text.
    let mut s = session(true);
    let mut plan = plan_for(&s);
    let a5 = s.require("a5").unwrap();
    plan.preparation.recent = vec![a5];
    commit_ondemand(
        &mut s,
        &plan,
        "anthropic",
        MODEL,
        &answer("SUMMARY"),
        true,
        5,
    )
    .unwrap();
    let llm = llm_for(&s, Some("anthropic"));
    assert_eq!(llm[0]["providerPayload"], Value::Null);
    assert!(llm[0].to_string().contains("SUMMARY"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any response shape: no panic; an accepted one stopped for compaction with exactly one
    /// signed block with a summary, kept whole.
    #[test]
    fn the_reader_never_panics_and_accepts_only_one_signed_block(
        stop in prop::option::of(prop_oneof![Just("compaction"), Just("end_turn"), Just("max_tokens")]),
        blocks in prop::collection::vec(
            (prop_oneof![Just("compaction"), Just("text"), Just("thinking")],
             prop::option::of("[ a-z]{0,6}"),
             prop::option::of(prop_oneof![Just(json!("sig")), Just(json!("")), Just(json!(3)), Just(Value::Null)])),
            0..3),
    ) {
        let content: Vec<Value> = blocks.iter().map(|(t, c, sig)| {
            let mut b = json!({"type": t});
            if let Some(c) = c { b["content"] = json!(c); }
            if let Some(sig) = sig { b["signature"] = sig.clone(); }
            b
        }).collect();
        let mut v = json!({"content": content});
        if let Some(stop) = stop { v["stop_reason"] = json!(stop); }
        let text = v.to_string();
        match read_response(&text) {
            Ok(r) => {
                prop_assert_eq!(stop, Some("compaction"));
                prop_assert_eq!(blocks.len(), 1);
                prop_assert_eq!(&r.block, &content[0]);
                prop_assert!(!r.content.trim().is_empty());
                prop_assert_eq!(r.signature.as_str(), "sig");
            }
            Err(e) => prop_assert_eq!(e.code(), ErrorCode::Summarizer),
        }
        // Arbitrary prefixes of the text never panic.
        for cut in [0, text.len() / 2] {
            let _ = read_response(&text[..cut]);
        }
    }
}
