// An edge backend for agents: a Cloudflare Worker with one Durable Object per session, each
// running ctxfold's Maintainer over its session and saving it, after every request, into the
// object's own SQLite storage through `createDurableObjectStore`. The agent keeps its loop and its
// model calls; it asks this backend what to send and tells it what came back:
//
//   POST /sessions/<id>/append           { messages: [AgentMessage…] }    → { entries }
//   POST /sessions/<id>/before-request   { systemPrompt?, tools? }        → { messages, tokens, pruned? }
//   POST /sessions/<id>/after-response   { reply: AssistantMessage }      → { next, continuePrompt?, report? }
//   GET  /sessions/<id>/file             the session's JSONL file, as stored
//   GET  /sessions/<id>/stats            { entries, lines, stored, saves, resets, linesAppended, … }
//
// Summaries go to the endpoint at SUMMARY_URL (the remote endpoint protocol: POST
// `{ systemPrompt, prompt, maxTokens }`, answer `{ summary }`; a URL ending in /chat/completions
// is spoken to as an OpenAI-compatible chat endpoint, with MODEL_ID), with SUMMARY_AUTH as its
// `authorization` header when set. The model is MODEL_PROVIDER / MODEL_ID (default anthropic /
// claude-sonnet-4-5) with a window of CONTEXT_WINDOW tokens (default 200,000); KEEP_RECENT_TOKENS
// optionally sets the compaction setting of that name.
//
// Bindings (wrangler.toml beside this file): SESSIONS, a Durable Object namespace of class
// SessionObject declared in `new_sqlite_classes`; the variables above.
import { createDurableObjectStore, Maintainer, Session } from 'ctxfold';

const ROUTE = /^\/sessions\/([^/]{1,200})\/(append|before-request|after-response|file|stats)$/;

/** The Worker: routes `/sessions/<id>/…` to the session's Durable Object. */
export default {
  async fetch(request, env) {
    const route = ROUTE.exec(new URL(request.url).pathname);
    if (route === null) return Response.json({ error: 'not found' }, { status: 404 });
    const id = decodeURIComponent(route[1]);
    const object = env.SESSIONS.get(env.SESSIONS.idFromName(id));
    const forwarded = new Request(request);
    forwarded.headers.set('x-session-id', id);
    return object.fetch(forwarded);
  },
};

/** The lines of a file's bytes (its "\n" bytes). */
function lineCount(bytes) {
  let n = 0;
  for (const b of bytes) if (b === 10) n++;
  return n;
}

