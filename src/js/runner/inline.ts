// Inline imaging (spec: snapcompact §9.7): one request sends large old tool results, and the
// selected system-prompt text, as snapcompact frames when that costs the reading model fewer
// tokens. The rules are the core's (src/context/inline.rs): the plan, the text a
// `systemPrompt` mode selects (`inlineSystemTarget`), the image budget, and the prompt-cache
// bookkeeping between requests (`WasmInlineCache`: what the previous request sent, the cache's
// TTL). This module reads the clock, measures the candidates, renders the chosen ones (kept per
// tool call while its text is unchanged, so a result is sent as the same bytes every time) and
// builds new message objects: the messages it is given are never changed.
import { isObject } from '../core/args.js';
import { invalidArgument } from '../core/errors.js';
import type { WasmInlineCache } from '../core/glue.js';
import { onRaw, requireRaw } from '../core/raw.js';
import type {
  ImageContent,
  LlmMessage,
  ResolvedCompactionSettings,
  SnapcompactSettings,
  TextContent,
} from '../core/session.js';
import {
  frameCount,
  providerImageBudget,
  type RenderOptions,
  renderFrames,
  resolveShape,
  type ShapeVariantName,
  scanRenderability,
} from '../core/snapcompact.js';
// Written by .ci/pkg.sh from prompts/inline-*.md.
import { PROMPTS as TEXTS } from './prompts.js';
import { textTokens } from './report.js';
import { defined } from './summarizer.js';

export interface InlineImagerOptions extends Pick<SnapcompactSettings, 'systemPrompt' | 'toolResults' | 'shape'> {
  /**
   * How long the provider keeps a prompt prefix cached after a request, in ms (default 5 min,
   * Anthropic's default). Within it, what the previous request sent as text stays text and what
   * it sent as frames stays frames, so imaging never rewrites a cached prefix.
   */
  cacheTtlMs?: number;
  /**
   * Text tokens of a text for the savings gate (default: the core's estimate, about 4
   * characters a token, which undercounts code and so images only where the savings are sure).
   * Plug a real tokenizer here.
   */
  countTextTokens?: (text: string) => number;
}

/** The model that reads the request: its `input` must include `'image'` for any imaging. */
export interface InlineModel {
  id: string;
  provider?: string;
  api?: string;
  input?: ReadonlyArray<string>;
}

export interface InlineRequest {
  /** Provider messages (`session.toLlmMessages()`); never changed. */
  messages: LlmMessage[];
  model: InlineModel;
  /** The system prompt, as one text or as blocks. */
  systemPrompt?: string | string[];
  /** The provider whose image budget applies (default `model.provider`). */
  provider?: string;
  /** ms since the epoch (default `Date.now()`): how old the previous request's cache is. */
  now?: number;
}

export interface InlineSaving {
  textTokens: number;
  frames: number;
  /** Billed tokens of the frames for the reading model. */
  imageTokens: number;
  savedTokens: number;
}

export interface InlineReport {
  /** The tool results sent as frames, oldest first. */
  toolResults: Array<InlineSaving & { toolCallId: string }>;
  /** Set when the system prompt's text went as frames. */
  systemPrompt?: (InlineSaving & { scope: 'all' | 'agents-md' }) | undefined;
  /** Candidates left as text only because a warm prompt cache holds them so. */
  keptForCache: number;
  savedTokens: number;
}

export interface InlineResult {
  /** The messages to send: new objects where frames replaced text, the given ones elsewhere. */
  messages: LlmMessage[];
  /** The system prompt to send (same form as given): a stub where its text went as frames. */
  systemPrompt?: string | string[] | undefined;
  report: InlineReport;
}

let MAX_SYSTEM_PROMPT_FRAMES = 0;
onRaw((bindings: ReturnType<typeof requireRaw>) => {
  const c: { inlineMaxSystemPromptFrames: number } = JSON.parse(bindings.snapcompactConstants());
  MAX_SYSTEM_PROMPT_FRAMES = c.inlineMaxSystemPromptFrames;
});

/** The measurement of a candidate: its text tokens, its frames, and the core's flags. */
interface Facts {
  tokens: number;
  frames: number;
  staysText: boolean;
  printable: boolean;
}

/** A candidate's text, its measurement (per text and shape) and its frames once rendered. */
interface Measured {
  text?: string;
  key?: string;
  facts?: Facts;
  data?: string[] | undefined;
}

