//! Test kit of ctxfold, shared by its integration tests, benchmarks, the demo and `fuzz/`:
//!
//! - a deterministic, seedable generator of realistic oh-my-pi / pi v3 session files (JSONL),
//!   also run as the `gen-session` binary;
//! - [`spec`], a small description of a session tree and its JSONL writer, built by the
//!   property tests' proptest strategies and by the fuzz targets from their bytes;
//! - [`invariants`] (feature `invariants`, which links ctxfold), the checks both run, and
//!   [`triggers`], a host loop around the trigger state machine that checks its invariants.
//!
//! ```
//! use ctxfold_testkit::{generate_with_stats, GenOptions};
//! let opts = GenOptions { entries: 200, ..GenOptions::default() };
//! let (bytes, stats) = generate_with_stats(&opts);
//! assert_eq!(stats.entries, 200);
//! assert_eq!(bytes, ctxfold_testkit::generate(&opts)); // same options → same bytes
//! ```
//!
//! The generator uses only integer maths, exact IEEE arithmetic and an in-crate PRNG: no
//! clocks, no system randomness, no hash-map iteration order. It does not use ctxfold, so the
//! sessions it writes are an independent check of ctxfold's reader.
#![forbid(unsafe_code)]

mod generator;
mod jsonw;
pub mod png;
pub mod rng;
pub mod spec;
mod text;

#[cfg(feature = "invariants")]
pub mod agent;
#[cfg(feature = "invariants")]
pub mod invariants;
#[cfg(feature = "invariants")]
pub mod journal;
#[cfg(feature = "invariants")]
pub mod triggers;

#[cfg(test)]
mod tests;

pub use generator::{generate, generate_to, generate_with_stats, GenOptions, GenStats};
