// Rules the JavaScript shell must not hold (docs/decisions/rules-in-js.md): wording the model
// reads is the core's, and the shell asks for it instead of keeping a copy.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { Maintainer, Session } from 'ctxfold';
import { repoDir } from './support/project.mjs';

const IMAGE = { type: 'image', data: 'iVBORw0KGgoAAAA', mimeType: 'image/png' };
// A provider without a table entry: the floor of 5 images a request (spec: snapcompact §5.1).
const MODEL = { provider: 'acme', id: 'acme-vision', contextWindow: 200_000, input: ['text', 'image'] };

function imageSession() {
  const s = Session.create({ cwd: '/w' });
  s.appendMessage({ role: 'user', content: 'Look at the screenshots.' });
  for (const [id, n] of [
    ['c1', 2],
    ['c2', 5],
  ]) {
    s.appendMessage({
      role: 'assistant',
      content: [{ type: 'toolCall', id, name: 'screenshot', arguments: {} }],
      provider: 'acme',
      model: 'acme-vision',
      stopReason: 'toolUse',
    });
    s.appendMessage({
      role: 'toolResult',
      toolCallId: id,
      toolName: 'screenshot',
      content: Array(n).fill(IMAGE),
      isError: false,
    });
  }
  return s;
}

test('a tool result the provider image budget empties reads the notice of snapcompact §5.1', async () => {
  const m = new Maintainer(imageSession(), { model: MODEL, settings: { supersedeReads: false, dropUseless: false } });
  const { messages, report } = await m.beforeRequest();
  const results = messages.filter((x) => x.role === 'toolResult');
  // Seven images over a budget of five: the oldest two go, which empties the first result.
  assert.deepEqual(results[0].content, [{ type: 'text', text: '[image omitted: provider image limit]' }]);
  assert.equal(results[1].content.length, 5);
  assert.equal(report, undefined);
  m.dispose();
});

test('the shell keeps no copy of the wording the model reads for an image the budget left out', () => {
  const root = path.join(repoDir, 'src/js');
  const holders = readdirSync(root, { recursive: true })
    .map((f) => f.split(path.sep).join('/'))
    .filter((f) => /\.(ts|js)$/.test(f) && f !== 'core/glue.js')
    .filter((f) => readFileSync(path.join(root, f), 'utf8').includes('[image omitted: provider image limit]'));
  assert.deepEqual(holders, [], "the notice is the core's (snapcompactConstants().imageOmittedNotice)");
});
