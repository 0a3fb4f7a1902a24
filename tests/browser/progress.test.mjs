// The explorer's snapcompact work off the main thread (issue 41 Deliver 5): the preview and
// Compact draw their frames in the page's worker (www/compact-worker.js) while the main thread
// shows "frames k of n" from the compaction's progress events. A PerformanceObserver for
// `longtask` watches the main thread meanwhile: no task over 100 ms.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { outDir, pkgDir, repoDir } from '../js/support/project.mjs';
import { useChromium, withPage } from './support.mjs';

const { Session } = await import(pathToFileURL(path.join(pkgDir, 'entries', 'node.js')).href);

const sampleDir = path.join(outDir, 'sample');
const sampleFile = path.join(sampleDir, 'sample.jsonl');

const harness = useChromium(async () => {
  if (!existsSync(sampleFile)) {
    mkdirSync(sampleDir, { recursive: true });
    const args = ['run', '--quiet', '-p', 'ctxfold-testkit', '--bin', 'gen-session', '--'];
    const res = spawnSync('cargo', [...args, '--preset', 'sample', '--out', sampleFile], {
      cwd: repoDir,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    assert.equal(res.status, 0, 'gen-session');
  }
  return {
    '/': fileURLToPath(new URL('../../www/', import.meta.url)),
    '/pkg/': pkgDir,
    '/sample/': sampleDir + path.sep,
  };
});

/** The page's snapcompact options (actions.js `snapcompactOptions`) at keep 2,000. */
const OPTIONS = {
  settings: { keepRecentTokens: 2000 },
  contextWindow: 200_000,
  strategy: 'snapcompact',
  provider: 'anthropic',
  snapcompact: { model: { id: 'claude-sonnet-4-5', api: 'anthropic-messages' }, maxFrames: 17 },
};

/**
 * The leaf of the sample whose snapcompact compaction draws the most frames (the bundled
 * sample's own leaf draws one), with that count, computed under Node.js.
 */
async function busiestLeaf() {
  const bytes = readFileSync(sampleFile);
  const base = Session.fromJsonl(bytes);
  const leaves = base
    .index()
    .map((e) => e.id)
    .filter((id) => base.children(id).length === 0);
  base.free();
  let best = { leaf: null, frames: 0 };
  for (const leaf of leaves) {
    const s = Session.fromJsonl(bytes);
    s.branch(leaf);
    try {
      const r = await s.compact(OPTIONS);
      const frames = s.archiveFrames(r.entryId).length;
      if (frames > best.frames) best = { leaf, frames };
    } catch {
      // Nothing to compact there.
    } finally {
      s.free();
    }
  }
  return best;
}

/** The last `frames` report the page received, and every report's phase. */
function lastFrames(page) {
  return page.evaluate(() => {
    const reports = window.explorer.frameProgress ?? [];
    return { last: reports.filter((p) => p.phase === 'frames').at(-1), count: reports.length };
  });
}

test('preview and Compact draw frames in the worker: progress n of n, no main-thread task over 100 ms', async () => {
  await withPage(harness.browser, async (page, problems) => {
    await page.setViewportSize({ width: 1500, height: 950 });
    await page.addInitScript(() => {
      window.__longTasks = [];
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) window.__longTasks.push(Math.round(e.duration));
      }).observe({ type: 'longtask', buffered: true });
    });
    await page.goto(harness.server.url);
    await page.waitForSelector('body[data-ready="true"][data-stats="ready"]');
    // At the leaf with the most history to image (a long preview: many frames).
    const busiest = await busiestLeaf();
    assert.ok(busiest.frames >= 8, `a leaf with many frames (${JSON.stringify(busiest)})`);
    await page.evaluate((id) => window.explorer.moveLeaf(id), busiest.leaf);
    await page.click('#tab-actions');
    await page.fill('#keep-recent', '2000');
    await page.press('#keep-recent', 'Tab');
    // Loading the page may have had long tasks of its own: count from here.
    await page.evaluate(() => {
      window.__longTasks.length = 0;
    });

    await page.click('#preview-run');
    await page.waitForFunction(() => !document.getElementById('compact-status').classList.contains('busy'), null, {
      timeout: 120_000,
    });
    assert.match(await page.textContent('#compact-status'), /^Preview:/);
    const previewLongTasks = await page.evaluate(() => window.__longTasks.splice(0));
    assert.ok(
      previewLongTasks.every((ms) => ms <= 100),
      `main-thread tasks over 100 ms during the preview: ${JSON.stringify(previewLongTasks)}`,
    );
    const previewed = Number(await page.getAttribute('#compact-output .frames', 'data-frames'));
    assert.equal(previewed, busiest.frames, 'the preview draws what the compaction draws under Node.js');
    assert.equal(await page.locator('#compact-output .frame img').count(), previewed);
    const preview = await lastFrames(page);
    assert.deepEqual(preview.last, { phase: 'frames', done: previewed, total: previewed }, 'progress reached n of n');
    assert.ok(preview.count >= previewed + 1, `a report per frame (${preview.count})`);
    assert.equal(await page.locator('#frames-progress').count(), 0, 'the bar goes when done');

    const leaf = await page.evaluate(() => window.explorer.session.leafId);
    await page.click('#compact-run');
    // The bar shows while the worker draws.
    await page.waitForFunction(() => /^Compacted/.test(document.getElementById('compact-status').textContent), null, {
      timeout: 120_000,
    });
    const longTasks = await page.evaluate(() => window.__longTasks);
    assert.ok(
      longTasks.every((ms) => ms <= 100),
      `main-thread tasks over 100 ms during Compact: ${JSON.stringify(longTasks)}`,
    );
    const compact = await lastFrames(page);
    assert.deepEqual(compact.last, { phase: 'frames', done: previewed, total: previewed });
    const written = await page.evaluate(() => {
      const s = window.explorer.session;
      return { frames: s.archiveFrames(s.leafId).length, parent: s.entry(s.leafId).parentId };
    });
    assert.equal(written.frames, previewed, 'the preview shows the frames the compaction writes');
    assert.equal(written.parent, leaf, 'the compaction follows the leaf');

    assert.deepEqual(problems, []);
  });
});
