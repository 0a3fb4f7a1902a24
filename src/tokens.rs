//! Token accounting (spec: compaction §3): the per-message estimator, usage → context
//! tokens, reserve and threshold, and the `keepRecentTokens` adaptation.

use crate::session::message::{AgentMessage, Content, ContentBlock, Usage};
use crate::settings::{CompactionSettings, Strategy, DEFAULT_RESERVE_TOKENS};

/// Tokens charged per image block (spec: README "Token accounting").
pub const IMAGE_TOKENS: u64 = 1200;
/// Tokens charged per snapcompact frame of a compaction summary (spec: snapcompact §5.3).
pub const FRAME_TOKEN_ESTIMATE: u64 = crate::render::shape::billing::FRAME_TOKEN_ESTIMATE as u64;

/// Counts the tokens of one text fragment. The default is the model-free byte estimate; a
/// host with a real tokenizer supplies its own.
pub trait TokenCounter {
    /// Tokens of `fragment`.
    fn count(&self, fragment: &str) -> u64;

    /// True when this counter is [`ByteEstimate`], whose per-entry counts the session keeps
    /// (`Session::entry_tokens`), so a context estimate can read them instead of parsing.
    fn is_byte_estimate(&self) -> bool {
        false
    }
}

/// The reference's model-free estimate: `(utf8_bytes + 3) >> 2` per fragment, i.e. rounding
/// up per fragment before summing (spec: compaction §3.1).
#[derive(Debug, Clone, Copy, Default)]
pub struct ByteEstimate;

impl TokenCounter for ByteEstimate {
    fn count(&self, fragment: &str) -> u64 {
        (fragment.len() as u64 + 3) >> 2
    }

    fn is_byte_estimate(&self) -> bool {
        true
    }
}

/// Options of the estimator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EstimateOptions {
    /// Leave out thinking signatures, redacted reasoning and server-tool blocks (the
    /// compaction floor counts this way, spec: compaction §3.2).
    pub exclude_encrypted_reasoning: bool,
}

struct Tally<'c> {
    counter: &'c dyn TokenCounter,
    tokens: u64,
}

impl Tally<'_> {
    fn text(&mut self, s: &str) {
        self.tokens += self.counter.count(s);
    }
    /// String content, or each non-empty text block; images add their flat charge.
    fn content(&mut self, c: &Content) {
        match c {
            Content::Text(t) => self.text(t),
            Content::Blocks(blocks) => {
                for b in blocks {
                    match b {
                        ContentBlock::Text { text } if !text.is_empty() => self.text(text),
                        ContentBlock::Image { .. } => self.tokens += IMAGE_TOKENS,
                        _ => {}
                    }
                }
            }
        }
    }
}

/// The provider's tokens per token of the core's estimate of text that a host may meet, low
/// and high: the bounds of the rate a snapcompact commit reads from reported usage when the
/// host has not measured it (`compaction::snapcompact::ArchiveOptions::text_ratio`), and of
/// what the Maintainer's calibration learns (`triggers::calibration`).
pub const TEXT_RATIO_BOUNDS: (f64, f64) = (0.5, 3.0);

