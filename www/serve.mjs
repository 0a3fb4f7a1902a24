#!/usr/bin/env node
// A tiny zero-dependency static file server for the demo (`make demo`) and the browser tests.
//
//   node www/serve.mjs [--root DIR] [--host 127.0.0.1] [--port 8080] [--strict-port]
//
// Serves DIR (default: this folder) on the loopback interface; if the port is taken it tries the
// next ones (up to 20) unless --strict-port. Also importable: `serve({ root, mounts, host, port })`
// resolves to `{ url, port, close() }`; `mounts` maps URL prefixes ('/pkg/') to folders.
//
// The pages may hold an API key in memory, so the server answers only requests addressed to
// it by a loopback name and its port (`Host: 127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`,
// or the --host it listens on): any other Host header (a DNS-rebinding page's) gets 421. Every
// response forbids framing (`X-Frame-Options: DENY`) and sniffing, and sends no referrer; an
// HTML page's `<meta http-equiv="Content-Security-Policy">` is also sent as a header, with
// `frame-ancestors 'none'`, which a meta policy cannot set.
import { createReadStream, promises as fs } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.jsonl': 'application/jsonl; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.otf': 'font/otf',
  '.bdf': 'text/plain; charset=utf-8',
  '.hex': 'text/plain; charset=utf-8',
};

/** The file a URL path names, or null when it leaves every mounted folder. */
function resolveFile(mounts, urlPath) {
  let decoded;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0')) return null;
  // Longest mount prefix first, so '/pkg/' wins over '/'.
  const prefixes = Object.keys(mounts).sort((a, b) => b.length - a.length);
  for (const prefix of prefixes) {
    if (!decoded.startsWith(prefix) && `${decoded}/` !== prefix) continue;
    const base = path.resolve(mounts[prefix]);
    const rest = decoded.slice(prefix.length);
    const file = path.resolve(base, `.${path.posix.normalize(`/${rest}`)}`);
    if (file !== base && !file.startsWith(base + path.sep)) return null;
    return file;
  }
  return null;
}

/** Headers of every response. */
const SAFETY = {
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/** What a page that sets no policy of its own gets: no framing. */
const NO_FRAMING = "frame-ancestors 'none'";

/**
 * The policy of an HTML page's `<meta http-equiv="Content-Security-Policy">`, if any. Each
 * `<meta` tag is read once, up to its `>`: one regex from `<meta` through `[^>]*` to the
 * attribute re-read the rest of the tag from every `<meta` in it (quadratic).
 */
function metaPolicy(html) {
  const opening = /<meta\s/gi;
  for (let m = opening.exec(html); m !== null; m = opening.exec(html)) {
    const end = html.indexOf('>', m.index);
    if (end < 0) return undefined;
    const tag = html.slice(m.index, end + 1);
    if (/http-equiv\s*=\s*"content-security-policy"/i.test(tag.slice(6))) {
      return /\scontent\s*=\s*"([^"]*)"/i.exec(tag)?.[1];
    }
    // A later `<meta` before this `>` has a part of this tag: no policy either.
    opening.lastIndex = end + 1;
  }
  return undefined;
}

/** The page's own policy with `frame-ancestors 'none'` (a meta policy cannot set it). */
function pagePolicy(html) {
  const own = metaPolicy(html)?.trim().replace(/;$/, '');
  return own ? `${own}; ${NO_FRAMING}` : NO_FRAMING;
}

/** The Host headers a server listening on `host`:`port` answers: loopback names, and `host`. */
function allowedHosts(host, port) {
  const names = new Set(['127.0.0.1', 'localhost', '[::1]']);
  if (host !== '0.0.0.0' && host !== '::') names.add(host.includes(':') ? `[${host}]` : host.toLowerCase());
  const out = new Set();
  for (const name of names) {
    out.add(`${name}:${port}`);
    if (port === 80) out.add(name);
  }
  return out;
}

