// A scripted agent for the Maintainer tests: a deterministic fake model with a hard context window,
// a fake summarizer, a fake clock, and the host loop an agent would run around `Maintainer`
// (issue 19, "Tests"). Nothing here reads the package: the fake provider measures every request
// itself, so the Maintainer's own token numbers are never trusted.
//
// How the fake provider counts (its "tokenizer"): every text fragment (user/assistant text,
// thinking, a tool call's name and JSON arguments, tool-result text, the system prompt, each
// tool definition as JSON) costs ceil(UTF-8 bytes / 4 × tokenRatio); an image costs what the
// provider bills for its pixel size, read from the PNG header (`imageTokens`); a message that
// replays a native compaction (`providerPayload`) costs the Responses items it carries
// (`PromptMeter.responsesItems`). tokenRatio 1 is the package's own byte/4 heuristic; > 1 plays
// a provider whose tokenizer counts more than that, as real ones do on code.

// The seeded generator, the generated text, the clock, the tool definitions and the PNG size
// reader are the demo's (www/sim-agent.js): one copy.
import { pngSize, SIM_TOOLS, SimClock, seededRandom, TextSource, WORDS } from '../../../www/sim-agent.js';

export { pngSize, seededRandom, TextSource };

/** An integer in [lo, hi] (both included). */
function between(random, lo, hi) {
  return lo + Math.floor(random() * (hi - lo + 1));
}

/** A size in [lo, hi], log-uniform: many small outputs, some large ones. */
function logUniform(random, lo, hi) {
  return Math.round(Math.exp(Math.log(lo) + random() * (Math.log(hi) - Math.log(lo))));
}

/**
 * Context-overflow errors as providers word them (the patterns of spec: compaction §8.2), each a
 * function of the prompt size and the window.
 */
export const OVERFLOW_WORDINGS = [
  // Anthropic
  (n, w) => `prompt is too long: ${n} tokens > ${w} maximum`,
  // OpenAI (Responses and Completions)
  () => 'Your input exceeds the context window of this model. Please adjust your input and try again.',
  // Google Gemini
  (n, w) => `The input token count (${n}) exceeds the maximum number of tokens allowed (${w}).`,
  // xAI
  (n, w) => `This model's maximum prompt length is ${w} but the request contains ${n} tokens.`,
  // OpenRouter (every backend)
  (n, w) =>
    `This endpoint's maximum context length is ${w} tokens. However, you requested about ${n} tokens ` +
    `(${n} of text input). Please reduce the length of either one, or use the "middle-out" transform ` +
    'to compress your prompt automatically.',
  // llama.cpp server
  (n, w) => `the request exceeds the available context size (${w} tokens), try increasing it; requested ${n}`,
  // LM Studio
  (n, w) =>
    `Trying to keep the first ${n} tokens when context the overflows. However, the model is loaded with context length of only ${w} tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input. The number of tokens to keep from the initial prompt is greater than the context length.`,
  // OpenAI-compatible servers
  (n, w) => `context_length_exceeded: ${n} > ${w}`,
];

// ----- the fake provider's tokenizer ---------------------------------------------------------

function utf8Bytes(text) {
  // Counted without encoding: the fake provider measures every prompt, 100 MB per run.
  return Buffer.byteLength(text, 'utf8');
}

/**
 * Tokens a provider bills for one image of `width` × `height` pixels, as measured upstream
 * (spec: snapcompact §4.2): Anthropic 28-pixel patches up to 4,784 (1568² measured 3,136),
 * OpenAI 32-pixel patches × 1.2 up to 10,000 patches at `detail: original` (1568² measured 2,881).
 */
export function imageTokens(family, width, height) {
  if (family === 'openai') return Math.ceil(Math.min(Math.ceil(width / 32) * Math.ceil(height / 32), 10_000) * 1.2);
  return Math.min(Math.ceil(width / 28) * Math.ceil(height / 28), 4_784);
}

