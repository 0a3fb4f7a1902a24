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
    let mut b = ImageBudgets::default();
    if let Some(v) = arg(overrides_json, "budgets")? {
        let map = |k: &str| -> Result<Vec<(String, f64)>, SnapError> {
            match v.get(k) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Object(m)) => m
                    .iter()
                    .map(|(p, n)| match n.as_f64() {
                        Some(f) if f >= 0.0 && f.is_finite() => Ok((p.clone(), f)),
                        _ => Err(SnapError::Options(format!(
                            "{k}.{p} must be a non-negative number"
                        ))),
                    })
                    .collect(),
                Some(_) => Err(SnapError::Options(format!(
                    "{k} must be an object of provider → number"
                ))),
            }
        };
        for (p, n) in map("images").map_err(to_js)? {
            b.set_count(p, n as u32);
        }
        for (p, n) in map("bytes").map_err(to_js)? {
            b.set_bytes(p, n as u64);
        }
    }
    Ok(b)
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
