// Session files made by the explorer tests: a hostile one, a large one, one with a snapcompact
// archive. Every generator is deterministic.

const HEADER = (id, extra = {}) =>
  JSON.stringify({ type: 'session', version: 3, id, timestamp: '2026-01-01T00:00:00.000Z', cwd: '/repo', ...extra });
const ts = (i) => new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();

/** Payloads that would run script if the page inserted them as HTML or followed them. */
export const PAYLOADS = [
  '<img src=x onerror="window.pwned=(window.pwned||0)+1">',
  '<script>window.pwned=(window.pwned||0)+1</script>',
  '<svg onload="window.pwned=(window.pwned||0)+1"><circle r=5 /></svg>',
  '"><iframe src="javascript:parent.pwned=1"></iframe>',
  '<a href="javascript:window.pwned=1">click me</a> https://example.com/?q=<b>x</b>',
  '<style>body{display:none}</style><link rel=stylesheet href="https://example.com/x.css">',
];

const svgScript = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" onload="window.pwned=1"><script>window.pwned=1</script></svg>',
).toString('base64');

/**
 * The hostile session: HTML and script payloads in messages, tool names, tool results, labels,
 * custom types, model names and ids; SVG "images"; a `bigLineBytes` line; a `depth`-deep chain;
 * and a few malformed lines. Returns `{ text, ids }`.
 */
export function hostileSession({ depth = 100_000, bigLineBytes = 5 * 1024 * 1024 } = {}) {
  const lines = [HEADER('<b>hostile</b>', { cwd: PAYLOADS[0] })];
  const ids = {};
  let n = 0;
  let parent = null;
  const add = (entry) => {
    const id = entry.id ?? `h${(n++).toString(36)}`;
    lines.push(JSON.stringify({ ...entry, id, parentId: parent, timestamp: ts(n) }));
    parent = id;
    return id;
  };
  add({ type: 'model_change', model: `anthropic/${PAYLOADS[1]}` });
  ids.user = add({ type: 'message', message: { role: 'user', content: `Please render ${PAYLOADS.join(' ')}` } });
  ids.assistant = add({
    type: 'message',
    message: {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: PAYLOADS[2] },
        { type: 'text', text: `Sure: ${PAYLOADS[0]}` },
        {
          type: 'toolCall',
          id: 'call-1',
          name: PAYLOADS[1],
          arguments: { html: PAYLOADS[0], url: 'javascript:window.pwned=1' },
        },
      ],
      provider: PAYLOADS[3],
      model: PAYLOADS[0],
      usage: { input: 10, output: 10, cacheRead: 0, cacheWrite: 0 },
      stopReason: 'toolUse',
    },
  });
  ids.toolResult = add({
    type: 'message',
    message: {
      role: 'toolResult',
      toolCallId: 'call-1',
      toolName: PAYLOADS[1],
      content: [
        { type: 'text', text: PAYLOADS.join('\n') },
        { type: 'image', mimeType: 'image/svg+xml', data: svgScript },
        { type: 'image', mimeType: 'image/png', data: svgScript },
        { type: 'image', mimeType: 'text/html', data: 'not base64 <script>' },
      ],
      isError: false,
    },
  });
  ids.label = add({ type: 'label', targetId: ids.user, label: PAYLOADS[0] });
  add({ type: 'custom', customType: PAYLOADS[1], data: { html: PAYLOADS[2] } });
  add({ type: 'custom_message', customType: PAYLOADS[0], content: PAYLOADS[4], display: true });
  ids.weirdId = add({
    id: '"><img src=x onerror=window.pwned=1>',
    type: 'message',
    message: { role: 'user', content: 'an entry with a hostile id' },
  });
  // A line of about `bigLineBytes`: one user message.
  const unit = `${PAYLOADS[0]} lorem ipsum dolor sit amet `;
  ids.big = add({
    type: 'message',
    message: { role: 'user', content: unit.repeat(Math.ceil(bigLineBytes / unit.length)) },
  });
  // Malformed lines: listed, not fatal.
  lines.push(`<script>window.pwned=1</script>`);
  lines.push('{"type": "message", "id": "broken"');
  // The deep chain.
  ids.chainStart = parent;
  for (let i = 0; i < depth; i++) {
    const role = i % 2 ? 'assistant' : 'user';
    const message =
      role === 'user'
        ? { role, content: `step ${i} ${i % 1000 === 0 ? PAYLOADS[1] : ''}` }
        : {
            role,
            content: [{ type: 'text', text: `ok ${i}` }],
            usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
            stopReason: 'stop',
          };
    add({ type: 'message', message });
  }
  ids.leaf = parent;
  return { text: `${lines.join('\n')}\n`, ids };
}

