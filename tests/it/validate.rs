//! Messages checked where they enter (`session::validate`): any JSON value appended as a
//! message either reads back exactly as it was given through every later read, or is refused
//! with `E_INVALID_MESSAGE` and the session's bytes unchanged.

use ctxfold::context::{build_context, convert::convert_to_llm, BuildOptions};
use ctxfold::error::ErrorCode;
use ctxfold::session::{LoadOptions, Session};
use ctxfold_testkit::invariants::same_as_js;
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{json, Map, Value};

const FILE: &str = concat!(
    r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
    "\n",
    r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"read a.ts"}}"#,
    "\n",
    r#"{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.ts"}}],"stopReason":"toolUse","usage":{"input":10,"output":2}}}"#,
    "\n",
);

/// Appends `message` to a loaded session and checks the invariant; returns whether it was
/// accepted.
fn append_checked(message: &Value) -> Result<bool, String> {
    let mut s = Session::load(FILE.as_bytes().to_vec(), LoadOptions::default())
        .map_err(|e| e.to_string())?;
    let before = s.to_bytes();
    match s.append_message(message.clone(), 1_000) {
        Err(e) => {
            if e.code() != ErrorCode::InvalidMessage {
                return Err(format!("refused with {} ({e}) for {message}", e.code()));
            }
            if s.to_bytes() != before {
                return Err(format!("a refused append changed the session: {message}"));
            }
            Ok(false)
        }
        Ok(id) => {
            let i = s.index_of(&id).ok_or("the new id is unknown")?;
            let json = s.message_json(i).ok_or("no message json")?;
            let back: Value = ctxfold::support::json::parse(&json).map_err(|e| e.to_string())?;
            if !same_as_js(&back, message) {
                return Err(format!("read back {back} for {message}"));
            }
            s.message(i).map_err(|e| format!("{e} for {message}"))?;
            s.message_head(i)
                .map_err(|e| format!("{e} for {message}"))?;
            let ctx = build_context(&s, &BuildOptions::default())
                .map_err(|e| format!("{e} for {message}"))?;
            convert_to_llm(&s, &ctx);
            let transcript = BuildOptions {
                transcript: true,
                ..BuildOptions::default()
            };
            build_context(&s, &transcript).map_err(|e| format!("{e} for {message}"))?;
            // A save reloads with the message as it was and no new warning.
            let again =
                Session::load(s.to_bytes(), LoadOptions::default()).map_err(|e| e.to_string())?;
            if again.warnings().len() != s.warnings().len() {
                return Err(format!("the reloaded file warns: {:?}", again.warnings()));
            }
            let j = again.index_of(&id).ok_or("lost on reload")?;
            let back: Value =
                ctxfold::support::json::parse(&again.message_json(j).ok_or("no json")?)
                    .map_err(|e| e.to_string())?;
            if !same_as_js(&back, message) {
                return Err(format!("reloaded as {back} for {message}"));
            }
            Ok(true)
        }
    }
}

#[test]
fn the_cases_of_the_issue_are_refused_and_good_messages_kept() {
    for refused in [
        json!({"foo": 1}),
        json!({"foo": 1, "role": "assistant"}),
        json!({"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"message": {"role": "assistant", "content": "hi"}}]}),
        json!({"role": "assistant", "content": "text"}),
        json!({"role": "user", "content": 42}),
        json!({"role": "user", "content": null}),
        json!({"role": "robot"}),
        json!({"role": "assistant", "content": [], "usage": {"input": 1e20}}),
        json!({"role": "assistant", "content": [], "usage": {"input": 18_446_744_073_709_551_615u64}}),
        json!({"role": "user", "content": [{"type": "text", "text": "a"}, 5]}),
    ] {
        assert_eq!(append_checked(&refused), Ok(false), "{refused}");
    }
    for kept in [
        json!({"role": "user", "content": "hi", "unknownField": {"x": [1, 2]}}),
        json!({"role": "assistant", "content": [{"type": "text", "text": "x"}], "usage": {"input": 9_007_199_254_740_991u64}}),
        json!({"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": [{"type": "text", "text": "file"}]}),
        json!({"role": "bashExecution", "command": "ls", "output": "a\n", "exitCode": 0}),
    ] {
        assert_eq!(append_checked(&kept), Ok(true), "{kept}");
    }
}

/// Strings a message is made of: roles, block types, field names, and others.
const WORDS: [&str; 40] = [
    "user",
    "assistant",
    "toolResult",
    "developer",
    "custom",
    "hookMessage",
    "bashExecution",
    "pythonExecution",
    "fileMention",
    "branchSummary",
    "compactionSummary",
    "robot",
    "text",
    "image",
    "thinking",
    "redactedThinking",
    "toolCall",
    "anthropicServerTool",
    "tool_use",
    "stop",
    "toolUse",
    "error",
    "aborted",
    "",
    " ",
    "read",
    "path",
    "a.ts",
    "c1",
    "\u{1F600}",
    "role",
    "content",
    "usage",
    "input",
    "type",
    "data",
    "mimeType",
    "arguments",
    "id",
    "name",
];

/// Keys of a message object: the fields the core reads, and others.
const KEYS: [&str; 34] = [
    "role",
    "content",
    "type",
    "text",
    "data",
    "mimeType",
    "thinking",
    "thinkingSignature",
    "id",
    "name",
    "arguments",
    "usage",
    "input",
    "output",
    "cacheRead",
    "cacheWrite",
    "totalTokens",
    "stopReason",
    "timestamp",
    "toolCallId",
    "toolName",
    "isError",
    "command",
    "exitCode",
    "files",
    "path",
    "customType",
    "display",
    "summary",
    "fromId",
    "tokensBefore",
    "choices",
    "object",
    "extra",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        prop_oneof![
            (-3i64..100).prop_map(Value::from),
            Just(json!(9_007_199_254_740_992u64)),
            Just(json!(18_446_744_073_709_551_615u64)),
            Just(json!(1e20)),
            Just(json!(-0.5)),
            Just(json!(8.64e15)),
            Just(json!(8.7e15)),
        ],
        proptest::sample::select(&WORDS[..]).prop_map(Value::from),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec((proptest::sample::select(&KEYS[..]), inner), 0..6).prop_map(
                |kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            ),
        ]
    })
}

