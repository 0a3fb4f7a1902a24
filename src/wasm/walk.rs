//! The exported compaction walk (spec: compaction §8.3, §8.5, §8.6, §13): the state machine of
//! `triggers::Walk` behind a class the JS driver (`src/js/runner/compact.ts`) polls. JSON in, JSON out.

use super::interop::triggers::bad;
use super::interop::walk::{input, step, written_strategy};
use crate::triggers::{OutOfTurn, Walk};
use wasm_bindgen::prelude::*;

fn out_of_turn(e: OutOfTurn) -> JsValue {
    bad(&e.to_string())
}

fn count(v: f64) -> Result<u64, JsValue> {
    if v.is_finite() && v >= 0.0 {
        Ok(v.round() as u64)
    } else {
        Err(bad("the compaction walk takes non-negative token counts"))
    }
}

fn opt_count(v: Option<f64>) -> Result<Option<u64>, JsValue> {
    v.map(count).transpose()
}

/// One compaction's method walk.
#[wasm_bindgen]
pub struct WasmWalk {
    inner: Walk,
}

#[wasm_bindgen]
impl WasmWalk {
    /// The walk for `input_json` (see `interop::walk::input`) and the compaction settings (their
    /// `strategy` as written picks the method, see `Walk::new`).
    #[wasm_bindgen(constructor)]
    pub fn new(input_json: &str, settings_json: Option<String>) -> Result<WasmWalk, JsValue> {
        let settings = super::interop::tokens::settings(settings_json.clone())?;
        let strategy = written_strategy(settings_json.as_deref());
        Ok(WasmWalk {
            inner: Walk::new(input(input_json, settings, strategy)?),
        })
    }

    /// The methods the walk may run, as a JSON array of names.
    #[wasm_bindgen(js_name = methodsJson)]
    pub fn methods_json(&self) -> String {
        let names: Vec<&str> = self.inner.methods().iter().map(|m| m.as_str()).collect();
        crate::support::json::js::stringify(&serde_json::json!(names))
    }

    /// The next step, as JSON.
    pub fn poll(&mut self) -> String {
        let s = self.inner.poll();
        step(&s, self.inner.remote_failed())
    }

    pub fn planned(&mut self) -> Result<(), JsValue> {
        self.inner.handle_planned().map_err(out_of_turn)
    }

    #[wasm_bindgen(js_name = planFailed)]
    pub fn plan_failed(&mut self, code: &str, message: &str) -> Result<(), JsValue> {
        self.inner
            .handle_plan_failed(code, message)
            .map_err(out_of_turn)
    }

    #[wasm_bindgen(js_name = extensionCommitted)]
    pub fn extension_committed(&mut self) -> Result<(), JsValue> {
        self.inner.handle_extension_committed().map_err(out_of_turn)
    }

    pub fn summarized(&mut self) -> Result<(), JsValue> {
        self.inner.handle_summarized().map_err(out_of_turn)
    }

    #[wasm_bindgen(js_name = nativeUnavailable)]
    pub fn native_unavailable(&mut self) -> Result<(), JsValue> {
        self.inner.handle_native_unavailable().map_err(out_of_turn)
    }

    /// The reading model's compaction threshold, for the shake options' `thresholdTokens`;
    /// undefined for an unknown window.
    #[wasm_bindgen(js_name = thresholdTokens)]
    pub fn threshold_tokens(&self) -> Option<f64> {
        self.inner.threshold_tokens().map(|t| t as f64)
    }

    /// A snapcompact commit's `{nonMessageTokens, textRatio, imageRatio}` for a kept tail of
    /// `recent_estimate` tokens (core estimate), as JSON (`Walk::archive_fit`).
    #[wasm_bindgen(js_name = archiveFitJson)]
    pub fn archive_fit_json(&self, recent_estimate: f64) -> Result<String, JsValue> {
        let f = self.inner.archive_fit(count(recent_estimate)?);
        Ok(crate::support::json::js::stringify(&serde_json::json!({
            "nonMessageTokens": f.non_message_tokens,
            "textRatio": f.text_ratio,
            "imageRatio": f.image_ratio,
        })))
    }

