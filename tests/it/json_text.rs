//! Tool-call arguments written from their JSON text (issue 42):
//! `restringify::write_json_text` writes `JSON.stringify(JSON.parse(text))` as the value path
//! does (`write_value` of the parse, or `null`), whatever the text holds: whitespace, repeated
//! and escaped keys, every number form, escapes and lone surrogates, deep nesting, and texts
//! that are not JSON. The transcripts read in place equal the converted ones with such
//! arguments, in every dialect.

use crate::common;
use ctxfold::session::{LoadOptions, Session};
use ctxfold::summary::request::verify_in_place_transcripts;
use ctxfold::support::json::{js, parse_bytes, restringify};
use proptest::prelude::*;

/// JSON-ish text: values with random whitespace, keys from a small set (so they repeat),
/// sometimes escaped, numbers of every form, strings with escapes, nesting to 70 levels
/// (past the writer's own limit), and now and then a broken piece.
fn json_text() -> impl Strategy<Value = String> {
    let ws = prop_oneof![4 => Just(""), 1 => Just(" "), 1 => Just("\n\t "), 1 => Just("\r\n")];
    let number = prop_oneof![
        Just("0"),
        Just("-0"),
        Just("12"),
        Just("-7"),
        Just("123456789012345"),
        Just("1234567890123456"),
        Just("12345678901234567890"),
        Just("-9223372036854775809"),
        Just("1.50"),
        Just("0.1"),
        Just("1e3"),
        Just("1E-7"),
        Just("-2.5e+2"),
        Just("1e400"),
        Just("5e-324"),
        Just("1e21"),
        Just("123456789012345678901234"),
    ];
    let string = prop_oneof![
        Just(r#""p""#),
        Just(r#""""#),
        Just(r#""a\nb\u00e9\t\"q\\""#),
        Just(r#""\ud83d\ude00 \ud83d alone""#),
        Just(r#""\/\b\f\u0001\u001f""#),
        Just("\"é 漢字 😀\""),
        Just(r#""<conversation>""#),
    ];
    let broken = prop_oneof![
        Just("tru"),
        Just("01"),
        Just("[1,]"),
        Just(r#""bad\x""#),
        Just("{\"a\"}"),
        Just("\"open"),
    ];
    let leaf = prop_oneof![
        3 => number.prop_map(str::to_string),
        3 => string.prop_map(str::to_string),
        1 => prop_oneof![Just("true"), Just("false"), Just("null")].prop_map(str::to_string),
        1 => Just("[]".to_string()),
        1 => Just("{}".to_string()),
        1 => (1usize..70).prop_map(|n| format!("{}1{}", "[".repeat(n), "]".repeat(n))),
    ];
    let key = prop_oneof![
        Just("path"),
        Just("n"),
        Just("p\\u0061th"),
        Just("0"),
        Just("10"),
        Just("é"),
        Just(""),
    ];
    let value = leaf.prop_recursive(5, 48, 6, move |inner| {
        let ws = ws.clone();
        prop_oneof![
            proptest::collection::vec((inner.clone(), ws.clone()), 0..6).prop_map(|items| {
                let items: Vec<String> = items
                    .into_iter()
                    .map(|(v, w)| format!("{w}{v}{w}"))
                    .collect();
                format!("[{}]", items.join(","))
            }),
            proptest::collection::vec((key.clone(), inner, ws), 0..6).prop_map(|members| {
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(k, v, w)| format!("{w}\"{k}\"{w}:{w}{v}"))
                    .collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    });
    prop_oneof![
        12 => value,
        1 => broken.prop_map(str::to_string),
        1 => (value_cut(), 0usize..40).prop_map(|(t, n)| t.chars().take(n).collect()),
    ]
}

/// A fixed nested text to cut short.
fn value_cut() -> impl Strategy<Value = String> {
    Just(r#"{"path":"a\"b","n":[1,2.50,{"x":null}],"é":true}"#.to_string())
}

/// What the value path writes: `JSON.stringify` of the parse, or `null`.
fn oracle(text: &str) -> String {
    match parse_bytes(text.as_bytes()) {
        Some(v) => js::stringify(&v),
        None => "null".to_string(),
    }
}

#[test]
fn json_text_is_written_as_its_parse() {
    proptest!(ProptestConfig::with_cases(4_000), |(text in json_text(), pad in 0usize..3)| {
        let text = format!("{}{text}{}", " ".repeat(pad), "\n".repeat(pad));
        let mut out = String::from("before:");
        restringify::write_json_text(&mut out, text.as_bytes());
        prop_assert_eq!(out, format!("before:{}", oracle(&text)), "{}", text);
    });
}

#[test]
fn json_text_examples() {
    for (text, want) in [
        (
            r#" { "a" : [ 1 , 2.50 ] , "b" : "x\u0041" } "#,
            r#"{"a":[1,2.5],"b":"xA"}"#,
        ),
        (r#"{"d":1,"e":2,"d":3}"#, r#"{"d":3,"e":2}"#),
        (r#"{"p\u0061th":1,"path":2}"#, r#"{"path":2}"#),
        ("-0", "0"),
        ("1e400", "null"),
        ("12345678901234567890", "12345678901234567000"),
        (r#""\ud83d""#, "\"\u{fffd}\""),
        ("[1,]", "null"),
        ("", "null"),
    ] {
        let mut out = String::new();
        restringify::write_json_text(&mut out, text.as_bytes());
        assert_eq!(out, want, "{text}");
        assert_eq!(out, oracle(text), "{text}");
    }
}

fn session_with_arguments(args: &str) -> Session {
    let messages = [
        r#"{"role":"user","content":"go"}"#.to_string(),
        format!(
            r#"{{"role":"assistant","content":[{{"type":"text","text":"t"}},{{"type":"toolCall","id":"c1","name":"read","arguments":{args}}}],"stopReason":"toolUse"}}"#
        ),
        r#"{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"body"}]}"#.to_string(),
        r#"{"role":"user","content":"thanks"}"#.to_string(),
    ];
    Session::load(common::message_chain(&messages), LoadOptions::default()).unwrap()
}

/// Through the transcript: arguments read in place render (`key=JSON`, and every dialect's
/// form) as the converted message's arguments do. Lines that are not JSON are not entries;
/// the session then holds fewer messages and is compared all the same.
#[test]
fn arguments_in_place_render_as_their_parse() {
    proptest!(ProptestConfig::with_cases(300), |(args in json_text())| {
        let s = session_with_arguments(&args);
        verify_in_place_transcripts(&s).map_err(|e| TestCaseError::fail(format!("{args}: {e}")))?;
    });
    // The conformance session's own arguments (real tool calls) as well.
    let s = Session::load(
        common::read("large-session/session.jsonl"),
        LoadOptions::default(),
    )
    .unwrap();
    assert!(verify_in_place_transcripts(&s).unwrap() > 30);
}
