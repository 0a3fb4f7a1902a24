//! Host values of the trigger state machine: the model, the assistant message, option objects and
//! compaction outcomes. Read from the JSON text the JS shell sends; errors reach JS through
//! [`to_js`](super::to_js) with a stable code.

use super::{now_ms, parse_json, to_js};
use crate::error::{Error, ErrorCode};
use crate::session::message::AssistantMessage;
use crate::support::json::fields::{self, FieldError};
use crate::triggers::{CompactionOutcome, ModelInfo};
use serde_json::{Map, Value};
use wasm_bindgen::prelude::*;

pub(crate) fn bad(what: &str) -> JsValue {
    to_js(Error::coded(ErrorCode::InvalidArgument, what))
}

/// Optional options object (`undefined`/`null` → no fields), read by the shared
/// [`options`](super::options).
pub(crate) fn options(json: Option<String>, what: &str) -> Result<Map<String, Value>, JsValue> {
    match super::options(json, what)? {
        Value::Object(o) => Ok(o),
        _ => Ok(Map::new()),
    }
}

pub(crate) fn object(v: Value, what: &str) -> Result<Map<String, Value>, JsValue> {
    match v {
        Value::Object(o) => Ok(o),
        _ => Err(bad(&format!("invalid {what}: expected an object"))),
    }
}

/// A field error of the shared reader, with the input it belongs to.
pub(crate) fn field(what: &str) -> impl Fn(FieldError) -> JsValue + '_ {
    move |e| bad(&format!("invalid {what}: {e}"))
}

/// A number field: `None` when absent or `null`.
pub(crate) fn number(
    o: &Map<String, Value>,
    key: &str,
    what: &str,
) -> Result<Option<f64>, JsValue> {
    o.get(key)
        .filter(|v| !v.is_null())
        .map(|v| fields::number(key, v))
        .transpose()
        .map_err(field(what))
}

/// A boolean field: `false` when absent or `null`.
pub(crate) fn flag(o: &Map<String, Value>, key: &str, what: &str) -> Result<bool, JsValue> {
    o.get(key)
        .filter(|v| !v.is_null())
        .map_or(Ok(false), |v| fields::boolean(key, v))
        .map_err(field(what))
}

/// A required string field.
pub(crate) fn string(o: &Map<String, Value>, key: &str, what: &str) -> Result<String, JsValue> {
    match o.get(key) {
        None => Err(bad(&format!("invalid {what}: missing field `{key}`"))),
        Some(v) => fields::string(key, v)
            .map(str::to_string)
            .map_err(field(what)),
    }
}

/// A token count from JS: finite and not negative.
pub(crate) fn tokens(v: f64, what: &str) -> Result<u64, JsValue> {
    if v.is_finite() && v >= 0.0 {
        Ok(v as u64)
    } else {
        Err(bad(&format!(
            "`{what}` must be a non-negative number of tokens"
        )))
    }
}

pub(crate) fn opt_tokens(v: Option<f64>, what: &str) -> Result<Option<u64>, JsValue> {
    v.map(|x| tokens(x, what)).transpose()
}

/// pi-ai's `Model` shape, as far as the triggers read it: `{provider, id, contextWindow?,
/// maxTokens?, input?}`.
pub(crate) fn model(json: &str) -> Result<ModelInfo, JsValue> {
    let what = "model (expected {provider, id, contextWindow?, maxTokens?, input?})";
    let m = object(parse_json(json, what)?, what)?;
    let accepts_images = match m.get("input") {
        None => false,
        Some(Value::Array(input)) => {
            let mut images = false;
            for i in input {
                match i.as_str() {
                    Some(i) => images |= i == "image",
                    None => return Err(bad(&format!("invalid {what}: `input` must hold strings"))),
                }
            }
            images
        }
        Some(_) => return Err(bad(&format!("invalid {what}: `input` must be an array"))),
    };
    Ok(ModelInfo {
        provider: string(&m, "provider", what)?,
        id: string(&m, "id", what)?,
        context_window: opt_tokens(number(&m, "contextWindow", what)?, "contextWindow")?
            .unwrap_or(0),
        max_output_tokens: opt_tokens(number(&m, "maxTokens", what)?, "maxTokens")?.unwrap_or(0),
        accepts_images,
    })
}

