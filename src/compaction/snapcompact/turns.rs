//! The user turns of a dropped middle (spec: snapcompact §9.2): kept as text beside the
//! frames, newest first, within their token budget.

use crate::render::text::unicode::NEWLINE_GLYPH;

/// The scope prefixes of the archive transcript (spec: snapcompact §6.1).
const SCOPES: [&str; 4] = [
    crate::render::text::serialize::USER,
    crate::render::text::serialize::THINK,
    crate::render::text::serialize::AI,
    crate::render::text::serialize::CALL,
];

/// The next scope prefix in `text` from byte `from`: its offset and whether it is `¶user:`.
fn next_scope(text: &str, from: usize) -> Option<(usize, bool)> {
    let mut at = from;
    while let Some(off) = text[at..].find('\u{b6}') {
        let i = at + off;
        if let Some(p) = SCOPES.iter().find(|p| text[i..].starts_with(**p)) {
            return Some((i, *p == SCOPES[0]));
        }
        at = i + '\u{b6}'.len_utf8();
    }
    None
}

/// Whether text continuing `before` is inside a `¶user:` scope (its last scope prefix).
pub(super) fn opens_in_user(before: &str) -> bool {
    let mut user = false;
    let mut from = 0;
    while let Some((at, is_user)) = next_scope(before, from) {
        user = is_user;
        from = at + '\u{b6}'.len_utf8();
    }
    user
}

/// The user turns of a dropped middle, each opening with `¶user:`, oldest first; a turn cut
/// by the start of `dropped` (`opens_in_user`) is kept from there.
pub fn user_turns(dropped: &str, opens_in_user: bool) -> Vec<String> {
    let mut turns = Vec::new();
    let mut user = opens_in_user;
    let mut start = 0;
    let push = |piece: &str, turns: &mut Vec<String>| {
        let piece = piece.trim_end_matches(NEWLINE_GLYPH);
        if piece.is_empty() || piece == SCOPES[0] {
            return;
        }
        if piece.starts_with(SCOPES[0]) {
            turns.push(piece.to_string());
        } else {
            turns.push(format!("{}{piece}", SCOPES[0]));
        }
    };
    let mut from = 0;
    while let Some((at, is_user)) = next_scope(dropped, from) {
        if user {
            push(&dropped[start..at], &mut turns);
        }
        user = is_user;
        start = at;
        from = at + '\u{b6}'.len_utf8();
    }
    if user {
        push(&dropped[start..], &mut turns);
    }
    turns
}

/// Tokens of retained text, with the model-free estimate (spec: README "Token accounting").
fn estimate(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// The user turns kept verbatim beside the frames (issue 19 point 3: user turns are never
/// silently dropped when the archive overflows). Every `¶user:` turn of the middle history
/// `planArchive` drops joins those an earlier compaction kept; the newest turns are kept
/// within `budget_tokens` (default
/// [`RETAINED_USER_BUDGET_TOKENS`](crate::archive::RETAINED_USER_BUDGET_TOKENS), the budget
/// OpenAI's V2 compaction keeps user messages under, spec: compaction §9.2
/// `compaction.v2RetainedMessageBudget`), a turn alone over the budget keeping its newest
/// part. `None` when nothing is kept. Turns are joined by the newline glyph, in order.
pub fn retained_user_turns(
    previous: Option<&str>,
    dropped: &[String],
    budget_tokens: u64,
) -> Option<String> {
    let glyph = NEWLINE_GLYPH.to_string();
    let mut turns: Vec<&str> = Vec::new();
    if let Some(p) = previous.filter(|p| !p.is_empty()) {
        let mut start = 0;
        let sep = format!("{glyph}{}", SCOPES[0]);
        // Each turn opens with `¶user:`: look for the next one after it.
        while let Some(off) = p.get(start + SCOPES[0].len()..).and_then(|r| r.find(&sep)) {
            let at = start + SCOPES[0].len() + off;
            turns.push(&p[start..at]);
            start = at + glyph.len();
        }
        turns.push(&p[start..]);
    }
    turns.extend(dropped.iter().map(String::as_str));
    let mut kept: Vec<String> = Vec::new();
    let mut used = 0u64;
    for t in turns.iter().rev() {
        let cost = estimate(t) + 1;
        if used + cost <= budget_tokens {
            used += cost;
            kept.push((*t).to_string());
            continue;
        }
        if kept.is_empty() && budget_tokens > 0 {
            // The newest turn alone is over the budget: keep its end.
            let bytes = (budget_tokens as usize).saturating_mul(4);
            let mut cut = t.len().saturating_sub(bytes);
            while !t.is_char_boundary(cut) {
                cut += 1;
            }
            kept.push(format!("{}{}", SCOPES[0], &t[cut..]));
        }
        break;
    }
    kept.reverse();
    (!kept.is_empty()).then(|| kept.join(&glyph))
}
