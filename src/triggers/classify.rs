//! The error classifier (spec: compaction §8.2 overflow detection and the [N] decision tree,
//! steps 2–5): what a failed or suspicious turn means — a context overflow, a payload the
//! provider refused for its bytes or media, a rate limit, a transient fault, an auth failure,
//! another rejected request, a silent overflow or a truncated answer.
//!
//! Table-driven: every provider's wordings and error codes are data (one const table per
//! provider, each naming the pages its wordings come from), matched against the lower-case
//! text in one pass; HTTP statuses are data too. The §8.2 list of the spec is one of the
//! tables and keeps its meaning.

use crate::session::message::StopReason;

/// What a piece of evidence says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A context overflow, in a provider's words.
    Overflow,
    /// A numeric limit that media budgets word the same way (`exceeds the limit of <n>`): an
    /// overflow unless a payload wording says otherwise.
    WeakOverflow,
    /// The request's size in bytes was refused (HTTP 413-like).
    Payload,
    /// An attachment's size was refused (a payload rejection about media).
    Media,
    /// A word that ties a payload rejection to attachments.
    MediaWord,
    RateLimit,
    Transient,
    Auth,
    /// Only carries the reported numbers of an overflow (`n_ctx`, …).
    Numbers,
}

/// What the `#` of a pattern hold, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Nums {
    No,
    Limit,
    Requested,
    LimitRequested,
    RequestedLimit,
}

/// A table's wordings, packed into one string (one data segment, no per-rule pointers): one
/// line per wording, `<kind><nums><pattern>\n`. The kind is a letter of [`kind`], the numbers
/// one of [`nums`]; the pattern is lower case (`#` one or more digits, `*` any text, `~` a space
/// or an underscore; it starts with a literal character).
type Rules = &'static str;

/// The [`Kind`] of a rule line's first byte.
fn kind(b: u8) -> Option<Kind> {
    Some(match b {
        b'O' => Overflow,
        b'W' => WeakOverflow,
        b'P' => Payload,
        b'M' => Media,
        b'w' => MediaWord,
        b'R' => RateLimit,
        b'T' => Transient,
        b'A' => Auth,
        b'N' => Numbers,
        _ => return None,
    })
}

/// The [`Nums`] of a rule line's second byte.
fn nums(b: u8) -> Nums {
    match b {
        b'l' => Limit,
        b'r' => Requested,
        b'L' => LimitRequested,
        b'R' => RequestedLimit,
        _ => No,
    }
}

/// Every rule of every table: its pattern, kind and numbers.
fn rules() -> impl Iterator<Item = (&'static str, Kind, Nums)> {
    TABLES.iter().flat_map(|t| t.rules.lines()).filter_map(|l| {
        let b = l.as_bytes();
        Some((l.get(2..)?, kind(*b.first()?)?, nums(*b.get(1)?)))
    })
}

use Kind::*;
use Nums::*;

/// A provider's wordings and the statuses it gives a meaning of its own.
struct Table {
    rules: Rules,
    statuses: &'static [(u16, Kind)],
}

/// spec: compaction §8.2 — the overflow list (case-insensitive), kept as it is.
const SPEC: Table = Table {
    rules: concat!(
        "O-prompt is too long\n",
        "O-exceeds the context window\n",
        "O-input token count*exceeds the maximum\n",
        "Olmaximum prompt length is #\n",
        "O-reduce the length of the messages\n",
        "Olmaximum context length is # tokens\n",
        "Wlexceeds the limit of #\n",
        "O-exceeds the available context size\n",
        "O-greater than the context length\n",
        "O-context~length~exceeded\n",
        "O-too many tokens\n",
        "O-token limit exceeded\n",
        // Our payload list (the [N] step 2 rejection) and the words that make it about media.
        "P-payload too large\n",
        "P-request entity too large\n",
        "P-request~too~large\n",
        "P-request size exceeds\n",
        "w-image\n",
        "w-media\n",
        "w-attachment\n",
        "w-pdf\n",
    ),
    statuses: &[],
};

