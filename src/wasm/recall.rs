//! Recall from JavaScript (issue 38): `searchHistory` over the whole session (an index object
//! the JS `Session` keeps beside its wasm session, so it is built once and kept current) and
//! the loss report of a committed compaction plan. This layer only converts.

use super::compact::WasmCompactionPlan;
use super::interop::{options, to_js};
use super::session::WasmSession;
use crate::compaction::anchored::loss_report;
use crate::summary::recall::{Artifact, HistoryIndex, SearchOptions};
use crate::summary::tools::{run_context_tool, tool_definitions, ToolFigures};
use crate::support::json::js;
use serde_json::Value;
use wasm_bindgen::prelude::*;

/// The search index of one session (`session.searchHistory`).
#[wasm_bindgen]
pub struct WasmHistoryIndex {
    index: HistoryIndex,
}

impl Default for WasmHistoryIndex {
    fn default() -> Self {
        WasmHistoryIndex::new()
    }
}

#[wasm_bindgen]
impl WasmHistoryIndex {
    /// An empty index: the first search builds it.
    #[wasm_bindgen(constructor)]
    pub fn new() -> WasmHistoryIndex {
        WasmHistoryIndex {
            index: HistoryIndex::new(),
        }
    }

    /// Searches `session` for `query` with `{limit, roles, since}` as JSON; returns the hits
    /// `[{entryId, artifact?, role, timestamp, exact, score, snippet}]` as JSON. `E_INVALID_ARGUMENT`
    /// for an empty query or bad options.
    #[wasm_bindgen(js_name = searchJson)]
    pub fn search_json(
        &mut self,
        session: &WasmSession,
        query: &str,
        options_json: Option<String>,
    ) -> Result<String, JsValue> {
        let o = SearchOptions::from_json(&options(options_json, "searchHistory options")?)
            .map_err(to_js)?;
        let hits = self.index.search(session.s(), query, &o).map_err(to_js)?;
        Ok(js::stringify(&Value::Array(
            hits.iter().map(|h| h.to_json()).collect(),
        )))
    }

    /// Hands the index artifacts the host saved, `[{name, text, kind?, entryId?}]` as JSON
    /// (issue 38 item 2): searched beside `session`'s entries from now on, one of a name
    /// already held replacing it. `E_INVALID_ARGUMENT` for a bad list (nothing added then).
    #[wasm_bindgen(js_name = addArtifactsJson)]
    pub fn add_artifacts_json(
        &mut self,
        session: &WasmSession,
        artifacts_json: &str,
    ) -> Result<(), JsValue> {
        let list = crate::support::json::parse(artifacts_json)
            .map_err(|_| crate::error::Error::InvalidArgument {
                what: "addArtifacts: the artifacts are not JSON".into(),
            })
            .and_then(|v| Artifact::list_from_json(&v))
            .map_err(to_js)?;
        for a in list {
            self.index.add_artifact(session.s(), a);
        }
        Ok(())
    }

    /// Runs a context tool the model called (`recall_history`, `context_status`) on `session`:
    /// `args_json` the model's arguments, `settings_json` the compaction settings,
    /// `figures_json` what the host knows (`{contextWindow, contextTokens, recallTokens,
    /// provider, model}`). Returns the tool's text answer. `E_INVALID_ARGUMENT` for an unknown
    /// tool, bad arguments or figures; `E_SETTINGS` for bad settings.
    #[wasm_bindgen(js_name = runContextTool)]
    pub fn run_context_tool(
        &mut self,
        session: &WasmSession,
        name: &str,
        args_json: Option<String>,
        settings_json: Option<String>,
        figures_json: Option<String>,
    ) -> Result<String, JsValue> {
        let args = match args_json.as_deref() {
            None | Some("") => Value::Null,
            Some(text) => crate::support::json::parse(text).map_err(|_| {
                to_js(crate::error::Error::InvalidArgument {
                    what: format!("{name}: the arguments are not JSON"),
                })
            })?,
        };
        let settings = super::interop::tokens::settings(settings_json)?;
        let figures = ToolFigures::from_json(&options(figures_json, "context tool figures")?)
            .map_err(to_js)?;
        run_context_tool(
            &mut self.index,
            session.s(),
            &settings,
            name,
            &args,
            &figures,
        )
        .map_err(to_js)
    }
}

/// The context tools' definitions `[{name, description, parameters}]` as JSON (issue 38 item
/// 3): each message format wraps them its own way.
#[wasm_bindgen(js_name = contextToolsJson)]
pub fn context_tools_json() -> String {
    js::stringify(&Value::Array(tool_definitions()))
}

#[wasm_bindgen]
impl WasmSession {
    /// The loss report of `plan` once committed into this session (the compacted session, or
    /// a handoff's new one): `{lost, anchored}` as JSON.
    #[wasm_bindgen(js_name = lossReportJson)]
    pub fn loss_report_json(&self, plan: &WasmCompactionPlan) -> Result<String, JsValue> {
        let r = loss_report(self.s(), &plan.plan).map_err(to_js)?;
        Ok(js::stringify(&crate::support::json::object(vec![
            ("lost", r.lost.into()),
            ("anchored", r.anchored.into()),
        ])))
    }
}
