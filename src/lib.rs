//! ctxfold: keeps long LLM-agent sessions usable.
//!
//! Pipeline: `session` (JSONL entry tree, lossless) → `context` (the LLM view of the active
//! path) → `tokens` (estimates and thresholds). Everything here is sans-IO: no clocks, no
//! network; operations that need an LLM return a plan and take the answers in a commit step.
//! The only JavaScript-facing code lives in the `wasm` module.
#![forbid(unsafe_code)]

pub mod branch;
pub mod compaction;
pub mod context;
pub mod convert;
pub mod error;
pub mod json;
pub mod message;
pub mod prompts;
pub mod pruning;
pub mod session;
pub mod settings;
pub mod snapcompact;
mod sort;
mod text;
pub mod time;
pub mod tokens;
pub mod triggers;

#[cfg(feature = "testkit")]
pub mod testkit;

#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod wasm;

pub use error::{Error, ErrorCode, Result};
pub use message::{AgentMessage, Role};
pub use session::Session;
