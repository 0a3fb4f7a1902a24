// The `gemini` format: the `contents` of a Gemini API `generateContent` request (the system
// prompt is the request's `systemInstruction`, kept apart), read into AgentMessages and written
// back.
//
// - A `model` content is an AssistantMessage, one block per part: text (its `thoughtSignature`
//   as pi's `textSignature`), thought summaries (`thought: true`) as thinking signed with the
//   part's `thoughtSignature`, `functionCall` as a tool call (its signature as the call's
//   `thoughtSignature`), images of `inlineData` as image blocks.
// - A `user` content (or one without a role) is a user message for its text and images, and a
//   tool result per `functionResponse`, in part order: `{output: text}` and `{error: text}` are
//   the result's text (the second an error), any other response its JSON text; images of the
//   response's `parts` follow the text.
// - Gemini may give a call no `id`: it then gets one from its place in the session
//   (`gemini_<k>_<name>`, the k-th id-less call of that name), and a response without an id
//   answers the first unanswered call of its name in the latest model turn with calls, or, at
//   the start of an appended batch, the session's last calls of its name. The id-less state is
//   kept, so neither is written with an id.
// - Parts pi has no block for (`fileData`, other `inlineData`, `executableCode`,
//   `codeExecutionResult`, kinds this module does not know) become a text block that says what
//   they are and keeps the part (W_CONVERTED when read: other formats get the text).
// - What pi has no field for (member order, `videoMetadata`, `thought: false`, a missing
//   `role` or `args`, unknown members) stays under `ctxfold`, so an uncompacted history is
//   written back as the same JSON.
//
// Writing a history of another format follows pi's Gemini converter: thinking signed for
// another model (or unsigned) is sent as text, signatures only go back to the model that made
// them, ids go on function parts only for Gemini 3 models of the Gemini API (which also take
// the documented bypass signature on a call that has none), a tool result's images nest in its
// response for Gemini 3 and follow the run of results as a user content for earlier models, and
// what has no Gemini form is reported (W_CONVERTED, W_DROPPED).
import {
  extrasOf as extrasOfFormat,
  invalidMessage,
  isObject,
  keepExtras,
  kindOf,
  optionalString,
  putMember,
  quote,
  requireObject,
  requireString,
} from './common.js';

export const name = 'gemini';

/**
 * The Gemini API's image-understanding guide: "Gemini models support a maximum of 3,600 image
 * files per request"; the budget `toLlmMessages` keeps snapcompact frames and kept images within.
 */
export const maxImages = 3600;

const API = 'google-generative-ai';
const GOOGLE_APIS = new Set([API, 'google-vertex', 'google-gemini-cli']);
/** The members of a part's `data` union (one per part). */
const KINDS = [
  'text',
  'inlineData',
  'fileData',
  'functionCall',
  'functionResponse',
  'executableCode',
  'codeExecutionResult',
];
/** Members any part may carry beside its data. */
const META = new Set(['thought', 'thoughtSignature', 'videoMetadata', 'partMetadata', 'mediaResolution']);
/** The signature Google documents for a function call replayed without one (Gemini 3). */
const SKIP_SIGNATURE = 'skip_thought_signature_validator';
/** The text pi's converter sends a tool result's images after, for models before Gemini 3. */
const ATTACHED = 'Tool result image:';
/** The response text of a tool result with images only (pi's converter). */
const SEE_IMAGE = '(see attached image)';

const extrasOf = (node) => extrasOfFormat(node, name);
const blank = (t) => typeof t !== 'string' || t.trim() === '';
const str = requireString;
const obj = requireObject;
const optionalStr = optionalString;

/** `keepExtras` of this format; with `mark`, `ctxfold` is set (a bare `{ format }`) even when no member is defined. */
const keep = (node, members, mark = false) => keepExtras(node, name, members, mark ? { format: name } : undefined);

/**
 * How `node` differs from what the writer gives back for it: `more`, its members other than
 * `mapped` (in order), and `order`, its member order when the writer's (mapped members in
 * `mapped` order, then the others) would differ. Undefined when it does not differ.
 */
function layoutOf(node, mapped) {
  let more;
  let order;
  let next = 0;
  let unknownSeen = false;
  for (const k in node) {
    const at = mapped.indexOf(k);
    if (at < 0) {
      more ??= {};
      putMember(more, k, node[k]);
      unknownSeen = true;
    } else if (unknownSeen || at < next) order = true;
    else next = at + 1;
  }
  if (order) order = Object.keys(node);
  return more === undefined && order === undefined ? undefined : { more, order };
}

