//! Tests of the WebAssembly build, run by wasm-bindgen-test-runner (installed in .tools/ by
//! `make setup`, wired as the wasm32 runner in .cargo/config.toml), once under Node.js and once
//! in headless Chromium:
//!
//! ```text
//! cargo test --target wasm32-unknown-unknown --test wasm                  # Node.js
//! WASM_BINDGEN_USE_BROWSER=1 CHROMEDRIVER=/usr/bin/chromedriver \
//!   WASM_BINDGEN_TEST_WEBDRIVER_JSON=.ci/webdriver.json \
//!   cargo test --target wasm32-unknown-unknown --test wasm                  # Chromium
//! ```
//!
//! `make test` runs both. Only this test target is built for wasm32: the other integration tests
//! read files with std::fs and are native-only.
#![cfg(target_arch = "wasm32")]

use ctxfold::error::{Error, ErrorCode};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::wasm_bindgen_test;

// Note: the `#[wasm_bindgen]` exports of `src/wasm` (e.g. `version()`) live in a private module,
// so this test crate cannot call them (and the linker drops them from the test binary). Their
// JS-facing behaviour is tested against the built package by `tests/js/` (Node.js) and
// `tests/browser/` (Chromium). To test them here too, make the module reachable from tests,
// e.g. `#[doc(hidden)] pub mod wasm;` in lib.rs, and call `ctxfold::wasm::version()`.

/// The stable error codes, which cross the JS boundary as `Error.code`, come out right in the
/// wasm build run by a real JS engine (Node.js, then Chromium).
#[wasm_bindgen_test]
fn error_codes_are_stable_strings_under_wasm() {
    let err = Error::UnknownEntry {
        id: "0000002a".into(),
    };
    assert_eq!(err.code(), ErrorCode::UnknownEntry);
    assert_eq!(err.code().as_str(), "E_UNKNOWN_ENTRY");
    assert_eq!(err.to_string(), "Entry 0000002a not found");
    assert_eq!(ErrorCode::Aborted.to_string(), "E_ABORTED");
}

/// The wasm SIMD string scan agrees with serde_json on every placement of a special byte
/// around the 16-byte blocks (the native build tests the word-at-a-time path), and so does the
/// parser's one-pass string decoding (its runs between escapes): the same values, keys and
/// strings kept apart.
#[wasm_bindgen_test]
fn simd_string_scan_agrees_with_serde_json() {
    use ctxfold::support::json::scan::validate;
    let specials: &[&str] = &[
        "\\\"",
        "\\\\",
        "\\n",
        "\\u00e9",
        "\\ud83d\\ude00",
        "\\ud83d",
        "\u{1}",
        "\t",
        "\\x",
        "é",
        "😀",
        "\"",
    ];
    for len in 0..40 {
        for pos in 0..=len {
            for sp in specials {
                let body = "a".repeat(pos) + sp + &"b".repeat(len - pos);
                // A lone surrogate escape is well-formed JSON that serde_json refuses and we
                // read as U+FFFD (`JSON.parse` keeps it; UTF-8 has it as U+FFFD): serde_json
                // gets it as `\ufffd`. Here it is never next to a low surrogate escape.
                let theirs_of = |doc: &str| {
                    let doc = if *sp == "\\ud83d" {
                        doc.replace("\\ud83d", "\\ufffd")
                    } else {
                        doc.to_string()
                    };
                    serde_json::from_str::<serde_json::Value>(&doc).ok()
                };
                let doc = format!("[\"{body}\",1]");
                let ours = validate(doc.as_bytes()).is_ok();
                assert_eq!(ours, theirs_of(&doc).is_some(), "{doc:?}");
                let doc = format!("{{\"{body}{sp}\":[\"{body}{sp}\",\"x{body}\"]}}");
                let ours = ctxfold::support::json::parse(&doc).ok();
                assert_eq!(ours, theirs_of(&doc), "{doc:?}");
            }
        }
    }
}

