//! A batch of messages as `fromMessages` and `appendMessages` hand it to the core (JSON lines,
//! any bytes): the check of each message's text in place agrees with the check of its parsed
//! value (the appends'); a batch is accepted exactly when every line is, and then writes what
//! `create` and an append per message write, byte for byte; a refused `append_messages`
//! leaves a loaded session's bytes unchanged.
//!
//! Input: a generated session from the first bytes, a NUL, then the batch.
#![no_main]
use arbitrary::Unstructured;
use ctxfold::error::ErrorCode;
use ctxfold::session::validate::{validate_message, validate_message_text};
use ctxfold::session::{LoadOptions, NewSession, SequentialIds, Session};
use libfuzzer_sys::fuzz_target;

fn init() -> NewSession {
    NewSession {
        id: "s".into(),
        cwd: "/".into(),
        now: 0,
        parent_session: None,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(split) = data.iter().position(|&b| b == 0) else {
        return;
    };
    let (head, text) = (&data[..split], &data[split + 1..]);
    // Each line: the text check agrees with the value check wherever the value parses.
    let mut all_ok = true;
    // Whether every line is written as `JSON.stringify` writes its value (as the package's
    // lines are): then the batch's bytes are the appends' bytes.
    let mut canonical = true;
    let mut values = Vec::new();
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    let lines = match lines.split_last() {
        Some((last, rest)) if last.is_empty() => rest.to_vec(),
        _ => lines,
    };
    for line in &lines {
        let by_text = validate_message_text(line);
        let parsed = std::str::from_utf8(line)
            .ok()
            .and_then(|t| ctxfold::support::json::parse(t).ok());
        match parsed {
            Some(v) => {
                assert_eq!(by_text, validate_message(&v), "{}", String::from_utf8_lossy(line));
                all_ok &= by_text.is_ok();
                canonical &= ctxfold::support::json::js::stringify(&v).as_bytes() == *line;
                values.push(v);
            }
            None => {
                // JSON the parser refuses is refused in place too (whitespace around a line
                // aside, which the batch refuses as trailing characters or accepts as the
                // parser does).
                assert!(by_text.is_err(), "accepted {}", String::from_utf8_lossy(line));
                all_ok = false;
            }
        }
    }
    let batch = Session::from_messages(init(), Box::new(SequentialIds::new()), None, text, 5);
    match batch {
        Ok(b) => {
            assert!(all_ok, "a batch with a refused line was accepted");
            let mut one_by_one = Session::create(init(), Box::new(SequentialIds::new()));
            for v in &values {
                one_by_one.append_message(v.clone(), 5).expect("an accepted message");
            }
            if canonical {
                assert!(b.to_bytes() == one_by_one.to_bytes(), "the batch differs from the appends");
            }
            // Either way each entry reads back as the value its line parses to.
            assert_eq!(b.entries().len(), values.len());
            for (i, v) in values.iter().enumerate() {
                let back = ctxfold::support::json::parse(&b.message_json(i).expect("a message"))
                    .expect("its JSON");
                assert!(ctxfold_testkit::invariants::same_as_js(&back, v), "{back} for {v}");
            }
        }
        Err(e) => {
            assert_eq!(e.error.code(), ErrorCode::InvalidMessage);
            assert!(e.index.is_some_and(|i| i < lines.len().max(1)), "{e:?}");
        }
    }
    let mut u = Unstructured::new(head);
    let Ok(spec) = ctxfold_fuzz::session(&mut u, 12) else {
        return;
    };
    let Ok(mut s) = Session::load(ctxfold_fuzz::spec::write(&spec), LoadOptions::default()) else {
        return;
    };
    let before = s.to_bytes();
    if s.append_messages(None, text, 7).is_err() {
        assert!(s.to_bytes() == before, "a refused batch changed the session");
    } else {
        let again = Session::load(s.to_bytes(), LoadOptions::default()).expect("reload");
        assert!(again.to_bytes() == s.to_bytes());
    }
});
