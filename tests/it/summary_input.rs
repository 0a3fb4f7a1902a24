//! What the summarizer sees and where the cut falls (issue 36 items 2, 3, 6, 7): the cut
//! walk counts custom messages and branch summaries (spec: compaction §4.1–§4.3), the
//! summarizer input keeps what the reference keeps (§5.1), a snapcompact archive is carried
//! into the next LLM summary (snapcompact §9.1, compaction §5.7 step 7), and across chains
//! of compactions no user message is ever lost.

use crate::common::{assistant_msg, Jsonl};
use ctxfold::compaction::prepare::{prepare_compaction, PrepareOptions};
use ctxfold::session::Session;
use ctxfold::settings::CompactionSettings;
use ctxfold::Error;
use serde_json::json;

fn settings(keep: u64) -> CompactionSettings {
    CompactionSettings {
        keep_recent_tokens: keep,
        ..Default::default()
    }
}

fn tokens(s: &Session, id: &str) -> u64 {
    s.entry_tokens(s.index_of(id).expect("id"), Default::default())
}

fn ids(s: &Session, entries: &[usize]) -> Vec<String> {
    entries
        .iter()
        .map(|&i| s.entries()[i].id().to_string())
        .collect()
}

/// u1 a1 | branch summary (≈2,000 tokens) | u2 a2: the branch summary sits before the last
/// turn.
fn branch_summary_before_last_turn() -> Session {
    Jsonl::new()
        .user("u1", None, "start")
        .message(
            "a1",
            Some("u1"),
            assistant_msg(&"long answer ".repeat(350), "stop"),
        )
        .entry(
            "branch_summary",
            "b1",
            Some("a1"),
            json!({"fromId":"a1","summary":"explored ".repeat(880)}),
        )
        .user("u2", Some("b1"), "the last request")
        .message(
            "a2",
            Some("u2"),
            assistant_msg(&"done ".repeat(150), "stop"),
        )
        .load()
}

/// Issue 36 item 6: the branch summary counts against `keepRecentTokens` (the reference
/// keeps only the last turn at 400), and at a budget that holds it the cut lands on it and
/// the turns before are summarized (ctxfold used to count it as 0 and find nothing to do).
#[test]
fn a_branch_summary_weighs_on_the_kept_region() {
    let s = branch_summary_before_last_turn();
    let last_turn = tokens(&s, "u2") + tokens(&s, "a2");
    let summary = tokens(&s, "b1");
    assert!(summary > 1_900 && last_turn < 400, "{summary} {last_turn}");
    assert!(tokens(&s, "a1") + summary + last_turn > 3_000);

    let p = prepare_compaction(&s, &settings(400), &PrepareOptions::default()).expect("prepare");
    assert_eq!(ids(&s, &p.recent), ["u2", "a2"]);
    assert_eq!(p.tokens_recent, last_turn);
    assert_eq!(ids(&s, &p.messages_to_summarize), ["u1", "a1", "b1"]);
    assert!(!p.is_split_turn);

    let p = prepare_compaction(&s, &settings(3_000), &PrepareOptions::default())
        .expect("the reference compacts here");
    assert_eq!(ids(&s, &p.recent), ["b1", "u2", "a2"]);
    assert_eq!(ids(&s, &p.messages_to_summarize), ["u1", "a1"]);
    assert!(!p.is_split_turn, "a branch summary starts a turn");
    assert!(p.turn_prefix.is_empty());
}

/// The same with a custom message in the recent region.
#[test]
fn a_custom_message_weighs_on_the_kept_region() {
    let s = Jsonl::new()
        .user("u1", None, "start")
        .message(
            "a1",
            Some("u1"),
            assistant_msg(&"long answer ".repeat(350), "stop"),
        )
        .entry(
            "custom_message",
            "m1",
            Some("a1"),
            json!({"customType":"note","content":"remember ".repeat(880),"display":true}),
        )
        .user("u2", Some("m1"), "the last request")
        .message(
            "a2",
            Some("u2"),
            assistant_msg(&"done ".repeat(150), "stop"),
        )
        .load();
    let p = prepare_compaction(&s, &settings(400), &PrepareOptions::default()).expect("prepare");
    assert_eq!(ids(&s, &p.recent), ["u2", "a2"]);
    let p = prepare_compaction(&s, &settings(3_000), &PrepareOptions::default()).expect("prepare");
    assert_eq!(ids(&s, &p.recent), ["m1", "u2", "a2"]);
    assert!(!p.is_split_turn);
    // Everything fits: nothing to do, as before.
    assert!(matches!(
        prepare_compaction(&s, &settings(100_000), &PrepareOptions::default()),
        Err(Error::NothingToCompact { .. })
    ));
}