/// OpenAI (and every server speaking its error format): the `context_length_exceeded` and
/// `string_above_max_length` codes, `rate_limit_exceeded`. Wordings from
/// https://github.com/crewAIInc/crewAI-examples/issues/121,
/// https://github.com/Azure-Samples/azure-search-openai-demo/issues/1199,
/// https://github.com/vanna-ai/vanna-flask/issues/11.
const OPENAI: Table = Table {
    rules: concat!(
        "OLmaximum context length is # tokens. however, you requested # tokens\n",
        "OLmaximum context length is # tokens. however, your messages resulted in # tokens\n",
        "OLmaximum context length is # tokens, however you requested # tokens\n",
        "P-string_above_max_length\n",
        "R-rate_limit_exceeded\n",
        "R-rate limit reached for\n",
        "R-on tokens per min\n",
        "A-invalid_api_key\n",
        "A-incorrect api key\n",
    ),
    statuses: &[],
};

/// Azure OpenAI words errors as OpenAI does (`context_length_exceeded` with `model_error`):
/// https://github.com/Azure/azure-sdk-for-net/issues/41892,
/// https://github.com/microsoft/kernel-memory/issues/516. Nothing of its own.
const AZURE: Table = Table {
    rules: "",
    statuses: &[],
};

/// Anthropic (Messages API; also Claude on Bedrock and Vertex): `prompt is too long: <n>
/// tokens > <m> maximum`, 413 `request_too_large`, the image limits, `rate_limit_error`, 529
/// `overloaded_error`. https://github.com/anthropics/claude-code/issues/12186, …/10314,
/// …/6380, …/10612, …/9375, …/5769, https://github.com/anthropics/anthropic-sdk-typescript/issues/616.
const ANTHROPIC: Table = Table {
    rules: concat!(
        "ORprompt is too long: # tokens > #\n",
        "O-exceeds model context window\n",
        "P-request exceeds the maximum size\n",
        "M-image exceeds # mb maximum\n",
        "M-image dimensions exceed max allowed size\n",
        "R-rate_limit_error\n",
        "R-exceed your account's rate limit\n",
        "T-overloaded_error\n",
        "A-authentication_error\n",
        "A-permission_error\n",
    ),
    statuses: &[(529, Transient)],
};

/// Amazon Bedrock: `ValidationException: Input is too long for requested model.`, the
/// `expected maxLength: <n>, actual: <m>` validation, `ThrottlingException`.
/// https://github.com/aws-samples/bedrock-chat/issues/95,
/// https://github.com/aws-samples/assessment-generator/issues/2,
/// https://github.com/ryanadoty/Amazon-Bedrock-Amazon-RDS-POC/issues/9.
const BEDROCK: Table = Table {
    rules: concat!(
        "O-input is too long for requested model\n",
        "OLexpected maxlength: #, actual: #\n",
        "R-throttlingexception\n",
        // The throttle's message, also without its exception's name ("Too many tokens, please
        // wait before trying again."): https://github.com/aws-samples/amazon-bedrock-client-for-mac/issues/99.
        "R-please wait before trying again\n",
        "T-serviceunavailableexception\n",
        "T-modelnotreadyexception\n",
        "A-accessdeniedexception\n",
        "A-unrecognizedclientexception\n",
    ),
    statuses: &[],
};

/// Gemini (AI Studio and Vertex AI): 400 `INVALID_ARGUMENT` `The input token count (<n>)
/// exceeds the maximum number of tokens allowed (<m>).`, 429 `RESOURCE_EXHAUSTED`, a file
/// part over its size limit.
/// https://github.com/google-gemini/gemini-cli/issues/6678, …/4118, …/27197.
const GEMINI: Table = Table {
    rules: concat!(
        "ORinput token count (#) exceeds the maximum number of tokens allowed (#)\n",
        "R-resource_exhausted\n",
        "A-api key not valid\n",
        "T-internal error has occurred\n",
        // A file part over its size limit (400 INVALID_ARGUMENT, no 413):
        // https://github.com/googleapis/js-genai/issues/1391.
        "M-exceeds max allowed file size\n",
    ),
    statuses: &[],
};

