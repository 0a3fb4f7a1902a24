//! Provider-native compaction lanes of the `remote` method (spec: compaction §5.7 step 1, §13):
//! the provider compacts the history itself and returns opaque state that later requests to
//! the same provider replay. Each lane is sans-IO: a plan holds the ready request, the JS shell
//! sends it, a commit reads the (untrusted) answer and writes the entry.

pub mod anthropic;
pub mod anthropic_ondemand;
mod commit;
pub mod fit;
pub mod lanes;
pub mod openai;
pub mod openai_inline;
pub mod openai_v2;
pub mod retry;

use crate::error::{Error, ErrorCode};
use crate::session::preserve::{ANTHROPIC, OPENAI_REMOTE};
pub(crate) use commit::{commit_native, files_block};
use serde_json::{Map, Value};

/// `v[key]` when it is a string.
pub(crate) fn text_of<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

/// An unusable answer of a lane: `E_SUMMARIZER` with exactly `message`.
pub(crate) fn failed(message: String) -> Error {
    Error::coded(ErrorCode::Summarizer, message)
}

/// Drops the native records of an earlier compaction from a new compaction's `preserveData`
/// (spec: compaction §5.7 step 6): the history they replay is the one being compacted again.
pub(crate) fn drop_native_records(preserve: &mut Map<String, Value>) {
    preserve.remove(OPENAI_REMOTE);
    preserve.remove(ANTHROPIC);
}

/// The lane a native request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// OpenAI `POST …/responses/compact`.
    OpenAiV1,
    /// OpenAI streaming Responses with a trailing `compaction_trigger` item.
    OpenAiV2,
}
