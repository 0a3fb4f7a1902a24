// A useChat-style page in plain JS: the AI SDK's `streamText` with a tool, on an OpenAI
// Chat Completions model (`@ai-sdk/openai-compatible`) wrapped with `ctxfoldMiddleware`.
// The page keeps the whole conversation (`history`, every tool result in it) and sends it each
// turn; the middleware sends the model what fits its window, compacting through the summarizer
// model when the history no longer does, and tells the page so through `onEvent`.
//
// The model endpoint comes from `?endpoint=` (default http://127.0.0.1:8787/v1) and must be on
// loopback: tests/browser/ai-sdk-chat/serve.mjs runs a scripted one there and prints the URL.
// Bundled by esbuild (tests/browser/ai-sdk-chat/serve.mjs); nothing here touches innerHTML.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { jsonSchema, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { init, version } from 'ctxfold';
import { ctxfoldMiddleware } from 'ctxfold/ai-sdk';

/** The chat model's window in tokens: small, so that a few tool results pass it. */
const WINDOW = 16_000;
const LOG_PAGES = 2;
const LINES_PER_PAGE = 160;
const INSTRUCTIONS = 'You are an on-call assistant. Read service logs with read_logs, one page at a time, and report.';

const $ = (id) => document.getElementById(id);
const fmt = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–');
/** What the page counts for its history: a token per 4 characters of its JSON, as the endpoint counts. */
const tokensOf = (messages) => Math.ceil(JSON.stringify(messages).length / 4);

