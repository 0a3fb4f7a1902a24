//! `buildSessionContext` (spec: compaction §2): from the entry tree to the messages the LLM
//! sees (LLM mode) or the user is shown (transcript mode), plus the state the path sets
//! (thinking level, models, mode, service tier, injected rules).
//!
//! Unchanged messages keep their raw JSON from the session file, so output to JavaScript is
//! mostly a copy; only messages that post-processing changes are re-serialized.

use crate::archive::blocks::{history_blocks, FrameData, HistoryBlock, HistoryOptions};
use crate::archive::stored::read_archive;
use crate::error::Result;
use crate::session::message::{AgentMessage, MessageHead, Role};
use crate::session::preserve;
use crate::session::{CustomMessageBody, EntryKind, Session};
use crate::support::json::js;
use crate::tokens::{estimate_message, EstimateOptions, TokenCounter};
use rustc_hash::FxHashSet;
use serde_json::{Map, Value};
use std::rc::Rc;

pub use super::message::ContextMessage;
pub(crate) use super::message::{MessageJson, INTERRUPTED_THINKING};

/// Which leaf to build the context for (spec: compaction §2.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum LeafSelector {
    /// The session's current leaf.
    #[default]
    Current,
    /// Explicitly no leaf: an empty context.
    Null,
    /// The entry with this id; an unknown id falls back to the last entry.
    Id(String),
}

/// Options of [`build_context`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildOptions {
    pub leaf: LeafSelector,
    /// Display transcript instead of the LLM view (spec: compaction §2.5).
    pub transcript: bool,
    /// Transcript mode only: LLM-mode selection, with the summary at its chronological place.
    pub collapse_compacted_history: bool,
    /// Transcript mode only: keep tool calls that have no result.
    pub keep_dangling_tool_calls: bool,
    /// LLM mode: the provider of the reading model when it speaks a Responses dialect. A
    /// compaction whose OpenAI replacement history that provider wrote is then replayed
    /// (spec: compaction §2.3): its summary message carries the history as `providerPayload`
    /// and the kept entries it already holds are left out. Other readers get the summary and
    /// the kept entries.
    pub replay_provider: Option<String>,
    /// With `replay_provider`: the reader speaks the Anthropic Messages API, so the record
    /// replayed is an `anthropicCompaction` block of that provider (spec: compaction §13),
    /// which rides on the summary message while the kept entries stay as they are.
    pub replay_anthropic: bool,
}

/// The built context (spec: compaction §2, `SessionContext`).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionContext {
    pub messages: Vec<ContextMessage>,
    /// `"off"` unless a `thinking_level_change` on the path says otherwise.
    pub thinking_level: String,
    pub configured_thinking_level: Option<String>,
    /// Role → `"provider/modelId"`, in the order roles were first seen.
    pub models: Vec<(String, String)>,
    pub injected_ttsr_rules: Vec<String>,
    pub service_tier: Option<Value>,
    /// `"none"` unless a `mode_change` on the path says otherwise.
    pub mode: String,
    pub mode_data: Option<Value>,
    /// Transcript mode: per message, whether a prompt-cache miss is explained (first
    /// assistant after a compaction or model change, or a different model than before).
    pub cache_miss_explained_at: Option<Vec<bool>>,
    /// The entries of the path, root first (shared with the session: see
    /// [`Session::path_shared`]).
    pub path: std::rc::Rc<Vec<usize>>,
    /// The compaction the context starts from (LLM mode), if any.
    pub compaction: Option<usize>,
    /// The first entry kept verbatim after that compaction.
    pub first_kept: Option<usize>,
}

impl SessionContext {
    fn empty() -> SessionContext {
        SessionContext {
            messages: Vec::new(),
            thinking_level: "off".into(),
            configured_thinking_level: None,
            models: Vec::new(),
            injected_ttsr_rules: Vec::new(),
            service_tier: None,
            mode: "none".into(),
            mode_data: None,
            cache_miss_explained_at: None,
            path: std::rc::Rc::default(),
            compaction: None,
            first_kept: None,
        }
    }

    /// Sum of the local token estimates of the context's messages (memoized per entry for
    /// messages taken as they are).
    pub fn estimated_tokens(&self, session: &Session) -> u64 {
        self.messages
            .iter()
            .map(|m| match m.json {
                MessageJson::Entry(i) => {
                    session.entry_tokens(i, crate::tokens::EstimateOptions::default())
                }
                MessageJson::Owned(_) => owned_tokens(
                    m,
                    session,
                    &crate::tokens::ByteEstimate,
                    crate::tokens::EstimateOptions::default(),
                ),
            })
            .sum()
    }

