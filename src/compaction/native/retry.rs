//! When a failed request of an OpenAI native lane is sent again (spec: compaction §8.3, §13),
//! as the reference paces them: V2 (a stream, which a cut connection or an overloaded server
//! can spoil) is retried up to twice with back-off `base · 2^attempt`, at least the
//! `retry-after` of a 429/503, unless the failure is an auth one; V1 (one JSON answer) is
//! retried once, only for a 429/503 that says when. A `retry-after` over 30 s is never waited
//! for: the walk moves on. Pure decisions: the JS shell (`src/js/providers/native-openai.ts`, sent by `src/js/runner/native.ts`) waits.

use super::lanes::OpenAiLane;

/// V2: retries of a failure that another attempt can mend.
const V2_RETRIES: u32 = 2;
/// The longest `retry-after` waited for (spec §8.3: 30 s).
pub const MAX_RETRY_AFTER_MS: u64 = 30_000;
/// Failure messages without a status that a second V2 attempt can mend: a cut or unreadable
/// stream, an overloaded server, a time-out, a failed connection (lowercase).
const TRANSIENT: [&str; 8] = [
    "closed before response.completed",
    "stream parse failed",
    "server_error",
    "internal_error",
    "overloaded",
    "service unavailable",
    "timed out",
    "fetch failed",
];

/// A failure of one request of a lane: its HTTP status (none for a failed connection or an
/// unreadable answer), its message, and the `retry-after` the server gave (milliseconds).
#[derive(Debug, Clone, Copy)]
pub struct LaneFailure<'a> {
    pub status: Option<u16>,
    pub message: &'a str,
    pub retry_after_ms: Option<u64>,
}

/// Whether another V2 attempt can mend `f`: not an auth failure; a transient status, or,
/// without one, a transient message.
fn mendable(f: &LaneFailure) -> bool {
    match f.status {
        Some(401 | 403) => false,
        Some(s) => s == 408 || s == 429 || s >= 500,
        None => {
            let m = f.message.to_ascii_lowercase();
            TRANSIENT.iter().any(|t| m.contains(t))
        }
    }
}

/// How long to wait before attempt `attempt + 1` of `lane` after `f` (`attempt` counts from 0),
/// or `None` to give the lane up. `base_ms`: V2's back-off base.
pub fn retry_wait(lane: OpenAiLane, attempt: u32, f: &LaneFailure, base_ms: u64) -> Option<u64> {
    let after = match f.status {
        Some(429 | 503) => f.retry_after_ms,
        _ => None,
    };
    let again = match lane {
        OpenAiLane::V2 => attempt < V2_RETRIES && mendable(f),
        OpenAiLane::V1 => attempt == 0 && after.is_some(),
    };
    if !again || after.is_some_and(|a| a > MAX_RETRY_AFTER_MS) {
        return None;
    }
    let backoff = match lane {
        OpenAiLane::V2 => base_ms.saturating_mul(1u64 << attempt.min(32)),
        OpenAiLane::V1 => 0,
    };
    Some(backoff.max(after.unwrap_or(0)))
}

/// An authentication failure: the provider refused the credentials (401, 403).
fn is_auth(status: Option<u16>) -> bool {
    matches!(status, Some(401 | 403))
}

