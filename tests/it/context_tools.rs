//! The tools the model can call (issue 38 item 3) in the core: their definitions,
//! `recall_history` within its budget, `context_status`, and the recall pointer a compaction
//! writes when the host offers the tools (`recallTool`).

use ctxfold::compaction::commit::{commit_compaction, commit_handoff, commit_snapcompact};
use ctxfold::compaction::plan::{plan_compaction, CompactionPlan, PlanOptions};
use ctxfold::compaction::snapcompact::ArchiveOptions;
use ctxfold::render::shape::resolve::Target;
use ctxfold::render::{BillingFamily, FallbackFonts, ShapeVariant};
use ctxfold::session::{CompactionBody, NewSession, SequentialIds, Session};
use ctxfold::settings::{CompactionSettings, Strategy};
use ctxfold::summary::recall::HistoryIndex;
use ctxfold::summary::tools::{
    context_status, recall_history, run_context_tool, text_tokens, tool_definitions, RecallArgs,
    ToolFigures, CONTEXT_STATUS, DEFAULT_RECALL_TOKENS, MIN_RECALL_TOKENS, RECALL_HISTORY,
};
use ctxfold::tokens::threshold_tokens;
use ctxfold::ErrorCode;
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{json, Value};

const T0: i64 = 1_700_000_000_000;

fn new_session(id: &str) -> Session {
    Session::create(
        NewSession {
            id: id.into(),
            cwd: "/w".into(),
            now: T0,
            parent_session: None,
        },
        Box::new(SequentialIds::new()),
    )
}

fn append(s: &mut Session, message: Value) -> String {
    let now = T0 + s.len() as i64 * 1000;
    s.append_message(message, now).unwrap()
}

fn assistant(text: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages", "provider": "anthropic", "model": "claude-opus-4-7", "stopReason": "stop"})
}

