//! The tools the model can call (issue 38 item 3): `recall_history`, a search over the whole
//! session ([`HistoryIndex`]) answered as text within a token budget, and `context_status`,
//! how full the context is and what the last compaction did. Also the recall pointer every
//! compaction writes beside its anchors when the host offers the tools (`recallTool`).
//!
//! The rules live here, sans-IO: the host passes what only it knows (the model's window, its
//! calibrated count of the context, the answer's budget) as [`ToolFigures`]; the JS shell maps
//! the definitions to each message format and carries the calls out.

use crate::archive::blocks::HistoryOptions;
use crate::context::{build_counted_context, BuildOptions};
use crate::error::{Error, Result};
use crate::session::{CompactionBody, Session};
use crate::settings::CompactionSettings;
use crate::summary::recall::{HistoryIndex, SearchHit, SearchOptions};
pub use crate::summary::recall::{CONTEXT_STATUS, RECALL_HISTORY};
use crate::support::json::object;
use crate::support::time::format_iso;
use serde_json::{Map, Value};

/// Budget of a `recall_history` answer in estimated tokens when the host gives none.
pub const DEFAULT_RECALL_TOKENS: u64 = 2_000;
/// The smallest budget a host may set: the answer's heading and closing line always fit.
pub const MIN_RECALL_TOKENS: u64 = 100;
/// Matches an answer lists when the model asks for no `limit`.
pub const DEFAULT_RECALL_LIMIT: usize = 8;
/// The most matches the model may ask for.
pub const MAX_RECALL_LIMIT: usize = 50;
/// Characters of the query an answer repeats (a long query is cut with `…`).
const QUERY_ECHO: usize = 80;

/// Estimated tokens of a text (4 UTF-16 units a token, spec: compaction §3.1).
pub fn text_tokens(text: &str) -> u64 {
    (text.encode_utf16().count() as u64).div_ceil(4)
}

/// One tool's definition: `{name, description, parameters}` with a JSON-schema `parameters`,
/// the wording from `prompts/*-tool.md`. Each message format wraps it its own way (JS).
fn definition(name: &str, prompt: &str, params: &[(&str, Value)], required: &[&str]) -> Value {
    let (description, lines) = prompt.split_once("\n---").unwrap_or((prompt, ""));
    let said = |p: &str| {
        lines
            .lines()
            .find_map(|l| l.strip_prefix(p).and_then(|r| r.strip_prefix(':')))
            .map(str::trim)
            .unwrap_or_default()
    };
    let mut properties = Map::new();
    for (p, schema) in params {
        let mut schema = schema.clone();
        if let Value::Object(o) = &mut schema {
            o.insert("description".into(), said(p).into());
        }
        properties.insert((*p).to_string(), schema);
    }
    let mut parameters = Map::new();
    parameters.insert("type".into(), "object".into());
    parameters.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        parameters.insert(
            "required".into(),
            Value::Array(required.iter().map(|&r| r.into()).collect()),
        );
    }
    parameters.insert("additionalProperties".into(), false.into());
    object(vec![
        ("name", name.into()),
        ("description", description.trim().into()),
        ("parameters", Value::Object(parameters)),
    ])
}

/// The two tools' definitions, `recall_history` first.
pub fn tool_definitions() -> Vec<Value> {
    let string = object(vec![("type", "string".into())]);
    let limit = object(vec![
        ("type", "integer".into()),
        ("minimum", 1.into()),
        ("maximum", MAX_RECALL_LIMIT.into()),
    ]);
    vec![
        definition(
            RECALL_HISTORY,
            crate::prompts::RECALL_HISTORY_TOOL,
            &[("query", string), ("limit", limit)],
            &["query"],
        ),
        definition(
            CONTEXT_STATUS,
            crate::prompts::CONTEXT_STATUS_TOOL,
            &[],
            &[],
        ),
    ]
}

/// What the host knows and the core does not: `{contextWindow, contextTokens, recallTokens,
/// provider, model}`, each optional (`null` is absent).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolFigures {
    /// The model's context window in tokens (`context_status` needs it).
    pub context_window: Option<u64>,
    /// The host's (calibrated) count of the context; else the core's estimate is used.
    pub context_tokens: Option<u64>,
    /// Budget of a `recall_history` answer (default [`DEFAULT_RECALL_TOKENS`], at least
    /// [`MIN_RECALL_TOKENS`]).
    pub recall_tokens: Option<u64>,
    /// The reading model, for its `modelThresholds` rule.
    pub provider: Option<String>,
    pub model: Option<String>,
}

