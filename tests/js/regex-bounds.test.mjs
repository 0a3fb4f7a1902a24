// Regular expressions and text scans over host input, fed a megabyte built to make them
// backtrack (issue 43 item 3; the audit is the table "Regular expressions over host input" of
// docs/reliability.md). Each goes through the public path that reaches it and must finish
// within a generous bound: the linear code takes a few to a few hundred milliseconds here, the
// quadratic code it replaced took from seconds to minutes, so the bound fails clearly on the
// latter and not on a busy machine.

import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { InlineImager, Maintainer, pageTexts, Session, scanRenderability } from 'ctxfold';
import { serve } from '../../www/serve.mjs';
import { chatCompletionsUrl, trimSlashes } from '../../www/urls.js';

const MB = 1 << 20;
const BOUND_MS = 1_000;

/** `piece` repeated to at least a megabyte (UTF-16 units). */
const megabyte = (piece) => piece.repeat(Math.ceil(MB / piece.length));

/** Runs `f`, asserting it took less than `ms`; returns its value. */
async function within(what, f, ms = BOUND_MS) {
  const t = performance.now();
  const value = await f();
  const took = performance.now() - t;
  assert.ok(took < ms, `${what}: ${took.toFixed(0)} ms (bound ${ms} ms)`);
  return value;
}

const GEMINI = { provider: 'google', id: 'gemini-2.5-pro', api: 'google-generative-ai', input: ['text', 'image'] };
const NOW = Date.UTC(2026, 11, 6);

/** `n` lines of code-like text (enough tokens for the imager to send them as frames). */
const code = (n, tag) =>
  Array.from({ length: n }, (_, i) => `const ${tag}${i} = compute(${i}, "${tag}"); // step ${i}`).join('\n');

const conversation = () => [
  { role: 'user', content: 'Fix the build.', timestamp: NOW },
  {
    role: 'assistant',
    content: [{ type: 'text', text: 'Looking.' }],
    provider: 'google',
    model: 'gemini-2.5-pro',
    stopReason: 'stop',
    timestamp: NOW,
  },
];

const agentsMd = (systemPrompt) =>
  new InlineImager({ systemPrompt: 'agents-md' }).transform({
    messages: conversation(),
    systemPrompt,
    model: GEMINI,
    now: NOW,
  });

test('InlineImager agents-md: a megabyte of section openings that never close', async () => {
  // `<repo-rules>\n[\s\S]*?\n</repo-rules>` searched the rest of the prompt from every opening:
  // minutes on a megabyte of them.
  for (const opening of ['<repo-rules>\n', '## Context\n<instructions>\n']) {
    const prompt = megabyte(opening);
    const out = await within(JSON.stringify(opening), () => agentsMd(prompt));
    assert.equal(out.systemPrompt, prompt, 'no section: the prompt goes as it is');
    assert.equal(out.report.systemPrompt, undefined);
  }
});