/** `out` with a layout's members after its own, in the order they were read in. */
function finish(out, layout) {
  if (!isObject(layout)) return out;
  if (isObject(layout.more)) for (const k of Object.keys(layout.more)) putMember(out, k, layout.more[k]);
  if (!Array.isArray(layout.order)) return out;
  const ordered = {};
  for (const k of layout.order) if (Object.hasOwn(out, k)) putMember(ordered, k, out[k]);
  for (const k of Object.keys(out)) if (!Object.hasOwn(ordered, k)) putMember(ordered, k, out[k]);
  return ordered;
}

/** A function name as an id may hold it (pi's converter keeps ids to `[A-Za-z0-9_-]`). */
function idSafe(text) {
  return text.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40);
}

// ----- reading -------------------------------------------------------------------------------

/** The data member of a part: its name, or undefined for a kind this module does not know. */
function dataKind(p, index, field) {
  let kind;
  for (const k of KINDS) {
    if (p[k] === undefined) continue;
    if (kind !== undefined)
      throw invalidMessage(index, `${field}.${k}`, `a part holds one kind of data, and this one has ${kind} too`);
    kind = k;
  }
  if (kind !== undefined) return kind;
  for (const k in p) if (!META.has(k)) return undefined;
  throw invalidMessage(index, field, `must hold one of ${KINDS.join(', ')}`);
}

/** Checks the members any part may carry. */
function checkMeta(p, index, field) {
  if (p.thought !== undefined && typeof p.thought !== 'boolean')
    throw invalidMessage(index, `${field}.thought`, `must be a boolean, got ${kindOf(p.thought)}`);
  optionalStr(p.thoughtSignature, index, `${field}.thoughtSignature`);
  if (p.videoMetadata !== undefined) obj(p.videoMetadata, index, `${field}.videoMetadata`);
  if (p.partMetadata !== undefined) obj(p.partMetadata, index, `${field}.partMetadata`);
}

/** What other formats read for a part pi has no block for. */
function describe(p) {
  if (isObject(p.inlineData)) {
    const label = typeof p.inlineData.displayName === 'string' ? `${p.inlineData.displayName}, ` : '';
    return `[file: ${label}${p.inlineData.mimeType}]`;
  }
  if (isObject(p.fileData)) return `[file: ${p.fileData.fileUri}]`;
  if (isObject(p.executableCode)) {
    const language = typeof p.executableCode.language === 'string' ? p.executableCode.language.toLowerCase() : '';
    return `\`\`\`${language === 'language_unspecified' ? '' : language}\n${p.executableCode.code}\n\`\`\``;
  }
  if (isObject(p.codeExecutionResult)) {
    const r = p.codeExecutionResult;
    return `[code execution result: ${r.outcome}]${typeof r.output === 'string' ? `\n${r.output}` : ''}`;
  }
  for (const k in p) if (!META.has(k)) return `[${k} part]`;
  return '[part]';
}

/** A part pi has no block for, checked, as a text block that says what it is and keeps it. */
function opaque(p, kind, index, field, warnings) {
  if (kind === 'inlineData' || kind === 'fileData') {
    const blob = obj(p[kind], index, `${field}.${kind}`);
    if (kind === 'inlineData') {
      str(blob.mimeType, index, `${field}.inlineData.mimeType`);
      str(blob.data, index, `${field}.inlineData.data`);
    } else {
      str(blob.fileUri, index, `${field}.fileData.fileUri`);
      optionalStr(blob.mimeType, index, `${field}.fileData.mimeType`);
    }
    optionalStr(blob.displayName, index, `${field}.${kind}.displayName`);
  } else if (kind === 'executableCode') {
    const code = obj(p.executableCode, index, `${field}.executableCode`);
    str(code.code, index, `${field}.executableCode.code`);
    optionalStr(code.language, index, `${field}.executableCode.language`);
  } else if (kind === 'codeExecutionResult') {
    const result = obj(p.codeExecutionResult, index, `${field}.codeExecutionResult`);
    str(result.outcome, index, `${field}.codeExecutionResult.outcome`);
    optionalStr(result.output, index, `${field}.codeExecutionResult.output`);
  }
  const what = kind ?? 'an unknown kind of';
  warnings.converted(`a ${what} part has no pi form: other formats read it as text`, index, field);
  return keep({ type: 'text', text: describe(p) }, { part: p });
}

