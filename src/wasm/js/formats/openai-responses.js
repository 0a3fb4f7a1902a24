// The `openai-responses` format (being written).
import { invalidArgument } from '../errors.js';

export const name = 'openai-responses';

export function read() {
  throw invalidArgument('the openai-responses format is not implemented yet');
}

export function write() {
  throw invalidArgument('the openai-responses format is not implemented yet');
}
