//! The LLM view of the active path and the display transcript (spec: compaction §3): what is
//! sent after the latest compaction ([`build`]) and the conversion of session messages to
//! LLM messages ([`convert`]).

mod build;
pub mod convert;
mod counted;
pub mod inline;
mod message;
mod notice;
pub mod projection;
mod replay;
mod stats;

pub use build::*;
pub use counted::build_counted_context;
pub use replay::{replay_pieces, replayed_items_tokens};
pub use stats::{context_stats, ContextStats};
