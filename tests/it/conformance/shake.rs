//! Conformance of shake (issue 20, point 1) on `large-session/shake.json` and
//! `rules/shake.json`: for the three presets the coding agent uses, the reference's regions
//! (kind, entry, block and UTF-16 character range, tokens, label), the placeholders it writes
//! with and without an artifact, and each rewritten message after the artifact placeholders
//! are applied. Lines the shake does not touch stay byte-identical.

use crate::common::read;
use ctxfold::session::{LoadOptions, SequentialIds, Session};
use ctxfold::shake::{apply_shake, placeholder, plan_shake, Preset, ShakeConfig};
use serde_json::Value;

fn check(dir: &str) {
    let want: Value = serde_json::from_slice(&read(&format!("{dir}/shake.json"))).unwrap();
    for (name, p) in want["presets"].as_object().expect("presets") {
        let mut s = Session::load(
            read(&format!("{dir}/session.jsonl")),
            LoadOptions::with_ids(Box::new(SequentialIds::new())),
        )
        .unwrap();
        let cfg = ShakeConfig::preset(Preset::parse(name).expect("a known preset"));
        assert_eq!(
            p["config"]["protectTokens"], cfg.protect_tokens,
            "{dir} {name}"
        );
        assert_eq!(p["config"]["minSavings"], cfg.min_savings, "{dir} {name}");
        assert_eq!(
            p["config"]["fenceMinTokens"], cfg.fence_min_tokens,
            "{dir} {name}"
        );
        let plan = plan_shake(&s, &cfg).unwrap();
        let got: Value = serde_json::from_str(&plan.json(&s)).unwrap();
        let regions = p["regions"].as_array().unwrap();
        assert_eq!(
            plan.regions.len(),
            regions.len(),
            "{dir} {name}: region count"
        );
        assert_eq!(p["regionCount"], regions.len());
        assert_eq!(got["tokens"], p["tokens"], "{dir} {name}: tokens");
        for (k, (g, w)) in got["regions"]
            .as_array()
            .unwrap()
            .iter()
            .zip(regions)
            .enumerate()
        {
            for field in [
                "index",
                "kind",
                "entryId",
                "blockIndex",
                "start",
                "end",
                "tokens",
                "label",
            ] {
                assert_eq!(
                    g.get(field),
                    w.get(field),
                    "{dir} {name} region {k}: {field}"
                );
            }
            let tokens = w["tokens"].as_u64().unwrap();
            assert_eq!(
                placeholder(tokens, k + 1, Some("A1")),
                w["replacementWithArtifact"]
            );
            assert_eq!(
                placeholder(tokens, k + 1, None),
                w["replacementWithoutArtifact"]
            );
        }

        let rewritten = p["rewritten"].as_array().unwrap();
        let now = rewritten
            .iter()
            .find_map(|r| r["message"]["prunedAt"].as_i64())
            .unwrap_or(0);
        let before: Vec<String> = (0..s.len()).map(|i| s.entry_json(i).into_owned()).collect();
        let report = apply_shake(&mut s, &plan, Some("A1"), now).unwrap();
        assert_eq!(
            report.entries.len(),
            rewritten.len(),
            "{dir} {name}: rewritten entries"
        );
        for r in rewritten {
            let id = r["id"].as_str().unwrap();
            let i = s.index_of(id).unwrap();
            let text = match s.message_json(i) {
                Some(m) => m.into_owned(),
                None => s.entry_json(i).into_owned(),
            };
            let mine: Value = serde_json::from_str(&text).unwrap();
            if s.message_json(i).is_none() {
                // A custom message: the record holds its new content.
                assert_eq!(
                    mine["content"], r["message"],
                    "{dir} {name}: custom message {id}"
                );
                continue;
            }
            // The reference stamps each result with its own clock reading; ours is `now`.
            let mut theirs = r["message"].clone();
            if let Some(at) = theirs.get_mut("prunedAt") {
                assert_eq!(mine["prunedAt"], now, "{dir} {name}: prunedAt of {id}");
                *at = mine["prunedAt"].clone();
            }
            assert_eq!(mine, theirs, "{dir} {name}: message {id}");
        }
        for (i, line) in before.iter().enumerate() {
            if !report.entries.iter().any(|id| id == s.entries()[i].id()) {
                assert_eq!(*line, s.entry_json(i), "{dir} {name}: untouched line {i}");
            }
        }
    }
}

#[test]
fn rules_session_regions_placeholders_and_rewrites_match_the_reference() {
    check("rules");
}

#[test]
fn large_session_regions_placeholders_and_rewrites_match_the_reference() {
    check("large-session");
}