/**
 * Measures prompts the way the fake provider bills them (see the file comment). `family` picks
 * the image formula: `anthropic` or `openai`.
 */
export class PromptMeter {
  constructor({ tokenRatio = 1, family = 'anthropic' } = {}) {
    this.tokenRatio = tokenRatio;
    this.family = family;
  }

  text(text) {
    if (typeof text !== 'string' || text.length === 0) return 0;
    return Math.ceil((utf8Bytes(text) / 4) * this.tokenRatio);
  }

  /** `{tokens, images, imageBytes}` of one content array or string. */
  content(content, into) {
    if (typeof content === 'string') {
      into.tokens += this.text(content);
      return;
    }
    if (!Array.isArray(content)) return;
    for (const block of content) {
      if (block === null || typeof block !== 'object') continue;
      switch (block.type) {
        case 'text':
          into.tokens += this.text(block.text);
          break;
        case 'thinking':
          into.tokens += this.text(block.thinking);
          break;
        case 'toolCall':
          into.tokens += this.text(block.name) + this.text(JSON.stringify(block.arguments ?? {}));
          break;
        case 'image': {
          const size = typeof block.data === 'string' ? pngSize(block.data) : null;
          into.images += 1;
          into.imageBytes += typeof block.data === 'string' ? block.data.length : 0;
          into.tokens += size ? imageTokens(this.family, size.width, size.height) : 1_600;
          break;
        }
        default:
          into.tokens += this.text(JSON.stringify(block));
      }
    }
  }

  /**
   * Tokens of OpenAI Responses input items, as the provider bills them: message text parts,
   * a call's name and arguments, a call output; a `compaction` item costs its opaque
   * `encrypted_content` as text (the fake compactor packs the summary it stands for into it,
   * `fakeResponsesCompactor`); any other item its JSON.
   */
  responsesItems(items) {
    let tokens = 0;
    for (const item of items) {
      if (item === null || typeof item !== 'object') continue;
      switch (item.type) {
        case 'message':
          for (const part of Array.isArray(item.content) ? item.content : []) {
            if (part?.type === 'input_text' || part?.type === 'output_text') tokens += this.text(part.text);
            else tokens += this.text(JSON.stringify(part));
          }
          break;
        case 'function_call':
          tokens += this.text(item.name) + this.text(item.arguments);
          break;
        case 'function_call_output':
          tokens += this.text(typeof item.output === 'string' ? item.output : JSON.stringify(item.output));
          break;
        case 'compaction':
          tokens += this.text(item.encrypted_content);
          break;
        default:
          tokens += this.text(JSON.stringify(item));
      }
    }
    return tokens;
  }

  /**
   * The whole request: `{tokens, images, imageBytes, replays}`. A message that carries
   * Responses history (`providerPayload`, a replayed native compaction) is sent as those items,
   * not as its text; `replays` counts such messages.
   */
  request({ systemPrompt, tools, messages }) {
    const out = { tokens: 0, images: 0, imageBytes: 0, replays: 0 };
    if (Array.isArray(systemPrompt)) for (const part of systemPrompt) out.tokens += this.text(part);
    else out.tokens += this.text(systemPrompt ?? '');
    for (const tool of tools ?? []) out.tokens += this.text(JSON.stringify(tool));
    for (const message of messages) {
      const payload = message.providerPayload;
      if (payload?.type === 'openaiResponsesHistory' && Array.isArray(payload.items)) {
        out.replays++;
        out.tokens += this.responsesItems(payload.items);
      } else if (message.role === 'user' || message.role === 'developer' || message.role === 'toolResult') {
        this.content(message.content, out);
      } else if (message.role === 'assistant') {
        this.content(message.content, out);
      } else {
        // Providers only take the roles above; anything else is sent as its JSON.
        out.tokens += this.text(JSON.stringify(message));
      }
    }
    return out;
  }
}

