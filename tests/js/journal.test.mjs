// The change journal (`session.changes()`) and the Node file store through the built package
// (issue 40, docs/guide/storage.md): random operation sequences saved through the store and
// reopened give `toBytes()`; a write that fails midway (an injected fs that throws at step k)
// leaves the state before or after; a writer killed with SIGKILL leaves the state before or
// after, or for an append the lines it got to with the torn last one reported by the loader;
// two writers never interleave (one waits, or fails with E_LOCKED); ids cannot leave the folder.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as realFs from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { createFileStore, Session } from 'ctxfold';
import { header, line } from './support/sessions.mjs';

const scratch = mkdtempSync(path.join(tmpdir(), 'ctxfold-journal-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
let folders = 0;
const folder = () => path.join(scratch, `d${folders++}`);

/** A small seeded PRNG (xorshift32). */
function rng(seed) {
  let x = seed >>> 0 || 1;
  return (n) => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x % n;
  };
}

const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 };

/** A turn: a user question, a tool call, its result (`size` words), an answer. */
function turn(s, k, size, now) {
  s.appendMessage({
    role: 'user',
    content: `question ${k} `.repeat(20),
    timestamp: now,
  });
  const call = `c${k}`;
  s.appendMessage({
    role: 'assistant',
    content: [
      {
        type: 'toolCall',
        id: call,
        name: 'read',
        arguments: { path: `src/f${k % 3}.ts` },
      },
    ],
    provider: 'anthropic',
    model: 'm',
    usage,
    stopReason: 'toolUse',
    timestamp: now,
  });
  s.appendMessage({
    role: 'toolResult',
    toolCallId: call,
    toolName: 'read',
    content: [{ type: 'text', text: `line ${k}\n`.repeat(size) }],
    isError: false,
    timestamp: now,
  });
  s.appendMessage({
    role: 'assistant',
    content: [{ type: 'text', text: `answer ${k}` }],
    provider: 'anthropic',
    model: 'm',
    usage,
    stopReason: 'stop',
    timestamp: now,
  });
}

/** One random step: appends, prunes, shakes, compactions, navigation, labels. */
async function step(s, r, k) {
  const now = 1_800_000_000_000 + k * 1000;
  switch (r(8)) {
    case 0:
    case 1:
      turn(s, k, 1 + r(400), now);
      break;
    case 2:
      s.prune({ now, protectTokens: r(2000), minimumSavings: 0 });
      break;
    case 3:
      s.pruneStale({ now, idleFlushMs: 0 });
      break;
    case 4:
      await s
        .shake({
          preset: ['default', 'aggressive', 'rescue'][r(3)],
          protectTokens: 0,
          minSavings: 0,
        })
        .catch(() => {});
      break;
    case 5:
      await s
        .compact({
          settings: { keepRecentTokens: 10 + r(500) },
          summarize: async () => `summary ${k}`,
          now,
        })
        .catch(() => {});
      break;
    case 6: {
      const entries = s.entries();
      if (entries.length > 0) s.branch(entries[r(entries.length)].id);
      break;
    }
    default: {
      const entries = s.entries();
      if (entries.length > 0) s.appendLabel(entries[r(entries.length)].id, r(2) === 0 ? `l${k}` : null);
    }
  }
}

test('random sequences saved through the file store and reopened equal toBytes()', async () => {
  for (let seed = 1; seed <= 12; seed++) {
    const r = rng(seed * 7919);
    const store = createFileStore(folder());
    const s = Session.create({
      id: `s${seed}`,
      cwd: '/w',
      now: 1_800_000_000_000,
    });
    let mark = null;
    let resets = 0;
    for (let k = 0; k < 30; k++) {
      await step(s, r, k);
      if (r(3) === 0) continue; // several steps between saves
      const c = s.changes(mark);
      if (c.reset) resets++;
      await store.save('sess', c);
      mark = c.mark;
      const stored = await store.open('sess');
      assert.deepEqual(Buffer.from(stored), Buffer.from(s.toBytes()), `seed ${seed} step ${k}`);
    }
    assert.equal(resets, 1, 'only the first save writes the whole file');
    const c = s.changes(mark);
    await store.save('sess', c);
    const reopened = Session.fromJsonl(await store.open('sess'));
    assert.deepEqual(Buffer.from(reopened.toBytes()), Buffer.from(s.toBytes()));
    assert.deepEqual(await store.list(), ['sess']);
    // The reopened session goes on from its load mark: the next save is the turn only.
    const lines = reopened.toJsonl().split('\n').length - 1;
    turn(reopened, 99, 3, 1_900_000_000_000);
    const next = reopened.changes(reopened.loadMark);
    assert.equal(next.reset, false);
    assert.equal(next.rewritten.length, 0);
    assert.equal(next.appended.length, 4);
    assert.equal(next.lineCount, lines + 4);
    await store.save('sess', next);
    assert.deepEqual(Buffer.from(await store.open('sess')), Buffer.from(reopened.toBytes()));
  }
});

