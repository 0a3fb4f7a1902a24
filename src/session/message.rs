//! Agent messages: roles, content blocks, usage and stop reasons (spec: compaction §1.7).
//!
//! These are read-only views parsed from an entry's raw JSON (in place, with `json::view`;
//! missing or mistyped optional fields read as their defaults). Writing never goes through
//! them: unchanged messages are copied byte for byte, changed ones are spliced (`json::edit`).

use crate::support::json::view::{Obj, Val};
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

impl ContentBlock {
    /// Reads a block; `None` when it is not an object.
    pub fn read(v: Val<'_>) -> Option<ContentBlock> {
        let o = v.obj()?;
        let s = |k: &str| o.string(k).unwrap_or_default();
        let block_type = s("type");
        Some(match block_type.as_str() {
            "text" => ContentBlock::Text { text: s("text") },
            "image" => ContentBlock::Image {
                data: s("data"),
                mime_type: s("mimeType"),
            },
            "thinking" => ContentBlock::Thinking {
                thinking: s("thinking"),
                signature: o.string("thinkingSignature"),
            },
            "redactedThinking" => ContentBlock::RedactedThinking { data: s("data") },
            "toolCall" => ContentBlock::ToolCall {
                id: s("id"),
                name: s("name"),
                arguments: o
                    .value("arguments")
                    .unwrap_or_else(|| Value::Object(Default::default())),
                context_omitted: o.get("contextOmitted").is_some_and(|v| v.truthy()),
            },
            _ => ContentBlock::Other {
                payload: o.value("block"),
                block_type,
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
    /// Reads content: a string, an array of blocks (non-objects are skipped), or nothing.
    /// `Err` for any other JSON type, which no writer produces.
    pub fn read(v: Option<Val<'_>>) -> Result<Content, ShapeError> {
        let Some(v) = v.filter(|v| !v.is_null()) else {
            return Ok(Content::default());
        };
        if let Some(s) = v.str() {
            return Ok(Content::Text(s.into_owned()));
        }
        match v.array() {
            Some(items) => Ok(Content::Blocks(
                items.into_iter().filter_map(ContentBlock::read).collect(),
            )),
            None => Err(ShapeError(
                "`content` is neither a string nor an array".into(),
            )),
        }
    }

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

/// A message body that does not have the shape its role requires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeError(pub String);

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ShapeError {}

/// Orchestration tokens: billed provider-side, never replayed (spec: compaction §1.7).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Orchestration {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
}

/// Token usage of an assistant turn (spec: compaction §1.7). Missing counts read as 0.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total_tokens: Option<f64>,
    pub context_tokens: Option<f64>,
    pub orchestration: Option<Orchestration>,
}

impl Usage {
    /// Reads a usage object.
    pub fn read(o: &Obj<'_>) -> Usage {
        let n = |k: &str| o.f64(k).unwrap_or(0.0);
        Usage {
            input: n("input"),
            output: n("output"),
            cache_read: n("cacheRead"),
            cache_write: n("cacheWrite"),
            total_tokens: o.f64("totalTokens"),
            context_tokens: o.f64("contextTokens"),
            orchestration: o.get("orchestration").and_then(|v| v.obj()).map(|r| {
                let n = |k: &str| r.f64(k).unwrap_or(0.0);
                Orchestration {
                    input: n("input"),
                    output: n("output"),
                    cache_read: n("cacheRead"),
                }
            }),
        }
    }

    /// Reads a usage object from JSON text.
    pub fn parse(json: &str) -> Result<Usage, ShapeError> {
        Obj::parse(json.as_bytes())
            .map(|o| Usage::read(&o))
            .map_err(|e| ShapeError(format!("usage is not a JSON object ({})", e.reason)))
    }
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

impl StopReason {
    /// Maps a stopReason string.
    pub fn parse(s: &str) -> StopReason {
        match s {
            "stop" => StopReason::Stop,
            "length" => StopReason::Length,
            "toolUse" => StopReason::ToolUse,
            "error" => StopReason::Error,
            "aborted" => StopReason::Aborted,
            _ => StopReason::Other(s.to_string()),
        }
    }
}

/// `user` and `developer` messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserMessage {
    pub content: Content,
    pub timestamp: Option<f64>,
    pub attribution: Option<String>,
}

/// `assistant` messages.
#[derive(Debug, Clone, Default, PartialEq)]
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
#[derive(Debug, Clone, Default, PartialEq)]
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
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BashExecutionMessage {
    pub command: String,
    pub output: String,
    pub exit_code: Option<f64>,
    pub cancelled: bool,
    pub truncated: bool,
    pub full_output_path: Option<String>,
    pub exclude_from_context: bool,
    pub images: Option<Vec<ContentBlock>>,
    /// What the app recorded of the output's truncation and limits [N], as it is.
    pub meta: Option<Value>,
}

/// `pythonExecution` messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PythonExecutionMessage {
    pub code: String,
    pub output: String,
    pub exit_code: Option<f64>,
    pub cancelled: bool,
    pub exclude_from_context: bool,
    /// As for `bashExecution`.
    pub meta: Option<Value>,
}

/// One file of a `fileMention` message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MentionedFile {
    pub path: String,
    pub content: String,
    pub line_count: Option<f64>,
    pub image: Option<ContentBlock>,
}

/// `fileMention` messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileMentionMessage {
    pub files: Vec<MentionedFile>,
}

