// The loads that read a file while it arrives, against fromJsonl, under generated conditions
// (issue 42): random windows and short reads, reads that answer at once or later, the
// module's memory growing during reads, other sessions' work meanwhile, streams in random
// chunks, and aborts at random moments. Every load ends as the same session as fromJsonl's,
// or with E_ABORTED when its signal aborted before it ended; never another session.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from 'ctxfold';
// mulberry32, the scripted agents' generator.
import { seededRandom as random } from './support/fake-agent.mjs';
import { generatedSession } from './support/generated.mjs';
import { freeGrown, growMemory } from './support/memory.mjs';

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

test('reads, streams, memory growth and aborts: the same session or E_ABORTED', async () => {
  const files = [
    generatedSession('transcript-2k-b.jsonl', ['--entries', '1500', '--seed', '4']),
    Buffer.from(Session.fromMessages([{ role: 'user', content: 'hi' }]).toBytes()),
  ];
  const wants = files.map((f) => {
    const s = Session.fromJsonl(f);
    const want = { bytes: Buffer.from(s.toBytes()), leaf: s.leafId, tokens: s.contextTokens() };
    s.free();
    return want;
  });
  const other = Session.fromJsonl(files[0]);
  let loads = 0;
  let abortedLoads = 0;
  for (let seed = 1; seed <= 40; seed++) {
    const rand = random(seed);
    const k = rand() < 0.8 ? 0 : 1;
    const file = files[k];
    const controller = rand() < 0.3 ? new AbortController() : undefined;
    const abortAfter = Math.floor(rand() * 6);
    let events = 0;
    const event = async () => {
      events++;
      if (controller && events === abortAfter) controller.abort();
      const r = rand();
      if (r < 0.06) growMemory();
      else if (r < 0.2) other.contextTokens();
      if (rand() < 0.5) await tick();
    };
    let load;
    if (rand() < 0.5) {
      const most = rand() < 0.5 ? 0 : 1 + Math.floor(rand() * 300_000);
      const size = file.length + (rand() < 0.2 ? Math.floor(rand() * 5000) : 0);
      load = Session.fromAsyncReader(
        size,
        async (view, position) => {
          await event();
          const n = Math.min(view.byteLength, file.length - position, most || Number.POSITIVE_INFINITY);
          view.set(file.subarray(position, position + n));
          return n;
        },
        { chunkSize: 1 + Math.floor(rand() * 2_000_000), signal: controller?.signal },
      );
    } else {
      const chunks = [];
      for (let at = 0; at < file.length; ) {
        const n = Math.min(file.length - at, Math.floor(rand() * 400_000));
        chunks.push(file.slice(at, at + n));
        at += n;
      }
      let i = 0;
      const stream = new ReadableStream({
        async pull(c) {
          await event();
          if (i < chunks.length) c.enqueue(chunks[i++]);
          else c.close();
        },
      });
      load = Session.fromStream(stream, { signal: controller?.signal, size: rand() < 0.5 ? file.length : undefined });
    }
    try {
      const s = await load;
      const want = wants[k];
      assert.deepEqual(Buffer.from(s.toBytes()), want.bytes, `seed ${seed}`);
      assert.equal(s.leafId, want.leaf, `seed ${seed}`);
      assert.deepEqual(s.contextTokens(), want.tokens, `seed ${seed}`);
      s.free();
      loads++;
    } catch (e) {
      assert.equal(e.code, 'E_ABORTED', `seed ${seed}: ${e.message}`);
      assert.ok(controller?.signal.aborted, `seed ${seed}: aborted without an abort`);
      abortedLoads++;
    }
  }
  other.free();
  freeGrown();
  assert.ok(loads >= 20 && abortedLoads >= 3, `${loads} loads, ${abortedLoads} aborted`);
});
