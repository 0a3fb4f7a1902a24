// The Simulate panel's scripted agent: a deterministic fake model behind a hard context window,
// a local deterministic summarizer, a clock that moves only when told to, and the host loop an
// agent runs around the package's `Maintainer` (docs/guide/maintainer.md "The loop").
//
// Same spirit as the Node tests' scripted agent (tests/js/support/fake-agent.mjs), written for
// the page: tool calls with large outputs, provider overflow errors past the window, `length`
// stops, idle gaps. Everything follows from one seed. Nothing here leaves the page.
//
// How the fake provider counts: a text fragment (user/assistant text, thinking, a tool call's
// name and JSON arguments, tool-result text, the system prompt, each tool definition as JSON)
// costs ceil(length / 4) tokens (the text is ASCII, so length = UTF-8 bytes); an image what
// Anthropic bills for its pixel size (28-pixel patches, at most 4,784), read from the PNG header.
// The Maintainer's own numbers are never used to decide an overflow: the provider measures.

/** mulberry32: a small seeded generator of floats in [0, 1). */
export function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** An integer in [lo, hi] (both included). */
const between = (random, lo, hi) => lo + Math.floor(random() * (hi - lo + 1));

/** A size in [lo, hi], log-uniform: many small outputs, a few large ones. */
const logUniform = (random, lo, hi) => Math.round(Math.exp(Math.log(lo) + random() * (Math.log(hi) - Math.log(lo))));

/** Context-overflow errors as providers word them (each recognised by the package). */
export const OVERFLOW_WORDINGS = [
  (n, w) => `prompt is too long: ${n} tokens > ${w} maximum`,
  () => 'Your input exceeds the context window of this model. Please adjust your input and try again.',
  (n, w) => `The input token count (${n}) exceeds the maximum number of tokens allowed (${w}).`,
  (n, w) => `This model's maximum prompt length is ${w} but the request contains ${n} tokens.`,
  (n, w) => `the request exceeds the available context size (${w} tokens), try increasing it; requested ${n}`,
  (n, w) => `context_length_exceeded: ${n} > ${w}`,
];

/** The words of the generated text (also the test agent's tool arguments). */
export const WORDS = [
  'const',
  'return',
  'session',
  'entry',
  'token',
  'window',
  'compact',
  'summary',
  'await',
  'parse',
  'frame',
  'budget',
  'message',
  'result',
  'error',
  'value',
  'index',
  'branch',
  'leaf',
  'model',
];

/** Deterministic code-like ASCII text; `take(n)` gives n tokens (4n characters) of it. */
export class TextSource {
  constructor(random) {
    this.random = random;
    const lines = [];
    let length = 0;
    for (let n = 0; length < 96_000; n++) {
      const words = [];
      for (let k = between(random, 3, 11); k > 0; k--) words.push(WORDS[between(random, 0, WORDS.length - 1)]);
      const line = `src/mod_${n % 37}.ts:${n}: ${words.join(' ')}_${between(random, 0, 9999)};`;
      lines.push(line);
      length += line.length + 1;
    }
    this.base = `${lines.join('\n')}\n`;
  }

  take(tokens) {
    const chars = Math.max(4, tokens * 4);
    const start = between(this.random, 0, this.base.length - 1);
    let out = this.base.slice(start, start + chars);
    while (out.length < chars) out += this.base.slice(0, chars - out.length);
    return out;
  }
}

/** Time that moves only when told to; the Maintainer's timers fire in order as it passes them. */
export class SimClock {
  constructor(start = Date.UTC(2026, 0, 1, 9, 0, 0)) {
    this.time = start;
    this.timers = [];
    /** Timers fired so far. */
    this.fired = 0;
    this.now = () => this.time;
    /** The Maintainer's `setTimer`: returns a cancel function. */
    this.setTimer = (fn, ms) => {
      const timer = { at: this.time + Math.max(0, Number(ms) || 0), fn, cancelled: false };
      this.timers.push(timer);
      return () => {
        timer.cancelled = true;
      };
    };
  }