/// A user turn and a tool round holding exact identifiers; returns the ids of the user turn
/// and of the tool result.
fn planted(s: &mut Session) -> (String, String) {
    let u = append(
        s,
        json!({"role": "user", "content": "Deploy to port 8443; the bug is #4512 in src/deploy/run.rs"}),
    );
    append(
        s,
        json!({"role": "assistant", "content": [{"type": "toolCall", "id": "t1", "name": "bash",
            "arguments": {"command": "git show 3f9a2c1e"}}],
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-opus-4-7", "stopReason": "toolUse"}),
    );
    let r = append(
        s,
        json!({"role": "toolResult", "toolCallId": "t1", "toolName": "bash", "isError": true,
            "content": [{"type": "text", "text": "error: E_STALE_PLAN at commit 3f9a2c1e"}]}),
    );
    append(s, assistant("I see the failure."));
    (u, r)
}

fn padding(s: &mut Session, turns: usize) {
    for t in 0..turns {
        append(
            s,
            json!({"role": "user", "content": format!("please continue with the next step {}", "and keep going ".repeat(20))}),
        );
        append(
            s,
            assistant(&format!(
                "continuing as asked {}",
                "nothing new here ".repeat(20 + t % 2)
            )),
        );
    }
}

fn settings(recall_tool: bool) -> CompactionSettings {
    CompactionSettings {
        keep_recent_tokens: 400,
        recall_tool,
        ..CompactionSettings::default()
    }
}

fn answer_all(plan: &mut CompactionPlan, session: &Session, text: &str) {
    for _ in 0..50 {
        if plan.is_complete() {
            return;
        }
        let ids: Vec<String> = plan.pending().into_iter().map(|r| r.id.clone()).collect();
        for id in ids {
            plan.answer(session, &id, text).unwrap();
        }
    }
    panic!("the plan never completes");
}

fn compact_with(s: &mut Session, st: &CompactionSettings, text: &str) -> CompactionBody {
    let mut plan = plan_compaction(s, st, PlanOptions::default()).unwrap();
    answer_all(&mut plan, s, text);
    let c = commit_compaction(s, &plan, T0 + s.len() as i64 * 1000).unwrap();
    s.body(c.index).unwrap()
}

fn pointers(text: &str) -> usize {
    text.matches("<recall>").count()
}

#[test]
fn the_definitions_name_both_tools_with_json_schema_parameters() {
    let defs = tool_definitions();
    assert_eq!(defs.len(), 2);
    let recall = &defs[0];
    assert_eq!(recall["name"], RECALL_HISTORY);
    let description = recall["description"].as_str().unwrap();
    assert!(description.contains("verbatim"), "{description}");
    assert!(!description.contains("---"));
    let p = &recall["parameters"];
    assert_eq!(p["type"], "object");
    assert_eq!(p["required"], json!(["query"]));
    assert_eq!(p["properties"]["query"]["type"], "string");
    assert_eq!(p["properties"]["limit"]["type"], "integer");
    for k in ["query", "limit"] {
        let d = p["properties"][k]["description"].as_str().unwrap();
        assert!(d.len() > 20, "{k}: {d}");
    }
    let status = &defs[1];
    assert_eq!(status["name"], CONTEXT_STATUS);
    assert_eq!(status["parameters"]["properties"], json!({}));
    assert!(status["parameters"].get("required").is_none());
    assert!(status["description"].as_str().unwrap().len() > 40);
}

#[test]
fn recall_history_finds_compacted_text_with_entry_time_and_role() {
    let mut s = new_session("tools1");
    let (_, result) = planted(&mut s);
    padding(&mut s, 6);
    compact_with(&mut s, &settings(false), "Work went on.");
    let mut ix = HistoryIndex::new();
    let args = RecallArgs::from_json(&json!({"query": "E_STALE_PLAN"})).unwrap();
    let answer = recall_history(&mut ix, &s, &args, DEFAULT_RECALL_TOKENS).unwrap();
    let first = answer.lines().nth(1).unwrap();
    assert!(
        first.starts_with(&format!("[entry {result} · 2023-11-14T22:13:")),
        "{answer}"
    );
    assert!(first.contains("· toolResult]"), "{first}");
    assert!(
        first.contains("error: E_STALE_PLAN at commit 3f9a2c1e"),
        "{first}"
    );
    // The compaction's anchors hold it too (ranked after the tool output).
    assert!(
        answer.starts_with("2 stored entries match \"E_STALE_PLAN\", best first:\n"),
        "{answer}"
    );
    assert!(answer
        .lines()
        .nth(2)
        .unwrap()
        .contains("· compactionSummary]"));

    // Nothing matched: said plainly.
    let none = RecallArgs::from_json(&json!({"query": "zyzzyva"})).unwrap();
    let answer = recall_history(&mut ix, &s, &none, DEFAULT_RECALL_TOKENS).unwrap();
    assert!(answer.starts_with("No stored entry"), "{answer}");
    assert!(answer.contains("\"zyzzyva\""));
}

#[test]
fn a_small_budget_leaves_results_out_and_says_so() {
    let mut s = new_session("tools2");
    for i in 0..30 {
        append(
            &mut s,
            json!({"role": "user", "content": format!("the widget number {i} {}", "is described at length ".repeat(30))}),
        );
    }
    let mut ix = HistoryIndex::new();
    let args = RecallArgs::from_json(&json!({"query": "widget", "limit": 30})).unwrap();
    let full = recall_history(&mut ix, &s, &args, 50_000).unwrap();
    assert_eq!(full.lines().count(), 31, "{full}");
    let small = recall_history(&mut ix, &s, &args, 300).unwrap();
    assert!(text_tokens(&small) <= 300, "{}", text_tokens(&small));
    assert!(small.lines().count() < 31);
    let left = small.lines().last().unwrap();
    assert!(
        left.starts_with('(') && left.contains("more left out to stay within 300 tokens"),
        "{left}"
    );
}

#[test]
fn bad_arguments_are_invalid_and_name_what_to_send() {
    for bad in [
        json!(null),
        json!("x"),
        json!({}),
        json!({"query": "   "}),
        json!({"query": 5}),
        json!({"query": "x", "limit": 0}),
        json!({"query": "x", "limit": 1.5}),
        json!({"query": "x", "limit": "many"}),
    ] {
        let e = RecallArgs::from_json(&bad).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{bad}");
        assert!(e.to_string().contains("recall_history"), "{e}");
    }
    // A model may write the limit as a string; a large one is capped.
    assert_eq!(
        RecallArgs::from_json(&json!({"query": "x", "limit": "3"}))
            .unwrap()
            .limit,
        3
    );
    assert_eq!(
        RecallArgs::from_json(&json!({"query": "x", "limit": 1e9}))
            .unwrap()
            .limit,
        50
    );
    let s = new_session("tools3");
    let mut ix = HistoryIndex::new();
    let st = CompactionSettings::default();
    let f = ToolFigures::default();
    let unknown = run_context_tool(&mut ix, &s, &st, "read_file", &json!({}), &f).unwrap_err();
    assert_eq!(unknown.code(), ErrorCode::InvalidArgument);
    let extra =
        run_context_tool(&mut ix, &s, &st, CONTEXT_STATUS, &json!({"x": 1}), &f).unwrap_err();
    assert_eq!(extra.code(), ErrorCode::InvalidArgument);
    for bad in [
        json!({"contextWindow": 0}),
        json!({"contextWindow": -1}),
        json!({"contextTokens": 1.5}),
        json!({"recallTokens": MIN_RECALL_TOKENS - 1}),
        json!({"provider": 3}),
        json!({"window": 3}),
        json!([1]),
    ] {
        let e = ToolFigures::from_json(&bad).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{bad}");
    }
    // Without a window there is no status.
    let e = context_status(&s, &st, &f).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
}

#[test]
fn context_status_reports_use_threshold_and_the_last_compaction() {
    let mut s = new_session("tools4");
    let (u, _) = planted(&mut s);
    padding(&mut s, 6);
    let st = settings(false);
    let figures = ToolFigures {
        context_window: Some(200_000),
        ..ToolFigures::default()
    };
    let before = context_status(&s, &st, &figures).unwrap();
    assert_eq!(before["lastCompaction"], Value::Null);
    assert_eq!(before["counted"], "estimate");
    let used = before["tokensUsed"].as_u64().unwrap();
    assert!(used > 500, "{before}");
    assert_eq!(before["remaining"], 200_000 - used);
    let threshold = threshold_tokens(200_000, &st);
    assert_eq!(before["threshold"], threshold);
    assert_eq!(before["untilCompaction"], threshold - used);
    assert_eq!(before["compactionEnabled"], true);

    let body = compact_with(&mut s, &st, "Work went on.");
    let after = context_status(
        &s,
        &st,
        &ToolFigures {
            context_tokens: Some(1_234),
            ..figures.clone()
        },
    )
    .unwrap();
    assert_eq!(after["tokensUsed"], 1_234);
    assert_eq!(after["counted"], "host");
    assert_eq!(after["remaining"], 200_000 - 1_234);
    let last = &after["lastCompaction"];
    assert_eq!(last["method"], "soft", "{after}");
    assert_eq!(last["firstKeptEntryId"], body.first_kept_entry_id.as_str());
    assert_eq!(last["tokensBefore"], Value::Number(body.tokens_before));
    assert_eq!(last["range"]["firstEntryId"], u.as_str());
    assert!(last["at"].as_str().unwrap().starts_with("2023-11-14T22:"));
    let last_id = last["range"]["lastEntryId"].as_str().unwrap();
    let (li, ki) = (
        s.index_of(last_id).unwrap(),
        s.index_of(&body.first_kept_entry_id).unwrap(),
    );
    assert!(li < ki);
    // The model's own threshold rule.
    let ruled = CompactionSettings::from_json(
        &json!({"keepRecentTokens": 400, "modelThresholds": {"anthropic/claude-opus-4-7": 50_000}}),
    )
    .unwrap();
    let by_model = context_status(
        &s,
        &ruled,
        &ToolFigures {
            provider: Some("anthropic".into()),
            model: Some("claude-opus-4-7".into()),
            ..figures
        },
    )
    .unwrap();
    assert_eq!(by_model["threshold"], 50_000);
}

#[test]
fn the_pointer_is_written_only_when_the_host_offers_the_tool() {
    let make = || {
        let mut s = new_session("tools5");
        planted(&mut s);
        padding(&mut s, 6);
        s
    };
    let (mut off, mut on) = (make(), make());
    let body = compact_with(&mut off, &settings(false), "Work went on.");
    assert_eq!(pointers(&body.summary), 0);
    let body = compact_with(&mut on, &settings(true), "Work went on.");
    assert_eq!(pointers(&body.summary), 1, "{}", body.summary);
    let line = body
        .summary
        .lines()
        .find(|l| l.starts_with("<recall>"))
        .unwrap();
    assert!(line.ends_with("</recall>"), "{line}");
    assert!(line.contains("`recall_history`"));
    let first = on.entries()[0].id().to_string();
    assert!(
        line.contains(&format!("entries {first} to ")),
        "{line} (first {first})"
    );
    assert!(line.contains("2023-11-14T22:13:"), "{line}");
    // Beside the anchors, before the files block.
    let at = body.summary.find("<recall>").unwrap();
    assert!(body.summary.find("</anchors>").unwrap() < at);

    // A later compaction whose summary copies the old pointer still holds one.
    padding(&mut on, 6);
    let copy = format!("Work went on.\n\n{line}");
    let body = compact_with(&mut on, &settings(true), &copy);
    assert_eq!(pointers(&body.summary), 1, "{}", body.summary);
}

#[test]
fn snapcompact_carries_the_pointer_and_a_handoff_none() {
    let make = || {
        let mut s = new_session("tools6");
        let long = |s: &mut Session, from: usize| {
            for t in from..from + 30 {
                let words: Vec<String> = (0..200)
                    .map(|i| format!("fact{t}x{i} is recorded"))
                    .collect();
                append(s, json!({"role": "user", "content": words.join(" ")}));
                append(s, assistant(&words.join(" ")));
            }
        };
        long(&mut s, 0);
        planted(&mut s);
        long(&mut s, 30);
        padding(&mut s, 6);
        s
    };
    let s = make();
    let st = CompactionSettings {
        strategy: Strategy::Snapcompact,
        ..settings(true)
    };
    let plan = plan_compaction(&s, &st, PlanOptions::default()).unwrap();
    let options = ArchiveOptions {
        model: Target {
            id: Some("claude-opus-4-7".into()),
            api: Some("anthropic-messages".into()),
        },
        shape: Some(ShapeVariant::V11on16Bw.shape(BillingFamily::Anthropic)),
        max_frames: Some(30),
        retained_user_tokens: 0,
        ..ArchiveOptions::default()
    };
    let mut snap = make();
    let now = T0 + 1_000_000;
    let c = commit_snapcompact(&mut snap, &plan, &options, &FallbackFonts::new(), now).unwrap();
    let body: CompactionBody = snap.body(c.index).unwrap();
    assert_eq!(pointers(&body.summary), 1, "{}", body.summary);
    let at = body.summary.find("<recall>").unwrap();
    assert!(at < body.summary.rfind("\nHISTORY\n").unwrap());

    // A handoff's new session does not hold the entries: no pointer.
    let st = CompactionSettings {
        strategy: Strategy::Handoff,
        ..settings(true)
    };
    let mut plan = plan_compaction(&s, &st, PlanOptions::default()).unwrap();
    answer_all(&mut plan, &s, "The handoff document.");
    let next = commit_handoff(
        &s,
        &plan,
        "next".into(),
        Box::new(SequentialIds::new()),
        99_000,
    )
    .unwrap();
    let entry: Value = serde_json::from_str(&next.entry_json(0)).unwrap();
    let content = entry["content"].as_str().unwrap();
    assert!(content.contains("<anchors>"), "{content}");
    assert!(!content.contains("<recall>"), "{content}");
}

#[test]
fn recall_tool_is_a_setting() {
    let st = CompactionSettings::from_json(&json!({"recallTool": true})).unwrap();
    assert!(st.recall_tool);
    assert!(!CompactionSettings::default().recall_tool);
    assert_eq!(st.to_json()["recallTool"], true);
    let e = CompactionSettings::from_json(&json!({"recallTool": "yes"})).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Settings);
}

/// A session of `n` turns of filler words, with `planted` identifiers at the given turns (in a
/// user turn or a tool result by parity).
fn generated(n: usize, planted: &[(usize, String)], salt: u32) -> Session {
    let mut s = new_session(&format!("gen{salt}"));
    for t in 0..n {
        let ids: Vec<&str> = planted
            .iter()
            .filter(|(at, _)| *at == t)
            .map(|(_, id)| id.as_str())
            .collect();
        let filler: Vec<String> = (0..12)
            .map(|i| format!("w{}", (t as u32 * 7 + i + salt) % 97))
            .collect();
        let text = format!(
            "{} {} {}",
            filler[..6].join(" "),
            ids.join(" and "),
            filler[6..].join(" ")
        );
        if t % 2 == 0 {
            append(&mut s, json!({"role": "user", "content": text}));
        } else {
            append(&mut s, assistant(&text));
        }
    }
    s
}

proptest! {
    #![proptest_config(Config { cases: 32, ..Config::default() })]

    /// The answer never exceeds its budget, and every planted identifier is found (its entry
    /// is in the answer, the identifier in its snippet) with the default budget.
    #[test]
    fn answers_stay_within_budget_and_find_every_planted_identifier(
        n in 20usize..400,
        at in proptest::collection::vec(0usize..400, 1..8),
        budget in MIN_RECALL_TOKENS..3_000,
        query in "[a-z0-9 _./#-]{0,120}",
        salt in 0u32..1000,
    ) {
        let planted: Vec<(usize, String)> = at
            .iter()
            .enumerate()
            .map(|(k, &t)| (t % n, format!("id{salt}x{k}_{:08x}", (t as u32).wrapping_mul(2_654_435_761))))
            .collect();
        let s = generated(n, &planted, salt);
        let mut ix = HistoryIndex::new();
        if let Ok(args) = RecallArgs::from_json(&json!({"query": query, "limit": 50})) {
            let answer = recall_history(&mut ix, &s, &args, budget).unwrap();
            prop_assert!(text_tokens(&answer) <= budget, "{} > {budget}", text_tokens(&answer));
        }
        for (t, id) in &planted {
            let args = RecallArgs::from_json(&json!({"query": id})).unwrap();
            let answer = recall_history(&mut ix, &s, &args, DEFAULT_RECALL_TOKENS).unwrap();
            prop_assert!(text_tokens(&answer) <= DEFAULT_RECALL_TOKENS);
            let entry = s.entries()[*t].id().to_string();
            prop_assert!(answer.contains(&format!("[entry {entry} ·")), "{id} at {entry}: {answer}");
            prop_assert!(answer.contains(id.as_str()), "{answer}");
        }
    }
}

#[test]
fn the_tools_own_calls_and_answers_are_not_searched() {
    let mut s = new_session("tools7");
    let u = append(
        &mut s,
        json!({"role": "user", "content": "The staging database listens on port 6432."}),
    );
    let mut ix = HistoryIndex::new();
    let st = CompactionSettings::default();
    let f = ToolFigures::default();
    let args = json!({"query": "6432"});
    append(
        &mut s,
        json!({"role": "assistant", "content": [{"type": "toolCall", "id": "r1",
            "name": "recall_history", "arguments": args}],
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-opus-4-7",
            "stopReason": "toolUse"}),
    );
    let answer = run_context_tool(&mut ix, &s, &st, RECALL_HISTORY, &args, &f).unwrap();
    append(
        &mut s,
        json!({"role": "toolResult", "toolCallId": "r1", "toolName": "recall_history",
            "content": [{"type": "text", "text": answer}], "isError": false}),
    );
    // Asked again: the user's turn only, not the call nor the answer quoting it.
    let again = run_context_tool(&mut ix, &s, &st, RECALL_HISTORY, &args, &f).unwrap();
    assert!(again.starts_with("1 stored entry match"), "{again}");
    assert!(again.contains(&format!("[entry {u} ·")), "{again}");
}
