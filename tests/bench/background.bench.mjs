// Background compaction (issue 39, spec: compaction §13): the time a threshold compaction adds
// to the agent's critical path — from the start of the `afterResponse` whose reply crosses the
// threshold to the end of the next `beforeRequest` — when the Maintainer committed a result it
// prepared in the background, against the same compaction run inline by a summarizer that
// answers at once and one that takes 50 ms a call (a fast real model takes seconds). The issue's
// target for the background path is at most 5 ms.
import { Maintainer, Session } from 'ctxfold';
import { timesRow } from './lib.mjs';

const MODEL = { provider: 'anthropic', id: 'claude-sonnet-4-5', contextWindow: 200_000, input: ['text'] };
// threshold 100,000, lead 12,500: the preparation starts from 87,500.
const SETTINGS = { methodOrder: ['soft'], thresholdTokens: 100_000, keepRecentTokens: 4000 };
const NOW = 1_800_000_000_000;

function reply(tokens, now) {
  return {
    role: 'assistant',
    content: [{ type: 'text', text: `Done. ${'detail '.repeat(150)}` }],
    provider: MODEL.provider,
    model: MODEL.id,
    usage: { input: tokens, output: 0, cacheRead: 0, cacheWrite: 0 },
    stopReason: 'stop',
    timestamp: now,
  };
}

const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
};

/** One sample: `turns` turns, one in the band, then the threshold turn; the critical-path time of the compaction. */
async function sample(turns, { background, latencyMs }) {
  const session = Session.create({ id: 'bench', cwd: '/w', now: NOW });
  let now = NOW;
  let commits = 0;
  const m = new Maintainer(session, {
    model: MODEL,
    settings: SETTINGS,
    calibrate: false,
    background,
    now: () => now,
    summarize: async (r) => {
      if (latencyMs > 0) await new Promise((res) => setTimeout(res, latencyMs));
      return `summary of ${r.purpose}`;
    },
    onEvent: (e) => {
      if (e.type === 'speculation_commit') commits++;
    },
  });
  const turn = async (tokens) => {
    now += 1000;
    m.session.appendMessage({ role: 'user', content: `question ${'word '.repeat(150)}`, timestamp: now });
    await m.beforeRequest();
    return m.afterResponse(reply(tokens, now));
  };
  for (let i = 0; i < turns - 2; i++) await turn(20_000 + i * 100);
  await turn(90_000);
  // The background run's answers (latency 0) arrive while the agent would be busy.
  await settle();
  now += 1000;
  m.session.appendMessage({ role: 'user', content: 'next step', timestamp: now });
  await m.beforeRequest();
  const t0 = performance.now();
  const out = await m.afterResponse(reply(101_000, now));
  now += 1000;
  m.session.appendMessage({ role: 'user', content: 'go on', timestamp: now });
  await m.beforeRequest();
  const ms = performance.now() - t0;
  if (out.report?.method !== 'soft') throw new Error(`no compaction at the threshold: ${JSON.stringify(out)}`);
  if (background && commits !== 1) throw new Error('the prepared result was not committed');
  m.dispose();
  session.free();
  return ms;
}

async function row(turns, mode, label, note) {
  const times = [];
  for (let i = 0; i < 12; i++) {
    const ms = await sample(turns, mode);
    if (i >= 2) times.push(ms);
  }
  return timesRow(`threshold compaction on the critical path, ${label}`, times, { note });
}

export default async function () {
  const rows = [];
  for (const turns of [40, 400]) {
    const size = `${turns * 2}-message session`;
    rows.push(
      await row(turns, { background: true, latencyMs: 0 }, `background, ${size}`, 'prepared result committed'),
      await row(turns, { background: false, latencyMs: 0 }, `inline, instant summarizer, ${size}`),
      await row(turns, { background: false, latencyMs: 50 }, `inline, 50 ms summarizer, ${size}`),
    );
  }
  return rows;
}
