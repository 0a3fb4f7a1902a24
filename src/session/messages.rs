//! The message an entry carries into the LLM context (spec: compaction §2.3, §4.4 step 8):
//! a `message` entry's own message, or one built from a `custom_message`, `branch_summary` or
//! `compaction` entry. Token estimates of entries are memoized here (the estimator is
//! `crate::tokens`'s).

use crate::error::Result;
use crate::session::entry::{
    BranchSummaryBody, CompactionMessageBody, CustomMessageBody, EntryKind,
};
use crate::session::facts::{
    clamp_tokens, file_calls_of, FactsSnapshot, FileCall, FileCallFacts, FileCalls, ResultFacts,
    FAILED, KNOWN, PARSE_FAILS, PRUNED, UNKNOWN_TOKENS,
};
use crate::session::message::{truthy, AgentMessage, MessageHead, Role};
use crate::session::model::Session;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::ops::Range;

impl Session {
    fn timestamp_value(&self, index: usize) -> Value {
        let ms = self.timestamp_ms(index);
        if ms == 0 {
            Value::Null
        } else {
            Value::from(ms)
        }
    }

    /// The JSON of the message an entry carries, or `None` for entries that carry none.
    /// Compactions count here (as `compactionSummary`); context building decides where
    /// they go.
    pub fn entry_message_json(&self, index: usize) -> Result<Option<Cow<'_, str>>> {
        let entry = &self.entries[index];
        let json = match entry.kind {
            EntryKind::Message => return Ok(self.message_json(index)),
            EntryKind::CustomMessage => {
                let b: CustomMessageBody = self.body(index)?;
                let mut m = Map::new();
                m.insert("role".into(), "custom".into());
                m.insert("customType".into(), b.custom_type.into());
                m.insert("content".into(), b.content);
                m.insert("display".into(), b.display.into());
                if let Some(d) = b.details {
                    m.insert("details".into(), d);
                }
                if let Some(a) = b.attribution {
                    m.insert("attribution".into(), a.into());
                }
                m.insert("timestamp".into(), self.timestamp_value(index));
                m
            }
            EntryKind::BranchSummary => {
                let b: BranchSummaryBody = self.body(index)?;
                let mut m = Map::new();
                m.insert("role".into(), "branchSummary".into());
                m.insert("summary".into(), b.summary.into());
                m.insert("fromId".into(), b.from_id.into());
                m.insert("timestamp".into(), self.timestamp_value(index));
                m
            }
            EntryKind::Compaction => {
                let b: CompactionMessageBody = self.body(index)?;
                let mut m = Map::new();
                m.insert("role".into(), "compactionSummary".into());
                m.insert("summary".into(), b.summary.into());
                m.insert("tokensBefore".into(), Value::Number(b.tokens_before));
                if let Some(s) = b.short_summary {
                    m.insert("shortSummary".into(), s.into());
                }
                if let Some(t) = b.tokens_after {
                    m.insert("tokensAfter".into(), Value::Number(t));
                }
                if let Some(method) = b.method {
                    m.insert("method".into(), method.into());
                }
                if let Some(w) = b.warning {
                    m.insert("warning".into(), w.into());
                }
                m.insert("timestamp".into(), self.timestamp_value(index));
                m
            }
            _ => return Ok(None),
        };
        Ok(Some(Cow::Owned(crate::support::json::js::stringify(
            &Value::Object(json),
        ))))
    }

    /// The typed message an entry carries (see [`Session::entry_message_json`]).
    pub fn entry_message(&self, index: usize) -> Result<Option<AgentMessage>> {
        if self.entries[index].kind == EntryKind::Message {
            return self.message(index).map(Some);
        }
        match self.entry_message_json(index)? {
            None => Ok(None),
            Some(json) => AgentMessage::parse(&json, None)
                .map(Some)
                .map_err(|e| self.body_error(index, &e.to_string())),
        }
    }

    /// The memoized token estimate of the message an entry carries (0 for entries without
    /// one or with an unreadable body): `estimate` runs once per entry and cache (`excluding`
    /// selects the cache of estimates without encrypted reasoning); edits of the entry
    /// invalidate it. The estimator itself lives in `crate::tokens` (`Session::entry_tokens`).
    pub(crate) fn memoized_entry_tokens(
        &self,
        index: usize,
        excluding: bool,
        estimate: impl FnOnce(&AgentMessage) -> u64,
    ) -> u64 {
        let cache = if excluding {
            &self.tokens_excluding
        } else {
            &self.tokens_full
        };
        {
            let c = cache.borrow();
            if let Some(&t) = c.get(index) {
                if t != UNKNOWN_TOKENS {
                    return u64::from(t);
                }
            }
        }
        let t = match self.entry_message(index) {
            Ok(Some(m)) => {
                // The body is parsed anyway: remember what history windows and pruning
                // need too.
                if self.entries[index].role == Some(crate::session::message::Role::Assistant) {
                    self.remember_file_calls(index, &m);
                }
                estimate(&m)
            }
            _ => 0,
        };
        let mut c = cache.borrow_mut();
        if c.len() < self.entries.len() {
            c.resize(self.entries.len(), UNKNOWN_TOKENS);
        }
        c[index] = t.min(u64::from(UNKNOWN_TOKENS - 1)) as u32;
        t
    }

    /// The usage of the last assistant on `path` that did not fail (`getLastAssistantUsage`,
    /// spec: compaction §3.2), with the index of its entry. Only assistant entries are parsed.
    pub fn last_assistant_usage(
        &self,
        path: &[usize],
    ) -> Option<(usize, crate::session::message::Usage)> {
        path.iter().rev().find_map(|&i| {
            if self.entries[i].role != Some(crate::session::message::Role::Assistant)
                || self.entries[i].kind != EntryKind::Message
            {
                return None;
            }
            if let Some(usage) = self.recorded_usage(i) {
                return usage.map(|u| (i, u));
            }
            match self.message(i) {
                Ok(AgentMessage::Assistant(a)) if !a.failed() => a.usage.map(|u| (i, u)),
                _ => None,
            }
        })
    }

    /// Calls `f(tool, path)` for every `read`/`write`/`edit` tool call with a string `path`
    /// that the entry's assistant message makes (spec: compaction §5.10 "Extraction"; calls
    /// hidden by `contextOmitted` excluded). Memoized per entry like the token estimates, so
    /// preparing a compaction does not re-read every assistant message.
    pub fn for_each_file_call(&self, index: usize, mut f: impl FnMut(&str, &str)) {
        if let Some(calls) = self.file_calls(index) {
            for c in calls.iter() {
                f(c.tool.as_str(), &c.path);
            }
        }
    }

    /// The file tool calls of an assistant entry (`None` for other entries), borrowed from
    /// its line: from the load pass's facts, else parsed once and memoized.
    pub fn file_call_facts(&self, index: usize) -> Option<Vec<FileCallFacts<'_>>> {
        if self.entries[index].role != Some(crate::session::message::Role::Assistant) {
            return None;
        }
        if let Some(calls) = self.recorded_file_calls(index) {
            return Some(calls);
        }
        let calls = self.file_calls(index)?;
        Some(
            calls
                .iter()
                .map(|c| FileCallFacts {
                    tool: c.tool,
                    path: Cow::Owned(c.path.to_string()),
                    id: Cow::Owned(c.id.to_string()),
                })
                .collect(),
        )
    }

    /// What pruning needs to know about a tool result entry without its content (spec:
    /// compaction §6.3–§6.6), borrowed from its line: from the load pass's facts, else (a
    /// line that is not UTF-8) parsed. `None` for entries that are not readable `toolResult`
    /// messages.
    pub fn result_facts(&self, index: usize) -> Option<ResultFacts<'_>> {
        if self.has_facts(index) {
            return self.recorded_result(index);
        }
        let e = &self.entries[index];
        if e.role != Some(crate::session::message::Role::ToolResult) || e.kind != EntryKind::Message
        {
            return None;
        }
        match self.message(index).ok()? {
            AgentMessage::ToolResult(r) => Some(ResultFacts {
                tool_call_id: Cow::Owned(r.tool_call_id),
                tool_name: Cow::Owned(r.tool_name),
                is_error: r.is_error,
                useless: r.useless,
                pruned: r.pruned_at.is_some(),
                context_omitted: crate::session::message::truthy(r.context_omitted.as_ref()),
            }),
            _ => None,
        }
    }

    /// The memoized file tool calls of an assistant entry (`None` for other entries), with
    /// their call ids: pruning pairs tool results with `read` calls by id (spec: compaction
    /// §6.1 protection, §6.3 supersede keys).
    pub(crate) fn file_calls(&self, index: usize) -> Option<FileCalls> {
        if self.entries[index].role != Some(crate::session::message::Role::Assistant) {
            return None;
        }
        if let Some(Some(c)) = self.file_calls.borrow().get(index) {
            return Some(std::rc::Rc::clone(c));
        }
        // From the load pass's facts, decoded once: a pass over a long branch then clones
        // what it finds here.
        if let Some(recorded) = self.recorded_file_calls(index) {
            let calls: FileCalls = recorded
                .into_iter()
                .map(|c| FileCall {
                    tool: c.tool,
                    path: c.path.into(),
                    id: c.id.into(),
                })
                .collect();
            self.memoize_file_calls(index, &calls);
            return Some(calls);
        }
        match self.message(index) {
            Ok(m) => self.remember_file_calls(index, &m),
            Err(_) => self.remember_file_calls(index, &AgentMessage::Other),
        }
    }

    fn remember_file_calls(&self, index: usize, m: &AgentMessage) -> Option<FileCalls> {
        let mut found: Vec<FileCall> = Vec::new();
        file_calls_of(m, |tool, path, id| {
            found.push(FileCall {
                tool,
                path: path.into(),
                id: id.into(),
            })
        });
        let calls: FileCalls = found.into();
        self.memoize_file_calls(index, &calls);
        Some(calls)
    }

    fn memoize_file_calls(&self, index: usize, calls: &FileCalls) {
        let mut cache = self.file_calls.borrow_mut();
        if cache.len() < self.entries.len() {
            cache.resize(self.entries.len(), None);
        }
        cache[index] = Some(std::rc::Rc::clone(calls));
    }

    /// The `toolCallId` of a tool result entry flagged `useless: true` that stays in the
    /// provider conversation (not `contextOmitted`), else `None` (spec: compaction §5.1
    /// "Useless pairs": such results and their calls are left out of the summarizer's
    /// transcript). From the recorded facts, so a plan can collect the useless ids of a long
    /// history without re-reading it.
    pub fn useless_tool_call(&self, index: usize) -> Option<Box<str>> {
        let f = self.result_facts(index)?;
        (f.useless && !f.context_omitted && !f.tool_call_id.is_empty())
            .then(|| f.tool_call_id.into())
    }

    /// The stored estimate of an entry, if known.
    pub(crate) fn entry_tokens_memo(&self, index: usize, excluding: bool) -> Option<u64> {
        let cache = if excluding {
            &self.tokens_excluding
        } else {
            &self.tokens_full
        };
        let t = *cache.borrow().get(index)?;
        (t != UNKNOWN_TOKENS).then_some(u64::from(t))
    }

    /// Stores the estimates of an entry (from its facts).
    pub(crate) fn set_tokens(&self, index: usize, full: u64, excluding: u64) {
        for (cache, t) in [
            (&self.tokens_full, full),
            (&self.tokens_excluding, excluding),
        ] {
            let mut c = cache.borrow_mut();
            if c.len() <= index {
                c.resize(self.entries.len().max(index + 1), UNKNOWN_TOKENS);
            }
            c[index] = clamp_tokens(t);
        }
    }

    /// Forgets the memoized estimates of an entry (after an edit).
    pub(crate) fn invalidate_tokens(&self, index: usize) {
        for cache in [&self.tokens_full, &self.tokens_excluding] {
            if let Some(t) = cache.borrow_mut().get_mut(index) {
                *t = UNKNOWN_TOKENS;
            }
        }
        if let Some(c) = self.file_calls.borrow_mut().get_mut(index) {
            *c = None;
        }
    }

    /// What building a context reads of a `message` entry's message (see
    /// [`MessageHead`](crate::session::message::MessageHead)); fails where [`Session::message`] fails.
    pub fn message_head(&self, index: usize) -> Result<crate::session::message::MessageHead> {
        if self.entries[index].kind == EntryKind::Message {
            if let Some(head) = self.recorded_head(index) {
                return head.map_err(|()| {
                    self.message(index).err().unwrap_or_else(|| {
                        self.body_error(
                            index,
                            "the message does not have the shape its role requires",
                        )
                    })
                });
            }
        }
        let json = self
            .message_json(index)
            .ok_or_else(|| self.body_error(index, "the entry has no message object"))?;
        crate::session::message::MessageHead::read(&json, self.entries[index].role)
            .map_err(|e| self.body_error(index, &e.to_string()))
    }

    /// [`Session::message_head`], kept per entry until its line changes: a context is built
    /// again on every request, mostly from the same messages.
    // One caller, the context build's loop over messages: wasm-opt leaves a function this size
    // out of line (its one-caller limit, `.ci/pkg.sh`), rustc inlines it.
    #[inline(always)]
    pub fn message_head_shared(&self, index: usize) -> Result<std::rc::Rc<MessageHead>> {
        let stamp = self.line_stamp(index);
        if let Some(Some((s, head))) = self.heads.borrow().get(index) {
            if *s == stamp {
                return Ok(head.clone());
            }
        }
        let head = std::rc::Rc::new(self.message_head(index)?);
        let mut heads = self.heads.borrow_mut();
        if heads.len() <= index {
            heads.resize(index + 1, None);
        }
        heads[index] = Some((stamp, head.clone()));
        Ok(head)
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
