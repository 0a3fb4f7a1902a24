//! Cache-aware maintenance (issue 39 item 5): the threshold prune waits for a break while the
//! provider's cache is warm, a rewrite names the first message it changes, and the projection
//! of an unchanged prefix stays byte-identical from request to request.

use ctxfold::context::convert::convert_to_llm;
use ctxfold::context::{build_context, BuildOptions};
use ctxfold::pruning::{apply_prune_plan, plan_tool_outputs, PruneConfig};
use ctxfold::session::message::AssistantMessage;
use ctxfold::session::{LoadOptions, SequentialIds};
use ctxfold::settings::CompactionSettings;
use ctxfold::triggers::*;
use ctxfold::Session;
use ctxfold_testkit::{generate, GenOptions};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{json, Value};

const MINUTE: i64 = 60_000;

fn manager(v: Value) -> ContextManager {
    ContextManager::new(CompactionSettings::from_json(&v).unwrap())
}

fn model(window: u64) -> ModelInfo {
    ModelInfo {
        provider: "anthropic".into(),
        id: "claude-sonnet-4-5".into(),
        context_window: window,
        max_output_tokens: 32_000,
        accepts_images: true,
    }
}

/// A finished answer at `at` (ms) whose usage puts the context at `context` tokens.
fn answer(context: u64, at: i64) -> AssistantMessage {
    let v = json!({"role": "assistant", "provider": "anthropic", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "done"}], "stopReason": "stop", "timestamp": at,
        "usage": {"input": context - 100, "output": 100, "cacheRead": 0, "cacheWrite": 0,
                  "totalTokens": context}});
    match ctxfold::AgentMessage::parse(&v.to_string(), None).unwrap() {
        ctxfold::AgentMessage::Assistant(a) => a,
        other => panic!("not an assistant: {other:?}"),
    }
}

/// A request sent at `now` to `m`.
fn request(cm: &mut ContextManager, m: &ModelInfo, now: i64) {
    cm.before_request(StepInput {
        stored_tokens: Some(1_000),
        ..StepInput::new(m, now)
    });
}

#[test]
fn the_threshold_prune_waits_while_the_cache_is_warm_unless_the_window_needs_it() {
    let m = model(200_000);
    let mut cm = manager(json!({}));
    assert!(cm.settings().cache_aware, "on by default");
    request(&mut cm, &m, 1_000);
    // Under the compaction point (200,000 − 16,384), a reply a second later: the cache the
    // request wrote is warm, the prune waits.
    cm.on_reply(answer(50_000, 2_000));
    assert_eq!(cm.reply_prune(None), None, "a warm cache is not rewritten");
    // Over it: the window needs the room, the prune runs as without `cacheAware`.
    cm.on_reply(answer(190_000, 2_000));
    assert_eq!(
        cm.reply_prune(None).map(|p| p.pass),
        Some(PrunePass::Threshold)
    );
    // The reply came after the cache's lifetime: nothing to keep warm.
    cm.on_reply(answer(50_000, 1_000 + 5 * MINUTE));
    assert!(cm.reply_prune(None).is_some(), "a cold cache is rewritten");
    // `cacheAware: false` prunes on every reply (the reference's policy).
    let mut off = manager(json!({"cacheAware": false}));
    request(&mut off, &m, 1_000);
    off.on_reply(answer(50_000, 2_000));
    assert!(off.reply_prune(None).is_some());
    assert!(!off.settings().cache_aware);
    assert_eq!(off.break_prune(None, 1_000 + 60 * MINUTE), None);
}

#[test]
fn the_rewrites_that_waited_run_at_the_next_break() {
    let w = PRUNE_WINDOWS;
    for (window, least) in [
        (200_000u64, 20_000u64),
        (1_000_000, 100_000),
        (32_000, 20_000),
    ] {
        let mut cm = manager(json!({}));
        assert_eq!(
            cm.break_prune(None, 0),
            None,
            "no request yet: no cache to wait for"
        );
        request(&mut cm, &model(window), 10_000);
        assert_eq!(
            cm.break_prune(None, 10_000 + 5 * MINUTE - 1),
            None,
            "still warm"
        );
        let p = cm
            .break_prune(None, 10_000 + 5 * MINUTE)
            .expect("a break once the cache is cold");
        assert_eq!(p.pass, PrunePass::Threshold);
        assert_eq!(
            p.windows,
            [
                ("protectTokens", w.protect_tokens),
                ("minimumSavings", least)
            ],
            "at least a tenth of the window, no warm-prefix guard"
        );
        // The next request writes the cache again.
        request(&mut cm, &model(window), 10_000 + 5 * MINUTE);
        assert_eq!(cm.break_prune(None, 10_000 + 6 * MINUTE), None);
    }
}

