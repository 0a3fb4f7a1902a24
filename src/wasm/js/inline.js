// Inline imaging (spec: snapcompact §9.7): one request sends large old tool results, and the
// selected system-prompt text, as snapcompact frames when that costs the reading model fewer
// tokens. The rules are the core's (`snapcompactPlanInline`, src/context/inline.rs); this
// module measures the candidates, renders the chosen ones (kept per tool call while its text is
// unchanged, so a result is sent as the same bytes every time) and builds new message objects:
// the messages it is given are never changed.
import { isObject } from './args.js';
import { invalidArgument } from './errors.js';
// Written by .ci/pkg.sh from prompts/inline-*.md.
import { PROMPTS as TEXTS } from './prompts.js';
import { onRaw, requireRaw } from './raw.js';
import { textTokens } from './report.js';
import { frameCount, providerImageBudget, renderFrames, resolveShape, scanRenderability } from './snapcompact.js';

/** How long a provider keeps a prompt prefix cached after a request (Anthropic's default TTL). */
const DEFAULT_CACHE_TTL_MS = 5 * 60 * 1000;

/**
 * The context-file sections `agents-md` images (the coding agent's system-prompt layout): each
 * from its opening to the first closing after it, as `[opening, closing]`.
 */
const CONTEXT_SECTIONS = [
  ['<repo-rules>\n', '\n</repo-rules>'],
  ['## Context\n<instructions>\n', '\n</instructions>'],
];

/**
 * `text` with each `[open, close]` section replaced by `stub`, the sections (trimmed) pushed on
 * `found`. One forward scan: a lazy `open[\s\S]*?close` regex searched the rest of the text
 * again from every opening left unclosed (quadratic; a 1 MB prompt of them took minutes).
 */
function cutSections(text, [open, close], stub, found) {
  let out = '';
  let at = 0;
  for (;;) {
    const start = text.indexOf(open, at);
    if (start < 0) break;
    const end = text.indexOf(close, start + open.length);
    // No closing after this opening: none after a later one either.
    if (end < 0) break;
    found.push(text.slice(start, end + close.length).trim());
    out += text.slice(at, start) + stub;
    at = end + close.length;
  }
  return at === 0 ? text : out + text.slice(at);
}

let MIN_TOOL_RESULT_TOKENS;
let MAX_SYSTEM_PROMPT_FRAMES;
onRaw((bindings) => {
  const c = JSON.parse(bindings.snapcompactConstants());
  MIN_TOOL_RESULT_TOKENS = c.inlineMinToolResultTokens;
  MAX_SYSTEM_PROMPT_FRAMES = c.inlineMaxSystemPromptFrames;
});

/** A candidate as the core reads it: `[tokens, frames, flags]` (src/context/inline.rs `flag`). */
function flat(c) {
  const flags =
    (c.staysText ? 1 : 0) | (c.printable ? 2 : 0) | (c.previous === undefined ? 0 : 4 | (c.previous ? 8 : 0));
  return [c.tokens, c.frames, flags];
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
 * The system-prompt text `mode` images, and the prompt sent in its place; undefined when there
 * is none. `prompt` is a string or an array of blocks; the replacement has the same form.
 */
function systemTarget(prompt, mode) {
  if (mode === 'none' || prompt === undefined) return undefined;
  const blocks = typeof prompt === 'string' ? [prompt] : prompt;
  const form = (list) => (typeof prompt === 'string' ? list.join('\n\n') : list);
  if (mode === 'all') {
    const text = blocks.join('\n\n');
    return text === ''
      ? undefined
      : { scope: 'all', text, replacement: form([TEXTS.systemStub]), note: TEXTS.systemNote };
  }
  const sections = [];
  const replaced = blocks.map((block) => {
    let out = block;
    for (const section of CONTEXT_SECTIONS) out = cutSections(out, section, TEXTS.contextStub, sections);
    return out;
  });
  if (sections.length === 0) return undefined;
  return { scope: 'agents-md', text: sections.join('\n\n'), replacement: form(replaced), note: TEXTS.contextNote };
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
  #ttl;
  #count;
  /** Per tool call id, its text's measurement and frames: `{text, key, facts, data?}`. */
  #measured = new Map();
  /** The same for the system prompt's selected text. */
  #system = {};
  /** What the previous request sent: `{at, head, ids, imaged, newest, system}`. */
  #last = null;

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
    this.#ttl = cacheTtlMs ?? DEFAULT_CACHE_TTL_MS;
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
    const last = this.#last;
    // What this request sends, for the next one's cache rule.
    const remember = (imaged, systemImaged) => {
      this.#last = {
        at: now,
        head: headOf(messages),
        ids,
        imaged,
        newest: ids[ids.length - 1],
        system: target === undefined ? null : { text: target.text, imaged: systemImaged },
      };
    };
    const reader = { id: model.id, api: model.api };
    const provider = request.provider ?? model.provider ?? '';
    // A model that reads no images would lose the text (providers drop the images); without
    // budget nothing fits. Either way all goes as text.
    const budget =
      Array.isArray(model.input) && model.input.includes('image')
        ? providerImageBudget(provider, model.api) - imageCount(messages)
        : 0;
    if (budget <= 0) {
      remember(new Set(), false);
      return { messages, systemPrompt, report };
    }
    const shape = { model: reader, shape: this.#shape ?? 'auto' };
    const warm = last !== null && now - last.at < this.#ttl && last.head === headOf(messages);
    // The previous request's tool results up to the first difference are in its cached prefix;
    // its newest one sits at the prefix's end and may change form (spec: compaction §6.6).
    let common = 0;
    while (last !== null && common < ids.length && ids[common] === last.ids[common]) common++;
    const candidates = [];
    if (this.#toolResults) {
      for (let k = 0; k < results.length; k++) {
        const m = messages[results[k]];
        let rec = this.#measured.get(m.toolCallId);
        if (rec === undefined) {
          rec = {};
          this.#measured.set(m.toolCallId, rec);
        }
        // Errors (providers validate them as text) and results with images stay text.
        const { text, images } = toolResultText(m.content);
        const facts = this.#measure(rec, text, shape, m.isError === true || images, true);
        const cached = k < common && ids[k] !== last.newest;
        candidates.push({ ...facts, previous: cached ? last.imaged.has(ids[k]) : undefined });
      }
    }
    const system = target === undefined ? undefined : this.#measure(this.#system, target.text, shape, false, false);
    const userAt = messages.findIndex((m) => m?.role === 'user');
    const systemPrevious = target !== undefined && last?.system?.text === target.text ? last.system.imaged : undefined;
    const [systemChosen, keptForCache, frameTokens, ...chosen] = requireRaw().snapcompactPlanInline(
      Float64Array.from(candidates.flatMap(flat)),
      Float64Array.from(system === undefined ? [] : flat({ ...system, previous: systemPrevious })),
      budget,
      reader.id,
      reader.api,
      resolveShape(reader, this.#shape ?? 'auto').frameSize,
      userAt >= 0,
      warm,
    );

    let out = messages;
    const imaged = new Set();
    for (const k of chosen) {
      const m = messages[results[k]];
      const rec = this.#measured.get(m.toolCallId);
      if (out === messages) out = [...messages];
      out[results[k]] = { ...m, content: [{ type: 'text', text: TEXTS.toolResult }, ...this.#frames(rec, shape)] };
      imaged.add(m.toolCallId);
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
    remember(imaged, systemChosen === 1);
    return { messages: out, systemPrompt: prompt, report };
  }

  /** Forgets what the previous request sent (a new conversation, a changed model). */
  reset() {
    this.#last = null;
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
