// How a session file grows with snapcompact compactions (issue 43 item 5), with the frames
// stored inline (the reference's format, the default) and by reference
// (`settings.snapcompact.frameStorage: 'reference'`), and what `migrateFrames` makes of the
// inline file. Deterministic: the same text (the demo's seeded generator) and ids every run.
//
//   node tests/bench/archive-growth.mjs [--rounds 40] [--turns 6] [--window 200000] [--json FILE] [--out DIR]
//
// Each round appends `turns` user/assistant turns with a tool call and a 1,500–6,000 token
// tool result, then compacts with snapcompact for claude-opus-4-7 (anthropic), keeping 20,000
// recent tokens. Prints the file size after every 10th compaction for both storages.
import { writeFileSync } from 'node:fs';
import { Session } from 'ctxfold';
import { seededRandom, TextSource } from '../../www/sim-agent.js';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const ROUNDS = Number(arg('rounds', 40));
const TURNS = Number(arg('turns', 6));
const WINDOW = Number(arg('window', 200_000));
const JSON_OUT = arg('json', undefined);
const OUT = arg('out', undefined); // a directory: the two session files are written there
const MODEL = {
  id: 'claude-opus-4-7',
  api: 'anthropic-messages',
  provider: 'anthropic',
  contextWindow: WINDOW,
  input: ['text', 'image'],
};

function run(frameStorage) {
  const random = seededRandom(43);
  const text = new TextSource(seededRandom(4343));
  const session = Session.create({ ids: 'deterministic', id: 'growth', cwd: '/w', now: Date.UTC(2026, 0, 1) });
  let now = Date.UTC(2026, 0, 1);
  let call = 0;
  const sizes = [];
  const started = performance.now();
  for (let round = 1; round <= ROUNDS; round++) {
    for (let t = 0; t < TURNS; t++) {
      now += 60_000;
      const id = `call-${++call}`;
      session.appendMessage({ role: 'user', content: text.take(200), timestamp: now }, { now });
      session.appendMessage(
        {
          role: 'assistant',
          content: [
            { type: 'text', text: text.take(300) },
            { type: 'toolCall', id, name: 'read', arguments: { path: `src/mod_${call % 37}.ts` } },
          ],
          api: MODEL.api,
          provider: MODEL.provider,
          model: MODEL.id,
          usage: { input: 1000, output: 300, cacheRead: 0, cacheWrite: 0 },
          stopReason: 'toolUse',
          timestamp: now,
        },
        { now },
      );
      const tokens = 1_500 + Math.floor(random() * 4_500);
      session.appendMessage(
        {
          role: 'toolResult',
          toolCallId: id,
          toolName: 'read',
          content: [{ type: 'text', text: text.take(tokens) }],
          isError: false,
          timestamp: now,
        },
        { now },
      );
    }
    const plan = session.planCompaction(
      { strategy: 'snapcompact', keepRecentTokens: 20_000, snapcompact: { frameStorage } },
      { model: MODEL.id, provider: MODEL.provider, contextWindow: WINDOW },
    );
    try {
      session.commitCompaction(plan, { now });
    } finally {
      plan.free();
    }
    sizes.push(session.toBytes().length);
  }
  const seconds = (performance.now() - started) / 1_000;
  return { session, sizes, seconds };
}

const inline = run('inline');
const byRef = run('reference');
const migrated = Session.fromJsonl(inline.session.toBytes(), { ids: 'deterministic' });
const migration = migrated.migrateFrames('reference');
const identical = Buffer.compare(Buffer.from(migrated.toBytes()), Buffer.from(byRef.session.toBytes())) === 0;
const back = migrated.migrateFrames('inline');
const roundTrip = Buffer.compare(Buffer.from(migrated.toBytes()), Buffer.from(inline.session.toBytes())) === 0;

// What the newest compaction entry of the inline run holds.
const lines = new TextDecoder().decode(inline.session.toBytes()).trimEnd().split('\n');
const lastEntry = JSON.parse(lines.findLast((l) => l.includes('"type":"compaction"')));
const archive = lastEntry.preserveData.snapcompact;
const frameBytes = archive.frames.reduce((n, f) => n + f.data.length, 0);

const mb = (n) => `${(n / 1e6).toFixed(2)} MB`;
console.log(
  `snapcompact archive growth: ${ROUNDS} compactions, ${TURNS} tool turns apart, ${WINDOW} window, ${MODEL.id}`,
);
console.log('compactions  inline      by reference  saved');
for (let k = 9; k < ROUNDS; k += 10) {
  const [a, b] = [inline.sizes[k], byRef.sizes[k]];
  console.log(
    `${String(k + 1).padStart(11)}  ${mb(a).padStart(10)}  ${mb(b).padStart(12)}  ${(100 * (1 - b / a)).toFixed(1)} %`,
  );
}
const last = ROUNDS - 1;
const perCompaction = (s) => (s[last] - s[Math.floor(last / 2)]) / (last - Math.floor(last / 2));
console.log(
  `bytes per compaction over the second half: inline ${mb(perCompaction(inline.sizes))}, by reference ${mb(perCompaction(byRef.sizes))}`,
);
console.log(
  `migrateFrames('reference') of the inline file: ${mb(migration.bytesBefore)} → ${mb(migration.bytesAfter)}, ${migration.frames} frames in ${migration.entries} entries; same bytes as the by-reference run: ${identical}`,
);
console.log(`migrateFrames('inline') back: ${back.frames} frames; same bytes as the inline run: ${roundTrip}`);
console.log(
  `the newest entry: ${archive.frames.length} frames of ${mb(frameBytes)} base64, \`text\` ${mb(archive.text?.length ?? 0)}, the line ${mb(
    lines.at(
      -1 -
        lines
          .slice()
          .reverse()
          .findIndex((l) => l.includes('"type":"compaction"')),
    ).length,
  )}`,
);
console.log(`run time: inline ${inline.seconds.toFixed(1)} s, by reference ${byRef.seconds.toFixed(1)} s`);
if (JSON_OUT)
  writeFileSync(
    JSON_OUT,
    JSON.stringify(
      {
        rounds: ROUNDS,
        turns: TURNS,
        window: WINDOW,
        inline: inline.sizes,
        reference: byRef.sizes,
        migration,
        identical,
        roundTrip,
      },
      null,
      1,
    ),
  );
if (OUT) {
  writeFileSync(`${OUT}/growth-inline.jsonl`, inline.session.toBytes());
  writeFileSync(`${OUT}/growth-reference.jsonl`, byRef.session.toBytes());
}
