//! The anchor index read in place (issue 42 item 1) against the typed reading it replaces:
//! a generated session with arbitrary message objects written into its file as they are
//! (duplicate and escaped keys, members of any type, escapes, deep nesting, bytes that are not
//! UTF-8), loaded, then `verify_in_place_anchors`: each entry's texts and sources, the whole
//! index and the visible text must equal what the typed messages give.
//!
//! Input: a generated session from the first bytes, a NUL, then message texts separated by
//! NULs; each is written as the `message` of a `message` entry whose role is picked by its
//! first byte when it does not name one (line breaks become spaces: one line per entry).
#![no_main]
use arbitrary::Unstructured;
use ctxfold::session::{LoadOptions, Session};
use ctxfold::summary::anchors::verify_in_place_anchors;
use libfuzzer_sys::fuzz_target;

const ROLES: [&str; 6] = [
    "user",
    "developer",
    "assistant",
    "toolResult",
    "custom",
    "bashExecution",
];

fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|&b| b == 0);
    let head = parts.next().unwrap_or_default();
    let mut u = Unstructured::new(head);
    let Ok(spec) = ctxfold_fuzz::session(&mut u, 8) else {
        return;
    };
    let mut file = ctxfold_fuzz::spec::write(&spec);
    if file.last() != Some(&b'\n') {
        file.push(b'\n');
    }
    for (n, text) in parts.enumerate().take(16) {
        let mut message: Vec<u8> = text
            .iter()
            .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
            .collect();
        // A body without a role member gets one in front, so that most inputs reach a reader.
        if !message.windows(6).any(|w| w == b"\"role\"") && message.first() == Some(&b'{') {
            let role = ROLES[usize::from(message.get(1).copied().unwrap_or(0)) % ROLES.len()];
            let member = format!("\"role\":\"{role}\"");
            let rest = message.split_off(1);
            message.extend_from_slice(member.as_bytes());
            if rest.iter().any(|b| !b.is_ascii_whitespace() && *b != b'}') {
                message.push(b',');
            }
            message.extend_from_slice(&rest);
        }
        file.extend_from_slice(
            format!(
                "{{\"type\":\"message\",\"id\":\"fz{n}\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":"
            )
            .as_bytes(),
        );
        file.extend_from_slice(&message);
        file.extend_from_slice(b"}\n");
    }
    let Ok(s) = Session::load(file, LoadOptions::default()) else {
        return;
    };
    if let Err(e) = verify_in_place_anchors(&s) {
        panic!("the in-place anchor reading differs from the typed one: {e}");
    }
});
