//! Conformance of the session model on `conformance/large-session/`: migration with
//! deterministic ids, the active path, and stable saves.

use crate::common::{self, fixture_session as load_fixture};
use ctxfold::session::{LoadOptions, Session};
use ctxfold::ErrorCode;
use serde_json::Value;

fn prepare() -> Value {
    common::fixture_json("prepare.json")
}

#[test]
fn migrates_v1_with_deterministic_ids() {
    let s = load_fixture();
    let p = prepare();
    assert_eq!(s.header().version_on_disk, 1);
    assert_eq!(s.header().version, 3);
    assert_eq!(s.len(), p["session"]["entries"].as_u64().unwrap() as usize);
    assert_eq!(s.leaf_id(), p["session"]["leafId"].as_str());
    assert_eq!(s.warnings_with(ErrorCode::Migrated).count(), 1);
    assert_eq!(s.warnings().len(), 1, "{:?}", s.warnings());
}

#[test]
fn active_path_matches_per_entry() {
    let s = load_fixture();
    let p = prepare();
    let per_entry = p["perEntry"].as_array().unwrap();
    let path = s.active_path();
    assert_eq!(path.len(), per_entry.len());
    for (branch_index, (&i, want)) in path.iter().zip(per_entry).enumerate() {
        let e = s.entry(i).unwrap();
        assert_eq!(e.id(), want["id"].as_str().unwrap(), "id at {branch_index}");
        assert_eq!(
            e.kind().type_name(),
            want["type"].as_str(),
            "type at {branch_index}"
        );
        assert_eq!(
            e.role().and_then(|r| r.as_str()),
            want["role"].as_str(),
            "role at {branch_index}"
        );
        assert_eq!(want["branchIndex"].as_u64(), Some(branch_index as u64));
    }
}

#[test]
fn migrated_fixture_saves_stably() {
    let s = load_fixture();
    let once = s.to_bytes();
    let again = Session::load(once.clone(), LoadOptions::default()).unwrap();
    assert!(again.warnings().is_empty(), "{:?}", again.warnings());
    assert_eq!(again.to_bytes(), once);
    // The migrated header says version 3; every entry line got an id and a parentId.
    let text = String::from_utf8(once).unwrap();
    let mut lines = text.lines();
    let header: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(header["version"], 3);
    let mut prev = Value::Null;
    for (n, line) in lines.enumerate() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["id"], format!("{:08x}", n + 1));
        assert_eq!(v["parentId"], prev);
        prev = v["id"].clone();
    }
}

#[test]
fn every_entry_estimate_matches_the_reference() {
    use ctxfold::tokens::EstimateOptions;
    let s = load_fixture();
    let text = common::read("large-session/estimate.jsonl");
    let text = String::from_utf8(text).unwrap();
    let mut by_line = std::collections::HashMap::new();
    for i in 0..s.len() {
        by_line.insert(s.line_number(i) as u64, i);
    }
    let mut checked = 0;
    for row in text.lines() {
        let want: Value = serde_json::from_str(row).unwrap();
        let line = want["line"].as_u64().unwrap();
        if want["tokens"].is_null() {
            // The header and non-message entries carry no estimate.
            if let Some(&i) = by_line.get(&line) {
                assert!(s.entry(i).unwrap().role().is_none(), "line {line}");
            }
            continue;
        }
        let i = by_line[&line];
        let full = s.entry_tokens(i, EstimateOptions::default());
        let excl = s.entry_tokens(
            i,
            EstimateOptions {
                exclude_encrypted_reasoning: true,
            },
        );
        assert_eq!(Some(full), want["tokens"].as_u64(), "tokens, line {line}");
        assert_eq!(
            Some(excl),
            want["tokensExcludingEncryptedReasoning"].as_u64(),
            "tokens excluding encrypted reasoning, line {line}"
        );
        checked += 1;
    }
    assert_eq!(checked, 914);
}

#[test]
fn tokens_before_and_keep_recent_adaptation_match_prepare() {
    use ctxfold::tokens::{adapt_keep_recent_tokens, prompt_tokens, EstimateOptions};
    let s = load_fixture();
    let p = prepare();
    let prep = &p["prepare"];
    let path = s.active_path();
    assert_eq!(
        s.tokens_before(&path),
        prep["tokensBefore"].as_u64().unwrap()
    );
    // No earlier compaction: the boundary window is the whole path.
    let estimate: u64 = path
        .iter()
        .map(|&i| s.entry_tokens(i, EstimateOptions::default()))
        .sum();
    let groups = &prep["estimatedTokens"];
    let want_total: u64 = [
        "messagesToSummarize",
        "turnPrefixMessages",
        "recentMessages",
    ]
    .iter()
    .map(|k| groups[k].as_u64().unwrap())
    .sum();
    assert_eq!(estimate, want_total);
    let (_, usage) = s.last_assistant_usage(&path).unwrap();
    let keep = p["settings"]["keepRecentTokens"].as_u64().unwrap();
    let (effective, ratio) = adapt_keep_recent_tokens(keep, prompt_tokens(&usage), estimate);
    assert_eq!(
        effective,
        prep["keepRecentTokensEffective"].as_u64().unwrap()
    );
    assert!((ratio - prep["providerToEstimateRatio"].as_f64().unwrap()).abs() < 1e-12);
}