/// Vertex AI serves Gemini's and Anthropic's wordings (tables above); nothing of its own.
const VERTEX: Table = Table {
    rules: "",
    statuses: &[],
};

/// Mistral: `Too many tokens in batch. Max is <n> got <m>` (the §8.2 `too many tokens`).
/// https://github.com/aurelio-labs/semantic-router/issues/297. Its chat endpoint's overflow
/// wording was not found.
const MISTRAL: Table = Table {
    rules: "OLtoo many tokens in batch. max is # got #\n",
    statuses: &[],
};

/// xAI: `This model's maximum prompt length is <n> but the request contains <m> tokens.`
/// https://github.com/cline/cline/issues/3120.
const XAI: Table = Table {
    rules: "OLmaximum prompt length is # but the request contains # tokens\n",
    statuses: &[],
};

/// Groq: the OpenAI format; its tokens-per-minute limit answers 413 `rate_limit_exceeded`
/// (`Request too large for model … on tokens per minute (TPM)`), a rate limit, not a payload.
/// https://github.com/OpenHands/OpenHands/issues/1902,
/// https://github.com/HunorLaczko/ha-groq-cloud-api/issues/27,
/// https://github.com/continuedev/continue/issues/10920.
/// Its flex tier at capacity answers 498 `capacity_exceeded`, to be retried:
/// https://console.groq.com/docs/flex-processing.
const GROQ: Table = Table {
    rules: concat!(
        "R-on tokens per minute\n",
        "R-on tokens per day\n",
        "T-capacity_exceeded\n",
    ),
    statuses: &[(498, Transient)],
};

/// Cerebras: `Please reduce the length of the messages or completion. Current length is <n>
/// while limit is <m>`. https://github.com/cline/cline/issues/5140. Its per-minute limits
/// (429) read `Tokens per minute limit exceeded - too many tokens processed.` (the §8.2 `too
/// many tokens`, a rate here) and `Requests per minute limit exceeded - too many requests
/// sent.`: https://github.com/continuedev/continue/issues/9800,
/// https://github.com/nminaya/grammar-nazi-bot/issues/954.
const CEREBRAS: Table = Table {
    rules: concat!(
        "ORcurrent length is # while limit is #\n",
        "R-per minute limit exceeded\n",
        "R-too_many_requests_error\n",
    ),
    statuses: &[],
};

/// DeepSeek words overflows as OpenAI does (code `invalid_request_error`):
/// https://github.com/FoundationAgents/OpenManus/issues/79. Nothing of its own.
const DEEPSEEK: Table = Table {
    rules: "",
    statuses: &[],
};

/// OpenRouter: `This endpoint's maximum context length is <n> tokens. However, you requested
/// about <m> tokens`. https://github.com/OpenHands/OpenHands/issues/9937.
const OPENROUTER: Table = Table {
    rules: "OLmaximum context length is # tokens. however, you requested about # tokens\n",
    statuses: &[],
};

/// Together (a text-generation-inference server): `Input validation error: `inputs` tokens +
/// `max_new_tokens` must be <= <n>. Given: <m> `inputs` tokens`.
/// https://github.com/stanford-crfm/helm/pull/2079.
const TOGETHER: Table = Table {
    rules: "OL`inputs` tokens + `max_new_tokens` must be <= #. given: # `inputs` tokens\n",
    statuses: &[],
};

/// Fireworks: `The prompt is too long: <n>, model maximum context length: <m>`
/// (https://github.com/fw-ai/cookbook/issues/134); its other errors are in the OpenAI format.
const FIREWORKS: Table = Table {
    rules: "ORprompt is too long: #, model maximum context length: #\n",
    statuses: &[],
};

/// Ollama: `the input length exceeds the context length` (400).
/// https://github.com/nano-step/nano-brain/issues/208. Ollama otherwise truncates the
/// prompt silently: the usage check (`silent_overflow`) is what sees it.
const OLLAMA: Table = Table {
    rules: "O-input length exceeds the context length\n",
    statuses: &[],
};