/// Messages near the valid ones: a role, then members drawn from the message keys.
fn message() -> impl Strategy<Value = Value> {
    (
        proptest::sample::select(&WORDS[..11]),
        proptest::collection::vec((proptest::sample::select(&KEYS[..]), value()), 0..6),
    )
        .prop_map(|(role, members)| {
            let mut m = Map::new();
            m.insert("role".into(), role.into());
            for (k, v) in members {
                m.insert(k.to_string(), v);
            }
            Value::Object(m)
        })
}

/// Valid messages of every role with one member set to a generated value: mostly kept
/// (members the core does not read), refused where the member is one it reads.
fn near_valid() -> impl Strategy<Value = Value> {
    let bases = vec![
        json!({"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}),
        json!({"role": "assistant", "content": [{"type": "toolCall", "id": "c2", "name": "read", "arguments": {"path": "b"}}],
               "usage": {"input": 5, "output": 1}, "stopReason": "toolUse", "provider": "p", "model": "m"}),
        json!({"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": [{"type": "text", "text": "x"}], "isError": false}),
        json!({"role": "bashExecution", "command": "ls", "output": "a", "exitCode": 1, "cancelled": false}),
        json!({"role": "custom", "customType": "note", "content": "n", "display": true}),
        json!({"role": "fileMention", "files": [{"path": "a", "content": "b", "lineCount": 1}]}),
        json!({"role": "compactionSummary", "summary": "s", "tokensBefore": 3}),
    ];
    (
        proptest::sample::select(bases),
        proptest::sample::select(&KEYS[..]),
        value(),
    )
        .prop_map(|(mut base, key, v)| {
            if let Value::Object(o) = &mut base {
                o.insert(key.to_string(), v);
            }
            base
        })
}

proptest! {
    #![proptest_config(Config { cases: 2048, failure_persistence: None, ..Config::default() })]

    /// Any JSON value appended as a message round-trips exactly or is refused with the
    /// session unchanged.
    #[test]
    fn any_value_round_trips_or_is_refused(v in prop_oneof![value(), message(), near_valid()]) {
        append_checked(&v).map_err(TestCaseError::fail)?;
    }
}

// ----- batches: `Session::from_messages`, `Session::append_messages` -------------------------

use ctxfold::session::validate::{validate_message, validate_message_text};
use ctxfold::session::{IdSource, NewSession, RandomIds, SequentialIds};
use ctxfold::support::json::js;

fn init() -> NewSession {
    NewSession {
        id: "s".into(),
        cwd: "/w".into(),
        now: 5,
        parent_session: None,
    }
}

/// The JSON lines of a batch.
fn batch_text(messages: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in messages {
        out.extend_from_slice(js::stringify(m).as_bytes());
        out.push(b'\n');
    }
    out
}

fn ids_of(seed: Option<u64>) -> Box<dyn IdSource> {
    match seed {
        Some(s) => Box::new(RandomIds::new(s)),
        None => Box::new(SequentialIds::new()),
    }
}

fn system_fields() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("customType".into(), "ctxfold:system".into());
    m.insert(
        "data".into(),
        json!({"text": "be brief", "value": "be brief", "format": "pi"}),
    );
    m
}

/// A batch either builds the session `create` + an append per entry builds (same ids, same
/// bytes, and the next append draws the same id), or is refused at the first message the
/// append would refuse; `append_messages` on a loaded session is all or nothing.
fn batch_checked(messages: &[Value], seed: Option<u64>, system: bool) -> Result<(), String> {
    let text = batch_text(messages);
    let now = 7_000;
    let mut one_by_one = Session::create(init(), ids_of(seed));
    if system {
        one_by_one
            .append("custom", system_fields(), now)
            .map_err(|e| e.to_string())?;
    }
    let mut refused_at = None;
    for (i, m) in messages.iter().enumerate() {
        if one_by_one.append_message(m.clone(), now).is_err() {
            refused_at = Some(i);
            break;
        }
    }
    let batch =
        Session::from_messages(init(), ids_of(seed), system.then(system_fields), &text, now);
    match (batch, refused_at) {
        (Ok(mut b), None) => {
            if b.to_bytes() != one_by_one.to_bytes() {
                return Err(format!(
                    "from_messages wrote\n{}\nappends wrote\n{}",
                    String::from_utf8_lossy(&b.to_bytes()),
                    String::from_utf8_lossy(&one_by_one.to_bytes())
                ));
            }
            if !b.warnings().is_empty() {
                return Err(format!("warnings: {:?}", b.warnings()));
            }
            let next = json!({"role": "user", "content": "next"});
            let (x, y) = (
                b.append_message(next.clone(), now)
                    .map_err(|e| e.to_string())?,
                one_by_one
                    .append_message(next, now)
                    .map_err(|e| e.to_string())?,
            );
            if x != y {
                return Err(format!("the next id differs: {x} vs {y}"));
            }
        }
        (Err(e), Some(i)) => {
            if e.index != Some(i) || e.error.code() != ErrorCode::InvalidMessage {
                return Err(format!("refused {e:?}, the appends refused message {i}"));
            }
        }
        (Ok(_), Some(i)) => return Err(format!("accepted; the appends refused message {i}")),
        (Err(e), None) => return Err(format!("refused {e:?}; the appends took every message")),
    }
    // The same batch appended to a loaded session.
    let mut s = Session::load(FILE.as_bytes().to_vec(), LoadOptions::default())
        .map_err(|e| e.to_string())?;
    let before = s.to_bytes();
    match s.append_messages(system.then(system_fields), &text, now) {
        Ok(ids) => {
            if refused_at.is_some() || ids.len() != messages.len() + usize::from(system) {
                return Err(format!("append_messages took {} entries", ids.len()));
            }
            let again =
                Session::load(s.to_bytes(), LoadOptions::default()).map_err(|e| e.to_string())?;
            if again.to_bytes() != s.to_bytes() || !again.warnings().is_empty() {
                return Err("the appended batch does not reload as written".into());
            }
        }
        Err(e) => {
            if e.index != refused_at || s.to_bytes() != before {
                return Err(format!("append_messages refused {e:?} (appends: {refused_at:?}) or changed the session"));
            }
        }
    }
    Ok(())
}

#[test]
fn a_batch_is_the_appends_of_its_messages() {
    let good = vec![
        json!({"role": "user", "content": "read \"a.ts\"\u{2028}", "timestamp": 1}),
        json!({"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.ts"}}],
               "stopReason": "toolUse", "usage": {"input": 10, "output": 2.5}}),
        json!({"role": "toolResult", "toolCallId": "c1", "content": [{"type": "text", "text": "x\ny"}], "isError": false}),
    ];
    for seed in [None, Some(1), Some(42)] {
        for system in [false, true] {
            batch_checked(&good, seed, system).unwrap();
            batch_checked(&[], seed, system).unwrap();
            let mut bad = good.clone();
            bad.insert(2, json!({"role": "user", "content": 42}));
            batch_checked(&bad, seed, system).unwrap();
        }
    }
    let e = Session::from_messages(
        init(),
        ids_of(None),
        None,
        b"{\"role\":\"user\",\"content\":\"a\"}\n[1",
        0,
    )
    .unwrap_err();
    assert_eq!(
        (e.index, e.error.code()),
        (Some(1), ErrorCode::InvalidMessage)
    );
}

proptest! {
    #![proptest_config(Config { cases: 2048, failure_persistence: None, ..Config::default() })]

    /// The check of a message's text in place (`validate_message_text`, the batches') gives
    /// what the check of its value gives (the appends').
    #[test]
    fn text_and_value_checks_agree(v in prop_oneof![value(), message(), near_valid()]) {
        let text = js::stringify(&v);
        prop_assert_eq!(validate_message_text(text.as_bytes()), validate_message(&v), "{}", text);
    }

    /// A batch of generated messages is its appends, or refused where they refuse.
    #[test]
    fn batches_are_their_appends(
        messages in proptest::collection::vec(prop_oneof![message(), near_valid()], 0..6),
        seed in proptest::option::of(any::<u64>()),
        system in any::<bool>(),
    ) {
        batch_checked(&messages, seed, system).map_err(TestCaseError::fail)?;
    }
}