/** An `inlineData` image as an image block, or undefined for other data. */
function imageOf(p, index, field) {
  const blob = obj(p.inlineData, index, `${field}.inlineData`);
  const mimeType = str(blob.mimeType, index, `${field}.inlineData.mimeType`);
  const data = str(blob.data, index, `${field}.inlineData.data`);
  if (!mimeType.startsWith('image/')) return undefined;
  return keep(
    { type: 'image', data, mimeType },
    { layout: layoutOf(p, ['inlineData']), inner: layoutOf(blob, ['mimeType', 'data']) },
  );
}

/** A part of a user content (not a function response) as a pi block. */
function readUserPart(p, kind, index, field, st) {
  if (kind === 'text') {
    const text = str(p.text, index, `${field}.text`);
    return keep({ type: 'text', text }, { layout: layoutOf(p, ['text']) });
  }
  if (kind === 'functionCall')
    throw invalidMessage(index, `${field}.functionCall`, 'a function call is a part of a model content');
  if (kind === 'inlineData') {
    const image = imageOf(p, index, field);
    if (image !== undefined) return image;
  }
  return opaque(p, kind, index, field, st.ctx.warnings);
}

/** A part of a model content as a pi block. */
function readModelPart(p, kind, index, field, st) {
  const signature = p.thoughtSignature;
  if (kind === 'text') {
    const text = str(p.text, index, `${field}.text`);
    if (p.thought === true) {
      const block = { type: 'thinking', thinking: text };
      if (signature !== undefined) block.thinkingSignature = signature;
      return keep(block, { layout: layoutOf(p, ['text', 'thought', 'thoughtSignature']) });
    }
    const block = { type: 'text', text };
    if (signature !== undefined) block.textSignature = signature;
    return keep(block, { layout: layoutOf(p, ['text', 'thoughtSignature']) });
  }
  if (kind === 'functionCall') return readCall(p, index, field, st);
  if (kind === 'functionResponse')
    throw invalidMessage(index, `${field}.functionResponse`, 'a function response is a part of a user content');
  if (kind === 'inlineData') {
    const image = imageOf(p, index, field);
    if (image !== undefined) return image;
  }
  return opaque(p, kind, index, field, st.ctx.warnings);
}

/** The id of a call Gemini gave none: the first `gemini_<k>_<name>` not taken in the batch or session. */
function generatedId(tool, st) {
  const safe = idSafe(tool);
  for (let k = st.next.get(safe) ?? 0; ; k++) {
    const id = `gemini_${k}_${safe}`;
    if (st.calls.has(id) || st.provided.has(id) || st.ctx.toolCall(id) !== undefined) continue;
    st.next.set(safe, k + 1);
    return id;
  }
}

function readCall(p, index, field, st) {
  const f = `${field}.functionCall`;
  const fc = obj(p.functionCall, index, f);
  const tool = str(fc.name, index, `${f}.name`);
  const given = optionalStr(fc.id, index, `${f}.id`);
  if (fc.args !== undefined) obj(fc.args, index, `${f}.args`);
  if (given !== undefined && st.calls.has(given))
    throw invalidMessage(index, `${f}.id`, `repeats the id of an earlier call: ${quote(given)}`);
  const id = given ?? generatedId(tool, st);
  const call = { id, name: tool, answered: false };
  st.calls.set(id, call);
  st.turnCalls.push(call);
  const block = { type: 'toolCall', id, name: tool, arguments: fc.args ?? {} };
  if (p.thoughtSignature !== undefined) block.thoughtSignature = p.thoughtSignature;
  return keep(block, {
    noId: given === undefined || undefined,
    noArgs: fc.args === undefined || undefined,
    layout: layoutOf(p, ['functionCall', 'thoughtSignature']),
    inner: layoutOf(fc, ['id', 'name', 'args']),
  });
}

/** The session's calls a response without an id at the start of the batch may answer, by name. */
function sessionCallsOf(tool, st) {
  let queue = st.fallback.get(tool);
  if (queue === undefined) {
    const safe = idSafe(tool);
    const found = [];
    for (let k = 0; ; k++) {
      const id = `gemini_${k}_${safe}`;
      const call = st.ctx.toolCall(id);
      if (call === undefined) break;
      if (call.name === tool) found.push(id);
    }
    // The last calls of the name, as many as the leading responses of the batch answer.
    queue = found.slice(Math.max(0, found.length - (st.leading.get(tool) ?? 0)));
    st.fallback.set(tool, queue);
  }
  return queue;
}