/// `custom` (legacy `hookMessage`) messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CustomMessage {
    pub custom_type: String,
    pub content: Content,
    pub display: bool,
    pub details: Option<Value>,
    pub attribution: Option<String>,
    pub timestamp: Option<f64>,
}

/// `branchSummary` messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BranchSummaryMessage {
    pub summary: String,
    pub from_id: String,
    pub timestamp: Option<f64>,
}

/// `compactionSummary` messages.
#[derive(Debug, Clone, Default, PartialEq)]
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

fn blocks_of(v: Option<Val<'_>>) -> Option<Vec<ContentBlock>> {
    v.and_then(|v| v.array())
        .map(|items| items.into_iter().filter_map(ContentBlock::read).collect())
}

impl AgentMessage {
    /// Parses a message object. `role` may be given when already known (it saves a lookup).
    pub fn parse(raw: &str, role: Option<Role>) -> Result<AgentMessage, ShapeError> {
        let o = Obj::parse(raw.as_bytes())
            .map_err(|e| ShapeError(format!("not a JSON object ({} at {})", e.reason, e.offset)))?;
        let role = role.unwrap_or_else(|| o.str("role").map_or(Role::Other, |r| Role::parse(&r)));
        let s = |k: &str| o.string(k).unwrap_or_default();
        let ts = || o.f64("timestamp");
        Ok(match role {
            Role::User | Role::Developer => {
                let m = UserMessage {
                    content: Content::read(o.get("content"))?,
                    timestamp: ts(),
                    attribution: o.string("attribution"),
                };
                if role == Role::User {
                    AgentMessage::User(m)
                } else {
                    AgentMessage::Developer(m)
                }
            }
            Role::Assistant => AgentMessage::Assistant(AssistantMessage {
                content: Content::read(o.get("content"))?,
                api: o.string("api"),
                provider: o.string("provider"),
                model: o.string("model"),
                usage: o
                    .get("usage")
                    .and_then(|v| v.obj())
                    .map(|u| Usage::read(&u)),
                stop_reason: o.str("stopReason").map(|r| StopReason::parse(&r)),
                error_message: o.string("errorMessage"),
                timestamp: ts(),
                retry_recovery: o.value("retryRecovery"),
            }),
            Role::ToolResult => AgentMessage::ToolResult(ToolResultMessage {
                tool_call_id: s("toolCallId"),
                tool_name: s("toolName"),
                content: Content::read(o.get("content"))?,
                is_error: o.flag("isError"),
                timestamp: ts(),
                pruned_at: o.f64("prunedAt"),
                useless: o.flag("useless"),
                context_omitted: o.value("contextOmitted"),
            }),
            Role::BashExecution => AgentMessage::BashExecution(BashExecutionMessage {
                command: s("command"),
                output: s("output"),
                exit_code: o.f64("exitCode"),
                cancelled: o.flag("cancelled"),
                truncated: o.flag("truncated"),
                full_output_path: o.string("fullOutputPath"),
                exclude_from_context: o.flag("excludeFromContext"),
                images: blocks_of(o.get("images")),
                meta: o.value("meta"),
            }),
            Role::PythonExecution => AgentMessage::PythonExecution(PythonExecutionMessage {
                code: s("code"),
                output: s("output"),
                exit_code: o.f64("exitCode"),
                cancelled: o.flag("cancelled"),
                exclude_from_context: o.flag("excludeFromContext"),
                meta: o.value("meta"),
            }),
            Role::FileMention => AgentMessage::FileMention(FileMentionMessage {
                files: o
                    .get("files")
                    .and_then(|v| v.array())
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|f| f.obj())
                    .map(|f| MentionedFile {
                        path: f.string("path").unwrap_or_default(),
                        content: f.string("content").unwrap_or_default(),
                        line_count: f.f64("lineCount"),
                        image: f.get("image").and_then(ContentBlock::read),
                    })
                    .collect(),
            }),
            Role::Custom | Role::HookMessage => AgentMessage::Custom(CustomMessage {
                custom_type: s("customType"),
                content: Content::read(o.get("content"))?,
                display: o.flag("display"),
                details: o.value("details"),
                attribution: o.string("attribution"),
                timestamp: ts(),
            }),
            Role::BranchSummary => AgentMessage::BranchSummary(BranchSummaryMessage {
                summary: s("summary"),
                from_id: s("fromId"),
                timestamp: ts(),
            }),
            Role::CompactionSummary => AgentMessage::CompactionSummary(CompactionSummaryMessage {
                summary: s("summary"),
                tokens_before: o.f64("tokensBefore"),
                short_summary: o.string("shortSummary"),
                tokens_after: o.f64("tokensAfter"),
                method: o.string("method"),
                warning: o.string("warning"),
                blocks: blocks_of(o.get("blocks")),
                images: o
                    .get("images")
                    .and_then(|v| v.array())
                    .map(|items| items.into_iter().filter_map(|v| v.value()).collect()),
                timestamp: ts(),
            }),
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

/// What building a context reads of a message (spec: compaction §2.3–§2.5), taken from its
/// JSON without decoding its text: a context of a long session keeps these, and the typed
/// message is parsed again only where it is used.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageHead {
    pub role: Role,
    /// Assistant: the ids of its tool calls, in order. Tool result: the one id it answers.
    pub tool_call_ids: Vec<String>,
    pub stop_reason: Option<StopReason>,
    pub provider: Option<String>,
    pub model: Option<String>,
    /// Assistant: `retryRecovery` is truthy.
    pub retry_recovery: bool,
    /// Assistant: it has a usage record (an object).
    pub has_usage: bool,
    /// Assistant: no content block at all (string content counts as one text block).
    pub no_blocks: bool,
    /// Assistant error turn with nothing in it: no non-blank text or thinking, no thinking
    /// signature, no tool call (spec: compaction §2.3).
    pub empty_error_turn: bool,
    /// Custom messages: `customType`.
    pub custom_type: Option<String>,
}

impl MessageHead {
    /// The head of a message of `role` with nothing else known. The role is the one the typed
    /// message reports: a legacy `hookMessage` is a custom message.
    pub fn new(role: Role) -> MessageHead {
        MessageHead {
            role: if role == Role::HookMessage {
                Role::Custom
            } else {
                role
            },
            tool_call_ids: Vec::new(),
            stop_reason: None,
            provider: None,
            model: None,
            retry_recovery: false,
            has_usage: false,
            no_blocks: false,
            empty_error_turn: false,
            custom_type: None,
        }
    }

    /// Reads the head of a message object; fails exactly where [`AgentMessage::parse`] fails.
    pub fn read(raw: &str, role: Option<Role>) -> Result<MessageHead, ShapeError> {
        let o = Obj::parse(raw.as_bytes())
            .map_err(|e| ShapeError(format!("not a JSON object ({} at {})", e.reason, e.offset)))?;
        let role = role.unwrap_or_else(|| o.str("role").map_or(Role::Other, |r| Role::parse(&r)));
        let mut head = MessageHead::new(role);
        let content = o.get("content").filter(|v| !v.is_null());
        let blocks = match role {
            Role::User
            | Role::Developer
            | Role::Assistant
            | Role::ToolResult
            | Role::Custom
            | Role::HookMessage => match content {
                None => Some(Vec::new()),
                Some(v) if v.raw().first() == Some(&b'"') => None,
                Some(v) => Some(v.array().ok_or_else(|| {
                    ShapeError("`content` is neither a string nor an array".into())
                })?),
            },
            _ => None,
        };
        match role {
            Role::Assistant => {
                let blocks: Vec<Obj<'_>> = blocks
                    .unwrap_or_default()
                    .iter()
                    .filter_map(Val::obj)
                    .collect();
                head.no_blocks =
                    content.is_none_or(|v| v.raw().first() != Some(&b'"')) && blocks.is_empty();
                head.tool_call_ids = blocks
                    .iter()
                    .filter(|b| b.str("type").as_deref() == Some("toolCall"))
                    .map(|b| b.string("id").unwrap_or_default())
                    .collect();
                head.stop_reason = o.str("stopReason").map(|r| StopReason::parse(&r));
                head.provider = o.string("provider");
                head.model = o.string("model");
                head.retry_recovery = o.get("retryRecovery").is_some_and(|v| v.truthy());
                head.has_usage = o
                    .get("usage")
                    .is_some_and(|v| v.raw().first() == Some(&b'{'));
                head.empty_error_turn = head.stop_reason == Some(StopReason::Error)
                    && content
                        .and_then(|v| v.str())
                        .is_none_or(|t| t.trim().is_empty())
                    && !blocks.iter().any(|b| {
                        let filled = |k: &str| b.str(k).is_some_and(|t| !t.trim().is_empty());
                        match b.str("type").as_deref() {
                            Some("text") => filled("text"),
                            Some("thinking") => {
                                filled("thinking")
                                    || b.str("thinkingSignature").is_some_and(|s| !s.is_empty())
                            }
                            Some("toolCall") => true,
                            _ => false,
                        }
                    });
            }
            Role::ToolResult => {
                head.tool_call_ids = vec![o.string("toolCallId").unwrap_or_default()]
            }
            Role::Custom | Role::HookMessage => {
                head.custom_type = Some(o.string("customType").unwrap_or_default())
            }
            _ => {}
        }
        Ok(head)
    }

    /// True for an assistant turn that stopped with `aborted` or `error`.
    pub fn failed(&self) -> bool {
        self.role == Role::Assistant
            && matches!(
                self.stop_reason,
                Some(StopReason::Aborted) | Some(StopReason::Error)
            )
    }

    /// The assistant's tool call ids (none for other roles).
    pub fn tool_calls(&self) -> &[String] {
        match self.role {
            Role::Assistant => &self.tool_call_ids,
            _ => &[],
        }
    }

    /// The id a tool result answers.
    pub fn answers(&self) -> Option<&str> {
        match self.role {
            Role::ToolResult => self.tool_call_ids.first().map(String::as_str),
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

    /// The head as the typed message defines it: what [`MessageHead::read`] must agree with.
    fn head_from_typed(m: &AgentMessage) -> MessageHead {
        let mut h = MessageHead::new(m.role());
        match m {
            AgentMessage::Assistant(a) => {
                h.tool_call_ids = a.tool_call_ids().map(str::to_string).collect();
                h.stop_reason = a.stop_reason.clone();
                h.provider = a.provider.clone();
                h.model = a.model.clone();
                h.retry_recovery = truthy(a.retry_recovery.as_ref());
                h.has_usage = a.usage.is_some();
                h.no_blocks = a.blocks().is_empty();
                h.empty_error_turn = a.stop_reason == Some(StopReason::Error)
                    && !a.blocks().iter().any(|b| match b {
                        ContentBlock::Text { text } => !text.trim().is_empty(),
                        ContentBlock::Thinking {
                            thinking,
                            signature,
                        } => {
                            !thinking.trim().is_empty()
                                || signature.as_deref().is_some_and(|s| !s.is_empty())
                        }
                        ContentBlock::ToolCall { .. } => true,
                        _ => false,
                    });
            }
            AgentMessage::ToolResult(r) => h.tool_call_ids = vec![r.tool_call_id.clone()],
            AgentMessage::Custom(c) => h.custom_type = Some(c.custom_type.clone()),
            _ => {}
        }
        h
    }

    #[test]
    fn head_agrees_with_the_typed_message() {
        let cases = [
            r#"{"role":"assistant","content":[{"type":"thinking","thinking":"t","thinkingSignature":"s"},{"type":"toolCall","id":"c\u0031","name":"read","arguments":{}},{"type":"toolCall","name":"x"},5],"provider":"anthropic","model":"m","usage":{"input":1},"stopReason":"toolUse","retryRecovery":{"a":1}}"#,
            r#"{"role":"assistant","content":"  ","stopReason":"error"}"#,
            r#"{"role":"assistant","content":"why","stopReason":"error","usage":null}"#,
            r#"{"role":"assistant","content":[],"stopReason":"error","usage":5}"#,
            r#"{"role":"assistant","stopReason":"error","retryRecovery":0}"#,
            r#"{"role":"assistant","content":null,"stopReason":"aborted","retryRecovery":"x"}"#,
            r#"{"role":"assistant","content":[{"type":"text","text":" \n"},{"type":"thinking","thinking":""}],"stopReason":"error"}"#,
            r#"{"role":"assistant","content":[{"type":"thinking","thinking":" ","thinkingSignature":"sig"}],"stopReason":"error"}"#,
            r#"{"role":"assistant","content":[{"type":"thinking","thinking":" ","thinkingSignature":""},{"type":"redactedThinking","data":"x"}],"stopReason":"error"}"#,
            r#"{"role":"assistant","content":[{"type":"text","text":"ok"}],"stopReason":"error"}"#,
            r#"{"role":"assistant","content":[{"type":"toolCall","id":"c"}],"stopReason":"error"}"#,
            r#"{"role":"toolResult","toolCallId":"c1","content":"x"}"#,
            r#"{"role":"toolResult","content":[]}"#,
            r#"{"role":"hookMessage","customType":"interrupted-thinking","content":"x"}"#,
            r#"{"role":"custom","content":[]}"#,
            r#"{"role":"user","content":"plain"}"#,
            r#"{"role":"compactionSummary","summary":"s","content":5}"#,
            r#"{"role":"martian","content":5}"#,
        ];
        for raw in cases {
            let typed = AgentMessage::parse(raw, None).unwrap();
            assert_eq!(
                MessageHead::read(raw, None).unwrap(),
                head_from_typed(&typed),
                "{raw}"
            );
        }
        // It fails where the typed message fails.
        for raw in [
            r#"{"role":"user","content":5}"#,
            r#"{"role":"assistant","content":{}}"#,
            r#"{"role":"toolResult","content":true}"#,
            r#"{"role":"custom","content":1}"#,
            r#"["role"]"#,
            r#"{"role":"user""#,
        ] {
            assert!(AgentMessage::parse(raw, None).is_err(), "{raw}");
            assert!(MessageHead::read(raw, None).is_err(), "{raw}");
        }
    }
}