/// Estimated tokens of one message (spec: compaction §3.1, the [N] tokenizer rules):
/// - user/developer, custom, toolResult: string content or non-empty text blocks, +1200 per
///   image; a toolResult hidden by `contextOmitted` counts 0;
/// - assistant: text, thinking text and its signature, tool-call name and
///   `JSON.stringify(arguments)`, redacted reasoning, server-tool blocks (signatures and
///   reasoning blobs unless excluded); hidden tool calls count 0;
/// - bashExecution: command and output; pythonExecution: code and output;
///   fileMention: each file's path and content, +1200 per image (both absent from the
///   reference, which counts them 0; they reach the model as user text, so we count them);
/// - branchSummary/compactionSummary: the summary, compaction `blocks` text, and 5024 per
///   frame image.
pub fn estimate_message(
    msg: &AgentMessage,
    counter: &dyn TokenCounter,
    opts: EstimateOptions,
) -> u64 {
    let mut t = Tally { counter, tokens: 0 };
    match msg {
        AgentMessage::User(m) | AgentMessage::Developer(m) => t.content(&m.content),
        AgentMessage::Custom(m) => t.content(&m.content),
        AgentMessage::ToolResult(m) => {
            if crate::session::message::truthy(m.context_omitted.as_ref()) {
                return 0;
            }
            t.content(&m.content)
        }
        AgentMessage::Assistant(m) => match &m.content {
            Content::Text(s) => t.text(s),
            Content::Blocks(blocks) => {
                for b in blocks {
                    match b {
                        ContentBlock::Text { text } => t.text(text),
                        ContentBlock::Thinking {
                            thinking,
                            signature,
                        } => {
                            t.text(thinking);
                            if let Some(sig) = signature
                                .as_deref()
                                .filter(|_| !opts.exclude_encrypted_reasoning)
                            {
                                t.text(sig);
                            }
                        }
                        ContentBlock::ToolCall {
                            name,
                            arguments,
                            context_omitted,
                            ..
                        } => {
                            if !context_omitted {
                                t.text(name);
                                t.text(&crate::support::json::js::stringify(arguments));
                            }
                        }
                        ContentBlock::RedactedThinking { data } => {
                            if !opts.exclude_encrypted_reasoning {
                                t.text(data)
                            }
                        }
                        ContentBlock::Other {
                            payload,
                            block_type,
                        } => {
                            if block_type == "anthropicServerTool"
                                && !opts.exclude_encrypted_reasoning
                            {
                                if let Some(p) = payload {
                                    t.text(&crate::support::json::js::stringify(p));
                                }
                            }
                        }
                        ContentBlock::Image { .. } => t.tokens += IMAGE_TOKENS,
                    }
                }
            }
        },
        AgentMessage::BashExecution(m) => {
            t.text(&m.command);
            t.text(&m.output);
        }
        AgentMessage::PythonExecution(m) => {
            t.text(&m.code);
            t.text(&m.output);
        }
        AgentMessage::FileMention(m) => {
            for f in &m.files {
                t.text(&f.path);
                t.text(&f.content);
                if f.image.is_some() {
                    t.tokens += IMAGE_TOKENS;
                }
            }
        }
        AgentMessage::BranchSummary(m) => t.text(&m.summary),
        AgentMessage::CompactionSummary(m) => {
            t.text(&m.summary);
            if let Some(blocks) = &m.blocks {
                for b in blocks {
                    match b {
                        ContentBlock::Text { text } => t.text(text),
                        _ => t.tokens += FRAME_TOKEN_ESTIMATE,
                    }
                }
            } else if let Some(images) = &m.images {
                t.tokens += images.len() as u64 * FRAME_TOKEN_ESTIMATE;
            }
        }
        AgentMessage::Other => {}
    }
    t.tokens
}

/// JavaScript's `a || b` for a usage count: falls through on 0, NaN and absence.
fn or_else(v: Option<f64>, f: impl FnOnce() -> f64) -> f64 {
    match v {
        Some(x) if x != 0.0 && !x.is_nan() => x,
        _ => f(),
    }
}

/// Tokens occupying the context according to a usage record (spec: compaction §3.2,
/// `calculateContextTokens` [N]): `contextTokens` when reported, else the total minus the
/// orchestration tokens that are never replayed.
pub fn context_tokens(u: &Usage) -> u64 {
    if let Some(ct) = u.context_tokens {
        return ct.max(0.0) as u64;
    }
    let total = or_else(u.total_tokens, || {
        u.input + u.output + u.cache_read + u.cache_write
    });
    let orch = u
        .orchestration
        .as_ref()
        .map_or(0.0, |o| o.input + o.output + o.cache_read);
    (total - orch).max(0.0) as u64
}

/// Tokens of the prompt side of a usage record (`calculatePromptTokens` [N]).
pub fn prompt_tokens(u: &Usage) -> u64 {
    if let Some(ct) = u.context_tokens {
        return ct.max(0.0) as u64;
    }
    let prompt = u.input + u.cache_read + u.cache_write;
    if prompt > 0.0 {
        prompt as u64
    } else {
        context_tokens(u)
    }
}

/// Whether a usage record says anything about context occupancy (`hasContextTokenUsage`
/// [N]): a response-only total does not count.
pub fn has_context_token_usage(u: &Usage) -> bool {
    u.context_tokens.is_some_and(|c| c > 0.0)
        || u.input + u.cache_read + u.cache_write > 0.0
        || context_tokens(u) as f64 > u.output
}

/// The usage of the last assistant message that did not fail (`getLastAssistantUsage`):
/// stopReason neither `aborted` nor `error`, and a usage record present.
pub fn last_assistant_usage<'a>(
    messages: impl DoubleEndedIterator<Item = &'a AgentMessage>,
) -> Option<&'a Usage> {
    messages
        .rev()
        .filter_map(AgentMessage::as_assistant)
        .find(|a| !a.failed() && a.usage.is_some())
        .and_then(|a| a.usage.as_ref())
}

/// The context size of a message list: the last valid usage plus estimates of the messages
/// after it, or the sum of all estimates without usage (`estimateContextTokens`).
pub fn estimate_context_tokens(
    messages: &[AgentMessage],
    counter: &dyn TokenCounter,
) -> ContextEstimate {
    let opts = EstimateOptions::default();
    estimate_context_tokens_by(
        messages.len(),
        |i| {
            messages[i]
                .as_assistant()
                .is_some_and(|a| !a.failed() && a.usage.is_some())
        },
        |i| estimate_message(&messages[i], counter, opts),
        |i| usage_context_tokens(&messages[i]),
    )
}