test('changes(): shape, marks of another session or garbage give a reset, bad arguments throw', () => {
  const s = Session.fromJsonl(`${[header, line('u1', null, { role: 'user', content: 'hi' })].join('\n')}\n`);
  const mark = s.loadMark;
  assert.equal(typeof mark, 'string');
  const none = s.changes(mark);
  assert.deepEqual(
    {
      since: none.since,
      reset: none.reset,
      rewritten: none.rewritten,
      appended: none.appended,
      lineCount: none.lineCount,
    },
    { since: mark, reset: false, rewritten: [], appended: [], lineCount: 2 },
  );
  s.appendLabel('u1', 'first');
  const c = s.changes(mark);
  assert.equal(c.appended.length, 1);
  assert.match(c.appended[0], /"type":"label"/);
  assert.deepEqual(JSON.parse(JSON.stringify(c)), c, 'JSON-safe');
  const other = Session.fromJsonl(s.toBytes());
  for (const m of [other.loadMark, 'j1.0.0.1', 'nonsense', null, undefined]) {
    const full = s.changes(m);
    assert.equal(full.reset, true, String(m));
    assert.equal(full.since, null);
    assert.equal(`${full.appended.join('\n')}\n`, s.toJsonl());
  }
  for (const bad of [1, {}, []]) assert.throws(() => s.changes(bad), { code: 'E_INVALID_ARGUMENT' });
  // A failed operation leaves the journal as it was.
  const before = s.changes(mark);
  assert.throws(() => s.appendMessage({ content: 'no role' }), {
    code: 'E_INVALID_MESSAGE',
  });
  assert.deepEqual(s.changes(mark), before);
  // A migrated file has no load mark.
  const v1 =
    '{"type":"session","id":"old","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n' +
    '{"type":"message","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}\n';
  assert.equal(Session.fromJsonl(v1).loadMark, null);
});

test('a torn last line is reported with its byte offset, kept, and appended after', async () => {
  const dir = folder();
  const store = createFileStore(dir);
  const good = `${[header, line('u1', null, { role: 'user', content: 'hi' })].join('\n')}\n`;
  const torn = `${good}{"type":"message","id":"u2","par`;
  await realFs.mkdir(dir, { recursive: true });
  writeFileSync(store.pathOf('t'), torn);
  const s = Session.fromJsonl(await store.open('t'));
  const w = s.warnings.at(-1);
  assert.equal(w.code, 'E_JSONL_LINE');
  assert.match(w.message, new RegExp(`torn last line at byte offset ${Buffer.byteLength(good)}`));
  assert.equal(s.size, 1);
  s.appendMessage({ role: 'user', content: 'again' });
  await store.save('t', s.changes(s.loadMark));
  assert.deepEqual(readFileSync(store.pathOf('t')), Buffer.from(s.toBytes()), 'the torn bytes are kept');
});

test('a stored file opened with fromAsyncReader on pathOf saves through the store as one from open()', async () => {
  const store = createFileStore(folder());
  const s = Session.fromJsonl(`${[header, line('u1', null, { role: 'user', content: 'hi' })].join('\n')}\n`);
  await store.save('f', s.changes(null));
  const handle = await realFs.open(store.pathOf('f'), 'r');
  let opened;
  try {
    const { size } = await handle.stat();
    opened = await Session.fromAsyncReader(size, (view, position) =>
      handle.read(view, 0, view.byteLength, position).then((r) => r.bytesRead),
    );
  } finally {
    await handle.close();
  }
  assert.notEqual(opened.loadMark, null);
  opened.appendMessage({ role: 'user', content: 'again' });
  opened.prune({ now: 5, protectTokens: 0, minimumSavings: 0 });
  const changes = opened.changes(opened.loadMark);
  assert.equal(changes.reset, false, 'the changes since the load, not the whole file');
  await store.save('f', changes);
  assert.deepEqual(Buffer.from(await store.open('f')), Buffer.from(opened.toBytes()));
  opened.free();
});

