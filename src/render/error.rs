//! Errors of the snapcompact layer, each with a stable code for the JS boundary.

use crate::error::{Error, ErrorCode};
use std::fmt;

/// Why a snapcompact call failed. Every variant names what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapError {
    /// A shape name, shape record or shape field is invalid (spec: snapcompact §3, §4.7).
    Shape(String),
    /// A render option is out of range (frame size, page count, minimum height, …).
    Options(String),
    /// A font is unknown, a fallback font could not be read, or a shape needs a fallback
    /// font that is not registered.
    Font(String),
    /// PNG encoding failed (an internal error: the encoder refused our own frame).
    Encode(String),
}

impl SnapError {
    /// The stable code carried to JavaScript as `Error.code`.
    pub fn code(&self) -> ErrorCode {
        match self {
            SnapError::Shape(_) => ErrorCode::Shape,
            SnapError::Options(_) => ErrorCode::Options,
            SnapError::Font(_) => ErrorCode::Font,
            SnapError::Encode(_) => ErrorCode::Encode,
        }
    }

    /// The human-readable message (without the code).
    pub fn message(&self) -> &str {
        match self {
            SnapError::Shape(m)
            | SnapError::Options(m)
            | SnapError::Font(m)
            | SnapError::Encode(m) => m,
        }
    }
}

impl fmt::Display for SnapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code(), self.message())
    }
}

impl std::error::Error for SnapError {}

/// A render error keeps its code and message in the core's error type (a font error inside a
/// compaction reaches the host as `E_FONT`).
impl From<SnapError> for Error {
    fn from(e: SnapError) -> Error {
        Error::coded(e.code(), e.message())
    }
}
