//! Billing and budgets: what a frame costs per provider family, and how many frames and
//! bytes a request may carry (spec: snapcompact §2, §4.1, §4.2, §5).

use crate::render::shape::catalogue::{ImageDetail, Shape, ShapeVariant};

/// Engine upper bound on frames per archive (spec: snapcompact §2 `MAX_FRAMES_DEFAULT`).
pub const MAX_FRAMES_DEFAULT: u32 = 80;
/// Conservative per-frame token charge for context budgeting: ceil(4784 × 1.05) (§2, §5.3).
pub const FRAME_TOKEN_ESTIMATE: u32 = 5024;
/// Assumed upper bound of one frame's base64 length (§2).
pub const FRAME_DATA_BYTES_ESTIMATE: u64 = 170_000;
/// Max snapcompact base64 bytes attached to one rebuilt request (§2).
pub const FRAME_DATA_BYTES_BUDGET: u64 = 3_000_000;
/// Image-count floor for providers we know nothing about (§2).
pub const DEFAULT_PROVIDER_IMAGE_BUDGET: u32 = 5;

/// Provider image-count caps (spec: snapcompact §2 `PROVIDER_IMAGE_BUDGETS`). One value
/// differs from the reference's 18.2.3 table: OpenRouter drops images past the 8th of a
/// request, so its budget is 8, not 90 (issue 19: an OpenRouter request got 9 frames).
const PROVIDER_IMAGE_BUDGETS: [(&str, u32); 9] = [
    ("anthropic", 90),
    ("amazon-bedrock", 90),
    ("openai", 200),
    ("openai-codex", 200),
    ("google", 200),
    ("google-vertex", 200),
    ("google-gemini-cli", 200),
    ("openrouter", 8),
    ("umans", 10),
];

/// Per-API caps consulted after the provider table (spec: snapcompact §5.1 (c));
/// `openai-completions` deliberately has none, since arbitrary routers speak it.
const API_IMAGE_BUDGETS: [(&str, u32); 2] =
    [("anthropic-messages", 90), ("google-generative-ai", 200)];

/// Image-billing family of a wire API (spec: snapcompact §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BillingFamily {
    Anthropic,
    OpenAi,
    Google,
    /// Any other API, or none: billed like Anthropic.
    Unknown,
}

impl BillingFamily {
    /// `anthropic-messages`/`bedrock-converse-stream` → anthropic, the OpenAI wire APIs →
    /// openai, the Google ones → google, anything else → unknown.
    pub fn of_api(api: Option<&str>) -> BillingFamily {
        match api.unwrap_or("") {
            "anthropic-messages" | "bedrock-converse-stream" => BillingFamily::Anthropic,
            "openai-completions"
            | "openai-responses"
            | "openai-codex-responses"
            | "azure-openai-responses" => BillingFamily::OpenAi,
            "google-generative-ai" | "google-gemini-cli" | "google-vertex" => BillingFamily::Google,
            _ => BillingFamily::Unknown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            BillingFamily::Anthropic => "anthropic",
            BillingFamily::OpenAi => "openai",
            BillingFamily::Google => "google",
            BillingFamily::Unknown => "unknown",
        }
    }
}

/// Billed tokens for one square frame of edge `size` (spec: snapcompact §4.2):
/// anthropic/unknown ceil(min(ceil(S/28)², 4784) × 1.05), openai
/// ceil(min(ceil(S/32)², 10000) × 1.2), google a flat 1120.
pub fn frame_tokens(family: BillingFamily, size: u32) -> u32 {
    let patches = |edge: u32, cap: u64| -> u64 {
        let side = size.div_ceil(edge) as u64;
        (side * side).min(cap)
    };
    match family {
        // ×1.05 and ×1.2 in integer arithmetic, rounding up.
        BillingFamily::Anthropic | BillingFamily::Unknown => {
            (patches(28, 4784) * 105).div_ceil(100) as u32
        }
        BillingFamily::OpenAi => (patches(32, 10_000) * 12).div_ceil(10) as u32,
        BillingFamily::Google => 1120,
    }
}

/// `priceShape`: the geometry plus the family's estimate at the geometry's own frame size,
/// and `imageDetail: original` for openai (spec: snapcompact §4.2).
pub fn price_geometry(mut shape: Shape, family: BillingFamily) -> Shape {
    shape.frame_token_estimate = frame_tokens(family, shape.frame_size);
    shape.image_detail = (family == BillingFamily::OpenAi).then_some(ImageDetail::Original);
    shape
}

