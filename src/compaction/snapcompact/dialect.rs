//! The reader's dialect: the model class an id names, and whether it reads the Anthropic
//! transcript dialect, whose thinking the archive leaves out (spec: snapcompact §9.5, §9.7).

/// How a model-id matcher of the reference's model taxonomy compares (ranked in this order,
/// strongest first, then by token length).
#[derive(Clone, Copy)]
enum Match {
    /// The bare id (after the last `/`) equals the token.
    Exact(&'static str),
    /// The bare id is the token or starts with it followed by `-`, `_`, `.`, `:` or a digit.
    Bounded(&'static str),
    /// A `/`-separated part of the id equals the token.
    Namespace(&'static str),
    /// A `/`, `.` or `:`-separated part of the id matches the token bounded.
    NamespaceBounded(&'static str),
    /// The bare id starts with the token.
    Prefix(&'static str),
    /// The bare id contains the token (the taxonomy's only glob is `*distill-qwen*`).
    Contains(&'static str),
}

impl Match {
    fn rank(self) -> (u8, usize) {
        match self {
            Match::Exact(t) => (4, t.len()),
            Match::Bounded(t) => (3, t.len()),
            Match::Namespace(t) | Match::NamespaceBounded(t) => (2, t.len()),
            Match::Prefix(t) => (1, t.len()),
            // The glob's token counts its `*`s too.
            Match::Contains(t) => (0, t.len() + 2),
        }
    }

    fn matches(self, lower: &str, bare: &str) -> bool {
        fn bounded(value: &str, token: &str) -> bool {
            value.strip_prefix(token).is_some_and(|rest| {
                rest.bytes()
                    .next()
                    .is_none_or(|b| matches!(b, b'-' | b'_' | b'.' | b':' | b'0'..=b'9'))
            })
        }
        match self {
            Match::Exact(t) => bare == t,
            Match::Bounded(t) => bounded(bare, t),
            Match::Namespace(t) => lower.split('/').any(|p| p == t),
            Match::NamespaceBounded(t) => lower
                .split(['/', '.', ':'])
                .any(|p| !p.is_empty() && bounded(p, t)),
            Match::Prefix(t) => bare.starts_with(t),
            Match::Contains(t) => bare.contains(t),
        }
    }
}

/// The model classes of the reference's taxonomy (`pi-catalog` 18.2.3 `rules.json`) with
/// their matchers, in declaration order; facts needed to classify an id the same way.
const MODEL_CLASSES: &[(&str, &[Match])] = {
    use Match::*;
    &[
        ("ai21", &[Bounded("jamba"), Namespace("ai21")]),
        (
            "amazon",
            &[
                Bounded("nova"),
                Bounded("titan"),
                NamespaceBounded("amazon"),
            ],
        ),
        (
            "anthropic",
            &[
                NamespaceBounded("anthropic"),
                Bounded("anthropic"),
                Bounded("claude"),
            ],
        ),
        ("baidu", &[Bounded("ernie")]),
        ("bytedance", &[Bounded("doubao")]),
        ("cohere", &[Bounded("command"), Namespace("cohere")]),
        (
            "deepseek",
            &[NamespaceBounded("deepseek"), Bounded("deepseek")],
        ),
        ("gemini", &[Bounded("gemini")]),
        ("gemma", &[Bounded("gemma")]),
        ("glm", &[Bounded("glm"), Bounded("zai-glm")]),
        (
            "gpt-oss",
            &[NamespaceBounded("gpt-oss"), Bounded("gpt-oss")],
        ),
        ("kimi", &[Namespace("moonshotai"), Bounded("kimi")]),
        (
            "meta",
            &[
                Bounded("muse-spark"),
                Bounded("llama"),
                Namespace("meta-llama"),
            ],
        ),
        ("mimo", &[Bounded("mimo")]),
        (
            "minimax",
            &[Namespace("minimax"), Bounded("minimax"), Bounded("hailuo")],
        ),
        ("mistral", &[Bounded("mistral"), Bounded("mixtral")]),
        (
            "openai",
            &[
                Namespace("openai"),
                NamespaceBounded("openai"),
                Prefix("gpt-"),
                Prefix("chatgpt-"),
                Prefix("codex-"),
                Exact("o1"),
                Prefix("o1-"),
                Prefix("o1."),
                Exact("o3"),
                Prefix("o3-"),
                Prefix("o3."),
                Exact("o4"),
                Prefix("o4-"),
                Prefix("o4."),
            ],
        ),
        (
            "qwen",
            &[
                Bounded("qwen"),
                Bounded("deepseek-r1-distill-qwen"),
                Contains("distill-qwen"),
            ],
        ),
        ("stepfun", &[Bounded("step")]),
        (
            "xai",
            &[
                Prefix("cursor-grok-"),
                Bounded("grok"),
                Namespace("x-ai"),
                Namespace("xai"),
            ],
        ),
    ]
};

/// Variant suffixes the taxonomy collapses before classifying (the longest that ends the
/// id wins; `-max` not on a `qwen…` id).
const VARIANT_SUFFIXES: [&str; 9] = [
    "-thinking",
    "-extra-high",
    "-none",
    "-minimal",
    "-medium",
    "-xhigh",
    "-high",
    "-low",
    "-max",
];

/// The class of a model id as the reference's `classifyModel("", id, {lenient: true})`
/// decides it: variant suffix collapsed, then the strongest matcher over all classes (a
/// tie between two classes at the strongest rank → `unknown`). Provider-scoped rules do not
/// apply without a provider, and the provider-less overrides name no class of interest.
///
/// The matchers are ASCII: lowering without Unicode's case tables
/// ([`lower_for_matching`]) decides the same as `toLowerCase`.
pub fn model_class(model_id: &str) -> &'static str {
    use crate::render::shape::resolve::lower_for_matching;
    let trimmed = model_id.trim_matches(crate::render::text::unicode::is_js_space);
    let mut logical = trimmed;
    if trimmed.len() == model_id.len() {
        let lower = lower_for_matching(trimmed);
        let bare = lower.rsplit('/').next().unwrap_or("");
        let suffix = VARIANT_SUFFIXES
            .iter()
            .filter(|s| lower.ends_with(*s) && !(**s == "-max" && bare.starts_with("qwen")))
            .max_by_key(|s| s.len());
        if let Some(s) = suffix {
            // The suffix is ASCII, so its lowercase has the same length.
            logical = &trimmed[..trimmed.len() - s.len()];
        }
    }
    let lower = lower_for_matching(logical.trim_matches(crate::render::text::unicode::is_js_space));
    let bare = lower.rsplit('/').next().unwrap_or("");
    let mut winner: Option<((u8, usize), &'static str)> = None;
    let mut tied = false;
    for &(class, matchers) in MODEL_CLASSES {
        for &m in matchers {
            if !m.matches(&lower, bare) {
                continue;
            }
            let rank = m.rank();
            match winner {
                Some((r, c)) if r == rank && c != class => tied = true,
                Some((r, _)) if r >= rank => {}
                _ => {
                    winner = Some((rank, class));
                    tied = false;
                }
            }
        }
    }
    match winner {
        Some((_, class)) if !tied => class,
        _ => "unknown",
    }
}

/// `preferredDialect(model) === "anthropic"`: the reader speaks the Anthropic dialect. The
/// app leaves thinking out of a snapcompact archive for such readers, because the archive is
/// replayed as text into every later request and Claude refuses inputs that reproduce its
/// own reasoning (spec: README "App rules over library defaults", snapcompact §9.5, §9.7;
/// issue 19 point 3).
pub fn anthropic_dialect(model_id: &str) -> bool {
    model_class(model_id) == "anthropic"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_class_tokens_are_lowercase_ascii() {
        // What lets `model_class` lower ids without Unicode's case tables.
        for &(_, matchers) in MODEL_CLASSES {
            for m in matchers {
                let (Match::Exact(t)
                | Match::Bounded(t)
                | Match::Namespace(t)
                | Match::NamespaceBounded(t)
                | Match::Prefix(t)
                | Match::Contains(t)) = *m;
                assert!(
                    t.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()),
                    "{t}"
                );
            }
        }
        assert_eq!(
            model_class("CLAUDE-OPUS-4-7"),
            model_class("claude-opus-4-7")
        );
    }
}
