#!/usr/bin/env node
// The AI SDK chat example (www/examples/ai-sdk-chat/): bundled by esbuild into
// tests/out/examples/ai-sdk-chat/ (with the package's .wasm beside it), served on 127.0.0.1
// with the scripted Chat Completions endpoint of ./mock-endpoint.mjs.
//
//   node tests/browser/ai-sdk-chat/serve.mjs [--port 8080] [--endpoint-port 8787]
//
// prints the page's URL (`…/?endpoint=http://127.0.0.1:8787/v1`) and logs each request the
// endpoint gets, with its size against the window. Needs the built package (pkg/) and the test
// tools (tests/node_modules). Also importable: `buildExample()`, `startExample()`.
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { serve } from '../../../www/serve.mjs';
import { outDir, pkgDir, repoDir, testsDir } from '../../js/support/project.mjs';
import { startMockEndpoint } from './mock-endpoint.mjs';

export const sourceDir = path.join(repoDir, 'www/examples/ai-sdk-chat');
export const exampleOutDir = path.join(outDir, 'examples/ai-sdk-chat');

/**
 * Bundles chat.js for the browser into `dir` and copies the page, its style, the favicon and
 * `ctxfold_bg.wasm` (the web entry fetches it next to the bundle). Resolves to `dir`.
 */
export async function buildExample(dir = exampleOutDir) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  await esbuild.build({
    entryPoints: [path.join(sourceDir, 'chat.js')],
    outfile: path.join(dir, 'chat.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    // The packages (`ai`, `@ai-sdk/openai-compatible`, `ctxfold` → pkg/) are the test tools'.
    nodePaths: [path.join(testsDir, 'node_modules')],
    minify: true,
    sourcemap: true,
    logLevel: 'warning',
  });
  for (const file of ['index.html', 'style.css']) copyFileSync(path.join(sourceDir, file), path.join(dir, file));
  copyFileSync(path.join(repoDir, 'www/favicon.svg'), path.join(dir, 'favicon.svg'));
  copyFileSync(path.join(pkgDir, 'entries', 'ctxfold_bg.wasm'), path.join(dir, 'ctxfold_bg.wasm'));
  return dir;
}

/**
 * Builds the example, starts the endpoint and serves the page. Resolves to
 * `{ url, endpoint, server, close() }`: `url` opens the page on this endpoint.
 */
export async function startExample({ host = '127.0.0.1', port = 0, endpointPort = 0, endpoint = {} } = {}) {
  const dir = await buildExample();
  const mock = await startMockEndpoint({ host, port: endpointPort, ...endpoint });
  let server;
  try {
    server = await serve({ root: dir, host, port, strictPort: port === 0 });
  } catch (err) {
    await mock.close();
    throw err;
  }
  return {
    url: `${server.url}?endpoint=${mock.baseURL}`,
    endpoint: mock,
    server,
    close: async () => {
      await server.close();
      await mock.close();
    },
  };
}

function parseArgs(argv) {
  const opts = { port: 8080, endpointPort: 8787 };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      const v = Number.parseInt(argv[++i], 10);
      if (!Number.isInteger(v) || v < 0 || v > 65535) throw new Error(`${arg} needs a port number`);
      return v;
    };
    if (arg === '--port') opts.port = value();
    else if (arg === '--endpoint-port') opts.endpointPort = value();
    else if (arg === '-h' || arg === '--help') {
      console.log('usage: node tests/browser/ai-sdk-chat/serve.mjs [--port 8080] [--endpoint-port 8787]');
      process.exit(0);
    } else throw new Error(`unknown argument ${arg}`);
  }
  return opts;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const onRequest = (r) =>
      console.log(
        `${r.kind.padEnd(7)} ${String(r.messages).padStart(3)} messages, ${String(r.tokens).padStart(6)} tokens` +
          ` → ${r.status === 200 ? r.reply.slice(0, 60) : `HTTP ${r.status}`}`,
      );
    const example = await startExample({ ...parseArgs(process.argv.slice(2)), endpoint: { onRequest } });
    const { window } = example.endpoint;
    console.log(
      `Chat:     ${example.url}\nEndpoint: ${example.endpoint.baseURL} (window ${window} tokens)\nCtrl-C to stop`,
    );
  } catch (err) {
    console.error(`serve: ${err.message}`);
    process.exit(1);
  }
}