/** How a candidate is measured and rendered: the reader and the shape setting. */
interface ShapeChoice {
  model: { id: string; api: string | undefined };
  shape: ShapeVariantName | 'auto';
}

/** A measured candidate as the core reads it: `[tokens, frames, flags]` (src/context/inline.rs `flag`). */
function flat(c: Facts): number[] {
  return [c.tokens, c.frames, (c.staysText ? 1 : 0) | (c.printable ? 2 : 0)];
}

/** Image parts in the content of user, developer and tool-result messages. */
function imageCount(messages: readonly LlmMessage[]): number {
  let n = 0;
  for (const m of messages) {
    if (m?.role === 'assistant' || !Array.isArray(m?.content)) continue;
    for (const part of m.content) if (part?.type === 'image') n++;
  }
  return n;
}

/** The text a tool result prints (its text parts), and whether it carries images. */
function toolResultText(content: unknown): { text: string; images: boolean } {
  if (typeof content === 'string') return { text: content, images: false };
  const parts: string[] = [];
  let images = false;
  for (const part of Array.isArray(content) ? content : []) {
    if (part?.type === 'text' && typeof part.text === 'string') parts.push(part.text);
    else if (part?.type === 'image') images = true;
  }
  return { text: parts.join('\n'), images };
}

/** What the first message says: a compaction or a new session changes it. */
function headOf(messages: readonly LlmMessage[]): string {
  const c = messages[0]?.content;
  if (typeof c === 'string') return c;
  const first = Array.isArray(c) ? c[0] : undefined;
  return first !== undefined && 'text' in first && typeof first.text === 'string' ? first.text : '';
}

