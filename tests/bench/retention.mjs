// Retention of exact facts through compaction (issue 38 item 5): generated sessions with planted
// identifiers, compacted 1, 2 and 3 times in a row with each method, the LLM summary played by a
// stub that keeps only a short paraphrase (the worst case for a summary).
//
//   node tests/bench/retention.mjs [--seeds 3] [--rounds 3] [--turns 12] [--groups 1] [--json FILE]
//
// Each round plants facts of three kinds in turns that the next compaction drops:
//   user      identifiers the user states (a port, an issue number, a quoted flag, a branch name)
//   tool      identifiers seen only in tool output (a path, an error code and its line, a commit
//             SHA, a URL)
//   assistant what the assistant decides (a version it pins; a symbol it renames, in the
//             tool call's arguments)
// (`--groups` times a round, each group followed by its share of the filler: 10 facts a group),
// then `--turns` turns of filler (the demo's generated prose, itself full of paths and
// identifiers that compete for the anchor budget; the user's filler turns are plain requests),
// then compacts. After each compaction:
//   closed book  the share of every fact planted so far whose text the model's view (the LLM
//                messages of the session, text parts only: frames do not count) holds verbatim,
//                or, for a path, lists in a `<files>` block or snapcompact's FILES section
//                (grouped by folder there)
//   open book    the share that one `recall_history` call (`runContextTool`, the tool the model
//                calls: `{query: fact, limit: 5}`, its default 2,000-token answer) returns in a
//                result line, in the session and those it handed off from
//   anchors      the estimated tokens of the `<anchors>` block in the view (chars / 4)
// Methods: soft (LLM summary), remote (a local endpoint), snapcompact (frames; vision model),
// handoff (a new session each time). Deterministic: seeded text and ids. The assistant turns
// report no usage (zeros): a made-up figure would read as the provider's text rate, and
// snapcompact's reduction test weighs the archive at that rate.
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { runContextTool, Session } from 'ctxfold';
import { seededRandom, TextSource } from '../../www/sim-agent.js';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const SEEDS = Number(arg('seeds', 3));
const ROUNDS = Number(arg('rounds', 3));
const TURNS = Number(arg('turns', 12));
const GROUPS = Number(arg('groups', 1));
const JSON_OUT = arg('json', undefined);
const WINDOW = 200_000;
const KEEP = 6_000;
const PARAPHRASE = 'We worked on the service: fixed a deployment problem and tidied some code.';
const MODEL = {
  id: 'claude-opus-4-7',
  api: 'anthropic-messages',
  provider: 'anthropic',
  contextWindow: WINDOW,
  input: ['text', 'image'],
};

const hex = (random, n) => Array.from({ length: n }, () => '0123456789abcdef'[Math.floor(random() * 16)]).join('');
const int = (random, lo, hi) => lo + Math.floor(random() * (hi - lo + 1));

/** One round's facts and the messages that plant them. */
function plant(random, round, now, call) {
  const facts = [];
  const fact = (kind, text) => {
    facts.push({ kind, text, round });
    return text;
  };
  const port = fact('user', String(int(random, 20_000, 65_000)));
  const issue = fact('user', `#${int(random, 1_000, 99_999)}`);
  const flag = fact('user', `--retry-budget-${hex(random, 4)}`);
  const branch = fact('user', `feature/r${round}-${hex(random, 6)}`);
  const file = fact('tool', `src/service_${hex(random, 4)}/handler.rs`);
  const code = fact('tool', `E${int(random, 1000, 9999)}`);
  const sha = fact('tool', hex(random, 40));
  const url = fact('tool', `https://ci.example.com/runs/${int(random, 100_000, 999_999)}`);
  const version = fact('assistant', `1.${int(random, 10, 99)}.${int(random, 100, 999)}`);
  const symbol = fact('assistant', `parse_frame_${hex(random, 5)}`);
  const id = `call-r${round}-${call}`;
  const t = now;
  const messages = [
    {
      role: 'user',
      content: `The deploy fails on port ${port}; it is tracked as ${issue}. Run it with "${flag}" and push to ${branch}.`,
      timestamp: t,
    },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: `I will pin the client to ${version} and rename the parser.` },
        { type: 'toolCall', id, name: 'edit', arguments: { path: file, symbol } },
      ],
      api: MODEL.api,
      provider: MODEL.provider,
      model: MODEL.id,
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      stopReason: 'toolUse',
      timestamp: t,
    },
    {
      role: 'toolResult',
      toolCallId: id,
      toolName: 'edit',
      content: [
        {
          type: 'text',
          text: `edited ${file}\nerror[${code}]: connection reset by peer at commit ${sha}\nsee ${url}`,
        },
      ],
      isError: false,
      timestamp: t,
    },
  ];
  return { facts, messages };
}

