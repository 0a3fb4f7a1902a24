//! Exported token-accounting functions (spec: compaction §3).

use super::interop::to_js;
use super::interop::tokens::{settings, window};
use crate::error::{Error, ErrorCode};
use crate::session::message::{AgentMessage, Usage};
use crate::settings::CompactionSettings;
use crate::tokens::{self, ByteEstimate, EstimateOptions};
use std::borrow::Cow;
use wasm_bindgen::prelude::*;

/// Estimated tokens of one agent message (JSON).
#[wasm_bindgen(js_name = estimateTokensJson)]
pub fn estimate_tokens_json(
    message_json: &str,
    exclude_encrypted_reasoning: bool,
) -> Result<f64, JsValue> {
    let m = AgentMessage::parse(message_json, None).map_err(|e| {
        to_js(Error::coded(
            ErrorCode::InvalidArgument,
            format!("invalid message: {e}"),
        ))
    })?;
    Ok(tokens::estimate_message(
        &m,
        &ByteEstimate,
        EstimateOptions {
            exclude_encrypted_reasoning,
        },
    ) as f64)
}

/// Context tokens of a usage record (JSON).
#[wasm_bindgen(js_name = usageContextTokens)]
pub fn usage_context_tokens(usage_json: &str) -> Result<f64, JsValue> {
    let u = Usage::parse(usage_json).map_err(|e| {
        to_js(Error::coded(
            ErrorCode::InvalidArgument,
            format!("invalid usage: {e}"),
        ))
    })?;
    Ok(tokens::context_tokens(&u) as f64)
}

/// The compaction threshold for a window and settings; with `model_json` (`{provider, id}`)
/// the model's `modelThresholds` rule applies.
#[wasm_bindgen(js_name = thresholdTokens)]
pub fn threshold_tokens(
    context_window: f64,
    settings_json: Option<String>,
    model_json: Option<String>,
) -> Result<f64, JsValue> {
    let s = settings(settings_json)?;
    let s = for_model(&s, model_json)?;
    Ok(tokens::threshold_tokens(window(context_window)?, &s) as f64)
}

/// The budgets of a window (keep, shake protection, archive room; the small-window rules of
/// `tokens::window_budgets`) as JSON; with `model_json` the model's `modelThresholds` rule
/// applies.
#[wasm_bindgen(js_name = windowBudgetsJson)]
pub fn window_budgets_json(
    context_window: f64,
    settings_json: Option<String>,
    model_json: Option<String>,
) -> Result<String, JsValue> {
    let s = settings(settings_json)?;
    let s = for_model(&s, model_json)?;
    Ok(tokens::window_budgets(window(context_window)?, &s).json())
}

/// The settings for a model (`None`: as they are).
fn for_model(
    s: &CompactionSettings,
    model_json: Option<String>,
) -> Result<Cow<'_, CompactionSettings>, JsValue> {
    Ok(match model_json {
        None => Cow::Borrowed(s),
        Some(json) => {
            let m = super::interop::triggers::model(&json)?;
            s.for_model(&m.provider, &m.id)
        }
    })
}

/// The reserve the threshold leaves (after the 15 % rule and the small-window rescue).
#[wasm_bindgen(js_name = reserveTokens)]
pub fn reserve_tokens(context_window: f64, settings_json: Option<String>) -> Result<f64, JsValue> {
    Ok(tokens::budget_reserve_tokens(window(context_window)?, &settings(settings_json)?) as f64)
}

/// Whether `context_tokens` is over the threshold (the model's, with `model_json`).
#[wasm_bindgen(js_name = shouldCompact)]
pub fn should_compact(
    context_tokens: f64,
    context_window: f64,
    settings_json: Option<String>,
    model_json: Option<String>,
) -> Result<bool, JsValue> {
    let s = settings(settings_json)?;
    let s = for_model(&s, model_json)?;
    Ok(tokens::should_compact(
        window(context_tokens)?,
        window(context_window)?,
        &s,
    ))
}

/// The adapted keep budget and the ratio: `[keep, ratio]`.
#[wasm_bindgen(js_name = adaptKeepRecentTokens)]
pub fn adapt_keep_recent_tokens(
    keep: f64,
    prompt_tokens: f64,
    estimate: f64,
) -> Result<Vec<f64>, JsValue> {
    let (k, r) =
        tokens::adapt_keep_recent_tokens(window(keep)?, window(prompt_tokens)?, window(estimate)?);
    Ok(vec![k as f64, r])
}

/// Validates settings and returns them with defaults filled in, as JSON.
#[wasm_bindgen(js_name = resolveSettingsJson)]
pub fn resolve_settings_json(settings_json: Option<String>) -> Result<String, JsValue> {
    Ok(settings(settings_json)?.json())
}