/// llama.cpp server: `exceed_context_size_error` with `n_prompt_tokens` and `n_ctx`,
/// `request (<n> tokens) exceeds the available context size (<m> tokens)`, the 500 `Context
/// size has been exceeded.`; llama-cpp-python's `Requested tokens (<n>) exceed context window
/// of <m>`. https://github.com/ggml-org/llama.cpp/pull/15780, …/issues/19774,
/// https://github.com/fedora-copr/logdetective-website/pull/193.
const LLAMA_CPP: Table = Table {
    rules: concat!(
        "O-exceed_context_size_error\n",
        "ORrequest (# tokens) exceeds the available context size (# tokens)\n",
        "O-context size has been exceeded\n",
        "ORrequested tokens (#) exceed context window of #\n",
        "Nrn_prompt_tokens\":#\n",
        "Nln_ctx\":#\n",
    ),
    statuses: &[],
};

/// vLLM words overflows as OpenAI does (`BadRequestError`, code 400):
/// https://github.com/vllm-project/vllm/issues/20409, https://github.com/ogx-ai/ogx/issues/4534.
const VLLM: Table = Table {
    rules: "",
    statuses: &[],
};

/// LM Studio: `The number of tokens to keep from the initial prompt is greater than the context
/// length (n_keep: <n>>= n_ctx: <m>)`, `Trying to keep the first <n> tokens when context the
/// overflows. However, the model is loaded with context length of only <m> tokens`, `Cannot
/// truncate prompt with n_keep (<n>) >= n_ctx (<m>)`.
/// https://github.com/Gitlawb/openclaude/issues/353,
/// https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/546,
/// https://github.com/anomalyco/opencode/issues/11141.
const LM_STUDIO: Table = Table {
    rules: concat!(
        "ORn_keep: #>= n_ctx: #\n",
        "ORn_keep (#) >= n_ctx (#)\n",
        "Ortrying to keep the first # tokens when context the overflows\n",
        "Nlloaded with context length of only # tokens\n",
    ),
    statuses: &[],
};

/// HTTP and transport wordings every client and gateway uses (our list), and the statuses.
const GENERIC: Table = Table {
    rules: concat!(
        "R-rate~limit\n",
        "R-too many requests\n",
        "T-overloaded\n",
        "T-service unavailable\n",
        "T-bad gateway\n",
        "T-gateway timeout\n",
        "T-internal server error\n",
        "T-internal error\n",
        "T-server_error\n",
        "T-timed out\n",
        "T-timeout\n",
        "T-deadline exceeded\n",
        "T-econnreset\n",
        "T-econnrefused\n",
        "T-socket hang up\n",
        "T-fetch failed\n",
        "T-upstream connect error\n",
        "T-connection error\n",
        "T-network error\n",
        "A-unauthorized\n",
        "A-invalid api key\n",
    ),
    statuses: &[
        (401, Auth),
        (403, Auth),
        (408, Transient),
        (413, Payload),
        (429, RateLimit),
    ],
};

/// Every table, matched together. The order only decides which numbers an overflow reports
/// when several wordings carry them (the first).
const TABLES: [&Table; 20] = [
    &OPENAI,
    &AZURE,
    &ANTHROPIC,
    &BEDROCK,
    &GEMINI,
    &VERTEX,
    &MISTRAL,
    &XAI,
    &GROQ,
    &CEREBRAS,
    &DEEPSEEK,
    &OPENROUTER,
    &TOGETHER,
    &FIREWORKS,
    &OLLAMA,
    &LLAMA_CPP,
    &VLLM,
    &LM_STUDIO,
    &SPEC,
    &GENERIC,
];

/// The class of a failure (spec: compaction §8.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The provider says the context overflowed; the limit and the requested size when its
    /// text carries them.
    ContextOverflow {
        limit: Option<u64>,
        requested: Option<u64>,
    },
    /// An HTTP 413-like rejection of the request's bytes, or of an attachment (`media`): not
    /// a token problem (the [N] tree's step 2).
    PayloadTooLarge {
        media: bool,
    },
    /// Too many requests or tokens per unit of time; `retry_after_ms` when given.
    RateLimit {
        retry_after_ms: Option<u64>,
    },
    /// 5xx, overloaded, time-outs, connection trouble.
    Transient,
    /// 401/403, a bad or missing key.
    Auth,
    /// Another 4xx.
    InvalidRequest,
    /// A `stop` whose reported input (input + cacheRead) is above the window.
    SilentOverflow {
        input: u64,
        window: u64,
    },
    /// A `length` stop with no output.
    Truncated,
    Other,
}

