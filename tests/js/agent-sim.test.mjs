// The agent simulator's scenarios through the built package (issue 36, "Tests"): the seeded
// scenarios of the Rust simulator (crates/testkit/src/agent.rs), each run by an outside agent
// loop through the `Maintainer`, and through `ctxfoldMiddleware` under `generateText` and
// `streamText` (support/agent-sim.mjs says what the agent, the provider and the summarizer do
// and which invariants hold after every step).
//
// A sample runs here: the scenarios of seeds 0 to 11 (those of the fixture), each through the
// three drivers, about half a minute. More: `SIM_RUNS=200 node --test tests/js/agent-sim.test.mjs`
// (seeds 0 to 199; `SIM_FIRST=N` starts elsewhere, `SIM_DRIVERS=maintainer,streamText` picks
// drivers, `SIM_DEBUG=1` prints every event). A run whose every violation is a known finding of
// agent-sim-findings.test.mjs is reported as `todo` naming it; any other violation fails.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { DRIVERS, deadEndpoint, describeScenario, Rng, randomScenario, runScenario } from './support/agent-sim.mjs';

const fixture = JSON.parse(readFileSync(new URL('./fixtures/agent-scenarios.json', import.meta.url), 'utf8'));

const RUNS = Number(process.env.SIM_RUNS ?? 12);
const FIRST = Number(process.env.SIM_FIRST ?? 0);
const drivers = process.env.SIM_DRIVERS ? process.env.SIM_DRIVERS.split(',') : DRIVERS;

/**
 * Violations the minimised tests of agent-sim-findings.test.mjs already show: while they stand,
 * a run that breaks only these is `todo`. Remove an entry with its fix.
 */
const KNOWN = [];

let endpoint;
before(async () => {
  endpoint = await deadEndpoint();
});
after(() => endpoint.close());

test("the scenarios are the Rust simulator's: its generator, ported, draws the fixture's", () => {
  assert.ok(fixture.length >= 12, `${fixture.length} scenarios in the fixture`);
  for (const want of fixture) assert.deepEqual(randomScenario(BigInt(want.seed)), want, `seed ${want.seed}`);
  // The port's stream itself: xoshiro256** over splitmix64, as crates/testkit/src/rng.rs.
  const r = new Rng(42);
  const draws = [r.below(10), r.range(5, 9), r.chance(0.5), r.pick(['a', 'b', 'c'])];
  assert.deepEqual(draws, [...draws]);
  assert.equal(new Rng(0).nextU64() !== new Rng(1).nextU64(), true);
});

const totals = { runs: 0, requests: 0, compactions: 0, todo: 0, failed: 0, ms: 0 };

for (let seed = FIRST; seed < FIRST + RUNS; seed++) {
  const s = randomScenario(seed);
  for (const driver of drivers) {
    test(`${driver}: ${describeScenario(s)}`, async (t) => {
      const { stats, violations } = await runScenario(s, driver, { endpoint });
      totals.runs++;
      totals.requests += stats.requests;
      totals.compactions += stats.compactions;
      totals.ms += stats.ms;
      t.diagnostic(
        `${stats.ms} ms, ${stats.requests} requests (largest ${stats.largestRequest} of ${s.window}), ` +
          `overflows ${stats.overflows} + ${stats.forcedOverflows} forced, compactions ${JSON.stringify(stats.methods)}, ` +
          `failed ${stats.failedCompactions}, skipped ${stats.skippedCompactions}, lost to the summarizer ` +
          `${stats.turnsLostToTheSummarizer}, archive-dropped ${stats.archiveDroppedUserTurns}, endpoint POSTs ` +
          `${stats.endpointPosts} (at most ${stats.maxPostsPerCompaction} a compaction), prompt not sent verbatim ` +
          `after ${JSON.stringify(stats.promptNotVerbatim)}`,
      );
      const known = KNOWN.filter((k) => k.applies(driver, stats));
      const unknown = violations.filter((v) => !known.some((k) => k.violation.test(v)));
      if (violations.length > 0 && unknown.length === 0) {
        totals.todo++;
        t.todo(`known: ${known.map((k) => k.finding).join('; ')}`);
      } else if (unknown.length > 0) {
        totals.failed++;
      }
      assert.deepEqual(violations, []);
    });
  }
}

test('totals', (t) => {
  t.diagnostic(
    `${totals.runs} runs, ${totals.requests} requests, ${totals.compactions} compactions, ` +
      `${totals.failed} with unknown violations, ${totals.todo} with known findings only, ${totals.ms} ms`,
  );
});
