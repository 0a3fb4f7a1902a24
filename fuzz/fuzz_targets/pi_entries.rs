//! pi-family entries (issue 40 item 4) from arbitrary bytes read as a session file: whatever
//! loads is saved back byte for byte; at several leaves the projection (`context_edit`,
//! `usage`, system messages and checkpoints, retain-none compactions), the context built
//! from it, the pi conversion, the projected token estimate, the pi preparation at several
//! budgets and the raw cut point never panic, and agree with each other: the context is the
//! projection's messages, the kept entry is one of the projection's, and the preparation
//! never summarizes a system message.
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
    for leaf in leaves {
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
    }
});