    /// A commit: the core's `tokensAfter`, and the host's measure of the live context in the
    /// provider's tokens with the request overhead, if it has one.
    pub fn committed(
        &mut self,
        core_tokens_after: f64,
        live_after: Option<f64>,
    ) -> Result<(), JsValue> {
        self.inner
            .handle_committed(count(core_tokens_after)?, opt_count(live_after)?)
            .map_err(out_of_turn)
    }

    /// The archive rebuild of the dead-end rescue committed (as `committed`).
    pub fn rebuilt(
        &mut self,
        core_tokens_after: f64,
        live_after: Option<f64>,
    ) -> Result<(), JsValue> {
        self.inner
            .handle_rebuilt(count(core_tokens_after)?, opt_count(live_after)?)
            .map_err(out_of_turn)
    }

    /// The archive rebuild was refused or had nothing to rebuild.
    #[wasm_bindgen(js_name = rebuildFailed)]
    pub fn rebuild_failed(&mut self) -> Result<(), JsValue> {
        self.inner.handle_rebuild_failed().map_err(out_of_turn)
    }

    /// The image drop of the dead-end rescue ran: the images it removed and the host's measure
    /// after it, if any.
    #[wasm_bindgen(js_name = imagesDropped)]
    pub fn images_dropped(&mut self, removed: f64, live_after: Option<f64>) -> Result<(), JsValue> {
        self.inner
            .handle_images_dropped(count(removed)?, opt_count(live_after)?)
            .map_err(out_of_turn)
    }

    /// The method failed; `status` is the HTTP status of a remote failure, if any.
    #[wasm_bindgen(js_name = methodFailed)]
    pub fn method_failed(
        &mut self,
        code: &str,
        message: &str,
        status: Option<f64>,
    ) -> Result<(), JsValue> {
        let status = status
            .filter(|s| (100.0..600.0).contains(s))
            .map(|s| s as u16);
        self.inner
            .handle_method_failed(code, message, status)
            .map_err(out_of_turn)
    }

    /// A shake ran: its dropped count, its freed tokens (core estimate) and the host's measure
    /// after it, if any.
    pub fn shaken(
        &mut self,
        dropped: f64,
        tokens_freed: f64,
        live_after: Option<f64>,
    ) -> Result<(), JsValue> {
        self.inner
            .handle_shaken(
                count(dropped)?,
                count(tokens_freed)?,
                opt_count(live_after)?,
            )
            .map_err(out_of_turn)
    }
}

/// The members a handoff request takes from the live turn (spec: compaction §5.9,
/// `compaction::handoff_request`), as JSON to merge into each pending request; undefined when
/// the host gave neither a system prompt nor tools. Each argument is the JSON text of the
/// host's value (the session's LLM messages, its system prompt, its tools), carried verbatim.
#[wasm_bindgen(js_name = handoffRequestJson)]
pub fn handoff_request_json(
    history_json: &str,
    system_prompt_json: Option<String>,
    tools_json: Option<String>,
    custom_instructions: Option<String>,
) -> Result<Option<String>, JsValue> {
    use crate::compaction::handoff_request::{handoff_request_json, LiveTurn};
    handoff_request_json(&LiveTurn {
        history_json,
        system_prompt_json: system_prompt_json.as_deref(),
        tools_json: tools_json.as_deref(),
        custom_instructions: custom_instructions.as_deref(),
    })
    .map_err(super::interop::to_js)
}

/// The `action` of the compaction events for the method named `method` (spec: compaction §8.7,
/// `CompactionMethod::action`); undefined for a name that is not a method.
#[wasm_bindgen(js_name = compactionAction)]
pub fn compaction_action(method: &str) -> Option<String> {
    crate::triggers::CompactionMethod::named(method).map(|m| m.action().as_str().to_string())
}