// What a user says between the planted turns: plain requests (the identifiers a user states are
// the planted ones; the tool output and the assistant's text carry plenty of others).
const USER_ASKS = [
  'Carry on with the next step.',
  'Looks good, keep going.',
  'Can you check the remaining modules as well?',
  'Please read the next file and tell me what it does.',
  'Fine. Now tidy up what you touched.',
  'What else is left before we can merge this?',
];

function filler(session, text, random, now, round, turns) {
  for (let t = 0; t < turns; t++) {
    const id = `fill-r${round}-${t}`;
    const ask = USER_ASKS[Math.floor(random() * USER_ASKS.length)];
    session.appendMessage({ role: 'user', content: ask, timestamp: now }, { now });
    session.appendMessage(
      {
        role: 'assistant',
        content: [
          { type: 'text', text: text.take(200) },
          { type: 'toolCall', id, name: 'read', arguments: { path: `src/mod_${t % 37}.ts` } },
        ],
        api: MODEL.api,
        provider: MODEL.provider,
        model: MODEL.id,
        usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        stopReason: 'toolUse',
        timestamp: now,
      },
      { now },
    );
    session.appendMessage(
      {
        role: 'toolResult',
        toolCallId: id,
        toolName: 'read',
        content: [{ type: 'text', text: text.take(600 + Math.floor(random() * 1_400)) }],
        isError: false,
        timestamp: now,
      },
      { now },
    );
  }
}

/** The text the model reads: every text part of the LLM messages (frames do not count). */
function viewText(session) {
  const parts = [];
  const walk = (v) => {
    if (typeof v === 'string') parts.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      if (v.type === 'image') return;
      for (const [k, x] of Object.entries(v)) if (k !== 'data') walk(x);
    }
  };
  walk(session.toLlmMessages());
  return parts.join('\n');
}

/**
 * The paths a `<files>` block lists: grouped by folder, a heading per level (`# src/`, then
 * `## service/` inside it), then `name.rs (Write)` lines.
 */
function listedPaths(view) {
  const paths = new Set();
  // The LLM summary's `<files>` block, and the FILES section of snapcompact's reading guide.
  const blocks = [
    ...view.matchAll(/<files>\n([\s\S]*?)<\/files>/g),
    ...view.matchAll(/\nFILES\n=+\n([\s\S]*?)(?=\n<|\n\n|\nHISTORY\n|$)/g),
  ];
  for (const [, body] of blocks) {
    const dirs = [];
    for (const line of body.split('\n')) {
      const heading = /^(#+) (.*)$/.exec(line);
      if (heading) {
        dirs.length = heading[1].length - 1;
        dirs.push(heading[2]);
      } else if (line.trim() !== '') paths.add(dirs.join('') + line.replace(/ \([^)]*\)$/, ''));
    }
  }
  return paths;
}