/** The id of the call a function response answers, or E_INVALID_MESSAGE. */
function callOf(fr, tool, index, f, st) {
  if (fr.id !== undefined) {
    const id = str(fr.id, index, `${f}.id`);
    const here = st.calls.get(id);
    const callName = here?.name ?? st.ctx.toolCall(id)?.name;
    if (callName === undefined)
      throw invalidMessage(index, `${f}.id`, `names no function call before it: ${quote(id)}`);
    if (callName !== tool)
      throw invalidMessage(index, `${f}.name`, `${quote(tool)} is not the name of its call, ${quote(callName)}`);
    if (here !== undefined) here.answered = true;
    return id;
  }
  if (st.turn !== null) {
    const call = st.turn.find((c) => !c.answered && c.name === tool);
    if (call === undefined)
      throw invalidMessage(
        index,
        `${f}.name`,
        `names no unanswered function call of the model turn before it: ${quote(tool)}`,
      );
    call.answered = true;
    return call.id;
  }
  const id = sessionCallsOf(tool, st).shift();
  if (id === undefined) throw invalidMessage(index, `${f}.name`, `names no function call before it: ${quote(tool)}`);
  return id;
}

/** A `functionResponse` part as a tool result. */
function readResponse(p, index, field, st) {
  const f = `${field}.functionResponse`;
  const fr = obj(p.functionResponse, index, f);
  const tool = str(fr.name, index, `${f}.name`);
  const response = obj(fr.response, index, `${f}.response`);
  const id = callOf(fr, tool, index, f, st);
  let text;
  let isError = false;
  let json;
  const keys = Object.keys(response);
  if (keys.length === 1 && keys[0] === 'output' && typeof response.output === 'string') text = response.output;
  else if (keys.length === 1 && keys[0] === 'error' && typeof response.error === 'string') {
    text = response.error;
    isError = true;
  } else {
    // The API reads a response without `output` as the output, and `error` as a failure.
    text = JSON.stringify(response);
    isError = Object.hasOwn(response, 'error') && !Object.hasOwn(response, 'output');
    json = true;
  }
  const content = [{ type: 'text', text }];
  if (fr.parts !== undefined) {
    if (!Array.isArray(fr.parts))
      throw invalidMessage(index, `${f}.parts`, `must be an array, got ${kindOf(fr.parts)}`);
    for (let k = 0; k < fr.parts.length; k++) {
      const at = `${f}.parts[${k}]`;
      const rp = obj(fr.parts[k], index, at);
      const kind = dataKind(rp, index, at);
      const image = kind === 'inlineData' ? imageOf(rp, index, at) : undefined;
      content.push(image ?? opaque(rp, kind, index, at, st.ctx.warnings));
    }
  }
  return keep(
    { role: 'toolResult', toolCallId: id, toolName: tool, content, isError },
    {
      noId: fr.id === undefined || undefined,
      json,
      emptyParts: (Array.isArray(fr.parts) && fr.parts.length === 0) || undefined,
      layout: layoutOf(p, ['functionResponse']),
      inner: layoutOf(fr, ['id', 'name', 'response', 'parts']),
    },
    true,
  );
}

/** Extras of a message, created when missing. */
function extras(node) {
  if (!isObject(node.ctxfold)) node.ctxfold = { format: name };
  return node.ctxfold;
}

function readParts(c, index) {
  if (c.parts === undefined) return undefined;
  if (!Array.isArray(c.parts)) throw invalidMessage(index, 'parts', `must be an array, got ${kindOf(c.parts)}`);
  return c.parts;
}

/** A user content: a user message per run of text and media parts, a tool result per function response. */
function readUser(c, index, st) {
  const parts = readParts(c, index);
  const produced = [];
  let blocks = null;
  const flush = () => {
    if (blocks !== null) produced.push(keep({ role: 'user', content: blocks }, {}, true));
    blocks = null;
  };
  // Indexed, not `forEach`: a sparse array's holes are malformed parts, not skipped ones.
  for (let j = 0; j < (parts?.length ?? 0); j++) {
    const at = `parts[${j}]`;
    const p = obj(parts[j], index, at);
    const kind = dataKind(p, index, at);
    checkMeta(p, index, at);
    if (kind === 'functionResponse') {
      flush();
      produced.push(readResponse(p, index, at, st));
    } else {
      blocks ??= [];
      blocks.push(readUserPart(p, kind, index, at, st));
    }
  }
  flush();
  if (produced.length === 0) produced.push(keep({ role: 'user', content: [] }, {}, true));
  for (let k = 1; k < produced.length; k++) extras(produced[k]).join = true;
  const first = extras(produced[0]);
  if (produced[0].role === 'toolResult' && st.out.at(-1)?.role === 'toolResult') first.split = true;
  if (c.role === undefined) first.noRole = true;
  if (parts === undefined) first.noParts = true;
  const layout = layoutOf(c, ['role', 'parts']);
  if (layout !== undefined) first.content = layout;
  st.out.push(...produced);
}

