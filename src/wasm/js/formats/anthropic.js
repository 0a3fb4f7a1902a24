// The `anthropic` format (being written).
import { invalidArgument } from '../errors.js';

export const name = 'anthropic';

export function read() {
  throw invalidArgument('the anthropic format is not implemented yet');
}

export function write() {
  throw invalidArgument('the anthropic format is not implemented yet');
}