/// A host's model object as the one check reads it ([`ModelInfo::from_host`]): read from the JS
/// value itself, so a `NaN` or an `Infinity`, which JSON would turn into `null`, is seen and
/// refused. `input` other than an array is ignored; an array must hold strings. `what` names
/// the object in errors (`options.model`).
pub(crate) fn host_model(v: &JsValue, what: &str) -> Result<ModelInfo, JsValue> {
    let shape = || {
        bad(&format!(
            "{what} must be an object with string `provider` and `id` (and `contextWindow`)"
        ))
    };
    if !v.is_object() || js_sys::Array::is_array(v) {
        return Err(shape());
    }
    // A getter that throws is the host's error: it goes through as is.
    let get = |k: &str| js_sys::Reflect::get(v, &JsValue::from_str(k));
    let provider = get("provider")?.as_string().ok_or_else(shape)?;
    let id = get("id")?.as_string().ok_or_else(shape)?;
    let size = |k: &str| -> Result<Option<f64>, JsValue> {
        let x = get(k)?;
        if x.is_undefined() || x.is_null() {
            return Ok(None);
        }
        x.as_f64().map(Some).ok_or_else(|| {
            bad(&format!(
                "{what}.{k} must be a number of tokens, got a {}",
                x.js_typeof().as_string().unwrap_or_default()
            ))
        })
    };
    let (context_window, max_tokens) = (size("contextWindow")?, size("maxTokens")?);
    let input = get("input")?;
    let mut images = false;
    if js_sys::Array::is_array(&input) {
        for i in js_sys::Array::from(&input).iter() {
            match i.as_string() {
                Some(i) => images |= i == "image",
                None => return Err(bad(&format!("{what}.input must hold strings"))),
            }
        }
    }
    ModelInfo::from_host(provider, id, context_window, max_tokens, images)
        .map_err(|e| bad(&format!("{what}.{e}")))
}

/// A model as the JSON the other calls read back ([`model`]).
pub(crate) fn model_json(m: &ModelInfo) -> String {
    let mut o = serde_json::Map::new();
    o.insert("provider".into(), m.provider.clone().into());
    o.insert("id".into(), m.id.clone().into());
    if m.context_window > 0 {
        o.insert("contextWindow".into(), m.context_window.into());
    }
    if m.max_output_tokens > 0 {
        o.insert("maxTokens".into(), m.max_output_tokens.into());
    }
    if m.accepts_images {
        o.insert("input".into(), serde_json::json!(["text", "image"]));
    }
    crate::support::json::js::stringify(&Value::Object(o))
}

pub(crate) fn assistant(json: &str) -> Result<AssistantMessage, JsValue> {
    use crate::session::message::{AgentMessage, Role};
    let role = crate::support::json::view::Obj::parse(json.as_bytes())
        .map_err(|e| bad(&format!("invalid assistant message: {}", e.reason)))?
        .string("role");
    if role.as_deref().is_some_and(|r| r != "assistant") {
        return Err(bad(
            "afterTurn() takes an assistant message (role \"assistant\")",
        ));
    }
    match AgentMessage::parse(json, Some(Role::Assistant)) {
        Ok(AgentMessage::Assistant(a)) => Ok(a),
        Ok(_) => Err(bad("afterTurn() takes an assistant message")),
        Err(e) => Err(bad(&format!("invalid assistant message: {e}"))),
    }
}

pub(crate) fn compaction_time(v: Option<f64>) -> Result<Option<i64>, JsValue> {
    v.map(now_ms).transpose()
}

/// `now` of an options object (0 when absent).
pub(crate) fn now(o: &Map<String, Value>, what: &str) -> Result<i64, JsValue> {
    match o.get("now") {
        None => now_ms(0.0),
        Some(v) => now_ms(
            v.as_f64()
                .ok_or_else(|| bad(&format!("invalid {what}: `now` must be a number")))?,
        ),
    }
}

/// How a compaction ended: `{status: "compacted", tokensAfter, storedTokens?}`,
/// `{status: "nothing-to-compact"}`, `{status: "aborted"}` or `{status: "failed", error}`.
pub(crate) fn outcome(json: &str) -> Result<CompactionOutcome, JsValue> {
    let what = "compaction outcome (expected {status: \"compacted\" | \"nothing-to-compact\" | \
                \"aborted\" | \"failed\", …})";
    let o = object(parse_json(json, what)?, what)?;
    Ok(match string(&o, "status", what)?.as_str() {
        "compacted" => CompactionOutcome::Compacted {
            tokens_after: tokens(
                number(&o, "tokensAfter", what)?
                    .ok_or_else(|| bad(&format!("invalid {what}: missing field `tokensAfter`")))?,
                "tokensAfter",
            )?,
            stored_tokens: opt_tokens(number(&o, "storedTokens", what)?, "storedTokens")?,
        },
        "nothing-to-compact" => CompactionOutcome::NothingToCompact,
        "aborted" => CompactionOutcome::Aborted,
        "failed" => CompactionOutcome::Failed {
            error: string(&o, "error", what)?,
        },
        other => return Err(bad(&format!("invalid {what}: unknown status \"{other}\""))),
    })
}
