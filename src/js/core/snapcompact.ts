// snapcompact: print conversation text onto PNG frames that a vision model reads back.
// Options and shapes cross the wasm boundary as JSON text; frames come back as objects holding
// the PNG bytes in a Uint8Array. Errors are Error objects with a stable `code`
// (E_SHAPE, E_OPTIONS, E_FONT, E_ENCODE, E_INVALID_ARGUMENT).
import { bytes, isObject, optionalJson, optionalText, optionsJson, text, toJson, wholeNumber } from './args.js';
import { invalidArgument } from './errors.js';
import { onRaw, requireRaw } from './raw.js';

/** The catalogue names (`silver16-bw` is accepted as an alias of `unifont16-bw`). */
export type ShapeVariantName =
  | '8x8r-bw'
  | '8x8r-sent'
  | '8x8u-bw'
  | '8x8u-sent'
  | '6x6u-bw'
  | '6x6u-sent'
  | '5x8-bw'
  | '5x8-sent'
  | '6x12-dim'
  | '8x13-bw'
  | '8on16-bw'
  | '8on22-bw'
  | '11on16-bw'
  | 'unifont16-bw'
  | 'silver16-bw'
  | 'doc-8on16-bw'
  | 'doc-8on16-sent'
  | 'doc-8on16-sent-dim';

/** Bundled bitmap fonts, or `unifont` for the registered fallback font (alias `silver`). */
export type ShapeFont = '5x8' | '8x8' | '6x12' | '8x13' | 'unifont' | 'silver';

/** How a frame prints text and what it costs (spec §3.1). */
export interface Shape {
  font: ShapeFont;
  cellWidth: number;
  cellHeight: number;
  /** false: glyphs stay natural size on a bigger cell; unset/true: Lanczos to the cell. */
  stretch?: boolean;
  /** `sent`: six hues cycling per sentence; `bw`: black. */
  variant: 'sent' | 'bw';
  /** Print stopwords in dim gray. */
  stopwordDim?: boolean;
  /** 2 = two word-wrapped columns ("doc"). */
  columns?: 1 | 2;
  /** Every text row printed this many times (copies 2.. on a pale band). */
  lineRepeat: number;
  /** Frame width in px (also the nominal square used for billing). */
  frameSize: number;
  /** Billed tokens per frame for the target provider family. */
  frameTokenEstimate: number;
  /** OpenAI resolution hint forwarded with each image. */
  imageDetail?: 'auto' | 'low' | 'high' | 'original';
}

export interface Geometry {
  /** Characters per row (per column on doc shapes). */
  cols: number;
  /** Text rows (not counting repeated copies). */
  rows: number;
  /** Cells per frame (nominal for doc shapes). */
  capacity: number;
}

/** The reader: a model id, or its id and wire API (`anthropic-messages`, `openai-responses`, …). */
export type ModelTarget = string | { id?: string; api?: string };

/** Deflate effort of our encoder: `tuned` (default, fast, about 5–10 % above the reference's sizes),
 * `fast` (fastest, frames about 40 % larger), `balanced` (level 6), `high` (the longest search:
 * 3–5 % below the reference's zlib 9 sizes), or a level 1–9. Pixels are the same for every
 * setting. */
export type Compression = 'tuned' | 'fast' | 'balanced' | 'high' | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9;

export interface RenderOptions {
  /** A catalogue name, a shape record, or `auto` (default: chosen for `model` and the text). */
  shape?: ShapeVariantName | Shape | 'auto';
  /** The reader model; decides the shape when none is given and prices named shapes. */
  model?: ModelTarget;
  /** Frame width in px (default: the shape's frameSize). */
  frameSize?: number;
  /** Render at most this many pages, first pages first. */
  maxFrames?: number;
  /** Frames are at least this tall, in px (default 64; 0 = hug the text rows exactly). */
  minHeight?: number;
  compression?: Compression;
}