/**
 * What a provider would reject or silently repair in the message list: a tool result that
 * answers no call of the assistant message before it, or a list that does not start with a
 * user-side message. Returns a description or null.
 */
export function structureProblem(messages) {
  if (messages.length === 0) return 'no messages';
  const first = messages[0].role;
  if (first !== 'user' && first !== 'developer') return `the first message is a ${first} message`;
  let calls = new Set();
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (message.role === 'assistant') {
      calls = new Set();
      for (const block of message.content ?? []) if (block.type === 'toolCall') calls.add(block.id);
    } else if (message.role === 'toolResult') {
      if (!calls.has(message.toolCallId)) return `message ${i}: tool result ${message.toolCallId} answers no call`;
    } else {
      calls = new Set();
    }
  }
  return null;
}

// ----- the fake clock --------------------------------------------------------------------------

/** Time that moves only when told to: the demo's clock. */
export const FakeClock = SimClock;

// ----- the fake model --------------------------------------------------------------------------

/** The tool definitions the scripted host sends. */
export const FAKE_TOOLS = SIM_TOOLS;

/** The system prompt the scripted host sends (about 1,200 tokens). */
export const FAKE_SYSTEM_PROMPT = `You are a coding agent working in /w. ${'Follow the repository conventions and keep answers short. '.repeat(80)}`;

const FILES = Array.from({ length: 14 }, (_, i) => `src/mod_${i}.ts`);

/**
 * A deterministic model behind a hard context window. It answers the current task's plan: tool
 * calls while the task has tool rounds and output budget left, then a text answer; sometimes a
 * `length` stop. A prompt over the window gets the provider's overflow error instead (usage
 * zeros). Every request is recorded in `requests`.
 */
export class FakeModel {
  /** The calls of the answer being written (their outputs' sizes and error flags). */
  #pending = [];

  /**
   * @param {object} o
   * @param {{provider: string, id: string, api: string, contextWindow: number, maxTokens: number}} o.model
   * @param {number} o.seed
   * @param {PromptMeter} o.meter
   * @param {FakeClock} o.clock
   * @param {number} [o.lengthRate] probability of a `length` stop on an answer
   * @param {[number, number]} o.toolTokens range of one tool output's size
   * @param {{rate: number, tokens: number}} [o.huge] now and then (`rate` per call) an output of
   *   `tokens`, outside the task budget: a log dumped whole, the usual cause of an overflow
   * @param {boolean} [o.providerSized] sizes (tool outputs, answers, the task budget) are the
   *   provider's tokens, so the texts are shorter when its tokenizer counts more than the
   *   package's estimate (`meter.tokenRatio`); by default they are the estimate's tokens
   */
  constructor({
    model,
    seed,
    meter,
    clock,
    lengthRate = 0.03,
    toolTokens,
    huge = { rate: 0, tokens: 0 },
    providerSized = false,
  }) {
    this.huge = huge;
    /** Estimated tokens of text per token of a size (1, or 1 / tokenRatio when provider-sized). */
    this.textScale = providerSized ? 1 / meter.tokenRatio : 1;
    this.model = model;
    this.random = seededRandom(seed);
    this.meter = meter;
    this.clock = clock;
    this.lengthRate = lengthRate;
    this.toolTokens = toolTokens;
    this.text = new TextSource(seededRandom(seed ^ 0x5bd1e995));
    this.requests = [];
    this.task = null;
    this.callSeq = 0;
    this.pendingTools = [];
  }

  /** Text of `tokens` tokens of a size (see `providerSized`). */
  take(tokens) {
    return this.text.take(Math.max(1, Math.round(tokens * this.textScale)));
  }

  /** A new user task: up to `rounds` tool rounds whose outputs add up to at most `budget` tokens. */
  beginTask(rounds, budget) {
    this.task = { rounds, budget };
  }

