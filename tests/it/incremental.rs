//! What the session keeps between calls (the path to the last leaf, moved by what changed;
//! the state of that path) gives exactly what a computation from scratch gives, under any
//! sequence of appends, branch moves, prunes and compactions (issue 42 item 4); a position on
//! the kept path is the one a walk finds.

use ctxfold::archive::blocks::{FrameData, HistoryOptions};
use ctxfold::context::{build_context_with, build_counted_context, BuildOptions, LeafSelector};
use ctxfold::session::Session;
use ctxfold::settings::Strategy as Method;
use ctxfold::tokens::ByteEstimate;
use ctxfold_testkit::invariants;
use ctxfold_testkit::spec::{self, Body, Call, EntrySpec, Parent, SessionSpec, Tool};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::json;

/// One step of a host's life with a session.
#[derive(Debug, Clone)]
enum Op {
    /// A user message, an assistant turn with `calls` tool calls, or a tool result.
    Append {
        kind: u8,
        calls: u8,
    },
    /// Moves the leaf to the entry at this fraction of the entries.
    Branch(u16),
    ResetLeaf,
    /// Asks for the path of another entry (the kept path moves there, not to the leaf).
    Look(u16),
    Prune {
        protect: u16,
        start: bool,
    },
    Compact {
        keep: u16,
        handoff: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u8..3, 0u8..3).prop_map(|(kind, calls)| Op::Append { kind, calls }),
        2 => any::<u16>().prop_map(Op::Branch),
        1 => Just(Op::ResetLeaf),
        2 => any::<u16>().prop_map(Op::Look),
        1 => (0u16..2000, any::<bool>()).prop_map(|(protect, start)| Op::Prune { protect, start }),
        1 => (0u16..3000, any::<bool>()).prop_map(|(keep, handoff)| Op::Compact { keep, handoff }),
    ]
}

/// A chain of turns with a branch or two (the trees of `properties.rs` are wilder; here the
/// operations make the shape).
fn start() -> impl Strategy<Value = SessionSpec> {
    let body = prop_oneof![
        "[a-z ]{0,40}".prop_map(|text| Body::User { text, images: 0 }),
        ("[a-z ]{0,40}", 0u8..4, any::<bool>()).prop_map(|(text, id, call)| Body::Assistant {
            text,
            thinking: None,
            calls: if call {
                vec![Call {
                    id,
                    tool: Tool::Read,
                    path: "src/a.rs".into(),
                }]
            } else {
                Vec::new()
            },
            usage: Some(1000 + u64::from(id) * 10),
            stop: u8::from(call),
        }),
        (0u8..4, "[a-z ]{0,200}").prop_map(|(call, text)| Body::ToolResult {
            call,
            tool: Tool::Read,
            text,
            is_error: false,
            useless: false,
        }),
    ];
    let parent = prop_oneof![12 => Just(Parent::Back(1)), 1 => (2usize..5).prop_map(Parent::Back)];
    prop::collection::vec((parent, body), 0..24).prop_map(|entries| SessionSpec {
        entries: entries
            .into_iter()
            .map(|(parent, body)| EntrySpec {
                parent,
                dup_id: None,
                body,
            })
            .collect(),
        trailing_newline: true,
    })
}

fn pick(s: &Session, at: u16) -> Option<usize> {
    (!s.is_empty()).then(|| usize::from(at) * s.len() / (usize::from(u16::MAX) + 1))
}

