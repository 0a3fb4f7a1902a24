// The session API of the browser entry in headless Chromium: load the conformance fixture,
// check the migrated path, build a context, and check that errors carry their codes.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { repoDir } from '../js/support/project.mjs';
import { PAGE_MOUNTS, useChromium, withPage } from './support.mjs';

const conformance = path.join(repoDir, '..', 'shared', 'conformance', 'large-session');
const haveConformance = existsSync(conformance);
if (!haveConformance && process.env.CI === 'true') {
  throw new Error(`conformance data missing: ${conformance}`);
}

const harness = useChromium(
  haveConformance ? { ...PAGE_MOUNTS, '/conformance/': conformance + path.sep } : PAGE_MOUNTS,
);

test('Chromium: load the conformance session, path and context', async (t) => {
  if (!haveConformance) return t.skip('conformance data not found');
  await withPage(harness.browser, async (page, problems) => {
    await page.goto(harness.server.url);
    const result = await page.evaluate(async () => {
      const ctxfold = await import('/pkg/entries/web.js');
      await ctxfold.init();
      const bytes = new Uint8Array(await (await fetch('/conformance/session.jsonl')).arrayBuffer());
      const prepare = await (await fetch('/conformance/prepare.json')).json();
      const s = ctxfold.Session.fromJsonl(bytes, { ids: 'deterministic' });
      const index = new Map(s.index().map((e) => [e.id, e]));
      const path = s.pathTo(s.leafId).map((id) => [id, index.get(id).type, index.get(id).role ?? null]);
      const want = prepare.perEntry.map((e) => [e.id, e.type, e.role ?? null]);
      const ctx = s.buildContext();
      const tokens = s.contextTokens();
      const roundTrip = ctxfold.Session.fromJsonl(s.toBytes()).toJsonl() === s.toJsonl();
      return {
        size: s.size,
        wantSize: prepare.session.entries,
        samePath: JSON.stringify(path) === JSON.stringify(want),
        messages: ctx.messages.length,
        model: ctx.models.default,
        tokensBefore: tokens.usageTokens,
        roundTrip,
      };
    });
    assert.equal(result.size, result.wantSize);
    assert.ok(result.samePath, 'the active path matches perEntry');
    assert.ok(result.messages > 800, `${result.messages} messages`);
    assert.equal(result.model, 'anthropic/claude-sonnet-4-5');
    assert.ok(result.tokensBefore > 100_000);
    assert.ok(result.roundTrip);
    assert.deepEqual(problems, []);
  });
});

test('Chromium: errors carry stable codes', async () => {
  await withPage(harness.browser, async (page) => {
    await page.goto(harness.server.url);
    const codes = await page.evaluate(async () => {
      const ctxfold = await import('/pkg/entries/web.js');
      await ctxfold.init();
      const codeOf = (fn) => {
        try {
          fn();
          return 'no error';
        } catch (err) {
          return err instanceof Error ? err.code : 'not an Error';
        }
      };
      const s = ctxfold.Session.create({ cwd: '/x' });
      return [
        codeOf(() => ctxfold.Session.fromJsonl('garbage')),
        codeOf(() => ctxfold.Session.fromJsonl('{"type":"session","id":"a","version":7}')),
        codeOf(() => s.branch('missing')),
        codeOf(() => ctxfold.resolveSettings({ strategy: 'nope' })),
        codeOf(() => s.appendMessage({ role: 'user', content: 'ok' })),
      ];
    });
    assert.deepEqual(codes, ['E_NOT_A_SESSION', 'E_VERSION_TOO_NEW', 'E_UNKNOWN_ENTRY', 'E_SETTINGS', 'no error']);
  });
});

test('Chromium: Session.fromStream reads the lines while the stream delivers, as fromJsonl opens', async () => {
  await withPage(harness.browser, async (page, problems) => {
    await page.goto(harness.server.url);
    const result = await page.evaluate(async () => {
      const ctxfold = await import('/pkg/entries/web.js');
      await ctxfold.init();
      // A 3 MB session made in the page, streamed in chunks of 64 KiB (its lines are read
      // every MiB while the rest arrives), and fetched as a Response.
      const made = ctxfold.Session.create({ ids: 'deterministic', now: Date.UTC(2026, 0, 1) });
      for (let i = 0; i < 900; i++) {
        made.appendMessage({ role: 'user', content: `step ${i}: ${'read the file and fix it. '.repeat(100)}` });
        made.appendMessage({
          role: 'assistant',
          content: [{ type: 'text', text: `done ${i} ✓ ${'ok '.repeat(300)}` }],
          stopReason: 'stop',
        });
      }
      const bytes = made.toBytes();
      const chunks = [];
      for (let at = 0; at < bytes.length; at += 65_536) chunks.push(bytes.slice(at, at + 65_536));
      let i = 0;
      const stream = new ReadableStream({
        async pull(controller) {
          if (i % 7 === 0) await new Promise((r) => setTimeout(r, 0));
          if (i < chunks.length) controller.enqueue(chunks[i++]);
          else controller.close();
        },
      });
      const streamed = await ctxfold.Session.fromStream(stream);
      const fetched = await ctxfold.Session.fromStream(new Response(bytes));
      const same = (s) =>
        s.size === made.size &&
        s.leafId === made.leafId &&
        s.toJsonl() === made.toJsonl() &&
        JSON.stringify(s.contextTokens()) === JSON.stringify(made.contextTokens());
      return { bytes: bytes.length, streamed: same(streamed), fetched: same(fetched) };
    });
    assert.ok(result.bytes > 3_000_000, `${result.bytes} bytes`);
    assert.ok(result.streamed, 'streamed in chunks: the same session');
    assert.ok(result.fetched, 'a Response: the same session');
    assert.deepEqual(problems, []);
  });
});
