//! A ready summarizer call and what it is for (spec: compaction §5.3, §5.5, §6): the request
//! type compaction and navigation plans hand to the host, and the summarizer input of a run
//! of entries.

use crate::context::{convert, ContextMessage};
use crate::error::Result;
use crate::session::message::Role;
use crate::session::{EntryKind, Session};
use crate::summary::serialize::{
    escaped_for_summary, serialize_conversation_in, Dialect, Transcript,
};
use crate::summary::view::{self, MsgView, ViewCache};
use rustc_hash::FxHashSet;
use serde_json::{Map, Value};
use std::borrow::Cow;

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

    /// The purpose the JS API spells `name` (see [`Purpose::as_str`]).
    pub fn parse(name: &str) -> Option<Purpose> {
        [
            Purpose::History,
            Purpose::TurnPrefix,
            Purpose::ShortSummary,
            Purpose::Handoff,
            Purpose::BranchSummary,
        ]
        .into_iter()
        .find(|p| p.as_str() == name)
    }

    /// The telemetry tag the summarize call of this purpose gets (spec: compaction §5.3): its
    /// prompt's ([`crate::prompts::PromptKind::tag`]; a history window's, the summary's).
    pub fn telemetry_tag(self) -> &'static str {
        use crate::prompts::PromptKind;
        match self {
            Purpose::History => PromptKind::Summary,
            Purpose::TurnPrefix => PromptKind::TurnPrefix,
            Purpose::ShortSummary => PromptKind::ShortSummary,
            Purpose::Handoff => PromptKind::Handoff,
            Purpose::BranchSummary => PromptKind::BranchSummary,
        }
        .tag()
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

/// The reasoning effort asked of every summarizer call (spec: compaction §5.6): with no
/// thinking level given, oh-my-pi 18.2.3 asks for `high`. The host's writer maps it to the
/// provider's parameter when its model reasons (a model that does not is sent none).
pub const SUMMARY_REASONING_EFFORT: &str = "high";

/// The reasoning-effort hint of the summary requests of the path to `leaf` (spec: compaction
/// §5.6): [`SUMMARY_REASONING_EFFORT`], except on a pi-family path (`pi`), where pi 1.6 asks a
/// reasoning model for the session's thinking level (`createSummarizationOptions`: none when
/// it is `off`; a level pi does not know is sent as none too).
pub fn summary_reasoning_effort(
    session: &Session,
    leaf: Option<usize>,
    pi: bool,
) -> Option<&'static str> {
    if !pi {
        return Some(SUMMARY_REASONING_EFFORT);
    }
    let level = session.path_state(leaf?).thinking_level;
    ["minimal", "low", "medium", "high", "xhigh"]
        .into_iter()
        .find(|l| *l == level)
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
    serialized_conversation_with(session, entries, dialect, &ViewCache::default())
}

/// [`serialized_conversation_in`] reading the views `cache` holds.
fn serialized_conversation_with(
    session: &Session,
    entries: &[usize],
    dialect: Dialect,
    cache: &ViewCache<'_>,
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
    let mut feed = HistoryFeed::in_place(results);
    while feed.read_in_place(session, &mut converted, cache)? {
        each_view(session, &converted, cache, &mut |m| {
            if let Some(id) = m.useless_result_id() {
                useless.insert(id.into());
            }
        });
        converted.clear();
    }
    let useless: FxHashSet<&str> = useless.iter().map(|s| &**s).collect();
    let mut out = Transcript::new(dialect, &useless);
    let mut feed = HistoryFeed::in_place(entries.to_vec());
    while feed.read_in_place(session, &mut converted, cache)? {
        each_view(session, &converted, cache, &mut |m| out.push(m));
        converted.clear();
    }
    Ok(escaped_for_summary(out.finish()))
}

/// The conversation text of `entries` on `path` in `dialect` (spec: compaction §5.1): what a
/// compaction plan writes into its requests. [`Dialect::Pi`] reads pi's input
/// ([`pi_llm_messages`]) and escapes no tag, as pi; any other dialect
/// [`serialized_conversation_in`].
/// The views `cache` holds are read from it (a plan's, shared with its other readers).
pub(crate) fn conversation_text_with(
    session: &Session,
    path: &[usize],
    entries: &[usize],
    dialect: Dialect,
    cache: &ViewCache<'_>,
) -> Result<String> {
    if dialect != Dialect::Pi {
        return serialized_conversation_with(session, entries, dialect, cache);
    }
    // pi escapes no boundary tag in its transcript (`summary_text_in`).
    let messages = pi_llm_messages(session, path, entries)?;
    Ok(serialize_conversation_in(&messages, dialect))
}