  #usage(input, output) {
    return {
      input,
      output,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: input + output,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    };
  }

  #assistant(content, stopReason, usage, extra = {}) {
    return {
      role: 'assistant',
      content,
      api: this.model.api,
      provider: this.model.provider,
      model: this.model.id,
      usage,
      stopReason,
      timestamp: this.clock.now(),
      ...extra,
    };
  }

  /** Answers one request `{systemPrompt, tools, messages}` (tool results are `pendingTools`). */
  respond(request, tag = {}) {
    const window = this.model.contextWindow;
    const measured = this.meter.request(request);
    const problem = structureProblem(request.messages);
    const record = {
      ...tag,
      index: this.requests.length,
      promptTokens: measured.tokens,
      images: measured.images,
      imageBytes: measured.imageBytes,
      replays: measured.replays,
      messages: request.messages.length,
      overflow: measured.tokens > window,
      structure: problem,
      stopReason: null,
    };
    this.requests.push(record);
    let reply;
    if (record.overflow) {
      const wording = OVERFLOW_WORDINGS[between(this.random, 0, OVERFLOW_WORDINGS.length - 1)];
      reply = this.#assistant([], 'error', this.#usage(0, 0), { errorMessage: wording(measured.tokens, window) });
    } else {
      reply = this.#answer(measured.tokens);
    }
    record.stopReason = reply.stopReason;
    this.pendingTools = reply.stopReason === 'toolUse' ? this.#pending : [];
    return reply;
  }

  #answer(input) {
    const task = this.task ?? { rounds: 0, budget: 0 };
    const [lo, hi] = this.toolTokens;
    if (task.rounds > 0 && task.budget >= lo) {
      const calls = [];
      this.#pending = [];
      const count = between(this.random, 1, 3);
      for (let k = 0; k < count && task.budget >= lo; k++) {
        let size = Math.min(task.budget, logUniform(this.random, lo, hi));
        task.budget -= size;
        if (this.random() < this.huge.rate) size = this.huge.tokens;
        const id = `call_${++this.callSeq}`;
        const pick = this.random();
        let name;
        let args;
        if (pick < 0.5) {
          name = 'read';
          args = { path: FILES[between(this.random, 0, FILES.length - 1)] };
        } else if (pick < 0.75) {
          name = 'grep';
          args = { pattern: WORDS[between(this.random, 0, WORDS.length - 1)], path: 'src' };
        } else {
          name = 'bash';
          args = { command: `cargo test ${WORDS[between(this.random, 0, WORDS.length - 1)]}` };
        }
        calls.push({ type: 'toolCall', id, name, arguments: args });
        this.#pending.push({ id, name, size, isError: this.random() < 0.04 });
      }
      task.rounds--;
      const lead = { type: 'text', text: this.take(between(this.random, 10, 60)) };
      const content = [lead, ...calls];
      return this.#assistant(
        content,
        'toolUse',
        this.#usage(input, this.meter.request({ messages: [{ role: 'assistant', content }] }).tokens),
      );
    }
    if (this.random() < this.lengthRate) {
      // The output cap was hit: the text is cut off and spent the whole output budget.
      const output = this.model.maxTokens;
      const content = [{ type: 'text', text: this.take(output) }];
      return this.#assistant(content, 'length', this.#usage(input, output));
    }
    task.rounds = 0;
    task.budget = 0;
    const content = [{ type: 'text', text: this.take(between(this.random, 50, 400)) }];
    return this.#assistant(
      content,
      'stop',
      this.#usage(input, this.meter.request({ messages: [{ role: 'assistant', content }] }).tokens),
    );
  }

  /** The tool results of the last `toolUse` answer, as the host would append them. */
  toolResults() {
    return this.pendingTools.map((call) => ({
      role: 'toolResult',
      toolCallId: call.id,
      toolName: call.name,
      content: [
        {
          type: 'text',
          text: call.isError ? `error: ${call.name} failed: no such file` : this.take(call.size),
        },
      ],
      isError: call.isError,
      timestamp: this.clock.now(),
    }));
  }
}