function readModel(c, index, st) {
  const parts = readParts(c, index);
  const blocks = [];
  st.turnCalls = [];
  for (let j = 0; j < (parts?.length ?? 0); j++) {
    const at = `parts[${j}]`;
    const p = obj(parts[j], index, at);
    const kind = dataKind(p, index, at);
    checkMeta(p, index, at);
    blocks.push(readModelPart(p, kind, index, at, st));
  }
  if (st.turnCalls.length > 0) st.turn = st.turnCalls;
  const message = {
    role: 'assistant',
    content: blocks,
    api: st.api,
    provider: st.provider,
    model: st.model,
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 },
    stopReason: st.turnCalls.length > 0 ? 'toolUse' : 'stop',
  };
  st.out.push(
    keep(message, { noParts: parts === undefined || undefined, content: layoutOf(c, ['role', 'parts']) }, true),
  );
}

/**
 * Before reading: the ids the batch's calls give (a generated id never takes one), and the
 * number of id-less responses by name before its first model content (they answer calls of
 * the session).
 */
function survey(contents) {
  const provided = new Set();
  const leading = new Map();
  let modelSeen = false;
  for (const c of contents) {
    if (!isObject(c) || !Array.isArray(c.parts)) continue;
    if (c.role === 'model') modelSeen = true;
    for (const p of c.parts) {
      if (!isObject(p)) continue;
      if (isObject(p.functionCall) && typeof p.functionCall.id === 'string') provided.add(p.functionCall.id);
      const fr = p.functionResponse;
      if (!modelSeen && isObject(fr) && fr.id === undefined && typeof fr.name === 'string')
        leading.set(fr.name, (leading.get(fr.name) ?? 0) + 1);
    }
  }
  return { provided, leading };
}

/** Gemini `contents` → AgentMessages. ctx: `{ model?, warnings, toolCall(id) }`. */
export function read(contents, ctx) {
  const model = ctx.model;
  const st = {
    ctx,
    api: typeof model?.api === 'string' ? model.api : API,
    provider: typeof model?.provider === 'string' ? model.provider : 'google',
    model: typeof model?.id === 'string' ? model.id : 'unknown',
    /** Call id → `{ id, name, answered }`, of this batch. */
    calls: new Map(),
    /** Id-safe function name → the next `k` to try for a generated id. */
    next: new Map(),
    /** Calls of the model content being read, and of the latest one with calls (null: none yet). */
    turnCalls: [],
    turn: null,
    /** Function name → the session's calls left for the batch's leading id-less responses. */
    fallback: new Map(),
    out: [],
    ...survey(contents),
  };
  for (let i = 0; i < contents.length; i++) {
    const c = contents[i];
    if (!isObject(c)) throw invalidMessage(i, '', `must be an object, got ${kindOf(c)}`);
    if (c.role === 'model') readModel(c, i, st);
    else if (c.role === 'user' || c.role === undefined) readUser(c, i, st);
    else throw invalidMessage(i, 'role', `must be 'user' or 'model', got ${quote(c.role)}`);
  }
  return { messages: st.out };
}

// ----- writing -------------------------------------------------------------------------------

/** `{ generation, vertex }` of the reading model: its Gemini major version (0: unknown). */
function targetOf(model) {
  if (!isObject(model)) return { generation: 0, vertex: false };
  const match = typeof model.id === 'string' ? /gemini-(\d+)/.exec(model.id) : null;
  return {
    generation: match ? Number(match[1]) : 0,
    vertex: model.api === 'google-vertex' || model.provider === 'google-vertex',
  };
}

/** Base64 text, as Google's API takes a thought signature (bytes). */
const isBase64 = (s) => typeof s === 'string' && s.length > 0 && s.length % 4 === 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(s);

/** A kept part, when the block still holds what it was read from (pruning rewrites text). */
function keptPart(b, x) {
  const p = x?.part;
  return isObject(p) && b.type === 'text' && describe(p) === b.text ? p : undefined;
}

function imagePart(b, x) {
  return finish({ inlineData: finish({ mimeType: b.mimeType, data: b.data }, x?.inner) }, x?.layout);
}

