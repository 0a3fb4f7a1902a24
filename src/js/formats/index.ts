// The message formats `Session.fromMessages`, `appendMessages` and `toMessages` speak. Each
// format module exports `name`, `read(messages, ctx)` and `write(llm, ctx)` (`FormatModule` of
// common.ts):
//
// read(messages, ctx) → { messages: AgentMessage[], system? }
//   `messages` is the caller's array (checked to be an array); a malformed message throws
//   `invalidMessage(index, field, …)`. `system` is the system prompt the messages carried (a
//   chat `system` message), as `{ text, value }`: `text` for any writer, `value` the format's
//   own form for its own writer. ctx: `{ model?, warnings: Warnings, history, toolCall(id),
//   toolCallOfCallId(callId) }`; `history`: the messages continue a history (leading system
//   messages are then later instructions, see `systemPromptLength`); `toolCall(id)` finds a
//   call of an earlier entry by its id (`{ id, name, arguments }` or undefined);
//   `toolCallOfCallId(callId)` finds one whose id is pi's Responses form `call_id|item_id`
//   by its `call_id` (the returned `id` is the whole one).
//
// write(llm, ctx) → { messages, system? }
//   `llm` is what `toLlmMessages` returned for the options. ctx: `{ model?, warnings, system,
//   session, leafId }`, `system` the stored `{ text, value, format }` or undefined.
import { invalidArgument } from '../core/errors.js';
import * as aiSdkModel from './ai-sdk-model.js';
import * as aiSdkUi from './ai-sdk-ui.js';
import * as anthropic from './anthropic.js';
import type { FormatModule } from './common.js';
import * as gemini from './gemini.js';
import * as openaiChat from './openai-chat.js';
import * as openaiResponses from './openai-responses.js';
import * as pi from './pi.js';

const FORMATS = new Map<string, FormatModule>(
  [pi, openaiChat, openaiResponses, anthropic, aiSdkModel, aiSdkUi, gemini].map((f) => [f.name, f]),
);

/** The format module called `name` (default `pi`); E_INVALID_ARGUMENT for an unknown one. */
export function formatOf(name: unknown): FormatModule {
  const key = name ?? 'pi';
  const format = typeof key === 'string' ? FORMATS.get(key) : undefined;
  if (format === undefined) {
    throw invalidArgument(
      `format must be one of ${[...FORMATS.keys()].map((k) => `'${k}'`).join(', ')}, got ${JSON.stringify(name)}`,
    );
  }
  return format;
}

/** The custom entry type that holds a session's system prompt (`data: { text, value, format }`). */
export const SYSTEM_ENTRY = 'ctxfold:system';
