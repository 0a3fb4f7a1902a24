//! The snapcompact strategy (spec: snapcompact §9.2–§9.4): `planArchive` (verbatim text
//! edges around a foveated imaged middle), the deterministic `compact` step that renders the
//! archive, carry-forward of earlier archives and the reading guide shown to the model.
//!
//! Everything here is sans-IO and deterministic: the same messages, previous record, options
//! and registered fallback fonts give the same record and the same PNG bytes.
//!
//! Files by concept: `options` (what an archive is made with), `messages` (the session's
//! messages as the serializer reads them), `turns` (the user turns kept as text), `budget`
//! (the frame cap), `layout` (`planArchive`), `compact` (rendering the archive), `guide`
//! (the reading guide) and `dialect` (the reader's model class).

mod budget;
mod compact;
mod dialect;
mod guide;
mod layout;
mod messages;
mod options;
mod turns;

pub use budget::{archive_budget, archive_frame_cap, data_budget, ArchiveBudget, FrameCapInput};
pub use compact::{
    compact, frame_jobs, render_job, short_summary, thousands, ArchiveInput, ArchiveResult,
    FrameJob,
};
pub use dialect::{anthropic_dialect, model_class};
pub use guide::{reading_guide, width_note, GuideFacts};
pub use layout::{plan_archive, ArchiveLayout, PlannedPage};
pub use messages::archive_message;
pub use options::{apply_serialize_settings, ArchiveOptions, TEXT_RATIO_BOUNDS};
pub use turns::{retained_user_turns, user_turns};
