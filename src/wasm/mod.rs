//! The WebAssembly binding: the only module that touches wasm-bindgen / js-sys. Only
//! [`interop::options`] and [`interop::native`] are compiled natively too (plain JSON → core values, tested natively).
//!
//! It is thin: each exported function converts its arguments (JSON text in, JSON text out —
//! the JS wrapper in `js/` parses and stringifies), calls the core and turns core errors into
//! JS `Error`s with a stable `code` (`interop`). Values cross as JSON because most of a
//! session's data is already JSON text: copying raw message bytes out and letting the JS
//! engine's `JSON.parse` build the objects is the fastest path into JavaScript.

pub mod interop;

// The module's global allocator (linked for its `#[global_allocator]`).
#[cfg(target_arch = "wasm32")]
extern crate ctxfold_wasm_heap;
#[cfg(target_arch = "wasm32")]
mod branch;
#[cfg(target_arch = "wasm32")]
mod cache;
#[cfg(target_arch = "wasm32")]
mod compact;
#[cfg(target_arch = "wasm32")]
mod inline;
#[cfg(target_arch = "wasm32")]
mod native;
#[cfg(target_arch = "wasm32")]
mod pruning;
#[cfg(target_arch = "wasm32")]
mod recall;
#[cfg(target_arch = "wasm32")]
mod session;
#[cfg(target_arch = "wasm32")]
mod shake;
#[cfg(target_arch = "wasm32")]
mod snapcompact;
#[cfg(target_arch = "wasm32")]
mod tokens;
#[cfg(target_arch = "wasm32")]
mod triggers;
#[cfg(target_arch = "wasm32")]
mod walk;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen::prelude::*;

/// Version of the ctxfold core.
#[cfg(target_arch = "wasm32")]
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// Current size of the module's linear memory in bytes (it grows, never shrinks).
#[cfg(target_arch = "wasm32")]
#[wasm_bindgen(js_name = wasmMemoryBytes)]
pub fn wasm_memory_bytes() -> f64 {
    wasm_bindgen::memory()
        .dyn_into::<js_sys::WebAssembly::Memory>()
        .map(|m| {
            m.buffer()
                .dyn_into::<js_sys::ArrayBuffer>()
                .map_or(0.0, |b| f64::from(b.byte_length()))
        })
        .unwrap_or(0.0)
}

#[cfg(target_arch = "wasm32")]
pub use session::WasmSession;
