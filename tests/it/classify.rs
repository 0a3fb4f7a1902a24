//! The error classifier (issue 39 item 4; spec: compaction §8.2 and the [N] tree's steps
//! 2–5): every fixture of tests/fixtures/errors/ (real bodies and statuses, each citing its
//! thread), property tests over noisy texts and random bodies, and the Maintainer's use of
//! the class (no compaction for a rate limit).

use ctxfold::session::message::{AssistantMessage, StopReason};
use ctxfold::settings::CompactionSettings;
use ctxfold::triggers::{
    classify_error, is_context_overflow, ContextManager, ErrorClass, ErrorInput, ModelInfo,
    TurnInput,
};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{json, Value};

const PROVIDERS: [&str; 18] = [
    "openai",
    "azure-openai",
    "anthropic",
    "bedrock",
    "vertex",
    "gemini",
    "mistral",
    "xai",
    "groq",
    "cerebras",
    "deepseek",
    "openrouter",
    "together",
    "fireworks",
    "ollama",
    "llama.cpp",
    "vllm",
    "lm-studio",
];

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/errors/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A fixture body as the text a host hands the classifier: a string as it is, an object as
/// its JSON.
fn body_text(body: &Value) -> String {
    match body {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn class_of(status: Option<u16>, text: &str) -> ErrorClass {
    classify_error(&ErrorInput {
        status,
        text,
        ..ErrorInput::default()
    })
}

#[test]
fn every_fixture_gets_its_class() {
    let mut found = Vec::new();
    for name in PROVIDERS {
        let f = fixture(name);
        let cases = f["cases"].as_array().expect("cases");
        assert!(
            !cases.is_empty() || f["notFound"].is_string(),
            "{name}: no case and no note saying none was found"
        );
        for c in cases {
            let source = c["source"].as_str().unwrap_or("");
            assert!(
                source.starts_with("https://"),
                "{name}: a case without a source"
            );
            if let Some(turn) = c.get("turn") {
                let got = classify_error(&turn_input(turn)).to_json();
                assert_eq!(got, c["expected"], "{name}: {source}");
                continue;
            }
            let status = c["status"].as_u64().map(|s| s as u16);
            let text = body_text(&c["body"]);
            let got = class_of(status, &text).to_json();
            assert_eq!(got, c["expected"], "{name}: {source}");
            // The status is optional: a JSON body or an SDK message carries what decides,
            // except where the status alone is the evidence.
            if status.is_some() && c["expected"]["class"] == "context_overflow" {
                assert_eq!(
                    class_of(None, &text).to_json(),
                    c["expected"],
                    "{name}: {source}"
                );
            }
        }
        found.push((name, cases.len()));
    }
    // Every listed provider has a file with cases.
    assert_eq!(found.len(), 18);
    assert!(found.iter().all(|(_, n)| *n > 0), "{found:?}");
}

/// A fixture's `turn` (a reply that did not fail: its stop reason, reported usage, the model's
/// window, whether it delivered anything) as the classifier reads it, the way `classifyError`
/// maps it: the prompt is `input + cacheRead`, `delivered` else `output > 0`.
fn turn_input(turn: &Value) -> ErrorInput<'static> {
    let usage = &turn["usage"];
    let n = |k: &str| usage[k].as_f64();
    let prompt = match (n("input"), n("cacheRead")) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    };
    ErrorInput {
        stop_reason: turn["stopReason"].as_str().map(StopReason::parse),
        prompt_tokens: prompt,
        delivered: turn["delivered"]
            .as_bool()
            .or_else(|| n("output").map(|o| o > 0.0)),
        window: turn["contextWindow"].as_u64().unwrap_or(0),
        ..ErrorInput::default()
    }
}

/// The fixtures as the Maintainer's failed turns: an overflow is one for `isContextOverflow`,
/// nothing else is.
#[test]
fn fixtures_through_is_context_overflow() {
    for name in PROVIDERS {
        for c in fixture(name)["cases"].as_array().unwrap() {
            if c.get("turn").is_some() {
                continue;
            }
            let text = body_text(&c["body"]);
            let a = error_turn(&text);
            let overflow = c["expected"]["class"] == "context_overflow";
            assert_eq!(is_context_overflow(&a, 200_000), overflow, "{name}: {text}");
        }
    }
}

