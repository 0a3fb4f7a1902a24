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
import { onRaw, requireRaw } from '../core/raw.js';
import { frameCount, providerImageBudget, renderFrames, resolveShape, scanRenderability } from '../core/snapcompact.js';
// Written by .ci/pkg.sh from prompts/inline-*.md.
import { PROMPTS as TEXTS } from './prompts.js';
import { textTokens } from './report.js';

let MIN_TOOL_RESULT_TOKENS;
let MAX_SYSTEM_PROMPT_FRAMES;
onRaw((bindings) => {
  const c = JSON.parse(bindings.snapcompactConstants());
  MIN_TOOL_RESULT_TOKENS = c.inlineMinToolResultTokens;
  MAX_SYSTEM_PROMPT_FRAMES = c.inlineMaxSystemPromptFrames;
});

/** A measured candidate as the core reads it: `[tokens, frames, flags]` (src/context/inline.rs `flag`). */
function flat(c) {
  return [c.tokens, c.frames, (c.staysText ? 1 : 0) | (c.printable ? 2 : 0)];
}

/** Image parts in the content of user, developer and tool-result messages. */
function imageCount(messages) {
  let n = 0;
  for (const m of messages) {
    if (m?.role === 'assistant' || !Array.isArray(m?.content)) continue;
    for (const part of m.content) if (part?.type === 'image') n++;
  }
  return n;
}

/** The text a tool result prints (its text parts), and whether it carries images. */
function toolResultText(content) {
  if (typeof content === 'string') return { text: content, images: false };
  const parts = [];
  let images = false;
  for (const part of Array.isArray(content) ? content : []) {
    if (part?.type === 'text' && typeof part.text === 'string') parts.push(part.text);
    else if (part?.type === 'image') images = true;
  }
  return { text: parts.join('\n'), images };
}

/** What the first message says: a compaction or a new session changes it. */
function headOf(messages) {
  const c = messages[0]?.content;
  if (typeof c === 'string') return c;
  return Array.isArray(c) && typeof c[0]?.text === 'string' ? c[0].text : '';
}

