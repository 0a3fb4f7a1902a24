// The edge backend example (www/examples/edge/) under workerd on this machine (issue 40): EDGE_SESSIONS
// sessions (default 100) at once, one Durable Object each, every session running EDGE_TURNS turns
// (default 8) of the scripted agent of tests/js/support/edge-agent.mjs (append, before-request,
// tool call, tool result, before-request, answer: 6 requests a turn, more when maintenance asks
// for a retry or a continue) against a 16,000-token window, so the objects prune and compact
// (through a local stub summary endpoint) and save through the Durable Object store after every
// request, on disk (in the system's temporary folder, or under EDGE_STORAGE_DIR: /dev/shm for a
// tmpfs; workerd's in-memory storage has no SQL). Reports the requests per second over the run, the wall time per turn as the
// agent sees it (p50, p99), workerd's CPU time per turn (utime + stime from /proc), and memory per
// object: the growth of workerd's resident set from the idle process to the end of the run,
// divided by the objects (and its whole RSS over them). Skipped (one row saying why) without the
// workerd binary.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { startEdge, stubSummarizer } from '../../www/examples/edge/local.mjs';
import { agentTurn } from '../js/support/edge-agent.mjs';
import { median } from './lib.mjs';

const require = createRequire(import.meta.url);

/** Resident set of process `pid`, in bytes (Linux /proc). */
function rss(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) * 1024;
}

/** utime + stime of process `pid`, in ms (Linux /proc). */
let clockTicks;
function cpuMs(pid) {
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks;
}

/** The value at quantile `q` of `values` (nearest rank). */
function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

export default async function () {
  let bin;
  try {
    bin = require('workerd').default;
    if (!existsSync(bin)) throw new Error(`no binary at ${bin}`);
  } catch (err) {
    return [{ name: 'edge: skipped', median: 0, unit: 'ms', note: err.message.split('\n')[0] }];
  }
  if (!existsSync('/proc/self/status')) return [{ name: 'edge: skipped', median: 0, unit: 'ms', note: 'no /proc' }];
  const sessions = Number(process.env.EDGE_SESSIONS ?? 100);
  const turns = Number(process.env.EDGE_TURNS ?? 8);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'ctxfold-edge-bench-'));
  const stub = await stubSummarizer();
  const edge = await startEdge({
    storage: path.join(process.env.EDGE_STORAGE_DIR ?? tmp, 'objects'),
    summaryUrl: stub.url,
    contextWindow: 16_000,
    keepRecentTokens: 3000,
  });
  try {
    const idle = rss(edge.pid);
    const cpu0 = cpuMs(edge.pid);
    const client0 = process.cpuUsage();
    const load0 = os.loadavg()[0];
    const perTurn = [];
    let requests = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: sessions }, async (_, k) => {
        for (let i = 0; i < turns; i++) {
          const t = performance.now();
          const n = await agentTurn(edge.origin, `s-${k}`, i);
          requests += n;
          perTurn.push(performance.now() - t);
        }
      }),
    );
    const wall = performance.now() - t0;
    const cpu = cpuMs(edge.pid) - cpu0;
    const client = process.cpuUsage(client0);
    const load = (load0 + os.loadavg()[0]) / 2;
    const end = rss(edge.pid);
    const mb = (bytes) => bytes / 2 ** 20;
    // What each object holds at the end: its session's entries and file size.
    let entries = 0;
    let fileBytes = 0;
    for (let k = 0; k < sessions; k++) {
      const stats = await (await fetch(`${edge.origin}/sessions/s-${k}/stats`)).json();
      const file = await (await fetch(`${edge.origin}/sessions/s-${k}/file`)).arrayBuffer();
      entries += stats.entries;
      fileBytes += file.byteLength;
    }
    const where = `in ${process.env.EDGE_STORAGE_DIR ?? os.tmpdir()}`;
    const setting = `${sessions} sessions × ${turns} turns at once, workerd ${require('workerd').version}, objects ${where}`;
    const row = (name, value, unit, note) => ({ name, median: value, unit, samples: 1, ...(note ? { note } : {}) });
    return [
      row(
        'edge: requests per second',
        (requests / wall) * 1000,
        'req/s',
        `${requests} requests in ${(wall / 1000).toFixed(1)} s; ${setting}`,
      ),
      {
        name: 'edge: wall time per turn, p50',
        median: median(perTurn),
        min: Math.min(...perTurn),
        max: Math.max(...perTurn),
        unit: 'ms',
        samples: perTurn.length,
        note: `${(requests / perTurn.length).toFixed(1)} requests a turn, as the agent sees it`,
      },
      row('edge: wall time per turn, p99', quantile(perTurn, 0.99), 'ms'),
      row(
        'edge: workerd CPU per turn',
        cpu / perTurn.length,
        'ms',
        `utime + stime of the process over the run; ${stub.requests.length} summary requests; ` +
          `the agent and the stub (this process): ${((client.user + client.system) / 1000 / perTurn.length).toFixed(1)} ms a turn; ` +
          `load average ${load.toFixed(1)} on ${os.cpus().length} cores`,
      ),
      row(
        'edge: memory per object (RSS growth / objects)',
        mb((end - idle) / sessions),
        'MB',
        `idle ${mb(idle).toFixed(0)} MB, after ${mb(end).toFixed(0)} MB; sessions of ${(entries / sessions).toFixed(0)} entries, ` +
          `${(fileBytes / sessions / 1024).toFixed(0)} KiB on average`,
      ),
      row('edge: memory per object (RSS / objects)', mb(end / sessions), 'MB'),
    ];
  } finally {
    await edge.stop();
    await stub.close();
    rmSync(tmp, { recursive: true, force: true });
    if (process.env.EDGE_STORAGE_DIR)
      rmSync(path.join(process.env.EDGE_STORAGE_DIR, 'objects'), { recursive: true, force: true });
  }
}
