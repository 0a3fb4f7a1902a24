//! ctxfold keeps long LLM-agent sessions inside their context window. The pipeline:
//! [`session`] (JSONL entry tree) → [`context`] + [`tokens`] (the LLM view and its size) →
//! [`summary`] (summarizer requests) → [`compaction`], [`pruning`], [`navigation`], [`triggers`].
//!
//! Beside it: [`render`] prints text onto PNG frames and knows nothing of sessions; [`archive`] is
//! the persisted snapcompact record; [`support`] holds the domain-free pieces (raw JSON, text,
//! time). Everything is sans-IO: no clocks, no network; operations that need an LLM return a plan
//! with ready requests and take the answers in a commit step. Only the `wasm` module faces
//! JavaScript, and the folders depend one way (`tests/it/layers.rs`).
//!
//! No unsafe code, but for one audited exception: a session file's buffer takes the bytes a
//! host wrote into its spare capacity without filling that room with zeros first
//! (`session::source`, and the binding's call of it), so that each page of the module's memory
//! is first touched by the host's own write.
#![deny(unsafe_code)]

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
pub mod shake;
pub mod summary;
pub mod support;
pub mod tokens;
pub mod triggers;

#[doc(hidden)]
pub mod wasm;

pub use error::{Error, ErrorCode, Result};
pub use session::message::{AgentMessage, Role};
pub use session::Session;
