//! Host values of the token functions: settings and context windows. Read from the JSON text the JS
//! shell sends; errors reach JS through [`to_js`](super::to_js) with a stable code.

use super::{parse_json, to_js};
use crate::error::{Error, ErrorCode};
use crate::settings::CompactionSettings;
use wasm_bindgen::prelude::*;

pub(crate) fn settings(json: Option<String>) -> Result<CompactionSettings, JsValue> {
    match json.as_deref() {
        None | Some("") | Some("undefined") => Ok(CompactionSettings::default()),
        Some(t) => CompactionSettings::from_json(&parse_json(t, "settings")?).map_err(to_js),
    }
}

pub(crate) fn window(w: f64) -> Result<u64, JsValue> {
    if w.is_finite() && w >= 0.0 {
        Ok(w as u64)
    } else {
        Err(to_js(Error::coded(
            ErrorCode::InvalidArgument,
            "the context window must be a non-negative number of tokens",
        )))
    }
}