test('InlineImager agents-md: sections before a megabyte of unclosed openings are cut as before', async () => {
  const rules = `<repo-rules>\n${code(400, 'rule')}\n</repo-rules>`;
  const agents = `## Context\n<instructions>\n${code(400, 'agents')}\n</instructions>`;
  const tail = megabyte('<repo-rules>\n## Context\n<instructions>\n');
  const prompt = `You are a coding agent.\n\n${rules}\n\n${agents}\n\n${rules}\n${tail}`;
  const out = await within('sections, then openings', () => agentsMd(prompt));
  assert.equal(out.report.systemPrompt?.scope, 'agents-md', 'the sections go as frames');
  // The three sections, each replaced by the stub; the openings after them untouched.
  const stub = out.systemPrompt.slice(`You are a coding agent.\n\n`.length).split('\n\n')[0];
  assert.match(stub, /^\[The context-file instructions that belong here/);
  assert.equal(out.systemPrompt, `You are a coding agent.\n\n${stub}\n\n${stub}\n\n${stub}\n${tail}`);
});

test('InlineImager agents-md: cuts what the regexes cut, on every short arrangement of the tags', () => {
  // Small enough for the regexes (the oracle); the sections are large so the imager sends them.
  const body = code(300, 'x');
  const pieces = ['<repo-rules>\n', '\n</repo-rules>', '## Context\n<instructions>\n', '\n</instructions>', body, 'a'];
  let prompts = [''];
  for (let round = 0; round < 4; round++) prompts = prompts.flatMap((p) => pieces.map((q) => p + q));
  let imaged = 0;
  for (const prompt of prompts) {
    const out = agentsMd(prompt);
    if (out.report.systemPrompt === undefined) continue;
    imaged++;
    const stub = /\[The context-file instructions that belong here[^\]]*\]/.exec(out.systemPrompt)?.[0];
    const expected = prompt
      .replace(/<repo-rules>\n[\s\S]*?\n<\/repo-rules>/g, () => stub)
      .replace(/## Context\n<instructions>\n[\s\S]*?\n<\/instructions>/g, () => stub);
    assert.equal(out.systemPrompt, expected, JSON.stringify(prompt.slice(0, 200)));
  }
  assert.ok(imaged > 20, `${imaged} of ${prompts.length} prompts imaged`);
});

test('demo: a chat base URL of a megabyte of slashes gives its Chat Completions URL at once', async () => {
  // www/actions.js: `form.chatUrl.replace(/\/+$/, '')` tried every slash as a start.
  const hostile = `https://example.test${'/'.repeat(MB)}x`;
  assert.equal(await within('slashes then a letter', () => chatCompletionsUrl(hostile)), `${hostile}/chat/completions`);
  assert.equal(
    await within('trailing slashes', () => chatCompletionsUrl(`https://example.test/v1${'/'.repeat(MB)}`)),
    'https://example.test/v1/chat/completions',
  );
  assert.equal(await within('trimSlashes', () => trimSlashes('/'.repeat(MB))), '');
  // Unchanged behaviour on ordinary URLs.
  assert.equal(chatCompletionsUrl('http://127.0.0.1:8080/v1/'), 'http://127.0.0.1:8080/v1/chat/completions');
  assert.equal(chatCompletionsUrl('http://h/v1/chat/completions/'), 'http://h/v1/chat/completions/');
  assert.equal(trimSlashes('a/b//'), 'a/b');
});

test('serve(): an HTML page of a megabyte of <meta openings is served with its policy at once', async () => {
  // `<meta\s[^>]*http-equiv…` ran `[^>]*` to the `>` and back from every `<meta`.
  const root = await mkdtemp(path.join(tmpdir(), 'ctxfold-regex-'));
  const policy = "default-src 'self'";
  const pages = {
    'open.html': `<!doctype html><head>${megabyte('<meta ')}`,
    'later.html': `<!doctype html><head>${megabyte('<meta ')}><meta http-equiv="Content-Security-Policy" content="${policy}"></head>`,
    'spaces.html': `<meta http-equiv="content-security-policy" content=${' '.repeat(MB)}x>`,
  };
  for (const [name, html] of Object.entries(pages)) await writeFile(path.join(root, name), html);
  const server = await serve({ root, port: 0 });
  try {
    for (const [name, want] of [
      ['open.html', "frame-ancestors 'none'"],
      ['later.html', `${policy}; frame-ancestors 'none'`],
      ['spaces.html', "frame-ancestors 'none'"],
    ]) {
      const res = await within(name, () => fetch(`${server.url}${name}`));
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-security-policy'), want, name);
      await res.arrayBuffer();
    }
  } finally {
    await server.close();
    await rm(root, { recursive: true, force: true });
  }
});

test('scanRenderability(): a megabyte of ANSI OSC openings that nothing ends', async () => {
  // The core's strip_ansi scanned to the end of the text for a terminator from every `ESC ]`.
  const hostile = megabyte('\u001b]');
  const r = await within('ESC ] run', () => scanRenderability(hostile));
  assert.equal(r.isSafe, true);
  const pages = await within('ESC ] run, paginated', () => pageTexts(hostile));
  assert.equal(pages.join(''), ']'.repeat(hostile.length / 2), 'each lone ESC dropped, its `]` kept');
  // OSC strings that are ended still go whole.
  assert.deepEqual(pageTexts('\u001b]8;;http://x\u0007link\u001b]8;;\u001b\\ and \u001b]0;title\u0007 more'), [
    'link and more',
  ]);
});

test('compact(): thinking of a megabyte of nested <thinking> tags reaches the summarizer unwrapped at once', async () => {
  // The XML transcript unwrapped nested tags by rescanning the text per opening and recursing
  // per level (minutes, or a stack overflow).
  const n = 30_000;
  const inner = 'the plan';
  const thinking = `${'<thinking>'.repeat(n)}${inner}${'</thinking>'.repeat(n)}`;
  assert.ok(thinking.length > 600_000);
  const s = Session.create({ id: 's', cwd: '/w', now: NOW });
  s.appendMessage({ role: 'user', content: 'first question', timestamp: NOW }, { now: NOW });
  s.appendMessage(
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking },
        { type: 'text', text: 'first answer' },
      ],
      provider: 'zai',
      model: 'glm-4.6',
      usage: { input: 400_000, output: 10, cacheRead: 0, cacheWrite: 0 },
      stopReason: 'stop',
      timestamp: NOW,
    },
    { now: NOW },
  );
  s.appendMessage({ role: 'user', content: 'second question', timestamp: NOW }, { now: NOW });
  const prompts = [];
  await within(
    'compact',
    () =>
      s.compact({
        model: 'glm-4.6',
        settings: { keepRecentTokens: 10 },
        summarize: (request) => {
          prompts.push(request.prompt);
          return 'summary';
        },
      }),
    5_000,
  );
  const transcript = prompts.find((p) => p.includes(inner));
  assert.ok(transcript !== undefined, 'the thinking reached the summarizer');
  assert.ok(!transcript.includes('<thinking><thinking>'), 'unwrapped');
  assert.ok(transcript.includes(`<thinking>\n${inner}\n</thinking>`));
});

