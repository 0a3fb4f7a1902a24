//! Shake from JavaScript (spec: compaction §13 "Shake"): the plan (regions and the recovery
//! artifact's text), the apply step that writes the placeholders, and `shake thinking`.

use super::interop::{options, to_js};
use super::session::WasmSession;
use crate::error::Error;
use crate::shake::{apply_shake, drop_thinking, plan_shake, ShakeConfig};
use wasm_bindgen::prelude::*;

fn config(json: Option<String>) -> Result<ShakeConfig, JsValue> {
    ShakeConfig::from_json(&options(json, "shake options")?).map_err(to_js)
}

#[wasm_bindgen]
impl WasmSession {
    /// The regions a shake with the configuration elides: `{fingerprint, tokens, regions,
    /// artifactText}` (empty `regions` when it would save less than `minSavings`).
    #[wasm_bindgen(js_name = planShakeJson)]
    pub fn plan_shake_json(&self, config_json: Option<String>) -> Result<String, JsValue> {
        let plan = plan_shake(self.s(), &config(config_json)?).map_err(to_js)?;
        let mut v = plan.to_json(self.s());
        if let Some(o) = v.as_object_mut() {
            o.insert("artifactText".into(), plan.artifact_text().into());
        }
        Ok(crate::support::json::js::stringify(&v))
    }

    /// Applies the shake planned with the same configuration as `fingerprint` says: the
    /// placeholders name `artifact_id` when given. `E_STALE_PLAN` when the session changed
    /// meanwhile. Returns the report.
    #[wasm_bindgen(js_name = applyShakeJson)]
    pub fn apply_shake_json(
        &mut self,
        config_json: Option<String>,
        fingerprint: &str,
        artifact_id: Option<String>,
        now: f64,
    ) -> Result<String, JsValue> {
        let plan = plan_shake(self.s(), &config(config_json)?).map_err(to_js)?;
        if plan.fingerprint != fingerprint {
            return Err(to_js(Error::StalePlan {
                reason: "the session changed since the shake was planned".into(),
            }));
        }
        let report =
            apply_shake(self.s_mut(), &plan, artifact_id.as_deref(), now as i64).map_err(to_js)?;
        Ok(crate::support::json::js::stringify(&report.to_json()))
    }

    /// `shake thinking`: drops old reasoning blocks; returns the report.
    #[wasm_bindgen(js_name = dropThinkingJson)]
    pub fn drop_thinking_json(&mut self, config_json: Option<String>) -> Result<String, JsValue> {
        let report = drop_thinking(self.s_mut(), &config(config_json)?).map_err(to_js)?;
        Ok(crate::support::json::js::stringify(&report.to_json()))
    }
}
