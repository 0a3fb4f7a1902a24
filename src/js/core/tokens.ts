// The Maintainer's token gauge (issue 21 point 3): the local estimate of a request, counted
// either by the core's estimator (spec: compaction §3, about four characters a token) or by the
// host's `tokenCounter(message)` (a real tokenizer, an API count), and calibrated by what the
// provider reported for the requests it answered.
//
// - A huge message (a 50 MB tool output) is not handed to the counter whole: its strings are
//   cut to `maxCountChars` together, and the count is scaled back up by the characters left out
//   (the cap, its default and the cut are the core's: `maxCountChars`, `countCut`).
// - Counts are remembered per message, so a request counts only its new messages. The memo is a
//   pure cache with an exact key: every value of the message (`messageKey`: its members'
//   names, strings, numbers, in order), compared in full (`matchKey`); a cheap hash of a
//   sample of its text only picks the bucket. Two messages that differ anywhere never share a
//   count; the strings are the session's own (its messages share them across requests), so
//   the comparison is by reference where nothing changed. The walk costs about 1 µs a message
//   (200 short messages: ~0.3 ms a request more than the sampled key it replaced).
// - Calibration (spec: compaction §3) is the core's (`WasmCalibration`, src/triggers/
//   calibration.rs): the gauge tells it what each request sent (its text and image estimates)
//   and what the reply reported, and reads the rates back. So is the conversion of the host's
//   windows into the core's estimate when a `tokenCounter` counts.
import { toJson } from './args.js';
import { invalidArgument, messageOf, wrapError } from './errors.js';
import type { WasmCalibration } from './glue.js';
import { requireRaw } from './raw.js';
import type { JsonValue } from './types.js';

/**
 * A message as the gauge reads it: an LLM message, or `{role: 'system', content}` for text.
 * Only `role`, `content` (a string or blocks with `text`, `thinking`, tool call `arguments`),
 * `toolCallId` and `providerPayload` are read; the rest is part of its memo key.
 * @internal
 */
export interface CountedMessage {
  role: string;
  content?: unknown;
  toolCallId?: string;
  providerPayload?: unknown;
  [key: string]: unknown;
}

/** The host's token counter (the Maintainer's `tokenCounter` option). @internal */
export type TokenCounter = (message: CountedMessage) => number;

/** The options of a TokenGauge (the Maintainer's). @internal */
export interface TokenGaugeOptions {
  tokenCounter?: TokenCounter | undefined;
  maxCountChars?: number | undefined;
  calibrate?: boolean | undefined;
}

/** The model a gauge keeps rates for: `provider/id`. @internal */
export interface GaugeModel {
  provider: string;
  id: string;
}

/** A block of a message's content as `strings` and `capped` read it. */
type Block = { type?: unknown; text?: unknown; thinking?: unknown; arguments?: unknown; [key: string]: unknown };

/** One member of the memo: the exact key of a message and its count. */
interface MemoEntry {
  key: unknown[];
  n: number;
}

/** Counts remembered at most, and characters their keys may hold, before the memo starts over. */
const MEMO_LIMIT = 20_000;
const MEMO_CHARS = 32_000_000;

/** Every string of a message a tokenizer would read (texts, thinking, tool arguments). */
function strings(message: CountedMessage, out: string[] = []): string[] {
  const c = message?.content;
  if (typeof c === 'string') out.push(c);
  else if (Array.isArray(c)) {
    for (const b of c as Block[]) {
      if (typeof b?.text === 'string') out.push(b.text);
      if (typeof b?.thinking === 'string') out.push(b.thinking);
      if (b?.type === 'toolCall' && b.arguments !== undefined) out.push(JSON.stringify(b.arguments));
    }
  }
  return out;
}

/**
 * The memo's bucket of a message: role, total length, tool call id and a hash of up to 512
 * sampled characters. Only an index: a count is taken from the bucket for the exact same
 * message alone (`matchKey`).
 */
function bucketOf(message: CountedMessage, texts: string[], total: number): string {
  let h = 0x811c9dc5;
  for (const t of texts) {
    const step = Math.max(1, Math.floor(t.length / 128));
    for (let i = 0; i < t.length; i += step) h = Math.imul(h ^ t.charCodeAt(i), 0x01000193);
    h = Math.imul(h ^ t.length, 0x01000193);
  }
  return `${message.role}:${total}:${(h >>> 0).toString(36)}:${message.toolCallId ?? ''}`;
}

/** Deeper than this, a message is counted without the memo (no JSON message nests so deep). */
const KEY_DEPTH = 200;
/** The markers of the memo's keys: symbols, which no message value can be. */
const OBJECT = Symbol('{');
const ARRAY = Symbol('[');
const END = Symbol('}');

