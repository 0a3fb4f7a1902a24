//! Tool-output pruning from JavaScript (spec: compaction §6): one entry point per pass, with
//! a dry run that reports without writing.

use super::interop::{options, parse_json, to_js};
use super::session::WasmSession;
use crate::error::{Error, ErrorCode};
use crate::pruning::{
    apply_prune_plan, plan_superseded_tool_results, plan_tool_outputs, read_tool_supersede_key,
    PruneConfig, PruneReport,
};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
impl WasmSession {
    /// Runs a pruning pass: `"threshold"` (spec: compaction §6.6) or `"stale"` (§6.5), with
    /// the configuration as JSON (camelCase keys, `E_SETTINGS` naming a bad one). With
    /// `dry_run` nothing is written. Returns the report `{prunedCount, tokensSaved, pruned}`.
    #[wasm_bindgen(js_name = pruneJson)]
    pub fn prune_json(
        &mut self,
        pass: &str,
        config_json: Option<String>,
        dry_run: bool,
    ) -> Result<String, JsValue> {
        let config =
            PruneConfig::from_json(&options(config_json, "prune options")?).map_err(to_js)?;
        let plan = match pass {
            "threshold" => plan_tool_outputs(self.s(), &config),
            "stale" => plan_superseded_tool_results(self.s(), &config),
            other => {
                return Err(to_js(Error::coded(
                    ErrorCode::InvalidArgument,
                    format!("unknown pruning pass \"{other}\""),
                )))
            }
        }
        .map_err(to_js)?;
        let report = if dry_run {
            PruneReport {
                pruned_count: plan.candidates.len(),
                tokens_saved: plan.tokens_saved,
                pruned: plan.candidates,
            }
        } else {
            apply_prune_plan(self.s_mut(), plan).map_err(to_js)?
        };
        Ok(report.json())
    }
}

/// The supersede key of a tool call (spec: compaction §6.2), or `undefined`.
#[wasm_bindgen(js_name = readToolSupersedeKey)]
pub fn read_tool_supersede_key_js(
    tool_name: &str,
    args_json: &str,
) -> Result<Option<String>, JsValue> {
    let args = parse_json(args_json, "tool arguments")?;
    Ok(read_tool_supersede_key(tool_name, &args))
}
