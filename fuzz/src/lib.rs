//! Shared by the fuzz targets: the testkit's session description (also built by the property
//! tests' strategies), built here from the fuzzer's bytes, and the invariants both check.

pub use ctxfold_testkit::{invariants, spec};

use arbitrary::{Result, Unstructured};
use spec::{Body, Call, EntrySpec, Parent, SessionSpec, Tool};

const WORDS: [&str; 16] = [
    "fix",
    "the",
    "test",
    "src/a.ts",
    "src/b.rs",
    "README.md",
    "skill://x",
    "é",
    "日本語",
    "\t",
    "\u{1b}[31m",
    "😀",
    "\\",
    "\"",
    "{}",
    "PLAN.md",
];

/// A bashExecution `meta`: an object of the members the output notice reads, each with a
/// value of any type (mostly the expected one), nested where the notice looks inside.
pub fn meta(u: &mut Unstructured<'_>) -> Result<serde_json::Value> {
    const KEYS: [&str; 26] = [
        "truncation",
        "artifactError",
        "source",
        "diagnostics",
        "limits",
        "direction",
        "truncatedBy",
        "totalLines",
        "totalBytes",
        "outputLines",
        "outputBytes",
        "maxBytes",
        "shownRange",
        "headRange",
        "tailRange",
        "elidedBytes",
        "elidedLines",
        "artifactId",
        "nextOffset",
        "partialLine",
        "start",
        "end",
        "messages",
        "summary",
        "type",
        "value",
    ];
    fn value(u: &mut Unstructured<'_>, depth: u32) -> Result<serde_json::Value> {
        use serde_json::Value;
        Ok(match u.int_in_range(0..=9)? {
            0 => Value::Null,
            1 => Value::Bool(u.arbitrary()?),
            2 | 3 => Value::from(u.int_in_range(0u64..=6_000_000)?),
            4 => serde_json::Number::from_f64(u.arbitrary::<f64>()?)
                .map_or(Value::Null, Value::Number),
            5 => Value::from(
                [
                    "middle",
                    "head",
                    "tail",
                    "bytes",
                    "lines",
                    "report",
                    "a.ts:1:2 x",
                    "chars",
                ][u.int_in_range(0..=7)?],
            ),
            6 => Value::from(text(u)?),
            7 if depth < 3 => {
                let n = u.int_in_range(0..=4)?;
                Value::Array((0..n).map(|_| value(u, depth + 1)).collect::<Result<_>>()?)
            }
            _ if depth < 3 => object(u, depth + 1)?,
            _ => Value::from(1),
        })
    }
    fn object(u: &mut Unstructured<'_>, depth: u32) -> Result<serde_json::Value> {
        let mut o = serde_json::Map::new();
        for _ in 0..u.int_in_range(0..=6)? {
            let key = KEYS[u.int_in_range(0..=KEYS.len() - 1)?];
            o.insert(key.into(), value(u, depth)?);
        }
        Ok(serde_json::Value::Object(o))
    }
    object(u, 0)
}

/// Text: a few words from a small pool (so paths repeat and reads supersede each other),
/// sometimes arbitrary characters, sometimes long.
pub fn text(u: &mut Unstructured<'_>) -> Result<String> {
    let mut s = String::new();
    match u.int_in_range(0..=9u8)? {
        0 => s = u.arbitrary::<String>()?,
        1 => {
            let n = u.int_in_range(1..=4000u32)? as usize;
            s = "x".repeat(n);
        }
        _ => {
            for _ in 0..u.int_in_range(0..=12u8)? {
                if !s.is_empty() {
                    s.push(' ');
                }
                s.push_str(u.choose(&WORDS)?);
            }
        }
    }
    Ok(s)
}

fn path(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(u.choose(&[
        "src/a.ts",
        "src/a.ts:1-20",
        "src/b.rs",
        "PLAN.md",
        "skill://s",
        "x",
    ])?
    .to_string())
}

fn back(u: &mut Unstructured<'_>) -> Result<Option<usize>> {
    Ok(if u.ratio(1, 8)? {
        None
    } else {
        Some(u.int_in_range(1..=6usize)?)
    })
}

/// One entry.
pub fn entry(u: &mut Unstructured<'_>) -> Result<EntrySpec> {
    let parent = match u.int_in_range(0..=19u8)? {
        0 => Parent::Null,
        1 => Parent::Unknown,
        2 => Parent::Absent,
        3..=5 => Parent::Back(u.int_in_range(2..=8usize)?),
        _ => Parent::Back(1),
    };
    let dup_id = if u.ratio(1, 30)? {
        Some(u.int_in_range(1..=4usize)?)
    } else {
        None
    };
    let tool = |u: &mut Unstructured<'_>| -> Result<Tool> { Ok(*u.choose(&Tool::ALL)?) };
    let body = match u.int_in_range(0..=15u8)? {
        0 | 1 => Body::User {
            text: text(u)?,
            images: if u.ratio(1, 6)? {
                u.int_in_range(1..=3)?
            } else {
                0
            },
        },
        2..=4 => {
            let mut calls = Vec::new();
            for _ in 0..u.int_in_range(0..=3u8)? {
                calls.push(Call {
                    id: u.int_in_range(0..=7)?,
                    tool: tool(u)?,
                    path: path(u)?,
                });
            }
            Body::Assistant {
                text: text(u)?,
                thinking: if u.ratio(1, 4)? { Some(text(u)?) } else { None },
                calls,
                usage: if u.ratio(3, 4)? {
                    Some(u.int_in_range(0..=300_000u64)?)
                } else {
                    None
                },
                stop: u.int_in_range(0..=4)?,
            }
        }
        5..=7 => Body::ToolResult {
            call: u.int_in_range(0..=7)?,
            tool: tool(u)?,
            text: text(u)?,
            is_error: u.ratio(1, 8)?,
            useless: u.ratio(1, 6)?,
        },
        8 => Body::Bash {
            command: text(u)?,
            output: text(u)?,
            meta: if u.ratio(1, 2)? { Some(meta(u)?) } else { None },
        },
        9 => Body::CustomMessage {
            text: text(u)?,
            display: u.arbitrary()?,
        },
        10 => Body::Compaction {
            summary: text(u)?,
            first_kept: back(u)?,
            tokens_before: u.int_in_range(0..=300_000u64)?,
        },
        11 => Body::BranchSummary {
            from: back(u)?,
            summary: text(u)?,
        },
        12 => Body::Label {
            target: back(u)?,
            label: if u.arbitrary()? { Some(text(u)?) } else { None },
        },
        13 => Body::ModelChange {
            model: u
                .choose(&["openai/gpt-4o", "anthropic/claude-opus-4-7", "x"])?
                .to_string(),
        },
        14 => Body::ThinkingLevel {
            level: u.choose(&["off", "high", "weird"])?.to_string(),
        },
        _ => Body::Raw(u.arbitrary::<String>()?),
    };
    Ok(EntrySpec {
        parent,
        dup_id,
        body,
    })
}

/// A session of up to `max` entries.
pub fn session(u: &mut Unstructured<'_>, max: usize) -> Result<SessionSpec> {
    let n = u.int_in_range(0..=max)?;
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        if u.is_empty() {
            break;
        }
        entries.push(entry(u)?);
    }
    Ok(SessionSpec {
        entries,
        trailing_newline: !u.ratio(1, 10)?,
    })
}
