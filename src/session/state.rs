//! The state a path sets (spec: compaction §2.2: thinking level, models, injected rules, mode,
//! service tier) and where its latest compaction and reset boundary are, kept for the last
//! leaf asked about and carried forward entry by entry: after an append the state of the new
//! leaf is its parent's plus one entry, so an agent turn does not walk the whole history.

use crate::session::message::Role;
use crate::session::{
    EntryKind, ModeChangeBody, ModelChangeBody, ServiceTierBody, Session, ThinkingLevelBody,
    TtsrInjectionBody,
};
use serde_json::Value;

/// What the entries of a path set, in one pass over it (spec: compaction §2.2).
#[derive(Debug, Clone, PartialEq)]
pub struct PathState {
    /// `"off"` unless a `thinking_level_change` says otherwise.
    pub thinking_level: String,
    pub configured_thinking_level: Option<String>,
    /// Role → `"provider/modelId"`, in the order roles were first seen.
    pub models: Vec<(String, String)>,
    pub injected_ttsr_rules: Vec<String>,
    pub service_tier: Option<Value>,
    /// `"none"` unless a `mode_change` says otherwise.
    pub mode: String,
    pub mode_data: Option<Value>,
    /// Position on the path of the latest `compaction` and `reset_boundary`.
    pub latest_compaction: Option<usize>,
    pub latest_reset: Option<usize>,
    /// Entries folded so far (the path's length).
    pub len: usize,
    /// A `model_change` for the default role was seen: assistants no longer set it ([N],
    /// issue #849).
    explicit_default_model: bool,
}

impl Default for PathState {
    fn default() -> Self {
        PathState {
            thinking_level: "off".into(),
            configured_thinking_level: None,
            models: Vec::new(),
            injected_ttsr_rules: Vec::new(),
            service_tier: None,
            mode: "none".into(),
            mode_data: None,
            latest_compaction: None,
            latest_reset: None,
            len: 0,
            explicit_default_model: false,
        }
    }
}

impl PathState {
    fn set_model(&mut self, role: &str, model: String) {
        match self.models.iter_mut().find(|(r, _)| r == role) {
            Some(slot) => slot.1 = model,
            None => self.models.push((role.to_string(), model)),
        }
    }

    /// Folds the next entry of the path into the state.
    fn fold(&mut self, session: &Session, i: usize) {
        let pos = self.len;
        self.len += 1;
        match session.entries()[i].kind() {
            EntryKind::Compaction => self.latest_compaction = Some(pos),
            EntryKind::ResetBoundary => self.latest_reset = Some(pos),
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
            EntryKind::Message
                if !self.explicit_default_model
                    && session.entries()[i].role() == Some(Role::Assistant) =>
            {
                if let Some((p, m)) = session.assistant_model(i) {
                    self.set_model("default", format!("{p}/{m}"));
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

impl Session {
    /// The state of the path from the root to `leaf` (spec: compaction §2.2). Kept for the
    /// last leaf asked about: the same leaf, or a child of it (an append), costs one entry;
    /// another leaf walks its path once. Edits of any line start over.
    pub fn path_state(&self, leaf: usize) -> PathState {
        {
            let mut cache = self.path_state.borrow_mut();
            if let Some((at, generation, state)) = cache.as_mut() {
                if *generation == self.generation {
                    if *at == leaf {
                        return state.clone();
                    }
                    if self.entries[leaf].parent == Some(*at as u32) {
                        state.fold(self, leaf);
                        *at = leaf;
                        return state.clone();
                    }
                }
            }
        }
        let mut state = PathState::default();
        for i in self.path_to(leaf) {
            state.fold(self, i);
        }
        *self.path_state.borrow_mut() = Some((leaf, self.generation, state.clone()));
        state
    }
}