impl ToolFigures {
    /// Reads the figures; `E_INVALID_ARGUMENT` naming a bad or unknown field.
    pub fn from_json(v: &Value) -> Result<ToolFigures> {
        let bad = |what: &str| Error::InvalidArgument {
            what: format!("context tool figures: {what}"),
        };
        let mut out = ToolFigures::default();
        let Some(o) = v.as_object() else {
            return if v.is_null() {
                Ok(out)
            } else {
                Err(bad("expected an object"))
            };
        };
        let count = |k: &str, v: &Value| {
            v.as_f64()
                .filter(|n| n.fract() == 0.0 && *n >= 0.0 && *n <= 9_007_199_254_740_991.0)
                .map(|n| n as u64)
                .ok_or_else(|| bad(&format!("`{k}` must be a whole number of tokens")))
        };
        for (k, v) in o {
            if v.is_null() {
                continue;
            }
            match k.as_str() {
                "contextWindow" => {
                    out.context_window = Some(count(k, v)?).filter(|&w| w > 0);
                    if out.context_window.is_none() {
                        return Err(bad("`contextWindow` must be at least 1"));
                    }
                }
                "contextTokens" => out.context_tokens = Some(count(k, v)?),
                "recallTokens" => {
                    let t = count(k, v)?;
                    if t < MIN_RECALL_TOKENS {
                        return Err(bad(&format!(
                            "`recallTokens` must be at least {MIN_RECALL_TOKENS}"
                        )));
                    }
                    out.recall_tokens = Some(t);
                }
                "provider" | "model" => {
                    let s = v
                        .as_str()
                        .ok_or_else(|| bad(&format!("`{k}` must be a string")))?;
                    if k == "provider" {
                        out.provider = Some(s.to_string());
                    } else {
                        out.model = Some(s.to_string());
                    }
                }
                other => return Err(bad(&format!("unknown field `{other}`"))),
            }
        }
        Ok(out)
    }
}

/// `recall_history`'s arguments as the model wrote them: `{query, limit?}`.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallArgs {
    pub query: String,
    pub limit: usize,
}

impl RecallArgs {
    /// Reads `{query, limit?}`; a model may write `limit` as a numeric string. A bad argument
    /// is `E_INVALID_ARGUMENT` whose text tells the model what to send instead.
    pub fn from_json(v: &Value) -> Result<RecallArgs> {
        let bad = |what: &str| Error::InvalidArgument {
            what: format!("{RECALL_HISTORY}: {what}"),
        };
        let o = v
            .as_object()
            .ok_or_else(|| bad("the arguments must be an object like {\"query\": \"…\"}"))?;
        let query = o
            .get("query")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .ok_or_else(|| bad("`query` must be a non-empty string"))?;
        let limit = match o.get("limit") {
            None | Some(Value::Null) => DEFAULT_RECALL_LIMIT,
            // Digits only in a string: no float parser for a model's "3".
            Some(l) => l
                .as_f64()
                .or_else(|| {
                    l.as_str()
                        .and_then(|s| s.trim().parse::<u32>().ok())
                        .map(f64::from)
                })
                .filter(|n| n.fract() == 0.0 && *n >= 1.0)
                .map(|n| n.min(MAX_RECALL_LIMIT as f64) as usize)
                .ok_or_else(|| bad("`limit` must be a whole number of at least 1"))?,
        };
        Ok(RecallArgs {
            query: query.to_string(),
            limit,
        })
    }
}

/// `text` cut to `max` characters with `…`.
fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// A hit's time for the model: ISO 8601, or `unknown time`.
fn when(ms: i64) -> String {
    if ms == 0 {
        "unknown time".into()
    } else {
        format_iso(ms.clamp(-8_640_000_000_000_000, 8_640_000_000_000_000))
    }
}

/// One result line: `[entry ID · TIME · ROLE] snippet`, or for a saved artifact
/// `[artifact NAME · entry ID · TIME] snippet` (no entry when it is not known).
fn hit_line(h: &SearchHit) -> String {
    match &h.artifact {
        Some(name) if h.entry_id.is_empty() => {
            format!("[artifact {name} · {}] {}\n", when(h.timestamp), h.snippet)
        }
        Some(name) => format!(
            "[artifact {name} · entry {} · {}] {}\n",
            h.entry_id,
            when(h.timestamp),
            h.snippet
        ),
        None => format!(
            "[entry {} · {} · {}] {}\n",
            h.entry_id,
            when(h.timestamp),
            h.role,
            h.snippet
        ),
    }
}

