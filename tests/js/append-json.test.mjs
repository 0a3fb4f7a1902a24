// `session.append(type, json)`: an entry's fields given as their JSON text (a string or UTF-8
// bytes) instead of an object, as the demo's worker hands the page a compaction it wrote (issue
// 41 Deliver 5: no second JSON.stringify on the main thread). The core reads the text as it reads
// an object: the same entry, byte for byte; text that is not a JSON object is refused with a code
// and leaves the session byte-identical.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from 'ctxfold';
import { random } from './support/formats.mjs';

const NOW = Date.parse('2026-12-07T10:00:00.000Z');

function seeded() {
  const s = Session.create({ id: 'append-json', cwd: '/p', now: NOW, ids: 'deterministic' });
  s.appendMessage({ role: 'user', content: 'hello', timestamp: NOW }, { now: NOW });
  s.appendMessage(
    {
      role: 'assistant',
      content: [{ type: 'text', text: 'hi' }],
      api: 'anthropic-messages',
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      usage: { input: 10, output: 2, cacheRead: 0, cacheWrite: 0, totalTokens: 12 },
      stopReason: 'stop',
      timestamp: NOW,
    },
    { now: NOW },
  );
  return s;
}

/** A session's bytes after `fields` is appended as an object, as a JSON string and as bytes. */
function threeWays(type, fields) {
  return ['object', 'string', 'bytes'].map((how) => {
    const s = seeded();
    try {
      const text = JSON.stringify(fields);
      const given = how === 'object' ? fields : how === 'string' ? text : new TextEncoder().encode(text);
      s.append(type, given, { now: NOW + 1 });
      return Buffer.from(s.toBytes()).toString('utf8');
    } finally {
      s.free();
    }
  });
}

test('append of JSON text writes the entry an object writes: custom, message, compaction', () => {
  const cases = [
    ['custom', { customType: 'demo', data: { a: [1, 2, { b: 'é漢😀' }] } }],
    ['message', { message: { role: 'user', content: 'from text', timestamp: NOW } }],
  ];
  for (const [type, fields] of cases) {
    const [object, string, bytes] = threeWays(type, fields);
    assert.equal(string, object, `${type}: string`);
    assert.equal(bytes, object, `${type}: bytes`);
  }
  // A compaction as the demo's worker sends it: the fields of an entry the core wrote.
  const s = seeded();
  const first = s.index()[0].id;
  const id = s.appendCompaction({ summary: 'sum', firstKeptEntryId: first, tokensBefore: 100 }, { now: NOW + 1 });
  const { id: _i, parentId: _p, type: _t, timestamp: _ts, ...fields } = s.entry(id);
  s.free();
  const [object, string, bytes] = threeWays('compaction', fields);
  assert.equal(string, object);
  assert.equal(bytes, object);
  assert.match(object, /"type":"compaction"/);
});

test('property: random objects appended as text equal the object append (seeded)', () => {
  const r = random(41);
  const value = (depth) => {
    switch (depth > 2 ? r.int(4) : r.int(6)) {
      case 0:
        return r.text(20);
      case 1:
        return r.int(2 ** 31) - 2 ** 30;
      case 2:
        return r.chance(0.5);
      case 3:
        return null;
      case 4:
        return Array.from({ length: r.int(4) }, () => value(depth + 1));
      default:
        return obj(depth + 1);
    }
  };
  const obj = (depth) => Object.fromEntries(Array.from({ length: r.int(5) }, () => [r.text(8), value(depth)]));
  for (let i = 0; i < 200; i++) {
    const fields = { customType: `t${i}`, data: obj(0) };
    const [object, string, bytes] = threeWays('custom', fields);
    assert.equal(string, object, `case ${i}`);
    assert.equal(bytes, object, `case ${i}`);
  }
});

test('text that is not a JSON object is refused with a code; the session stays byte-identical', () => {
  const bad = ['', 'nul', '{', '{"a":1', '[1,2]', '"text"', '42', 'null', '{"a":1} x', '{"a":1}{"b":2}'];
  const badBytes = [
    new Uint8Array([0xff, 0xfe, 0x7b, 0x7d]),
    new Uint8Array([0x7b, 0x22, 0xc3, 0x22, 0x3a, 0x31, 0x7d]),
  ];
  for (const type of ['custom', 'message', 'compaction']) {
    for (const text of [...bad, ...badBytes]) {
      const s = seeded();
      const before = Buffer.from(s.toBytes());
      const leaf = s.leafId;
      assert.throws(
        () => s.append(type, text, { now: NOW + 1 }),
        (err) => {
          // Text that is no JSON: a message's E_INVALID_MESSAGE; JSON that is no object (or bytes
          // that are no UTF-8): E_INVALID_ARGUMENT, as for a non-object `fields`.
          const expected = type === 'message' ? /^E_INVALID_(MESSAGE|ARGUMENT)$/ : /^E_INVALID_ARGUMENT$/;
          assert.match(
            String(err.code),
            expected,
            `${type} ${JSON.stringify(String(text))}: ${err.code} ${err.message}`,
          );
          return true;
        },
      );
      assert.deepEqual(Buffer.from(s.toBytes()), before, `${type} ${JSON.stringify(String(text))}: unchanged`);
      assert.equal(s.leafId, leaf);
      s.free();
    }
  }
});

test('a message given as text is checked by the core like an object: E_INVALID_MESSAGE, unchanged', () => {
  const s = seeded();
  const before = Buffer.from(s.toBytes());
  for (const text of ['{"message":{"role":"user"}}', '{"message":{"role":"robot","content":"x"}}', '{"message":42}']) {
    assert.throws(
      () => s.append('message', text, { now: NOW + 1 }),
      (err) => err.code === 'E_INVALID_MESSAGE',
    );
    assert.deepEqual(Buffer.from(s.toBytes()), before);
  }
  s.free();
});

test('a system prompt entry appended as text is the one toMessages returns, as an object append is', () => {
  const format = { format: 'anthropic' };
  const source = Session.fromMessages([{ role: 'user', content: 'hi' }], { ...format, system: 'Be brief.' });
  const systemEntry = source.entries().find((e) => e.type === 'custom' && e.customType === 'ctxfold:system');
  assert.ok(systemEntry, 'fromMessages wrote the system entry');
  const fields = { customType: systemEntry.customType, data: systemEntry.data };
  const outs = [fields, JSON.stringify(fields)].map((given) => {
    const s = Session.fromMessages([{ role: 'user', content: 'hi' }], format);
    s.append('custom', given, { now: NOW });
    s.appendMessage({ role: 'user', content: 'next', timestamp: NOW }, { now: NOW });
    const out = s.toMessages(format);
    s.free();
    return out;
  });
  source.free();
  assert.equal(outs[0].system, 'Be brief.');
  assert.deepEqual(outs[1], outs[0]);
});