// ----- the fake summarizer ------------------------------------------------------------------

/**
 * A summarizer model with its own hard window (`window`): it measures each request (every string
 * field and any `messages`/`tools`), rejects one over the window with the Anthropic overflow
 * error (status 400), and otherwise returns a short summary naming the request's purpose, or a
 * short handoff document for `handoff` requests. Calls are recorded in `calls`.
 */
export function fakeSummarizer({ window, meter, seed = 1 }) {
  const random = seededRandom(seed);
  const calls = [];
  const summarize = async (request, context = {}) => {
    if (context.signal?.aborted) {
      const err = new Error('aborted');
      err.name = 'AbortError';
      throw err;
    }
    // A request with `messages` (a handoff keeping the live cache prefix) is sent as those
    // messages after the system prompt and tools; otherwise as the system prompt and `prompt`.
    const tokens = Array.isArray(request.messages)
      ? meter.request({ systemPrompt: request.systemPrompt, tools: request.tools, messages: request.messages }).tokens
      : meter.text(request.systemPrompt ?? '') + meter.text(request.prompt ?? '');
    const call = { purpose: request.purpose, id: request.id, tokens, rejected: tokens > window };
    calls.push(call);
    if (call.rejected) {
      const err = new Error(`prompt is too long: ${tokens} tokens > ${window} maximum`);
      err.status = 400;
      throw err;
    }
    const n = between(random, 1000, 9999);
    if (request.purpose === 'handoff') {
      return (
        `# Handoff\n\n## Goal\nContinue the refactor of the session module (note ${n}).\n\n` +
        '## State\n- read src/mod_1.ts, src/mod_4.ts; tests pass except compaction cases\n\n' +
        '## Next steps\n1. Finish the parser change\n2. Run cargo test\n'
      );
    }
    return (
      `## Goal\nSummary for a ${request.purpose} request (${request.id}, note ${n}).\n\n` +
      '## Progress\n- Read and grepped the session modules; ran the tests.\n\n' +
      '## Key facts\n- The parser lives in src/mod_3.ts; token budgets are per window.\n'
    );
  };
  return { summarize, calls };
}

// ----- the fake provider-native compactor ---------------------------------------------------

/**
 * OpenAI's remote compaction (`POST …/responses/compact`) behind a hard window `window`: it
 * measures each request (instructions and input items, `PromptMeter.responsesItems`), rejects
 * one over the window with OpenAI's overflow error (status 400), and otherwise answers the
 * newest user messages of the input that fit `retainedTokens`, in order, then one `compaction`
 * item. The item's opaque `encrypted_content` stands for a summary of `summaryTokens` (a
 * `[lo, hi]` range) tokens: that summary's text as base64, 4 characters per token, so the meter
 * bills its replay what the server decided. One request in `1 / failRate` is answered 503
 * (overloaded, no `retry-after`) instead. `compact(body)` returns `{status, json}`; calls are
 * recorded in `calls` (`carried`: the input replayed an earlier compaction item).
 */
