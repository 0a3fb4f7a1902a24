//! Inline imaging's request-to-request state from JavaScript (spec: snapcompact §9.7): what the
//! previous request sent and whether the provider's prompt cache still holds it
//! (`context::inline::SentBefore`), and the system-prompt text a mode images. `src/js/runner/inline.ts`
//! measures and renders; the clock is its argument.

use super::interop::now_ms;
use crate::context::inline::{
    image_budget, reader_frame_tokens, stays_text, system_target, worth_measuring, Candidate,
    InlineRequest, SentBefore,
};
use wasm_bindgen::prelude::*;

/// The prompt-cache bookkeeping of one conversation's inline imaging.
#[wasm_bindgen]
pub struct WasmInlineCache {
    inner: SentBefore,
}

#[wasm_bindgen]
impl WasmInlineCache {
    /// A conversation whose provider keeps a prefix cached `ttl_ms` after a request (undefined:
    /// the default, five minutes; the shell checks it is a number ≥ 0).
    #[wasm_bindgen(constructor)]
    pub fn new(ttl_ms: Option<f64>) -> WasmInlineCache {
        WasmInlineCache {
            inner: SentBefore::new(ttl_ms.map(|t| t.clamp(0.0, i64::MAX as f64) as i64)),
        }
    }

    /// The images a request may still add (`context::inline::image_budget`).
    #[wasm_bindgen(js_name = imageBudget)]
    pub fn budget(reads_images: bool, provider_budget: u32, images_held: u32) -> u32 {
        image_budget(reads_images, provider_budget, images_held)
    }

    /// Whether a tool result stays text (`context::inline::stays_text`): an error result, or
    /// one that carries images.
    #[wasm_bindgen(js_name = staysText)]
    pub fn stays_text(is_error: bool, has_images: bool) -> bool {
        stays_text(is_error, has_images)
    }

    /// Whether a candidate of `tokens` text tokens is measured (`context::inline::
    /// worth_measuring`; `floor`: a tool result, which has the minimum size).
    pub fn measures(tokens: f64, stays_text: bool, floor: bool) -> bool {
        // As `Candidate::from_flat` reads the count: fractions cut, huge ones the largest.
        worth_measuring(tokens as u64, stays_text, floor)
    }

    /// The plan of one request at `now`, remembered as what it sent: `head`, what its first
    /// message says; `ids`, its tool results' call ids in context order; `tool_results`, their
    /// measurements as `[tokens, frames, flags]` triples (`context::inline::flag`, without the
    /// cache bits; empty when none was measured); `system`, the system prompt's selected
    /// `system_text` measured the same way (empty: none); `budget`, `imageBudget`; the reading
    /// model and the shape's frame size for the price. Returns `[systemPrompt, keptForCache,
    /// frameTokens, tool result index…]`.
    #[allow(clippy::too_many_arguments)]
    pub fn plan(
        &mut self,
        now: f64,
        head: &str,
        ids: Vec<String>,
        tool_results: &[f64],
        system: &[f64],
        system_text: Option<String>,
        budget: u32,
        reader_id: Option<String>,
        api: Option<String>,
        frame_size: u32,
        has_user_message: bool,
    ) -> Result<Vec<u32>, JsValue> {
        // The form a candidate was sent in before is this state's to tell.
        let of = |t: &[f64]| Candidate {
            previous: None,
            ..Candidate::from_flat(t[0], t[1], t[2])
        };
        let frame_tokens = reader_frame_tokens(reader_id.as_deref(), api.as_deref(), frame_size);
        let request = InlineRequest {
            now: now_ms(now)?,
            head,
            ids: &ids,
            tool_results: tool_results.chunks_exact(3).map(of).collect(),
            // Unmeasured (no budget): remembered as sent as text all the same.
            system_prompt: system_text
                .as_deref()
                .map(|t| (t, system.get(..3).map(of).unwrap_or_default())),
            budget,
            frame_tokens,
            has_user_message,
        };
        Ok(self.inner.plan(request).flat(frame_tokens))
    }

    /// Forgets the previous request.
    pub fn reset(&mut self) {
        self.inner.reset();
    }
}

/// The system-prompt text the mode `mode` (`none`, `all`, `agents-md`) images of a prompt of
/// `blocks` (a string prompt is one block), with the stubs that stand in for it:
/// `[scope, text, replacement block…]`, or undefined when there is nothing to image.
#[wasm_bindgen(js_name = inlineSystemTarget)]
pub fn inline_system_target(
    blocks: Vec<String>,
    mode: &str,
    system_stub: &str,
    context_stub: &str,
) -> Option<Vec<String>> {
    system_target(&blocks, mode, system_stub, context_stub).map(|t| {
        let mut out = vec![t.scope.as_str().to_owned(), t.text];
        out.extend(t.replacement);
        out
    })
}
