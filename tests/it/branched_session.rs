//! `Session::branched` (createBranchedSession, issue 40 item 5): the upstream
//! SessionManager cases (pi 1.6, oh-my-pi 18.2.3) re-expressed against ctxfold's API.

use ctxfold::session::{BranchedOptions, LoadOptions, SequentialIds, Session};
use serde_json::{json, Value};

const HEADER: &str = r#"{"type":"session","version":3,"id":"src","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/repo"}"#;

fn msg(id: &str, parent: Option<&str>, role: &str, text: &str) -> String {
    json!({"type":"message","id":id,"parentId":parent,"timestamp":"2026-01-01T00:00:01.000Z",
        "message":{"role":role,"content":text,"timestamp":1}})
    .to_string()
}

fn label(id: &str, parent: &str, target: &str, text: Option<&str>, ts: &str) -> String {
    json!({"type":"label","id":id,"parentId":parent,"timestamp":ts,"targetId":target,"label":text})
        .to_string()
}

fn load(lines: &[String]) -> Session {
    let text = std::iter::once(HEADER.to_string())
        .chain(lines.iter().cloned())
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    Session::load(text.into_bytes(), LoadOptions::default()).unwrap()
}

fn opts() -> BranchedOptions {
    BranchedOptions {
        id: "new".into(),
        timestamp: "2026-02-01T00:00:00.000Z".into(),
        parent_session: Some("/sessions/src.jsonl".into()),
    }
}

fn branch(s: &Session, leaf: &str) -> Session {
    s.branched(
        s.index_of(leaf).unwrap(),
        &opts(),
        &mut SequentialIds::default(),
    )
    .unwrap()
}

fn lines(s: &Session) -> Vec<Value> {
    String::from_utf8(s.to_bytes())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn ids(s: &Session) -> Vec<String> {
    s.entries().iter().map(|e| e.id().to_string()).collect()
}

/// A tree: u1 → a1 → u2 → a2, and a sibling u3 → a3 off a1.
fn tree() -> Vec<String> {
    vec![
        msg("u1", None, "user", "one"),
        msg("a1", Some("u1"), "assistant", "1"),
        msg("u2", Some("a1"), "user", "two"),
        msg("a2", Some("u2"), "assistant", "2"),
        msg("u3", Some("a1"), "user", "three"),
        msg("a3", Some("u3"), "assistant", "3"),
    ]
}

#[test]
fn holds_only_the_path_to_the_leaf() {
    let s = load(&tree());
    let b = branch(&s, "a3");
    assert_eq!(ids(&b), ["u1", "a1", "u3", "a3"]);
    assert_eq!(b.leaf_id(), Some("a3"));
    // The source is unchanged.
    assert_eq!(ids(&s), ["u1", "a1", "u2", "a2", "u3", "a3"]);
}

#[test]
fn a_new_header_with_the_source_cwd_and_parent_session() {
    let b = branch(&load(&tree()), "a2");
    let h = &lines(&b)[0];
    assert_eq!(
        h,
        &json!({"type":"session","version":3,"id":"new","timestamp":"2026-02-01T00:00:00.000Z",
            "cwd":"/repo","parentSession":"/sessions/src.jsonl"})
    );
}

#[test]
fn entry_lines_are_kept_byte_for_byte() {
    let t = tree();
    let b = branch(&load(&t), "a2");
    let text = String::from_utf8(b.to_bytes()).unwrap();
    let body: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(body, [&t[0], &t[1], &t[2], &t[3]].map(String::as_str));
}

#[test]
fn labels_on_the_path_are_recreated_at_the_end() {
    let mut t = tree();
    t.push(label(
        "l1",
        "a2",
        "u1",
        Some("start"),
        "2026-01-01T00:00:05.000Z",
    ));
    t.push(label(
        "l2",
        "l1",
        "u3",
        Some("other branch"),
        "2026-01-01T00:00:06.000Z",
    ));
    let s = load(&t);
    let b = branch(&s, "l2");
    // l1 and l2 sit on the path to l2 (it descends from a2): dropped, then recreated.
    let all = lines(&b);
    assert_eq!(ids(&b)[..4], ["u1", "a1", "u2", "a2"]);
    let labels: Vec<&Value> = all.iter().filter(|v| v["type"] == "label").collect();
    assert_eq!(
        labels.len(),
        1,
        "u3 is not on the path: its label is not written"
    );
    assert_eq!(labels[0]["targetId"], "u1");
    assert_eq!(labels[0]["label"], "start");
    assert_eq!(labels[0]["parentId"], "a2");
    assert_eq!(labels[0]["timestamp"], "2026-01-01T00:00:05.000Z");
    assert_eq!(b.labels().get("u1"), Some(&json!("start")));
}

#[test]
fn entries_after_a_label_are_rechained() {
    let t = vec![
        msg("u1", None, "user", "one"),
        label("l1", "u1", "u1", Some("first"), "2026-01-01T00:00:02.000Z"),
        msg("a1", Some("l1"), "assistant", "1"),
    ];
    let b = branch(&load(&t), "a1");
    let all = lines(&b);
    assert_eq!(all[2]["id"], "a1");
    assert_eq!(all[2]["parentId"], "u1");
    assert_eq!(all.last().unwrap()["type"], "label");
    assert_eq!(all.last().unwrap()["parentId"], "a1");
    assert!(b.warnings().is_empty(), "{:?}", b.warnings());
}

#[test]
fn a_compaction_keeping_from_a_dropped_label_keeps_from_the_next_entry() {
    let t = vec![
        msg("u1", None, "user", "one"),
        label("l1", "u1", "u1", Some("x"), "2026-01-01T00:00:02.000Z"),
        msg("a1", Some("l1"), "assistant", "1"),
        json!({"type":"compaction","id":"c1","parentId":"a1","timestamp":"2026-01-01T00:00:03.000Z",
            "summary":"s","firstKeptEntryId":"l1","tokensBefore":10})
        .to_string(),
        json!({"type":"compaction","id":"c2","parentId":"c1","timestamp":"2026-01-01T00:00:04.000Z",
            "summary":"t","firstKeptEntryId":"c2","tokensBefore":10})
        .to_string(),
    ];
    let b = branch(&load(&t), "c2");
    let all = lines(&b);
    let c1 = all.iter().find(|v| v["id"] == "c1").unwrap();
    assert_eq!(c1["firstKeptEntryId"], "a1");
    // A retain-none compaction names itself and keeps doing so.
    let c2 = all.iter().find(|v| v["id"] == "c2").unwrap();
    assert_eq!(c2["firstKeptEntryId"], "c2");
}

#[test]
fn a_cleared_label_is_not_recreated_and_new_ids_do_not_collide() {
    let t = vec![
        msg("00000001", None, "user", "one"),
        label(
            "l1",
            "00000001",
            "00000001",
            Some("x"),
            "2026-01-01T00:00:02.000Z",
        ),
        label("l2", "l1", "00000001", None, "2026-01-01T00:00:03.000Z"),
        msg("a1", Some("l2"), "assistant", "1"),
        label("l3", "a1", "a1", Some("answer"), "2026-01-01T00:00:04.000Z"),
    ];
    let b = branch(&load(&t), "l3");
    let all = lines(&b);
    let labels: Vec<&Value> = all.iter().filter(|v| v["type"] == "label").collect();
    assert_eq!(labels.len(), 1);
    assert_eq!(labels[0]["targetId"], "a1");
    // SequentialIds would draw 00000001 first: a path id, skipped.
    assert_ne!(labels[0]["id"], "00000001");
    assert!(b.warnings().is_empty(), "{:?}", b.warnings());
}
