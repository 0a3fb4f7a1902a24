//! Loading and saving: bad input gives its documented result, unchanged files are written
//! back byte for byte, migrations follow spec compaction §1.3, tree operations §1.8.

use crate::common::Jsonl;
use ctxfold::session::{LoadOptions, SequentialIds, Session};
use ctxfold::{Error, ErrorCode};
use serde_json::{json, Value};

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#;

fn load(text: &[u8]) -> Session {
    Session::load(
        text.to_vec(),
        LoadOptions::with_ids(Box::new(SequentialIds::new())),
    )
    .unwrap()
}

fn codes(s: &Session) -> Vec<(ErrorCode, u32)> {
    s.warnings().iter().map(|w| (w.code, w.line)).collect()
}

fn round_trips(text: &[u8]) {
    assert_eq!(
        load(text).to_bytes(),
        text,
        "{}",
        String::from_utf8_lossy(text)
    );
}

#[test]
fn invalid_json_lines_are_kept_and_reported() {
    let text = format!(
        "{HEADER}\n{}\n{{\"type\":\"message\",\n[1,2]\n\"just a string\"\n{{\"type\":\"x\",\"id\":\"z\"}} trailing\n{}\n",
        r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}"#,
        r#"{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"again"}}"#,
    );
    let s = load(text.as_bytes());
    assert_eq!(
        codes(&s),
        vec![
            (ErrorCode::JsonlLine, 3),
            (ErrorCode::JsonlLine, 4),
            (ErrorCode::JsonlLine, 5),
            (ErrorCode::JsonlLine, 6)
        ]
    );
    assert_eq!(s.len(), 2);
    assert_eq!(s.entry(1).unwrap().parent_id(), Some("a"));
    assert_eq!(s.to_bytes(), text.as_bytes());
}

#[test]
fn a_json_object_may_not_span_lines() {
    let text = format!("{HEADER}\n{{\"type\":\"custom\",\n\"id\":\"x\",\"parentId\":null}}\n");
    let s = load(text.as_bytes());
    assert_eq!(s.len(), 0);
    assert_eq!(
        codes(&s),
        vec![(ErrorCode::JsonlLine, 2), (ErrorCode::JsonlLine, 3)]
    );
    assert_eq!(s.to_bytes(), text.as_bytes());
}

#[test]
fn unusable_entries_are_kept_and_reported() {
    let text = format!("{HEADER}\n{{\"id\":\"a\"}}\n{{\"type\":\"message\",\"parentId\":null}}\n{{\"type\":\"x\",\"id\":\"b\",\"parentId\":5}}\n");
    let s = load(text.as_bytes());
    assert_eq!(
        codes(&s),
        vec![
            (ErrorCode::InvalidEntry, 2),
            (ErrorCode::InvalidEntry, 3),
            (ErrorCode::InvalidEntry, 4)
        ]
    );
    assert_eq!(
        s.len(),
        1,
        "the entry with a bad parentId is kept as a root"
    );
    assert_eq!(s.parent_of(0), None);
    assert_eq!(s.to_bytes(), text.as_bytes());
}

#[test]
fn not_a_session() {
    for input in [
        "",
        "\n\n  \n",
        "hello\n",
        r#"{"type":"message","id":"a"}"#,
        r#"{"type":"session"}"#,
        r#"{"type":"session","id":7}"#,
        r#"{"type":"session","id":"a","version":"3"}"#,
        "[1]",
    ] {
        match Session::load(input.as_bytes().to_vec(), LoadOptions::default()) {
            Err(e @ Error::NotASession { .. }) => {
                assert_eq!(e.code(), ErrorCode::NotASession);
                assert!(e.to_string().contains("Session.create"), "{e}");
            }
            other => panic!("{input:?}: {other:?}"),
        }
    }
}

#[test]
fn version_too_new() {
    let e = Session::load(
        br#"{"type":"session","id":"a","version":5}"#.to_vec(),
        LoadOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        e,
        Error::VersionTooNew {
            version: 5,
            supported: 4
        }
    );
    // Version 4 (a header-only stamp) is read and left alone.
    let v4 = format!(
        "{}\n{}\n",
        r#"{"type":"session","id":"a","version":4}"#,
        r#"{"type":"message","id":"1","parentId":null,"message":{"role":"user","content":"x"}}"#
    );
    round_trips(v4.as_bytes());
}