/**
 * Pushes `v` on `out` as the memo's exact key reads it: an object as `OBJECT`, its member
 * names and values, `END`; an array as `ARRAY`, its length and items; strings, numbers,
 * booleans and null as they are. False past `KEY_DEPTH` (or for a cycle).
 */
function pushKey(out: unknown[], v: unknown, depth: number): boolean {
  if (v === null || typeof v !== 'object') {
    out.push(v);
    return true;
  }
  if (depth > KEY_DEPTH) return false;
  if (Array.isArray(v)) {
    out.push(ARRAY, v.length);
    for (let i = 0; i < v.length; i++) if (!pushKey(out, v[i], depth + 1)) return false;
    return true;
  }
  out.push(OBJECT);
  const o = v as Record<string, unknown>;
  for (const k in o) {
    out.push(k);
    if (!pushKey(out, o[k], depth + 1)) return false;
  }
  out.push(END);
  return true;
}

/** A message's exact key (`pushKey`), or undefined when it nests too deep. */
function messageKey(message: CountedMessage): unknown[] | undefined {
  const out: unknown[] = [];
  return pushKey(out, message, 0) ? out : undefined;
}

/**
 * Whether `v` reads as `key` from `at` on: the position after it, or -1. Walks the message
 * without building its key (a memo hit allocates nothing); strings compare by reference first.
 */
function matchKey(key: unknown[], at: number, v: unknown, depth: number): number {
  if (v === null || typeof v !== 'object') return key[at] === v ? at + 1 : -1;
  if (depth > KEY_DEPTH) return -1;
  let i = at;
  if (Array.isArray(v)) {
    if (key[i] !== ARRAY || key[i + 1] !== v.length) return -1;
    i += 2;
    for (let j = 0; j < v.length && i >= 0; j++) i = matchKey(key, i, v[j], depth + 1);
    return i;
  }
  if (key[i++] !== OBJECT) return -1;
  const o = v as Record<string, unknown>;
  for (const k in o) {
    if (key[i] !== k) return -1;
    i = matchKey(key, i + 1, o[k], depth + 1);
    if (i < 0) return -1;
  }
  return key[i] === END ? i + 1 : -1;
}

/** A copy of `message` whose strings are each cut to `ceil(length × keep)` (the core's cut). */
function capped(message: CountedMessage, keep: number): CountedMessage {
  const cut = (s: string): string => s.slice(0, Math.ceil(s.length * keep));
  const c = message.content;
  if (typeof c === 'string') return { ...message, content: cut(c) };
  return {
    ...message,
    content: (c as Block[]).map((b) => {
      const o: Block = { ...b };
      if (typeof o.text === 'string') o.text = cut(o.text);
      if (typeof o.thinking === 'string') o.thinking = cut(o.thinking);
      if (o.type === 'toolCall' && o.arguments !== undefined) o.arguments = { text: cut(JSON.stringify(o.arguments)) };
      return o;
    }),
  };
}

/** The Maintainer's token gauge (see the top of this file). @internal */
export class TokenGauge {
  #counter: TokenCounter | undefined;
  #cap: number;
  /** bucket (`bucketOf`) → `[{key, n}]`: the exact key of each count (`messageKey`) and the count. */
  #memo = new Map<string, MemoEntry[]>();
  #memoCount = 0;
  #memoChars = 0;
  /** The core's calibration and the request it last sent. */
  #calibration: WasmCalibration;

  constructor({ tokenCounter, maxCountChars, calibrate = true }: TokenGaugeOptions = {}) {
    if (tokenCounter !== undefined && typeof tokenCounter !== 'function') {
      throw invalidArgument('options.tokenCounter must be a function (message) => number');
    }
    if (maxCountChars !== undefined && typeof maxCountChars !== 'number') {
      throw invalidArgument('options.maxCountChars must be a number of at least 1000');
    }
    this.#counter = tokenCounter;
    this.#cap = requireRaw().WasmCalibration.maxCountChars(maxCountChars);
    this.#calibration = new (requireRaw().WasmCalibration)(calibrate !== false, tokenCounter !== undefined);
  }

  /** Whether the host counts (then `count()` is used instead of the core's estimate). */
  get counting(): boolean {
    return this.#counter !== undefined;
  }

  /** The host's count of `messages` (LLM messages, or `{role: 'system', content}` for text). */
  count(messages: Iterable<CountedMessage>): number {
    let sum = 0;
    for (const m of messages) sum += m?.providerPayload === undefined ? this.#one(m) : this.#replayed(m);
    return sum;
  }

