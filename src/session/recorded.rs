//! Reading the facts the load pass recorded of each `message` entry (`facts.rs`): flags,
//! string spans decoded from the entry's line when asked for, tool calls. Each reader says
//! `None` where no facts were recorded; the callers then parse the message (`messages.rs`).

use crate::session::entry::EntryKind;
use crate::session::facts::{
    CallFacts, FactsSnapshot, FileCallFacts, FileTool, PrunedLine, ResultFacts, Span,
};
use crate::session::facts::{
    EMPTY_ERROR, FAILED, HAS_USAGE, IS_ERROR, KNOWN, NO_BLOCKS, OMITTED, PARSE_FAILS, PRUNED,
    RETRY, USELESS,
};
use crate::session::message::{truthy, MessageHead, Role, StopReason, Usage};
use crate::session::model::Session;
use crate::support::json::scan::decode_string_value;
use std::borrow::Cow;
use std::ops::Range;

impl Session {
    /// The recorded flags of an entry (0 without facts).
    pub(crate) fn fact_flags(&self, index: usize) -> u16 {
        self.facts.flags_of(index)
    }

    /// True when the load pass (or the last edit) recorded the entry's facts.
    pub fn has_facts(&self, index: usize) -> bool {
        self.fact_flags(index) & KNOWN != 0
    }

    fn fact_spans(&self, index: usize) -> Option<&([Span; 4], u32, u32)> {
        self.facts.spans_of(index)
    }

    /// The raw bytes of a recorded span of an entry's line.
    fn span_bytes(&self, index: usize, span: Span) -> Option<&[u8]> {
        let r = span.get()?;
        self.line_bytes(self.entries[index].line as usize).get(r)
    }

