//! Cache-aware maintenance (issue 39 item 5): what an in-place rewrite of earlier history costs
//! in the provider's prompt cache, and when the Maintainer's policy lets one run.
//!
//! Every rewrite of a message already sent (a prune's notice, a shake's placeholder, an elided
//! useless result, a dropped image) invalidates the provider's prompt cache from that message
//! on: the next request writes everything after it again instead of reading it, and OpenAI's
//! reasoning models also drop the reasoning items after a change to earlier history. The
//! [`CacheForecast`] of a rewrite says what it costs, with the provider's cache prices as data
//! ([`CACHE_PRICING`]); [`CacheClock`] holds the policy's memory of when the cache was last
//! written (spec: compaction §6.5, §6.6, §6.8 say where pruning runs; `cacheAware` decides
//! whether the threshold prune waits for a break, docs/decisions/cache-aware-maintenance.md).

use crate::context::convert::convert_message;
use crate::context::{build_context, BuildOptions, SessionContext};
use crate::error::Result;
use crate::session::message::{AgentMessage, Content, ContentBlock};
use crate::session::Session;
use crate::tokens::{estimate_message, ByteEstimate, EstimateOptions};

/// A provider's prompt-cache prices, as multiples of its base input-token price, and how long a
/// written prefix lives without a request reading it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CachePricing {
    /// Matched against the model's `api`, else its `provider` (the first row that matches).
    pub key: &'static str,
    /// Price of an input token read from the cache.
    pub read: f64,
    /// Price of an input token written to the cache.
    pub write: f64,
    /// Lifetime of a cached prefix in milliseconds (the default retention).
    pub ttl_ms: i64,
    /// Reasoning items of earlier turns survive a change to earlier history.
    pub reasoning_survives: bool,
}

const MINUTE: i64 = 60_000;

/// The cache prices the forecasts use, per provider API. The last row is the fallback for a
/// provider without a row (no cache: every token at the base price, nothing to lose).
pub const CACHE_PRICING: [CachePricing; 6] = [
    // platform.claude.com/docs/en/build-with-claude/prompt-caching: reads 0.1x, 5-minute
    // writes 1.25x (1-hour writes 2x, opt-in); the default lifetime is 5 minutes.
    CachePricing {
        key: "anthropic-messages",
        read: 0.1,
        write: 1.25,
        ttl_ms: 5 * MINUTE,
        reasoning_survives: true,
    },
    // developers.openai.com/api/docs/guides/prompt-caching: automatic, no write fee, cached
    // input up to 90 % off; in-memory retention is cleared after 5-10 minutes idle. Reasoning
    // items of earlier turns are dropped after a change to earlier history (issue 39).
    CachePricing {
        key: "openai-responses",
        read: 0.1,
        write: 1.0,
        ttl_ms: 5 * MINUTE,
        reasoning_survives: false,
    },
    // developers.openai.com/api/docs/guides/prompt-caching (Chat Completions: same cache;
    // reasoning is not replayed through this API, so nothing to lose).
    CachePricing {
        key: "openai-completions",
        read: 0.1,
        write: 1.0,
        ttl_ms: 5 * MINUTE,
        reasoning_survives: true,
    },
    // ai.google.dev/gemini-api/docs/caching: implicit caching, writes at the input price,
    // hits 90 % off (docs.cloud.google.com … context-cache-overview); no stated lifetime,
    // "requests with a similar prefix in a short amount of time": 5 minutes assumed.
    CachePricing {
        key: "google-generative-ai",
        read: 0.1,
        write: 1.0,
        ttl_ms: 5 * MINUTE,
        reasoning_survives: true,
    },
    // learn.microsoft.com/azure/foundry/openai/how-to/prompt-caching: OpenAI's cache on
    // Azure, in-memory retention cleared within 5-10 minutes of inactivity.
    CachePricing {
        key: "azure-openai-responses",
        read: 0.1,
        write: 1.0,
        ttl_ms: 5 * MINUTE,
        reasoning_survives: false,
    },
    // Fallback: no prompt cache known; a rewrite costs nothing it would have saved.
    CachePricing {
        key: "*",
        read: 1.0,
        write: 1.0,
        ttl_ms: 5 * MINUTE,
        reasoning_survives: true,
    },
];

/// The cache prices of a model's `api` (else its `provider`: `anthropic`, `openai`, `google`
/// name their main API's row), the fallback row otherwise.
pub fn cache_pricing(provider: &str, api: Option<&str>) -> &'static CachePricing {
    let by_provider = match provider {
        "anthropic" => "anthropic-messages",
        "openai" => "openai-responses",
        "google" | "google-vertex" => "google-generative-ai",
        "azure-openai" => "azure-openai-responses",
        other => other,
    };
    let last = &CACHE_PRICING[CACHE_PRICING.len() - 1];
    api.and_then(|a| CACHE_PRICING.iter().find(|p| p.key == a))
        .or_else(|| CACHE_PRICING.iter().find(|p| p.key == by_provider))
        .unwrap_or(last)
}

