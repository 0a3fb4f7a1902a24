// The `openai-chat` format (being written).
import { invalidArgument } from '../errors.js';

export const name = 'openai-chat';

export function read() {
  throw invalidArgument('the openai-chat format is not implemented yet');
}

export function write() {
  throw invalidArgument('the openai-chat format is not implemented yet');
}
