//! Which compaction methods of `compaction.methodOrder` can run (spec: compaction §8.3, §8.6):
//! one rule shared by the [`ContextManager`](super::ContextManager)'s requests and the method
//! walk ([`Walk`](super::Walk)) that runs them, so both agree on what would run.

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
    /// `remote` failed recently: it waits out its cooldown (upstream #13310,
    /// [`REMOTE_COOLDOWN_MS`](super::REMOTE_COOLDOWN_MS)).
    pub remote_blocked: bool,
    /// The methods were named by the caller (a trigger's list, or an explicit strategy for
    /// `asked`): a manual compaction then runs `handoff` and `shake` too (§8.6 walks only
    /// `remote`, `snapcompact` and `soft` of `methodOrder`).
    pub listed: bool,
    /// The one method asked for by an explicit strategy (it runs even manually).
    pub asked: Option<CompactionMethod>,
    /// A host walks `methodOrder` itself (`session.compact()` without a trigger's list): it
    /// runs `handoff` and `shake` only when asked for by name, whatever the reason, as a manual
    /// compaction walks it (§8.6); a trigger's list names them.
    pub host_walk: bool,
    /// The host has a summarizer callback: `soft` and `handoff` need one.
    pub summarizer: bool,
    /// The live context in the provider's tokens (0 = unknown): a handoff request carries it
    /// and must fit the window it is sent to.
    pub live_tokens: u64,
    /// A turn is under way (a tool result or tool calls last): an automatic handoff waits
    /// for the turn's end ([`Session::turn_under_way`]).
    ///
    /// [`Session::turn_under_way`]: crate::session::Session::turn_under_way
    pub mid_turn: bool,
}

impl<'a> MethodContext<'a> {
    /// A context with no payload rejection, no extra remote route, no focus text, no
    /// cooldown, a summarizer, methods taken from `methodOrder` and an unknown live size.
    pub fn new(reason: CompactionReason, model: &'a ModelInfo) -> Self {
        MethodContext {
            reason,
            model,
            payload_rejection: false,
            remote_route: false,
            custom_instructions: false,
            remote_blocked: false,
            listed: false,
            asked: None,
            host_walk: false,
            summarizer: true,
            live_tokens: 0,
            mid_turn: false,
        }
    }
}

/// Why `method` cannot run (spec: compaction §8.3 `isCompactionMethodUsable`, §8.6 for manual
/// compactions), or `None` when it can:
/// - `remote` needs `remoteEnabled`, an endpoint (the setting or the host's route) and no
///   cooldown;
/// - `snapcompact` needs an image-reading model, not after a payload rejection, not with
///   focus text;
/// - `handoff` is unusable for an overflow and when the live context does not fit the window
///   (the request carries it); a manual compaction runs it only when asked for by name; an
///   automatic one waits while a turn is under way (tool calls or results last): the
///   reference defers a threshold handoff to after the turn ("deferred handoff", §8.3), so
///   a new session never starts in the middle of a tool loop;
/// - `shake` runs on automatic reasons (a manual shake is asked for by name);
/// - `soft` needs a summarizer;
/// - `window` has no engine: the reference knows no such method and passes it over.
pub fn why_unusable(
    method: CompactionMethod,
    s: &CompactionSettings,
    c: &MethodContext<'_>,
) -> Option<&'static str> {
    let manual = c.reason == CompactionReason::Manual;
    let named = c.listed || c.asked == Some(method);
    // Walked as a manual compaction walks methodOrder (§8.6).
    let by_hand = manual || c.host_walk;
    match method {
        CompactionMethod::Remote => {
            if s.remote_endpoint.is_none() && !c.remote_route {
                Some("no remote endpoint")
            } else if !s.remote_enabled {
                Some("compaction.remoteEnabled is false")
            } else if c.remote_blocked {
                Some("it failed recently")
            } else {
                None
            }
        }
        CompactionMethod::Snapcompact => {
            if !c.model.accepts_images {
                Some("snapcompact needs a model with image input")
            } else if c.payload_rejection {
                Some("a payload rejection rules out image frames")
            } else if c.custom_instructions {
                Some("focus instructions need an LLM summary")
            } else {
                None
            }
        }
        CompactionMethod::Handoff => {
            let w = c.model.context_window;
            if c.reason == CompactionReason::Overflow {
                Some("a handoff cannot recover an overflow")
            } else if w > 0 && c.live_tokens >= w {
                Some("the handoff request would not fit the context window")
            } else if c.mid_turn && !manual {
                Some("a handoff waits for the end of the turn")
            } else if by_hand && !named {
                Some("a handoff runs only when asked for (strategy 'handoff')")
            } else if !c.summarizer {
                Some("no summarizer")
            } else {
                None
            }
        }
        CompactionMethod::Shake => {
            (by_hand && !named).then_some("a shake runs only when asked for (strategy 'shake')")
        }
        CompactionMethod::Soft => (!c.summarizer).then_some("no summarizer"),
        CompactionMethod::Window => Some("'window' has no compaction engine"),
    }
}

