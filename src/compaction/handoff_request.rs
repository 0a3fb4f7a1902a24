//! The handoff request as the live turn would send it (spec: compaction §5.9): the host's
//! system prompt and tools, the session's LLM history, then one agent-attributed user message
//! holding the handoff instruction, and `toolChoice: "none"` — the same prefix as the live
//! turn, so that the provider reads its prompt cache, and no tool call in the answer.
//!
//! Sans-IO and format-blind: the history, the system prompt and the tools arrive as the JSON
//! text the host holds, checked to be JSON and carried verbatim (no depth limit: a tool's
//! arguments may nest deeper than the reader's 128 levels); only the instruction is written
//! here.

use crate::error::{Error, ErrorCode, Result};
use crate::prompts::handoff_prompt;
use crate::support::json::js;
use crate::support::json::scan::{skip_value, skip_ws};

/// What the host's live turn sends, as JSON texts (`None`: the host gave none).
#[derive(Debug, Clone, Copy, Default)]
pub struct LiveTurn<'a> {
    /// The session's LLM messages: a JSON array.
    pub history_json: &'a str,
    /// The host's system prompt (any JSON value; `null` keeps the request's own).
    pub system_prompt_json: Option<&'a str>,
    /// The host's tools (any JSON value; `null` sends none, `[]`).
    pub tools_json: Option<&'a str>,
    /// The user's focus for the document (the `<additional-focus>` block).
    pub custom_instructions: Option<&'a str>,
}

/// The members a handoff request takes from the live turn, as a JSON object in the order the
/// host merges them into the planned request: `systemPrompt` (when the host gave one that is
/// not `null`), `tools`, `toolChoice: "none"`, `messages` (the history, then the instruction
/// as an agent-attributed user message). `None` when the host gave neither a system prompt
/// nor tools: the planned request goes as it is (its own system prompt and the serialized
/// conversation). `E_INVALID_ARGUMENT` for a text that is not one JSON value, or a history
/// that is not an array.
pub fn handoff_request_json(t: &LiveTurn<'_>) -> Result<Option<String>> {
    if t.system_prompt_json.is_none() && t.tools_json.is_none() {
        return Ok(None);
    }
    let history = array_items(t.history_json, "history")?;
    let mut out = String::from("{");
    if let Some(p) = t.system_prompt_json {
        let p = value(p, "systemPrompt")?;
        if p != "null" {
            out.push_str("\"systemPrompt\":");
            out.push_str(p);
            out.push(',');
        }
    }
    let tools = match t.tools_json {
        Some(tools) => value(tools, "tools")?,
        None => "null",
    };
    out.push_str("\"tools\":");
    out.push_str(if tools == "null" { "[]" } else { tools });
    out.push_str(",\"toolChoice\":\"none\",\"messages\":[");
    if !history.is_empty() {
        out.push_str(history);
        out.push(',');
    }
    out.push_str("{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":");
    js::write_string(&mut out, &handoff_prompt(t.custom_instructions));
    out.push_str("}],\"attribution\":\"agent\"}]}");
    Ok(Some(out))
}

fn invalid(what: &str, why: impl std::fmt::Display) -> Error {
    Error::coded(
        ErrorCode::InvalidArgument,
        format!("invalid handoff request {what}: {why}"),
    )
}

/// `text` trimmed, when it is exactly one JSON value.
fn value<'a>(text: &'a str, what: &str) -> Result<&'a str> {
    let b = text.as_bytes();
    let start = skip_ws(b, 0);
    let end = skip_value(b, start).map_err(|e| invalid(what, e))?;
    if skip_ws(b, end) != b.len() {
        return Err(invalid(what, "trailing characters after the value"));
    }
    Ok(&text[start..end])
}

