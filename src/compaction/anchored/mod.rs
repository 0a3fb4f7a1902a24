//! The anchor index of a compaction (issue 38 items 1 and 4): harvested when the plan is made
//! from the region it drops (`messagesToSummarize ++ turnPrefix`), seeded from the previous
//! compaction's `details.anchors` unless an extension wrote it (as file lists are, spec:
//! compaction §5.10 "Cumulative sources"), and checked against the kept region the model
//! still reads. Every commit appends the block to what it writes for the model and stores the
//! ranked list in `details`; [`loss_report`] says afterwards what of the region the model
//! can no longer see.
//!
//! Files: `plan` makes the plan's index, `write` puts the block into what a commit writes
//! (methods of [`CompactionPlan`](crate::compaction::plan::CompactionPlan)), `loss` reports
//! afterwards; `seen` is what the model sees of a text, which all three ask.

mod loss;
mod plan;
mod seen;
mod write;

pub use loss::{loss_report, LossReport};
pub use plan::PlanAnchors;
