//! Tool-call arguments written from their JSON text (issue 42): for any bytes,
//! `restringify::write_json_text` writes what the value path writes (`JSON.stringify` of the
//! parse, or `null`) and never panics; and a session whose tool call carries the bytes as its
//! `arguments` (line breaks made spaces) gives the same transcripts read in place as
//! converted, in every dialect (`verify_in_place_transcripts`).
#![no_main]
use ctxfold::session::{LoadOptions, Session};
use ctxfold::summary::request::verify_in_place_transcripts;
use ctxfold::support::json::{js, parse_bytes, restringify};
use libfuzzer_sys::fuzz_target;

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#;

fuzz_target!(|data: &[u8]| {
    let mut out = String::from(">");
    restringify::write_json_text(&mut out, data);
    let want = match parse_bytes(data) {
        Some(v) => js::stringify(&v),
        None => "null".to_string(),
    };
    assert_eq!(out[1..], want, "{:?}", String::from_utf8_lossy(data));

    let args: Vec<u8> = data
        .iter()
        .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
        .collect();
    let mut file = format!("{HEADER}\n").into_bytes();
    let line = |n: usize, message: &[u8], file: &mut Vec<u8>| {
        let parent = if n == 0 { "null".to_string() } else { format!("\"e{}\"", n - 1) };
        file.extend_from_slice(
            format!(r#"{{"type":"message","id":"e{n}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":"#)
                .as_bytes(),
        );
        file.extend_from_slice(message);
        file.extend_from_slice(b"}\n");
    };
    line(0, br#"{"role":"user","content":"go"}"#, &mut file);
    let mut call = br#"{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":"#.to_vec();
    call.extend_from_slice(&args);
    call.extend_from_slice(br#"}],"stopReason":"toolUse"}"#);
    line(1, &call, &mut file);
    line(2, br#"{"role":"toolResult","toolCallId":"c1","toolName":"read","content":"x"}"#, &mut file);
    let Ok(s) = Session::load(file, LoadOptions::default()) else {
        return;
    };
    if let Err(e) = verify_in_place_transcripts(&s) {
        panic!("{e}");
    }
});
