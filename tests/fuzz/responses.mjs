// Fuzzes `fromResponse` and `fromError` (src/js/formats/responses.ts: a provider SDK's reply or
// thrown error in) through the public API.
//
//   node tests/fuzz/responses.mjs [--seconds N] [--seed S]
//
// They are JavaScript, so cargo-fuzz cannot reach them; this is their fuzz target. It starts
// from each SDK's response shapes (openai-node `ChatCompletion`, as `stream.finalChatCompletion()`
// returns it too, and Responses `Response`; @anthropic-ai/sdk `Message`; @google/genai
// `GenerateContentResponse` and a stream's chunk list) and thrown errors, mutates them (values
// replaced by other types, huge and empty strings, deleted and duplicated members and elements,
// `__proto__` members), and checks for each input:
//   - `fromResponse` either returns or throws E_INVALID_MESSAGE / E_INVALID_ARGUMENT, nothing
//     else (a TypeError, a wasm trap), and never changes its input;
//   - what it returns is an assistant message the session takes (`appendMessage`), after which
//     `toMessages` in the response's format works, and a second reply of the same response
//     (the session given) gets tool-call ids no earlier call of the session has;
//   - `fromError` returns a failed reply (`stopReason` `error` or `aborted`, a non-empty
//     `errorMessage`) for any object, or throws E_INVALID_ARGUMENT.
// A failing input is written to tests/out/fuzz-responses/ and the process exits 1.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { fromError, fromResponse, Session } from 'ctxfold';

const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = path.join(here, '..', 'out', 'fuzz-responses');

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const seconds = Number(opt('seconds', 60));
let seed = Number(opt('seed', Date.now() % 2 ** 31)) >>> 0;

/** xorshift32: reproducible from `--seed`. */
function rand() {
  seed ^= seed << 13;
  seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  seed >>>= 0;
  return seed / 2 ** 32;
}
const pick = (list) => list[Math.floor(rand() * list.length)];

