//! Conformance of the summarizer input (spec: compaction §5.1, §5.2, §5.10) against the
//! reference's outputs for `large-session`: the serialized conversation and turn prefix of
//! `prepare.json`, character for character, its file operations, file lists and `<files>`
//! block; and the same for the branch summary of `branch-leaf-to-600.json`.
//!
//! The entry ranges come from the conformance data itself (turn start and first kept entry;
//! the collected branch entries); choosing them is the preparation's job, tested elsewhere.

use crate::common::{
    assert_same_text, fixture_json, fixture_session as load_session, sorted, strings,
};
use ctxfold::context::convert::convert_messages;
use ctxfold::context::ContextMessage;
use ctxfold::session::message::AgentMessage;
use ctxfold::session::{EntryKind, Session};
use ctxfold::summary::fileops::{
    compute_file_lists, format_file_operations, upsert_file_operations, FileLists, FileOperations,
};
use ctxfold::summary::serialize::{serialize_conversation_for_summary, serialize_each};
use serde_json::Value;

/// The messages carried by the entries at `indices` (entries that carry none are skipped).
fn messages_of(session: &Session, indices: &[usize]) -> Vec<ContextMessage> {
    indices
        .iter()
        .filter_map(|&i| ContextMessage::from_entry(session, i).expect("entry message parses"))
        .collect()
}

fn file_ops_json(ops: &FileOperations) -> (Vec<String>, Vec<String>, Vec<String>) {
    (sorted(&ops.read), sorted(&ops.written), sorted(&ops.edited))
}

/// The file operations, the file lists and the `<files>` block of `want` (a `prepare` record or
/// the branch document) match the ones computed from `ops`; returns the lists and the block.
fn assert_files(what: &str, ops: &FileOperations, want: &Value) -> (FileLists, String) {
    let (read, written, edited) = file_ops_json(ops);
    let want_ops = &want["fileOps"];
    assert_eq!(read, strings(&want_ops["read"]), "{what}: fileOps.read");
    assert_eq!(
        written,
        strings(&want_ops["written"]),
        "{what}: fileOps.written"
    );
    assert_eq!(
        edited,
        strings(&want_ops["edited"]),
        "{what}: fileOps.edited"
    );
    let lists = compute_file_lists(ops);
    assert_eq!(
        lists.read_files,
        strings(&want["readFiles"]),
        "{what}: readFiles"
    );
    assert_eq!(
        lists.modified_files,
        strings(&want["modifiedFiles"]),
        "{what}: modifiedFiles"
    );
    let block = format_file_operations(&lists.read_files, &lists.modified_files, Some(&ops.read));
    assert_same_text(
        &format!("{what}: filesBlock"),
        &block,
        want["filesBlock"].as_str().expect("text"),
    );
    (lists, block)
}

