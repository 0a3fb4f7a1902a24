// Helpers for tests/bench/*.bench.mjs. A bench file's default export is an async function that
// returns rows: { name, median, unit, samples, min?, max?, note? }. `run.mjs` runs each file in
// its own Node.js process (fresh module and wasm instances) and prints every row.

import { performance } from 'node:perf_hooks';
import { generatedSession as generated } from '../js/support/generated.mjs';

/** Median of numbers (the mean of the two middle ones for an even count). */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Times `fn` (sync or async) `samples` times after `warmup` untimed runs, in milliseconds.
 * Returns a row for the report.
 */
export async function measure(name, fn, { samples = 20, warmup = 2, note } = {}) {
  for (let i = 0; i < warmup; i++) await fn();
  const times = [];
  for (let i = 0; i < samples; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return timesRow(name, times, { note });
}

/** The report row of `times` (one per sample, in `unit`): their median, min and max. */
export function timesRow(name, times, { unit = 'ms', note } = {}) {
  return {
    name,
    median: median(times),
    min: Math.min(...times),
    max: Math.max(...times),
    unit,
    samples: times.length,
    ...(note ? { note } : {}),
  };
}

/** A session made by the crate's generator (`gen-session ARGS`, optimized build), cached. */
export function generatedSession(name, args) {
  return generated(name, args, { release: true });
}

/** Runs `fn` once: `[milliseconds, its value]`. */
export function timed(fn) {
  const t0 = performance.now();
  const value = fn();
  return [performance.now() - t0, value];
}