  /** Pending (not cancelled, not fired) timers. */
  get pending() {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  /** Moves time on by `ms`, firing (and awaiting) every timer that falls due on the way. */
  async advance(ms) {
    const end = this.time + ms;
    for (;;) {
      this.timers = this.timers.filter((t) => !t.cancelled).sort((a, b) => a.at - b.at);
      const next = this.timers[0];
      if (next === undefined || next.at > end) break;
      this.timers.shift();
      this.time = Math.max(this.time, next.at);
      this.fired++;
      await next.fn();
    }
    this.time = end;
  }
}

// ----- the fake provider -----------------------------------------------------------------------

const textTokens = (text) => (typeof text === 'string' && text.length ? Math.ceil(text.length / 4) : 0);

/** Width and height of a base64 PNG, from its IHDR chunk (null when it is not a PNG). */
export function pngSize(base64) {
  let head;
  try {
    head = atob(base64.slice(0, 32));
  } catch {
    return null;
  }
  if (head.length < 24 || head.slice(12, 16) !== 'IHDR') return null;
  const u32 = (i) =>
    ((head.charCodeAt(i) << 24) |
      (head.charCodeAt(i + 1) << 16) |
      (head.charCodeAt(i + 2) << 8) |
      head.charCodeAt(i + 3)) >>>
    0;
  return { width: u32(16), height: u32(20) };
}

function contentTokens(content) {
  if (typeof content === 'string') return textTokens(content);
  if (!Array.isArray(content)) return 0;
  let tokens = 0;
  for (const block of content) {
    if (block === null || typeof block !== 'object') continue;
    if (block.type === 'text') tokens += textTokens(block.text);
    else if (block.type === 'thinking') tokens += textTokens(block.thinking);
    else if (block.type === 'toolCall')
      tokens += textTokens(block.name) + textTokens(JSON.stringify(block.arguments ?? {}));
    else if (block.type === 'image') {
      const size = typeof block.data === 'string' ? pngSize(block.data) : null;
      tokens += size ? Math.min(Math.ceil(size.width / 28) * Math.ceil(size.height / 28), 4_784) : 1_600;
    } else tokens += textTokens(JSON.stringify(block));
  }
  return tokens;
}

/** Tokens of a whole request `{systemPrompt, tools, messages}` as the fake provider bills it. */
export function measureRequest({ systemPrompt, tools, messages }) {
  let tokens = Array.isArray(systemPrompt)
    ? systemPrompt.reduce((n, part) => n + textTokens(part), 0)
    : textTokens(systemPrompt ?? '');
  for (const tool of tools ?? []) tokens += textTokens(JSON.stringify(tool));
  for (const m of messages) {
    if (m.role === 'user' || m.role === 'developer' || m.role === 'toolResult' || m.role === 'assistant')
      tokens += contentTokens(m.content);
    else tokens += textTokens(JSON.stringify(m));
  }
  return tokens;
}

export const SIM_TOOLS = [
  {
    name: 'read',
    description: 'Read a file',
    parameters: { type: 'object', properties: { path: { type: 'string' } } },
  },
  {
    name: 'grep',
    description: 'Search files',
    parameters: { type: 'object', properties: { pattern: { type: 'string' }, path: { type: 'string' } } },
  },
  {
    name: 'bash',
    description: 'Run a command',
    parameters: { type: 'object', properties: { command: { type: 'string' } } },
  },
];

/** The system prompt the scripted host sends (about 600 tokens). */
export const SIM_SYSTEM_PROMPT = `You are a coding agent working in /w. ${'Follow the repository conventions and keep answers short. '.repeat(40)}`;

const FILES = Array.from({ length: 14 }, (_, i) => `src/mod_${i}.ts`);

/**
 * What the agent does for a window: tool output sizes, the budget of one user task, the
 * settings a window of that size needs (as the Node scripted-agent test chooses them).
 */
export function workload(window) {
  if (window >= 100_000) {
    return {
      toolTokens: [Math.round(window / 100), Math.round(window / 10)],
      huge: { rate: 1 / 80, tokens: Math.round(window * 0.3) },
      taskBudget: Math.round(window * 0.42),
      settings: { idleThresholdTokens: Math.round(window * 0.3) },
    };
  }
  const f = window / 32_000;
  return {
    toolTokens: [Math.round(500 * f), Math.round(4_000 * f)],
    huge: { rate: 1 / 60, tokens: Math.round(16_000 * f) },
    taskBudget: Math.round(7_500 * f),
    settings: { keepRecentTokens: Math.round(6_000 * f), idleThresholdTokens: Math.round(8_000 * f) },
  };
}

/**
 * A deterministic model behind a hard window: tool calls while the current task has rounds and
 * budget left, then a text answer; now and then a `length` stop; a prompt over the window gets
 * an overflow error (usage zeros) instead.
 */
export class SimModel {
  constructor({ model, seed, clock, work, lengthRate = 0.03 }) {
    this.model = model;
    this.random = seededRandom(seed);
    this.text = new TextSource(seededRandom(seed ^ 0x5bd1e995));
    this.clock = clock;
    this.work = work;
    this.lengthRate = lengthRate;
    this.task = { rounds: 0, budget: 0 };
    this.callSeq = 0;
    this.pending = [];
  }

