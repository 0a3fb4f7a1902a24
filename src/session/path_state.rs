//! [`Session::path_state`]: the state of a path (`state.rs`), kept for the last leaf asked
//! about and carried forward entry by entry: after an append the state of the new leaf is its
//! parent's plus one entry, so an agent turn does not walk the whole history.

use crate::session::entry::{
    EntryKind, ModeChangeBody, ModelChangeBody, ServiceTierBody, ThinkingLevelBody,
    TtsrInjectionBody,
};
use crate::session::message::Role;
use crate::session::model::Session;
use crate::session::state::PathState;

impl PathState {
    /// Folds the next entry of the path into the state. Messages, the most of a path, take
    /// the short way; a settings change is read by [`PathState::fold_setting`], out of line
    /// (issue 42: V8 recompiles this hot step with its optimizing tier, and pays for every
    /// byte of it).
    fn fold(&mut self, session: &Session, i: usize) {
        let pos = self.len;
        self.len += 1;
        match session.entries()[i].kind() {
            EntryKind::Message => {
                if !self.explicit_default_model
                    && session.entries()[i].role() == Some(Role::Assistant)
                {
                    if let Some((p, m)) = session.assistant_model(i) {
                        self.set_model("default", format!("{p}/{m}"));
                    }
                }
            }
            EntryKind::Compaction => self.latest_compaction = Some(pos),
            EntryKind::ResetBoundary => self.latest_reset = Some(pos),
            kind => self.fold_setting(session, i, kind),
        }
    }

    /// [`PathState::fold`] of an entry that is neither a message, a compaction nor a reset
    /// boundary.
    #[inline(never)]
    fn fold_setting(&mut self, session: &Session, i: usize, kind: EntryKind) {
        match kind {
            EntryKind::ThinkingLevelChange => {
                if let Ok(b) = session.body::<ThinkingLevelBody>(i) {
                    self.thinking_level = b.thinking_level.unwrap_or_else(|| "off".into());
                    self.configured_thinking_level = b.configured;
                }
            }
            EntryKind::ModelChange => {
                if let Ok(ModelChangeBody {
                    model: Some(model),
                    role,
                }) = session.body::<ModelChangeBody>(i)
                {
                    let role = role.unwrap_or_else(|| "default".into());
                    if role == "default" {
                        self.explicit_default_model = true;
                    }
                    self.set_model(&role, model);
                }
            }
            EntryKind::TtsrInjection => {
                if let Ok(b) = session.body::<TtsrInjectionBody>(i) {
                    for r in b.injected_rules {
                        if !self.injected_ttsr_rules.contains(&r) {
                            self.injected_ttsr_rules.push(r);
                        }
                    }
                }
            }
            EntryKind::ModeChange => {
                if let Ok(b) = session.body::<ModeChangeBody>(i) {
                    self.mode = b.mode.unwrap_or_else(|| "none".into());
                    self.mode_data = b.data;
                }
            }
            EntryKind::ServiceTierChange => {
                if let Ok(b) = session.body::<ServiceTierBody>(i) {
                    self.service_tier = b.service_tier.filter(|t| !t.is_null());
                }
            }
            _ => {}
        }
    }
}

/// How many entries appended below the kept leaf [`Session::path_state`] folds onto its
/// state before it walks the path again: a turn appends a few (a user message, tool calls and
/// results, the assistant), and a host may ask only once per turn.
const APPENDS_FOLDED: usize = 64;

impl Session {
    /// The state of the path from the root to `leaf` (spec: compaction §2.2). Kept for the
    /// last leaf asked about: the same leaf, or an entry up to [`APPENDS_FOLDED`] steps below
    /// it (appends), costs the entries in between; another leaf walks its path once. Edits of
    /// any line start over, except those [`Session::rewrite_line`] knows change no state.
    pub fn path_state(&self, leaf: usize) -> PathState {
        {
            let mut cache = self.path_state.borrow_mut();
            if let Some((at, generation, state)) = cache.as_mut() {
                if *generation == self.generation {
                    if let Some(below) = self.appended_below(*at, leaf) {
                        for &i in below.iter().rev() {
                            state.fold(self, i);
                        }
                        *at = leaf;
                        return state.clone();
                    }
                }
            }
        }
        let mut state = PathState::default();
        for &i in self.path_shared(leaf).iter() {
            state.fold(self, i);
        }
        *self.path_state.borrow_mut() = Some((leaf, self.generation, state.clone()));
        state
    }

