//! The anchor index read in place (issue 42 item 1): a plan's anchor index reads the texts of
//! user, developer, assistant and tool-result messages from the session's JSON through the
//! transcript's view instead of parsing each message into its typed form. Each entry's texts
//! and sources, the whole index and the visible text equal those of the typed reading on the
//! conformance sessions, generated sessions and hand-made edge cases (the property tests'
//! sessions are checked in `properties.rs`).

use crate::common;
use ctxfold::compaction::plan::{plan_compaction, PlanOptions};
use ctxfold::session::{LoadOptions, Session};
use ctxfold::settings::CompactionSettings;
use ctxfold::summary::anchors::verify_in_place_anchors;
use ctxfold_testkit::{generate, GenOptions};

fn load(bytes: Vec<u8>) -> Session {
    Session::load(bytes, LoadOptions::default()).unwrap()
}

#[test]
fn conformance_sessions() {
    for file in ["large-session/session.jsonl", "rules/session.jsonl"] {
        let s = load(common::read(file));
        let read = verify_in_place_anchors(&s).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(read > 20, "{file}: {read}");
    }
}

#[test]
fn generated_sessions() {
    for seed in 1..4 {
        let opts = GenOptions {
            seed,
            entries: 1_500,
            ..GenOptions::default()
        };
        let s = load(generate(&opts));
        let read = verify_in_place_anchors(&s).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert!(read > 1_000, "seed {seed}: {read}");
    }
}

fn session_of(messages: &[String]) -> Session {
    load(common::message_chain(messages))
}

