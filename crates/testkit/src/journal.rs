//! The journal's invariant (spec: compaction §1, §6.7): a store that applies every
//! `changes()` to the bytes it holds holds `to_bytes()` (with the final `\n` the line model
//! gives), whatever sequence of appends, prunes, shakes, compactions, navigations and labels
//! came before; a mark of another session, a garbage one or none gives a reset; an older mark
//! applied to the bytes stored at it gives the same file; an operation that fails leaves the
//! journal as it was. Run by the property test `it::journal` and the fuzz target `journal`.

use crate::invariants::{self, Check};
use ctxfold::session::{apply_changes, stored_bytes, Changes, LoadOptions, Session};
use ctxfold::settings::Strategy;
use ctxfold::shake::{Preset, ShakeConfig};
use serde_json::{json, Value};
use std::borrow::Cow;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// One step of a journal run.
#[derive(Debug, Clone)]
pub enum Op {
    /// A user message with this text.
    User(String),
    /// An assistant message calling a tool (its result follows with `size` characters).
    ToolTurn { size: usize },
    /// A message the core refuses (no role): nothing changes.
    Invalid,
    /// Both pruning passes.
    Prune { protect: u64, start: bool },
    /// A shake with a preset (0 default, 1 aggressive, 2 rescue).
    Shake { preset: u8 },
    /// A compaction keeping this many recent tokens.
    Compact { keep: u64 },
    /// Moves the leaf to the entry at this index (modulo the count); `None` resets it.
    Branch(Option<usize>),
    /// Labels the entry at this index (modulo the count); `None` clears.
    Label(usize, Option<String>),
    /// Saves through `changes()` from the newest mark.
    Save,
    /// Saves from the mark of the `k`-th save back (modulo the kept ones) onto its bytes.
    SaveFrom(usize),
    /// A mark of another session object, a garbage mark and none each give a reset.
    Foreign,
}

