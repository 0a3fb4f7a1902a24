// The session tree explorer (www/) in headless Chromium, served on 127.0.0.1 with the built
// package. Every state is saved as a screenshot under tests/out/screenshots/explorer-*.png.
//
// The figures the page shows are compared with what the Node build computes for the same file.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { outDir, pkgDir, repoDir } from '../js/support/project.mjs';
import { archiveSession, hostileSession, largeSession, PAYLOADS } from './fixtures.mjs';
import { chooseChatEndpoint, fakeSummarizer, useChromium, withPage } from './support.mjs';

const { Session, frameTokens, renderFrames } = await import(
  pathToFileURL(path.join(pkgDir, 'entries', 'node.js')).href
);

const sampleDir = path.join(outDir, 'sample');
const sampleFile = path.join(sampleDir, 'sample.jsonl');
const fixturesDir = path.join(outDir, 'fixtures');
const shotsDir = path.join(outDir, 'screenshots');

const harness = useChromium(async () => {
  if (!existsSync(sampleFile)) {
    mkdirSync(sampleDir, { recursive: true });
    const res = spawnSync(
      'cargo',
      [
        'run',
        '--quiet',
        '-p',
        'ctxfold-testkit',
        '--bin',
        'gen-session',
        '--',
        '--preset',
        'sample',
        '--out',
        sampleFile,
      ],
      { cwd: repoDir, stdio: ['ignore', 'inherit', 'inherit'] },
    );
    assert.equal(res.status, 0, 'gen-session');
  }
  mkdirSync(fixturesDir, { recursive: true });
  mkdirSync(shotsDir, { recursive: true });
  return {
    '/': fileURLToPath(new URL('../../www/', import.meta.url)),
    '/pkg/': pkgDir,
    '/sample/': sampleDir + path.sep,
  };
});

const fmt = (n) => n.toLocaleString('en-US');

/** The bundled sample, loaded under Node.js. */
function loadSample() {
  return Session.fromJsonl(readFileSync(sampleFile));
}

/**
 * Opens the explorer on the bundled sample, recording long tasks (main-thread stalls), runs
 * `body(page, problems)` and closes the page.
 */
function withExplorer(body) {
  return withPage(harness.browser, async (page, problems) => {
    await page.setViewportSize({ width: 1500, height: 950 });
    await page.addInitScript(() => {
      window.__longTasks = [];
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) window.__longTasks.push(Math.round(e.duration));
      }).observe({ type: 'longtask', buffered: true });
    });
    await page.goto(harness.server.url);
    await page.waitForSelector('body[data-ready="true"][data-stats="ready"]');
    return body(page, problems);
  });
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(shotsDir, `explorer-${name}.png`) });
}

/**
 * Writes `text` as the fixture file `name`, opens it through the file input and waits for the
 * page to have loaded it. Long tasks are counted afresh from here; resolves to the milliseconds
 * the load took.
 */
async function openFixture(page, name, text) {
  const file = path.join(fixturesDir, name);
  writeFileSync(file, text);
  await page.evaluate(() => {
    window.__longTasks.length = 0;
    document.body.dataset.ready = 'loading';
  });
  const t0 = Date.now();
  await page.setInputFiles('#file', file);
  await page.waitForSelector('body[data-ready="true"][data-stats="ready"]', { timeout: 60_000 });
  return Date.now() - t0;
}

/** Scrolls the virtualised tree from top to bottom; collects what each row showed. */
function collectRows(page) {
  return page.evaluate(async () => {
    const tree = document.getElementById('tree');
    const rows = new Map();
    const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    for (let y = 0; ; y += Math.max(100, tree.clientHeight / 2)) {
      tree.scrollTop = y;
      await frame();
      for (const card of tree.querySelectorAll('.node')) {
        rows.set(card.dataset.row, {
          kind: card.dataset.kind,
          branch: card.dataset.branch ?? null,
          leaf: card.dataset.leaf === 'true',
          text: card.textContent,
        });
      }
      if (y >= tree.scrollHeight) break;
    }
    return [...rows.values()];
  });
}

/** Branch points (entries with more than one child) of a session, counted in Node. */
function branchPoints(s) {
  const children = new Map();
  for (const e of s.index()) if (e.parentId !== null) children.set(e.parentId, (children.get(e.parentId) ?? 0) + 1);
  return [...children.values()].filter((n) => n > 1).length;
}

test('the explorer loads the sample: counts, tree, branch points and compactions', async () => {
  const s = loadSample();
  const index = s.index();
  const want = {
    entries: fmt(s.size),
    path: `${fmt(s.pathTo(s.leafId).length)} entries`,
    messages: fmt(s.buildContext().messages.length),
    tokens: fmt(s.contextTokens().estimatedTokens),
    branchPoints: fmt(branchPoints(s)),
    compactions: fmt(index.filter((e) => e.type === 'compaction').length),
  };
  assert.ok(
    branchPoints(s) >= 2 && index.some((e) => e.type === 'compaction'),
    'the sample has branches and compactions',
  );
  await withExplorer(async (page, problems) => {
    const got = {
      entries: await page.textContent('#entry-count'),
      path: await page.textContent('#path-length'),
      messages: await page.textContent('#context-messages'),
      tokens: await page.textContent('#context-tokens'),
      branchPoints: await page.textContent('#stat-branch-points'),
      compactions: await page.textContent('#stat-compactions'),
    };
    assert.deepEqual(got, want);
    await page.waitForFunction(() => document.getElementById('tally').textContent === '');
    await shot(page, 'sample');

    // What the tree draws: every compaction as a compaction node, every branch point as a fork.
    const rows = await collectRows(page);
    assert.equal(
      rows.filter((r) => r.kind === 'compaction').length,
      index.filter((e) => e.type === 'compaction').length,
    );
    assert.equal(
      rows.filter((r) => r.kind === 'branch_summary').length,
      index.filter((e) => e.type === 'branch_summary').length,
    );
    assert.equal(rows.filter((r) => r.branch !== null).length, branchPoints(s));
    assert.equal(rows.filter((r) => r.leaf).length, 1, 'one leaf badge');
    // The active path is highlighted: the leaf's segment and its ancestors.
    assert.ok((await page.locator('.edge.active').count()) > 0);
    // Labels are shown.
    const labels = Object.values(s.labels());
    assert.ok(
      rows.some((r) => labels.some((l) => r.text.includes(l))),
      'labels on the tree',
    );
    assert.deepEqual(problems, []);
  });
});