test('Maintainer: a megabyte-long digit run in the first message costs no regex time per request', async () => {
  // The Maintainer read the frames left out back from the notice with `(\d+) archived image
  // frames…`: about 8.5 s per request on 100,000 digits (issue 36 item 11); it now asks the core.
  const s = Session.create({ id: 's', cwd: '/w', now: NOW });
  const fake = `${'9'.repeat(MB)} archived image frames could not be included`;
  s.appendMessage({ role: 'user', content: fake, timestamp: NOW }, { now: NOW });
  const m = new Maintainer(s, {
    model: { provider: 'google', api: 'google-generative-ai', id: 'gemini-2.5-pro', contextWindow: 2_000_000 },
    summarize: async () => 'summary',
  });
  for (let i = 0; i < 3; i++) {
    const r = await within(`beforeRequest ${i}`, () => m.beforeRequest());
    assert.ok(Array.isArray(r.messages));
  }
  m.dispose();
});

test('shake(): a message of 2,000 fenced blocks is planned and shaken at once', async () => {
  // Issue 36 item 11: each region copied the whole text (800 KB: ~12 s); the crate bounds the
  // allocation (tests/it/large_inputs.rs), this the time through the package.
  const block = `\`\`\`\n${'let x = 1;\n'.repeat(36)}\`\`\`\n`;
  const text = `intro\n${block.repeat(2_000)}end`;
  assert.ok(text.length > 800_000);
  const s = Session.create({ id: 's', cwd: '/w', now: NOW });
  s.appendMessage({ role: 'user', content: text, timestamp: NOW }, { now: NOW });
  s.appendMessage(
    {
      role: 'assistant',
      content: [{ type: 'text', text: 'done' }],
      provider: 'google',
      model: 'gemini-2.5-pro',
      stopReason: 'stop',
      timestamp: NOW,
    },
    { now: NOW },
  );
  const options = { preset: 'rescue', fenceMinTokens: 50 };
  const plan = await within('planShake', () => s.planShake(options));
  assert.equal(plan.regions.length, 2_000);
  const r = await within('shake', () => s.shake({ ...options, now: NOW }));
  assert.equal(r.blocksDropped, 2_000);
  const shaken = s.toLlmMessages()[0].content;
  const body = typeof shaken === 'string' ? shaken : shaken[0].text;
  assert.ok(body.startsWith('intro\n[shaken ~') && !body.includes('let x'));
});
