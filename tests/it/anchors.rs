//! The anchor index through the compaction cycle (issue 38 items 1 and 4): every method's
//! text for the model carries the `<anchors>` block of the dropped region's exact
//! identifiers, the ranked list is carried in `details` from compaction to compaction, and
//! the loss report says what the model can no longer see.

use ctxfold::compaction::anchored::loss_report;
use ctxfold::compaction::commit::{commit_compaction, commit_handoff, commit_snapcompact};
use ctxfold::compaction::plan::{plan_compaction, CompactionPlan, PlanOptions};
use ctxfold::compaction::snapcompact::ArchiveOptions;
use ctxfold::render::shape::resolve::Target;
use ctxfold::render::{BillingFamily, FallbackFonts, ShapeVariant};
use ctxfold::session::{CompactionBody, LoadOptions, NewSession, SequentialIds, Session};
use ctxfold::settings::{CompactionSettings, Strategy};
use ctxfold::summary::anchors::{visible_text, AnchorIndex, DETAILS_KEY};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{json, Value};

fn new_session() -> Session {
    Session::create(
        NewSession {
            id: "anchors".into(),
            cwd: "/w".into(),
            now: 0,
            parent_session: None,
        },
        Box::new(SequentialIds::new()),
    )
}

fn append(s: &mut Session, message: Value) {
    let now = s.len() as i64 * 1000 + 1000;
    s.append_message(message, now).unwrap();
}

fn assistant(content: Value) -> Value {
    json!({"role": "assistant", "content": content, "api": "anthropic-messages",
        "provider": "anthropic", "model": "claude-opus-4-7", "stopReason": "stop"})
}

/// Ordinary turns with no identifier in them (what the kept region holds).
fn padding(s: &mut Session, turns: usize) {
    for t in 0..turns {
        append(
            s,
            json!({"role": "user", "content": format!("please continue with the next step {}", "and keep going ".repeat(20))}),
        );
        append(
            s,
            assistant(
                json!([{"type": "text", "text": format!("continuing as asked {}", "nothing new here ".repeat(20 + t % 2))}]),
            ),
        );
    }
}

/// The identifiers [`planted`] writes.
const PLANTED: [&str; 6] = [
    "8443",
    "--no-verify",
    "#4512",
    "src/deploy/run.rs",
    "3f9a2c1e",
    "error[E0425]: cannot find value `deploy_target` in this scope",
];

/// A user turn and a tool round with the identifiers of [`PLANTED`].
fn planted(s: &mut Session) {
    append(
        s,
        json!({"role": "user", "content": "Deploy to port 8443 with \"--no-verify\"; the bug is #4512 in src/deploy/run.rs"}),
    );
    append(
        s,
        assistant(json!([{"type": "toolCall", "id": "t1", "name": "bash",
            "arguments": {"command": "git show 3f9a2c1e"}}])),
    );
    append(
        s,
        json!({"role": "toolResult", "toolCallId": "t1", "toolName": "bash", "isError": true,
            "content": [{"type": "text", "text": "error[E0425]: cannot find value `deploy_target` in this scope\n  --> src/x.rs"}]}),
    );
    append(
        s,
        assistant(json!([{"type": "text", "text": "I see the failure."}])),
    );
}

fn settings(anchor_tokens: u64) -> CompactionSettings {
    CompactionSettings {
        keep_recent_tokens: 400,
        anchor_tokens,
        ..CompactionSettings::default()
    }
}

/// Answers every request with a short paraphrase that keeps no identifier (the worst case).
fn answer_all(plan: &mut CompactionPlan, session: &Session) {
    for _ in 0..50 {
        if plan.is_complete() {
            return;
        }
        let ids: Vec<String> = plan.pending().into_iter().map(|r| r.id.clone()).collect();
        for id in ids {
            plan.answer(
                session,
                &id,
                "The user asked for a deployment; work went on.",
            )
            .unwrap();
        }
    }
    panic!("the plan never completes");
}

fn compact(s: &mut Session, st: &CompactionSettings) -> (CompactionPlan, CompactionBody) {
    let mut plan = plan_compaction(s, st, PlanOptions::default()).unwrap();
    answer_all(&mut plan, s);
    let c = commit_compaction(s, &plan, s.len() as i64 * 1000 + 1000).unwrap();
    let body: CompactionBody = s.body(c.index).unwrap();
    (plan, body)
}

fn block_of(text: &str) -> &str {
    let open = text.find("<anchors>\n").expect("an <anchors> block");
    let close = text[open..].find("</anchors>").expect("a closed block") + open;
    &text[open..close + "</anchors>".len()]
}