async function remoteServer() {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ summary: PARAPHRASE }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${server.address().port}/summarize` };
}

async function run(method, seed, endpoint) {
  const random = seededRandom(seed);
  const text = new TextSource(seededRandom(seed * 7 + 1));
  let session = Session.create({
    ids: 'deterministic',
    id: `ret-${method}-${seed}`,
    cwd: '/w',
    now: Date.UTC(2026, 0, 1),
  });
  const chain = [session];
  let now = Date.UTC(2026, 0, 1);
  const facts = [];
  const rows = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (let g = 0; g < GROUPS; g++) {
      now += 60_000;
      const planted = plant(random, round, now, `${round}-${g}`);
      for (const m of planted.messages) session.appendMessage(m, { now });
      facts.push(...planted.facts);
      filler(session, text, random, now, `${round}-${g}`, Math.max(1, Math.round(TURNS / GROUPS)));
    }
    now += 60_000;
    const options = {
      settings: { keepRecentTokens: KEEP },
      model: MODEL,
      now,
      summarize: async () => PARAPHRASE,
    };
    let result;
    if (method === 'soft') result = await session.compact({ ...options, methods: ['soft'] });
    else if (method === 'remote')
      result = await session.compact({ ...options, methods: ['remote'], remoteEndpoint: endpoint });
    else if (method === 'snapcompact') result = await session.compact({ ...options, methods: ['snapcompact'] });
    else if (method === 'handoff') {
      result = await session.compact({
        ...options,
        strategy: 'handoff',
        handoffSessionId: `ret-handoff-${seed}-${round}`,
      });
      session = result.session;
      chain.push(session);
    }
    if (result?.method !== method)
      throw new Error(`${method} round ${round}: ran ${result?.method ?? JSON.stringify(result)}`);
    const view = viewText(session);
    const listed = listedPaths(view);
    const inView = (f) => view.includes(f.text) || listed.has(f.text);
    const closed = facts.filter(inView);
    // The answer's first line repeats the query: only its result lines count.
    const recalled = (s, f) =>
      runContextTool(s, 'recall_history', { query: f.text, limit: 5 })
        .split('\n')
        .slice(1)
        .some((l) => l.includes(f.text));
    const open = facts.filter((f) => chain.some((s) => recalled(s, f)));
    const block = /<anchors>[\s\S]*?<\/anchors>/.exec(view)?.[0] ?? '';
    const byKind = {};
    for (const kind of ['user', 'tool', 'assistant']) {
      const all = facts.filter((f) => f.kind === kind);
      byKind[kind] = `${closed.filter((f) => f.kind === kind).length}/${all.length}`;
    }
    rows.push({
      method,
      seed,
      round,
      facts: facts.length,
      closed: closed.length,
      open: open.length,
      anchorTokens: Math.ceil(block.length / 4),
      byKind,
      lostFacts: facts.filter((f) => !inView(f)).map((f) => `${f.kind}:${f.text}`),
      reportLost: result.report?.lost?.length ?? null,
    });
  }
  return rows;
}

const { server, url } = await remoteServer();
const all = [];
try {
  for (const method of ['soft', 'remote', 'snapcompact', 'handoff']) {
    for (let seed = 1; seed <= SEEDS; seed++) all.push(...(await run(method, seed, url)));
  }
} finally {
  server.close();
}

const pct = (a, b) => (b === 0 ? '—' : `${((100 * a) / b).toFixed(1)} %`);
console.log(
  'method       round  closed book        open book          anchor tokens (max)  closed by kind (user/tool/assistant)',
);
for (const method of [...new Set(all.map((r) => r.method))]) {
  for (let round = 1; round <= ROUNDS; round++) {
    const rs = all.filter((r) => r.method === method && r.round === round);
    const facts = rs.reduce((a, r) => a + r.facts, 0);
    const closed = rs.reduce((a, r) => a + r.closed, 0);
    const open = rs.reduce((a, r) => a + r.open, 0);
    const anchors = Math.max(...rs.map((r) => r.anchorTokens));
    const kinds = ['user', 'tool', 'assistant']
      .map((k) => {
        const [c, n] = rs
          .map((r) => r.byKind[k].split('/').map(Number))
          .reduce(([a, b], [x, y]) => [a + x, b + y], [0, 0]);
        return pct(c, n);
      })
      .join(' / ');
    console.log(
      `${method.padEnd(12)} ${String(round).padEnd(6)} ${pct(closed, facts).padEnd(18)} ${pct(open, facts).padEnd(18)} ${String(anchors).padEnd(20)} ${kinds}`,
    );
  }
}
const missed = all.filter((r) => r.round === ROUNDS && r.lostFacts.length > 0);
for (const r of missed.slice(0, 8))
  console.log(`  ${r.method} seed ${r.seed}: not in view after ${ROUNDS}: ${r.lostFacts.join(' ')}`);
if (JSON_OUT) writeFileSync(JSON_OUT, `${JSON.stringify(all, null, 2)}\n`);
