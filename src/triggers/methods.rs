//! Which compaction methods of `compaction.methodOrder` can run (spec: compaction §8.3, §8.6):
//! one rule shared by the [`ContextManager`](super::ContextManager)'s requests and the host's
//! own method walk (`compactionMethods` in JS), so both agree on what would run.

use super::{CompactionMethod, CompactionReason, ModelInfo};
use crate::settings::{CompactionSettings, Strategy};

/// What decides whether a method can run besides the settings.
#[derive(Debug, Clone, Copy)]
pub struct MethodContext<'a> {
    pub reason: CompactionReason,
    /// The model whose context is compacted (snapcompact needs one that reads images).
    pub model: &'a ModelInfo,
    /// Recovery from a payload (bytes or media) rejection: snapcompact, which adds image
    /// frames, cannot help (spec §8.2 [N] step 3).
    pub payload_rejection: bool,
    /// The host has a remote route besides `compaction.remoteEndpoint` (an endpoint passed to
    /// `compact()`, or a provider-native lane).
    pub remote_route: bool,
    /// Manual compaction with focus text: it needs an LLM summary, so no snapcompact (§8.6).
    pub custom_instructions: bool,
}

impl<'a> MethodContext<'a> {
    /// A context with no payload rejection, no extra remote route and no focus text.
    pub fn new(reason: CompactionReason, model: &'a ModelInfo) -> Self {
        MethodContext {
            reason,
            model,
            payload_rejection: false,
            remote_route: false,
            custom_instructions: false,
        }
    }
}

/// The methods of `methodOrder` that can run, in order (spec: compaction §8.3
/// `isCompactionMethodUsable`, §8.6 for manual compactions):
/// - `remote` needs `remoteEnabled` and an endpoint (the setting or the host's route);
/// - `snapcompact` needs an image-reading model, not after a payload rejection, not with
///   focus text;
/// - `handoff` is unusable for an overflow, and manual compactions walk only `remote`,
///   `snapcompact` and `soft` (§8.6);
/// - `shake` runs on automatic reasons (a manual shake is asked for by name);
/// - `soft` and `window` always run (both as `context-full`).
///
/// Empty when compaction is disabled or the strategy is `off` (automatic reasons only: a
/// manual compaction is the user's explicit request, §8.6).
pub fn usable_methods(s: &CompactionSettings, c: &MethodContext<'_>) -> Vec<CompactionMethod> {
    let manual = c.reason == CompactionReason::Manual;
    if !manual && (!s.enabled || s.strategy == Strategy::Off) {
        return Vec::new();
    }
    s.method_order
        .iter()
        .filter_map(|m| CompactionMethod::parse(m))
        .filter(|m| match m {
            CompactionMethod::Remote => {
                s.remote_enabled && (s.remote_endpoint.is_some() || c.remote_route)
            }
            CompactionMethod::Snapcompact => {
                c.model.accepts_images && !c.payload_rejection && !c.custom_instructions
            }
            CompactionMethod::Handoff => !manual && c.reason != CompactionReason::Overflow,
            CompactionMethod::Shake => !manual,
            CompactionMethod::Window => !manual,
            CompactionMethod::Soft => true,
        })
        .collect()
}

impl CompactionMethod {
    /// The engine strategy the method runs as (spec: compaction §8.3: `remote`/`soft` →
    /// context-full, with the remote lane for `remote` only).
    pub fn strategy(self) -> Strategy {
        match self {
            CompactionMethod::Snapcompact => Strategy::Snapcompact,
            CompactionMethod::Handoff => Strategy::Handoff,
            CompactionMethod::Shake => Strategy::Shake,
            CompactionMethod::Remote | CompactionMethod::Soft | CompactionMethod::Window => {
                Strategy::ContextFull
            }
        }
    }
}
