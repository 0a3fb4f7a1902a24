// The Maintainer's token gauge (issue 21 point 3): the local estimate of a request, counted
// either by the core's estimator (spec: compaction §3, about four characters a token) or by the
// host's `tokenCounter(message)` (a real tokenizer, an API count), and calibrated by what the
// provider reported for the requests it answered.
//
// - A huge message (a 50 MB tool output) is not handed to the counter whole: its strings are
//   cut to `maxCountChars` together, and the count is scaled back up by the characters left out.
// - Counts are remembered per message (by role, length and a sample of its text), so a request
//   counts only its new messages.
// - Calibration (spec: compaction §3): a request's estimate is split into its text and its
//   images (snapcompact frames at FRAME_TOKEN_ESTIMATE, other images at 1,200), because
//   providers bill images by their pixels whatever their tokenizer does to text. The provider's
//   prompt tokens (input + cache read + cache write) are modelled as text × the text ratio +
//   images × the image rate; over the model's last eight answered requests, the image rate is
//   the least-squares fit of that model (kept from the last fit that could tell the two apart,
//   1 until then), and the text ratio the median of (reported − images × image rate) / text,
//   clamped to 0.5–3, over the requests with at least MIN_CALIBRATION_TOKENS of text (kept
//   while none of the eight has that much). A request that is nearly all images so teaches the
//   image rate, not the text ratio.
import { invalidArgument, messageOf, wrapError } from './errors.js';

const MEMO_LIMIT = 20_000;
const RATIOS_KEPT = 8;
const MIN_RATIO = 0.5;
const MAX_RATIO = 3;
/** Below this estimate a request says little about the ratio (system prompt, a greeting). */
const MIN_CALIBRATION_TOKENS = 1_000;
/**
 * The image rate's bounds: a frame estimated at 5,024 tokens bills 1,120 on Gemini (0.22); an
 * image estimated at 1,200 bills up to 4,784 on Anthropic (about 4).
 */
const MIN_IMAGE_RATE = 0.2;
const MAX_IMAGE_RATE = 4;
/**
 * The fit separates text from images only when the requests mix them in different proportions:
 * the squared sine of the angle between the text and the image columns must reach this.
 */
const MIN_SEPARATION = 0.01;

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
  /** Model key → `{samples: [{text, images, reported}], ratio, imageRate}`: the last requests answered, and their fit. */
  #models = new Map();

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
    let counted;
    try {
      counted =
        total > this.#cap
          ? this.#counter(capped(message, total, this.#cap)) * (total / this.#cap)
          : this.#counter(message);
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
    if (this.#memo.size >= MEMO_LIMIT) this.#memo.clear();
    this.#memo.set(key, n);
    return n;
  }

  /**
   * The calibration of a model: `ratio`, the provider's tokens per estimated token of text, and
   * `imageRate`, per estimated token of images (both 1 until it answered a request, or when
   * calibration is off).
   */
  calibration(model) {
    const seen = this.#calibrate ? this.#models.get(`${model.provider}/${model.id}`) : undefined;
    if (seen === undefined) return { ratio: 1, imageRate: 1 };
    return { ratio: seen.ratio, imageRate: seen.imageRate };
  }

  /** The text ratio of a model (see `calibration`). */
  ratio(model) {
    return this.calibration(model).ratio;
  }

  /** The calibrated figure of a request of `model` estimated at `text` tokens of text and `images` of images. */
  calibrated(model, text, images = 0) {
    const { ratio, imageRate } = this.calibration(model);
    return text * ratio + images * imageRate;
  }

  /**
   * A request of `model` estimated at `text` tokens of text and `images` tokens of images
   * (what was sent) was reported as `reported` prompt tokens.
   */
  observe(model, { text, images = 0 }, reported) {
    if (!this.#calibrate || !(text >= 0) || !(images >= 0) || !(text + images >= MIN_CALIBRATION_TOKENS)) return;
    if (!(reported > 0)) return;
    const key = `${model.provider}/${model.id}`;
    const seen = this.#models.get(key) ?? { samples: [], imageRate: 1, ratio: 1 };
    seen.samples.push({ text, images, reported });
    if (seen.samples.length > RATIOS_KEPT) seen.samples.shift();
    seen.imageRate = fitImageRate(seen.samples) ?? seen.imageRate;
    seen.ratio = textRatio(seen.samples, seen.imageRate) ?? seen.ratio;
    this.#models.set(key, seen);
  }

  /** What `calibration` of the Maintainer shows: the text ratio, the image rate and the requests they come from, per model. */
  snapshot() {
    const out = {};
    for (const [key, seen] of this.#models) {
      out[key] = { ratio: seen.ratio, imageRate: seen.imageRate, samples: seen.samples.length };
    }
    return out;
  }
}

/**
 * The image rate of the least-squares fit reported ≈ text × ratio + images × rate over
 * `samples`, clamped; undefined when they hold no images or mix text and images in too
 * similar proportions to tell the two apart.
 */
function fitImageRate(samples) {
  let tt = 0;
  let ii = 0;
  let ti = 0;
  let tr = 0;
  let ir = 0;
  for (const { text, images, reported } of samples) {
    tt += text * text;
    ii += images * images;
    ti += text * images;
    tr += text * reported;
    ir += images * reported;
  }
  if (ii === 0) return undefined;
  // Images alone (no text in any sample): the rate is the images' own ratio.
  if (tt === 0) return clamp(ir / ii, MIN_IMAGE_RATE, MAX_IMAGE_RATE);
  const det = tt * ii - ti * ti;
  if (!(det >= MIN_SEPARATION * tt * ii)) return undefined;
  return clamp((tt * ir - ti * tr) / det, MIN_IMAGE_RATE, MAX_IMAGE_RATE);
}

/**
 * The median of (reported − images × imageRate) / text over the samples with enough text,
 * clamped; undefined when none has.
 */
function textRatio(samples, imageRate) {
  const ratios = [];
  for (const { text, images, reported } of samples) {
    if (text >= MIN_CALIBRATION_TOKENS)
      ratios.push(clamp((reported - images * imageRate) / text, MIN_RATIO, MAX_RATIO));
  }
  if (ratios.length === 0) return undefined;
  ratios.sort((x, y) => x - y);
  const mid = ratios.length >> 1;
  return ratios.length % 2 ? ratios[mid] : (ratios[mid - 1] + ratios[mid]) / 2;
}

function clamp(x, lo, hi) {
  return Math.min(hi, Math.max(lo, x));
}
