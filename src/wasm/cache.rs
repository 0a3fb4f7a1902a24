//! Cache-aware maintenance from JavaScript (issue 39 item 5): where a rewrite changed the
//! request and what it costs the provider's prompt cache (`crate::triggers::rewrite_forecast`).

use super::interop::to_js;
use super::session::WasmSession;
use crate::triggers::{cache_pricing, rewrite_forecast};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
impl WasmSession {
    /// After a rewrite whose first changed entry is `entry_id` and that freed `freed` tokens:
    /// `{prefixChangedAt: {messageIndex, entryId}, forecast: {rewrittenTokens,
    /// reasoningAtRisk, tokensFreed, net}}` as JSON, priced for `provider` / `api`; `null`
    /// when the entry carries no message of the context.
    #[wasm_bindgen(js_name = cacheForecast)]
    pub fn cache_forecast(
        &self,
        entry_id: &str,
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
        Ok(
            match rewrite_forecast(self.s(), entry_id, freed, pricing).map_err(to_js)? {
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
