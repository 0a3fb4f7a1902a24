// The demo's Simulate panel (www/simulate.js, sim-agent.js, timeline.js) and Compaction tab
// (www/report.js) in headless Chromium, served on 127.0.0.1 with the built package: 200 model
// requests of the in-page scripted agent on a 32k window through the real Maintainer, once per
// strategy. What the chart draws is compared with the maintainer's events (the read-only log
// `window.__simulation`), the provider's measurements show no request over the window went
// unrecovered, a compaction's report opens from its marker, Undo compaction puts the leaf back,
// and the downloaded file loads under Node.js with what the page had. Also the messages import,
// with a hostile messages file. Screenshots: tests/out/screenshots/simulate-*.png.

import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { outDir, pkgDir } from '../js/support/project.mjs';
import { PAYLOADS } from './fixtures.mjs';
import { chooseChatEndpoint, fakeSummarizer, useChromium, withPage } from './support.mjs';

const { Session } = await import(pathToFileURL(path.join(pkgDir, 'entries', 'node.js')).href);

const sampleDir = path.join(outDir, 'simulate-sample');
const fixturesDir = path.join(outDir, 'fixtures');
const shotsDir = path.join(outDir, 'screenshots');

/** A small session for the page's "Load the sample" on start-up (no cargo needed). */
function writeSample() {
  const s = Session.create({ ids: 'deterministic', id: 'simulate-sample', cwd: '/w', now: Date.UTC(2026, 0, 1) });
  for (let i = 0; i < 6; i++) {
    s.appendMessage({ role: 'user', content: `question ${i}` }, { now: Date.UTC(2026, 0, 1, 0, i) });
    s.appendMessage(
      {
        role: 'assistant',
        content: [{ type: 'text', text: `answer ${i}` }],
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 },
        stopReason: 'stop',
      },
      { now: Date.UTC(2026, 0, 1, 0, i, 30) },
    );
  }
  mkdirSync(sampleDir, { recursive: true });
  writeFileSync(path.join(sampleDir, 'sample.jsonl'), s.toBytes());
  s.free();
}

const harness = useChromium(() => {
  writeSample();
  mkdirSync(fixturesDir, { recursive: true });
  mkdirSync(shotsDir, { recursive: true });
  return {
    '/': fileURLToPath(new URL('../../www/', import.meta.url)),
    '/pkg/': pkgDir,
    '/sample/': sampleDir + path.sep,
  };
});

const STRATEGIES = {
  'context-full': ['soft'],
  snapcompact: ['snapcompact', 'soft'],
  shake: ['shake', 'soft'],
  handoff: ['handoff', 'soft'],
};

function withDemo(body) {
  return withPage(harness.browser, async (page, problems) => {
    await page.setViewportSize({ width: 1500, height: 1000 });
    await page.goto(harness.server.url);
    await page.waitForSelector('body[data-ready="true"][data-stats="ready"]');
    return body(page, problems);
  });
}

const shot = (page, name) => page.screenshot({ path: path.join(shotsDir, `simulate-${name}.png`) });

/** Opens the Simulate panel and sets the run up. */
async function setUp(page, { strategy, window = 32_000, turns = 200 }) {
  await page.click('#open-simulate');
  await page.waitForSelector('#sim-controls #sim-start');
  await page.selectOption('#sim-window', String(window));
  await page.selectOption('#sim-strategy', strategy);
  await page.fill('#sim-turns', String(turns));
  await page.dispatchEvent('#sim-turns', 'change');
}

/** What the maintainer's events say the chart must show (derived here, independently of the page). */
function expectedMarkers(events) {
  const out = [];
  events.forEach((e, i) => {
    let kind = null;
    let method = null;
    if (e.type === 'prune') [kind, method] = ['prune', `prune-${e.pass}`];
    else if (e.type === 'auto_compaction_end' && !e.aborted && !e.errorMessage && !e.skipped && e.report)
      [kind, method] = ['compaction', e.report.method];
    else if (e.type === 'promotion') [kind, method] = ['promotion', 'promotion'];
    else if (e.type === 'continue' && e.kind === 'retry') [kind, method] = ['recovery', 'retry'];
    if (kind) out.push({ kind, method, turn: e.turn, event: i });
  });
  return out;
}