impl ErrorClass {
    /// The name hosts see.
    pub fn name(&self) -> &'static str {
        match self {
            ErrorClass::ContextOverflow { .. } => "context_overflow",
            ErrorClass::PayloadTooLarge { .. } => "payload_too_large",
            ErrorClass::RateLimit { .. } => "rate_limit",
            ErrorClass::Transient => "transient",
            ErrorClass::Auth => "auth",
            ErrorClass::InvalidRequest => "invalid_request",
            ErrorClass::SilentOverflow { .. } => "silent_overflow",
            ErrorClass::Truncated => "truncated",
            ErrorClass::Other => "other",
        }
    }

    /// The class as the JSON object hosts get: `{class, …its fields}`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut o = serde_json::Map::new();
        o.insert("class".into(), self.name().into());
        let mut put = |k: &str, v: Option<u64>| {
            if let Some(v) = v {
                o.insert(k.into(), v.into());
            }
        };
        match *self {
            ErrorClass::ContextOverflow { limit, requested } => {
                put("limitTokens", limit);
                put("requestedTokens", requested);
            }
            ErrorClass::RateLimit { retry_after_ms } => put("retryAfterMs", retry_after_ms),
            ErrorClass::SilentOverflow { input, window } => {
                put("inputTokens", Some(input));
                put("contextWindow", Some(window));
            }
            ErrorClass::PayloadTooLarge { media } => {
                o.insert("kind".into(), if media { "media" } else { "bytes" }.into());
            }
            _ => {}
        }
        serde_json::Value::Object(o)
    }
}

/// What the classifier reads. Every field but `text` is optional.
#[derive(Debug, Clone, Default)]
pub struct ErrorInput<'a> {
    /// The HTTP status; read from the text's start (`413 …`, `Error code: 400`) when absent.
    pub status: Option<u16>,
    /// The error message and body, JSON or not.
    pub text: &'a str,
    /// A `Retry-After` header value (seconds or an HTTP date) and the time it is read at (ms).
    pub retry_after: Option<&'a str>,
    pub now: i64,
    /// The turn's stop reason; `None` reads as an error.
    pub stop_reason: Option<StopReason>,
    /// The turn's reported prompt (input + cacheRead) and output tokens.
    pub prompt_tokens: Option<f64>,
    /// Whether the turn delivered any output (text or a tool call); `None` = unknown.
    pub delivered: Option<bool>,
    /// The model's window; 0 = unknown.
    pub window: u64,
}

/// The class of a turn or an error (spec: compaction §8.2 and the [N] tree's steps 2–5).
pub fn classify(input: &ErrorInput<'_>) -> ErrorClass {
    match input.stop_reason {
        Some(StopReason::Error) | None => classify_error(input),
        Some(StopReason::Stop) => match input.prompt_tokens {
            Some(p) if input.window > 0 && p > input.window as f64 => ErrorClass::SilentOverflow {
                input: p as u64,
                window: input.window,
            },
            _ => ErrorClass::Other,
        },
        Some(StopReason::Length) if input.delivered != Some(true) => ErrorClass::Truncated,
        _ => ErrorClass::Other,
    }
}

/// What the tables found in one text.
#[derive(Debug, Default)]
struct Evidence {
    overflow: bool,
    weak_overflow: bool,
    payload: bool,
    media: bool,
    media_word: bool,
    rate_limit: bool,
    transient: bool,
    auth: bool,
    limit: Option<u64>,
    requested: Option<u64>,
}

