//! JS values ⇄ the core: errors become JS `Error` objects with a stable `code` (in [`to_js`]
//! alone); options arrive as JSON text; long texts leave in chunks.

use crate::error::{Error, ErrorCode};
use crate::support::json::fields::{FieldError, Fields};
use serde_json::Value;
use wasm_bindgen::prelude::*;

/// The one way an error reaches JavaScript: a JS `Error` with the core error's message and
/// its stable `code` (`E_…`). Render errors convert with their own codes.
pub fn to_js(e: impl Into<Error>) -> JsValue {
    let e = e.into();
    let err = js_sys::Error::new(&e.to_string());
    // Setting a property on a fresh Error object cannot fail.
    let _ = js_sys::Reflect::set(
        &err,
        &JsValue::from_str("code"),
        &JsValue::from_str(e.code().as_str()),
    );
    // A refused message names the field, as the format readers' errors do.
    if let Error::InvalidMessage { field, .. } = &e {
        let _ = js_sys::Reflect::set(&err, &JsValue::from_str("field"), &JsValue::from_str(field));
    }
    err.into()
}

/// `to_js` of a refused batch: the error, with the `index` of the message at fault.
pub fn batch_to_js(e: crate::session::BatchError) -> JsValue {
    let err = to_js(e.error);
    if let Some(i) = e.index {
        let _ = js_sys::Reflect::set(&err, &JsValue::from_str("index"), &JsValue::from(i as f64));
    }
    err
}

/// `to_js` of an error with `code` and exactly `message`.
fn coded(code: ErrorCode, message: &str) -> JsValue {
    to_js(Error::coded(code, message))
}

/// JSON text written piece by piece (by `write`) as an array of JS strings of about 64 KiB
/// each, for the caller to `join('')`: a long text never exists whole in wasm memory. Non-ASCII
/// characters cross as `\\u` escapes (`write_ascii_json`), so every chunk and the joined text
/// are one-byte strings to JavaScript, which decodes them several times faster (issue 22: the
/// whole-path transcript of a 200 MB session).
pub fn chunked_text(write: impl FnOnce(&mut dyn FnMut(&str))) -> js_sys::Array {
    const CHUNK: usize = 64 * 1024;
    let chunks = js_sys::Array::new();
    let mut gathered = String::with_capacity(CHUNK);
    let mut gather = |piece: &str| {
        if gathered.len() + piece.len() > CHUNK && !gathered.is_empty() {
            chunks.push(&JsValue::from_str(&gathered));
            gathered.clear();
        }
        if piece.len() >= CHUNK {
            chunks.push(&JsValue::from_str(piece));
        } else {
            gathered.push_str(piece);
        }
    };
    write(&mut |text: &str| crate::support::json::js::write_ascii_json(&mut gather, text));
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
            Ok(_) => Err(coded(
                ErrorCode::InvalidArgument,
                &format!("{what} must be an object"),
            )),
            Err(e) => Err(coded(
                ErrorCode::InvalidArgument,
                &format!("invalid {what}: {e}"),
            )),
        },
    }
}

/// A field error of the shared options reader (`support::json::fields`) as a JS `Error`
/// (`E_INVALID_ARGUMENT`, naming the field).
pub fn field_error(e: FieldError) -> JsValue {
    coded(ErrorCode::InvalidArgument, &e.to_string())
}

fn fields(v: &Value) -> Result<Fields<'_>, JsValue> {
    Fields::of(Some(v), "options").map_err(field_error)
}

/// A string field of an options object (absent or `null` → `None`).
pub fn opt_str(v: &Value, key: &str) -> Result<Option<String>, JsValue> {
    Ok(fields(v)?
        .string(key)
        .map_err(field_error)?
        .map(str::to_string))
}

/// A finite number field of an options object.
pub fn opt_f64(v: &Value, key: &str) -> Result<Option<f64>, JsValue> {
    fields(v)?.number(key).map_err(field_error)
}

/// A count field of an options object: a finite, non-negative number (truncated).
pub fn opt_count(v: &Value, key: &str) -> Result<Option<u64>, JsValue> {
    fields(v)?.count(key).map_err(field_error)
}

/// An optional string argument: `undefined` and `null` are `None`, a string is itself, and
/// anything else is `E_INVALID_ARGUMENT` naming `what` (wasm-bindgen's own `Option<String>`
/// reads a number as a pointer and traps).
pub fn opt_string_arg(v: &JsValue, what: &str) -> Result<Option<String>, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    v.as_string().map(Some).ok_or_else(|| {
        coded(
            ErrorCode::InvalidArgument,
            &format!("{what} must be a string (or undefined)"),
        )
    })
}

/// Parses a required JSON argument.
pub fn parse_json(text: &str, what: &str) -> Result<serde_json::Value, JsValue> {
    crate::support::json::parse(text)
        .map_err(|e| coded(ErrorCode::InvalidArgument, &format!("invalid {what}: {e}")))
}

/// `now` from JS (ms since the epoch) as an integer: a finite number within JavaScript's
/// `Date` range (±8.64e15 ms), which every timestamp the core writes must stay readable in.
pub fn now_ms(now: f64) -> Result<i64, JsValue> {
    if now.is_finite() && now.abs() <= crate::session::validate::MAX_TIME_MS {
        Ok(now as i64)
    } else {
        Err(coded(
            ErrorCode::InvalidArgument,
            "`now` must be a finite number of milliseconds within the range of a Date \
             (±8.64e15)",
        ))
    }
}
