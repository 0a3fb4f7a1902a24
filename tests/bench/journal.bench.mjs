// Saving after a turn (issue 40): the generated 50,000-entry session (`gen-session --preset
// bench`, 144 MB, 209 compactions), one agent turn appended (a user message, a tool call, its
// result, an answer), then saved to a file two ways: `session.changes(mark)` into the Node file
// store (the turn's lines appended) against `toBytes()` + `writeFile` of the whole file. Also a
// turn whose prune rewrote lines (the store writes a temporary file and renames it), and the
// cost of `changes()` alone. Each sample is a fresh turn on the same session; the file lives in
// the system's temporary folder (no fsync).
import { mkdtempSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createFileStore, Session } from 'ctxfold';
import { generatedSession, timesRow } from './lib.mjs';

const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 };

function turn(s, k) {
  const now = 1_900_000_000_000 + k * 1000;
  s.appendMessage({ role: 'user', content: `question ${k}`, timestamp: now });
  const id = `bench-call-${k}`;
  s.appendMessage({
    role: 'assistant',
    content: [{ type: 'toolCall', id, name: 'read', arguments: { path: 'src/a.ts' } }],
    provider: 'anthropic',
    model: 'm',
    usage,
    stopReason: 'toolUse',
    timestamp: now,
  });
  s.appendMessage({
    role: 'toolResult',
    toolCallId: id,
    toolName: 'read',
    content: [{ type: 'text', text: 'export const a = 1;\n'.repeat(200) }],
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

async function time(fn) {
  const t0 = performance.now();
  const value = await fn();
  return [performance.now() - t0, value];
}

export default async function () {
  const bytes = generatedSession('bench-50k.jsonl', ['--preset', 'bench']);
  const dir = mkdtempSync(path.join(tmpdir(), 'ctxfold-journal-bench-'));
  try {
    const s = Session.fromJsonl(bytes);
    const store = createFileStore(dir);
    const [first] = await time(() => store.save('s', s.changes(null)));
    let mark = s.loadMark ?? s.changes(null).mark;
    const journal = [];
    const store1 = [];
    const whole = [];
    const rewrite = [];
    let appended = 0;
    for (let k = 0; k < 9; k++) {
      turn(s, k);
      const [tc, c] = await time(() => s.changes(mark));
      appended = c.appended.reduce((n, l) => n + l.length + 1, 0);
      const [ts] = await time(() => store.save('s', c));
      mark = c.mark;
      journal.push(tc);
      store1.push(tc + ts);
      const [tw] = await time(() => writeFile(path.join(dir, 'whole.jsonl'), s.toBytes()));
      whole.push(tw);
    }
    // A turn whose prune rewrote lines: the store rewrites the file through a temporary one.
    let rewritten = 0;
    for (let k = 0; k < 3; k++) {
      turn(s, 100 + k);
      s.prune({ now: 1_900_000_100_000 + k, protectTokens: 0, minimumSavings: 0 });
      const [t, c] = await time(async () => {
        const c = s.changes(mark);
        await store.save('s', c);
        return c;
      });
      mark = c.mark;
      if (c.rewritten.length > 0) {
        rewrite.push(t);
        rewritten = c.rewritten.length;
      }
    }
    const size = `${(s.toBytes().length / 1e6).toFixed(0)} MB file`;
    return [
      {
        name: 'journal: first save (reset, whole file) through the store',
        median: first,
        unit: 'ms',
        samples: 1,
        note: size,
      },
      timesRow('journal: changes() after one turn', journal, { note: `${appended} B appended` }),
      timesRow('journal: save after one turn, changes() + file store', store1, { note: 'append' }),
      timesRow('journal: save after one turn, toBytes() + writeFile', whole, { note: size }),
      timesRow('journal: save after a turn + a prune that rewrote lines, changes() + file store', rewrite, {
        note: `${rewritten} lines rewritten: temporary file + rename`,
      }),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
