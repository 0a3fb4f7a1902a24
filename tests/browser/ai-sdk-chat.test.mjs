// The AI SDK chat example (www/examples/ai-sdk-chat/) in Chromium, driven as a visitor: a
// useChat-style page on `streamText` whose model, an `@ai-sdk/openai-compatible` model of the
// scripted endpoint in ./ai-sdk-chat/mock-endpoint.mjs, is wrapped with `ctxfoldMiddleware`.
// Each turn the model reads two pages of a service's log (about 2,700 tokens each): in the third
// the prompt passes the compaction point of the 16k window, the middleware compacts through the
// summarizer model and the page says so; by the fifth the app's history is well past the window.
// Every request the endpoint got must be within the window, and the last answer must still know
// what the summarized turns read. The chat is saved as tests/out/screenshots/ai-sdk-chat.png.

import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { outDir } from '../js/support/project.mjs';
import { PAGES, SUMMARIZER_MODEL, WINDOW } from './ai-sdk-chat/mock-endpoint.mjs';
import { startExample } from './ai-sdk-chat/serve.mjs';
import { CHROMIUM, launchChromium, withPage } from './support.mjs';

const haveChromium = existsSync(CHROMIUM);
if (!haveChromium && process.env.CI === 'true') throw new Error(`Chromium not found at ${CHROMIUM}`);
const skip = haveChromium ? false : `Chromium not found at ${CHROMIUM}: run \`make setup\``;

const TURNS = [
  ['Check the api logs, please.', 'api'],
  ['Now the db logs.', 'db'],
  ['And the auth logs?', 'auth'],
  ['Last one: the queue logs.', 'queue'],
  ['Wrap up: what did we find?', null],
];

let example;
let browser;
before(async () => {
  if (skip) return;
  example = await startExample({ endpoint: { delayMs: 5 } });
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await example?.close();
});

const number = (text) => Number(String(text).replace(/,/g, ''));

/**
 * The POSTs to `baseURL` as Chromium's network layer saw them (DevTools protocol): the body
 * bytes each response delivered and how its load ended.
 */
async function watchLoads(page, baseURL) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  const loads = new Map();
  cdp.on('Network.requestWillBeSent', (e) => {
    if (e.request.method === 'POST' && e.request.url.startsWith(baseURL)) {
      loads.set(e.requestId, { url: e.request.url, bytes: 0, end: null });
    }
  });
  cdp.on('Network.dataReceived', (e) => {
    const load = loads.get(e.requestId);
    if (load) load.bytes += e.dataLength;
  });
  cdp.on('Network.loadingFinished', (e) => {
    const load = loads.get(e.requestId);
    if (load) load.end = 'finished';
  });
  cdp.on('Network.loadingFailed', (e) => {
    const load = loads.get(e.requestId);
    if (load) load.end = `${e.canceled ? 'canceled ' : ''}${e.errorText}`;
  });
  return loads;
}

