// The Maintainer's own cost per agent turn (issue 19): `beforeRequest` + `afterResponse` with a
// reply that needs no maintenance, on a small live session and on the generated 50,000-entry
// bench session (209 compactions: the live context is what follows the latest one). The
// session is reloaded for each sample set so that the appended turns do not pile up.
import { Maintainer, Session } from 'ctxfold';
import { generatedSession, timesRow } from './lib.mjs';

const MODEL = { provider: 'anthropic', id: 'claude-sonnet-4-5', contextWindow: 1_000_000, input: ['text'] };
const NOW = 1_800_000_000_000;

function reply(tokens) {
  return {
    role: 'assistant',
    content: [{ type: 'text', text: 'Done, the test passes now.' }],
    provider: MODEL.provider,
    model: MODEL.id,
    usage: { input: tokens, output: 20, cacheRead: 0, cacheWrite: 0 },
    stopReason: 'stop',
    timestamp: NOW,
  };
}

async function turns(bytes, label) {
  const session = Session.fromJsonl(bytes);
  let now = NOW;
  const m = new Maintainer(session, {
    model: MODEL,
    summarize: async () => 'unused',
    settings: { methodOrder: ['soft'] },
    now: () => now,
  });
  const times = [];
  for (let i = 0; i < 25; i++) {
    now += 1000;
    m.session.appendMessage({ role: 'user', content: `Step ${i}: run the tests again.`, timestamp: now });
    const t0 = performance.now();
    const { tokens } = await m.beforeRequest({ systemPrompt: 'You are a coding agent.' });
    await m.afterResponse(reply(tokens));
    if (i >= 5) times.push(performance.now() - t0);
  }
  m.dispose();
  session.free();
  return timesRow(`maintainer turn (beforeRequest + afterResponse), ${label}`, times, {
    note: 'user message appended by the host; no prune or compaction needed',
  });
}

export default async function () {
  const small = Session.create({ id: 'small', cwd: '/w', now: NOW });
  for (let i = 0; i < 100; i++) {
    small.appendMessage({ role: 'user', content: `question ${i} ${'word '.repeat(100)}`, timestamp: NOW });
    small.appendMessage(reply(0), { now: NOW });
  }
  return [
    await turns(small.toBytes(), '200-message session'),
    await turns(generatedSession('bench-50k.jsonl', ['--preset', 'bench']), '50,000 entries, 209 compactions'),
  ];
}
