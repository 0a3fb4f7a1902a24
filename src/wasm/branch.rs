//! Tree navigation with branch summaries from JavaScript (spec: compaction §7): the sans-IO
//! plan/commit cycle as a class; `src/js/runner/navigate.ts` awaits the hooks and the summarizer.

use super::compact::requests_json;
use super::interop::navigation::navigate_options;
use super::interop::{now_ms, opt_string_arg, options, parse_json, to_js};
use super::session::WasmSession;
use crate::error::{Error, ErrorCode};
use crate::navigation::{
    commit_navigation, plan_navigation, NavigationAnswer, NavigationCommit, NavigationPlan,
    SummaryRoute,
};
use crate::session::Session;
use crate::support::json::js::Object;
use serde_json::Value;
use wasm_bindgen::prelude::*;

/// The plan as the `session_before_tree` hook sees it (the reference's `TreePreparation`).
fn preparation_json(session: &Session, p: &NavigationPlan) -> String {
    let (total, lists) = match &p.preparation {
        Some(prep) => (prep.total_tokens, Some(&p.file_lists)),
        None => (0, None),
    };
    let mut out = String::new();
    let mut o = Object::open(&mut out);
    o.str("targetId", &p.target_id);
    o.opt_str("oldLeafId", p.old_leaf_id.as_deref());
    o.opt_str("commonAncestorId", p.common_ancestor_id.as_deref());
    o.strs(
        "entriesToSummarize",
        &mut p.entries_to_summarize_ids(session).into_iter(),
    );
    o.bool("userWantsSummary", p.user_wants_summary);
    o.opt_str("customInstructions", p.custom_instructions.as_deref());
    o.opt_bool("replaceInstructions", p.replace_instructions);
    o.opt_str("label", p.label.as_deref());
    o.opt_str("newLeafId", p.new_leaf_id.as_deref());
    o.opt_str("editorText", p.editor_text.as_deref());
    o.num("tokenBudget", p.token_budget as f64);
    o.num("summarizedTokens", total as f64);
    let read = lists.map(|l| &l.read_files[..]).unwrap_or_default();
    let modified = lists.map(|l| &l.modified_files[..]).unwrap_or_default();
    o.strs("readFiles", &mut read.iter().map(String::as_str));
    o.strs("modifiedFiles", &mut modified.iter().map(String::as_str));
    o.bool("noContent", p.no_content);
    o.close();
    out
}

fn commit_json(c: &NavigationCommit) -> String {
    let mut out = String::new();
    let mut o = Object::open(&mut out);
    o.bool("cancelled", false);
    o.opt_str("newLeafId", c.new_leaf_id.as_deref());
    o.opt_str("oldLeafId", c.old_leaf_id.as_deref());
    o.opt_str("summaryEntryId", c.summary_entry_id.as_deref());
    o.opt_str("labelEntryId", c.label_entry_id.as_deref());
    o.opt_str("editorText", c.editor_text.as_deref());
    o.opt_bool("fromExtension", c.from_extension);
    o.close();
    out
}

/// A navigation waiting for its commit: at most one summary request.
#[wasm_bindgen]
pub struct WasmNavigationPlan {
    plan: NavigationPlan,
}

#[wasm_bindgen]
impl WasmNavigationPlan {
    /// The target is the current leaf: committing changes nothing.
    #[wasm_bindgen(getter, js_name = isNoop)]
    pub fn is_noop(&self) -> bool {
        self.plan.noop
    }

    /// The summary request to answer (`[]` or one request), as JSON.
    #[wasm_bindgen(js_name = pendingJson)]
    pub fn pending_json(&self) -> String {
        requests_json(&self.plan.request, self.plan.reasoning_effort)
    }

    /// Who writes the summary, in the order to ask (`navigation::summary_routes`), as JSON:
    /// `[{"route": "endpoint", "url": …} | {"route": "callbacks"}]`; `[]` unless the
    /// options said what the host has (`summarizers`).
    #[wasm_bindgen(js_name = routesJson)]
    pub fn routes_json(&self) -> String {
        let mut out = String::from("[");
        for (i, r) in self.plan.routes.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let mut o = Object::open(&mut out);
            o.str("route", r.as_str());
            if let SummaryRoute::Endpoint(url) = r {
                o.str("url", url);
            }
            o.close();
        }
        out.push(']');
        out
    }

    /// What the navigation does (the `session_before_tree` payload), as JSON.
    #[wasm_bindgen(js_name = preparationJson)]
    pub fn preparation_json(&self, session: &WasmSession) -> String {
        preparation_json(session.s(), &self.plan)
    }

    /// A hook changed the instructions or the label: the request is written again.
    #[wasm_bindgen(js_name = setInstructions)]
    pub fn set_instructions(
        &mut self,
        custom_instructions: JsValue,
        replace_instructions: Option<bool>,
        label: JsValue,
    ) -> Result<(), JsValue> {
        let custom_instructions = opt_string_arg(&custom_instructions, "customInstructions")?;
        let label = opt_string_arg(&label, "label")?;
        self.plan
            .set_instructions(custom_instructions, replace_instructions);
        if label.is_some() {
            self.plan.label = label;
        }
        Ok(())
    }
}

#[wasm_bindgen]
impl WasmSession {
    /// Plans a navigation to `targetId` (spec: compaction §7.5); nothing changes yet.
    /// Throws `E_UNKNOWN_ENTRY`.
    #[wasm_bindgen(js_name = planNavigation)]
    pub fn plan_navigation(
        &self,
        target_id: &str,
        options_json: Option<String>,
    ) -> Result<WasmNavigationPlan, JsValue> {
        let o = options(options_json, "navigation options")?;
        let plan = plan_navigation(self.s(), target_id, navigate_options(&o)?).map_err(to_js)?;
        Ok(WasmNavigationPlan { plan })
    }

    /// Applies a navigation plan. `answer_json`: absent (no summary), `{"summary": text}` (the
    /// summarizer's answer) or `{"summary": text, "details": …, "fromExtension": true}` (a
    /// hook's summary). Returns the `session_tree` payload as JSON. Throws `E_STALE_PLAN`,
    /// `E_INVALID_ARGUMENT`; the session is unchanged then.
    #[wasm_bindgen(js_name = commitNavigation)]
    pub fn commit_navigation(
        &mut self,
        plan: &WasmNavigationPlan,
        answer_json: Option<String>,
        now: f64,
    ) -> Result<String, JsValue> {
        let now = now_ms(now)?;
        let answer = match answer_json.as_deref() {
            None | Some("") | Some("null") | Some("undefined") => NavigationAnswer::None,
            Some(text) => {
                let v = parse_json(text, "navigation answer")?;
                let Some(summary) = v.get("summary").and_then(Value::as_str) else {
                    return Err(to_js(Error::coded(
                        ErrorCode::InvalidArgument,
                        "a navigation answer needs a string `summary`",
                    )));
                };
                if v.get("fromExtension").and_then(Value::as_bool) == Some(true) {
                    NavigationAnswer::Extension {
                        summary: summary.to_string(),
                        details: v.get("details").filter(|d| !d.is_null()).cloned(),
                    }
                } else {
                    NavigationAnswer::Summary(summary.to_string())
                }
            }
        };
        let c = commit_navigation(self.s_mut(), &plan.plan, answer, now).map_err(to_js)?;
        Ok(commit_json(&c))
    }
}
