// The `pi` format: oh-my-pi's own AgentMessages in, the provider messages of `toLlmMessages`
// out. Nothing is converted, so nothing is lost.
import type { LlmMessage } from '../core/session.js';
import {
  invalidMessage,
  isObject,
  type ReadMessage,
  type ReadResult,
  type WriteContext,
  type WriteResult,
} from './common.js';

export const name = 'pi';

/** AgentMessages as they are; each must be an object with a string `role`. */
export function read(messages: unknown[]): ReadResult {
  messages.forEach((m, i) => {
    if (!isObject(m)) throw invalidMessage(i, '', 'must be an object');
    if (typeof m.role !== 'string' || m.role === '') throw invalidMessage(i, 'role', 'must be a non-empty string');
  });
  // The caller's own array: each of its messages passed the checks above.
  return { messages: messages as ReadMessage[] };
}

/** The provider messages as `toLlmMessages` gives them, and the system prompt's text. */
export function write(llm: LlmMessage[], ctx: WriteContext): WriteResult<LlmMessage, string> {
  return { messages: llm, system: ctx.system?.text };
}
