//! Host values of the snapcompact family: image budget overrides, archive messages. Read from the
//! JSON text the JS shell sends; errors reach JS through [`to_js`](super::to_js) with a stable
//! code.

use super::to_js;
use crate::render::shape::billing::ImageBudgets;
use crate::render::text::serialize::{ArchiveMessage, AssistantBlock};
use crate::render::SnapError;
use serde_json::Value;
use wasm_bindgen::prelude::*;

pub(crate) fn budgets(overrides_json: Option<String>) -> Result<ImageBudgets, JsValue> {
    let v = arg(overrides_json, "budgets")?;
    super::options::image_budgets(v.as_ref()).map_err(to_js)
}

pub(crate) fn parse_messages(v: &Value) -> Result<Vec<ArchiveMessage>, SnapError> {
    let bad = |i: usize, why: &str| SnapError::Options(format!("messages[{i}]: {why}"));
    let text_of = |v: &Value| -> String {
        match v {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect(),
            _ => String::new(),
        }
    };
    let list = v
        .as_array()
        .ok_or_else(|| SnapError::Options("messages must be an array".into()))?;
    let mut out = Vec::with_capacity(list.len());
    for (i, m) in list.iter().enumerate() {
        match m["role"].as_str() {
            Some("user") => out.push(ArchiveMessage::User {
                text: text_of(&m["content"]),
            }),
            Some("assistant") => {
                let mut blocks = Vec::new();
                for b in m["content"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
                    match b["type"].as_str() {
                        Some("text") => blocks.push(AssistantBlock::Text(
                            b["text"].as_str().unwrap_or("").into(),
                        )),
                        Some("thinking") => blocks.push(AssistantBlock::Thinking(
                            b["thinking"].as_str().unwrap_or("").into(),
                        )),
                        Some("toolCall") => blocks.push(AssistantBlock::ToolCall {
                            id: b["id"].as_str().unwrap_or("").into(),
                            name: b["name"].as_str().unwrap_or("").into(),
                            arguments: b["arguments"].as_object().cloned().unwrap_or_default(),
                            intent: b["intent"].as_str().map(str::to_string),
                        }),
                        _ => {}
                    }
                }
                out.push(ArchiveMessage::Assistant { blocks });
            }
            Some("toolResult") => out.push(ArchiveMessage::ToolResult {
                tool_call_id: m["toolCallId"].as_str().unwrap_or("").into(),
                text: text_of(&m["content"]),
                is_error: m["isError"].as_bool().unwrap_or(false),
                useless: m["useless"].as_bool().unwrap_or(false),
            }),
            Some(_) => {}
            None => return Err(bad(i, "needs a string role")),
        }
    }
    Ok(out)
}

pub(crate) fn arg(json: Option<String>, what: &str) -> Result<Option<Value>, JsValue> {
    match json.as_deref() {
        None | Some("") | Some("undefined") | Some("null") => Ok(None),
        Some(t) => crate::support::json::parse(t)
            .map(Some)
            .map_err(|e| to_js(SnapError::Options(format!("invalid {what}: {e}")))),
    }
}
