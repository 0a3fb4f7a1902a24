//! Overflow detection (spec: compaction §8.2): the provider wordings of a context overflow, the
//! 413-like payload rejections, and the silent overflow a turn's usage reveals.

use crate::session::message::{AssistantMessage, StopReason};

/// Provider wordings of a context overflow (spec: compaction §8.2), lower case. `#` is one or
/// more digits, `*` any text, `~` a space or an underscore.
const OVERFLOW_PATTERNS: [&str; 12] = [
    "prompt is too long",
    "exceeds the context window",
    "input token count*exceeds the maximum",
    "maximum prompt length is #",
    "reduce the length of the messages",
    "maximum context length is # tokens",
    "exceeds the limit of #",
    "exceeds the available context size",
    "greater than the context length",
    "context~length~exceeded",
    "too many tokens",
    "token limit exceeded",
];

/// Wordings of an HTTP 413-like payload rejection (our list; the reference's classifier is
/// richer, spec: compaction §8.2 [N] step 2), lower case.
const PAYLOAD_PATTERNS: [&str; 4] = [
    "payload too large",
    "request entity too large",
    "request~too~large",
    "request size exceeds",
];

/// Words that tie a payload rejection to attachments rather than tokens (our list).
const MEDIA_WORDS: [&str; 4] = ["image", "media", "attachment", "pdf"];

fn match_here(t: &[u8], p: &[u8]) -> bool {
    match p.split_first() {
        None => true,
        Some((b'*', rest)) => matches_anywhere(t, rest),
        Some((b'#', rest)) => {
            let n = t.iter().take_while(|c| c.is_ascii_digit()).count();
            n > 0 && match_here(&t[n..], rest)
        }
        Some((b'~', rest)) => matches!(t.first(), Some(b' ' | b'_')) && match_here(&t[1..], rest),
        Some((c, rest)) => t.first() == Some(c) && match_here(&t[1..], rest),
    }
}

fn matches_anywhere(t: &[u8], p: &[u8]) -> bool {
    let first = p.first().copied();
    (0..=t.len()).any(|i| {
        // Cheap pre-filter on a literal first byte.
        match first {
            Some(c) if !matches!(c, b'*' | b'#' | b'~') => {
                t.get(i) == Some(&c) && match_here(&t[i..], p)
            }
            _ => match_here(&t[i..], p),
        }
    })
}

/// A bare `400`/`413`/`429` `[status code] (no body)` message.
fn bare_status_without_body(lower: &str, codes: &[&str]) -> bool {
    let t = lower.trim_start();
    codes.iter().any(|code| {
        t.strip_prefix(code).is_some_and(|rest| {
            let rest = rest.trim_start();
            let rest = rest
                .strip_prefix("status code")
                .unwrap_or(rest)
                .trim_start();
            rest.starts_with("(no body)")
        })
    })
}

/// Whether an error text says the context overflowed (spec: compaction §8.2 list,
/// case-insensitive, plus the bare 400/413/429 status with no body).
pub fn is_overflow_error_text(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    OVERFLOW_PATTERNS
        .iter()
        .any(|p| matches_anywhere(lower.as_bytes(), p.as_bytes()))
        || bare_status_without_body(&lower, &["400", "413", "429"])
}

/// Whether an error text is an HTTP 413-like rejection of the request's size.
fn is_payload_rejection_text(lower: &str) -> bool {
    PAYLOAD_PATTERNS
        .iter()
        .any(|p| matches_anywhere(lower.as_bytes(), p.as_bytes()))
        || lower.trim_start().starts_with("413")
}

/// `input + cacheRead` above a known window: the provider took more than fits (spec §8.2).
pub(super) fn usage_overflow(a: &AssistantMessage, window: u64) -> bool {
    window > 0
        && a.usage
            .as_ref()
            .is_some_and(|u| u.input + u.cache_read > window as f64)
}

/// `isContextOverflow(msg, window?)` (spec: compaction §8.2): an `error` stop whose text
/// matches a provider's overflow wording, or a `stop` whose `input + cacheRead` exceeds the
/// window (silent overflow; needs a known window, 0 = unknown).
pub fn is_context_overflow(a: &AssistantMessage, context_window: u64) -> bool {
    match a.stop_reason {
        Some(StopReason::Error) => a
            .error_message
            .as_deref()
            .is_some_and(is_overflow_error_text),
        Some(StopReason::Stop) => usage_overflow(a, context_window),
        _ => false,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failure {
    Overflow,
    PayloadRejected { media: bool },
}

pub(super) fn classify(a: &AssistantMessage, window: u64) -> Option<Failure> {
    match a.stop_reason {
        Some(StopReason::Error) => {
            let lower = a
                .error_message
                .as_deref()
                .unwrap_or("")
                .to_ascii_lowercase();
            if is_payload_rejection_text(&lower) {
                let media = MEDIA_WORDS.iter().any(|w| lower.contains(w));
                Some(Failure::PayloadRejected { media })
            } else if is_overflow_error_text(&lower) {
                Some(Failure::Overflow)
            } else {
                None
            }
        }
        Some(StopReason::Stop) if usage_overflow(a, window) => Some(Failure::Overflow),
        _ => None,
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_matcher() {
        let m = |t: &str, p: &str| matches_anywhere(t.as_bytes(), p.as_bytes());
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
