// The `ai-sdk-model` format (being written).
import { invalidArgument } from '../errors.js';

export const name = 'ai-sdk-model';

export function read() {
  throw invalidArgument('the ai-sdk-model format is not implemented yet');
}

export function write() {
  throw invalidArgument('the ai-sdk-model format is not implemented yet');
}