#[test]
fn an_llm_summary_carries_the_dropped_identifiers() {
    let mut s = new_session();
    planted(&mut s);
    padding(&mut s, 6);
    let (plan, body) = compact(&mut s, &settings(1_000));
    let block = block_of(&body.summary);
    for id in PLANTED {
        assert!(block.contains(id), "{id} missing from {block}");
    }
    // User-stated first.
    let user_line = block.find("- number: 8443").unwrap();
    let tool_line = block.find("- id: 3f9a2c1e").unwrap();
    assert!(user_line < tool_line, "{block}");
    // Carried in details for the next compaction, beside the file lists.
    let details = body.details.unwrap();
    assert!(details.get("readFiles").is_some());
    let carried = details[DETAILS_KEY].as_array().unwrap();
    assert!(carried
        .iter()
        .any(|a| a["text"] == "8443" && a["user"] == true));
    // Nothing planted is lost; the block holds them.
    let report = loss_report(&s, &plan).unwrap();
    for id in PLANTED {
        assert!(!report.lost.iter().any(|l| l == id), "{id} reported lost");
        assert!(report.anchored.iter().any(|a| a == id), "{id} not anchored");
    }
}

#[test]
fn a_small_budget_reports_what_it_left_out() {
    let mut s = new_session();
    planted(&mut s);
    padding(&mut s, 6);
    // Room for the preamble and about one line.
    let (plan, body) = compact(&mut s, &settings(75));
    let report = loss_report(&s, &plan).unwrap();
    assert!(!report.anchored.is_empty(), "{}", body.summary);
    assert!(report.anchored.len() < PLANTED.len());
    let lost: Vec<&str> = PLANTED
        .iter()
        .copied()
        .filter(|id| report.lost.iter().any(|l| l == id))
        .collect();
    assert_eq!(
        lost.len() + report.anchored.len(),
        PLANTED.len(),
        "every planted identifier is either anchored or lost: {report:?}"
    );
    // Without the index everything planted is lost.
    let mut s = new_session();
    planted(&mut s);
    padding(&mut s, 6);
    let (plan, body) = compact(&mut s, &settings(0));
    assert!(!body.summary.contains("<anchors>"));
    assert!(body.details.unwrap().get(DETAILS_KEY).is_none());
    let report = loss_report(&s, &plan).unwrap();
    assert!(report.anchored.is_empty());
    assert!(report.lost.is_empty(), "nothing harvested without a budget");
}

#[test]
fn anchors_survive_later_compactions_and_the_session_file() {
    let mut s = new_session();
    planted(&mut s);
    padding(&mut s, 6);
    compact(&mut s, &settings(1_000));
    for round in 0..3 {
        // Reload from the file between compactions: the carry is in `details`.
        s = Session::load(s.to_bytes(), LoadOptions::default()).unwrap();
        padding(&mut s, 6);
        let (_, body) = compact(&mut s, &settings(1_000));
        let block = block_of(&body.summary);
        for id in PLANTED {
            assert!(
                block.contains(id),
                "round {round}: {id} missing from {block}"
            );
        }
        // One block, not one per compaction.
        assert_eq!(body.summary.matches("<anchors>").count(), 1);
    }
}

#[test]
fn the_handoff_document_carries_the_block() {
    let mut s = new_session();
    planted(&mut s);
    padding(&mut s, 6);
    let st = CompactionSettings {
        strategy: Strategy::Handoff,
        ..settings(1_000)
    };
    let mut plan = plan_compaction(&s, &st, PlanOptions::default()).unwrap();
    answer_all(&mut plan, &s);
    // Before its commit harvested the anchors, the plan has no loss report to give in a new
    // session, which holds none of the entries it names.
    let err = loss_report(&new_session(), &plan).unwrap_err();
    assert_eq!(
        err.code(),
        ctxfold::error::ErrorCode::InvalidArgument,
        "{err}"
    );
    let next = commit_handoff(&s, &plan, "next".into(), Box::new(SequentialIds::new()), 9).unwrap();
    let entry: Value = serde_json::from_str(&next.entry_json(0)).unwrap();
    let content = entry["content"].as_str().unwrap();
    let block = block_of(content);
    assert!(block.contains("- id: 3f9a2c1e"), "{block}");
    assert!(entry["details"][DETAILS_KEY].is_array());
    let report = loss_report(&next, &plan).unwrap();
    assert!(report.anchored.iter().any(|a| a == "3f9a2c1e"));
}

