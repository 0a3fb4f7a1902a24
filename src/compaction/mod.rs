//! Compaction (spec: compaction §4, §5): preparation (cut points, split turns, the kept
//! region), summary input (serialization, prompts, file operations) and the sans-IO
//! plan → commit cycle.

pub mod anchored;
pub mod commit;
pub mod handoff_request;
pub mod native;
pub mod plan;
pub mod prepare;
pub mod snapcompact;
pub mod snapcompact_rescue;
pub mod undo;
pub mod warning;
