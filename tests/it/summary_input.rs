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