#[test]
fn unknown_parents_cycles_and_duplicates() {
    let s = Jsonl::new()
        .user("a", Some("ghost"), "orphan")
        .user("b", Some("c"), "x")
        .user("c", Some("b"), "y")
        .user("a", None, "dup")
        .load();
    let mut got: Vec<ErrorCode> = s.warnings().iter().map(|w| w.code).collect();
    got.sort_by_key(|c| c.as_str());
    assert_eq!(
        got,
        [
            ErrorCode::DuplicateId,
            ErrorCode::ParentCycle,
            ErrorCode::UnknownParent
        ]
    );
    // Lookups find the later duplicate; every path ends.
    assert_eq!(s.index_of("a"), Some(3));
    for i in 0..s.len() {
        assert!(s.path_to(i).len() <= 2);
    }
    // A long cycle through forward links.
    let mut j = Jsonl::new();
    let n = 2000;
    for i in 0..n {
        j = j.user(&format!("e{i}"), Some(&format!("e{}", (i + 1) % n)), "x");
    }
    let s = j.load();
    assert_eq!(s.warnings_with(ErrorCode::ParentCycle).count(), 1);
    assert_eq!(s.path_to(0).len(), n);
}

#[test]
fn invalid_utf8_is_reported_read_lossily_and_kept() {
    let mut bytes = format!("{HEADER}\n").into_bytes();
    bytes.extend_from_slice(
        br#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"bad "#,
    );
    bytes.extend_from_slice(&[0xC3, 0x28, 0xFF]);
    bytes.extend_from_slice(b"\"}}\n");
    let s = load(&bytes);
    assert_eq!(codes(&s), vec![(ErrorCode::InvalidUtf8, 2)]);
    let ctx = ctxfold::context::build_context(&s, &Default::default()).unwrap();
    match &ctx.messages[0].message(&s) {
        ctxfold::AgentMessage::User(u) => assert_eq!(u.content.text(), "bad \u{FFFD}(\u{FFFD}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.to_bytes(), bytes);
}

/// `JSON.stringify` writes a JavaScript string holding half a surrogate pair as a lone
/// surrogate escape (`"\ud800"`), which `JSON.parse` reads back. Such lines load without a
/// warning, and their messages reach the model whole, each lone surrogate as U+FFFD (what
/// JavaScript's UTF-8 encoders make of it in a request body), where the provider view used to
/// get a user message with nothing but its `attribution`. The file is written back byte for
/// byte, escapes and all, and a message appended from JavaScript with one is accepted.
#[test]
fn lone_surrogate_escapes_read_as_replacement_characters() {
    let lines = [
        r#"{"type":"message","id":"u","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"a\ud800b","timestamp":1}}"#,
        r#"{"type":"message","id":"a","parentId":"u","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"src/\udc00.ts"}}],"stopReason":"toolUse","timestamp":2}}"#,
        r#"{"type":"message","id":"r","parentId":"a","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"out \ud800 \ud83d\ud83d\ude00 \\ud800"}],"isError":false,"timestamp":3}}"#,
    ];
    let text = format!("{HEADER}\n{}\n", lines.join("\n"));
    let s = load(text.as_bytes());
    assert_eq!(codes(&s), vec![]);
    assert_eq!(s.len(), 3);

    let ctx = ctxfold::context::build_context(&s, &Default::default()).unwrap();
    let llm = ctxfold::context::convert::convert_to_llm(&s, &ctx);
    assert_eq!(
        llm,
        [
            json!({"role":"user","content":"a\u{fffd}b","timestamp":1,"attribution":"user"}),
            json!({"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"src/\u{fffd}.ts"}}],"stopReason":"toolUse","timestamp":2}),
            json!({"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"out \u{fffd} \u{fffd}😀 \\ud800"}],"isError":false,"timestamp":3,"attribution":"agent"}),
        ]
    );
    // The typed views and the estimates read the same text: "a\u{fffd}b" is 5 UTF-8 bytes.
    match &ctx.messages[0].message(&s) {
        ctxfold::AgentMessage::User(u) => assert_eq!(u.content.text(), "a\u{fffd}b"),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.entry_tokens(0, Default::default()), 2);
    ctxfold::tokens::verify_recorded_facts(&s).unwrap();
    assert_eq!(
        ctxfold::context::convert::verify_adopted_forms(&s).unwrap(),
        3
    );
    let read = s.file_call_facts(1).unwrap();
    assert_eq!(read[0].path.as_ref(), "src/\u{fffd}.ts");

    // Unchanged lines keep their escapes: the file is its input, and stays so around an edit
    // of another line.
    assert_eq!(s.to_bytes(), text.as_bytes());
    let mut s = s;
    let appended = r#"{"role":"user","content":"c\udbffd","timestamp":4}"#;
    let id = s
        .append_message(ctxfold::support::json::parse(appended).unwrap(), 4)
        .unwrap();
    let out = String::from_utf8(s.to_bytes()).unwrap();
    assert!(out.starts_with(&text), "{out}");
    let last = s.message_json(s.len() - 1).unwrap();
    assert_eq!(
        last, r#"{"role":"user","content":"c�d","timestamp":4}"#,
        "{id}"
    );
    assert_eq!(load(out.as_bytes()).to_bytes(), out.as_bytes());
}

/// A number beyond the f64 range (`1e400`) reads as null, as the reference sends it
/// (`JSON.parse` gives Infinity, `JSON.stringify` writes null): the message keeps its content
/// instead of reaching the provider as only its attribution. The line stays as written.
#[test]
fn numbers_beyond_f64_read_as_null() {
    let lines = [
        r#"{"type":"message","id":"u","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"big","meta":{"n":1e400,"m":-2e308},"timestamp":1}}"#,
        r#"{"type":"message","id":"a","parentId":"u","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"calc","arguments":{"x":1e999}}],"stopReason":"toolUse","timestamp":2}}"#,
        r#"{"type":"message","id":"r","parentId":"a","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"calc","content":[{"type":"text","text":"inf"}],"isError":false,"timestamp":3}}"#,
    ];
    let text = format!("{HEADER}\n{}\n", lines.join("\n"));
    let s = load(text.as_bytes());
    assert_eq!(codes(&s), vec![]);
    let ctx = ctxfold::context::build_context(&s, &Default::default()).unwrap();
    let llm = ctxfold::context::convert::convert_to_llm(&s, &ctx);
    assert_eq!(
        llm,
        [
            json!({"role":"user","content":"big","meta":{"n":null,"m":null},"timestamp":1,"attribution":"user"}),
            json!({"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"calc","arguments":{"x":null}}],"stopReason":"toolUse","timestamp":2}),
            json!({"role":"toolResult","toolCallId":"c1","toolName":"calc","content":[{"type":"text","text":"inf"}],"isError":false,"timestamp":3,"attribution":"agent"}),
        ]
    );
    ctxfold::tokens::verify_recorded_facts(&s).unwrap();
    assert_eq!(s.to_bytes(), text.as_bytes());
}

#[test]
fn a_50_mb_line_loads() {
    let big = "y".repeat(50 * 1024 * 1024);
    let text = format!(
        "{HEADER}\n{{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{{\"role\":\"user\",\"content\":\"{big}\"}}}}\n"
    );
    let s = load(text.as_bytes());
    assert_eq!(s.len(), 1);
    assert_eq!(
        s.entry_tokens(0, Default::default()),
        (big.len() as u64).div_ceil(4)
    );
    // Cut short: reported, not a hang.
    let s = load(&text.as_bytes()[..text.len() - 10]);
    assert_eq!(codes(&s), vec![(ErrorCode::JsonlLine, 2)]);
}

#[test]
fn whitespace_crlf_title_slot_and_missing_final_newline_round_trip() {
    let entry =
        r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"x"}}"#;
    let title = format!(
        "{{\"type\":\"title\",\"v\":1,\"title\":\"T\",\"source\":\"auto\",\"updatedAt\":1,\"pad\":\"{}\"}}",
        " ".repeat(150)
    );
    for text in [
        format!("{HEADER}\r\n{entry}\r\n"),
        format!("{HEADER}\n\n  \n{entry}"),
        format!("\n{HEADER}\n {entry} \n\t\n"),
        format!("{title}\n{HEADER}\n{entry}\n"),
        HEADER.to_string(),
        format!("{HEADER}\n"),
    ] {
        round_trips(text.as_bytes());
        let s = load(text.as_bytes());
        assert!(s.warnings().is_empty(), "{text:?}: {:?}", s.warnings());
        assert_eq!(s.header().id, "s");
    }
    // Appending after a file without a final newline starts a new line and ends with one.
    let mut s = load(format!("{HEADER}\n{entry}").as_bytes());
    s.append_message(json!({"role":"user","content":"more"}), 0)
        .unwrap();
    let out = String::from_utf8(s.to_bytes()).unwrap();
    assert!(out.starts_with(&format!("{HEADER}\n{entry}\n{{")));
    assert!(out.ends_with("}\n"));
}

#[test]
fn migration_v1_compaction_indices_and_v2_hook_messages() {
    let v1 = [
        r#"{"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/","provider":"x","modelId":"y","thinkingLevel":"off"}"#,
        r#"{"type":"message","timestamp":"t","message":{"role":"user","content":"one"}}"#,
        r#"{"type":"message","timestamp":"t","message":{"role":"assistant","content":[]}}"#,
        r#"{"type":"compaction","timestamp":"t","summary":"S","firstKeptEntryIndex":2,"tokensBefore":5}"#,
        r#"{"type":"compaction","timestamp":"t","summary":"S0","firstKeptEntryIndex":0,"tokensBefore":5}"#,
        r#"{"type":"message","timestamp":"t","message":{"role":"hookMessage","customType":"h","content":"c","display":true}}"#,
    ]
    .join("\n")
        + "\n";
    let s = load(v1.as_bytes());
    assert_eq!(s.header().version, 3);
    assert_eq!(s.header().version_on_disk, 1);
    let out = String::from_utf8(s.to_bytes()).unwrap();
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["version"], 3);
    assert_eq!(lines[0]["provider"], "x", "v1 header fields survive");
    assert_eq!(lines[1]["id"], "00000001");
    assert_eq!(lines[1]["parentId"], Value::Null);
    assert_eq!(lines[2]["parentId"], "00000001");
    assert_eq!(lines[3]["firstKeptEntryId"], "00000002");
    assert!(lines[3].get("firstKeptEntryIndex").is_none());
    assert!(
        lines[4].get("firstKeptEntryId").is_none(),
        "index 0 is the header"
    );
    assert!(lines[4].get("firstKeptEntryIndex").is_none());
    assert_eq!(lines[5]["message"]["role"], "custom");
    // Field order: new fields go last, the rest keeps its place.
    assert!(out
        .lines()
        .nth(1)
        .unwrap()
        .starts_with(r#"{"type":"message","timestamp":"t","message":{"#));
    // Idempotent: the migrated file is stable.
    let again = load(out.as_bytes());
    assert!(again.warnings().is_empty());
    assert_eq!(again.to_bytes(), out.as_bytes());

    // v2: ids are kept, hookMessage becomes custom.
    let v2 = [
        r#"{"type":"session","version":2,"id":"v2"}"#,
        r#"{"type":"message","id":"keep1","parentId":null,"message":{"role":"hookMessage","customType":"h","content":"c","display":true}}"#,
    ]
    .join("\n");
    let s = load(v2.as_bytes());
    assert_eq!(s.entry(0).unwrap().id(), "keep1");
    assert_eq!(s.entry(0).unwrap().role(), Some(ctxfold::Role::Custom));
    let out = String::from_utf8(s.to_bytes()).unwrap();
    assert!(
        out.contains(r#"{"role":"custom","customType":"h""#),
        "{out}"
    );
    assert!(out.starts_with(r#"{"type":"session","version":3,"id":"v2"}"#));
}

#[test]
fn tree_operations_and_errors() {
    let mut s = Jsonl::new()
        .user("1", None, "a")
        .assistant("2", Some("1"), "b")
        .user("3", Some("2"), "c")
        .user("4", Some("2"), "d")
        .load();
    let ids = |v: Vec<usize>| -> Vec<String> {
        v.into_iter()
            .map(|i| s.entry(i).unwrap().id().to_string())
            .collect()
    };
    assert_eq!(ids(s.path_to(3)), ["1", "2", "4"]);
    assert_eq!(ids(s.children(Some(1))), ["3", "4"]);
    assert_eq!(ids(s.children(None)), ["1"]);
    assert_eq!(s.leaf_id(), Some("4"));
    assert_eq!(s.branch("zz"), Err(Error::UnknownEntry { id: "zz".into() }));
    assert_eq!(
        s.branch("zz").unwrap_err().to_string(),
        "Entry zz not found"
    );
    s.branch("3").unwrap();
    let id = s
        .append_message(json!({"role":"user","content":"e"}), 5)
        .unwrap();
    assert_eq!(
        s.entry(s.index_of(&id).unwrap()).unwrap().parent_id(),
        Some("3")
    );
    // Branch with summary: at the target, leaf advances to the summary.
    let b = s
        .branch_with_summary(Some("2"), "explored", None, false, 6)
        .unwrap();
    assert_eq!(s.leaf_id(), Some(b.as_str()));
    assert_eq!(s.parent_of(s.index_of(&b).unwrap()), Some(1));
    assert!(s
        .branch_with_summary(Some("nope"), "x", None, false, 7)
        .is_err());
    let root = s
        .branch_with_summary(None, "from root", None, true, 8)
        .unwrap();
    let body: ctxfold::session::BranchSummaryBody = s.body(s.index_of(&root).unwrap()).unwrap();
    assert_eq!(body.from_id, "root");
    assert!(body.from_extension);
    // Labels: last wins, empty clears, unknown target fails.
    s.append_label("1", Some("first"), 9).unwrap();
    s.append_label("1", Some("renamed"), 9).unwrap();
    s.append_label("2", Some("x"), 9).unwrap();
    s.append_label("2", None, 9).unwrap();
    let labels = s.labels();
    assert_eq!(labels.get("1").and_then(|v| v.as_str()), Some("renamed"));
    assert!(!labels.contains_key("2"));
    assert!(matches!(
        s.append_label("zz", Some("x"), 9),
        Err(Error::UnknownEntry { .. })
    ));
    // Appended entries are ordinary lines on reload.
    let again = load(&s.to_bytes());
    assert!(again.warnings().is_empty());
    assert_eq!(again.len(), s.len());
    assert_eq!(again.to_bytes(), s.to_bytes());
}

#[test]
fn field_edits_keep_every_other_byte() {
    let text = format!(
        "{HEADER}\n{}\n",
        r#"{"type":"message","id":"a","parentId":null,"x":1.50,"message":{"role":"toolResult","toolCallId":"c","content":[{"type":"text","text":"big"}],"isError":false}}"#
    );
    let mut s = load(text.as_bytes());
    s.set_entry_field(0, &["message"], "prunedAt", &json!(1_800_000_000_000u64))
        .unwrap();
    let out = String::from_utf8(s.to_bytes()).unwrap();
    assert_eq!(
        out,
        format!(
            "{HEADER}\n{}\n",
            r#"{"type":"message","id":"a","parentId":null,"x":1.50,"message":{"role":"toolResult","toolCallId":"c","content":[{"type":"text","text":"big"}],"isError":false,"prunedAt":1800000000000}}"#
        )
    );
    match s.message(0).unwrap() {
        ctxfold::AgentMessage::ToolResult(r) => assert_eq!(r.pruned_at, Some(1.8e12)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn generated_sessions_round_trip_byte_for_byte() {
    use ctxfold_testkit::{generate, GenOptions};
    for opts in [
        GenOptions::sample(),
        GenOptions {
            entries: 3000,
            seed: 99,
            ..GenOptions::default()
        },
    ] {
        let bytes = generate(&opts);
        let s = Session::load(bytes.clone(), LoadOptions::default()).unwrap();
        assert!(s.warnings().is_empty(), "{:?}", &s.warnings()[..1]);
        assert_eq!(s.len(), opts.entries);
        assert_eq!(s.to_bytes(), bytes);
        // Every entry's message parses and the active context builds.
        for i in 0..s.len() {
            s.entry_message(i).unwrap();
        }
        let ctx = ctxfold::context::build_context(&s, &Default::default()).unwrap();
        assert!(ctx.has_messages());
    }
}

/// A file that starts with a UTF-8 byte order mark (issue 43 item 4) loads as the same file
/// without it would, and the mark is written back in front (saving stays byte-faithful), also
/// when the header is rewritten by a migration and when lines are appended.
#[test]
fn a_byte_order_mark_is_skipped_and_kept() {
    const BOM: &str = "\u{feff}";
    let entry =
        r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}"#;
    let text = format!("{BOM}{HEADER}\n{entry}\n");
    let s = load(text.as_bytes());
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
    assert_eq!(s.len(), 1);
    assert_eq!(s.header().id, "s");
    assert!(s.header_json().starts_with('{'));
    assert_eq!(s.to_bytes(), text.as_bytes());

    // Before a title slot and before blank lines too.
    round_trips(format!("{BOM}\n{HEADER}\n{entry}").as_bytes());
    round_trips(format!("{BOM}{{\"type\":\"title\",\"title\":\"t\"}}\n{HEADER}\n").as_bytes());

    // A migrated header (rewritten) and an appended entry keep the mark first.
    let v1 = format!(
        "{BOM}{}\n{}\n",
        r#"{"type":"session","id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
        r#"{"type":"message","message":{"role":"user","content":"hi"}}"#
    );
    let mut s = load(v1.as_bytes());
    assert_eq!(codes(&s), vec![(ErrorCode::Migrated, 1)]);
    s.append_message(json!({"role":"user","content":"more"}), 0)
        .unwrap();
    let saved = s.to_bytes();
    assert!(saved.starts_with(BOM.as_bytes()));
    assert_eq!(saved.len(), s.byte_len());
    let again = load(&saved);
    assert!(again.warnings().is_empty(), "{:?}", again.warnings());
    assert_eq!(again.len(), 2);
    assert_eq!(again.header().version, 3);

    // Only at the very start: elsewhere it is a byte of a line, which then is not JSON.
    let e = Session::load(
        format!(" {BOM}{HEADER}\n").into_bytes(),
        LoadOptions::default(),
    );
    assert!(matches!(e, Err(Error::NotASession { .. })));
}

/// A second header line (issue 43 item 4) is no entry: it is kept verbatim, ignored as the
/// reference's reader ignores every `session` record, and a warning names its line.
#[test]
fn a_second_header_is_kept_ignored_and_reported() {
    let a =
        r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}"#;
    let b =
        r#"{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"again"}}"#;
    let again = HEADER.replace("\"s\"", "\"t\"");
    let text = format!("{HEADER}\n{a}\n{again}\n{b}\n{again}\n");
    let s = load(text.as_bytes());
    assert_eq!(
        codes(&s),
        vec![(ErrorCode::InvalidEntry, 3), (ErrorCode::InvalidEntry, 5)]
    );
    assert!(s.warnings()[0].message.contains("second session header"));
    assert_eq!(s.len(), 2);
    assert_eq!(s.leaf_id(), Some("b"));
    assert_eq!(s.header().id, "s");
    assert_eq!(s.to_bytes(), text.as_bytes());
}

/// A line nested past the value parser's depth (issue 43 item 2) is kept and named: its
/// message still reaches the provider whole (see `large_inputs`), but the readers of its
/// fields cannot walk it. Shallower lines, however long, are not named.
#[test]
fn a_line_nested_past_the_parsers_depth_is_kept_and_named() {
    let custom = |depth: usize, id: &str| {
        format!(
            r#"{{"type":"custom","id":"{id}","parentId":null,"customType":"x","data":{}1{}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        )
    };
    let text = format!(
        "{HEADER}\n{}\n{}\n{}\n",
        custom(120, "a"),
        custom(127, "b"),
        custom(5_000, "c")
    );
    let s = load(text.as_bytes());
    assert_eq!(
        codes(&s),
        vec![
            (ErrorCode::InvalidEntryBody, 3),
            (ErrorCode::InvalidEntryBody, 4)
        ]
    );
    assert_eq!(s.len(), 3);
    assert_eq!(s.to_bytes(), text.as_bytes());
}

/// A version-1 file whose message line holds a byte that is not UTF-8: migration gives it an
/// id and its message reads (with U+FFFD) right after the load, as after a save and reload
/// (the migration used to keep the message's span of the bytes in the longer lossy text).
#[test]
fn a_migrated_line_with_invalid_utf8_reads_at_once() {
    let mut file =
        br#"{"type":"session","id":"old","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}
{"type":"message","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"caf"#
            .to_vec();
    file.push(0xE9);
    file.extend_from_slice(
        br#" fix"}}
{"type":"message","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}
"#,
    );
    let s = load(&file);
    let ctx = ctxfold::context::build_context(&s, &Default::default()).expect("the context builds");
    assert_eq!(ctx.messages.len(), 2);
    let first: Value = serde_json::from_str(&s.message_json(0).unwrap()).unwrap();
    assert_eq!(first["content"], "caf\u{FFFD} fix");
    let again = load(&s.to_bytes());
    let ctx2 = ctxfold::context::build_context(&again, &Default::default()).unwrap();
    assert_eq!(ctx2.messages.len(), 2);
}
