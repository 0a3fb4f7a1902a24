//! Test kit: a deterministic, seedable generator of realistic oh-my-pi / pi v3 session files
//! (JSONL), used by benchmarks, stress tests and the demo.
//!
//! ```
//! use ctxfold::testkit::{generate_with_stats, GenOptions};
//! let opts = GenOptions { entries: 200, ..GenOptions::default() };
//! let (bytes, stats) = generate_with_stats(&opts);
//! assert_eq!(stats.entries, 200);
//! assert_eq!(bytes, ctxfold::testkit::generate(&opts)); // same options → same bytes
//! ```
//!
//! Only integer maths, exact IEEE arithmetic and an in-crate PRNG are used: no clocks, no
//! system randomness, no hash-map iteration order.

mod generator;
mod jsonw;
pub mod png;
pub mod rng;
mod text;

#[cfg(test)]
mod tests;

pub use generator::{generate, generate_to, generate_with_stats, GenOptions, GenStats};
