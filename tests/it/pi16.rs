//! pi-family sessions (issue 40 item 4): every output field of every case and leaf of
//! `../shared/conformance/pi-1.6` (pi 1.6.0's own results; see its README.md) checked against
//! ctxfold through the public Rust API. Fails when the conformance data is missing.

use crate::common;
use ctxfold::compaction::prepare::{find_pi_cut_point_on_entries, prepare_pi_compaction};
use ctxfold::context::convert::convert_pi;
use ctxfold::context::convert::convert_to_llm;
use ctxfold::context::projection::estimate_projected_context_tokens;
use ctxfold::context::projection::{context_entries, project};
use ctxfold::context::{build_context, BuildOptions, LeafSelector};
use ctxfold::session::{LoadOptions, Session};
use ctxfold::settings::CompactionSettings;
use ctxfold::summary::serialize::serialize_pi_conversation;
use serde_json::{json, Value};

/// One evaluated leaf: the loaded session, the leaf's path and pi's outputs.
struct Leaf {
    name: String,
    session: Session,
    path: Vec<usize>,
    want: Value,
}

fn leaves() -> Vec<Leaf> {
    let index: Value =
        serde_json::from_slice(&common::read("pi-1.6/outputs/index.json")).expect("index.json");
    let cases: Value =
        serde_json::from_slice(&common::read("pi-1.6/sessions/cases.json")).expect("cases.json");
    let mut out = Vec::new();
    for (case, files) in index["outputs"].as_object().expect("outputs") {
        let file = cases[case]["file"].as_str().expect("case file");
        let bytes = common::read(&format!("pi-1.6/{file}"));
        for f in files.as_array().expect("output list") {
            let want: Value =
                serde_json::from_slice(&common::read(&format!("pi-1.6/{}", f.as_str().unwrap())))
                    .expect("output");
            let session = Session::load(bytes.clone(), LoadOptions::default()).expect("loads");
            let leaf_id = want["leafId"].as_str().expect("leafId");
            let leaf = session.index_of(leaf_id).expect("leaf exists");
            let path = session.path_to(leaf);
            out.push(Leaf {
                name: format!("{case}.{}", want["leaf"].as_str().unwrap()),
                session,
                path,
                want,
            });
        }
    }
    assert_eq!(out.len(), 11, "every leaf of index.json");
    out
}

fn ids(s: &Session, list: &[usize]) -> Value {
    list.iter()
        .map(|&i| Value::from(s.entries()[i].id()))
        .collect()
}

