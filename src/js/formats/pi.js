// The `pi` format: oh-my-pi's own AgentMessages in, the provider messages of `toLlmMessages`
// out. Nothing is converted, so nothing is lost.
import { invalidMessage, isObject } from './common.js';

export const name = 'pi';

/** AgentMessages as they are; each must be an object with a string `role`. */
export function read(messages) {
  messages.forEach((m, i) => {
    if (!isObject(m)) throw invalidMessage(i, '', 'must be an object');
    if (typeof m.role !== 'string' || m.role === '') throw invalidMessage(i, 'role', 'must be a non-empty string');
  });
  return { messages };
}

/** The provider messages as `toLlmMessages` gives them, and the system prompt's text. */
export function write(llm, ctx) {
  return { messages: llm, system: ctx.system?.text };
}
