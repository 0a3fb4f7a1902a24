// The session and the work that every runtime test (Node ESM / CommonJS consumers of the packed
// tarball, the esbuild browser app in Chromium, the workerd worker) runs on the installed package.
// Each runtime's answer is compared with the one this process gets from the package, so the same
// numbers must come out of every entry (node.js, web.js, workerd.js) and every loader.
//
// `workload` must stay self-contained (no imports, no closure over this module): the CommonJS
// consumer embeds its source text with `workload.toString()`.

/** A fixed clock for prune's `now`: results do not depend on the time of the run. */
export const NOW = Date.UTC(2026, 0, 2);

/**
 * A deterministic session (JSONL text): user turns that read files with large outputs, a
 * re-read that supersedes an older read, a useless `ls`, assistant usage, a little non-ASCII.
 */
export function sessionJsonl({ turns = 8, lineRepeat = 400 } = {}) {
  const lines = [
    JSON.stringify({
      type: 'session',
      version: 3,
      id: 'runtime-1',
      timestamp: '2026-01-01T00:00:00.000Z',
      cwd: '/repo',
    }),
  ];
  let parent = null;
  let n = 0;
  const at = (i) => new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();
  const push = (message) => {
    const id = `r${++n}`;
    lines.push(JSON.stringify({ type: 'message', id, parentId: parent, timestamp: at(n), message }));
    parent = id;
    return id;
  };
  const files = [
    'src/lib.rs',
    'src/session.rs',
    'src/prune.rs',
    'src/lib.rs',
    'README.md',
    'src/wasm.rs',
    'src/tree.rs',
    'Cargo.toml',
  ];
  for (let i = 0; i < turns; i++) {
    const file = files[i % files.length];
    push({
      role: 'user',
      content: `Turn ${i}: explain ${file} — and check the café’s “naïve” parts.`,
      timestamp: n * 1000,
    });
    push({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: `I should read ${file} first.` },
        { type: 'toolCall', id: `call-${i}`, name: 'read', arguments: { path: file } },
      ],
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      api: 'anthropic-messages',
      usage: { input: 1000 + i * 3000, output: 50, cacheRead: 0, cacheWrite: 0 },
      stopReason: 'toolUse',
      timestamp: n * 1000,
    });
    const body = Array.from(
      { length: lineRepeat },
      (_, k) => `${String(k + 1).padStart(4)}| fn item_${i}_${k}() -> u32 { ${k} * ${i + 1} }`,
    ).join('\n');
    push({
      role: 'toolResult',
      toolCallId: `call-${i}`,
      toolName: 'read',
      content: [{ type: 'text', text: body }],
      isError: false,
      timestamp: n * 1000,
    });
    push({
      role: 'assistant',
      content: [{ type: 'text', text: `${file} defines ${lineRepeat} small functions; item_${i}_0 returns 0.` }],
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      api: 'anthropic-messages',
      usage: { input: 2000 + i * 3000, output: 80, cacheRead: 0, cacheWrite: 0 },
      stopReason: 'stop',
      timestamp: n * 1000,
    });
  }
  push({
    role: 'assistant',
    content: [{ type: 'toolCall', id: 'ls', name: 'bash', arguments: { command: 'ls' } }],
    stopReason: 'toolUse',
    timestamp: n * 1000,
  });
  push({
    role: 'toolResult',
    toolCallId: 'ls',
    toolName: 'bash',
    content: [{ type: 'text', text: 'nothing new here '.repeat(40) }],
    isError: false,
    useless: true,
    timestamp: n * 1000,
  });
  push({ role: 'user', content: 'Summarize what you read.', timestamp: n * 1000 });
  return `${lines.join('\n')}\n`;
}

/**
 * Loads `input` (JSONL text or bytes) with the package namespace `ctxfold`, builds the context,
 * runs the stale pass and a threshold prune, serializes the pruned conversation and renders it
 * to PNG frames. Returns plain JSON plus `timings` in ms of the host's clock; `onFrames`, if
 * given, receives the frames themselves (with their PNG bytes).
 */