fn load(bytes: Vec<u8>) -> Session {
    Session::load(bytes, LoadOptions::with_ids(Box::new(SequentialIds::new()))).expect("load")
}

/// The LLM messages of the context at the leaf, each as its JSON text.
fn projection(s: &Session) -> Vec<String> {
    let ctx = build_context(s, &BuildOptions::default()).expect("build");
    convert_to_llm(s, &ctx)
        .iter()
        .map(|v| serde_json::to_string(v).unwrap())
        .collect()
}

fn text_turns(n: usize) -> Session {
    let mut s = Session::create(
        ctxfold::session::NewSession {
            id: "s".into(),
            cwd: "/w".into(),
            now: 0,
            parent_session: None,
        },
        Box::new(SequentialIds::new()),
    );
    for i in 0..n {
        s.append_message(json!({"role": "user", "content": format!("step {i}")}), 0)
            .unwrap();
        let call = format!("c{i}");
        s.append_message(
            json!({"role": "assistant", "provider": "openai", "model": "gpt-5",
                "api": "openai-responses", "stopReason": "toolUse", "timestamp": 0,
                "content": [{"type": "thinking", "thinking": "look"},
                            {"type": "toolCall", "id": call, "name": "read",
                             "arguments": {"path": format!("f{i}.rs")}}]}),
            0,
        )
        .unwrap();
        s.append_message(
            json!({"role": "toolResult", "toolCallId": call, "toolName": "read",
                "content": [{"type": "text", "text": "line of code\n".repeat(2_000)}],
                "isError": false, "timestamp": 0}),
            0,
        )
        .unwrap();
    }
    s
}

/// Prunes every result it can (no protection, no minimum, no warm guard).
fn prune_all(s: &mut Session) -> Option<(String, u64)> {
    let cfg = PruneConfig {
        protect_tokens: 0,
        minimum_savings: 0,
        cache_warm_suffix_tokens: None,
        ..PruneConfig::default()
    };
    let plan = plan_tool_outputs(s, &cfg).expect("plan");
    let first = plan.first_changed().map(|(_, id)| id.to_string())?;
    let r = apply_prune_plan(s, plan).expect("apply");
    Some((first, r.tokens_saved))
}

#[test]
fn a_prune_names_the_first_message_it_changed_and_its_cache_cost() {
    let mut s = text_turns(4);
    let before = projection(&s);
    let (first, freed) = prune_all(&mut s).expect("something to prune");
    let after = projection(&s);
    let openai = cache_pricing("openai", Some("openai-responses"));
    let (at, f) = rewrite_forecast(&s, &first, freed, openai)
        .unwrap()
        .expect("the entry is in the context");
    assert_eq!(at.entry_id, first);
    // user, assistant, toolResult: the first result is the third message.
    assert_eq!(at.message_index, 2);
    assert_eq!(before[..2], after[..2]);
    assert_ne!(before[2], after[2]);
    // Three assistant turns with thinking follow it; OpenAI drops their reasoning.
    assert_eq!(f.reasoning_at_risk, 3);
    assert_eq!(f.tokens_freed, freed);
    assert!(f.rewritten_tokens > 0 && f.rewritten_tokens < freed);
    let anthropic = cache_pricing("anthropic", None);
    let (_, g) = rewrite_forecast(&s, &first, freed, anthropic)
        .unwrap()
        .unwrap();
    assert_eq!(g.reasoning_at_risk, 0);
    assert_eq!(g.rewritten_tokens, f.rewritten_tokens);
    assert_eq!(rewrite_forecast(&s, "nope", 1, anthropic).unwrap(), None);
}

