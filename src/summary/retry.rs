//! When to retry a failed summarizer call (spec: compaction §8.3, §14.12): transient
//! failures are retried with exponential back-off that honours a retry-after hint; a wait
//! longer than 30 s moves on to the next candidate summarizer; context overflow is never
//! retried as is (the plan halves the window instead); authentication failures and time-outs
//! move on to the next candidate at once. Pure decisions: the async shell does the waiting.

use crate::tokens::{ByteEstimate, TokenCounter};

/// How a failure is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Overloaded, rate-limited, 5xx, connection trouble: retry after a delay.
    Transient,
    /// The summarizer's context overflowed: plan a smaller window.
    ContextOverflow,
    /// Credentials missing or refused (401/403): try the next candidate.
    Auth,
    /// The call timed out: try the next candidate, not the same one again.
    Timeout,
    /// Anything else: give up on this candidate.
    Fatal,
}

const TRANSIENT: [&str; 13] = [
    // An empty answer (`EMPTY_SUMMARY`): a model that returned nothing, which a new call
    // usually clears.
    "empty summary",
    "overloaded",
    "rate limit",
    "rate_limit",
    "usage limit",
    "too many requests",
    "service unavailable",
    "server error",
    "internal error",
    "connection error",
    "connection reset",
    "fetch failed",
    "network error",
];

const OVERFLOW: [&str; 12] = [
    "prompt is too long",
    "exceeds the context window",
    "reduce the length of the messages",
    "maximum context length",
    "context length exceeded",
    "context_length_exceeded",
    "exceeds the available context size",
    "greater than the context length",
    "too many tokens",
    "token limit exceeded",
    "input token count",
    "maximum prompt length",
];

/// Classifies a failure from its message and HTTP status (when there was one).
pub fn classify(message: &str, status: Option<u16>) -> FailureKind {
    let m = message.to_ascii_lowercase();
    if OVERFLOW.iter().any(|p| m.contains(p)) || status == Some(413) {
        return FailureKind::ContextOverflow;
    }
    match status {
        Some(401 | 403) => return FailureKind::Auth,
        Some(408) => return FailureKind::Timeout,
        Some(429 | 500 | 502 | 503 | 504 | 529) => return FailureKind::Transient,
        _ => {}
    }
    if m.contains("timed out") || m.contains("timeout") {
        return FailureKind::Timeout;
    }
    if m.contains("unauthorized") || m.contains("forbidden") || m.contains("api key") {
        return FailureKind::Auth;
    }
    let code_in_text = ["429", "500", "502", "503", "504", "529"]
        .iter()
        .any(|c| m.contains(c));
    if code_in_text || TRANSIENT.iter().any(|p| m.contains(p)) {
        return FailureKind::Transient;
    }
    FailureKind::Fatal
}

/// The retry policy (spec: compaction §9.1 `retry.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub enabled: bool,
    /// Retries after the first attempt, per candidate.
    pub max_retries: u32,
    pub base_delay_ms: u64,
    /// A wait longer than this moves on to the next candidate when there is one.
    pub max_wait_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            enabled: true,
            max_retries: 3,
            base_delay_ms: 2000,
            max_wait_ms: 30_000,
        }
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryStep {
    /// Wait this long, then call the same summarizer again.
    Wait(u64),
    /// Go on with the next candidate summarizer.
    NextCandidate,
    /// The window overflowed: plan it smaller, then call again.
    Shrink,
    /// Stop and report the error.
    GiveUp,
}

impl RetryStep {
    /// This step for a request that can (`shrinkable`: a history window) or cannot be planned
    /// smaller: an overflow of a request without a window gives up.
    pub fn for_request(self, shrinkable: bool) -> RetryStep {
        match self {
            RetryStep::Shrink if !shrinkable => RetryStep::GiveUp,
            step => step,
        }
    }
}

impl RetryPolicy {
    /// The step after failed attempt number `attempt` (0-based) of a candidate, given what
    /// failed, the server's retry-after hint and whether another candidate remains.
    pub fn next(
        &self,
        attempt: u32,
        kind: FailureKind,
        retry_after_ms: Option<u64>,
        more_candidates: bool,
    ) -> RetryStep {
        let fallback = if more_candidates {
            RetryStep::NextCandidate
        } else {
            RetryStep::GiveUp
        };
        match kind {
            FailureKind::ContextOverflow => RetryStep::Shrink,
            FailureKind::Auth | FailureKind::Timeout | FailureKind::Fatal => fallback,
            FailureKind::Transient => {
                if !self.enabled || attempt >= self.max_retries {
                    return fallback;
                }
                let backoff = self.base_delay_ms.saturating_mul(1u64 << attempt.min(30));
                let delay = backoff.max(retry_after_ms.unwrap_or(0));
                if delay > self.max_wait_ms && more_candidates {
                    RetryStep::NextCandidate
                } else {
                    RetryStep::Wait(delay)
                }
            }
        }
    }
}

