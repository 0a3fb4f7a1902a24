//! The exported trigger state machine (spec: compaction §8). The public `ContextManager` class
//! of the package (js/triggers.js) wraps it; this layer only converts JSON to the core's
//! inputs and decisions back to JSON.

use super::interop::{js_error, now_ms, parse_json, to_js};
use crate::error::ErrorCode;
use crate::message::AssistantMessage;
use crate::settings::CompactionSettings;
use crate::triggers::{
    self, CompactRequest, CompactionOutcome, CompactionReason, CompactionReport, ContextManager,
    Decision, ModelInfo, PromptInput, TurnInput,
};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use wasm_bindgen::prelude::*;

fn bad(what: &str) -> JsValue {
    js_error(ErrorCode::InvalidArgument, what)
}

fn parse<T: DeserializeOwned>(json: &str, what: &str) -> Result<T, JsValue> {
    serde_json::from_str(json).map_err(|e| bad(&format!("invalid {what}: {e}")))
}

/// Optional options object (`undefined`/`null` → defaults).
fn parse_options<T: DeserializeOwned + Default>(
    json: Option<String>,
    what: &str,
) -> Result<T, JsValue> {
    match json.as_deref() {
        None | Some("") | Some("null") | Some("undefined") => Ok(T::default()),
        Some(t) => parse(t, what),
    }
}

/// A token count from JS: finite and not negative.
fn tokens(v: f64, what: &str) -> Result<u64, JsValue> {
    if v.is_finite() && v >= 0.0 {
        Ok(v as u64)
    } else {
        Err(bad(&format!(
            "`{what}` must be a non-negative number of tokens"
        )))
    }
}

fn opt_tokens(v: Option<f64>, what: &str) -> Result<Option<u64>, JsValue> {
    v.map(|x| tokens(x, what)).transpose()
}

fn decision_json(d: &Decision) -> Result<String, JsValue> {
    serde_json::to_string(d).map_err(|e| bad(&format!("decision not serializable: {e}")))
}

/// pi-ai's `Model` shape, as far as the triggers read it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModelJs {
    provider: String,
    id: String,
    context_window: Option<f64>,
    max_tokens: Option<f64>,
    #[serde(default)]
    input: Vec<String>,
}

fn model(json: &str) -> Result<ModelInfo, JsValue> {
    let m: ModelJs = parse(
        json,
        "model (expected {provider, id, contextWindow?, maxTokens?, input?})",
    )?;
    Ok(ModelInfo {
        provider: m.provider,
        id: m.id,
        context_window: opt_tokens(m.context_window, "contextWindow")?.unwrap_or(0),
        max_output_tokens: opt_tokens(m.max_tokens, "maxTokens")?.unwrap_or(0),
        accepts_images: m.input.iter().any(|i| i == "image"),
    })
}