/// The least a rewrite of earlier history must free to run at a break (like Anthropic's
/// `clear_at_least`): a tenth of the window, at least `floor` (the pass's own minimum).
pub fn break_minimum(window: u64, floor: u64) -> u64 {
    floor.max(window / 10)
}

/// The first message a rewrite changes in the projected request: its index among the LLM
/// messages of the context at the leaf ([`build_context`], converted as `toLlmMessages`
/// converts it) and the entry it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixChange {
    pub message_index: usize,
    pub entry_id: String,
}

/// What a rewrite costs the provider's cache on the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheForecast {
    /// Tokens of the request from the first changed message on, written to the cache again.
    pub rewritten_tokens: u64,
    /// Reasoning blocks of assistant messages after the change the provider drops (0 where
    /// they survive).
    pub reasoning_at_risk: u64,
    /// Tokens the rewrite frees.
    pub tokens_freed: u64,
    /// The next request's input cost without the rewrite minus its cost with it, in base
    /// input tokens (`(rewritten + freed) × read − rewritten × write`): positive when the
    /// rewrite pays for itself on the next request; each later request saves `freed × read`.
    pub net: i64,
}

impl CacheForecast {
    /// The forecast for `rewritten` tokens from the change on, `freed` freed, `reasoning`
    /// blocks after the change, under `p`.
    pub fn new(rewritten: u64, freed: u64, reasoning: u64, p: &CachePricing) -> CacheForecast {
        let without = (rewritten.saturating_add(freed)) as f64 * p.read;
        let with = rewritten as f64 * p.write;
        CacheForecast {
            rewritten_tokens: rewritten,
            reasoning_at_risk: if p.reasoning_survives { 0 } else { reasoning },
            tokens_freed: freed,
            net: (without - with).round() as i64,
        }
    }

    /// `{rewrittenTokens, reasoningAtRisk, tokensFreed, net}`.
    pub fn json(&self) -> String {
        format!(
            "{{\"rewrittenTokens\":{},\"reasoningAtRisk\":{},\"tokensFreed\":{},\"net\":{}}}",
            self.rewritten_tokens, self.reasoning_at_risk, self.tokens_freed, self.net
        )
    }
}

impl PrefixChange {
    /// `{messageIndex, entryId}`.
    pub fn json(&self) -> String {
        format!(
            "{{\"messageIndex\":{},\"entryId\":{}}}",
            self.message_index,
            crate::support::json::js::stringify(&serde_json::Value::from(self.entry_id.as_str()))
        )
    }
}

/// The index among `ctx`'s messages of the first one at or after entry `entry` (an entry
/// index of the session), `None` when every message comes before it.
pub fn first_message_at(ctx: &SessionContext, entry: usize) -> Option<usize> {
    ctx.messages.iter().position(|m| m.entry >= entry)
}

/// The index among the LLM messages `ctx` converts to ([`convert_messages`]: a message
/// becomes zero, one or two) of the first one message `at` of `ctx` converts to.
///
/// [`convert_messages`]: crate::context::convert::convert_messages
pub fn llm_index(session: &Session, ctx: &SessionContext, at: usize) -> usize {
    let mut out = Vec::new();
    let mut n = 0;
    for (pos, m) in ctx.messages.iter().enumerate().take(at) {
        convert_message(&mut out, session, m, ctx.messages.get(pos + 1));
        n += out.len();
        out.clear();
    }
    n
}

/// Estimated tokens of `ctx`'s messages from `from` on, and the reasoning blocks of the
/// assistant messages among them.
fn suffix_of(session: &Session, ctx: &SessionContext, from: usize) -> (u64, u64) {
    let mut tokens = 0u64;
    let mut reasoning = 0u64;
    for m in ctx.messages.iter().skip(from) {
        let msg = m.message(session);
        tokens = tokens.saturating_add(estimate_message(
            &msg,
            &ByteEstimate,
            EstimateOptions::default(),
        ));
        if let AgentMessage::Assistant(a) = &msg {
            if let Content::Blocks(blocks) = &a.content {
                reasoning += blocks
                    .iter()
                    .filter(|b| {
                        matches!(
                            b,
                            ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. }
                        )
                    })
                    .count() as u64;
            }
        }
    }
    (tokens, reasoning)
}

/// Where a rewrite that changed entry `entry_id` (on the leaf's path) changed the request,
/// and its forecast ([`change_forecast`] of that one entry).
pub fn rewrite_forecast(
    session: &Session,
    entry_id: &str,
    freed: u64,
    pricing: &CachePricing,
) -> Result<Option<(PrefixChange, CacheForecast)>> {
    change_forecast(session, &[entry_id], freed, pricing)
}

