//! The WebAssembly binding: the only module that touches wasm-bindgen / js-sys.
use wasm_bindgen::prelude::*;

/// Version of the ctxfold core.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
