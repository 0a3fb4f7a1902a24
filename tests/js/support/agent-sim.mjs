// The agent simulator's scenarios run through the built package (issue 36, "Tests"): the
// seeded scenarios of the Rust simulator (crates/testkit/src/agent.rs, `Scenario::random`),
// drawn here by a port of its generator, each run by an outside agent loop against a fake
// provider with a hard context window, through one of three public doors:
//
// - `maintainer`: the `Maintainer`'s two calls per request (beforeRequest → provider →
//   afterResponse; retry, continue, tool results, done), as docs/guide/maintainer.md's loop;
// - `generateText` and `streamText`: an AI SDK app that keeps its whole history and sends it
//   every user turn through `wrapLanguageModel({ model, middleware: ctxfoldMiddleware() })`,
//   the SDK running the tool loop. Under `streamText` the provider refuses an overflow either
//   by throwing from `doStream` or with a stream whose first part is an `error`.
//
// What a scenario sets (window 8k-2M, text or vision model of three families, method order,
// provider tokens per estimated token, summarizer failures and empty documents, `length`
// stops, forced overflows, a dead remote endpoint, user turns) and the agent's workload
// follow the Rust simulator: a user message of window/200 + 20, window/40 or window/6 tokens
// carrying a marker `[[uN]]`; replies of 50-400 tokens, a `read` tool call half the time (at
// most 4 a user turn) whose result is 50 to window/30 tokens; the request overhead (system
// prompt and tool) about 500 provider tokens. As there, no provider-native lane (a GPT model
// has `remoteCompaction.enabled: false`) and no idle maintenance (the clock moves a second an
// append; timers never fire).
//
// The provider measures every request itself (PromptMeter of support/fake-agent.mjs: text at
// `ratio` x 4 characters a token, images by their pixels), so usage disagrees with the
// package's estimate by the scenario's ratio. The summarizer (a callback) answers a document
// naming every marker its request holds, fails with a 503 (retried as the core says) or
// answers an empty document at the scenario's rates. The dead endpoint is a local server
// answering 502 (`deadEndpoint`).
//
// Invariants, checked after every step (the Rust simulator's, docs/guide/maintainer.md "What
// is checked"):
// 1. never two overflows in a row: a request over the window right after a refused one
//    (a real or a forced overflow) is a violation;
// 2. no user turn ends (`done`, or the AI SDK call fails) while its last request was over the
//    window, except when the recovery failed on the summarizer (counted:
//    `turnsLostToTheSummarizer`), as in Rust;
// 3. every user message appended is in the session files (handoffs followed) and in what the
//    model is sent (verbatim, or in a summary, the fake summarizer repeating its input's
//    markers) or in the live snapcompact archive's text; a marker a snapcompact compaction
//    carried before and not after is counted (`archiveDroppedUserTurns`), as in Rust;
// 4. entries are never removed from a session file;
// 5. every automatic compaction that commits lowers the live request (measured by the
//    provider before and after; handoffs excepted, as in Rust), and its report says
//    tokensAfter < tokensBefore;
// 6. a user turn ends within 60 requests; every request is well formed (a user-side message
//    first, no orphan tool result); through the AI SDK, one conversation holds the whole
//    history unless a call failed (an app that drops a failed call's finished steps diverges
//    from what the middleware held, which then starts another conversation).
// Counted, not checked: requests that do not carry the newest user message verbatim
// (`promptNotVerbatim`, by the compaction before them: a turn a compaction split or a handoff
// took in reaches the model through its summary only).
// Violations are collected as strings naming the scenario, the turn and what happened, one of
// a kind per run with its repeats counted.
import { APICallError, generateText, jsonSchema, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { FRAME_DATA_BYTES_BUDGET, Maintainer, providerImageBudget, Session } from 'ctxfold';
import { ctxfoldMiddleware } from 'ctxfold/ai-sdk';
import { OVERFLOW_WORDINGS, PromptMeter, seededRandom, structureProblem, TextSource } from './fake-agent.mjs';

// ----- the Rust generator, ported ------------------------------------------------------------

const MASK = (1n << 64n) - 1n;
const rotl = (x, k) => ((x << BigInt(k)) | (x >> BigInt(64 - k))) & MASK;

/** One step of splitmix64 on `state.s` (crates/testkit/src/rng.rs). */
function splitmix64(state) {
  state.s = (state.s + 0x9e3779b97f4a7c15n) & MASK;
  let z = state.s;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
  return z ^ (z >> 31n);
}

/** `rng::mix`: a list of 64-bit words into one (order-sensitive). */
function mix(words) {
  const state = { s: 0x243f6a8885a308d3n };
  let acc = 0n;
  for (const w of words) {
    state.s ^= BigInt.asUintN(64, BigInt(w));
    acc = rotl(acc, 17) ^ splitmix64(state);
  }
  return acc;
}

/** The testkit's xoshiro256** (`rng::Rng`), the same stream for the same seed. */
export class Rng {
  constructor(seed) {
    const state = { s: BigInt.asUintN(64, BigInt(seed)) };
    this.s = [splitmix64(state), splitmix64(state), splitmix64(state), splitmix64(state)];
    if (this.s.every((w) => w === 0n)) this.s[0] = 1n;
  }

  /** `Rng::derived`. */
  static derived(parts) {
    return new Rng(mix(parts));
  }

  nextU64() {
    const s = this.s;
    const result = (rotl((s[1] * 5n) & MASK, 7) * 9n) & MASK;
    const t = (s[1] << 17n) & MASK;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }

  /** Uniform in 0..n (n a safe integer; 0 yields 0). */
  below(n) {
    if (n === 0) return 0;
    return Number((this.nextU64() * BigInt(n)) >> 64n);
  }

  /** Uniform in lo..=hi (lo when hi <= lo). */
  range(lo, hi) {
    return hi <= lo ? lo : lo + this.below(hi - lo + 1);
  }

  /** Uniform in [0, 1), 53 bits. */
  f64() {
    return Number(this.nextU64() >> 11n) / 2 ** 53;
  }

  chance(p) {
    return this.f64() < p;
  }

  pick(xs) {
    return xs[this.below(xs.length)];
  }
}

const WINDOWS = [8_000, 16_000, 32_000, 64_000, 128_000, 200_000, 1_000_000, 2_000_000];
const METHODS = ['remote', 'snapcompact', 'handoff', 'shake', 'soft'];

/**
 * `Scenario::random(seed)` of the Rust simulator, field for field and draw for draw, in the
 * shape of `Scenario::to_json` (`seed` a decimal string; tests/js/fixtures/agent-scenarios.json
 * holds the Rust side's answers for a few seeds).
 */
export function randomScenario(seed) {
  const r = Rng.derived([BigInt(seed), 0xa6e7n]);
  const methods = r.chance(0.4) ? null : Array.from({ length: r.range(1, 4) }, () => r.pick(METHODS));
  return {
    seed: BigInt.asUintN(64, BigInt(seed)).toString(),
    window: r.pick(WINDOWS),
    vision: r.chance(0.5),
    family: r.below(3),
    methods,
    ratio: r.pick([0.5, 0.8, 1.0, 1.0, 1.3, 2.0]),
    summarizerFailures: r.pick([0.0, 0.1, 0.1]),
    emptyDocuments: r.pick([0.0, 0.05]),
    lengthStops: r.pick([0.0, 0.05]),
    forcedOverflows: r.pick([0.0, 0.03]),
    deadRemote: r.chance(0.3),
    userTurns: r.range(20, 60),
  };
}

// ----- the agent's world ---------------------------------------------------------------------

export const DRIVERS = ['maintainer', 'generateText', 'streamText'];

/** What a request carries beside the messages (system prompt and tool), in provider tokens. */
const OVERHEAD = 500;
const FAMILIES = [
  { provider: 'anthropic', id: 'claude-sonnet-4-5', api: 'anthropic-messages', images: 'anthropic' },
  // No provider-native lane, as in the Rust simulator.
  { provider: 'openai', id: 'gpt-5', api: 'openai-responses', images: 'openai', remoteCompaction: { enabled: false } },
  { provider: 'google', id: 'gemini-2.5-pro', api: 'google-generative-ai', images: 'anthropic' },
];
const READ_TOOL = {
  name: 'read',
  description: 'Read a file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};
const MAX_REQUESTS_PER_TURN = 60;

const marker = (turn) => `[[u${turn}]]`;
const MARKER = /\[\[u\d+\]\]/g;

/** Every marker of `text`, in order, each once. */
function markersIn(text) {
  return [...new Set(text.match(MARKER) ?? [])];
}

// The printed text's stopword dimming toggles (spec: snapcompact §9.1).
const DIM_ON = String.fromCharCode(0x0e);
const DIM_OFF = String.fromCharCode(0x0f);

/** The archive record's text (spec: snapcompact §9.1): its source and kept user turns, toggles out. */
function archiveText(entry) {
  const a = entry?.preserveData?.snapcompact;
  if (a === null || typeof a !== 'object') return '';
  return [a.text, a.textHead, a.textTail, a.userTurns]
    .filter((t) => typeof t === 'string')
    .join('\n')
    .replaceAll(DIM_ON, '')
    .replaceAll(DIM_OFF, '');
}

/** Markers in the system prompt and the user-side text of pi messages (a summary is a user message). */
function markersSent({ systemPrompt, messages }, into) {
  for (const text of [systemPrompt].flat()) {
    if (typeof text === 'string') for (const k of text.match(MARKER) ?? []) into.add(k);
  }
  for (const m of messages) {
    if (m.role === 'assistant' || m.role === 'toolResult') continue;
    if (typeof m.content === 'string') {
      for (const k of m.content.match(MARKER) ?? []) into.add(k);
      continue;
    }
    for (const b of Array.isArray(m.content) ? m.content : []) {
      if (b?.type === 'text') for (const k of b.text.match(MARKER) ?? []) into.add(k);
    }
  }
  return into;
}

/** A base64 string of bytes (an AI SDK file part's data). */
const base64Of = (data) => (typeof data === 'string' ? data : Buffer.from(data).toString('base64'));

/**
 * An AI SDK provider-level prompt (LanguageModelV4Prompt), or an app's ModelMessages, as the
 * pi request the fake provider measures.
 */
export function piRequest(prompt) {
  const system = [];
  const messages = [];
  for (const m of prompt) {
    if (m.role === 'system') {
      if (messages.length === 0) system.push(m.content);
      else messages.push({ role: 'developer', content: m.content });
      continue;
    }
    if (m.role === 'tool') {
      for (const p of m.content) {
        if (p.type !== 'tool-result') continue;
        const o = p.output;
        const text = o?.type === 'text' || o?.type === 'error-text' ? o.value : JSON.stringify(o?.value ?? o);
        messages.push({
          role: 'toolResult',
          toolCallId: p.toolCallId,
          toolName: p.toolName,
          content: [{ type: 'text', text }],
          isError: o?.type === 'error-text',
        });
      }
      continue;
    }
    const parts = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    const content = parts.map((p) => {
      if (p.type === 'text') return { type: 'text', text: p.text };
      if (p.type === 'reasoning') return { type: 'thinking', thinking: p.text };
      if (p.type === 'tool-call') {
        const args = typeof p.input === 'string' ? JSON.parse(p.input) : p.input;
        return { type: 'toolCall', id: p.toolCallId, name: p.toolName, arguments: args };
      }
      if (p.type === 'file' && p.mediaType?.startsWith('image/') && p.data?.type === 'data') {
        return { type: 'image', mimeType: p.mediaType, data: base64Of(p.data.data) };
      }
      return { type: 'text', text: JSON.stringify(p) };
    });
    messages.push({ role: m.role, content });
  }
  return { systemPrompt: system.join('\n\n'), messages };
}

const streamOf = (parts) =>
  new ReadableStream({
    start(controller) {
      for (const p of parts) controller.enqueue(p);
      controller.close();
    },
  });

const FINISH = { toolUse: 'tool-calls', stop: 'stop', length: 'length' };

/**
 * A local endpoint that is down: every POST answered 502 Bad Gateway. `url`, `posts` (so far),
 * `close()`.
 */
export async function deadEndpoint() {
  const { createServer } = await import('node:http');
  const endpoint = { url: '', posts: 0 };
  const server = createServer((req, res) => {
    endpoint.posts++;
    req.resume();
    req.on('end', () => {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end('Bad Gateway');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint.url = `http://127.0.0.1:${server.address().port}/compact`;
  endpoint.close = () => new Promise((resolve) => server.close(resolve));
  return endpoint;
}

// ----- one run -------------------------------------------------------------------------------

/**
 * Runs scenario `s` through `driver` (one of DRIVERS). `endpoint` is the dead endpoint
 * (`deadEndpoint()`), used when `s.deadRemote`. Resolves `{stats, violations}`.
 */
export async function runScenario(s, driver, { endpoint, userTurns } = {}) {
  const sim = new Sim(s, driver, endpoint, userTurns ?? s.userTurns);
  const t0 = performance.now();
  try {
    if (driver === 'maintainer') await sim.runMaintainer();
    else if (driver === 'generateText' || driver === 'streamText') await sim.runAiSdk(driver === 'streamText');
    else throw new Error(`unknown driver ${driver}`);
    sim.checkFiles('the run');
  } catch (err) {
    sim.violate(`threw: ${err?.code ?? ''} ${err?.stack ?? err}`);
  }
  sim.stats.ms = Math.round(performance.now() - t0);
  return { stats: sim.stats, violations: sim.violations };
}

/** A one-line account of a scenario. */
export function describeScenario(s) {
  const f = FAMILIES[s.family];
  return (
    `seed ${s.seed}: ${s.window / 1_000}k ${f.id}${s.vision ? ' vision' : ''}, ` +
    `methods ${s.methods ? s.methods.join(',') : 'default'}, ratio ${s.ratio}, summarizer fails ` +
    `${s.summarizerFailures} empty ${s.emptyDocuments}, length ${s.lengthStops}, forced ${s.forcedOverflows}` +
    `${s.deadRemote ? ', dead endpoint' : ''}, ${s.userTurns} turns`
  );
}

class Sim {
  constructor(s, driver, endpoint, userTurns) {
    this.s = s;
    this.driver = driver;
    this.userTurns = userTurns;
    this.r = Rng.derived([BigInt(s.seed), 0x51an]);
    // The texts come from a faster generator (megabytes a run on a 2M window).
    this.text = new TextSource(seededRandom(Number(BigInt(s.seed) & 0xffffffffn) ^ 0x51a));
    const f = FAMILIES[s.family];
    this.model = {
      provider: f.provider,
      id: f.id,
      api: f.api,
      contextWindow: s.window,
      maxTokens: 8_000,
      input: s.vision ? ['text', 'image'] : ['text'],
      ...(f.remoteCompaction && { remoteCompaction: f.remoteCompaction }),
    };
    this.meter = new PromptMeter({ tokenRatio: s.ratio, family: f.images });
    this.view = {
      maxImages: s.vision ? providerImageBudget(f.provider) : 0,
      maxFrameDataBytes: FRAME_DATA_BYTES_BUDGET,
      model: this.model,
    };
    this.tools = [READ_TOOL];
    // The system prompt: the overhead less the tool definition, in the provider's tokens.
    const left = OVERHEAD - this.meter.text(JSON.stringify(READ_TOOL));
    this.systemPrompt = `You are a coding agent. ${this.text.take(Math.max(10, Math.round(left / s.ratio)))}`;
    this.settings = {};
    if (s.methods) this.settings.methodOrder = s.methods;
    this.endpoint = s.deadRemote ? endpoint : undefined;
    if (s.deadRemote) {
      if (endpoint === undefined) throw new Error('a dead-endpoint scenario needs `endpoint`');
      this.settings.remoteEndpoint = endpoint.url;
    }
    this.now = 1_750_000_000_000;
    this.clock = () => this.now;
    this.noTimer = () => () => {};
    this.violations = [];
    this.kinds = new Map();
    this.turn = -1;
    this.markers = [];
    /** Markers a snapcompact archive carried before its compaction and not after (lossy by design, counted). */
    this.archiveDropped = new Set();
    /** Markers the summarizer's requests held during the compaction in flight. */
    this.fed = new Set();
    /** Sessions seen (a handoff adds one) and their sizes. */
    this.sessions = new Map();
    /** The live compaction entry's archive text (snapcompact), '' without. */
    this.archive = '';
    /** The automatic compaction in flight (between its start and end events). */
    this.compaction = null;
    /** The last automatic compaction that failed, within the current step. */
    this.failure = null;
    this.live = () => undefined;
    this.stats = {
      driver,
      requests: 0,
      userTurns: 0,
      overflows: 0,
      forcedOverflows: 0,
      lengthStops: 0,
      largestRequest: 0,
      compactions: 0,
      methods: {},
      failedCompactions: 0,
      skippedCompactions: 0,
      handoffs: 0,
      summarizerCalls: 0,
      summarizerFailures: 0,
      emptyDocuments: 0,
      endpointPosts: 0,
      maxPostsPerCompaction: 0,
      archiveDroppedUserTurns: 0,
      turnsLostToTheSummarizer: 0,
      forcedOverflowsLost: 0,
      retries: 0,
      continues: 0,
      failedCalls: 0,
      promptNotVerbatim: {},
    };
  }

  /** Records a broken invariant; one of a kind (numbers aside) per run, the repeats counted. */
  violate(what) {
    const kind = what.replace(/\d+/g, '#');
    const seen = this.kinds.get(kind);
    if (seen !== undefined) {
      seen.repeats++;
      this.violations[seen.index] = `${seen.text} (and ${seen.repeats} more like it)`;
      return;
    }
    const text = `${this.driver} ${describeScenario(this.s)}: user turn ${this.turn}: ${what}`;
    this.kinds.set(kind, { index: this.violations.length, text, repeats: 0 });
    this.violations.push(text);
  }

  tick() {
    this.now += 1_000;
    return this.now;
  }

  filler(tokens) {
    return this.text.take(tokens);
  }

  /** The next user message: a marker and window/200 + 20, window/40 or window/6 tokens. */
  userText() {
    const w = this.s.window;
    const k = this.r.below(10);
    const size = k === 0 ? Math.floor(w / 6) : k <= 3 ? Math.floor(w / 40) : Math.floor(w / 200) + 20;
    this.turn++;
    this.stats.userTurns++;
    this.markers.push(marker(this.turn));
    return `${marker(this.turn)} ${this.filler(size)}`;
  }

  // ----- the fake provider -------------------------------------------------------------------

  /**
   * One request `{systemPrompt, tools, messages}` (pi messages): measured, checked, answered.
   * Returns `{tokens, over, forced, reply, result?}` (`result`: the tool result text).
   */
  respond(request, turn) {
    const window = this.s.window;
    const tokens = this.meter.request(request).tokens;
    this.stats.requests++;
    this.stats.largestRequest = Math.max(this.stats.largestRequest, tokens);
    const problem = structureProblem(request.messages);
    if (problem) this.violate(`malformed request: ${problem}`);
    this.checkCarried(request, 'a request');
    this.checkPrompt(request);
    const over = tokens > window;
    const forced = !over && this.r.chance(this.s.forcedOverflows);
    if (over && turn.refused) {
      this.violate(`two overflows in a row: ${tokens} > ${window} after a refused request`);
    }
    turn.refused = over || forced;
    turn.over = over;
    turn.forced = forced;
    const base = { role: 'assistant', api: this.model.api, provider: this.model.provider, model: this.model.id };
    if (over || forced) {
      this.stats.overflows += over ? 1 : 0;
      this.stats.forcedOverflows += forced ? 1 : 0;
      const wording = OVERFLOW_WORDINGS[this.s.family];
      return {
        tokens,
        over,
        forced,
        reply: {
          ...base,
          content: [],
          stopReason: 'error',
          errorMessage: wording(Math.max(tokens, window + 1), window),
          usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 },
          timestamp: this.tick(),
        },
      };
    }
    const out = this.r.range(50, 400);
    const isTool = turn.tools < 4 && this.r.chance(0.5);
    const length = !isTool && this.r.chance(this.s.lengthStops);
    const content = [{ type: 'text', text: `Working on it. ${this.filler(out)}` }];
    let result;
    if (isTool) {
      turn.tools++;
      const id = `call${this.stats.requests}`;
      content.push({ type: 'toolCall', id, name: 'read', arguments: { path: `src/f${this.r.below(50)}.rs` } });
      result = { id, text: this.filler(this.r.range(50, Math.max(Math.floor(window / 30), 60))) };
    }
    const stopReason = isTool ? 'toolUse' : length ? 'length' : 'stop';
    if (length) this.stats.lengthStops++;
    return {
      tokens,
      over,
      forced,
      result,
      reply: {
        ...base,
        content,
        stopReason,
        usage: { input: tokens, output: out, cacheRead: 0, cacheWrite: 0, totalTokens: tokens + out },
        timestamp: this.tick(),
      },
    };
  }

  // ----- the fake summarizer -----------------------------------------------------------------

  summarize = async (request) => {
    this.stats.summarizerCalls++;
    if (this.compaction) this.compaction.summarizerCalls++;
    if (this.r.chance(this.s.summarizerFailures)) {
      this.stats.summarizerFailures++;
      if (this.compaction) this.compaction.summarizerFailed++;
      throw Object.assign(new Error('503 Service Unavailable'), { status: 503 });
    }
    if (this.r.chance(this.s.emptyDocuments)) {
      this.stats.emptyDocuments++;
      if (this.compaction) this.compaction.summarizerFailed++;
      return '';
    }
    const found = markersIn(JSON.stringify(request));
    for (const m of found) this.fed.add(m);
    return `## Goal\nKeep fixing tests.\n## Users said\n${found.join(' ')}\n`;
  };

  // ----- what the package does, seen from outside --------------------------------------------

  /** The live session's request as the provider counts it now (the Maintainer's view of it). */
  measureLive(session) {
    const messages = session.toLlmMessages(this.view);
    return this.meter.request({ systemPrompt: this.systemPrompt, tools: this.tools, messages }).tokens;
  }

  /** The markers the live session carries: in its LLM view, or in its archive's text. */
  carried(session) {
    const found = markersSent({ messages: session.toLlmMessages(this.view) }, new Set());
    for (const k of markersIn(this.archive)) found.add(k);
    return found;
  }

  /** Every marker appended is carried by `messages` (what the model is sent) or the live archive. */
  checkCarried(request, where) {
    const found = markersSent(request, new Set());
    const archive = this.archive;
    const missing = this.markers.filter((k) => !found.has(k) && !archive.includes(k) && !this.archiveDropped.has(k));
    if (missing.length > 0) {
      this.violate(`${where} carries neither ${missing.slice(0, 8).join(' ')} (${missing.length} user messages lost)`);
    }
  }

  /** Whether the newest user message reaches the model verbatim (a message that starts with its marker). */
  checkPrompt({ messages }) {
    const newest = this.markers.at(-1);
    const verbatim = messages.some((m) => {
      if (m.role !== 'user') return false;
      const text = typeof m.content === 'string' ? m.content : m.content?.find?.((b) => b?.type === 'text')?.text;
      return typeof text === 'string' && text.startsWith(newest);
    });
    if (!verbatim) {
      const key = this.lastMethod ?? 'none';
      this.stats.promptNotVerbatim[key] = (this.stats.promptNotVerbatim[key] ?? 0) + 1;
    }
  }

  /** Every marker is in a session file (handoffs followed). */
  checkFiles(where) {
    const files = [...this.sessions.keys()].map((s) => s.toJsonl()).join('\n');
    const missing = this.markers.filter((k) => !files.includes(k));
    if (missing.length > 0) this.violate(`after ${where}, the session files miss ${missing.slice(0, 8).join(' ')}`);
  }

  /** Entries are never removed: every session seen is at least as large as last time. */
  checkSessions(current) {
    if (current !== undefined && !this.sessions.has(current)) this.sessions.set(current, current.size);
    for (const [session, size] of this.sessions) {
      if (session.size < size) this.violate(`a session went from ${size} to ${session.size} entries`);
      this.sessions.set(session, session.size);
    }
  }

  onEvent = (e) => {
    const session = this.live();
    if (session === undefined) return;
    if (!this.sessions.has(session)) this.sessions.set(session, session.size);
    // SIM_DEBUG=1: every event of the package, as it comes.
    if (process.env.SIM_DEBUG)
      console.log(
        `turn ${this.turn}:`,
        JSON.stringify({ ...e, session: undefined, previous: undefined, result: undefined }).slice(0, 300),
      );
    if (e.type === 'handoff') {
      this.checkSessions(e.session);
      this.stats.handoffs++;
      return;
    }
    if (e.type === 'auto_compaction_start') {
      this.fed = new Set();
      this.compaction = {
        reason: e.reason,
        before: this.measureLive(session),
        carried: this.carried(session),
        summarizerCalls: 0,
        summarizerFailed: 0,
        posts: this.endpoint?.posts ?? 0,
      };
      return;
    }
    if (e.type !== 'auto_compaction_end') return;
    const c = this.compaction;
    this.compaction = null;
    if (c === null) return;
    const posts = (this.endpoint?.posts ?? 0) - c.posts;
    this.stats.endpointPosts += posts;
    this.stats.maxPostsPerCompaction = Math.max(this.stats.maxPostsPerCompaction, posts);
    if (e.aborted) return;
    if (e.skipped) {
      this.stats.skippedCompactions++;
      return;
    }
    if (e.errorMessage) {
      this.stats.failedCompactions++;
      this.failure = { message: e.errorMessage, summarizer: c.summarizerFailed > 0 || posts > 0 };
      return;
    }
    const method = e.result?.method ?? (e.result?.handoff ? 'handoff' : e.action);
    this.stats.compactions++;
    this.stats.methods[method] = (this.stats.methods[method] ?? 0) + 1;
    this.lastMethod = `${method}/${c.reason}`;
    // A compaction entry brings its archive (or none); a handoff starts a session without one;
    // a shake rewrites lines in place and keeps the live compaction's.
    if (typeof e.result?.entryId === 'string') this.archive = archiveText(session.entry(e.result.entryId));
    else if (method === 'handoff') this.archive = '';
    const after = this.measureLive(session);
    if (!(after < c.before) && method !== 'handoff') {
      this.violate(`${method} for ${c.reason} did not lower the request: ${c.before} -> ${after} provider tokens`);
    }
    const report = e.result?.report;
    if (report && !(report.tokensAfter < report.tokensBefore) && method !== 'handoff') {
      this.violate(`${method} for ${c.reason} reports ${report.tokensBefore} -> ${report.tokensAfter} tokens`);
    }
    const now = this.carried(session);
    for (const k of this.markers) {
      if (now.has(k) || this.archiveDropped.has(k)) continue;
      if (method === 'snapcompact' && c.carried.has(k)) {
        this.archiveDropped.add(k);
        this.stats.archiveDroppedUserTurns++;
        continue;
      }
      this.violate(
        `user message ${k} is gone from the context after ${method} (${c.reason}); ` +
          `in the summarizer's input: ${this.fed.has(k)}`,
      );
    }
    this.checkFiles(`${method} (${c.reason})`);
  };

  /** A turn that ended on its last request: over the window is a lost turn (invariant 2). */
  turnEnded(turn, how) {
    if (turn.over) {
      if (this.failure?.summarizer) {
        this.stats.turnsLostToTheSummarizer++;
        return;
      }
      const why = this.failure ? ` (the recovery failed: ${this.failure.message.slice(0, 200)})` : '';
      this.violate(`the turn ended (${how}) while its last request was over the window${why}`);
    } else if (turn.forced) {
      this.stats.forcedOverflowsLost++;
    }
  }

  // ----- driver: the Maintainer --------------------------------------------------------------

  async runMaintainer() {
    const session = Session.create({ id: 'sim-0', cwd: '/repo', now: this.now });
    const m = new Maintainer(session, {
      model: this.model,
      summarize: this.summarize,
      settings: this.settings,
      onEvent: this.onEvent,
      now: this.clock,
      setTimer: this.noTimer,
      retry: { baseDelayMs: 1 },
    });
    this.live = () => m.session;
    this.checkSessions(session);
    const append = (message) => {
      const before = m.session.size;
      m.session.appendMessage({ ...message, timestamp: this.tick() }, { now: this.now });
      if (m.session.size !== before + 1) this.violate('an append did not add one entry');
    };
    try {
      for (let n = 0; n < this.userTurns; n++) {
        append({ role: 'user', content: this.userText() });
        const turn = { tools: 0, refused: false, over: false, forced: false };
        let ended = false;
        for (let k = 0; k < MAX_REQUESTS_PER_TURN && !ended; k++) {
          this.failure = null;
          const before = await m.beforeRequest({ systemPrompt: this.systemPrompt, tools: this.tools });
          this.checkSessions(m.session);
          const sent = { systemPrompt: before.systemPrompt ?? this.systemPrompt, tools: this.tools };
          const res = this.respond({ ...sent, messages: before.messages }, turn);
          this.failure = null;
          const after = await m.afterResponse(res.reply);
          this.checkSessions(m.session);
          if (after.next === 'retry') {
            this.stats.retries++;
            continue;
          }
          if (after.next === 'continue') {
            this.stats.continues++;
            append({ role: 'user', content: after.continuePrompt ?? 'Continue.', attribution: 'agent' });
            continue;
          }
          if (res.reply.stopReason === 'toolUse') {
            const call = res.reply.content.find((b) => b.type === 'toolCall');
            append({
              role: 'toolResult',
              toolCallId: call.id,
              toolName: 'read',
              content: [{ type: 'text', text: res.result.text }],
              isError: false,
            });
            continue;
          }
          this.turnEnded(turn, "next 'done'");
          ended = true;
        }
        if (!ended) this.violate(`the turn did not end in ${MAX_REQUESTS_PER_TURN} requests`);
      }
    } finally {
      m.dispose();
    }
  }

  // ----- driver: the AI SDK middleware --------------------------------------------------------

  async runAiSdk(stream) {
    const results = new Map();
    let turn = { tools: 0, refused: false, over: false, forced: false };
    const call = (prompt, tools) => {
      const request = piRequest(prompt);
      request.tools = (tools ?? []).map((t) => ({
        name: t.name,
        description: t.description,
        parameters: t.inputSchema,
      }));
      const res = this.respond(request, turn);
      if (res.result) results.set(res.result.id, res.result.text);
      return res;
    };
    const refusal = (res) =>
      new APICallError({
        message: res.reply.errorMessage,
        url: 'http://127.0.0.1/v1/messages',
        requestBodyValues: {},
        statusCode: 400,
        isRetryable: false,
      });
    const content = (res) =>
      res.reply.content.map((b) =>
        b.type === 'toolCall'
          ? { type: 'tool-call', toolCallId: b.id, toolName: b.name, input: JSON.stringify(b.arguments) }
          : { type: 'text', text: b.text },
      );
    const usage = (res) => ({
      inputTokens: { total: res.reply.usage.input, noCache: res.reply.usage.input, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: res.reply.usage.output, text: res.reply.usage.output, reasoning: 0 },
    });
    const finishReason = (res) => ({ unified: FINISH[res.reply.stopReason] ?? 'other', raw: res.reply.stopReason });
    const sdkModel = new MockLanguageModelV4({
      provider: `${this.model.provider}.sim`,
      modelId: this.model.id,
      doGenerate: async ({ prompt, tools }) => {
        const res = call(prompt, tools);
        if (res.reply.stopReason === 'error') throw refusal(res);
        return { content: content(res), finishReason: finishReason(res), usage: usage(res), warnings: [] };
      },
      doStream: async ({ prompt, tools }) => {
        const res = call(prompt, tools);
        const start = { type: 'stream-start', warnings: [] };
        if (res.reply.stopReason === 'error') {
          // Both ways a provider refuses a stream: the call throws, or the first part is an error.
          if (this.r.chance(0.5)) throw refusal(res);
          return { stream: streamOf([start, { type: 'error', error: refusal(res) }]) };
        }
        const parts = [start];
        for (const [i, p] of content(res).entries()) {
          if (p.type === 'text') {
            const id = `t${i}`;
            parts.push({ type: 'text-start', id }, { type: 'text-delta', id, delta: p.text }, { type: 'text-end', id });
          } else parts.push(p);
        }
        parts.push({ type: 'finish', finishReason: finishReason(res), usage: usage(res) });
        return { stream: streamOf(parts) };
      },
    });
    const middleware = ctxfoldMiddleware({
      model: this.model,
      summarize: this.summarize,
      settings: this.settings,
      onEvent: this.onEvent,
      maintainer: { now: this.clock, setTimer: this.noTimer, retry: { baseDelayMs: 1 } },
    });
    this.live = () => middleware.conversations[0]?.session;
    const model = wrapLanguageModel({ model: sdkModel, middleware });
    const tools = {
      read: tool({
        description: READ_TOOL.description,
        inputSchema: jsonSchema(READ_TOOL.parameters),
        execute: async (_input, { toolCallId }) => {
          this.tick();
          return results.get(toolCallId) ?? '';
        },
      }),
    };
    const history = [];
    try {
      for (let n = 0; n < this.userTurns; n++) {
        this.tick();
        history.push({ role: 'user', content: this.userText() });
        turn = { tools: 0, refused: false, over: false, forced: false };
        this.failure = null;
        const options = {
          model,
          system: this.systemPrompt,
          messages: history,
          tools,
          stopWhen: stepCountIs(MAX_REQUESTS_PER_TURN),
          maxRetries: 0,
        };
        let failed;
        let messages;
        if (stream) {
          const errors = [];
          const result = streamText({ ...options, onError: ({ error }) => errors.push(error) });
          await result.consumeStream();
          if (errors.length > 0) failed = errors[0];
          else messages = await result.responseMessages;
        } else {
          try {
            messages = (await generateText(options)).responseMessages;
          } catch (err) {
            failed = err;
          }
        }
        this.checkSessions(this.live());
        if (failed === undefined) {
          history.push(...messages);
          if (turn.refused) this.violate('the call succeeded on a refused request');
          continue;
        }
        this.stats.failedCalls++;
        if (!turn.refused) this.violate(`the call failed on an answered request: ${failed?.message ?? failed}`);
        this.turnEnded(turn, `${stream ? 'streamText' : 'generateText'} failed`);
      }
      // An app that drops a failed call's finished steps (tool calls and results) diverges from
      // what the middleware held: a new conversation is then the middleware's answer.
      if (middleware.conversations.length !== 1 && this.stats.failedCalls === 0) {
        this.violate(`the middleware holds ${middleware.conversations.length} conversations for one history`);
      }
    } finally {
      for (const c of middleware.conversations) c.maintainer?.dispose();
    }
  }
}
