//! Cache-aware maintenance from JavaScript (issue 39 item 5): where a rewrite changed the
//! request and what it costs the provider's prompt cache (`crate::triggers::change_forecast`).

use super::interop::to_js;
use super::session::WasmSession;
use crate::triggers::{cache_pricing, change_forecast};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
impl WasmSession {
    /// After a maintenance action that rewrote or appended the entries `changed` (none: a new
    /// session) and freed `freed` tokens: `{prefixChangedAt: {messageIndex, entryId},
    /// forecast: {rewrittenTokens, reasoningAtRisk, tokensFreed, net}}` as JSON, priced for
    /// `provider` / `api`; `null` when no changed entry carries a message of the context.
    #[wasm_bindgen(js_name = cacheForecast)]
    pub fn cache_forecast(
        &self,
        changed: Vec<String>,
        freed: f64,
        provider: &str,
        api: Option<String>,
    ) -> Result<String, JsValue> {
        let freed = if freed.is_finite() && freed > 0.0 {
            freed.min(crate::triggers::MAX_HOST_TOKENS as f64) as u64
        } else {
            0
        };
        let pricing = cache_pricing(provider, api.as_deref());
        let ids: Vec<&str> = changed.iter().map(String::as_str).collect();
        Ok(
            match change_forecast(self.s(), &ids, freed, pricing).map_err(to_js)? {
                None => "null".into(),
                Some((at, f)) => format!(
                    "{{\"prefixChangedAt\":{},\"forecast\":{}}}",
                    at.json(),
                    f.json()
                ),
            },
        )
    }
}