fn assistant(json: &str) -> Result<AssistantMessage, JsValue> {
    use crate::message::{AgentMessage, Role};
    let role = crate::json::view::Obj::parse(json.as_bytes())
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

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct TurnOptions {
    now: f64,
    stored_tokens: Option<f64>,
    latest_compaction_at: Option<f64>,
    can_promote: bool,
    freed_tokens: Option<f64>,
    mid_run: bool,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct PromptOptions {
    now: f64,
    last_assistant: Option<serde_json::Value>,
    stored_tokens: Option<f64>,
    latest_compaction_at: Option<f64>,
    can_promote: bool,
}

#[derive(Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
enum OutcomeJs {
    #[serde(rename_all = "camelCase")]
    Compacted {
        tokens_after: f64,
        stored_tokens: Option<f64>,
    },
    NothingToCompact,
    Aborted,
    Failed {
        error: String,
    },
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ReportOptions {
    queued_messages: bool,
    interrupted_turn: bool,
    suppress_continuation: bool,
}

fn compaction_time(v: Option<f64>) -> Result<Option<i64>, JsValue> {
    v.map(now_ms).transpose()
}

/// The trigger state machine of one live session.
#[wasm_bindgen]
pub struct WasmContextManager {
    inner: ContextManager,
}

#[wasm_bindgen]
impl WasmContextManager {
    /// A machine with the given compaction settings (JSON; `E_SETTINGS` names a bad field).
    #[wasm_bindgen(constructor)]
    pub fn new(settings_json: Option<String>) -> Result<WasmContextManager, JsValue> {
        let settings = match settings_json.as_deref() {
            None | Some("") | Some("undefined") => CompactionSettings::default(),
            Some(t) => CompactionSettings::from_json(&parse_json(t, "settings")?).map_err(to_js)?,
        };
        Ok(WasmContextManager {
            inner: ContextManager::new(settings),
        })
    }

    /// The settings with defaults filled in, as JSON.
    #[wasm_bindgen(js_name = settingsJson)]
    pub fn settings_json(&self) -> String {
        self.inner.settings().to_json().to_string()
    }

    /// Counters and flags, as JSON.
    #[wasm_bindgen(js_name = stateJson)]
    pub fn state_json(&self) -> Result<String, JsValue> {
        serde_json::to_string(&self.inner.state())
            .map_err(|e| bad(&format!("state not serializable: {e}")))
    }

    /// An assistant turn ended; returns the decision as JSON.
    #[wasm_bindgen(js_name = afterTurn)]
    pub fn after_turn(
        &mut self,
        assistant_json: &str,
        model_json: &str,
        options_json: Option<String>,
    ) -> Result<String, JsValue> {
        let a = assistant(assistant_json)?;
        let m = model(model_json)?;
        let o: TurnOptions = parse_options(options_json, "afterTurn options")?;
        let t = TurnInput {
            stored_tokens: opt_tokens(o.stored_tokens, "storedTokens")?,
            latest_compaction_at: compaction_time(o.latest_compaction_at)?,
            can_promote: o.can_promote,
            freed_tokens: opt_tokens(o.freed_tokens, "freedTokens")?.unwrap_or(0),
            mid_run: o.mid_run,
            ..TurnInput::new(&a, &m, now_ms(o.now)?)
        };
        decision_json(&self.inner.after_turn(t))
    }

    /// The host tried the promotion a decision asked for.
    #[wasm_bindgen(js_name = afterPromotion)]
    pub fn after_promotion(&mut self, promoted: bool) -> Result<String, JsValue> {
        decision_json(&self.inner.after_promotion(promoted))
    }

    /// A compaction ended: the request it ran, how it ended, and the report flags.
    #[wasm_bindgen(js_name = afterCompaction)]
    pub fn after_compaction(
        &mut self,
        request_json: &str,
        outcome_json: &str,
        options_json: Option<String>,
    ) -> Result<String, JsValue> {
        let request: CompactRequest = parse(request_json, "compaction request")?;
        let outcome = match parse::<OutcomeJs>(
            outcome_json,
            "compaction outcome (expected {status: \"compacted\" | \"nothing-to-compact\" | \
             \"aborted\" | \"failed\", …})",
        )? {
            OutcomeJs::Compacted {
                tokens_after,
                stored_tokens,
            } => CompactionOutcome::Compacted {
                tokens_after: tokens(tokens_after, "tokensAfter")?,
                stored_tokens: opt_tokens(stored_tokens, "storedTokens")?,
            },
            OutcomeJs::NothingToCompact => CompactionOutcome::NothingToCompact,
            OutcomeJs::Aborted => CompactionOutcome::Aborted,
            OutcomeJs::Failed { error } => CompactionOutcome::Failed { error },
        };
        let o: ReportOptions = parse_options(options_json, "afterCompaction options")?;
        let report = CompactionReport {
            queued_messages: o.queued_messages,
            interrupted_turn: o.interrupted_turn,
            suppress_continuation: o.suppress_continuation,
            ..CompactionReport::new(request, outcome)
        };
        decision_json(&self.inner.after_compaction(&report))
    }

    /// A user prompt is about to be sent.
    #[wasm_bindgen(js_name = beforePrompt)]
    pub fn before_prompt(
        &mut self,
        model_json: &str,
        options_json: Option<String>,
    ) -> Result<String, JsValue> {
        let m = model(model_json)?;
        let o: PromptOptions = parse_options(options_json, "beforePrompt options")?;
        let last = match &o.last_assistant {
            None | Some(serde_json::Value::Null) => None,
            Some(v) => Some(assistant(&v.to_string())?),
        };
        let p = PromptInput {
            last_assistant: last.as_ref(),
            stored_tokens: opt_tokens(o.stored_tokens, "storedTokens")?,
            latest_compaction_at: compaction_time(o.latest_compaction_at)?,
            can_promote: o.can_promote,
            ..PromptInput::new(&m, now_ms(o.now)?)
        };
        decision_json(&self.inner.before_prompt(p))
    }

    /// The user switches to a model; compact first if the context is over its threshold.
    #[wasm_bindgen(js_name = beforeModelSwitch)]
    pub fn before_model_switch(
        &mut self,
        target_json: &str,
        context_tokens: f64,
        now: f64,
    ) -> Result<String, JsValue> {
        let target = model(target_json)?;
        let d = self.inner.before_model_switch(
            &target,
            tokens(context_tokens, "contextTokens")?,
            now_ms(now)?,
        );
        decision_json(&d)
    }

    /// Idle maintenance check.
    #[wasm_bindgen(js_name = onIdle)]
    pub fn on_idle(
        &mut self,
        model_json: &str,
        context_tokens: f64,
        now: f64,
    ) -> Result<String, JsValue> {
        let m = model(model_json)?;
        let d = self
            .inner
            .on_idle(&m, tokens(context_tokens, "contextTokens")?, now_ms(now)?);
        decision_json(&d)
    }
}

/// `isContextOverflow(message, contextWindow?)` (spec: compaction §8.2).
#[wasm_bindgen(js_name = isContextOverflowJson)]
pub fn is_context_overflow_json(
    message_json: &str,
    context_window: Option<f64>,
) -> Result<bool, JsValue> {
    let a = assistant(message_json)?;
    let w = opt_tokens(context_window, "contextWindow")?.unwrap_or(0);
    Ok(triggers::is_context_overflow(&a, w))
}

/// The end-event error text of a failed compaction (spec: compaction §8.3).
#[wasm_bindgen(js_name = compactionErrorMessage)]
pub fn compaction_error_message(reason: &str, message: &str) -> Result<String, JsValue> {
    let r = CompactionReason::parse(reason).ok_or_else(|| {
        bad("reason must be \"threshold\", \"overflow\", \"incomplete\", \"idle\" or \"manual\"")
    })?;
    Ok(triggers::compaction_error_message(r, message))
}
