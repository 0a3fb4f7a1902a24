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

/// The end of `piece` (a pattern without `*`) matched at the start of `t`, or `None`. `#`
/// takes every digit there (at least one), `~` one space or underscore.
fn match_at(t: &[u8], piece: &[u8]) -> Option<usize> {
    let mut at = 0;
    for &p in piece {
        let c = *t.get(at)?;
        let ok = match p {
            b'#' => c.is_ascii_digit(),
            b'~' => c == b' ' || c == b'_',
            _ => c == p,
        };
        if !ok {
            return None;
        }
        at += 1;
        if p == b'#' {
            while t.get(at).is_some_and(u8::is_ascii_digit) {
                at += 1;
            }
        }
    }
    Some(at)
}

/// The end of the leftmost match of `piece` (a pattern without `*`) in `t` from byte `from`
/// (a character boundary). The piece's literal head is found with the standard library's
/// substring search and the rest checked where it occurs, so the text is scanned once.
fn find_piece(t: &str, piece: &str, from: usize) -> Option<usize> {
    let head = piece.find(['#', '~']).map_or(piece, |n| &piece[..n]);
    if head.is_empty() {
        // Not in our lists: every position is tried.
        return (from..=t.len())
            .find_map(|i| Some(i + match_at(&t.as_bytes()[i..], piece.as_bytes())?));
    }
    let mut at = from;
    loop {
        // A match of the ASCII head starts and ends on character boundaries.
        let start = at + t.get(at..)?.find(head)?;
        if let Some(len) = match_at(&t.as_bytes()[start..], piece.as_bytes()) {
            return Some(start + len);
        }
        at = start + 1;
    }
}

/// Whether pattern `p` occurs in `t` (both lower case). Each `*`-separated piece is looked for
/// after the end of the leftmost match of the piece before it (which leaves the most room for
/// the rest): one scan of the text per piece, linear however the text repeats a piece.
fn matches_anywhere(t: &str, p: &str) -> bool {
    let mut from = 0;
    for piece in p.split('*').filter(|x| !x.is_empty()) {
        match find_piece(t, piece, from) {
            Some(end) => from = end,
            None => return false,
        }
    }
    true
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

/// [`is_overflow_error_text`] of a lower-case text.
fn is_overflow_lower(lower: &str) -> bool {
    OVERFLOW_PATTERNS.iter().any(|p| matches_anywhere(lower, p))
        || bare_status_without_body(lower, &["400", "413", "429"])
}

/// Whether an error text says the context overflowed (spec: compaction §8.2 list,
/// case-insensitive, plus the bare 400/413/429 status with no body). A time-out that names a
/// context ("context deadline exceeded") is not one. Linear in the text.
pub fn is_overflow_error_text(text: &str) -> bool {
    is_overflow_lower(&text.to_ascii_lowercase())
}

/// Whether a lower-case error text is an HTTP 413-like rejection of the request's size.
fn is_payload_rejection_text(lower: &str) -> bool {
    PAYLOAD_PATTERNS.iter().any(|p| matches_anywhere(lower, p))
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
            } else if is_overflow_lower(&lower) {
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
            // A megabyte each (unoptimized test build); a quadratic matcher takes minutes on the
            // first one.
            assert!(
                took < std::time::Duration::from_secs(1),
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
