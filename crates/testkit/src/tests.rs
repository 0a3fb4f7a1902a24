//! Structural tests of generated sessions.

use super::*;
use serde_json::{Map, Value};
use std::collections::HashMap;

fn keys(o: &Map<String, Value>) -> Vec<&str> {
    o.keys().map(String::as_str).collect()
}

fn obj<'a>(v: &'a Value, what: &str, line: usize) -> &'a Map<String, Value> {
    v.as_object()
        .unwrap_or_else(|| panic!("line {line}: {what} is not an object"))
}

fn s<'a>(o: &'a Map<String, Value>, k: &str, line: usize) -> &'a str {
    o.get(k)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("line {line}: `{k}` is not a string"))
}

fn is_iso(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() == 24
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && b[23] == b'Z'
        && b.iter()
            .enumerate()
            .all(|(i, c)| [4, 7, 10, 13, 16, 19, 23].contains(&i) || c.is_ascii_digit())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum K {
    User,
    Assistant,
    ToolResult,
    OtherMessage,
    Compaction,
    Other,
}

struct E {
    parent: Option<usize>,
    kind: K,
    depth: usize,
}

#[derive(Debug, Default)]
struct Report {
    entries: usize,
    compactions: usize,
    branch_points: usize,
    branch_summaries: usize,
    images: usize,
    labels: usize,
    tool_results: usize,
    active_path: usize,
    /// (prompt tokens of the last assistant before, prompt tokens of the first after) per
    /// compaction.
    compaction_drops: Vec<(u64, u64)>,
}

fn check_blocks(content: &Value, line: usize, allowed: &[&str], images: &mut usize) {
    let arr = content
        .as_array()
        .unwrap_or_else(|| panic!("line {line}: content is not an array"));
    for b in arr {
        let b = obj(b, "block", line);
        let ty = s(b, "type", line);
        assert!(allowed.contains(&ty), "line {line}: block type {ty}");
        let expect: &[&str] = match ty {
            "text" => &["type", "text"],
            "image" => &["type", "data", "mimeType"],
            "thinking" => &["type", "thinking", "thinkingSignature"],
            "toolCall" => &["type", "id", "name", "arguments"],
            _ => &[],
        };
        assert_eq!(keys(b), expect, "line {line}");
        if ty == "image" {
            *images += 1;
            let data = s(b, "data", line);
            assert!(data.starts_with("iVBORw0KGgo"), "line {line}: not a PNG");
            assert_eq!(data.len() % 4, 0);
        }
    }
}

fn prompt_tokens(m: &Map<String, Value>) -> u64 {
    let u = m.get("usage").and_then(Value::as_object);
    let g = |k: &str| {
        u.and_then(|u| u.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    g("input") + g("cacheRead") + g("cacheWrite")
}

/// Checks every structural promise of the generator; panics with the offending line.
fn validate(bytes: &[u8], opts: &GenOptions) -> Report {
    let text = std::str::from_utf8(bytes).expect("utf-8");
    assert!(text.ends_with('\n'));
    let lines: Vec<&str> = text[..text.len() - 1].split('\n').collect();
    let header: Value = serde_json::from_str(lines[0]).expect("header json");
    let h = obj(&header, "header", 1);
    assert_eq!(keys(h), ["type", "version", "id", "timestamp", "cwd"]);
    assert_eq!(h["type"], "session");
    assert_eq!(h["version"], 3);
    assert!(is_iso(s(h, "timestamp", 1)));

    let mut rep = Report::default();
    let mut ids: HashMap<String, usize> = HashMap::new();
    let mut es: Vec<E> = Vec::new();
    let mut children: Vec<usize> = Vec::new();
    let mut pending_calls: Vec<(String, String)> = Vec::new();
    let mut last_prompt: Option<u64> = None;
    let mut waiting_drop: Option<u64> = None;
    let mut prev_time = String::new();
    let mut compaction_last_on_path: Vec<Option<usize>> = Vec::new();

    for (n, raw) in lines.iter().enumerate().skip(1) {
        let line = n + 1;
        let v: Value = serde_json::from_str(raw).unwrap_or_else(|e| panic!("line {line}: {e}"));
        let o = obj(&v, "entry", line);
        let k = keys(o);
        assert_eq!(
            &k[..4],
            ["type", "id", "parentId", "timestamp"],
            "line {line}"
        );
        let ty = s(o, "type", line);
        let id = s(o, "id", line);
        assert!(
            id.len() == 8
                && id
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
            "line {line}: id {id}"
        );
        let ts = s(o, "timestamp", line);
        assert!(is_iso(ts), "line {line}: timestamp {ts}");
        assert!(ts >= prev_time.as_str(), "line {line}: time goes backwards");
        prev_time = ts.to_string();
        let idx = es.len();
        let parent = match &o["parentId"] {
            Value::Null => {
                assert_eq!(idx, 0, "line {line}: only the first entry is a root");
                None
            }
            Value::String(p) => Some(
                *ids.get(p)
                    .unwrap_or_else(|| panic!("line {line}: parent {p} not an earlier entry")),
            ),
            other => panic!("line {line}: parentId {other}"),
        };
        assert!(
            ids.insert(id.to_string(), idx).is_none(),
            "line {line}: duplicate id {id}"
        );
        if let Some(p) = parent {
            children[p] += 1;
        }
        children.push(0);
        let depth = parent.map_or(1, |p| es[p].depth + 1);
        let mut last_comp = parent.and_then(|p| compaction_last_on_path[p]);

        // A toolUse assistant is immediately followed by its results, in order.
        if !pending_calls.is_empty() {
            assert!(
                ty == "message" && o["message"]["role"] == "toolResult",
                "line {line}: tool calls left unanswered"
            );
        }

        let rest: Vec<&str> = k[4..].to_vec();
        let kind = match ty {
            "message" => {
                assert_eq!(rest, ["message"], "line {line}");
                let m = obj(&o["message"], "message", line);
                let role = s(m, "role", line);
                match role {
                    "user" => {
                        assert_eq!(keys(m), ["role", "content", "timestamp"], "line {line}");
                        if !m["content"].is_string() {
                            check_blocks(&m["content"], line, &["text", "image"], &mut rep.images);
                        }
                        K::User
                    }
                    "assistant" => {
                        let mk = keys(m);
                        let base = [
                            "role",
                            "content",
                            "api",
                            "provider",
                            "model",
                            "usage",
                            "stopReason",
                            "timestamp",
                        ];
                        assert_eq!(&mk[..8], base, "line {line}");
                        let stop = s(m, "stopReason", line);
                        if matches!(stop, "aborted" | "error") {
                            assert_eq!(&mk[8..], ["errorMessage"], "line {line}");
                        } else {
                            assert_eq!(mk.len(), 8, "line {line}");
                        }
                        assert!(
                            ["stop", "toolUse", "aborted", "error", "length"].contains(&stop),
                            "line {line}"
                        );
                        let u = obj(&m["usage"], "usage", line);
                        assert_eq!(
                            keys(u),
                            [
                                "input",
                                "output",
                                "cacheRead",
                                "cacheWrite",
                                "totalTokens",
                                "cost"
                            ]
                        );
                        assert_eq!(
                            keys(obj(&u["cost"], "cost", line)),
                            ["input", "output", "cacheRead", "cacheWrite", "total"]
                        );
                        let g = |k: &str| u[k].as_u64().unwrap_or(u64::MAX);
                        assert_eq!(
                            g("totalTokens"),
                            g("input") + g("output") + g("cacheRead") + g("cacheWrite"),
                            "line {line}"
                        );
                        check_blocks(
                            &m["content"],
                            line,
                            &["text", "thinking", "toolCall"],
                            &mut rep.images,
                        );
                        let calls: Vec<(String, String)> = m["content"]
                            .as_array()
                            .map(|a| {
                                a.iter()
                                    .filter(|b| b["type"] == "toolCall")
                                    .map(|b| {
                                        let id = b["id"].as_str().unwrap_or("").to_string();
                                        assert!(
                                            id.starts_with("toolu_") && id.len() == 30,
                                            "line {line}"
                                        );
                                        assert!(b["arguments"].is_object());
                                        (id, b["name"].as_str().unwrap_or("").to_string())
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                        assert_eq!(stop == "toolUse", !calls.is_empty(), "line {line}");
                        pending_calls = calls;
                        pending_calls.reverse();
                        if !matches!(stop, "aborted" | "error") {
                            let p = prompt_tokens(m);
                            if let Some(before) = waiting_drop.take() {
                                rep.compaction_drops.push((before, p));
                            }
                            last_prompt = Some(p);
                        }
                        K::Assistant
                    }
                    "toolResult" => {
                        assert_eq!(
                            keys(m),
                            [
                                "role",
                                "toolCallId",
                                "toolName",
                                "content",
                                "isError",
                                "timestamp"
                            ],
                            "line {line}"
                        );
                        let (cid, cname) = pending_calls
                            .pop()
                            .unwrap_or_else(|| panic!("line {line}: toolResult without a call"));
                        assert_eq!(s(m, "toolCallId", line), cid, "line {line}");
                        assert_eq!(s(m, "toolName", line), cname, "line {line}");
                        // Its path predecessor chain leads to the calling assistant.
                        let mut p = parent.unwrap_or_else(|| panic!("line {line}: orphan result"));
                        while es[p].kind == K::ToolResult {
                            p = es[p].parent.unwrap_or_else(|| panic!("line {line}"));
                        }
                        assert_eq!(es[p].kind, K::Assistant, "line {line}");
                        check_blocks(&m["content"], line, &["text", "image"], &mut rep.images);
                        assert!(m["isError"].is_boolean());
                        rep.tool_results += 1;
                        K::ToolResult
                    }
                    "bashExecution" => {
                        assert_eq!(
                            keys(m),
                            [
                                "role",
                                "command",
                                "output",
                                "exitCode",
                                "cancelled",
                                "truncated",
                                "timestamp"
                            ],
                            "line {line}"
                        );
                        K::OtherMessage
                    }
                    r => panic!("line {line}: role {r}"),
                }
            }
            "compaction" => {
                assert_eq!(
                    rest,
                    ["summary", "firstKeptEntryId", "tokensBefore", "details"],
                    "line {line}"
                );
                let fk = s(o, "firstKeptEntryId", line);
                let fi = *ids
                    .get(fk)
                    .unwrap_or_else(|| panic!("line {line}: firstKept unknown"));
                assert!(
                    matches!(es[fi].kind, K::User | K::Assistant),
                    "line {line}: firstKept kind"
                );
                // An ancestor, after the previous compaction on the path.
                let mut p = parent;
                let mut found = false;
                while let Some(x) = p {
                    if x == fi {
                        found = true;
                        break;
                    }
                    assert_ne!(
                        es[x].kind,
                        K::Compaction,
                        "line {line}: firstKept before previous compaction"
                    );
                    p = es[x].parent;
                }
                assert!(found, "line {line}: firstKept not on the active path");
                let d = obj(&o["details"], "details", line);
                assert_eq!(keys(d), ["readFiles", "modifiedFiles"]);
                assert!(o["tokensBefore"].as_u64().is_some());
                rep.compactions += 1;
                waiting_drop = last_prompt;
                last_comp = Some(idx);
                K::Compaction
            }
            "branch_summary" => {
                assert_eq!(rest, ["fromId", "summary", "details"], "line {line}");
                assert_eq!(
                    ids.get(s(o, "fromId", line)).copied(),
                    parent,
                    "line {line}"
                );
                rep.branch_summaries += 1;
                K::OtherMessage
            }
            "label" => {
                assert_eq!(rest, ["targetId", "label"], "line {line}");
                assert!(ids.contains_key(s(o, "targetId", line)), "line {line}");
                rep.labels += 1;
                K::Other
            }
            "custom_message" => {
                assert_eq!(rest, ["customType", "content", "display"], "line {line}");
                K::OtherMessage
            }
            "custom" => {
                assert_eq!(rest, ["customType", "data"], "line {line}");
                K::Other
            }
            "thinking_level_change" => {
                assert_eq!(rest, ["thinkingLevel"], "line {line}");
                K::Other
            }
            "model_change" => {
                assert_eq!(rest, ["model"], "line {line}");
                assert!(s(o, "model", line).starts_with("anthropic/"));
                K::Other
            }
            t => panic!("line {line}: type {t}"),
        };
        es.push(E {
            parent,
            kind,
            depth,
        });
        compaction_last_on_path.push(last_comp);
        let _ = (K::OtherMessage, K::Other);
    }
    assert!(
        pending_calls.is_empty(),
        "file ends with unanswered tool calls"
    );
    rep.entries = es.len();
    rep.branch_points = children.iter().filter(|&&c| c >= 2).count();
    if let Some(last) = es.last() {
        rep.active_path = last.depth;
        let max = es.iter().map(|e| e.depth).max().unwrap_or(0);
        assert_eq!(last.depth, max, "the active path is not the longest one");
    }
    assert_eq!(rep.entries, opts.entries);
    rep
}

fn small(seed: u64) -> GenOptions {
    GenOptions {
        seed,
        entries: 800,
        compaction_every_tokens: Some(30_000),
        branch_rate: 0.2,
        size_scale: 0.3,
        ..GenOptions::default()
    }
}

#[test]
fn same_seed_same_bytes_different_seed_different_bytes() {
    let a = generate(&small(1));
    let b = generate(&small(1));
    let c = generate(&small(2));
    assert_eq!(a, b);
    assert_ne!(a, c);
    let mut streamed = Vec::new();
    let stats = generate_to(&small(1), &mut streamed).expect("write");
    assert_eq!(streamed, a);
    assert_eq!(stats.bytes, a.len() as u64);
}

#[test]
fn small_sessions_validate_and_stats_agree() {
    for seed in 0..6 {
        let opts = small(seed);
        let (bytes, stats) = generate_with_stats(&opts);
        let rep = validate(&bytes, &opts);
        assert_eq!(stats.entries, rep.entries);
        assert_eq!(stats.compactions, rep.compactions);
        assert_eq!(stats.branch_points, rep.branch_points);
        assert_eq!(stats.branch_summaries, rep.branch_summaries);
        assert_eq!(stats.images, rep.images);
        assert_eq!(stats.labels, rep.labels);
        assert_eq!(stats.tool_calls, rep.tool_results);
        assert_eq!(stats.active_path_len, rep.active_path);
        assert!(
            rep.compactions > 0 && rep.branch_points > 0,
            "seed {seed}: {rep:?}"
        );
        let last = bytes[..bytes.len() - 1]
            .rsplit(|&b| b == b'\n')
            .next()
            .unwrap_or_default();
        let last: Value = serde_json::from_slice(last).unwrap_or_default();
        assert_eq!(last["id"], stats.leaf_id.as_str());
    }
}

#[test]
fn exact_entry_counts_for_tiny_sessions() {
    for n in [0usize, 1, 2, 3, 4, 5, 6, 7, 9, 13, 31, 64] {
        for seed in 0..4 {
            let opts = GenOptions {
                seed,
                entries: n,
                compaction_every_tokens: Some(2_000),
                ..GenOptions::default()
            };
            let bytes = generate(&opts);
            validate(&bytes, &opts);
        }
    }
}

#[test]
fn switches_turn_features_off() {
    let opts = GenOptions {
        entries: 1_500,
        compaction_every_tokens: None,
        branches: false,
        images: false,
        extras: false,
        size_scale: 0.3,
        ..GenOptions::default()
    };
    let (bytes, stats) = generate_with_stats(&opts);
    let rep = validate(&bytes, &opts);
    assert_eq!(rep.compactions, 0);
    assert_eq!(rep.branch_points, 0);
    assert_eq!(rep.images, 0);
    assert_eq!(rep.labels, 0);
    assert_eq!(stats.active_path_len, opts.entries);
}

#[test]
fn usage_grows_and_drops_after_compaction() {
    let opts = small(9);
    let rep = validate(&generate(&opts), &opts);
    assert!(!rep.compaction_drops.is_empty());
    let dropped = rep.compaction_drops.iter().filter(|(b, a)| a < b).count();
    assert!(
        dropped * 10 >= rep.compaction_drops.len() * 9,
        "{:?}",
        rep.compaction_drops
    );
}

#[test]
fn many_compactions_mode() {
    let opts = GenOptions {
        entries: 6_000,
        ..GenOptions::many_compactions()
    };
    let (bytes, stats) = generate_with_stats(&opts);
    let rep = validate(&bytes, &opts);
    assert!(rep.compactions >= 100, "{rep:?}");
    assert_eq!(stats.compactions, rep.compactions);
}

#[test]
fn sample_preset_is_a_good_demo() {
    let opts = GenOptions::sample();
    let (bytes, stats) = generate_with_stats(&opts);
    let rep = validate(&bytes, &opts);
    assert_eq!(rep.entries, 1_500);
    assert!(rep.branch_points >= 3, "{rep:?}");
    assert!((2..=4).contains(&rep.compactions), "{rep:?}");
    assert!(rep.images >= 1, "{rep:?}");
    assert!(rep.labels >= 1, "{rep:?}");
    assert!(rep.branch_summaries >= 1, "{rep:?}");
    assert!(
        (1_000_000..=4_000_000).contains(&bytes.len()),
        "{} bytes",
        bytes.len()
    );
    assert_eq!(stats.bytes, bytes.len() as u64);
}

#[test]
fn content_is_varied() {
    let opts = GenOptions::sample();
    let bytes = generate(&opts);
    let text = String::from_utf8(bytes).unwrap_or_default();
    for needle in [
        "é",
        "→",
        "日本語",
        "🚀",
        "\\t",
        "\\\\",
        "\\\"",
        "\\u001b",
        "\"isError\":true",
        "\"stopReason\":\"aborted\"",
        "\"role\":\"bashExecution\"",
        "\"customType\":\"note\"",
        "\"customType\":\"ext-state\"",
        "\"thinkingSignature\":",
        "\"name\":\"edit\"",
        "\"name\":\"write\"",
        "\"name\":\"grep\"",
        "\"name\":\"bash\"",
    ] {
        assert!(text.contains(needle), "missing {needle}");
    }
    assert!(text.contains(".ts:"), "read selectors");
}

/// Full-size bench preset: `cargo test --release --features testkit -- --ignored bench`.
#[test]
#[ignore]
fn bench_preset_full_size() {
    let opts = GenOptions::bench();
    let (bytes, stats) = generate_with_stats(&opts);
    let target = 145_000_000f64;
    let size = bytes.len() as f64;
    assert!(
        (size - target).abs() <= target * 0.10,
        "{} bytes",
        bytes.len()
    );
    let rep = validate(&bytes, &opts);
    assert!(rep.branch_points >= 100, "{rep:?}");
    assert!(rep.compactions >= 50, "{rep:?}");
    eprintln!("{stats:?}");
}
