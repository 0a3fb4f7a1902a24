//! Inline imaging (spec: snapcompact §9.7, last point; issue 20 point 5): which old tool
//! results, and whether the selected system-prompt text, one request sends as snapcompact
//! frames instead of text. The JS shell measures each candidate (its text tokens, the frames
//! its text prints on, whether the shape's fonts print it), renders the chosen ones and reads
//! the clock; the rules live here: the plan, the system-prompt text a mode selects
//! ([`system_target`]), and the prompt-cache bookkeeping between requests ([`SentBefore`]:
//! what the previous request sent, whether the provider's cache still holds it).
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

/// A tool result must stay text (spec: snapcompact §9.7): an error result — providers
/// validate those as text — or one that carries images. The shell reports the facts of the
/// result; the plan then passes it over ([`Candidate::stays_text`]).
pub fn stays_text(is_error: bool, has_images: bool) -> bool {
    is_error || has_images
}

/// Whether a candidate of `tokens` text tokens is worth measuring (its frames counted, its
/// text scanned for printability): not when it stays text, nor a tool result (`floor`: the
/// system prompt has none) under [`MIN_TOOL_RESULT_TOKENS`] — the plan never images those.
pub fn worth_measuring(tokens: u64, stays_text: bool, floor: bool) -> bool {
    !stays_text && (!floor || tokens >= MIN_TOOL_RESULT_TOKENS)
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

/// How long a provider keeps a prompt prefix cached after a request (Anthropic's default TTL).
pub const DEFAULT_CACHE_TTL_MS: i64 = 5 * 60 * 1000;

/// The context-file sections `agents-md` images (the coding agent's system-prompt layout):
/// each from its opening to the first closing after it, as `(opening, closing)`.
pub const CONTEXT_SECTIONS: [(&str, &str); 2] = [
    ("<repo-rules>\n", "\n</repo-rules>"),
    ("## Context\n<instructions>\n", "\n</instructions>"),
];

/// `text` with each `(open, close)` section replaced by `stub`, the sections (trimmed) pushed
/// on `found`. One forward scan: an opening with no closing after it has none after a later
/// opening either, so the scan stops there (linear in the text).
pub fn cut_sections(
    text: &str,
    (open, close): (&str, &str),
    stub: &str,
    found: &mut Vec<String>,
) -> String {
    let mut out = String::new();
    let mut at = 0;
    while let Some(start) = text[at..].find(open).map(|i| at + i) {
        let Some(end) = text[start + open.len()..]
            .find(close)
            .map(|i| start + open.len() + i)
        else {
            break;
        };
        found.push(text[start..end + close.len()].trim().to_owned());
        out.push_str(&text[at..start]);
        out.push_str(stub);
        at = end + close.len();
    }
    if at == 0 {
        return text.to_owned();
    }
    out.push_str(&text[at..]);
    out
}

/// Which system-prompt text a mode images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemScope {
    /// The whole prompt (`systemPrompt: "all"`).
    All,
    /// The context-file sections ([`CONTEXT_SECTIONS`], `systemPrompt: "agents-md"`).
    AgentsMd,
}

impl SystemScope {
    pub fn as_str(self) -> &'static str {
        match self {
            SystemScope::All => "all",
            SystemScope::AgentsMd => "agents-md",
        }
    }
}

/// The system-prompt text a request may send as frames, and the prompt sent in its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemTarget {
    pub scope: SystemScope,
    /// The selected text (the sections joined by a blank line).
    pub text: String,
    /// The prompt's blocks with the selected text replaced: for `All`, the one `system_stub`.
    pub replacement: Vec<String>,
}

/// The text the `snapcompact.systemPrompt` mode `mode` (`none`, `all`, `agents-md`) images of
/// a prompt of `blocks` (a string prompt is one block), and its replacement, with the stubs
/// that stand in for it; `None` when there is nothing to image.
pub fn system_target(
    blocks: &[String],
    mode: &str,
    system_stub: &str,
    context_stub: &str,
) -> Option<SystemTarget> {
    match mode {
        "all" => {
            let text = blocks.join("\n\n");
            (!text.is_empty()).then(|| SystemTarget {
                scope: SystemScope::All,
                text,
                replacement: vec![system_stub.to_owned()],
            })
        }
        "agents-md" => {
            let mut sections = Vec::new();
            let replacement = blocks
                .iter()
                .map(|block| {
                    CONTEXT_SECTIONS
                        .iter()
                        .fold(block.clone(), |out, &section| {
                            cut_sections(&out, section, context_stub, &mut sections)
                        })
                })
                .collect();
            (!sections.is_empty()).then(|| SystemTarget {
                scope: SystemScope::AgentsMd,
                text: sections.join("\n\n"),
                replacement,
            })
        }
        _ => None,
    }
}