/// [`context_tokens`] of an assistant message's usage record; 0 for any other message.
pub fn usage_context_tokens(m: &AgentMessage) -> u64 {
    m.as_assistant()
        .and_then(|a| a.usage.as_ref())
        .map_or(0, context_tokens)
}

/// [`estimate_context_tokens`] over `len` messages known by index, so a long list need not
/// be held or parsed at once: `is_usage_turn(i)` tells (cheaply) whether message `i` is an
/// assistant turn that did not fail and has a usage record, `tokens(i)` is its estimate and
/// `usage(i)` the [`context_tokens`] of its usage record. Only the messages from the last
/// usage turn on are asked.
pub fn estimate_context_tokens_by(
    len: usize,
    is_usage_turn: impl Fn(usize) -> bool,
    tokens: impl Fn(usize) -> u64,
    usage: impl Fn(usize) -> u64,
) -> ContextEstimate {
    let last = (0..len).rev().find(|&i| is_usage_turn(i));
    let from = last.map_or(0, |i| i + 1);
    let trailing: u64 = (from..len).map(tokens).sum();
    let usage = last.map_or(0, usage);
    ContextEstimate {
        tokens: usage + trailing,
        usage_tokens: usage,
        trailing_tokens: trailing,
        last_usage_index: last,
    }
}

/// The result of [`estimate_context_tokens`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextEstimate {
    /// Usage tokens plus the estimate of what followed.
    pub tokens: u64,
    /// From the last valid usage record.
    pub usage_tokens: u64,
    /// Estimated for the messages after that record (all messages without usage).
    pub trailing_tokens: u64,
    /// Index of the message whose usage was taken.
    pub last_usage_index: Option<usize>,
}

/// Whether the usage reported at path entry `usage_entry` measures the current context: it
/// does unless the latest compaction on the path (`compaction`) comes after it, in which case
/// it measured the history that compaction replaced (spec: compaction §3.2, §8.2 step 9:
/// `usageTokens` = 0 if the assistant predates the latest compaction). `path` is root first.
pub fn usage_is_current(path: &[usize], compaction: Option<usize>, usage_entry: usize) -> bool {
    let Some(c) = compaction else { return true };
    let at = |e: usize| path.iter().position(|&i| i == e);
    at(usage_entry) > at(c)
}

/// The compaction floor (spec: compaction §3.2 [N]): a provider number shrunk by request
/// hooks cannot hide what is stored locally.
pub fn compaction_context_tokens(provider: i64, stored: i64) -> u64 {
    provider.max(0).max(stored.max(0)) as u64
}

/// `effectiveReserveTokens`: at least 15 % of the window (spec: compaction §3.3).
pub fn effective_reserve_tokens(window: u64, s: &CompactionSettings) -> u64 {
    (window * 15 / 100).max(s.reserve_tokens.unwrap_or(DEFAULT_RESERVE_TOKENS))
}

/// `resolveBudgetReserveTokens`: the small-window rescue — an *unset* reserve that would eat
/// the window falls back to the proportional 15 %; an explicit one is honoured unless it is
/// the whole window.
pub fn budget_reserve_tokens(window: u64, s: &CompactionSettings) -> u64 {
    let r = effective_reserve_tokens(window, s);
    let p = (window * 15 / 100).max(1);
    if (s.reserve_tokens.is_none() && r >= window.saturating_sub(p)) || r >= window {
        p
    } else {
        r
    }
}

/// `resolveThresholdTokens` (spec: compaction §3.3).
pub fn threshold_tokens(window: u64, s: &CompactionSettings) -> u64 {
    let w = window as f64;
    if s.threshold_tokens.is_finite() && s.threshold_tokens > 0.0 {
        // `clamp` with a computed bound keeps its min > max panic, whose message formats
        // floats (Rust's float formatting, ~15 KB of wasm); the bounds are ordered here.
        return s.threshold_tokens.max(1.0).min((w - 1.0).max(1.0)) as u64;
    }
    if !s.threshold_percent.is_finite() || s.threshold_percent <= 0.0 {
        let budget = budget_reserve_tokens(window, s);
        return window.saturating_sub(1).min(window.saturating_sub(budget));
    }
    (w * s.threshold_percent.clamp(1.0, 99.0) / 100.0).floor() as u64
}

/// The default `keepRecentTokens` (spec: compaction §9.2).
pub const DEFAULT_KEEP_RECENT_TOKENS: u64 = 20_000;
/// What the automatic shake (the `default` preset) protects and must save at least (spec:
/// compaction §13 "Shake").
pub const SHAKE_PROTECT_TOKENS: u64 = 16_000;
pub const SHAKE_MIN_SAVINGS: u64 = 4_000;
/// The threshold the default budgets were made for: at or above it every default fits and
/// is used as it is; below it (a small window, or a small threshold on a large one) the
/// budgets are shares of the threshold. Twice the default `keepRecentTokens`, where that
/// default stops fitting under the rule below.
pub const SMALL_THRESHOLD_TOKENS: u64 = 2 * DEFAULT_KEEP_RECENT_TOKENS;

