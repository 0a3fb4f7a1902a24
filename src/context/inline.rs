//! Inline imaging (spec: snapcompact §9.7, last point; issue 20 point 5): which old tool
//! results, and whether the selected system-prompt text, one request sends as snapcompact
//! frames instead of text. The JS shell measures each candidate (its text tokens, the frames
//! its text prints on, whether the shape's fonts print it) and applies the plan; the rules
//! live here.
//!
//! The rules: never the newest tool result, never an error or a result that carries images,
//! only results of at
//! least [`MIN_TOOL_RESULT_TOKENS`], only when the frames cost at most 90 % of the text's
//! tokens, oldest first within the provider's image budget (a result too large for what is
//! left is passed over, not a stop), then the system prompt in at most
//! [`MAX_SYSTEM_PROMPT_FRAMES`] frames from what is left, and only when a user message can
//! carry them. Ours adds two: the price of a frame is the reading model's (the JS shell prices
//! it so), and a candidate the previous request sent while the provider's prompt cache is
//! still warm keeps the form it was sent in (its `previous`), so imaging never rewrites a
//! cached prefix. Kept frames are placed before any new choice.

use crate::render::shape::billing::{frame_tokens, BillingFamily};

/// Tool results under this many text tokens always stay text.
pub const MIN_TOOL_RESULT_TOKENS: u64 = 3000;
/// Frames are sent only when they cost at most this share of the text's tokens.
pub const SAVINGS_MARGIN: f64 = 0.9;
/// At most this many frames carry the system prompt.
pub const MAX_SYSTEM_PROMPT_FRAMES: u32 = 6;

/// One piece of text that could be sent as frames.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Candidate {
    /// Text tokens it costs as text.
    pub tokens: u64,
    /// Frames its text prints on (0: nothing to print).
    pub frames: u32,
    /// Must stay text: an error tool result (providers validate those as text) or one that
    /// carries images.
    pub stays_text: bool,
    /// The shape's fonts print the text (at most 5 % `?`).
    pub printable: bool,
    /// The form the previous request sent it in, when that request's cache prefix holds it:
    /// `Some(true)` frames, `Some(false)` text, `None` new or no longer cached.
    pub previous: Option<bool>,
}

/// What one request offers: tool results in context order (the newest last), the system
/// prompt's selected text, the images it may still add, and a frame's price.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InlineInput {
    pub tool_results: Vec<Candidate>,
    pub system_prompt: Option<Candidate>,
    /// The provider's image budget less the images the request already holds.
    pub budget: u32,
    /// Billed tokens of one frame for the reading model.
    pub frame_tokens: u32,
    /// A user message exists to carry the system prompt's frames.
    pub has_user_message: bool,
    /// The provider's prompt cache still holds the previous request (`previous` counts).
    pub warm: bool,
}

/// The choice: indices of the tool results sent as frames (ascending), whether the system
/// prompt is, and how many candidates stayed text only to keep the warm cache.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InlinePlan {
    pub tool_results: Vec<usize>,
    pub system_prompt: bool,
    pub kept_for_cache: u32,
}

impl Candidate {
    /// Printable on 1 to `left` frames that cost at most [`SAVINGS_MARGIN`] of the text:
    /// `frames × price ≤ 0.9 × tokens`.
    fn fits(&self, frame_tokens: u32, left: u32) -> bool {
        (1..=left).contains(&self.frames)
            && self.printable
            && self.frames as f64 * frame_tokens as f64 <= self.tokens as f64 * SAVINGS_MARGIN
    }
}

/// Bits of a candidate's flags in [`Candidate::from_flat`].
pub mod flag {
    pub const STAYS_TEXT: u32 = 1;
    pub const PRINTABLE: u32 = 2;
    /// The previous request's cached prefix holds it ([`FRAMES`] says in which form).
    pub const CACHED: u32 = 4;
    pub const FRAMES: u32 = 8;
}