#[test]
fn silent_overflow_and_truncation() {
    let input = |stop: StopReason, prompt: f64, delivered: bool| ErrorInput {
        stop_reason: Some(stop),
        prompt_tokens: Some(prompt),
        delivered: Some(delivered),
        window: 100_000,
        ..ErrorInput::default()
    };
    assert_eq!(
        classify_error(&input(StopReason::Stop, 120_000.0, true)),
        ErrorClass::SilentOverflow {
            input: 120_000,
            window: 100_000
        }
    );
    assert_eq!(
        classify_error(&input(StopReason::Stop, 90_000.0, true)),
        ErrorClass::Other
    );
    assert_eq!(
        classify_error(&input(StopReason::Length, 90_000.0, false)),
        ErrorClass::Truncated
    );
    assert_eq!(
        classify_error(&input(StopReason::Length, 90_000.0, true)),
        ErrorClass::Other
    );
    // An unknown window never makes a silent overflow.
    let mut i = input(StopReason::Stop, 1e12, true);
    i.window = 0;
    assert_eq!(classify_error(&i), ErrorClass::Other);
}

#[test]
fn retry_after_header_wins() {
    let i = ErrorInput {
        status: Some(429),
        text: "rate limited, please try again in 20s",
        retry_after: Some("3"),
        ..ErrorInput::default()
    };
    assert_eq!(
        classify_error(&i),
        ErrorClass::RateLimit {
            retry_after_ms: Some(3000)
        }
    );
    let i = ErrorInput {
        retry_after: None,
        ..i
    };
    assert_eq!(
        classify_error(&i),
        ErrorClass::RateLimit {
            retry_after_ms: Some(20_000)
        }
    );
}

// ----- the Maintainer -----------------------------------------------------------------------

fn usage(input: u64, output: u64) -> Value {
    json!({"input": input, "output": output, "cacheRead": 0, "cacheWrite": 0,
           "totalTokens": input + output})
}

fn assistant(v: Value) -> AssistantMessage {
    let mut base = json!({"role": "assistant", "provider": "anthropic", "model": "m",
                          "content": [{"type": "text", "text": "done"}], "stopReason": "stop",
                          "usage": usage(0, 0), "timestamp": 1_000});
    for (k, x) in v.as_object().unwrap() {
        base[k] = x.clone();
    }
    match ctxfold::AgentMessage::parse(&base.to_string(), None).unwrap() {
        ctxfold::AgentMessage::Assistant(a) => a,
        other => panic!("not an assistant: {other:?}"),
    }
}

fn error_turn(message: &str) -> AssistantMessage {
    assistant(json!({"content": [], "stopReason": "error", "errorMessage": message}))
}

fn model(window: u64) -> ModelInfo {
    ModelInfo {
        provider: "anthropic".into(),
        id: "m".into(),
        context_window: window,
        max_output_tokens: 32_000,
        accepts_images: true,
    }
}

fn manager() -> ContextManager {
    ContextManager::new(CompactionSettings::from_json(&json!({})).unwrap())
}

/// Issue 39: a rate limit is waited out, never compacted — not even on the threshold of the
/// last successful usage that other error turns compact on (pi-mono's rule).
#[test]
fn a_rate_limit_is_not_compacted() {
    let m = model(200_000); // threshold 170 000
    for text in [
        "429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"This request would exceed your account's rate limit. Please try again later.\"}}",
        "413 Request too large for model `llama-3.1-8b-instant` on tokens per minute (TPM): Limit 6000, Requested 12328, please reduce your message size and try again.",
    ] {
        let mut cm = manager();
        let ok = assistant(json!({"usage": usage(189_900, 100)}));
        assert!(cm.after_turn(TurnInput::new(&ok, &m, 0)).compact.is_some());
        let err = error_turn(text);
        let mut t = TurnInput::new(&err, &m, 10_000);
        t.stored_tokens = Some(190_000);
        let d = cm.after_turn(t);
        assert!(d.compact.is_none(), "{text}: {d:?}");
        assert!(d.promote.is_none(), "{text}");
        assert!(d.drop_failed_turn.is_none(), "{text}");
    }
    // Another failure (a 500) still compacts on that threshold.
    let mut cm = manager();
    let ok = assistant(json!({"usage": usage(189_900, 100)}));
    cm.after_turn(TurnInput::new(&ok, &m, 0));
    let err = error_turn("500 Internal server error");
    assert!(cm
        .after_turn(TurnInput::new(&err, &m, 10_000))
        .compact
        .is_some());
}

/// §8.2 [N] step 2: Anthropic's media rejection (a 400 with the image limit, no 413) is not
/// compacted: the failed turn goes, continuation is blocked with a notice.
#[test]
fn a_media_rejection_blocks_without_compacting() {
    let m = model(200_000);
    let mut cm = manager();
    let err = error_turn("400 {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"messages.0.content.2.image.source.base64: image exceeds 5 MB maximum: 15908784 bytes > 5242880 bytes\"}}");
    let mut t = TurnInput::new(&err, &m, 10_000);
    t.stored_tokens = Some(20_000);
    let d = cm.after_turn(t);
    assert!(d.compact.is_none(), "{d:?}");
    assert!(d.block_auto_continue);
    assert!(d.drop_failed_turn.is_some());
    assert_eq!(d.notices.len(), 1, "{d:?}");
}

