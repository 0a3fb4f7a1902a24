// Message formats (issue 21, "Speed"): `Session.fromMessages` + `toMessages` of a
// 2,000-message, ~10 MB OpenAI Chat Completions history (a tool loop: user turns, assistant
// tool calls, tool results of ~10 KB with a few non-ASCII characters), in wasm under Node.js. The target:
// ≤ 50 ms for the two together.
import { Session } from 'ctxfold';
import { measure } from './lib.mjs';

/** A deterministic chat history of `n` messages, ~10 KB per tool result. */
function chatHistory(n) {
  const out = [{ role: 'system', content: 'You are a coding agent. Read before you edit.' }];
  const line = (i, k) =>
    `export function step${i}_${k}(input) { return transform(input, ${i}, ${k}); } // ünïcode ${k}\n`;
  let call = 0;
  while (out.length < n) {
    const i = out.length;
    if (i % 20 === 1) {
      out.push({ role: 'user', content: `Please fix test ${i}: it fails with TypeError at line ${i}.` });
      continue;
    }
    const id = `call_${(call++).toString(36).padStart(8, '0')}`;
    out.push({
      role: 'assistant',
      content: i % 3 === 0 ? `Reading file ${i} to find the cause.` : null,
      tool_calls: [
        {
          id,
          type: 'function',
          function: { name: 'read', arguments: JSON.stringify({ path: `src/m${i}.ts`, offset: i }) },
        },
      ],
    });
    if (out.length >= n) break;
    const text = Array.from({ length: 105 }, (_, k) => line(i, k)).join('');
    out.push({ role: 'tool', tool_call_id: id, content: text });
  }
  return out.slice(0, n);
}

export default async function () {
  const history = chatHistory(2000);
  const mb = (JSON.stringify(history).length / 1e6).toFixed(1);
  const rows = [];
  rows.push(
    await measure(
      'fromMessages + toMessages, openai-chat',
      () => {
        const s = Session.fromMessages(history, { format: 'openai-chat' });
        s.toMessages({ format: 'openai-chat' });
        s.free();
      },
      { samples: 15, warmup: 3, note: `2,000 messages, ${mb} MB of JSON` },
    ),
  );
  const session = Session.fromMessages(history, { format: 'openai-chat' });
  rows.push(
    await measure('fromMessages, openai-chat', () => Session.fromMessages(history, { format: 'openai-chat' }).free(), {
      samples: 15,
      warmup: 3,
    }),
  );
  rows.push(
    await measure('toMessages, openai-chat', () => session.toMessages({ format: 'openai-chat' }), {
      samples: 15,
      warmup: 3,
    }),
  );
  rows.push(await measure('toMessages, pi (toLlmMessages)', () => session.toMessages(), { samples: 15, warmup: 3 }));
  return rows;
}