/** The markers drawn on the chart, from their data-* attributes. */
function drawnMarkers(page) {
  return page.$$eval('#timeline [data-marker]', (els) =>
    els.map((el) => ({
      kind: el.dataset.kind,
      method: el.dataset.method,
      turn: Number(el.dataset.turn),
      event: Number(el.dataset.event),
    })),
  );
}

/** Checks the provider's measurements: every overflow answered by a retry that fit. */
function checkWindow(sim) {
  const { turns, events } = sim;
  for (let k = 0; k < turns.length; k++) {
    const t = turns[k];
    assert.equal(t.overflow, t.promptTokens > t.window, `request ${k + 1}: overflow flag`);
    if (!t.overflow) continue;
    assert.equal(t.next, 'retry', `request ${k + 1} overflowed (${t.promptTokens} > ${t.window}) and was not retried`);
    assert.ok(
      events.some((e) => e.turn === k + 1 && e.type === 'auto_compaction_end' && e.reason === 'overflow'),
      `request ${k + 1}: no overflow recovery`,
    );
    const next = turns[k + 1];
    if (next) assert.ok(!next.overflow, `request ${k + 2}: a second overflow in a row`);
  }
}

for (const [strategy, order] of Object.entries(STRATEGIES)) {
  test(`simulate: 200 requests on a 32k window, ${strategy}: markers are the maintainer's events, nothing over the window unrecovered`, async () => {
    await withDemo(async (page, problems) => {
      await setUp(page, { strategy });
      const t0 = Date.now();
      await page.click('#sim-start');
      await page.waitForSelector('#sim-panel[data-state="done"], #sim-panel[data-state="error"]', {
        timeout: 120_000,
      });
      const wallMs = Date.now() - t0;
      const sim = await page.evaluate(() => window.__simulation);
      assert.equal(sim.state, 'done', sim.error ?? '');
      assert.equal(sim.turns.length, 200);
      assert.deepEqual(sim.config.order.split(/[\s,]+/), order);
      console.log(
        `# ${strategy}: 200 requests in ${wallMs} ms (page), ${Math.round(sim.runMs)} ms in the agent loop; ` +
          `${sim.markers.filter((m) => m.kind === 'compaction').length} compactions, ` +
          `${sim.markers.filter((m) => m.kind === 'prune').length} prunes, ` +
          `${sim.turns.filter((t) => t.overflow).length} overflows`,
      );
      // The chart shows exactly the maintainer's steps, each at its request.
      await page.waitForFunction(() => document.querySelector('#timeline svg').dataset.turns === '200');
      const drawn = await drawnMarkers(page);
      assert.deepEqual(drawn, expectedMarkers(sim.events));
      const compactions = drawn.filter((m) => m.kind === 'compaction');
      assert.ok(compactions.length >= 2, `${compactions.length} compactions in 200 requests on 32k`);
      // Each compaction ran a method of the order, or `shake` for the dead-end rescue
      // (docs/guide/maintainer.md "Methods").
      for (const m of compactions)
        assert.ok([...order, 'shake'].includes(m.method), `method ${m.method} not in ${order}`);
      // The first method ran: `shake` hands over to the next when it is not enough, the report
      // of the method that ran after it then counts what it freed.
      const reports = sim.markers.filter((m) => m.kind === 'compaction').map((m) => m.report);
      const ranFirst =
        order[0] === 'shake'
          ? reports.some((r) => r.method === 'shake' || r.shakeTokensFreed > 0)
          : reports.some((r) => r.method === order[0]);
      assert.ok(ranFirst, `no compaction by ${order[0]}: ${compactions.map((m) => m.method)}`);
      checkWindow(sim);
      // The chart's line has a point per request; the window line is the configured window.
      const points = await page.$eval('#timeline .tl-tokens', (el) => el.getAttribute('points').split(' ').length);
      assert.equal(points, 200);
      assert.ok(sim.turns.every((t) => t.window === 32_000));
      await shot(page, `run-${strategy}`);
      if (strategy === 'snapcompact') {
        // A snapcompact compaction's report shows the frames it printed (a small archive is
        // kept as text only: the first one with frames).
        const ids = sim.markers.filter((m) => m.method === 'snapcompact' && m.entryId).map((m) => m.entryId);
        const counts = await page.evaluate(
          (list) =>
            list.map((id) => window.explorer.session.entry(id)?.preserveData?.snapcompact?.frames?.length ?? -1),
          ids,
        );
        const k = counts.findIndex((n) => n > 0);
        // In a 32k window one frame (5,024 tokens) rarely fits beside the kept tail within the
        // archive's room, 80 % of the threshold (docs/guide/maintainer.md "Small windows"):
        // the archives may all be text only, and then the report shows no frame.
        assert.ok(ids.length > 0 && counts.every((n) => n >= 0), `snapcompact archives: ${counts}`);
        if (k >= 0) {
          await page.click(`#timeline [data-marker][data-entry="${ids[k]}"] path`);
          await page.waitForSelector(`#panel-compaction h3:has-text("${ids[k]}")`);
          await page.waitForSelector('#panel-compaction img');
          assert.equal(await page.locator('#panel-compaction img').count(), counts[k]);
          await shot(page, 'report-snapcompact');
        }
      }
      assert.ok(wallMs < 60_000, `200 requests took ${wallMs} ms`);
      assert.deepEqual(problems, []);
    });
  });
}