/// The methods of `order` that can run, in order, each once ([`why_unusable`]). An overflow
/// ends with `soft` whenever some method is configured (issue 43): a request over the window
/// overflows again on every turn, so when the listed methods are spent or unusable the plain
/// summary recovers it. An empty order is compaction off.
pub fn eligible_methods(
    order: &[CompactionMethod],
    s: &CompactionSettings,
    c: &MethodContext<'_>,
) -> Vec<CompactionMethod> {
    let mut out: Vec<CompactionMethod> = Vec::new();
    for &m in order {
        if !out.contains(&m) && why_unusable(m, s, c).is_none() {
            out.push(m);
        }
    }
    let soft = CompactionMethod::Soft;
    if c.reason == CompactionReason::Overflow
        && !order.is_empty()
        && !out.contains(&soft)
        && why_unusable(soft, s, c).is_none()
    {
        out.push(soft);
    }
    out
}

/// Why an automatic walk did not run (spec: compaction §9.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// The strategy is `off`.
    Off,
    /// `enabled` is `false`.
    Disabled,
}

impl Skip {
    pub fn as_str(self) -> &'static str {
        match self {
            Skip::Off => "off",
            Skip::Disabled => "disabled",
        }
    }

    /// Why a walk for `reason` under `settings` does not run, if it does not: automatic
    /// compaction is off (strategy `off`, which wins, or `enabled: false`); a manual one is
    /// the user's explicit request and always runs (spec: compaction §8.6, §9.2).
    pub fn of(reason: CompactionReason, settings: &CompactionSettings) -> Option<Skip> {
        if reason == CompactionReason::Manual {
            None
        } else if settings.strategy == Strategy::Off {
            Some(Skip::Off)
        } else if !settings.enabled {
            Some(Skip::Disabled)
        } else {
            None
        }
    }
}

/// The methods of `methodOrder` that can run, in order ([`eligible_methods`]). Empty when
/// automatic compaction is off ([`Skip::of`]).
pub fn usable_methods(s: &CompactionSettings, c: &MethodContext<'_>) -> Vec<CompactionMethod> {
    if Skip::of(c.reason, s).is_some() {
        return Vec::new();
    }
    let order: Vec<CompactionMethod> = s
        .method_order
        .iter()
        .filter_map(|m| CompactionMethod::parse(m))
        .collect();
    eligible_methods(&order, s, c)
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

    /// The method an explicit strategy asks for first (`context-full` → `soft`); `None` for
    /// `off`.
    pub fn of_strategy(s: Strategy) -> Option<CompactionMethod> {
        match s {
            Strategy::ContextFull => Some(CompactionMethod::Soft),
            Strategy::Snapcompact => Some(CompactionMethod::Snapcompact),
            Strategy::Handoff => Some(CompactionMethod::Handoff),
            Strategy::Shake => Some(CompactionMethod::Shake),
            Strategy::Off => None,
        }
    }
}

impl CompactionMethod {
    /// The method named `s` (`methodOrder`'s spelling); `None` for an unknown name.
    pub fn named(s: &str) -> Option<CompactionMethod> {
        CompactionMethod::parse(s)
    }
}
