//! Every conversion between JS values and the core, in one place: errors become JS `Error`
//! objects with a stable `code`; options arrive as JSON text.

use crate::error::{Error, ErrorCode};
use serde::de::DeserializeOwned;
use wasm_bindgen::prelude::*;

/// A JS `Error` with `message` and the stable `code`.
pub fn js_error(code: ErrorCode, message: &str) -> JsValue {
    let err = js_sys::Error::new(message);
    // Setting a property on a fresh Error object cannot fail.
    let _ = js_sys::Reflect::set(
        &err,
        &JsValue::from_str("code"),
        &JsValue::from_str(code.as_str()),
    );
    err.into()
}

/// Core error → JS `Error`.
pub fn to_js(e: Error) -> JsValue {
    js_error(e.code(), &e.to_string())
}

/// Parses an optional JSON options argument (`None`, empty or `null` → default).
pub fn options<T: DeserializeOwned + Default>(
    json: Option<String>,
    what: &str,
) -> Result<T, JsValue> {
    match json.as_deref() {
        None | Some("") | Some("null") | Some("undefined") => Ok(T::default()),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| js_error(ErrorCode::InvalidArgument, &format!("invalid {what}: {e}"))),
    }
}

/// Parses a required JSON argument.
pub fn parse_json(text: &str, what: &str) -> Result<serde_json::Value, JsValue> {
    serde_json::from_str(text)
        .map_err(|e| js_error(ErrorCode::InvalidArgument, &format!("invalid {what}: {e}")))
}

/// `now` from JS (ms since the epoch) as an integer; non-finite values are rejected.
pub fn now_ms(now: f64) -> Result<i64, JsValue> {
    if now.is_finite() {
        Ok(now as i64)
    } else {
        Err(js_error(
            ErrorCode::InvalidArgument,
            "`now` must be a finite number of milliseconds",
        ))
    }
}