  beginTask(rounds, budget) {
    this.task = { rounds, budget };
  }

  #assistant(content, stopReason, input, output, extra = {}) {
    return {
      role: 'assistant',
      content,
      api: this.model.api,
      provider: this.model.provider,
      model: this.model.id,
      usage: { input, output, cacheRead: 0, cacheWrite: 0, totalTokens: input + output },
      stopReason,
      timestamp: this.clock.now(),
      ...extra,
    };
  }

  /** Answers one request; returns `{reply, promptTokens, overflow}`. */
  respond(request) {
    const window = this.model.contextWindow;
    const promptTokens = measureRequest(request);
    this.pending = [];
    if (promptTokens > window) {
      const wording = OVERFLOW_WORDINGS[between(this.random, 0, OVERFLOW_WORDINGS.length - 1)];
      const reply = this.#assistant([], 'error', 0, 0, { errorMessage: wording(promptTokens, window) });
      return { reply, promptTokens, overflow: true };
    }
    return { reply: this.#answer(promptTokens), promptTokens, overflow: false };
  }

  #answer(input) {
    const { task, random } = this;
    const [lo, hi] = this.work.toolTokens;
    if (task.rounds > 0 && task.budget >= lo) {
      const calls = [];
      for (let k = between(random, 1, 3); k > 0 && task.budget >= lo; k--) {
        let size = Math.min(task.budget, logUniform(random, lo, hi));
        task.budget -= size;
        if (random() < this.work.huge.rate) size = this.work.huge.tokens; // a log dumped whole
        const id = `call_${++this.callSeq}`;
        const pick = random();
        let name;
        let args;
        if (pick < 0.5) {
          name = 'read';
          args = { path: FILES[between(random, 0, FILES.length - 1)] };
        } else if (pick < 0.75) {
          name = 'grep';
          args = { pattern: WORDS[between(random, 0, WORDS.length - 1)], path: 'src' };
        } else {
          name = 'bash';
          args = { command: `cargo test ${WORDS[between(random, 0, WORDS.length - 1)]}` };
        }
        calls.push({ type: 'toolCall', id, name, arguments: args });
        this.pending.push({ id, name, size, isError: random() < 0.04 });
      }
      task.rounds--;
      const content = [{ type: 'text', text: this.text.take(between(random, 10, 60)) }, ...calls];
      return this.#assistant(content, 'toolUse', input, contentTokens(content));
    }
    if (random() < this.lengthRate) {
      // The output cap was hit: the text is cut off and spent the whole output budget.
      const output = this.model.maxTokens;
      return this.#assistant([{ type: 'text', text: this.text.take(output) }], 'length', input, output);
    }
    this.task = { rounds: 0, budget: 0 };
    const content = [{ type: 'text', text: this.text.take(between(random, 50, 400)) }];
    return this.#assistant(content, 'stop', input, contentTokens(content));
  }

  /** The tool results of the last `toolUse` answer, as the host appends them. */
  toolResults() {
    return this.pending.map((call) => ({
      role: 'toolResult',
      toolCallId: call.id,
      toolName: call.name,
      content: [
        { type: 'text', text: call.isError ? `error: ${call.name} failed: no such file` : this.text.take(call.size) },
      ],
      isError: call.isError,
      timestamp: this.clock.now(),
    }));
  }
}

/**
 * The local summarizer: deterministic, no network. It writes a short structured summary naming
 * what the request covers (its purpose and size), or a handoff document for `handoff`.
 */
