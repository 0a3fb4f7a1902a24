//! Host options of the compaction family: plan options, settings, an extension's compaction result.
//! Read from the JSON text the JS shell sends; errors reach JS through [`to_js`](super::to_js) with
//! a stable code.

use super::{opt_f64, opt_str, options, to_js};
use crate::compaction::commit::ExtensionCompaction;
use crate::compaction::plan::PlanOptions;
use crate::compaction::prepare::PrepareOptions;
use crate::error::{Error, ErrorCode};
use crate::session::Session;
use crate::settings::CompactionSettings;
use serde_json::Value;
use wasm_bindgen::prelude::*;

/// Plan options from the JS options object (see `PlanOptions` in the types).
pub(crate) fn plan_options(session: &Session, o: &Value) -> Result<PlanOptions, JsValue> {
    let leaf = match opt_str(o, "leafId")? {
        Some(id) => Some(session.require(&id).map_err(to_js)?),
        None => None,
    };
    Ok(PlanOptions {
        prepare: PrepareOptions {
            active_provider: opt_str(o, "provider")?,
            leaf,
        },
        custom_instructions: opt_str(o, "customInstructions")?,
        extra_context: o
            .get("extraContext")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        prompt_override: opt_str(o, "promptOverride")?,
        preserve_data: o.get("preserveData").and_then(Value::as_object).cloned(),
        context_window: opt_f64(o, "contextWindow")?
            .filter(|w| w.is_finite() && *w > 0.0)
            .unwrap_or(0.0) as u64,
        output_limit: opt_f64(o, "maxTokens")?
            .filter(|t| t.is_finite() && *t > 0.0)
            .unwrap_or(0.0) as u64,
        method: opt_str(o, "method")?,
        // The reading model: a snapcompact commit resolves its archive from it.
        model: super::options::target(o.get("model")).map_err(to_js)?,
        // A background plan (spec: compaction §13).
        speculative: o.get("speculative") == Some(&Value::Bool(true)),
        provider_ratio: opt_f64(o, "providerRatio")?.unwrap_or(0.0),
        non_message_tokens: opt_f64(o, "nonMessageTokens")?
            .filter(|t| t.is_finite() && *t > 0.0)
            .unwrap_or(0.0) as u64,
    })
}

pub(crate) fn settings_from(json: Option<String>) -> Result<CompactionSettings, JsValue> {
    match json.as_deref() {
        None | Some("") | Some("null") | Some("undefined") => Ok(CompactionSettings::default()),
        Some(t) => {
            let v = crate::support::json::parse(t).map_err(|e| {
                to_js(Error::coded(
                    ErrorCode::Settings,
                    format!("invalid settings: {e}"),
                ))
            })?;
            CompactionSettings::from_json(&v).map_err(to_js)
        }
    }
}

pub(crate) fn extension_result(json: &str) -> Result<ExtensionCompaction, JsValue> {
    let r = options(Some(json.to_string()), "compaction result")?;
    let summary = opt_str(&r, "summary")?.ok_or_else(|| {
        to_js(Error::coded(
            ErrorCode::InvalidArgument,
            "a hook's compaction needs a string `summary`",
        ))
    })?;
    Ok(ExtensionCompaction {
        summary,
        short_summary: opt_str(&r, "shortSummary")?,
        first_kept_entry_id: opt_str(&r, "firstKeptEntryId")?,
        tokens_before: opt_f64(&r, "tokensBefore")?.map(|t| t.max(0.0) as u64),
        details: r.get("details").filter(|v| !v.is_null()).cloned(),
        preserve_data: r.get("preserveData").filter(|v| !v.is_null()).cloned(),
    })
}
