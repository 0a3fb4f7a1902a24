// snapcompact: print conversation text onto PNG frames that a vision model reads back.
// Options and shapes cross the wasm boundary as JSON text; frames come back as objects holding
// the PNG bytes in a Uint8Array. Errors are Error objects with a stable `code`
// (E_SHAPE, E_OPTIONS, E_FONT, E_ENCODE, E_INVALID_ARGUMENT).
import { bytes, isObject, optionalJson, optionalText, optionsJson, text, toJson, wholeNumber } from './args.js';
import { invalidArgument } from './errors.js';
import { onRaw, requireRaw } from './raw.js';

function shapeArg(shape) {
  if (shape === undefined || shape === null) return undefined;
  if (typeof shape !== 'string' && !isObject(shape)) {
    throw invalidArgument('shape must be a shape name or a shape record');
  }
  return JSON.stringify(shape);
}

// Constants of the core (one source: src/render/shape/billing.rs), set as soon as the module is
// initialised: at import under Node.js and workerd, after `await init()` in browsers.
/** Engine upper bound on frames per archive. */
export let MAX_FRAMES_DEFAULT;
/** Conservative per-frame token charge for context budgeting (ceil(4784 × 1.05)). */
export let FRAME_TOKEN_ESTIMATE;
/** Assumed upper bound of one frame's base64 length. */
export let FRAME_DATA_BYTES_ESTIMATE;
/** Max snapcompact base64 bytes attached to one request. */
export let FRAME_DATA_BYTES_BUDGET;
/** Image-count floor for unknown providers. */
export let DEFAULT_PROVIDER_IMAGE_BUDGET;
/** The catalogue names and their aliases, read once from the core. */
let shapeNames = new Set();

onRaw((bindings) => {
  const c = JSON.parse(bindings.snapcompactConstants());
  MAX_FRAMES_DEFAULT = c.maxFramesDefault;
  FRAME_TOKEN_ESTIMATE = c.frameTokenEstimate;
  FRAME_DATA_BYTES_ESTIMATE = c.frameDataBytesEstimate;
  FRAME_DATA_BYTES_BUDGET = c.frameDataBytesBudget;
  DEFAULT_PROVIDER_IMAGE_BUDGET = c.defaultProviderImageBudget;
  shapeNames = new Set([...JSON.parse(bindings.snapcompactShapeNames()), ...Object.keys(c.shapeAliases)]);
});

/** The shape catalogue names, in declaration order (`silver16-bw` is accepted as an alias). */
export function shapeVariantNames() {
  return JSON.parse(requireRaw().snapcompactShapeNames());
}

/** True for a catalogue shape name (or the alias `silver16-bw`); false for `auto`. */
export function isShapeVariantName(value) {
  if (typeof value !== 'string') return false;
  requireRaw();
  return shapeNames.has(value);
}

/**
 * The shape for a reader model, priced for the API that carries the request.
 * `model`: a model id or `{id?, api?}`; `variant`: a catalogue name, `auto` or omitted.
 * Given the text to print, one the shape's fonts cannot print well switches to the fallback-font shape.
 */
export function resolveShape(model, variant, textValue) {
  if (model !== undefined && model !== null && typeof model !== 'string' && typeof model !== 'object') {
    throw invalidArgument('model must be a model id or an object {id?, api?}');
  }
  if (variant !== undefined && variant !== null && typeof variant !== 'string') {
    throw invalidArgument('variant must be a shape name or "auto"');
  }
  const sample = optionalText(textValue, 'text');
  return JSON.parse(requireRaw().snapcompactResolveShape(optionalJson(model), optionalJson(variant), sample));
}

/** The measured-best catalogue variant for a model id, or undefined when unmeasured. */
export function idealShapeVariant(modelId) {
  return JSON.parse(requireRaw().snapcompactIdealShapeVariant(text(modelId, 'modelId'))) ?? undefined;
}

/** Columns, rows and capacity of a shape (name or record) at `size` (default its frameSize). */
export function geometry(shape, size) {
  if (size !== undefined) wholeNumber(size, 'size', 'pixels', 1);
  return JSON.parse(requireRaw().snapcompactGeometry(shapeArg(shape) ?? '"auto"', size));
}

/** Is `value` a valid shape record? */
export function isShape(value) {
  if (!isObject(value)) return false;
  return requireRaw().snapcompactIsShape(JSON.stringify(value));
}

/**
 * One line of text every character of which the shape's font (or a registered fallback font)
 * can draw: newline runs become U+2588, whitespace collapses, symbols fold.
 */
export function normalize(textValue, shape) {
  return requireRaw().snapcompactNormalize(text(textValue, 'text'), shapeArg(shape));
}