/// Parses a `Retry-After` header value: seconds, or an HTTP date relative to `now` (ms).
pub fn parse_retry_after(value: &str, now: i64) -> Option<u64> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then_some((secs * 1000.0) as u64);
    }
    parse_http_date(v).map(|at| at.saturating_sub(now).max(0) as u64)
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` (IMF-fixdate) to ms since the epoch.
fn parse_http_date(v: &str) -> Option<i64> {
    let parts: Vec<&str> = v.split_whitespace().collect();
    let [_, day, month, year, time, zone] = parts.as_slice() else {
        return None;
    };
    if *zone != "GMT" {
        return None;
    }
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m == month)?
        + 1;
    let iso = format!("{year}-{month:02}-{:0>2}T{time}Z", day);
    crate::support::time::parse_iso(&iso)
}

/// How far past its output limit (`maxTokens`, in estimated tokens) a summary may run before
/// it counts as a failed call: tokenizers differ from the byte estimate, so only an answer
/// that cannot have come from a model honouring the limit is refused.
pub const OVERSIZED_ANSWER_FACTOR: u64 = 4;

/// The problem of an empty (or blank) answer: it would replace the history by nothing. A
/// transient failure ([`classify`]): models now and then return nothing, and a new call
/// usually answers, so it is retried as a 503 is (ctxfold's choice; the reference commits no
/// empty summary either, and its summarizer calls retry transient failures).
pub const EMPTY_SUMMARY: &str = "the summarizer returned an empty summary";

/// Why a summarizer's answer is unusable, or `None` when it can be committed: an empty one
/// ([`EMPTY_SUMMARY`]), or a summary far larger than the request's `maxTokens` (a broken
/// endpoint, a model ignoring its limit), which would make the rebuilt context larger instead
/// of smaller. Checked before anything is written; the async shell treats it as a failed
/// call ([`classify`] says whether to retry it).
pub fn answer_problem(text: &str, max_tokens: u64) -> Option<String> {
    if text.trim().is_empty() {
        return Some(EMPTY_SUMMARY.into());
    }
    let estimate = ByteEstimate.count(text);
    let limit = max_tokens.max(1).saturating_mul(OVERSIZED_ANSWER_FACTOR);
    (estimate > limit).then(|| {
        format!(
            "the summary is about {estimate} tokens, over {OVERSIZED_ANSWER_FACTOR} × the \
             request's maxTokens ({max_tokens}): the summarizer ignored its output limit"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        for (msg, status, want) in [
            ("503 Service Unavailable", None, FailureKind::Transient),
            ("Overloaded", None, FailureKind::Transient),
            ("oops", Some(429), FailureKind::Transient),
            ("fetch failed", None, FailureKind::Transient),
            (EMPTY_SUMMARY, None, FailureKind::Transient),
            (
                "prompt is too long: 210000 tokens",
                None,
                FailureKind::ContextOverflow,
            ),
            ("payload", Some(413), FailureKind::ContextOverflow),
            ("nope", Some(401), FailureKind::Auth),
            ("Invalid API key", None, FailureKind::Auth),
            ("request timed out", None, FailureKind::Timeout),
            ("bad request: missing field", Some(400), FailureKind::Fatal),
        ] {
            assert_eq!(classify(msg, status), want, "{msg} {status:?}");
        }
    }

    #[test]
    fn back_off_doubles_honours_retry_after_and_moves_on() {
        let p = RetryPolicy::default();
        let t = FailureKind::Transient;
        assert_eq!(p.next(0, t, None, false), RetryStep::Wait(2000));
        assert_eq!(p.next(1, t, None, false), RetryStep::Wait(4000));
        assert_eq!(p.next(2, t, None, false), RetryStep::Wait(8000));
        assert_eq!(p.next(3, t, None, false), RetryStep::GiveUp);
        assert_eq!(p.next(3, t, None, true), RetryStep::NextCandidate);
        assert_eq!(p.next(0, t, Some(5000), false), RetryStep::Wait(5000));
        // Over 30 s: the next candidate if there is one, else wait.
        assert_eq!(p.next(0, t, Some(60_000), true), RetryStep::NextCandidate);
        assert_eq!(p.next(0, t, Some(60_000), false), RetryStep::Wait(60_000));
        assert_eq!(
            p.next(0, FailureKind::ContextOverflow, None, true),
            RetryStep::Shrink
        );
        assert_eq!(
            p.next(0, FailureKind::Auth, None, true),
            RetryStep::NextCandidate
        );
        assert_eq!(
            p.next(0, FailureKind::Fatal, None, false),
            RetryStep::GiveUp
        );
        let off = RetryPolicy {
            enabled: false,
            ..p
        };
        assert_eq!(off.next(0, t, None, false), RetryStep::GiveUp);
    }

    #[test]
    fn retry_after_values() {
        assert_eq!(parse_retry_after("3", 0), Some(3000));
        assert_eq!(parse_retry_after("0.5", 0), Some(500));
        let now = crate::support::time::parse_iso("2026-01-01T00:00:00Z").unwrap();
        assert_eq!(
            parse_retry_after("Thu, 01 Jan 2026 00:00:10 GMT", now),
            Some(10_000)
        );
        assert_eq!(parse_retry_after("soon", 0), None);
        assert_eq!(parse_retry_after("-1", 0), None);
    }

    /// Issue 36 (one engine): only a history window shrinks; an overflow of any other request
    /// gives up, even with another candidate left (the core's answer, not the shell's).
    #[test]
    fn only_a_window_shrinks() {
        let p = RetryPolicy::default();
        for more in [false, true] {
            let step = p.next(0, FailureKind::ContextOverflow, None, more);
            assert_eq!(step.for_request(true), RetryStep::Shrink);
            assert_eq!(step.for_request(false), RetryStep::GiveUp);
        }
        // Other steps stay as they are.
        for step in [
            RetryStep::Wait(5),
            RetryStep::NextCandidate,
            RetryStep::GiveUp,
        ] {
            assert_eq!(step.for_request(false), step);
            assert_eq!(step.for_request(true), step);
        }
    }
}
