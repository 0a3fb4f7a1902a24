//! ctxfold: keeps long LLM-agent sessions inside their context window.
//!
//! Pipeline: [`session`] (the JSONL entry tree, lossless) → [`context`] and [`tokens`] (the LLM
//! view of the active path and its size) → [`summary`] (requests a summarizer answers) →
//! [`compaction`], [`pruning`], [`navigation`] and [`triggers`] (what to do and when).
//! [`render`] prints text onto PNG frames and knows nothing of sessions; [`archive`] is the
//! persisted snapcompact record; [`support`] holds the domain-free pieces (raw JSON, text, time).
//!
//! Everything here is sans-IO: no clocks, no network. Operations that need an LLM return a plan
//! with ready requests and take the answers in a commit step. The only JavaScript-facing code
//! lives in the `wasm` module.
#![forbid(unsafe_code)]

pub mod archive;
pub mod compaction;
pub mod context;
pub mod error;
pub mod navigation;
pub mod prompts;
pub mod pruning;
pub mod render;
pub mod session;
pub mod settings;
pub mod summary;
pub mod support;
pub mod tokens;
pub mod triggers;

#[cfg(feature = "testkit")]
pub mod testkit;

#[doc(hidden)]
pub mod wasm;

pub use error::{Error, ErrorCode, Result};
pub use session::message::{AgentMessage, Role};
pub use session::Session;