/** Share of characters that would print as `?`, and whether that is at most 5 %. */
export function scanRenderability(textValue, shape) {
  return JSON.parse(requireRaw().snapcompactScanRenderability(text(textValue, 'text'), shapeArg(shape)));
}

/** Wraps stopwords outside dim spans in the dim toggles U+000E … U+000F. */
export function dimStopwords(textValue) {
  return requireRaw().snapcompactDimStopwords(text(textValue, 'text'));
}

/** Greedy word wrap to `width` cells (wide characters count 2 when `wideCells`). */
export function wrap(textValue, width, wideCells = false) {
  const cells = wholeNumber(width, 'width', 'cells');
  return JSON.parse(requireRaw().snapcompactWrap(text(textValue, 'text'), cells, Boolean(wideCells)));
}

/** Replaces inline base64 data URLs by `[data URL omitted: <mime>, <n> base64 chars]`. */
export function elideDataUrls(textValue, options) {
  return requireRaw().snapcompactElideDataUrls(text(textValue, 'text'), options?.archive === true);
}

/**
 * The archive transcript of agent messages (`¶user:`, `¶think:`, `¶ai:`, `¶call:` scopes,
 * dim tool output, head+tail caps). Caps may be `Infinity`.
 */
export function serializeConversation(messages, options) {
  if (!Array.isArray(messages)) throw invalidArgument('messages must be an array');
  // JSON has no Infinity: an uncapped limit crosses as the string "Infinity".
  const opts =
    options === undefined || options === null
      ? undefined
      : JSON.stringify(options, (_k, v) => (v === Infinity ? 'Infinity' : v));
  return requireRaw().snapcompactSerialize(toJson(messages), opts);
}

/** How many frames `renderFrames(text, options)` returns, without rendering them. */
export function frameCount(textValue, options) {
  return requireRaw().snapcompactFrameCount(text(textValue, 'text'), optionsJson(options));
}

/** The exact string printed on each frame, first page first. */
export function pageTexts(textValue, options) {
  return JSON.parse(requireRaw().snapcompactPages(text(textValue, 'text'), optionsJson(options)));
}

/** The shape `renderFrames(text, options)` uses (at the frame size in effect). */
export function shapeFor(textValue, options) {
  return JSON.parse(requireRaw().snapcompactShapeFor(text(textValue, 'text'), optionsJson(options)));
}

/**
 * Prints `text` onto PNG frames, first page first:
 * `[{png: Uint8Array, width, height, chars, cols, rows, page}]`.
 */
export function renderFrames(textValue, options) {
  return requireRaw().snapcompactRenderFrames(text(textValue, 'text'), optionsJson(options));
}

/** Prints one already-normalized page (doc shapes: wrapped lines joined by `\n`). */
export function renderFrame(page, options) {
  return requireRaw().snapcompactRenderFrame(text(page, 'page'), optionsJson(options));
}

/**
 * Registers a fallback font for characters the bitmap fonts lack: the Unifont asset
 * (`ctxfold/unifont.cxfb`) or any TrueType/OpenType font. Returns its glyph count.
 */
export function registerFallbackFont(fontBytes) {
  return requireRaw().snapcompactRegisterFallbackFont(bytes(fontBytes, 'font bytes'));
}

/** Forgets every registered fallback font. */
export function clearFallbackFonts() {
  requireRaw().snapcompactClearFallbackFonts();
}

/** Billing family of a wire API: `anthropic`, `openai`, `google` or `unknown`. */
export function billingFamily(api) {
  return requireRaw().snapcompactBillingFamily(api ?? undefined);
}

/** Billed tokens of one square frame of `size` px for a wire API. */
export function frameTokens(api, size) {
  return requireRaw().snapcompactFrameTokens(api ?? undefined, wholeNumber(size, 'size', 'pixels', 1));
}

/** Images one request to `provider` may carry (overrides: `{images: {provider: n}}`). */
export function providerImageBudget(provider, api, overrides) {
  return requireRaw().snapcompactProviderImageBudget(
    text(provider, 'provider'),
    api ?? undefined,
    optionsJson(overrides, 'overrides'),
  );
}

/** Base64 byte budget per request, only when configured (`{bytes: {provider: n}}`). */
export function providerImageByteBudget(provider, overrides) {
  return requireRaw().snapcompactProviderImageByteBudget(
    text(provider, 'provider'),
    optionsJson(overrides, 'overrides'),
  );
}

/** Archive frame cap for a provider: min(image budget, 80). */
export function providerFrameBudget(provider, api, overrides) {
  return requireRaw().snapcompactProviderFrameBudget(
    text(provider, 'provider'),
    api ?? undefined,
    optionsJson(overrides, 'overrides'),
  );
}
