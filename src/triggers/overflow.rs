//! Overflow detection (spec: compaction §8.2): the provider wordings of a context overflow, the
//! 413-like payload rejections, and the silent overflow a turn's usage reveals.

use super::classify::{self, bare_status_without_body, ErrorClass, ErrorInput};
use super::inputs::delivered_output;
use crate::session::message::{AssistantMessage, StopReason};

/// Whether an error text says the context overflowed (spec: compaction §8.2 list,
/// case-insensitive, plus the bare 400/413/429 status with no body), as the classifier reads
/// it. A time-out that names a context ("context deadline exceeded") is not one. Linear in the
/// text.
pub fn is_overflow_error_text(text: &str) -> bool {
    let input = ErrorInput {
        text,
        ..ErrorInput::default()
    };
    matches!(
        classify::classify(&input),
        ErrorClass::ContextOverflow { .. }
    ) || bare_status_without_body(&text.to_ascii_lowercase(), &["400", "413", "429"])
}

/// `input + cacheRead` above a known window: the provider took more than fits (spec §8.2).
pub(super) fn usage_overflow(a: &AssistantMessage, window: u64) -> bool {
    window > 0
        && a.usage
            .as_ref()
            .is_some_and(|u| u.input + u.cache_read > window as f64)
}

/// The classifier's input for an assistant turn: its error text, stop reason, reported
/// prompt and whether it delivered output; `window` 0 = unknown.
pub fn error_input(a: &AssistantMessage, window: u64) -> ErrorInput<'_> {
    ErrorInput {
        text: a.error_message.as_deref().unwrap_or(""),
        stop_reason: Some(a.stop_reason.clone().unwrap_or(StopReason::Stop)),
        prompt_tokens: a.usage.as_ref().map(|u| u.input + u.cache_read),
        delivered: Some(delivered_output(a)),
        window,
        ..ErrorInput::default()
    }
}

/// The class of an assistant turn (spec: compaction §8.2).
pub fn classify_turn(a: &AssistantMessage, window: u64) -> ErrorClass {
    classify::classify(&error_input(a, window))
}

/// `isContextOverflow(msg, window?)` (spec: compaction §8.2): an `error` stop whose text
/// reads as a context overflow (a provider's wording, or the bare 400/413/429 status), or a
/// `stop` whose `input + cacheRead` exceeds the window (silent overflow; needs a known window,
/// 0 = unknown).
pub fn is_context_overflow(a: &AssistantMessage, context_window: u64) -> bool {
    match a.stop_reason {
        Some(StopReason::Error) => a
            .error_message
            .as_deref()
            .is_some_and(is_overflow_error_text),
        Some(StopReason::Stop) => matches!(
            classify_turn(a, context_window),
            ErrorClass::SilentOverflow { .. }
        ),
        _ => false,
    }
}

/// What the Maintainer's tree does with a turn's class (spec: compaction §8.2 [N] steps 2–3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failure {
    Overflow,
    PayloadRejected {
        media: bool,
    },
    /// A rate limit: waiting helps, compacting does not.
    RateLimited,
}

pub(super) fn classify(a: &AssistantMessage, window: u64) -> Option<Failure> {
    match classify_turn(a, window) {
        ErrorClass::ContextOverflow { .. } | ErrorClass::SilentOverflow { .. } => {
            Some(Failure::Overflow)
        }
        ErrorClass::PayloadTooLarge { media } => Some(Failure::PayloadRejected { media }),
        ErrorClass::RateLimit { .. } if a.stop_reason == Some(StopReason::Error) => {
            Some(Failure::RateLimited)
        }
        _ => None,
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::triggers::classify::matches_anywhere;

    fn is_payload_rejection_text(lower: &str) -> bool {
        let input = ErrorInput {
            text: lower,
            ..ErrorInput::default()
        };
        matches!(
            classify::classify(&input),
            ErrorClass::PayloadTooLarge { .. }
        )
    }

    #[test]
    fn pattern_matcher() {
        let m = |t: &str, p: &str| matches_anywhere(t, p);
        assert!(m(
            "xx maximum prompt length is 131072 yy",
            "maximum prompt length is #"
        ));
        assert!(!m(
            "maximum prompt length is unknown",
            "maximum prompt length is #"
        ));
        assert!(m(
            "input token count (2000000) exceeds the maximum",
            "input token count*exceeds the maximum"
        ));
        assert!(!m(
            "exceeds the maximum; input token count",
            "input token count*exceeds the maximum"
        ));
        assert!(m("context_length_exceeded", "context~length~exceeded"));
        assert!(m("context length exceeded", "context~length~exceeded"));
        assert!(!m("contextlengthexceeded", "context~length~exceeded"));
        assert!(m("", ""));
    }

    #[test]
    fn timeouts_are_not_overflows() {
        // Go's `context.DeadlineExceeded` and other time-outs name a context too.
        for t in [
            "context deadline exceeded",
            "rpc error: code = DeadlineExceeded desc = context deadline exceeded",
            "Post \"https://api.example.com/v1\": context canceled",
            "request timed out",
        ] {
            assert!(!is_overflow_error_text(t), "{t}");
        }
        assert!(is_overflow_error_text("Error: context_length_exceeded"));
        assert!(is_overflow_error_text(
            "This model's maximum context length is 128000 tokens"
        ));
    }

    /// Texts that made the old matcher rescan the rest of the text at each occurrence of a
    /// pattern's head (`input token count*…`), or try a long partial match at every byte.
    fn adversarial_texts() -> Vec<String> {
        const MB: usize = 1 << 20;
        let fill = |unit: &str| unit.repeat(MB / unit.len() + 1);
        vec![
            fill("input token count "),
            fill("maximum prompt length is "),
            fill("maximum context length is 1 token "),
            fill("context_length_exceede"),
            fill("exceeds the limit of x"),
            fill("e"),
            fill("9"),
            fill("request_too_larg"),
        ]
    }

    #[test]
    fn long_texts_are_classified_in_linear_time() {
        let mut texts = adversarial_texts();
        // The tail of a `*` pattern at the very end of the text: still an overflow.
        let mut t = texts[0].clone();
        t.push_str("exceeds the maximum");
        texts.push(t);
        for (k, t) in texts.iter().enumerate() {
            assert!(t.len() >= 1 << 20);
            let start = std::time::Instant::now();
            let overflow = is_overflow_error_text(t);
            let payload = is_payload_rejection_text(&t.to_ascii_lowercase());
            let took = start.elapsed();
            assert_eq!(
                (overflow, payload),
                (k == texts.len() - 1, false),
                "text {k}"
            );
            // A megabyte each: a quadratic matcher takes many minutes on the first one; a linear
            // one well under a second (unoptimized test build), so the bound leaves room for a
            // loaded machine and only catches the blow-up.
            assert!(
                took < std::time::Duration::from_secs(30),
                "text {k}: 1 MB of error text classified in {took:?}"
            );
        }
    }

    #[test]
    fn bare_status() {
        let b = |t: &str| bare_status_without_body(&t.to_ascii_lowercase(), &["400", "413", "429"]);
        assert!(b("400 status code (no body)"));
        assert!(b("413 (no body)"));
        assert!(b("  429 Status Code (no body)"));
        assert!(!b("500 status code (no body)"));
        assert!(!b("400 Bad Request"));
        assert!(!b("error 400 status code (no body)"));
    }
}
