// A scripted OpenAI Chat Completions endpoint on 127.0.0.1 for the AI SDK chat example
// (www/examples/ai-sdk-chat/): enough of `POST /v1/chat/completions` for
// `@ai-sdk/openai-compatible`, streamed as server-sent events or answered as one JSON body.
//
// The script reads only the request, so it is deterministic and survives compaction:
//   - the last message is the user's and names a service (api, db, auth, queue): call
//     `read_logs({service, page: 1})`;
//   - the last message is a tool result for page p < PAGES: call page p + 1;
//     for the last page: answer about that service (streamed in small deltas);
//   - a user message naming no service: a wrap-up naming every service the prompt still
//     mentions and whether it opens with a summary of earlier turns;
//   - a request for the summarizer model: a summary of the services and pages it was sent.
// Every request is recorded (`requests`) with its size in tokens, counted as a provider would
// roughly count them (a token per 4 characters of the messages' and tools' JSON); a request over
// the window is refused with the 400 a Chat Completions provider gives (context_length_exceeded).
import { createServer } from 'node:http';

export const WINDOW = 16_000;
export const CHAT_MODEL = 'mock-chat';
export const SUMMARIZER_MODEL = 'mock-summarizer';
export const SERVICES = ['api', 'db', 'auth', 'queue'];
/** Pages of logs the script reads per service, one `read_logs` call each. */
export const PAGES = 2;
/** The heading the summarizer's answers start with (the wrap-up looks for it). */
export const SUMMARY_HEADING = '## Earlier in this chat';

/** What the endpoint counts for a request: a token per 4 characters of its messages and tools. */
export function tokensOf(body) {
  return Math.ceil((JSON.stringify(body.messages ?? []).length + JSON.stringify(body.tools ?? []).length) / 4);
}

const textOf = (content) =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('')
      : '';

/** The services a text names, in the order of SERVICES. */
const servicesIn = (text) => SERVICES.filter((s) => new RegExp(`\\b${s}\\b`, 'i').test(text));

/** The services whose logs the text shows or mentions (`logs of api`, `the api logs`). */
const servicesRead = (text) => SERVICES.filter((s) => new RegExp(`logs of ${s}\\b|\\b${s} logs\\b`, 'i').test(text));

/** What the script answers to a chat request: `{ text }` or `{ toolCall: { name, args } }`. */
export function scriptedReply(messages) {
  const last = messages.at(-1);
  if (last?.role === 'tool') {
    const call = messages
      .findLast((m) => m.role === 'assistant' && Array.isArray(m.tool_calls))
      ?.tool_calls.find((c) => c.id === last.tool_call_id);
    let args = {};
    try {
      args = JSON.parse(call?.function?.arguments ?? '{}');
    } catch {
      // answered below as an unknown call
    }
    const service = SERVICES.includes(args.service) ? args.service : null;
    if (service === null) return { text: 'I could not tell which logs that tool call read.' };
    const page = Number(args.page) || 1;
    if (page < PAGES) return { toolCall: { name: 'read_logs', args: { service, page: page + 1 } } };
    const errors = (textOf(last.content).match(/ ERROR /g) ?? []).length;
    return {
      text: `I read ${PAGES} pages of the ${service} logs. The last page has ${errors} errors, all timeouts of the ${service} pool; the rest are routine requests. Ask me about another service, or for a wrap-up.`,
    };
  }
  const asked = servicesIn(textOf(last?.content));
  if (last?.role === 'user' && asked.length > 0) {
    return { toolCall: { name: 'read_logs', args: { service: asked[0], page: 1 } } };
  }
  const all = messages.map((m) => textOf(m.content)).join('\n');
  const seen = servicesRead(all);
  const summarized = all.includes(SUMMARY_HEADING);
  return {
    text: `Wrap-up: we looked at the logs of ${seen.length > 0 ? seen.join(', ') : 'no service'}. ${
      summarized ? 'My context opens with a summary of the earlier turns' : 'My context holds the whole chat'
    } and ${messages.length} messages in all.`,
  };
}

/** The summarizer's answer: what the conversation it was sent read, as a short summary. */
export function scriptedSummary(messages) {
  const all = messages.map((m) => textOf(m.content)).join('\n');
  const seen = servicesRead(all);
  const lines = seen.map((s) => `- the ${s} logs: ${PAGES} pages read with read_logs; pool timeouts reported`);
  return [SUMMARY_HEADING, 'The user asks the assistant to read service logs one service at a time.', ...lines].join(
    '\n',
  );
}

const CORS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'POST, OPTIONS',
  'access-control-allow-headers': 'authorization, content-type',
  'access-control-max-age': '600',
};