const usageChat = {
  prompt_tokens: 1200,
  completion_tokens: 30,
  total_tokens: 1230,
  prompt_tokens_details: { cached_tokens: 600 },
};
const SEEDS = {
  'openai-chat': [
    {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      model: 'gpt-4.1',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Reading.',
            refusal: null,
            annotations: [],
            parsed: null,
            tool_calls: [
              {
                id: 'call_1',
                type: 'function',
                function: { name: 'read', arguments: '{"path":"a"}', parsed_arguments: { path: 'a' } },
              },
            ],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: usageChat,
    },
    { choices: [{ message: { role: 'assistant', content: 'cut' }, finish_reason: 'length' }], usage: usageChat },
  ],
  'openai-responses': [
    {
      id: 'resp_1',
      object: 'response',
      status: 'completed',
      incomplete_details: null,
      error: null,
      output: [
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'think' }], encrypted_content: 'enc' },
        {
          type: 'message',
          id: 'msg_1',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'Hi', annotations: [], logprobs: [], parsed: null }],
        },
        {
          type: 'function_call',
          id: 'fc_1',
          call_id: 'call_1',
          name: 'read',
          arguments: '{"path":"a"}',
          status: 'completed',
        },
      ],
      usage: { input_tokens: 900, input_tokens_details: { cached_tokens: 100 }, output_tokens: 40, total_tokens: 940 },
    },
    { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [] },
  ],
  anthropic: [
    {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [
        { type: 'thinking', thinking: 'Let me look.', signature: 'EqQBCgIYAhIM' },
        { type: 'text', text: 'Reading.', citations: null },
        { type: 'tool_use', id: 'toolu_1', name: 'read', input: { path: 'b' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 50, cache_read_input_tokens: 3000, cache_creation_input_tokens: 250 },
    },
  ],
  gemini: [
    {
      candidates: [
        {
          content: {
            role: 'model',
            parts: [
              { text: 'Looking.', thoughtSignature: 'CiIB' },
              { functionCall: { name: 'read', args: { path: 'c' } } },
            ],
          },
          finishReason: 'STOP',
        },
      ],
      usageMetadata: {
        promptTokenCount: 9000,
        cachedContentTokenCount: 8000,
        candidatesTokenCount: 35,
        totalTokenCount: 9035,
      },
      responseId: 'r-1',
    },
    [
      { candidates: [{ content: { role: 'model', parts: [{ text: 'Look', thought: true }] } }], responseId: 'r-2' },
      { candidates: [{ content: { role: 'model', parts: [{ text: 'ing.' }] } }] },
      {
        candidates: [
          { content: { role: 'model', parts: [{ functionCall: { name: 'read', args: {} } }] }, finishReason: 'STOP' },
        ],
        usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 2 },
      },
    ],
    { promptFeedback: { blockReason: 'PROHIBITED_CONTENT' } },
  ],
};
const ERRORS = [
  {
    status: 400,
    message: "400 This model's maximum context length is 128000 tokens.",
    error: { message: "This model's maximum context length is 128000 tokens.", code: 'context_length_exceeded' },
  },
  {
    status: 400,
    error: { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 208310 tokens' } },
  },
  {
    status: 400,
    message: '{"error":{"code":400,"message":"The input token count exceeds the maximum","status":"INVALID_ARGUMENT"}}',
  },
  { status: 413, statusText: 'Payload Too Large' },
  { status: 500, body: 'upstream connect error' },
  { name: 'APIUserAbortError', message: 'Request was aborted.' },
];

const MODEL = { provider: 'test', id: 'model-1' };
const STRINGS = [
  '',
  ' ',
  'x'.repeat(70_000),
  '\u0000',
  '\ud800',
  'assistant',
  'user',
  'model',
  'text',
  'tool_use',
  '__proto__',
];
const NAMES = [
  'role',
  'content',
  'type',
  'text',
  'parts',
  'candidates',
  'choices',
  'message',
  'output',
  'usage',
  'id',
  'name',
];

function randomValue() {
  switch (Math.floor(rand() * 10)) {
    case 0:
      return null;
    case 1:
      return undefined;
    case 2:
      return pick([0, -1, 1.5, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY]);
    case 3:
      return pick([true, false]);
    case 4:
    case 5:
      return pick(STRINGS);
    case 6:
      return [];
    case 7:
      return {};
    case 8:
      return [randomValue()];
    default:
      return { [pick(NAMES)]: pick(STRINGS) };
  }
}

/** Every object and array inside `root` (itself included). */
function nodes(root, out = []) {
  if (root !== null && typeof root === 'object') {
    out.push(root);
    for (const v of Object.values(root)) nodes(v, out);
  }
  return out;
}

/** One to four random edits of a deep copy. */
function mutate(value) {
  const copy = structuredClone(value);
  const holder = { v: copy };
  for (let n = 1 + Math.floor(rand() * 4); n > 0; n--) {
    const all = nodes(holder.v);
    if (all.length === 0) break;
    const node = pick(all);
    const keys = Object.keys(node);
    const key = keys.length > 0 ? pick(keys) : pick(NAMES);
    switch (Math.floor(rand() * 6)) {
      case 0:
        if (Array.isArray(node)) node.splice(Number(key) || 0, 1);
        else Reflect.deleteProperty(node, key);
        break;
      case 1:
        if (Array.isArray(node) && node.length > 0) node.push(structuredClone(node[Number(key) || 0]));
        else node[`${key}_`] = structuredClone(node[key]);
        break;
      case 2:
        Object.defineProperty(node, '__proto__', {
          value: { role: 'assistant' },
          enumerable: true,
          configurable: true,
          writable: true,
        });
        break;
      default:
        node[key] = randomValue();
    }
  }
  return holder.v;
}

const coded = (err, codes) => err !== null && typeof err === 'object' && codes.includes(err.code);

let failures = 0;
function fail(what, input, err) {
  failures++;
  mkdirSync(outDir, { recursive: true });
  const file = path.join(outDir, `${what}-${Date.now()}-${failures}.json`);
  writeFileSync(file, JSON.stringify({ what, input, error: String(err?.stack ?? err) }, null, 1));
  console.log(`FAILED ${what}: ${err?.message ?? err} (${file})`);
}

function checkResponse(format, input) {
  const before = structuredClone(input);
  const withModel = rand() < 0.5;
  let reply;
  try {
    reply = fromResponse(input, withModel ? { format, model: MODEL } : { format });
  } catch (err) {
    if (!coded(err, ['E_INVALID_MESSAGE', 'E_INVALID_ARGUMENT'])) fail(`${format}-throw`, input, err);
    return 'refused';
  }
  if (!isDeepStrictEqual(input, before))
    fail(`${format}-mutated-input`, before, new Error('fromResponse changed its input'));
  const s = Session.create({ id: 'f', cwd: '/w', now: 1 });
  try {
    s.appendMessage({ role: 'user', content: 'q' }, { now: 1 });
    s.appendMessage(reply, { now: 2 });
    s.toMessages({ format, model: MODEL });
    // The same response again, into the session: its calls get ids of their own.
    const again = fromResponse(input, { format, model: MODEL, session: s });
    const ids = (m) => m.content.filter((b) => b.type === 'toolCall').map((b) => b.id);
    if (format === 'gemini') {
      const earlier = new Set(ids(reply));
      for (const id of ids(again)) {
        if (earlier.has(id) && reply.content.some((b) => b.id === id && b.ctxfold?.noId)) {
          throw new Error(`the second reply repeats the id ${id}`);
        }
      }
    }
  } catch (err) {
    fail(`${format}-accepted`, input, err);
  } finally {
    s.free();
  }
  return 'accepted';
}

function checkError(input) {
  let reply;
  try {
    reply = fromError(input, rand() < 0.5 ? { format: pick(Object.keys(SEEDS)) } : undefined);
  } catch (err) {
    const objectLike = input !== null && (typeof input === 'object' || typeof input === 'function');
    if (objectLike || !coded(err, ['E_INVALID_ARGUMENT'])) fail('error-throw', input, err);
    return;
  }
  if (
    (reply.stopReason !== 'error' && reply.stopReason !== 'aborted') ||
    typeof reply.errorMessage !== 'string' ||
    reply.errorMessage === '' ||
    reply.content.length !== 0
  ) {
    fail('error-reply', input, new Error(`not a failed reply: ${JSON.stringify(reply)}`));
  }
}

const stats = Object.fromEntries(Object.keys(SEEDS).map((f) => [f, { runs: 0, accepted: 0 }]));
const end = Date.now() + seconds * 1000;
let runs = 0;
while (Date.now() < end) {
  for (const [format, seeds] of Object.entries(SEEDS)) {
    const st = stats[format];
    const input = rand() < 0.1 ? structuredClone(pick(seeds)) : mutate(pick(seeds));
    st.runs++;
    if (checkResponse(format, input) === 'accepted') st.accepted++;
  }
  checkError(rand() < 0.1 ? pick(ERRORS) : mutate(pick(ERRORS)));
  runs++;
}
console.log(`fuzz responses: ${runs} rounds in ${seconds} s`);
for (const [format, st] of Object.entries(stats)) console.log(`  ${format}: ${st.runs} runs, ${st.accepted} accepted`);
console.log(`  errors: ${runs} runs`);
if (failures > 0) {
  console.log(`${failures} findings`);
  process.exit(1);
}
console.log('no finding');
