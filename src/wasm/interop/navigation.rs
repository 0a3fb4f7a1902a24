//! Host options of tree navigation. Read from the JSON text the JS shell sends; errors reach JS
//! through [`to_js`](super::to_js) with a stable code.

use super::{opt_count, opt_str, to_js};
use crate::navigation::{branch_reserve_tokens, summary_routes, NavigateOptions};
use crate::settings::CompactionSettings;
use serde_json::Value;
use wasm_bindgen::prelude::*;

/// `o`: the public options, plus `settings` (compaction settings: `branchSummary` and the
/// remote endpoint) and `summarizers` (`{remoteEndpoint?, callbacks}`: what the host can ask;
/// the plan then lists the routes).
pub(crate) fn navigate_options(o: &Value) -> Result<NavigateOptions, JsValue> {
    let settings = match o.get("settings").filter(|v| !v.is_null()) {
        Some(v) => CompactionSettings::from_json(v).map_err(to_js)?,
        None => CompactionSettings::default(),
    };
    let routes = match o.get("summarizers").filter(|v| !v.is_null()) {
        Some(s) => summary_routes(
            opt_str(s, "remoteEndpoint")?.as_deref(),
            &settings,
            opt_count(s, "callbacks")?.unwrap_or(0) as usize,
        ),
        None => Vec::new(),
    };
    Ok(NavigateOptions {
        summarize: o.get("summarize").and_then(Value::as_bool).unwrap_or(false),
        custom_instructions: opt_str(o, "customInstructions")?,
        replace_instructions: o.get("replaceInstructions").and_then(Value::as_bool),
        label: opt_str(o, "label")?,
        context_window: opt_count(o, "contextWindow")?.unwrap_or(0),
        output_limit: opt_count(o, "maxTokens")?.unwrap_or(0),
        reserve_tokens: branch_reserve_tokens(opt_count(o, "reserveTokens")?, &settings),
        routes,
    })
}