fn apply(s: &mut Session, op: &Op, n: i64) -> Result<(), String> {
    let now = 1_800_000_000_000 + n * 1000;
    match op {
        Op::Append { kind: 0, .. } => {
            s.append_message(json!({"role": "user", "content": format!("turn {n}")}), now)
                .map_err(|e| e.to_string())?;
        }
        Op::Append { kind: 1, calls } => {
            let mut content = vec![json!({"type": "text", "text": format!("answer {n}")})];
            for c in 0..*calls {
                content.push(
                    json!({"type": "toolCall", "id": format!("c{n}-{c}"), "name": "read",
                                    "arguments": {"path": format!("f{c}.rs")}}),
                );
            }
            let stop = if *calls > 0 { "toolUse" } else { "stop" };
            s.append_message(
                json!({"role": "assistant", "content": content, "provider": "anthropic",
                       "model": "claude-opus-4-7", "stopReason": stop,
                       "usage": {"input": 1000 + n, "output": 10}}),
                now,
            )
            .map_err(|e| e.to_string())?;
        }
        Op::Append { .. } => {
            s.append_message(
                json!({"role": "toolResult", "toolCallId": format!("c{}-0", n - 1),
                       "toolName": "read", "content": [{"type": "text", "text": "x".repeat(400)}],
                       "isError": false}),
                now,
            )
            .map_err(|e| e.to_string())?;
        }
        Op::Branch(at) => {
            if let Some(i) = pick(s, *at) {
                let id = s.entries()[i].id().to_string();
                s.branch(&id).map_err(|e| e.to_string())?;
            }
        }
        Op::ResetLeaf => s.reset_leaf(),
        Op::Look(at) => {
            if let Some(i) = pick(s, *at) {
                if s.path_to(i) != walked(s, i) {
                    return Err(format!("path to entry {i}"));
                }
            }
        }
        Op::Prune { protect, start } => invariants::prune(s, u64::from(*protect), *start)?,
        Op::Compact { keep, handoff } => {
            let method = if *handoff {
                Method::Handoff
            } else {
                Method::ContextFull
            };
            invariants::compact(s, method, u64::from(*keep), "summary")?;
        }
    }
    Ok(())
}

/// The path to `index` by following parents, root first.
fn walked(s: &Session, index: usize) -> Vec<usize> {
    let mut path = vec![index];
    while let Some(p) = s.parent_of(*path.last().unwrap()) {
        path.push(p);
    }
    path.reverse();
    path
}