/// The images one request may still add: the provider's image budget less the images the
/// request already holds, none for a model that reads no images (providers drop them, and
/// the text would be lost).
pub fn image_budget(reads_images: bool, provider_budget: u32, images_held: u32) -> u32 {
    if reads_images {
        provider_budget.saturating_sub(images_held)
    } else {
        0
    }
}

/// One request as the prompt-cache bookkeeping reads it.
#[derive(Debug, Clone, Default)]
pub struct InlineRequest<'a> {
    /// The host's clock, in milliseconds.
    pub now: i64,
    /// What the first message says (a compaction or a new session changes it).
    pub head: &'a str,
    /// The tool call ids of the request's tool results, in context order.
    pub ids: &'a [String],
    /// The measured tool results (`previous` is filled in here): one per id, or none when
    /// tool results are not imaged or nothing was measured.
    pub tool_results: Vec<Candidate>,
    /// The system prompt's selected text and its measurement.
    pub system_prompt: Option<(&'a str, Candidate)>,
    /// [`image_budget`].
    pub budget: u32,
    pub frame_tokens: u32,
    pub has_user_message: bool,
}

/// What one request sent, for the next one's cache rule.
#[derive(Debug, Clone)]
struct Sent {
    at: i64,
    head: String,
    ids: Vec<String>,
    /// Per id: sent as frames.
    imaged: Vec<bool>,
    /// The system prompt's selected text and whether it went as frames.
    system: Option<(String, bool)>,
}

/// The prompt-cache bookkeeping of one conversation (spec: compaction §6.6: a cached prefix is
/// never rewritten while warm): what the previous request sent, and for how long the
/// provider's cache holds it.
#[derive(Debug, Clone)]
pub struct SentBefore {
    ttl_ms: i64,
    last: Option<Sent>,
}

impl SentBefore {
    /// A conversation whose provider keeps a prefix cached `ttl_ms` after a request
    /// ([`DEFAULT_CACHE_TTL_MS`] when `None`).
    pub fn new(ttl_ms: Option<i64>) -> SentBefore {
        SentBefore {
            ttl_ms: ttl_ms.unwrap_or(DEFAULT_CACHE_TTL_MS).max(0),
            last: None,
        }
    }

    /// Forgets the previous request (a new conversation, a changed model).
    pub fn reset(&mut self) {
        self.last = None;
    }

    /// The plan of `request`, remembered as what it sent. The previous request's tool results
    /// up to the first difference are in its cached prefix, except its newest, which sits at
    /// the prefix's end and may change form; they, and a system prompt of the same text, keep
    /// the form they were sent in while the cache is warm: the previous request came less than
    /// the TTL ago and the first message is unchanged. Without budget nothing is imaged.
    pub fn plan(&mut self, request: InlineRequest) -> InlinePlan {
        let last = self.last.as_ref();
        let warm = last.is_some_and(|l| {
            request.now.saturating_sub(l.at) < self.ttl_ms && l.head == request.head
        });
        let plan = if request.budget == 0 {
            InlinePlan::default()
        } else {
            let common = last.map_or(0, |l| {
                request
                    .ids
                    .iter()
                    .zip(&l.ids)
                    .take_while(|(a, b)| a == b)
                    .count()
            });
            let newest = last.and_then(|l| l.ids.last());
            let tool_results = request
                .tool_results
                .iter()
                .zip(request.ids)
                .enumerate()
                .map(|(k, (c, id))| Candidate {
                    previous: last
                        .filter(|_| k < common && Some(id) != newest)
                        .map(|l| l.imaged[k]),
                    ..*c
                })
                .collect();
            let system_prompt = request.system_prompt.map(|(text, c)| Candidate {
                previous: last
                    .and_then(|l| l.system.as_ref())
                    .filter(|(t, _)| t == text)
                    .map(|&(_, imaged)| imaged),
                ..c
            });
            plan_inline(&InlineInput {
                tool_results,
                system_prompt,
                budget: request.budget,
                frame_tokens: request.frame_tokens,
                has_user_message: request.has_user_message,
                warm,
            })
        };
        let mut imaged = vec![false; request.ids.len()];
        for &k in &plan.tool_results {
            if let Some(i) = imaged.get_mut(k) {
                *i = true;
            }
        }
        self.last = Some(Sent {
            at: request.now,
            head: request.head.to_owned(),
            ids: request.ids.to_vec(),
            imaged,
            system: request
                .system_prompt
                .map(|(text, _)| (text.to_owned(), plan.system_prompt)),
        });
        plan
    }
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

