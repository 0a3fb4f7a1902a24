//! Raw JSON: a strict scanner that locates values without building them, surgical edits of
//! object text, and `JSON.stringify`-compatible output.

pub mod edit;
pub mod js;
pub mod scan;
pub mod view;