    /// `estimateContextTokens` of the context's messages (spec: compaction §3.2): only the
    /// messages from the last usage on are parsed, one at a time.
    pub fn estimate_context_tokens(
        &self,
        session: &Session,
        counter: &dyn crate::tokens::TokenCounter,
    ) -> crate::tokens::ContextEstimate {
        use crate::tokens::{usage_context_tokens, EstimateOptions};
        // A pi-family path counts as pi counts it (`estimateProjectedContextTokens`): usage
        // trusted only when newer than every edit and compaction (spec: compaction §3.2;
        // `conformance/pi-1.6` projectedTokens).
        if counter.is_byte_estimate()
            && crate::context::projection::is_pi_family(session, &self.path)
        {
            if let Ok(p) = crate::context::projection::project(session, &self.path) {
                return super::projection::estimate_projected_context_tokens(
                    session, &p, &self.path,
                );
            }
        }
        let opts = EstimateOptions::default();
        // An entry's byte estimate and usage come from the session's memo and load facts;
        // anything else (another counter, a message built here) is parsed.
        let entry = |i: usize| match self.messages[i].json {
            MessageJson::Entry(e) if counter.is_byte_estimate() => Some(e),
            _ => None,
        };
        crate::tokens::estimate_context_tokens_by(
            self.messages.len(),
            |i| {
                let h = &self.messages[i].head;
                h.has_usage && !h.failed()
            },
            |i| match entry(i) {
                Some(e) => session.entry_tokens(e, opts),
                None => owned_tokens(&self.messages[i], session, counter, opts),
            },
            |i| match entry(i).and_then(|e| session.recorded_usage(e)) {
                Some(u) => u.as_ref().map_or(0, crate::tokens::context_tokens),
                None => usage_context_tokens(&self.messages[i].message(session)),
            },
        )
    }

    /// True when the context has at least one message (`hasMessages`).
    pub fn has_messages(&self) -> bool {
        !self.messages.is_empty()
    }

    /// The model for a role.
    pub fn model(&self, role: &str) -> Option<&str> {
        self.models
            .iter()
            .find(|(r, _)| r == role)
            .map(|(_, m)| m.as_str())
    }

    /// The typed messages, each parsed as the iterator reaches it.
    pub fn agent_messages<'a>(
        &'a self,
        session: &'a Session,
    ) -> impl Iterator<Item = AgentMessage> + 'a {
        self.messages.iter().map(move |m| m.message(session))
    }

    /// What [`SessionContext::to_json`] allocates up front: the messages of a long transcript
    /// are most of the session file, and a string grown by doubling would hold up to three
    /// times that at its last step. Per message: its JSON, its quoted id, and at most 6 + 11
    /// bytes in the per-message arrays (`cacheMissExplainedAt`, `strippedToolCalls`), each
    /// with its comma; 4 KiB for the rest.
    fn json_capacity(&self, session: &Session) -> usize {
        let per_message: usize = self
            .messages
            .iter()
            .map(|m| m.json(session).len() + session.entries()[m.entry].id().len() + 21)
            .sum();
        per_message + 4096
    }

    /// The context as JSON: `{messages, thinkingLevel, configuredThinkingLevel?, models,
    /// injectedTtsrRules, serviceTier?, mode, modeData?, hasMessages, cacheMissExplainedAt?,
    /// entryIds, compactionId?, firstKeptEntryId?}`. Message JSON is copied, not re-parsed.
    pub fn to_json(&self, session: &Session) -> String {
        let mut out = String::with_capacity(self.json_capacity(session));
        self.write_json(session, &mut |piece| out.push_str(piece));
        out
    }

    /// [`SessionContext::to_json`] handed to `f` piece by piece: the messages' JSON as
    /// slices of the session's memory, the rest in small pieces. A caller can pass the text
    /// on without holding all of it (the transcript of a long session is most of its file).
    pub fn write_json(&self, session: &Session, f: &mut dyn FnMut(&str)) {
        f("{\"messages\":[");
        for (i, m) in self.messages.iter().enumerate() {
            if i > 0 {
                f(",");
            }
            f(&m.json(session));
        }
        let mut out = String::with_capacity(4096);
        out.push_str("],\"entryIds\":[");
        write_entry_ids(&mut out, session, &self.messages, f);
        out.push(']');
        let mut tail = Map::new();
        tail.insert("thinkingLevel".into(), self.thinking_level.clone().into());
        if let Some(c) = &self.configured_thinking_level {
            tail.insert("configuredThinkingLevel".into(), c.clone().into());
        }
        let models: Map<String, Value> = self
            .models
            .iter()
            .map(|(r, m)| (r.clone(), Value::from(m.clone())))
            .collect();
        tail.insert("models".into(), Value::Object(models));
        tail.insert(
            "injectedTtsrRules".into(),
            Value::from(self.injected_ttsr_rules.clone()),
        );
        if let Some(t) = &self.service_tier {
            tail.insert("serviceTier".into(), t.clone());
        }
        tail.insert("mode".into(), self.mode.clone().into());
        if let Some(d) = &self.mode_data {
            tail.insert("modeData".into(), d.clone());
        }
        tail.insert("hasMessages".into(), self.has_messages().into());
        if let Some(c) = &self.cache_miss_explained_at {
            tail.insert("cacheMissExplainedAt".into(), Value::from(c.clone()));
        }
        let stripped: Vec<Value> = self
            .messages
            .iter()
            .map(|m| Value::from(m.stripped_tool_calls))
            .collect();
        if self.messages.iter().any(|m| m.stripped_tool_calls > 0) {
            tail.insert("strippedToolCalls".into(), Value::from(stripped));
        }
        let id = |i: usize| Value::from(session.entries()[i].id());
        if let Some(c) = self.compaction {
            tail.insert("compactionId".into(), id(c));
        }
        if let Some(k) = self.first_kept {
            tail.insert("firstKeptEntryId".into(), id(k));
        }
        for (k, v) in tail {
            out.push(',');
            js::write_string(&mut out, &k);
            out.push(':');
            js::write_value(&mut out, &v);
        }
        out.push('}');
        f(&out);
    }
}

