// snapcompact frames stored by reference (issue 43 item 5) through the built package: the
// `snapcompact.frameStorage` setting, every reader of frames, `migrateFrames` both ways, and a
// file whose reference names nothing (a load warning and a placeholder, never a throw).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from 'ctxfold';

const MODEL = 'claude-opus-4-7';

function turn(session, n) {
  session.appendMessage({ role: 'user', content: `Step ${n}: ${'tidy the parser. '.repeat(60)}` }, { now: n * 1000 });
  session.appendMessage(
    {
      role: 'assistant',
      content: [{ type: 'text', text: `Step ${n} done. ${'moved a helper. '.repeat(60)}` }],
      stopReason: 'stop',
    },
    { now: n * 1000 + 500 },
  );
}

/** 120 turns, then three snapcompact compactions 30 turns apart, frames stored as `frameStorage`. */
async function run(frameStorage) {
  const session = Session.create({ ids: 'deterministic', id: 'frames', now: 0 });
  let n = 0;
  while (n < 120) turn(session, ++n);
  const ids = [];
  for (let round = 0; round < 3; round++) {
    const r = await session.compact({
      strategy: 'snapcompact',
      model: MODEL,
      now: n * 1000 + 900,
      settings: { keepRecentTokens: 2_000, snapcompact: { frameStorage } },
    });
    ids.push(r.entryId);
    for (let k = 0; k < 30; k++) turn(session, ++n);
  }
  return { session, ids };
}

const bytesOf = (session) => Buffer.from(session.toBytes());

test('frameStorage "reference" writes dataRef frames that every reader resolves', async () => {
  const inline = await run('inline');
  const byRef = await run('reference');
  const entry = (s, id) => s.entries().find((e) => e.id === id);
  const refs = (s, id) => entry(s, id).preserveData.snapcompact.frames.filter((f) => f.dataRef !== undefined);
  assert.equal(refs(byRef.session, byRef.ids[0]).length, 0, 'the first archive has nothing to refer to');
  assert.ok(refs(byRef.session, byRef.ids[2]).length > 0, 'a later one refers to stored frames');
  assert.equal(refs(inline.session, inline.ids[2]).length, 0, 'the default stays inline');
  assert.ok(bytesOf(byRef.session).length < bytesOf(inline.session).length);

  for (const options of [{}, { maxImages: 3 }, { maxFrameDataBytes: 100_000 }]) {
    assert.deepEqual(byRef.session.toLlmMessages(options), inline.session.toLlmMessages(options));
    assert.equal(byRef.session.lastFramesLeftOut(), inline.session.lastFramesLeftOut());
    assert.deepEqual(byRef.session.buildContext(options), inline.session.buildContext(options));
  }
  for (const [k, id] of byRef.ids.entries()) {
    assert.deepEqual(byRef.session.archiveFrames(id), inline.session.archiveFrames(inline.ids[k]));
  }
  assert.deepEqual(byRef.session.warnings, []);
});

test('migrateFrames converts a file both ways and back to the same bytes', async () => {
  const inline = bytesOf((await run('inline')).session);
  const byRef = bytesOf((await run('reference')).session);
  const s = Session.fromJsonl(inline);
  const there = s.migrateFrames('reference');
  assert.equal(there.bytesBefore, inline.length);
  assert.ok(there.frames > 0 && there.entries > 0 && there.missing === 0);
  assert.deepEqual(bytesOf(s), byRef, 'the migration writes what the by-reference run wrote');
  const back = s.migrateFrames('inline');
  assert.equal(back.frames, there.frames);
  assert.deepEqual(bytesOf(s), inline);
  assert.throws(
    () => s.migrateFrames('blob'),
    (e) => e.code === 'E_INVALID_ARGUMENT',
  );
  assert.deepEqual(bytesOf(s), inline, 'a refused migration changes nothing');
  // A loaded by-reference file writes back byte for byte.
  assert.deepEqual(bytesOf(Session.fromJsonl(byRef)), byRef);
});

test('a reference the file does not resolve is a warning and a placeholder', async () => {
  const { session } = await run('reference');
  const text = session.toJsonl();
  // The last reference of the file: in the active compaction.
  const at = text.lastIndexOf('"dataRef":{"entry":"');
  const end = text.indexOf('"', at + '"dataRef":{"entry":"'.length);
  const hostile = `${text.slice(0, at)}"dataRef":{"entry":"gone${text.slice(end)}`;
  assert.notEqual(hostile, text);
  const s = Session.fromJsonl(hostile);
  const warnings = s.warnings.filter((w) => w.code === 'E_INVALID_ENTRY_BODY');
  assert.equal(warnings.length, 1);
  assert.match(warnings[0].message, /names an entry the file does not hold/);
  const summary = s.toLlmMessages()[0];
  const texts = summary.content.filter((b) => b.type === 'text').map((b) => b.text);
  assert.ok(
    texts.some((t) => t.includes('1 archived image frame missing')),
    'a placeholder stands in for it',
  );
  const images = summary.content.filter((b) => b.type === 'image').length;
  const whole = session.toLlmMessages()[0].content.filter((b) => b.type === 'image').length;
  assert.equal(images, whole - 1);
  const m = s.migrateFrames('inline');
  assert.equal(m.missing, 1);
  assert.equal(s.toJsonl().includes('"entry":"gone"'), true, 'the reference stays as it is');
});
