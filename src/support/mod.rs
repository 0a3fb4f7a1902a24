//! Building blocks with no domain knowledge: raw JSON ([`json`]), text iteration
//! ([`text`]), stable sorting ([`sort`]) and ISO 8601 timestamps ([`time`]).

pub mod json;
pub(crate) mod sort;
pub(crate) mod text;
pub mod time;