// ----- the chains of issue 36: nothing a user said is ever lost ----------------------------

use ctxfold::archive::{get_preserved_archive, plain_text};
use ctxfold::compaction::commit::{commit_compaction, commit_handoff, commit_snapcompact};
use ctxfold::compaction::plan::{plan_compaction, CompactionPlan, PlanOptions};
use ctxfold::compaction::snapcompact::ArchiveOptions;
use ctxfold::context::convert::convert_to_llm;
use ctxfold::context::{build_context, BuildOptions};
use ctxfold::render::shape::resolve::Target;
use ctxfold::render::{BillingFamily, FallbackFonts, ShapeVariant};
use ctxfold::session::{CompactionBody, EntryKind, NewSession, SequentialIds};
use ctxfold::settings::Strategy;
use ctxfold::summary::request::Purpose;
use serde_json::Value;

/// The marker of user turn `n`: unique, and no marker contains another.
fn marker(n: usize) -> String {
    format!("<UT{n:04}>")
}

/// Every marker in `text`.
fn markers_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("<UT") {
        let m = &rest[i..(i + 8).min(rest.len())];
        if m.len() == 8 && m.ends_with('>') {
            out.push(m.to_string());
        }
        rest = &rest[i + 3..];
    }
    out
}

fn claude() -> Target {
    Target {
        id: Some("claude-opus-4-7".into()),
        api: Some("anthropic-messages".into()),
    }
}

fn new_session(id: &str) -> Session {
    Session::create(
        NewSession {
            id: id.into(),
            cwd: "/w".into(),
            now: 0,
            parent_session: None,
        },
        Box::new(SequentialIds::new()),
    )
}

/// A session under test and the user markers appended to it (and to the sessions before it).
struct Run {
    s: Session,
    now: i64,
    next_turn: usize,
    appended: Vec<String>,
}

impl Run {
    /// Appends `turns` turns: a user message with its marker, a thinking assistant reply
    /// (usage growing with the context, so the estimate ratio stays near 1), every third
    /// turn a tool round.
    fn add_turns(&mut self, turns: usize) {
        for _ in 0..turns {
            let n = self.next_turn;
            self.next_turn += 1;
            let m = marker(n);
            self.appended.push(m.clone());
            self.now += 1000;
            let filler = format!("detail{n} ").repeat(20);
            self.s
                .append_message(
                    json!({"role":"user","content":format!("Request {m}: {filler}"),"timestamp":self.now}),
                    self.now,
                )
                .expect("user");
            let used = build_context(&self.s, &BuildOptions::default())
                .expect("context")
                .estimated_tokens(&self.s);
            let usage = json!({"input":used,"output":50,"cacheRead":0,"cacheWrite":0,"totalTokens":used + 50});
            if n.is_multiple_of(3) {
                self.now += 1000;
                self.s
                    .append_message(
                        json!({"role":"assistant","content":[
                            {"type":"thinking","thinking":format!("thinking about turn {n}")},
                            {"type":"toolCall","id":format!("call{n}"),"name":"bash","arguments":{"command":"make"}}],
                            "provider":"anthropic","model":"claude-opus-4-7","usage":usage,"stopReason":"toolUse","timestamp":self.now}),
                        self.now,
                    )
                    .expect("call");
                self.now += 1000;
                self.s
                    .append_message(
                        json!({"role":"toolResult","toolCallId":format!("call{n}"),"toolName":"bash",
                            "content":[{"type":"text","text":format!("output {n} ").repeat(60)}],"isError":false,"timestamp":self.now}),
                        self.now,
                    )
                    .expect("result");
            }
            self.now += 1000;
            self.s
                .append_message(
                    json!({"role":"assistant","content":[
                        {"type":"thinking","thinking":format!("wrapping up turn {n}")},
                        {"type":"text","text":format!("Reply {n}: ") + &format!("answer{n} ").repeat(300)}],
                        "provider":"anthropic","model":"claude-opus-4-7","usage":usage,"stopReason":"stop","timestamp":self.now}),
                    self.now,
                )
                .expect("assistant");
        }
    }