/// The elements of the JSON array `text`, as the text between its brackets (trimmed; empty
/// for `[]`).
fn array_items<'a>(text: &'a str, what: &str) -> Result<&'a str> {
    let v = value(text, what)?;
    match v.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
        Some(items) => Ok(items.trim_matches([' ', '\t', '\n', '\r'])),
        None => Err(invalid(what, "expected an array")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn parsed(t: &LiveTurn<'_>) -> Option<Value> {
        handoff_request_json(t)
            .unwrap()
            .map(|s| crate::support::json::parse(&s).unwrap())
    }

    /// Issue 36 (one engine): the core builds the live turn's handoff request (§5.9).
    #[test]
    fn the_request_is_the_live_turn_then_the_instruction() {
        let history = r#"[{"role":"user","content":"q","timestamp":1},
            {"role":"assistant","content":[{"type":"text","text":"a"}],"usage":{"input":1.5e21}}]"#;
        let turn = LiveTurn {
            history_json: history,
            system_prompt_json: Some(r#""You are a test agent.""#),
            tools_json: Some(r#"[{"name":"read","parameters":{}}]"#),
            custom_instructions: Some("the parser"),
        };
        let user = json!({
            "role": "user",
            "content": [{"type": "text", "text": handoff_prompt(Some("the parser"))}],
            "attribution": "agent",
        });
        let mut messages: Vec<Value> = serde_json::from_str(history).unwrap();
        messages.push(user.clone());
        let want = json!({
            "systemPrompt": "You are a test agent.",
            "tools": [{"name": "read", "parameters": {}}],
            "toolChoice": "none",
            "messages": messages,
        });
        let got = parsed(&turn).unwrap();
        assert_eq!(got, want);
        // The members in the order the host merges them, the history's text verbatim.
        let keys: Vec<_> = got.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["systemPrompt", "tools", "toolChoice", "messages"]);
        let text = handoff_request_json(&turn).unwrap().unwrap();
        assert!(text.contains(r#""usage":{"input":1.5e21}"#), "{text}");

        // Tools alone: no system prompt member (the request keeps its own); `null` tools are
        // none; an empty history is the instruction alone.
        let turn = LiveTurn {
            history_json: " [ ] ",
            system_prompt_json: None,
            tools_json: Some("null"),
            custom_instructions: None,
        };
        let got = parsed(&turn).unwrap();
        assert_eq!(got["tools"], json!([]));
        assert!(got.get("systemPrompt").is_none());
        let user = json!({
            "role": "user",
            "content": [{"type": "text", "text": handoff_prompt(None)}],
            "attribution": "agent",
        });
        assert_eq!(got["messages"], json!([user]));
        let turn = LiveTurn {
            system_prompt_json: Some("null"),
            tools_json: None,
            ..turn
        };
        let got = parsed(&turn).unwrap();
        assert!(got.get("systemPrompt").is_none());
        assert_eq!(got["tools"], json!([]));
    }

    #[test]
    fn without_a_prompt_or_tools_the_planned_request_goes_as_it_is() {
        let turn = LiveTurn {
            history_json: "not even JSON",
            ..LiveTurn::default()
        };
        assert_eq!(handoff_request_json(&turn).unwrap(), None);
    }

    #[test]
    fn bad_texts_are_refused_and_deep_ones_carried() {
        for (history, prompt, tools) in [
            ("{}", "\"p\"", "[]"),
            ("[1,]", "\"p\"", "[]"),
            ("[]", "\"p", "[]"),
            ("[]", "\"p\" x", "[]"),
            ("[]", "\"p\"", "[1"),
        ] {
            let e = handoff_request_json(&LiveTurn {
                history_json: history,
                system_prompt_json: Some(prompt),
                tools_json: Some(tools),
                custom_instructions: None,
            })
            .unwrap_err();
            assert_eq!(
                e.code(),
                ErrorCode::InvalidArgument,
                "{history} {prompt} {tools}"
            );
        }
        // Deeper than the reader's limit: carried as it is.
        let deep = format!("[{}{}]", "[".repeat(500), "]".repeat(500));
        let text = handoff_request_json(&LiveTurn {
            history_json: &deep,
            tools_json: Some("[]"),
            ..LiveTurn::default()
        })
        .unwrap()
        .unwrap();
        assert!(text.contains(&deep[1..deep.len() - 1]));
    }
}