impl ShapeVariant {
    /// The variant's geometry priced for `family` (spec: snapcompact §4.2 `priceShape`).
    pub fn shape(self, family: BillingFamily) -> Shape {
        price_geometry(self.geometry(), family)
    }
}

/// `maxFramesForDataBudget(b)` = max(1, floor(b / 170,000)) (spec: snapcompact §2).
pub fn max_frames_for_data_budget(bytes: u64) -> u32 {
    (bytes / FRAME_DATA_BYTES_ESTIMATE).clamp(1, u32::MAX as u64) as u32
}

/// Per-provider image budgets with the host's overrides (spec: snapcompact §5.1). Plain
/// data: the host keeps one and passes it where budgets are asked. The overrides are short
/// lists (one entry per provider, set with [`ImageBudgets::set_count`] and
/// [`ImageBudgets::set_bytes`]) rather than maps, which would add a map's code to the module.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageBudgets {
    /// `configureProviderImageBudgets`: image counts that beat every table.
    pub count_overrides: Vec<(String, u32)>,
    /// `configureProviderImageByteBudgets`: base64 byte budgets per provider.
    pub byte_overrides: Vec<(String, u64)>,
}

/// The value for `provider` in an override list.
fn lookup<T: Copy>(list: &[(String, T)], provider: &str) -> Option<T> {
    list.iter().find(|(p, _)| p == provider).map(|&(_, n)| n)
}

/// Sets `provider`'s value in an override list (replacing an earlier one).
fn set<T>(list: &mut Vec<(String, T)>, provider: String, n: T) {
    match list.iter_mut().find(|(p, _)| *p == provider) {
        Some(entry) => entry.1 = n,
        None => list.push((provider, n)),
    }
}

impl ImageBudgets {
    /// Overrides the image count of `provider` (`configureProviderImageBudgets`).
    pub fn set_count(&mut self, provider: String, n: u32) {
        set(&mut self.count_overrides, provider, n);
    }

    /// Sets the base64 byte budget of `provider` (`configureProviderImageByteBudgets`).
    pub fn set_bytes(&mut self, provider: String, n: u64) {
        set(&mut self.byte_overrides, provider, n);
    }

    /// Images one request may carry: override, then provider table, then API table, then
    /// the floor of 5 (spec: snapcompact §5.1).
    pub fn provider_image_budget(&self, provider: &str, api: Option<&str>) -> u32 {
        if let Some(n) = lookup(&self.count_overrides, provider) {
            return n;
        }
        if let Some(&(_, n)) = PROVIDER_IMAGE_BUDGETS.iter().find(|(p, _)| *p == provider) {
            return n;
        }
        if let Some(api) = api {
            if let Some(&(_, n)) = API_IMAGE_BUDGETS.iter().find(|(a, _)| *a == api) {
                return n;
            }
        }
        DEFAULT_PROVIDER_IMAGE_BUDGET
    }

    /// Base64 byte budget for a provider, only when the host configured one.
    pub fn provider_image_byte_budget(&self, provider: &str) -> Option<u64> {
        lookup(&self.byte_overrides, provider)
    }

    /// Archive frame cap for a provider: min(image budget, 80) (spec: snapcompact §2).
    pub fn provider_frame_budget(&self, provider: &str, api: Option<&str>) -> u32 {
        self.provider_image_budget(provider, api)
            .min(MAX_FRAMES_DEFAULT)
    }
}

/// Inputs of the frame cap the coding agent uses (spec: snapcompact §5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameCapInputs {
    /// Tokens left for frames, or `None` when the context window is unknown.
    pub frame_budget_tokens: Option<i64>,
    /// Base64 byte budget of one request (default [`FRAME_DATA_BYTES_BUDGET`]).
    pub data_budget_bytes: u64,
    /// [`ImageBudgets::provider_frame_budget`] of the target provider.
    pub provider_frame_budget: u32,
}