impl Candidate {
    /// A candidate from `[tokens, frames, flags]` as JavaScript numbers: fractions are cut,
    /// negative numbers and NaN read as 0, huge ones as the largest value.
    pub fn from_flat(tokens: f64, frames: f64, flags: f64) -> Candidate {
        let flags = flags as u32;
        Candidate {
            tokens: tokens as u64,
            frames: frames as u32,
            stays_text: flags & flag::STAYS_TEXT != 0,
            printable: flags & flag::PRINTABLE != 0,
            previous: (flags & flag::CACHED != 0).then_some(flags & flag::FRAMES != 0),
        }
    }
}

/// The frame price for the reading model `id` (over `api`) at `frame_size` px (spec:
/// snapcompact §4.2), with [`BillingFamily::of_reader`].
pub fn reader_frame_tokens(id: Option<&str>, api: Option<&str>, frame_size: u32) -> u32 {
    frame_tokens(BillingFamily::of_reader(id, api), frame_size)
}

impl InlinePlan {
    /// `[systemPrompt (0/1), keptForCache, frame_tokens (the price used), tool result
    /// index…]`, for JavaScript.
    pub fn flat(&self, frame_tokens: u32) -> Vec<u32> {
        let mut out = vec![self.system_prompt as u32, self.kept_for_cache, frame_tokens];
        out.extend(self.tool_results.iter().map(|&k| k as u32));
        out
    }
}