/// The budgets of one context window (spec: compaction §3.3 and the small-window rules of
/// docs/guide/maintainer.md "Small windows"): what a compaction keeps, what the automatic
/// shake protects and what a snapcompact archive may fill, taken from the window's threshold
/// `T`.
///
/// The reference leaves `reserveTokens` unset so that a window too small for the default
/// reserve gets a proportional one (`resolveBudgetReserveTokens`, [`budget_reserve_tokens`]).
/// The same idea, extended to the other budgets, keeps a 32k window working out of the box:
/// - `keepRecentTokens` at its default (20,000, whether left out or written, since settings
///   travel through hosts as plain JSON where "unset" does not survive) becomes
///   `min(20,000, T/2)`; any other value is the user's and is kept, unless it is at or above
///   `T` — then no compaction could summarize anything, and it is clamped to `T/2`
///   ([`WindowBudgets::keep_recent_clamped`], which the trigger machine reports once);
/// - the automatic shake protects `min(16,000, 2T/5)` and needs savings of
///   `min(4,000, T/10)`;
/// - a snapcompact archive, with the kept tail and the request overhead, may fill the
///   window minus the budget reserve; below [`SMALL_THRESHOLD_TOKENS`] only the recovery band
///   (`floor(0.8·T)`), so that the progress guard (§8.5) can pass after it. (Filling the
///   room up to `T`, as the reference does, re-triggers at once in a small window: the
///   scripted agent's 32k snapcompact runs compacted three times in one user turn and lost an
///   overflow that way. The price: a 32k window's archive rarely holds a 5,024-token frame.)
///
/// At a threshold of 40,000 or more (default settings: windows from about 56,400 tokens)
/// every value is the default's, as the reference computes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowBudgets {
    pub context_window: u64,
    /// `resolveThresholdTokens` (0 for an unknown window).
    pub threshold_tokens: u64,
    /// `resolveBudgetReserveTokens`.
    pub reserve_tokens: u64,
    /// The `keepRecentTokens` a compaction uses (before the usage adaptation of §3.4).
    pub keep_recent_tokens: u64,
    /// The setting was at or above the threshold and was clamped.
    pub keep_recent_clamped: bool,
    /// `protectTokens` and `minSavings` of the automatic shake.
    pub shake_protect_tokens: u64,
    pub shake_min_savings: u64,
    /// The most context (archive, kept tail and request overhead) a snapcompact compaction
    /// may leave.
    pub archive_budget_tokens: u64,
}

/// The automatic shake's `(protectTokens, minSavings)` for a threshold (see
/// [`WindowBudgets`]); the preset's own numbers for a threshold of 40,000 or more.
pub fn shake_budgets(threshold: u64) -> (u64, u64) {
    (
        SHAKE_PROTECT_TOKENS.min(threshold * 2 / 5),
        SHAKE_MIN_SAVINGS.min(threshold / 10),
    )
}

/// The budgets of `window` under `s` (see [`WindowBudgets`]). An unknown window (0) keeps
/// every setting and preset as it is.
pub fn window_budgets(window: u64, s: &CompactionSettings) -> WindowBudgets {
    if window == 0 {
        return WindowBudgets {
            context_window: 0,
            threshold_tokens: 0,
            reserve_tokens: 0,
            keep_recent_tokens: s.keep_recent_tokens,
            keep_recent_clamped: false,
            shake_protect_tokens: SHAKE_PROTECT_TOKENS,
            shake_min_savings: SHAKE_MIN_SAVINGS,
            archive_budget_tokens: 0,
        };
    }
    let t = threshold_tokens(window, s);
    let reserve = budget_reserve_tokens(window, s);
    let share = (t / 2).max(1);
    let set = s.keep_recent_tokens;
    let (keep, clamped) = if set == DEFAULT_KEEP_RECENT_TOKENS {
        (set.min(share), false)
    } else if set >= t {
        (share, true)
    } else {
        (set, false)
    };
    let (protect, min_savings) = shake_budgets(t);
    let archive = if t < SMALL_THRESHOLD_TOKENS {
        recovery_band_tokens(t)
    } else {
        window.saturating_sub(reserve)
    };
    WindowBudgets {
        context_window: window,
        threshold_tokens: t,
        reserve_tokens: reserve,
        keep_recent_tokens: keep,
        keep_recent_clamped: clamped,
        shake_protect_tokens: protect,
        shake_min_savings: min_savings,
        archive_budget_tokens: archive,
    }
}