/// Where a maintenance action changed the request, and its forecast (issue 39 item 5):
/// measured on the session as it is now, after the action (the request the provider gets
/// next), with `freed` tokens it freed. `changed` holds the entries it rewrote or appended
/// (a prune's or a shake's results, an image drop's messages, a compaction's entry, in any
/// order): the first message of the context at or after the earliest of them is where the
/// provider's cache stops matching; a compaction's summary opens the context, so from it on
/// the whole request is written again. An empty `changed` is a new session (a handoff): the
/// whole request is new. `None` when no changed entry carries a message of the context
/// (unknown, or before the latest compaction's kept region).
pub fn change_forecast(
    session: &Session,
    changed: &[&str],
    freed: u64,
    pricing: &CachePricing,
) -> Result<Option<(PrefixChange, CacheForecast)>> {
    let entry = if changed.is_empty() {
        0
    } else {
        match changed.iter().filter_map(|id| session.index_of(id)).min() {
            Some(i) => i,
            None => return Ok(None),
        }
    };
    let ctx = build_context(session, &BuildOptions::default())?;
    let Some(at) = first_message_at(&ctx, entry) else {
        return Ok(None);
    };
    let (rewritten, reasoning) = suffix_of(session, &ctx, at);
    let id = session.entries()[ctx.messages[at].entry].id().to_string();
    Ok(Some((
        PrefixChange {
            message_index: llm_index(session, &ctx, at),
            entry_id: id,
        },
        CacheForecast::new(rewritten, freed, reasoning, pricing),
    )))
}

/// The policy's memory of the provider's cache (`cacheAware`): when the last request was
/// sent and to which model, so that a rewrite of earlier history waits while the cache is
/// warm (spec: compaction §6.6 runs the threshold prune before every threshold check; with
/// `cacheAware` it runs there only when the window needs it, and at a break otherwise).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheClock {
    /// `now` of the last request (ms).
    pub last_request_at: Option<i64>,
    /// The context window and compaction point of its model (0 = unknown).
    pub window: u64,
    pub threshold: u64,
    /// Its provider, for the cache's lifetime.
    pub provider: String,
}

impl CacheClock {
    /// A request is sent at `now` to a model with this window, threshold and provider.
    pub fn requested(&mut self, now: i64, window: u64, threshold: u64, provider: &str) {
        self.last_request_at = Some(now);
        self.window = window;
        self.threshold = threshold;
        if self.provider != provider {
            self.provider = provider.to_string();
        }
    }

    /// Whether the cache the last request wrote may still be alive at `now`.
    pub fn warm(&self, now: i64) -> bool {
        let ttl = cache_pricing(&self.provider, None).ttl_ms;
        // A clock that went back counts as warm: nothing says the cache expired.
        self.last_request_at
            .is_some_and(|t| now.saturating_sub(t) < ttl)
    }

    /// Whether a request of `context_tokens` needs the window's room: over the compaction
    /// point of the last request's model (an unknown window always does).
    pub fn window_needs(&self, context_tokens: u64) -> bool {
        self.threshold == 0 || context_tokens > self.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pricing_rows_by_api_then_provider() {
        assert_eq!(cache_pricing("anthropic", None).write, 1.25);
        assert_eq!(
            cache_pricing("openrouter", Some("openai-responses")).key,
            "openai-responses"
        );
        assert!(!cache_pricing("openai", None).reasoning_survives);
        assert_eq!(cache_pricing("mystery", Some("nope")).key, "*");
        for p in CACHE_PRICING {
            assert!(p.read > 0.0 && p.read <= p.write && p.ttl_ms > 0, "{p:?}");
        }
    }

    #[test]
    fn forecast_weighs_the_rewritten_suffix_against_the_freed_tokens() {
        let anthropic = cache_pricing("anthropic", None);
        // 10,000 tokens written again at 1.25 instead of 30,000 read at 0.1.
        let f = CacheForecast::new(10_000, 20_000, 3, anthropic);
        assert_eq!(f.net, 3_000 - 12_500);
        assert_eq!(f.reasoning_at_risk, 0, "Anthropic keeps earlier thinking");
        let openai = cache_pricing("openai", None);
        let f = CacheForecast::new(1_000, 50_000, 3, openai);
        assert_eq!(f.net, 5_100 - 1_000);
        assert_eq!(f.reasoning_at_risk, 3);
        assert_eq!(
            f.json(),
            r#"{"rewrittenTokens":1000,"reasoningAtRisk":3,"tokensFreed":50000,"net":4100}"#
        );
    }

    #[test]
    fn the_clock_is_warm_within_the_lifetime_only() {
        let mut c = CacheClock::default();
        assert!(!c.warm(0), "no request yet");
        c.requested(1_000, 200_000, 150_000, "anthropic");
        assert!(c.warm(1_000) && c.warm(1_000 + 5 * MINUTE - 1));
        assert!(!c.warm(1_000 + 5 * MINUTE));
        assert!(c.warm(999), "a clock that went back proves no expiry");
        assert!(!c.window_needs(150_000) && c.window_needs(150_001));
        assert_eq!(break_minimum(1_000_000, 20_000), 100_000);
        assert_eq!(break_minimum(32_000, 20_000), 20_000);
    }
}