/// `recall_history`: the best entries for the query, as text within `budget` tokens (the
/// host's `recallTokens`, default [`DEFAULT_RECALL_TOKENS`]). The heading says how many
/// matched; a result that does not fit is left out (a later, shorter one may still fit) and
/// the closing line says how many were; no match is said plainly.
pub fn recall_history(
    index: &mut HistoryIndex,
    session: &Session,
    args: &RecallArgs,
    budget: u64,
) -> Result<String> {
    let budget = budget.max(MIN_RECALL_TOKENS);
    let hits = index.search(
        session,
        &args.query,
        &SearchOptions {
            limit: Some(args.limit),
            ..SearchOptions::default()
        },
    )?;
    let echo = cut_chars(&args.query, QUERY_ECHO).replace(['\n', '\r'], " ");
    if hits.is_empty() {
        return Ok(format!(
            "No stored entry of this conversation matches \"{echo}\". Try other words, or \
             an exact identifier (a path, a hash, an error code)."
        ));
    }
    let head = format!(
        "{} stored entr{} match \"{echo}\", best first:\n",
        hits.len(),
        if hits.len() == 1 { "y" } else { "ies" }
    );
    // Room for the closing line, whatever count it names.
    let tail_room = 40;
    let mut out = head;
    let mut left_out = 0usize;
    for h in &hits {
        let line = hit_line(h);
        if text_tokens(&out) + text_tokens(&line) + tail_room > budget {
            left_out += 1;
            continue;
        }
        out.push_str(&line);
    }
    if left_out > 0 {
        out.push_str(&format!(
            "({left_out} more left out to stay within {budget} tokens: ask with a narrower query.)"
        ));
    }
    Ok(out.trim_end().to_string())
}

/// The range a compaction's text stands for: from the first message-carrying entry of the
/// path to the last entry it dropped, with their times.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompactedRange {
    pub first_id: String,
    pub last_id: String,
    pub first_ms: i64,
    pub last_ms: i64,
}

impl CompactedRange {
    /// The range of `path` before `end` (an index into `path`, exclusive); `None` when no
    /// entry there carries a message.
    pub fn of(session: &Session, path: &[usize], end: usize) -> Option<CompactedRange> {
        let before = &path[..end.min(path.len())];
        let carries = |&&i: &&usize| session.entries()[i].kind().carries_message();
        let first = *before.iter().find(carries)?;
        let last = *before.iter().rev().find(carries)?;
        Some(CompactedRange {
            first_id: session.entries()[first].id().to_string(),
            last_id: session.entries()[last].id().to_string(),
            first_ms: session.timestamp_ms(first),
            last_ms: session.timestamp_ms(last),
        })
    }

    /// `{firstEntryId, lastEntryId, from, to}` (times ISO 8601, null when unknown).
    pub fn to_json(&self) -> Value {
        let iso = |ms: i64| {
            if ms == 0 {
                Value::Null
            } else {
                when(ms).into()
            }
        };
        object(vec![
            ("firstEntryId", self.first_id.as_str().into()),
            ("lastEntryId", self.last_id.as_str().into()),
            ("from", iso(self.first_ms)),
            ("to", iso(self.last_ms)),
        ])
    }

    /// The range in the pointer's words: `entries A to B, FROM to TO`.
    fn describe(&self) -> String {
        let mut s = if self.first_id == self.last_id {
            format!("entry {}", self.first_id)
        } else {
            format!("entries {} to {}", self.first_id, self.last_id)
        };
        if self.first_ms != 0 && self.last_ms != 0 {
            s.push_str(&format!(
                ", {} to {}",
                when(self.first_ms),
                when(self.last_ms)
            ));
        }
        s
    }
}

const POINTER_OPEN: &str = "<recall>";
const POINTER_CLOSE: &str = "</recall>";

/// The recall pointer for `range` (`prompts/recall-pointer.md`).
pub fn recall_pointer(range: &CompactedRange) -> String {
    crate::prompts::render(
        crate::prompts::RECALL_POINTER.trim_end(),
        &[("range", &range.describe())],
    )
}

/// `text` without any `<recall>` line (an LLM summary may copy the previous one) and with
/// `pointer` appended after a blank line; only the removal without one.
pub fn upsert_recall_pointer(text: &str, pointer: Option<&str>) -> String {
    let mut out = String::with_capacity(text.len() + pointer.map_or(0, str::len) + 2);
    let mut rest = text;
    while let Some(open) = rest.find(POINTER_OPEN) {
        let Some(close) = rest[open..].find(POINTER_CLOSE) else {
            break;
        };
        out.push_str(rest[..open].trim_end_matches([' ', '\t']));
        rest = &rest[open + close + POINTER_CLOSE.len()..];
    }
    out.push_str(rest);
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    if let Some(p) = pointer {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(p);
    }
    out
}

