//! Reading the facts the load pass recorded of each `message` entry (`facts.rs`): flags,
//! string spans decoded from the entry's line when asked for, tool calls. Each reader says
//! `None` where no facts were recorded; the callers then parse the message (`messages.rs`).

use crate::session::entry::EntryKind;
use crate::session::facts::{CallFacts, FileCallFacts, FileTool, ResultFacts, Span};
use crate::session::facts::{
    EMPTY_ERROR, FAILED, HAS_USAGE, IS_ERROR, KNOWN, NO_BLOCKS, OMITTED, PARSE_FAILS, PRUNED,
    RETRY, USELESS,
};
use crate::session::message::{MessageHead, Role, StopReason, Usage};
use crate::session::model::Session;
use crate::support::json::scan::decode_string_value;
use std::borrow::Cow;

impl Session {
    /// The recorded flags of an entry (0 without facts).
    pub(crate) fn fact_flags(&self, index: usize) -> u16 {
        self.facts.flags_of(index)
    }

    /// True when the load pass (or the last edit) recorded the entry's facts.
    pub fn has_facts(&self, index: usize) -> bool {
        self.fact_flags(index) & KNOWN != 0
    }

    pub(super) fn fact_spans(&self, index: usize) -> Option<&([Span; 4], u32, u32)> {
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
}
