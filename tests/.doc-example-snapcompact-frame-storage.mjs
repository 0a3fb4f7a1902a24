import { Session } from 'ctxfold';

const session = Session.create({ ids: 'deterministic', now: Date.UTC(2026, 0, 1) });
const settings = { keepRecentTokens: 2_000, snapcompact: { frameStorage: 'reference' } };
const turn = (n) => {
  session.appendMessage({ role: 'user', content: `Step ${n}: ${'tidy the parser. '.repeat(60)}` });
  session.appendMessage({ role: 'assistant', content: [{ type: 'text', text: `Step ${n} done. ${'moved a helper. '.repeat(60)}` }], stopReason: 'stop' });
};
for (let n = 1; n <= 120; n++) turn(n);
await session.compact({ strategy: 'snapcompact', model: 'claude-opus-4-7', settings });
for (let n = 121; n <= 130; n++) turn(n);
const second = await session.compact({ strategy: 'snapcompact', model: 'claude-opus-4-7', settings });
const frames = second.compactionEntry.preserveData.snapcompact.frames;
console.log(frames.some((f) => f.dataRef !== undefined), session.archiveFrames(second.entryId).every((f) => f.png !== null)); // → true true
const before = session.toBytes().length;
const back = session.migrateFrames('inline');
console.log(back.bytesBefore === before, back.bytesAfter > before); // → true true