    /// A recorded string span decoded (`None` when absent or not decodable).
    fn span_str(&self, index: usize, which: usize) -> Option<Cow<'_, str>> {
        let spans = self.fact_spans(index)?;
        decode_string_value(self.span_bytes(index, spans.0[which])?)
    }

    /// Whether a tool result entry was pruned (`None`: not a readable tool result), from the
    /// recorded flags when there are facts.
    pub fn tool_result_pruned(&self, index: usize) -> Option<bool> {
        let flags = self.fact_flags(index);
        if flags & KNOWN == 0 {
            return self.result_facts(index).map(|f| f.pruned);
        }
        let e = &self.entries[index];
        (flags & PARSE_FAILS == 0
            && e.role == Some(Role::ToolResult)
            && e.kind == EntryKind::Message)
            .then_some(flags & PRUNED != 0)
    }

    /// Where the `content` and `prunedAt` values of a tool result entry are in its line
    /// (each `None` when absent), from the recorded facts: the edit of a prune needs no scan
    /// of the line. `None` without facts.
    #[allow(clippy::type_complexity)]
    pub(crate) fn pruning_spans(
        &self,
        index: usize,
    ) -> Option<(Option<Range<usize>>, Option<Range<usize>>)> {
        if self.tool_result_pruned(index).is_none() || !self.has_facts(index) {
            return None;
        }
        match self.fact_spans(index) {
            Some(s) => Some((s.0[2].get(), s.0[3].get())),
            None => Some((None, None)),
        }
    }

    /// Replaces the lines a prune rewrote. A line with recorded facts gets them from the old
    /// ones and the edit — one text block holding the notice, `prunedAt` a number, the other
    /// members moved — exactly as a scan of the new line would record them (debug builds check);
    /// other lines are scanned.
    pub(crate) fn rewrite_pruned(&mut self, edits: Vec<(usize, PrunedLine)>) {
        for (index, p) in edits {
            let line = self.entries[index].line as usize;
            let flags = self.fact_flags(index);
            let known = (flags & KNOWN != 0).then(|| {
                let old = self.fact_spans(index).map_or([Span::NONE; 4], |s| s.0);
                (p.message.clone(), p.facts(flags, old))
            });
            self.rewrite_known(line, p.text, known);
        }
    }

    /// Tool result facts from the recorded columns (`None` without facts, or when the entry
    /// is not a readable tool result).
    pub(crate) fn recorded_result(&self, index: usize) -> Option<ResultFacts<'_>> {
        let flags = self.fact_flags(index);
        let e = &self.entries[index];
        if flags & KNOWN == 0
            || flags & PARSE_FAILS != 0
            || e.role != Some(Role::ToolResult)
            || e.kind != EntryKind::Message
        {
            return None;
        }
        Some(ResultFacts {
            tool_call_id: self.span_str(index, 0).unwrap_or_default(),
            tool_name: self.span_str(index, 1).unwrap_or_default(),
            is_error: flags & IS_ERROR != 0,
            useless: flags & USELESS != 0,
            pruned: flags & PRUNED != 0,
            context_omitted: flags & OMITTED != 0,
        })
    }

    /// The recorded tool-call blocks of an assistant entry.
    fn recorded_calls(&self, index: usize) -> &[CallFacts] {
        match self.fact_spans(index) {
            Some(&(_, from, to)) => self
                .facts
                .calls
                .get(from as usize..to as usize)
                .unwrap_or(&[]),
            None => &[],
        }
    }

    /// False when the recorded facts of an assistant entry show no `read` call: pruning then
    /// need not look at its calls. True without facts.
    pub fn may_have_read_call(&self, index: usize) -> bool {
        let flags = self.fact_flags(index);
        if flags & KNOWN == 0 {
            return true;
        }
        flags & PARSE_FAILS == 0
            && self
                .recorded_calls(index)
                .iter()
                .any(|c| c.file_tool() == Some(FileTool::Read))
    }

    /// The recorded file calls of an assistant entry (`None` without facts).
    pub(crate) fn recorded_file_calls(&self, index: usize) -> Option<Vec<FileCallFacts<'_>>> {
        let flags = self.fact_flags(index);
        if flags & KNOWN == 0 || self.entries[index].role != Some(Role::Assistant) {
            return None;
        }
        if flags & PARSE_FAILS != 0 {
            return Some(Vec::new());
        }
        let line = self.line_bytes(self.entries[index].line as usize);
        Some(
            self.recorded_calls(index)
                .iter()
                .filter_map(|c| {
                    let tool = c.file_tool()?;
                    let path = decode_string_value(line.get(c.path.get()?)?)?;
                    let id =
                        c.id.get()
                            .and_then(|r| decode_string_value(line.get(r)?))
                            .unwrap_or_default();
                    Some(FileCallFacts { tool, path, id })
                })
                .collect(),
        )
    }

    /// The head of a `message` entry from its recorded facts: `None` without facts,
    /// `Some(Err)` where parsing the message fails.
    pub(crate) fn recorded_head(&self, index: usize) -> Option<Result<MessageHead, ()>> {
        let flags = self.fact_flags(index);
        if flags & KNOWN == 0 {
            return None;
        }
        if flags & PARSE_FAILS != 0 {
            return Some(Err(()));
        }
        let role = self.entries[index].role.unwrap_or(Role::Other);
        let mut head = MessageHead::new(role);
        match role {
            Role::Assistant => {
                let line = self.line_bytes(self.entries[index].line as usize);
                head.tool_call_ids = self
                    .recorded_calls(index)
                    .iter()
                    .map(|c| {
                        c.id.get()
                            .and_then(|r| decode_string_value(line.get(r)?))
                            .map(Cow::into_owned)
                            .unwrap_or_default()
                    })
                    .collect();
                head.stop_reason = self.span_str(index, 3).map(|s| StopReason::parse(&s));
                head.provider = self.span_str(index, 0).map(Cow::into_owned);
                head.model = self.span_str(index, 1).map(Cow::into_owned);
                head.retry_recovery = flags & RETRY != 0;
                head.has_usage = flags & HAS_USAGE != 0;
                head.no_blocks = flags & NO_BLOCKS != 0;
                head.empty_error_turn = flags & EMPTY_ERROR != 0;
            }
            Role::ToolResult => {
                head.tool_call_ids = vec![self.span_str(index, 0).unwrap_or_default().into_owned()]
            }
            Role::Custom | Role::HookMessage => {
                head.custom_type = Some(self.span_str(index, 0).unwrap_or_default().into_owned())
            }
            _ => {}
        }
        Some(Ok(head))
    }

    /// The provider and model of an assistant entry, from its facts when recorded.
    pub(crate) fn assistant_model(&self, index: usize) -> Option<(String, String)> {
        if self.has_facts(index) {
            if self.fact_flags(index) & PARSE_FAILS != 0 {
                return None;
            }
            return Some((
                self.span_str(index, 0)?.into_owned(),
                self.span_str(index, 1)?.into_owned(),
            ));
        }
        match self.message(index) {
            Ok(crate::session::message::AgentMessage::Assistant(a)) => a.provider.zip(a.model),
            _ => None,
        }
    }

    /// The usage of an assistant entry that did not fail, from its facts: `None` without
    /// facts; `Some(None)` when it failed or has no usage.
    pub(crate) fn recorded_usage(&self, index: usize) -> Option<Option<Usage>> {
        let flags = self.fact_flags(index);
        if flags & KNOWN == 0 {
            return None;
        }
        if flags & (PARSE_FAILS | FAILED) != 0 || flags & HAS_USAGE == 0 {
            return Some(None);
        }
        let raw = self.span_bytes(index, self.fact_spans(index)?.0[2])?;
        Some(
            crate::support::json::view::Obj::parse(raw)
                .ok()
                .map(|o| Usage::read(&o)),
        )
    }

    /// The entry's facts from the load pass (`None` without them).
    pub fn recorded_facts(&self, index: usize) -> Option<FactsSnapshot> {
        if !self.has_facts(index) {
            return None;
        }
        let usage = self.recorded_usage(index).flatten();
        Some(FactsSnapshot {
            tokens: self.entry_tokens_memo(index, false)?,
            tokens_excluding: self.entry_tokens_memo(index, true)?,
            head: self.recorded_head(index)?,
            result: self.recorded_result(index).map(|r| {
                (
                    r.tool_call_id.into_owned(),
                    r.tool_name.into_owned(),
                    r.is_error,
                    r.useless,
                    r.pruned,
                    r.context_omitted,
                )
            }),
            file_calls: self
                .recorded_file_calls(index)
                .unwrap_or_default()
                .into_iter()
                .map(|c| (c.tool, c.path.into_owned(), c.id.into_owned()))
                .collect(),
            failed: self.fact_flags(index) & FAILED != 0,
            usage,
        })
    }

    /// The same facts computed by parsing the message, as before the load pass recorded
    /// them (the reference the property tests compare [`Session::recorded_facts`] with).
    /// `estimate` is the token estimator (`crate::tokens` sits above this layer).
    pub fn parsed_facts(
        &self,
        index: usize,
        estimate: impl Fn(&crate::session::message::AgentMessage, bool) -> u64,
    ) -> FactsSnapshot {
        use crate::session::message::AgentMessage;
        let parsed = self.entry_message(index);
        let (tokens, tokens_excluding) = match &parsed {
            Ok(Some(m)) => (estimate(m, false), estimate(m, true)),
            _ => (0, 0),
        };
        let head = crate::session::message::MessageHead::read(
            &self.message_json(index).unwrap_or_default(),
            self.entries[index].role,
        )
        .map_err(|_| ());
        let (result, file_calls, usage, failed) = match &parsed {
            Ok(Some(AgentMessage::ToolResult(r))) => (
                Some((
                    r.tool_call_id.clone(),
                    r.tool_name.clone(),
                    r.is_error,
                    r.useless,
                    r.pruned_at.is_some(),
                    truthy(r.context_omitted.as_ref()),
                )),
                Vec::new(),
                None,
                false,
            ),
            Ok(Some(m @ AgentMessage::Assistant(a))) => {
                let mut calls = Vec::new();
                crate::session::facts::file_calls_of(m, |tool, path, id| {
                    calls.push((tool, path.to_string(), id.to_string()))
                });
                (
                    None,
                    calls,
                    a.usage.clone().filter(|_| !a.failed()),
                    a.failed(),
                )
            }
            _ => (None, Vec::new(), None, false),
        };
        FactsSnapshot {
            tokens,
            tokens_excluding,
            head,
            result,
            file_calls,
            usage,
            failed,
        }
    }
}