test('Chromium: the AI SDK chat compacts through the middleware and stays under the window', {
  skip,
  timeout: 180_000,
}, async () => {
  await withPage(browser, async (page, problems) => {
    const { baseURL } = example.endpoint;
    const loads = await watchLoads(page, baseURL);
    await page.goto(example.url);
    await page.waitForFunction(() => document.getElementById('status')?.textContent.startsWith('Ready'));
    assert.equal(number(await page.textContent('#stat-window')), WINDOW);
    // Each change to an assistant bubble while it streams.
    await page.evaluate(() => {
      window.assistantUpdates = [];
      new MutationObserver((records) => {
        for (const r of records) {
          const body = r.target.closest?.('.message.assistant .body');
          if (body) window.assistantUpdates.push(body.textContent.length);
        }
      }).observe(document.getElementById('messages'), { childList: true, subtree: true, characterData: true });
    });

    for (const [i, [text]] of TURNS.entries()) {
      await page.fill('#input', text);
      await page.press('#input', 'Enter');
      const status = await page.waitForFunction(
        (n) => {
          const text = document.getElementById('status').textContent;
          const answered = document.querySelectorAll('.message.assistant').length === n;
          return text === 'Failed' || (text === 'Ready' && answered) ? text : false;
        },
        i + 1,
        { timeout: 60_000 },
      );
      const failure = await page.evaluate(() => document.querySelector('.message.notice.error .body')?.textContent);
      assert.equal(await status.jsonValue(), 'Ready', `turn ${i + 1} failed: ${failure}`);
    }

    const view = await page.evaluate(() => ({
      items: [...document.querySelectorAll('#messages > li')].map((li) => ({
        kind: li.className.replace('message ', ''),
        text: (li.querySelector('.body, details')?.textContent ?? '').trim(),
      })),
      stats: Object.fromEntries(
        [...document.querySelectorAll('.stats dd')].map((dd) => [dd.id.replace('stat-', ''), dd.textContent]),
      ),
      updates: window.assistantUpdates.length,
      status: document.getElementById('status').textContent,
    }));
    mkdirSync(path.join(outDir, 'screenshots'), { recursive: true });
    await page.screenshot({ path: path.join(outDir, 'screenshots', 'ai-sdk-chat.png'), fullPage: true });

    // What the endpoint got: the chat model never over the window, the summarizer asked.
    const { requests } = example.endpoint;
    const chats = requests.filter((r) => r.kind === 'chat');
    const summaries = requests.filter((r) => r.model === SUMMARIZER_MODEL);
    const readTurns = TURNS.filter(([, service]) => service).length;
    // A request per tool call and one for each answer.
    assert.equal(chats.length, readTurns * (PAGES + 1) + 1, requests.map((r) => r.reply).join('\n'));
    for (const r of requests) {
      assert.equal(r.status, 200, `a ${r.kind} request of ${r.tokens} tokens was refused`);
      assert.ok(r.tokens <= WINDOW, `a ${r.kind} request of ${r.tokens} tokens > ${WINDOW}`);
    }
    assert.ok(summaries.length >= 1, 'the summarizer model was asked');
    assert.ok(summaries.every((r) => !r.stream));

    // The page: tool calls with their large results, the compaction notice, the numbers.
    const tools = view.items.filter((x) => x.kind === 'tool');
    assert.equal(tools.length, readTurns * PAGES);
    for (const t of tools)
      assert.match(t.text, /^read_logs\(\{"service":"\w+","page":\d\}\)== logs of \w+, page \d of \d ==/);
    const notices = view.items.filter((x) => x.kind.startsWith('notice'));
    const compactions = notices.filter((x) => x.kind.includes('compaction'));
    assert.ok(compactions.length >= 1, JSON.stringify(view.items.map((x) => x.kind)));
    assert.match(compactions[0].text, /^Context compacted \(soft\): [\d,]+ → [\d,]+ tokens, \d+ messages summarized\./);
    assert.deepEqual(
      notices.filter((x) => x.kind.includes('error')),
      [],
    );
    assert.equal(number(view.stats.compactions), compactions.length);
    // The app's history is past the window; what was sent never was.
    assert.ok(number(view.stats.history) > WINDOW, `the app's history is ${view.stats.history} tokens`);
    assert.equal(number(view.stats.largest), Math.max(...chats.map((r) => r.tokens)));
    assert.equal(number(view.stats.sent), chats.at(-1).tokens);

    // The answers, streamed; the last one knows every service, the summarized ones included.
    const answers = view.items.filter((x) => x.kind === 'assistant').map((x) => x.text);
    for (const [i, [, service]] of TURNS.entries()) {
      if (service) assert.match(answers[i], new RegExp(`^I read ${PAGES} pages of the ${service} logs\\.`));
    }
    assert.match(
      answers.at(-1),
      /^Wrap-up: we looked at the logs of api, db, auth, queue\. My context opens with a summary/,
    );
    assert.ok(view.updates > 20, `${view.updates} updates of the answers as they streamed`);
    assert.equal(view.status, 'Ready');

    // Every response reached the page whole. Chromium reports a streamed fetch that the page read
    // to its end as canceled (ERR_ABORTED) when the reader finished before the network layer's
    // completion came in; such a load got every byte the endpoint sent, so it is no problem.
    const sent = requests.map((r) => r.sentBytes).sort((a, b) => a - b);
    assert.deepEqual(
      [...loads.values()].map((l) => l.bytes).sort((a, b) => a - b),
      sent,
      'bytes each response delivered, against what the endpoint sent',
    );
    for (const l of loads.values()) assert.match(l.end, /^(finished|canceled net::ERR_ABORTED)$/);
    const canceled = [...loads.values()].filter((l) => l.end !== 'finished').length;
    const readWhole = `requestfailed: ${baseURL}/chat/completions net::ERR_ABORTED`;
    assert.equal(problems.filter((p) => p === readWhole).length, canceled);
    assert.deepEqual(
      problems.filter((p) => p !== readWhole),
      [],
    );
  });
});