/// The plan of one request (see the module's rules).
#[inline(never)]
pub fn plan_inline(input: &InlineInput) -> InlinePlan {
    let price = input.frame_tokens;
    // The newest result stays text: the model reads the output it just asked for as text.
    let older = &input.tool_results[..input.tool_results.len().saturating_sub(1)];
    let kept = |c: &Candidate| c.previous.filter(|_| input.warm);
    let system = input.system_prompt.filter(|_| input.has_user_message);
    let tool_fits = |c: &Candidate, left: u32| {
        !c.stays_text && c.tokens >= MIN_TOOL_RESULT_TOKENS && c.fits(price, left)
    };
    let system_fits = |s: &Candidate, left: u32| s.fits(price, left.min(MAX_SYSTEM_PROMPT_FRAMES));
    let mut left = input.budget;
    let mut chosen = vec![false; older.len()];
    let mut plan = InlinePlan::default();
    // Frames a warm cache holds are placed first (tool results, then the prompt); then the
    // candidates the cache does not hold. What a warm cache holds as text stays text.
    for pass in [Some(true), None] {
        for (k, c) in older.iter().enumerate() {
            if kept(c) == pass && tool_fits(c, left) {
                chosen[k] = true;
                left -= c.frames;
            }
        }
        if let Some(s) = system.filter(|s| kept(s) == pass && system_fits(s, left)) {
            plan.system_prompt = true;
            left -= s.frames;
        }
    }
    let text_kept = |c: &Candidate| kept(c) == Some(false);
    plan.kept_for_cache = older
        .iter()
        .filter(|c| text_kept(c) && tool_fits(c, input.budget))
        .count() as u32
        + system.is_some_and(|s| text_kept(&s) && system_fits(&s, input.budget)) as u32;
    plan.tool_results = (0..older.len()).filter(|&k| chosen[k]).collect();
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(tokens: u64, frames: u32) -> Candidate {
        Candidate {
            tokens,
            frames,
            printable: true,
            ..Candidate::default()
        }
    }

    fn input(tool_results: Vec<Candidate>, budget: u32) -> InlineInput {
        InlineInput {
            tool_results,
            budget,
            frame_tokens: 1000,
            has_user_message: true,
            ..InlineInput::default()
        }
    }

    #[test]
    fn the_reference_rules() {
        let newest = result(90_000, 1);
        let error = Candidate {
            stays_text: true,
            ..result(9_000, 1)
        };
        let i = input(
            vec![
                result(9_000, 1),   // 0: taken
                result(2_999, 1),   // 1: under the floor
                error,              // 2: an error
                result(9_000, 9),   // 3: frames cost more than 90 %
                result(40_000, 30), // 4: too many for the budget left: passed over
                result(20_000, 3),  // 5: taken
                Candidate {
                    printable: false,
                    ..result(9_000, 1)
                }, // 6: unprintable
                newest,
            ],
            10,
        );
        let plan = plan_inline(&i);
        assert_eq!(plan.tool_results, vec![0, 5]);
        assert!(!plan.system_prompt);
        // The margin is inclusive: 9 frames × 1000 = 0.9 × 10,000.
        let edge = plan_inline(&input(vec![result(10_000, 9), newest], 10));
        assert_eq!(edge.tool_results, vec![0]);
    }

    #[test]
    fn system_prompt_from_what_is_left() {
        let mut i = input(vec![result(9_000, 4), result(9_000, 1)], 10);
        i.system_prompt = Some(result(20_000, 6));
        assert!(plan_inline(&i).system_prompt);
        i.budget = 9; // 4 for the result, 5 left < 6
        let p = plan_inline(&i);
        assert_eq!((p.tool_results, p.system_prompt), (vec![0], false));
        i.budget = 20;
        i.system_prompt = Some(result(40_000, 7)); // over the 6-frame cap
        assert!(!plan_inline(&i).system_prompt);
        i.system_prompt = Some(result(2_000, 1)); // no floor for the prompt, but the margin
        assert!(plan_inline(&i).system_prompt);
        i.has_user_message = false;
        assert!(!plan_inline(&i).system_prompt);
    }

    #[test]
    fn a_warm_cache_keeps_the_previous_form() {
        let was = |previous, c: Candidate| Candidate {
            previous: Some(previous),
            ..c
        };
        let mut i = input(
            vec![
                was(false, result(9_000, 2)), // sent as text while warm: stays text
                was(true, result(9_000, 2)),  // sent as frames: kept, placed first
                result(9_000, 2),             // new: chosen from what is left
                result(9_000, 2),             // new, newest
            ],
            3,
        );
        i.system_prompt = Some(was(false, result(20_000, 1)));
        i.warm = true;
        let p = plan_inline(&i);
        assert_eq!(
            (p.tool_results, p.system_prompt, p.kept_for_cache),
            (vec![1], false, 2)
        );
        // Cold: every candidate is new again.
        i.warm = false;
        let p = plan_inline(&i);
        assert_eq!(
            (p.tool_results, p.system_prompt, p.kept_for_cache),
            (vec![0], true, 0)
        );
        // A prompt kept as frames is placed before new tool results.
        i.warm = true;
        i.system_prompt = Some(was(true, result(20_000, 2)));
        i.tool_results[1].previous = None;
        let p = plan_inline(&i);
        assert_eq!((p.tool_results, p.system_prompt), (vec![], true));
    }

    #[test]
    fn flat_forms() {
        use flag::*;
        let c = Candidate::from_flat(9_000.9, 2.0, (STAYS_TEXT | CACHED | FRAMES) as f64);
        assert_eq!(
            (c.tokens, c.frames, c.stays_text, c.printable, c.previous),
            (9_000, 2, true, false, Some(true))
        );
        let c = Candidate::from_flat(-5.0, f64::NAN, (PRINTABLE | FRAMES) as f64);
        assert_eq!(
            (c.tokens, c.frames, c.printable, c.previous),
            (0, 0, true, None)
        );
        let plan = InlinePlan {
            tool_results: vec![0, 3],
            system_prompt: true,
            kept_for_cache: 2,
        };
        assert_eq!(plan.flat(3293), vec![1, 2, 3293, 0, 3]);
        // The reading model's price: 56² patches × 1.05, not the router API's (49² × 1.2).
        let router = Some("openai-completions");
        assert_eq!(
            reader_frame_tokens(Some("anthropic/claude-sonnet-4.5"), router, 1568),
            3293
        );
        assert_eq!(reader_frame_tokens(Some("qwen3-vl"), router, 1568), 2882);
    }
}
