//! The trigger state machine under a host loop (testkit `triggers::Harness`): random settings,
//! models, turns (stop reasons, usage, overflow and payload wordings, length stops, foreign and
//! stale turns), prompts, idle periods, model switches, promotions and compaction outcomes.
//! No panic; no compaction loop; at most three length recoveries in a row; no continuation in
//! a blocking decision; an overflow never goes unanswered when a method can run.
#![no_main]
use arbitrary::{Result, Unstructured};
use ctxfold::settings::CompactionSettings;
use ctxfold::triggers::ModelInfo;
use ctxfold_testkit::triggers::{Harness, Op, Outcome, Reply, Stop, Turn, ERROR_TEXTS};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

const WINDOWS: [u64; 6] = [0, 8_000, 32_000, 128_000, 200_000, 1_000_000];
const METHODS: [&str; 6] = [
    "remote",
    "snapcompact",
    "handoff",
    "shake",
    "soft",
    "window",
];

fn tokens(u: &mut Unstructured<'_>, window: u64) -> Result<u64> {
    let top = window.max(50_000).saturating_mul(2);
    Ok(match u.int_in_range(0..=3u8)? {
        // Around the window's interesting points.
        0 => window.saturating_sub(u.int_in_range(0..=20_000u64)?),
        1 => window.saturating_add(u.int_in_range(0..=5_000u64)?),
        _ => u.int_in_range(0..=top)?,
    })
}

fn settings(u: &mut Unstructured<'_>) -> Result<CompactionSettings> {
    let mut v = json!({});
    let o = v.as_object_mut().expect("an object");
    if u.ratio(1, 8)? {
        o.insert("enabled".into(), false.into());
    }
    if u.ratio(1, 3)? {
        let s = u.choose(&["context-full", "handoff", "snapcompact", "shake", "off"])?;
        o.insert("strategy".into(), (*s).into());
    }
    if u.ratio(1, 2)? {
        let mut order = Vec::new();
        for _ in 0..u.int_in_range(0..=6u8)? {
            order.push(Value::from(*u.choose(&METHODS)?));
        }
        o.insert("methodOrder".into(), order.into());
    }
    if u.ratio(1, 3)? {
        o.insert(
            "reserveTokens".into(),
            u.int_in_range(0..=100_000u64)?.into(),
        );
    }
    if u.ratio(1, 4)? {
        o.insert("thresholdPercent".into(), u.int_in_range(0..=100u8)?.into());
    }
    if u.ratio(1, 4)? {
        o.insert(
            "thresholdTokens".into(),
            u.int_in_range(0..=300_000u64)?.into(),
        );
    }
    if u.ratio(1, 3)? {
        let value: Value = match u.int_in_range(0..=2u8)? {
            0 => u.int_in_range(1..=300_000u64)?.into(),
            1 => format!("{}k", u.int_in_range(1..=300u16)?).into(),
            _ => format!("{}%", u.int_in_range(1..=100u8)?).into(),
        };
        let key = *u.choose(&["p/m0", "p/*", "p/m1", "q/*"])?;
        o.insert("modelThresholds".into(), json!({ key: value }));
    }
    if u.ratio(1, 3)? {
        o.insert(
            "remoteEndpoint".into(),
            "https://summarizer.example/c".into(),
        );
    }
    o.insert("autoContinue".into(), u.arbitrary::<bool>()?.into());
    o.insert("idleEnabled".into(), u.arbitrary::<bool>()?.into());
    o.insert(
        "idleTimeoutSeconds".into(),
        u.int_in_range(0..=600u16)?.into(),
    );
    o.insert(
        "idleThresholdTokens".into(),
        u.int_in_range(0..=300_000u64)?.into(),
    );
    o.insert("midTurnEnabled".into(), u.arbitrary::<bool>()?.into());
    Ok(CompactionSettings::from_json(&v).expect("the fuzzer writes valid settings"))
}

fn models(u: &mut Unstructured<'_>) -> Result<Vec<ModelInfo>> {
    let n = u.int_in_range(1..=3usize)?;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(ModelInfo {
            provider: (*u.choose(&["p", "q"])?).into(),
            id: format!("m{i}"),
            context_window: *u.choose(&WINDOWS)?,
            max_output_tokens: u.int_in_range(0..=64_000u64)?,
            accepts_images: u.arbitrary()?,
        });
    }
    Ok(out)
}

fn reply(u: &mut Unstructured<'_>) -> Result<Reply> {
    let outcome = match u.int_in_range(0..=5u8)? {
        0 => Outcome::NothingToCompact,
        1 => Outcome::Aborted,
        2 => Outcome::Failed,
        _ => Outcome::Compacted {
            per_mille: u.int_in_range(0..=1200u16)?,
        },
    };
    Ok(Reply {
        promoted: u.ratio(1, 4)?,
        outcome,
        queued_messages: u.ratio(1, 5)?,
    })
}

fn op(u: &mut Unstructured<'_>, window: u64) -> Result<Op> {
    Ok(match u.int_in_range(0..=9u8)? {
        0 => Op::Prompt {
            can_promote: u.ratio(1, 4)?,
            stored_tokens: if u.arbitrary()? {
                Some(tokens(u, window)?)
            } else {
                None
            },
            reply: reply(u)?,
        },
        1 => Op::Idle {
            after_ms: u.int_in_range(0..=900_000u64)?,
            context_tokens: tokens(u, window)?,
            reply: reply(u)?,
        },
        2 if u.ratio(1, 3)? => Op::Switch {
            model: u.int_in_range(0..=2usize)?,
            context_tokens: tokens(u, window)?,
            reply: reply(u)?,
        },
        3 if u.ratio(1, 3)? => Op::Manual {
            outcome: reply(u)?.outcome,
            interrupted_turn: u.arbitrary()?,
        },
        _ => {
            let stop = *u.choose(&[
                Stop::Stop,
                Stop::Stop,
                Stop::ToolUse,
                Stop::Length,
                Stop::Length,
                Stop::Error,
                Stop::Error,
                Stop::Aborted,
            ])?;
            let error = if u.ratio(1, 8)? {
                u.arbitrary::<String>()?
            } else {
                (*u.choose(&ERROR_TEXTS)?).to_string()
            };
            let input = tokens(u, window)?;
            Op::Turn(
                Turn {
                    stop,
                    input: if stop == Stop::Error && u.arbitrary()? {
                        0
                    } else {
                        input
                    },
                    output: u.int_in_range(0..=40_000u64)?,
                    cache_read: if u.ratio(1, 4)? {
                        tokens(u, window)?
                    } else {
                        0
                    },
                    error,
                    text: u.arbitrary()?,
                    tool_call: u.ratio(1, 3)?,
                    foreign: u.ratio(1, 10)?,
                    stale: u.ratio(1, 10)?,
                    mid_run: u.ratio(1, 6)?,
                    can_promote: u.ratio(1, 5)?,
                    stored_tokens: if u.arbitrary()? {
                        Some(tokens(u, window)?)
                    } else {
                        None
                    },
                    freed_tokens: if u.ratio(1, 4)? {
                        u.int_in_range(0..=50_000u64)?
                    } else {
                        0
                    },
                },
                reply(u)?,
            )
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(settings) = settings(&mut u) else {
        return;
    };
    let Ok(models) = models(&mut u) else {
        return;
    };
    let window = models[0].context_window;
    let mut h = Harness::new(settings, models);
    for _ in 0..200 {
        let Ok(op) = op(&mut u, window) else {
            break;
        };
        if let Err(e) = h.step(&op) {
            panic!("{e}\nafter {op:?}");
        }
    }
});