test('clicking a node shows its entry text; a run lists its entries', async () => {
  const s = loadSample();
  await withExplorer(async (page, problems) => {
    // A compaction node: its summary.
    const compaction = page.locator('.node[data-kind="compaction"]').first();
    await compaction.click();
    const id = await page.getAttribute('#panel-entry .entry', 'data-entry');
    const entry = s.entry(id);
    assert.equal(entry.type, 'compaction');
    const panel = await page.textContent('#panel-entry');
    assert.ok(panel.includes(entry.summary.slice(0, 200).replace(/\s+$/, '')), 'the compaction summary is shown');
    await shot(page, 'compaction-node');

    // A run: its first user message, and a list of its entries.
    const run = page.locator('.node[data-kind="run"][data-entries]').filter({ hasText: 'user' }).nth(1);
    await run.click();
    const runId = await page.getAttribute('#panel-entry .entry', 'data-entry');
    const message = s.entry(runId).message;
    assert.equal(message.role, 'user');
    const text =
      typeof message.content === 'string' ? message.content : message.content.find((b) => b.type === 'text').text;
    assert.ok(
      (await page.textContent('#panel-entry .entry')).includes(text.slice(0, 120)),
      'the message text is shown',
    );
    assert.ok((await page.locator('#panel-entry .seg-row').count()) > 1, 'the run lists its entries');

    // Another entry of the run: an assistant message with tool calls, and its result.
    await page.locator('#panel-entry .seg-row', { hasText: 'assistant' }).first().click();
    const assistantId = await page.getAttribute('#panel-entry .entry', 'data-entry');
    const assistant = s.entry(assistantId).message;
    const call = assistant.content.find((b) => b.type === 'toolCall');
    if (call) assert.ok((await page.textContent('#panel-entry .entry .tool-name')).includes(call.name));
    await shot(page, 'entry');

    // Keyboard: ArrowDown moves to the next node.
    const before = await page.getAttribute('.node.selected', 'data-row');
    await page.focus('#tree');
    await page.keyboard.press('ArrowDown');
    await page.waitForFunction(
      (b) => document.querySelector('.node.selected')?.dataset.row === String(Number(b) + 1),
      before,
    );
    assert.deepEqual(problems, []);
  });
});

test('the context view: compaction boundary, kept region, totals against the window', async () => {
  const s = loadSample();
  const ctx = s.buildContext();
  const tokens = s.contextTokens();
  await withExplorer(async (page, problems) => {
    await page.click('#tab-context');
    await page.waitForSelector('#panel-context .ctx-row');
    assert.equal(await page.textContent('#ctx-messages'), fmt(tokens.messages));
    // One figure per state: the core's estimate, as in the header (not usage + trailing).
    assert.match(await page.textContent('#ctx-tokens'), new RegExp(`^${fmt(tokens.estimatedTokens)}`));
    assert.equal(await page.textContent('#ctx-threshold'), '170,000 of 200,000 (reserve 30,000)');
    assert.ok(ctx.compactionId, 'the sample leaf is past a compaction');
    assert.equal(await page.getAttribute('#panel-context .ctx-row >> nth=0', 'data-region'), 'summary');
    assert.equal(await page.getAttribute('#panel-context .ctx-row >> nth=0', 'data-entry'), ctx.compactionId);
    assert.equal(await page.getAttribute('#panel-context .ctx-row >> nth=1', 'data-entry'), ctx.firstKeptEntryId);
    assert.equal(await page.getAttribute('#panel-context .ctx-row >> nth=1', 'data-region'), 'kept');
    await page.waitForFunction(() => !document.getElementById('ctx-regions').textContent.includes('…'));
    await shot(page, 'context');

    // Another window and threshold.
    await page.selectOption('#ctx-window', '128000');
    await page.fill('#ctx-percent', '50');
    await page.press('#ctx-percent', 'Tab');
    await page.waitForFunction(() =>
      /^64,000 of 128,000/.test(document.getElementById('ctx-threshold')?.textContent ?? ''),
    );

    // The display transcript: everything on the path, what the LLM does not see dimmed.
    await page.check('#ctx-transcript');
    await page.waitForSelector('#panel-context .ctx-row[data-region="hidden"]');
    const transcript = s.buildContext({ transcript: true });
    assert.ok(transcript.messages.length > ctx.messages.length);
    assert.ok(
      (await page.locator('#panel-context .context-list').evaluate((el) => el.scrollHeight)) >=
        transcript.messages.length * 28 - 1,
    );
    await shot(page, 'context-transcript');
    assert.deepEqual(problems, []);
  });
});

