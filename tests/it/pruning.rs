//! Tool-output pruning (spec: compaction §6): supersede keys, the per-turn stale pass, the
//! threshold prune, the cases of `supersede-prune.test.ts` (§10.3) restated, and conformance
//! with the reference's three passes over the large session (`prune.json`).

use crate::common;
use crate::common::Jsonl;
use ctxfold::pruning::{
    age_notice, apply_prune, collect_superseded, collect_useless, plan_superseded_tool_results,
    plan_tool_outputs, prune_savings, prune_superseded_tool_results, prune_tool_outputs,
    read_tool_supersede_key, KeepBoundary, PruneConfig, PruneReason, PruneReport, PruneSubject,
    SupersedeComplete, DEFAULT_MINIMUM_SAVINGS, DEFAULT_PROTECT_TOKENS, MIN_PRUNE_TOKENS,
    SUPERSEDED_NOTICE, USELESS_NOTICE,
};
use ctxfold::session::message::{AgentMessage, Content, ContentBlock};
use ctxfold::session::{LoadOptions, SequentialIds, Session};
use ctxfold::settings::CompactionSettings;
use ctxfold::Error;
use serde_json::{json, Value};
use std::rc::Rc;

// ----- fixtures of supersede-prune.test.ts ------------------------------------------------

const MINUTE: i64 = 60_000;

/// 2026-06-10 12:00 UTC.
fn t0() -> i64 {
    ctxfold::support::time::parse_iso("2026-06-10T12:00:00.000Z").expect("valid date")
}

/// A 40-character line (with its newline) repeated `n` times.
fn lines(n: usize) -> String {
    "export const value = compute(input, 4);\n".repeat(n)
}

/// `FILE_CONTENT`: a 40-char line × 50.
fn file_content() -> String {
    lines(50)
}

/// `BIG_TEXT`: a 40-char line × 500.
fn big_text() -> String {
    lines(500)
}

/// A 46-char "no matches" line × 10 (a useless search result).
fn no_matches() -> String {
    "No matches found for pattern in the workspace\n".repeat(10)
}

/// A linear conversation with messages 1 s apart from `T0`.
struct Conv {
    j: Jsonl,
    last: Option<String>,
    n: usize,
    ts: i64,
}

impl Conv {
    fn new() -> Conv {
        Conv {
            j: Jsonl::new(),
            last: None,
            n: 0,
            ts: t0() - 1000,
        }
    }

    fn next_id(&mut self) -> String {
        self.n += 1;
        format!("e{:03}", self.n)
    }

    fn entry(&mut self, ty: &str, fields: Value) -> String {
        let id = self.next_id();
        let j = std::mem::take(&mut self.j);
        self.j = j.entry(ty, &id, self.last.as_deref(), fields);
        self.last = Some(id.clone());
        id
    }

    /// Appends a message (its `timestamp` set to the next second unless given).
    fn push(&mut self, mut msg: Value) -> String {
        self.ts += 1000;
        if msg.get("timestamp").is_none() {
            msg["timestamp"] = json!(self.ts);
        }
        self.entry("message", json!({ "message": msg }))
    }

    fn user(&mut self, text: &str) -> String {
        self.push(json!({"role":"user","content":text}))
    }