/// The smallest lead, and the smallest growth that refreshes a prepared result.
pub const SPECULATION_LEAD_MIN_TOKENS: u64 = 8_192;
/// The largest lead: it bounds how much the kept tail grows between preparing and committing.
pub const SPECULATION_LEAD_MAX_TOKENS: u64 = 32_000;

/// How far below the threshold background compaction starts preparing (spec: compaction §13): `clamp(floor(0.125 · threshold),
/// 8 192, 32 000)` — derived from the threshold so the band scales with the window.
pub fn speculation_lead_tokens(threshold: u64) -> u64 {
    (threshold / 8).clamp(SPECULATION_LEAD_MIN_TOKENS, SPECULATION_LEAD_MAX_TOKENS)
}

/// `COMPACTION_RECOVERY_BAND = 0.8` applied to a threshold: `floor(0.8 · threshold)` (spec:
/// compaction §8.5). Exact in integers: the float product in the reference never rounds
/// below an integer result.
pub fn recovery_band_tokens(threshold: u64) -> u64 {
    threshold * 4 / 5
}

impl CompactionSettings {
    /// The settings a compaction for a model with this window runs with: `keepRecentTokens`
    /// resolved by [`window_budgets`]. Unchanged (borrowed) for an unknown window or when the
    /// value already fits.
    pub fn for_window(&self, window: u64) -> std::borrow::Cow<'_, CompactionSettings> {
        let keep = window_budgets(window, self).keep_recent_tokens;
        if keep == self.keep_recent_tokens {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut s = self.clone();
        s.keep_recent_tokens = keep;
        std::borrow::Cow::Owned(s)
    }
}

/// `shouldCompact`: strictly above the threshold, unless disabled, strategy `off` or no
/// window.
pub fn should_compact(context_tokens: u64, window: u64, s: &CompactionSettings) -> bool {
    if !s.enabled || s.strategy == Strategy::Off || window == 0 {
        return false;
    }
    context_tokens > threshold_tokens(window, s)
}

/// The `keepRecentTokens` adaptation (spec: compaction §3.4): local estimates undercount
/// provider billing, so the kept tail shrinks by `ratio = promptTokens / estimate` when the
/// ratio is above 1. Returns `(effective keep, ratio)`.
pub fn adapt_keep_recent_tokens(keep: u64, prompt_tokens: u64, estimate: u64) -> (u64, f64) {
    let ratio = if estimate == 0 {
        0.0
    } else {
        prompt_tokens as f64 / estimate as f64
    };
    if ratio.is_finite() && ratio > 1.0 {
        (((keep as f64 / ratio).floor() as u64).max(1), ratio)
    } else {
        (keep, ratio)
    }
}

/// Per-entry estimates of a session (spec: compaction §3.1), memoized by the session.
impl crate::session::Session {
    /// Estimated tokens of the message an entry carries (0 for entries without one or with
    /// an unreadable body), with the default byte estimator. Memoized per entry; edits of
    /// the entry invalidate it.
    pub fn entry_tokens(&self, index: usize, opts: EstimateOptions) -> u64 {
        self.memoized_entry_tokens(index, opts.exclude_encrypted_reasoning, |m| {
            estimate_message(m, &ByteEstimate, opts)
        })
    }
}

/// Checks the facts the load pass recorded (`Session::recorded_facts`) against the facts a
/// parse of each message gives (`Session::parsed_facts`, with [`estimate_message`]) on every
/// entry that has them: token estimates with and without encrypted reasoning, the context
/// head, tool result facts, file calls, usage. Returns how many entries were compared, or
/// the first difference. The property tests and the `load` fuzz target run it.
pub fn verify_recorded_facts(s: &crate::session::Session) -> Result<usize, String> {
    let mut compared = 0;
    for i in 0..s.len() {
        let Some(recorded) = s.recorded_facts(i) else {
            continue;
        };
        let parsed = s.parsed_facts(i, |m, excluding| {
            estimate_message(
                m,
                &ByteEstimate,
                EstimateOptions {
                    exclude_encrypted_reasoning: excluding,
                },
            )
        });
        if recorded != parsed {
            return Err(format!(
                "entry {} (line {}): recorded {recorded:?}, parsed {parsed:?}",
                s.entries()[i].id(),
                s.line_number(i)
            ));
        }
        compared += 1;
    }
    Ok(compared)
}

