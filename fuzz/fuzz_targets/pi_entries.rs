//! pi-family entries (issue 40 item 4) from arbitrary bytes read as a session file: whatever
//! loads is saved back byte for byte; at several leaves the projection (`context_edit`,
//! `usage`, system messages and checkpoints, retain-none compactions), the context built
//! from it, the pi conversion, the projected token estimate, the pi preparation at several
//! budgets and the raw cut point never panic, and agree with each other: the context is the
//! projection's messages, the kept entry is one of the projection's, and the preparation
//! never summarizes a system message. Through the operations (issue 40 item 4): a plan of
//! the path (pi's summarizer input, reasoning hint and output limit) answered and committed,
//! and a navigation with a branch summary of the branch being left, each on a copy that
//! reloads to the bytes it saves; a refusal leaves the copy unchanged.
#![no_main]
use ctxfold::compaction::prepare::{find_pi_cut_point_on_entries, prepare_pi_compaction};
use ctxfold::context::convert::convert_pi;
use ctxfold::context::projection::{context_entries, project};
use ctxfold::context::{build_context, BuildOptions, LeafSelector};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = ctxfold::Session::load(data.to_vec(), Default::default()) else {
        return;
    };
    if s.warnings().is_empty() && s.to_bytes() != data {
        panic!("a session that loads without warnings saves differently");
    }
    let n = s.len();
    let leaves: Vec<usize> = [n.wrapping_sub(1), n / 2, n / 3, 1, 0]
        .into_iter()
        .filter(|&i| i < n)
        .collect();
    for (k, leaf) in leaves.into_iter().enumerate() {
        let path = s.path_to(leaf);
        let selected = context_entries(&s, &path);
        assert!(
            selected.iter().all(|i| path.contains(i)),
            "selection off the path"
        );
        let Ok(projected) = project(&s, &path) else {
            continue;
        };
        assert_eq!(projected.len(), selected.len());
        let _ = convert_pi(
            &s,
            &projected
                .iter()
                .flat_map(|p| p.messages.clone())
                .collect::<Vec<_>>(),
        );
        let e = ctxfold::context::projection::estimate_projected_context_tokens(&s, &projected, &path);
        assert_eq!(e.tokens, e.usage_tokens + e.trailing_tokens);
        let id = s.entries()[leaf].id().to_string();
        if ctxfold::context::projection::is_pi_family(&s, &path) {
            if let Ok(ctx) = build_context(
                &s,
                &BuildOptions {
                    leaf: LeafSelector::Id(id),
                    ..Default::default()
                },
            ) {
                let from_projection: usize = projected.iter().map(|p| p.messages.len()).sum();
                if s.index_of(s.entries()[leaf].id()) == Some(leaf) {
                    assert_eq!(
                        ctx.messages.len(),
                        from_projection,
                        "context is the projection"
                    );
                }
                let _ = ctxfold::context::convert::convert_to_llm(&s, &ctx);
            }
        }
        for keep in [0u64, 1, 2000, 20000] {
            if let Ok(Some(p)) = prepare_pi_compaction(&s, &path, keep) {
                assert!(projected.iter().any(|q| q.entry == p.first_kept));
                for m in p.messages_to_summarize.iter().chain(&p.turn_prefix) {
                    let v = ctxfold::support::json::parse(&m.json(&s)).unwrap_or_default();
                    assert_ne!(v["role"], "system", "a system message summarized");
                }
            }
            let _ = find_pi_cut_point_on_entries(&s, &path, keep);
        }
        // The operations at the last entry and the middle one (the costly part).
        if k < 2 {
            operations(&s, leaf, data.len() as u64);
        }
    }
});

