// The context tools (issue 38 item 3) as AI SDK tools with `execute`: `generateText` /
// `streamText` run them on the conversation's session through its Maintainer (the model's
// window, the calibrated tokens). The definitions are the core's, in formats/tools.ts.
import { invalidArgument } from '../core/errors.js';
import type { JsonValue } from '../core/types.js';
import { type AiSdkContextTool, type ContextToolName, contextTools } from '../formats/tools.js';
import type { Maintainer } from '../runner/maintainer.js';
import type { Session } from '../runner/session.js';
import { type ContextToolFigures, runContextTool } from '../runner/tools.js';

/** An AI SDK tool of `aiSdkContextTools`: the definition and its `execute`. */
export interface AiSdkExecutableContextTool extends AiSdkContextTool {
  execute(input: unknown, options?: { toolCallId?: string }): Promise<string>;
}

/** A conversation of the middleware or `prepareStep` (`conversations`), as the tools read it. */
interface ToolConversation {
  readonly session: Session | undefined;
  readonly maintainer: Maintainer | null;
}

/** What the tools run on: a middleware or a `prepareStep` (their conversations), or one session. */
export type AiSdkContextToolTarget =
  | { readonly conversations: readonly ToolConversation[] }
  | { session: Session; figures?: ContextToolFigures };

/** The reply's tool calls of the leaf entry (the middleware appended the reply before `execute`). */
function leafCalls(session: Session): string[] {
  const leaf = session.leafId;
  const entry: unknown = leaf === null ? undefined : session.entry(leaf);
  const message = (entry as { message?: { content?: unknown } } | undefined)?.message;
  const content = message?.content;
  if (!Array.isArray(content)) return [];
  return content.flatMap((b: { type?: unknown; id?: unknown }) =>
    b?.type === 'toolCall' && typeof b.id === 'string' ? [b.id] : [],
  );
}

/** The conversation a call belongs to: the one whose last reply made it, else the newest. */
function conversationOf(list: readonly ToolConversation[], toolCallId: string | undefined): ToolConversation {
  const live = list.filter((c) => c.session !== undefined);
  const owner =
    toolCallId === undefined ? undefined : live.find((c) => leafCalls(c.session as Session).includes(toolCallId));
  const c = owner ?? live[0];
  if (c === undefined) throw invalidArgument('contextTools: no conversation yet (the model was not called)');
  return c;
}

/**
 * `recall_history` and `context_status` as AI SDK tools (`generateText({ tools: {...mine,
 * ...aiSdkContextTools(middleware)} })`) whose `execute` answers on the session: of the
 * conversation a middleware or `prepareStep` keeps (the one whose last reply made the call,
 * else the newest), through its Maintainer; or of `{session, figures}`. Give the settings
 * `recallTool: true` so compactions point the model at `recall_history`.
 */
export function aiSdkContextTools(target: AiSdkContextToolTarget): Record<ContextToolName, AiSdkExecutableContextTool> {
  if (target === null || typeof target !== 'object') {
    throw invalidArgument('aiSdkContextTools() takes a middleware, a prepareStep or {session}');
  }
  const run = (name: ContextToolName, input: unknown, toolCallId: string | undefined): string => {
    if ('conversations' in target) {
      const c = conversationOf(target.conversations, toolCallId);
      if (c.maintainer !== null) return c.maintainer.runContextTool(name, input as JsonValue);
      return runContextTool(c.session as Session, name, input as JsonValue);
    }
    return runContextTool(target.session, name, input as JsonValue, target.figures);
  };
  const defs = contextTools({ format: 'ai-sdk' });
  const out = {} as Record<ContextToolName, AiSdkExecutableContextTool>;
  for (const name of Object.keys(defs) as ContextToolName[]) {
    out[name] = {
      ...defs[name],
      execute: async (input, options) => run(name, input, options?.toolCallId),
    };
  }
  return out;
}