/// Which of the failures of the lanes tried, in the order they ran (their HTTP statuses, none
/// for a failure without one), the `remote` method's native attempt reports as its
/// `E_SUMMARIZER` (spec: compaction §8.3, §13), as the reference picks it: a failure that was
/// not an authentication one is kept over any later failure; an authentication failure gives
/// way to the next failure. So the first non-auth failure, or, when every lane failed
/// authentication, the last one. Only a failure that is authentication all through lets a
/// host try another provider: a later 401 must not hide an earlier transport or protocol
/// failure. `None` when no lane failed.
pub fn reported_failure(statuses: &[Option<u16>]) -> Option<usize> {
    (0..statuses.len()).reduce(
        |kept, next| {
            if is_auth(statuses[kept]) {
                next
            } else {
                kept
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(status: Option<u16>, message: &str, after: Option<u64>) -> LaneFailure<'_> {
        LaneFailure {
            status,
            message,
            retry_after_ms: after,
        }
    }

    #[test]
    fn v2_backs_off_twice_on_what_another_attempt_can_mend() {
        let cut = f(None, "V2 stream closed before response.completed", None);
        assert_eq!(retry_wait(OpenAiLane::V2, 0, &cut, 40), Some(40));
        assert_eq!(retry_wait(OpenAiLane::V2, 1, &cut, 40), Some(80));
        assert_eq!(retry_wait(OpenAiLane::V2, 2, &cut, 40), None);
        // At least the retry-after of a 429; never one over 30 s.
        let slow = f(Some(429), "", Some(2_000));
        assert_eq!(retry_wait(OpenAiLane::V2, 0, &slow, 40), Some(2_000));
        let slower = f(Some(503), "", Some(31_000));
        assert_eq!(retry_wait(OpenAiLane::V2, 0, &slower, 40), None);
        for status in [408, 500, 502] {
            assert!(retry_wait(OpenAiLane::V2, 0, &f(Some(status), "", None), 1).is_some());
        }
        for failure in [
            f(Some(401), "overloaded", None),
            f(Some(403), "", None),
            f(Some(400), "overloaded", None),
            f(
                None,
                "Remote compaction response missing compaction item",
                None,
            ),
        ] {
            assert_eq!(
                retry_wait(OpenAiLane::V2, 0, &failure, 1),
                None,
                "{failure:?}"
            );
        }
        assert_eq!(
            retry_wait(OpenAiLane::V2, 0, &f(None, "Fetch Failed", None), 5),
            Some(5)
        );
    }

    #[test]
    fn the_first_non_auth_failure_or_the_last_auth_one_is_reported() {
        assert_eq!(reported_failure(&[]), None);
        assert_eq!(reported_failure(&[Some(401)]), Some(0));
        // A transport or protocol failure is kept over a later one of any kind.
        assert_eq!(reported_failure(&[None, Some(401)]), Some(0));
        assert_eq!(reported_failure(&[Some(502), Some(500)]), Some(0));
        // An auth failure gives way to the next failure.
        assert_eq!(reported_failure(&[Some(401), Some(502)]), Some(1));
        assert_eq!(reported_failure(&[Some(403), None]), Some(1));
        // Every lane refused the credentials: the last refusal.
        assert_eq!(reported_failure(&[Some(401), Some(403)]), Some(1));
        assert_eq!(
            reported_failure(&[Some(403), Some(401), Some(500)]),
            Some(2)
        );
    }

    #[test]
    fn v1_waits_once_for_a_429_or_503_that_says_when() {
        let said = f(Some(429), "", Some(1_000));
        assert_eq!(retry_wait(OpenAiLane::V1, 0, &said, 40), Some(1_000));
        assert_eq!(retry_wait(OpenAiLane::V1, 1, &said, 40), None);
        assert_eq!(
            retry_wait(OpenAiLane::V1, 0, &f(Some(503), "", Some(0)), 40),
            Some(0)
        );
        for failure in [
            f(Some(429), "", None),
            f(Some(500), "", Some(1)),
            f(Some(503), "", Some(30_001)),
            f(None, "fetch failed", None),
        ] {
            assert_eq!(
                retry_wait(OpenAiLane::V1, 0, &failure, 40),
                None,
                "{failure:?}"
            );
        }
    }

    mod failures {
        use super::super::reported_failure;
        use proptest::prelude::*;

        proptest! {
            /// The reported failure is the first that was not an auth failure, or, when every
            /// one was, the last.
            #[test]
            fn first_non_auth_or_last(statuses in prop::collection::vec(
                prop::option::of(prop::sample::select(vec![400u16, 401, 403, 429, 500, 502])), 0..6)) {
                let auth = |s: &Option<u16>| matches!(s, Some(401 | 403));
                let expected = statuses.iter().position(|s| !auth(s))
                    .or_else(|| statuses.len().checked_sub(1));
                prop_assert_eq!(reported_failure(&statuses), expected);
            }
        }
    }
}
