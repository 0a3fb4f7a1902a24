//! Host options of the session family: context build options. Read from the JSON text the JS shell
//! sends; errors reach JS through [`to_js`](super::to_js) with a stable code.

use super::{opt_count, parse_json, to_js};
use crate::archive::blocks::{FrameData, HistoryOptions};
use crate::context::{BuildOptions, LeafSelector};
use crate::error::{Error, ErrorCode};
use serde_json::Value;
use wasm_bindgen::prelude::*;

pub(crate) fn build_options(
    json: Option<String>,
) -> Result<(BuildOptions, HistoryOptions), JsValue> {
    let v = match json.as_deref() {
        None | Some("") | Some("null") | Some("undefined") => Value::Null,
        Some(t) => parse_json(t, "context options")?,
    };
    // The provider's frame budgets for snapcompact archives (spec: snapcompact §9.6).
    let mut history = HistoryOptions {
        max_frame_data_bytes: opt_count(&v, "maxFrameDataBytes")?,
        max_images: opt_count(&v, "maxImages")?.map(|n| n as usize),
        data: FrameData::Inline,
    };
    let flag = |k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
    // The JS shell's own request: frames as references to its copy of them (`src/js/core/session.ts`).
    if flag("frameRefs") {
        history.data = FrameData::Refs;
    }
    let leaf = match v.get("leafId") {
        None => LeafSelector::Current,
        Some(Value::Null) => LeafSelector::Null,
        Some(Value::String(s)) => LeafSelector::Id(s.clone()),
        Some(_) => {
            return Err(to_js(Error::coded(
                ErrorCode::InvalidArgument,
                "`leafId` must be an entry id (string) or null",
            )))
        }
    };
    let replay = replay_provider(&v);
    Ok((
        BuildOptions {
            leaf,
            transcript: flag("transcript"),
            collapse_compacted_history: flag("collapseCompactedHistory"),
            keep_dangling_tool_calls: flag("keepDanglingToolCalls"),
            replay_provider: replay.0,
            replay_anthropic: replay.1,
        },
        history,
    ))
}

/// Whether context options name the reading model (`model`): without one, the token accounting
/// counts a native compaction's replay as its own provider reads it
/// (`context::build_counted_context`).
pub(crate) fn names_reader(json: Option<&str>) -> Result<bool, JsValue> {
    Ok(match json {
        None | Some("") | Some("null") | Some("undefined") => false,
        Some(t) => !matches!(
            parse_json(t, "context options")?.get("model"),
            None | Some(Value::Null)
        ),
    })
}

/// The reading model's provider when it replays native compaction records (`model: {provider,
/// api}`), and whether it is an Anthropic reader: a Responses dialect replays OpenAI
/// replacement histories, `anthropic-messages` Anthropic compaction blocks (`src/js/core/session.ts`
/// passes that `api` only for a model and route with server compaction).
fn replay_provider(v: &Value) -> (Option<String>, bool) {
    let m = v.get("model");
    let api = m.and_then(|m| m.get("api")).and_then(Value::as_str);
    let anthropic = api == Some("anthropic-messages");
    if !anthropic
        && !api.is_some_and(|a| crate::compaction::native::openai::RESPONSES_APIS.contains(&a))
    {
        return (None, false);
    }
    let provider = m.and_then(|m| m.get("provider")).and_then(Value::as_str);
    (provider.map(str::to_string), anthropic)
}

/// Options of the paged transcript: the context options (the transcript is implied) and the
/// page, `from` (an integer; negative counts from the end) and `count` (a whole number).
pub(crate) fn transcript_options(
    json: Option<String>,
) -> Result<(BuildOptions, i64, Option<u64>), JsValue> {
    let (build, _) = build_options(json.clone())?;
    let v = match json.as_deref() {
        None | Some("") | Some("null") | Some("undefined") => Value::Null,
        Some(t) => parse_json(t, "transcript options")?,
    };
    let from = match v.get("from") {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n))
            if n.as_f64()
                .is_some_and(|f| f.fract() == 0.0 && f.abs() < 9.0e15) =>
        {
            n.as_f64().unwrap_or(0.0) as i64
        }
        Some(_) => {
            return Err(to_js(Error::coded(
                ErrorCode::InvalidArgument,
                "`from` must be an integer (negative counts from the end)",
            )))
        }
    };
    let count = opt_count(&v, "count")?;
    Ok((build, from, count))
}
