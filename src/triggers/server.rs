//! The provider's compaction inside the host's own request (spec: compaction §13, §8.2 [N]
//! step 10; issue 39 item 3): who compacts at the threshold when the request carries it.
//!
//! A model that opted in (`compaction::native::openai_inline`) sends each Responses request
//! with `context_management` (the server compacts once the rendered input crosses the
//! core's threshold) or, in Codex's form, with the `compaction_trigger` item once the context
//! reached it. Either way the threshold is the server's first: were the machine to compact
//! at the same threshold before the request, the server would never see a context over it.
//! The reference has no such lane (its V2 trigger goes in a request of its own, at its own
//! threshold); Codex compacts with the trigger where its own limit says so and does not also
//! summarize. So the rule here:
//!
//! 1. While the requests carry the lane, the threshold compaction and its background
//!    preparation wait for the server ([`ServerLane::defers`]).
//! 2. The server *declined* when a request went out at or over the threshold (the reply's
//!    reported input or the host's estimate at the request, the same `max` the trigger
//!    takes, §8.2 [N] step 9) and its reply carried no compaction: the machine's own
//!    threshold compaction runs again, at once after that reply.
//! 3. A compaction (the server's or the machine's) ends the decline.
//! 4. A context the host measures at or over the whole window is not left to the server: a
//!    request that large is refused before anything is compacted. Overflow and length-stop
//!    recoveries (§8.2 [N] steps 3, 5) never wait: the server did not compact.
//!
//! Why this rule and not a lower server threshold: docs/decisions/server-compaction-first.md.

use crate::session::message::AssistantMessage;
use crate::tokens::prompt_tokens;

/// The lane's state in the machine (see the module's rules).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ServerLane {
    /// The last request carried the provider's in-request compaction.
    carried: bool,
    /// A request carried it over the threshold and its reply came back without a compaction.
    declined: bool,
    /// The host's estimate of the last request (0 after a compaction).
    sent: u64,
    /// The threshold of the last request's model.
    threshold: u64,
}

impl ServerLane {
    /// A request is about to be sent: whether it carries the lane, the host's estimate of it
    /// and its model's threshold.
    pub(super) fn request(&mut self, carried: bool, sent: u64, threshold: u64) {
        self.carried = carried;
        self.sent = sent;
        self.threshold = threshold;
    }

    /// The reply to the last request (a compaction it carried is reported after it,
    /// [`ServerLane::compacted`]). A failed or aborted reply says nothing of the server's choice.
    pub(super) fn answered(&mut self, reply: &AssistantMessage) {
        let input = reply.usage.as_ref().map_or(0, prompt_tokens).max(self.sent);
        if self.carried && !reply.failed() && self.threshold > 0 && input >= self.threshold {
            self.declined = true;
        }
    }

    /// A compaction was committed (the server's, carried by the reply just answered, or the
    /// machine's): the server has a fresh context to judge.
    pub(super) fn compacted(&mut self) {
        self.declined = false;
        self.sent = 0;
    }

    /// The requests carry the lane and the server has not declined: the threshold is its.
    pub(super) fn waiting(&self) -> bool {
        self.carried && !self.declined
    }

    /// The threshold compaction of a context of `trigger` tokens in a window of `window`
    /// (0 = unknown) waits for the server.
    pub(super) fn defers(&self, trigger: u64, window: u64) -> bool {
        self.waiting() && (window == 0 || trigger < window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::message::{StopReason, Usage};

    fn reply(input: f64, stop: StopReason) -> AssistantMessage {
        AssistantMessage {
            usage: Some(Usage {
                input,
                ..Usage::default()
            }),
            stop_reason: Some(stop),
            ..AssistantMessage::default()
        }
    }

    #[test]
    fn declines_only_over_the_threshold_without_a_compaction() {
        let mut lane = ServerLane::default();
        lane.request(true, 900, 1_000);
        assert!(lane.defers(1_200, 2_000));
        // Under the threshold by both counts: the next request is the server's chance.
        lane.answered(&reply(950.0, StopReason::Stop));
        assert!(lane.waiting());
        // Over it by the reported input, no compaction: declined.
        lane.answered(&reply(1_000.0, StopReason::Stop));
        assert!(!lane.waiting() && !lane.defers(1_200, 2_000));
        // A compaction ends the decline; the estimate of the earlier request is forgotten.
        lane.compacted();
        lane.answered(&reply(10.0, StopReason::Stop));
        assert!(lane.waiting());
        // By the host's estimate at the request (Codex's trigger form) as well.
        lane.request(true, 1_000, 1_000);
        lane.answered(&reply(0.0, StopReason::ToolUse));
        assert!(!lane.waiting());
        // A reply over the threshold whose compaction the host then commits.
        lane.answered(&reply(5_000.0, StopReason::Stop));
        lane.compacted();
        assert!(lane.waiting());
    }

    #[test]
    fn a_failed_reply_or_a_request_without_the_lane_declines_nothing() {
        let mut lane = ServerLane::default();
        lane.request(true, 5_000, 1_000);
        lane.answered(&reply(5_000.0, StopReason::Error));
        lane.answered(&reply(5_000.0, StopReason::Aborted));
        assert!(lane.waiting());
        // At or over the window the machine compacts itself.
        assert!(!lane.defers(2_000, 2_000));
        lane.request(false, 5_000, 1_000);
        lane.answered(&reply(5_000.0, StopReason::Stop));
        assert!(!lane.waiting());
        lane.request(true, 0, 1_000);
        assert!(lane.waiting());
    }
}
