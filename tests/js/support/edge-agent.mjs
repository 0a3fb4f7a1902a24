// The scripted agent of the edge example's test and benchmark (www/examples/edge/): its turns
// append a user message, ask before-request, answer with a tool call, append a large tool
// result, ask again and answer with text, following `retry` and `continue`. Message sizes grow
// after the fifth turn, so a 16,000-token window sees prunes first, then compactions.

/** A request to `/sessions/<id>/<action>` (a POST of `body` as JSON, else a GET): its JSON answer, or the bytes of `file`. */
export async function callEdge(origin, id, action, body) {
  const res = await fetch(`${origin}/sessions/${encodeURIComponent(id)}/${action}`, {
    method: body === undefined ? 'GET' : 'POST',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (action === 'file') {
    if (res.status !== 200) throw new Error(`${id} ${action}: status ${res.status}`);
    return new Uint8Array(await res.arrayBuffer());
  }
  const json = await res.json();
  if (res.status !== 200) throw new Error(`${id} ${action}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

const WORDS = 'parser token stream buffer index module layout branch summary context '.split(' ');
export const filler = (seed, n) =>
  Array.from({ length: n }, (_, i) => WORDS[(seed * 7 + i * 3) % WORDS.length]).join(' ');

export const reply = (content, stopReason, input) => ({
  role: 'assistant',
  content,
  provider: 'anthropic',
  model: 'claude-sonnet-4-5',
  usage: { input, output: 40, cacheRead: 0, cacheWrite: 0 },
  stopReason,
});

/**
 * One turn of the scripted agent on session `id` of the backend at `origin`: resolves to the
 * number of requests it made.
 */
export async function agentTurn(origin, id, i) {
  let requests = 0;
  const call = (...args) => {
    requests++;
    return callEdge(origin, ...args);
  };
  await call(id, 'append', {
    messages: [{ role: 'user', content: `[${id}] turn ${i}: ${filler(i, i < 5 ? 200 : 1000)}` }],
  });
  let toolDone = false;
  for (let step = 0; step < 12; step++) {
    const { tokens } = await call(id, 'before-request', { systemPrompt: 'You are a test agent.' });
    const answer = toolDone
      ? reply([{ type: 'text', text: `[${id}] done ${i}: ${filler(i + 1, 60)}` }], 'stop', tokens)
      : reply(
          [{ type: 'toolCall', id: `call-${i}-${step}`, name: 'read', arguments: { path: `/src/f${i % 3}.ts` } }],
          'toolUse',
          tokens,
        );
    const { next, continuePrompt } = await call(id, 'after-response', { reply: answer });
    if (next === 'retry') continue;
    if (next === 'continue') {
      await call(id, 'append', { messages: [{ role: 'user', content: continuePrompt }] });
      continue;
    }
    if (toolDone) return requests;
    await call(id, 'append', {
      messages: [
        {
          role: 'toolResult',
          toolCallId: `call-${i}-${step}`,
          toolName: 'read',
          content: [{ type: 'text', text: `[${id}] file ${i}: ${filler(i + 2, 1200)}` }],
          isError: false,
        },
      ],
    });
    toolDone = true;
  }
  throw new Error(`${id}: turn ${i} did not end`);
}
