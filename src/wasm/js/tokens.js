// The Maintainer's token gauge (issue 21 point 3): the local estimate of a request, counted
// either by the core's estimator (spec: compaction §3, about four characters a token) or by the
// host's `tokenCounter(message)` (a real tokenizer, an API count), and calibrated by what the
// provider reported for the requests it answered.
//
// - A huge message (a 50 MB tool output) is not handed to the counter whole: its strings are
//   cut to `maxCountChars` together, and the count is scaled back up by the characters left out.
// - Counts are remembered per message (by role, length and a sample of its text), so a request
//   counts only its new messages.
// - Calibration: the provider's prompt tokens (input + cache read + cache write) over the
//   estimate of the same request, the median of the last eight answered requests of the model,
//   clamped to 0.5–3, multiplies later estimates of that model.
import { invalidArgument } from './errors.js';

const MEMO_LIMIT = 20_000;
const RATIOS_KEPT = 8;
const MIN_RATIO = 0.5;
const MAX_RATIO = 3;
/** Below this estimate a request says little about the ratio (system prompt, a greeting). */
const MIN_CALIBRATION_TOKENS = 1_000;

/** Every string of a message a tokenizer would read (texts, thinking, tool arguments). */
function strings(message, out = []) {
  const c = message?.content;
  if (typeof c === 'string') out.push(c);
  else if (Array.isArray(c)) {
    for (const b of c) {
      if (typeof b?.text === 'string') out.push(b.text);
      if (typeof b?.thinking === 'string') out.push(b.thinking);
      if (b?.type === 'toolCall' && b.arguments !== undefined) out.push(JSON.stringify(b.arguments));
    }
  }
  return out;
}

/** A cheap fingerprint of a message: role, total length, and a hash of up to 512 sampled characters. */
function fingerprint(message, texts, total) {
  let h = 0x811c9dc5;
  for (const t of texts) {
    const step = Math.max(1, Math.floor(t.length / 128));
    for (let i = 0; i < t.length; i += step) h = Math.imul(h ^ t.charCodeAt(i), 0x01000193);
    h = Math.imul(h ^ t.length, 0x01000193);
  }
  return `${message.role}:${total}:${(h >>> 0).toString(36)}:${message.toolCallId ?? ''}`;
}

/** A copy of `message` whose strings are cut to `cap` characters together (proportionally). */
function capped(message, total, cap) {
  const keep = cap / total;
  const cut = (s) => s.slice(0, Math.ceil(s.length * keep));
  const c = message.content;
  if (typeof c === 'string') return { ...message, content: cut(c) };
  return {
    ...message,
    content: c.map((b) => {
      const o = { ...b };
      if (typeof o.text === 'string') o.text = cut(o.text);
      if (typeof o.thinking === 'string') o.thinking = cut(o.thinking);
      if (o.type === 'toolCall' && o.arguments !== undefined) o.arguments = { text: cut(JSON.stringify(o.arguments)) };
      return o;
    }),
  };
}

export class TokenGauge {
  #counter;
  #cap;
  #calibrate;
  #memo = new Map();
  /** Model key → the last ratios observed. */
  #ratios = new Map();

  constructor({ tokenCounter, maxCountChars = 200_000, calibrate = true } = {}) {
    if (tokenCounter !== undefined && typeof tokenCounter !== 'function') {
      throw invalidArgument('options.tokenCounter must be a function (message) => number');
    }
    if (!Number.isFinite(maxCountChars) || maxCountChars < 1_000) {
      throw invalidArgument('options.maxCountChars must be a number of at least 1000');
    }
    this.#counter = tokenCounter;
    this.#cap = maxCountChars;
    this.#calibrate = calibrate !== false;
  }

  /** Whether the host counts (then `count()` is used instead of the core's estimate). */
  get counting() {
    return this.#counter !== undefined;
  }

  /** The host's count of `messages` (LLM messages, or `{role: 'system', content}` for text). */
  count(messages) {
    let sum = 0;
    for (const m of messages) sum += this.#one(m);
    return sum;
  }

  #one(message) {
    const texts = strings(message);
    let total = 0;
    for (const t of texts) total += t.length;
    const key = fingerprint(message, texts, total);
    const known = this.#memo.get(key);
    if (known !== undefined) return known;
    const counted =
      total > this.#cap
        ? this.#counter(capped(message, total, this.#cap)) * (total / this.#cap)
        : this.#counter(message);
    if (!Number.isFinite(counted) || counted < 0) {
      throw invalidArgument(
        `options.tokenCounter returned ${counted} for a ${message.role} message; it must return a number ≥ 0`,
      );
    }
    const n = Math.ceil(counted);
    if (this.#memo.size >= MEMO_LIMIT) this.#memo.clear();
    this.#memo.set(key, n);
    return n;
  }

  /** The calibration ratio of a model (1 until it answered a request, or when calibration is off). */
  ratio(model) {
    if (!this.#calibrate) return 1;
    const seen = this.#ratios.get(`${model.provider}/${model.id}`);
    if (seen === undefined || seen.length === 0) return 1;
    const sorted = [...seen].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  }

  /** A request of `model` estimated at `estimate` tokens was reported as `reported` prompt tokens. */
  observe(model, estimate, reported) {
    if (!this.#calibrate || !(estimate >= MIN_CALIBRATION_TOKENS) || !(reported > 0)) return;
    const key = `${model.provider}/${model.id}`;
    const seen = this.#ratios.get(key) ?? [];
    seen.push(Math.min(MAX_RATIO, Math.max(MIN_RATIO, reported / estimate)));
    if (seen.length > RATIOS_KEPT) seen.shift();
    this.#ratios.set(key, seen);
  }

  /** What `calibration` of the Maintainer shows: the ratio and the requests it comes from, per model. */
  snapshot() {
    const out = {};
    for (const [key, seen] of this.#ratios) {
      const [provider, ...id] = key.split('/');
      out[key] = { ratio: this.ratio({ provider, id: id.join('/') }), samples: seen.length };
    }
    return out;
  }
}
