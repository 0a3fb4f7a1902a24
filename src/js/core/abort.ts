// The AbortSignal as the async shells listen to it, and a promise raced against one: shared by
// the loads of core/ (`Session.fromAsyncReader`, `Session.fromStream`) and the runs of runner/.
import { abortError } from './errors.js';
import type { AbortSignalLike } from './types.js';

/**
 * The signal the shell listens to: what the API takes (`AbortSignalLike`), with the listener
 * options and the removal every real `AbortSignal` has.
 */
export interface Signal extends AbortSignalLike {
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener?(type: 'abort', listener: () => void): void;
}

/**
 * Settles like `promise`, or rejects with `error()` (the abort error unless told otherwise) as
 * soon as `signal` aborts.
 */
export function untilAbort<T>(
  promise: T | PromiseLike<T>,
  signal: Signal,
  error: () => Error = abortError,
): Promise<Awaited<T>> {
  if (signal.aborted) return Promise.reject(error());
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(error());
    signal.addEventListener('abort', onAbort, { once: true });
    Promise.resolve(promise).then(
      (v) => {
        signal.removeEventListener?.('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener?.('abort', onAbort);
        reject(e);
      },
    );
  });
}
