// The `ai-sdk-ui` format (being written).
import { invalidArgument } from '../errors.js';

export const name = 'ai-sdk-ui';

export function read() {
  throw invalidArgument('the ai-sdk-ui format is not implemented yet');
}

export function write() {
  throw invalidArgument('the ai-sdk-ui format is not implemented yet');
}