    /// The provider messages kept verbatim after the latest compaction (everything of the
    /// context but its summary message), as text.
    fn kept_context(&self) -> String {
        let ctx = build_context(&self.s, &BuildOptions::default()).expect("context");
        let llm = convert_to_llm(&self.s, &ctx);
        let skip = usize::from(ctx.compaction.is_some());
        llm[skip..]
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn latest_compaction(&self) -> CompactionBody {
        let path = self.s.active_path();
        let i = path
            .iter()
            .rev()
            .copied()
            .find(|&i| self.s.entries()[i].kind() == EntryKind::Compaction)
            .expect("a compaction");
        self.s.body(i).expect("body")
    }

    /// Every marker ever appended is in `visible`; the message names the first ones missing.
    fn assert_nothing_lost(&self, what: &str, visible: &str) {
        let missing: Vec<&String> = self
            .appended
            .iter()
            .filter(|m| !visible.contains(m.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "{what}: {} of {} user turns lost, first {:?}",
            missing.len(),
            self.appended.len(),
            &missing[..missing.len().min(5)]
        );
    }
}

/// A summarizer that forgets nothing: each answer lists the markers its prompt holds. Returns
/// every prompt the plan sent (the summarizer input of the compaction).
fn answer_all(s: &Session, plan: &mut CompactionPlan) -> String {
    let mut seen = String::new();
    for _ in 0..1000 {
        let pending: Vec<(String, String)> = plan
            .pending()
            .into_iter()
            .map(|r| (r.id.clone(), r.prompt.clone()))
            .collect();
        if pending.is_empty() {
            break;
        }
        for (id, prompt) in pending {
            let mut answer = markers_in(&prompt);
            answer.dedup();
            seen.push_str(&prompt);
            seen.push('\n');
            plan.answer(s, &id, &format!("Summary: {}", answer.join(" ")))
                .expect("answer");
        }
    }
    assert!(plan.is_complete() || plan.handoff_document().is_some());
    seen
}

/// A snapcompact commit with small frames and a frame cap, so the archive drops part of its
/// middle (keeping the user turns of what it drops).
fn snapcompact_commit(run: &mut Run, plan: &CompactionPlan) {
    let options = ArchiveOptions {
        shape: Some(ShapeVariant::V11on16Bw.shape(BillingFamily::Anthropic)),
        frame_size: Some(320),
        max_frames: Some(2),
        ..ArchiveOptions::for_model(claude())
    };
    commit_snapcompact(&mut run.s, plan, &options, &FallbackFonts::new(), run.now)
        .expect("snapcompact commit");
}

fn soft(keep: u64) -> CompactionSettings {
    CompactionSettings {
        strategy: Strategy::ContextFull,
        keep_recent_tokens: keep,
        ..Default::default()
    }
}

fn model_plan() -> PlanOptions {
    PlanOptions {
        model: claude(),
        ..Default::default()
    }
}

/// A soft (LLM summary) compaction through the fake summarizer; checks the invariant on its
/// input and the context it leaves.
fn soft_compaction(run: &mut Run, what: &str) -> String {
    let mut plan = plan_compaction(&run.s, &soft(3_000), model_plan()).expect("plan");
    let seen = answer_all(&run.s, &mut plan);
    commit_compaction(&mut run.s, &plan, run.now).expect("commit");
    run.assert_nothing_lost(what, &format!("{seen}\n{}", run.kept_context()));
    seen
}

/// Issue 36 items 2 and 3, and the simulator's invariant: snapcompact → soft → soft. Every
/// user turn ever appended is in the latest compaction's summarizer input, its archive or
/// the context it keeps. (ctxfold used to hand the first soft summary only the reading guide,
/// so the turns the archive held were gone.)
#[test]
fn snapcompact_then_soft_then_soft_loses_no_user_turn() {
    let mut run = Run {
        s: new_session("chain"),
        now: 0,
        next_turn: 0,
        appended: Vec::new(),
    };
    run.add_turns(40);
    let snap = CompactionSettings {
        strategy: Strategy::Snapcompact,
        keep_recent_tokens: 3_000,
        ..Default::default()
    };
    let plan = plan_compaction(&run.s, &snap, model_plan()).expect("snapcompact plan");
    snapcompact_commit(&mut run, &plan);
    let body = run.latest_compaction();
    assert_eq!(body.method.as_deref(), Some("snapcompact"));
    let archive = get_preserved_archive(body.preserve_data.as_ref()).expect("an archive");
    let archived = format!(
        "{}\n{}",
        plain_text(archive.text.as_deref().unwrap_or("")),
        plain_text(archive.user_turns.as_deref().unwrap_or(""))
    );
    run.assert_nothing_lost(
        "snapcompact",
        &format!("{archived}\n{}", run.kept_context()),
    );

    run.add_turns(20);
    let seen = soft_compaction(&mut run, "soft after snapcompact");
    // The archive travelled as the previous summary, and the new entry drops it.
    assert!(seen.contains("<previous-summary>"));
    assert!(get_preserved_archive(run.latest_compaction().preserve_data.as_ref()).is_none());
    // Claude's summarizer reads no thinking.
    assert!(!seen.contains("wrapping up turn") && seen.contains("Human: Request"));

    run.add_turns(20);
    soft_compaction(&mut run, "second soft");
}

/// Issue 36 item 3: handoff → soft. The handoff document opens the new session as a custom
/// message; the next compaction's summarizer must read it (ctxfold's plain transcript left
/// developer messages out, so every turn before the handoff was forgotten).
#[test]
fn handoff_then_soft_loses_no_user_turn() {
    let mut run = Run {
        s: new_session("before"),
        now: 0,
        next_turn: 0,
        appended: Vec::new(),
    };
    run.add_turns(30);
    let handoff = CompactionSettings {
        strategy: Strategy::Handoff,
        keep_recent_tokens: 3_000,
        ..Default::default()
    };
    let mut plan = plan_compaction(&run.s, &handoff, model_plan()).expect("handoff plan");
    let seen = answer_all(&run.s, &mut plan);
    run.assert_nothing_lost("handoff input", &seen);
    let next = commit_handoff(
        &run.s,
        &plan,
        "after".into(),
        Box::new(SequentialIds::new()),
        run.now,
    )
    .expect("handoff commit");
    run.s = next;
    run.add_turns(30);
    soft_compaction(&mut run, "soft after handoff");
    run.add_turns(10);
    soft_compaction(&mut run, "second soft after handoff");
}

/// The plan's transcript follows its model (spec: compaction §5.1): no model, the plain
/// transcript (which, as the reference's, leaves developer messages out); Claude, the
/// Anthropic dialect (developer messages in, thinking out); GPT, Harmony (thinking kept).
#[test]
fn the_summarizer_input_follows_the_model() {
    let s = Jsonl::new()
        .entry(
            "custom_message",
            "h1",
            None,
            json!({"customType":"handoff","content":"HANDOFF DOCUMENT: the goal","display":true}),
        )
        .user("u1", Some("h1"), "first")
        .message(
            "a1",
            Some("u1"),
            json!({"role":"assistant","content":[{"type":"thinking","thinking":"secret reasoning"},{"type":"text","text":"ok"}],"stopReason":"stop"}),
        )
        .user("u2", Some("a1"), "second")
        .message("a2", Some("u2"), assistant_msg("done", "stop"))
        .load();
    let history = |model: Option<&str>| {
        let options = PlanOptions {
            model: Target {
                id: model.map(str::to_string),
                api: None,
            },
            ..Default::default()
        };
        let plan = plan_compaction(&s, &soft(1), options).expect("plan");
        plan.pending()
            .into_iter()
            .find(|r| r.purpose == Purpose::History)
            .expect("history request")
            .prompt
            .clone()
    };
    let plain = history(None);
    assert!(plain.contains("[User]: first") && !plain.contains("HANDOFF DOCUMENT"));
    let claude = history(Some("claude-sonnet-4-5"));
    assert!(claude.contains("HANDOFF DOCUMENT: the goal"), "{claude}");
    assert!(claude.contains("Human: first") && !claude.contains("secret reasoning"));
    let gpt = history(Some("gpt-5.1"));
    assert!(gpt.contains("HANDOFF DOCUMENT") && gpt.contains("secret reasoning"));
}

/// Issue 36 item 2, in isolation: the history request after a snapcompact compaction carries
/// the archive's source text in `<previous-summary>`, after the reading guide.
#[test]
fn the_archive_source_text_is_the_previous_summary() {
    let mut run = Run {
        s: new_session("archive"),
        now: 0,
        next_turn: 0,
        appended: Vec::new(),
    };
    run.add_turns(30);
    let snap = CompactionSettings {
        strategy: Strategy::Snapcompact,
        keep_recent_tokens: 3_000,
        ..Default::default()
    };
    let plan = plan_compaction(&run.s, &snap, model_plan()).expect("plan");
    snapcompact_commit(&mut run, &plan);
    let guide = run.latest_compaction().summary;
    run.add_turns(10);
    let plan = plan_compaction(&run.s, &soft(3_000), model_plan()).expect("plan");
    let prompt = &plan
        .pending()
        .into_iter()
        .find(|r| r.purpose == Purpose::History)
        .expect("history")
        .prompt;
    let previous = prompt
        .split("<previous-summary>\n")
        .nth(1)
        .and_then(|p| p.split("\n</previous-summary>").next())
        .expect("a previous summary");
    assert!(previous.starts_with(guide.lines().next().unwrap()));
    assert!(previous.contains(&marker(0)) && previous.contains(&marker(5)));
}

// ----- issue 36 item 7: the converter and the display transcript ---------------------------

/// The compaction summary message carries `historyRewriteAt` (its timestamp), as the branch
/// summary message does.
#[test]
fn a_compaction_summary_marks_the_history_rewrite() {
    let s = Jsonl::new()
        .user("u1", None, "q")
        .message("a1", Some("u1"), assistant_msg("a", "stop"))
        .compaction("c1", Some("a1"), "summary", "u1")
        .user("u2", Some("c1"), "next")
        .load();
    let ctx = build_context(&s, &BuildOptions::default()).expect("context");
    let llm = convert_to_llm(&s, &ctx);
    assert!(llm[0]["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("summary")));
    assert!(llm[0]["historyRewriteAt"].is_number(), "{}", llm[0]);
    assert_eq!(llm[0]["historyRewriteAt"], llm[0]["timestamp"]);
    // Ordinary messages carry none.
    assert!(llm[1].get("historyRewriteAt").is_none());
}

/// An aborted or failed turn that keeps its text but loses its unanswered calls still
/// reports them in the display transcript.
#[test]
fn stripped_calls_of_aborted_and_failed_turns_are_counted() {
    let turn = |stop: &str| {
        json!({"role":"assistant","content":[
            {"type":"text","text":"working on it"},
            {"type":"toolCall","id":format!("x-{stop}"),"name":"bash","arguments":{"command":"make"}},
            {"type":"toolCall","id":format!("y-{stop}"),"name":"bash","arguments":{"command":"test"}}],
            "stopReason":stop,"errorMessage":"failed"})
    };
    let s = Jsonl::new()
        .user("u1", None, "go")
        .message("a1", Some("u1"), turn("aborted"))
        .user("u2", Some("a1"), "again")
        .message("a2", Some("u2"), turn("error"))
        .user("u3", Some("a2"), "once more")
        .load();
    let transcript = BuildOptions {
        transcript: true,
        ..Default::default()
    };
    let ctx = build_context(&s, &transcript).expect("transcript");
    let stripped: Vec<(String, u32)> = ctx
        .messages
        .iter()
        .map(|m| (s.entries()[m.entry].id().to_string(), m.stripped_tool_calls))
        .collect();
    assert_eq!(
        stripped,
        [
            ("u1".to_string(), 0),
            ("a1".to_string(), 2),
            ("u2".to_string(), 0),
            ("a2".to_string(), 2),
            ("u3".to_string(), 0)
        ]
    );
}