/// A page of the display transcript (spec: compaction §2.5): messages `from..from + count`
/// of the transcript of a path, for a view that shows a long history a screen at a time.
/// Building the transcript reads only the recorded facts of each message; only the page's
/// messages are written out.
#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptPage {
    /// The whole transcript (its messages are the heads; the text stays in the session).
    pub context: SessionContext,
    /// The page: positions in `context.messages`.
    pub range: std::ops::Range<usize>,
}

/// Where a transcript page starts and how long it is: `from` counts from the end when
/// negative (as `Array.prototype.slice` does), `count` is everything from there when `None`.
pub fn page_range(total: usize, from: i64, count: Option<u64>) -> std::ops::Range<usize> {
    let start = if from < 0 {
        total.saturating_sub(from.unsigned_abs().min(total as u64) as usize)
    } else {
        (from as u64).min(total as u64) as usize
    };
    let end = match count {
        None => total,
        Some(n) => start
            .saturating_add(n.min(total as u64) as usize)
            .min(total),
    };
    start..end
}

/// The display transcript of a leaf, paged (spec: compaction §2.5; see [`TranscriptPage`]).
/// `opts.transcript` is taken as set.
pub fn transcript_page(
    session: &Session,
    opts: &BuildOptions,
    from: i64,
    count: Option<u64>,
) -> Result<TranscriptPage> {
    let opts = BuildOptions {
        transcript: true,
        ..opts.clone()
    };
    let context = build_context(session, &opts)?;
    let range = page_range(context.messages.len(), from, count);
    Ok(TranscriptPage { context, range })
}

impl TranscriptPage {
    /// The page as JSON: `{total, from, messages, entryIds, cacheMissExplainedAt,
    /// strippedToolCalls?}` (the last when a message of the page had calls stripped), handed
    /// to `f` piece by piece like [`SessionContext::write_json`].
    pub fn write_json(&self, session: &Session, f: &mut dyn FnMut(&str)) {
        let page = &self.context.messages[self.range.clone()];
        let mut out = String::with_capacity(256);
        out.push_str("{\"total\":");
        out.push_str(&self.context.messages.len().to_string());
        out.push_str(",\"from\":");
        out.push_str(&self.range.start.to_string());
        out.push_str(",\"messages\":[");
        f(&out);
        for (i, m) in page.iter().enumerate() {
            if i > 0 {
                f(",");
            }
            f(&m.json(session));
        }
        out.clear();
        out.push_str("],\"entryIds\":[");
        write_entry_ids(&mut out, session, page, f);
        out.push_str("],\"cacheMissExplainedAt\":[");
        let explained = self
            .context
            .cache_miss_explained_at
            .as_deref()
            .unwrap_or(&[]);
        for (i, pos) in self.range.clone().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(if explained.get(pos).copied().unwrap_or(false) {
                "true"
            } else {
                "false"
            });
            if out.len() >= 4096 {
                f(&out);
                out.clear();
            }
        }
        out.push(']');
        if page.iter().any(|m| m.stripped_tool_calls > 0) {
            out.push_str(",\"strippedToolCalls\":[");
            for (i, m) in page.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&m.stripped_tool_calls.to_string());
            }
            out.push(']');
        }
        out.push('}');
        f(&out);
    }
}

/// Placeholder text of a superseded compaction in the display transcript (spec: compaction
/// §2.5): only the active compaction keeps its real text.
pub const SUPERSEDED_SUMMARY: &str =
    "[Earlier compaction summary — superseded by a later compaction and elided]";
/// Short placeholder of a superseded compaction.
pub const SUPERSEDED_SHORT_SUMMARY: &str = "Superseded compaction";

/// Custom message type that is display-only (spec: compaction §2.3).
const PREWALK_PLAN: &str = "prewalk-plan";

struct Emitter<'s> {
    session: &'s Session,
    transcript: bool,
    out: Vec<ContextMessage>,
    /// Budgets and payloads of snapcompact frames (spec: snapcompact §9.6).
    history: HistoryOptions,
}