export function fakeResponsesCompactor({ window, meter, seed = 1, retainedTokens, summaryTokens, failRate = 0 }) {
  const random = seededRandom(seed);
  const text = new TextSource(seededRandom(seed ^ 0x2545f491));
  const calls = [];
  const compact = (body) => {
    const input = Array.isArray(body?.input) ? body.input : [];
    const tokens = meter.text(body?.instructions ?? '') + meter.responsesItems(input);
    const call = {
      tokens,
      items: input.length,
      carried: input.some((item) => item?.type === 'compaction'),
      rejected: tokens > window,
      failed: false,
      summaryTokens: 0,
    };
    calls.push(call);
    if (random() < failRate) {
      call.failed = true;
      return { status: 503, json: { error: { message: 'The server is overloaded', type: 'server_error' } } };
    }
    if (call.rejected) {
      const error = { message: OVERFLOW_WORDINGS[1](), type: 'invalid_request_error', code: 'context_length_exceeded' };
      return { status: 400, json: { error } };
    }
    const kept = [];
    let left = retainedTokens;
    for (let n = input.length - 1; n >= 0; n--) {
      const item = input[n];
      if (item?.type !== 'message' || item.role !== 'user') continue;
      const cost = meter.responsesItems([item]);
      if (cost > left) break;
      kept.unshift(item);
      left -= cost;
    }
    const size = between(random, summaryTokens[0], summaryTokens[1]);
    call.summaryTokens = size;
    // 3·size bytes of summary are 4·size characters of base64.
    const blob = Buffer.from(text.take(size).slice(0, 3 * size)).toString('base64');
    const item = { type: 'compaction', id: `cmp_${calls.length}`, encrypted_content: blob };
    return {
      status: 200,
      json: {
        id: `resp_${calls.length}`,
        object: 'response.compaction',
        output: [...kept, item],
        usage: { input_tokens: tokens, output_tokens: size, total_tokens: tokens + size },
      },
    };
  };
  return { compact, calls };
}

// ----- the scripted host --------------------------------------------------------------------

/**
 * Runs `requests` model requests of a scripted user through `maintainer` (see the Maintainer's
 * host loop: beforeRequest → model → afterResponse; retry, tool results, continue, done).
 * Returns the run's record; invariant violations are collected in `violations` (strings naming
 * the request, the user turn and what happened), they never throw.
 */
