// Types of the snapcompact API (src/wasm/js/snapcompact.js). Spec: snapcompact.md §3–§8.

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
  png: Uint8Array;
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
  | { role: string; [key: string]: unknown };

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

// The constants below come from the core: they are set once the module is initialised (at
// import under Node.js and workerd, after `await init()` in browsers; `undefined` before).
/** Engine upper bound on frames per archive (80). */
export const MAX_FRAMES_DEFAULT: number;
/** Conservative per-frame token charge for context budgeting (5024 = ceil(4784 × 1.05)). */
export const FRAME_TOKEN_ESTIMATE: number;
/** Assumed upper bound of one frame's base64 length (170,000). */
export const FRAME_DATA_BYTES_ESTIMATE: number;
/** Max snapcompact base64 bytes attached to one request (3,000,000). */
export const FRAME_DATA_BYTES_BUDGET: number;
/** Image-count floor for unknown providers (5). */
export const DEFAULT_PROVIDER_IMAGE_BUDGET: number;

export function shapeVariantNames(): ShapeVariantName[];
export function isShapeVariantName(value: unknown): value is ShapeVariantName;
export function resolveShape(
  model?: ModelTarget | null,
  variant?: ShapeVariantName | 'auto' | null,
  text?: string,
): Shape;
export function idealShapeVariant(modelId: string): { variant: ShapeVariantName; frameSize?: number } | undefined;
export function geometry(shape: ShapeVariantName | Shape, size?: number): Geometry;
export function isShape(value: unknown): value is Shape;
export function normalize(text: string, shape?: ShapeVariantName | Shape): string;
export function scanRenderability(text: string, shape?: ShapeVariantName | Shape): Renderability;
export function dimStopwords(text: string): string;
export function wrap(text: string, width: number, wideCells?: boolean): string[];
export function elideDataUrls(text: string, options?: { archive?: boolean }): string;
export function serializeConversation(messages: ArchiveMessage[], options?: SerializeOptions): string;
export function frameCount(text: string, options?: RenderOptions): number;
export function pageTexts(text: string, options?: RenderOptions): string[];
export function shapeFor(text: string, options?: RenderOptions): Shape;
export function renderFrames(text: string, options?: RenderOptions): Frame[];
export function renderFrame(page: string, options?: RenderOptions): Frame;
export function registerFallbackFont(bytes: Uint8Array | ArrayBuffer | ArrayBufferView): number;
export function clearFallbackFonts(): void;
export function billingFamily(api?: string | null): 'anthropic' | 'openai' | 'google' | 'unknown';
export function frameTokens(api: string | null | undefined, size: number): number;
export function providerImageBudget(provider: string, api?: string | null, overrides?: ImageBudgetOverrides): number;
export function providerImageByteBudget(provider: string, overrides?: ImageBudgetOverrides): number | undefined;
export function providerFrameBudget(provider: string, api?: string | null, overrides?: ImageBudgetOverrides): number;