impl Emitter<'_> {
    /// `append(entry)` of spec: compaction §2.3.
    fn append(&mut self, index: usize) -> Result<()> {
        let entry = &self.session.entries()[index];
        match entry.kind() {
            EntryKind::Message => {
                // The heads of an LLM context are kept: the next request reads them again. A
                // transcript's are not (the whole history, read once).
                let head = if self.transcript {
                    Rc::new(self.session.message_head(index)?)
                } else {
                    self.session.message_head_shared(index)?
                };
                // spec: compaction §2.3: retried and empty error turns are not for the LLM.
                if !self.transcript && (head.retry_recovery || head.empty_error_turn) {
                    return Ok(());
                }
                self.out.push(ContextMessage {
                    entry: index,
                    head,
                    json: MessageJson::Entry(index),
                    stripped_tool_calls: 0,
                    pi: false,
                });
                Ok(())
            }
            kind => self.append_other(index, kind),
        }
    }

    /// [`Emitter::append`] of an entry that is not a `message`: out of line, so that the
    /// per-entry step V8 charges for its code stays the size of the common case
    /// (docs/decisions/performance-notes.md#loop-bodies).
    #[inline(never)]
    fn append_other(&mut self, index: usize, kind: EntryKind) -> Result<()> {
        match kind {
            EntryKind::CustomMessage => {
                // A payload that does not validate is skipped, not fatal.
                let Ok(body) = self.session.body::<CustomMessageBody>(index) else {
                    return Ok(());
                };
                if !self.transcript && body.custom_type == PREWALK_PLAN {
                    return Ok(());
                }
                self.push_entry_message(index)?;
            }
            EntryKind::BranchSummary => {
                let has_text = self
                    .session
                    .body::<crate::session::BranchSummaryBody>(index)
                    .is_ok_and(|b| !b.summary.is_empty());
                if has_text {
                    self.push_entry_message(index)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn push_entry_message(&mut self, index: usize) -> Result<()> {
        if let Some(json) = self.session.entry_message_json(index)? {
            self.push_owned(index, json.into_owned(), None);
        }
        Ok(())
    }

    /// Pushes a message built for this context (its JSON is not the entry's own text).
    fn push_owned(&mut self, index: usize, json: String, role: Option<Role>) {
        if let Ok(head) = MessageHead::read(&json, role) {
            self.out.push(ContextMessage {
                entry: index,
                head: Rc::new(head),
                json: MessageJson::Owned(json),
                stripped_tool_calls: 0,
                pi: false,
            });
        }
    }

    /// Emits a compaction as a `compactionSummary` message; superseded ones (transcript
    /// mode) get the placeholder text.
    fn push_compaction(&mut self, index: usize, superseded: bool) -> Result<()> {
        let json = if superseded {
            let Some(json) = self.session.entry_message_json(index)? else {
                return Ok(());
            };
            let mut v = crate::support::json::parse(&json).unwrap_or(Value::Null);
            if let Some(o) = v.as_object_mut() {
                o.insert("summary".into(), SUPERSEDED_SUMMARY.into());
                if o.contains_key("shortSummary") {
                    o.insert("shortSummary".into(), SUPERSEDED_SHORT_SUMMARY.into());
                }
            }
            js::stringify(&v)
        } else {
            // Every request builds the active compaction's message again: it is derived from
            // the entry's line alone, so it is kept until that line changes.
            let h = &self.history;
            let data = match h.data {
                FrameData::Inline => 0,
                FrameData::Omitted => 1,
                FrameData::Refs => 2,
            };
            let key = [
                h.max_frame_data_bytes.unwrap_or(u64::MAX),
                h.max_images.map_or(u64::MAX, |n| n as u64),
                data,
            ];
            let json = self.session.derived_text(index, key, &mut || {
                Ok(self
                    .session
                    .entry_message_json(index)?
                    .map(|json| self.with_history_blocks(index, json.into_owned())))
            })?;
            let Some(json) = json else {
                return Ok(());
            };
            json.to_string()
        };
        self.push_owned(index, json, Some(Role::CompactionSummary));
        Ok(())
    }

    /// Emits a compaction's summary message, with the native record the reader replays as
    /// its `providerPayload` when there is one (spec: compaction §2.3, §13).
    fn push_summary(&mut self, index: usize, payload: Option<Value>) -> Result<()> {
        match payload {
            Some(p) => self.push_replayed(index, p),
            None => self.push_compaction(index, false),
        }
    }

    /// Emits a compaction whose native record the reader replays (spec: compaction §2.3):
    /// the summary message with the record as its `providerPayload`.
    fn push_replayed(&mut self, index: usize, payload: Value) -> Result<()> {
        let Some(json) = self.session.entry_message_json(index)? else {
            return Ok(());
        };
        let json = self.with_history_blocks(index, json.into_owned());
        let json = match crate::support::json::parse(&json) {
            Ok(Value::Object(mut o)) => {
                o.insert("providerPayload".into(), payload);
                js::stringify(&Value::Object(o))
            }
            _ => json,
        };
        self.push_owned(index, json, Some(Role::CompactionSummary));
        Ok(())
    }

    /// A compaction carrying a snapcompact archive gets its history blocks (text head,
    /// frames as PNG image blocks, text tail) on every build (spec: snapcompact §9.4, §9.6;
    /// compaction §2.3). Frames stored by reference are resolved by id in the file, on or off
    /// the path; one the file does not hold is a placeholder (`archive::stored`).
    fn with_history_blocks(&self, index: usize, json: String) -> String {
        let Ok(Some(archive)) = read_archive(self.session, index) else {
            return json;
        };
        let mut blocks = history_blocks(&archive, &self.history);
        if self.history.data == FrameData::Refs {
            let id = self.session.entries()[index].id();
            for b in &mut blocks {
                if let HistoryBlock::Image { data, .. } = b {
                    *data = format!("\0{id}:{data}");
                }
            }
        }
        match crate::support::json::parse(&json) {
            Ok(Value::Object(mut o)) => {
                o.insert(
                    "blocks".into(),
                    Value::Array(blocks.iter().map(HistoryBlock::to_json).collect()),
                );
                js::stringify(&Value::Object(o))
            }
            _ => json,
        }
    }
}

/// The replay of a compaction by `provider` (spec: compaction §2.3, §13), as the summary
/// message's `providerPayload`, and `Some(through)` when the payload holds the kept entries
/// up to `through` (`providerReplayThroughEntryId`). OpenAI readers replay the
/// `openaiRemoteCompaction` record's replacement history (`{type: "openaiResponsesHistory",
/// provider, items}`), which holds them; Anthropic readers the `anthropicCompaction` block
/// (`{type: "anthropicCompaction", provider, content, encryptedContent?, filesText?}`),
/// which does not.
fn native_replay(
    session: &Session,
    index: usize,
    provider: &str,
    anthropic: bool,
) -> Option<(Value, Option<Option<String>>)> {
    // Only the record and the replay boundary are read: the entry may carry a large archive.
    let text = session.entry_json(index);
    let member = |path: &[&str]| -> Option<Value> {
        let span = crate::support::json::edit::find_path(&text, path).ok()??;
        crate::support::json::parse(&text[span]).ok()
    };
    let key = if anthropic {
        preserve::ANTHROPIC
    } else {
        preserve::OPENAI_REMOTE
    };
    let record = member(&["preserveData", key])?;
    if record.get("provider")?.as_str()? != provider {
        return None;
    }
    let mut payload = vec![("provider", Value::from(provider))];
    if anthropic {
        payload.insert(0, ("type", "anthropicCompaction".into()));
        // An on-demand block whose kept tail would break the API's thinking rules replays as
        // the summary text (`anthropic_ondemand::commit_ondemand`).
        if record.get("thinkingSafe").and_then(Value::as_bool) == Some(false) {
            return None;
        }
        if let Some(block) = record.get("block").filter(|b| b.is_object()) {
            payload.push(("block", block.clone()));
        }
        for k in [
            "content",
            "encryptedContent",
            "signature",
            "beta",
            "filesText",
        ] {
            match record.get(k).and_then(Value::as_str) {
                Some(t) if !t.is_empty() => payload.push((k, t.into())),
                _ if k == "content" => return None,
                _ => {}
            }
        }
        return Some((crate::support::json::object(payload), None));
    }
    let items = record.get("replacementHistory")?.as_array()?;
    if !items.iter().all(Value::is_object) {
        return None;
    }
    payload.insert(0, ("type", "openaiResponsesHistory".into()));
    payload.push(("items", Value::Array(items.clone())));
    // A compaction inside the host's own request replays its item alone: the reply it came
    // with is kept after it from the path (`openai_inline`).
    if record.get("version").and_then(Value::as_str) == Some("inline") {
        return Some((crate::support::json::object(payload), None));
    }
    let through =
        member(&["providerReplayThroughEntryId"]).and_then(|v| v.as_str().map(str::to_string));
    Some((crate::support::json::object(payload), Some(through)))
}

/// Resolves the leaf (spec: compaction §2.1): `None` for an empty context.
fn resolve_leaf(session: &Session, leaf: &LeafSelector) -> Option<usize> {
    match leaf {
        LeafSelector::Null => None,
        LeafSelector::Current => session.leaf(),
        LeafSelector::Id(id) => session
            .index_of(id)
            .or_else(|| session.len().checked_sub(1)),
    }
}

/// Appends the entry ids of `messages` to `out` as JSON strings, comma-separated, handing
/// `out` to `f` whenever it passes 4 KB (the writers of [`SessionContext::write_json`] and
/// [`TranscriptPage::write_json`]).
fn write_entry_ids(
    out: &mut String,
    session: &Session,
    messages: &[ContextMessage],
    f: &mut dyn FnMut(&str),
) {
    for (i, m) in messages.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        js::write_string(out, session.entries()[m.entry].id());
        if out.len() >= 4096 {
            f(out);
            out.clear();
        }
    }
}

/// Builds the context of a leaf (spec: compaction §2). Snapcompact frames are attached
/// without budgets (see [`build_context_with`]).
pub fn build_context(session: &Session, opts: &BuildOptions) -> Result<SessionContext> {
    build_context_with(session, opts, &HistoryOptions::default())
}

/// [`build_context`] with the provider's frame budgets (image count, base64 bytes) and what
/// the frames' image blocks carry (spec: snapcompact §9.6).
pub fn build_context_with(
    session: &Session,
    opts: &BuildOptions,
    history: &HistoryOptions,
) -> Result<SessionContext> {
    let mut ctx = SessionContext::empty();
    let Some(leaf) = resolve_leaf(session, &opts.leaf) else {
        return Ok(ctx);
    };
    let path = session.path_shared(leaf);
    // spec: compaction §2.2, carried forward from the parent after an append.
    let state = session.path_state(leaf);
    let compaction_pos = state.latest_compaction;
    let reset_pos = state.latest_reset;
    ctx.thinking_level = state.thinking_level;
    ctx.configured_thinking_level = state.configured_thinking_level;
    ctx.models = state.models;
    ctx.injected_ttsr_rules = state.injected_ttsr_rules;
    ctx.service_tier = state.service_tier;
    ctx.mode = state.mode;
    ctx.mode_data = state.mode_data;

    let mut em = Emitter {
        session,
        transcript: opts.transcript,
        out: Vec::with_capacity(path.len().min(4096)),
        history: *history,
    };
    if !opts.transcript && crate::context::projection::is_pi_family(session, &path) {
        // A pi-family path is projected as pi projects it: edits applied, no post-processing
        // (a call whose result an edit omitted stays, case 01). oh-my-pi never writes these
        // entries, so its files never come here.
        let projected = crate::context::projection::project(session, &path)?;
        if let Some(first) = projected.first() {
            if session.entries()[first.entry].kind() == EntryKind::Compaction {
                ctx.compaction = Some(first.entry);
                ctx.first_kept = projected.get(1).map(|p| p.entry).filter(|&k| {
                    path.iter().position(|&i| i == k) < path.iter().position(|&i| i == first.entry)
                });
            }
        }
        ctx.messages = projected.into_iter().flat_map(|p| p.messages).collect();
        ctx.path = path;
        return Ok(ctx);
    }
    let plain_transcript = opts.transcript && !opts.collapse_compacted_history;
    if plain_transcript {
        // Every entry in order; compactions inline, only the latest with its real text.
        for (pos, &i) in path.iter().enumerate() {
            if session.entries()[i].kind() == EntryKind::Compaction {
                em.push_compaction(i, Some(pos) != compaction_pos)?;
            } else {
                em.append(i)?;
            }
        }
    } else if reset_pos.is_some_and(|r| compaction_pos.is_none_or(|c| r > c)) {
        // [N+] a reset boundary after the latest compaction drops everything before it.
        for &i in &path[reset_pos.unwrap_or(0) + 1..] {
            em.append(i)?;
        }
    } else if let Some(cpos) = compaction_pos {
        let cidx = path[cpos];
        ctx.compaction = Some(cidx);
        let first_kept_id = session.first_kept_id(cidx);
        let first_kept_id: &str = &first_kept_id;
        // The kept entries lie just before the compaction: look for the entry from there
        // back (a long history is not walked), by id only when ids repeat.
        let kept_from = session
            .index_of(first_kept_id)
            .and_then(|at| path[..cpos].iter().rposition(|&i| i == at))
            .filter(|&p| {
                !session.has_duplicate_ids()
                    || path[..p]
                        .iter()
                        .all(|&i| session.entries()[i].id() != first_kept_id)
            })
            .or_else(|| {
                path[..cpos]
                    .iter()
                    .position(|&i| session.entries()[i].id() == first_kept_id)
            });
        ctx.first_kept = kept_from.map(|p| path[p]);
        let replay = match (&opts.replay_provider, opts.transcript) {
            (Some(p), false) => native_replay(session, cidx, p, opts.replay_anthropic),
            _ => None,
        };
        // A replayed history holds the kept entries: only those after the entry it covers
        // the path through come from the path.
        let kept_from = match &replay {
            None | Some((_, None)) => kept_from,
            Some((_, Some(through))) => through
                .as_deref()
                .and_then(|id| {
                    path[..cpos]
                        .iter()
                        .rposition(|&i| session.entries()[i].id() == id)
                })
                .map(|p| p + 1),
        };
        // The summary goes before the kept entries, or after them when collapsing (unless the
        // replayed history holds them).
        let summary_last = opts.collapse_compacted_history && !matches!(replay, Some((_, Some(_))));
        let mut payload = replay.map(|(p, _)| p);
        if !summary_last {
            em.push_summary(cidx, payload.take())?;
        }
        if let Some(from) = kept_from {
            for &i in &path[from..cpos] {
                em.append(i)?;
            }
        }
        if summary_last {
            em.push_summary(cidx, payload)?;
        }
        for &i in &path[cpos + 1..] {
            em.append(i)?;
        }
    } else {
        for &i in path.iter() {
            em.append(i)?;
        }
    }
    let mut messages = em.out;

    if !(opts.transcript && opts.keep_dangling_tool_calls) {
        strip_dangling_tool_calls(session, &mut messages, opts.transcript);
    }
    if !opts.transcript {
        drop_failed_turns(&mut messages);
        // Beyond the spec: a provider rejects a tool result whose call is not before it (a
        // hostile or hand-edited tree, a `firstKeptEntryId` naming a result), and dropping
        // failed turns can leave a call without its result when call ids repeat.
        drop_orphan_tool_results(&mut messages);
        strip_dangling_tool_calls(session, &mut messages, false);
    }
    if opts.transcript {
        ctx.cache_miss_explained_at = Some(cache_miss_explained(session, &path, &messages));
    }
    ctx.messages = messages;
    ctx.path = path;
    Ok(ctx)
}

/// Rewrites a message's JSON through `f`, keeping everything `f` does not touch.
fn rewrite(session: &Session, m: &mut ContextMessage, f: impl FnOnce(&mut Map<String, Value>)) {
    let mut v = m.value(session);
    if let Some(o) = v.as_object_mut() {
        f(o);
    }
    let json = js::stringify(&v);
    if let Ok(head) = MessageHead::read(&json, None) {
        m.head = Rc::new(head);
    }
    m.json = MessageJson::Owned(json);
}

/// Post-processing 1 (spec: compaction §2.4): tool calls without a result are dropped, and
/// with them the reasoning that cannot be replayed without them (redacted thinking, thinking
/// signatures). An assistant left empty is removed (LLM mode); in transcript mode every
/// assistant that lost calls is kept with their count.
fn strip_dangling_tool_calls(
    session: &Session,
    messages: &mut Vec<ContextMessage>,
    transcript: bool,
) {
    let dangling_at = dangling_tool_calls(messages);
    // Positions in increasing order (`dangling_at` is).
    let mut remove: Vec<usize> = Vec::new();
    for (pos, missing) in dangling_at {
        if strip_calls(session, &mut messages[pos], &missing, transcript) {
            remove.push(pos);
        }
    }
    if !remove.is_empty() {
        let mut pos = 0;
        messages.retain(|_| {
            let keep = remove.binary_search(&pos).is_err();
            pos += 1;
            keep
        });
    }
}

/// Strips the `missing` calls of one message (see [`strip_dangling_tool_calls`]); true when
/// the message is to go. A step of its own: the loop over the messages stays small, so V8 does
/// not recompile the run-once driver for its loop (docs/decisions/performance-notes.md#loop-bodies).
#[inline(never)]
fn strip_calls(
    session: &Session,
    m: &mut ContextMessage,
    missing: &FxHashSet<Box<str>>,
    transcript: bool,
) -> bool {
    let mut stripped = 0u32;
    rewrite(session, m, |o| {
        if let Some(Value::Array(blocks)) = o.get_mut("content") {
            blocks.retain(|b| {
                let ty = b.get("type").and_then(Value::as_str);
                if ty == Some("toolCall") {
                    let id = b.get("id").and_then(Value::as_str).unwrap_or("");
                    if missing.contains(id) {
                        stripped += 1;
                        return false;
                    }
                }
                ty != Some("redactedThinking")
            });
            for b in blocks.iter_mut() {
                if b.get("type").and_then(Value::as_str) == Some("thinking") {
                    if let Some(bo) = b.as_object_mut() {
                        bo.remove("thinkingSignature");
                    }
                }
            }
        }
    });
    // The display transcript counts the stripped calls of every turn that lost some, a
    // turn with text left (an aborted or failed one, typically) as much as an emptied one
    // (the reference's `strippedToolCalls` marker; issue 36 item 7).
    if transcript {
        m.stripped_tool_calls = stripped;
        false
    } else {
        m.head.role == Role::Assistant && m.head.no_blocks
    }
}

/// The assistant messages with tool calls that no later tool result answers, and those ids
/// (a result before its call answers nothing).
fn dangling_tool_calls(messages: &[ContextMessage]) -> Vec<(usize, FxHashSet<Box<str>>)> {
    let mut answered_after: FxHashSet<&str> = FxHashSet::default();
    let mut dangling_at: Vec<(usize, FxHashSet<Box<str>>)> = Vec::new();
    for (pos, m) in messages.iter().enumerate().rev() {
        if let Some(id) = m.head.answers() {
            answered_after.insert(id);
        }
        let missing: FxHashSet<Box<str>> = m
            .head
            .tool_calls()
            .iter()
            .filter(|id| !answered_after.contains(id.as_str()))
            .map(|id| id.as_str().into())
            .collect();
        if !missing.is_empty() {
            dangling_at.push((pos, missing));
        }
    }
    dangling_at.reverse();
    dangling_at
}

/// Drops tool results whose call is not in an earlier assistant message of the context (LLM
/// mode).
fn drop_orphan_tool_results(messages: &mut Vec<ContextMessage>) {
    let mut called: FxHashSet<&str> = FxHashSet::default();
    let mut keep = Vec::with_capacity(messages.len());
    for m in messages.iter() {
        called.extend(m.head.tool_calls().iter().map(String::as_str));
        keep.push(m.head.answers().is_none_or(|id| called.contains(id)));
    }
    if keep.iter().all(|&k| k) {
        return;
    }
    let mut it = keep.into_iter();
    messages.retain(|_| it.next().unwrap_or(true));
}

/// Post-processing 2 (spec: compaction §2.4, LLM mode): failed assistant turns (`aborted`,
/// `error`) go, with the tool results answering them — unless an `interrupted-thinking`
/// custom message follows immediately.
fn drop_failed_turns(messages: &mut Vec<ContextMessage>) {
    let mut drop_ids: FxHashSet<&str> = FxHashSet::default();
    let mut keep = vec![true; messages.len()];
    for pos in 0..messages.len() {
        let head = &messages[pos].head;
        if head.failed() {
            let marked = messages
                .get(pos + 1)
                .is_some_and(|m| m.head.custom_type.as_deref() == Some(INTERRUPTED_THINKING));
            if !marked {
                keep[pos] = false;
                drop_ids.extend(head.tool_calls().iter().map(String::as_str));
            }
        } else if head.answers().is_some_and(|id| drop_ids.contains(id)) {
            keep[pos] = false;
        }
    }
    let mut it = keep.into_iter();
    messages.retain(|_| it.next().unwrap_or(true));
}

/// `cacheMissExplainedAt` (spec: compaction §2.5): an assistant whose prompt-cache miss is
/// expected — the first after a compaction summary or a model change, or one answering from
/// a different provider/model than the previous assistant.
fn cache_miss_explained(
    session: &Session,
    path: &[usize],
    messages: &[ContextMessage],
) -> Vec<bool> {
    let position: rustc_hash::FxHashMap<usize, usize> =
        path.iter().enumerate().map(|(p, &i)| (i, p)).collect();
    let mut out = Vec::with_capacity(messages.len());
    let mut pending = false;
    let mut prev_model: Option<(Option<String>, Option<String>)> = None;
    let mut last_pos: Option<usize> = None;
    for m in messages {
        // Model and mode changes between the previous message and this one explain a miss.
        let pos = position.get(&m.entry).copied();
        if let (Some(prev), Some(cur)) = (last_pos, pos) {
            if prev < cur
                && path[prev + 1..cur].iter().any(|&i| {
                    matches!(
                        session.entries()[i].kind(),
                        EntryKind::ModelChange | EntryKind::ModeChange
                    )
                })
            {
                pending = true;
            }
        }
        last_pos = pos.or(last_pos);
        match m.head.role {
            Role::CompactionSummary => {
                pending = true;
                out.push(false);
            }
            Role::Assistant => {
                let model = (m.head.provider.clone(), m.head.model.clone());
                let changed = prev_model.as_ref().is_some_and(|p| *p != model);
                out.push(pending || changed);
                pending = false;
                prev_model = Some(model);
            }
            _ => out.push(false),
        }
    }
    out
}

/// The tokens of a context message built here (not its entry's own JSON): a compaction summary
/// that carries an OpenAI replay (`providerPayload` of type `openaiResponsesHistory`) weighs
/// the items the request sends instead of it; any other message is estimated as it is.
pub(crate) fn owned_tokens(
    m: &ContextMessage,
    session: &Session,
    counter: &dyn TokenCounter,
    opts: EstimateOptions,
) -> u64 {
    if m.role() == Role::CompactionSummary {
        if let Some(t) = super::replay::replay_tokens(&m.json(session), counter) {
            return t;
        }
    }
    estimate_message(&m.message(session), counter, opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::LoadOptions;

    #[test]
    fn json_fits_the_capacity_it_reserves() {
        // Many short messages, so the per-message arrays outgrow any fixed slack: assistant
        // turns whose tool calls have no result (a `strippedToolCalls` count each, in the
        // transcript) and model switches (`cacheMissExplainedAt`).
        let mut text = String::from(
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
        );
        text.push('\n');
        let mut parent = String::from("null");
        for i in 0..3000 {
            let message = if i % 2 == 0 {
                r#"{"role":"user","content":"q"}"#.to_string()
            } else {
                format!(
                    r#"{{"role":"assistant","content":[{{"type":"toolCall","id":"t{i}","name":"x","arguments":{{}}}}],"provider":"p","model":"m{}","stopReason":"toolUse"}}"#,
                    i % 3
                )
            };
            text.push_str(&format!(
                r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{message}}}"#
            ));
            text.push('\n');
            parent = format!("\"e{i}\"");
        }
        let s = Session::load(text.into_bytes(), LoadOptions::default()).unwrap();
        for transcript in [false, true] {
            let opts = BuildOptions {
                transcript,
                ..Default::default()
            };
            let ctx = build_context(&s, &opts).unwrap();
            let json = ctx.to_json(&s);
            assert!(
                json.len() <= ctx.json_capacity(&s),
                "{} > {}",
                json.len(),
                ctx.json_capacity(&s)
            );
            if transcript {
                assert_eq!(ctx.messages.len(), 3000);
                assert!(
                    json.contains(r#""strippedToolCalls":[0,1,0,1"#),
                    "counts written"
                );
            }
        }
    }
}
