// The AI SDK tests (ai-sdk.test.mjs, ai-sdk-agent.test.mjs, and the workload of
// support/ai-sdk-workload.mjs they share) run again with ai 6 (issue 41: both majors): `ai` and
// `ai/test` resolve to ai 6 here (pinned in tests/package.json as `ai6`, `npm:ai@6`), whose
// models are `LanguageModelV3` (`specificationVersion: 'v3'`). Their `MockLanguageModelV4` is
// then ai 6's `MockLanguageModelV3` (the name ai 6's `ai/test` exports), by a resolve hook of
// this process (node:module `register`); ai-sdk.test.mjs and ai-sdk-agent.test.mjs themselves
// run with ai 7.
import assert from 'node:assert/strict';
import { register } from 'node:module';
import { test } from 'node:test';

const hooks = `
export async function resolve(specifier, context, next) {
  if (specifier === 'ai') return next('ai6', context);
  if (specifier !== 'ai/test') return next(specifier, context);
  const real = await next('ai6/test', context);
  return { url: 'ctxfold-ai6:test?' + encodeURIComponent(real.url), shortCircuit: true };
}
export async function load(url, context, next) {
  if (!url.startsWith('ctxfold-ai6:test?')) return next(url, context);
  // ai 6's ai/test, with its mock model also under the name the tests import.
  const real = JSON.stringify(decodeURIComponent(url.slice(17)));
  const source = 'export * from ' + real + '; export { MockLanguageModelV3 as MockLanguageModelV4 } from ' + real + ';';
  return { format: 'module', source, shortCircuit: true };
}
`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`, import.meta.url);

const ai = await import('ai');
const mock = await import('ai/test');
// The hook is in place: the tests below get ai 6.
assert.equal(new mock.MockLanguageModelV4().specificationVersion, 'v3');
assert.equal(typeof ai.wrapLanguageModel, 'function');

globalThis.ctxfoldAiMajor = 6;
const { ctxfoldMiddleware } = await import('ctxfold/ai-sdk');

test('ai 6: a later system message stays where it was, and file data goes to the v3 model as given', async () => {
  const prompts = [];
  const model = new mock.MockLanguageModelV3({
    provider: 'anthropic.messages',
    modelId: 'claude-sonnet-4-5',
    supportedUrls: { 'application/pdf': [/^https:/] },
    doGenerate: async ({ prompt }) => {
      prompts.push(prompt);
      return {
        content: [{ type: 'text', text: 'ok' }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage: { inputTokens: { total: 100 }, outputTokens: { total: 2 } },
        warnings: [],
      };
    },
  });
  const middleware = ctxfoldMiddleware({ contextWindow: 128_000 });
  assert.equal(model.specificationVersion, 'v3');
  const wrapped = ai.wrapLanguageModel({ model, middleware });
  const bytes = Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
    'base64',
  );
  const messages = [
    { role: 'system', content: 'You are terse.' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is in these?' },
        { type: 'file', mediaType: 'image/png', data: bytes },
        { type: 'file', mediaType: 'application/pdf', data: new URL('https://example.com/a.pdf') },
      ],
    },
    { role: 'assistant', content: 'A picture and a paper.' },
    { role: 'system', content: 'From now on, answer in French.' },
    { role: 'user', content: 'And now?' },
  ];
  const result = await ai.generateText({ model: wrapped, messages, allowSystemInMessages: true });
  assert.equal(result.text, 'ok');
  const [sent] = prompts;
  assert.deepEqual(
    sent.map((m) => m.role),
    ['system', 'user', 'assistant', 'system', 'user'],
  );
  const files = sent[1].content.filter((p) => p.type === 'file');
  assert.equal(files.length, 2);
  // ai 6's provider prompt: the bytes (or base64) and the URL themselves, untagged.
  const data = files[0].data;
  assert.ok(typeof data === 'string' || data instanceof Uint8Array, JSON.stringify(data));
  assert.equal(typeof data === 'string' ? data : Buffer.from(data).toString('base64'), bytes.toString('base64'));
  assert.ok(files[1].data instanceof URL, JSON.stringify(files[1].data));
  assert.equal(String(files[1].data), 'https://example.com/a.pdf');
});

await import('./ai-sdk.test.mjs');
await import('./ai-sdk-agent.test.mjs');