/** One rendered frame. */
export interface Frame {
  png: Uint8Array<ArrayBuffer>;
  width: number;
  height: number;
  /** Visible characters printed. */
  chars: number;
  /** Characters per row (per column on doc frames). */
  cols: number;
  /** Grid rows. */
  rows: number;
  /** The exact string laid out on the frame (U+2588 = newline run, U+000E/U+000F = dim). */
  page: string;
}

export interface Renderability {
  /** Share of graphic characters that print as `?`. */
  unrenderableRatio: number;
  /** `unrenderableRatio <= 0.05`. */
  isSafe: boolean;
}

export type ArchiveContentBlock = { type: 'text'; text: string } | { type: string; [key: string]: unknown };

/** Agent messages as the serializer reads them (the fields it uses). */
export type ArchiveMessage =
  | { role: 'user'; content: string | ArchiveContentBlock[] }
  | {
      role: 'assistant';
      content: Array<
        | { type: 'text'; text: string }
        | { type: 'thinking'; thinking: string }
        | { type: 'toolCall'; id: string; name: string; arguments: Record<string, unknown>; intent?: string }
        | { type: string; [key: string]: unknown }
      >;
    }
  | {
      role: 'toolResult';
      toolCallId: string;
      content: string | ArchiveContentBlock[];
      isError?: boolean;
      useless?: boolean;
    }
  | { role: string; [key: string]: unknown }
  // Any message type of the package's own (an interface has no index signature): what
  // `toLlmMessages()` or `buildContext().messages` return is serialized as it is.
  | { readonly role: string };

export interface SerializeOptions {
  /** Cap per tool result (UTF-16 units; default 2000; Infinity = none). */
  toolResultMaxChars?: number;
  /** Cap per JSON-encoded argument value (default 500). */
  toolArgMaxChars?: number;
  /** Cap per call's argument list (default 2000). */
  toolCallMaxChars?: number;
  /** Share of a cap kept from the head (default 0.6). */
  truncateHeadRatio?: number;
  /** Wrap tool output in the dim toggles (default true). */
  dimToolResults?: boolean;
  /** Keep thinking blocks as `¶think:` (default true). */
  includeThinking?: boolean;
}

/** Host overrides of the per-provider budgets. */
export interface ImageBudgetOverrides {
  /** Images per request, by provider id. */
  images?: Record<string, number>;
  /** Base64 bytes per request, by provider id. */
  bytes?: Record<string, number>;
}

function shapeArg(shape: unknown): string | undefined {
  if (shape === undefined || shape === null) return undefined;
  if (typeof shape !== 'string' && !isObject(shape)) {
    throw invalidArgument('shape must be a shape name or a shape record');
  }
  return JSON.stringify(shape);
}

// Constants of the core (one source: src/render/shape/billing.rs), set as soon as the module is
// initialised: at import under Node.js and workerd, after `await init()` in browsers
// (`undefined` before).
/** Engine upper bound on frames per archive (80). */
export let MAX_FRAMES_DEFAULT: number;
/** Conservative per-frame token charge for context budgeting (5024 = ceil(4784 × 1.05)). */
export let FRAME_TOKEN_ESTIMATE: number;
/** Assumed upper bound of one frame's base64 length (170,000). */
export let FRAME_DATA_BYTES_ESTIMATE: number;
/** Max snapcompact base64 bytes attached to one request (3,000,000). */
export let FRAME_DATA_BYTES_BUDGET: number;
/** Image-count floor for unknown providers (5). */
export let DEFAULT_PROVIDER_IMAGE_BUDGET: number;
/** The catalogue names and their aliases, read once from the core. */
let shapeNames = new Set<string>();

/** The constants of the core as `snapcompactConstants()` writes them. */
interface CoreConstants {
  maxFramesDefault: number;
  frameTokenEstimate: number;
  frameDataBytesEstimate: number;
  frameDataBytesBudget: number;
  defaultProviderImageBudget: number;
  shapeAliases: Record<string, string>;
}

