//! `buildSessionContext`: spec compaction §10.2 (build-context tests) and §10.1 case 21,
//! restated.

use crate::common::{assistant_msg, Jsonl};
use ctxfold::context::{build_context, BuildOptions, LeafSelector, SessionContext};
use ctxfold::session::message::{AgentMessage, ContentBlock};
use ctxfold::Session;
use serde_json::{json, Value};

fn llm(s: &Session) -> SessionContext {
    build_context(s, &BuildOptions::default()).unwrap()
}

fn transcript(s: &Session) -> SessionContext {
    build_context(
        s,
        &BuildOptions {
            transcript: true,
            ..Default::default()
        },
    )
    .unwrap()
}

/// The transcript with compacted history collapsed into the summary.
fn collapsed_transcript(s: &Session) -> SessionContext {
    build_context(
        s,
        &BuildOptions {
            transcript: true,
            collapse_compacted_history: true,
            ..Default::default()
        },
    )
    .unwrap()
}

fn at(s: &Session, leaf: &str) -> SessionContext {
    build_context(
        s,
        &BuildOptions {
            leaf: LeafSelector::Id(leaf.into()),
            ..Default::default()
        },
    )
    .unwrap()
}

/// A short text per message: its text, or the summary of summaries.
fn texts(s: &Session, ctx: &SessionContext) -> Vec<String> {
    ctx.agent_messages(s)
        .map(|m| match m {
            AgentMessage::User(u) => u.content.text(),
            AgentMessage::Assistant(a) => a
                .blocks()
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text } => Some(text.clone()),
                    _ => None,
                })
                .collect(),
            AgentMessage::CompactionSummary(c) => format!("summary:{}", c.summary),
            AgentMessage::BranchSummary(b) => format!("branch:{}", b.summary),
            AgentMessage::Custom(c) => format!("custom:{}", c.content.text()),
            AgentMessage::ToolResult(r) => format!("result:{}", r.tool_call_id),
            other => format!("{:?}", other.role()),
        })
        .collect()
}

fn roles(ctx: &SessionContext) -> Vec<&'static str> {
    ctx.messages
        .iter()
        .map(|m| m.role().as_str().unwrap_or("?"))
        .collect()
}

