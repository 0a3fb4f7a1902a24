// The `gemini` format (being written).
import { invalidArgument } from '../errors.js';

export const name = 'gemini';

export function read() {
  throw invalidArgument('the gemini format is not implemented yet');
}

export function write() {
  throw invalidArgument('the gemini format is not implemented yet');
}