#[test]
fn prepare_serialized_conversation_and_files() {
    let session = load_session();
    let doc = fixture_json("prepare.json");
    let prep = &doc["prepare"];
    let turn_start = prep["turnStartBranchIndex"].as_u64().expect("turnStart") as usize;
    let first_kept = prep["firstKeptBranchIndex"].as_u64().expect("firstKept") as usize;
    assert_eq!(prep["isSplitTurn"], Value::Bool(true));
    assert_eq!(prep["previousCompactionBranchIndex"], Value::from(-1));

    let path = session.active_path();
    assert_eq!(
        session.entries()[path[first_kept]].id(),
        prep["firstKeptEntryId"]
    );

    let history = messages_of(&session, &path[..turn_start]);
    let prefix = messages_of(&session, &path[turn_start..first_kept]);
    let counts = &prep["counts"];
    assert_eq!(history.len() as u64, counts["messagesToSummarize"]);
    assert_eq!(prefix.len() as u64, counts["turnPrefixMessages"]);
    // Metadata entries carry no message.
    let carried = path[..turn_start]
        .iter()
        .filter(|&&i| session.entries()[i].kind().carries_message())
        .count();
    assert_eq!(carried, history.len());
    assert!(path[..turn_start]
        .iter()
        .any(|&i| session.entries()[i].kind() == EntryKind::ThinkingLevelChange));

    let llm_history = convert_messages(&session, &history);
    let llm_prefix = convert_messages(&session, &prefix);
    let serialized = serialize_conversation_for_summary(&llm_history);
    assert_same_text(
        "serializedConversation",
        &serialized,
        prep["serializedConversation"].as_str().expect("text"),
    );
    assert_same_text(
        "serializedTurnPrefix",
        &serialize_conversation_for_summary(&llm_prefix),
        prep["serializedTurnPrefix"].as_str().expect("text"),
    );
    // The truncation cap is exercised by this data.
    assert!(serialized.contains(" more characters truncated]"));
    // Per-message serializations join to the whole.
    let each = serialize_each(&llm_history);
    let joined: Vec<&str> = each
        .iter()
        .map(String::as_str)
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(joined.join("\n\n"), serialized);

    // File operations: the summarized messages plus the prefix of the split turn, with no
    // previous compaction to seed from.
    let mut ops = FileOperations::new();
    for m in history.iter().chain(prefix.iter()) {
        ops.add_message(&m.message(&session));
    }
    let (lists, block) = assert_files("prepare", &ops, prep);
    assert!(block.contains("files elided…]"));
    assert_eq!(
        upsert_file_operations(
            "Summary.",
            &lists.read_files,
            &lists.modified_files,
            Some(&ops.read)
        ),
        format!("Summary.\n\n{block}")
    );
}

/// §7.2 [N]: the message of an entry for branch input; `useless` tool results that are not
/// errors are skipped.
fn branch_input_message(session: &Session, index: usize) -> Option<ContextMessage> {
    let m = ContextMessage::from_entry(session, index).expect("entry message parses")?;
    match &m.message(session) {
        AgentMessage::ToolResult(r) if r.useless && !r.is_error => None,
        _ => Some(m),
    }
}

#[test]
fn branch_summary_serialized_conversation_and_files() {
    let session = load_session();
    let doc = fixture_json("branch-leaf-to-600.json");
    let collected: Vec<usize> = doc["collectedEntries"]
        .as_array()
        .expect("collectedEntries")
        .iter()
        .map(|e| {
            let id = e["id"].as_str().expect("id");
            session.index_of(id).expect("collected entry exists")
        })
        .collect();
    let chosen = &doc["chosen"];
    let first = chosen["firstChosenCollectedIndex"].as_u64().expect("first") as usize;

    // Pass 1: details of branch summaries that are not from an extension (none here).
    let mut ops = FileOperations::new();
    for &i in &collected {
        if session.entries()[i].kind() == EntryKind::BranchSummary {
            let body: ctxfold::session::BranchSummaryBody = session.body(i).expect("body");
            if let (Some(d), false) = (&body.details, body.from_extension) {
                ops.add_details(d);
            }
        }
    }
    // Pass 2: the chosen entries, in order; every visited message contributes file ops.
    let messages: Vec<ContextMessage> = collected[first..]
        .iter()
        .filter_map(|&i| branch_input_message(&session, i))
        .collect();
    for m in &messages {
        ops.add_message(&m.message(&session));
    }
    assert_eq!(messages.len() as u64, chosen["messages"], "chosen messages");
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m.role().as_str().unwrap_or("?"))
        .collect();
    assert_eq!(
        roles,
        chosen["roles"]
            .as_array()
            .expect("roles")
            .iter()
            .map(|r| r.as_str().expect("role"))
            .collect::<Vec<_>>()
    );

    let llm = convert_messages(&session, &messages);
    assert_same_text(
        "branch serializedConversation",
        &serialize_conversation_for_summary(&llm),
        doc["serializedConversation"].as_str().expect("text"),
    );

    assert_files("branch", &ops, &doc);
}