/// A compaction and a navigation from `leaf`, answered and committed on copies.
fn operations(s: &ctxfold::Session, leaf: usize, limit: u64) {
    use ctxfold::compaction::commit::commit_compaction;
    use ctxfold::compaction::plan::{plan_compaction, PlanOptions};
    use ctxfold::navigation::{commit_navigation, plan_navigation, NavigateOptions, NavigationAnswer};
    let known = ["minimal", "low", "medium", "high", "xhigh"];
    let mut copy = ctxfold::Session::load(s.to_bytes(), Default::default()).expect("reloads");
    let id = copy.entries()[leaf].id().to_string();
    if copy.index_of(&id) != Some(leaf) || copy.branch(&id).is_err() {
        return;
    }
    let settings = ctxfold::settings::CompactionSettings {
        keep_recent_tokens: 50,
        ..Default::default()
    };
    let options = PlanOptions {
        output_limit: limit % 70_000,
        context_window: (limit * 7) % 300_000,
        ..Default::default()
    };
    if let Ok(mut plan) = plan_compaction(&copy, &settings, options) {
        assert!(plan.reasoning_effort.is_none_or(|e| known.contains(&e)));
        for _ in 0..64 {
            let pending: Vec<String> = plan.pending().iter().map(|r| r.id.clone()).collect();
            if pending.is_empty() {
                break;
            }
            for r in plan.pending() {
                assert!(r.max_tokens >= 1, "{} asks for no output", r.id);
                // pi makes no short-summary request (pi40d).
                assert!(!(plan.is_pi() && r.id == "short-summary"), "a short summary on a pi path");
            }
            for id in pending {
                plan.answer(&copy, &id, "s").expect("an answer to a pending request");
            }
        }
        let before = copy.to_bytes();
        match commit_compaction(&mut copy, &plan, 1) {
            Ok(_) => {
                let saved = copy.to_bytes();
                let again = ctxfold::Session::load(saved.clone(), Default::default()).expect("reloads");
                assert_eq!(again.to_bytes(), saved, "a committed compaction reloads");
                if plan.is_pi() {
                    // pi's entry (pi40d): pi's fields only, `fromHook: false`.
                    let e = last_entry(&saved);
                    for k in ["shortSummary", "method", "tokensAfter", "fromExtension"] {
                        assert!(e.get(k).is_none(), "{k} on a pi compaction");
                    }
                    assert_eq!(e["fromHook"], false);
                    assert!(e["details"]["readFiles"].is_array());
                }
            }
            Err(_) => assert_eq!(copy.to_bytes(), before, "a refused commit changes nothing"),
        }
    }
    // The first entry, or the last from the first: a branch is left behind either way.
    let target = if leaf == 0 { copy.len() - 1 } else { 0 };
    let target = copy.entries()[target].id().to_string();
    let options = NavigateOptions {
        summarize: true,
        output_limit: limit % 50_000,
        context_window: limit % 20_000,
        ..NavigateOptions::default()
    };
    if let Ok(plan) = plan_navigation(&copy, &target, options) {
        assert!(plan.reasoning_effort.is_none_or(|e| known.contains(&e)));
        let answer = match &plan.request {
            Some(r) => {
                assert!(r.max_tokens >= 1);
                NavigationAnswer::Summary("b".into())
            }
            None => NavigationAnswer::None,
        };
        let before = copy.to_bytes();
        let from = copy.leaf_id().unwrap_or("root").to_string();
        match commit_navigation(&mut copy, &plan, answer, 2) {
            Ok(c) => {
                if c.summary_entry_id.is_some() && plan.request.is_some() {
                    let e = last_entry(&copy.to_bytes());
                    // pi names the leaf left; oh-my-pi the landing place.
                    let pi = e.get("fromHook").is_some();
                    assert!(!pi || e["fromId"] == from.as_str(), "pi's fromId is the leaf left");
                    assert!(pi || e.get("fromExtension").is_none());
                }
                let saved = copy.to_bytes();
                let again = ctxfold::Session::load(saved.clone(), Default::default()).expect("reloads");
                assert_eq!(again.to_bytes(), saved, "a navigation reloads");
            }
            Err(_) => assert_eq!(copy.to_bytes(), before, "a refused navigation changes nothing"),
        }
    }
}

/// The last entry of saved session bytes (the line a commit appended; earlier lines may hold
/// bytes that are not UTF-8).
fn last_entry(bytes: &[u8]) -> serde_json::Value {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let start = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    serde_json::from_slice(&body[start..]).expect("a JSON line")
}
