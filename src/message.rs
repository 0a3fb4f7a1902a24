//! Agent messages: roles, content blocks, usage and stop reasons (spec: compaction §1.7).
//!
//! These are read-only views parsed from an entry's raw JSON. Writing never goes through
//! them: unchanged messages are copied byte for byte, changed ones are spliced (`json::edit`).

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::fmt;

/// Message roles (spec: compaction §1.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    User,
    Developer,
    Assistant,
    ToolResult,
    BashExecution,
    PythonExecution,
    FileMention,
    /// `custom`; v2 files spell it `hookMessage` ([`Role::HookMessage`]).
    Custom,
    HookMessage,
    BranchSummary,
    CompactionSummary,
    Other,
}

impl Role {
    /// Maps a role string to its role.
    pub fn parse(s: &str) -> Role {
        match s {
            "user" => Role::User,
            "developer" => Role::Developer,
            "assistant" => Role::Assistant,
            "toolResult" => Role::ToolResult,
            "bashExecution" => Role::BashExecution,
            "pythonExecution" => Role::PythonExecution,
            "fileMention" => Role::FileMention,
            "custom" => Role::Custom,
            "hookMessage" => Role::HookMessage,
            "branchSummary" => Role::BranchSummary,
            "compactionSummary" => Role::CompactionSummary,
            _ => Role::Other,
        }
    }

    /// The role string (`None` for [`Role::Other`]).
    pub fn as_str(self) -> Option<&'static str> {
        Some(match self {
            Role::User => "user",
            Role::Developer => "developer",
            Role::Assistant => "assistant",
            Role::ToolResult => "toolResult",
            Role::BashExecution => "bashExecution",
            Role::PythonExecution => "pythonExecution",
            Role::FileMention => "fileMention",
            Role::Custom => "custom",
            Role::HookMessage => "hookMessage",
            Role::BranchSummary => "branchSummary",
            Role::CompactionSummary => "compactionSummary",
            Role::Other => return None,
        })
    }
}

/// One content block (spec: compaction §1.7). Unknown block types are kept as
/// [`ContentBlock::Other`].
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    Text {
        text: String,
    },
    Image {
        data: String,
        mime_type: String,
    },
    Thinking {
        thinking: String,
        signature: Option<String>,
    },
    RedactedThinking {
        data: String,
    },
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
        /// [N+] a call hidden from the model.
        context_omitted: bool,
    },
    /// `anthropicServerTool` and other block types; `payload` is the block's `block` field.
    Other {
        block_type: String,
        payload: Option<Value>,
    },
}

/// The flat shape every block is read through; serde fills only the fields present.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockRepr {
    #[serde(rename = "type", default)]
    block_type: String,
    text: Option<String>,
    data: Option<String>,
    mime_type: Option<String>,
    thinking: Option<String>,
    thinking_signature: Option<String>,
    id: Option<String>,
    name: Option<String>,
    arguments: Option<Value>,
    context_omitted: Option<Value>,
    block: Option<Value>,
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = BlockRepr::deserialize(d)?;
        Ok(match r.block_type.as_str() {
            "text" => ContentBlock::Text {
                text: r.text.unwrap_or_default(),
            },
            "image" => ContentBlock::Image {
                data: r.data.unwrap_or_default(),
                mime_type: r.mime_type.unwrap_or_default(),
            },
            "thinking" => ContentBlock::Thinking {
                thinking: r.thinking.unwrap_or_default(),
                signature: r.thinking_signature,
            },
            "redactedThinking" => ContentBlock::RedactedThinking {
                data: r.data.unwrap_or_default(),
            },
            "toolCall" => ContentBlock::ToolCall {
                id: r.id.unwrap_or_default(),
                name: r.name.unwrap_or_default(),
                arguments: r.arguments.unwrap_or(Value::Object(Default::default())),
                context_omitted: truthy(r.context_omitted.as_ref()),
            },
            _ => ContentBlock::Other {
                block_type: r.block_type,
                payload: r.block,
            },
        })
    }
}

/// JavaScript truthiness of an optional JSON value.
pub fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(_)) | Some(Value::Object(_)) => true,
    }
}

/// Message content: a plain string or a list of blocks.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    Blocks(Vec<ContentBlock>),
}

impl Default for Content {
    fn default() -> Self {
        Content::Blocks(Vec::new())
    }
}

