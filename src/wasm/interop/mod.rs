//! Every conversion between the host (JavaScript) and the core, in one place: host option
//! objects read into core values ([`options`], compiled on every target so its rules are
//! tested natively) and JS values, errors and chunked text (`js`, wasm only), where core
//! errors become JS `Error`s with a stable `code`.

pub mod options;

#[cfg(target_arch = "wasm32")]
mod js;
#[cfg(target_arch = "wasm32")]
pub use js::*;
