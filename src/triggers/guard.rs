//! The progress guard (spec: compaction §8.5): after a compaction, is the live context small
//! enough for the agent to go on? One rule, read at two moments of one compaction: the method
//! walk ([`Walk`](super::Walk)) asks it right after a commit, to decide whether the dead-end
//! rescue shake should run (§8.3); the [`ContextManager`](super::ContextManager) asks it once
//! the walk is over, to decide whether to continue, retry, or pause automatic maintenance.
//!
//! The limit (as the reference 18.2.3 tests it):
//! - a pass that retries the failed request (an overflow, a length stop) only needs the retried
//!   request to fit: the window minus the budget reserve;
//! - any other automatic pass must land in the recovery band, `floor(0.8 · threshold)`, so the
//!   next turn cannot trip the threshold again;
//! - manual and idle passes are not guarded, and neither is an unknown window (0).

use super::CompactionReason;
use crate::settings::CompactionSettings;
use crate::tokens::{budget_reserve_tokens, recovery_band_tokens, threshold_tokens};

/// What the guard of one compaction knows (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgressGuard {
    pub reason: CompactionReason,
    /// The pass retries the failed request afterwards.
    pub will_retry: bool,
    /// The reading model's window (0 = unknown).
    pub context_window: u64,
    /// The model's compaction threshold (its `modelThresholds` rule applied).
    pub threshold_tokens: u64,
    /// The budget reserve of the window (`tokens::budget_reserve_tokens`).
    pub reserve_tokens: u64,
}

impl ProgressGuard {
    /// The guard of a compaction for `reason` in a `window` under `settings` (the settings'
    /// own threshold unless `threshold` gives the model's).
    pub fn new(
        reason: CompactionReason,
        will_retry: bool,
        window: u64,
        threshold: Option<u64>,
        settings: &CompactionSettings,
    ) -> ProgressGuard {
        ProgressGuard {
            reason,
            will_retry,
            context_window: window,
            threshold_tokens: threshold.unwrap_or_else(|| threshold_tokens(window, settings)),
            reserve_tokens: budget_reserve_tokens(window, settings),
        }
    }

    /// `floor(0.8 · threshold)`: where an automatic pass must land (and where the automatic
    /// `shake` method's hand-over test draws its line, whatever the reason).
    pub fn recovery_band(&self) -> u64 {
        recovery_band_tokens(self.threshold_tokens)
    }

    /// Whether the retried request is what must fit (overflow and length-stop recovery).
    pub fn retries(&self) -> bool {
        self.reason == CompactionReason::Overflow || self.will_retry
    }

    /// The most live context (provider tokens, request overhead included) the agent may go on
    /// from; `None` when the pass is not guarded.
    pub fn limit(&self) -> Option<u64> {
        let w = self.context_window;
        if w == 0
            || matches!(
                self.reason,
                CompactionReason::Manual | CompactionReason::Idle
            )
        {
            return None;
        }
        Some(if self.retries() {
            w.saturating_sub(self.reserve_tokens)
        } else {
            self.recovery_band()
        })
    }

    /// Whether `residual` tokens leave the agent room to go on.
    pub fn has_headroom(&self, residual: u64) -> bool {
        self.limit().is_none_or(|limit| residual <= limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_the_fit_for_a_retry_and_the_band_otherwise() {
        let s = CompactionSettings::default();
        let w = 200_000;
        let fit = w - budget_reserve_tokens(w, &s);
        let band = recovery_band_tokens(threshold_tokens(w, &s));
        let g = |reason, will_retry| ProgressGuard::new(reason, will_retry, w, None, &s);
        assert_eq!(g(CompactionReason::Overflow, false).limit(), Some(fit));
        assert_eq!(g(CompactionReason::Overflow, true).limit(), Some(fit));
        assert_eq!(g(CompactionReason::Incomplete, true).limit(), Some(fit));
        assert_eq!(g(CompactionReason::Threshold, false).limit(), Some(band));
        assert_eq!(g(CompactionReason::Incomplete, false).limit(), Some(band));
        assert_eq!(g(CompactionReason::Manual, true).limit(), None);
        assert_eq!(g(CompactionReason::Idle, false).limit(), None);
        let unknown = ProgressGuard::new(CompactionReason::Overflow, true, 0, None, &s);
        assert_eq!(unknown.limit(), None);
        assert!(unknown.has_headroom(u64::MAX));
        // The model's threshold replaces the settings' own.
        let own = ProgressGuard::new(CompactionReason::Threshold, false, w, Some(10_000), &s);
        assert_eq!(own.limit(), Some(8_000));
        assert!(own.has_headroom(8_000) && !own.has_headroom(8_001));
    }
}
