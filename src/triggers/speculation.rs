//! Background (speculative) compaction (spec: compaction §13 "Async/speculative compaction",
//! §8.2 [N] step 10, §9.2 `asyncEnabled`): the band below the threshold where the host starts
//! preparing a compaction off the critical path, the grace band above it where the blocking
//! pass waits for that preparation, and what the host does with it at each step.
//!
//! The rules are here; the host only starts the summarizer calls of a plan, reports when they
//! are all answered ([`Speculation::ready`]) or failed, and commits the prepared plan when a
//! step says [`SpeculationStep::Commit`]. Whether the prepared plan still fits the session is
//! the plan's own check ([`crate::compaction::plan::CompactionPlan::fit`] and the commit's
//! size check): a result that no longer fits is stale and never committed.

use super::decisions::CompactionReason;

pub use crate::tokens::{
    speculation_lead_tokens as lead_tokens, SPECULATION_LEAD_MAX_TOKENS,
    SPECULATION_LEAD_MIN_TOKENS,
};

/// The growth since the start of a prepared result past which a fresh one is prepared:
/// `max(keepRecentTokens, 8 192)` (the kept tail of the prepared one has grown by that much).
pub fn refresh_tokens(keep_recent_tokens: u64) -> u64 {
    keep_recent_tokens.max(SPECULATION_LEAD_MIN_TOKENS)
}

/// The speculation band of one threshold and window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Band {
    pub threshold: u64,
    pub lead: u64,
    /// The grace band's end: `min(threshold + lead, window − 8 192)`. Below it, a threshold
    /// compaction waits for a preparation in flight.
    pub grace: u64,
}

impl Band {
    /// The band of `threshold` in a window of `window` tokens.
    pub fn new(threshold: u64, window: u64) -> Band {
        let lead = lead_tokens(threshold);
        Band {
            threshold,
            lead,
            grace: threshold
                .saturating_add(lead)
                .min(window.saturating_sub(SPECULATION_LEAD_MIN_TOKENS)),
        }
    }

    /// In `[threshold − lead, threshold)`: the preparation starts.
    pub fn starts(&self, tokens: u64) -> bool {
        tokens < self.threshold && self.threshold - tokens <= self.lead
    }

    /// Below the end of the grace band.
    pub fn in_grace(&self, tokens: u64) -> bool {
        tokens < self.grace
    }
}

/// What the host does with its background compaction at a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SpeculationStep {
    /// Nothing.
    #[default]
    None,
    /// Plan a compaction and answer its requests in the background.
    Start,
    /// Discard the prepared result and start again (the context grew past it).
    Refresh,
    /// The threshold compaction is deferred: the preparation in flight goes on.
    Wait,
    /// Commit the prepared result instead of running the decision's compaction; when the
    /// plan's check says it is stale, drop it and run the compaction inline.
    Commit,
    /// Cancel and discard the background compaction (in flight or prepared).
    Drop,
}

impl SpeculationStep {
    /// The step's string form.
    pub fn as_str(self) -> &'static str {
        match self {
            SpeculationStep::None => "none",
            SpeculationStep::Start => "start",
            SpeculationStep::Refresh => "refresh",
            SpeculationStep::Wait => "wait",
            SpeculationStep::Commit => "commit",
            SpeculationStep::Drop => "drop",
        }
    }
}

/// The background compaction of a session, as the host reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Speculation {
    #[default]
    Idle,
    /// Started at `at` context tokens; requests in flight.
    Running { at: u64 },
    /// Every request answered: the result waits for its commit.
    Armed { at: u64 },
}

impl Speculation {
    /// The host's preparation answered every request.
    pub fn ready(self) -> Speculation {
        match self {
            Speculation::Running { at } => Speculation::Armed { at },
            other => other,
        }
    }

    /// The state's string form: `idle`, `running` or `armed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Speculation::Idle => "idle",
            Speculation::Running { .. } => "running",
            Speculation::Armed { .. } => "armed",
        }
    }
}

/// The facts of one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpeculationInput {
    /// The live context (the trigger of §8.2 [N] step 9).
    pub tokens: u64,
    /// The model's window (0: unknown, no speculation).
    pub window: u64,
    pub threshold: u64,
    pub keep_recent_tokens: u64,
    /// `asyncEnabled`, the host allows it (no `session_before_compact` handler, a
    /// summarizer), and the compaction the threshold would run can be prepared.
    pub enabled: bool,
    /// The reason of the compaction the step's decision asks for, if any.
    pub compact: Option<CompactionReason>,
    /// The decision asks for a promotion (the compaction is not decided yet).
    pub promote: bool,
}