test('\\r\\n endings, a byte order mark and a missing final newline round-trip through the store', async () => {
  const store = createFileStore(folder());
  const crlf = `\uFEFF${[header, line('u1', null, { role: 'user', content: 'hi' })].join('\r\n')}\r\n`;
  const s = Session.fromJsonl(Buffer.from(crlf));
  await store.save('c', s.changes(null));
  assert.deepEqual(Buffer.from(await store.open('c')), Buffer.from(s.toBytes()));
  let mark = s.changes(null).mark;
  s.appendMessage({ role: 'user', content: 'two' });
  s.prune({ now: 5, protectTokens: 0, minimumSavings: 0 });
  const c = s.changes(mark);
  await store.save('c', c);
  mark = c.mark;
  assert.deepEqual(Buffer.from(await store.open('c')), Buffer.from(s.toBytes()));
  // No final newline: the store's copy gains it (the one byte the line model adds).
  const bare = [header, line('u1', null, { role: 'user', content: 'hi' })].join('\n');
  const b = Session.fromJsonl(bare);
  await store.save('b', b.changes(null));
  assert.equal(Buffer.from(await store.open('b')).toString(), `${bare}\n`);
});

test('ids are plain names: no path traversal', async () => {
  const store = createFileStore(folder());
  const c = Session.create({ id: 'x', cwd: '/', now: 0 }).changes(null);
  for (const id of ['../x', 'a/b', '..', '', '.hidden/..', 'a\\b', 'x'.repeat(201), 'a\0b', 5]) {
    await assert.rejects(store.save(id, c), { code: 'E_INVALID_ARGUMENT' }, String(id));
    await assert.rejects(async () => store.open(id), {
      code: 'E_INVALID_ARGUMENT',
    });
  }
  await assert.rejects(store.save('ok', { reset: true }), {
    code: 'E_INVALID_ARGUMENT',
  });
  assert.deepEqual(await store.list(), []);
});

/** The node:fs/promises calls of the store, with a throw at the `k`-th write-side call. */
function faultyFs(k) {
  let calls = 0;
  const tick = (what) => {
    calls++;
    if (calls === k)
      throw Object.assign(new Error(`injected fault at ${what}`), {
        code: 'EIO',
      });
  };
  const wrapHandle = (h) =>
    new Proxy(h, {
      get(target, prop) {
        const v = Reflect.get(target, prop);
        if (typeof v !== 'function') return v;
        if (prop === 'write') {
          return async (data, ...rest) => {
            // A write that stops midway: half the bytes land, then the fault.
            calls++;
            if (calls === k) {
              const bytes = typeof data === 'string' ? Buffer.from(data) : data;
              const [offset = 0, length = bytes.length, position] = rest;
              await target.write(bytes, offset, Math.floor(length / 2), position);
              throw Object.assign(new Error('injected fault in write'), {
                code: 'EIO',
              });
            }
            return target.write(data, ...rest);
          };
        }
        if (prop === 'sync' || prop === 'truncate' || prop === 'writeFile') {
          return async (...a) => {
            if (prop !== 'truncate') tick(prop);
            return v.apply(target, a);
          };
        }
        return v.bind(target);
      },
    });
  return {
    calls: () => calls,
    fs: {
      ...realFs,
      open: async (...a) => {
        tick('open');
        return wrapHandle(await realFs.open(...a));
      },
      rename: async (...a) => {
        tick('rename');
        return realFs.rename(...a);
      },
      unlink: (...a) => realFs.unlink(...a),
      readFile: (...a) => realFs.readFile(...a),
      readdir: (...a) => realFs.readdir(...a),
      stat: (...a) => realFs.stat(...a),
      mkdir: (...a) => realFs.mkdir(...a),
    },
  };
}

