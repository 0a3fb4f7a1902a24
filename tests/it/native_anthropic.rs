//! Anthropic server compaction (spec: compaction §13): the commit of the API's answer (the
//! summary text, the signed block under `preserveData.anthropicCompaction`), the replay on the
//! rebuilt context for Anthropic readers of that provider, what a later compaction does with
//! the block, and the reader over arbitrary responses. The request is written by the JS shell
//! (tests/js/native-anthropic.test.mjs checks it field by field).

use crate::common::Jsonl;
use ctxfold::compaction::commit::commit_compaction;
use ctxfold::compaction::native::anthropic::{
    commit_anthropic, read_response, replayed_block, request_parts, PRESERVE_KEY,
};
use ctxfold::compaction::native::openai::leads_with_summary;
use ctxfold::compaction::plan::{plan_compaction, PlanOptions};
use ctxfold::compaction::prepare::{prepare_compaction, PrepareOptions};
use ctxfold::context::convert::convert_to_llm;
use ctxfold::context::{build_context, BuildOptions};
use ctxfold::session::{CompactionBody, Session};
use ctxfold::settings::CompactionSettings;
use proptest::prelude::*;
use serde_json::{json, Value};

const MODEL: &str = "claude-opus-4-6";

/// The built context's provider messages for a reader of `provider` (`anthropic`: an
/// Anthropic Messages reader, else a Responses one).
fn llm_for(s: &Session, provider: Option<&str>, anthropic: bool) -> Vec<Value> {
    let opts = BuildOptions {
        replay_provider: provider.map(str::to_string),
        replay_anthropic: anthropic,
        ..Default::default()
    };
    let ctx = build_context(s, &opts).unwrap();
    convert_to_llm(s, &ctx)
}

fn settings() -> CompactionSettings {
    CompactionSettings {
        keep_recent_tokens: 60,
        ..Default::default()
    }
}

/// Six turns of ~100 tokens; the last assistant reports 80,000 context tokens.
fn session() -> Session {
    let mut j = Jsonl::new();
    let mut parent: Option<String> = None;
    for i in 0..6 {
        let (u, a) = (format!("u{i}"), format!("a{i}"));
        j = j.user(&u, parent.as_deref(), &format!("question {i} ").repeat(30));
        let input = if i == 5 { 80_000 } else { 10 };
        j = j.message(
            &a,
            Some(&u),
            json!({"role": "assistant",
            "content": [{"type": "text", "text": format!("answer {i} ").repeat(30)}],
            "provider": "anthropic", "model": "claude-opus-4-6", "stopReason": "stop",
            "usage": {"input": input, "output": 5, "cacheRead": 0, "cacheWrite": 0}}),
        );
        parent = Some(a);
    }
    j.load()
}

fn answer(summary: &str, signature: Option<&str>) -> String {
    let mut block = json!({"type": "compaction", "content": summary});
    if let Some(s) = signature {
        block["encrypted_content"] = s.into();
    }
    json!({"type": "message", "role": "assistant", "content": [block], "stop_reason": "compaction",
        "usage": {"input_tokens": 70_000, "cache_read_input_tokens": 5_000}})
    .to_string()
}

fn plan_for(s: &Session) -> ctxfold::compaction::plan::CompactionPlan {
    let mut o = settings();
    o.remote_enabled = true;
    plan_compaction(
        s,
        &o,
        PlanOptions {
            method: Some("remote".into()),
            custom_instructions: Some("the API".into()),
            ..Default::default()
        },
    )
    .unwrap()
}

#[test]
fn failed_answers_change_nothing() {
    let mut s = session();
    let plan = plan_for(&s);
    let before = s.to_jsonl();
    for bad in ["", "{", r#"{"content":[]}"#, &answer(" ", Some("x"))] {
        let e = commit_anthropic(&mut s, &plan, "anthropic", MODEL, bad, 5).unwrap_err();
        assert_eq!(e.code(), ctxfold::error::ErrorCode::Summarizer);
        assert_eq!(s.to_jsonl(), before);
    }
}

/// Sets `key` of the plan's previous `anthropicCompaction` record.
fn record_set(plan: &mut ctxfold::compaction::plan::CompactionPlan, key: &str, v: Value) {
    let p = plan.preparation.previous_preserve_data.as_mut().unwrap();
    p[PRESERVE_KEY][key] = v;
}

