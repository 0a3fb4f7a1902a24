// Tree navigation with a branch summary (and pruning, when the package has it) in headless
// Chromium, through the browser entry of the built package.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PAGE_MOUNTS, useChromium, withPage } from './support.mjs';

const harness = useChromium(PAGE_MOUNTS);

test('Chromium: navigateTree with a summarize callback, and a cancelling hook', async () => {
  await withPage(harness.browser, async (page, problems) => {
    await page.goto(harness.server.url);
    const result = await page.evaluate(async () => {
      const ctxfold = await import('/pkg/entries/web.js');
      await ctxfold.init();
      const line = (id, parentId, message) =>
        JSON.stringify({ type: 'message', id, parentId, timestamp: '2026-01-01T00:00:00.000Z', message });
      const text = `${[
        '{"type":"session","version":3,"id":"t","cwd":"/"}',
        line('u1', null, { role: 'user', content: 'start' }),
        line('a1', 'u1', { role: 'assistant', content: [{ type: 'text', text: 'ok' }], stopReason: 'stop' }),
        line('u2', 'a1', { role: 'user', content: 'plan A' }),
        line('a2', 'u2', { role: 'assistant', content: [{ type: 'text', text: 'plan A done' }], stopReason: 'stop' }),
        line('u3', 'a1', { role: 'user', content: 'plan B' }),
      ].join('\n')}\n`;
      const s = ctxfold.Session.fromJsonl(text);
      s.branch('a2');
      const cancelled = await s.navigateTree('u3', {
        summarize: async () => 'never',
        hooks: { session_before_tree: () => ({ cancel: true }) },
      });
      const unchanged = s.toJsonl() === text.replace(/\n$/, '\n') && s.leafId === 'a2';
      let purpose = '';
      const moved = await s.navigateTree('u3', {
        summarize: async (request) => {
          purpose = request.purpose;
          return 'Tried plan A.';
        },
      });
      return {
        cancelled,
        unchanged,
        purpose,
        editorText: moved.editorText,
        summary: s.entry(moved.summaryEntryId).summary,
        parent: s.entry(moved.summaryEntryId).parentId,
      };
    });
    assert.deepEqual(result.cancelled, { cancelled: true });
    assert.equal(result.unchanged, true);
    assert.equal(result.purpose, 'branch-summary');
    assert.equal(result.editorText, 'plan B');
    assert.match(result.summary, /Tried plan A\./);
    assert.equal(result.parent, 'a1');
    assert.deepEqual(problems, []);
  });
});