test('a fault at any step of a save leaves a file that loads as the state before or after', async () => {
  const kinds = ['append', 'rewrite', 'reset'];
  for (const kind of kinds) {
    for (let k = 1; k < 40; k++) {
      const dir = folder();
      const s = Session.create({ id: 'f', cwd: '/', now: 0 });
      turn(s, 1, 50, 1000);
      turn(s, 2, 50, 2000);
      const good = createFileStore(dir);
      const first = s.changes(null);
      await good.save('f', first);
      const before = Buffer.from(s.toBytes());
      if (kind === 'append') turn(s, 3, 5, 3000);
      else if (kind === 'rewrite') {
        assert.ok(s.prune({ now: 5, protectTokens: 0, minimumSavings: 0 }).prunedCount > 0);
        turn(s, 3, 5, 3000);
      } else s.appendLabel(s.entries()[0].id, 'x');
      const changes = s.changes(kind === 'reset' ? null : first.mark);
      const afterBytes = Buffer.from(s.toBytes());
      const faulty = faultyFs(k);
      const store = createFileStore(dir, { fs: faulty.fs, fsync: true });
      let failed = false;
      try {
        await store.save('f', changes);
      } catch (e) {
        failed = true;
        assert.equal(e.code, 'EIO', e.message);
      }
      const held = Buffer.from(await good.open('f'));
      const loaded = Session.fromJsonl(held);
      assert.ok(
        held.equals(before) || held.equals(afterBytes),
        `${kind}, fault at step ${k}: the file is neither the state before nor after`,
      );
      assert.deepEqual(loaded.warnings, [], `${kind} ${k}`);
      if (!failed) assert.deepEqual(held, afterBytes, `${kind} ${k}: a save that resolved is stored`);
      // The lock is gone, and a retry from the same mark completes the save.
      if (failed) await good.save('f', changes);
      assert.deepEqual(Buffer.from(await good.open('f')), afterBytes, `${kind} ${k}: retry`);
      assert.deepEqual(await good.list(), ['f']);
      if (!failed) break; // k is past the last step of this kind of save
    }
  }
});

/** A child that takes the store's lock and writes, and is killed with SIGKILL midway. */
const CHILD = `
import { createFileStore, Session } from 'ctxfold';
import * as fs from 'node:fs/promises';
const [dir, changesJson, stopAt] = process.argv.slice(1);
let calls = 0;
// Waits to be killed (the interval keeps the process alive: a pending promise alone would not).
const hang = async () => { process.stdout.write('stopped\\n'); await new Promise(() => setInterval(() => {}, 1000)); };
const wrap = (h) => new Proxy(h, { get(t, p) {
  const v = Reflect.get(t, p);
  if (p === 'write') return async (data, ...rest) => {
    if (++calls === Number(stopAt)) {
      const b = typeof data === 'string' ? Buffer.from(data) : data;
      await t.write(b, 0, Math.floor(b.length / 2), rest[2]);
      await hang();
    }
    return t.write(data, ...rest);
  };
  return typeof v === 'function' ? v.bind(t) : v;
} });
const store = createFileStore(dir, { fs: { ...fs, open: async (...a) => wrap(await fs.open(...a)),
  rename: async (...a) => { if (++calls === Number(stopAt)) await hang(); return fs.rename(...a); } } });
await store.save('k', JSON.parse(changesJson));
process.stdout.write('done\\n');
`;

function runChild(dir, changes, stopAt) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--input-type=module', '-e', CHILD, dir, JSON.stringify(changes), String(stopAt)],
      {
        cwd: path.join(import.meta.dirname, '..'),
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('stopped')) child.kill('SIGKILL');
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ out, code, signal }));
  });
}

