//! Editing a session's lines in place: a rewritten line keeps the entry index, the entry's
//! facts and estimates in step, and moves the edit generation so that what was derived from
//! the old text goes (spec: compaction §1 "byte-faithful": every other byte of the line stays).

use crate::error::Result;
use crate::session::entry::EntryKind;
use crate::session::facts::{MessageFacts, PrunedLine, Span, KNOWN};
use crate::session::lines::{LineKind, LineText};
use crate::session::message::Role;
use crate::session::model::Session;
use crate::session::skim;
use crate::support::json::{edit, js};
use serde_json::Value;

impl Session {
    /// Replaces the text of an entry's line, keeping the index and the entry's facts in
    /// step (the new line is scanned like a loaded one). What was derived from the old text is
    /// stale now: the edit generation moves on.
    pub(crate) fn rewrite_line(&mut self, line: usize, text: String) {
        self.rewrite_known(line, text, None);
    }

    /// [`Session::rewrite_line`], with the span of the new line's message object and its facts
    /// when the caller knows them (a prune): the line is not scanned again.
    pub(crate) fn rewrite_known(
        &mut self,
        line: usize,
        text: String,
        known: Option<(std::ops::Range<usize>, MessageFacts)>,
    ) {
        let entry = match self.lines[line].kind {
            LineKind::Entry(i) => Some(i as usize),
            _ => None,
        };
        let state_kept = entry.is_some_and(|i| self.path_state_ignores(i));
        let from = self.generation;
        self.generation += 1;
        self.lines[line].edited = self.generation;
        self.journal.rewritten(self.generation, line);
        match (known, entry) {
            (Some((message, facts)), Some(i)) => {
                // What a scan of the new line would find (the tests check every such edit).
                #[cfg(debug_assertions)]
                {
                    let skim = skim::skim_line(text.as_bytes(), &mut Vec::new()).ok();
                    debug_assert_eq!(
                        skim.as_ref().and_then(|s| s.message.clone()),
                        Some(message.clone())
                    );
                    debug_assert_eq!(skim.and_then(|s| s.facts), Some(facts.clone()));
                }
                let l = &mut self.lines[line];
                l.message = Some((message.start as u32, message.end as u32));
                l.text = LineText::Owned(text.into());
                self.record_facts(i, Some(&facts));
            }
            _ => self.set_line(line, text),
        }
        if state_kept && entry.is_some_and(|i| self.path_state_ignores(i)) {
            self.keep_path_state(from);
        }
    }

    /// Sets the text of a line as [`Session::rewrite_line`] does, without moving the edit
    /// generation: for a line just added, which nothing has been derived from yet.
    pub(super) fn set_line(&mut self, line: usize, text: String) {
        let mut calls = std::mem::take(&mut self.facts.calls);
        let calls_from = calls.len();
        let skim = skim::skim_line(text.as_bytes(), &mut calls).ok();
        let message = skim
            .as_ref()
            .and_then(|s| s.message.clone())
            .map(|r| (r.start as u32, r.end as u32));
        let l = &mut self.lines[line];
        l.message = message;
        l.text = LineText::Owned(text.into());
        let LineKind::Entry(i) = l.kind else {
            calls.truncate(calls_from);
            self.facts.calls = calls;
            return;
        };
        let i = i as usize;
        let is_message = self.entries[i].kind == EntryKind::Message;
        let facts = skim
            .as_ref()
            .and_then(|s| s.facts.as_ref())
            .filter(|_| is_message);
        if facts.is_none() {
            calls.truncate(calls_from);
        }
        self.facts.calls = calls;
        if let Some(skim) = skim.as_ref().filter(|_| is_message) {
            let role = skim
                .string(self.line_bytes(line), &skim.role_value)
                .map_or(Role::Other, |r| Role::parse(&r));
            self.entries[i].role = Some(role);
        }
        self.record_facts(i, facts);
    }

    /// Records the facts of entry `i`'s new line (its tool calls already appended) and its
    /// estimates; what was memoized from the old line goes.
    fn record_facts(&mut self, i: usize, facts: Option<&MessageFacts>) {
        self.facts.set(i, facts);
        self.invalidate_tokens(i);
        if let Some(f) = facts {
            self.set_tokens(i, f.tokens, f.tokens_excluding);
        }
    }

    /// Replaces the lines of several entries at once (`(entry index, new line)`), each as
    /// [`Session::rewrite_line`] does: the bulk edit of a prune. The caller builds every new
    /// line before calling, so an edit that cannot be made leaves the session unchanged.
    pub(crate) fn rewrite_entries(&mut self, edits: Vec<(usize, String)>) {
        for (index, text) in edits {
            let line = self.entries[index].line as usize;
            self.rewrite_line(line, text);
        }
    }

    /// Applies a splice edit to an entry's line.
    pub(crate) fn edit_entry(
        &mut self,
        index: usize,
        f: impl FnOnce(
            &str,
        )
            -> std::result::Result<Option<String>, crate::support::json::scan::SyntaxError>,
    ) -> Result<()> {
        let line = self.entries[index].line as usize;
        let edited = f(&self.line_text(line)).map_err(|e| self.body_error(index, e.reason))?;
        match edited {
            Some(text) => {
                self.rewrite_line(line, text);
                Ok(())
            }
            None => Err(self.body_error(index, "the edited member is not an object")),
        }
    }

    /// Sets a member of an entry (a top-level field when `path` is empty, else inside the
    /// object at `path`, e.g. `["message"]`), keeping every other byte of the line.
    pub fn set_entry_field(
        &mut self,
        index: usize,
        path: &[&str],
        key: &str,
        value: &Value,
    ) -> Result<()> {
        let value = js::stringify(value);
        self.edit_entry(index, |t| edit::set_member(t, path, key, &value))
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
}