    /// Issue 36 (one engine): what keeps a tool result text, and what is measured at all, is
    /// the core's answer from the facts the shell reports.
    #[test]
    fn errors_and_results_with_images_stay_text_and_are_not_measured() {
        assert!(!stays_text(false, false));
        assert!(stays_text(true, false));
        assert!(stays_text(false, true));
        assert!(stays_text(true, true));
        // A tool result under the floor is not measured; the system prompt has no floor.
        assert!(!worth_measuring(MIN_TOOL_RESULT_TOKENS - 1, false, true));
        assert!(worth_measuring(MIN_TOOL_RESULT_TOKENS, false, true));
        assert!(worth_measuring(10, false, false));
        // What stays text is never measured.
        assert!(!worth_measuring(50_000, stays_text(true, false), true));
        assert!(!worth_measuring(50_000, stays_text(false, true), false));
        // ... and the plan passes it over even with frames that would pay.
        let err = Candidate {
            stays_text: stays_text(true, false),
            ..result(9_000, 1)
        };
        let i = input(vec![err, result(9_000, 1), result(9_000, 1)], 10);
        assert_eq!(plan_inline(&i).tool_results, vec![1]);
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

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|k| format!("call_{k}")).collect()
    }

    fn request<'a>(now: i64, head: &'a str, ids: &'a [String], budget: u32) -> InlineRequest<'a> {
        InlineRequest {
            now,
            head,
            ids,
            tool_results: ids.iter().map(|_| result(9_000, 2)).collect(),
            budget,
            frame_tokens: 1000,
            has_user_message: true,
            ..InlineRequest::default()
        }
    }

    #[test]
    fn a_warm_cache_keeps_what_the_previous_request_sent() {
        let mut sent = SentBefore::new(None);
        // Budget for one result: the oldest goes as frames, the second stays text.
        let three = ids(3);
        assert_eq!(
            sent.plan(request(0, "head", &three, 2)).tool_results,
            vec![0]
        );
        // A new result and more budget, within the TTL: 0 stays frames, 1 stays text (the
        // cache holds it as text), 2 was the newest (may change form) and is taken.
        let four = ids(4);
        let p = sent.plan(request(60_000, "head", &four, 6));
        assert_eq!((p.tool_results, p.kept_for_cache), (vec![0, 2], 1));
        // Past the TTL every candidate is new again.
        let p = sent.plan(request(60_000 + DEFAULT_CACHE_TTL_MS, "head", &four, 6));
        assert_eq!((p.tool_results, p.kept_for_cache), (vec![0, 1, 2], 0));
        // A changed first message (a compaction) is a cold cache too.
        let mut short = SentBefore::new(Some(1_000));
        short.plan(request(0, "head", &three, 2));
        let p = short.plan(request(10, "summary", &four, 6));
        assert_eq!(p.tool_results, vec![0, 1, 2]);
        // Past a custom TTL.
        let mut short = SentBefore::new(Some(1_000));
        short.plan(request(0, "head", &three, 2));
        assert_eq!(
            short.plan(request(1_000, "head", &four, 6)).tool_results,
            vec![0, 1, 2]
        );
        // A changed id ends the shared prefix: what follows is new.
        let mut sent = SentBefore::new(None);
        sent.plan(request(0, "head", &three, 2));
        let other = vec![
            "other".to_owned(),
            "call_1".to_owned(),
            "call_2".to_owned(),
            "x".to_owned(),
        ];
        let p = sent.plan(request(1, "head", &other, 6));
        assert_eq!((p.tool_results, p.kept_for_cache), (vec![0, 1, 2], 0));
    }

    #[test]
    fn without_budget_everything_goes_as_text_and_is_remembered_so() {
        let mut sent = SentBefore::new(None);
        let three = ids(3);
        let mut r = request(0, "head", &three, 0);
        r.system_prompt = Some(("rules", result(20_000, 1)));
        assert_eq!(sent.plan(r), InlinePlan::default());
        let mut r = request(1, "head", &three, 10);
        r.system_prompt = Some(("rules", result(20_000, 1)));
        let p = sent.plan(r);
        // The results the cache holds (0 and 1; 2 was the newest) stay text, and so does the
        // prompt of the same text: three kept for the cache.
        assert_eq!(
            (p.tool_results, p.system_prompt, p.kept_for_cache),
            (vec![], false, 3)
        );
        assert_eq!(image_budget(true, 20, 3), 17);
        assert_eq!(image_budget(true, 2, 3), 0);
        assert_eq!(image_budget(false, 20, 0), 0);
    }

    #[test]
    fn the_system_prompt_text_each_mode_images() {
        let blocks = |b: &[&str]| b.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(system_target(&blocks(&["a", "b"]), "none", "S", "C"), None);
        assert_eq!(system_target(&blocks(&[""]), "all", "S", "C"), None);
        let all = system_target(&blocks(&["a", "b"]), "all", "S", "C").unwrap();
        assert_eq!(
            (all.scope, all.text.as_str(), all.replacement),
            (SystemScope::All, "a\n\nb", blocks(&["S"]))
        );
        let prompt = "intro\n<repo-rules>\nR1\n</repo-rules>\nmid\n## Context\n<instructions>\nI\n</instructions>\n<repo-rules>\nopen";
        let t = system_target(&blocks(&[prompt, "plain"]), "agents-md", "S", "C").unwrap();
        assert_eq!(t.scope, SystemScope::AgentsMd);
        assert_eq!(
            t.text,
            "<repo-rules>\nR1\n</repo-rules>\n\n## Context\n<instructions>\nI\n</instructions>"
        );
        assert_eq!(
            t.replacement,
            blocks(&["intro\nC\nmid\nC\n<repo-rules>\nopen", "plain"])
        );
        assert_eq!(
            system_target(&blocks(&["no sections"]), "agents-md", "S", "C"),
            None
        );
        // An opening left unclosed is read once: linear on many of them.
        let many = "<repo-rules>\n".repeat(200_000);
        let mut found = Vec::new();
        assert_eq!(
            cut_sections(&many, CONTEXT_SECTIONS[0], "C", &mut found),
            many
        );
        assert!(found.is_empty());
    }

    mod properties {
        use super::super::*;
        use proptest::prelude::*;

        fn candidate() -> impl Strategy<Value = Candidate> {
            (0u64..40_000, 0u32..8, any::<bool>(), any::<bool>()).prop_map(
                |(tokens, frames, stays_text, printable)| Candidate {
                    tokens,
                    frames,
                    stays_text,
                    printable,
                    previous: None,
                },
            )
        }

        proptest! {
            /// The same request again while the cache is warm sends everything in the form it
            /// was sent in; cold, it is planned as the first time.
            #[test]
            fn a_warm_repeat_rewrites_nothing(
                results in prop::collection::vec(candidate(), 0..12),
                system in prop::option::of(candidate()),
                budget in 0u32..30,
                gap in 0i64..2 * DEFAULT_CACHE_TTL_MS,
            ) {
                let ids: Vec<String> = (0..results.len()).map(|k| k.to_string()).collect();
                let request = |now| InlineRequest {
                    now,
                    head: "head",
                    ids: &ids,
                    tool_results: results.clone(),
                    system_prompt: system.map(|c| ("prompt", c)),
                    budget,
                    frame_tokens: 1_000,
                    has_user_message: true,
                };
                let mut sent = SentBefore::new(None);
                let first = sent.plan(request(0));
                let again = sent.plan(request(gap));
                prop_assert_eq!(&again.tool_results, &first.tool_results);
                prop_assert_eq!(again.system_prompt, first.system_prompt);
                if gap >= DEFAULT_CACHE_TTL_MS {
                    prop_assert_eq!(again.kept_for_cache, 0);
                }
            }
        }
    }
}