/** PNG bytes as base64 (`Uint8Array.prototype.toBase64` where the runtime has it). */
function base64(bytes: Uint8Array & { toBase64?: () => string }): string {
  if (typeof bytes.toBase64 === 'function') return bytes.toBase64();
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/** The system-prompt text a mode images, and what is sent in its place. */
interface SystemTarget {
  scope: 'all' | 'agents-md';
  text: string;
  replacement: string | string[];
  note: string;
}

/**
 * The system-prompt text `mode` images, and the prompt sent in its place (the core's choice,
 * `inlineSystemTarget`); undefined when there is none. `prompt` is a string or an array of
 * blocks; the replacement has the same form.
 */
function systemTarget(prompt: string | string[] | undefined, mode: string): SystemTarget | undefined {
  if (mode === 'none' || prompt === undefined) return undefined;
  const blocks = typeof prompt === 'string' ? [prompt] : prompt;
  const t = requireRaw().inlineSystemTarget(blocks, mode, TEXTS.systemStub, TEXTS.contextStub);
  if (t === undefined) return undefined;
  const [scope, text, ...replaced] = t;
  const replacement = typeof prompt === 'string' ? replaced.join('\n\n') : replaced;
  const all = scope === 'all';
  return {
    scope: all ? 'all' : 'agents-md',
    text: text ?? '',
    replacement,
    note: all ? TEXTS.systemNote : TEXTS.contextNote,
  };
}

/** What sending `facts`' text as frames saved, priced at `frameTokens` per frame. */
function saving<W extends object>(what: W, facts: Facts, frameTokens: number): W & InlineSaving {
  const imageTokens = facts.frames * frameTokens;
  return {
    ...what,
    textTokens: facts.tokens,
    frames: facts.frames,
    imageTokens,
    savedTokens: facts.tokens - imageTokens,
  };
}

function checkPrompt(prompt: unknown): asserts prompt is string | string[] | undefined {
  if (prompt === undefined || typeof prompt === 'string') return;
  if (!Array.isArray(prompt) || prompt.some((b) => typeof b !== 'string')) {
    throw invalidArgument('systemPrompt must be a string or an array of strings');
  }
}

/**
 * Sends large old tool results and system-prompt text as snapcompact frames when that costs
 * the reading model fewer tokens (frames at most 90 % of the text's tokens, results of at
 * least 3,000 tokens, never the newest result, an error or a result with images, within the provider's image budget,
 * at most 6 frames for the prompt). Keep one per conversation: it remembers the frames it
 * rendered and what the previous request sent, so a warm prompt cache is never invalidated.
 */
export class InlineImager {
  #mode: string;
  #toolResults: boolean;
  #shape: ShapeVariantName | 'auto' | undefined;
  #count: (text: string) => number;
  /** Per tool call id, its text's measurement and frames: `{text, key, facts, data?}`. */
  #measured = new Map<string, Measured>();
  /** The same for the system prompt's selected text. */
  #system: Measured = {};
  /** The core's memory of what the previous request sent (the prompt-cache rule). */
  #sent: WasmInlineCache;

  /**
   * `options`: the `snapcompact` settings (`systemPrompt`, `toolResults`, `shape`; checked
   * like `resolveSettings`, `E_SETTINGS` naming a bad one), `cacheTtlMs` and `countTextTokens`.
   * Throws `E_SETTINGS` for a bad `systemPrompt` / `toolResults` / `shape`, `E_INVALID_ARGUMENT` otherwise.
   */
  constructor(options?: InlineImagerOptions) {
    const o: unknown = options ?? {};
    if (!isObject(o)) throw invalidArgument('InlineImager options must be an object');
    const { cacheTtlMs, countTextTokens, ...settings } = o as InlineImagerOptions;
    if (cacheTtlMs !== undefined && !(Number.isFinite(cacheTtlMs) && cacheTtlMs >= 0)) {
      throw invalidArgument('options.cacheTtlMs must be a non-negative number of milliseconds');
    }
    if (countTextTokens !== undefined && typeof countTextTokens !== 'function') {
      throw invalidArgument('options.countTextTokens must be a function (text) => number');
    }
    this.#count = countTextTokens ?? textTokens;
    const resolved: ResolvedCompactionSettings = JSON.parse(
      requireRaw().resolveSettingsJson(JSON.stringify({ snapcompact: settings })),
    );
    const s = resolved.snapcompact;
    this.#mode = s.systemPrompt ?? 'none';
    this.#toolResults = s.toolResults === true;
    this.#shape = s.shape;
    this.#sent = new (requireRaw().WasmInlineCache)(cacheTtlMs);
  }

  /**
   * The request to send: `{messages, systemPrompt, report}`. `request`: `{messages, model,
   * systemPrompt?, provider?, now?}`; `messages` are provider messages (`toLlmMessages`).
   * Throws `E_INVALID_ARGUMENT` for bad arguments.
   */
  transform(request: InlineRequest): InlineResult {
    if (!isObject(request) || !Array.isArray(request.messages)) {
      throw invalidArgument('transform() takes `{messages, model, systemPrompt?, provider?, now?}`');
    }
    const { messages, systemPrompt, model } = request;
    if (!isObject(model) || typeof model.id !== 'string') {
      throw invalidArgument('model must be an object with a string `id` (and `provider`, `api`, `input`)');
    }
    checkPrompt(systemPrompt);
    const now = request.now ?? Date.now();
    const report: InlineReport = { toolResults: [], systemPrompt: undefined, keptForCache: 0, savedTokens: 0 };
    const results: number[] = [];
    for (let i = 0; i < messages.length; i++) {
      if (messages[i]?.role === 'toolResult') results.push(i);
    }
    const toolResult = (i: number) => messages[i] as LlmMessage & { role: 'toolResult' };
    const ids = results.map((i) => toolResult(i).toolCallId);
    const target = systemTarget(systemPrompt, this.#mode);
    const reader = { id: model.id, api: model.api };
    const readerTarget = defined(reader);
    const provider = request.provider ?? model.provider ?? '';
    const budget = requireRaw().WasmInlineCache.imageBudget(
      Array.isArray(model.input) && model.input.includes('image'),
      providerImageBudget(provider, model.api),
      imageCount(messages),
    );
    const shape: ShapeChoice = { model: reader, shape: this.#shape ?? 'auto' };
    const candidates: Facts[] = [];
    let system: Facts | undefined;
    // Without budget nothing is imaged: nothing to measure.
    if (budget > 0) {
      for (const i of this.#toolResults ? results : []) {
        const m = toolResult(i);
        let rec = this.#measured.get(m.toolCallId);
        if (rec === undefined) {
          rec = {};
          this.#measured.set(m.toolCallId, rec);
        }
        // The core says what stays text from the result's facts (an error, images).
        const { text, images } = toolResultText(m.content);
        const staysText = requireRaw().WasmInlineCache.staysText(m.isError === true, images);
        candidates.push(this.#measure(rec, text, shape, staysText, true));
      }
      if (target !== undefined) system = this.#measure(this.#system, target.text, shape, false, false);
    }
    const userAt = messages.findIndex((m) => m?.role === 'user');
    // The core plans and remembers what this request sends, for the next one's cache rule.
    const plan = this.#sent.plan(
      now,
      headOf(messages),
      ids.map((id) => (typeof id === 'string' ? id : '')),
      Float64Array.from(candidates.flatMap(flat)),
      Float64Array.from(system === undefined ? [] : flat(system)),
      target?.text,
      budget,
      reader.id,
      reader.api,
      budget > 0 ? resolveShape(readerTarget, this.#shape ?? 'auto').frameSize : 0,
      userAt >= 0,
    );
    const [systemChosen = 0, keptForCache = 0, frameTokens = 0, ...chosen] = plan;
    if (budget <= 0) return { messages, systemPrompt, report };

    let out = messages;
    for (const k of chosen) {
      const at = results[k];
      if (at === undefined) continue;
      const m = toolResult(at);
      const rec = this.#measured.get(m.toolCallId);
      if (rec?.facts === undefined) continue;
      if (out === messages) out = [...messages];
      out[at] = { ...m, content: [{ type: 'text', text: TEXTS.toolResult }, ...this.#frames(rec, shape)] };
      report.toolResults.push(saving({ toolCallId: m.toolCallId }, rec.facts, frameTokens));
    }
    let prompt = systemPrompt;
    const first = out[userAt];
    if (systemChosen === 1 && target !== undefined && system !== undefined && first?.role === 'user') {
      const original: Array<TextContent | ImageContent> =
        typeof first.content === 'string' ? [{ type: 'text', text: first.content }] : first.content;
      if (out === messages) out = [...messages];
      const frames = this.#frames(this.#system, { ...shape, maxFrames: MAX_SYSTEM_PROMPT_FRAMES });
      out[userAt] = { ...first, content: [{ type: 'text', text: target.note }, ...frames, ...original] };
      prompt = target.replacement;
      report.systemPrompt = saving({ scope: target.scope }, system, frameTokens);
    }
    report.keptForCache = keptForCache;
    for (const r of [...report.toolResults, report.systemPrompt ?? { savedTokens: 0 }])
      report.savedTokens += r.savedTokens;

    // Measurements of tool calls no longer in the context are dropped.
    if (this.#measured.size > ids.length) {
      const live = new Set(ids);
      for (const id of this.#measured.keys()) if (!live.has(id)) this.#measured.delete(id);
    }
    return { messages: out, systemPrompt: prompt, report };
  }

  /** Forgets what the previous request sent (a new conversation, a changed model). */
  reset(): void {
    this.#sent.reset();
  }

  /** A candidate's facts, measured once per text and shape; `rec` keeps them (and its frames). */
  #measure(rec: Measured, text: string, shape: ShapeChoice, staysText: boolean, floor: boolean): Facts {
    const key = `${shape.shape}|${shape.model.id}|${shape.model.api}|${staysText}`;
    if (rec.text === text && rec.key === key && rec.facts !== undefined) return rec.facts;
    Object.assign(rec, { text, key, data: undefined });
    const tokens = this.#count(text);
    if (!(Number.isFinite(tokens) && tokens >= 0)) {
      throw invalidArgument(`countTextTokens returned ${String(tokens)}, not a non-negative number`);
    }
    let frames = 0;
    let printable = true;
    // What stays text and results below the floor (the prompt has none) are not measured.
    if (requireRaw().WasmInlineCache.measures(tokens, staysText, floor)) {
      frames = frameCount(text, renderOptions(shape));
      printable = scanRenderability(text, resolveShape(defined(shape.model), shape.shape, text)).isSafe;
    }
    rec.facts = { tokens, frames, staysText, printable };
    return rec.facts;
  }

  /** The image parts of a candidate's frames, rendered once. */
  #frames(rec: Measured, options: ShapeChoice & { maxFrames?: number }): ImageContent[] {
    rec.data ??= renderFrames(rec.text ?? '', renderOptions(options)).map((f) => base64(f.png));
    return rec.data.map((data) => ({ type: 'image', data, mimeType: 'image/png' }));
  }
}

/** A shape choice as render options (the reader without an absent `api`). */
function renderOptions(o: ShapeChoice & { maxFrames?: number }): RenderOptions {
  return defined({ model: defined(o.model), shape: o.shape, maxFrames: o.maxFrames });
}