/// pi-family sessions (pi 1.6 `estimateTokens`; `conformance/pi-1.6`): chars/4 rounded up,
/// counting string content or text blocks (+4800 chars per image) for user, custom and
/// tool-result messages; text, thinking text and tool calls (name + `JSON.stringify`
/// of the arguments) for assistants — no signatures, so a redacted block counts nothing
/// (case 04); the summary of summaries; command and output of a bash execution; and for a
/// system message its content, its sections and `JSON.stringify(toolsAdded)`. Lengths are
/// UTF-16 units, as JavaScript counts them.
pub fn estimate_pi_message(m: &serde_json::Value) -> u64 {
    use serde_json::Value;
    fn len(s: &str) -> u64 {
        s.encode_utf16().count() as u64
    }
    fn text_and_images(c: Option<&Value>) -> u64 {
        match c {
            Some(Value::String(s)) => len(s),
            Some(Value::Array(blocks)) => blocks
                .iter()
                .map(|b| match b.get("type").and_then(Value::as_str) {
                    Some("text") => b.get("text").and_then(Value::as_str).map_or(0, len),
                    Some("image") => 4800,
                    _ => 0,
                })
                .sum(),
            _ => 0,
        }
    }
    let s = |k: &str| m.get(k).and_then(Value::as_str).map_or(0, len);
    let chars = match m.get("role").and_then(Value::as_str) {
        Some("system") => {
            let sections: u64 = m
                .get("sections")
                .and_then(Value::as_object)
                .map_or(0, |o| o.values().filter_map(Value::as_str).map(len).sum());
            let tools = m
                .get("toolsAdded")
                .filter(|t| !t.is_null())
                .map_or(0, |t| len(&crate::support::json::js::stringify(t)));
            text_and_images(m.get("content")) + sections + tools
        }
        Some("user" | "custom" | "toolResult") => text_and_images(m.get("content")),
        Some("assistant") => match m.get("content") {
            Some(Value::Array(blocks)) => blocks
                .iter()
                .map(|b| match b.get("type").and_then(Value::as_str) {
                    Some("text") => b.get("text").and_then(Value::as_str).map_or(0, len),
                    Some("thinking") => b.get("thinking").and_then(Value::as_str).map_or(0, len),
                    Some("toolCall") => {
                        b.get("name").and_then(Value::as_str).map_or(0, len)
                            + b.get("arguments")
                                .map_or(0, |a| len(&crate::support::json::js::stringify(a)))
                    }
                    _ => 0,
                })
                .sum(),
            _ => 0,
        },
        Some("bashExecution") => s("command") + s("output"),
        Some("branchSummary" | "compactionSummary") => s("summary"),
        _ => return 0,
    };
    chars.div_ceil(4)
}

/// pi's `calculateContextTokens` of an assistant message's usage (pi 1.6): `totalTokens`, or
/// the sum of its parts; `None` for other messages, failed turns and usage that says 0.
pub fn pi_usage_tokens(m: &serde_json::Value) -> Option<u64> {
    use serde_json::Value;
    if m.get("role").and_then(Value::as_str) != Some("assistant") {
        return None;
    }
    if matches!(
        m.get("stopReason").and_then(Value::as_str),
        Some("aborted" | "error")
    ) {
        return None;
    }
    let u = m.get("usage")?.as_object()?;
    let n = |k: &str| u.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let total = match n("totalTokens") {
        t if t != 0.0 && !t.is_nan() => t,
        _ => n("input") + n("output") + n("cacheRead") + n("cacheWrite"),
    };
    (total > 0.0).then_some(total as u64)
}

/// [`estimate_pi_message`] of the current system message of a pi context (pi-ai
/// `getCurrentSystemMessage`: every system message replayed in order — content joined by blank
/// lines, sections set or removed (`null`), tools added or removed by name), counted as it is
/// replayed rather than built; 0 when there is none.
pub fn pi_current_system_tokens(messages: &[serde_json::Value]) -> u64 {
    use serde_json::Value;
    let len = |s: &str| s.encode_utf16().count() as u64;
    let (mut text, mut parts, mut seen) = (0u64, 0u64, false);
    let mut sections: Vec<(&str, u64)> = Vec::new();
    let mut tools: Vec<(&str, u64)> = Vec::new();
    for m in messages {
        if m.get("role").and_then(Value::as_str) != Some("system") {
            continue;
        }
        seen = true;
        let n: u64 = match m.get("content") {
            Some(Value::String(s)) => len(s),
            Some(Value::Array(b)) => b
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .map(len)
                .sum(),
            _ => 0,
        };
        if n > 0 {
            text += n;
            parts += 1;
        }
        if let Some(o) = m.get("sections").and_then(Value::as_object) {
            for (k, v) in o {
                sections.retain(|(name, _)| name != k);
                if !v.is_null() {
                    sections.push((k, v.as_str().map_or(0, len)));
                }
            }
        }
        for t in m
            .get("toolsAdded")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = t.get("name").and_then(Value::as_str) else {
                continue;
            };
            let n = len(&crate::support::json::js::stringify(t));
            match tools.iter_mut().find(|(have, _)| *have == name) {
                Some(slot) => slot.1 = n,
                None => tools.push((name, n)),
            }
        }
        for t in m
            .get("toolsRemoved")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(name) = t.get("name").and_then(Value::as_str).or(t.as_str()) {
                tools.retain(|(have, _)| *have != name);
            }
        }
    }
    if !seen {
        return 0;
    }
    // Content joined by "\n\n"; `JSON.stringify(toolsAdded)`: `[`, `]` and a comma between.
    let joined = text + 2 * parts.saturating_sub(1);
    let listed: u64 = tools.iter().map(|t| t.1).sum();
    let tools = if tools.is_empty() {
        0
    } else {
        listed + tools.len() as u64 + 1
    };
    (joined + sections.iter().map(|s| s.1).sum::<u64>() + tools).div_ceil(4)
}