impl Content {
    /// The blocks, with string content seen as one text block.
    pub fn blocks(&self) -> std::borrow::Cow<'_, [ContentBlock]> {
        match self {
            Content::Text(t) => {
                std::borrow::Cow::Owned(vec![ContentBlock::Text { text: t.clone() }])
            }
            Content::Blocks(b) => std::borrow::Cow::Borrowed(b),
        }
    }

    /// All text: the string, or the text blocks concatenated with no separator.
    pub fn text(&self) -> String {
        match self {
            Content::Text(t) => t.clone(),
            Content::Blocks(blocks) => blocks
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect(),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Content, E> {
                Ok(Content::Text(s.to_owned()))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Content, E> {
                Ok(Content::Text(s))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Content, E> {
                Ok(Content::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(2));
                while let Some(b) = seq.next_element::<ContentBlock>()? {
                    out.push(b);
                }
                Ok(Content::Blocks(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// Orchestration tokens: billed provider-side, never replayed (spec: compaction §1.7).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Orchestration {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
}

/// Token usage of an assistant turn (spec: compaction §1.7). Missing counts read as 0.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Usage {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total_tokens: Option<f64>,
    pub context_tokens: Option<f64>,
    pub orchestration: Option<Orchestration>,
}

/// Why an assistant turn stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
    Other(String),
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(match s.as_str() {
            "stop" => StopReason::Stop,
            "length" => StopReason::Length,
            "toolUse" => StopReason::ToolUse,
            "error" => StopReason::Error,
            "aborted" => StopReason::Aborted,
            _ => StopReason::Other(s),
        })
    }
}

/// `user` and `developer` messages.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UserMessage {
    pub content: Content,
    pub timestamp: Option<f64>,
    pub attribution: Option<String>,
}

/// `assistant` messages.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AssistantMessage {
    pub content: Content,
    pub api: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub usage: Option<Usage>,
    pub stop_reason: Option<StopReason>,
    pub error_message: Option<String>,
    pub timestamp: Option<f64>,
    pub retry_recovery: Option<Value>,
}

impl AssistantMessage {
    /// The content blocks (string content reads as one text block).
    pub fn blocks(&self) -> std::borrow::Cow<'_, [ContentBlock]> {
        self.content.blocks()
    }

    /// Ids of the tool calls this turn made.
    pub fn tool_call_ids(&self) -> impl Iterator<Item = &str> {
        let blocks: &[ContentBlock] = match &self.content {
            Content::Blocks(b) => b,
            Content::Text(_) => &[],
        };
        blocks.iter().filter_map(|b| match b {
            ContentBlock::ToolCall { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }

    /// True for stopReason `aborted` or `error`.
    pub fn failed(&self) -> bool {
        matches!(
            self.stop_reason,
            Some(StopReason::Aborted) | Some(StopReason::Error)
        )
    }
}

/// `toolResult` messages.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolResultMessage {
    pub tool_call_id: String,
    pub tool_name: String,
    pub content: Content,
    pub is_error: bool,
    pub timestamp: Option<f64>,
    pub pruned_at: Option<f64>,
    pub useless: bool,
    pub context_omitted: Option<Value>,
}

/// `bashExecution` messages.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BashExecutionMessage {
    pub command: String,
    pub output: String,
    pub exit_code: Option<f64>,
    pub cancelled: bool,
    pub truncated: bool,
    pub full_output_path: Option<String>,
    pub exclude_from_context: bool,
    pub images: Option<Vec<ContentBlock>>,
}

/// `pythonExecution` messages.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PythonExecutionMessage {
    pub code: String,
    pub output: String,
    pub exit_code: Option<f64>,
    pub cancelled: bool,
    pub exclude_from_context: bool,
}

/// One file of a `fileMention` message.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MentionedFile {
    pub path: String,
    pub content: String,
    pub line_count: Option<f64>,
    pub image: Option<ContentBlock>,
}

/// `fileMention` messages.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct FileMentionMessage {
    pub files: Vec<MentionedFile>,
}

/// `custom` (legacy `hookMessage`) messages.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CustomMessage {
    pub custom_type: String,
    pub content: Content,
    pub display: bool,
    pub details: Option<Value>,
    pub attribution: Option<String>,
    pub timestamp: Option<f64>,
}

/// `branchSummary` messages.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BranchSummaryMessage {
    pub summary: String,
    pub from_id: String,
    pub timestamp: Option<f64>,
}

/// `compactionSummary` messages.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CompactionSummaryMessage {
    pub summary: String,
    pub tokens_before: Option<f64>,
    pub short_summary: Option<String>,
    pub tokens_after: Option<f64>,
    pub method: Option<String>,
    pub warning: Option<String>,
    pub blocks: Option<Vec<ContentBlock>>,
    pub images: Option<Vec<Value>>,
    pub timestamp: Option<f64>,
}

