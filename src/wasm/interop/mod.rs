//! Every conversion between the host (JavaScript) and the core, in one place: host option
//! objects read into core values ([`options`], [`native`]: compiled on every target so their
//! rules are tested natively), JS values, errors and chunked text (`js`, wasm only), where core errors
//! become JS `Error`s with a stable `code`, and the host values each exported family reads
//! (one file per family, wasm only: `compact`, `navigation`, `session`, `snapcompact`,
//! `tokens`, `triggers`, `walk`).

pub mod native;
pub mod options;

#[cfg(target_arch = "wasm32")]
pub(crate) mod compact;
#[cfg(target_arch = "wasm32")]
mod js;
#[cfg(target_arch = "wasm32")]
pub(crate) mod navigation;
#[cfg(target_arch = "wasm32")]
pub(crate) mod session;
#[cfg(target_arch = "wasm32")]
pub(crate) mod snapcompact;
#[cfg(target_arch = "wasm32")]
pub(crate) mod tokens;
#[cfg(target_arch = "wasm32")]
pub(crate) mod triggers;
#[cfg(target_arch = "wasm32")]
pub(crate) mod walk;

#[cfg(target_arch = "wasm32")]
pub use js::*;
