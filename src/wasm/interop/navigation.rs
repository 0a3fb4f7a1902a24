//! Host options of tree navigation. Read from the JSON text the JS shell sends; errors reach JS
//! through [`to_js`](super::to_js) with a stable code.

use super::{opt_count, opt_str};
use crate::navigation::{NavigateOptions, DEFAULT_RESERVE_TOKENS};
use serde_json::Value;
use wasm_bindgen::prelude::*;

pub(crate) fn navigate_options(o: &Value) -> Result<NavigateOptions, JsValue> {
    Ok(NavigateOptions {
        summarize: o.get("summarize").and_then(Value::as_bool).unwrap_or(false),
        custom_instructions: opt_str(o, "customInstructions")?,
        replace_instructions: o.get("replaceInstructions").and_then(Value::as_bool),
        label: opt_str(o, "label")?,
        context_window: opt_count(o, "contextWindow")?.unwrap_or(0),
        reserve_tokens: opt_count(o, "reserveTokens")?.unwrap_or(DEFAULT_RESERVE_TOKENS),
    })
}