/// A plan leaves the harvest to its commit (issue 42: its requests do not need it); the
/// commit writes what it harvested, and a harvest of its own gives the same anchors.
#[test]
fn the_commit_harvests_what_it_writes() {
    let mut s = new_session();
    planted(&mut s);
    padding(&mut s, 6);
    let st = settings(1_000);
    let mut plan = plan_compaction(&s, &st, PlanOptions::default()).unwrap();
    assert!(plan.harvested_anchors().is_none());
    answer_all(&mut plan, &s);
    assert!(
        plan.harvested_anchors().is_none(),
        "answers need no anchors"
    );
    let fresh = plan_compaction(&s, &st, PlanOptions::default()).unwrap();
    let own = fresh.anchors(&s).unwrap().ranked();
    let c = commit_compaction(&mut s, &plan, 9).unwrap();
    let body: CompactionBody = s.body(c.index).unwrap();
    let written = &body.details.unwrap()[DETAILS_KEY];
    let harvested = plan.harvested_anchors().expect("the commit harvested");
    assert_eq!(harvested.ranked(), own);
    assert_eq!(*written, AnchorIndex::details_json_of(&own));
    assert!(!own.is_empty());
    for id in PLANTED {
        assert!(block_of(&body.summary).contains(id), "{id}");
    }
}