/** Writes one request's contents; see `write`. */
class Writer {
  out = [];
  #warnings;
  #model;
  #target;
  /** The user content a joined message or a tool result goes into. */
  #open = null;
  /** The role of the previous provider message. */
  #prev;
  /** Images of tool results, for a user content after the run of results (models before Gemini 3). */
  #images = [];
  /** Tool-call id → whether its function call went out with the id. */
  #ids = new Map();

  constructor(ctx) {
    this.#warnings = ctx.warnings;
    this.#model = isObject(ctx.model) ? ctx.model : undefined;
    this.#target = targetOf(ctx.model);
  }

  /** Whether ids go on function parts of another format's history (Gemini 3 on the Gemini API). */
  get #partIds() {
    return this.#target.generation >= 3 && !this.#target.vertex;
  }

  add(m, index) {
    const role = m?.role;
    if (role !== 'toolResult') this.#flushImages();
    if (m?.providerPayload !== undefined)
      this.#warnings.dropped(
        'a provider-native compaction payload has no Gemini form, and the kept messages it holds are not in ' +
          'this view: the summary is sent as text (write for a Gemini reading model)',
        this.out.length,
      );
    if (role === 'toolResult') this.#toolResult(m);
    else if (role === 'user' || role === 'developer') this.#userSide(m);
    else if (role === 'assistant') this.#assistant(m);
    else
      this.#warnings.dropped(`a ${typeof role === 'string' ? role : kindOf(role)} message has no Gemini form`, index);
    this.#prev = role;
  }

  end() {
    this.#flushImages();
  }

  #flushImages() {
    if (this.#images.length === 0) return;
    this.out.push({ role: 'user', parts: [{ text: ATTACHED }, ...this.#images] });
    this.#images = [];
    this.#open = null;
  }

  /** A new content (`x`: the extras of the message that opens it). */
  #content(role, parts, x) {
    const c = {};
    if (!x?.noRole) c.role = role;
    if (!x?.noParts || parts.length > 0) c.parts = parts;
    const content = finish(c, x?.content);
    this.out.push(content);
    return content;
  }

  /** The parts of user-side blocks; `native`: read from this format (kept as read). */
  #userParts(content, native, at) {
    const blocks =
      typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? content : [];
    const parts = [];
    blocks.forEach((b, k) => {
      const path = `content[${k}]`;
      const bx = extrasOf(b);
      const kept = keptPart(b, bx);
      if (kept !== undefined) parts.push(kept);
      else if (b?.type === 'text' && typeof b.text === 'string') {
        if (native || !blank(b.text)) parts.push(finish({ text: b.text }, bx?.layout));
        else if (b.text !== '') this.#warnings.dropped('whitespace-only text has no use in a Gemini content', at, path);
      } else if (b?.type === 'image' && typeof b.data === 'string') parts.push(imagePart(b, bx));
      else this.#warnings.dropped(`a ${b?.type} block has no form in a Gemini user content`, at, path);
    });
    return parts;
  }

  #userSide(m) {
    const x = extrasOf(m);
    const joins = x?.join && this.#open !== null;
    const at = joins ? this.out.length - 1 : this.out.length;
    const parts = this.#userParts(m.content, x !== undefined, at);
    if (joins) {
      this.#open.parts.push(...parts);
      return;
    }
    if (x === undefined && parts.length === 0) return;
    if (m.role === 'developer') this.#warnings.converted('a developer message is sent as a user content', at);
    this.#open = this.#content('user', parts, x);
  }

  #toolResult(m) {
    const x = extrasOf(m);
    const joins =
      this.#open !== null && (x?.join || (this.#prev === 'toolResult' && !x?.split) || this.#textAfterCalls(x));
    const at = joins ? this.out.length - 1 : this.out.length;
    const blocks = Array.isArray(m.content) ? m.content : [];
    const fr = {};
    const withId = x ? !x.noId : (this.#ids.get(m.toolCallId) ?? this.#partIds);
    if (withId) fr.id = x ? m.toolCallId : idSafe64(m.toolCallId);
    fr.name = typeof m.toolName === 'string' ? m.toolName : '';
    let parts;
    if (x) {
      const first = blocks[0]?.type === 'text' ? blocks[0] : undefined;
      const texts = [first?.text ?? ''];
      parts = this.#responseParts(first ? blocks.slice(1) : blocks, at, texts);
      const text = texts.join('\n');
      fr.response = (x.json && parsedObject(text)) || (m.isError === true ? { error: text } : { output: text });
    } else {
      const texts = [];
      const images = [];
      blocks.forEach((b, k) => {
        if (b?.type === 'text' && typeof b.text === 'string') texts.push(b.text);
        else if (b?.type === 'image' && typeof b.data === 'string') images.push(imagePart(b));
        else this.#warnings.dropped(`a tool-result ${b?.type} block has no Gemini form`, at, `content[${k}]`);
      });
      const text = texts.join('\n');
      const output = text !== '' ? text : images.length > 0 ? SEE_IMAGE : '';
      fr.response = m.isError === true ? { error: output } : { output };
      if (images.length > 0 && this.#target.generation >= 3) parts = images;
      else if (images.length > 0) {
        this.#warnings.converted(
          "a tool result's images go in a user content after the results (function responses take images from Gemini 3 on)",
          at,
        );
        this.#images.push(...images);
      }
    }
    if (parts !== undefined && (parts.length > 0 || x?.emptyParts)) fr.parts = parts;
    const part = finish({ functionResponse: finish(fr, x?.inner) }, x?.layout);
    if (joins) this.#open.parts.push(part);
    else this.#open = this.#content('user', [part], x);
  }

  /**
   * Whether a result of another format goes into the open user content: one of text that came
   * between the model's calls and their results (Gemini wants the responses in the content
   * right after the calls).
   */
  #textAfterCalls(x) {
    if (x !== undefined || this.#open !== this.out.at(-1)) return false;
    const model = this.out.at(-2);
    return model?.role === 'model' && Array.isArray(model.parts) && model.parts.some((p) => p?.functionCall);
  }

  /** The parts of a function response read from this format: images and kept parts. */
  #responseParts(blocks, at, texts) {
    const parts = [];
    blocks.forEach((b, k) => {
      const bx = extrasOf(b);
      const kept = keptPart(b, bx);
      if (kept !== undefined) parts.push(kept);
      else if (b?.type === 'image' && typeof b.data === 'string') parts.push(imagePart(b, bx));
      else if (b?.type === 'text' && typeof b.text === 'string') {
        // A function response holds one text, its response: later ones join it.
        this.#warnings.converted("a tool result's later text joins its response", at, `content[${k + 1}]`);
        texts.push(b.text);
      } else this.#warnings.dropped(`a tool-result ${b?.type} block has no Gemini form`, at, `content[${k + 1}]`);
    });
    return parts;
  }

  /**
   * Whether an assistant message's signatures go back: read from this format, or of a Google
   * api and the reading model (pi's converter keeps signatures of the same provider and model).
   */
  #native(m, x) {
    return x !== undefined || (GOOGLE_APIS.has(m.api) && this.#sameModel(m));
  }

  #sameModel(m) {
    const model = this.#model;
    return model === undefined || (model.provider === m.provider && (model.id === undefined || model.id === m.model));
  }

  #assistant(m) {
    const x = extrasOf(m);
    const native = this.#native(m, x);
    const at = this.out.length;
    const parts = [];
    (Array.isArray(m.content) ? m.content : []).forEach((b, k) => {
      const path = `content[${k}]`;
      const bx = extrasOf(b);
      const kept = keptPart(b, bx);
      if (kept !== undefined) {
        parts.push(kept);
        return;
      }
      const type = b?.type;
      if (type === 'text' && typeof b.text === 'string') {
        if (x === undefined && blank(b.text)) {
          if (b.text !== '') this.#warnings.dropped('whitespace-only text has no use in a Gemini content', at, path);
          return;
        }
        const part = { text: b.text };
        const signature = this.#signature(b.textSignature, native, x);
        if (signature !== undefined) part.thoughtSignature = signature;
        // Text signatures of other providers are their item ids, which Gemini has no use for;
        // a Google one of another model is a signature the reading model would refuse.
        else if (GOOGLE_APIS.has(m.api) && isBase64(b.textSignature))
          this.#warnings.dropped("a text's signature of another model has no use for this one", at, path);
        parts.push(finish(part, bx?.layout));
      } else if (type === 'thinking' && typeof b.thinking === 'string') {
        const signed = typeof b.thinkingSignature === 'string';
        if (x !== undefined || (native && signed && isBase64(b.thinkingSignature))) {
          const part = { text: b.thinking, thought: true };
          if (signed) part.thoughtSignature = b.thinkingSignature;
          parts.push(finish(part, bx?.layout));
        } else if (blank(b.thinking)) {
          if (signed || b.thinking !== '') this.#warnings.dropped('blank thinking that Gemini cannot verify', at, path);
        } else {
          this.#warnings.converted(
            native ? 'unsigned thinking is sent as text' : "another model's thinking is sent as text",
            at,
            path,
          );
          parts.push({ text: b.thinking });
        }
      } else if (type === 'toolCall') {
        parts.push(this.#call(b, bx, m, native, x, at, path));
      } else if (type === 'image' && typeof b.data === 'string') parts.push(imagePart(b, bx));
      else if (type === 'redactedThinking') this.#warnings.dropped('redacted thinking has no Gemini form', at, path);
      else this.#warnings.dropped(`an assistant ${type} block has no Gemini form`, at, path);
    });
    if (x === undefined && parts.length === 0) return;
    this.#content('model', parts, x);
    this.#open = null;
  }

  /**
   * A text or call signature to send: as read, or the reading model's own. Undefined for any
   * other; the caller reports it.
   */
  #signature(signature, native, x) {
    if (typeof signature !== 'string') return undefined;
    if (x !== undefined) return signature;
    if (native && isBase64(signature)) return signature;
    return undefined;
  }

  #call(b, bx, m, native, x, at, path) {
    const args = isObject(b.arguments) ? b.arguments : {};
    const fc = {};
    const withId = x !== undefined ? !bx?.noId : this.#partIds;
    const id = typeof b.id === 'string' ? b.id : '';
    if (withId) fc.id = x !== undefined ? id : idSafe64(id);
    this.#ids.set(id, withId);
    fc.name = typeof b.name === 'string' ? b.name : '';
    if (!bx?.noArgs || Object.keys(args).length > 0) fc.args = args;
    const part = { functionCall: finish(fc, bx?.inner) };
    let signature = this.#signature(b.thoughtSignature, native, x);
    if (signature === undefined && typeof b.thoughtSignature === 'string' && b.thoughtSignature !== '') {
      const wrapped = chatSignature(b.thoughtSignature);
      // The openai-chat format keeps Gemini's `extra_content` whole: its signature is Gemini's own.
      if (wrapped !== undefined && this.#sameModel(m)) signature = wrapped;
      else this.#warnings.dropped("a tool call's signature of another model has no use for Gemini", at, path);
    }
    // Gemini 3 wants a signature on every replayed call; Google documents this one for a call without.
    if (signature === undefined && x === undefined && this.#partIds) signature = SKIP_SIGNATURE;
    if (signature !== undefined) part.thoughtSignature = signature;
    return finish(part, bx?.layout);
  }
}