test('simulate: without mid-run checks large tool results overflow the window: each is recovered', async () => {
  await withDemo(async (page, problems) => {
    await setUp(page, { strategy: 'context-full' });
    await page.uncheck('#sim-midturn');
    await page.click('#sim-start');
    await page.waitForSelector('#sim-panel[data-state="done"], #sim-panel[data-state="error"]', { timeout: 120_000 });
    const sim = await page.evaluate(() => window.__simulation);
    assert.equal(sim.state, 'done', sim.error ?? '');
    const overflows = sim.turns.filter((t) => t.overflow).length;
    const drawn = await drawnMarkers(page);
    assert.deepEqual(drawn, expectedMarkers(sim.events));
    const recoveries = drawn.filter((m) => m.kind === 'recovery').length;
    console.log(`# no mid-run checks: ${overflows} overflows, ${recoveries} recoveries in 200 requests`);
    assert.ok(overflows > 0, 'some request overflowed');
    assert.ok(recoveries >= overflows, `${recoveries} recoveries for ${overflows} overflows`);
    assert.equal(await page.locator('#timeline .tl-overflow').count(), overflows);
    checkWindow(sim);
    await shot(page, 'overflow');
    await page.locator('#sim-panel').screenshot({ path: path.join(shotsDir, 'simulate-timeline-overflow.png') });
    assert.deepEqual(problems, []);
  });
});

test('simulate: promotion to a larger window instead of a compaction', async () => {
  await withDemo(async (page, problems) => {
    await setUp(page, { strategy: 'context-full' });
    await page.check('#sim-promote');
    await page.click('#sim-start');
    await page.waitForSelector('#sim-panel[data-state="done"], #sim-panel[data-state="error"]', { timeout: 120_000 });
    const sim = await page.evaluate(() => window.__simulation);
    assert.equal(sim.state, 'done', sim.error ?? '');
    const drawn = await drawnMarkers(page);
    assert.deepEqual(drawn, expectedMarkers(sim.events));
    const promotions = drawn.filter((m) => m.kind === 'promotion');
    assert.equal(promotions.length, 1);
    const at = promotions[0].turn;
    // The window is 4× from the request after the promotion on.
    assert.ok(sim.turns.slice(0, at - 1).every((t) => t.window === 32_000));
    assert.ok(sim.turns.slice(at).every((t) => t.window === 128_000));
    checkWindow(sim);
    await shot(page, 'promotion');
    assert.deepEqual(problems, []);
  });
});

