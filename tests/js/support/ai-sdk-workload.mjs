// The AI SDK workload: a tool-loop agent on a scripted mock model (`ai/test`) whose file reads
// overflow a 32k window within a few steps, kept under it by ctxfold/ai-sdk. Run by
// tests/js/ai-sdk.test.mjs under Node.js and by the worker of tests/js/workerd.test.mjs, each
// passing the `ctxfold/ai-sdk` module it imported (the worker: the installed tarball's).
import { APICallError, generateText, jsonSchema, stepCountIs, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';

export const WINDOW = 32_000;
/** What the scripted provider counts: a token per 4 characters of the prompt's JSON. */
export const tokensOf = (prompt) => Math.ceil(JSON.stringify(prompt).length / 4);

export const usage = (input, output = 40) => ({
  inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: output, text: output, reasoning: 0 },
});

/**
 * The agent's model: reads file after file (one `read` call a step) until `files` were read,
 * then answers. Over the window it refuses the call as Anthropic does.
 */
export function scriptedAgent(files) {
  const seen = [];
  const model = new MockLanguageModelV4({
    provider: 'anthropic.messages',
    modelId: 'claude-sonnet-4-5',
    doGenerate: async ({ prompt }) => {
      const tokens = tokensOf(prompt);
      seen.push({ tokens, prompt });
      if (tokens > WINDOW) {
        throw new APICallError({
          message: `prompt is too long: ${tokens} tokens > ${WINDOW} maximum`,
          url: 'http://127.0.0.1/v1/messages',
          requestBodyValues: {},
          statusCode: 400,
          isRetryable: false,
        });
      }
      const done = prompt.filter((m) => m.role === 'tool').length;
      const reads = prompt.flatMap((m) => (m.role === 'tool' ? m.content : [])).length;
      const n = seen.filter((s) => s.tokens <= WINDOW).length;
      if (n > files) {
        return {
          content: [{ type: 'text', text: `done after ${done} tool messages, ${reads} results` }],
          finishReason: { unified: 'stop', raw: 'end_turn' },
          usage: usage(tokens),
          warnings: [],
        };
      }
      return {
        content: [
          {
            type: 'tool-call',
            toolCallId: `call-${n}`,
            toolName: 'read',
            input: JSON.stringify({ path: `src/file${n}.ts` }),
          },
        ],
        finishReason: { unified: 'tool-calls', raw: 'tool_use' },
        usage: usage(tokens),
        warnings: [],
      };
    },
  });
  return { model, seen };
}

/** The summarizer model: a short deterministic summary of what it was sent. */
export function summarizerModel() {
  const calls = [];
  const model = new MockLanguageModelV4({
    provider: 'anthropic.messages',
    modelId: 'claude-haiku-4-5',
    doGenerate: async ({ prompt }) => {
      calls.push(prompt);
      const files = new Set(JSON.stringify(prompt).match(/src\/file\d+\.ts/g) ?? []);
      return {
        content: [{ type: 'text', text: `## Goal\nRead the files.\n## Progress\nRead ${files.size} files so far.` }],
        finishReason: { unified: 'stop', raw: 'end_turn' },
        usage: usage(1000, 60),
        warnings: [],
      };
    },
  });
  return { model, calls };
}

export const body = (path) =>
  `// ${path}\n${Array.from({ length: 180 }, (_, i) => `export const v${i} = compute(${i}, "${path}"); // line ${i}`).join('\n')}`;

export const readTool = tool({
  description: 'Read a file',
  inputSchema: jsonSchema({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }),
  execute: async ({ path }) => body(path),
});

/** The agent through the middleware of `aiSdk`: what the app got, and what the model was sent. */
export async function toolLoop({ ctxfoldMiddleware }, files = 24, settings = undefined) {
  const agent = scriptedAgent(files);
  const summarizer = summarizerModel();
  const events = [];
  const middleware = ctxfoldMiddleware({
    contextWindow: WINDOW,
    summarize: summarizer.model,
    settings,
    onEvent: (e) => events.push(e),
  });
  const result = await generateText({
    model: wrapLanguageModel({ model: agent.model, middleware }),
    tools: { read: readTool },
    stopWhen: stepCountIs(3 * files),
    system: 'You are a careful engineer.',
    prompt: 'Read every file of src/, one at a time, then say done.',
  });
  const last = agent.seen.at(-1).prompt;
  return {
    text: result.text,
    // What the app holds: every step's output, the tool results included.
    appTokens: tokensOf(result.steps.flatMap((s) => s.content)),
    largestPrompt: Math.max(...agent.seen.map((s) => s.tokens)),
    summarizerCalls: summarizer.calls.length,
    methods: events.filter((e) => e.type === 'auto_compaction_end').map((e) => e.result?.method ?? e.action),
    lastPromptHead: [last[0], last[1]],
    sessionEntries: middleware.conversations[0].session.size,
  };
}