export async function runScriptedAgent(o) {
  const {
    maintainer: m,
    model,
    clock,
    requests,
    seed,
    imageBudget,
    imageByteBudget,
    idleTimeoutSeconds,
    idleRate = 0.08,
    manualRate = 0.01,
    userTokens = [20, 400],
    roundsPerTask = [0, 5],
    taskBudget,
    maxCompactionsPerUserTurn = 2,
    events,
  } = o;
  const random = seededRandom(seed ^ 0x9e3779b9);
  const text = new TextSource(seededRandom(seed ^ 0x1234567));
  const violations = [];
  const reports = [];
  const stats = {
    requests: 0,
    userTurns: 0,
    overflows: 0,
    recoveredOverflows: 0,
    retries: 0,
    continues: 0,
    lengthStops: 0,
    idlePeriods: 0,
    handoffs: 0,
    maintainerMs: 0,
    fakeMs: 0,
    maxCompactionsPerUserTurn: 0,
    maxImages: 0,
    maxPromptTokens: 0,
    structureProblems: 0,
    prunesThatGrew: 0,
    manualCompactions: 0,
    idleCompactions: 0,
    inlineRequests: 0,
    inlineResults: 0,
    inlineSavedTokens: 0,
  };
  let userTurn = 0;
  let compactionsThisTurn = 0;
  let session = m.session;
  let lastSize = session.size;
  const violate = (what) => {
    if (violations.length < 50) violations.push(`request ${stats.requests}, user turn ${userTurn}: ${what}`);
  };
  const checkSession = () => {
    if (m.session !== session) {
      stats.handoffs++;
      session = m.session;
      lastSize = session.size;
      return;
    }
    if (session.size < lastSize) violate(`the session shrank from ${lastSize} to ${session.size} entries`);
    lastSize = session.size;
  };
  const onReport = (report, where) => {
    if (!report) return;
    reports.push({ ...report, userTurn, where });
    if (report.method === 'prune') {
      // A superseded error result shorter than its notice grows the context by a few tokens
      // (spec: compaction §6.5 has no savings gate); counted, not an invariant.
      if (report.tokensAfter >= report.tokensBefore) stats.prunesThatGrew++;
      return;
    }
    compactionsThisTurn++;
    if (!(report.tokensAfter < report.tokensBefore)) {
      violate(`${where}: ${describeReport(report)}: tokensAfter is not below tokensBefore`);
    }
  };
  const timed = async (fn) => {
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      stats.maintainerMs += performance.now() - t0;
    }
  };
  let previousOverflow = false;

  while (stats.requests < requests) {
    userTurn++;
    stats.userTurns++;
    compactionsThisTurn = 0;
    const eventsAtStart = events.length;
    const [rLo, rHi] = roundsPerTask;
    model.beginTask(between(random, rLo, rHi), taskBudget);
    await clock.advance(between(random, 5, 90) * 1000);
    checkSession();
    if (random() < manualRate) {
      // `/compact` typed between prompts.
      stats.manualCompactions++;
      try {
        const r = await timed(() => m.compactNow());
        checkSession();
        onReport(r?.report, 'compactNow');
      } catch (err) {
        violate(`compactNow() rejected: ${err?.code ?? ''} ${err?.message ?? err}`);
      }
    }
    m.session.appendMessage(
      {
        role: 'user',
        content: text.take(Math.max(1, Math.round(between(random, userTokens[0], userTokens[1]) * model.textScale))),
        timestamp: clock.now(),
      },
      { now: clock.now() },
    );
    checkSession();
    let steps = 0;
    for (;;) {
      if (++steps > 40) {
        violate('more than 40 requests in one user turn (a loop)');
        break;
      }
      const eventsAtRequest = events.length;
      const before = await timed(() => m.beforeRequest({ systemPrompt: FAKE_SYSTEM_PROMPT, tools: FAKE_TOOLS }));
      checkSession();
      onReport(before.report, 'beforeRequest');
      await clock.advance(between(random, 1, 20) * 1000);
      const f0 = performance.now();
      if (before.inline?.toolResults.length > 0) {
        stats.inlineRequests++;
        stats.inlineResults += before.inline.toolResults.length;
        stats.inlineSavedTokens += before.inline.savedTokens;
      }
      // The system prompt the Maintainer says to send (inline imaging may replace its text).
      const reply = model.respond(
        { systemPrompt: before.systemPrompt ?? FAKE_SYSTEM_PROMPT, tools: FAKE_TOOLS, messages: before.messages },
        { userTurn },
      );
      stats.fakeMs += performance.now() - f0;
      const record = model.requests[model.requests.length - 1];
      stats.requests++;
      stats.maxImages = Math.max(stats.maxImages, record.images);
      stats.maxPromptTokens = Math.max(stats.maxPromptTokens, record.promptTokens);
      if (record.structure) {
        stats.structureProblems++;
        if (stats.structureProblems <= 3) violate(`malformed request: ${record.structure}`);
      }
      if (imageBudget !== undefined && record.images > imageBudget) {
        violate(`${record.images} images in one request (budget ${imageBudget})`);
      }
      if (imageByteBudget !== undefined && record.imageBytes > imageByteBudget) {
        violate(`${record.imageBytes} base64 image bytes in one request (budget ${imageByteBudget})`);
      }
      if (record.overflow) {
        stats.overflows++;
        if (previousOverflow)
          violate(`a second overflow in a row (${record.promptTokens} > ${model.model.contextWindow})`);
      } else if (previousOverflow) {
        stats.recoveredOverflows++;
      }
      if (reply.stopReason === 'length') stats.lengthStops++;
      const after = await timed(() => m.afterResponse(reply));
      checkSession();
      onReport(after.report, 'afterResponse');
      const overflowed = record.overflow;
      if (overflowed && after.next === 'done') {
        violate(
          `overflow at ${record.promptTokens} tokens answered with next 'done': the turn is lost; ` +
            `report: ${describeReport(after.report)}; events: ${describeEvents(events.slice(eventsAtRequest))}`,
        );
      }
      previousOverflow = overflowed;
      if (after.next === 'retry') {
        stats.retries++;
        continue;
      }
      if (reply.stopReason === 'toolUse') {
        await clock.advance(between(random, 1, 30) * 1000);
        for (const result of model.toolResults()) m.session.appendMessage(result, { now: clock.now() });
        checkSession();
        continue;
      }
      if (after.next === 'continue') {
        stats.continues++;
        const prompt = after.continuePrompt ?? 'Continue.';
        m.session.appendMessage(
          { role: 'user', content: prompt, timestamp: clock.now(), attribution: 'agent' },
          { now: clock.now() },
        );
        checkSession();
        continue;
      }
      break;
    }
    // Automatic compactions that events report without a report object still count.
    const ends = events
      .slice(eventsAtStart)
      .filter((e) => e.type === 'auto_compaction_end' && !e.aborted && !e.errorMessage && !e.skipped).length;
    const count = Math.max(compactionsThisTurn, ends);
    stats.maxCompactionsPerUserTurn = Math.max(stats.maxCompactionsPerUserTurn, count);
    // A length stop's recovery is a compaction of its own (18.2.3: every `length` stop of the
    // model compacts and retries), bounded by the core's INCOMPLETE_RECOVERY_MAX_RETRIES: it
    // answers a failed reply, not a loop, so it comes on top of the bound.
    const recoveries = reports.filter((r) => r.userTurn === userTurn && r.reason === 'incomplete').length;
    if (count > maxCompactionsPerUserTurn + recoveries) {
      const turn = reports.filter((r) => r.userTurn === userTurn && r.method !== 'prune');
      violate(
        `${count} compactions in one user turn (at most ${maxCompactionsPerUserTurn}): ` +
          turn.map((r) => `${r.where} ${describeReport(r)}`).join('; '),
      );
    }
    if (idleTimeoutSeconds !== undefined && random() < idleRate) {
      // The user walks away: the idle timer, if the Maintainer set one, falls due.
      stats.idlePeriods++;
      const idleStart = events.length;
      await clock.advance((idleTimeoutSeconds + between(random, 5, 600)) * 1000);
      await settle(events, idleStart);
      checkSession();
      for (const e of events.slice(idleStart)) {
        if (e.type === 'auto_compaction_start' && e.reason === 'idle') stats.idleCompactions++;
        const report = e.report ?? e.result?.report;
        if (report) onReport(report, 'idle');
      }
    }
  }
  return { stats, violations, reports };
}