/** Sends `value` as JSON; `record.sentBytes` counts the body. */
function sendJson(res, status, value, record = {}) {
  const text = JSON.stringify(value);
  record.sentBytes = Buffer.byteLength(text);
  res.writeHead(status, { ...CORS, 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(text);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** `text` in pieces of a few words, as a model streams it. */
function pieces(text) {
  return text.match(/\S+\s*/g) ?? [text];
}

/**
 * Starts the endpoint. `window` is the context window it enforces; `delayMs` the pause between
 * streamed deltas; `onRequest(record)` sees each request's record once it is answered.
 * Resolves to `{ url, baseURL, window, requests, close() }`; `baseURL` ends in `/v1`.
 */
export async function startMockEndpoint({
  host = '127.0.0.1',
  port = 0,
  window = WINDOW,
  delayMs = 15,
  onRequest = undefined,
} = {}) {
  const requests = [];
  let sequence = 0;

  async function chat(req, res) {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    let body;
    try {
      body = JSON.parse(raw);
    } catch {
      return sendJson(res, 400, { error: { message: 'the body is not JSON', type: 'invalid_request_error' } });
    }
    const messages = Array.isArray(body.messages) ? body.messages : [];
    const tokens = tokensOf(body);
    const summarizer = body.model === SUMMARIZER_MODEL;
    const record = {
      kind: summarizer ? 'summary' : 'chat',
      model: body.model,
      stream: body.stream === true,
      messages: messages.length,
      bytes: Buffer.byteLength(raw),
      tokens,
      status: 200,
      /** Bytes of the response body, once sent. */
      sentBytes: 0,
    };
    requests.push(record);
    if (tokens > window) {
      record.status = 400;
      onRequest?.(record);
      return sendJson(
        res,
        400,
        {
          error: {
            message: `This model's maximum context length is ${window} tokens. However, your messages resulted in ${tokens} tokens.`,
            type: 'invalid_request_error',
            code: 'context_length_exceeded',
          },
        },
        record,
      );
    }
    const id = `chatcmpl-${++sequence}`;
    const created = 1_767_225_600 + sequence;
    const reply = summarizer ? { text: scriptedSummary(messages) } : scriptedReply(messages);
    record.reply = reply.toolCall ? `${reply.toolCall.name}(${JSON.stringify(reply.toolCall.args)})` : reply.text;
    onRequest?.(record);
    const completionTokens = Math.ceil((reply.text ?? JSON.stringify(reply.toolCall)).length / 4);
    const usage = {
      prompt_tokens: tokens,
      completion_tokens: completionTokens,
      total_tokens: tokens + completionTokens,
    };
    const toolCall = reply.toolCall && {
      id: `call_${sequence}`,
      type: 'function',
      function: { name: reply.toolCall.name, arguments: JSON.stringify(reply.toolCall.args) },
    };
    const finishReason = toolCall ? 'tool_calls' : 'stop';

    if (!record.stream) {
      return sendJson(
        res,
        200,
        {
          id,
          object: 'chat.completion',
          created,
          model: body.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: reply.text ?? null, ...(toolCall && { tool_calls: [toolCall] }) },
              finish_reason: finishReason,
            },
          ],
          usage,
        },
        record,
      );
    }

    res.writeHead(200, {
      ...CORS,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
    });
    const send = (text) => {
      record.sentBytes += Buffer.byteLength(text);
      res.write(text);
    };
    const event = (choices, extra = {}) =>
      send(
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, choices, ...extra })}\n\n`,
      );
    event([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
    if (toolCall) {
      // The name first, then the arguments in two pieces, as OpenAI streams them.
      const args = toolCall.function.arguments;
      const half = Math.floor(args.length / 2);
      event([
        {
          index: 0,
          delta: {
            tool_calls: [{ index: 0, id: toolCall.id, type: 'function', function: { name: toolCall.function.name } }],
          },
          finish_reason: null,
        },
      ]);
      for (const part of [args.slice(0, half), args.slice(half)]) {
        await sleep(delayMs);
        event([
          { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: part } }] }, finish_reason: null },
        ]);
      }
    } else {
      for (const piece of pieces(reply.text)) {
        await sleep(delayMs);
        event([{ index: 0, delta: { content: piece }, finish_reason: null }]);
      }
    }
    event([{ index: 0, delta: {}, finish_reason: finishReason }]);
    if (body.stream_options?.include_usage) event([], { usage });
    send('data: [DONE]\n\n');
    res.end();
  }

  const server = createServer((req, res) => {
    const { pathname } = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'OPTIONS') {
      res.writeHead(204, CORS);
      return res.end();
    }
    if (req.method === 'POST' && pathname === '/v1/chat/completions') {
      return chat(req, res).catch((err) => {
        if (!res.headersSent)
          sendJson(res, 500, { error: { message: String(err?.message ?? err), type: 'server_error' } });
        else res.destroy();
      });
    }
    sendJson(res, 404, { error: { message: `no route ${req.method} ${pathname}`, type: 'invalid_request_error' } });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const url = `http://${host}:${server.address().port}/`;
  return {
    url,
    baseURL: `${url}v1`,
    window,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections?.();
      }),
  };
}