test('a writer killed with SIGKILL midway leaves a file that loads; its lock is taken over', async () => {
  for (const kind of ['append', 'rewrite']) {
    for (const stopAt of [1, 2, 3]) {
      const dir = folder();
      const s = Session.create({ id: 'k', cwd: '/', now: 0 });
      turn(s, 1, 40, 1000);
      const store = createFileStore(dir);
      const first = s.changes(null);
      await store.save('k', first);
      const before = Buffer.from(s.toBytes());
      if (kind === 'rewrite') s.prune({ now: 5, protectTokens: 0, minimumSavings: 0 });
      turn(s, 2, 40, 2000);
      const changes = s.changes(first.mark);
      const afterBytes = Buffer.from(s.toBytes());
      const { out, signal } = await runChild(dir, changes, stopAt);
      if (stopAt === 1) assert.equal(signal, 'SIGKILL', 'the first write is always reached');
      const held = Buffer.from(await store.open('k'));
      if (signal === 'SIGKILL') {
        const loaded = Session.fromJsonl(held);
        if (held.equals(before) || held.equals(afterBytes)) {
          assert.deepEqual(loaded.warnings, []);
        } else {
          // An append cut midway: the state before, then the appended lines the write got to
          // (a prefix of the state after), the last one torn and reported by the loader.
          assert.equal(kind, 'append', `${kind} stop ${stopAt}: a rewrite must be all or nothing`);
          assert.ok(held.length > before.length && afterBytes.subarray(0, held.length).equals(held));
          assert.notEqual(held.at(-1), 10);
          const offset = held.lastIndexOf(10) + 1;
          assert.match(loaded.warnings.at(-1)?.message ?? '', new RegExp(`torn last line at byte offset ${offset}`));
          assert.ok(loaded.size >= Session.fromJsonl(before).size);
        }
        // The dead writer's lock does not block the next save, which completes from its mark.
        const fresh = createFileStore(dir, { lockWaitMs: 0 });
        const reopened = Session.fromJsonl(held);
        const c = reopened.changes(reopened.loadMark);
        await fresh.save('k', c);
        assert.deepEqual(Buffer.from(await fresh.open('k')), Buffer.from(reopened.toBytes()));
      } else {
        assert.match(out, /done/);
        assert.deepEqual(held, afterBytes);
      }
    }
  }
});

test('two concurrent writers: one waits for the other, or fails with E_LOCKED; never interleaved', async () => {
  const dir = folder();
  const a = createFileStore(dir);
  const b = createFileStore(dir, { lockWaitMs: 0 });
  const s = Session.create({ id: 'w', cwd: '/', now: 0 });
  turn(s, 1, 2000, 1000);
  const first = s.changes(null);
  await a.save('w', first);
  // A lock held by a live process (this one, through another store object) makes b fail at once.
  await realFs.writeFile(
    path.join(dir, 'w.lock'),
    JSON.stringify({ pid: process.pid, host: 'elsewhere', at: Date.now() }),
  );
  turn(s, 2, 10, 2000);
  const c = s.changes(first.mark);
  await assert.rejects(b.save('w', c), { code: 'E_LOCKED' });
  // a waits, and goes on once the lock is released.
  const waiting = a.save('w', c);
  await new Promise((r) => setTimeout(r, 50));
  await realFs.unlink(path.join(dir, 'w.lock'));
  await waiting;
  assert.deepEqual(Buffer.from(await a.open('w')), Buffer.from(s.toBytes()));
  // Many saves at once from two store objects of one folder: each file is one of the sessions', whole.
  const one = Session.create({ id: 'w', cwd: '/', now: 0 });
  const two = Session.create({ id: 'w', cwd: '/', now: 0 });
  turn(one, 1, 3000, 1000);
  turn(two, 2, 3000, 1000);
  await Promise.all([
    ...Array.from({ length: 5 }, () => a.save('z', one.changes(null))),
    ...Array.from({ length: 5 }, () => createFileStore(dir).save('z', two.changes(null))),
  ]);
  const held = Buffer.from(await a.open('z'));
  assert.ok(held.equals(Buffer.from(one.toBytes())) || held.equals(Buffer.from(two.toBytes())));
  // A stale lock (a dead writer of this host) is taken over.
  await realFs.writeFile(
    path.join(dir, 'z.lock'),
    JSON.stringify({
      pid: 2 ** 22 + 12345,
      host: (await import('node:os')).hostname(),
      at: 0,
    }),
  );
  await b.save('z', one.changes(null));
  // So is one older than staleLockMs.
  await realFs.writeFile(path.join(dir, 'z.lock'), '{');
  const old = new Date(Date.now() - 120_000);
  await realFs.utimes(path.join(dir, 'z.lock'), old, old);
  await b.save('z', two.changes(null));
  assert.deepEqual(Buffer.from(await a.open('z')), Buffer.from(two.toBytes()));
});