/** A short account of a compaction report. */
export function describeReport(r) {
  if (!r) return 'none';
  return `${r.method}/${r.reason} ${r.tokensBefore}→${r.tokensAfter} (${r.entriesSummarized} entries summarized, ${r.pruned} pruned)`;
}

/** A one-line account of maintainer events, for violation messages. */
export function describeEvents(list) {
  if (list.length === 0) return 'none';
  return list
    .map((e) => {
      const parts = [e.type];
      for (const key of ['reason', 'action', 'pass', 'kind', 'level'])
        if (e[key] !== undefined) parts.push(`${key}=${e[key]}`);
      if (e.report) parts.push(`${e.report.method} ${e.report.tokensBefore}→${e.report.tokensAfter}`);
      const text = e.errorMessage ?? e.message ?? e.text;
      if (text !== undefined) parts.push(JSON.stringify(String(text).slice(0, 160)));
      return parts.join(' ');
    })
    .join('; ');
}

/** Waits until every `auto_compaction_start` after `from` in `events` has its end (idle work runs detached). */
async function settle(events, from) {
  for (let spins = 0; spins < 2_000; spins++) {
    const tail = events.slice(from);
    const starts = tail.filter((e) => e.type === 'auto_compaction_start').length;
    const ends = tail.filter((e) => e.type === 'auto_compaction_end').length;
    if (ends >= starts) {
      await new Promise((resolve) => setImmediate(resolve));
      const again = events.slice(from);
      if (again.filter((e) => e.type === 'auto_compaction_start').length <= ends) return;
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
}
