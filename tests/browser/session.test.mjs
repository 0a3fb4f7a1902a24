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
