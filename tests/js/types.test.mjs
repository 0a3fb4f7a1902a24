// The hand-written .d.ts of the package, checked by the TypeScript compiler from consumers that
// resolve the package the way Node.js (nodenext) and bundlers (browser, workerd conditions) do.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { outDir, pkgDir, testsDir } from './support/project.mjs';

const tsc = path.join(testsDir, 'node_modules', '.bin', 'tsc');

const strict = {
  strict: true,
  noEmit: true,
  skipLibCheck: false,
  target: 'es2022',
  types: [],
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
};

const consumers = {
  node: {
    compilerOptions: { ...strict, module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022'] },
    files: {
      'main.mts': `
        import { init, version } from 'ctxfold';
        const v: string = version();
        await init();
        // @ts-expect-error version() returns a string
        const n: number = version();
        export { v, n };
      `,
      'ai-sdk-alone.mts': `
        import { ctxfoldMiddleware, ctxfoldPrepareStep, type CtxfoldAiSdkOptions } from 'ctxfold/ai-sdk';
        const options: CtxfoldAiSdkOptions = { contextWindow: 200_000, settings: { keepRecentTokens: 8000 } };
        const middleware = ctxfoldMiddleware(options);
        const step = await ctxfoldPrepareStep(options)({ messages: [{ role: 'user' as const, content: 'x' }], steps: [], model: {} });
        const role: 'user' = step.messages[0]!.role;
        export { middleware, role };
      `,
      'maintainer.mts': `
        import { Maintainer, Session, type AssistantMessage, type CompactionReport, type MaintainerEvent } from 'ctxfold';
        const session = Session.create({ cwd: '/w' });
        const events: MaintainerEvent[] = [];
        const m = new Maintainer(session, {
          model: { provider: 'anthropic', id: 'claude-x', contextWindow: 200_000, input: ['text', 'image'] },
          summarize: async (request) => request.prompt.slice(0, 10),
          settings: { methodOrder: ['snapcompact', 'soft'] },
          onEvent: (e) => events.push(e),
          promote: async () => null,
          tokenCounter: (message) => (typeof message.content === 'string' ? message.content.length : message.content.length * 100) / 3,
          maxCountChars: 100_000,
          calibrate: true,
        });
        const ratio: number | undefined = m.calibration['anthropic/claude-x']?.ratio;
        const before = await m.beforeRequest({ systemPrompt: 'sys', tools: [{ name: 'read' }] });
        const count: number = before.tokens + before.messages.length;
        const reply: AssistantMessage = { role: 'assistant', content: [], stopReason: 'stop' };
        const after = await m.afterResponse(reply);
        if (after.next === 'continue') m.session.appendMessage({ role: 'user', content: after.continuePrompt ?? '' });
        const report: CompactionReport | undefined = after.report;
        // @ts-expect-error next is one of three words
        const wrong: 'stop' = after.next;
        const result = await session.compact({ strategy: 'handoff', summarize: async () => 'doc' });
        if ('skipped' in result) {
          const why: 'off' | 'disabled' = result.skipped;
        } else if (result.method === 'handoff') {
          const next: Session = result.session;
        } else if (result.method === 'shake') {
          const freed: number = result.shake.tokensFreed;
        } else {
          const id: string = result.entryId;
        }
        const plan = session.planShake({ preset: 'default', protectTokens: 8000 });
        const applied: number = session.applyShake(plan, { artifactId: 'A1' }).tokensFreed + plan.regions.length;
        const shaken = await session.shake({ mode: 'thinking', saveArtifact: async (a) => a.name });
        const mode: 'elide' | 'thinking' = shaken.mode;
        // @ts-expect-error no such preset
        session.planShake({ preset: 'gentle' });
        m.abort();
        m.dispose();
        export { count, report, wrong, events, applied, mode };
      `,
      // Issue 37: the library's outputs are accepted by its inputs where they chain, and its
      // results narrow.
      'chains.mts': `
        import { renderFrames, serializeConversation, Session, type CompactOutcome } from 'ctxfold';
        const session = Session.create({ cwd: '/w' });
        const text: string = serializeConversation(session.toLlmMessages());
        const again: string = serializeConversation(session.buildContext().messages);
        const frames = renderFrames(text);
        const bytes: Uint8Array<ArrayBuffer> = frames[0]!.png;
        const file: Uint8Array<ArrayBuffer> = session.toBytes();
        const archived: Uint8Array<ArrayBuffer> | null = session.archiveFrames('x')[0]?.png ?? null;
        const result: CompactOutcome = await session.compact({ summarize: async () => 'summary' });
        let where: string | null = null;
        if ('skipped' in result) where = result.reason;
        else if (result.method === 'handoff') where = result.session.leafId;
        else if (result.method === 'shake') where = String(result.shake.tokensFreed);
        else where = result.entryId;
        export { again, bytes, file, archived, where };
      `,
      'inline.mts': `
        import { InlineImager, Maintainer, Session, type InlineReport } from 'ctxfold';
        const model = { provider: 'google', id: 'gemini-2.5-pro', api: 'google-generative-ai', input: ['text', 'image'] as const };
        const imager = new InlineImager({ toolResults: true, systemPrompt: 'agents-md', countTextTokens: (t) => t.length / 3 });
        const session = Session.create({ cwd: '/w' });
        const out = imager.transform({ messages: session.toLlmMessages(), model, systemPrompt: ['a', 'b'], now: 0 });
        const saved: number = out.report.savedTokens + out.messages.length;
        const scope: 'all' | 'agents-md' | undefined = out.report.systemPrompt?.scope;
        // @ts-expect-error no such mode
        new InlineImager({ systemPrompt: 'everything' });
        const m = new Maintainer(session, {
          model: { ...model, contextWindow: 1_000_000 },
          settings: { snapcompact: { toolResults: true, systemPrompt: 'all' } },
          cacheTtlMs: 3_600_000,
        });
        const before = await m.beforeRequest({ systemPrompt: ['block one', 'block two'] });
        const report: InlineReport | undefined = before.inline;
        const prompt: string | string[] | undefined = before.systemPrompt;
        export { saved, scope, report, prompt };
      `,
    },
  },
  // A consumer with the real \`ai\` package: the middleware fits \`wrapLanguageModel\`, the step
  // function \`prepareStep\`. The SDK's own declarations need the DOM and Node.js globals, so
  // they are not checked here (skipLibCheck); ctxfold's are, by the node consumer above.
  'ai-sdk': {
    compilerOptions: {
      ...strict,
      skipLibCheck: true,
      module: 'nodenext',
      moduleResolution: 'nodenext',
      lib: ['es2022', 'dom'],
    },
    files: {
      'main.mts': `
        import { generateText, wrapLanguageModel } from 'ai';
        import { MockLanguageModelV4 } from 'ai/test';
        import { ctxfoldMiddleware, ctxfoldPrepareStep, summarizerFromModel, type CtxfoldAiSdkOptions } from 'ctxfold/ai-sdk';
        const options: CtxfoldAiSdkOptions = { contextWindow: 200_000, summarize: new MockLanguageModelV4(), settings: { keepRecentTokens: 8000 } };
        const model = wrapLanguageModel({ model: new MockLanguageModelV4(), middleware: ctxfoldMiddleware(options) });
        const prepareStep = ctxfoldPrepareStep({ contextWindow: 200_000, summarize: summarizerFromModel(new MockLanguageModelV4()) });
        const result = await generateText({ model, prompt: 'Hello', prepareStep });
        const text: string = result.text;
        const entries: number | undefined = prepareStep.conversations[0]?.session?.size;
        // @ts-expect-error the window is a number
        ctxfoldMiddleware({ contextWindow: '200k' });
        export { text, entries };
      `,
    },
  },
  browser: {
    compilerOptions: {
      ...strict,
      module: 'esnext',
      moduleResolution: 'bundler',
      customConditions: ['browser'],
      lib: ['es2022', 'dom'],
    },
    files: {
      'blob.ts': `
        import { renderFrames, Session } from 'ctxfold';
        // Frame and file bytes are BlobParts (Uint8Array<ArrayBuffer>, not ArrayBufferLike).
        const blob = new Blob([renderFrames('text')[0]!.png], { type: 'image/png' });
        const file = new Blob([Session.create().toBytes()]);
        export { blob, file };
      `,
      'main.ts': `
        import { init, initSync, version, type InitInput } from 'ctxfold';
        await init();
        await init(new URL('https://example.invalid/ctxfold_bg.wasm'));
        await init(fetch('/ctxfold_bg.wasm'));
        await init(new ArrayBuffer(8));
        initSync(new Uint8Array(8));
        const input: InitInput = '/ctxfold_bg.wasm';
        await init(input);
        // @ts-expect-error initSync() needs the bytes or module (note: any non-null value fits
        // WebAssembly.Module, an empty interface in lib.dom, so wrong inputs fail at run time)
        initSync();
        // @ts-expect-error no null
        await init(null);
        const v: string = version();
        export { v };
      `,
    },
  },
  default: {
    compilerOptions: { ...strict, module: 'esnext', moduleResolution: 'bundler', lib: ['es2022', 'dom'] },
    files: {
      'main.ts': `
        import { init, version } from 'ctxfold';
        await init();
        const v: string = version();
        export { v };
      `,
    },
  },
  workerd: {
    compilerOptions: {
      ...strict,
      module: 'esnext',
      moduleResolution: 'bundler',
      customConditions: ['workerd'],
      lib: ['es2022'],
    },
    files: {
      'main.ts': `
        import { init, version } from 'ctxfold';
        await init();
        const v: string = version();
        // @ts-expect-error initSync is browser-only
        import { initSync } from 'ctxfold';
        export { v, initSync };
      `,
    },
  },
};

for (const [name, { compilerOptions, files }] of Object.entries(consumers)) {
  test(`types: a ${name} consumer type-checks`, () => {
    // Under tests/out/, so that tests/node_modules/ctxfold resolves.
    const dir = path.join(outDir, 'types', name);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions, include: Object.keys(files) }, null, 2),
    );
    for (const [file, text] of Object.entries(files)) writeFileSync(path.join(dir, file), text);
    const res = spawnSync(tsc, ['-p', dir], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(res.status, 0, `tsc failed:\n${res.stdout}${res.stderr}`);
  });
}

test('types: no `any` in the shipped .d.ts files', () => {
  const offenders = [];
  for (const file of readdirSync(pkgDir, { recursive: true })) {
    if (!String(file).endsWith('.d.ts')) continue;
    const text = readFileSync(path.join(pkgDir, file), 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/\/\/.*$/gm, '');
    text.split('\n').forEach((line, i) => {
      if (/\bany\b/.test(line)) offenders.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(offenders, []);
});
