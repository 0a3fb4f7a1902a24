//! A ready summarizer call and what it is for (spec: compaction §5.3, §5.5, §6): the request
//! type compaction and navigation plans hand to the host, and the summarizer input of a run
//! of entries.

use crate::context::{convert, ContextMessage};
use crate::error::Result;
use crate::session::message::Role;
use crate::session::{EntryKind, Session};
use crate::summary::serialize::{escaped_for_summary, useless_tool_call_ids, Dialect, Transcript};
use rustc_hash::FxHashSet;
use serde_json::{Map, Value};

/// What a summarizer request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// (A window of) the history summary.
    History,
    /// The early part of a split turn.
    TurnPrefix,
    /// The short display summary.
    ShortSummary,
    /// A handoff document.
    Handoff,
    /// The summary of an abandoned branch (spec: compaction §7.4).
    BranchSummary,
}

impl Purpose {
    /// The request purpose as the JS API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::History => "history",
            Purpose::TurnPrefix => "turn-prefix",
            Purpose::ShortSummary => "short-summary",
            Purpose::Handoff => "handoff",
            Purpose::BranchSummary => "branch-summary",
        }
    }
}

/// One ready summarizer call (spec: compaction §5.3, §5.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryRequest {
    /// Unique within the plan (`history-1`, `turn-prefix`, `short-summary`, `handoff`,
    /// `branch-summary`).
    pub id: String,
    pub purpose: Purpose,
    pub system_prompt: String,
    pub prompt: String,
    pub max_tokens: u64,
    /// For history windows: which one it is.
    pub window: Option<Window>,
}

/// `serializeConversationForSummary` of the provider messages of `entries` (spec: compaction
/// §5.1), converting a message at a time so a long branch or history is never held as JSON
/// values: a first pass over the tool results finds the useless ones (their calls, which
/// come first, are left out too), the second writes the text.
pub(crate) fn serialized_conversation(session: &Session, entries: &[usize]) -> Result<String> {
    serialized_conversation_in(session, entries, Dialect::Plain)
}

/// [`serialized_conversation`] in the summarizer's dialect (spec: compaction §5.1).
pub(crate) fn serialized_conversation_in(
    session: &Session,
    entries: &[usize],
    dialect: Dialect,
) -> Result<String> {
    // Only tool-result entries give tool results, and they convert alone (a successor
    // matters to assistants only), so the first pass reads just those.
    let results = entries
        .iter()
        .copied()
        .filter(|&i| session.entries()[i].role() == Some(Role::ToolResult))
        .collect();
    let mut useless: FxHashSet<Box<str>> = FxHashSet::default();
    let mut converted = Vec::new();
    let mut feed = HistoryFeed::new(results);
    while feed.read(session, &mut converted)? {
        useless.extend(
            useless_tool_call_ids(&converted)
                .into_iter()
                .map(Box::<str>::from),
        );
        converted.clear();
    }
    let useless: FxHashSet<&str> = useless.iter().map(|s| &**s).collect();
    let mut out = Transcript::new(dialect, &useless);
    let mut feed = HistoryFeed::new(entries.to_vec());
    while feed.read(session, &mut converted)? {
        for m in converted.drain(..) {
            out.push(&m);
        }
    }
    Ok(escaped_for_summary(out.finish()))
}

/// The provider messages of `entries` (as `convert_messages` of their context messages).
pub(crate) fn llm_messages(session: &Session, entries: &[usize]) -> Result<Vec<Value>> {
    let mut feed = HistoryFeed::new(entries.to_vec());
    let mut out = Vec::with_capacity(entries.len());
    while feed.read(session, &mut out)? {}
    Ok(out)
}

/// A history window (spec: compaction §5.5). Windows are planned as the fold reaches them,
/// so their count is known only at the last one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// 1-based.
    pub index: usize,
    /// No window follows (unless this one overflows and is split).
    pub last: bool,
}

/// The entries to summarize, turned into provider messages on demand. A large history is
/// only read as far as the windows sent so far reach: planning a compaction of a long
/// uncompacted session costs one window, not the whole conversation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HistoryFeed {
    entries: Vec<usize>,
    /// Next position in `entries` to read.
    pos: usize,
    /// The message read ahead (its successor decides how it converts, spec: compaction §2.6).
    ahead: Option<FeedItem>,
}

/// A message of the history feed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FeedItem {
    /// A user, developer, assistant or tool-result `message` entry, as its JSON object: these
    /// convert from the JSON alone (`convert::*_message`), so the typed parse is skipped.
    Plain(Role, Map<String, Value>),
    /// Anything else goes through the typed path.
    Typed(Box<ContextMessage>),
}

