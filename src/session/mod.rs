//! The session file model (spec: compaction §1): a JSONL header plus a tree of entries linked
//! by `parentId`, with a leaf pointer selecting the active path.
//!
//! The file's bytes are kept as loaded. Every line remembers where it came from, so a save
//! writes unchanged lines back byte for byte; changed lines (migrations, edits) are spliced
//! (`json::edit`) so that their unknown fields and field order survive too. Malformed lines
//! are kept verbatim and reported with their line numbers.
//!
//! This file only declares the modules and re-exports their faces. They depend one way, and
//! so do the methods the upper files add to [`Session`]:
//!
//! - below [`Session`], never naming it: `message`, `entry` (entry kinds and bodies), `ids`,
//!   `validate`, `preserve`, `lines` (what a line is, the header, load warnings), `facts`
//!   (what the load pass records of a message, and the file calls), `skim` (the index scan
//!   of a line), `state` (the [`PathState`] type);
//! - `model`: the [`Session`] struct and the readers everything else builds on;
//! - above it, each adding its own `impl Session` and calling only the files before it:
//!   `tree` (paths, the leaf), `recorded` (reading the facts), `messages` (the message an
//!   entry carries, estimates, file calls, tool results), `path_state` (folding a path into
//!   its state), `edit` (rewriting lines), `append`, then `migrate`, `load` and `batch`;
//! - `source`: a file's bytes as its host writes them in pieces, before `load` (names nothing).

pub mod message;

mod append;
mod batch;
mod branched;
mod edit;
mod entry;
pub(crate) mod facts;
mod ids;
mod journal;
mod lines;
mod load;
mod messages;
mod migrate;
mod model;
mod path_state;
pub mod preserve;
mod recorded;
mod rewrites;
mod skim;
mod source;
mod state;
mod tree;
pub mod validate;

pub use batch::BatchError;
pub use branched::BranchedOptions;
pub use entry::*;
pub use facts::{FactsSnapshot, FileCallFacts, FileTool, ResultFacts};
pub(crate) use facts::{FileCalls, PrunedLine};
pub use ids::{IdSource, RandomIds, SequentialIds};
pub use journal::{apply_changes, stored_bytes, Changes};
pub(crate) use lines::{entry_line, LineText};
pub use lines::{HeaderInfo, LoadWarning, NewSession, CURRENT_VERSION, MAX_READ_VERSION};
pub use load::LoadOptions;
pub use model::Session;
pub use source::SourceBuffer;
pub use state::PathState;
