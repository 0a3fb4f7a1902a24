//! The change journal (spec: compaction §1, §6.7): a store that applies each `changes()` to
//! the bytes it holds holds `to_bytes()`, for any sequence of appends, prunes, shakes,
//! compactions, navigations and labels on generated sessions (`ctxfold_testkit::journal`).

use ctxfold::session::{apply_changes, stored_bytes, LoadOptions, Session};
use ctxfold_testkit::journal::{self, Op};
use ctxfold_testkit::{generate, GenOptions};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::json;

fn generated(seed: u64, entries: usize, trailing: bool, crlf: bool, bom: bool) -> Vec<u8> {
    let opts = GenOptions {
        seed,
        entries,
        compaction_every_tokens: Some(6_000),
        keep_recent_tokens: 2_000,
        images: seed.is_multiple_of(3),
        size_scale: 0.05,
        ..GenOptions::default()
    };
    let mut bytes = generate(&opts);
    if crlf {
        let text = String::from_utf8(bytes).unwrap();
        bytes = text.replace('\n', "\r\n").into_bytes();
    }
    if !trailing {
        while bytes.last().is_some_and(|b| matches!(b, b'\n' | b'\r')) {
            bytes.pop();
        }
    }
    if bom {
        bytes.splice(0..0, *b"\xEF\xBB\xBF");
    }
    bytes
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        (any::<u8>(), any::<u64>(), any::<bool>()).prop_map(|(k, a, b)| journal::op(k, a, b)),
        0..24,
    )
}

proptest! {
    #![proptest_config(Config { cases: 64, failure_persistence: None, ..Config::default() })]

    /// Every save through the journal reproduces `to_bytes()`.
    #[test]
    fn saves_through_the_journal_equal_to_bytes(
        seed in any::<u64>(),
        entries in 0usize..60,
        trailing in prop::bool::weighted(0.8),
        crlf in prop::bool::weighted(0.15),
        bom in prop::bool::weighted(0.15),
        ops in ops(),
    ) {
        let bytes = generated(seed, entries, trailing, crlf, bom);
        journal::run(&bytes, &ops).map_err(TestCaseError::fail)?;
    }
}

const FILE: &str = concat!(
    r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
    "\n",
    r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"one"}}"#,
    "\n",
);

#[test]
fn a_turn_after_the_load_mark_is_its_appended_lines_only() {
    let mut s = Session::load(FILE.as_bytes().to_vec(), LoadOptions::default()).unwrap();
    let mark = s.load_mark().expect("an unmigrated file has a load mark");
    s.append_message(json!({"role": "user", "content": "two"}), 0)
        .unwrap();
    let c = s.changes(Some(&mark));
    assert!(!c.reset);
    assert!(c.rewritten.is_empty());
    assert_eq!(c.appended.len(), 1);
    assert!(c.appended[0].contains("\"two\""));
    assert_eq!(c.line_count, 3);
    assert_eq!(apply_changes(FILE.as_bytes(), &c), s.to_bytes());
    // Nothing since: nothing to write.
    let again = s.changes(Some(&c.mark));
    assert!(!again.reset && again.appended.is_empty() && again.rewritten.is_empty());
    assert_eq!(again.mark, c.mark);
}

#[test]
fn a_rewrite_is_reported_once_in_index_order() {
    let mut s = Session::load(FILE.as_bytes().to_vec(), LoadOptions::default()).unwrap();
    let mark = s.load_mark().unwrap();
    let a = s.require("a").unwrap();
    s.set_entry_field(a, &[], "x", &json!(1)).unwrap();
    s.set_entry_field(a, &[], "y", &json!(2)).unwrap();
    let c = s.changes(Some(&mark));
    assert_eq!(c.rewritten.len(), 1);
    assert_eq!(c.rewritten[0].0, 1);
    assert!(c.rewritten[0].1.contains("\"y\":2"));
    assert_eq!(apply_changes(FILE.as_bytes(), &c), s.to_bytes());
}

#[test]
fn a_migrated_file_has_no_load_mark_and_a_foreign_mark_resets() {
    let v1 = "{\"type\":\"session\",\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n{\"type\":\"message\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"one\"}}\n";
    let s = Session::load(v1.as_bytes().to_vec(), LoadOptions::default()).unwrap();
    assert_eq!(s.load_mark(), None);
    let other = Session::load(FILE.as_bytes().to_vec(), LoadOptions::default()).unwrap();
    let c = s.changes(other.load_mark().as_deref());
    assert!(c.reset);
    assert_eq!(apply_changes(b"", &c), stored_bytes(&s));
}

#[test]
fn a_torn_last_line_is_reported_with_its_byte_offset() {
    let torn = format!("{FILE}{{\"type\":\"message\",\"id\":\"b\",\"par");
    let s = Session::load(torn.clone().into_bytes(), LoadOptions::default()).unwrap();
    let w = s.warnings().last().expect("a warning");
    assert!(
        w.message
            .contains(&format!("torn last line at byte offset {}", FILE.len())),
        "{}",
        w.message
    );
    assert_eq!(s.to_bytes(), torn.as_bytes(), "kept, never dropped");
}