#[test]
fn empty_and_single() {
    let s = Jsonl::new().load();
    let c = llm(&s);
    assert!(c.messages.is_empty());
    assert_eq!(c.thinking_level, "off");
    assert!(c.models.is_empty());
    assert!(!c.has_messages());
    let s = Jsonl::new().user("1", None, "hi").load();
    assert_eq!(llm(&s).messages.len(), 1);
    // An explicit null leaf gives the empty context.
    let c = build_context(
        &s,
        &BuildOptions {
            leaf: LeafSelector::Null,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(c.messages.is_empty());
    assert_eq!(c.mode, "none");
}

#[test]
fn chain_thinking_and_models() {
    let s = Jsonl::new()
        .user("1", None, "a")
        .assistant("2", Some("1"), "b")
        .user("3", Some("2"), "c")
        .assistant("4", Some("3"), "d")
        .load();
    let c = llm(&s);
    assert_eq!(roles(&c), ["user", "assistant", "user", "assistant"]);
    assert_eq!(c.model("default"), Some("anthropic/claude-sonnet-4-5"));

    let s = Jsonl::new()
        .user("1", None, "a")
        .entry(
            "thinking_level_change",
            "2",
            Some("1"),
            json!({"thinkingLevel":"high"}),
        )
        .assistant("3", Some("2"), "b")
        .load();
    let c = llm(&s);
    assert_eq!(c.thinking_level, "high");
    assert_eq!(c.messages.len(), 2);

    // [N]: an explicit model_change wins over later assistants (issue #849).
    let s = Jsonl::new()
        .user("1", None, "a")
        .entry(
            "model_change",
            "2",
            Some("1"),
            json!({"model":"openai/gpt-4"}),
        )
        .assistant("3", Some("2"), "b")
        .entry(
            "thinking_level_change",
            "4",
            Some("3"),
            json!({"thinkingLevel":"high"}),
        )
        .load();
    let c = llm(&s);
    assert_eq!(c.model("default"), Some("openai/gpt-4"));
    assert_eq!(c.thinking_level, "high");
    assert_eq!(c.messages.len(), 2);
}

#[test]
fn custom_message_attribution_round_trips() {
    let s = Jsonl::new()
        .entry(
            "custom_message",
            "1",
            None,
            json!({"customType":"note","content":"n1","display":true,"attribution":"user"}),
        )
        .entry(
            "custom_message",
            "2",
            Some("1"),
            json!({"customType":"note","content":"n2","display":false}),
        )
        .load();
    let c = llm(&s);
    let json: Value = serde_json::from_str(&c.to_json(&s)).unwrap();
    assert_eq!(json["messages"][0]["role"], "custom");
    assert_eq!(json["messages"][0]["attribution"], "user");
    assert!(json["messages"][1].get("attribution").is_none());
    assert!(json["messages"][1]["timestamp"].is_number());
}

#[test]
fn deep_chain_builds_quickly() {
    let mut j = Jsonl::new().user("0", None, "start");
    for i in 1..1000 {
        let p = (i - 1).to_string();
        j = j.user(&i.to_string(), Some(&p), "x");
    }
    let s = j.load();
    assert_eq!(llm(&s).messages.len(), 1000);
}

fn compaction_fixture(first_kept: &str) -> Session {
    Jsonl::new()
        .user("1", None, "first")
        .assistant("2", Some("1"), "response1")
        .user("3", Some("2"), "second")
        .assistant("4", Some("3"), "response2")
        .compaction("5", Some("4"), "the summary", first_kept)
        .user("6", Some("5"), "third")
        .assistant("7", Some("6"), "response3")
        .load()
}

#[test]
fn compaction_keeps_from_first_kept() {
    let s = compaction_fixture("3");
    let c = llm(&s);
    assert_eq!(
        texts(&s, &c),
        [
            "summary:the summary",
            "second",
            "response2",
            "third",
            "response3"
        ]
    );
    let c = llm(&compaction_fixture("1"));
    assert_eq!(c.messages.len(), 5 + 2);
    // A firstKeptEntryId that is never found keeps nothing from before.
    let s = compaction_fixture("nope");
    let c = llm(&s);
    assert_eq!(texts(&s, &c), ["summary:the summary", "third", "response3"]);

    // Two compactions: the latest wins.
    let s = Jsonl::new()
        .user("1", None, "first")
        .assistant("2", Some("1"), "response1")
        .compaction("3", Some("2"), "old", "1")
        .user("4", Some("3"), "second")
        .assistant("5", Some("4"), "response2")
        .compaction("6", Some("5"), "new", "4")
        .user("7", Some("6"), "third")
        .load();
    assert_eq!(
        texts(&s, &llm(&s)),
        ["summary:new", "second", "response2", "third"]
    );
}

#[test]
fn branches_and_branch_summaries() {
    let s = Jsonl::new()
        .user("1", None, "start")
        .assistant("2", Some("1"), "r1")
        .user("3", Some("2"), "left")
        .user("4", Some("2"), "right")
        .load();
    assert_eq!(texts(&s, &at(&s, "3")), ["start", "r1", "left"]);
    assert_eq!(texts(&s, &at(&s, "4")), ["start", "r1", "right"]);

    let s = Jsonl::new()
        .user("1", None, "start")
        .assistant("2", Some("1"), "r1")
        .entry(
            "branch_summary",
            "3",
            Some("2"),
            json!({"fromId":"2","summary":"explored X"}),
        )
        .user("4", Some("3"), "back")
        .load();
    let c = llm(&s);
    assert_eq!(c.messages.len(), 4);
    assert_eq!(texts(&s, &c)[2], "branch:explored X");
    // An empty branch summary emits nothing.
    let s = Jsonl::new()
        .user("1", None, "start")
        .entry(
            "branch_summary",
            "2",
            Some("1"),
            json!({"fromId":"1","summary":""}),
        )
        .load();
    assert_eq!(llm(&s).messages.len(), 1);

    // Complex tree: compaction on the main path, an abandoned branch, a branch summary.
    let s = Jsonl::new()
        .user("1", None, "start")
        .assistant("2", Some("1"), "r1")
        .user("3", Some("2"), "q2")
        .assistant("4", Some("3"), "r2")
        .compaction("5", Some("4"), "compacted", "3")
        .user("6", Some("5"), "q3")
        .assistant("7", Some("6"), "r3")
        .entry(
            "branch_summary",
            "8",
            Some("3"),
            json!({"fromId":"3","summary":"tried other"}),
        )
        .assistant("9", Some("8"), "better approach")
        .load();
    assert_eq!(
        texts(&s, &at(&s, "7")),
        ["summary:compacted", "q2", "r2", "q3", "r3"]
    );
    assert_eq!(
        texts(&s, &at(&s, "9")),
        ["start", "r1", "q2", "branch:tried other", "better approach"]
    );
}

#[test]
fn edge_cases() {
    // Unknown leaf: the last entry.
    let s = Jsonl::new()
        .user("1", None, "a")
        .assistant("2", Some("1"), "b")
        .load();
    assert_eq!(at(&s, "nope").messages.len(), 2);
    // Orphan parent: a path of one.
    let s = Jsonl::new()
        .user("1", None, "a")
        .user("2", Some("missing"), "b")
        .load();
    assert_eq!(texts(&s, &llm(&s)), ["b"]);

    // An aborted assistant followed by an interrupted-thinking marker stays.
    let s = Jsonl::new()
        .user("1", None, "q")
        .message("2", Some("1"), assistant_msg("partial", "aborted"))
        .entry(
            "custom_message",
            "3",
            Some("2"),
            json!({"customType":"interrupted-thinking","content":"stopped","display":false}),
        )
        .load();
    assert_eq!(roles(&llm(&s)), ["user", "assistant", "custom"]);

    // A lone aborted assistant: nothing left.
    let s = Jsonl::new()
        .message("1", None, assistant_msg("partial", "aborted"))
        .load();
    let c = llm(&s);
    assert!(c.messages.is_empty());
    assert!(!c.has_messages());
}

#[test]
fn failed_turns_take_their_tool_results_along() {
    let call = json!({"role":"assistant","content":[
        {"type":"text","text":"looking"},
        {"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a"}}],
        "stopReason":"error","provider":"p","model":"m"});
    let s = Jsonl::new()
        .user("1", None, "q")
        .message("2", Some("1"), call)
        .message(
            "3",
            Some("2"),
            json!({"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"x"}],"isError":false}),
        )
        .user("4", Some("3"), "again")
        .load();
    assert_eq!(texts(&s, &llm(&s)), ["q", "again"]);
    // The transcript keeps them.
    let c = transcript(&s);
    assert_eq!(c.messages.len(), 4);
}

#[test]
fn dangling_tool_calls_are_stripped() {
    let s = Jsonl::new()
        .user("1", None, "q")
        .message(
            "2",
            Some("1"),
            json!({"role":"assistant","content":[
                {"type":"thinking","thinking":"hmm","thinkingSignature":"sig"},
                {"type":"redactedThinking","data":"secret"},
                {"type":"text","text":"kept"},
                {"type":"toolCall","id":"gone","name":"bash","arguments":{"command":"ls"}}],
                "stopReason":"toolUse","provider":"p","model":"m","extra":{"keep":"me"}}),
        )
        .load();
    let c = llm(&s);
    assert_eq!(c.messages.len(), 2);
    let json: Value = serde_json::from_str(&c.to_json(&s)).unwrap();
    let a = &json["messages"][1];
    assert_eq!(
        a["content"],
        json!([{"type":"thinking","thinking":"hmm"},{"type":"text","text":"kept"}])
    );
    assert_eq!(a["extra"], json!({"keep":"me"}), "other fields survive");

    // An aborted assistant with only a tool call is dropped.
    let s = Jsonl::new()
        .user("1", None, "q")
        .message(
            "2",
            Some("1"),
            json!({"role":"assistant","content":[{"type":"toolCall","id":"c","name":"bash","arguments":{}}],"stopReason":"aborted"}),
        )
        .load();
    assert_eq!(roles(&llm(&s)), ["user"]);

    // A mid-path dangling call is stripped while an earlier paired call stays.
    let s = Jsonl::new()
        .user("1", None, "q")
        .message(
            "2",
            Some("1"),
            json!({"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a"}}],"stopReason":"toolUse"}),
        )
        .message(
            "3",
            Some("2"),
            json!({"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"A"}],"isError":false}),
        )
        .message(
            "4",
            Some("3"),
            json!({"role":"assistant","content":[{"type":"text","text":"and"},{"type":"toolCall","id":"c2","name":"read","arguments":{"path":"b"}}],"stopReason":"toolUse"}),
        )
        .user("5", Some("4"), "stop")
        .load();
    let c = llm(&s);
    assert_eq!(texts(&s, &c), ["q", "", "result:c1", "and", "stop"]);
    let calls: Vec<Vec<String>> = c
        .agent_messages(&s)
        .filter_map(|m| m.as_assistant().cloned())
        .map(|a| a.tool_call_ids().map(str::to_string).collect())
        .collect();
    assert_eq!(calls, vec![vec!["c1".to_string()], vec![]]);

    // Transcript mode keeps an emptied assistant with a count, or everything on request.
    let s = Jsonl::new()
        .user("1", None, "q")
        .message(
            "2",
            Some("1"),
            json!({"role":"assistant","content":[{"type":"toolCall","id":"c","name":"bash","arguments":{}}],"stopReason":"toolUse"}),
        )
        .load();
    let t = |keep| {
        build_context(
            &s,
            &BuildOptions {
                transcript: true,
                keep_dangling_tool_calls: keep,
                ..Default::default()
            },
        )
        .unwrap()
    };
    let c = t(false);
    assert_eq!(c.messages.len(), 2);
    assert_eq!(c.messages[1].stripped_tool_calls, 1);
    let c = t(true);
    assert_eq!(c.messages[1].stripped_tool_calls, 0);
    assert_eq!(
        c.messages[1]
            .message(&s)
            .as_assistant()
            .unwrap()
            .tool_call_ids()
            .count(),
        1
    );
}

#[test]
fn retry_recovery_and_empty_error_turns_are_skipped_in_llm_mode() {
    let mut retry = assistant_msg("retrying", "stop");
    retry["retryRecovery"] = json!(true);
    let s = Jsonl::new()
        .user("1", None, "q")
        .message("2", Some("1"), retry)
        .message(
            "3",
            Some("2"),
            json!({"role":"assistant","content":[{"type":"text","text":"  "}],"stopReason":"error","errorMessage":"boom"}),
        )
        .entry(
            "custom_message",
            "4",
            Some("3"),
            json!({"customType":"prewalk-plan","content":"plan","display":true}),
        )
        .load();
    assert_eq!(roles(&llm(&s)), ["user"]);
    let c = transcript(&s);
    assert_eq!(c.messages.len(), 4);
}

/// spec: compaction §10.1 case 21 and §10.2 case 7 (transcript and collapse modes).
#[test]
fn transcript_and_collapse_modes() {
    let s = Jsonl::new()
        .user("1", None, "u1")
        .assistant("2", Some("1"), "a1")
        .compaction("3", Some("2"), "First summary", "2")
        .user("4", Some("3"), "u2")
        .compaction("5", Some("4"), "Second summary", "99")
        .user("6", Some("5"), "u3")
        .load();
    assert_eq!(texts(&s, &llm(&s)), ["summary:Second summary", "u3"]);
    let mode = |transcript, collapse| {
        build_context(
            &s,
            &BuildOptions {
                transcript,
                collapse_compacted_history: collapse,
                ..Default::default()
            },
        )
        .unwrap()
    };
    let t = mode(true, false);
    assert_eq!(
        texts(&s, &t),
        [
            "u1".to_string(),
            "a1".into(),
            format!("summary:{}", ctxfold::context::SUPERSEDED_SUMMARY),
            "u2".into(),
            "summary:Second summary".into(),
            "u3".into()
        ]
    );
    let c = mode(true, true);
    assert_eq!(texts(&s, &c), ["summary:Second summary", "u3"]);
    assert_eq!(c.cache_miss_explained_at, Some(vec![false, false]));

    // Collapsed ordering: kept messages, then the summary, then later messages.
    let s = Jsonl::new()
        .user("1", None, "old")
        .user("2", Some("1"), "kept-u")
        .assistant("3", Some("2"), "kept-a")
        .compaction("4", Some("3"), "S", "2")
        .user("5", Some("4"), "new-u")
        .assistant("6", Some("5"), "new-a")
        .load();
    let c = collapsed_transcript(&s);
    assert_eq!(
        texts(&s, &c),
        ["kept-u", "kept-a", "summary:S", "new-u", "new-a"]
    );
    assert_eq!(
        c.cache_miss_explained_at,
        Some(vec![false, false, false, false, true])
    );
    assert_eq!(
        texts(&s, &llm(&s)),
        ["summary:S", "kept-u", "kept-a", "new-u", "new-a"]
    );
    // Summary last when nothing follows.
    let s = Jsonl::new()
        .user("1", None, "kept")
        .compaction("2", Some("1"), "S", "1")
        .load();
    let c = collapsed_transcript(&s);
    assert_eq!(texts(&s, &c), ["kept", "summary:S"]);
}

#[test]
fn reset_boundary_drops_everything_before_it() {
    let s = Jsonl::new()
        .user("1", None, "before")
        .compaction("2", Some("1"), "S", "1")
        .user("3", Some("2"), "kept")
        .entry("reset_boundary", "4", Some("3"), json!({}))
        .user("5", Some("4"), "after")
        .load();
    assert_eq!(texts(&s, &llm(&s)), ["after"]);
    // A boundary before the latest compaction does not matter.
    let s = Jsonl::new()
        .user("1", None, "a")
        .entry("reset_boundary", "2", Some("1"), json!({}))
        .user("3", Some("2"), "b")
        .compaction("4", Some("3"), "S", "3")
        .user("5", Some("4"), "c")
        .load();
    assert_eq!(texts(&s, &llm(&s)), ["summary:S", "b", "c"]);
}

#[test]
fn state_from_mode_tier_and_rules() {
    let s = Jsonl::new()
        .user("1", None, "q")
        .entry(
            "mode_change",
            "2",
            Some("1"),
            json!({"mode":"plan","data":{"file":"p.md"}}),
        )
        .entry(
            "service_tier_change",
            "3",
            Some("2"),
            json!({"serviceTier":{"tier":"flex"}}),
        )
        .entry(
            "ttsr_injection",
            "4",
            Some("3"),
            json!({"injectedRules":["a","b"]}),
        )
        .entry(
            "ttsr_injection",
            "5",
            Some("4"),
            json!({"injectedRules":["b","c"]}),
        )
        .entry(
            "model_change",
            "6",
            Some("5"),
            json!({"model":"x/small","role":"smol"}),
        )
        .load();
    let c = llm(&s);
    assert_eq!(c.mode, "plan");
    assert_eq!(c.mode_data, Some(json!({"file":"p.md"})));
    assert_eq!(c.service_tier, Some(json!({"tier":"flex"})));
    assert_eq!(c.injected_ttsr_rules, ["a", "b", "c"]);
    assert_eq!(c.model("smol"), Some("x/small"));
}

#[test]
fn unchanged_messages_keep_their_exact_bytes() {
    // Field order, unknown fields, number spellings: the raw message JSON is passed through.
    let raw = r#"{"role":"assistant","zeta":1.50,"content":[{"type":"anthropicServerTool","block":{"b":2,"a":1}},{"type":"text","text":"caf\u00e9"}],"stopReason":"stop"}"#;
    let text = Jsonl::new().text()
        + &format!(
            r#"{{"type":"message","id":"1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{raw}}}"#
        )
        + "\n";
    let s = Session::load(text.into_bytes(), Default::default()).unwrap();
    let c = llm(&s);
    let out = c.to_json(&s);
    assert!(out.starts_with(&format!("{{\"messages\":[{raw}]")), "{out}");
}