async function handle(mounts, hosts, req, res) {
  const send = (status, text) => {
    res.writeHead(status, { ...SAFETY, 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : text);
  };
  // DNS rebinding: a foreign name resolving to 127.0.0.1 still sends its own name.
  if (!hosts.has(String(req.headers.host ?? '').toLowerCase())) return send(421, 'misdirected request\n');
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'method not allowed\n');
  const urlPath = new URL(req.url ?? '/', 'http://localhost').pathname;
  let file = resolveFile(mounts, urlPath);
  if (file === null) return send(403, 'forbidden\n');
  let stat;
  try {
    stat = await fs.stat(file);
    if (stat.isDirectory()) {
      if (!urlPath.endsWith('/')) {
        res.writeHead(301, { ...SAFETY, location: `${urlPath}/` });
        return res.end();
      }
      file = path.join(file, 'index.html');
      stat = await fs.stat(file);
    }
  } catch {
    return send(404, `not found: ${urlPath}\n`);
  }
  const type = MIME[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
  const headers = {
    ...SAFETY,
    'content-type': type,
    'content-length': stat.size,
    // The demo and tests always want the freshly built package.
    'cache-control': 'no-store',
  };
  if (type.startsWith('text/html')) {
    // Pages are small: read whole, for their policy.
    const html = await fs.readFile(file);
    res.writeHead(200, {
      ...headers,
      'content-length': html.length,
      'content-security-policy': pagePolicy(html.toString('utf8')),
    });
    return res.end(req.method === 'HEAD' ? undefined : html);
  }
  res.writeHead(200, headers);
  if (req.method === 'HEAD') return res.end();
  createReadStream(file)
    .on('error', () => res.destroy())
    .pipe(res);
}

/**
 * Starts the server. `port: 0` picks a free port; otherwise tries `port`, then the next ones
 * (up to `tries` in all) unless `strictPort`.
 */
export async function serve({
  root,
  mounts = {},
  host = '127.0.0.1',
  port = 8080,
  strictPort = false,
  tries = 20,
} = {}) {
  const allMounts = { ...mounts };
  if (root !== undefined) allMounts['/'] = root;
  if (Object.keys(allMounts).length === 0) throw new Error('serve: nothing to serve (no root, no mounts)');
  for (let attempt = 0; ; attempt++) {
    const candidate = port === 0 ? 0 : port + attempt;
    // The Host headers to answer, once the port is known.
    let hosts = new Set();
    const server = createServer((req, res) => {
      handle(allMounts, hosts, req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    });
    try {
      await new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(candidate, host, resolve);
      });
    } catch (err) {
      if (err.code === 'EADDRINUSE' && !strictPort && port !== 0 && attempt + 1 < tries) continue;
      throw err;
    }
    const actual = server.address().port;
    hosts = allowedHosts(host, actual);
    return {
      url: `http://${host}:${actual}/`,
      port: actual,
      close: () =>
        new Promise((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections?.();
        }),
    };
  }
}

function parseArgs(argv) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const opts = { root: here, host: '127.0.0.1', port: 8080, strictPort: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${arg} needs a value`);
      return argv[++i];
    };
    if (arg === '--root') opts.root = path.resolve(value());
    else if (arg === '--host') opts.host = value();
    else if (arg === '--port') opts.port = Number.parseInt(value(), 10);
    else if (arg === '--strict-port') opts.strictPort = true;
    else if (arg === '-h' || arg === '--help') {
      console.log('usage: node www/serve.mjs [--root DIR] [--host 127.0.0.1] [--port 8080] [--strict-port]');
      process.exit(0);
    } else throw new Error(`unknown argument ${arg}`);
  }
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) throw new Error('bad --port');
  return opts;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const opts = parseArgs(process.argv.slice(2));
    const { url } = await serve(opts);
    console.log(`Serving ${path.relative(process.cwd(), opts.root) || '.'} at ${url}  (Ctrl-C to stop)`);
  } catch (err) {
    console.error(`serve: ${err.message}`);
    process.exit(1);
  }
}