/** Whether two byte arrays are equal. */
function sameBytes(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A JSON answer. */
const json = (value, status = 200) => Response.json(value, { status });

/** One session: its Maintainer, its store, and the queue its requests wait in. */
export class SessionObject {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
    this.store = createDurableObjectStore(ctx.storage);
    this.id = null;
    this.maintainer = null;
    /** The journal mark of what the store holds (`session.changes(mark)` gives what it lacks). */
    this.mark = null;
    this.queue = Promise.resolve();
    this.stats = {
      requests: 0,
      active: 0,
      maxActive: 0,
      saves: 0,
      resets: 0,
      linesAppended: 0,
      linesRewritten: 0,
      compactions: 0,
      loadedLines: 0,
    };
  }

  /**
   * Runs the requests of this session one at a time, in arrival order. The input gate alone is
   * not enough: it lets the next request in while this one awaits something other than storage,
   * here a summary the Maintainer is waiting for, and the next request's append would land in the
   * middle of that compaction.
   */
  fetch(request) {
    const run = this.queue.then(() => this.handle(request));
    this.queue = run.catch(() => {});
    return run;
  }

  async handle(request) {
    const { stats } = this;
    stats.requests++;
    stats.active++;
    stats.maxActive = Math.max(stats.maxActive, stats.active);
    try {
      const id = request.headers.get('x-session-id');
      const action = ROUTE.exec(new URL(request.url).pathname)?.[2];
      if (!id || !action) return json({ error: 'no session id' }, 400);
      await this.load(id);
      return await this.act(action, request);
    } catch (err) {
      return json({ error: String(err?.message ?? err), code: err?.code ?? null }, err?.code ? 422 : 500);
    } finally {
      stats.active--;
    }
  }

  /** Opens the stored session (or starts one) on the object's first request. */
  async load(id) {
    if (this.maintainer !== null) return;
    this.id = id;
    const bytes = await this.store.open(id);
    const session = bytes === null ? Session.create({ cwd: '/' }) : Session.fromJsonl(bytes);
    if (bytes !== null) {
      // The store holds these bytes: the next save starts from the journal's mark of them
      // (null when the load migrated the file: that save writes it whole).
      this.mark = session.loadMark;
      this.stats.loadedLines = lineCount(bytes);
    }
    const env = this.env;
    this.maintainer = new Maintainer(session, {
      model: {
        provider: env.MODEL_PROVIDER ?? 'anthropic',
        id: env.MODEL_ID ?? 'claude-sonnet-4-5',
        contextWindow: Number(env.CONTEXT_WINDOW ?? 200_000),
        input: ['text'],
      },
      remoteEndpoint: env.SUMMARY_URL,
      ...(env.SUMMARY_AUTH ? { headers: { authorization: env.SUMMARY_AUTH } } : {}),
      settings: {
        // Idle maintenance needs a timer that outlives requests: a Durable Object alarm would
        // drive it; this example leaves it off.
        idleEnabled: false,
        ...(env.KEEP_RECENT_TOKENS ? { keepRecentTokens: Number(env.KEEP_RECENT_TOKENS) } : {}),
      },
      onEvent: (event) => {
        if (event.type === 'auto_compaction_end' && !event.aborted && event.result) this.stats.compactions++;
      },
    });
    if (bytes === null) await this.save();
  }

  /** Writes what changed since the last save (a handoff's new session starts a new file: a reset). */
  async save() {
    const changes = this.maintainer.session.changes(this.mark);
    if (changes.reset || changes.rewritten.length > 0 || changes.appended.length > 0) {
      await this.store.save(this.id, changes);
      this.stats.saves++;
      if (changes.reset) this.stats.resets++;
      this.stats.linesAppended += changes.appended.length;
      this.stats.linesRewritten += changes.rewritten.length;
    }
    this.mark = changes.mark;
  }

  async act(action, request) {
    const m = this.maintainer;
    if (action === 'file') {
      return new Response(m.session.toBytes(), { headers: { 'content-type': 'application/x-ndjson' } });
    }
    if (action === 'stats') {
      const bytes = await this.store.open(this.id);
      return json({
        ...this.stats,
        entries: m.session.size,
        lines: bytes === null ? 0 : lineCount(bytes),
        // Whether the store holds exactly the live session's file.
        stored: bytes !== null && sameBytes(bytes, m.session.toBytes()),
      });
    }
    if (request.method !== 'POST') return json({ error: `${action} takes a POST` }, 405);
    const body = await request.json();
    try {
      if (action === 'append') {
        for (const message of body.messages ?? []) m.session.appendMessage(message);
        return json({ entries: m.session.size });
      }
      if (action === 'before-request') {
        const { messages, tokens, report } = await m.beforeRequest({
          ...(body.systemPrompt === undefined ? {} : { systemPrompt: body.systemPrompt }),
          ...(body.tools === undefined ? {} : { tools: body.tools }),
        });
        return json({ messages, tokens, ...(report ? { report: brief(report) } : {}) });
      }
      const { next, continuePrompt, report } = await m.afterResponse(body.reply);
      return json({
        next,
        ...(continuePrompt ? { continuePrompt } : {}),
        ...(report ? { report: brief(report) } : {}),
      });
    } finally {
      // Whatever the request did (an error leaves the session as it was), the store follows it.
      await this.save();
    }
  }
}

/** What the agent needs of a maintenance report. */
const brief = (report) => ({
  method: report.method,
  reason: report.reason,
  tokensBefore: report.tokensBefore,
  tokensAfter: report.tokensAfter,
});