#[test]
fn snapcompact_writes_the_block_before_history() {
    let mut s = new_session();
    // Enough history for frames to pay off, the planted turn in the middle (the archive's
    // head and tail are text, its middle frames).
    let long = |s: &mut Session, from: usize| {
        for t in from..from + 30 {
            let words: Vec<String> = (0..200)
                .map(|i| format!("fact{t}x{i} is recorded"))
                .collect();
            append(s, json!({"role": "user", "content": words.join(" ")}));
            append(
                s,
                assistant(json!([{"type": "text", "text": words.join(" ")}])),
            );
        }
    };
    long(&mut s, 0);
    planted(&mut s);
    long(&mut s, 30);
    padding(&mut s, 6);
    let st = CompactionSettings {
        strategy: Strategy::Snapcompact,
        ..settings(1_000)
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
    let c = commit_snapcompact(&mut s, &plan, &options, &FallbackFonts::new(), 99_000).unwrap();
    let body: CompactionBody = s.body(c.index).unwrap();
    let block = block_of(&body.summary);
    let at_block = body.summary.find("<anchors>").unwrap();
    let at_history = body.summary.rfind("\nHISTORY\n").unwrap();
    assert!(at_block < at_history, "{}", body.summary);
    assert!(body.summary.ends_with("==================="));
    // The tool's identifiers are in frames only: the block gives them as text.
    assert!(block.contains("- id: 3f9a2c1e"), "{block}");
}

#[test]
fn anchor_tokens_is_a_setting() {
    let st = CompactionSettings::from_json(&json!({"anchorTokens": 250})).unwrap();
    assert_eq!(st.anchor_tokens, 250);
    assert_eq!(CompactionSettings::default().anchor_tokens, 1_000);
    assert!(CompactionSettings::from_json(&json!({"anchorTokens": -1})).is_err());
    assert!(st.json().contains("\"anchorTokens\":250"));
}

// ----- properties ----------------------------------------------------------------------------

/// Words a generated message is made of: plain ones and identifiers of every kind.
const POOL: [&str; 16] = [
    "the",
    "build",
    "src/lib/mod.rs",
    "https://example.org/a/b",
    "c0ffee42",
    "#77",
    "v2.3",
    "1.2.3",
    "E_BAD_THING",
    "ENOENT",
    "9090",
    "\"quoted words\"",
    "`code span`",
    "snake_name",
    "fails",
    "error: it broke",
];

fn text_of(words: &[usize], salt: u32) -> String {
    let mut out: Vec<String> = words
        .iter()
        .map(|&w| POOL[w % POOL.len()].to_string())
        .collect();
    // A per-session identifier makes each generated session's anchors its own.
    out.push(format!("id{salt:x}f00d1"));
    out.join(" ")
}

fn generated(turns: &[(Vec<usize>, Vec<usize>)], salt: u32) -> Session {
    let mut s = new_session();
    for (i, (user, tool)) in turns.iter().enumerate() {
        append(
            &mut s,
            json!({"role": "user", "content": text_of(user, salt)}),
        );
        let id = format!("t{i}");
        append(
            &mut s,
            assistant(json!([{"type": "toolCall", "id": id, "name": "grep",
                "arguments": {"pattern": text_of(tool, salt)}}])),
        );
        append(
            &mut s,
            json!({"role": "toolResult", "toolCallId": id, "toolName": "grep", "isError": i % 3 == 0,
                "content": [{"type": "text", "text": text_of(tool, salt + 1)}]}),
        );
        append(&mut s, assistant(json!([{"type": "text", "text": "ok"}])));
    }
    padding(&mut s, 4);
    s
}

fn turns() -> impl proptest::strategy::Strategy<Value = Vec<(Vec<usize>, Vec<usize>)>> {
    prop::collection::vec(
        (
            prop::collection::vec(0usize..64, 0..12),
            prop::collection::vec(0usize..64, 0..12),
        ),
        1..12,
    )
}

proptest! {
    #![proptest_config(Config { cases: 48, ..Config::default() })]

    /// The block never exceeds its budget, every anchor comes from the dropped region, and
    /// what `details` carries reads back the same from the session file.
    #[test]
    fn anchors_stay_within_budget_and_region(t in turns(), budget in 0u64..600, salt in 0u32..1000) {
        let mut s = generated(&t, salt);
        let st = settings(budget);
        let mut plan = match plan_compaction(&s, &st, PlanOptions::default()) {
            Ok(p) => p,
            Err(_) => return Ok(()),
        };
        let prep = &plan.preparation;
        let region: Vec<_> = prep
            .messages_to_summarize
            .iter()
            .chain(&prep.turn_prefix)
            .filter_map(|&i| s.entry_message(i).unwrap())
            .collect();
        let region_text = visible_text(&region);
        // The paths a `<files>` block of the region lists (grouped there, never whole).
        let listed = ctxfold::summary::fileops::listed_paths(&region_text);
        let from_region = |t: &str| region_text.contains(t) || listed.iter().any(|p| p == t);
        answer_all(&mut plan, &s);
        let c = commit_compaction(&mut s, &plan, 1).unwrap();
        let body: CompactionBody = s.body(c.index).unwrap();
        if let Some(open) = body.summary.find("<anchors>") {
            let block = &body.summary[open..];
            let block = &block[..block.find("</anchors>").unwrap() + "</anchors>".len()];
            let tokens = (block.encode_utf16().count() as u64).div_ceil(4);
            // The commit harvested the anchors it wrote.
            let anchors = plan.harvested_anchors().unwrap();
            prop_assert!(tokens <= anchors.budget && anchors.budget <= budget, "{tokens} > {budget}");
            for line in block.lines().filter_map(|l| l.strip_prefix("- ")) {
                let text = line.split_once(": ").unwrap().1;
                prop_assert!(from_region(text), "{text} is not from the region");
            }
        }
        let details = body.details.clone().unwrap();
        if let Some(items) = details.get(DETAILS_KEY).and_then(Value::as_array) {
            for a in items {
                let text = a["text"].as_str().unwrap();
                prop_assert!(from_region(text), "{text} is not from the region");
            }
        }
        let again = Session::load(s.to_bytes(), LoadOptions::default()).unwrap();
        let reread: CompactionBody = again.body(c.index).unwrap();
        prop_assert_eq!(reread.details, Some(details));
        prop_assert_eq!(reread.summary, body.summary);
    }
}

#[test]
fn a_native_replay_gets_the_block_as_a_developer_message() {
    use ctxfold::compaction::native::openai::commit_openai;
    use ctxfold::compaction::native::Lane;
    let mut s = new_session();
    planted(&mut s);
    padding(&mut s, 6);
    // With the recall tool on, the pointer follows the block (issue 38 item 3).
    let recall = CompactionSettings {
        recall_tool: true,
        ..settings(1_000)
    };
    let plan = plan_compaction(&s, &recall, PlanOptions::default()).unwrap();
    let answer = r#"{"output":[{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]},
        {"type":"compaction","encrypted_content":"ENC"}]}"#;
    let c = commit_openai(
        &mut s,
        &plan,
        "openai",
        Lane::OpenAiV1,
        answer,
        Vec::new(),
        5,
    )
    .unwrap();
    let entry: Value = serde_json::from_str(&s.entry_json(c.index)).unwrap();
    let items = entry["preserveData"]["openaiRemoteCompaction"]["replacementHistory"]
        .as_array()
        .unwrap();
    let last = items.last().unwrap();
    assert_eq!(last["role"], "developer");
    let text = last["content"][0]["text"].as_str().unwrap();
    assert!(block_of(text).contains("- id: 3f9a2c1e"), "{text}");
    assert_eq!(text.matches("<recall>").count(), 1, "{text}");
    assert!(text.find("</anchors>") < text.find("<recall>"), "{text}");
    // The entry's summary (what other readers get) carries both too.
    let summary = entry["summary"].as_str().unwrap();
    assert!(block_of(summary).contains("3f9a2c1e"));
    assert_eq!(summary.matches("<recall>").count(), 1);
}