    /// The entries from `leaf` up to (not including) its ancestor `at`, leaf first, when `at`
    /// is at most [`APPENDS_FOLDED`] steps above (empty when `leaf == at`).
    fn appended_below(&self, at: usize, leaf: usize) -> Option<Vec<usize>> {
        let mut below = Vec::new();
        let mut i = leaf;
        while i != at {
            if below.len() == APPENDS_FOLDED {
                return None;
            }
            below.push(i);
            i = self.entries[i].parent? as usize;
        }
        Some(below)
    }

    /// Called by [`Session::rewrite_line`] before and after it changes entry `index`: the
    /// kept path state stays valid through the rewrite (its generation moves along) when the
    /// entry is a message of a role other than assistant both times, which [`PathState::fold`]
    /// does not read. A prune rewrites tool results this way on every turn.
    pub(crate) fn path_state_ignores(&self, index: usize) -> bool {
        let e = &self.entries[index];
        e.kind == EntryKind::Message && e.role.is_some_and(|r| r != Role::Assistant)
    }

    /// Moves the kept path state to the current generation when it was of `from`.
    pub(crate) fn keep_path_state(&self, from: u64) {
        if let Some((_, generation, _)) = self.path_state.borrow_mut().as_mut() {
            if *generation == from {
                *generation = self.generation;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::LoadOptions;
    use serde_json::json;

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#;

    /// The state a freshly loaded copy of the session computes for its leaf.
    fn walked(s: &Session) -> PathState {
        let copy = Session::load(s.to_bytes(), LoadOptions::default()).unwrap();
        copy.path_state(copy.leaf().unwrap())
    }

    fn kept_generation(s: &Session) -> Option<u64> {
        s.path_state.borrow().as_ref().map(|(_, g, _)| *g)
    }

    #[test]
    fn entries_appended_below_the_kept_leaf_fold_onto_its_state() {
        let mut s = Session::load(HEADER.as_bytes().to_vec(), LoadOptions::default()).unwrap();
        s.append_message(json!({"role": "user", "content": "go"}), 0)
            .unwrap();
        let first = s.path_state(s.leaf().unwrap());
        assert_eq!(first.len, 1);
        // Fewer than APPENDS_FOLDED, then more than it, between two questions.
        for burst in [3, APPENDS_FOLDED + 5] {
            for k in 0..burst {
                let mut fields = serde_json::Map::new();
                match k % 3 {
                    0 => fields.insert("thinkingLevel".into(), json!(format!("t{k}"))),
                    1 => fields.insert("model".into(), json!(format!("p/m{k}"))),
                    _ => fields.insert("mode".into(), json!(format!("m{k}"))),
                };
                let kind = ["thinking_level_change", "model_change", "mode_change"][k % 3];
                s.append(kind, fields, 0).unwrap();
            }
            let state = s.path_state(s.leaf().unwrap());
            assert_eq!(state, walked(&s), "after {burst} appends");
        }
    }

    #[test]
    fn a_rewrite_keeps_the_state_unless_it_touches_what_the_state_reads() {
        let mut s = Session::load(HEADER.as_bytes().to_vec(), LoadOptions::default()).unwrap();
        let user = s
            .append_message(json!({"role": "user", "content": "go"}), 0)
            .unwrap();
        let assistant = s
            .append_message(
                json!({"role": "assistant", "content": [], "provider": "p", "model": "m",
                       "stopReason": "stop"}),
                0,
            )
            .unwrap();
        let leaf = s.leaf().unwrap();
        s.path_state(leaf);
        let user = s.require(&user).unwrap();
        s.set_entry_field(user, &["message"], "content", &json!("went"))
            .unwrap();
        assert_eq!(kept_generation(&s), Some(s.generation()), "a user message");
        assert_eq!(s.path_state(leaf), walked(&s));
        let assistant = s.require(&assistant).unwrap();
        s.set_entry_field(assistant, &["message"], "model", &json!("n"))
            .unwrap();
        assert_ne!(kept_generation(&s), Some(s.generation()), "an assistant");
        let state = s.path_state(leaf);
        assert_eq!(state.models, vec![("default".into(), "p/n".into())]);
        assert_eq!(state, walked(&s));
    }
}