/// `context_status`: `{tokensUsed, counted, contextWindow, remaining, threshold,
/// untilCompaction, compactionEnabled, lastCompaction}`. `tokensUsed` is the host's
/// `contextTokens` (`counted: "host"`) or the core's estimate of the context (`"estimate"`,
/// spec: compaction §3.2); `threshold` the model's compaction point (spec: compaction §3.3);
/// `lastCompaction` the compaction the context starts from: `{entryId, at, method,
/// tokensBefore, tokensAfter, firstKeptEntryId, range}` with `range` what the model no longer
/// reads verbatim, or null. `E_INVALID_ARGUMENT` without a `contextWindow`.
pub fn context_status(
    session: &Session,
    settings: &CompactionSettings,
    figures: &ToolFigures,
) -> Result<Value> {
    let window = figures
        .context_window
        .ok_or_else(|| Error::InvalidArgument {
            what: format!("{CONTEXT_STATUS}: the host gave no contextWindow"),
        })?;
    let settings = match (&figures.provider, &figures.model) {
        (Some(p), Some(m)) => settings.for_model(p, m),
        _ => std::borrow::Cow::Borrowed(settings),
    };
    let ctx = build_counted_context(
        session,
        &BuildOptions::default(),
        &HistoryOptions::WITHOUT_DATA,
    )?;
    let (used, counted) = match figures.context_tokens {
        Some(t) => (t, "host"),
        None => (
            ctx.estimate_context_tokens(session, &crate::tokens::ByteEstimate)
                .tokens,
            "estimate",
        ),
    };
    let threshold = crate::tokens::threshold_tokens(window, &settings);
    let last = match ctx.compaction {
        None => Value::Null,
        Some(c) => {
            let body = session.body::<CompactionBody>(c)?;
            let end = ctx
                .first_kept
                .and_then(|k| ctx.path.iter().position(|&i| i == k))
                .or_else(|| ctx.path.iter().position(|&i| i == c))
                .unwrap_or(0);
            let range =
                CompactedRange::of(session, &ctx.path, end).map_or(Value::Null, |r| r.to_json());
            let ms = session.timestamp_ms(c);
            object(vec![
                ("entryId", session.entries()[c].id().into()),
                (
                    "at",
                    if ms == 0 {
                        Value::Null
                    } else {
                        when(ms).into()
                    },
                ),
                ("method", body.method.map_or(Value::Null, Value::from)),
                ("tokensBefore", Value::Number(body.tokens_before)),
                (
                    "tokensAfter",
                    body.tokens_after.map_or(Value::Null, Value::Number),
                ),
                ("firstKeptEntryId", body.first_kept_entry_id.into()),
                ("range", range),
            ])
        }
    };
    Ok(object(vec![
        ("tokensUsed", used.into()),
        ("counted", counted.into()),
        ("contextWindow", window.into()),
        ("remaining", window.saturating_sub(used).into()),
        ("threshold", threshold.into()),
        ("untilCompaction", threshold.saturating_sub(used).into()),
        ("compactionEnabled", settings.enabled.into()),
        ("lastCompaction", last),
    ]))
}

/// Runs one tool call: `name` with the model's `args` (JSON). `recall_history` answers text,
/// `context_status` JSON text. `E_INVALID_ARGUMENT` for an unknown tool or bad arguments (the
/// host passes the message back to the model as an error result).
pub fn run_context_tool(
    index: &mut HistoryIndex,
    session: &Session,
    settings: &CompactionSettings,
    name: &str,
    args: &Value,
    figures: &ToolFigures,
) -> Result<String> {
    match name {
        RECALL_HISTORY => {
            let a = RecallArgs::from_json(args)?;
            let budget = figures.recall_tokens.unwrap_or(DEFAULT_RECALL_TOKENS);
            recall_history(index, session, &a, budget)
        }
        CONTEXT_STATUS => {
            if !matches!(args, Value::Null) && !args.as_object().is_some_and(Map::is_empty) {
                return Err(Error::InvalidArgument {
                    what: format!("{CONTEXT_STATUS}: takes no arguments"),
                });
            }
            Ok(crate::support::json::js::stringify(&context_status(
                session, settings, figures,
            )?))
        }
        other => Err(Error::InvalidArgument {
            what: format!("no context tool named `{other}` (the tools are {RECALL_HISTORY} and {CONTEXT_STATUS})"),
        }),
    }
}