/// `maxFrames = min(floor(frameBudgetTokens / 5024), 80, maxFramesForDataBudget,
/// providerFrameBudget)`, at least 1 so a text-only archive can still land (§5.2).
pub fn max_frames(inputs: FrameCapInputs) -> u32 {
    let by_tokens = match inputs.frame_budget_tokens {
        Some(t) if t <= 0 => 0,
        Some(t) => (t as u64 / FRAME_TOKEN_ESTIMATE as u64).min(u32::MAX as u64) as u32,
        None => u32::MAX,
    };
    by_tokens
        .min(MAX_FRAMES_DEFAULT)
        .min(max_frames_for_data_budget(inputs.data_budget_bytes))
        .min(inputs.provider_frame_budget)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use BillingFamily::*;

    #[test]
    fn frame_token_table() {
        assert_eq!(frame_tokens(Anthropic, 1568), 3293);
        assert_eq!(frame_tokens(OpenAi, 1568), 2882);
        assert_eq!(frame_tokens(Anthropic, 1932), 5000);
        assert_eq!(frame_tokens(OpenAi, 1932), 4466);
        assert_eq!(frame_tokens(Anthropic, 2048), 5024);
        assert_eq!(frame_tokens(OpenAi, 2048), 4916);
        assert_eq!(frame_tokens(Unknown, 2576), 5024);
        assert_eq!(frame_tokens(OpenAi, 2576), 7874);
        assert_eq!(frame_tokens(Google, 2576), 1120);
        assert_eq!(frame_tokens(Google, 64), 1120);
    }

    #[test]
    fn reader_families() {
        let f = BillingFamily::of_reader;
        let router = Some("openai-completions");
        assert_eq!(
            f(Some("anthropic/Claude-Sonnet-4.5"), router),
            BillingFamily::Anthropic
        );
        assert_eq!(
            f(Some("google/gemini-2.5-pro"), router),
            BillingFamily::Google
        );
        assert_eq!(
            f(Some("gpt-5.1-codex"), Some("anthropic-messages")),
            BillingFamily::OpenAi
        );
        assert_eq!(f(Some("qwen3-vl"), router), BillingFamily::OpenAi);
        assert_eq!(f(None, Some("google-vertex")), BillingFamily::Google);
        assert_eq!(f(Some("llava"), None), BillingFamily::Unknown);
    }

    #[test]
    fn families() {
        assert_eq!(
            BillingFamily::of_api(Some("bedrock-converse-stream")),
            Anthropic
        );
        assert_eq!(
            BillingFamily::of_api(Some("azure-openai-responses")),
            OpenAi
        );
        assert_eq!(BillingFamily::of_api(Some("google-vertex")), Google);
        assert_eq!(BillingFamily::of_api(Some("mistral")), Unknown);
        assert_eq!(BillingFamily::of_api(None), Unknown);
    }

    #[test]
    fn image_budgets() {
        let mut b = ImageBudgets::default();
        assert_eq!(b.provider_image_budget("anthropic", None), 90);
        assert_eq!(b.provider_image_budget("openrouter", None), 8);
        assert_eq!(b.provider_frame_budget("openrouter", None), 8);
        assert_eq!(b.provider_image_budget("groq", None), 5);
        assert_eq!(
            b.provider_image_budget("somegateway", Some("anthropic-messages")),
            90
        );
        assert_eq!(
            b.provider_image_budget("somegateway", Some("google-generative-ai")),
            200
        );
        assert_eq!(
            b.provider_image_budget("somegateway", Some("openai-completions")),
            5
        );
        // An explicit provider entry beats the API family.
        assert_eq!(
            b.provider_image_budget("umans", Some("anthropic-messages")),
            10
        );
        assert_eq!(b.provider_frame_budget("openai", None), 80);
        b.set_count("anthropic".into(), 12);
        assert_eq!(b.provider_image_budget("anthropic", None), 12);
        assert_eq!(b.provider_image_byte_budget("anthropic"), None);
        b.set_bytes("anthropic".into(), 1_000_000);
        assert_eq!(b.provider_image_byte_budget("anthropic"), Some(1_000_000));
    }

    #[test]
    fn frame_caps() {
        assert_eq!(max_frames_for_data_budget(FRAME_DATA_BYTES_BUDGET), 17);
        assert_eq!(max_frames_for_data_budget(0), 1);
        let cap = |tokens, provider| {
            max_frames(FrameCapInputs {
                frame_budget_tokens: tokens,
                data_budget_bytes: FRAME_DATA_BYTES_BUDGET,
                provider_frame_budget: provider,
            })
        };
        assert_eq!(cap(None, 80), 17);
        assert_eq!(cap(None, 5), 5);
        assert_eq!(cap(Some(5024 * 3 + 10), 80), 3);
        assert_eq!(cap(Some(100), 80), 1);
        assert_eq!(cap(Some(-5), 80), 1);
    }
}
