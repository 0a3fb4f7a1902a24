//! Building blocks with no domain knowledge: raw JSON ([`json`]), base64, text iteration
//! ([`text`]), stable sorting ([`sort`]) and ISO 8601 timestamps ([`time`]).

pub mod base64;
pub mod json;
pub(crate) mod sort;
pub(crate) mod text;
pub mod time;