/// The changes with their texts owned (to compare results across calls).
fn owned(c: &Changes<'_>) -> Changes<'static> {
    Changes {
        since: c.since.clone(),
        mark: c.mark.clone(),
        reset: c.reset,
        rewritten: c
            .rewritten
            .iter()
            .map(|(i, t)| (*i, Cow::Owned(t.to_string())))
            .collect(),
        appended: c
            .appended
            .iter()
            .map(|t| Cow::Owned(t.to_string()))
            .collect(),
        line_count: c.line_count,
    }
}

/// A store following the journal: (mark, bytes held) after each save, newest last.
struct Store {
    saves: Vec<(Option<String>, Vec<u8>)>,
}

impl Store {
    fn save(&mut self, s: &Session, from: usize) -> Check {
        let k = self.saves.len() - 1 - from % self.saves.len();
        let (mark, held) = self.saves[k].clone();
        let c = s.changes(mark.as_deref());
        if mark.is_none() {
            ensure!(c.reset, "no mark but no reset");
        }
        if c.reset {
            ensure!(c.rewritten.is_empty(), "a reset with rewritten lines");
            ensure!(c.since.is_none(), "a reset that starts from a mark");
        }
        ensure!(
            c.line_count as usize == c.appended.len() || !c.reset,
            "a reset's line count is not its line count"
        );
        ensure!(
            c.rewritten.windows(2).all(|w| w[0].0 < w[1].0),
            "rewritten lines out of order or repeated"
        );
        let after = apply_changes(&held, &c);
        let want = stored_bytes(s);
        ensure!(
            after == want,
            "changes since {mark:?} applied to the stored bytes differ from to_bytes():\n{}\nvs\n{}",
            String::from_utf8_lossy(&after),
            String::from_utf8_lossy(&want)
        );
        let lines = after.iter().filter(|&&b| b == b'\n').count();
        ensure!(
            lines == c.line_count as usize,
            "line count {} for {lines} lines",
            c.line_count
        );
        self.saves.push((Some(c.mark.clone()), after));
        if self.saves.len() > 6 {
            self.saves.remove(0);
        }
        Ok(())
    }
}

fn entry_id(s: &Session, k: usize) -> Option<String> {
    (!s.is_empty()).then(|| s.entries()[k % s.len()].id().to_string())
}

/// Runs `ops` on the session loaded from `bytes`, checking the invariant at every save and
/// after the last step. `Err` says what broke; a file that does not load is `Ok`.
pub fn run(bytes: &[u8], ops: &[Op]) -> Check {
    let Ok(mut s) = Session::load(bytes.to_vec(), LoadOptions::default()) else {
        return Ok(());
    };
    // A store holding the loaded bytes goes on from the load's mark; else it starts empty.
    let first = match s.load_mark() {
        Some(m) => {
            ensure!(
                s.to_bytes() == bytes,
                "a load mark for a file the load changed"
            );
            (Some(m), bytes.to_vec())
        }
        None => (None, Vec::new()),
    };
    let mut store = Store { saves: vec![first] };
    let mut now = 1_800_000_000_000i64;
    for op in ops {
        now += 1000;
        let mark = store.saves.last().and_then(|(m, _)| m.clone());
        let journal_before = owned(&s.changes(mark.as_deref()));
        let bytes_before = s.to_bytes();
        match op {
            Op::User(text) => {
                s.append_message(json!({"role": "user", "content": text}), now)
                    .map_err(|e| format!("append: {e}"))?;
            }
            Op::ToolTurn { size } => {
                let call = format!("c{now}");
                let assistant = json!({"role": "assistant", "content": [
                    {"type": "toolCall", "id": call, "name": "read", "arguments": {"path": "src/a.ts"}}
                ], "stopReason": "toolUse", "usage": {"input": 100, "output": 10, "cacheRead": 0, "cacheWrite": 0}});
                s.append_message(assistant, now)
                    .map_err(|e| format!("append: {e}"))?;
                let result = json!({"role": "toolResult", "toolCallId": call, "toolName": "read",
                    "content": [{"type": "text", "text": "x ".repeat(*size)}], "isError": false});
                s.append_message(result, now)
                    .map_err(|e| format!("append: {e}"))?;
            }
            Op::Invalid => {
                ensure!(
                    s.append_message(json!({"content": "no role"}), now)
                        .is_err(),
                    "a message without a role was taken"
                );
            }
            Op::Prune { protect, start } => invariants::prune(&mut s, *protect, *start)?,
            Op::Shake { preset } => {
                let preset =
                    [Preset::Default, Preset::Aggressive, Preset::Rescue][*preset as usize % 3];
                let mut cfg = ShakeConfig::preset(preset);
                cfg.min_savings = 0;
                cfg.protect_tokens = 0;
                invariants::shake(&mut s, &cfg, None)?;
            }
            Op::Compact { keep } => {
                invariants::compact(&mut s, Strategy::ContextFull, *keep, "the summary")?;
            }
            Op::Branch(k) => match k.and_then(|k| entry_id(&s, k)) {
                Some(id) => s.branch(&id).map_err(|e| format!("branch: {e}"))?,
                None => s.reset_leaf(),
            },
            Op::Label(k, label) => {
                if let Some(id) = entry_id(&s, *k) {
                    s.append_label(&id, label.as_deref(), now)
                        .map_err(|e| format!("label: {e}"))?;
                }
            }
            Op::Save => store.save(&s, 0)?,
            Op::SaveFrom(k) => store.save(&s, *k)?,
            Op::Foreign => {
                let other = Session::load(stored_bytes(&s), LoadOptions::default())
                    .map_err(|e| format!("reload: {e}"))?;
                let foreign = other.changes(None).mark;
                for m in [
                    Some(foreign.as_str()),
                    Some("j1.zz.1.1"),
                    Some("j1.0.0.99999999999"),
                    None,
                ] {
                    let c = s.changes(m);
                    ensure!(c.reset, "mark {m:?} did not give a reset");
                    ensure!(
                        apply_changes(b"", &c) == stored_bytes(&s),
                        "a reset is not the file"
                    );
                }
            }
        }
        if s.to_bytes() == bytes_before {
            // Nothing changed (a refused step, a save, a navigation): neither did the journal.
            ensure!(
                owned(&s.changes(mark.as_deref())) == journal_before,
                "{op:?} left the file as it was but changed the journal"
            );
        }
    }
    store.save(&s, 0)?;
    // The stored file loads to the same session.
    let held = &store
        .saves
        .last()
        .map(|(_, b)| b.clone())
        .unwrap_or_default();
    let again = Session::load(held.clone(), LoadOptions::default())
        .map_err(|e| format!("the stored file does not load: {e}"))?;
    ensure!(
        stored_bytes(&again) == *held,
        "the stored file does not save as itself"
    );
    Ok(())
}

/// An op from small numbers (the fuzz target and the property test draw these).
pub fn op(kind: u8, a: u64, b: bool) -> Op {
    match kind % 12 {
        0 | 1 => Op::User(format!("turn {a} ✓")),
        2 | 3 => Op::ToolTurn {
            size: (a % 400) as usize,
        },
        4 => Op::Invalid,
        5 => Op::Prune {
            protect: a % 2_000,
            start: b,
        },
        6 => Op::Shake {
            preset: (a % 3) as u8,
        },
        7 => Op::Compact { keep: a % 3_000 },
        8 => Op::Branch(b.then_some(a as usize)),
        9 => Op::Label(a as usize, b.then(|| format!("l{a}"))),
        10 => {
            if b {
                Op::Save
            } else {
                Op::SaveFrom(a as usize)
            }
        }
        _ => {
            if b {
                Op::Foreign
            } else {
                Op::Save
            }
        }
    }
}

/// A value the journal texts keep (for debugging output).
pub fn describe(c: &Changes<'_>) -> Value {
    json!({
        "since": c.since, "mark": c.mark, "reset": c.reset, "lineCount": c.line_count,
        "rewritten": c.rewritten.iter().map(|(i, t)| json!([i, t])).collect::<Vec<_>>(),
        "appended": c.appended,
    })
}