/// An agent message of any role.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentMessage {
    User(UserMessage),
    Developer(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
    BashExecution(BashExecutionMessage),
    PythonExecution(PythonExecutionMessage),
    FileMention(FileMentionMessage),
    /// `custom` and legacy `hookMessage`.
    Custom(CustomMessage),
    BranchSummary(BranchSummaryMessage),
    CompactionSummary(CompactionSummaryMessage),
    /// A role this library does not know.
    Other,
}

#[derive(Deserialize)]
struct RoleOnly {
    #[serde(default)]
    role: Option<String>,
}

impl AgentMessage {
    /// Parses a message object. `role` may be given when already known (it saves a pass).
    pub fn parse(raw: &str, role: Option<Role>) -> Result<AgentMessage, serde_json::Error> {
        let role = match role {
            Some(r) => r,
            None => serde_json::from_str::<RoleOnly>(raw)?
                .role
                .as_deref()
                .map_or(Role::Other, Role::parse),
        };
        Ok(match role {
            Role::User => AgentMessage::User(serde_json::from_str(raw)?),
            Role::Developer => AgentMessage::Developer(serde_json::from_str(raw)?),
            Role::Assistant => AgentMessage::Assistant(serde_json::from_str(raw)?),
            Role::ToolResult => AgentMessage::ToolResult(serde_json::from_str(raw)?),
            Role::BashExecution => AgentMessage::BashExecution(serde_json::from_str(raw)?),
            Role::PythonExecution => AgentMessage::PythonExecution(serde_json::from_str(raw)?),
            Role::FileMention => AgentMessage::FileMention(serde_json::from_str(raw)?),
            Role::Custom | Role::HookMessage => AgentMessage::Custom(serde_json::from_str(raw)?),
            Role::BranchSummary => AgentMessage::BranchSummary(serde_json::from_str(raw)?),
            Role::CompactionSummary => AgentMessage::CompactionSummary(serde_json::from_str(raw)?),
            Role::Other => AgentMessage::Other,
        })
    }

    /// The message's role.
    pub fn role(&self) -> Role {
        match self {
            AgentMessage::User(_) => Role::User,
            AgentMessage::Developer(_) => Role::Developer,
            AgentMessage::Assistant(_) => Role::Assistant,
            AgentMessage::ToolResult(_) => Role::ToolResult,
            AgentMessage::BashExecution(_) => Role::BashExecution,
            AgentMessage::PythonExecution(_) => Role::PythonExecution,
            AgentMessage::FileMention(_) => Role::FileMention,
            AgentMessage::Custom(_) => Role::Custom,
            AgentMessage::BranchSummary(_) => Role::BranchSummary,
            AgentMessage::CompactionSummary(_) => Role::CompactionSummary,
            AgentMessage::Other => Role::Other,
        }
    }

    /// The assistant message, if this is one.
    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            AgentMessage::Assistant(a) => Some(a),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_role() {
        let a = AgentMessage::parse(
            r#"{"role":"assistant","content":[{"type":"thinking","thinking":"t","thinkingSignature":"s"},{"type":"text","text":"hi"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.ts"}},{"type":"weird","block":{"x":1}}],"provider":"anthropic","model":"m","usage":{"input":1,"output":2},"stopReason":"toolUse"}"#,
            None,
        )
        .unwrap();
        let AgentMessage::Assistant(a) = a else {
            panic!("not assistant")
        };
        assert_eq!(a.tool_call_ids().collect::<Vec<_>>(), vec!["c1"]);
        assert_eq!(a.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(a.usage.as_ref().map(|u| u.input), Some(1.0));
        assert!(matches!(a.blocks()[3], ContentBlock::Other { .. }));

        let u = AgentMessage::parse(r#"{"role":"user","content":"plain","timestamp":5}"#, None)
            .unwrap();
        assert_eq!(u.role(), Role::User);
        let AgentMessage::User(u) = u else { panic!() };
        assert_eq!(u.content.text(), "plain");

        let h = AgentMessage::parse(
            r#"{"role":"hookMessage","customType":"x","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"display":true}"#,
            None,
        )
        .unwrap();
        let AgentMessage::Custom(h) = h else { panic!() };
        assert_eq!(h.content.text(), "ab");

        assert_eq!(
            AgentMessage::parse(r#"{"role":"martian"}"#, None).unwrap(),
            AgentMessage::Other
        );
        assert!(AgentMessage::parse(r#"{"role":"user","content":5}"#, None).is_err());
    }
}
