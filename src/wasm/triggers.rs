//! The exported trigger state machine (spec: compaction §8). The public `ContextManager` class
//! of the package (js/triggers.js) wraps it; this layer only converts JSON to the core's
//! inputs and decisions back to JSON.

use super::interop::triggers::{
    assistant, bad, compaction_time, flag, model, now, number, opt_tokens, options, outcome, tokens,
};
use super::interop::{now_ms, parse_json, to_js};
use crate::settings::CompactionSettings;
use crate::support::json::js;
use crate::triggers::{
    self, CompactRequest, CompactionReason, CompactionReport, ContextManager, Decision,
    PromptInput, TurnInput,
};
use serde_json::Value;
use wasm_bindgen::prelude::*;

fn decision_json(d: &Decision) -> Result<String, JsValue> {
    Ok(js::stringify(&d.to_json()))
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
        js::stringify(&self.inner.settings().to_json())
    }

    /// Counters and flags, as JSON.
    #[wasm_bindgen(js_name = stateJson)]
    pub fn state_json(&self) -> Result<String, JsValue> {
        Ok(js::stringify(&self.inner.state().to_json()))
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
        let what = "afterTurn options";
        let o = options(options_json, what)?;
        let t = TurnInput {
            stored_tokens: opt_tokens(number(&o, "storedTokens", what)?, "storedTokens")?,
            latest_compaction_at: compaction_time(number(&o, "latestCompactionAt", what)?)?,
            can_promote: flag(&o, "canPromote", what)?,
            freed_tokens: opt_tokens(number(&o, "freedTokens", what)?, "freedTokens")?.unwrap_or(0),
            mid_run: flag(&o, "midRun", what)?,
            ..TurnInput::new(&a, &m, now(&o, what)?)
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
        let request = CompactRequest::from_json(&parse_json(request_json, "compaction request")?)
            .map_err(|e| bad(&format!("invalid compaction request: {e}")))?;
        let outcome = outcome(outcome_json)?;
        let what = "afterCompaction options";
        let o = options(options_json, what)?;
        let report = CompactionReport {
            queued_messages: flag(&o, "queuedMessages", what)?,
            interrupted_turn: flag(&o, "interruptedTurn", what)?,
            suppress_continuation: flag(&o, "suppressContinuation", what)?,
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
        let what = "beforePrompt options";
        let o = options(options_json, what)?;
        let last = match o.get("lastAssistant") {
            None | Some(Value::Null) => None,
            Some(v) => Some(assistant(&js::stringify(v))?),
        };
        let p = PromptInput {
            last_assistant: last.as_ref(),
            stored_tokens: opt_tokens(number(&o, "storedTokens", what)?, "storedTokens")?,
            latest_compaction_at: compaction_time(number(&o, "latestCompactionAt", what)?)?,
            can_promote: flag(&o, "canPromote", what)?,
            ..PromptInput::new(&m, now(&o, what)?)
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