/// What the session answers about its leaf, against a copy loaded from its bytes (nothing
/// kept) with the leaf at the same entry.
fn check(s: &Session) -> Result<(), String> {
    let Some(leaf) = s.leaf() else {
        return Ok(());
    };
    let path = s.path_to(leaf);
    if path != walked(s, leaf) {
        return Err("path to the leaf".into());
    }
    for e in 0..s.len() {
        if s.position_on_path(&path, e) != path.iter().position(|&i| i == e) {
            return Err(format!("position of entry {e} on the path"));
        }
    }
    let mut fresh = invariants::load(&s.to_bytes()).map_err(|e| e.to_string())?;
    if fresh.len() != s.len() {
        return Err("the copy has other entries".into());
    }
    if fresh.path_state(leaf) != s.path_state(leaf) {
        return Err("path state".into());
    }
    let id = s.entries()[leaf].id().to_string();
    if fresh.index_of(&id) != Some(leaf) {
        return Ok(()); // a repeated id: the copy cannot name this leaf
    }
    fresh.branch(&id).map_err(|e| e.to_string())?;
    for counted in [false, true] {
        let history = HistoryOptions {
            data: if counted {
                FrameData::Omitted
            } else {
                FrameData::Inline
            },
            ..HistoryOptions::default()
        };
        let opts = BuildOptions {
            leaf: LeafSelector::Current,
            ..BuildOptions::default()
        };
        let build = |x: &Session| {
            if counted {
                build_counted_context(x, &opts, &history)
            } else {
                build_context_with(x, &opts, &history)
            }
        };
        let (a, b) = (
            build(s).map_err(|e| e.to_string())?,
            build(&fresh).map_err(|e| e.to_string())?,
        );
        if a.to_json(s) != b.to_json(&fresh) || *a.path != *b.path {
            return Err(format!("context (counted: {counted})"));
        }
        let (ea, eb) = (
            a.estimate_context_tokens(s, &ByteEstimate),
            b.estimate_context_tokens(&fresh, &ByteEstimate),
        );
        if (ea.tokens, ea.last_usage_index) != (eb.tokens, eb.last_usage_index)
            || a.estimated_tokens(s) != b.estimated_tokens(&fresh)
            || s.tokens_before(&a.path) != fresh.tokens_before(&b.path)
        {
            return Err(format!("token figures (counted: {counted})"));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(Config { cases: 192, failure_persistence: None, ..Config::default() })]

    /// After every operation, the path, its state, the context and its token figures at the
    /// leaf are those a freshly loaded copy computes.
    #[test]
    fn kept_paths_and_states_equal_a_fresh_computation(
        spec in start(),
        ops in prop::collection::vec(op(), 1..40),
    ) {
        let mut s = invariants::load(&spec::write(&spec)).unwrap();
        check(&s).map_err(|e| TestCaseError::fail(format!("{e} after loading")))?;
        for (n, op) in ops.iter().enumerate() {
            apply(&mut s, op, n as i64).map_err(|e| TestCaseError::fail(format!("{op:?}: {e}")))?;
            check(&s).map_err(|e| TestCaseError::fail(format!("{e} after {n}: {op:?}")))?;
        }
    }
}

/// A long chain, a turn at a time, then a move to a side branch and back: the kept path
/// moves by what changed and stays the walked one.
#[test]
fn the_kept_path_follows_appends_and_branch_moves() {
    let mut s = invariants::load(
        br#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
    )
    .unwrap();
    for n in 0..300 {
        apply(&mut s, &Op::Append { kind: 0, calls: 0 }, n).unwrap();
        apply(&mut s, &Op::Append { kind: 1, calls: 0 }, n).unwrap();
        if n % 7 == 0 {
            check(&s).unwrap();
        }
    }
    let main_leaf = s.entries()[s.leaf().unwrap()].id().to_string();
    let fork = s.entries()[150].id().to_string();
    s.branch(&fork).unwrap();
    apply(&mut s, &Op::Append { kind: 0, calls: 0 }, 1000).unwrap();
    check(&s).unwrap();
    assert_eq!(s.path_to(s.leaf().unwrap()).len(), 152);
    s.branch(&main_leaf).unwrap();
    check(&s).unwrap();
    assert_eq!(s.path_to(s.leaf().unwrap()).len(), 600);
    // A context held across the move: the session's path is copied, the held one unchanged.
    let held = build_context_with(&s, &BuildOptions::default(), &HistoryOptions::default())
        .unwrap()
        .path;
    s.branch(&fork).unwrap();
    check(&s).unwrap();
    assert_eq!(held.len(), 600);
    assert_eq!(*held, walked(&s, s.index_of(&main_leaf).unwrap()));
}

/// The heads of an LLM context are kept between builds and follow a rewrite of their line.
#[test]
fn kept_message_heads_follow_their_lines() {
    let mut s = invariants::load(
        br#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
    )
    .unwrap();
    apply(&mut s, &Op::Append { kind: 0, calls: 0 }, 0).unwrap();
    apply(&mut s, &Op::Append { kind: 1, calls: 1 }, 1).unwrap();
    apply(&mut s, &Op::Append { kind: 2, calls: 0 }, 2).unwrap();
    let build = |s: &Session| {
        build_context_with(s, &BuildOptions::default(), &HistoryOptions::default()).unwrap()
    };
    let (a, b) = (build(&s), build(&s));
    assert_eq!(a.messages.len(), 3);
    for (x, y) in a.messages.iter().zip(&b.messages) {
        assert!(std::rc::Rc::ptr_eq(&x.head, &y.head), "entry {}", x.entry);
    }
    let assistant = a.messages[1].entry;
    s.set_entry_field(assistant, &["message"], "model", &json!("other"))
        .unwrap();
    let c = build(&s);
    assert_eq!(c.messages[1].head.model.as_deref(), Some("other"));
    assert!(!std::rc::Rc::ptr_eq(
        &a.messages[1].head,
        &c.messages[1].head
    ));
    assert!(std::rc::Rc::ptr_eq(
        &a.messages[0].head,
        &c.messages[0].head
    ));
    check(&s).unwrap();
}