#[cfg(test)]
mod tests {

    #[test]
    fn usage_is_current_only_after_the_latest_compaction() {
        let path = [0, 1, 2, 3, 4];
        // No compaction: any usage on the path is the current context's.
        assert!(usage_is_current(&path, None, 1));
        // A kept reply before the compaction (entry 3) measured the replaced history.
        assert!(!usage_is_current(&path, Some(3), 1));
        assert!(!usage_is_current(&path, Some(3), 2));
        assert!(usage_is_current(&path, Some(3), 4));
        // A usage entry off the path is not current.
        assert!(!usage_is_current(&path, Some(3), 9));
    }
    use super::*;
    use serde_json::json;

    fn usage(v: serde_json::Value) -> Usage {
        Usage::parse(&v.to_string()).unwrap()
    }
    fn msg(v: serde_json::Value) -> AgentMessage {
        AgentMessage::parse(&v.to_string(), None).unwrap()
    }
    fn settings(v: serde_json::Value) -> CompactionSettings {
        CompactionSettings::from_json(&v).unwrap()
    }

    /// spec: compaction §10.1 case 1–2.
    #[test]
    fn usage_to_context_tokens() {
        let u = usage(
            json!({"input":1000,"output":500,"cacheRead":200,"cacheWrite":100,"totalTokens":1800}),
        );
        assert_eq!(context_tokens(&u), 1800);
        let u = usage(json!({"input":1000,"output":500,"cacheRead":200,"cacheWrite":100}));
        assert_eq!(context_tokens(&u), 1800, "sum when totalTokens is absent");
        assert_eq!(context_tokens(&usage(json!({}))), 0);
        let u = usage(json!({"input":0,"output":0,"contextTokens":120000}));
        assert_eq!(context_tokens(&u), 120_000);
        assert!(has_context_token_usage(&u));
        assert!(!has_context_token_usage(&usage(json!({"contextTokens":0}))));
        assert!(!has_context_token_usage(&usage(json!({"output":29}))));
        assert!(has_context_token_usage(&usage(
            json!({"output":29,"totalTokens":120000})
        )));
        let u = usage(json!({"totalTokens":5000,"orchestration":{"input":1000,"output":500}}));
        assert_eq!(context_tokens(&u), 3500);
        assert_eq!(
            prompt_tokens(&usage(json!({"input":10,"output":5,"cacheRead":3}))),
            13
        );
        assert_eq!(
            prompt_tokens(&usage(json!({"output":5,"totalTokens":9}))),
            9
        );
    }

    /// spec: compaction §10.1 case 3.
    #[test]
    fn last_assistant_usage_skips_failed_turns() {
        let a = |input: u64, stop: &str| {
            msg(
                json!({"role":"assistant","content":[],"usage":{"input":input,"output":1},"stopReason":stop}),
            )
        };
        let u = || msg(json!({"role":"user","content":"q"}));
        let ms = [u(), a(100, "stop"), u(), a(200, "stop")];
        assert_eq!(
            last_assistant_usage(ms.iter()).map(|u| u.input),
            Some(200.0)
        );
        let ms = [u(), a(100, "stop"), u(), a(300, "aborted")];
        assert_eq!(
            last_assistant_usage(ms.iter()).map(|u| u.input),
            Some(100.0)
        );
        assert!(last_assistant_usage([u()].iter()).is_none());
        let est = estimate_context_tokens(
            &[
                u(),
                a(100, "stop"),
                msg(json!({"role":"user","content":"12345678"})),
            ],
            &ByteEstimate,
        );
        assert_eq!(est.tokens, 101 + 2);
        assert_eq!(est.last_usage_index, Some(1));
    }

