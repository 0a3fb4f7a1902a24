//! The native integration tests: one binary, a module per area (`cargo test --test it`;
//! `cargo test --test it pruning::` runs one module). `tests/wasm.rs` is the wasm32 binary.
//!
//! `conformance/` compares against the reference's recorded outputs in `../shared/conformance`
//! (next to the repository); those tests fail when the data is missing.
#![cfg(not(target_arch = "wasm32"))]

mod common;

mod anchors;
mod anchors_in_place;
mod archive_rescue;
mod background;
mod branch;
mod branched_session;
mod build_context;
mod cache;
mod classify;
mod compaction_plan;
mod compaction_prepare;
mod conformance;
mod context_tools;
mod convert;
mod facts;
mod frame_storage;
mod hardening;
mod image_rescue;
mod in_place;
mod incremental;
mod journal;
mod json_text;
mod large_inputs;
mod layers;
mod load_in_pieces;
mod native_anthropic;
mod native_inline;
mod native_ondemand;
mod native_openai;
mod pi16;
mod properties;
mod pruning;
mod recall;
mod session_load;
mod small_windows;
mod snapcompact_archive;
mod snapcompact_compaction;
mod snapcompact_render;
mod snapcompact_steps;
mod summary_input;
mod transcript;
mod triggers;
mod validate;
