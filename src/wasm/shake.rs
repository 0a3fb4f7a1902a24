//! Shake from JavaScript (spec: compaction §13 "Shake"): one entry point for the plan (regions
//! and the recovery artifact's text), the apply step that writes the placeholders, and `shake
//! thinking`.

use super::interop::{options, to_js};
use super::session::WasmSession;
use crate::error::{Error, ErrorCode};
use crate::shake::{apply_shake, drop_images, plan_shake, ShakeConfig};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
impl WasmSession {
    /// `op` `"plan"`: the regions a shake with the configuration elides, `{fingerprint, tokens,
    /// regions, artifactText}` (no regions when it would save less than `minSavings`);
    /// `"apply"`: applies the plan `fingerprint` names (planned with the same configuration;
    /// `E_STALE_PLAN` when the session changed meanwhile), the placeholders naming
    /// `artifact_id` when given, and returns the report; `"run"`: plans and applies at once,
    /// without an artifact (no region text crosses to JavaScript), and returns the report.
    #[wasm_bindgen(js_name = shakeJson)]
    pub fn shake_json(
        &mut self,
        op: &str,
        config_json: Option<String>,
        fingerprint: Option<String>,
        artifact_id: Option<String>,
        now: f64,
    ) -> Result<String, JsValue> {
        let cfg = ShakeConfig::from_json(&options(config_json, "shake options")?).map_err(to_js)?;
        let report = match op {
            "plan" | "apply" | "run" => {
                let plan = plan_shake(self.s(), &cfg).map_err(to_js)?;
                if op == "plan" {
                    return Ok(plan.json(self.s()));
                }
                if op == "apply" && fingerprint.as_deref() != Some(plan.fingerprint.as_str()) {
                    return Err(to_js(Error::StalePlan {
                        reason: "the session changed since the shake was planned".into(),
                    }));
                }
                apply_shake(self.s_mut(), &plan, artifact_id.as_deref(), now as i64)
            }
            other => Err(Error::coded(
                ErrorCode::InvalidArgument,
                format!("unknown shake operation \"{other}\""),
            )),
        };
        Ok(report.map_err(to_js)?.json())
    }

    /// Drops every image attached to an entry of the branch to `leaf` (the active branch
    /// without one), the dead-end rescue's last tier (spec: compaction §8.3): `{removed,
    /// entries}` as JSON.
    #[wasm_bindgen(js_name = dropImagesJson)]
    pub fn drop_images_json(&mut self, leaf: Option<String>) -> Result<String, JsValue> {
        let r = drop_images(self.s_mut(), leaf.as_deref()).map_err(to_js)?;
        Ok(r.json())
    }
}