/// The summarizer input of `entries` on a pi-family `path` (pi 1.6 `prepareCompaction` then
/// `convertToLlm`): the messages the projection of `path` gives those entries, edits applied,
/// system messages and compactions left out, converted as pi converts them.
pub fn pi_llm_messages(session: &Session, path: &[usize], entries: &[usize]) -> Result<Vec<Value>> {
    use crate::context::projection::{is_system_message, project};
    let mut wanted = vec![false; session.len()];
    for &i in entries {
        if let Some(w) = wanted.get_mut(i) {
            *w = true;
        }
    }
    let mut out = Vec::new();
    for p in project(session, path)? {
        if wanted[p.entry]
            && session.entries()[p.entry].kind() != EntryKind::Compaction
            && !is_system_message(session, p.entry)
        {
            for m in &p.messages {
                convert::convert_pi_message(&mut out, session, m);
            }
        }
    }
    Ok(out)
}

/// Where two texts a verification compared part: "from byte N: <got excerpt> against <want
/// excerpt>" (the in-place readings' checks).
pub fn first_difference(got: &str, want: &str) -> String {
    let at = got
        .bytes()
        .zip(want.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    let excerpt = |t: &str| {
        t.get(at.saturating_sub(40)..(at + 80).min(t.len()))
            .map(str::to_owned)
    };
    format!(
        "from byte {at}: {:?} against {:?}",
        excerpt(got),
        excerpt(want)
    )
}

/// Checks the transcripts read in place ([`HistoryFeed::in_place`]) against the ones of the
/// converted values (the conversion of every message, as before issue 42), over every entry of
/// `s` in file order, in each dialect: the whole transcript, and each message's window size
/// (spec: compaction §5.5). The number of messages compared, or the first difference.
pub fn verify_in_place_transcripts(s: &Session) -> std::result::Result<usize, String> {
    use crate::summary::serialize::{
        message_size_in, serialize_conversation_for_summary_in, useless_tool_call_ids, view_size,
    };
    use crate::tokens::ByteEstimate;
    let all: Vec<usize> = (0..s.len()).collect();
    let values = llm_messages(s, &all).map_err(|e| e.to_string())?;
    let mut in_place = Vec::new();
    let mut feed = HistoryFeed::in_place(all.clone());
    while feed
        .read_in_place(s, &mut in_place, &ViewCache::default())
        .map_err(|e| e.to_string())?
    {}
    if in_place.len() != values.len() {
        return Err(format!(
            "{} messages read in place, {} converted",
            in_place.len(),
            values.len()
        ));
    }
    let useless = useless_tool_call_ids(&values);
    for dialect in [
        Dialect::Plain,
        Dialect::Anthropic,
        Dialect::Xml,
        Dialect::Harmony,
    ] {
        let want = serialize_conversation_for_summary_in(&values, dialect);
        let got = serialized_conversation_in(s, &all, dialect).map_err(|e| e.to_string())?;
        if got != want {
            return Err(format!(
                "{dialect:?}: the transcripts differ {}",
                first_difference(&got, &want)
            ));
        }
        let sizes = with_views(s, &in_place, |views| {
            views
                .iter()
                .map(|v| view_size(v, &useless, dialect, &ByteEstimate))
                .collect::<Vec<_>>()
        });
        for (k, (size, value)) in sizes.iter().zip(&values).enumerate() {
            let want = message_size_in(value, &useless, dialect, &ByteEstimate);
            if *size != want {
                return Err(format!(
                    "{dialect:?}: message {k} sized {size}, converted {want}"
                ));
            }
        }
    }
    Ok(values.len())
}

/// A provider message of a history read by [`HistoryFeed::read_in_place`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HistoryMsg {
    /// The `message` entry at this index, whose provider message is its JSON as written but
    /// for an `attribution` no transcript reads ([`convert::adopted_form`]): it is read in
    /// place from the session when serialized (issue 42: no value built for it).
    Entry(usize),
    /// A converted message.
    Value(Value),
}