/// The step and the next state (spec: compaction §13, §8.2 [N] step 10). `defer`: the
/// decision's threshold compaction does not run now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decided {
    pub step: SpeculationStep,
    pub next: Speculation,
    pub defer: bool,
}

/// Decides the step for `state` and `input`.
pub fn decide(state: Speculation, input: &SpeculationInput) -> Decided {
    let keep = |step| Decided {
        step,
        next: state,
        defer: false,
    };
    let to = |step, next, defer| Decided { step, next, defer };
    let live = state != Speculation::Idle;
    if !input.enabled || input.window == 0 {
        return if live {
            to(SpeculationStep::Drop, Speculation::Idle, false)
        } else {
            keep(SpeculationStep::None)
        };
    }
    if input.promote {
        return keep(SpeculationStep::None);
    }
    let band = Band::new(input.threshold, input.window);
    let t = input.tokens;
    match (input.compact, state) {
        // An armed result is committed instead of summarizing (§8.3), whatever the reason.
        (Some(_), Speculation::Armed { .. }) => {
            to(SpeculationStep::Commit, Speculation::Idle, false)
        }
        // The grace band: the blocking pass defers to the preparation in flight (§8.2 [N]
        // step 10 (a)), or to one started now.
        (Some(CompactionReason::Threshold), Speculation::Running { .. }) if band.in_grace(t) => {
            to(SpeculationStep::Wait, state, true)
        }
        (Some(CompactionReason::Threshold), Speculation::Idle) if band.in_grace(t) => {
            to(SpeculationStep::Start, Speculation::Running { at: t }, true)
        }
        // Past the grace band, or another reason: the compaction runs inline now.
        (Some(_), Speculation::Running { .. }) => {
            to(SpeculationStep::Drop, Speculation::Idle, false)
        }
        (Some(_), Speculation::Idle) => keep(SpeculationStep::None),
        (None, _) if !band.starts(t) => keep(SpeculationStep::None),
        (None, Speculation::Idle) => to(
            SpeculationStep::Start,
            Speculation::Running { at: t },
            false,
        ),
        // One at a time.
        (None, Speculation::Running { .. }) => keep(SpeculationStep::None),
        (None, Speculation::Armed { at }) => {
            if t.saturating_sub(at) > refresh_tokens(input.keep_recent_tokens) {
                to(
                    SpeculationStep::Refresh,
                    Speculation::Running { at: t },
                    false,
                )
            } else {
                keep(SpeculationStep::None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn input(tokens: u64, compact: Option<CompactionReason>) -> SpeculationInput {
        SpeculationInput {
            tokens,
            window: 200_000,
            threshold: 160_000,
            keep_recent_tokens: 20_000,
            enabled: true,
            compact,
            promote: false,
        }
    }

    #[test]
    fn lead_is_an_eighth_of_the_threshold_within_its_bounds() {
        assert_eq!(lead_tokens(0), 8_192);
        assert_eq!(lead_tokens(65_536), 8_192);
        assert_eq!(lead_tokens(100_000), 12_500);
        assert_eq!(lead_tokens(100_007), 12_500, "floored");
        assert_eq!(lead_tokens(256_000), 32_000);
        assert_eq!(lead_tokens(1_000_000), 32_000);
        assert_eq!(refresh_tokens(20_000), 20_000);
        assert_eq!(refresh_tokens(1_000), 8_192);
    }

    #[test]
    fn the_grace_band_keeps_eight_thousand_tokens_below_the_window() {
        let b = Band::new(160_000, 200_000);
        assert_eq!((b.lead, b.grace), (20_000, 180_000));
        let b = Band::new(190_000, 200_000);
        assert_eq!((b.lead, b.grace), (23_750, 191_808));
        assert!(b.starts(166_250) && !b.starts(166_249) && !b.starts(190_000));
    }

    #[test]
    fn starts_in_the_lead_band_once_and_refreshes_on_growth() {
        let d = decide(Speculation::Idle, &input(139_999, None));
        assert_eq!(d.step, SpeculationStep::None);
        let d = decide(Speculation::Idle, &input(140_000, None));
        assert_eq!(
            (d.step, d.next),
            (SpeculationStep::Start, Speculation::Running { at: 140_000 })
        );
        let d = decide(d.next, &input(150_000, None));
        assert_eq!(d.step, SpeculationStep::None, "one at a time");
        let armed = d.next.ready();
        assert_eq!(armed, Speculation::Armed { at: 140_000 });
        assert_eq!(
            decide(armed, &input(160_000, None)).step,
            SpeculationStep::None
        );
        let d = decide(Speculation::Armed { at: 135_000 }, &input(155_000, None));
        assert_eq!(
            d.step,
            SpeculationStep::None,
            "growth of exactly the budget"
        );
        let armed = Speculation::Armed { at: 130_000 };
        let d = decide(armed, &input(150_001, None));
        assert_eq!(
            (d.step, d.next),
            (
                SpeculationStep::Refresh,
                Speculation::Running { at: 150_001 }
            )
        );
    }

    #[test]
    fn the_threshold_waits_in_the_grace_band_and_commits_what_is_armed() {
        let th = Some(CompactionReason::Threshold);
        let running = Speculation::Running { at: 145_000 };
        let d = decide(running, &input(170_000, th));
        assert_eq!((d.step, d.defer), (SpeculationStep::Wait, true));
        assert_eq!(d.next, running);
        let d = decide(running, &input(180_000, th));
        assert_eq!((d.step, d.next), (SpeculationStep::Drop, Speculation::Idle));
        let d = decide(Speculation::Idle, &input(170_000, th));
        assert_eq!((d.step, d.defer), (SpeculationStep::Start, true));
        let d = decide(Speculation::Idle, &input(185_000, th));
        assert_eq!(d.step, SpeculationStep::None);
        let armed = Speculation::Armed { at: 145_000 };
        for reason in [th, Some(CompactionReason::Overflow)] {
            let d = decide(armed, &input(195_000, reason));
            assert_eq!(
                (d.step, d.next),
                (SpeculationStep::Commit, Speculation::Idle)
            );
        }
        let d = decide(running, &input(150_000, Some(CompactionReason::Overflow)));
        assert_eq!(d.step, SpeculationStep::Drop);
    }

    #[test]
    fn disabled_drops_what_is_live_and_starts_nothing() {
        let off = SpeculationInput {
            enabled: false,
            ..input(150_000, None)
        };
        assert_eq!(decide(Speculation::Idle, &off).step, SpeculationStep::None);
        let d = decide(Speculation::Armed { at: 1 }, &off);
        assert_eq!((d.step, d.next), (SpeculationStep::Drop, Speculation::Idle));
        let unknown = SpeculationInput {
            window: 0,
            ..input(150_000, None)
        };
        assert_eq!(
            decide(Speculation::Idle, &unknown).step,
            SpeculationStep::None
        );
    }

    proptest! {
        /// The step never contradicts the band: a start only in the lead band or (deferring
        /// a threshold compaction) the grace band; a deferral only below the grace band's
        /// end; a commit only of an armed result; nothing live after a drop or a commit.
        #[test]
        fn steps_follow_the_band(
            threshold in 1u64..2_000_000,
            extra in 0u64..200_000,
            tokens in 0u64..2_400_000,
            keep in 0u64..100_000,
            at in 0u64..2_400_000,
            state in 0u8..3,
            compact in 0u8..4,
            enabled: bool,
        ) {
            let window = threshold + extra;
            let state = match state {
                0 => Speculation::Idle,
                1 => Speculation::Running { at },
                _ => Speculation::Armed { at },
            };
            let compact = match compact {
                0 => None,
                1 => Some(CompactionReason::Threshold),
                2 => Some(CompactionReason::Overflow),
                _ => Some(CompactionReason::Idle),
            };
            let i = SpeculationInput { tokens, window, threshold, keep_recent_tokens: keep, enabled, compact, promote: false };
            let d = decide(state, &i);
            let band = Band::new(threshold, window);
            prop_assert!(band.lead >= SPECULATION_LEAD_MIN_TOKENS && band.lead <= SPECULATION_LEAD_MAX_TOKENS);
            match d.step {
                SpeculationStep::Start | SpeculationStep::Refresh => {
                    prop_assert!(enabled);
                    prop_assert_eq!(d.next, Speculation::Running { at: tokens });
                    if compact.is_some() {
                        prop_assert!(d.defer && band.in_grace(tokens) && state == Speculation::Idle);
                    } else {
                        prop_assert!(band.starts(tokens));
                    }
                }
                SpeculationStep::Wait => {
                    prop_assert!(band.in_grace(tokens) && d.defer);
                    let running = matches!(state, Speculation::Running { .. });
                    prop_assert!(running);
                }
                SpeculationStep::Commit => {
                    let armed = matches!(state, Speculation::Armed { .. });
                    prop_assert!(armed && compact.is_some());
                    prop_assert_eq!(d.next, Speculation::Idle);
                }
                SpeculationStep::Drop => {
                    prop_assert!(state != Speculation::Idle);
                    prop_assert_eq!(d.next, Speculation::Idle);
                }
                SpeculationStep::None => prop_assert_eq!(d.next, state),
            }
            prop_assert!(!d.defer || compact == Some(CompactionReason::Threshold));
        }
    }
}