test('simulate: a compaction marker opens its report; Undo compaction restores the leaf; the download is a valid session', async () => {
  await withDemo(async (page, problems) => {
    await setUp(page, { strategy: 'context-full' });
    await page.check('#sim-pause-compaction');
    // Run until a compaction leaves the leaf on its entry (one that ran before the model reply
    // was appended is followed by it: run on).
    let target = null;
    for (let tries = 0; tries < 40 && !target; tries++) {
      await page.click('#sim-start');
      await page.waitForSelector('#sim-panel:not([data-state="running"])', { timeout: 60_000 });
      const sim = await page.evaluate(() => window.__simulation);
      assert.notEqual(sim.state, 'error', sim.error ?? '');
      assert.notEqual(sim.state, 'done', 'no undoable compaction in the whole run');
      const last = sim.markers.filter((m) => m.kind === 'compaction').at(-1);
      if (last?.entryId && last.entryId === sim.leafId) target = last;
    }
    assert.ok(target, 'a compaction with the leaf on it');
    const parent = await page.evaluate((id) => window.explorer.session.entry(id).parentId, target.entryId);

    // Hover: the tooltip shows its report.
    const marker = `#timeline [data-marker][data-entry="${target.entryId}"]`;
    await page.hover(`${marker} path`);
    await page.waitForSelector('.timeline-tip:not([hidden])');
    const tip = await page.textContent('.timeline-tip');
    assert.match(tip, /Compaction \(soft, /);
    assert.ok(tip.includes(`${target.report.tokensBefore.toLocaleString('en-US')} →`), tip);
    await shot(page, 'tooltip');

    // One figure per state: with the leaf on the compaction, the header and the Context tab
    // show the report's tokens after it (usage reported before it is not counted).
    await page.waitForSelector('body[data-stats="ready"]');
    const after = target.report.tokensAfter.toLocaleString('en-US');
    assert.equal(await page.textContent('#context-tokens'), after, 'the header');
    await page.click('#goto-leaf');
    await page.click('#tab-context');
    await page.waitForSelector(`#panel-context .context-where code:has-text("${target.entryId}")`);
    const shown = await page.textContent('#ctx-tokens');
    assert.match(shown, new RegExp(`^${after}`), `the Context tab: ${shown}`);

    // Click: selected in the tree, the report opens, the summarized entries are highlighted.
    await page.click(`${marker} path`);
    await page.waitForSelector(`#panel-compaction h3:has-text("${target.entryId}")`);
    assert.equal(await page.getAttribute('#tab-compaction', 'aria-selected'), 'true');
    assert.equal(await page.evaluate(() => window.explorer.selection.entryId), target.entryId);
    assert.equal(await page.locator('.node.selected.kind-compaction').count(), 1);
    const summarized = Number(await page.getAttribute('#tree', 'data-summarized'));
    assert.ok(summarized > 0, 'summarized entries highlighted');
    assert.ok((await page.locator('.node.summarized').count()) > 0);
    assert.equal(
      await page.getAttribute('#panel-compaction .rp-ruler', 'data-before'),
      String(target.report.tokensBefore),
    );
    assert.equal(
      await page.getAttribute('#panel-compaction .rp-ruler', 'data-after'),
      String(target.report.tokensAfter),
    );
    assert.ok((await page.locator('#panel-compaction .rp-kinds rect').count()) > 0, 'tokens by kind');
    assert.match(await page.textContent('#panel-compaction .rp-facts'), /images omitted/);
    // The loss report: what the dropped region's identifiers became (issue 38 item 4).
    assert.ok(Array.isArray(target.report.lost) && Array.isArray(target.report.anchored), 'a loss report');
    const heads = await page.locator('#panel-compaction h4').allTextContents();
    assert.ok(heads.includes(`Lost (${target.report.lost.length})`), heads.join(' | '));
    assert.ok(heads.includes(`Anchored (${target.report.anchored.length})`), heads.join(' | '));
    assert.equal(
      await page.locator('#panel-compaction .rp-anchored .rp-chip').count(),
      Math.min(60, target.report.anchored.length),
    );
    await shot(page, 'report');

    // Undo compaction: the leaf goes back to where it was before the compaction.
    await page.click('#undo-compaction');
    await page.waitForSelector(`body[data-undone="${target.entryId}"]`);
    assert.equal(await page.evaluate(() => window.explorer.session.leafId), parent);
    await page.waitForSelector(`${marker}[data-undone="true"]`);
    const sim = await page.evaluate(() => window.__simulation);
    assert.deepEqual(sim.undos.at(-1), {
      entryId: target.entryId,
      leafBefore: target.entryId,
      leafAfter: parent,
      turn: sim.turns.length,
    });
    assert.equal(await page.isDisabled('#undo-compaction'), true, 'nothing more to undo');
    assert.match(await page.textContent('#panel-compaction .rp-actions'), /undone/);
    await shot(page, 'undone');

    // The run goes on from the restored leaf to its 200 requests.
    await page.uncheck('#sim-pause-compaction');
    await page.click('#sim-start');
    await page.waitForSelector('#sim-panel[data-state="done"]', { timeout: 120_000 });
    await shot(page, 'timeline-done');
    await page.locator('#sim-panel').screenshot({ path: path.join(shotsDir, 'simulate-timeline.png') });

    // The download is a valid session file with what the page holds.
    const inPage = await page.evaluate(() => {
      const s = window.explorer.session;
      return {
        size: s.size,
        leafId: s.leafId,
        compactions: s.entries().filter((e) => e.type === 'compaction').length,
        id: s.header.id,
      };
    });
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
    const saved = path.join(fixturesDir, 'simulated.jsonl');
    await download.saveAs(saved);
    const reloaded = Session.fromJsonl(readFileSync(saved));
    try {
      assert.deepEqual(reloaded.warnings, []);
      assert.equal(reloaded.size, inPage.size);
      assert.equal(reloaded.leafId, inPage.leafId);
      assert.equal(reloaded.header.id, inPage.id);
      assert.equal(reloaded.entries().filter((e) => e.type === 'compaction').length, inPage.compactions);
      assert.ok(inPage.compactions >= 2);
      // The undone compaction is still in the file, off the active path.
      assert.ok(reloaded.entry(target.entryId));
      assert.ok(!reloaded.pathTo(reloaded.leafId).includes(target.entryId));
      assert.ok(reloaded.contextTokens().estimatedTokens > 0);
    } finally {
      reloaded.free();
    }
    assert.deepEqual(problems, []);
  });
});

test('simulate: Step runs one model request at a time; the set-up is locked until New run', async () => {
  await withDemo(async (page, problems) => {
    await setUp(page, { strategy: 'handoff', window: 64_000 });
    for (let k = 1; k <= 3; k++) {
      await page.click('#sim-step');
      await page.waitForFunction((n) => window.__simulation.turns.length === n, k);
    }
    const sim = await page.evaluate(() => window.__simulation);
    assert.equal(sim.state, 'paused');
    assert.deepEqual(
      sim.turns.map((t) => t.request),
      [1, 2, 3],
    );
    assert.ok(sim.turns.every((t) => t.window === 64_000));
    assert.equal(await page.getAttribute('#timeline svg', 'data-turns'), '3');
    assert.equal(await page.isDisabled('#sim-window'), true);
    // The explorer shows the simulation's session as it grows.
    assert.equal(await page.evaluate(() => window.explorer.session.header.id), sim.sessionId);
    assert.ok(Number((await page.textContent('#entry-count')).replace(/,/g, '')) >= 4);
    await page.click('#sim-reset');
    assert.equal(await page.isDisabled('#sim-window'), false);
    assert.equal(await page.evaluate(() => window.__simulation.turns.length), 0);
    assert.deepEqual(problems, []);
  });
});

test('import: a hostile openai-chat messages file becomes a session, shown as text only', async () => {
  const messages = [
    { role: 'system', content: PAYLOADS[5] },
    { role: 'user', content: `Please render ${PAYLOADS.join(' ')}` },
    {
      role: 'assistant',
      content: PAYLOADS[0],
      tool_calls: [
        {
          id: 'call_1',
          type: 'function',
          function: { name: 'read', arguments: JSON.stringify({ path: PAYLOADS[1] }) },
        },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: PAYLOADS[2] },
    { role: 'assistant', content: PAYLOADS[3] },
  ];
  const file = path.join(fixturesDir, 'hostile-openai-chat.json');
  writeFileSync(file, JSON.stringify(messages));
  const expected = Session.fromMessages(messages, { format: 'openai-chat' });
  const expectedSize = expected.size;
  expected.free();
  await withDemo(async (page, problems) => {
    await page.selectOption('#import-format', 'openai-chat');
    await page.setInputFiles('#import-file', file);
    await page.waitForFunction((n) => document.getElementById('entry-count').textContent === String(n), expectedSize);
    assert.match(await page.textContent('#status'), /Imported hostile-openai-chat\.json \(openai-chat\)/);
    assert.equal(await page.textContent('#stat-file'), 'hostile-openai-chat.jsonl');
    // Browse every node: the payloads stay text.
    await page.click('#goto-leaf');
    await page.click('#tab-context');
    await page.waitForSelector('#panel-context');
    const text = await page.textContent('body');
    assert.ok(text.includes('<img src=x onerror'), 'payload shown as text');
    await shot(page, 'import-hostile');
    assert.equal(await page.evaluate(() => window.pwned ?? false), false);
    assert.equal(await page.locator('script').count(), 1, 'only the page script');
    assert.equal(await page.locator('iframe, object, embed, a[href]').count(), 0);
    // A malformed file says so and keeps the session shown.
    const bad = path.join(fixturesDir, 'not-messages.json');
    writeFileSync(bad, '{"hello": 1}');
    await page.setInputFiles('#import-file', bad);
    await page.waitForFunction(() =>
      /expected an array of messages/.test(document.getElementById('status').textContent),
    );
    assert.equal(await page.textContent('#stat-file'), 'hostile-openai-chat.jsonl');
    assert.deepEqual(problems, []);
  });
});

test('simulate: the summarizer can be the OpenAI-compatible endpoint of the Actions tab', async () => {
  const fake = await fakeSummarizer();
  try {
    await withDemo(async (page, problems) => {
      await chooseChatEndpoint(page, fake.url);
      await setUp(page, { strategy: 'context-full', turns: 60 });
      await page.selectOption('#sim-summarizer', 'endpoint');
      await page.click('#sim-start');
      await page.waitForSelector('#sim-panel[data-state="done"], #sim-panel[data-state="error"]', {
        timeout: 120_000,
      });
      const sim = await page.evaluate(() => window.__simulation);
      assert.equal(sim.state, 'done', sim.error ?? '');
      const compactions = sim.markers.filter((m) => m.kind === 'compaction');
      assert.ok(compactions.length >= 1);
      assert.ok(fake.requests.length >= compactions.length, `${fake.requests.length} summarizer calls`);
      for (const r of fake.requests) {
        assert.equal(r.url, '/v1/chat/completions');
        assert.equal(r.authorization, 'Bearer sk-test-secret');
        assert.equal(r.body.model, 'tiny-model');
      }
      const summary = await page.evaluate((id) => window.explorer.session.entry(id).summary, compactions[0].entryId);
      assert.match(summary, /Summary from the fake endpoint/);
      // Background compaction (issue 39) prepares a summary below the threshold and cancels its
      // own request when an overflow or a changed prefix overtakes it: those requests end
      // aborted, by design. Every other problem still fails the test.
      const aborted = `requestfailed: ${fake.url}/v1/chat/completions net::ERR_ABORTED`;
      assert.deepEqual(
        problems.filter((p) => p !== aborted),
        [],
      );
    });
  } finally {
    await fake.close();
  }
});