/// Calls `f` with the transcript views of `messages` (an entry's read in place from the
/// session's text).
pub(crate) fn with_views<R>(
    session: &Session,
    messages: &[HistoryMsg],
    f: impl FnOnce(&[MsgView<'_>]) -> R,
) -> R {
    let texts: Vec<Option<Cow<str>>> = messages
        .iter()
        .map(|m| match m {
            HistoryMsg::Entry(i) => session.message_json(*i),
            HistoryMsg::Value(_) => None,
        })
        .collect();
    let views: Vec<MsgView> = messages
        .iter()
        .zip(&texts)
        .map(|(m, text)| match (m, text) {
            (HistoryMsg::Value(v), _) => MsgView::of_value(v),
            // The feed gives an entry only when its text is `view::readable`, which is when
            // `of_json` reads it.
            (HistoryMsg::Entry(_), Some(t)) => MsgView::of_json(t.as_bytes()).unwrap_or_default(),
            (HistoryMsg::Entry(_), None) => MsgView::default(),
        })
        .collect();
    f(&views)
}

/// Calls `f` with the transcript view of each of `messages`, in order, as [`with_views`] gives
/// them: an entry's taken from `cache` when it holds it (the same view), else read in place.
pub(crate) fn each_view(
    session: &Session,
    messages: &[HistoryMsg],
    cache: &ViewCache<'_>,
    f: &mut dyn FnMut(&MsgView<'_>),
) {
    for m in messages {
        match m {
            HistoryMsg::Entry(i) => {
                if let Some(v) = cache.get(*i) {
                    f(v);
                    continue;
                }
                let text = session.message_json(*i);
                let view = text
                    .as_deref()
                    .and_then(|t| MsgView::of_json(t.as_bytes()))
                    .unwrap_or_default();
                f(&view);
            }
            HistoryMsg::Value(v) => f(&MsgView::of_value(v)),
        }
    }
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
    /// Messages whose provider form is their JSON as written are given as
    /// [`HistoryMsg::Entry`] ([`HistoryFeed::in_place`]).
    in_place: bool,
    /// Messages converted beforehand ([`HistoryFeed::converted`]), read in order instead of
    /// `entries`.
    converted: Option<Vec<Value>>,
}

/// A message of the history feed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FeedItem {
    /// A user, developer, assistant or tool-result `message` entry, as its JSON object: these
    /// convert from the JSON alone (`convert::*_message`), so the typed parse is skipped.
    Plain(Role, Map<String, Value>),
    /// Anything else goes through the typed path.
    Typed(Box<ContextMessage>),
    /// A `message` entry whose provider message is its JSON as written (but for its
    /// `attribution`), read in place (the [`HistoryFeed::in_place`] feed only).
    InPlace(Role, usize),
}

impl HistoryFeed {
    pub(crate) fn new(entries: Vec<usize>) -> HistoryFeed {
        HistoryFeed {
            entries,
            pos: 0,
            ahead: None,
            in_place: false,
            converted: None,
        }
    }

    /// A feed of the summarizer input of `entries` on `path` in `dialect`: a pi-family
    /// path's ([`Dialect::Pi`]) converted beforehand ([`pi_llm_messages`]: the projection's
    /// edits are not the entries' own messages), any other read in place.
    pub(crate) fn for_dialect(
        session: &Session,
        path: &[usize],
        entries: Vec<usize>,
        dialect: Dialect,
    ) -> Result<HistoryFeed> {
        if dialect != Dialect::Pi {
            return Ok(HistoryFeed::in_place(entries));
        }
        Ok(HistoryFeed {
            converted: Some(pi_llm_messages(session, path, &entries)?),
            ..HistoryFeed::new(Vec::new())
        })
    }

    /// A feed read with [`HistoryFeed::read_in_place`] (messages for a transcript).
    pub(crate) fn in_place(entries: Vec<usize>) -> HistoryFeed {
        HistoryFeed {
            in_place: true,
            ..HistoryFeed::new(entries)
        }
    }

    fn next_item(&mut self, session: &Session, cache: &ViewCache<'_>) -> Result<Option<FeedItem>> {
        while let Some(&i) = self.entries.get(self.pos) {
            self.pos += 1;
            let entry = &session.entries()[i];
            if let (
                EntryKind::Message,
                Some(role @ (Role::User | Role::Developer | Role::Assistant | Role::ToolResult)),
            ) = (entry.kind(), entry.role())
            {
                if self.in_place
                    && convert::adopted_form(session, i) != 0
                    && view::readable_cached(session, i, cache)
                {
                    return Ok(Some(FeedItem::InPlace(role, i)));
                }
                if let Some(item) = plain_item(session, i, role) {
                    return Ok(Some(item));
                }
            }
            // Other entries, and unreadable bodies (which report their error here).
            if let Some(m) = ContextMessage::from_entry(session, i)? {
                return Ok(Some(FeedItem::Typed(Box::new(m))));
            }
        }
        Ok(None)
    }

    /// Like [`HistoryFeed::read`], giving the messages that need no conversion as
    /// [`HistoryMsg::Entry`] (an [`HistoryFeed::in_place`] feed; any other gives values).
    pub(crate) fn read_in_place(
        &mut self,
        session: &Session,
        messages: &mut Vec<HistoryMsg>,
        cache: &ViewCache<'_>,
    ) -> Result<bool> {
        if let Some(values) = &mut self.converted {
            let Some(v) = values.get_mut(self.pos) else {
                return Ok(false);
            };
            self.pos += 1;
            messages.push(HistoryMsg::Value(std::mem::take(v)));
            return Ok(true);
        }
        let mut converted = Vec::new();
        loop {
            let current = match self.ahead.take() {
                Some(m) => m,
                None => match self.next_item(session, cache)? {
                    Some(m) => m,
                    None => return Ok(false),
                },
            };
            self.ahead = self.next_item(session, cache)?;
            let current = match current {
                // An assistant followed by an interrupted-thinking marker loses its trailing
                // unsigned thinking (spec: compaction §2.6): it converts.
                FeedItem::InPlace(Role::Assistant, i)
                    if self.ahead.as_ref().is_some_and(FeedItem::is_interrupt) =>
                {
                    match plain_item(session, i, Role::Assistant) {
                        Some(item) => item,
                        None => match ContextMessage::from_entry(session, i)? {
                            Some(m) => FeedItem::Typed(Box::new(m)),
                            None => continue,
                        },
                    }
                }
                FeedItem::InPlace(_, i) => {
                    messages.push(HistoryMsg::Entry(i));
                    return Ok(true);
                }
                other => other,
            };
            self.convert_item(session, current, &mut converted);
            if !converted.is_empty() {
                messages.extend(converted.drain(..).map(HistoryMsg::Value));
                return Ok(true);
            }
        }
    }

    /// Converts the next entry that gives provider messages into `messages`; false at the
    /// end of the history.
    pub(crate) fn read(&mut self, session: &Session, messages: &mut Vec<Value>) -> Result<bool> {
        loop {
            let current = match self.ahead.take() {
                Some(m) => m,
                None => match self.next_item(session, &ViewCache::default())? {
                    Some(m) => m,
                    None => return Ok(false),
                },
            };
            self.ahead = self.next_item(session, &ViewCache::default())?;
            let first = messages.len();
            self.convert_item(session, current, messages);
            if messages.len() > first {
                return Ok(true);
            }
        }
    }

    /// Converts `current` (the item before `self.ahead`) into `messages`.
    fn convert_item(&self, session: &Session, current: FeedItem, messages: &mut Vec<Value>) {
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
            // Only an in-place feed makes these, and it reads them itself.
            FeedItem::InPlace(role, i) => {
                if let Some(item) = plain_item(session, i, role) {
                    self.convert_item(session, item, messages);
                }
            }
        }
    }
}

/// The message of a user, developer, assistant or tool-result entry as its JSON object
/// (these convert from the JSON alone); `None` when it does not parse as one.
fn plain_item(session: &Session, i: usize, role: Role) -> Option<FeedItem> {
    let parsed = session
        .message_json(i)
        .and_then(|json| crate::support::json::parse(&json).ok());
    match parsed {
        Some(Value::Object(o)) => Some(FeedItem::Plain(role, o)),
        _ => None,
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

    /// Issue 36 (one engine): the telemetry tag of each purpose is the core's (one table,
    /// `PromptKind::tag`), not a copy in the JS shell.
    #[test]
    fn each_purpose_has_its_telemetry_tag() {
        for (name, tag) in [
            ("history", "compaction_summary"),
            ("turn-prefix", "compaction_turn_prefix"),
            ("short-summary", "compaction_short_summary"),
            ("handoff", "handoff"),
            ("branch-summary", "branch_summary"),
        ] {
            let p = Purpose::parse(name).expect(name);
            assert_eq!((p.as_str(), p.telemetry_tag()), (name, tag));
        }
        assert_eq!(Purpose::parse("History"), None);
        assert_eq!(Purpose::parse(""), None);
    }
}
