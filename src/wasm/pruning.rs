//! Tool-output pruning from JavaScript (spec: compaction §6): one entry point per pass, with
//! a dry run that reports without writing.

use super::interop::{options, parse_json, to_js};
use super::session::WasmSession;
use crate::error::{Error, ErrorCode};
use crate::pruning::{
    apply_prune_originals, apply_prune_plan, plan_superseded_tool_results, plan_tool_outputs,
    pruned_originals, read_tool_supersede_key, PruneConfig, PrunePlan, PruneReport, PrunedOriginal,
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
        let plan = plan_pass(self, pass, &config)?;
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

/// A pruning plan held for the host while it saves the originals (issue 38 item 2):
/// `WasmSession::planPrune`, then `WasmSession::applyPrunePlan` once they are stored.
#[wasm_bindgen]
pub struct WasmPrunePlan {
    plan: PrunePlan,
    originals: Vec<PrunedOriginal>,
}

#[wasm_bindgen]
impl WasmPrunePlan {
    /// The dry-run report `{prunedCount, tokensSaved, pruned}` with `artifacts`: the original
    /// of each pruned result `[{name, kind: "prune", entryId, toolName, toolCallId, text}]`.
    pub fn json(&self) -> String {
        let report = PruneReport {
            pruned_count: self.plan.candidates.len(),
            tokens_saved: self.plan.tokens_saved,
            pruned: self.plan.candidates.clone(),
        }
        .json();
        let artifacts = crate::support::json::js::stringify(&serde_json::Value::Array(
            self.originals.iter().map(PrunedOriginal::to_json).collect(),
        ));
        format!(
            "{},\"artifacts\":{artifacts}}}",
            &report[..report.len() - 1]
        )
    }
}

#[wasm_bindgen]
impl WasmSession {
    /// Plans a pruning pass as `pruneJson` does and reads the original text of each result it
    /// would blank; nothing is written.
    #[wasm_bindgen(js_name = planPrune)]
    pub fn plan_prune(
        &self,
        pass: &str,
        config_json: Option<String>,
    ) -> Result<WasmPrunePlan, JsValue> {
        let config =
            PruneConfig::from_json(&options(config_json, "prune options")?).map_err(to_js)?;
        let plan = plan_pass(self, pass, &config)?;
        let originals = pruned_originals(self.s(), &plan).map_err(to_js)?;
        Ok(WasmPrunePlan { plan, originals })
    }

    /// Applies a `planPrune` plan; `E_STALE_PLAN`, nothing written, when a result it prunes
    /// changed meanwhile. Returns the report `{prunedCount, tokensSaved, pruned}`.
    #[wasm_bindgen(js_name = applyPrunePlan)]
    pub fn apply_prune_plan_js(&mut self, plan: &WasmPrunePlan) -> Result<String, JsValue> {
        apply_prune_originals(self.s_mut(), &plan.plan, &plan.originals)
            .map(|r| r.json())
            .map_err(to_js)
    }
}

fn plan_pass(
    session: &WasmSession,
    pass: &str,
    config: &PruneConfig,
) -> Result<PrunePlan, JsValue> {
    match pass {
        "threshold" => plan_tool_outputs(session.s(), config),
        "stale" => plan_superseded_tool_results(session.s(), config),
        other => {
            return Err(to_js(Error::coded(
                ErrorCode::InvalidArgument,
                format!("unknown pruning pass \"{other}\""),
            )))
        }
    }
    .map_err(to_js)
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