/// A file the region edited is listed in the `<files>` block, grouped by folder (never as the
/// whole path): the loss report counts it as in view, not lost.
#[test]
fn a_path_the_files_block_lists_is_not_lost() {
    let mut s = new_session();
    let path = "src/service_2632/handler.rs";
    append(
        &mut s,
        json!({"role": "user", "content": "fix the handler"}),
    );
    append(
        &mut s,
        assistant(json!([
            {"type": "toolCall", "id": "c1", "name": "edit", "arguments": {"path": path, "oldText": "a", "newText": "b"}}
        ])),
    );
    append(
        &mut s,
        json!({"role": "toolResult", "toolCallId": "c1", "toolName": "edit", "isError": false,
            "content": [{"type": "text", "text": format!("edited {path}")}]}),
    );
    padding(&mut s, 6);
    let (plan, body) = compact(&mut s, &settings(1_000));
    assert!(
        !body.summary.contains(path),
        "the block groups it: {}",
        body.summary
    );
    assert!(body.summary.contains("handler.rs"), "{}", body.summary);
    let report = loss_report(&s, &plan).unwrap();
    assert!(!report.lost.iter().any(|l| l == path), "{report:?}");
}

/// A handoff starts a session with no compaction to carry `details` from: the next handoff
/// reads the previous document's `<anchors>` and `<files>` blocks back, so that the user's
/// identifiers and the edited files survive a chain of handoffs.
#[test]
fn anchors_and_edited_files_survive_a_chain_of_handoffs() {
    let st = CompactionSettings {
        strategy: Strategy::Handoff,
        ..settings(1_000)
    };
    let mut s = new_session();
    planted(&mut s);
    append(
        &mut s,
        assistant(json!([{"type": "toolCall", "id": "e1", "name": "edit",
            "arguments": {"path": "src/svc_77/handler.rs", "oldText": "a", "newText": "b"}}])),
    );
    append(
        &mut s,
        json!({"role": "toolResult", "toolCallId": "e1", "toolName": "edit", "isError": false,
            "content": [{"type": "text", "text": "ok"}]}),
    );
    padding(&mut s, 6);
    for round in 0..3 {
        let mut plan = plan_compaction(&s, &st, PlanOptions::default()).unwrap();
        answer_all(&mut plan, &s);
        let mut next = commit_handoff(
            &s,
            &plan,
            format!("next-{round}"),
            Box::new(SequentialIds::new()),
            9,
        )
        .unwrap();
        padding(&mut next, 6);
        s = next;
    }
    let messages: Vec<_> = (0..s.len())
        .filter_map(|i| s.entry_message(i).ok().flatten())
        .collect();
    let text = visible_text(&messages);
    let listed = ctxfold::summary::fileops::listed_paths(&text);
    for id in ["8443", "--no-verify", "#4512", "3f9a2c1e"] {
        assert!(text.contains(id), "{id} lost after three handoffs:\n{text}");
    }
    assert!(
        listed.iter().any(|p| p == "src/svc_77/handler.rs")
            || text.contains("src/svc_77/handler.rs"),
        "the edited file is gone:\n{text}"
    );
}

/// A handoff's new session starts from the document alone: what the kept region of a
/// compaction would have shown is dropped too, so its identifiers go into the block.
#[test]
fn a_handoff_anchors_the_recent_turns_too() {
    let mut s = new_session();
    padding(&mut s, 6);
    planted(&mut s);
    padding(&mut s, 1);
    let st = CompactionSettings {
        strategy: Strategy::Handoff,
        ..settings(1_000)
    };
    let mut plan = plan_compaction(&s, &st, PlanOptions::default()).unwrap();
    // The planted turn is in the kept region of this plan.
    let recent: Vec<_> = plan
        .preparation
        .recent
        .iter()
        .filter_map(|&i| s.entry_message(i).unwrap())
        .collect();
    assert!(
        visible_text(&recent).contains("8443"),
        "planted turn not kept"
    );
    answer_all(&mut plan, &s);
    let next = commit_handoff(&s, &plan, "next".into(), Box::new(SequentialIds::new()), 9).unwrap();
    let entry: Value = serde_json::from_str(&next.entry_json(0)).unwrap();
    let block = block_of(entry["content"].as_str().unwrap());
    for id in ["8443", "--no-verify", "3f9a2c1e"] {
        assert!(block.contains(id), "{id} missing:\n{block}");
    }
}
