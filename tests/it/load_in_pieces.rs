//! A session file read while it arrives (`Session.fromAsyncReader`, `Session.fromStream`): its
//! complete lines are read after each piece, the rest when it ends, and the session is the
//! one a load of the whole file gives — the same entries, warnings, facts and bytes, or the
//! same error — whatever the pieces (`invariants::load_in_pieces`).

use crate::common;
use ctxfold::session::SourceBuffer;
use ctxfold_testkit::invariants::load_in_pieces;
use ctxfold_testkit::{generate, GenOptions};
use proptest::prelude::*;

const V3: &str =
    r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#;

/// Lines a session file may hold, good and bad (spec: compaction §1.1: what each gives).
fn line() -> impl Strategy<Value = Vec<u8>> {
    let id = 0u8..6;
    prop_oneof![
        (id.clone(), prop::option::of(0u8..7)).prop_map(|(i, p)| {
            let parent = p.map_or("null".into(), |p| format!("\"e{p}\""));
            format!(r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user","content":"fix \"the\" test \u00e9"}}}}"#).into_bytes()
        }),
        id.clone().prop_map(|i| format!(r#"{{"type":"message","id":"e{i}","parentId":null,"message":{{"role":"assistant","content":[{{"type":"text","text":"reading"}},{{"type":"toolCall","id":"t{i}","name":"read","arguments":{{"path":"src/a.ts"}}}}],"usage":{{"input":1200,"output":40,"cacheRead":0,"cacheWrite":0}},"stopReason":"toolUse"}}}}"#).into_bytes()),
        id.clone().prop_map(|i| format!(r#"{{"type":"message","id":"r{i}","parentId":"e{i}","message":{{"role":"toolResult","toolCallId":"t{i}","toolName":"read","content":[{{"type":"text","text":"x\ny"}}],"isError":false}}}}"#).into_bytes()),
        id.clone().prop_map(|i| format!(r#"{{"type":"compaction","id":"c{i}","parentId":"e{i}","summary":"s","firstKeptEntryId":"e{i}","tokensBefore":5}}"#).into_bytes()),
        id.clone().prop_map(|i| format!(r#"{{"type":"custom","id":"e{i}","parentId":7}}"#).into_bytes()),
        Just(br#"{"type":"custom"}"#.to_vec()),
        Just(br#"{"id":"x1","parentId":null}"#.to_vec()),
        Just(V3.as_bytes().to_vec()),
        Just(br#"{"type":"message","id":"b1","parentId":null,"message":{"role":"user","content":"#.to_vec()),
        Just(b"[1,2]".to_vec()),
        Just(b"{\"type\":\"custom\",\n\"id\":\"split\"}".to_vec()),
        Just(b"{\"type\":\"message\",\"id\":\"u1\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"bad \xff\xfe bytes\"}}".to_vec()),
        Just(format!(r#"{{"type":"custom","id":"deep","data":{}{}}}"#, "[".repeat(130), "]".repeat(130)).into_bytes()),
        Just(b"   \t".to_vec()),
        Just(Vec::new()),
        Just(b"{\"type\":\"custom\",\"id\":\"cr\",\"parentId\":null}\r".to_vec()),
    ]
}

/// The start of a file: a header of some version, maybe after a byte order mark, blank lines
/// or a title slot, or no header at all.
fn start() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => Just(V3.as_bytes().to_vec()),
        2 => Just(br#"{"type":"session","id":"old","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#.to_vec()),
        1 => Just(format!("\u{feff}{V3}").into_bytes()),
        1 => Just(format!("\n  \n{V3}").into_bytes()),
        1 => Just(format!("{{\"type\":\"title\",\"title\":\"t\"}}\n{V3}").into_bytes()),
        1 => Just(br#"{"type":"session","version":9,"id":"s"}"#.to_vec()),
        1 => Just(br#"{"type":"title","title":"t"}"#.to_vec()),
        1 => Just(b"not a session".to_vec()),
    ]
}

fn file() -> impl Strategy<Value = Vec<u8>> {
    (start(), prop::collection::vec(line(), 0..14), any::<bool>()).prop_map(
        |(head, lines, final_break)| {
            let mut out = head;
            for l in lines {
                out.push(b'\n');
                out.extend_from_slice(&l);
            }
            if final_break {
                out.push(b'\n');
            }
            out
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3_000))]

    #[test]
    fn a_file_read_as_it_arrives_loads_as_the_whole_file(
        file in file(),
        pieces in prop::collection::vec(1usize..90, 1..6),
        known in any::<bool>(),
    ) {
        let size = if known { file.len() } else { 0 };
        if let Err(e) = load_in_pieces(&file, size, &pieces, true) {
            return Err(TestCaseError::fail(e));
        }
    }
}

#[test]
fn generated_sessions_in_pieces() {
    for seed in 1..4 {
        let file = generate(&GenOptions {
            seed,
            entries: 1_500,
            ..GenOptions::default()
        });
        for pieces in [&[4096][..], &[65_536], &[1, 700, 33_333]] {
            load_in_pieces(&file, file.len(), pieces, true)
                .unwrap_or_else(|e| panic!("seed {seed}, pieces {pieces:?}: {e}"));
        }
    }
}

#[test]
fn conformance_sessions_in_pieces() {
    // The real pi session is a v1 file (migrated on open); the rules session is v3.
    for name in ["large-session/session.jsonl", "rules/session.jsonl"] {
        let file = common::read(name);
        for pieces in [&[8192][..], &[100_000], &[3, 5000]] {
            load_in_pieces(&file, 0, pieces, true)
                .unwrap_or_else(|e| panic!("{name}, pieces {pieces:?}: {e}"));
        }
    }
}

#[test]
fn lines_are_read_as_their_breaks_arrive() {
    let file = format!(
        "{V3}\n{}\n{}",
        r#"{"type":"custom","id":"a","parentId":null}"#,
        r#"{"type":"custom","id":"b","parentId":"a"}"#
    );
    let b = file.as_bytes();
    let first_break = V3.len();
    let second_break = b[first_break + 1..]
        .iter()
        .position(|&c| c == b'\n')
        .map(|p| first_break + 1 + p)
        .expect("two breaks");
    let mut buf = SourceBuffer::with_size(b.len()).unwrap();
    let write = |buf: &mut SourceBuffer, from: usize, to: usize| {
        buf.window(to - from).unwrap().copy_from_slice(&b[from..to]);
        buf.advance(to - from).unwrap();
        buf.read_lines();
    };
    // Half the header: nothing read yet.
    write(&mut buf, 0, 20);
    assert_eq!(buf.lines_read_to(), 0);
    // The header and half the first entry: the header read.
    write(&mut buf, 20, first_break + 10);
    assert_eq!(buf.lines_read_to(), first_break + 1);
    // The first entry's break: read; the last line (no break) is left to the end.
    write(&mut buf, first_break + 10, b.len());
    assert_eq!(buf.lines_read_to(), second_break + 1);
    let s = buf
        .load(ctxfold::session::LoadOptions::default())
        .expect("a session");
    assert_eq!(s.len(), 2);
    assert_eq!(s.to_bytes(), b, "written back byte for byte");
}

#[test]
fn a_file_that_is_no_session_gives_the_whole_files_error_in_pieces() {
    for file in [
        &b""[..],
        b"\n\n",
        b"{\"type\":\"title\",\"title\":\"t\"}\n",
        b"{\"type\":\"session\",\"version\":9,\"id\":\"s\"}\n{\"type\":\"custom\"}\n",
        b"garbage\n{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n",
    ] {
        load_in_pieces(file, file.len(), &[1, 3], true)
            .unwrap_or_else(|e| panic!("{}: {e}", String::from_utf8_lossy(file)));
    }
}