#[test]
fn commit_stores_the_signed_block_and_replays_it() {
    let mut s = session();
    let plan = plan_for(&s);
    let c = commit_anthropic(
        &mut s,
        &plan,
        "anthropic",
        MODEL,
        &answer("SUMMARY", Some("SIG")),
        5,
    )
    .unwrap();
    let body: CompactionBody = s.body(c.index).unwrap();
    assert_eq!(body.summary, "SUMMARY");
    assert_eq!(body.method.as_deref(), Some("remote"));
    assert_eq!(body.short_summary.as_deref(), Some("Remote compaction"));
    assert_eq!(
        body.preserve_data.as_ref().unwrap()[PRESERVE_KEY],
        json!({"provider": "anthropic", "content": "SUMMARY", "encryptedContent": "SIG",
            "model": "claude-opus-4-6", "usedTokens": 75_000})
    );
    let llm = llm_for(&s, Some("anthropic"), true);
    assert_eq!(
        llm[0]["providerPayload"],
        json!({"type": "anthropicCompaction", "provider": "anthropic", "content": "SUMMARY",
            "encryptedContent": "SIG"})
    );
    assert!(llm[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("SUMMARY"));
    // The kept entries stay after the summary; other readers get the summary text alone.
    let plain = llm_for(&s, None, false);
    assert_eq!(llm.len(), plain.len());
    assert_eq!(plain[0]["providerPayload"], Value::Null);
    for (provider, anthropic) in [(Some("bedrock"), true), (Some("anthropic"), false)] {
        assert_eq!(
            llm_for(&s, provider, anthropic)[0]["providerPayload"],
            Value::Null
        );
    }

    // The next compaction reads the real summary (for any provider) and drops the stale block.
    let prep = prepare_compaction(
        &s,
        &settings(),
        &PrepareOptions {
            active_provider: Some("openai".into()),
            leaf: None,
        },
    );
    assert!(
        matches!(&prep, Err(e) if e.code() == ctxfold::error::ErrorCode::AlreadyCompacted),
        "the path ends with the compaction"
    );
    let text = format!(
        "{}{}\n",
        s.to_jsonl(),
        json!({"type": "message", "id": "u9", "parentId": c.id, "timestamp": "2026-01-02T00:00:00.000Z",
            "message": {"role": "user", "content": "more ".repeat(200), "timestamp": 3}})
    );
    let mut s2 = Session::load(text.into_bytes(), Default::default()).unwrap();
    let prep = prepare_compaction(&s2, &settings(), &PrepareOptions::default()).unwrap();
    assert_eq!(prep.previous_summary.as_deref(), Some("SUMMARY"));
    // What the shell writes the next request from: the stored block, the tail, the focus.
    let again = plan_for(&s2);
    let parts: serde_json::Map<String, Value> = request_parts(&s2, &again)
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    assert_eq!(parts["anthropic"]["encryptedContent"], "SIG");
    // Issue 36 (one engine): the core says whether the previous summary goes as the signed
    // block — only to the provider that wrote it, and only with a text — not the JS shell.
    assert!(leads_with_summary(&again));
    assert_eq!(
        replayed_block(&again, Some("anthropic")),
        Some(json!({"content": "SUMMARY", "encryptedContent": "SIG"}))
    );
    for other in [Some("bedrock"), Some(""), None] {
        assert_eq!(replayed_block(&again, other), None, "{other:?}");
    }
    let mut edited = again.clone();
    record_set(&mut edited, "encryptedContent", json!(""));
    assert_eq!(
        replayed_block(&edited, Some("anthropic")),
        Some(json!({"content": "SUMMARY"})),
        "an empty signature is left out"
    );
    record_set(&mut edited, "content", json!(""));
    assert_eq!(replayed_block(&edited, Some("anthropic")), None);
    record_set(&mut edited, "content", json!(7));
    assert_eq!(replayed_block(&edited, Some("anthropic")), None);
    assert_eq!(parts["customInstructions"], "the API");
    assert_eq!(parts["extraContext"], json!([]));
    assert_eq!(parts["maxTokens"], 13_107);
    assert_eq!(
        parts["recent"],
        again.preparation.recent.len(),
        "one provider message per kept entry here"
    );
    let mut local = plan_compaction(&s2, &settings(), PlanOptions::default()).unwrap();
    while let Some(req) = local.pending().first().map(|r| r.id.clone()) {
        local.answer(&s2, &req, "local").unwrap();
    }
    let c2 = commit_compaction(&mut s2, &local, 9).unwrap();
    let body: CompactionBody = s2.body(c2.index).unwrap();
    assert!(body
        .preserve_data
        .as_ref()
        .is_none_or(|p| p.get(PRESERVE_KEY).is_none()));
}

proptest! {
    #[test]
    fn reader_never_panics(text in ".{0,200}") {
        let _ = read_response(&text);
    }

    #[test]
    fn a_block_is_accepted_iff_its_summary_has_text(summary in ".{0,40}", sig in proptest::option::of("[a-zA-Z0-9+/=]{0,20}")) {
        let got = read_response(&answer(&summary, sig.as_deref()));
        prop_assert_eq!(got.is_ok(), !summary.trim().is_empty());
        if let Ok(s) = got {
            prop_assert_eq!(s.content, summary);
            prop_assert_eq!(s.encrypted_content, sig.filter(|x| !x.is_empty()));
            prop_assert_eq!(s.used_tokens, Some(75_000));
        }
    }

    #[test]
    fn extra_blocks_around_one_compaction_are_ignored(texts in proptest::collection::vec("[a-z ]{0,10}", 0..4)) {
        let mut content: Vec<Value> = texts.iter().map(|t| json!({"type": "text", "text": t})).collect();
        content.insert(content.len() / 2, json!({"type": "compaction", "content": "S"}));
        let text = json!({"content": content}).to_string();
        prop_assert_eq!(read_response(&text).unwrap().content, "S");
    }
}
