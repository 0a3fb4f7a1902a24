// Running the context tools (issue 38 item 3) a model called: `recall_history` and
// `context_status`, answered by the core over the session (its `searchHistory` index, the
// thresholds); this module passes the call and the figures only the host knows (the window,
// its calibrated count of the context) and writes the answer as a tool result.
import { isObject } from '../core/args.js';
import { invalidArgument } from '../core/errors.js';
import type { AssistantMessage, CompactionSettings, JsonValue, ToolResultMessage } from '../core/types.js';
import { type ContextToolName, contextToolDefinitions } from '../formats/tools.js';
import type { Session } from './session.js';

/** The context tools' names, as the core defines the tools (read once). */
let names: ReadonlySet<string> | undefined;

/** What the host knows that the core does not, for `runContextTool`. */
export interface ContextToolFigures {
  /** The model's context window in tokens (`context_status` needs it). */
  contextWindow?: number;
  /** The host's (calibrated) count of the context; without it, the core's estimate. */
  contextTokens?: number;
  /** Budget of a `recall_history` answer in estimated tokens (default 2,000, at least 100). */
  recallTokens?: number;
  /** The reading model, for its `modelThresholds` rule. */
  model?: { provider: string; id: string };
  /** The compaction settings the thresholds come from (default: the defaults). */
  settings?: CompactionSettings;
}

/** True for the name of a context tool. */
export function isContextTool(name: unknown): name is ContextToolName {
  names ??= new Set(contextToolDefinitions().map((d) => d.name));
  return typeof name === 'string' && names.has(name);
}

/** The session's internal runner (core/session.ts `_contextTool`). */
interface ToolRunner {
  _contextTool(name: string, args: string, settings: string | undefined, figures: string): string;
}

/**
 * Runs the context tool `name` with the model's `args` (an object, or the JSON text a provider
 * sends) on `session`: `recall_history` answers the best matching stored entries as text
 * within `figures.recallTokens`, `context_status` a JSON text of the context's use. Throws
 * `E_INVALID_ARGUMENT` for another name, bad arguments (the message says what the model should
 * send) or bad figures, `E_SETTINGS` for bad settings.
 */
export function runContextTool(
  session: Session,
  name: string,
  args: JsonValue | string | undefined,
  figures?: ContextToolFigures,
): string {
  const runner = session as unknown as Partial<ToolRunner>;
  if (typeof runner._contextTool !== 'function') throw invalidArgument('runContextTool() takes a Session');
  if (typeof name !== 'string') throw invalidArgument('runContextTool(): the tool name must be a string');
  const f: unknown = figures ?? {};
  if (!isObject(f)) throw invalidArgument('runContextTool(): figures must be an object');
  const { settings, model, ...rest } = f as ContextToolFigures;
  const core: Record<string, unknown> = { ...rest };
  if (model !== undefined) {
    if (!isObject(model)) throw invalidArgument('runContextTool(): figures.model must be {provider, id}');
    core.provider = model.provider;
    core.model = model.id;
  }
  const json = typeof args === 'string' ? args : JSON.stringify(args ?? null);
  return runner._contextTool(
    name,
    json,
    settings === undefined ? undefined : JSON.stringify(settings),
    JSON.stringify(core),
  );
}

/**
 * Answers the context-tool calls of `reply` (an assistant message) on `session`: appends one
 * tool result per call, in call order (`isError` with the message when the arguments were
 * bad), and returns the ids of the calls it answered. Other calls are left to the host.
 */
export function answerContextToolCalls(
  session: Session,
  reply: AssistantMessage,
  figures: ContextToolFigures,
  now: number,
): string[] {
  const answered: string[] = [];
  const content: unknown = reply.content;
  if (!Array.isArray(content)) return answered;
  for (const block of content) {
    if (!isObject(block) || block.type !== 'toolCall' || !isContextTool(block.name)) continue;
    const id = block.id;
    if (typeof id !== 'string') continue;
    let text: string;
    let isError = false;
    try {
      text = runContextTool(session, block.name, (block.arguments ?? {}) as JsonValue, figures);
    } catch (err) {
      if (!isObject(err) || err.code !== 'E_INVALID_ARGUMENT') throw err;
      text = String(err.message);
      isError = true;
    }
    const result: ToolResultMessage = {
      role: 'toolResult',
      toolCallId: id,
      toolName: block.name,
      content: [{ type: 'text', text }],
      isError,
      timestamp: now,
    };
    session.appendMessage(result, { now });
    answered.push(id);
  }
  return answered;
}