    /// An assistant turn calling `tool` with `args`; returns the call id.
    fn call(&mut self, tool: &str, args: Value) -> String {
        let call_id = format!("call-{}", self.n + 1);
        self.push(json!({"role":"assistant","content":[
            {"type":"toolCall","id":call_id,"name":tool,"arguments":args}],
            "stopReason":"toolUse","provider":"anthropic","model":"m",
            "usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0}}));
        call_id
    }

    /// A call of `tool` and its result (`extra` fields merged into the result message);
    /// returns the result's entry id.
    fn tool(&mut self, tool: &str, args: Value, text: &str, extra: Value) -> String {
        let call_id = self.call(tool, args);
        let mut msg = json!({"role":"toolResult","toolCallId":call_id,"toolName":tool,
            "content":[{"type":"text","text":text}],"isError":false});
        if let (Some(m), Value::Object(x)) = (msg.as_object_mut(), extra) {
            m.extend(x);
        }
        self.push(msg)
    }

    /// A `read` of `path` answered with `text`.
    fn read(&mut self, path: &str, text: &str) -> String {
        self.tool("read", json!({ "path": path }), text, json!({}))
    }

    fn read_with(&mut self, path: &str, text: &str, extra: Value) -> String {
        self.tool("read", json!({ "path": path }), text, extra)
    }

    /// A failed `read`.
    fn read_error(&mut self, path: &str) -> String {
        self.read_with(path, "ENOENT: no such file", json!({"isError": true}))
    }

    fn load(&self) -> Session {
        self.j.load()
    }

    /// Timestamp of the last message.
    fn last_ts(&self) -> i64 {
        self.ts
    }
}

// ----- helpers -------------------------------------------------------------------------------

fn result_of(s: &Session, id: &str) -> ctxfold::session::message::ToolResultMessage {
    match s
        .message(s.index_of(id).expect("known id"))
        .expect("parses")
    {
        AgentMessage::ToolResult(r) => r,
        other => panic!("{id} is not a tool result: {other:?}"),
    }
}

/// The text of a tool result's content.
fn text(s: &Session, id: &str) -> String {
    result_of(s, id).content.text()
}

fn is_pruned(s: &Session, id: &str) -> bool {
    result_of(s, id).pruned_at.is_some()
}

/// Ids of the results a report pruned.
fn ids(r: &PruneReport) -> Vec<&str> {
    r.pruned.iter().map(|c| c.id.as_str()).collect()
}

/// The stale pass, not idle (`now` = the last message), supersede and useless on.
fn stale_cfg(c: &Conv) -> PruneConfig {
    PruneConfig {
        supersede: true,
        now: c.last_ts(),
        ..PruneConfig::default()
    }
}

/// The threshold prune with a huge protect window and no minimum: only superseded and
/// useless results can go.
fn threshold_cfg(supersede: bool) -> PruneConfig {
    PruneConfig {
        supersede,
        protect_tokens: 1_000_000,
        minimum_savings: 0,
        now: t0() + 60 * MINUTE,
        ..PruneConfig::default()
    }
}

fn stale(s: &mut Session, cfg: &PruneConfig) -> PruneReport {
    prune_superseded_tool_results(s, cfg).expect("stale pass")
}

fn threshold(s: &mut Session, cfg: &PruneConfig) -> PruneReport {
    prune_tool_outputs(s, cfg).expect("threshold prune")
}

/// A host `supersedeComplete`: results whose text starts with `[partial]` are incomplete.
fn partial_marker() -> SupersedeComplete {
    Rc::new(
        |s: &Session, subject: &PruneSubject<'_>| match s.message(subject.index) {
            Ok(AgentMessage::ToolResult(r)) => !r.content.text().starts_with("[partial]"),
            _ => true,
        },
    )
}

/// Lines of the JSONL that differ between two versions.
fn changed_lines(before: &[u8], after: &[u8]) -> Vec<usize> {
    let a: Vec<&[u8]> = before.split(|&b| b == b'\n').collect();
    let b: Vec<&[u8]> = after.split(|&b| b == b'\n').collect();
    assert_eq!(a.len(), b.len(), "a prune never adds or removes lines");
    (0..a.len()).filter(|&i| a[i] != b[i]).collect()
}

// ----- §6.1 constants and savings ---------------------------------------------------------------

#[test]
fn constants_and_savings() {
    assert_eq!(DEFAULT_PROTECT_TOKENS, 40_000);
    assert_eq!(DEFAULT_MINIMUM_SAVINGS, 20_000);
    assert_eq!(MIN_PRUNE_TOKENS, 50);
    assert_eq!(
        SUPERSEDED_NOTICE,
        "[Superseded by a newer read of this file]"
    );
    assert_eq!(USELESS_NOTICE, "[Uneventful result elided]");
    assert_eq!(age_notice(3655), "[Output truncated - 3655 tokens]");
    // ceil(32 / 4) = 8; ceil(41 / 4) = 11; ceil(26 / 4) = 7.
    assert_eq!(prune_savings(3655, &age_notice(3655)), 3647);
    assert_eq!(prune_savings(39, SUPERSEDED_NOTICE), 28);
    assert_eq!(prune_savings(7, USELESS_NOTICE), 0);
    assert_eq!(prune_savings(8, USELESS_NOTICE), 1);
    assert_eq!(prune_savings(3, "é"), 2);
}

// ----- §10.3 case 1 / §6.2: supersede keys ---------------------------------------------------

#[test]
fn case01_supersede_keys() {
    let key = |path: Value| read_tool_supersede_key("read", &json!({ "path": path }));
    assert_eq!(key(json!("src/foo.ts")).as_deref(), Some("src/foo.ts"));
    assert_eq!(
        key(json!("src/foo.ts:50-200")).as_deref(),
        Some("src/foo.ts\u{0}50-200")
    );
    assert_eq!(
        key(json!("src/foo.ts:2-4:raw")).as_deref(),
        Some("src/foo.ts\u{1}2-4:raw")
    );
    assert_eq!(
        key(json!("src/foo.ts:raw")).as_deref(),
        Some("src/foo.ts\u{1}raw")
    );
    assert_eq!(
        key(json!("src/foo.ts:conflicts")).as_deref(),
        Some("src/foo.ts\u{1}conflicts")
    );
    assert_eq!(
        key(json!("src/foo.ts:raw:2-4")).as_deref(),
        Some("src/foo.ts\u{1}raw:2-4")
    );
    assert_eq!(
        key(json!("db.sqlite:users")).as_deref(),
        Some("db.sqlite:users")
    );
    assert_eq!(
        key(json!("db.sqlite:users:42")).as_deref(),
        Some("db.sqlite:users\u{0}42")
    );
    assert_eq!(key(json!("skill://react")), None);
    assert_eq!(key(json!("https://example.com/a.ts")), None);
    assert_eq!(key(json!("")), None);
    assert_eq!(key(json!(42)), None);
    assert_eq!(read_tool_supersede_key("read", &json!({})), None);
    assert_eq!(read_tool_supersede_key("read", &json!("src/foo.ts")), None);
    assert_eq!(
        read_tool_supersede_key("write", &json!({"path": "src/foo.ts"})),
        None
    );
    assert_eq!(
        read_tool_supersede_key("grep", &json!({"path": "src/foo.ts"})),
        None
    );
}

// ----- §10.3 cases 2–4: tail rule, large suffix, idle flush --------------------------------

#[test]
fn case02_tail_supersede_prunes_the_older_read() {
    let mut c = Conv::new();
    let first = c.read("src/foo.ts", &file_content());
    let second = c.read("src/foo.ts", &file_content());
    let mut s = c.load();
    let now = c.last_ts();
    let r = stale(&mut s, &stale_cfg(&c));
    assert_eq!(r.pruned_count, 1);
    assert_eq!(ids(&r), [first.as_str()]);
    assert_eq!(r.pruned[0].reason, PruneReason::Superseded);
    assert_eq!(text(&s, &first), SUPERSEDED_NOTICE);
    assert_eq!(result_of(&s, &first).pruned_at, Some(now as f64));
    assert_eq!(text(&s, &second), file_content());
    assert!(!is_pruned(&s, &second));
    let tokens = r.pruned[0].tokens_before;
    assert!(tokens > 400, "{tokens}");
    assert_eq!(r.tokens_saved, tokens - 11);
}

#[test]
fn case03_large_suffix_keeps_stale_reads() {
    let mut c = Conv::new();
    c.read("src/foo.ts", &file_content());
    c.read("src/foo.ts", &file_content());
    c.user(&big_text());
    let mut s = c.load();
    let before = s.to_bytes();
    let cfg = PruneConfig {
        suffix_token_limit: 200,
        ..stale_cfg(&c)
    };
    let r = stale(&mut s, &cfg);
    assert_eq!((r.pruned_count, r.tokens_saved), (0, 0));
    assert_eq!(s.to_bytes(), before);
}

#[test]
fn case04_idle_flush_prunes_everything_stale_after_the_idle_time() {
    let build = || {
        let mut c = Conv::new();
        let foo = c.read("src/foo.ts", &file_content());
        let bar = c.read("src/bar.ts", &file_content());
        c.read("src/foo.ts", &file_content());
        c.read("src/bar.ts", &file_content());
        c.user(&big_text());
        (c, foo, bar)
    };
    let cfg = |c: &Conv, idle_for: i64| PruneConfig {
        suffix_token_limit: 0,
        idle_flush_ms: 30 * MINUTE as u64,
        now: c.last_ts() + idle_for,
        ..stale_cfg(c)
    };
    let (c, foo, bar) = build();
    let mut s = c.load();
    let r = stale(&mut s, &cfg(&c, 30 * MINUTE));
    assert_eq!(ids(&r), [foo.as_str(), bar.as_str()]);

    let (c, _, _) = build();
    let mut s = c.load();
    let before = s.to_bytes();
    let r = stale(&mut s, &cfg(&c, 29 * MINUTE));
    assert_eq!(r.pruned_count, 0);
    assert_eq!(s.to_bytes(), before);
}

// ----- §10.3 case 5: selectors ----------------------------------------------------------------

#[test]
fn case05_selectors() {
    let mut c = Conv::new();
    let a = c.read("src/foo.ts:50-200", &file_content());
    let b = c.read("src/foo.ts:10-20", &file_content());
    let r = stale(&mut c.load(), &stale_cfg(&c));
    assert_eq!(
        r.pruned_count, 0,
        "different ranges do not supersede each other"
    );

    let cc = c.read("src/foo.ts:50-200", &file_content());
    let mut s = c.load();
    let r = stale(&mut s, &stale_cfg(&c));
    assert_eq!(ids(&r), [a.as_str()], "the older identical range goes");

    assert_eq!(
        stale(&mut s, &stale_cfg(&c)).pruned_count,
        0,
        "a second pass finds nothing new"
    );

    // A bare read supersedes both range reads left.
    let bare = c.read("src/foo.ts", &file_content());
    let mut s = c.load();
    let r = stale(&mut s, &stale_cfg(&c));
    assert_eq!(ids(&r), [a.as_str(), b.as_str(), cc.as_str()]);

    // A range read after the bare read does not supersede the bare read.
    c.read("src/foo.ts:50-200", &file_content());
    let mut s = c.load();
    let r = stale(&mut s, &stale_cfg(&c));
    assert_eq!(ids(&r), [a.as_str(), b.as_str(), cc.as_str()]);
    assert!(!is_pruned(&s, &bare));
}

// ----- §10.3 case 6: completeness (stale pass and threshold prune) --------------------------

/// Runs a completeness scenario through both passes; returns the pruned ids of each.
fn both_passes(c: &Conv) -> [Vec<String>; 2] {
    let hook = partial_marker();
    let mut s = c.load();
    let cfg = PruneConfig {
        supersede_complete: Some(Rc::clone(&hook)),
        ..stale_cfg(c)
    };
    let a = stale(&mut s, &cfg);
    let mut s = c.load();
    let cfg = PruneConfig {
        supersede_complete: Some(hook),
        ..threshold_cfg(true)
    };
    let b = threshold(&mut s, &cfg);
    [a, b].map(|r| r.pruned.iter().map(|p| p.id.clone()).collect())
}

#[test]
fn case06_incomplete_bare_read_keeps_an_earlier_range() {
    let mut c = Conv::new();
    c.read("src/foo.ts:10-20", &file_content());
    c.read("src/foo.ts", &format!("[partial]\n{}", file_content()));
    for got in both_passes(&c) {
        assert!(got.is_empty(), "{got:?}");
    }
}

#[test]
fn case06_complete_bare_read_replaces_an_earlier_range() {
    let mut c = Conv::new();
    let range = c.read("src/foo.ts:10-20", &file_content());
    c.read("src/foo.ts", &file_content());
    for got in both_passes(&c) {
        assert_eq!(got, [range.as_str()]);
    }
}

#[test]
fn case06_complete_bare_read_keeps_an_earlier_raw_read() {
    let mut c = Conv::new();
    c.read("src/foo.ts:raw", &file_content());
    c.read("src/foo.ts", &file_content());
    for got in both_passes(&c) {
        assert!(got.is_empty(), "{got:?}");
    }
}

#[test]
fn case06_incomplete_same_selector_reread_replaces_the_older_copy() {
    let mut c = Conv::new();
    let old = c.read("src/foo.ts:10-20", &file_content());
    c.read(
        "src/foo.ts:10-20",
        &format!("[partial]\n{}", file_content()),
    );
    for got in both_passes(&c) {
        assert_eq!(got, [old.as_str()]);
    }
}

#[test]
fn case06_success_error_error_prunes_only_the_older_error() {
    let mut c = Conv::new();
    let ok = c.read("src/foo.ts", &file_content());
    let middle = c.read_error("src/foo.ts");
    let newest = c.read_error("src/foo.ts");
    let got = both_passes(&c);
    // The stale pass has no floor; the threshold prune lets superseded results bypass the
    // 50-token floor too.
    for got in got {
        assert_eq!(got, [middle.as_str()], "not {ok} or {newest}");
    }
}

#[test]
fn case06_failed_range_read_then_incomplete_bare_read() {
    let mut c = Conv::new();
    let failed = c.read_error("src/foo.ts:10-20");
    c.read("src/foo.ts", &format!("[partial]\n{}", file_content()));
    for got in both_passes(&c) {
        assert_eq!(got, [failed.as_str()]);
    }
}

#[test]
fn case06_complete_is_asked_only_of_successful_results_until_one_is_complete() {
    use std::cell::Cell;
    let mut c = Conv::new();
    c.read("src/foo.ts", &file_content());
    c.read_error("src/foo.ts");
    c.read("src/foo.ts", &file_content());
    c.read("src/foo.ts", &file_content());
    let asked = Rc::new(Cell::new(0));
    let counter = Rc::clone(&asked);
    let cfg = PruneConfig {
        supersede_complete: Some(Rc::new(move |_: &Session, p: &PruneSubject<'_>| {
            assert!(!p.is_error);
            assert_eq!(p.path, "src/foo.ts");
            counter.set(counter.get() + 1);
            true
        })),
        ..stale_cfg(&c)
    };
    let r = stale(&mut c.load(), &cfg);
    assert_eq!(r.pruned_count, 3);
    // `complete ||= supersedeComplete(result)`: once complete, the hook is not asked again.
    assert_eq!(asked.get(), 1);
}

// ----- §10.3 case 7: latest read, protection, pruned reads ----------------------------------

#[test]
fn case07_latest_read_is_never_pruned_even_in_idle_flush() {
    let mut c = Conv::new();
    let r1 = c.read("src/foo.ts", &file_content());
    let r2 = c.read("src/foo.ts", &file_content());
    let r3 = c.read("src/foo.ts", &file_content());
    let mut s = c.load();
    let cfg = PruneConfig {
        now: c.last_ts() + 24 * 60 * MINUTE,
        suffix_token_limit: 0,
        ..stale_cfg(&c)
    };
    let r = stale(&mut s, &cfg);
    assert_eq!(ids(&r), [r1.as_str(), r2.as_str()]);
    assert!(!is_pruned(&s, &r3));
}

#[test]
fn case07_protected_plan_file_is_never_superseded() {
    let mut c = Conv::new();
    let a1 = c.read("src/a.ts", &file_content());
    let p1 = c.read("plan.md", &file_content());
    c.read("src/a.ts", &file_content());
    c.read("plan.md:1-40", &file_content());
    c.read("plan.md", &file_content());
    let r = stale(&mut c.load(), &stale_cfg(&c));
    assert_eq!(
        r.pruned_count, 3,
        "unprotected: the older a.ts, plan.md and range go"
    );
    let cfg = PruneConfig {
        protected_path: Some("plan.md".into()),
        ..stale_cfg(&c)
    };
    let mut s = c.load();
    let r = stale(&mut s, &cfg);
    assert_eq!(ids(&r), [a1.as_str()]);
    assert!(!is_pruned(&s, &p1));
}

#[test]
fn case07_newer_already_pruned_read_does_not_supersede() {
    let mut c = Conv::new();
    let old = c.read("src/foo.ts", &file_content());
    c.read_with("src/foo.ts", SUPERSEDED_NOTICE, json!({"prunedAt": t0()}));
    let mut s = c.load();
    let r = stale(&mut s, &stale_cfg(&c));
    assert_eq!(r.pruned_count, 0);
    assert!(!is_pruned(&s, &old));
}

// ----- §10.3 case 8: threshold prune and supersede ---------------------------------------------

#[test]
fn case08_threshold_prune_with_and_without_supersede_key() {
    let mut c = Conv::new();
    let old = c.read("src/foo.ts", &file_content());
    let new = c.read("src/foo.ts", &file_content());

    let mut s = c.load();
    let r = threshold(&mut s, &threshold_cfg(true));
    assert_eq!(ids(&r), [old.as_str()]);
    assert_eq!(text(&s, &old), SUPERSEDED_NOTICE);
    assert!(!is_pruned(&s, &new));

    let mut s = c.load();
    let before = s.to_bytes();
    let r = threshold(&mut s, &threshold_cfg(false));
    assert_eq!((r.pruned_count, r.tokens_saved), (0, 0));
    assert_eq!(s.to_bytes(), before);

    let mut s = c.load();
    let cfg = PruneConfig {
        protect_tokens: 0,
        ..threshold_cfg(false)
    };
    let r = threshold(&mut s, &cfg);
    assert_eq!(ids(&r), [old.as_str(), new.as_str()]);
    for p in &r.pruned {
        assert_eq!(p.reason, PruneReason::Age);
        assert_eq!(
            text(&s, &p.id),
            format!("[Output truncated - {} tokens]", p.tokens_before)
        );
    }

    let d = PruneConfig::default();
    assert_eq!(d.protect_tokens, 40_000);
    assert_eq!(d.minimum_savings, 20_000);
    assert!(!d.supersede);
    assert!(d.prune_useless);
    assert_eq!(d.protected_tools, ["skill"]);
    assert!(d.protect_skill_reads);
    assert_eq!(d.cache_warm_suffix_tokens, None);
    assert_eq!(d.suffix_token_limit, 8_000);
    assert_eq!(d.idle_flush_ms, 30 * 60 * 1000);
    assert_eq!(d.keep_boundary, KeepBoundary::LatestCompaction);
}

// ----- §10.3 case 9: useless results -------------------------------------------------------------

fn search(c: &mut Conv, text: &str, extra: Value) -> String {
    let mut x = json!({"useless": true});
    if let (Some(m), Value::Object(e)) = (x.as_object_mut(), extra) {
        m.extend(e);
    }
    c.tool("grep", json!({"pattern": "zzz"}), text, x)
}

#[test]
fn case09_useless_idle_flush_and_tail_rule() {
    // Idle flush (no supersede key: useless pruning works without one).
    let mut c = Conv::new();
    let u = search(&mut c, &no_matches(), json!({}));
    c.user(&big_text());
    let mut s = c.load();
    let cfg = PruneConfig {
        supersede: false,
        suffix_token_limit: 0,
        now: c.last_ts() + 30 * MINUTE,
        ..stale_cfg(&c)
    };
    let r = stale(&mut s, &cfg);
    assert_eq!(ids(&r), [u.as_str()]);
    assert_eq!(r.pruned[0].reason, PruneReason::Useless);
    assert_eq!(text(&s, &u), USELESS_NOTICE);

    // Large suffix, not idle: kept.
    let mut s = c.load();
    let cfg = PruneConfig {
        supersede: false,
        suffix_token_limit: 200,
        ..stale_cfg(&c)
    };
    assert_eq!(stale(&mut s, &cfg).pruned_count, 0);

    // Tail rule.
    let mut c = Conv::new();
    let u = search(&mut c, &no_matches(), json!({}));
    c.user("next");
    let mut s = c.load();
    let r = stale(&mut s, &stale_cfg(&c));
    assert_eq!(ids(&r), [u.as_str()]);
    assert_eq!(text(&s, &u), USELESS_NOTICE);
}

#[test]
fn case09_useless_exemptions() {
    let mut c = Conv::new();
    let tiny = search(&mut c, "No matches found", json!({}));
    let failed = search(&mut c, &no_matches(), json!({"isError": true}));
    let protected = c.tool(
        "lsp",
        json!({"q": 1}),
        &no_matches(),
        json!({"useless": true}),
    );
    let kept = search(&mut c, &no_matches(), json!({}));
    c.user("next");
    let cfg = PruneConfig {
        protected_tools: vec!["skill".into(), "lsp".into()],
        now: c.last_ts() + 24 * 60 * MINUTE,
        suffix_token_limit: 0,
        ..stale_cfg(&c)
    };
    let mut s = c.load();
    let r = stale(&mut s, &cfg);
    assert_eq!(
        ids(&r),
        [kept.as_str()],
        "tiny, error and protected results stay"
    );
    for id in [&tiny, &failed, &protected] {
        assert!(!is_pruned(&s, id), "{id}");
    }
    // `pruneUseless: false` turns it off.
    let cfg = PruneConfig {
        prune_useless: false,
        ..cfg
    };
    assert_eq!(stale(&mut c.load(), &cfg).pruned_count, 0);
}

#[test]
fn case09_superseded_and_useless_gets_the_supersede_notice() {
    let mut c = Conv::new();
    let old = c.read_with("src/foo.ts", &no_matches(), json!({"useless": true}));
    c.read("src/foo.ts", &file_content());
    let mut s = c.load();
    let r = stale(&mut s, &stale_cfg(&c));
    assert_eq!(ids(&r), [old.as_str()]);
    assert_eq!(r.pruned[0].reason, PruneReason::Superseded);
    assert_eq!(text(&s, &old), SUPERSEDED_NOTICE);
    // Without the supersede key the same result is merely useless.
    let mut s = c.load();
    let cfg = PruneConfig {
        supersede: false,
        ..stale_cfg(&c)
    };
    let r = stale(&mut s, &cfg);
    assert_eq!(r.pruned[0].reason, PruneReason::Useless);
    assert_eq!(text(&s, &old), USELESS_NOTICE);
}

#[test]
fn case09_threshold_prune_blanks_useless_inside_the_protect_window() {
    let mut c = Conv::new();
    let u = search(&mut c, &no_matches(), json!({}));
    c.user("next");
    let cfg = PruneConfig {
        minimum_savings: 0,
        ..PruneConfig::default()
    };
    let mut s = c.load();
    let r = threshold(&mut s, &cfg);
    assert_eq!(ids(&r), [u.as_str()]);
    assert_eq!(text(&s, &u), USELESS_NOTICE);
    let cfg = PruneConfig {
        prune_useless: false,
        ..cfg
    };
    assert_eq!(threshold(&mut c.load(), &cfg).pruned_count, 0);
}

// ----- §10.3 case 10: small-result floor ---------------------------------------------------------

#[test]
fn case10_age_pruning_skips_results_under_50_tokens() {
    let mut c = Conv::new();
    let tiny = c.tool("bash", json!({"command": "true"}), "ok", json!({}));
    let large = c.tool(
        "bash",
        json!({"command": "cat"}),
        &file_content(),
        json!({}),
    );
    let cfg = PruneConfig {
        protect_tokens: 0,
        minimum_savings: 0,
        ..PruneConfig::default()
    };
    let mut s = c.load();
    let r = threshold(&mut s, &cfg);
    assert_eq!(ids(&r), [large.as_str()]);
    assert_eq!(r.pruned[0].notice, age_notice(r.pruned[0].tokens_before));
    assert_eq!(text(&s, &tiny), "ok");
    assert!(!is_pruned(&s, &tiny));
}

#[test]
fn case10_floor_is_exactly_50_tokens() {
    // 49 and 50 tokens: (bytes + 3) >> 2.
    let mut c = Conv::new();
    let t49 = c.tool("bash", json!({}), &"x".repeat(196), json!({}));
    let t50 = c.tool("bash", json!({}), &"x".repeat(200), json!({}));
    let cfg = PruneConfig {
        protect_tokens: 0,
        minimum_savings: 0,
        ..PruneConfig::default()
    };
    let mut s = c.load();
    let r = threshold(&mut s, &cfg);
    assert_eq!(ids(&r), [t50.as_str()]);
    assert_eq!(r.pruned[0].tokens_before, 50);
    assert!(!is_pruned(&s, &t49));
}

// ----- §10.3 case 11: warm-prefix guard and keep boundary ---------------------------------------

#[test]
fn case11_warm_prefix_guard() {
    // A superseded result pushed deep by BIG_TEXT.
    let mut c = Conv::new();
    let old = c.read("src/foo.ts", &file_content());
    c.read("src/foo.ts", &file_content());
    c.user(&big_text());
    let r = threshold(&mut c.load(), &threshold_cfg(true));
    assert_eq!(ids(&r), [old.as_str()], "pruned without the guard");
    let guarded = PruneConfig {
        cache_warm_suffix_tokens: Some(200),
        ..threshold_cfg(true)
    };
    let mut s = c.load();
    let before = s.to_bytes();
    assert_eq!(
        threshold(&mut s, &guarded).pruned_count,
        0,
        "kept with the guard"
    );
    assert_eq!(s.to_bytes(), before);

    // The same for a deep useless result.
    let mut c = Conv::new();
    let u = search(&mut c, &no_matches(), json!({}));
    c.user(&big_text());
    let r = threshold(&mut c.load(), &threshold_cfg(false));
    assert_eq!(ids(&r), [u.as_str()]);
    let guarded = PruneConfig {
        cache_warm_suffix_tokens: Some(200),
        ..threshold_cfg(false)
    };
    assert_eq!(threshold(&mut c.load(), &guarded).pruned_count, 0);

    // A tail supersede still prunes under a 100 000-token guard.
    let mut c = Conv::new();
    c.user(&big_text());
    let old = c.read("src/foo.ts", &file_content());
    c.read("src/foo.ts", &file_content());
    let guarded = PruneConfig {
        cache_warm_suffix_tokens: Some(100_000),
        ..threshold_cfg(true)
    };
    assert_eq!(ids(&threshold(&mut c.load(), &guarded)), [old.as_str()]);
}

#[test]
fn case11_keep_boundary_protects_entries_before_it() {
    let mut c = Conv::new();
    let r1 = c.read("src/foo.ts", &file_content());
    let boundary = c.user("resume here");
    let r2 = c.read("src/foo.ts", &file_content());
    c.read("src/foo.ts", &file_content());
    // Idle flush of the stale pass.
    let cfg = PruneConfig {
        keep_boundary: KeepBoundary::Entry(boundary.clone()),
        now: c.last_ts() + 24 * 60 * MINUTE,
        ..stale_cfg(&c)
    };
    let mut s = c.load();
    let r = stale(&mut s, &cfg);
    assert_eq!(ids(&r), [r2.as_str()]);
    assert!(!is_pruned(&s, &r1));
    // Threshold prune, everything old enough.
    let cfg = PruneConfig {
        keep_boundary: KeepBoundary::Entry(boundary),
        protect_tokens: 0,
        minimum_savings: 0,
        ..PruneConfig::default()
    };
    let mut s = c.load();
    let r = threshold(&mut s, &cfg);
    assert!(!ids(&r).contains(&r1.as_str()), "{:?}", ids(&r));
    assert!(ids(&r).contains(&r2.as_str()));
    // An unknown boundary id means the start of the branch.
    let cfg = PruneConfig {
        keep_boundary: KeepBoundary::Entry("nope".into()),
        ..cfg
    };
    assert!(ids(&threshold(&mut c.load(), &cfg)).contains(&r1.as_str()));
}

// ----- rules of §6.5 / §6.6 in isolation -------------------------------------------------------

#[test]
fn boundary_defaults_to_the_latest_compaction() {
    let mut c = Conv::new();
    let r1 = c.tool("bash", json!({}), &file_content(), json!({}));
    let kept = c.user("kept from here");
    let r2 = c.tool("bash", json!({}), &file_content(), json!({}));
    c.entry(
        "compaction",
        json!({"summary":"s","firstKeptEntryId": kept,"tokensBefore":1000}),
    );
    let r3 = c.tool("bash", json!({}), &file_content(), json!({}));
    let cfg = PruneConfig {
        protect_tokens: 0,
        minimum_savings: 0,
        ..PruneConfig::default()
    };
    let r = threshold(&mut c.load(), &cfg);
    assert_eq!(ids(&r), [r2.as_str(), r3.as_str()]);
    let cfg = PruneConfig {
        keep_boundary: KeepBoundary::Start,
        ..cfg
    };
    let r = threshold(&mut c.load(), &cfg);
    assert_eq!(ids(&r), [r1.as_str(), r2.as_str(), r3.as_str()]);
}

#[test]
fn protect_window_counts_tool_results_newest_first() {
    // Three 500-token results; a window of 600 keeps the newest two (the second is counted
    // while acc = 500 < 600), prunes the oldest.
    let mut c = Conv::new();
    let a = c.tool("bash", json!({}), &file_content(), json!({}));
    let b = c.tool("bash", json!({}), &file_content(), json!({}));
    let n = c.tool("bash", json!({}), &file_content(), json!({}));
    let s = c.load();
    let t = s.entry_tokens(s.index_of(&a).unwrap(), Default::default());
    assert_eq!(t, 500);
    let cfg = |protect: u64| PruneConfig {
        protect_tokens: protect,
        minimum_savings: 0,
        ..PruneConfig::default()
    };
    assert_eq!(ids(&threshold(&mut c.load(), &cfg(600))), [a.as_str()]);
    assert_eq!(ids(&threshold(&mut c.load(), &cfg(1000))), [a.as_str()]);
    assert_eq!(
        ids(&threshold(&mut c.load(), &cfg(1001))),
        Vec::<&str>::new()
    );
    assert_eq!(
        ids(&threshold(&mut c.load(), &cfg(500))),
        [a.as_str(), b.as_str()]
    );
    assert_eq!(
        ids(&threshold(&mut c.load(), &cfg(0))),
        [a.as_str(), b.as_str(), n.as_str()]
    );
    // Already pruned results still count toward the window.
    let mut s = c.load();
    threshold(&mut s, &cfg(1000));
    let r = threshold(&mut s, &cfg(1000));
    assert_eq!(
        r.pruned_count, 0,
        "the pruned result counts its notice only"
    );
}

#[test]
fn minimum_savings_gate_leaves_the_session_byte_identical() {
    let mut c = Conv::new();
    for _ in 0..4 {
        c.tool("bash", json!({}), &file_content(), json!({}));
    }
    let cfg = PruneConfig {
        protect_tokens: 0,
        ..PruneConfig::default()
    };
    let mut s = c.load();
    let before = s.to_bytes();
    let plan = plan_tool_outputs(
        &s,
        &PruneConfig {
            minimum_savings: 0,
            ..cfg.clone()
        },
    )
    .unwrap();
    assert_eq!(plan.candidates.len(), 4);
    assert!(plan.tokens_saved < 20_000);
    let r = threshold(&mut s, &cfg);
    assert_eq!((r.pruned_count, r.tokens_saved), (0, 0));
    assert_eq!(s.to_bytes(), before);
    // Exactly at the minimum it goes through.
    let cfg = PruneConfig {
        minimum_savings: plan.tokens_saved,
        ..cfg
    };
    assert_eq!(threshold(&mut s, &cfg).pruned_count, 4);
    assert_ne!(s.to_bytes(), before);
}

#[test]
fn protected_tools_skill_reads_and_plan_file() {
    let mut c = Conv::new();
    let skill = c.tool(
        "skill",
        json!({"name": "react"}),
        &file_content(),
        json!({}),
    );
    let skill_read = c.read("skill://react/SKILL.md", &file_content());
    let plan = c.read("local/plan.md:1-80", &file_content());
    let other = c.read("src/a.ts", &file_content());
    let bash = c.tool("bash", json!({}), &file_content(), json!({}));
    let cfg = PruneConfig {
        protect_tokens: 0,
        minimum_savings: 0,
        protected_path: Some("local/plan.md".into()),
        ..PruneConfig::default()
    };
    let mut s = c.load();
    let r = threshold(&mut s, &cfg);
    assert_eq!(ids(&r), [other.as_str(), bash.as_str()]);
    for id in [&skill, &skill_read, &plan] {
        assert!(!is_pruned(&s, id), "{id}");
    }
    // Without protection every one of them goes.
    let cfg = PruneConfig {
        protected_tools: vec![],
        protect_skill_reads: false,
        protected_path: None,
        ..cfg
    };
    assert_eq!(threshold(&mut c.load(), &cfg).pruned_count, 5);
}

#[test]
fn stale_pass_idle_versus_suffix_rule() {
    // Two stale reads: an old one deep in the branch and one near the tail.
    let mut c = Conv::new();
    let deep = c.read("src/a.ts", &file_content());
    c.read("src/a.ts", &file_content());
    c.user(&big_text());
    c.user(&big_text());
    let tail = c.read("src/b.ts", &file_content());
    c.read("src/b.ts", &file_content());
    let not_idle = PruneConfig {
        idle_flush_ms: 30 * MINUTE as u64,
        now: c.last_ts() + 30 * MINUTE - 1,
        ..stale_cfg(&c)
    };
    let r = stale(&mut c.load(), &not_idle);
    assert_eq!(
        ids(&r),
        [tail.as_str()],
        "only the tail within 8 000 tokens"
    );
    let idle = PruneConfig {
        now: c.last_ts() + 30 * MINUTE,
        ..not_idle
    };
    let r = stale(&mut c.load(), &idle);
    assert_eq!(ids(&r), [deep.as_str(), tail.as_str()]);
    // No minimum savings in the stale pass: a 39-token superseded read goes too.
    let mut c = Conv::new();
    let small = c.read("src/a.ts", &"y".repeat(156));
    c.read("src/a.ts", "z");
    let r = stale(&mut c.load(), &stale_cfg(&c));
    assert_eq!(ids(&r), [small.as_str()]);
    assert_eq!(r.pruned[0].tokens_before, 39);
    assert_eq!(r.tokens_saved, 28);
}

#[test]
fn idle_needs_a_numeric_timestamp_on_the_last_message() {
    let mut c = Conv::new();
    let old = c.read("src/a.ts", &file_content());
    c.read("src/a.ts", &file_content());
    c.push(json!({"role":"user","content":big_text(),"timestamp":"yesterday"}));
    let cfg = PruneConfig {
        suffix_token_limit: 0,
        now: c.last_ts() + 24 * 60 * MINUTE,
        ..stale_cfg(&c)
    };
    assert_eq!(stale(&mut c.load(), &cfg).pruned_count, 0);
    c.user("now numeric");
    let cfg = PruneConfig {
        now: c.last_ts() + 24 * 60 * MINUTE,
        ..cfg
    };
    assert_eq!(ids(&stale(&mut c.load(), &cfg)), [old.as_str()]);
}

#[test]
fn context_omitted_results_are_never_touched() {
    let mut c = Conv::new();
    let hidden = c.read_with("src/a.ts", &file_content(), json!({"contextOmitted": true}));
    let useless_hidden = search(&mut c, &no_matches(), json!({"contextOmitted": true}));
    let old = c.tool(
        "bash",
        json!({}),
        &file_content(),
        json!({"contextOmitted": true}),
    );
    c.read("src/a.ts", &file_content());
    let cfg = PruneConfig {
        protect_tokens: 0,
        minimum_savings: 0,
        supersede: true,
        ..PruneConfig::default()
    };
    let mut s = c.load();
    let r = threshold(&mut s, &cfg);
    assert_eq!(r.pruned_count, 1, "only the newest visible read (age)");
    for id in [&hidden, &useless_hidden, &old] {
        assert!(!is_pruned(&s, id));
    }
}

#[test]
fn collectors_preview_without_mutating() {
    let mut c = Conv::new();
    let old = c.read_with("src/a.ts", &no_matches(), json!({"useless": true}));
    let u = search(&mut c, &no_matches(), json!({}));
    c.read("src/a.ts", &file_content());
    let s = c.load();
    let before = s.to_bytes();
    let cfg = PruneConfig::default();
    let sup = collect_superseded(&s, &cfg).unwrap();
    assert_eq!(
        sup.iter().map(|x| x.id.as_str()).collect::<Vec<_>>(),
        [old.as_str()]
    );
    let useless = collect_useless(
        &s,
        &PruneConfig {
            supersede: true,
            ..cfg.clone()
        },
    )
    .unwrap();
    assert_eq!(
        useless.iter().map(|x| x.id.as_str()).collect::<Vec<_>>(),
        [u.as_str()]
    );
    // Without the supersede key the superseded result counts as useless.
    let useless = collect_useless(&s, &cfg).unwrap();
    assert_eq!(useless.len(), 2);
    let plan = plan_superseded_tool_results(
        &s,
        &PruneConfig {
            supersede: true,
            now: c.last_ts(),
            ..cfg
        },
    )
    .unwrap();
    assert_eq!(plan.candidates.len(), 2);
    assert_eq!(s.to_bytes(), before, "planning changes nothing");
}

#[test]
fn apply_writes_only_the_pruned_lines_and_refuses_stale_plans() {
    let mut c = Conv::new();
    let old = c.read("src/a.ts", &file_content());
    c.read("src/a.ts", &file_content());
    let mut s = c.load();
    let before = s.to_bytes();
    let plan = plan_superseded_tool_results(&s, &stale_cfg(&c)).unwrap();
    let report = apply_prune(&mut s, &plan).unwrap();
    assert_eq!(ids(&report), [old.as_str()]);
    let after = s.to_bytes();
    let changed = changed_lines(&before, &after);
    let line = s.entries()[s.index_of(&old).unwrap()].line_index() as usize;
    assert_eq!(changed, [line]);
    // Content replaced in place; prunedAt appended at the end of the message; other fields kept.
    let text_after = String::from_utf8(after.clone()).unwrap();
    let l = text_after.lines().nth(line).unwrap();
    let v: Value = serde_json::from_str(l).unwrap();
    assert_eq!(
        v["message"]["content"],
        json!([{"type":"text","text":SUPERSEDED_NOTICE}])
    );
    assert_eq!(v["message"]["prunedAt"], json!(c.last_ts()));
    assert_eq!(v["message"]["toolCallId"], json!("call-1"));
    assert!(
        l.ends_with(&format!(",\"prunedAt\":{}}}}}", c.last_ts())),
        "{l}"
    );
    // The session reloads with the prune.
    let back = Session::load(
        after.clone(),
        LoadOptions::with_ids(Box::new(SequentialIds::new())),
    )
    .unwrap();
    assert!(is_pruned(&back, &old));
    // The pruned entry's estimate is the notice's now.
    let i = s.index_of(&old).unwrap();
    assert_eq!(s.entry_tokens(i, Default::default()), 11);
    assert!(s.result_facts(i).is_some_and(|f| f.pruned));
    // Applying the same plan again is stale; nothing changes.
    match apply_prune(&mut s, &plan) {
        Err(Error::StalePlan { .. }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(s.to_bytes(), after);
    // A plan naming a non-tool-result entry is stale too; nothing changes.
    let mut bad = plan.clone();
    bad.candidates[0].index = 0;
    bad.candidates[0].id = s.entries()[0].id().to_string();
    assert!(matches!(
        apply_prune(&mut s, &bad),
        Err(Error::StalePlan { .. })
    ));
    assert_eq!(s.to_bytes(), after);
}

#[test]
fn a_plan_with_a_duplicate_changes_nothing() {
    let mut c = Conv::new();
    c.read("src/a.ts", &file_content());
    c.read("src/a.ts", &file_content());
    let mut s = c.load();
    let before = s.to_bytes();
    let mut plan = plan_superseded_tool_results(&s, &stale_cfg(&c)).unwrap();
    plan.candidates.push(plan.candidates[0].clone());
    assert!(matches!(
        apply_prune(&mut s, &plan),
        Err(Error::InvalidArgument { .. })
    ));
    assert_eq!(s.to_bytes(), before);
}

#[test]
fn prunes_the_branch_of_a_given_leaf() {
    let mut c = Conv::new();
    let old = c.read("src/a.ts", &file_content());
    let fork = c.read("src/a.ts", &file_content());
    // A side branch after `old`: the active leaf ends up there.
    c.last = Some(old.clone());
    let side = c.user("side branch");
    let mut s = c.load();
    assert_eq!(s.leaf_id(), Some(side.as_str()));
    // On the active branch `old` is the only read: nothing is stale.
    assert_eq!(stale(&mut s, &stale_cfg(&c)).pruned_count, 0);
    let cfg = PruneConfig {
        leaf: Some(fork.clone()),
        ..stale_cfg(&c)
    };
    assert_eq!(ids(&stale(&mut s, &cfg)), [old.as_str()]);
    let cfg = PruneConfig {
        leaf: Some("missing".into()),
        ..stale_cfg(&c)
    };
    assert!(matches!(
        prune_superseded_tool_results(&mut s, &cfg),
        Err(Error::UnknownEntry { .. })
    ));
}

#[test]
fn results_pair_with_calls_beyond_the_previous_assistant() {
    // The call of `first` sits two assistants back (an interrupted turn in between): the
    // lookup falls back to every call on the branch.
    let mut c = Conv::new();
    let call = c.call("read", json!({"path": "src/a.ts"}));
    c.push(
        json!({"role":"assistant","content":[{"type":"text","text":"still working"}],
        "stopReason":"stop"}),
    );
    let first = c.push(
        json!({"role":"toolResult","toolCallId":call,"toolName":"read",
        "content":[{"type":"text","text":file_content()}],"isError":false}),
    );
    c.read("src/a.ts", &file_content());
    let mut s = c.load();
    assert_eq!(ids(&stale(&mut s, &stale_cfg(&c))), [first.as_str()]);
}

#[test]
fn repeated_call_ids_pair_with_the_nearest_call() {
    // Two turns reuse the call id `dup` (some providers number calls per turn): each result
    // pairs with the call of its own turn.
    let mut c = Conv::new();
    let turn = |c: &mut Conv, path: &str| {
        c.push(
            json!({"role":"assistant","content":[{"type":"toolCall","id":"dup","name":"read",
            "arguments":{"path":path}}],"stopReason":"toolUse"}),
        );
        c.push(
            json!({"role":"toolResult","toolCallId":"dup","toolName":"read",
            "content":[{"type":"text","text":file_content()}],"isError":false}),
        )
    };
    let x = turn(&mut c, "src/x.ts");
    turn(&mut c, "src/y.ts");
    c.read("src/x.ts", &file_content());
    assert_eq!(ids(&stale(&mut c.load(), &stale_cfg(&c))), [x.as_str()]);
}

// ----- configuration -----------------------------------------------------------------------------

#[test]
fn config_from_json() {
    let c = PruneConfig::from_json(&json!({
        "protectTokens": 1000, "minimumSavings": 0,
        "protectedTools": ["skill", "isSkillReadToolResult", "lsp"],
        "pruneUseless": false, "supersedeKey": "readToolSupersedeKey",
        "cacheWarmSuffixTokens": 8000, "keepBoundaryId": "e005", "idleFlushMs": 5_400_000,
        "suffixTokenLimit": 0, "now": 1_800_000_000_000u64, "protectedPath": "plan.md",
        "leafId": "e009"
    }))
    .unwrap();
    assert_eq!(c.protect_tokens, 1000);
    assert_eq!(c.minimum_savings, 0);
    assert_eq!(c.protected_tools, ["skill", "lsp"]);
    assert!(c.protect_skill_reads);
    assert!(!c.prune_useless);
    assert!(c.supersede);
    assert_eq!(c.cache_warm_suffix_tokens, Some(8000));
    assert_eq!(c.keep_boundary, KeepBoundary::Entry("e005".into()));
    assert_eq!(c.idle_flush_ms, 5_400_000);
    assert_eq!(c.suffix_token_limit, 0);
    assert_eq!(c.now, 1_800_000_000_000);
    assert_eq!(c.protected_path.as_deref(), Some("plan.md"));
    assert_eq!(c.leaf.as_deref(), Some("e009"));

    let c = PruneConfig::from_json(&json!({"protectedTools": ["bash"], "keepBoundaryId": false,
        "supersedeKey": false, "cacheWarmSuffixTokens": null}))
    .unwrap();
    assert_eq!(c.protected_tools, ["bash"]);
    assert!(!c.protect_skill_reads);
    assert_eq!(c.keep_boundary, KeepBoundary::Start);
    assert!(!c.supersede);
    assert_eq!(c.cache_warm_suffix_tokens, None);

    let d = PruneConfig::from_json(&Value::Null).unwrap();
    assert_eq!(format!("{d:?}"), format!("{:?}", PruneConfig::default()));
}

#[test]
fn bad_config_values_name_the_field() {
    for (input, field) in [
        (json!({"protectTokens": -1}), "protectTokens"),
        (json!({"minimumSavings": 1.5}), "minimumSavings"),
        (json!({"protectedTools": "skill"}), "protectedTools"),
        (json!({"protectedTools": [1]}), "protectedTools"),
        (json!({"pruneUseless": "yes"}), "pruneUseless"),
        (json!({"supersedeKey": "myKey"}), "supersedeKey"),
        (
            json!({"cacheWarmSuffixTokens": "8k"}),
            "cacheWarmSuffixTokens",
        ),
        (json!({"keepBoundaryId": true}), "keepBoundaryId"),
        (json!({"idleFlushMs": -5}), "idleFlushMs"),
        (json!({"now": "today"}), "now"),
        (json!({"protectedPath": ""}), "protectedPath"),
        (json!({"protectToken": 5}), "protectToken"),
    ] {
        match PruneConfig::from_json(&input) {
            Err(Error::Settings { field: f, .. }) => assert_eq!(f, field, "{input}"),
            other => panic!("{input}: {other:?}"),
        }
    }
    assert!(matches!(
        PruneConfig::from_json(&json!([1])),
        Err(Error::Settings { .. })
    ));
}

#[test]
fn session_presets_follow_the_settings() {
    let settings = CompactionSettings::default();
    let stale = PruneConfig::session_stale_pass(&settings, 7, false);
    assert!(stale.supersede && stale.prune_useless);
    assert_eq!(stale.idle_flush_ms, 90 * 60 * 1000);
    assert_eq!(stale.suffix_token_limit, 8_000);
    assert_eq!(stale.now, 7);
    assert_eq!(
        PruneConfig::session_stale_pass(&settings, 7, true).suffix_token_limit,
        0
    );
    let off = CompactionSettings {
        supersede_reads: false,
        drop_useless: false,
        ..settings.clone()
    };
    let stale_off = PruneConfig::session_stale_pass(&off, 7, false);
    assert!(!stale_off.supersede && !stale_off.prune_useless);

    let t = PruneConfig::session_threshold(&settings, 7, false);
    assert!(!t.supersede && t.prune_useless);
    assert_eq!(t.cache_warm_suffix_tokens, Some(8_000));
    assert_eq!((t.protect_tokens, t.minimum_savings), (40_000, 20_000));
    assert_eq!(t.keep_boundary, KeepBoundary::LatestCompaction);
    assert_eq!(
        PruneConfig::session_threshold(&settings, 7, true).cache_warm_suffix_tokens,
        Some(0)
    );

    // Both gates off: the stale pass does nothing even on stale reads.
    let mut c = Conv::new();
    c.read("src/a.ts", &file_content());
    c.read("src/a.ts", &file_content());
    assert_eq!(
        stale_pass_count(
            &c,
            &PruneConfig::session_stale_pass(&off, c.last_ts(), false)
        ),
        0
    );
    assert_eq!(
        stale_pass_count(
            &c,
            &PruneConfig::session_stale_pass(&settings, c.last_ts(), false)
        ),
        1
    );
}

fn stale_pass_count(c: &Conv, cfg: &PruneConfig) -> usize {
    stale(&mut c.load(), cfg).pruned_count
}

#[test]
fn report_json_shape() {
    let mut c = Conv::new();
    c.read("src/a.ts", &file_content());
    c.read("src/a.ts", &file_content());
    let r = stale(&mut c.load(), &stale_cfg(&c));
    let j = r.to_json();
    assert_eq!(j["prunedCount"], json!(1));
    assert_eq!(j["tokensSaved"], json!(r.tokens_saved));
    assert_eq!(j["pruned"][0]["toolName"], json!("read"));
    assert_eq!(j["pruned"][0]["reason"], json!("superseded"));
    assert_eq!(j["pruned"][0]["notice"], json!(SUPERSEDED_NOTICE));
    assert_eq!(
        j["pruned"][0]["tokensBefore"],
        json!(r.pruned[0].tokens_before)
    );
}

// ----- conformance: prune.json ------------------------------------------------------------------

#[test]
fn conformance_prune_passes() {
    let expected = common::fixture_json("prune.json");
    let passes = expected["passes"].as_object().expect("passes");
    assert_eq!(passes.len(), 3);
    for (name, pass) in passes {
        let mut s = common::fixture_session();
        let tool_results = s
            .active_path()
            .iter()
            .filter(|&&i| s.entries()[i].role() == Some(ctxfold::Role::ToolResult))
            .count();
        assert_eq!(
            tool_results as u64,
            expected["toolResultsOnBranch"].as_u64().unwrap()
        );
        let mut cfg = PruneConfig::from_json(&pass["config"])
            .unwrap_or_else(|e| panic!("{name}: config: {e}"));
        if pass["config"].get("now").is_none() {
            cfg.now = 1_800_000_000_000;
        }
        let before = s.to_bytes();
        let report = match name.as_str() {
            "app-stale" => prune_superseded_tool_results(&mut s, &cfg),
            _ => prune_tool_outputs(&mut s, &cfg),
        }
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = &pass["result"];
        assert_eq!(
            (report.pruned_count as u64, report.tokens_saved),
            (
                want["prunedCount"].as_u64().unwrap(),
                want["tokensSaved"].as_u64().unwrap()
            ),
            "{name}: totals"
        );
        let want_pruned = pass["pruned"].as_array().expect("pruned list");
        assert_eq!(report.pruned.len(), want_pruned.len(), "{name}");
        for (got, want) in report.pruned.iter().zip(want_pruned) {
            let ctx = format!("{name} {}", want["id"]);
            assert_eq!(got.id, want["id"].as_str().unwrap(), "{ctx}");
            assert_eq!(
                got.index as u64,
                want["branchIndex"].as_u64().unwrap(),
                "{ctx}"
            );
            assert_eq!(got.tool_name, want["toolName"].as_str().unwrap(), "{ctx}");
            assert_eq!(
                got.tool_call_id,
                want["toolCallId"].as_str().unwrap(),
                "{ctx}"
            );
            assert_eq!(
                got.tokens_before,
                want["tokensBefore"].as_u64().unwrap(),
                "{ctx}"
            );
            assert_eq!(got.notice, want["notice"].as_str().unwrap(), "{ctx}");
        }
        // Only the pruned lines changed, and they load back pruned with their notices.
        let after = s.to_bytes();
        let mut want_lines: Vec<usize> = report
            .pruned
            .iter()
            .map(|p| s.entries()[p.index].line_index() as usize)
            .collect();
        want_lines.sort_unstable();
        assert_eq!(changed_lines(&before, &after), want_lines, "{name}");
        let back = Session::load(after, LoadOptions::with_ids(Box::new(SequentialIds::new())))
            .expect("reloads");
        for p in &report.pruned {
            let r = result_of(&back, &p.id);
            assert_eq!(r.pruned_at, Some(cfg.now as f64), "{name} {}", p.id);
            assert_eq!(
                r.content,
                Content::Blocks(vec![ContentBlock::Text {
                    text: p.notice.clone()
                }]),
                "{name} {}",
                p.id
            );
        }
    }
}
