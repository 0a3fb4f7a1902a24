//! Every conversion between JS values and the core, in one place: errors become JS `Error`
//! objects with a stable `code`; options arrive as JSON text.

use crate::error::{Error, ErrorCode};
use serde_json::Value;
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

/// Text written piece by piece (by `write`) as an array of JS strings of about 64 KiB each,
/// for the caller to `join('')`: a long text never exists whole in wasm memory.
pub fn chunked_text(write: impl FnOnce(&mut dyn FnMut(&str))) -> js_sys::Array {
    const CHUNK: usize = 64 * 1024;
    let chunks = js_sys::Array::new();
    let mut gathered = String::with_capacity(CHUNK);
    write(&mut |piece: &str| {
        if gathered.len() + piece.len() > CHUNK && !gathered.is_empty() {
            chunks.push(&JsValue::from_str(&gathered));
            gathered.clear();
        }
        if piece.len() >= CHUNK {
            chunks.push(&JsValue::from_str(piece));
        } else {
            gathered.push_str(piece);
        }
    });
    if !gathered.is_empty() {
        chunks.push(&JsValue::from_str(&gathered));
    }
    chunks
}

/// Parses an optional JSON options argument: `Null` when absent, empty or `null`; otherwise
/// it must be an object.
pub fn options(json: Option<String>, what: &str) -> Result<Value, JsValue> {
    match json.as_deref() {
        None | Some("") | Some("null") | Some("undefined") => Ok(Value::Null),
        Some(text) => match crate::support::json::parse(text) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(_) => Err(js_error(
                ErrorCode::InvalidArgument,
                &format!("{what} must be an object"),
            )),
            Err(e) => Err(js_error(
                ErrorCode::InvalidArgument,
                &format!("invalid {what}: {e}"),
            )),
        },
    }
}

/// A string field of an options object.
pub fn opt_str(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// A number field of an options object.
pub fn opt_f64(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

/// A count field of an options object: absent or `null` → `None`; anything but a finite,
/// non-negative number → `E_INVALID_ARGUMENT` naming the field.
pub fn opt_count(v: &Value, key: &str) -> Result<Option<u64>, JsValue> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(n) => match n.as_f64() {
            Some(f) if f.is_finite() && f >= 0.0 => Ok(Some(f as u64)),
            _ => Err(js_error(
                ErrorCode::InvalidArgument,
                &format!("`{key}` must be a non-negative number"),
            )),
        },
    }
}

/// Parses a required JSON argument.
pub fn parse_json(text: &str, what: &str) -> Result<serde_json::Value, JsValue> {
    crate::support::json::parse(text)
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