/// Any maintenance action (issue 39 item 5): the earliest of the entries it changed decides,
/// whatever their order; an empty list is a new session's whole request; entries unknown or
/// outside the context give nothing.
#[test]
fn an_action_changes_the_request_from_its_earliest_entry() {
    let mut s = text_turns(4);
    let ids: Vec<String> = s
        .entries()
        .iter()
        .filter(|e| e.role().is_some())
        .map(|e| e.id().to_string())
        .collect();
    let p = cache_pricing("openai", Some("openai-responses"));
    let (late, _) = change_forecast(&s, &[ids[4].as_str()], 0, p)
        .unwrap()
        .unwrap();
    let (both, _) = change_forecast(&s, &[ids[4].as_str(), ids[2].as_str()], 0, p)
        .unwrap()
        .unwrap();
    assert_eq!(late.message_index, 4);
    assert_eq!(
        (both.message_index, both.entry_id.as_str()),
        (2, ids[2].as_str())
    );
    let (whole, w) = change_forecast(&s, &[], 0, p).unwrap().unwrap();
    assert_eq!(
        (whole.message_index, whole.entry_id.as_str()),
        (0, ids[0].as_str())
    );
    let (_, from_two) = change_forecast(&s, &[ids[2].as_str()], 0, p)
        .unwrap()
        .unwrap();
    assert!(w.rewritten_tokens > from_two.rewritten_tokens);
    assert_eq!(change_forecast(&s, &["nope"], 0, p).unwrap(), None);
    // After a prune, from its first pruned result on, as `rewrite_forecast` says.
    let (first, _) = prune_all(&mut s).unwrap();
    let (at, _) = change_forecast(&s, &[first.as_str()], 0, p)
        .unwrap()
        .unwrap();
    assert_eq!(at.entry_id, first);
}

proptest! {
    #![proptest_config(Config { cases: 24, ..Config::default() })]

    /// Over generated sessions: appending keeps the projection of what was there byte for byte;
    /// a rewrite the policy holds back changes nothing; a rewrite that runs changes nothing
    /// before the `prefixChangedAt` it reports.
    #[test]
    fn an_unchanged_prefix_projects_byte_for_byte(seed in any::<u64>(), entries in 20usize..160) {
        let bytes = generate(&GenOptions {
            seed,
            entries,
            compaction_every_tokens: Some(40_000),
            images: false,
            size_scale: 0.2,
            ..GenOptions::default()
        });
        let mut s = load(bytes);
        let first = projection(&s);
        s.append_message(json!({"role": "user", "content": "one more thing"}), 1).unwrap();
        let second = projection(&s);
        prop_assert!(second.len() > first.len() || first.is_empty());
        prop_assert_eq!(&second[..first.len()], &first[..]);
        // The policy holds the rewrite back (warm cache, under the threshold): no prune runs.
        let m = model(1_000_000);
        let mut cm = manager(json!({}));
        request(&mut cm, &m, 1_000);
        cm.on_reply(answer(10_000, 2_000));
        prop_assert!(cm.reply_prune(None).is_none());
        prop_assert_eq!(projection(&s), second.clone());
        // A rewrite that runs: everything before `prefixChangedAt` is as it was.
        if let Some((id, freed)) = prune_all(&mut s) {
            let third = projection(&s);
            let p = cache_pricing("anthropic", None);
            if let Some((at, f)) = rewrite_forecast(&s, &id, freed, p).unwrap() {
                prop_assert!(at.message_index <= second.len());
                prop_assert_eq!(&third[..at.message_index], &second[..at.message_index]);
                prop_assert_ne!(&third, &second);
                prop_assert_eq!(f.tokens_freed, freed);
            }
        }
    }
}