    /// spec: compaction §10.1 case 4 and the worked examples of §3.3.
    #[test]
    fn thresholds() {
        let w = 100_000;
        let s = settings(json!({"reserveTokens": 10000}));
        assert_eq!(threshold_tokens(w, &s), 85_000);
        assert!(should_compact(95_000, w, &s));
        assert!(should_compact(86_000, w, &s));
        assert!(!should_compact(84_000, w, &s));
        assert!(!should_compact(
            95_000,
            w,
            &settings(json!({"reserveTokens":10000,"enabled":false}))
        ));
        let unset = settings(json!({}));
        assert_eq!(threshold_tokens(16_385, &unset), 13_928);
        assert!(!should_compact(10_000, 16_385, &unset));
        assert!(should_compact(13_929, 16_385, &unset));
        let explicit = settings(json!({"reserveTokens": 16384}));
        assert_eq!(threshold_tokens(16_385, &explicit), 1);
        assert!(should_compact(2, 16_385, &explicit));
        let s = settings(json!({"reserveTokens": 90000}));
        assert_eq!(threshold_tokens(w, &s), 10_000);
        assert!(!should_compact(10_000, w, &s));
        assert!(should_compact(10_001, w, &s));
        let s = settings(json!({"thresholdPercent": 90}));
        assert!(!should_compact(89_000, w, &s));
        assert!(should_compact(90_001, w, &s));
        let s = settings(json!({"reserveTokens": 30000}));
        assert!(!should_compact(70_000, w, &s));
        assert!(should_compact(70_001, w, &s));
        let s = settings(json!({"strategy":"off","thresholdPercent":1}));
        assert!(!should_compact(99_000, w, &s));
        let s = settings(json!({"thresholdTokens": 500000}));
        assert_eq!(threshold_tokens(w, &s), 99_999);
        assert!(!should_compact(1, 0, &unset));
    }

    /// spec: compaction §10.1 case 5.
    #[test]
    fn compaction_floor() {
        assert_eq!(compaction_context_tokens(20_000, 90_000), 90_000);
        assert_eq!(compaction_context_tokens(85_000, 80_000), 85_000);
        assert_eq!(compaction_context_tokens(-5, -10), 0);
        assert_eq!(compaction_context_tokens(-5, 100), 100);
        let s = settings(json!({"reserveTokens": 10000}));
        assert!(!should_compact(20_000, 100_000, &s));
        assert!(should_compact(
            compaction_context_tokens(20_000, 95_000),
            100_000,
            &s
        ));
    }

    /// spec: compaction §10.1 case 6.
    #[test]
    fn encrypted_reasoning_floor() {
        let m = msg(json!({"role":"assistant","content":[
            {"type":"thinking","thinking":"short","thinkingSignature":"blob ".repeat(8000)},
            {"type":"text","text":"done"}]}));
        let full = estimate_message(&m, &ByteEstimate, EstimateOptions::default());
        let floored = estimate_message(
            &m,
            &ByteEstimate,
            EstimateOptions {
                exclude_encrypted_reasoning: true,
            },
        );
        assert!(full > floored + 1000);
        assert!(floored < 50);
        let r = msg(
            json!({"role":"toolResult","toolCallId":"c","toolName":"grep",
            "content":[{"type":"text","text":"alpha beta gamma ".repeat(2000)}],"isError":false}),
        );
        assert!(
            estimate_message(
                &r,
                &ByteEstimate,
                EstimateOptions {
                    exclude_encrypted_reasoning: true
                }
            ) > 1000
        );
    }

    #[test]
    fn estimator_rules_per_role() {
        let e = |v| estimate_message(&msg(v), &ByteEstimate, EstimateOptions::default());
        // Rounding happens per fragment: 5 + 5 bytes = 2 + 2, not 3.
        assert_eq!(
            e(
                json!({"role":"user","content":[{"type":"text","text":"hello"},{"type":"text","text":"world"}]})
            ),
            4
        );
        assert_eq!(
            e(
                json!({"role":"user","content":[{"type":"image","data":"x","mimeType":"image/png"}]})
            ),
            1200
        );
        // Tool call: name + JSON.stringify(arguments).
        assert_eq!(
            e(
                json!({"role":"assistant","content":[{"type":"toolCall","id":"c","name":"read","arguments":{"path":"a.ts"}}]})
            ),
            1 + 4
        );
        assert_eq!(
            e(json!({"role":"bashExecution","command":"ls","output":"abcde"})),
            1 + 2
        );
        assert_eq!(
            e(json!({"role":"compactionSummary","summary":"abcd","images":[{}, {}]})),
            1 + 2 * 5024
        );
        assert_eq!(
            e(
                json!({"role":"toolResult","content":[{"type":"text","text":"abcd"}],"contextOmitted":true})
            ),
            0
        );
        assert_eq!(
            e(json!({"role":"custom","customType":"x","content":"é"})),
            1
        );
    }

    #[test]
    fn keep_recent_adaptation() {
        assert_eq!(adapt_keep_recent_tokens(20_000, 200, 100), (10_000, 2.0));
        assert_eq!(adapt_keep_recent_tokens(20_000, 50, 100).0, 20_000);
        assert_eq!(adapt_keep_recent_tokens(20_000, 50, 0), (20_000, 0.0));
        assert_eq!(adapt_keep_recent_tokens(1, 1_000_000, 1).0, 1);
    }
}
