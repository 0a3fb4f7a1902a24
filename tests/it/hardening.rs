//! Regression tests of what the hardening work (issue 9) found and fixed: tool results without
//! their call in the LLM context (property tests), summaries far over `maxTokens` (fault
//! tests), and every crashing fuzz input kept under `tests/fuzz-regressions/`.

use crate::common::{assistant_msg, Jsonl};
use ctxfold::compaction::commit::commit_compaction;
use ctxfold::compaction::plan::{plan_compaction, PlanOptions};
use ctxfold::context::{build_context, BuildOptions};
use ctxfold::navigation::{commit_navigation, plan_navigation, NavigateOptions, NavigationAnswer};
use ctxfold::settings::CompactionSettings;
use ctxfold::summary::retry::answer_problem;
use ctxfold::{AgentMessage, ErrorCode};
use ctxfold_testkit::invariants;
use serde_json::{json, Value};

fn call(id: &str) -> Value {
    json!({"role":"assistant","content":[{"type":"toolCall","id":id,"name":"read","arguments":{"path":"a"}}],
        "provider":"anthropic","model":"m","stopReason":"toolUse"})
}

fn result(id: &str) -> Value {
    json!({"role":"toolResult","toolCallId":id,"toolName":"read","content":[{"type":"text","text":"x"}],"isError":false})
}

fn roles(s: &ctxfold::Session, transcript: bool) -> Vec<String> {
    let ctx = build_context(
        s,
        &BuildOptions {
            transcript,
            ..Default::default()
        },
    )
    .unwrap();
    ctx.agent_messages(s)
        .map(|m| match m {
            AgentMessage::User(_) => "user".to_string(),
            AgentMessage::Assistant(a) => {
                format!("assistant{:?}", a.tool_call_ids().collect::<Vec<_>>())
            }
            AgentMessage::ToolResult(r) => format!("result:{}", r.tool_call_id),
            _ => "other".to_string(),
        })
        .collect()
}

#[test]
fn a_tool_result_without_its_call_is_left_out_of_the_llm_context() {
    // A result whose call is on no path (a hand-edited or damaged file), a result before its
    // call, and a proper pair.
    let s = Jsonl::new()
        .user("u1", None, "go")
        .message("r0", Some("u1"), result("t0"))
        .message("r1", Some("r0"), result("t1"))
        .message("c1", Some("r1"), call("t1"))
        .message("c2", Some("c1"), call("t2"))
        .message("r2", Some("c2"), result("t2"))
        .message("a", Some("r2"), assistant_msg("done", "stop"))
        .load();
    assert_eq!(
        roles(&s, false),
        ["user", "assistant[\"t2\"]", "result:t2", "assistant[]"],
        "orphan results dropped; the call answered only before it is stripped (its message empties)"
    );
    // The display transcript keeps every result.
    let t = roles(&s, true);
    assert!(
        t.contains(&"result:t0".to_string()) && t.contains(&"result:t1".to_string()),
        "{t:?}"
    );
    let ctx = build_context(&s, &BuildOptions::default()).unwrap();
    invariants::context_pairs(&s, &ctx).unwrap();
}

#[test]
fn a_failed_turn_sharing_a_call_id_leaves_no_call_without_its_result() {
    // c1 (ok) calls t1; f (aborted) calls t1 again; r answers after f, so dropping the failed
    // turn and its results takes r away from c1 as well.
    let mut failed = call("t1");
    failed["stopReason"] = "aborted".into();
    let s = Jsonl::new()
        .user("u1", None, "go")
        .message("c1", Some("u1"), call("t1"))
        .message("f", Some("c1"), failed)
        .message("r", Some("f"), result("t1"))
        .message("a", Some("r"), assistant_msg("done", "stop"))
        .load();
    let ctx = build_context(&s, &BuildOptions::default()).unwrap();
    invariants::context_pairs(&s, &ctx).unwrap();
    assert_eq!(roles(&s, false), ["user", "assistant[]"]);
}

#[test]
fn answers_far_over_max_tokens_are_refused() {
    assert_eq!(
        answer_problem(&"x".repeat(4 * 4 * 100), 100),
        None,
        "4 × the limit passes"
    );
    let p = answer_problem(&"x".repeat(4 * 4 * 100 + 4), 100).expect("over 4 ×");
    assert!(p.contains("maxTokens (100)"), "{p}");
    assert!(answer_problem("short", 0).is_none());

    // The sans-IO cycle: the plan stays as it was and takes a proper answer afterwards.
    let mut j = Jsonl::new();
    let mut parent: Option<String> = None;
    for i in 0..6 {
        let (u, a) = (format!("u{i}"), format!("a{i}"));
        // The last turn is short: a last message over the keep budget keeps everything.
        let n = if i == 5 { 1 } else { 40 };
        j = j
            .user(&u, parent.as_deref(), &"question ".repeat(n))
            .message(
                &a,
                Some(&u),
                json!({"role":"assistant","provider":"anthropic","model":"m",
                "content":[{"type":"text","text":"answer ".repeat(n)}],"stopReason":"stop"}),
            );
        parent = Some(a);
    }
    let mut s = j.load();
    let before = s.to_bytes();
    let settings = CompactionSettings {
        keep_recent_tokens: 5,
        ..Default::default()
    };
    let mut plan = plan_compaction(&s, &settings, PlanOptions::default()).unwrap();
    let req = plan.pending()[0].clone();
    let huge = "lorem ".repeat(req.max_tokens as usize * 4);
    let err = plan.answer(&s, &req.id, &huge).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Summarizer);
    assert!(err.to_string().contains("maxTokens"), "{err}");
    assert_eq!(plan.pending()[0].id, req.id, "still pending");
    while !plan.is_complete() {
        let id = plan.pending()[0].id.clone();
        plan.answer(&s, &id, "a fine summary").unwrap();
    }
    assert_eq!(s.to_bytes(), before);
    let c = commit_compaction(&mut s, &plan, 0).unwrap();
    assert!(s.entry_json(c.index).contains("a fine summary"));

    // Navigation: the commit refuses before writing anything.
    let mut s = j.user("u9", Some("a0"), "other").load();
    s.branch("a5").unwrap();
    let before = s.to_bytes();
    let nav = plan_navigation(
        &s,
        "u9",
        NavigateOptions {
            summarize: true,
            ..Default::default()
        },
    )
    .unwrap();
    let max = nav.request.as_ref().unwrap().max_tokens as usize;
    let err = commit_navigation(
        &mut s,
        &nav,
        NavigationAnswer::Summary("y".repeat(max * 17)),
        0,
    )
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Summarizer);
    assert_eq!(s.to_bytes(), before);
    assert_eq!(s.leaf_id(), Some("a5"));
    commit_navigation(&mut s, &nav, NavigationAnswer::Summary("fine".into()), 0).unwrap();
    assert_ne!(s.to_bytes(), before);
}
