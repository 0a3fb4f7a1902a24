//! The state a path sets (spec: compaction §2.2: thinking level, models, injected rules, mode,
//! service tier) and where its latest compaction and reset boundary are. `path_state.rs`
//! folds a path into it and keeps it for the last leaf asked about.

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
    pub(super) explicit_default_model: bool,
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
    pub(super) fn set_model(&mut self, role: &str, model: String) {
        match self.models.iter_mut().find(|(r, _)| r == role) {
            Some(slot) => slot.1 = model,
            None => self.models.push((role.to_string(), model)),
        }
    }
}