export function localSummarizer(seed = 1) {
  const random = seededRandom(seed ^ 0x2545f491);
  return async (request, context = {}) => {
    if (context.signal?.aborted) throw Object.assign(new Error('aborted'), { name: 'AbortError' });
    const note = between(random, 1000, 9999);
    const files = new Set(String(request.prompt ?? '').match(/src\/mod_\d+\.ts/g) ?? []);
    const read = [...files].slice(0, 6).join(', ') || 'none';
    if (request.purpose === 'handoff') {
      return (
        `# Handoff\n\n## Goal\nContinue the refactor of the session module (note ${note}).\n\n` +
        `## State\n- files read: ${read}\n- tests pass except the compaction cases\n\n` +
        '## Next steps\n1. Finish the parser change\n2. Run cargo test\n'
      );
    }
    return (
      `## Goal\nSummary of a ${request.purpose} request (${request.id}, note ${note}, ` +
      `${Math.ceil(String(request.prompt ?? '').length / 4)} tokens read).\n\n` +
      `## Progress\n- Read and grepped: ${read}.\n- Ran the tests.\n\n` +
      '## Key facts\n- The parser lives in src/mod_3.ts; token budgets are per window.\n'
    );
  };
}

// ----- the scripted host ---------------------------------------------------------------------

/**
 * The host loop around a Maintainer, one model request per `step()`: a new user task when the
 * last one ended (sometimes after an idle gap long enough for idle maintenance), then
 * beforeRequest → the fake model → afterResponse, and what `next` says (retry, tool results,
 * continue, done). `step()` resolves a record of the request.
 */
export class ScriptedHost {
  constructor({ maintainer, fake, clock, seed, idleTimeoutSeconds, idleRate = 0.06 }) {
    this.m = maintainer;
    this.fake = fake;
    this.clock = clock;
    this.random = seededRandom(seed ^ 0x9e3779b9);
    this.text = new TextSource(seededRandom(seed ^ 0x1234567));
    this.idleTimeoutSeconds = idleTimeoutSeconds;
    this.idleRate = idleRate;
    this.needTask = true;
    this.userTurns = 0;
    this.requests = 0;
  }

  async step() {
    const { m, fake, clock, random } = this;
    let idle = false;
    if (this.needTask) {
      this.needTask = false;
      this.userTurns++;
      if (this.idleTimeoutSeconds !== undefined && this.userTurns > 1 && random() < this.idleRate) {
        // The user walks away: the Maintainer's idle timer (if armed) falls due.
        idle = true;
        await clock.advance((this.idleTimeoutSeconds + between(random, 5, 600)) * 1000);
      } else {
        await clock.advance(between(random, 5, 90) * 1000);
      }
      fake.beginTask(between(random, 0, 5), fake.work.taskBudget);
      m.session.appendMessage(
        { role: 'user', content: this.text.take(between(random, 20, 400)), timestamp: clock.now() },
        { now: clock.now() },
      );
    }
    const before = await m.beforeRequest({ systemPrompt: SIM_SYSTEM_PROMPT, tools: SIM_TOOLS });
    await clock.advance(between(random, 1, 20) * 1000);
    const window = fake.model.contextWindow;
    const { reply, promptTokens, overflow } = fake.respond({
      systemPrompt: before.systemPrompt ?? SIM_SYSTEM_PROMPT,
      tools: SIM_TOOLS,
      messages: before.messages,
    });
    this.requests++;
    // What the maintainer's events during afterResponse are about (simulate.js reads it).
    this.current = { overflow, stopReason: reply.stopReason };
    const after = await m.afterResponse(reply);
    if (after.next === 'retry') {
      // The failed turn is out of the context: send again.
    } else if (reply.stopReason === 'toolUse') {
      await clock.advance(between(random, 1, 30) * 1000);
      for (const result of fake.toolResults()) m.session.appendMessage(result, { now: clock.now() });
    } else if (after.next === 'continue') {
      m.session.appendMessage(
        { role: 'user', content: after.continuePrompt ?? 'Continue.', timestamp: clock.now(), attribution: 'agent' },
        { now: clock.now() },
      );
    } else {
      this.needTask = true;
    }
    return {
      request: this.requests,
      userTurn: this.userTurns,
      idle,
      promptTokens,
      estimate: before.tokens,
      window,
      overflow,
      stopReason: reply.stopReason,
      next: after.next,
    };
  }
}
