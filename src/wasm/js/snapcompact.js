// snapcompact: print conversation text onto PNG frames that a vision model reads back.
// Options and shapes cross the wasm boundary as JSON text; frames come back as objects holding
// the PNG bytes in a Uint8Array. Errors are Error objects with a stable `code`
// (E_SHAPE, E_OPTIONS, E_FONT, E_ENCODE, E_INVALID_ARGUMENT).
import { requireRaw, toJson } from './raw.js';

function fail(code, message) {
  const err = new Error(message);
  err.code = code;
  return err;
}

function text(value, what) {
  if (typeof value !== 'string') throw fail('E_INVALID_ARGUMENT', `${what} must be a string`);
  return value;
}

function json(value) {
  return value === undefined || value === null ? undefined : JSON.stringify(value);
}

function object(value, what) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw fail('E_INVALID_ARGUMENT', `${what} must be an object`);
  }
  return JSON.stringify(value);
}

function shapeArg(shape) {
  if (shape === undefined || shape === null) return undefined;
  if (typeof shape !== 'string' && (typeof shape !== 'object' || Array.isArray(shape))) {
    throw fail('E_INVALID_ARGUMENT', 'shape must be a shape name or a shape record');
  }
  return JSON.stringify(shape);
}

function bytesOf(input) {
  if (input instanceof Uint8Array) return input;
  if (input instanceof ArrayBuffer) return new Uint8Array(input);
  if (ArrayBuffer.isView(input)) {
    return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  }
  throw fail('E_INVALID_ARGUMENT', 'font bytes must be a Uint8Array, ArrayBuffer or typed array view');
}

/** Engine upper bound on frames per archive. */
export const MAX_FRAMES_DEFAULT = 80;
/** Conservative per-frame token charge for context budgeting (ceil(4784 × 1.05)). */
export const FRAME_TOKEN_ESTIMATE = 5024;
/** Assumed upper bound of one frame's base64 length. */
export const FRAME_DATA_BYTES_ESTIMATE = 170000;
/** Max snapcompact base64 bytes attached to one request. */
export const FRAME_DATA_BYTES_BUDGET = 3000000;
/** Image-count floor for unknown providers. */
export const DEFAULT_PROVIDER_IMAGE_BUDGET = 5;

/** The shape catalogue names, in declaration order (`silver16-bw` is accepted as an alias). */
export function shapeVariantNames() {
  return JSON.parse(requireRaw().snapcompactShapeNames());
}

/** True for a catalogue shape name (or the alias `silver16-bw`); false for `auto`. */
export function isShapeVariantName(value) {
  return typeof value === 'string' && (value === 'silver16-bw' || shapeVariantNames().includes(value));
}

/**
 * The shape for a reader model, priced for the API that carries the request.
 * `model`: a model id or `{id?, api?}`; `variant`: a catalogue name, `auto` or omitted.
 * With `text`, text the shape's fonts cannot print well switches to the fallback-font shape.
 */
export function resolveShape(model, variant, text) {
  if (model !== undefined && model !== null && typeof model !== 'string' && typeof model !== 'object') {
    throw fail('E_INVALID_ARGUMENT', 'model must be a model id or an object {id?, api?}');
  }
  if (variant !== undefined && variant !== null && typeof variant !== 'string') {
    throw fail('E_INVALID_ARGUMENT', 'variant must be a shape name or "auto"');
  }
  if (text !== undefined && typeof text !== 'string') {
    throw fail('E_INVALID_ARGUMENT', 'text must be a string');
  }
  return JSON.parse(requireRaw().snapcompactResolveShape(json(model), json(variant), text));
}

/** The measured-best catalogue variant for a model id, or undefined when unmeasured. */
export function idealShapeVariant(modelId) {
  return JSON.parse(requireRaw().snapcompactIdealShapeVariant(text(modelId, 'modelId'))) ?? undefined;
}

/** Columns, rows and capacity of a shape (name or record) at `size` (default its frameSize). */
export function geometry(shape, size) {
  if (size !== undefined && (!Number.isInteger(size) || size < 1)) {
    throw fail('E_INVALID_ARGUMENT', 'size must be a whole number of pixels');
  }
  return JSON.parse(requireRaw().snapcompactGeometry(shapeArg(shape) ?? '"auto"', size));
}

/** Is `value` a valid shape record? */
export function isShape(value) {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
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
  if (!Number.isInteger(width) || width < 0) {
    throw fail('E_INVALID_ARGUMENT', 'width must be a whole number of cells');
  }
  return JSON.parse(requireRaw().snapcompactWrap(text(textValue, 'text'), width, Boolean(wideCells)));
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
  if (!Array.isArray(messages)) throw fail('E_INVALID_ARGUMENT', 'messages must be an array');
  // JSON has no Infinity: an uncapped limit crosses as the string "Infinity".
  const opts =
    options === undefined || options === null
      ? undefined
      : JSON.stringify(options, (_k, v) => (v === Infinity ? 'Infinity' : v));
  return requireRaw().snapcompactSerialize(toJson(messages), opts);
}

/** How many frames `renderFrames(text, options)` returns, without rendering them. */
export function frameCount(textValue, options) {
  return requireRaw().snapcompactFrameCount(text(textValue, 'text'), object(options, 'options'));
}

/** The exact string printed on each frame, first page first. */
export function pageTexts(textValue, options) {
  return JSON.parse(requireRaw().snapcompactPages(text(textValue, 'text'), object(options, 'options')));
}

/** The shape `renderFrames(text, options)` uses (at the frame size in effect). */
export function shapeFor(textValue, options) {
  return JSON.parse(requireRaw().snapcompactShapeFor(text(textValue, 'text'), object(options, 'options')));
}

/**
 * Prints `text` onto PNG frames, first page first:
 * `[{png: Uint8Array, width, height, chars, cols, rows, page}]`.
 */
export function renderFrames(textValue, options) {
  return requireRaw().snapcompactRenderFrames(text(textValue, 'text'), object(options, 'options'));
}

/** Prints one already-normalized page (doc shapes: wrapped lines joined by `\n`). */
export function renderFrame(page, options) {
  return requireRaw().snapcompactRenderFrame(text(page, 'page'), object(options, 'options'));
}

/**
 * Registers a fallback font for characters the bitmap fonts lack: the Unifont asset
 * (`ctxfold/unifont.cxfb`) or any TrueType/OpenType font. Returns its glyph count.
 */
export function registerFallbackFont(bytes) {
  return requireRaw().snapcompactRegisterFallbackFont(bytesOf(bytes));
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
  if (!Number.isInteger(size) || size < 1) {
    throw fail('E_INVALID_ARGUMENT', 'size must be a whole number of pixels');
  }
  return requireRaw().snapcompactFrameTokens(api ?? undefined, size);
}

/** Images one request to `provider` may carry (overrides: `{images: {provider: n}}`). */
export function providerImageBudget(provider, api, overrides) {
  return requireRaw().snapcompactProviderImageBudget(
    text(provider, 'provider'),
    api ?? undefined,
    object(overrides, 'overrides'),
  );
}

/** Base64 byte budget per request, only when configured (`{bytes: {provider: n}}`). */
export function providerImageByteBudget(provider, overrides) {
  return requireRaw().snapcompactProviderImageByteBudget(text(provider, 'provider'), object(overrides, 'overrides'));
}

/** Archive frame cap for a provider: min(image budget, 80). */
export function providerFrameBudget(provider, api, overrides) {
  return requireRaw().snapcompactProviderFrameBudget(
    text(provider, 'provider'),
    api ?? undefined,
    object(overrides, 'overrides'),
  );
}
