// The browser session stores in headless Chromium: createOpfsStore (a dedicated worker, sync
// access handles) and createIndexedDbStore. Each runs the seeded property scenario of
// tests/js/support/store-scenario.mjs (appends, tool results, prunes, shakes, compactions, branch
// moves, saved after every step and opened back: equal to toBytes() each time), then a fresh
// worker (a new store, a new connection) reopens every session; faults: a write cut short by
// terminating the worker, a save that does not fit what is stored (the IndexedDB transaction is
// aborted after its writes were queued), a second writer holding the OPFS file, a torn last line.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { PAGE_MOUNTS, useChromium, withPage } from './support.mjs';

const dir = mkdtempSync(path.join(tmpdir(), 'ctxfold-storage-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// The worker: runs commands posted by the page, each answered with `{ ok, value | error }`.
writeFileSync(
  path.join(dir, 'worker.mjs'),
  `import * as ctxfold from '/pkg/entries/web.js';
import { sameBytes, storeScenario } from '/support/store-scenario.mjs';

await ctxfold.init();
const store = (kind) =>
  kind === 'opfs' ? ctxfold.createOpfsStore({ directory: 'ctxfold-test' }) : ctxfold.createIndexedDbStore('ctxfold-test');
const lines = (n, tag) => Array.from({ length: n }, (_, i) => JSON.stringify({ type: 'custom', id: tag + i, data: 'x'.repeat(200) }));

const commands = {
  async scenario({ kind, id, seed, steps }) {
    return storeScenario(ctxfold, store(kind), { id, seed, steps });
  },
  async open({ kind, id }) {
    return store(kind).open(id);
  },
  async list({ kind }) {
    return store(kind).list();
  },
  // A reset of many lines, for the test to cut short.
  async big({ kind, id, n }) {
    const appended = lines(n, 'big');
    postMessage({ started: true });
    await store(kind).save(id, { since: null, mark: 'big', reset: true, rewritten: [], appended, lineCount: n });
    return n;
  },
  async loadable({ bytes }) {
    const s = ctxfold.Session.fromJsonl(bytes);
    const out = { size: s.size, warnings: s.warnings.map((w) => w.code ?? w.kind ?? JSON.stringify(w)) };
    s.free();
    return out;
  },
  // Changes that start from a state the store does not hold: one line more than it has.
  async misfit({ kind, id }) {
    const s = store(kind);
    const before = await s.open(id);
    const count = new TextDecoder().decode(before).split('\\n').length - 1;
    let error = null;
    try {
      await s.save(id, {
        since: 'elsewhere',
        mark: 'next',
        reset: false,
        rewritten: [{ index: 0, text: '{"type":"session","rewritten":true}' }],
        appended: ['{"type":"custom","id":"late"}'],
        lineCount: count + 2,
      });
    } catch (err) {
      error = err.code ?? err.name;
    }
    return { error, same: sameBytes(await s.open(id), before) };
  },
  // OPFS: another writer holds the file; the save fails instead of interleaving, then succeeds.
  async locked({ id }) {
    const folder = await (await navigator.storage.getDirectory()).getDirectoryHandle('ctxfold-test');
    const file = await folder.getFileHandle(encodeURIComponent(id) + '.jsonl');
    const s = store('opfs');
    const before = await s.open(id);
    const count = new TextDecoder().decode(before).split('\\n').length - 1;
    const next = { since: 'm', mark: 'm2', reset: false, rewritten: [], appended: ['{"type":"custom","id":"after-lock"}'], lineCount: count + 1 };
    const holder = await file.createSyncAccessHandle();
    let error = null;
    try {
      await s.save(id, next);
    } catch (err) {
      error = err.name;
    } finally {
      holder.close();
    }
    const unchanged = sameBytes(await s.open(id), before);
    await s.save(id, next);
    const after = new TextDecoder().decode(await s.open(id));
    return { error, unchanged, appended: after.endsWith('"after-lock"}\\n') };
  },
  // OPFS: a torn last line (an append cut short) is left for the loader to report; it counts as
  // the file's last line, and the next append writes its line break first.
  async torn({ id }) {
    const folder = await (await navigator.storage.getDirectory()).getDirectoryHandle('ctxfold-test');
    const file = await folder.getFileHandle(encodeURIComponent(id) + '.jsonl');
    const handle = await file.createSyncAccessHandle();
    const torn = new TextEncoder().encode('{"type":"message","id":"torn","mess');
    handle.write(torn, { at: handle.getSize() });
    handle.flush();
    handle.close();
    const s = store('opfs');
    const bytes = await s.open(id);
    const loaded = ctxfold.Session.fromJsonl(bytes);
    const warnings = loaded.warnings.map((w) => w.code ?? JSON.stringify(w));
    loaded.free();
    const count = new TextDecoder().decode(bytes).split('\\n').length; // the torn line counts
    const next = '{"type":"custom","id":"after-torn"}';
    await s.save(id, { since: 'm', mark: 'm3', reset: false, rewritten: [], appended: [next], lineCount: count + 1 });
    const want = new TextEncoder().encode(new TextDecoder().decode(bytes) + '\\n' + next + '\\n');
    const appended = sameBytes(await s.open(id), want);
    // A rewrite of the torn line itself (the whole file through the temporary copy).
    await s.save(id, { since: 'm3', mark: 'm4', reset: false, rewritten: [{ index: count - 1, text: '{"type":"custom","id":"mended"}' }], appended: [], lineCount: count + 1 });
    const mended = new TextDecoder().decode(await s.open(id)).endsWith('{"type":"custom","id":"mended"}\\n' + next + '\\n');
    return { endsTorn: bytes.at(-1) !== 10, warnings, appended, mended };
  },
};

onmessage = async ({ data }) => {
  try {
    postMessage({ ok: true, value: await commands[data.cmd](data) });
  } catch (err) {
    postMessage({ ok: false, error: String(err?.stack ?? err), code: err?.code ?? err?.name ?? null });
  }
};
postMessage({ ready: true });
`,
);

const harness = useChromium({
  ...PAGE_MOUNTS,
  '/support/': fileURLToPath(new URL('../js/support/', import.meta.url)),
  '/storage/': dir + path.sep,
});

/** Opens the test page with `rpc(cmd, args)` on window: a fresh worker per call unless `keep`. */
async function openPage(page) {
  await page.goto(harness.server.url);
  await page.evaluate(() => {
    const start = () =>
      new Promise((resolve, reject) => {
        const worker = new Worker('/storage/worker.mjs', { type: 'module' });
        worker.onerror = (e) => reject(new Error(`worker: ${e.message}`));
        worker.onmessage = ({ data }) => data.ready && resolve(worker);
      });
    const ask = (worker, cmd, args) =>
      new Promise((resolve) => {
        worker.onmessage = ({ data }) => resolve(data);
        worker.postMessage({ cmd, ...args });
      });
    window.rpc = async (cmd, args = {}) => {
      const worker = await start();
      try {
        return await ask(worker, cmd, args);
      } finally {
        worker.terminate();
      }
    };
    // Posts `cmd` and terminates the worker `ms` after it says it started, whatever it is doing then.
    window.cut = async (cmd, args, ms) => {
      const worker = await start();
      const started = new Promise((resolve) => {
        worker.onmessage = ({ data }) => data.started && resolve();
      });
      worker.postMessage({ cmd, ...args });
      await started;
      await new Promise((r) => setTimeout(r, ms));
      worker.terminate();
    };
  });
}

const rpc = async (page, cmd, args) => {
  const answer = await page.evaluate(([c, a]) => window.rpc(c, a), [cmd, args]);
  assert.ok(answer.ok, `${cmd}: ${answer.error}`);
  return answer.value;
};
/** When the worker saving a 20,000-line reset is terminated after starting it: during the write, and after. */
const CUT_AFTER_MS = [0, 10, 50, 200, 1000, 3000];
const bytesOf = (value) => (value === null ? null : Buffer.from(Object.values(value)));

for (const kind of ['opfs', 'indexeddb']) {
  test(`Chromium ${kind} store: seeded sessions saved after every step and reopened equal toBytes()`, {
    timeout: 180_000,
  }, async (t) => {
    await withPage(harness.browser, async (page, problems) => {
      await openPage(page);
      const finals = new Map();
      let rewritten = 0;
      const ops = {};
      for (const seed of [1, 2, 3, 4, 5, 6]) {
        const id = `session/${seed} ✓`;
        const r = await rpc(page, 'scenario', { kind, id, seed, steps: 30 });
        assert.deepEqual(r.mismatches, [], `seed ${seed}: open() differed from toBytes() after these steps`);
        assert.equal(r.resets, 1, 'only the first save writes the whole file');
        finals.set(id, bytesOf(r.bytes));
        rewritten += r.rewritten;
        for (const [k, n] of Object.entries(r.ops)) ops[k] = (ops[k] ?? 0) + n;
      }
      t.diagnostic(`operations: ${JSON.stringify(ops)}; ${rewritten} lines rewritten in place`);
      assert.ok(rewritten > 0 && ops.compact > 0 && ops.prune > 0, 'rewrites and compactions were saved');
      // A fresh worker, a fresh store: every session reopens byte for byte.
      assert.deepEqual((await rpc(page, 'list', { kind })).sort(), [...finals.keys()].sort());
      for (const [id, bytes] of finals) assert.deepEqual(bytesOf(await rpc(page, 'open', { kind, id })), bytes, id);
      assert.equal(await rpc(page, 'open', { kind, id: 'nobody' }), null);
      assert.deepEqual(problems, []);
    });
  });

  test(`Chromium ${kind} store: changes that do not fit are refused and leave the session as it was`, {
    timeout: 60_000,
  }, async () => {
    await withPage(harness.browser, async (page) => {
      await openPage(page);
      await rpc(page, 'scenario', { kind, id: 'misfit', seed: 7, steps: 6 });
      const r = await rpc(page, 'misfit', { kind, id: 'misfit' });
      assert.deepEqual(r, { error: 'E_INVALID_ARGUMENT', same: true });
    });
  });

  test(`Chromium ${kind} store: a save cut short by a terminated worker leaves the state before or after`, {
    timeout: 120_000,
  }, async (t) => {
    await withPage(harness.browser, async (page) => {
      await openPage(page);
      const id = 'cut';
      const outcomes = [];
      for (const ms of CUT_AFTER_MS) {
        const before = bytesOf((await rpc(page, 'scenario', { kind, id, seed: 8, steps: 8 })).bytes);
        await page.evaluate(([c, a, m]) => window.cut(c, a, m), ['big', { kind, id, n: 20_000 }, ms]);
        const now = bytesOf(await rpc(page, 'open', { kind, id }));
        const text = now.toString('utf8');
        if (now.equals(before)) outcomes.push('before');
        else if (text.split('\n').length - 1 === 20_000 && text.endsWith('\n')) outcomes.push('after');
        else if (kind === 'opfs' && !text.endsWith('\n')) outcomes.push('torn');
        else outcomes.push(`mixed (${now.length} bytes)`);
      }
      t.diagnostic(`terminated after ${CUT_AFTER_MS.join(', ')} ms: ${outcomes.join(', ')}`);
      // A reset goes through a temporary file (OPFS) or one transaction (IndexedDB): never torn or mixed.
      for (const o of outcomes) assert.ok(o === 'before' || o === 'after', o);
    });
  });
}

test('Chromium opfs store: a second writer holding the file makes the save fail, not interleave', {
  timeout: 60_000,
}, async () => {
  await withPage(harness.browser, async (page) => {
    await openPage(page);
    await rpc(page, 'scenario', { kind: 'opfs', id: 'locked', seed: 9, steps: 4 });
    assert.deepEqual(await rpc(page, 'locked', { id: 'locked' }), {
      error: 'NoModificationAllowedError',
      unchanged: true,
      appended: true,
    });
  });
});

test('Chromium opfs store: a torn last line is reported by the loader, and an append writes its line break first', {
  timeout: 60_000,
}, async () => {
  await withPage(harness.browser, async (page) => {
    await openPage(page);
    await rpc(page, 'scenario', { kind: 'opfs', id: 'torn', seed: 10, steps: 4 });
    const r = await rpc(page, 'torn', { id: 'torn' });
    assert.equal(r.endsTorn, true);
    assert.ok(r.warnings.length > 0, 'the loader reports the torn line');
    assert.equal(r.appended, true, 'the append follows the torn line, after its line break');
    assert.equal(r.mended, true, 'a rewrite of the torn line replaces it');
  });
});

test('Chromium indexeddb store: readable from the page (a window) too', { timeout: 60_000 }, async () => {
  await withPage(harness.browser, async (page) => {
    await openPage(page);
    const { bytes } = await rpc(page, 'scenario', { kind: 'indexeddb', id: 'window', seed: 11, steps: 10 });
    const fromWindow = await page.evaluate(async () => {
      const ctxfold = await import('/pkg/entries/web.js');
      await ctxfold.init();
      const got = await ctxfold.createIndexedDbStore('ctxfold-test').open('window');
      return Array.from(got);
    });
    assert.deepEqual(Buffer.from(fromWindow), bytesOf(bytes));
  });
});