fn classify_error(input: &ErrorInput<'_>) -> ErrorClass {
    let lower = input.text.to_ascii_lowercase();
    let ev = scan(lower.as_bytes());
    let status = input.status.or_else(|| status_in_text(&lower));
    let status_kind = status.and_then(|s| {
        TABLES
            .iter()
            .flat_map(|t| t.statuses.iter())
            .find(|(code, _)| *code == s)
            .map(|&(_, k)| k)
    });
    let bare = bare_status_without_body(&lower, &["400", "413", "429"]);
    let overflow = || ErrorClass::ContextOverflow {
        limit: ev.limit,
        requested: ev.requested,
    };
    let rate_worded = ev.rate_limit;
    // A provider's overflow wording decides, unless a rate-limit wording says otherwise and no
    // status other than 429 contradicts it (Bedrock's throttle reads "Too many tokens, please
    // wait before trying again.", the spec's `too many tokens`).
    if ev.overflow && !(rate_worded && status.is_none_or(|s| s == 429)) {
        return overflow();
    }
    if rate_worded || (status_kind == Some(RateLimit) && !bare) {
        return ErrorClass::RateLimit {
            retry_after_ms: retry_after(input, &lower),
        };
    }
    let media = ev.media || (ev.media_word && (ev.payload || status_kind == Some(Payload)));
    if ev.media || ev.payload || status_kind == Some(Payload) || bare_413(&lower) {
        return ErrorClass::PayloadTooLarge { media };
    }
    if ev.weak_overflow || bare {
        return overflow();
    }
    if ev.auth || status_kind == Some(Auth) {
        return ErrorClass::Auth;
    }
    if ev.transient || status_kind == Some(Transient) || status.is_some_and(|s| s >= 500) {
        return ErrorClass::Transient;
    }
    if status.is_some_and(|s| (400..500).contains(&s)) {
        return ErrorClass::InvalidRequest;
    }
    ErrorClass::Other
}

/// A text that starts with `413` (the §8.2 payload rule).
fn bare_413(lower: &str) -> bool {
    lower.trim_start().starts_with("413")
}

/// Every rule of every table against `t` (lower case), in one walk of the tables: a rule's
/// first piece is found leftmost (its literal head by memchr's substring search, the rest
/// checked where the head occurs; see [`find_piece`]), then each piece after a `*` leftmost after the one before
/// (which leaves the most room for the rest). Linear in the text per rule, however the text
/// repeats a head.
fn scan(t: &[u8]) -> Evidence {
    let mut ev = Evidence::default();
    for (pattern, kind, what) in rules() {
        let mut nums = Vec::new();
        let mut end = 0;
        let mut whole = true;
        for piece in pattern.split('*').filter(|p| !p.is_empty()) {
            match find_piece(t, piece.as_bytes(), end, &mut nums) {
                Some(e) => end = e,
                None => {
                    whole = false;
                    break;
                }
            }
        }
        if !whole {
            continue;
        }
        let (limit, requested) = match (what, nums.as_slice()) {
            (Limit, [l, ..]) => (Some(*l), None),
            (Requested, [q, ..]) => (None, Some(*q)),
            (LimitRequested, [l, q, ..]) => (Some(*l), Some(*q)),
            (RequestedLimit, [q, l, ..]) => (Some(*l), Some(*q)),
            _ => (None, None),
        };
        if matches!(kind, Overflow | WeakOverflow | Numbers) {
            ev.limit = ev.limit.or(limit);
            ev.requested = ev.requested.or(requested);
        }
        match kind {
            Overflow => ev.overflow = true,
            WeakOverflow => ev.weak_overflow = true,
            Payload => ev.payload = true,
            Media => ev.media = true,
            MediaWord => ev.media_word = true,
            RateLimit => ev.rate_limit = true,
            Transient => ev.transient = true,
            Auth => ev.auth = true,
            Numbers => {}
        }
    }
    ev
}

/// The length of `piece` (a pattern without `*`) matched at the start of `t`, or `None`. `#`
/// takes every digit there (at least one; its value goes to `nums`), `~` one space or
/// underscore.
fn match_at(t: &[u8], piece: &[u8], nums: &mut Vec<u64>) -> Option<usize> {
    let mut at = 0;
    let before = nums.len();
    for &p in piece {
        let Some(&c) = t.get(at) else {
            nums.truncate(before);
            return None;
        };
        let ok = match p {
            b'#' => c.is_ascii_digit(),
            b'~' => c == b' ' || c == b'_',
            _ => c == p,
        };
        if !ok {
            nums.truncate(before);
            return None;
        }
        if p == b'#' {
            let mut v: u64 = 0;
            while let Some(&d) = t.get(at).filter(|d| d.is_ascii_digit()) {
                v = v.saturating_mul(10).saturating_add(u64::from(d - b'0'));
                at += 1;
            }
            nums.push(v);
        } else {
            at += 1;
        }
    }
    Some(at)
}