// ----- properties ---------------------------------------------------------------------------

/// Overflow wordings of the fixtures and the spec's list.
const OVERFLOW_WORDINGS: [&str; 12] = [
    "prompt is too long: 208310 tokens > 200000 maximum",
    "This model's maximum context length is 8192 tokens. However, your messages resulted in 8227 tokens.",
    "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
    "This model's maximum prompt length is 131072 but the request contains 136973 tokens.",
    "Please reduce the length of the messages or completion.",
    "Input is too long for requested model.",
    "the request exceeds the available context size. try increasing the context size",
    "The number of tokens to keep from the initial prompt is greater than the context length",
    "context_length_exceeded",
    "Current length is 42328 while limit is 40000",
    "the input length exceeds the context length",
    "Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)",
];

/// Noise: words that name no class (no rate, time-out, auth or size wording).
fn noise() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "error", "the", "request", "{", "}", "\"", ":", "model", "claude", "gpt-4o", "é",
            "日本", "\n", " ", "id", "req_011", "42", "null", ",", "type", "message",
        ]),
        0..30,
    )
    .prop_map(|w| w.join(" "))
}

proptest! {
    #![proptest_config(Config { cases: 256, ..Config::default() })]

    /// Any text holding a known overflow wording with noise around it is an overflow, with or
    /// without a 400 status, in any case.
    #[test]
    fn an_overflow_wording_in_noise_stays_an_overflow(
        i in 0..OVERFLOW_WORDINGS.len(),
        before in noise(),
        after in noise(),
        status in prop::sample::select(vec![None, Some(400u16), Some(413), Some(500)]),
        upper in any::<bool>(),
    ) {
        let mut text = format!("{before} {} {after}", OVERFLOW_WORDINGS[i]);
        if upper {
            text = text.to_uppercase();
        }
        let c = class_of(status, &text);
        prop_assert!(matches!(c, ErrorClass::ContextOverflow { .. }), "{:?} for {:?}", c, text);
    }

    /// A 413 that names media is a media payload rejection.
    #[test]
    fn a_413_with_media_words_is_a_media_payload(
        word in prop::sample::select(vec!["image", "media", "attachment", "PDF", "Image"]),
        before in noise(),
        after in noise(),
        in_text in any::<bool>(),
    ) {
        let text = if in_text {
            format!("413 {before} {word} {after}")
        } else {
            format!("{before} {word} {after}")
        };
        let status = if in_text { None } else { Some(413) };
        prop_assert_eq!(
            class_of(status, &text),
            ErrorClass::PayloadTooLarge { media: true }
        );
    }

    /// Random bodies never panic, and the class's JSON names it.
    #[test]
    fn random_bodies_never_panic(
        text in ".{0,400}",
        status in prop::option::of(any::<u16>()),
        stop in prop::option::of(0..5u8),
        prompt in prop::option::of(any::<u32>()),
        window in any::<u32>(),
        retry in prop::option::of("[0-9a-zA-Z ,:.-]{0,30}"),
        delivered in prop::option::of(any::<bool>()),
    ) {
        let i = ErrorInput {
            status,
            text: &text,
            retry_after: retry.as_deref(),
            now: 0,
            stop_reason: stop.map(|s| match s {
                0 => StopReason::Error,
                1 => StopReason::Stop,
                2 => StopReason::Length,
                3 => StopReason::Aborted,
                _ => StopReason::ToolUse,
            }),
            prompt_tokens: prompt.map(f64::from),
            delivered,
            window: u64::from(window),
        };
        let c = classify_error(&i);
        let j = c.to_json();
        prop_assert_eq!(j["class"].as_str(), Some(c.name()));
    }

    /// A `length` stop is truncated exactly when it delivered nothing (`delivered: false`, or
    /// unknown), whatever its text, usage and window say.
    #[test]
    fn a_length_stop_is_truncated_when_nothing_came(
        text in ".{0,200}",
        prompt in prop::option::of(any::<u32>()),
        window in any::<u32>(),
        delivered in prop::option::of(any::<bool>()),
    ) {
        let i = ErrorInput {
            text: &text,
            stop_reason: Some(StopReason::Length),
            prompt_tokens: prompt.map(f64::from),
            delivered,
            window: u64::from(window),
            ..ErrorInput::default()
        };
        let expected = if delivered == Some(true) { ErrorClass::Other } else { ErrorClass::Truncated };
        prop_assert_eq!(classify_error(&i), expected);
    }
}
