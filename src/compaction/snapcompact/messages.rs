//! Session messages as the archive serializer reads them (spec: snapcompact §9.2).

use crate::render::text::serialize::{ArchiveMessage, AssistantBlock};
use rustc_hash::FxHashSet;
use serde_json::Value;

/// A provider message (the output of `convertToLlm`: roles `user`, `developer`, `assistant`,
/// `toolResult`) → the transcript's message model (`None` for other roles, `developer`
/// included: the reference's archive serializer prints user, assistant and tool-result
/// messages only, so custom messages and text file mentions stay out, as in the summarizer's
/// plain transcript; conformance `rules/`). `useless` holds the `toolCallId`s of results
/// flagged useless (spec: snapcompact §6.1: those pairs are skipped).
pub fn archive_message(m: &Value, useless: &FxHashSet<Box<str>>) -> Option<ArchiveMessage> {
    let text_of = |v: Option<&Value>| -> String {
        match v {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect(),
            _ => String::new(),
        }
    };
    let s = |b: &Value, k: &str| b.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    match m.get("role").and_then(Value::as_str) {
        Some("user") => Some(ArchiveMessage::User {
            text: text_of(m.get("content")),
        }),
        Some("assistant") => {
            let blocks = m
                .get("content")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                    Some("text") => Some(AssistantBlock::Text(s(b, "text"))),
                    Some("thinking") => Some(AssistantBlock::Thinking(s(b, "thinking"))),
                    Some("toolCall") => Some(AssistantBlock::ToolCall {
                        id: s(b, "id"),
                        name: s(b, "name"),
                        arguments: b
                            .get("arguments")
                            .and_then(Value::as_object)
                            .cloned()
                            .unwrap_or_default(),
                        intent: b.get("intent").and_then(Value::as_str).map(str::to_string),
                    }),
                    _ => None,
                })
                .collect();
            Some(ArchiveMessage::Assistant { blocks })
        }
        Some("toolResult") => {
            let id = s(m, "toolCallId");
            Some(ArchiveMessage::ToolResult {
                useless: useless.contains(id.as_str())
                    || m.get("useless").and_then(Value::as_bool) == Some(true),
                tool_call_id: id,
                text: text_of(m.get("content")),
                is_error: m.get("isError").and_then(Value::as_bool) == Some(true),
            })
        }
        _ => None,
    }
}