onRaw((bindings) => {
  const c: CoreConstants = JSON.parse(bindings.snapcompactConstants());
  MAX_FRAMES_DEFAULT = c.maxFramesDefault;
  FRAME_TOKEN_ESTIMATE = c.frameTokenEstimate;
  FRAME_DATA_BYTES_ESTIMATE = c.frameDataBytesEstimate;
  FRAME_DATA_BYTES_BUDGET = c.frameDataBytesBudget;
  DEFAULT_PROVIDER_IMAGE_BUDGET = c.defaultProviderImageBudget;
  const names: string[] = JSON.parse(bindings.snapcompactShapeNames());
  shapeNames = new Set([...names, ...Object.keys(c.shapeAliases)]);
});

/** The shape catalogue names, in declaration order (`silver16-bw` is accepted as an alias). */
export function shapeVariantNames(): ShapeVariantName[] {
  return JSON.parse(requireRaw().snapcompactShapeNames());
}

/** True for a catalogue shape name (or the alias `silver16-bw`); false for `auto`. */
export function isShapeVariantName(value: unknown): value is ShapeVariantName {
  if (typeof value !== 'string') return false;
  requireRaw();
  return shapeNames.has(value);
}

/**
 * The shape for a reader model, priced for the API that carries the request.
 * `model`: a model id or `{id?, api?}`; `variant`: a catalogue name, `auto` or omitted.
 * Given the text to print, one the shape's fonts cannot print well switches to the fallback-font shape.
 */