/// The end of the leftmost match of `piece` (no `*`, a literal first byte) in `t` from byte
/// `from`: the literal head is found with memchr's substring search and the rest checked where
/// it occurs.
fn find_piece(t: &[u8], piece: &[u8], from: usize, nums: &mut Vec<u64>) -> Option<usize> {
    let head_len = piece
        .iter()
        .position(|b| *b == b'#' || *b == b'~')
        .unwrap_or(piece.len());
    let head = &piece[..head_len];
    if head.is_empty() {
        return (from..t.len()).find_map(|i| Some(i + match_at(&t[i..], piece, nums)?));
    }
    let mut at = from;
    loop {
        let start = at + memchr::memmem::find(t.get(at..)?, head)?;
        if let Some(len) = match_at(&t[start..], piece, nums) {
            return Some(start + len);
        }
        at = start + 1;
    }
}

/// Whether pattern `p` occurs in `t` (both lower case), pieces leftmost first (tests).
#[cfg(test)]
pub(super) fn matches_anywhere(t: &str, p: &str) -> bool {
    let mut from = 0;
    let mut nums = Vec::new();
    for piece in p.split('*').filter(|x| !x.is_empty()) {
        match find_piece(t.as_bytes(), piece.as_bytes(), from, &mut nums) {
            Some(end) => from = end,
            None => return false,
        }
    }
    true
}

