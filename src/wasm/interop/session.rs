//! Host options of the session family: context build options. Read from the JSON text the JS shell
//! sends; errors reach JS through [`to_js`](super::to_js) with a stable code.

use super::{opt_count, parse_json, to_js};
use crate::archive::blocks::HistoryOptions;
use crate::context::{BuildOptions, LeafSelector};
use crate::error::{Error, ErrorCode};
use serde_json::Value;
use wasm_bindgen::prelude::*;

pub(crate) fn build_options(
    json: Option<String>,
) -> Result<(BuildOptions, HistoryOptions<'static>), JsValue> {
    let v = match json.as_deref() {
        None | Some("") | Some("null") | Some("undefined") => Value::Null,
        Some(t) => parse_json(t, "context options")?,
    };
    // The provider's frame budgets for snapcompact archives (spec: snapcompact §9.6).
    let history = HistoryOptions {
        max_frame_data_bytes: opt_count(&v, "maxFrameDataBytes")?,
        max_images: opt_count(&v, "maxImages")?.map(|n| n as usize),
        resolver: None,
    };
    let flag = |k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
    let leaf = match v.get("leafId") {
        None => LeafSelector::Current,
        Some(Value::Null) => LeafSelector::Null,
        Some(Value::String(s)) => LeafSelector::Id(s.clone()),
        Some(_) => {
            return Err(to_js(Error::coded(
                ErrorCode::InvalidArgument,
                "`leafId` must be an entry id (string) or null",
            )))
        }
    };
    Ok((
        BuildOptions {
            leaf,
            transcript: flag("transcript"),
            collapse_compacted_history: flag("collapseCompactedHistory"),
            keep_dangling_tool_calls: flag("keepDanglingToolCalls"),
        },
        history,
    ))
}
