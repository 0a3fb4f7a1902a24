// A property scenario for the session stores (issue 40, "Tests"): a seeded sequence of appends,
// tool calls with large results, prunes (threshold and stale), shakes, compactions and branch
// moves, saved through `session.changes()` (the package's journal) into a
// `SessionStore` after every step; after each save the store's `open()` must give exactly
// `toBytes()`. Plain JavaScript without Node.js imports: it runs in Chromium workers and in
// workerd Durable Objects as well as in Node.js.

/** A seeded generator (mulberry32): numbers in [0, 1). */
function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = 'alpha beta gamma delta parse index token buffer ünïcode 文字 emoji🙂 "quoted" back\\slash tab\t'.split(
  ' ',
);

/** Whether two byte arrays are equal. */
export function sameBytes(a, b) {
  if (a === null || b === null || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Runs `steps` steps of seed `seed` on a new session saved as `id` into `store`. Resolves to
 * `{ bytes, ops, saves, resets, rewritten, appended, mismatches }`: `mismatches` lists the steps
 * after which `open()` did not give `toBytes()` (the property: it stays empty).
 */
export async function storeScenario(ctxfold, store, { id, seed, steps = 40, now = Date.UTC(2026, 0, 1) }) {
  const random = seeded(seed);
  const pick = (list) => list[Math.floor(random() * list.length)];
  const text = (n) => Array.from({ length: n }, () => pick(WORDS)).join(' ');
  let clock = now;
  const tick = () => (clock += 60_000);
  const session = ctxfold.Session.create({ ids: 'deterministic', cwd: '/repo', now: clock });
  const stats = { ops: {}, saves: 0, resets: 0, rewritten: 0, appended: 0, mismatches: [] };
  let mark;
  const save = async (step) => {
    const c = session.changes(mark ?? null);
    await store.save(id, c);
    mark = c.mark;
    stats.saves++;
    if (c.reset) stats.resets++;
    stats.rewritten += c.rewritten.length;
    stats.appended += c.appended.length;
    if (!sameBytes(await store.open(id), session.toBytes())) stats.mismatches.push(step);
  };
  const assistant = (content, stopReason, input) => ({
    role: 'assistant',
    content,
    provider: 'anthropic',
    model: 'claude-sonnet-4-5',
    usage: { input, output: 30, cacheRead: 0, cacheWrite: 0 },
    stopReason,
    timestamp: tick(),
  });
  let call = 0;
  const ops = {
    chat() {
      session.appendMessage({ role: 'user', content: text(20 + Math.floor(random() * 200)), timestamp: tick() });
      session.appendMessage(assistant([{ type: 'text', text: text(30) }], 'stop', 1000 + call * 500));
    },
    tool() {
      const callId = `call-${++call}`;
      const path = `/repo/src/f${Math.floor(random() * 4)}.ts`;
      session.appendMessage({ role: 'user', content: `read ${path}`, timestamp: tick() });
      session.appendMessage(
        assistant([{ type: 'toolCall', id: callId, name: 'read', arguments: { path } }], 'toolUse', 2000 + call * 800),
      );
      session.appendMessage({
        role: 'toolResult',
        toolCallId: callId,
        toolName: 'read',
        content: [{ type: 'text', text: `\`\`\`ts\n${text(400 + Math.floor(random() * 1500))}\n\`\`\`` }],
        isError: false,
        timestamp: tick(),
      });
    },
    prune() {
      session.prune({ protectTokens: 500, minimumSavings: 0, now: tick() });
    },
    stale() {
      session.pruneStale({ supersedeKey: true, now: tick() });
    },
    async shake() {
      await session.shake({ protectTokens: 200, minSavings: 0, fenceMinTokens: 50, now: tick() });
    },
    async compact() {
      await session.compact({
        summarize: async () => `## Goal\n${text(40)}`,
        settings: { keepRecentTokens: 800 },
        now: tick(),
      });
    },
    branch() {
      const path = session.pathTo(session.leafId);
      if (path.length > 3) session.branch(path[Math.floor(random() * (path.length - 1))]);
    },
  };
  const weights = [
    ['chat', 4],
    ['tool', 5],
    ['prune', 2],
    ['stale', 1],
    ['shake', 1],
    ['compact', 2],
    ['branch', 1],
  ];
  const total = weights.reduce((n, [, w]) => n + w, 0);
  await save(-1);
  for (let step = 0; step < steps; step++) {
    let r = random() * total;
    let name = weights[0][0];
    for (const [op, w] of weights) {
      if (r < w) {
        name = op;
        break;
      }
      r -= w;
    }
    try {
      await ops[name]();
      stats.ops[name] = (stats.ops[name] ?? 0) + 1;
    } catch (err) {
      // Nothing to prune, shake or compact: the session is unchanged, the step counts as tried.
      if (!/^E_/.test(err?.code ?? '')) throw err;
      stats.ops[`${name}:${err.code}`] = (stats.ops[`${name}:${err.code}`] ?? 0) + 1;
    }
    await save(step);
  }
  const bytes = session.toBytes();
  session.free();
  return { bytes, ...stats };
}