/// Shapes where the in-place reading could part from the typed one: `contextOmitted` of every
/// JSON type on calls and results, `errorMessage`, content of the wrong type (the typed reading
/// refuses the message), text blocks without a string `text`, duplicate and escaped keys,
/// escapes and lone surrogates, blocks that are not objects, several text blocks in a result,
/// error results, `<files>` and `<anchors>` blocks inside texts, nesting near the parser's
/// limit, and the roles read typed (custom with carried anchors, bash, branch summary).
fn edge_cases() -> Vec<String> {
    let deep = format!(
        r#"{{"role":"user","content":[{{"type":"text","text":"deep src/deep.rs","meta":{}1{}}}]}}"#,
        "[".repeat(120),
        "]".repeat(120)
    );
    let mut m: Vec<String> = [
        r#"{"role":"user","content":"port 8080 at src/a.rs, \"--frozen\" and \ud83d alone \u00e9 #42"}"#,
        r#"{"role":"user","content":[{"type":"text","text":"a/b.rs"},{"type":"text","text":"x","text":"c/d.rs"},5,"s",{"type":"text"},{"type":"text","text":7},{"type":"image","data":"x","mimeType":"image/png"}]}"#,
        r#"{"r\u006fle":"user","c\u006fntent":"escaped keys v1.2.3"}"#,
        r#"{"role":"user","content":{"type":"text","text":"object content e/f.rs"}}"#,
        r#"{"role":"user","content":12}"#,
        r#"{"role":"user","content":null}"#,
        r#"{"role":"user","content":"first g/h.rs","content":[{"type":"text","text":"second i/j.rs"}]}"#,
        r#"{"role":"developer","content":"HANDOFF: see k/l.rs\n<files>\n<read-files>\nsrc/\n  m.rs\n</read-files>\n</files>\n<anchors>\nExact.\n- number: 48218\n- path: n/o.rs\n- bogus: x\n</anchors>\nafter 9999"}"#,
        r#"{"role":"assistant","content":[{"type":"thinking","thinking":"secret/path.rs"},{"type":"text","text":"t1 p/q.rs"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"r/s.rs","n":1.5,"d":{"x":"t/u.rs","x":"v/w.rs"},"a":["deep_symbol_name",[["x/y.rs"]]]}},{"type":"toolCall","id":"c2","name":"ls","arguments":null},{"type":"toolCall","id":"c3","name":"grep","arguments":{"pattern":"hidden_call"},"contextOmitted":true},{"type":"toolCall","id":"c4","name":"grep","arguments":{"pattern":"zero_omitted"},"contextOmitted":0},{"type":"toolCall","id":"c5","name":"grep","arguments":{"pattern":"empty_omitted"},"contextOmitted":""},{"type":"toolCall","id":"c6","name":"grep","arguments":{"pattern":"obj_omitted"},"contextOmitted":{}},{"type":"toolCall","id":"c7","name":"grep","arguments":"just_a_string"}],"stopReason":"toolUse"}"#,
        r#"{"role":"assistant","content":"plain answer z/a.rs","stopReason":"error","errorMessage":"Error: ECONNRESET at 16c43069c43a\nmore"}"#,
        r#"{"role":"assistant","content":[],"errorMessage":7}"#,
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"c8","name":"x","arguments":{"k":"nested_call_arg"}}],"content":"last wins b/c.rs"}"#,
        r#"{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"line one\n"},{"type":"image","data":"z"},{"type":"text","text":"error: cannot find ENOENT\n"},{"type":"text","text":"tail d/e.rs"}],"isError":false}"#,
        r#"{"role":"toolResult","toolCallId":"c2","toolName":"bash","content":[{"type":"text","text":"\n  fatal: boom E5402\nnext"}],"isError":true}"#,
        r#"{"role":"toolResult","toolCallId":"c3","toolName":"bash","content":"failed: 1","isError":1}"#,
        r#"{"role":"toolResult","toolCallId":"c4","toolName":"read","content":"hidden f/g.rs","contextOmitted":true}"#,
        r#"{"role":"toolResult","toolCallId":"c5","toolName":"read","content":"zero h/i.rs","contextOmitted":0}"#,
        r#"{"role":"toolResult","toolCallId":"c6","toolName":"read","content":"empty j/k.rs","contextOmitted":""}"#,
        r#"{"role":"toolResult","toolCallId":"c7","toolName":"read","content":"null l/m.rs","contextOmitted":null}"#,
        r#"{"role":"toolResult","toolCallId":"c8","toolName":"read","content":"big n/o.rs","contextOmitted":1e400}"#,
        r#"{"role":"toolResult","toolCallId":"c9","toolName":"read","content":"array p/q.rs","contextOmitted":[]}"#,
        r#"{"role":"toolResult","toolCallId":"c10","toolName":"read","content":"false r/s.rs","contextOmitted":false}"#,
        r#"{"role":"toolResult","toolCallId":"c11","toolName":"read","content":"string t/u.rs","contextOmitted":"0"}"#,
        r#"{"role":"toolResult","toolCallId":"c12","toolName":"read","content":[{"type":"text","text":"only v/w.rs"},{"type":"text"}]}"#,
        r#"{"role":"toolResult","toolCallId":"c13","toolName":"read"}"#,
        r#"{"role":"toolResult","toolCallId":"c14","toolName":"read","content":{"x":1}}"#,
        r#"{"role":"assistant","content":[{"type":"text","text":"listing"},{"type":"toolCall","id":"u1","name":"ls","arguments":{"dir":"useless/dir"}}],"stopReason":"toolUse"}"#,
        r#"{"role":"toolResult","toolCallId":"u1","toolName":"ls","content":"nothing here","useless":true}"#,
        r#"{"role":"custom","customType":"handoff","content":"doc x/y.rs","display":true,"details":{"anchors":[{"kind":"hex","text":"abc1234","count":2}]}}"#,
        r#"{"role":"bashExecution","command":"cargo test --frozen","output":"error[E0425]: cannot find value\n","exitCode":1}"#,
        r#"{"role":"branchSummary","summary":"went to z/z.rs","fromId":"e1"}"#,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    m.push(deep);
    m.push(r#"{"role":"user","content":"thanks"}"#.to_string());
    m
}

#[test]
fn edge_case_messages() {
    let s = session_of(&edge_cases());
    let read = verify_in_place_anchors(&s).unwrap_or_else(|e| panic!("{e}"));
    // Every user, developer, assistant and tool-result message but the one nested too deep.
    assert_eq!(read, 29);
}