export function workload(ctxfold, input, { now, shape = '8x13-bw', frameSize = 512, maxFrames = 6, onFrames }) {
  const clock = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());
  const t0 = clock();
  const session = ctxfold.Session.fromJsonl(input);
  try {
    const context = session.buildContext();
    const before = session.contextTokens();
    // Inline imaging of the unpruned request for a Gemini reader: its base64 frames must be the
    // same bytes in every runtime (Uint8Array.prototype.toBase64 or btoa).
    const inlined = new ctxfold.InlineImager({ toolResults: true }).transform({
      messages: session.toLlmMessages(),
      model: { provider: 'google', id: 'gemini-2.5-pro', api: 'google-generative-ai', input: ['text', 'image'] },
      now,
    });
    let hash = 0x811c9dc5;
    for (const m of inlined.messages) {
      if (m.role !== 'toolResult') continue;
      for (const p of m.content) {
        if (p.type !== 'image') continue;
        for (let i = 0; i < p.data.length; i++) hash = Math.imul(hash ^ p.data.charCodeAt(i), 0x01000193) >>> 0;
      }
    }
    const stale = session.pruneStale({ now, idleFlushMs: 24 * 3600 * 1000 });
    const threshold = session.prune({ now, protectTokens: 4_000, minimumSavings: 1_000 });
    const after = session.contextTokens();
    const t1 = clock();
    const text = ctxfold.serializeConversation(session.toLlmMessages());
    const frames = ctxfold.renderFrames(text, { shape, frameSize, maxFrames });
    const t2 = clock();
    onFrames?.(frames);
    // Shake (no LLM): what pruning left of the tool output, elided with an artifact link.
    const plan = session.planShake({ preset: 'rescue' });
    const shaken = session.applyShake(plan, { artifactId: 'A1', now });
    const png = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
    return {
      version: ctxfold.version(),
      entries: session.size,
      contextMessages: context.messages.length,
      tokensBefore: before.tokens,
      estimatedBefore: before.estimatedTokens,
      stale: {
        prunedCount: stale.prunedCount,
        tokensSaved: stale.tokensSaved,
        reasons: stale.pruned.map((p) => p.reason),
      },
      threshold: {
        prunedCount: threshold.prunedCount,
        tokensSaved: threshold.tokensSaved,
        reasons: threshold.pruned.map((p) => p.reason),
      },
      estimatedAfter: after.estimatedTokens,
      shake: {
        regions: plan.regions.map((r) => `${r.kind} ${r.entryId} ${r.tokens}`),
        artifactChars: plan.artifactText.length,
        toolResultsDropped: shaken.toolResultsDropped,
        tokensFreed: shaken.tokensFreed,
      },
      inline: {
        toolResults: inlined.report.toolResults.map((r) => `${r.toolCallId} ${r.frames} ${r.savedTokens}`),
        framesHash: hash,
      },
      serializedChars: text.length,
      frameCount: ctxfold.frameCount(text, { shape, frameSize }),
      frames: frames.map((f) => ({
        width: f.width,
        height: f.height,
        chars: f.chars,
        pngBytes: f.png.byteLength,
        isPng: png.every((b, i) => f.png[i] === b),
      })),
      frameTokens: ctxfold.frameTokens('anthropic-messages', frames[0]?.width ?? 0),
      timings: { pruneMs: t1 - t0, renderMs: t2 - t1 },
    };
  } finally {
    session.free();
  }
}

/** The answer without its timings, for comparisons across runtimes. */
export function withoutTimings({ timings, ...rest }) {
  return rest;
}

/**
 * The provider-native lanes of the `remote` method (spec: compaction §13) through `compact()`:
 * OpenAI V1 (`/responses/compact`), V2 (a streamed Responses answer, read from a
 * ReadableStream) and Anthropic server compaction, each against a fake provider given as the
 * `fetch` option (the runtime's own Request / Response / ReadableStream carry the bytes), then
 * the replay of each record for its reader. Self-contained like `workload`: the runtimes run
 * its source.
 */
export async function nativeWorkload(ctxfold, input, { now }) {
  const { Session } = ctxfold;
  const calls = [];
  const sse = (events) => {
    const text = events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('');
    const bytes = new TextEncoder().encode(text);
    return new ReadableStream({
      start(c) {
        for (let i = 0; i < bytes.length; i += 61) c.enqueue(bytes.slice(i, i + 61));
        c.close();
      },
    });
  };
  const fakeFetch = async (url, init) => {
    const path = new URL(url).pathname;
    const body = JSON.parse(init.body);
    calls.push({ path, model: body.model, items: (body.input ?? body.messages).length });
    if (path === '/v1/responses/compact') {
      return Response.json({ output: [{ type: 'compaction', encrypted_content: 'ENC-V1' }] });
    }
    if (path === '/v1/responses') {
      const item = { type: 'compaction', encrypted_content: 'ENC-V2' };
      const usage = { input_tokens: 4321, output_tokens: 9, total_tokens: 4330 };
      return new Response(
        sse([
          { type: 'response.created' },
          { type: 'response.output_item.done', item },
          { type: 'response.completed', response: { usage } },
        ]),
        { headers: { 'content-type': 'text/event-stream' } },
      );
    }
    if (path === '/v1/messages') {
      const block = { type: 'compaction', content: 'The user read eight files.', encrypted_content: 'SIG==' };
      return Response.json({
        type: 'message',
        content: [block],
        stop_reason: 'compaction',
        usage: { input_tokens: 60000 },
      });
    }
    return new Response('not found', { status: 404 });
  };
  const openai = (remoteCompaction) => ({
    id: 'gpt-5',
    provider: 'openai',
    api: 'openai-responses',
    baseUrl: 'http://provider.test/v1',
    contextWindow: 200_000,
    input: ['text'],
    remoteCompaction,
  });
  const claude = {
    id: 'claude-opus-4-6',
    provider: 'anthropic',
    api: 'anthropic-messages',
    baseUrl: 'http://provider.test',
    contextWindow: 200_000,
    input: ['text'],
    // The threshold lane (compact-2026-01-12): this model would try on-demand compaction first,
    // which tests/js/native-ondemand.test.mjs covers.
    remoteCompaction: { enabled: true, onDemand: false },
  };
  const lanes = [
    ['v1', openai(undefined)],
    ['v2', openai({ v2StreamingEnabled: true })],
    ['anthropic', claude],
  ];
  const out = {};
  for (const [lane, model] of lanes) {
    const s = Session.fromJsonl(input);
    const r = await s.compact({
      model,
      fetch: fakeFetch,
      credentials: () => Promise.resolve({ authorization: 'Bearer test' }),
      settings: { keepRecentTokens: 2000, methodOrder: ['remote'] },
      now,
    });
    const entry = r.compactionEntry;
    const record = entry.preserveData.openaiRemoteCompaction ?? entry.preserveData.anthropicCompaction;
    const first = s.buildContext({ model }).messages[0];
    out[lane] = {
      method: r.method,
      summary: entry.summary.split('\n')[0],
      record,
      replayed: first.providerPayload?.type ?? null,
      jsonlBytes: s.toJsonl().length,
    };
    s.free();
  }
  out.calls = calls;
  return out;
}
