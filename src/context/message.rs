//! A message of a built context (spec: compaction §2.3): where its JSON comes from (the entry's
//! own bytes, or an owned rewrite) and its parsed head.

use crate::error::Result;
use crate::session::message::{AgentMessage, MessageHead, Role};
use crate::session::{EntryKind, Session};
use serde_json::Value;
use std::borrow::Cow;
use std::rc::Rc;

/// Custom message type that keeps an interrupted assistant turn (spec: compaction §2.4).
pub(crate) const INTERRUPTED_THINKING: &str = "interrupted-thinking";

/// Where a context message's JSON comes from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum MessageJson {
    /// The `message` object of this entry, byte for byte.
    Entry(usize),
    Owned(String),
}

/// One message of a built context: where its JSON is and what post-processing reads of it.
/// The typed message is parsed on demand ([`ContextMessage::message`]), so the context of a
/// long session holds no copy of its text.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextMessage {
    /// The entry it came from.
    pub entry: usize,
    /// What post-processing reads of the message (role, tool-call ids, stop reason, model),
    /// shared with the session's kept heads for a message taken as it is.
    pub head: Rc<MessageHead>,
    pub(crate) json: MessageJson,
    /// Transcript mode: tool calls removed because they had no result.
    pub stripped_tool_calls: u32,
    /// Projected from a pi-family path (`context::projection`): converted as pi converts.
    pub(crate) pi: bool,
}

impl ContextMessage {
    /// The message an entry carries (spec: compaction §4.4 step 8: a `message` entry's own
    /// message, a `custom_message` as `custom`, a `branch_summary` as `branchSummary`, a
    /// `compaction` as `compactionSummary`); `None` for entries that carry none.
    pub fn from_entry(session: &Session, index: usize) -> Result<Option<ContextMessage>> {
        if session.entries()[index].kind() == EntryKind::Message {
            return Ok(Some(ContextMessage {
                entry: index,
                head: Rc::new(session.message_head(index)?),
                json: MessageJson::Entry(index),
                stripped_tool_calls: 0,
                pi: false,
            }));
        }
        let Some(json) = session.entry_message_json(index)? else {
            return Ok(None);
        };
        let json = json.into_owned();
        let head =
            MessageHead::read(&json, None).map_err(|e| crate::error::Error::InvalidEntryBody {
                id: session.entries()[index].id().to_string(),
                line: session.line_number(index),
                reason: e.to_string(),
            })?;
        Ok(Some(ContextMessage {
            entry: index,
            head: Rc::new(head),
            json: MessageJson::Owned(json),
            stripped_tool_calls: 0,
            pi: false,
        }))
    }

    /// The message's role.
    pub fn role(&self) -> Role {
        self.head.role
    }

    /// The typed message, parsed from its JSON ([`AgentMessage::Other`] in the case that
    /// cannot happen: JSON that read as a head but not as a message).
    pub fn message(&self, session: &Session) -> AgentMessage {
        let parsed = match &self.json {
            MessageJson::Entry(i) => session.message(*i).ok(),
            MessageJson::Owned(s) => AgentMessage::parse(s, Some(self.head.role)).ok(),
        };
        parsed.unwrap_or(AgentMessage::Other)
    }

    /// True when the message's JSON is its entry's own `message` object, byte for byte (not
    /// built for this context, not rewritten by post-processing): what it converts to then
    /// depends on that entry's line alone.
    pub fn is_entry_json(&self) -> bool {
        matches!(self.json, MessageJson::Entry(_))
    }

    /// True for the custom message that marks an interrupted turn (spec: compaction §2.4).
    pub(crate) fn is_interrupt_marker(&self) -> bool {
        self.head.custom_type.as_deref() == Some(INTERRUPTED_THINKING)
    }

    /// The message's JSON text.
    pub fn json<'s>(&'s self, session: &'s Session) -> Cow<'s, str> {
        match &self.json {
            MessageJson::Owned(s) => Cow::Borrowed(s),
            MessageJson::Entry(i) => session.message_json(*i).unwrap_or(Cow::Borrowed("null")),
        }
    }

    pub(crate) fn value(&self, session: &Session) -> Value {
        crate::support::json::parse(&self.json(session)).unwrap_or(Value::Null)
    }
}

/// `[{type: "text", text}]`.
pub(crate) fn text_blocks(text: String) -> Value {
    let mut b = serde_json::Map::new();
    b.insert("type".into(), "text".into());
    b.insert("text".into(), text.into());
    Value::Array(vec![Value::Object(b)])
}