export function resolveShape(
  model?: ModelTarget | null,
  variant?: ShapeVariantName | 'auto' | null,
  textValue?: string,
): Shape {
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
export function idealShapeVariant(modelId: string): { variant: ShapeVariantName; frameSize?: number } | undefined {
  return JSON.parse(requireRaw().snapcompactIdealShapeVariant(text(modelId, 'modelId'))) ?? undefined;
}

/** Columns, rows and capacity of a shape (name or record) at `size` (default its frameSize). */
export function geometry(shape: ShapeVariantName | Shape, size?: number): Geometry {
  if (size !== undefined) wholeNumber(size, 'size', 'pixels', 1);
  return JSON.parse(requireRaw().snapcompactGeometry(shapeArg(shape) ?? '"auto"', size));
}

/** Is `value` a valid shape record? */
export function isShape(value: unknown): value is Shape {
  if (!isObject(value)) return false;
  return requireRaw().snapcompactIsShape(JSON.stringify(value));
}

/**
 * One line of text every character of which the shape's font (or a registered fallback font)
 * can draw: newline runs become U+2588, whitespace collapses, symbols fold.
 */
export function normalize(textValue: string, shape?: ShapeVariantName | Shape): string {
  return requireRaw().snapcompactNormalize(text(textValue, 'text'), shapeArg(shape));
}

/** Share of characters that would print as `?`, and whether that is at most 5 %. */
export function scanRenderability(textValue: string, shape?: ShapeVariantName | Shape): Renderability {
  return JSON.parse(requireRaw().snapcompactScanRenderability(text(textValue, 'text'), shapeArg(shape)));
}

/** Wraps stopwords outside dim spans in the dim toggles U+000E … U+000F. */
export function dimStopwords(textValue: string): string {
  return requireRaw().snapcompactDimStopwords(text(textValue, 'text'));
}

/** Greedy word wrap to `width` cells (wide characters count 2 when `wideCells`). */
export function wrap(textValue: string, width: number, wideCells = false): string[] {
  const cells = wholeNumber(width, 'width', 'cells');
  return JSON.parse(requireRaw().snapcompactWrap(text(textValue, 'text'), cells, Boolean(wideCells)));
}

/** Replaces inline base64 data URLs by `[data URL omitted: <mime>, <n> base64 chars]`. */
export function elideDataUrls(textValue: string, options?: { archive?: boolean }): string {
  return requireRaw().snapcompactElideDataUrls(text(textValue, 'text'), options?.archive === true);
}

/**
 * The archive transcript of agent messages (`¶user:`, `¶think:`, `¶ai:`, `¶call:` scopes,
 * dim tool output, head+tail caps). Caps may be `Infinity`.
 */
export function serializeConversation(messages: readonly ArchiveMessage[], options?: SerializeOptions): string {
  if (!Array.isArray(messages)) throw invalidArgument('messages must be an array');
  // JSON has no Infinity: an uncapped limit crosses as the string "Infinity".
  const opts =
    options === undefined || options === null
      ? undefined
      : JSON.stringify(options, (_k, v) => (v === Infinity ? 'Infinity' : v));
  return requireRaw().snapcompactSerialize(toJson(messages), opts);
}

/** How many frames `renderFrames(text, options)` returns, without rendering them. */
export function frameCount(textValue: string, options?: RenderOptions): number {
  return requireRaw().snapcompactFrameCount(text(textValue, 'text'), optionsJson(options));
}

/** The exact string printed on each frame, first page first. */
export function pageTexts(textValue: string, options?: RenderOptions): string[] {
  return JSON.parse(requireRaw().snapcompactPages(text(textValue, 'text'), optionsJson(options)));
}

/** The shape `renderFrames(text, options)` uses (at the frame size in effect). */
export function shapeFor(textValue: string, options?: RenderOptions): Shape {
  return JSON.parse(requireRaw().snapcompactShapeFor(text(textValue, 'text'), optionsJson(options)));
}

/**
 * Prints `text` onto PNG frames, first page first:
 * `[{png: Uint8Array, width, height, chars, cols, rows, page}]`.
 */
export function renderFrames(textValue: string, options?: RenderOptions): Frame[] {
  return requireRaw().snapcompactRenderFrames(text(textValue, 'text'), optionsJson(options));
}

/** Prints one already-normalized page (doc shapes: wrapped lines joined by `\n`). */
export function renderFrame(page: string, options?: RenderOptions): Frame {
  return requireRaw().snapcompactRenderFrame(text(page, 'page'), optionsJson(options));
}

/**
 * Registers a fallback font for characters the bitmap fonts lack: the Unifont asset
 * (`ctxfold/unifont.cxfb`) or any TrueType/OpenType font. Returns its glyph count.
 */
export function registerFallbackFont(fontBytes: Uint8Array | ArrayBuffer | ArrayBufferView): number {
  return requireRaw().snapcompactRegisterFallbackFont(bytes(fontBytes, 'font bytes'));
}

/** Forgets every registered fallback font. */
export function clearFallbackFonts(): void {
  requireRaw().snapcompactClearFallbackFonts();
}

/** Billing family of a wire API: `anthropic`, `openai`, `google` or `unknown`. */
export function billingFamily(api?: string | null): 'anthropic' | 'openai' | 'google' | 'unknown' {
  return requireRaw().snapcompactBillingFamily(api ?? undefined) as 'anthropic' | 'openai' | 'google' | 'unknown';
}

/** Billed tokens of one square frame of `size` px for a wire API. */
export function frameTokens(api: string | null | undefined, size: number): number {
  return requireRaw().snapcompactFrameTokens(api ?? undefined, wholeNumber(size, 'size', 'pixels', 1));
}

/** Images one request to `provider` may carry (overrides: `{images: {provider: n}}`). */
export function providerImageBudget(provider: string, api?: string | null, overrides?: ImageBudgetOverrides): number {
  return requireRaw().snapcompactProviderImageBudget(
    text(provider, 'provider'),
    api ?? undefined,
    optionsJson(overrides, 'overrides'),
  );
}

/** Base64 byte budget per request, only when configured (`{bytes: {provider: n}}`). */
export function providerImageByteBudget(provider: string, overrides?: ImageBudgetOverrides): number | undefined {
  return requireRaw().snapcompactProviderImageByteBudget(
    text(provider, 'provider'),
    optionsJson(overrides, 'overrides'),
  );
}

/** Archive frame cap for a provider: min(image budget, 80). */
export function providerFrameBudget(provider: string, api?: string | null, overrides?: ImageBudgetOverrides): number {
  return requireRaw().snapcompactProviderFrameBudget(
    text(provider, 'provider'),
    api ?? undefined,
    optionsJson(overrides, 'overrides'),
  );
}