proptest! {
    #![proptest_config(Config { cases: 24, ..Config::default() })]

    /// Over generated sessions and any set of its entries (issue 39 item 5): the change starts
    /// at the earliest of them, whatever their order or repeats; ids the session lacks are
    /// ignored unless nothing else is given; an empty set is the whole request; the figures
    /// never exceed the request's.
    #[test]
    fn a_set_of_changed_entries_is_its_earliest(
        seed in any::<u64>(),
        entries in 20usize..120,
        picks in proptest::collection::vec(any::<prop::sample::Index>(), 1..6),
        unknown in any::<bool>(),
    ) {
        let bytes = generate(&GenOptions {
            seed,
            entries,
            compaction_every_tokens: Some(40_000),
            images: false,
            size_scale: 0.2,
            ..GenOptions::default()
        });
        let s = load(bytes);
        let ids: Vec<String> = s.entries().iter().map(|e| e.id().to_string()).collect();
        let mut chosen: Vec<&str> = picks.iter().map(|i| ids[i.index(ids.len())].as_str()).collect();
        let earliest = picks.iter().map(|i| i.index(ids.len())).min().unwrap();
        if unknown {
            chosen.push("not-an-entry");
        }
        chosen.reverse();
        let p = cache_pricing("openai", Some("openai-responses"));
        let set = change_forecast(&s, &chosen, 7, p).unwrap();
        let one = rewrite_forecast(&s, &ids[earliest], 7, p).unwrap();
        prop_assert_eq!(&set, &one);
        let whole = change_forecast(&s, &[], 7, p).unwrap();
        let llm = projection(&s);
        match whole {
            None => prop_assert!(llm.is_empty()),
            Some((at, w)) => {
                prop_assert_eq!(at.message_index, 0);
                if let Some((at, f)) = set {
                    prop_assert!(at.message_index < llm.len());
                    prop_assert!(f.rewritten_tokens <= w.rewritten_tokens);
                    prop_assert!(f.reasoning_at_risk <= w.reasoning_at_risk);
                }
            }
        }
    }
}

/// The agent simulator with the Maintainer's prunes and cache accounting keeps its promises
/// with `cacheAware` on and off (every prune is checked against its `prefixChangedAt`).
#[test]
fn the_simulator_accounts_for_the_cache_and_keeps_its_promises() {
    use ctxfold_testkit::agent::{run_cached, Scenario};
    for seed in [1u64, 2, 3] {
        let s = Scenario {
            user_turns: 12,
            ..Scenario::random(seed)
        };
        for on in [true, false] {
            let (report, ledger) = run_cached(&s, on).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(ledger.requests, report.requests, "seed {seed}");
            assert!(ledger.written > 0, "the first request writes the cache");
        }
    }
}

/// The bench of docs/performance.md: cache writes per 100 user turns of the simulator with
/// `cacheAware` on and off (`cargo test --test it cache_bench -- --ignored --nocapture`).
#[test]
#[ignore]
fn cache_bench() {
    use ctxfold_testkit::agent::{run_cached, Scenario};
    let seeds: u64 = std::env::var("CACHE_BENCH_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    for on in [true, false] {
        let (mut turns, mut written, mut read, mut rewrites, mut cost) =
            (0usize, 0u64, 0u64, 0u64, 0.0);
        for seed in 0..seeds {
            let s = Scenario::random(seed);
            let (_, l) = run_cached(&s, on).unwrap_or_else(|e| panic!("{e}"));
            turns += s.user_turns;
            written += l.written;
            read += l.read;
            rewrites += l.rewrites;
            cost += l.cost;
        }
        let per = |x: f64| x * 100.0 / turns as f64;
        println!(
            "cacheAware {on}: {seeds} runs, {turns} user turns; per 100 turns: {:.0} tokens written, {:.0} read, {:.1} prunes, cost {:.0} input tokens",
            per(written as f64),
            per(read as f64),
            per(rewrites as f64),
            per(cost)
        );
    }
}

/// A shake names the first entry it rewrites: nothing of the request before it changes.
#[test]
fn a_shake_names_the_first_entry_it_rewrites() {
    use ctxfold::shake::{apply_shake, plan_shake, Preset, ShakeConfig};
    let mut s = text_turns(4);
    let plan = plan_shake(&s, &ShakeConfig::preset(Preset::Aggressive)).unwrap();
    let first = plan.first_changed().expect("regions to shake");
    assert_eq!(Some(first), plan.regions.iter().map(|r| r.index).min());
    let id = s.entries()[first].id().to_string();
    let before = projection(&s);
    let r = apply_shake(&mut s, &plan, None, 1).unwrap();
    let after = projection(&s);
    let p = cache_pricing("anthropic", None);
    let (at, _) = rewrite_forecast(&s, &id, r.tokens_freed, p)
        .unwrap()
        .expect("in the context");
    assert_eq!(before[..at.message_index], after[..at.message_index]);
    assert_ne!(before[at.message_index], after[at.message_index]);
}
