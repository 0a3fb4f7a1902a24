//! Exported token-accounting functions (spec: compaction §3).

use super::interop::to_js;
use super::interop::tokens::{settings, window};
use crate::error::{Error, ErrorCode};
use crate::session::message::{AgentMessage, StopReason, Usage};
use crate::settings::CompactionSettings;
use crate::support::json::js;
use crate::tokens::{self, ByteEstimate, EstimateOptions};
use crate::triggers::{Calibration, HostCount, SentRequest};
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
/// What a host's token counter weighs of a message's `providerPayload` (JSON): `{texts,
/// fixedTokens}` when the payload is an OpenAI replay the request sends in place of the
/// message, else undefined (`context::replay_pieces`).
#[wasm_bindgen(js_name = replayPiecesJson)]
pub fn replay_pieces_json(payload_json: &str) -> Option<String> {
    let payload = crate::support::json::parse(payload_json).ok()?;
    let (texts, fixed) = crate::context::replay_pieces(&payload)?;
    Some(js::stringify(
        &serde_json::json!({ "texts": texts, "fixedTokens": fixed }),
    ))
}

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

/// The Maintainer's calibration from reported usage (`triggers::Calibration`) and the request
/// it last sent: the JS `TokenGauge` feeds what was sent and what came back, and reads the
/// rates. Model keys are `provider/id`.
#[wasm_bindgen]
pub struct WasmCalibration {
    inner: Calibration,
    sent: Option<SentRequest>,
    host_counts: bool,
}

#[wasm_bindgen]
impl WasmCalibration {
    /// `enabled: false` keeps every rate at 1; `host_counts`: the host counts tokens itself
    /// (a `tokenCounter`).
    #[wasm_bindgen(constructor)]
    pub fn new(enabled: bool, host_counts: Option<bool>) -> WasmCalibration {
        WasmCalibration {
            inner: Calibration::new(enabled),
            sent: None,
            host_counts: host_counts.unwrap_or(false),
        }
    }

    /// `[ratio, imageRate, samples]` of a model.
    pub fn rates(&self, key: &str) -> Vec<f64> {
        let r = self.inner.rates(key);
        vec![r.ratio, r.image_rate, r.samples as f64]
    }

    /// A request estimated at `text` and `images` tokens, as the provider would count it.
    pub fn calibrated(&self, key: &str, text: f64, images: f64) -> f64 {
        self.inner.calibrated(key, text, images)
    }

    /// A request went out to `key` (`model_id`) estimated at `text` and `images` tokens, inline
    /// imaging saving `inline_saved` (`SentRequest::of` says what its reply calibrates).
    pub fn sent(&mut self, key: &str, model_id: &str, text: f64, images: f64, inline_saved: f64) {
        self.sent = SentRequest::of(key, model_id, text, images, inline_saved, self.host_counts);
    }

    /// A reply came (`{stopReason?, model?, usage?}`): it calibrates the model of the request
    /// last sent, if it answered it (`Calibration::observe_reply`). Returns whether it did.
    #[wasm_bindgen(js_name = observeReply)]
    pub fn observe_reply(&mut self, reply_json: &str) -> Result<bool, JsValue> {
        let Some(sent) = self.sent.take() else {
            return Ok(false);
        };
        let bad = |e: String| to_js(Error::coded(ErrorCode::InvalidArgument, e));
        let v = crate::support::json::parse(reply_json)
            .map_err(|e| bad(format!("invalid reply: {e}")))?;
        let stop = v
            .get("stopReason")
            .and_then(|s| s.as_str())
            .map(StopReason::parse);
        let model = v.get("model").and_then(|s| s.as_str());
        let usage = match v.get("usage") {
            Some(u @ serde_json::Value::Object(_)) => Some(
                Usage::parse(&crate::support::json::js::stringify(u))
                    .map_err(|e| bad(format!("invalid usage: {e}")))?,
            ),
            _ => None,
        };
        Ok(self
            .inner
            .observe_reply(&sent, stop.as_ref(), model, usage.as_ref()))
    }

    /// `{key: {ratio, imageRate, samples}}` of every model calibrated so far, as JSON.
    #[wasm_bindgen(js_name = snapshotJson)]
    pub fn snapshot_json(&self) -> String {
        let mut o = serde_json::Map::new();
        for (key, r) in self.inner.models() {
            o.insert(
                key.to_string(),
                serde_json::json!({"ratio": r.ratio, "imageRate": r.image_rate, "samples": r.samples}),
            );
        }
        crate::support::json::js::stringify(&serde_json::Value::Object(o))
    }

    /// The characters of one message the host's counter reads (`maxCountChars`, default when
    /// absent); `E_INVALID_ARGUMENT` below the least cap.
    #[wasm_bindgen(js_name = maxCountChars)]
    pub fn max_count_chars(requested: Option<f64>) -> Result<f64, JsValue> {
        crate::triggers::max_count_chars(requested)
            .map_err(|e| to_js(Error::coded(ErrorCode::InvalidArgument, e)))
    }

    /// `[keep, scale]` for a message of `total` characters under `cap` (`count_cut`), or `[]`
    /// when it reaches the counter whole.
    #[wasm_bindgen(js_name = countCut)]
    pub fn count_cut(total: f64, cap: f64) -> Vec<f64> {
        crate::triggers::count_cut(total, cap).map_or_else(Vec::new, |(k, s)| vec![k, s])
    }

    /// The images of a request built from a view (`triggers::request_images`): `counts`, the
    /// image parts of each message (0 for an assistant's); `summary_first`, the view starts
    /// with the compaction summary (its images are frames); `frames_left_out`, the frames its
    /// budgets left out; `limit`, the provider's image budget (not a number ≥ 0: none).
    /// Returns `[omitted, sentTokens, contextTokens, drop…]`, a drop per message when any
    /// image is left out (none otherwise: the common request crosses three numbers).
    #[wasm_bindgen(js_name = requestImages)]
    pub fn request_images(
        counts: &[u32],
        summary_first: bool,
        frames_left_out: f64,
        limit: f64,
    ) -> Vec<f64> {
        let count = |v: f64| if v >= 0.0 { v as u64 } else { 0 };
        let limit = if limit >= 0.0 { limit as u64 } else { u64::MAX };
        let r =
            crate::triggers::request_images(counts, summary_first, count(frames_left_out), limit);
        let mut out = vec![
            r.omitted as f64,
            r.sent_tokens as f64,
            r.context_tokens as f64,
        ];
        if r.omitted > 0 {
            out.extend(r.drops.iter().map(|&d| f64::from(d)));
        }
        out
    }

    /// A report's `figures` (per-kind tokens, the shake's share) in the host's tokens, for a
    /// context the core estimates at `estimated_after` and the host counts at `counted_after`
    /// (`triggers::in_counted`).
    #[wasm_bindgen(js_name = inCounted)]
    pub fn in_counted(figures: &[f64], estimated_after: f64, counted_after: f64) -> Vec<f64> {
        let mut out = figures.to_vec();
        crate::triggers::in_counted(&mut out, estimated_after, counted_after);
        out
    }

    /// Provider tokens per token of the core's estimate of text for `key`: its measured ratio,
    /// times the host's count over the core's estimate when the host counts (`counted` > 0);
    /// undefined when neither measured it (`Calibration::provider_ratio`).
    #[wasm_bindgen(js_name = providerRatio)]
    pub fn provider_ratio(&self, key: &str, estimated: f64, counted: f64) -> Option<f64> {
        let count = HostCount {
            estimated,
            counted,
            usage: 0.0,
        };
        self.inner.provider_ratio(key, count)
    }
}
