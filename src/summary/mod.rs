//! The summary-request machinery shared by compaction and tree navigation (spec: compaction
//! §4.4–§4.6, §6): conversation serialization for the summarizer ([`serialize`]), file
//! operations ([`fileops`]), the anchor index of exact identifiers ([`anchors`]), search over the whole session
//! ([`recall`]), the request a host sends ([`request`]), the answer checks and
//! retry schedule ([`retry`]), and what a transcript reads of a message ([`view`]).

pub mod anchors;
pub mod fileops;
pub mod recall;
pub mod request;
pub mod retry;
pub mod serialize;
pub mod tools;
pub(crate) mod view;
