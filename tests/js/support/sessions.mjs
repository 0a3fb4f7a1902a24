// Small session files written line by line for the JS tests: the header they share, one message
// line, and the branched session that the error and fault tests both load.

import { Session } from 'ctxfold';

/** The header line of every hand-written session (version 3, id `s1`). */
export const header = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}';

/** The usage of every hand-written assistant message. */
export const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 };

/** One message entry as a JSONL line. */
export function line(id, parentId, message, timestamp = '2026-01-01T00:00:01.000Z') {
  return JSON.stringify({ type: 'message', id, parentId, timestamp, message });
}

/** An assistant message entry that answers with `text` and stops. */
export function reply(id, parentId, text, timestamp) {
  return line(id, parentId, {
    role: 'assistant',
    content: [{ type: 'text', text }],
    provider: 'anthropic',
    model: 'm',
    usage,
    stopReason: 'stop',
    timestamp,
  });
}

/**
 * Six turns u0 → a0 … u5 → a5 of about 100 tokens each (the last one short), then a branch off
 * the first turn (a0 → u9 → a9), whose leaf is therefore a9 when the file is loaded.
 */
function branchedSessionText() {
  const lines = [header];
  let parent = null;
  for (let i = 0; i < 6; i++) {
    const long = i < 5;
    lines.push(
      line(`u${i}`, parent, {
        role: 'user',
        content: long ? `question ${i} `.repeat(30) : 'last question',
        timestamp: 1,
      }),
    );
    lines.push(reply(`a${i}`, `u${i}`, long ? `answer ${i} `.repeat(30) : 'last answer', 2));
    parent = `a${i}`;
  }
  lines.push(line('u9', 'a0', { role: 'user', content: 'another idea', timestamp: 3 }));
  lines.push(reply('a9', 'u9', 'sure', 4));
  return `${lines.join('\n')}\n`;
}

/** The branched session's text (see `branchedSessionText`). */
export const BRANCHED_TEXT = branchedSessionText();

/**
 * A fresh session loaded from `input` (the branched session's text or bytes) with its leaf moved
 * to the end of the main branch (a5).
 */
export function loadBranched(input = BRANCHED_TEXT) {
  const s = Session.fromJsonl(input);
  s.branch('a5');
  return s;
}
