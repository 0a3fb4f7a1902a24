//! The reader of a frame: the model it is rendered for (its id and wire API), how model ids
//! are matched, and which billing family a reader's frames are charged as (spec: snapcompact
//! §4.1–§4.3). Shape choice ([`crate::render::shape::resolve`]) and prices
//! ([`crate::render::shape::billing`]) start from here.

use crate::render::shape::billing::BillingFamily;

/// The model a frame is rendered for: its id and wire API (both optional).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelTarget<'a> {
    pub id: Option<&'a str>,
    pub api: Option<&'a str>,
}

/// A model target with owned strings (`{id?, api?}`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    pub id: Option<String>,
    pub api: Option<String>,
}

impl Target {
    pub fn as_ref(&self) -> ModelTarget<'_> {
        ModelTarget {
            id: self.id.as_deref(),
            api: self.api.as_deref(),
        }
    }
}

/// `id` lowered for the ASCII patterns of model ids
/// ([`crate::render::shape::resolve::ideal_shape_variant`], [`BillingFamily::of_reader`]), with
/// the same matches as `str::to_lowercase` (JavaScript's `toLowerCase`) but without Unicode's
/// case tables: ASCII
/// letters are lowered, and the only two characters whose lower case holds ASCII, U+0130
/// (`i` + U+0307) and the Kelvin sign U+212A (`k`), are mapped; every other character stays
/// non-ASCII either way, so no pattern can match differently.
pub(crate) fn lower_for_matching(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for c in id.chars() {
        match c {
            '\u{130}' => out.push_str("i\u{307}"),
            '\u{212A}' => out.push('k'),
            c => out.push(c.to_ascii_lowercase()),
        }
    }
    out
}

impl BillingFamily {
    /// The family that bills a frame for the model reading it: a gateway bills an image as
    /// the vendor of the model behind it, so a Claude, Gemini or GPT id names the family
    /// (`anthropic/claude-sonnet-4.5` over `openai-completions` bills as Anthropic); any other
    /// id bills as its API.
    #[inline(never)]
    pub fn of_reader(id: Option<&str>, api: Option<&str>) -> BillingFamily {
        let id = lower_for_matching(id.unwrap_or(""));
        if id.contains("claude") {
            BillingFamily::Anthropic
        } else if id.contains("gemini") {
            BillingFamily::Google
        } else if id.contains("gpt") || id.contains("codex") {
            BillingFamily::OpenAi
        } else {
            BillingFamily::of_api(api)
        }
    }
}