test('navigate: make another node the leaf, undo, download', async () => {
  const s = loadSample();
  await withExplorer(async (page, problems) => {
    const leaf = s.leafId;
    await page.$eval('#tree', (el) => (el.scrollTop = 0));
    await page.waitForFunction(() => document.querySelector('.node')?.dataset.row === '0');
    await page.locator('.node[data-kind="branch_summary"]').first().click();
    await page.waitForSelector('#panel-entry .entry[data-type="branch_summary"]');
    const target = await page.getAttribute('#panel-entry .entry', 'data-entry');
    await page.click('#panel-entry [data-action="branch"]');
    await page.waitForFunction(() => document.querySelector('.badge.leaf'));
    assert.equal(await page.textContent('#path-length'), `${fmt(s.pathTo(target).length)} entries`);
    assert.equal(await page.evaluate(() => window.explorer.session.leafId), target);
    await shot(page, 'navigated');
    await page.click('#undo');
    assert.equal(await page.evaluate(() => window.explorer.session.leafId), leaf);
    assert.equal(await page.textContent('#path-length'), `${fmt(s.pathTo(leaf).length)} entries`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
    const saved = path.join(fixturesDir, 'downloaded.jsonl');
    await download.saveAs(saved);
    assert.equal(download.suggestedFilename(), 'sample.jsonl');
    assert.deepEqual(readFileSync(saved), readFileSync(sampleFile), 'unchanged lines are written back byte for byte');
    assert.deepEqual(problems, []);
  });
});

test('snapcompact preview: frames shown as images with their billed cost per provider', async () => {
  await withExplorer(async (page, problems) => {
    await page.click('#tab-actions');
    assert.equal(await page.isChecked('input[name="strategy"][value="snapcompact"]'), true);
    // A small kept region: the compaction (and so its preview) images the middle of the history.
    await page.fill('#keep-recent', '2000');
    await page.press('#keep-recent', 'Tab');
    await page.click('#preview-run');
    await page.waitForSelector('#compact-output .frame img', { timeout: 60_000 });
    const frames = await page.locator('#compact-output .frame img').count();
    assert.ok(frames >= 1);
    // Every frame decodes (the browser's own PNG decoder) and is as wide as the shape's frame.
    const sizes = await page.$$eval('#compact-output .frame img', (imgs) =>
      Promise.all(imgs.map((img) => img.decode().then(() => [img.naturalWidth, img.naturalHeight]))),
    );
    for (const [w, h] of sizes) {
      assert.equal(w, 1568);
      assert.ok(h >= 64 && h <= 1568);
    }
    // The billed cost per provider family (spec: snapcompact §4.2).
    for (const [api, perFrame] of [
      ['anthropic-messages', 3293],
      ['openai-responses', 2882],
      ['google-generative-ai', 1120],
    ]) {
      assert.equal(frameTokens(api, 1568), perFrame);
      const total = await page.textContent(`#compact-output tr[data-provider="${api}"] td:nth-child(3)`);
      assert.equal(total, fmt(perFrame * frames));
    }
    assert.match(await page.textContent('#compact-output'), /Preview only/);
    await shot(page, 'snapcompact-preview');
    // Full size on click.
    await page.locator('#compact-output .frame').first().click();
    await page.waitForSelector('#lightbox[open] .lightbox-img');
    assert.equal(await page.$eval('#lightbox .lightbox-img', (img) => img.naturalWidth), 1568);
    await shot(page, 'frame-full-size');
    await page.keyboard.press('Escape');
    assert.equal(await page.locator('#lightbox[open]').count(), 0);
    // Nothing was written.
    assert.equal(await page.textContent('#stat-compactions'), '3');
    assert.deepEqual(problems, []);
  });
});

test('a snapcompact compaction adds a compaction node and shows its frames', async () => {
  await withExplorer(async (page, problems) => {
    const before = Number((await page.textContent('#stat-compactions')).replace(/,/g, ''));
    await page.click('#tab-actions');
    // A small kept region: enough history for an imaged middle between the verbatim edges.
    await page.fill('#keep-recent', '2000');
    await page.press('#keep-recent', 'Tab');
    await page.click('#compact-run');
    await page.waitForFunction(
      (n) => Number(document.getElementById('stat-compactions').textContent.replace(/,/g, '')) === n + 1,
      before,
      { timeout: 60_000 },
    );
    await page.click('#tab-entry');
    await page.waitForSelector('#panel-entry .frames .frame img');
    await shot(page, 'snapcompact-compaction');
    assert.deepEqual(problems, []);
  });
});

test('a snapcompact archive in the session: its frames, full size, with their cost', async () => {
  const text = 'Reading the films of the archive. '.repeat(400);
  const rendered = renderFrames(text, { shape: '8on16-bw', frameSize: 512 });
  const frames = rendered.map((f) => ({
    data: Buffer.from(f.png).toString('base64'),
    mimeType: 'image/png',
    cols: f.cols,
    rows: f.rows,
    chars: f.chars,
  }));
  const { text: jsonl, compaction } = archiveSession(frames);
  await withExplorer(async (page, problems) => {
    await openFixture(page, 'archive.jsonl', jsonl);
    await page.locator('.node[data-kind="compaction"]').click();
    await page.waitForSelector('#panel-entry .frames .frame img');
    assert.equal(await page.getAttribute('#panel-entry .entry', 'data-entry'), compaction);
    assert.equal(await page.locator('#panel-entry .frames .frame img').count(), frames.length);
    assert.equal(
      await page.textContent('#panel-entry tr[data-provider="anthropic-messages"] td:nth-child(3)'),
      fmt(frameTokens('anthropic-messages', 512) * frames.length),
    );
    assert.match(await page.textContent('.node[data-kind="compaction"]'), new RegExp(`${frames.length} frames`));
    await shot(page, 'archive-frames');
    await page.locator('#panel-entry .frame').nth(1).click();
    await page.waitForSelector('#lightbox[open]');
    assert.match(await page.textContent('#lightbox .lightbox-caption'), /^frame 2 of/);
    await page.keyboard.press('Escape');
    assert.deepEqual(problems, []);
  });
});

test('compact now through an OpenAI-compatible endpoint and the remote protocol; undo; download', async () => {
  const fake = await fakeSummarizer();
  try {
    await withExplorer(async (page, problems) => {
      await chooseChatEndpoint(page, fake.url);
      await page.fill('#keep-recent', '2000');
      await page.press('#keep-recent', 'Tab');
      const leaf = await page.evaluate(() => window.explorer.session.leafId);
      await page.click('#compact-run');
      await page.waitForFunction(() => document.getElementById('stat-compactions').textContent === '4', null, {
        timeout: 30_000,
      });
      assert.match(await page.textContent('#compact-status'), /^Compacted: /);
      assert.ok(fake.requests.length >= 1);
      for (const r of fake.requests) {
        assert.equal(r.url, '/v1/chat/completions');
        assert.equal(r.authorization, 'Bearer sk-test-secret');
        assert.equal(r.body.model, 'tiny-model');
      }
      // The key stays in memory: not in storage, not in the DOM's attributes.
      const stored = await page.evaluate(
        () =>
          JSON.stringify({ ...localStorage }) +
          JSON.stringify({ ...sessionStorage }) +
          document.documentElement.outerHTML,
      );
      assert.ok(!stored.includes('sk-test-secret'));
      // The new compaction is selected and is the leaf.
      const newId = await page.evaluate(() => window.explorer.session.leafId);
      assert.notEqual(newId, leaf);
      await page.click('#tab-entry');
      assert.equal(await page.getAttribute('#panel-entry .entry', 'data-entry'), newId);
      assert.match(await page.textContent('#panel-entry .entry'), /Summary from the fake endpoint/);
      await shot(page, 'compacted');

      // Undo moves the leaf back; the compaction stays in the file as a branch.
      await page.click('#undo');
      assert.equal(await page.evaluate(() => window.explorer.session.leafId), leaf);

      // The remote endpoint protocol.
      await page.click('#tab-actions');
      await page.check('input[name="strategy"][value="remote"]');
      await page.fill('#remote-url', `${fake.url}/compact`);
      const count = fake.requests.length;
      await page.click('#compact-run');
      await page.waitForFunction(() => document.getElementById('stat-compactions').textContent === '5', null, {
        timeout: 30_000,
      });
      const remote = fake.requests.slice(count);
      assert.ok(remote.length >= 1);
      for (const r of remote) {
        assert.equal(r.url, '/compact');
        assert.deepEqual(Object.keys(r.body).sort(), ['maxTokens', 'prompt', 'systemPrompt']);
      }

      // A failing endpoint: the error is shown as text, the session is left as it was.
      await page.click('#undo');
      await page.click('#tab-actions');
      await page.fill('#remote-url', `${fake.url}/fail`);
      await page.click('#compact-run');
      await page.waitForFunction(() => document.getElementById('compact-status').className.includes('error'), null, {
        timeout: 30_000,
      });
      assert.match(
        await page.textContent('#compact-status'),
        /^Not compacted \(the session is unchanged\): E_SUMMARIZER: .*400/,
      );
      assert.equal(await page.textContent('#stat-compactions'), '5');
      assert.equal(await page.evaluate(() => window.pwned ?? false), false);

      const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
      const saved = path.join(fixturesDir, 'compacted.jsonl');
      await download.saveAs(saved);
      const reloaded = Session.fromJsonl(readFileSync(saved));
      assert.equal(reloaded.index().filter((e) => e.type === 'compaction').length, 5);
      assert.equal(reloaded.warnings.length, 0);
      // The 400 answer is reported by Chromium itself; nothing else may be.
      assert.deepEqual(
        problems.filter((p) => !p.endsWith('/fail') && !p.includes('status of 400')),
        [],
      );
    });
  } finally {
    await fake.close();
  }
});

test('a hostile session renders as text, runs nothing and does not freeze the page', async () => {
  const { text, ids } = hostileSession();
  await withExplorer(async (page, problems) => {
    const loadMs = await openFixture(page, 'hostile.jsonl', text);
    assert.equal(await page.textContent('#entry-count'), fmt(100_000 + 9));
    // The malformed lines are listed, not fatal.
    await page.click('#tab-report');
    const warnings = await page.locator('#warnings li').allTextContents();
    assert.equal(warnings.length, 2);
    assert.match(warnings[0], /^line 11: E_JSONL_LINE/);
    await shot(page, 'hostile-report');

    // The payloads show as text.
    await page.evaluate((id) => window.explorer.selectEntry(id), ids.toolResult);
    await page.waitForSelector(`#panel-entry .entry[data-entry="${ids.toolResult}"]`);
    const panel = await page.textContent('#panel-entry .entry');
    for (const p of PAYLOADS) assert.ok(panel.includes(p), `shown as text: ${p}`);
    assert.ok((await page.textContent('#panel-entry .tool-name')).includes(PAYLOADS[1]));
    assert.match(panel, /\[image not shown: image\/svg\+xml/);
    await shot(page, 'hostile-entry');
    await page.evaluate((id) => window.explorer.selectEntry(id), ids.assistant);
    await page.waitForSelector(`#panel-entry .entry[data-entry="${ids.assistant}"]`);
    assert.ok((await page.textContent('#panel-entry .tool-name')).includes(PAYLOADS[1]));
    // Labels are shown as text on the tree.
    assert.ok((await page.locator('.node .tag').allTextContents()).some((t) => t.includes('<img src=x')));
    await page.evaluate((id) => window.explorer.selectEntry(id), ids.weirdId);
    await page.waitForSelector('#panel-entry .entry-id');
    assert.equal(await page.textContent('#panel-entry .entry-id'), ids.weirdId);

    // The 5 MB line: the head is shown, the rest on request.
    await page.evaluate((id) => window.explorer.selectEntry(id), ids.big);
    await page.waitForSelector(`#panel-entry .entry[data-entry="${ids.big}"] .long-text`);
    assert.match(await page.textContent('#panel-entry .long-text button'), /^Show all 5,24\d,\d{3} characters$/);
    await shot(page, 'hostile-big-line');

    // The 100,000-deep chain is one node; its entry list scrolls to the end.
    await page.click('#goto-leaf');
    await page.waitForSelector(`#panel-entry .entry[data-entry="${ids.leaf}"]`);
    assert.ok((await page.locator('.node').count()) < 40, 'the chain is folded into a few nodes');
    assert.match(await page.textContent('.node.selected'), /100,00\d entries/);
    const listed = await page.$eval('#panel-entry .seg-list', (el) => el.scrollHeight);
    assert.ok(listed >= 100_000 * 30, 'the whole chain is listed (virtually)');
    await shot(page, 'hostile-chain');

    // The context view stays responsive: 100,000 messages are listed on request only.
    await page.click('#tab-context');
    await page.waitForSelector('#panel-context button:has-text("List 100,00")');
    await shot(page, 'hostile-context');

    // Nothing ran, nothing was fetched or linked, no HTML from the session became elements.
    assert.equal(await page.evaluate(() => window.pwned ?? false), false);
    assert.equal(await page.locator('script').count(), 1, 'only the page script');
    assert.equal(await page.locator('iframe, object, embed, link[rel=stylesheet][href^="http"], a[href]').count(), 0);
    const imgs = await page.$$eval('img[src]', (els) => els.map((e) => e.src));
    assert.ok(
      imgs.every((src) => src.startsWith('blob:')),
      `images only from blob: URLs (${imgs})`,
    );
    // No freeze: the longest main-thread task while loading and browsing.
    const longTasks = await page.evaluate(() => window.__longTasks);
    const longest = Math.max(0, ...longTasks);
    console.log(
      `# hostile session: opened in ${loadMs} ms; longest task ${longest} ms; ${longTasks.length} long tasks`,
    );
    assert.ok(longest < 2_000, `longest task ${longest} ms`);
    assert.deepEqual(problems, []);
  });
});

test('a 50,000-entry session loads, scrolls and answers without freezing', async () => {
  const { text, counts } = largeSession({ entries: 50_000 });
  await withExplorer(async (page, problems) => {
    const loadMs = await openFixture(page, 'large-50k.jsonl', text);
    assert.equal(await page.textContent('#entry-count'), fmt(counts.entries));
    assert.equal(await page.textContent('#stat-compactions'), fmt(counts.compactions));
    assert.equal(await page.textContent('#stat-branch-summaries'), fmt(counts.branchSummaries));
    assert.equal(await page.textContent('#stat-branch-points'), fmt(counts.branchPoints));
    // The page answers while the token estimates are being counted.
    const t1 = Date.now();
    await page.evaluate(() => 1);
    const answerMs = Date.now() - t1;
    await page.waitForFunction(() => document.getElementById('tally').textContent === '', null, { timeout: 60_000 });
    const rows = await collectRows(page);
    assert.equal(rows.filter((r) => r.kind === 'compaction').length, counts.compactions);
    assert.equal(rows.filter((r) => r.branch !== null).length, counts.branchPoints);
    assert.ok((await page.locator('.node').count()) < 80, 'only the rows in view are in the DOM');
    await page.click('#goto-leaf');
    await page.click('#tab-context');
    await page.waitForSelector('#panel-context .ctx-row');
    await shot(page, 'large');
    const longTasks = await page.evaluate(() => window.__longTasks);
    const longest = Math.max(0, ...longTasks);
    console.log(`# 50,000 entries: opened in ${loadMs} ms; answered in ${answerMs} ms; longest task ${longest} ms`);
    assert.ok(longest < 1_500, `longest task ${longest} ms`);
    assert.deepEqual(problems, []);
  });
});

test('drag and drop opens a file; malformed lines are listed as text', async () => {
  await withExplorer(async (page, problems) => {
    const text = [
      '{"type":"session","version":3,"id":"h","cwd":"/"}',
      '{"type":"message","id":"1","parentId":null,"message":{"role":"user","content":"<img src=x onerror=alert(1)>"}}',
      '<script>window.pwned = true</script>',
    ].join('\n');
    const dataTransfer = await page.evaluateHandle((t) => {
      const dt = new DataTransfer();
      dt.items.add(new File([t], 'dropped.jsonl', { type: 'application/jsonl' }));
      return dt;
    }, text);
    await page.dispatchEvent('#tree', 'dragenter', { dataTransfer });
    assert.equal(await page.isVisible('#drop-overlay'), true);
    await shot(page, 'drop');
    await page.evaluate(() => (document.body.dataset.ready = 'loading'));
    await page.dispatchEvent('#tree', 'drop', { dataTransfer });
    await page.waitForSelector('body[data-ready="true"][data-stats="ready"]');
    assert.equal(await page.isVisible('#drop-overlay'), false);
    assert.equal(await page.textContent('#entry-count'), '1');
    assert.equal(await page.textContent('#stat-file'), 'dropped.jsonl');
    const warnings = await page.locator('#warnings li').allTextContents();
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /^line 3: E_JSONL_LINE/);
    assert.ok((await page.textContent('#panel-entry .entry')).includes('<img src=x onerror=alert(1)>'));
    assert.equal(await page.evaluate(() => window.pwned ?? false), false);
    assert.equal(await page.locator('img[src]').count(), 0);
    // Not a session at all: an error, and the previous session stays.
    await page.setInputFiles('#file', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello\n') });
    await page.waitForFunction(() => document.getElementById('status').className.includes('error'));
    assert.match(await page.textContent('#status'), /E_NOT_A_SESSION/);
    assert.equal(await page.textContent('#entry-count'), '1');
    assert.deepEqual(problems, []);
  });
});

test('prune and navigate with a branch summary from the actions panel', async () => {
  const fake = await fakeSummarizer();
  try {
    await withExplorer(async (page, problems) => {
      const s = loadSample();
      const stale = s.pruneStale({ idleFlushMs: 90 * 60_000, dryRun: true });
      assert.ok(stale.prunedCount > 0, 'the sample has superseded or uneventful results');
      await page.click('#tab-actions');
      await page.click('#prune-run');
      await page.waitForFunction(() =>
        /^pruned \d+ results/.test(document.querySelector('#prune-section .action-status')?.textContent ?? ''),
      );
      const pruned = await page.evaluate(
        () =>
          window.explorer.session
            .index()
            .filter((e) => window.explorer.session.entry(e.id)?.message?.prunedAt !== undefined).length,
      );
      assert.equal(pruned, stale.prunedCount);
      await shot(page, 'pruned');

      // Navigate to the first branch summary node, summarizing the branch left behind.
      await page.check('input[name="strategy"][value="chat"]');
      await page.fill('#chat-url', `${fake.url}/v1`);
      await page.fill('#chat-model', 'tiny-model');
      await page.click('#tab-entry');
      await page.$eval('#tree', (el) => (el.scrollTop = 0));
      await page.waitForFunction(() => document.querySelector('.node')?.dataset.row === '0');
      await page.locator('.node[data-kind="branch_summary"]').first().click();
      await page.waitForSelector('#panel-entry .entry[data-type="branch_summary"]');
      const target = await page.getAttribute('#panel-entry .entry', 'data-entry');
      const leaf = await page.evaluate(() => window.explorer.session.leafId);
      await page.click('#tab-actions');
      await page.click('#navigate-summary');
      await page.waitForFunction(() => /Navigated; branch summary/.test(document.body.textContent), null, {
        timeout: 30_000,
      });
      const after = await page.evaluate(() => {
        const s = window.explorer.session;
        const e = s.entry(s.leafId);
        return { type: e.type, parentId: e.parentId, summary: e.summary };
      });
      assert.equal(after.type, 'branch_summary');
      assert.equal(after.parentId, target, 'the summary hangs at the navigation target');
      assert.match(after.summary, /Summary from the fake endpoint/);
      assert.ok(fake.requests.some((r) => r.url === '/v1/chat/completions' && r.body.model === 'tiny-model'));
      await shot(page, 'navigated-with-summary');
      await page.click('#undo');
      assert.equal(await page.evaluate(() => window.explorer.session.leafId), leaf);
      assert.deepEqual(problems, []);
    });
  } finally {
    await fake.close();
  }
});

test('selecting a run card does not move the leaf: Compact then compacts at the leaf, no fork', async () => {
  await withExplorer(async (page, problems) => {
    const leaf = await page.evaluate(() => window.explorer.session.leafId);
    await page.$eval('#tree', (el) => (el.scrollTop = 0));
    await page.waitForFunction(() => document.querySelector('.node')?.dataset.row === '0');
    await page.locator('.node[data-kind="run"][data-entries]').filter({ hasText: 'user' }).nth(1).click();
    const selected = await page.getAttribute('#panel-entry .entry', 'data-entry');
    assert.notEqual(selected, leaf, 'a run card away from the leaf is selected');
    assert.equal(await page.evaluate(() => window.explorer.session.leafId), leaf, 'selecting does not move the leaf');
    await page.click('#tab-actions');
    const where = await page.textContent('#compact-section p');
    await page.fill('#keep-recent', '2000');
    await page.press('#keep-recent', 'Tab');
    await page.click('#compact-run');
    await page.waitForFunction(() => /\b(ok|error)\b/.test(document.getElementById('compact-status').className), null, {
      timeout: 60_000,
    });
    assert.match(await page.textContent('#compact-status'), /^Compacted: /);
    const after = await page.evaluate(() => {
      const s = window.explorer.session;
      const e = s.entry(s.leafId);
      const children = s.index().filter((x) => x.parentId === e.parentId).length;
      return { type: e.type, parentId: e.parentId, children };
    });
    assert.equal(after.type, 'compaction');
    assert.equal(after.parentId, leaf, 'the compaction hangs at the leaf');
    assert.equal(after.children, 1, 'no fork: the old leaf has one child, the compaction');
    assert.match(
      where,
      new RegExp(`^At the session leaf ${leaf} \\(not the selected entry`),
      'the panel says where Compact works',
    );
    assert.deepEqual(problems, []);
  });
});

test('one token figure per state: header, Context tab, compaction report and status agree', async () => {
  const s = loadSample();
  const compactionId = s.buildContext().compactionId;
  const atCompaction = s.contextTokens({ leafId: compactionId });
  assert.ok(atCompaction.tokens > atCompaction.estimatedTokens, 'the usage before the compaction differs there');
  assert.equal(atCompaction.usageIsCurrent, false, 'the core says that usage is not the current context');
  const figure = fmt(s.contextTokens().estimatedTokens);
  const parentFigure = fmt(s.contextTokens({ leafId: s.entry(compactionId).parentId }).estimatedTokens);
  await withExplorer(async (page, problems) => {
    const header = () => page.textContent('#context-tokens');
    assert.equal(await header(), figure);
    await page.click('#tab-context');
    await page.waitForSelector('#panel-context .ctx-row');
    assert.match(await page.textContent('#ctx-tokens'), new RegExp(`^${figure}`));
    assert.match(await page.getAttribute('#panel-context .gauge', 'aria-label'), new RegExp(`^${figure} of`));

    // At the compaction: the usage reported before it is not counted after it.
    await page.evaluate((id) => window.explorer.selectEntry(id, { tab: 'context' }), compactionId);
    await page.waitForFunction((id) => document.querySelector('.context-where code')?.textContent === id, compactionId);
    assert.match(await page.textContent('#ctx-tokens'), new RegExp(`^${fmt(atCompaction.estimatedTokens)}`));
    assert.equal(await page.textContent('#ctx-usage'), 'none since the last compaction');
    // Its report: the figures of the states before and after it.
    await page.click('#tab-compaction');
    assert.match(
      await page.textContent('#rp-numbers'),
      new RegExp(`^${parentFigure} → ${fmt(atCompaction.estimatedTokens)} tokens`),
    );

    // Compact at the leaf: the status' figures are the header's before and after.
    await page.click('#goto-leaf');
    await page.click('#tab-actions');
    await page.fill('#keep-recent', '2000');
    await page.press('#keep-recent', 'Tab');
    await page.evaluate(() => (document.body.dataset.stats = 'pending'));
    await page.click('#compact-run');
    await page.waitForFunction(() => /\b(ok|error)\b/.test(document.getElementById('compact-status').className), null, {
      timeout: 60_000,
    });
    const [, before, after] = (await page.textContent('#compact-status')).match(
      /^Compacted: ([\d,]+) → ([\d,]+) tokens/,
    );
    assert.equal(before, figure);
    await page.waitForSelector('body[data-stats="ready"]');
    assert.equal(await header(), after);
    await page.click('#tab-context');
    await page.waitForSelector('#panel-context .ctx-row');
    assert.match(await page.textContent('#ctx-tokens'), new RegExp(`^${after}`));
    await page.click('#tab-compaction');
    assert.match(await page.textContent('#rp-numbers'), new RegExp(`^${before} → ${after} tokens`));
    assert.deepEqual(problems, []);
  });
});

test('search and filter the tree (text, entry id, role, tool name), smooth on 50,000 entries', async () => {
  const { text, counts } = largeSession({ entries: 50_000 });
  const s = Session.fromJsonl(text);
  const index = s.index();
  const users = index.filter((e) => e.role === 'user').length;
  const results = index.filter((e) => e.role === 'toolResult').length;
  const hits = s.searchHistory('Task 4242', { limit: 200 });
  const userHits = s.searchHistory('file 13.ts', { limit: 200, roles: ['user'] });
  s.free();
  await withExplorer(async (page, problems) => {
    await openFixture(page, 'search-50k.jsonl', text);
    await page.waitForFunction(() => document.getElementById('tally').textContent === '', null, { timeout: 60_000 });
    const leaf = await page.evaluate(() => window.explorer.session.leafId);
    await page.evaluate(() => (window.__longTasks.length = 0));
    const search = async ({ query = '', role = '', tool = '' }) => {
      await page.evaluate(() => (document.getElementById('tree-search-form').dataset.state = 'pending'));
      await page.fill('#tree-search', query);
      await page.fill('#tree-tool', tool);
      await page.selectOption('#tree-role', role);
      await page.press('#tree-search', 'Enter');
      await page.waitForSelector('#tree-search-form[data-state="done"]', { timeout: 30_000 });
      return {
        count: await page.textContent('#search-count'),
        rows: await page.$$eval('#search-list .search-row', (els) => els.map((e) => e.dataset.entry)),
      };
    };

    // Text, through the package's searchHistory: its hits in its order.
    let got = await search({ query: 'Task 4242' });
    assert.match(got.count, new RegExp(`^${fmt(hits.length)} matches`));
    assert.deepEqual(
      got.rows,
      hits.slice(0, got.rows.length).map((hit) => hit.entryId),
    );
    assert.equal(got.rows[0], 'b39u');
    await shot(page, 'search-text');
    // A match selects its entry for viewing; the leaf stays.
    await page.click('#search-list .search-row >> nth=0');
    await page.waitForSelector('#panel-entry .entry[data-entry="b39u"]');
    assert.equal(await page.evaluate(() => window.explorer.session.leafId), leaf);
    assert.equal(await page.getAttribute('.node.selected', 'data-kind'), 'run');

    // Text and a role.
    got = await search({ query: 'file 13.ts', role: 'user' });
    assert.match(got.count, new RegExp(`^${fmt(userHits.length)} match`));
    assert.deepEqual(
      got.rows,
      userHits.slice(0, got.rows.length).map((hit) => hit.entryId),
    );

    // An entry id: that entry first.
    got = await search({ query: 'b1' });
    assert.equal(got.rows[0], 'b1');

    // A role alone, from the index: every user message, only the rows in view in the DOM.
    got = await search({ role: 'user' });
    assert.match(got.count, new RegExp(`^${fmt(users)} matches`));
    assert.ok(got.rows.length > 0 && got.rows.length < 60, `${got.rows.length} rows in the DOM`);
    got = await search({ role: 'compaction' });
    assert.match(got.count, new RegExp(`^${fmt(counts.compactions)} match`));

    // A tool name: its results.
    got = await search({ tool: 'read' });
    assert.match(got.count, new RegExp(`^${fmt(results)} matches`));
    got = await search({ tool: 'no-such-tool' });
    assert.match(got.count, /^0 matches/);
    assert.deepEqual(got.rows, []);
    await shot(page, 'search-tool');

    const longTasks = await page.evaluate(() => window.__longTasks);
    const longest = Math.max(0, ...longTasks);
    console.log(`# search on 50,000 entries: longest task ${longest} ms; ${longTasks.length} long tasks`);
    assert.ok(longest < 1_500, `longest task ${longest} ms`);
    assert.deepEqual(problems, []);
  });
});

test('at 390 px wide: no horizontal scroll, the Simulate chart fits', async () => {
  await withExplorer(async (page, problems) => {
    await page.setViewportSize({ width: 390, height: 844 });
    const overflow = () =>
      page.evaluate(() => {
        const width = document.documentElement.clientWidth;
        const wide = [];
        for (const el of document.querySelectorAll('body *')) {
          if (el.closest('.tree, .vlist, [hidden]')) continue;
          const r = el.getBoundingClientRect();
          if (r.width > 0 && r.right > width + 0.5)
            wide.push(
              `${el.tagName.toLowerCase()}#${el.id}.${el.className?.baseVal ?? el.className} ${Math.round(r.right)}`,
            );
        }
        return { width, scrollWidth: document.documentElement.scrollWidth, wide: wide.slice(0, 8) };
      });
    let got = await overflow();
    assert.equal(got.scrollWidth, got.width, `the page is ${got.scrollWidth} px wide: ${got.wide.join(', ')}`);
    await page.click('#open-simulate');
    await page.waitForSelector('#timeline svg');
    got = await overflow();
    assert.equal(got.scrollWidth, got.width, `with Simulate open, ${got.scrollWidth} px wide: ${got.wide.join(', ')}`);
    const chart = await page.$eval('#timeline svg', (el) => el.getBoundingClientRect().right);
    assert.ok(chart <= got.width, `the chart ends at ${chart} px`);
    await shot(page, 'narrow-390');
    assert.deepEqual(problems, []);
  });
});

test('a version 1 file is reported as migrated, not as a line that could not be read', async () => {
  const text = `${[
    '{"type":"session","id":"v1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}',
    '{"type":"message","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hello"}}',
    '{"type":"message","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"stopReason":"stop"}}',
  ].join('\n')}\n`;
  const s = Session.fromJsonl(text);
  assert.deepEqual(
    s.warnings.map((w) => w.code),
    ['E_MIGRATED'],
  );
  await withExplorer(async (page, problems) => {
    await openFixture(page, 'v1.jsonl', text);
    const status = await page.textContent('#status');
    assert.match(status, /migrated from format version 1 to 3/);
    assert.doesNotMatch(status, /could not be read/);
    assert.match(await page.getAttribute('#status', 'class'), /\bok\b/);
    assert.equal(await page.isVisible('#stat-warnings-box'), false, 'no unreadable lines to count');
    await page.click('#tab-report');
    const summary = await page.textContent('#report-summary');
    assert.match(summary, /migrated from format version 1 to 3/);
    assert.match(summary, /every line read/);
    assert.match((await page.locator('#warnings li').allTextContents())[0], /^line 1: E_MIGRATED/);
    assert.deepEqual(problems, []);
  });
});

test('the snapcompact preview shows as many frames as the compaction then writes', async () => {
  await withExplorer(async (page, problems) => {
    await page.click('#tab-actions');
    for (const keep of ['20000', '2000']) {
      await page.fill('#keep-recent', keep);
      await page.press('#keep-recent', 'Tab');
      const leaf = await page.evaluate(() => window.explorer.session.leafId);
      await page.click('#preview-run');
      await page.waitForSelector('#compact-output .frames', { timeout: 60_000 });
      const previewed = Number(await page.getAttribute('#compact-output .frames', 'data-frames'));
      assert.equal(await page.locator('#compact-output .frame img').count(), previewed);
      assert.equal(await page.evaluate(() => window.explorer.session.leafId), leaf, 'the preview writes nothing');
      await page.click('#compact-run');
      await page.waitForFunction(() => /^Compacted/.test(document.getElementById('compact-status').textContent), null, {
        timeout: 60_000,
      });
      const written = await page.evaluate(() => {
        const s = window.explorer.session;
        return s.archiveFrames(s.leafId).length;
      });
      assert.equal(previewed, written, `keep ${keep}: previewed ${previewed} frames, the compaction wrote ${written}`);
      await page.click('#undo');
      await page.click('#tab-actions');
    }
    assert.deepEqual(problems, []);
  });
});
