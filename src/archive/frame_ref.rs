//! A frame's reference to bytes stored in another compaction entry (`dataRef`): the record's
//! side of frame storage, read with the archive; [`super::stored`] resolves and writes them.

use crate::support::json::js;
use serde_json::Value;

/// The member of a frame that names its stored bytes in place of `data`.
pub const DATA_REF_KEY: &str = "dataRef";

/// A frame's bytes stored in another compaction entry of the file (`dataRef`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameRef {
    /// Id of the compaction entry whose archive holds the bytes inline.
    pub entry: String,
    /// Position of the frame in that entry's `preserveData.snapcompact.frames`.
    pub frame: u64,
    /// Length of the base64 payload: bytes of another length are not this frame.
    pub bytes: u64,
}

impl FrameRef {
    /// Reads a `dataRef` value; a malformed one (not an object, no entry id, no position or
    /// length) is kept with an empty id, which never resolves.
    pub fn from_json(v: &Value) -> FrameRef {
        let get = |k: &str| v.as_object().and_then(|o| o.get(k));
        let entry = get("entry").and_then(Value::as_str).unwrap_or_default();
        let frame = get("frame").and_then(Value::as_u64);
        let bytes = get("bytes").and_then(Value::as_u64);
        match (frame, bytes) {
            (Some(frame), Some(bytes)) if !entry.is_empty() && bytes > 0 => FrameRef {
                entry: entry.to_string(),
                frame,
                bytes,
            },
            _ => FrameRef {
                entry: String::new(),
                frame: 0,
                bytes: 0,
            },
        }
    }

    pub fn to_json(&self) -> Value {
        crate::support::json::object(vec![
            ("entry", self.entry.as_str().into()),
            ("frame", self.frame.into()),
            ("bytes", self.bytes.into()),
        ])
    }

    pub(super) fn member_text(&self) -> String {
        let mut out = String::new();
        js::write_string(&mut out, DATA_REF_KEY);
        out.push(':');
        out.push_str(&js::stringify(&self.to_json()));
        out
    }
}