  /**
   * A message the request replaces by the provider's replay (an OpenAI native compaction's
   * history, as the core reads its `providerPayload`): the host counts the texts the model
   * reads, and the encrypted items and images count at the core's estimate, which no text
   * counter can measure. Any other payload leaves the message as it is.
   */
  #replayed(message: CountedMessage): number {
    const json = requireRaw().replayPiecesJson(toJson(message.providerPayload));
    if (json === undefined) return this.#one(message);
    const { texts, fixedTokens }: { texts: string[]; fixedTokens: number } = JSON.parse(json);
    return fixedTokens + (texts.length === 0 ? 0 : this.#one({ role: 'user', content: texts.join('\n\n') }));
  }

  #one(message: CountedMessage): number {
    const texts = strings(message);
    let total = 0;
    for (const t of texts) total += t.length;
    const bucket = bucketOf(message, texts, total);
    const known = this.#memo.get(bucket)?.find((e) => matchKey(e.key, 0, message, 0) === e.key.length);
    if (known !== undefined) return known.n;
    let counted: number;
    try {
      const [keep, scale] = requireRaw().WasmCalibration.countCut(total, this.#cap);
      // Only called when the host counts (`counting`).
      const counter = this.#counter as TokenCounter;
      counted = keep === undefined ? counter(message) : counter(capped(message, keep)) * (scale as number);
    } catch (e) {
      throw wrapError(
        'E_TOKEN_COUNTER',
        `options.tokenCounter threw for a ${message.role} message: ${messageOf(e)}`,
        e,
      );
    }
    if (!Number.isFinite(counted) || counted < 0) {
      throw invalidArgument(
        `options.tokenCounter returned ${counted} for a ${message.role} message; it must return a number ≥ 0`,
      );
    }
    const n = Math.ceil(counted);
    const exact = messageKey(message);
    if (exact === undefined) return n;
    // What the key holds (image data too), for the memo's bound.
    let held = 0;
    for (const v of exact) if (typeof v === 'string') held += v.length;
    if (this.#memoCount >= MEMO_LIMIT || this.#memoChars + held > MEMO_CHARS) {
      this.#memo.clear();
      this.#memoCount = 0;
      this.#memoChars = 0;
    }
    const entry: MemoEntry = { key: exact, n };
    const live = this.#memo.get(bucket);
    if (live === undefined) this.#memo.set(bucket, [entry]);
    else live.push(entry);
    this.#memoCount++;
    this.#memoChars += held;
    return n;
  }

  /**
   * The calibration of a model: `ratio`, the provider's tokens per estimated token of text, and
   * `imageRate`, per estimated token of images (both 1 until it answered a request, or when
   * calibration is off).
   */
  calibration(model: GaugeModel): { ratio: number; imageRate: number } {
    const [ratio, imageRate] = this.#calibration.rates(keyOf(model));
    return { ratio: ratio as number, imageRate: imageRate as number };
  }

  /** The text ratio of a model (see `calibration`). */
  ratio(model: GaugeModel): number {
    return this.calibration(model).ratio;
  }

  /** The calibrated figure of a request of `model` estimated at `text` tokens of text and `images` of images. */
  calibrated(model: GaugeModel, text: number, images = 0): number {
    return this.#calibration.calibrated(keyOf(model), text, images);
  }

  /**
   * A request went to `model`, estimated at `text` tokens of text and `images` of images;
   * `inlineSaved`: the tokens inline imaging saved (then it sent less than the estimate counts).
   */
  sent(model: GaugeModel, { text, images = 0 }: { text: number; images?: number }, inlineSaved = 0): void {
    this.#calibration.sent(keyOf(model), model.id, text, images, inlineSaved);
  }

  /** A reply came: it calibrates the model of the request last sent, if it answered it (the core decides). */
  observe(message: { stopReason?: unknown; model?: unknown; usage?: unknown }): void {
    const { stopReason, model, usage } = message;
    this.#calibration.observeReply(toJson({ stopReason, model, usage }));
  }

  /**
   * Provider tokens per token of the core's estimate of text for `model` (the core's rule);
   * undefined until a request with enough text was answered or a `tokenCounter` counts.
   */
  providerRatio(model: GaugeModel, { estimated, counted }: { estimated: number; counted: number }): number | undefined {
    return this.#calibration.providerRatio(keyOf(model), estimated, this.counting ? counted : 0);
  }

  /** What `calibration` of the Maintainer shows: the text ratio, the image rate and the requests they come from, per model. */
  snapshot(): Record<string, JsonValue> {
    return JSON.parse(this.#calibration.snapshotJson());
  }

  /** Releases the core's state. */
  free(): void {
    this.#calibration.free();
  }
}

function keyOf(model: GaugeModel): string {
  return `${model.provider}/${model.id}`;
}