/** The endpoint the page talks to: `?endpoint=`, http(s) on loopback only. */
function endpoint() {
  const given = new URLSearchParams(location.search).get('endpoint') ?? 'http://127.0.0.1:8787/v1';
  const url = new URL(given);
  if (!['http:', 'https:'].includes(url.protocol) || !['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) {
    throw new Error(`the endpoint must be on loopback (127.0.0.1 or localhost), not ${url.host}`);
  }
  // Without its trailing slashes, in one backward pass (`/\/+$/` is quadratic on a long run).
  let end = url.href.length;
  while (end > 0 && url.href.charCodeAt(end - 1) === 47) end--;
  return url.href.slice(0, end);
}

/** A page of a service's log: deterministic lines, a timeout error every so often. */
function logPage(service, page) {
  const lines = [`== logs of ${service}, page ${page} of ${LOG_PAGES} ==`];
  for (let i = 0; i < LINES_PER_PAGE; i++) {
    const n = (page - 1) * LINES_PER_PAGE + i;
    const at = new Date(Date.UTC(2026, 0, 5, 9, 0, 0) + n * 7_000).toISOString();
    lines.push(
      n % 29 === 13
        ? `${at} ${service} ERROR pool timeout after 30000 ms (request ${n}, ${3 + (n % 5)} waiting)`
        : `${at} ${service} INFO  GET /v1/items/${n} 200 in ${12 + ((n * 7) % 40)} ms`,
    );
  }
  return lines.join('\n');
}

const readLogs = tool({
  description: 'Read one page of the log of a service (api, db, auth, queue).',
  inputSchema: jsonSchema({
    type: 'object',
    properties: { service: { type: 'string' }, page: { type: 'integer', minimum: 1 } },
    required: ['service', 'page'],
  }),
  execute: async ({ service, page }) => logPage(String(service), Math.min(Math.max(1, page), LOG_PAGES)),
});

// ----- the chat list ---------------------------------------------------------------------------

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function addItem(kind, text) {
  const item = element('li', `message ${kind}`);
  item.append(element('span', 'role', kind === 'notice' ? 'ctxfold' : kind), element('div', 'body', text));
  $('messages').append(item);
  item.scrollIntoView({ block: 'end' });
  return item;
}

/** A tool call as a collapsed item; its result fills in when it comes. */
function addToolCall(part) {
  const item = element('li', 'message tool');
  const details = element('details');
  details.append(element('summary', '', `${part.toolName}(${JSON.stringify(part.input)})`));
  const output = element('pre', 'output', 'running…');
  details.append(output);
  item.append(element('span', 'role', 'tool'), details);
  $('messages').append(item);
  item.scrollIntoView({ block: 'end' });
  return { item, output };
}

function notice(text, level = 'info') {
  const item = addItem('notice', text);
  item.classList.add(level);
  return item;
}

// ----- the conversation ------------------------------------------------------------------------

/** Everything the app holds: user messages and every response message (tool results included). */
const history = [];
const stats = { largest: 0, compactions: 0 };

function showStats(sent) {
  $('stat-history').textContent = fmt(tokensOf(history));
  if (sent !== undefined) $('stat-sent').textContent = fmt(sent);
  $('stat-largest').textContent = stats.largest > 0 ? fmt(stats.largest) : '–';
  $('stat-compactions').textContent = String(stats.compactions);
}

/** The middleware's events: compactions and prunes become notices in the chat. */
function onEvent(event) {
  if (event.type === 'auto_compaction_start') {
    $('status').textContent = 'Compacting the context…';
  } else if (event.type === 'auto_compaction_end') {
    if (event.errorMessage) notice(event.errorMessage, 'error');
    else if (!event.skipped) {
      const r = event.result?.report ?? {};
      stats.compactions++;
      notice(
        `Context compacted (${r.method ?? event.action}): ${fmt(r.tokensBefore)} → ${fmt(r.tokensAfter)} tokens, ` +
          `${r.entriesSummarized ?? 0} messages summarized. The app still holds all of its history; ` +
          'the model gets the summary and the recent messages.',
        'compaction',
      );
      showStats();
    }
    $('status').textContent = 'Streaming…';
  } else if (event.type === 'prune') {
    notice(`Pruned ${event.prunedCount} old tool results (${fmt(event.tokensSaved)} tokens).`, 'prune');
  } else if (event.type === 'compaction_warning') {
    notice(event.message, 'warning');
  } else if (event.type === 'notice') {
    notice(event.text, event.level);
  }
}

function setBusy(busy, status) {
  $('input').disabled = busy;
  $('send').disabled = busy;
  $('status').textContent = status;
  if (!busy) $('input').focus();
}

async function send(model, text) {
  const start = history.length;
  history.push({ role: 'user', content: text });
  addItem('user', text);
  showStats();
  setBusy(true, 'Streaming…');
  const turn = { requests: 0, largest: 0 };
  let bubble = null;
  const calls = new Map();
  try {
    const result = streamText({
      model,
      instructions: INSTRUCTIONS,
      messages: history,
      tools: { read_logs: readLogs },
      stopWhen: stepCountIs(8),
    });
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta') {
        bubble ??= addItem('assistant', '').querySelector('.body');
        bubble.textContent += part.text;
      } else if (part.type === 'tool-call') {
        calls.set(part.toolCallId, addToolCall(part));
      } else if (part.type === 'tool-result' || part.type === 'tool-error') {
        const call = calls.get(part.toolCallId);
        const out = part.type === 'tool-result' ? String(part.output) : `error: ${part.error}`;
        if (call)
          call.output.textContent = `${out.split('\n').slice(0, 4).join('\n')}\n… (${fmt(out.length)} characters)`;
      } else if (part.type === 'finish-step') {
        bubble = null;
        const sent = part.usage?.inputTokens;
        turn.requests++;
        turn.largest = Math.max(turn.largest, sent ?? 0);
        stats.largest = Math.max(stats.largest, sent ?? 0);
        showStats(sent);
      } else if (part.type === 'error') {
        throw part.error;
      }
    }
    history.push(...(await result.responseMessages));
    showStats();
    const answers = $('messages').querySelectorAll('.message.assistant');
    answers[answers.length - 1]?.append(
      element(
        'p',
        'meta',
        `${turn.requests} request${turn.requests === 1 ? '' : 's'}, the largest ${fmt(turn.largest)} tokens; the app's history is ${fmt(tokensOf(history))} tokens`,
      ),
    );
    setBusy(false, 'Ready');
  } catch (err) {
    // The turn failed: take its user message back out, so the history stays well formed.
    history.length = start;
    notice(`The request failed: ${err?.message ?? err}`, 'error');
    setBusy(false, 'Failed');
  }
}

async function main() {
  $('stat-window').textContent = fmt(WINDOW);
  await init();
  const provider = createOpenAICompatible({ name: 'mock', baseURL: endpoint(), includeUsage: true });
  const middleware = ctxfoldMiddleware({
    contextWindow: WINDOW,
    // The summarizer: a (cheap) model of the same endpoint, asked with doGenerate.
    summarize: provider.chatModel('mock-summarizer'),
    settings: { methodOrder: ['soft'], keepRecentTokens: 4_000 },
    onEvent,
  });
  const model = wrapLanguageModel({ model: provider.chatModel('mock-chat'), middleware });
  $('composer').addEventListener('submit', (event) => {
    event.preventDefault();
    const text = $('input').value.trim();
    if (text === '' || $('input').disabled) return;
    $('input').value = '';
    send(model, text);
  });
  setBusy(false, `Ready (ctxfold ${version()})`);
}

main().catch((err) => {
  $('status').textContent = `Could not start: ${err?.message ?? err}`;
});