/// A bare `400`/`413`/`429` `[status code] (no body)` message (spec §8.2).
pub(super) fn bare_status_without_body(lower: &str, codes: &[&str]) -> bool {
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

/// The HTTP status a text names: a leading `<ddd>` (`413 …`, the SDKs' message form) or one
/// after `error code:`, `status code:`, `status:`, `status=`, `http `.
fn status_in_text(lower: &str) -> Option<u16> {
    let three = |s: &str| -> Option<u16> {
        let b = s.as_bytes();
        let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
        (digits == 3)
            .then(|| s[..3].parse::<u16>().ok())
            .flatten()
            .filter(|c| (100..600).contains(c))
    };
    let t = lower.trim_start();
    let t = t.strip_prefix("error:").map_or(t, str::trim_start);
    if let Some(s) = three(t) {
        return Some(s);
    }
    for key in [
        "error code: ",
        "status code: ",
        "status code ",
        "status: ",
        "status=",
        "http ",
    ] {
        if let Some(at) = memchr::memmem::find(lower.as_bytes(), key.as_bytes()) {
            if let Some(s) = three(&lower[at + key.len()..]) {
                return Some(s);
            }
        }
    }
    None
}

/// The wait a rate limit asks for: the `Retry-After` value, or the text's `try again in 4.77s`
/// / `try again in 9m38.016s`, `retry after <n> seconds`, `"retryDelay": "<n>s"`.
fn retry_after(input: &ErrorInput<'_>, lower: &str) -> Option<u64> {
    if let Some(ms) = input
        .retry_after
        .and_then(|v| crate::summary::retry::parse_retry_after(v, input.now))
    {
        return Some(ms);
    }
    for key in ["try again in ", "retry after ", "retrydelay\": \""] {
        if let Some(at) = memchr::memmem::find(lower.as_bytes(), key.as_bytes()) {
            if let Some(ms) = duration_ms(&lower[at + key.len()..]) {
                return Some(ms);
            }
        }
    }
    None
}

/// `1h2m3.5s`, `4.77s`, `250ms`, `30 seconds`, `2 minutes` at the start of `s`, in ms.
fn duration_ms(s: &str) -> Option<u64> {
    let mut total = 0.0f64;
    let mut rest = s;
    let mut any = false;
    loop {
        let n = rest
            .bytes()
            .take_while(|c| c.is_ascii_digit() || *c == b'.')
            .count();
        if n == 0 {
            break;
        }
        let Ok(v) = rest[..n].parse::<f64>() else {
            break;
        };
        let after = rest[n..].trim_start_matches(' ');
        let units: [(&str, f64); 8] = [
            ("ms", 1.0),
            ("milliseconds", 1.0),
            ("seconds", 1000.0),
            ("second", 1000.0),
            ("s", 1000.0),
            ("minutes", 60_000.0),
            ("m", 60_000.0),
            ("h", 3_600_000.0),
        ];
        // `milliseconds` before `m`, `ms` before `m` and `s`.
        let Some((unit, scale)) = units
            .iter()
            .filter(|(u, _)| after.starts_with(u))
            .max_by_key(|(u, _)| u.len())
        else {
            break;
        };
        total += v * scale;
        any = true;
        rest = &after[unit.len()..];
    }
    (any && total.is_finite() && total >= 0.0).then_some(total.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(text: &str) -> ErrorClass {
        classify(&ErrorInput {
            text,
            ..ErrorInput::default()
        })
    }

    #[test]
    fn every_pattern_starts_with_a_literal() {
        // The one-pass scan buckets rules by their first byte.
        let lines: usize = TABLES.iter().map(|t| t.rules.lines().count()).sum();
        // Every packed line decodes (a known kind letter, a pattern after it).
        assert_eq!(rules().count(), lines);
        for t in TABLES {
            assert!(t.rules.is_empty() || t.rules.ends_with('\n'));
            for l in t.rules.lines() {
                assert!(matches!(&l[1..2], "-" | "l" | "r" | "L" | "R"), "{l}");
            }
        }
        for (p, _, _) in rules() {
            let b = p.as_bytes();
            assert!(b.len() >= 2, "{p}");
            assert!(!matches!(b[0], b'#' | b'~' | b'*'), "{p}");
            assert!(!matches!(b[1], b'#' | b'~' | b'*'), "{p}");
            assert_eq!(p, p.to_ascii_lowercase(), "lower case: {p}");
        }
    }

    #[test]
    fn numbers_and_classes() {
        assert_eq!(
            class("prompt is too long: 208310 tokens > 200000 maximum"),
            ErrorClass::ContextOverflow {
                limit: Some(200_000),
                requested: Some(208_310)
            }
        );
        assert_eq!(
            class("429 Rate limit reached for gpt-4o. Please try again in 1m2.5s."),
            ErrorClass::RateLimit {
                retry_after_ms: Some(62_500)
            }
        );
        assert_eq!(
            class("413 {\"error\":{\"type\":\"request_too_large\",\"message\":\"Request exceeds the maximum size\"}}"),
            ErrorClass::PayloadTooLarge { media: false }
        );
        assert_eq!(class("500 status code (no body)"), ErrorClass::Transient);
        assert_eq!(class("401 Unauthorized"), ErrorClass::Auth);
        assert_eq!(
            class("400 Bad Request: unknown field"),
            ErrorClass::InvalidRequest
        );
        assert_eq!(class("something odd"), ErrorClass::Other);
        assert_eq!(
            class("400 status code (no body)"),
            ErrorClass::ContextOverflow {
                limit: None,
                requested: None
            }
        );
    }

    #[test]
    fn durations() {
        assert_eq!(duration_ms("4.77s. need more"), Some(4770));
        assert_eq!(duration_ms("9m38.016s"), Some(578_016));
        assert_eq!(duration_ms("30 seconds"), Some(30_000));
        assert_eq!(duration_ms("250ms"), Some(250));
        assert_eq!(duration_ms("soon"), None);
    }

    #[test]
    fn statuses_in_text() {
        assert_eq!(status_in_text("413 request too large"), Some(413));
        assert_eq!(status_in_text("error: 400 {\"type\""), Some(400));
        assert_eq!(status_in_text("x error code: 429 - {}"), Some(429));
        assert_eq!(status_in_text("4000 things"), None);
        assert_eq!(status_in_text("nothing"), None);
    }
}