/**
 * A large session: `entries` entries with a branch every ~1,000 entries, a branch summary on
 * some of them, and a compaction every ~2,500 entries on the way. Returns `{ text, counts }`.
 */
export function largeSession({ entries = 50_000 } = {}) {
  const lines = [HEADER('large')];
  const ids = [];
  const parents = [];
  let parent = null;
  let compactions = 0;
  let branchSummaries = 0;
  for (let i = 0; i < entries; i++) {
    const id = `b${i.toString(36)}`;
    if (i > 0 && i % 997 === 0) parent = ids[i - 40]; // fork 40 entries back
    let entry;
    if (i > 0 && i % 997 === 1 && i % 3 === 0) {
      entry = {
        type: 'branch_summary',
        fromId: ids[i - 2],
        summary: `Summary of the branch left at ${ids[i - 2]}: tried a different approach.`,
      };
      branchSummaries++;
    } else if (i > 100 && i % 2503 === 0) {
      entry = {
        type: 'compaction',
        summary: `## Goal\nCompacted history up to ${ids[i - 1]}.`,
        firstKeptEntryId: ids[i - 20],
        tokensBefore: 150_000 + i,
      };
      compactions++;
    } else {
      const k = i % 3;
      const message =
        k === 0
          ? { role: 'user', content: `Task ${i}: please look at file ${i % 97}.ts` }
          : k === 1
            ? {
                role: 'assistant',
                content: [
                  { type: 'text', text: `Looking at ${i}.` },
                  { type: 'toolCall', id: `c${i}`, name: 'read', arguments: { path: `src/${i % 97}.ts` } },
                ],
                usage: { input: 100 + (i % 5000), output: 20, cacheRead: 0, cacheWrite: 0 },
                stopReason: 'toolUse',
              }
            : {
                role: 'toolResult',
                toolCallId: `c${i - 1}`,
                toolName: 'read',
                content: [{ type: 'text', text: `export const x${i} = ${i};\n`.repeat(4) }],
                isError: false,
              };
      entry = { type: 'message', message };
    }
    lines.push(JSON.stringify({ ...entry, id, parentId: parent, timestamp: ts(i) }));
    ids.push(id);
    parents.push(parent);
    parent = id;
  }
  const children = new Map();
  for (const p of parents) if (p !== null) children.set(p, (children.get(p) ?? 0) + 1);
  const branchPoints = [...children.values()].filter((c) => c > 1).length;
  return { text: `${lines.join('\n')}\n`, counts: { entries, compactions, branchSummaries, branchPoints } };
}

/**
 * A small session whose last compaction is a snapcompact archive: `frames` are `{data,
 * mimeType, cols, rows, chars}` (snapcompact.md §9.1), rendered by the caller.
 */
export function archiveSession(frames) {
  const lines = [HEADER('archive')];
  let parent = null;
  let n = 0;
  const add = (entry) => {
    const id = `a${n++}`;
    lines.push(JSON.stringify({ ...entry, id, parentId: parent, timestamp: ts(n) }));
    parent = id;
    return id;
  };
  add({ type: 'message', message: { role: 'user', content: 'Start the refactor.' } });
  add({
    type: 'message',
    message: {
      role: 'assistant',
      content: [{ type: 'text', text: 'Done with step one.' }],
      usage: { input: 900, output: 10, cacheRead: 0, cacheWrite: 0 },
      stopReason: 'stop',
    },
  });
  const kept = add({ type: 'message', message: { role: 'user', content: 'Now step two.' } });
  const compaction = add({
    type: 'compaction',
    summary: 'Prior turns are archived under HISTORY below, oldest to newest.\n\nHISTORY\n===================',
    shortSummary: `Archived history onto ${frames.length} snapcompact frame(s)`,
    firstKeptEntryId: kept,
    tokensBefore: 120_000,
    method: 'snapcompact',
    preserveData: { snapcompact: { frames, totalChars: frames.reduce((s, f) => s + f.chars, 0), truncatedChars: 0 } },
  });
  add({
    type: 'message',
    message: {
      role: 'assistant',
      content: [{ type: 'text', text: 'Continuing from the archive.' }],
      usage: { input: 20_000, output: 10, cacheRead: 0, cacheWrite: 0 },
      stopReason: 'stop',
    },
  });
  return { text: `${lines.join('\n')}\n`, compaction };
}