impl HistoryFeed {
    pub(crate) fn new(entries: Vec<usize>) -> HistoryFeed {
        HistoryFeed {
            entries,
            pos: 0,
            ahead: None,
        }
    }

    fn next_item(&mut self, session: &Session) -> Result<Option<FeedItem>> {
        while let Some(&i) = self.entries.get(self.pos) {
            self.pos += 1;
            let entry = &session.entries()[i];
            if let (
                EntryKind::Message,
                Some(role @ (Role::User | Role::Developer | Role::Assistant | Role::ToolResult)),
            ) = (entry.kind(), entry.role())
            {
                let parsed = session
                    .message_json(i)
                    .and_then(|json| crate::support::json::parse(&json).ok());
                if let Some(Value::Object(o)) = parsed {
                    return Ok(Some(FeedItem::Plain(role, o)));
                }
            }
            // Other entries, and unreadable bodies (which report their error here).
            if let Some(m) = ContextMessage::from_entry(session, i)? {
                return Ok(Some(FeedItem::Typed(Box::new(m))));
            }
        }
        Ok(None)
    }

    /// Converts the next entry that gives provider messages into `messages`; false at the
    /// end of the history.
    pub(crate) fn read(&mut self, session: &Session, messages: &mut Vec<Value>) -> Result<bool> {
        loop {
            let current = match self.ahead.take() {
                Some(m) => m,
                None => match self.next_item(session)? {
                    Some(m) => m,
                    None => return Ok(false),
                },
            };
            self.ahead = self.next_item(session)?;
            let first = messages.len();
            match current {
                FeedItem::Plain(role, o) => messages.extend(match role {
                    Role::User => Some(convert::user_message(o, "user")),
                    Role::Developer => Some(convert::user_message(o, "agent")),
                    Role::Assistant => Some(convert::assistant_message(
                        o,
                        self.ahead.as_ref().is_some_and(FeedItem::is_interrupt),
                    )),
                    _ => convert::tool_result_message(o),
                }),
                FeedItem::Typed(m) => {
                    let next = match &self.ahead {
                        Some(FeedItem::Typed(n)) => Some(&**n),
                        _ => None,
                    };
                    convert::convert_message(messages, session, &m, next)
                }
            }
            if messages.len() > first {
                return Ok(true);
            }
        }
    }
}

impl FeedItem {
    /// The interrupted-thinking marker (only a typed custom message can be one).
    fn is_interrupt(&self) -> bool {
        matches!(self, FeedItem::Typed(m) if m.is_interrupt_marker())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::LoadOptions;
    use crate::summary::serialize::serialize_conversation_for_summary;

    #[test]
    fn streamed_serialization_equals_the_list_one() {
        // A useless result after its call (both left out), an interrupted turn, a custom
        // message, a `<conversation>` tag in the text (escaped) and an ordinary pair.
        let messages = [
            r#"{"role":"user","content":"look at <conversation> tags"}"#,
            r#"{"role":"assistant","content":[{"type":"toolCall","id":"u1","name":"ls","arguments":{}}],"stopReason":"toolUse"}"#,
            r#"{"role":"toolResult","toolCallId":"u1","toolName":"ls","content":"nothing","useless":true}"#,
            r#"{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"toolCall","id":"r1","name":"read","arguments":{"path":"a.ts"}}],"stopReason":"toolUse"}"#,
            r#"{"role":"toolResult","toolCallId":"r1","toolName":"read","content":[{"type":"text","text":"export {}"}]}"#,
            r#"{"role":"assistant","content":[{"type":"thinking","thinking":"cut"}],"stopReason":"aborted"}"#,
            r#"{"role":"custom","customType":"interrupted-thinking","content":"stopped","display":false}"#,
            r#"{"role":"assistant","content":"done","stopReason":"stop"}"#,
        ];
        let mut text = String::from(
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
        );
        let mut parent = "null".to_string();
        for (i, m) in messages.iter().enumerate() {
            text.push_str(&format!(
                "\n{{\"type\":\"message\",\"id\":\"e{i}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{m}}}"
            ));
            parent = format!("\"e{i}\"");
        }
        let s = Session::load(text.into_bytes(), LoadOptions::default()).unwrap();
        let entries: Vec<usize> = (0..s.len()).collect();
        let listed = serialize_conversation_for_summary(&llm_messages(&s, &entries).unwrap());
        assert!(listed.contains("&lt;conversation>") && listed.contains("a.ts"));
        assert!(
            !listed.contains("nothing"),
            "the useless result is left out"
        );
        assert_eq!(serialized_conversation(&s, &entries).unwrap(), listed);
    }
}