/** A tool-call id as pi's converter sends it to Gemini (`[A-Za-z0-9_-]`, at most 64 characters). */
function idSafe64(id) {
  return String(id)
    .replace(/[^A-Za-z0-9_-]/g, '_')
    .slice(0, 64);
}

/** The object JSON text holds, or undefined. */
function parsedObject(text) {
  try {
    const v = JSON.parse(text);
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** The signature in the openai-chat format's form of Gemini's `extra_content` (`{google: {thought_signature}}`). */
function chatSignature(signature) {
  if (signature.charCodeAt(0) !== 0x7b) return undefined;
  const v = parsedObject(signature);
  const inner = v?.google ?? v?.vertex;
  return isObject(inner) && isBase64(inner.thought_signature) ? inner.thought_signature : undefined;
}

/** The request's `systemInstruction`: the stored Gemini value, or the text of another format's. */
function systemOf(system, warnings) {
  if (!isObject(system)) return undefined;
  if (system.format === name && isObject(system.value)) return system.value;
  // A system prompt given as a string is sent as the content of its text.
  if (system.format === name && typeof system.value === 'string') return { parts: [{ text: system.value }] };
  if (typeof system.text !== 'string' || system.text === '') return undefined;
  if (typeof system.value !== 'string')
    warnings.converted(`the system prompt (of the ${system.format ?? 'pi'} format) is sent as its text`);
  return { parts: [{ text: system.text }] };
}

/**
 * The provider messages of `toLlmMessages` → `{ messages, system? }`: the request's `contents`
 * and `systemInstruction`. ctx: `{ model?, warnings, system }`.
 */
export function write(llm, ctx) {
  const writer = new Writer(ctx);
  for (let index = 0; index < llm.length; index++) writer.add(llm[index], index);
  writer.end();
  const result = { messages: writer.out };
  const system = systemOf(ctx.system, ctx.warnings);
  if (system !== undefined) result.system = system;
  return result;
}