/** PNG bytes as base64 (`Uint8Array.prototype.toBase64` where the runtime has it). */
function base64(bytes) {
  if (typeof bytes.toBase64 === 'function') return bytes.toBase64();
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/**
 * The system-prompt text `mode` images, and the prompt sent in its place (the core's choice,
 * `inlineSystemTarget`); undefined when there is none. `prompt` is a string or an array of
 * blocks; the replacement has the same form.
 */
function systemTarget(prompt, mode) {
  if (mode === 'none' || prompt === undefined) return undefined;
  const blocks = typeof prompt === 'string' ? [prompt] : prompt;
  const t = requireRaw().inlineSystemTarget(blocks, mode, TEXTS.systemStub, TEXTS.contextStub);
  if (t === undefined) return undefined;
  const [scope, text, ...replaced] = t;
  const replacement = typeof prompt === 'string' ? replaced.join('\n\n') : replaced;
  return { scope, text, replacement, note: scope === 'all' ? TEXTS.systemNote : TEXTS.contextNote };
}

/** What sending `facts`' text as frames saved, priced at `frameTokens` per frame. */
function saving(what, facts, frameTokens) {
  const imageTokens = facts.frames * frameTokens;
  return {
    ...what,
    textTokens: facts.tokens,
    frames: facts.frames,
    imageTokens,
    savedTokens: facts.tokens - imageTokens,
  };
}

function checkPrompt(prompt) {
  if (prompt === undefined || typeof prompt === 'string') return;
  if (!Array.isArray(prompt) || prompt.some((b) => typeof b !== 'string')) {
    throw invalidArgument('systemPrompt must be a string or an array of strings');
  }
}

/**
 * Sends large old tool results and system-prompt text as frames, request by request (see
 * `InlineImagerOptions` in the types). Keep one per conversation: it remembers the frames it
 * rendered and what the previous request sent, so a warm prompt cache is never invalidated.
 */
export class InlineImager {
  #mode;
  #toolResults;
  #shape;
  #count;
  /** Per tool call id, its text's measurement and frames: `{text, key, facts, data?}`. */
  #measured = new Map();
  /** The same for the system prompt's selected text. */
  #system = {};
  /** The core's memory of what the previous request sent (the prompt-cache rule). */
  #sent;

  /**
   * `options`: the `snapcompact` settings (`systemPrompt`, `toolResults`, `shape`; checked
   * like `resolveSettings`, `E_SETTINGS` naming a bad one), `cacheTtlMs` and `countTextTokens`.
   */
  constructor(options) {
    const o = options ?? {};
    if (!isObject(o)) throw invalidArgument('InlineImager options must be an object');
    const { cacheTtlMs, countTextTokens, ...settings } = o;
    if (cacheTtlMs !== undefined && !(Number.isFinite(cacheTtlMs) && cacheTtlMs >= 0)) {
      throw invalidArgument('options.cacheTtlMs must be a non-negative number of milliseconds');
    }
    if (countTextTokens !== undefined && typeof countTextTokens !== 'function') {
      throw invalidArgument('options.countTextTokens must be a function (text) => number');
    }
    this.#count = countTextTokens ?? textTokens;
    const s = JSON.parse(requireRaw().resolveSettingsJson(JSON.stringify({ snapcompact: settings }))).snapcompact;
    this.#mode = s.systemPrompt;
    this.#toolResults = s.toolResults;
    this.#shape = s.shape;
    this.#sent = new (requireRaw().WasmInlineCache)(cacheTtlMs);
  }

  /**
   * The request to send: `{messages, systemPrompt, report}`. `request`: `{messages, model,
   * systemPrompt?, provider?, now?}`; `messages` are provider messages (`toLlmMessages`).
   */
  transform(request) {
    if (!isObject(request) || !Array.isArray(request.messages)) {
      throw invalidArgument('transform() takes `{messages, model, systemPrompt?, provider?, now?}`');
    }
    const { messages, systemPrompt, model } = request;
    if (!isObject(model) || typeof model.id !== 'string') {
      throw invalidArgument('model must be an object with a string `id` (and `provider`, `api`, `input`)');
    }
    checkPrompt(systemPrompt);
    const now = request.now ?? Date.now();
    const report = { toolResults: [], systemPrompt: undefined, keptForCache: 0, savedTokens: 0 };
    const results = [];
    for (let i = 0; i < messages.length; i++) {
      if (messages[i]?.role === 'toolResult') results.push(i);
    }
    const ids = results.map((i) => messages[i].toolCallId);
    const target = systemTarget(systemPrompt, this.#mode);
    const reader = { id: model.id, api: model.api };
    const provider = request.provider ?? model.provider ?? '';
    const budget = requireRaw().WasmInlineCache.imageBudget(
      Array.isArray(model.input) && model.input.includes('image'),
      providerImageBudget(provider, model.api),
      imageCount(messages),
    );
    const shape = { model: reader, shape: this.#shape ?? 'auto' };
    const candidates = [];
    let system;
    // Without budget nothing is imaged: nothing to measure.
    if (budget > 0) {
      for (const i of this.#toolResults ? results : []) {
        const m = messages[i];
        let rec = this.#measured.get(m.toolCallId);
        if (rec === undefined) {
          rec = {};
          this.#measured.set(m.toolCallId, rec);
        }
        // Errors (providers validate them as text) and results with images stay text.
        const { text, images } = toolResultText(m.content);
        candidates.push(this.#measure(rec, text, shape, m.isError === true || images, true));
      }
      if (target !== undefined) system = this.#measure(this.#system, target.text, shape, false, false);
    }
    const userAt = messages.findIndex((m) => m?.role === 'user');
    // The core plans and remembers what this request sends, for the next one's cache rule.
    const [systemChosen, keptForCache, frameTokens, ...chosen] = this.#sent.plan(
      now,
      headOf(messages),
      ids.map((id) => (typeof id === 'string' ? id : '')),
      Float64Array.from(candidates.flatMap(flat)),
      Float64Array.from(system === undefined ? [] : flat(system)),
      target?.text,
      budget,
      reader.id,
      reader.api,
      budget > 0 ? resolveShape(reader, this.#shape ?? 'auto').frameSize : 0,
      userAt >= 0,
    );
    if (budget <= 0) return { messages, systemPrompt, report };

    let out = messages;
    for (const k of chosen) {
      const m = messages[results[k]];
      const rec = this.#measured.get(m.toolCallId);
      if (out === messages) out = [...messages];
      out[results[k]] = { ...m, content: [{ type: 'text', text: TEXTS.toolResult }, ...this.#frames(rec, shape)] };
      report.toolResults.push(saving({ toolCallId: m.toolCallId }, rec.facts, frameTokens));
    }
    let prompt = systemPrompt;
    if (systemChosen === 1) {
      const first = out[userAt];
      const original = typeof first.content === 'string' ? [{ type: 'text', text: first.content }] : first.content;
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
  reset() {
    this.#sent.reset();
  }

  /** A candidate's facts, measured once per text and shape; `rec` keeps them (and its frames). */
  #measure(rec, text, shape, staysText, floor) {
    const key = `${shape.shape}|${shape.model.id}|${shape.model.api}|${staysText}`;
    if (rec.text === text && rec.key === key) return rec.facts;
    Object.assign(rec, { text, key, data: undefined });
    const tokens = this.#count(text);
    if (!(Number.isFinite(tokens) && tokens >= 0)) {
      throw invalidArgument(`countTextTokens returned ${String(tokens)}, not a non-negative number`);
    }
    let frames = 0;
    let printable = true;
    // What stays text and results below the floor (the prompt has none) are not measured.
    if (!staysText && (!floor || tokens >= MIN_TOOL_RESULT_TOKENS)) {
      frames = frameCount(text, shape);
      printable = scanRenderability(text, resolveShape(shape.model, shape.shape, text)).isSafe;
    }
    rec.facts = { tokens, frames, staysText, printable };
    return rec.facts;
  }

  /** The image parts of a candidate's frames, rendered once. */
  #frames(rec, options) {
    rec.data ??= renderFrames(rec.text, options).map((f) => base64(f.png));
    return rec.data.map((data) => ({ type: 'image', data, mimeType: 'image/png' }));
  }
}