/// The exported session class under a real JS engine: load, migrate, context, errors.
#[wasm_bindgen_test]
fn session_binding_loads_builds_and_reports_errors() {
    use ctxfold::wasm::WasmSession;
    let v1 = concat!(
        r#"{"type":"session","id":"x","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#,
        "\n",
        r#"{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hello"}}"#,
        "\n",
        r#"not json"#,
        "\n",
        r#"{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"provider":"p","model":"m","usage":{"input":7,"output":3},"stopReason":"stop"}}"#,
        "\n"
    );
    let s = WasmSession::from_bytes(
        v1.as_bytes().to_vec(),
        Some(r#"{"ids":"deterministic"}"#.into()),
        None,
    )
    .unwrap();
    assert_eq!(s.size(), 2);
    assert_eq!(s.leaf_id().as_deref(), Some("00000002"));
    let warnings: serde_json::Value = serde_json::from_str(&s.warnings_json()).unwrap();
    let codes: Vec<&str> = warnings
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["E_MIGRATED", "E_JSONL_LINE"]);
    let ctx: serde_json::Value =
        serde_json::from_str(&String::from(s.build_context_json(None).unwrap().join(""))).unwrap();
    assert_eq!(ctx["messages"].as_array().unwrap().len(), 2);
    assert_eq!(ctx["models"]["default"], "p/m");
    let tokens: serde_json::Value =
        serde_json::from_str(&s.context_tokens_json(None).unwrap()).unwrap();
    assert_eq!(tokens["tokensBefore"], 10);
    // Errors arrive as JS Error objects with a code.
    let err = WasmSession::from_bytes(b"nope".to_vec(), None, None)
        .err()
        .unwrap();
    let code = js_sys::Reflect::get(&err, &"code".into()).unwrap();
    assert_eq!(code.as_string().as_deref(), Some("E_NOT_A_SESSION"));
    assert!(err.is_instance_of::<js_sys::Error>());
}

/// The JSON texts that cross in chunks (`buildContextJson`, `transcriptJson`) are ASCII, with
/// non-ASCII characters as `\u` escapes (one-byte strings in JS), and parse to the same value.
#[wasm_bindgen_test]
fn chunked_json_crosses_as_ascii() {
    use ctxfold::wasm::WasmSession;
    let texts = ["café", "漢字", "emoji 😀 𝄞", "\u{2028}", "plain"];
    let mut file = String::from(
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
    );
    file.push('\n');
    for (n, t) in texts.iter().enumerate() {
        let parent = if n == 0 {
            "null".to_string()
        } else {
            format!("\"e{}\"", n - 1)
        };
        let message = serde_json::json!({"role": "user", "content": t});
        file.push_str(&format!(
            r#"{{"type":"message","id":"e{n}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{message}}}"#
        ));
        file.push('\n');
    }
    let s = WasmSession::from_bytes(file.into_bytes(), None, None).unwrap();
    for chunks in [
        s.build_context_json(None).unwrap(),
        s.transcript_json(None).unwrap(),
    ] {
        let text = String::from(chunks.join(""));
        assert!(text.is_ascii(), "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let got: Vec<&str> = v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"].as_str().unwrap())
            .collect();
        assert_eq!(got, texts);
    }
}

/// The module's allocator grows linear memory in large steps (crates/wasm-heap): building
/// 400,000 small values (~60 MB, as a large session's parse does) takes a few dozen
/// `memory.grow`s, not one per 64 KiB (the standard library's allocator: about a thousand,
/// each of which can cost V8 a full garbage collection).
#[wasm_bindgen_test]
fn memory_grows_in_large_steps() {
    let mut grows = 0;
    let mut size = core::arch::wasm32::memory_size(0);
    let mut kept: Vec<Box<[u8; 150]>> = Vec::new();
    for i in 0..400_000u32 {
        kept.push(Box::new([i as u8; 150]));
        let now = core::arch::wasm32::memory_size(0);
        if now != size {
            grows += 1;
            size = now;
        }
    }
    assert_eq!(kept[399_999][0], (399_999u32 % 256) as u8);
    assert!(grows <= 40, "{grows} memory.grow calls");
}