/// Runs `check` on every leaf; reports every mismatch at once.
fn each(field: &str, check: impl Fn(&Leaf) -> Option<String>) {
    let failures: Vec<String> = leaves()
        .iter()
        .filter_map(|l| check(l).map(|e| format!("{}: {e}", l.name)))
        .collect();
    assert!(
        failures.is_empty(),
        "{field}: {} leaf(s) differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn differ(got: &Value, want: &Value) -> Option<String> {
    if got == want {
        return None;
    }
    // Arrays: the first element that differs, not the whole (long) list.
    if let (Some(g), Some(w)) = (got.as_array(), want.as_array()) {
        if let Some(i) = (0..g.len().max(w.len())).find(|&i| g.get(i) != w.get(i)) {
            return Some(format!(
                "at [{i}] (lengths {}/{}): got {}\nwant {}",
                g.len(),
                w.len(),
                g.get(i).map_or("-".into(), Value::to_string),
                w.get(i).map_or("-".into(), Value::to_string)
            ));
        }
    }
    Some(format!("got {got}\nwant {want}"))
}

fn context(l: &Leaf) -> ctxfold::context::SessionContext {
    let leaf = l.want["leafId"].as_str().unwrap().to_string();
    build_context(
        &l.session,
        &BuildOptions {
            leaf: LeafSelector::Id(leaf),
            ..Default::default()
        },
    )
    .expect("builds")
}

#[test]
fn branch_entry_ids() {
    each("branchEntryIds", |l| {
        differ(&ids(&l.session, &l.path), &l.want["branchEntryIds"])
    });
}

#[test]
fn context_entry_ids() {
    each("contextEntryIds", |l| {
        let got = context_entries(&l.session, &l.path);
        differ(&ids(&l.session, &got), &l.want["contextEntryIds"])
    });
}

#[test]
fn projection() {
    each("projection", |l| {
        let got: Value = project(&l.session, &l.path)
            .expect("projects")
            .iter()
            .map(|p| {
                let e = &l.session.entries()[p.entry];
                let roles: Vec<Value> = p
                    .messages
                    .iter()
                    .map(|m| {
                        let v: Value = serde_json::from_str(&m.json(&l.session)).unwrap();
                        v["role"].clone()
                    })
                    .collect();
                json!({"sourceId": e.id(), "sourceType": e.kind().type_name(), "roles": roles})
            })
            .collect();
        differ(&got, &l.want["projection"])
    });
}

#[test]
fn session_context_messages() {
    each("sessionContext.messages", |l| {
        let ctx = context(l);
        let got: Value = ctx
            .messages
            .iter()
            .map(|m| serde_json::from_str::<Value>(&m.json(&l.session)).unwrap())
            .collect();
        differ(&got, &l.want["sessionContext"]["messages"])
    });
}

#[test]
fn session_context_thinking_level_and_model() {
    each("sessionContext.thinkingLevel/model", |l| {
        let ctx = context(l);
        let want = &l.want["sessionContext"];
        let model = ctx.model("default").map(|m| {
            let (provider, id) = m.split_once('/').unwrap();
            json!({"provider": provider, "modelId": id})
        });
        differ(
            &json!({"thinkingLevel": ctx.thinking_level, "model": model}),
            &json!({"thinkingLevel": want["thinkingLevel"], "model": want["model"]}),
        )
    });
}

#[test]
fn llm_messages() {
    each("llmMessages", |l| {
        let ctx = context(l);
        let got = Value::Array(convert_to_llm(&l.session, &ctx));
        // Numbers compared as the expected file's parser reads them (both through text).
        let got: Value = serde_json::from_str(&got.to_string()).unwrap();
        differ(&got, &l.want["llmMessages"])
    });
}

#[test]
fn projected_tokens() {
    each("projectedTokens", |l| {
        let p = project(&l.session, &l.path).unwrap();
        let e = estimate_projected_context_tokens(&l.session, &p, &l.path);
        let got = json!({"tokens": e.tokens, "usageTokens": e.usage_tokens,
            "trailingTokens": e.trailing_tokens, "lastUsageIndex": e.last_usage_index});
        differ(&got, &l.want["projectedTokens"])
    });
}

/// The package's token accounting (`contextTokens`, `estimateContextTokens`, the
/// Maintainer's figures) reads the built context's estimate: on a pi-family path it is pi's
/// projected estimate (issue 40 item 4).
#[test]
fn context_estimate_is_projected() {
    each("projectedTokens", |l| {
        let ctx = context(l);
        let e = ctx.estimate_context_tokens(&l.session, &ctxfold::tokens::ByteEstimate);
        let got = json!({"tokens": e.tokens, "usageTokens": e.usage_tokens,
            "trailingTokens": e.trailing_tokens, "lastUsageIndex": e.last_usage_index});
        differ(&got, &l.want["projectedTokens"])
    });
}

/// `contextTokens().tokensBefore` on a pi-family path is what pi's `prepareCompaction`
/// records: the projected estimate.
#[test]
fn tokens_before_is_projected() {
    each("projectedTokens", |l| {
        differ(
            &Value::from(l.session.tokens_before(&l.path)),
            &l.want["projectedTokens"]["tokens"],
        )
    });
}

fn roles(s: &Session, ms: &[ctxfold::context::ContextMessage]) -> Value {
    ms.iter()
        .map(|m| serde_json::from_str::<Value>(&m.json(s)).unwrap()["role"].clone())
        .collect()
}

fn prepared(l: &Leaf, keep: u64) -> Value {
    let Some(p) = prepare_pi_compaction(&l.session, &l.path, keep).expect("prepares") else {
        return Value::Null;
    };
    let s = &l.session;
    let serialized =
        |ms: &[ctxfold::context::ContextMessage]| serialize_pi_conversation(&convert_pi(s, ms));
    let sorted = |set: &std::collections::BTreeSet<String>| -> Value {
        set.iter().map(|x| Value::from(x.as_str())).collect()
    };
    json!({
        "firstKeptEntryId": p.first_kept_entry_id,
        "isSplitTurn": p.is_split_turn,
        "tokensBefore": p.tokens_before,
        "previousSummary": p.previous_summary,
        "messagesToSummarizeCount": p.messages_to_summarize.len(),
        "messagesToSummarizeRoles": roles(s, &p.messages_to_summarize),
        "turnPrefixMessagesCount": p.turn_prefix.len(),
        "turnPrefixMessagesRoles": roles(s, &p.turn_prefix),
        "fileOps": {"read": sorted(&p.file_ops.read), "written": sorted(&p.file_ops.written),
            "edited": sorted(&p.file_ops.edited)},
        "serializedHistory": serialized(&p.messages_to_summarize),
        "serializedTurnPrefix": serialized(&p.turn_prefix),
    })
}

#[test]
fn prepare_compaction_on_the_projection() {
    each("prepareCompaction", |l| {
        let got = json!({"2000": prepared(l, 2000), "20000": prepared(l, 20000)});
        differ(&got, &l.want["prepareCompaction"])
    });
}

/// The public `prepare_compaction` (planCompaction, compact(), the Maintainer's walk) hands a
/// pi-family path to pi's preparation: its cut, split, tokensBefore, previous summary and
/// files are pi's; pi's `undefined` is a refusal (issue 40 item 4).
#[test]
fn public_prepare_compaction_is_pi_preparation() {
    use ctxfold::compaction::prepare::{prepare_compaction, PrepareOptions};
    each("prepareCompaction", |l| {
        let leaf = *l.path.last().unwrap();
        let got = |keep: u64| {
            let settings = CompactionSettings {
                keep_recent_tokens: keep,
                ..Default::default()
            };
            let opts = PrepareOptions {
                leaf: Some(leaf),
                ..Default::default()
            };
            match prepare_compaction(&l.session, &settings, &opts) {
                Err(_) => Value::Null,
                Ok(p) => {
                    let sorted = |set: &std::collections::BTreeSet<String>| -> Value {
                        set.iter().map(|x| Value::from(x.as_str())).collect()
                    };
                    json!({
                        "firstKeptEntryId": p.first_kept_entry_id,
                        "isSplitTurn": p.is_split_turn,
                        "tokensBefore": p.tokens_before,
                        "previousSummary": p.previous_summary,
                        "fileOps": {"read": sorted(&p.file_ops.read),
                            "written": sorted(&p.file_ops.written),
                            "edited": sorted(&p.file_ops.edited)},
                    })
                }
            }
        };
        let want = |keep: &str| {
            let w = &l.want["prepareCompaction"][keep];
            if w.is_null() {
                return Value::Null;
            }
            json!({
                "firstKeptEntryId": w["firstKeptEntryId"],
                "isSplitTurn": w["isSplitTurn"],
                "tokensBefore": w["tokensBefore"],
                "previousSummary": w["previousSummary"],
                "fileOps": w["fileOps"],
            })
        };
        differ(
            &json!({"2000": got(2000), "20000": got(20000)}),
            &json!({"2000": want("2000"), "20000": want("20000")}),
        )
    });
}

/// The conversation a summary request carries (the text of its `<conversation>` wrapper).
fn conversation(prompt: &str) -> String {
    let start = prompt.find("<conversation>\n").expect("a conversation") + 15;
    let end = prompt.find("\n</conversation>").expect("closed");
    prompt[start..end].to_string()
}

/// `planCompaction`'s requests on a pi-family path carry pi's summarizer input: the history
/// and the turn prefix of the edited projection, converted and serialized as pi does
/// (thinking left out; `serializedHistory` / `serializedTurnPrefix`; issue 40 item 4).
#[test]
fn plan_requests_carry_pi_serialized_input() {
    use ctxfold::compaction::plan::{plan_compaction, PlanOptions};
    use ctxfold::compaction::prepare::PrepareOptions;
    each("serializedHistory", |l| {
        let leaf = *l.path.last().unwrap();
        let got = |keep: u64| {
            let settings = CompactionSettings {
                keep_recent_tokens: keep,
                ..Default::default()
            };
            let options = PlanOptions {
                prepare: PrepareOptions {
                    leaf: Some(leaf),
                    ..Default::default()
                },
                ..Default::default()
            };
            let Ok(plan) = plan_compaction(&l.session, &settings, options) else {
                return Value::Null;
            };
            let text = |id: &str| {
                plan.pending()
                    .iter()
                    .find(|r| r.id == id)
                    .map_or(String::new(), |r| conversation(&r.prompt))
            };
            json!({"serializedHistory": text("history-1"),
                "serializedTurnPrefix": text("turn-prefix")})
        };
        let want = |keep: &str| {
            let w = &l.want["prepareCompaction"][keep];
            if w.is_null() {
                return Value::Null;
            }
            json!({"serializedHistory": w["serializedHistory"],
                "serializedTurnPrefix": w["serializedTurnPrefix"]})
        };
        differ(
            &json!({"2000": got(2000), "20000": got(20000)}),
            &json!({"2000": want("2000"), "20000": want("20000")}),
        )
    });
}

#[test]
fn find_cut_point_on_context_entries() {
    each("findCutPointOnContextEntries", |l| {
        let entries = context_entries(&l.session, &l.path);
        let cut = |keep: u64| {
            let c = find_pi_cut_point_on_entries(&l.session, &l.path, keep).unwrap();
            let id = |pos: usize| Value::from(l.session.entries()[entries[pos]].id());
            json!({"firstKeptEntryId": id(c.first_kept), "firstKeptEntryIndex": c.first_kept,
                "turnStartEntryId": c.turn_start.map_or(Value::Null, id),
                "isSplitTurn": c.is_split_turn})
        };
        let got = json!({"2000": cut(2000), "20000": cut(20000)});
        differ(&got, &l.want["findCutPointOnContextEntries"])
    });
}

#[test]
fn sessions_save_byte_faithfully() {
    let cases: Value = serde_json::from_slice(&common::read("pi-1.6/sessions/cases.json")).unwrap();
    for (case, c) in cases.as_object().unwrap() {
        let bytes = common::read(&format!("pi-1.6/{}", c["file"].as_str().unwrap()));
        let s = Session::load(bytes.clone(), LoadOptions::default()).unwrap();
        assert!(s.warnings().is_empty(), "{case}: {:?}", s.warnings());
        assert_eq!(s.to_bytes(), bytes, "{case}");
        let kinds: Vec<_> = s
            .entries()
            .iter()
            .filter_map(|e| e.kind().type_name())
            .collect();
        assert_eq!(kinds.len(), s.len(), "{case}: every pi entry type is known");
    }
}

#[test]
fn settings_model_overrides_resolve_as_pi_resolves_them() {
    let want: Value =
        serde_json::from_slice(&common::read("pi-1.6/outputs/settings-resolution.json")).unwrap();
    let with = CompactionSettings::from_json(&want["settingsInput"]["compaction"]).unwrap();
    let without = CompactionSettings::default();
    let resolve = |s: &CompactionSettings, model: &Value| {
        let s = match model.as_str() {
            Some(m) => {
                let (p, id) = m.split_once('/').unwrap();
                s.for_model(p, id).into_owned()
            }
            None => s.clone(),
        };
        json!({"enabled": s.enabled, "reserveTokens": s.reserve_or_default(),
            "keepRecentTokens": s.keep_recent_tokens})
    };
    for r in want["resolved"].as_array().unwrap() {
        assert_eq!(
            resolve(&with, &r["model"]),
            r["withSettings"],
            "{}",
            r["model"]
        );
        assert_eq!(
            resolve(&without, &r["model"]),
            r["noSettings"],
            "{}",
            r["model"]
        );
    }
    // Case 05 prepared with the settings resolved for the model of each leaf.
    let all = leaves();
    for a in want["appliedToCase05"].as_array().unwrap() {
        let name = format!("05-branches-usage.{}", a["leaf"].as_str().unwrap());
        let l = all.iter().find(|l| l.name == name).unwrap();
        let m = &a["model"];
        let s = with.for_model(
            m["provider"].as_str().unwrap(),
            m["modelId"].as_str().unwrap(),
        );
        assert_eq!(
            json!({"enabled": s.enabled, "reserveTokens": s.reserve_or_default(),
                "keepRecentTokens": s.keep_recent_tokens}),
            a["settings"],
            "{name}"
        );
        let p = prepare_pi_compaction(&l.session, &l.path, s.keep_recent_tokens).unwrap();
        let got = json!({
            "firstKeptEntryId": p.as_ref().map(|p| p.first_kept_entry_id.clone()),
            "isSplitTurn": p.as_ref().map(|p| p.is_split_turn),
            "messagesToSummarizeCount": p.as_ref().map_or(0, |p| p.messages_to_summarize.len()),
        });
        let want = json!({"firstKeptEntryId": a["firstKeptEntryId"],
            "isSplitTurn": a["isSplitTurn"], "messagesToSummarizeCount": a["messagesToSummarizeCount"]});
        assert_eq!(got, want, "{name}");
    }
}

mod edits_property {
    //! Property: any sequence of `context_edit` entries (targets anywhere on the path,
    //! unknown ones included; replacements `null`, strings, block arrays) over a small pi
    //! session leaves the file byte-identical after a load/save, and the context holds, for
    //! each message entry, its message untouched (no edit), nothing (newest edit `null`) or
    //! the newest replacement's content (a string on an assistant or tool result as one text
    //! block).
    use ctxfold::context::{build_context, BuildOptions};
    use ctxfold::session::{LoadOptions, Session};
    use proptest::prelude::*;
    use serde_json::{json, Value};

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;

    /// The base messages: system, user, assistant with a call, its result, assistant.
    fn base() -> Vec<Value> {
        vec![
            json!({"role":"system","content":"","sections":{"p":"Be brief."},"timestamp":1}),
            json!({"role":"user","content":"fix it","timestamp":2}),
            json!({"role":"assistant","content":[{"type":"text","text":"reading"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.ts"}}],"usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15},"stopReason":"toolUse","timestamp":3}),
            json!({"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"x".repeat(40)}],"isError":false,"timestamp":4}),
            json!({"role":"assistant","content":[{"type":"text","text":"done"}],"stopReason":"stop","timestamp":5}),
        ]
    }

    fn replacement() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            "[a-z ]{0,12}".prop_map(|t| json!({"content": t})),
            "[a-z ]{0,12}".prop_map(|t| json!({"content": [{"type":"text","text": t}]})),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn newest_edit_per_target_wins_and_bytes_stay(
            edits in proptest::collection::vec((0usize..7, replacement()), 0..8)
        ) {
            let messages = base();
            let mut lines = vec![HEADER.to_string()];
            let mut parent = Value::Null;
            for (i, m) in messages.iter().enumerate() {
                let id = format!("m{i}");
                lines.push(json!({"type":"message","id":id,"parentId":parent,
                    "timestamp":"2026-01-01T00:00:01.000Z","message":m}).to_string());
                parent = id.into();
            }
            for (n, (target, r)) in edits.iter().enumerate() {
                // Targets 5 and 6 name entries the file does not hold.
                let id = format!("e{n}");
                lines.push(json!({"type":"context_edit","id":id,"parentId":parent,
                    "timestamp":"2026-01-01T00:00:02.000Z","targetId":format!("m{target}"),
                    "replacement":r}).to_string());
                parent = id.into();
            }
            let bytes = (lines.join("\n") + "\n").into_bytes();
            let s = Session::load(bytes.clone(), LoadOptions::default()).unwrap();
            prop_assert_eq!(s.to_bytes(), bytes);
            let ctx = build_context(&s, &BuildOptions::default()).unwrap();
            let mut want: Vec<Value> = Vec::new();
            for (i, m) in messages.iter().enumerate() {
                let newest = edits.iter().rev().find(|(t, _)| *t == i).map(|(_, r)| r);
                match newest {
                    None => want.push(m.clone()),
                    Some(Value::Null) => {}
                    Some(r) => {
                        let mut m = m.clone();
                        let role = m["role"].as_str().unwrap().to_string();
                        let c = &r["content"];
                        if role != "system" {
                            m["content"] = match c {
                                Value::String(t) if role == "assistant" || role == "toolResult" =>
                                    json!([{"type":"text","text":t}]),
                                other => other.clone(),
                            };
                        }
                        want.push(m);
                    }
                }
            }
            let got: Vec<Value> = ctx
                .messages
                .iter()
                .map(|m| serde_json::from_str(&m.json(&s)).unwrap())
                .collect();
            prop_assert_eq!(got, want);
        }
    }
}

/// Branch summaries of pi-family branches read what pi 1.6 reads (issue 40 item 4): for every
/// navigation of `tests/fixtures/pi-branch/outputs.json` (pi's own results on these sessions,
/// written by its `generate.mjs`), the collected entries, the messages `prepareBranchEntries`
/// chooses under each budget (edits among the collected entries applied, tool results left
/// out), their total, the files, and the request's conversation as pi serializes it.
#[test]
fn branch_summary_input_is_pi_input() {
    use ctxfold::navigation::{plan_navigation, NavigateOptions};
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/pi-branch/outputs.json"
    );
    let want: Value = serde_json::from_slice(&std::fs::read(path).expect("fixture")).unwrap();
    let navigations = want["navigations"].as_array().expect("navigations");
    assert!(navigations.len() >= 20);
    let mut failures = Vec::new();
    for n in navigations {
        let bytes = common::read(&format!("pi-1.6/{}", n["file"].as_str().unwrap()));
        let (from, to) = (n["from"].as_str().unwrap(), n["to"].as_str().unwrap());
        for (budget, prepared) in n["prepared"].as_object().unwrap() {
            let mut s = Session::load(bytes.clone(), LoadOptions::default()).unwrap();
            s.branch(from).unwrap();
            let budget: u64 = budget.parse().unwrap();
            let options = NavigateOptions {
                summarize: true,
                // `(window || 128 000) − reserve`; a window below the reserve is no limit.
                context_window: if budget == 0 { 1 } else { budget + 16_384 },
                reserve_tokens: 16_384,
                ..NavigateOptions::default()
            };
            let plan = plan_navigation(&s, to, options).unwrap();
            let chosen = prepared["roles"].as_array().unwrap().len();
            let (total, files, text) = match (&plan.preparation, &plan.request) {
                (Some(p), Some(r)) => {
                    let sorted = |set: &std::collections::BTreeSet<String>| -> Value {
                        set.iter().map(|x| Value::from(x.as_str())).collect()
                    };
                    (
                        Value::from(p.total_tokens),
                        json!({"read": sorted(&p.file_ops.read), "written": sorted(&p.file_ops.written),
                            "edited": sorted(&p.file_ops.edited)}),
                        Value::from(conversation(&r.prompt)),
                    )
                }
                _ => (Value::from(0), prepared["fileOps"].clone(), Value::from("")),
            };
            let got = json!({
                "entries": plan.entries_to_summarize_ids(&s),
                "commonAncestorId": plan.common_ancestor_id,
                "chosen": plan.preparation.as_ref().map_or(0, |p| p.entries.len()),
                "totalTokens": total, "fileOps": files, "serialized": text,
            });
            let expected = json!({
                "entries": n["entries"], "commonAncestorId": n["commonAncestorId"],
                "chosen": chosen, "totalTokens": prepared["totalTokens"],
                "fileOps": prepared["fileOps"], "serialized": prepared["serialized"],
            });
            if let Some(d) = differ(&got, &expected) {
                failures.push(format!("{} {from} → {to} at {budget}: {d}", n["case"]));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} navigation(s) differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The reasoning hint of a pi-family path's summary requests is the session's thinking level
/// (pi 1.6 `createSummarizationOptions`: `off` asks for none), for compactions and branch
/// summaries; other sessions keep oh-my-pi's `high` (issue 40 item 4).
#[test]
fn reasoning_hint_follows_the_thinking_level() {
    use ctxfold::compaction::plan::{plan_compaction, PlanOptions};
    use ctxfold::navigation::{plan_navigation, NavigateOptions};
    let settings = CompactionSettings {
        keep_recent_tokens: 2000,
        ..Default::default()
    };
    let plan_effort = |s: &Session| {
        plan_compaction(s, &settings, PlanOptions::default())
            .expect("plans")
            .reasoning_effort
    };
    let summarize = NavigateOptions {
        summarize: true,
        ..NavigateOptions::default()
    };
    for l in leaves() {
        let leaf_id = l.want["leafId"].as_str().unwrap();
        let mut s = Session::load(l.session.to_bytes(), LoadOptions::default()).unwrap();
        s.branch(leaf_id).unwrap();
        let level = l.want["sessionContext"]["thinkingLevel"].as_str().unwrap();
        let want = (level != "off").then_some(level);
        if !l.want["prepareCompaction"]["2000"].is_null() {
            assert_eq!(plan_effort(&s), want, "{}", l.name);
        }
        let root = s.entries()[0].id().to_string();
        let nav = plan_navigation(&s, &root, summarize.clone()).unwrap();
        if nav.request.is_some() {
            assert_eq!(nav.reasoning_effort, want, "{} navigation", l.name);
        }
        // A later thinking level change is what the next request asks for.
        let mut fields = serde_json::Map::new();
        fields.insert("thinkingLevel".into(), "medium".into());
        s.append("thinking_level_change", fields, 0).unwrap();
        if !l.want["prepareCompaction"]["2000"].is_null() {
            assert_eq!(plan_effort(&s), Some("medium"), "{}", l.name);
        }
    }
    // Not a pi-family session: oh-my-pi's hint.
    let mut j = common::Jsonl::new();
    let mut parent: Option<String> = None;
    for i in 0..6 {
        let (u, a) = (format!("u{i}"), format!("a{i}"));
        j = j.user(&u, parent.as_deref(), &"question ".repeat(400));
        j = j.assistant(&a, Some(&u), &"answer ".repeat(400));
        parent = Some(a);
    }
    let s = j.load();
    assert_eq!(plan_effort(&s), Some("high"));
}

/// Summaries of a pi-family path ask for the model's output limit, fitted to the window as
/// pi 1.6 does (`clampMaxTokensToContext`): the history and turn-prefix requests and the
/// branch summary; without the limit, and on other sessions, ctxfold's budgets stay
/// (issue 40 item 4).
#[test]
fn pi_summaries_ask_for_the_model_output_limit() {
    use ctxfold::compaction::plan::{plan_compaction, PlanOptions};
    use ctxfold::navigation::{plan_navigation, NavigateOptions};
    use ctxfold::summary::serialize::pi_summary_max_tokens;
    let l = leaves()
        .into_iter()
        .find(|l| l.name == "04-thinking-split-turn.end")
        .expect("case 04");
    let settings = CompactionSettings {
        keep_recent_tokens: 2000,
        ..Default::default()
    };
    let plan = |limit: u64, window: u64| {
        let options = PlanOptions {
            output_limit: limit,
            context_window: window,
            ..Default::default()
        };
        plan_compaction(&l.session, &settings, options).expect("plans")
    };
    for (limit, window) in [(64_000, 200_000), (128_000, 40_000), (8_192, 0)] {
        let p = plan(limit, window);
        let pending = p.pending();
        assert!(pending.iter().any(|r| r.id == "turn-prefix"));
        for r in pending {
            let want = pi_summary_max_tokens(limit, window, &r.system_prompt, &r.prompt);
            assert_eq!(r.max_tokens, want, "{} at {limit}/{window}", r.id);
        }
    }
    // No limit given: ctxfold's budgets (0.8 and 0.5 of the reserve).
    let budgets: Vec<(String, u64)> = plan(0, 200_000)
        .pending()
        .iter()
        .map(|r| (r.id.clone(), r.max_tokens))
        .collect();
    assert_eq!(
        budgets,
        [
            ("history-1".to_string(), 13_107),
            ("turn-prefix".into(), 8_192)
        ]
    );
    // The branch summary of a pi-family branch.
    let root = l.session.entries()[1].id().to_string();
    let nav = |limit: u64| {
        let options = NavigateOptions {
            summarize: true,
            output_limit: limit,
            context_window: 100_000,
            ..NavigateOptions::default()
        };
        plan_navigation(&l.session, &root, options)
            .unwrap()
            .request
            .unwrap()
    };
    let r = nav(32_000);
    assert_eq!(
        r.max_tokens,
        pi_summary_max_tokens(32_000, 100_000, &r.system_prompt, &r.prompt)
    );
    assert!(r.max_tokens > 2048);
    assert_eq!(nav(0).max_tokens, 2048);
}

/// pi's own entries on these sessions (`tests/fixtures/pi-branch/entries.json`, written by
/// `generate-entries.mjs` with a stub model answering every request with `summary`).
fn pi_entries() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/pi-branch/entries.json"
    );
    serde_json::from_slice(&std::fs::read(path).expect("fixture")).unwrap()
}

/// A session file of `entries.json`: a conformance session or one of the fixture folder.
fn pi_session_bytes(file: &str) -> Vec<u8> {
    match file.strip_prefix("sessions/") {
        Some(_) => common::read(&format!("pi-1.6/{file}")),
        None => std::fs::read(format!(
            "{}/tests/fixtures/pi-branch/{file}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("fixture session"),
    }
}

/// The last line of `s` as pi's records are kept: without `id`, `parentId` and `timestamp`,
/// the checkpoint's time (the entry's, `now`) as `"ENTRY_TIME"`. Keys keep their order.
fn recorded_last(s: &Session, now: i64) -> Value {
    let bytes = s.to_bytes();
    let text = String::from_utf8(bytes).unwrap();
    let line = text.trim_end().rsplit('\n').next().unwrap();
    let mut v: Value = serde_json::from_str(line).unwrap();
    let o = v.as_object_mut().unwrap();
    for k in ["id", "parentId", "timestamp"] {
        o.shift_remove(k);
    }
    if let Some(ts) = o
        .get_mut("systemMessage")
        .and_then(|m| m.get_mut("timestamp"))
    {
        if ts.as_i64() == Some(now) {
            *ts = "ENTRY_TIME".into();
        }
    }
    v
}

/// Key order matters (pi writes its fields in one order): compares the serialized forms.
fn differ_ordered(got: &Value, want: &Value) -> Option<String> {
    differ(got, want).or_else(|| {
        // `Value`'s equality ignores key order: compare the texts.
        let text = |v: &Value| serde_json::to_string(v).unwrap_or_default();
        (text(got) != text(want)).then(|| format!("key order: {got} vs {want}"))
    })
}

/// The transcript of a pi request: inside `<conversation>` or, for a split turn's prefix,
/// between `# Conversation` and `# Instructions`.
fn pi_request_conversation(prompt: &str) -> String {
    match prompt.strip_prefix("# Conversation\n") {
        Some(rest) => rest[..rest.find("\n\n# Instructions\n").expect("instructions")].to_string(),
        None => conversation(prompt),
    }
}

/// The session, settings and plan options of one of pi's compaction records: its file, the
/// leaf pi compacted at, its `keepRecentTokens`, a 128,000-token window.
fn pi_compaction_case(
    r: &Value,
) -> (
    Session,
    CompactionSettings,
    ctxfold::compaction::plan::PlanOptions,
) {
    let s = Session::load(
        pi_session_bytes(r["file"].as_str().unwrap()),
        LoadOptions::default(),
    )
    .unwrap();
    let leaf = s.index_of(r["leaf"].as_str().unwrap()).unwrap();
    let settings = CompactionSettings {
        keep_recent_tokens: r["keep"].as_u64().unwrap(),
        ..Default::default()
    };
    let options = ctxfold::compaction::plan::PlanOptions {
        prepare: ctxfold::compaction::prepare::PrepareOptions {
            leaf: Some(leaf),
            ..Default::default()
        },
        context_window: 128_000,
        ..Default::default()
    };
    (s, settings, options)
}

/// The session of one of pi's branch-summary records, its leaf on the branch left (`from`).
fn pi_branch_session(r: &Value) -> Session {
    let mut s = Session::load(
        pi_session_bytes(r["file"].as_str().unwrap()),
        LoadOptions::default(),
    )
    .unwrap();
    s.branch(r["from"].as_str().unwrap()).unwrap();
    s
}

/// A compaction committed on a pi-family path is the entry pi 1.6 writes for the same
/// summary (pi40d item 1): the summary with pi's `<read-files>` / `<modified-files>` lists,
/// `details`, `fromHook: false`, the `systemMessage` checkpoint, pi's field order, no field of
/// ctxfold's own; the plan asks what pi asks (the history and the turn prefix, no short
/// summary), each request's transcript pi's, boundary tags left as written (item 2).
#[test]
fn pi_writes_compaction_entries() {
    use ctxfold::compaction::commit::commit_compaction;
    use ctxfold::compaction::plan::plan_compaction;
    let want = pi_entries();
    let summary = want["summary"].as_str().unwrap();
    let records = want["compactions"].as_array().unwrap();
    assert!(records.len() >= 9 && records.iter().any(|r| r["case"] == "tags"));
    let now = 1_796_640_000_123_i64;
    let mut failures = Vec::new();
    for r in records {
        let name = format!("{} {} K={}", r["case"], r["leaf"], r["keep"]);
        let (mut s, settings, options) = pi_compaction_case(r);
        let mut plan = plan_compaction(&s, &settings, options).expect("plans");
        let mut asked = Vec::new();
        while !plan.is_complete() {
            let pending: Vec<(String, String)> = plan
                .pending()
                .iter()
                .map(|q| (q.id.clone(), q.prompt.clone()))
                .collect();
            assert!(
                !pending.is_empty(),
                "{name}: incomplete with nothing pending"
            );
            for (id, prompt) in pending {
                asked.push(conversation(&prompt));
                plan.answer(&s, &id, summary).unwrap();
            }
        }
        let pi_asked: Vec<String> = r["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| pi_request_conversation(p.as_str().unwrap()))
            .collect();
        if let Some(d) = differ(&json!(asked), &json!(pi_asked)) {
            failures.push(format!("{name}: requests: {d}"));
        }
        commit_compaction(&mut s, &plan, now).expect("commits");
        if let Some(d) = differ_ordered(&recorded_last(&s, now), &r["entry"]) {
            failures.push(format!("{name}: entry: {d}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A branch summary committed on a pi-family branch is the entry pi 1.6's
/// `generateBranchSummary` + `branchWithSummary` write for the same answer (pi40d item 1):
/// pi's preamble, the answer, pi's file lists, `details`, `fromHook: false`, pi's field
/// order, at pi's landing place; the request's transcript pi's, tags as written (item 2).
#[test]
fn pi_writes_branch_summary_entries() {
    use ctxfold::navigation::{
        commit_navigation, plan_navigation, NavigateOptions, NavigationAnswer,
    };
    let want = pi_entries();
    let summary = want["summary"].as_str().unwrap();
    let records = want["branchSummaries"].as_array().unwrap();
    assert!(records.len() >= 20 && records.iter().any(|r| r["case"] == "tags"));
    let now = 1_796_640_000_123_i64;
    let mut failures = Vec::new();
    for r in records {
        let (from, to) = (r["from"].as_str().unwrap(), r["to"].as_str().unwrap());
        let name = format!("{} {from} → {to}", r["case"]);
        let mut s = pi_branch_session(r);
        let options = NavigateOptions {
            summarize: true,
            context_window: 128_000,
            reserve_tokens: 16_384,
            ..NavigateOptions::default()
        };
        let plan = plan_navigation(&s, to, options).expect("plans");
        let asked: Vec<String> = plan
            .request
            .iter()
            .map(|q| conversation(&q.prompt))
            .collect();
        let pi_asked: Vec<String> = r["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| conversation(p.as_str().unwrap()))
            .collect();
        if let Some(d) = differ(&json!(asked), &json!(pi_asked)) {
            failures.push(format!("{name}: request: {d}"));
        }
        let answer = match plan.request {
            Some(_) => NavigationAnswer::Summary(summary.to_string()),
            None => NavigationAnswer::None,
        };
        commit_navigation(&mut s, &plan, answer, now).expect("commits");
        if let Some(d) = differ_ordered(&recorded_last(&s, now), &r["entry"]) {
            failures.push(format!("{name}: entry: {d}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `is_pi_family` skips the path walk while no entry could make a path pi-family
/// (`Session::may_hold_pi_entries`, scanned once per entry): the answer still follows each
/// append, whichever entry turns the session pi-family, and equals a fresh load's.
#[test]
fn pi_family_follows_appends() {
    use ctxfold::context::projection::is_pi_family;
    use serde_json::Map;
    let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;
    let pi_entries: [(&str, Value); 2] = [
        (
            "context_edit",
            json!({"targetId": "x", "replacement": null}),
        ),
        ("usage", json!({"input": 1, "output": 1})),
    ];
    for (kind, fields) in pi_entries {
        let mut s = Session::load(format!("{header}\n").into_bytes(), LoadOptions::default())
            .expect("loads");
        for n in 0..3 {
            let m = json!({"role": "user", "content": format!("turn {n}"), "timestamp": n});
            s.append_message(m, n).expect("appends");
            let leaf = s.index_of(s.leaf_id().expect("leaf")).expect("leaf");
            assert!(
                !is_pi_family(&s, &s.path_to(leaf)),
                "{kind}: oh-my-pi after {n}"
            );
        }
        let Value::Object(fields) = fields else {
            unreachable!()
        };
        s.append(kind, Map::from_iter(fields), 9).expect("appends");
        let leaf = s.index_of(s.leaf_id().expect("leaf")).expect("leaf");
        let path = s.path_to(leaf);
        assert!(is_pi_family(&s, &path), "{kind}: pi-family once appended");
        let again = Session::load(s.to_bytes(), LoadOptions::default()).expect("reloads");
        assert!(is_pi_family(&again, &path), "{kind}: and after a reload");
    }
    // pi's system message (appendMessage refuses it): a file that holds one after the turns.
    let mut s =
        Session::load(format!("{header}\n").into_bytes(), LoadOptions::default()).expect("loads");
    s.append_message(json!({"role": "user", "content": "hi", "timestamp": 1}), 1)
        .expect("appends");
    let leaf = s.index_of(s.leaf_id().expect("leaf")).expect("leaf");
    assert!(!is_pi_family(&s, &s.path_to(leaf)));
    let id = s.leaf_id().expect("leaf").to_string();
    let line = json!({"type": "message", "id": "sys", "parentId": id,
        "timestamp": "2026-01-01T00:00:02.000Z",
        "message": {"role": "system", "content": "", "timestamp": 2}});
    let mut bytes = s.to_bytes();
    bytes.extend_from_slice(format!("{line}\n").as_bytes());
    let s = Session::load(bytes, LoadOptions::default()).expect("loads");
    let leaf = s.index_of("sys").expect("system entry");
    assert!(is_pi_family(&s, &s.path_to(leaf)), "system message");
}

/// pi's branch summary takes custom instructions as an added focus unless
/// `replaceInstructions` is set (spec: compaction §7.4 step 3, pi-mono): on a pi-family branch
/// an unset `replace_instructions` follows pi, where oh-my-pi's sessions replace the prompt
/// (tests/it/branch.rs).
#[test]
fn pi_branch_instructions_add_a_focus_unless_they_replace() {
    use ctxfold::navigation::{plan_navigation, NavigateOptions};
    let want = pi_entries();
    let r = want["branchSummaries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| !r["prompts"].as_array().unwrap().is_empty())
        .expect("a navigation pi asked a summary for");
    let to = r["to"].as_str().unwrap();
    let s = pi_branch_session(r);
    let prompt = |custom: Option<&str>, replace: Option<bool>| {
        let options = NavigateOptions {
            summarize: true,
            context_window: 128_000,
            reserve_tokens: 16_384,
            custom_instructions: custom.map(str::to_string),
            replace_instructions: replace,
            ..NavigateOptions::default()
        };
        plan_navigation(&s, to, options)
            .expect("plans")
            .request
            .expect("a request")
            .prompt
    };
    let plain = prompt(None, None);
    // pi's transcript (the instructions are our own wording: prompts/).
    assert_eq!(
        conversation(&plain),
        conversation(r["prompts"][0].as_str().unwrap())
    );
    let focus = format!("{plain}\n\nAdditional focus: Only the errors.");
    assert_eq!(prompt(Some("Only the errors."), None), focus);
    assert_eq!(prompt(Some("Only the errors."), Some(false)), focus);
    let end = "</conversation>\n\n";
    let start = plain.find(end).unwrap() + end.len();
    assert_eq!(
        prompt(Some("Only the errors."), Some(true)),
        format!("{}Only the errors.", &plain[..start])
    );
    // Empty instructions are none.
    assert_eq!(prompt(Some(""), None), plain);
}

/// pi 1.6's `compact` adds the custom instructions as a focus to both of its requests, the
/// history's and the split turn's prefix's: so does a plan on a pi-family path.
#[test]
fn pi_compaction_instructions_focus_both_requests() {
    use ctxfold::compaction::plan::{plan_compaction, PlanOptions};
    let want = pi_entries();
    let mut split = 0;
    for r in want["compactions"].as_array().unwrap() {
        let (s, settings, base) = pi_compaction_case(r);
        let prompts = |custom: Option<&str>| -> Vec<(String, String)> {
            let options = PlanOptions {
                custom_instructions: custom.map(str::to_string),
                ..base.clone()
            };
            let plan = plan_compaction(&s, &settings, options).expect("plans");
            plan.pending()
                .iter()
                .map(|q| (q.id.clone(), q.prompt.clone()))
                .collect()
        };
        let plain = prompts(None);
        let focused = prompts(Some("Keep the test names."));
        assert_eq!(plain.len(), focused.len());
        for ((id, a), (_, b)) in plain.iter().zip(&focused) {
            assert_eq!(
                *b,
                format!("{a}\n\nAdditional focus: Keep the test names."),
                "{id}"
            );
            split += usize::from(id == "turn-prefix");
        }
    }
    assert!(split > 0, "no record splits a turn");
}