/// A plan's anchors over the edge cases: the region's identifiers are found (read in place),
/// a hidden call's and a hidden result's are not.
#[test]
fn a_plan_harvests_the_region_in_place() {
    let s = session_of(&edge_cases());
    let settings = CompactionSettings {
        keep_recent_tokens: 1,
        ..Default::default()
    };
    let plan = plan_compaction(&s, &settings, PlanOptions::default()).unwrap();
    let texts: Vec<&str> = plan
        .anchors(&s)
        .unwrap()
        .index
        .all()
        .iter()
        .map(|a| a.text.as_str())
        .collect();
    for want in [
        "src/a.rs",
        "r/s.rs",
        "v/w.rs",
        "48218",
        "n/o.rs",
        "d/e.rs",
        "zero_omitted",
    ] {
        assert!(texts.contains(&want), "{want} missing from {texts:?}");
    }
    for hidden in ["hidden_call", "f/g.rs", "secret/path.rs", "t/u.rs"] {
        assert!(!texts.contains(&hidden), "{hidden} in {texts:?}");
    }
}

/// The plain history window joined from each message's own transcript, written while sizing
/// it (issue 42), equals the window written from its messages: one window and several, with
/// and without useless pairs (whose messages are written from their views), on generated
/// sessions, the conformance session and the edge cases.
#[test]
fn history_windows_joined_from_pieces_equal_the_written_ones() {
    let mut sessions: Vec<(String, Session)> = (1..4)
        .map(|seed| {
            let opts = GenOptions {
                seed,
                entries: 600,
                ..GenOptions::default()
            };
            (format!("seed {seed}"), load(generate(&opts)))
        })
        .collect();
    sessions.push((
        "large-session".into(),
        load(common::read("large-session/session.jsonl")),
    ));
    sessions.push(("edge cases".into(), session_of(&edge_cases())));
    let mut joined = 0;
    for (name, s) in &sessions {
        for window in [PlanOptions::default().context_window, 16_000] {
            let settings = CompactionSettings {
                keep_recent_tokens: 1,
                ..Default::default()
            };
            let options = PlanOptions {
                context_window: window,
                ..PlanOptions::default()
            };
            let Ok(mut plan) = plan_compaction(s, &settings, options) else {
                continue;
            };
            // Every window in turn: answer each and check the next.
            for _ in 0..6 {
                joined += plan
                    .verify_joined_window(s)
                    .unwrap_or_else(|e| panic!("{name}, {window}: {e}"));
                let Some(id) = plan
                    .pending()
                    .iter()
                    .find(|r| r.id.starts_with("history-"))
                    .map(|r| r.id.clone())
                else {
                    break;
                };
                plan.answer(s, &id, "Summary of the window.").unwrap();
            }
        }
    }
    assert!(joined > 1_000, "{joined} messages joined");
}

/// A plan shares each message's view between its readers (issue 42: the history feed's check
/// and sizing, the turn prefix): the plan
/// equals the one made with every reader reading each message itself, for every strategy that
/// plans, small and large summarizer windows, short and long kept regions, on generated
/// sessions, the conformance sessions and the edge cases.
#[test]
fn shared_views_make_the_same_plan() {
    use ctxfold::compaction::plan::verify_shared_views;
    use ctxfold::settings::Strategy;
    let mut sessions: Vec<(String, Session)> = (1..5)
        .map(|seed| {
            let opts = GenOptions {
                seed,
                entries: 500,
                ..GenOptions::default()
            };
            (format!("seed {seed}"), load(generate(&opts)))
        })
        .collect();
    for file in ["large-session/session.jsonl", "rules/session.jsonl"] {
        sessions.push((file.into(), load(common::read(file))));
    }
    sessions.push(("edge cases".into(), session_of(&edge_cases())));
    let mut shared = 0;
    for (name, s) in &sessions {
        for strategy in [
            Strategy::ContextFull,
            Strategy::Handoff,
            Strategy::Snapcompact,
        ] {
            for keep in [1, 2_000, 20_000] {
                for window in [PlanOptions::default().context_window, 16_000] {
                    let settings = CompactionSettings {
                        strategy,
                        keep_recent_tokens: keep,
                        ..Default::default()
                    };
                    let options = PlanOptions {
                        context_window: window,
                        ..PlanOptions::default()
                    };
                    if plan_compaction(s, &settings, options.clone()).is_err() {
                        continue;
                    }
                    shared += verify_shared_views(s, &settings, options).unwrap_or_else(|e| {
                        panic!("{name}, {strategy:?}, keep {keep}, window {window}: {e}")
                    });
                }
            }
        }
    }
    assert!(shared > 5_000, "{shared} views shared");
}
