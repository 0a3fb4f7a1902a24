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
import type {
  AssistantContent,
  AssistantMessage,
  ImageContent,
  JsonObject,
  LlmMessage,
  OtherContent,
  TextContent,
  ThinkingContent,
  ToolCall,
  ToolResultMessage,
  UserMessage,
} from '../core/session.js';
import {
  type Carrying,
  extrasOf as extrasOfFormat,
  invalidMessage,
  isBlank,
  isObject,
  keepExtras,
  kindOf,
  type Loose,
  optionalString,
  putMember,
  quote,
  type ReadContext,
  requireObject,
  requireString,
  type Warnings,
  type WriteContext,
} from './common.js';

// ----- the messages of this format ---------------------------------------------------------
// The `contents` and `systemInstruction` of a Gemini API `generateContent` request, from
// Google's documented shapes (the `Content` and `Part` resources). docs/guide/formats.md says
// what maps to what.

/** Bytes given in the request: base64 `data` of a MIME type. */
export interface GeminiBlob {
  mimeType: string;
  data: string;
  displayName?: string;
}

/** Data by URI (an uploaded file or a URL). */
export interface GeminiFileData {
  fileUri: string;
  mimeType?: string;
  displayName?: string;
}

/** A call the model asks for; `id` may be missing (then it pairs with its response by name and order). */
export interface GeminiFunctionCall {
  id?: string;
  name: string;
  args?: JsonObject;
}

/** A part inside a function response (Gemini 3: images of a tool result). */
export interface GeminiFunctionResponsePart {
  inlineData?: GeminiBlob;
  fileData?: GeminiFileData;
}

/** The result of a call: `{ output }` or `{ error }` by convention, any JSON object otherwise. */
export interface GeminiFunctionResponse {
  id?: string;
  name: string;
  response: JsonObject;
  parts?: GeminiFunctionResponsePart[];
  willContinue?: boolean;
  scheduling?: 'SCHEDULING_UNSPECIFIED' | 'SILENT' | 'WHEN_IDLE' | 'INTERRUPT';
}

/** Code the model wrote for the code-execution tool. */
export interface GeminiExecutableCode {
  language: 'LANGUAGE_UNSPECIFIED' | 'PYTHON';
  code: string;
}

/** What running that code gave. */
export interface GeminiCodeExecutionResult {
  outcome: 'OUTCOME_UNSPECIFIED' | 'OUTCOME_OK' | 'OUTCOME_FAILED' | 'OUTCOME_DEADLINE_EXCEEDED';
  output?: string;
}

/** What every part may carry beside its one kind of data. */
interface GeminiPartBase {
  /** The part is a thought summary. */
  thought?: boolean;
  /** Opaque base64; replayed byte for byte to the model that made it. */
  thoughtSignature?: string;
  videoMetadata?: { startOffset?: string; endOffset?: string; fps?: number };
  partMetadata?: JsonObject;
  mediaResolution?: JsonObject;
}

export type GeminiPart = GeminiPartBase &
  (
    | { text: string }
    | { inlineData: GeminiBlob }
    | { fileData: GeminiFileData }
    | { functionCall: GeminiFunctionCall }
    | { functionResponse: GeminiFunctionResponse }
    | { executableCode: GeminiExecutableCode }
    | { codeExecutionResult: GeminiCodeExecutionResult }
  );

/** An element of the request's `contents`; a missing `role` reads as `user`. */
export interface GeminiContent {
  role?: 'user' | 'model';
  parts?: GeminiPart[];
}

/** The request's `systemInstruction`: a content of text parts. */
export interface GeminiSystem {
  role?: 'user';
  parts: Array<{ text: string }>;
}

// ----- the contents written ------------------------------------------------------------------
//
// What `write` returns (`toMessages`, `beforeRequest` with this format), typed so that it goes to
// `@google/genai`'s `generateContent({ contents })` with no cast (and reads back as
// `GeminiContent`). That SDK types a function response's `scheduling`, executable code's
// `language`, a code result's `outcome` and a part's `mediaResolution` level as TypeScript
// enums, which no structural type matches: a function response's `scheduling` and a part's
// `mediaResolution` are not declared here, and the parts of the code-execution tool
// (`executableCode`, `codeExecutionResult`: pi has no block for them, they are written only as
// they were read in this format) are not either. All are written as they were read.

export type GeminiFunctionResponseOut = {
  id?: string;
  name: string;
  response: JsonObject;
  parts?: GeminiFunctionResponsePart[];
  willContinue?: boolean;
};
type GeminiPartBaseOut = {
  thought?: boolean;
  thoughtSignature?: string;
  videoMetadata?: { startOffset?: string; endOffset?: string; fps?: number };
  partMetadata?: JsonObject;
};
export type GeminiPartOut = GeminiPartBaseOut &
  (
    | { text: string }
    | { inlineData: GeminiBlob }
    | { fileData: GeminiFileData }
    | { functionCall: GeminiFunctionCall }
    | { functionResponse: GeminiFunctionResponseOut }
  );
/** An element of the `contents` written: assignable to the SDK's `Content`. */
export type GeminiContentOut = {
  /** Missing only on a content read without it. */
  role?: 'user' | 'model';
  /** Missing only on a content read without them. */
  parts?: GeminiPartOut[];
};

// ----- what this module is given -----------------------------------------------------------

/** An array (of values not checked yet). */
const isArray = (v: unknown): v is readonly unknown[] => Array.isArray(v);

/** One kind of data a part holds: the member that holds it. */
type PartKind =
  | 'text'
  | 'inlineData'
  | 'fileData'
  | 'functionCall'
  | 'functionResponse'
  | 'executableCode'
  | 'codeExecutionResult';

/** A pi block a part reads as. */
type ReadBlock = TextContent | ThinkingContent | ImageContent | ToolCall;

export const name = 'gemini';

/**
 * The Gemini API's image-understanding guide: "Gemini models support a maximum of 3,600 image
 * files per request"; the budget `toLlmMessages` keeps snapcompact frames and kept images within.
 */
export const maxImages = 3600;

const API = 'google-generative-ai';
const GOOGLE_APIS = new Set<unknown>([API, 'google-vertex', 'google-gemini-cli']);
/** The members of a part's `data` union (one per part). */
const KINDS: readonly PartKind[] = [
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

const extrasOf = (node: unknown): Loose | undefined => extrasOfFormat(node, name);

/** `keepExtras` of this format; with `mark`, `ctxfold` is set (a bare `{ format }`) even when no member is defined. */
const keep = <T extends object>(node: T, members: Loose, mark = false): T & Carrying =>
  keepExtras(node, name, members, mark ? { format: name } : undefined);

/** How a node differs from what the writer gives back for it (see `layoutOf`). */
interface Layout {
  more: Loose | undefined;
  order: string[] | undefined;
}

/**
 * How `node` differs from what the writer gives back for it: `more`, its members other than
 * `mapped` (in order), and `order`, its member order when the writer's (mapped members in
 * `mapped` order, then the others) would differ. Undefined when it does not differ.
 */
function layoutOf(node: Loose, mapped: readonly string[]): Layout | undefined {
  let more: Loose | undefined;
  let reordered = false;
  let next = 0;
  let unknownSeen = false;
  for (const k in node) {
    const at = mapped.indexOf(k);
    if (at < 0) {
      more ??= {};
      putMember(more, k, node[k]);
      unknownSeen = true;
    } else if (unknownSeen || at < next) reordered = true;
    else next = at + 1;
  }
  const order = reordered ? Object.keys(node) : undefined;
  return more === undefined && order === undefined ? undefined : { more, order };
}

/** `out` with a layout's members after its own, in the order they were read in. */
function finish<T extends object>(out: T, layout: unknown): T {
  if (!isObject(layout)) return out;
  const more = layout.more;
  if (isObject(more)) for (const k of Object.keys(more)) putMember(out, k, more[k]);
  if (!isArray(layout.order)) return out;
  const own = out as Loose;
  const ordered: Loose = {};
  // The reader's `order`: the member names as read (`layoutOf`).
  for (const k of layout.order as readonly string[]) if (Object.hasOwn(own, k)) putMember(ordered, k, own[k]);
  for (const k of Object.keys(own)) if (!Object.hasOwn(ordered, k)) putMember(ordered, k, own[k]);
  // The same members as `out`, in the order read.
  return ordered as T;
}

/** A function name as an id may hold it (pi's converter keeps ids to `[A-Za-z0-9_-]`). */
function idSafe(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40);
}

// ----- checking ------------------------------------------------------------------------------
//
// The input is unknown: each content is checked first (an object, its role, its `parts` an
// array), then each part is checked and read in turn, so that what depends on the parts before
// it (a repeated call id, a response that names no call) is reported where it stands. A
// response's call is looked up between the check of its members and that of its `parts`, as
// before the checks were split from the reading. The first malformed field is
// E_INVALID_MESSAGE, named.
//
// A part has no `type`: the member that holds its data is its kind (`dataKind`: exactly one of
// `KINDS` defined). The checks tag a part with its kind (`UserPart`, `ModelPart`,
// `ResponsePart`, unions on `kind`), and the reader switches on the tag. Kept as they were:
// the parts of a function response are checked for their data only (not `thought` and the
// other members beside it), and there a text, call or response part is kept whole, unchecked,
// as a part pi has no block for; an image's `displayName` is kept as given, unchecked.

/** A content as checked: a `model` or `user` one (a missing role reads as user), its parts not checked yet. */
interface CheckedContent {
  role?: 'user' | 'model' | undefined;
  parts?: readonly unknown[] | undefined;
}

/** Inline bytes as checked. */
type CheckedBlob = Loose & { mimeType: string; data: string };

/** A function call as checked. */
type CheckedCall = Loose & { id?: string | undefined; name: string; args?: JsonObject | undefined };

/** A function response's members as checked before its call is looked up; its `parts` are checked after. */
type CheckedResponse = Loose & { id?: string | undefined; name: string; response: JsonObject; parts?: unknown };

/** A text part. */
interface TextPart {
  kind: 'text';
  part: Loose & { text: string };
}
/** An `inlineData` part of an image MIME type. */
interface ImagePart {
  kind: 'image';
  part: Loose & { inlineData: CheckedBlob };
}
interface CallPart {
  kind: 'functionCall';
  part: Loose & { functionCall: CheckedCall };
}
interface ResponseHeadPart {
  kind: 'functionResponse';
  part: Loose & { functionResponse: CheckedResponse };
}
/**
 * A part pi has no block for (`data`: the kind of its data; undefined for a kind this module
 * does not know), checked for that kind where the reader checks it, and kept whole.
 */
interface OpaquePart {
  kind: 'opaque';
  data: PartKind | undefined;
  part: Loose;
}
/** A part of a user content, tagged by its kind. */
type UserPart = TextPart | ImagePart | ResponseHeadPart | OpaquePart;
/** A part of a model content, tagged by its kind. */
type ModelPart = TextPart | ImagePart | CallPart | OpaquePart;
/** A part of a function response's `parts`, tagged by its kind. */
type ResponsePart = ImagePart | OpaquePart;

/** Content `index`: an object, with a role the reader takes and its `parts` an array when given. */
function checkContent(c: unknown, index: number): asserts c is Loose & CheckedContent {
  if (!isObject(c)) throw invalidMessage(index, '', `must be an object, got ${kindOf(c)}`);
  if (c.role !== 'model' && c.role !== 'user' && c.role !== undefined)
    throw invalidMessage(index, 'role', `must be 'user' or 'model', got ${quote(c.role)}`);
  if (c.parts !== undefined && !isArray(c.parts))
    throw invalidMessage(index, 'parts', `must be an array, got ${kindOf(c.parts)}`);
}

/** The data member of a part: its name, or undefined for a kind this module does not know. */
function dataKind(p: Loose, index: number, field: string): PartKind | undefined {
  let kind: PartKind | undefined;
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

/** Checks the members any part of a content may carry (`mediaResolution` is kept as given). */
function checkMeta(p: Loose, index: number, field: string): void {
  if (p.thought !== undefined && typeof p.thought !== 'boolean')
    throw invalidMessage(index, `${field}.thought`, `must be a boolean, got ${kindOf(p.thought)}`);
  optionalString(p.thoughtSignature, index, `${field}.thoughtSignature`);
  if (p.videoMetadata !== undefined) requireObject(p.videoMetadata, index, `${field}.videoMetadata`);
  if (p.partMetadata !== undefined) requireObject(p.partMetadata, index, `${field}.partMetadata`);
}

function checkText(p: Loose, index: number, field: string): asserts p is TextPart['part'] {
  requireString(p.text, index, `${field}.text`);
}

function checkBlob(p: Loose, index: number, field: string): asserts p is ImagePart['part'] {
  const blob = requireObject(p.inlineData, index, `${field}.inlineData`);
  requireString(blob.mimeType, index, `${field}.inlineData.mimeType`);
  requireString(blob.data, index, `${field}.inlineData.data`);
}

function checkCall(p: Loose, index: number, field: string): asserts p is CallPart['part'] {
  const f = `${field}.functionCall`;
  const fc = requireObject(p.functionCall, index, f);
  requireString(fc.name, index, `${f}.name`);
  optionalString(fc.id, index, `${f}.id`);
  if (fc.args !== undefined) requireObject(fc.args, index, `${f}.args`);
}

/** A function response's members but its `parts` (checked once its call is found: `checkResponsePart`). */
function checkResponse(p: Loose, index: number, field: string): asserts p is ResponseHeadPart['part'] {
  const f = `${field}.functionResponse`;
  const fr = requireObject(p.functionResponse, index, f);
  requireString(fr.name, index, `${f}.name`);
  requireObject(fr.response, index, `${f}.response`);
  optionalString(fr.id, index, `${f}.id`);
}

/**
 * A part that holds media or code (or data of a kind the reader keeps unchecked): an image, or
 * a part pi has no block for, checked for its kind.
 */
function checkData(p: Loose, kind: PartKind | undefined, index: number, field: string): ImagePart | OpaquePart {
  if (kind === 'inlineData') {
    checkBlob(p, index, field);
    if (p.inlineData.mimeType.startsWith('image/')) return { kind: 'image', part: p };
    optionalString(p.inlineData.displayName, index, `${field}.inlineData.displayName`);
  } else if (kind === 'fileData') {
    const file = requireObject(p.fileData, index, `${field}.fileData`);
    requireString(file.fileUri, index, `${field}.fileData.fileUri`);
    optionalString(file.mimeType, index, `${field}.fileData.mimeType`);
    optionalString(file.displayName, index, `${field}.fileData.displayName`);
  } else if (kind === 'executableCode') {
    const code = requireObject(p.executableCode, index, `${field}.executableCode`);
    requireString(code.code, index, `${field}.executableCode.code`);
    optionalString(code.language, index, `${field}.executableCode.language`);
  } else if (kind === 'codeExecutionResult') {
    const result = requireObject(p.codeExecutionResult, index, `${field}.codeExecutionResult`);
    requireString(result.outcome, index, `${field}.codeExecutionResult.outcome`);
    optionalString(result.output, index, `${field}.codeExecutionResult.output`);
  }
  return { kind: 'opaque', data: kind, part: p };
}

/** A part of a content: an object holding one kind of data, with the members beside it checked. */
function checkPartHead(part: unknown, index: number, field: string): { p: Loose; kind: PartKind | undefined } {
  const p = requireObject(part, index, field);
  const kind = dataKind(p, index, field);
  checkMeta(p, index, field);
  return { p, kind };
}

function checkUserPart(part: unknown, index: number, field: string): UserPart {
  const { p, kind } = checkPartHead(part, index, field);
  switch (kind) {
    case 'text':
      checkText(p, index, field);
      return { kind, part: p };
    case 'functionCall':
      throw invalidMessage(index, `${field}.functionCall`, 'a function call is a part of a model content');
    case 'functionResponse':
      checkResponse(p, index, field);
      return { kind, part: p };
    default:
      return checkData(p, kind, index, field);
  }
}

function checkModelPart(part: unknown, index: number, field: string): ModelPart {
  const { p, kind } = checkPartHead(part, index, field);
  switch (kind) {
    case 'text':
      checkText(p, index, field);
      return { kind, part: p };
    case 'functionCall':
      checkCall(p, index, field);
      return { kind, part: p };
    case 'functionResponse':
      throw invalidMessage(index, `${field}.functionResponse`, 'a function response is a part of a user content');
    default:
      return checkData(p, kind, index, field);
  }
}

/** A part of a function response's `parts`: its data only (see above). */
function checkResponsePart(part: unknown, index: number, field: string): ResponsePart {
  const p = requireObject(part, index, field);
  const kind = dataKind(p, index, field);
  return checkData(p, kind, index, field);
}

// ----- reading -------------------------------------------------------------------------------

/** A call of this batch: its id, function name and whether a response answered it. */
interface BatchCall {
  id: string;
  name: string;
  answered: boolean;
}

/** The state of one `read`. */
interface ReadState {
  ctx: ReadContext;
  api: string;
  provider: string;
  model: string;
  /** Call id → `{ id, name, answered }`, of this batch. */
  calls: Map<string, BatchCall>;
  /** Id-safe function name → the next `k` to try for a generated id. */
  next: Map<string, number>;
  /** Calls of the model content being read, and of the latest one with calls (null: none yet). */
  turnCalls: BatchCall[];
  turn: BatchCall[] | null;
  /** Function name → the session's calls left for the batch's leading id-less responses. */
  fallback: Map<string, string[]>;
  out: Array<UserMessage | AssistantMessage | ToolResultMessage>;
  /** The ids the batch's calls give (`survey`). */
  provided: Set<string>;
  /** Function name → the id-less responses before the batch's first model content (`survey`). */
  leading: Map<string, number>;
}

/** What other formats read for a part pi has no block for (the reader's, or one kept in a session file). */
function describe(p: Loose): string {
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

/** A part pi has no block for, as a text block that says what it is and keeps it. */
function opaque(o: OpaquePart, index: number, field: string, warnings: Warnings): TextContent {
  const what = o.data ?? 'an unknown kind of';
  warnings.converted(`a ${what} part has no pi form: other formats read it as text`, index, field);
  return keep<TextContent>({ type: 'text', text: describe(o.part) }, { part: o.part });
}

/** An `inlineData` image as an image block. */
function readImage(p: ImagePart['part']): ImageContent {
  const blob = p.inlineData;
  return keep<ImageContent>(
    { type: 'image', data: blob.data, mimeType: blob.mimeType },
    { layout: layoutOf(p, ['inlineData']), inner: layoutOf(blob, ['mimeType', 'data']) },
  );
}

/** A part of a user content (not a function response) as a pi block. */
function readUserPart(
  c: Exclude<UserPart, ResponseHeadPart>,
  index: number,
  field: string,
  st: ReadState,
): TextContent | ImageContent {
  switch (c.kind) {
    case 'text':
      return keep<TextContent>({ type: 'text', text: c.part.text }, { layout: layoutOf(c.part, ['text']) });
    case 'image':
      return readImage(c.part);
    case 'opaque':
      return opaque(c, index, field, st.ctx.warnings);
  }
}

/** A part of a model content as a pi block. */
function readModelPart(c: ModelPart, index: number, field: string, st: ReadState): ReadBlock {
  switch (c.kind) {
    case 'text': {
      const p = c.part;
      // checkMeta has made it a string when given.
      const signature = typeof p.thoughtSignature === 'string' ? p.thoughtSignature : undefined;
      if (p.thought === true) {
        const block: ThinkingContent = { type: 'thinking', thinking: p.text };
        if (signature !== undefined) block.thinkingSignature = signature;
        return keep(block, { layout: layoutOf(p, ['text', 'thought', 'thoughtSignature']) });
      }
      const block: TextContent = { type: 'text', text: p.text };
      if (signature !== undefined) block.textSignature = signature;
      return keep(block, { layout: layoutOf(p, ['text', 'thoughtSignature']) });
    }
    case 'functionCall':
      return readCall(c.part, index, field, st);
    case 'image':
      return readImage(c.part);
    case 'opaque':
      return opaque(c, index, field, st.ctx.warnings);
  }
}

/** The id of a call Gemini gave none: the first `gemini_<k>_<name>` not taken in the batch or session. */
function generatedId(tool: string, st: ReadState): string {
  const safe = idSafe(tool);
  for (let k = st.next.get(safe) ?? 0; ; k++) {
    const id = `gemini_${k}_${safe}`;
    if (st.calls.has(id) || st.provided.has(id) || st.ctx.toolCall(id) !== undefined) continue;
    st.next.set(safe, k + 1);
    return id;
  }
}

function readCall(p: CallPart['part'], index: number, field: string, st: ReadState): ToolCall {
  const fc = p.functionCall;
  const tool = fc.name;
  const given = fc.id;
  if (given !== undefined && st.calls.has(given))
    throw invalidMessage(index, `${field}.functionCall.id`, `repeats the id of an earlier call: ${quote(given)}`);
  const id = given ?? generatedId(tool, st);
  const call: BatchCall = { id, name: tool, answered: false };
  st.calls.set(id, call);
  st.turnCalls.push(call);
  const block: ToolCall = { type: 'toolCall', id, name: tool, arguments: fc.args ?? {} };
  if (typeof p.thoughtSignature === 'string') block.thoughtSignature = p.thoughtSignature;
  return keep(block, {
    noId: given === undefined || undefined,
    noArgs: fc.args === undefined || undefined,
    layout: layoutOf(p, ['functionCall', 'thoughtSignature']),
    inner: layoutOf(fc, ['id', 'name', 'args']),
  });
}

/** The session's calls a response without an id at the start of the batch may answer, by name. */
function sessionCallsOf(tool: string, st: ReadState): string[] {
  let queue = st.fallback.get(tool);
  if (queue === undefined) {
    const safe = idSafe(tool);
    const found: string[] = [];
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
function callOf(fr: CheckedResponse, index: number, f: string, st: ReadState): string {
  const tool = fr.name;
  if (fr.id !== undefined) {
    const id = fr.id;
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

/** A `functionResponse` part as a tool result (its `parts` checked once its call is found). */
function readResponse(
  p: ResponseHeadPart['part'],
  index: number,
  field: string,
  st: ReadState,
): ToolResultMessage & Carrying {
  const f = `${field}.functionResponse`;
  const fr = p.functionResponse;
  const tool = fr.name;
  const response = fr.response;
  const id = callOf(fr, index, f, st);
  let text: string;
  let isError = false;
  let json: true | undefined;
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
  const content: Array<TextContent | ImageContent> = [{ type: 'text', text }];
  const parts = fr.parts;
  if (parts !== undefined) {
    if (!isArray(parts)) throw invalidMessage(index, `${f}.parts`, `must be an array, got ${kindOf(parts)}`);
    for (let k = 0; k < parts.length; k++) {
      const at = `${f}.parts[${k}]`;
      const rp = checkResponsePart(parts[k], index, at);
      content.push(rp.kind === 'image' ? readImage(rp.part) : opaque(rp, index, at, st.ctx.warnings));
    }
  }
  return keep<ToolResultMessage>(
    { role: 'toolResult', toolCallId: id, toolName: tool, content, isError },
    {
      noId: fr.id === undefined || undefined,
      json,
      emptyParts: (isArray(parts) && parts.length === 0) || undefined,
      layout: layoutOf(p, ['functionResponse']),
      inner: layoutOf(fr, ['id', 'name', 'response', 'parts']),
    },
    true,
  );
}

/** Extras of a message, created when missing. */
function extras(node: Carrying): Loose {
  const x = node.ctxfold;
  if (isObject(x)) return x;
  const made = { format: name };
  node.ctxfold = made;
  return made;
}

/** A user content: a user message per run of text and media parts, a tool result per function response. */
function readUser(c: Loose & CheckedContent, index: number, st: ReadState): void {
  const parts = c.parts;
  const produced: Array<(UserMessage | ToolResultMessage) & Carrying> = [];
  let blocks: Array<TextContent | ImageContent> | null = null;
  const flush = () => {
    if (blocks !== null) produced.push(keep<UserMessage>({ role: 'user', content: blocks }, {}, true));
    blocks = null;
  };
  // Indexed, not `forEach`: a sparse array's holes are malformed parts, not skipped ones.
  for (let j = 0; j < (parts?.length ?? 0); j++) {
    const at = `parts[${j}]`;
    const part = checkUserPart(parts?.[j], index, at);
    if (part.kind === 'functionResponse') {
      flush();
      produced.push(readResponse(part.part, index, at, st));
    } else {
      blocks ??= [];
      blocks.push(readUserPart(part, index, at, st));
    }
  }
  flush();
  const head = produced[0] ?? keep<UserMessage>({ role: 'user', content: [] }, {}, true);
  if (produced.length === 0) produced.push(head);
  for (const [k, m] of produced.entries()) if (k > 0) extras(m).join = true;
  const first = extras(head);
  if (head.role === 'toolResult' && st.out.at(-1)?.role === 'toolResult') first.split = true;
  if (c.role === undefined) first.noRole = true;
  if (parts === undefined) first.noParts = true;
  const layout = layoutOf(c, ['role', 'parts']);
  if (layout !== undefined) first.content = layout;
  st.out.push(...produced);
}

function readModel(c: Loose & CheckedContent, index: number, st: ReadState): void {
  const parts = c.parts;
  const blocks: AssistantContent[] = [];
  st.turnCalls = [];
  for (let j = 0; j < (parts?.length ?? 0); j++) {
    const at = `parts[${j}]`;
    blocks.push(readModelPart(checkModelPart(parts?.[j], index, at), index, at, st));
  }
  if (st.turnCalls.length > 0) st.turn = st.turnCalls;
  const message: AssistantMessage = {
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
function survey(contents: readonly unknown[]): { provided: Set<string>; leading: Map<string, number> } {
  const provided = new Set<string>();
  const leading = new Map<string, number>();
  let modelSeen = false;
  for (const c of contents) {
    if (!isObject(c) || !isArray(c.parts)) continue;
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
export function read(
  contents: readonly unknown[],
  ctx: ReadContext,
): { messages: Array<UserMessage | AssistantMessage | ToolResultMessage> } {
  const model: Loose = isObject(ctx.model) ? ctx.model : {};
  const st: ReadState = {
    ctx,
    api: typeof model.api === 'string' ? model.api : API,
    provider: typeof model.provider === 'string' ? model.provider : 'google',
    model: typeof model.id === 'string' ? model.id : 'unknown',
    calls: new Map(),
    next: new Map(),
    turnCalls: [],
    turn: null,
    fallback: new Map(),
    out: [],
    ...survey(contents),
  };
  for (let i = 0; i < contents.length; i++) {
    const c = contents[i];
    checkContent(c, i);
    if (c.role === 'model') readModel(c, i, st);
    else readUser(c, i, st);
  }
  return { messages: st.out };
}

// ----- writing -------------------------------------------------------------------------------

/** `{ generation, vertex }` of the reading model: its Gemini major version (0: unknown). */
function targetOf(model: unknown): { generation: number; vertex: boolean } {
  if (!isObject(model)) return { generation: 0, vertex: false };
  const match = typeof model.id === 'string' ? /gemini-(\d+)/.exec(model.id) : null;
  return {
    generation: match ? Number(match[1]) : 0,
    vertex: model.api === 'google-vertex' || model.provider === 'google-vertex',
  };
}

/** Base64 text, as Google's API takes a thought signature (bytes). */
const isBase64 = (s: unknown): s is string =>
  typeof s === 'string' && s.length > 0 && s.length % 4 === 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(s);

/** A block of the LLM view as the writer meets it (its `ctxfold` extras aside). */
type WrittenBlock = AssistantContent | undefined | null;

/** A text block as the writer sends one: its `text` a string. */
const isText = (b: WrittenBlock): b is TextContent => b?.type === 'text' && typeof b.text === 'string';
/** A thinking block as the writer sends one: its `thinking` a string. */
const isThinking = (b: WrittenBlock): b is ThinkingContent => b?.type === 'thinking' && typeof b.thinking === 'string';
/** An image block as the writer sends one: its base64 `data` a string. */
const isImage = (b: WrittenBlock): b is ImageContent => b?.type === 'image' && typeof b.data === 'string';

/**
 * A part the reader kept whole (`opaque`: of a kind pi has no block for, checked, or of a kind
 * this module does not know), written back as it was read: in a content or a function response.
 */
type KeptPart = GeminiPart & GeminiFunctionResponsePart;
const isKeptPart = (p: unknown): p is KeptPart => isObject(p);

/** A kept part, when the block still holds what it was read from (pruning rewrites text). */
function keptPart(b: WrittenBlock, x: Loose | undefined): KeptPart | undefined {
  const p = x?.part;
  return isObject(p) && b?.type === 'text' && describe(p) === b.text && isKeptPart(p) ? p : undefined;
}

function imagePart(b: ImageContent, x?: Loose): { inlineData: GeminiBlob } {
  return finish({ inlineData: finish({ mimeType: b.mimeType, data: b.data }, x?.inner) }, x?.layout);
}

/** The parts of a content being written (kept parts of any kind among them). */
type Parts = GeminiPart[];

/** Writes one request's contents; see `write`. */
class Writer {
  out: GeminiContent[] = [];
  #warnings: Warnings;
  #model: Loose | undefined;
  #target: { generation: number; vertex: boolean };
  /** The user content a joined message or a tool result goes into. */
  #open: (GeminiContent & { parts: Parts }) | null = null;
  /** The role of the previous provider message. */
  #prev: unknown;
  /** Images of tool results, for a user content after the run of results (models before Gemini 3). */
  #images: GeminiPart[] = [];
  /** Tool-call id → whether its function call went out with the id. */
  #ids = new Map<string, boolean>();

  constructor(ctx: WriteContext) {
    this.#warnings = ctx.warnings;
    this.#model = isObject(ctx.model) ? ctx.model : undefined;
    this.#target = targetOf(ctx.model);
  }

  /** Whether ids go on function parts of another format's history (Gemini 3 on the Gemini API). */
  get #partIds(): boolean {
    return this.#target.generation >= 3 && !this.#target.vertex;
  }

  add(m: LlmMessage, index: number): void {
    const role: unknown = m?.role;
    if (role !== 'toolResult') this.#flushImages();
    if (isObject(m) && m.providerPayload !== undefined)
      this.#warnings.dropped(
        'a provider-native compaction payload has no Gemini form, and the kept messages it holds are not in ' +
          'this view: the summary is sent as text (write for a Gemini reading model)',
        this.out.length,
      );
    if (m?.role === 'toolResult') this.#toolResult(m);
    else if (m?.role === 'user' || m?.role === 'developer') this.#userSide(m);
    else if (m?.role === 'assistant') this.#assistant(m);
    else
      this.#warnings.dropped(`a ${typeof role === 'string' ? role : kindOf(role)} message has no Gemini form`, index);
    this.#prev = role;
  }

  end(): void {
    this.#flushImages();
  }

  #flushImages(): void {
    if (this.#images.length === 0) return;
    this.out.push({ role: 'user', parts: [{ text: ATTACHED }, ...this.#images] });
    this.#images = [];
    this.#open = null;
  }

  /** A new content (`x`: the extras of the message that opens it). */
  #content(role: 'user' | 'model', parts: Parts, x: Loose | undefined): GeminiContent & { parts: Parts } {
    const c: GeminiContent = {};
    if (!x?.noRole) c.role = role;
    if (!x?.noParts || parts.length > 0) c.parts = parts;
    const content = finish(c, x?.content);
    this.out.push(content);
    // `parts` is missing only on a content read without them (`noParts`).
    return content as GeminiContent & { parts: Parts };
  }

  /** The parts of user-side blocks; `native`: read from this format (kept as read). */
  #userParts(content: LlmMessage['content'] | undefined, native: boolean, at: number): Parts {
    const blocks: readonly WrittenBlock[] =
      typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? content : [];
    const parts: Parts = [];
    blocks.forEach((b, k) => {
      const path = `content[${k}]`;
      const bx = extrasOf(b);
      const kept = keptPart(b, bx);
      if (kept !== undefined) parts.push(kept);
      else if (b?.type === 'text' && typeof b.text === 'string') {
        if (native || !isBlank(b.text)) parts.push(finish({ text: b.text }, bx?.layout));
        else if (b.text !== '') this.#warnings.dropped('whitespace-only text has no use in a Gemini content', at, path);
      } else if (isImage(b)) parts.push(imagePart(b, bx));
      else this.#warnings.dropped(`a ${b?.type} block has no form in a Gemini user content`, at, path);
    });
    return parts;
  }

  #userSide(m: Extract<LlmMessage, { role: 'user' | 'developer' }>): void {
    const x = extrasOf(m);
    const open = x?.join ? this.#open : null;
    const at = open !== null ? this.out.length - 1 : this.out.length;
    const parts = this.#userParts(m.content, x !== undefined, at);
    if (open !== null) {
      open.parts.push(...parts);
      return;
    }
    if (x === undefined && parts.length === 0) return;
    if (m.role === 'developer') this.#warnings.converted('a developer message is sent as a user content', at);
    this.#open = this.#content('user', parts, x);
  }

  #toolResult(m: Extract<LlmMessage, { role: 'toolResult' }>): void {
    const x = extrasOf(m);
    const open =
      this.#open !== null && (x?.join || (this.#prev === 'toolResult' && !x?.split) || this.#textAfterCalls(x))
        ? this.#open
        : null;
    const at = open !== null ? this.out.length - 1 : this.out.length;
    const blocks: readonly WrittenBlock[] = Array.isArray(m.content) ? m.content : [];
    const withId = x ? !x.noId : (this.#ids.get(m.toolCallId) ?? this.#partIds);
    const toolName = typeof m.toolName === 'string' ? m.toolName : '';
    let response: JsonObject;
    let parts: GeminiFunctionResponsePart[] | undefined;
    if (x) {
      const head = blocks[0];
      const first = head?.type === 'text' ? head : undefined;
      const texts: unknown[] = [first?.text ?? ''];
      parts = this.#responseParts(first ? blocks.slice(1) : blocks, at, texts);
      const text = texts.join('\n');
      response = (x.json ? parsedObject(text) : undefined) ?? (m.isError === true ? { error: text } : { output: text });
    } else {
      const texts: string[] = [];
      const images: Array<{ inlineData: GeminiBlob }> = [];
      blocks.forEach((b, k) => {
        if (b?.type === 'text' && typeof b.text === 'string') texts.push(b.text);
        else if (isImage(b)) images.push(imagePart(b));
        else this.#warnings.dropped(`a tool-result ${b?.type} block has no Gemini form`, at, `content[${k}]`);
      });
      const text = texts.join('\n');
      const output = text !== '' ? text : images.length > 0 ? SEE_IMAGE : '';
      response = m.isError === true ? { error: output } : { output };
      if (images.length > 0 && this.#target.generation >= 3) parts = images;
      else if (images.length > 0) {
        this.#warnings.converted(
          "a tool result's images go in a user content after the results (function responses take images from Gemini 3 on)",
          at,
        );
        this.#images.push(...images);
      }
    }
    // Members in the order Gemini documents them: id, name, response, parts.
    const fr: GeminiFunctionResponse = withId
      ? { id: x ? m.toolCallId : idSafe64(m.toolCallId), name: toolName, response }
      : { name: toolName, response };
    if (parts !== undefined && (parts.length > 0 || x?.emptyParts)) fr.parts = parts;
    const part: GeminiPart = finish({ functionResponse: finish(fr, x?.inner) }, x?.layout);
    if (open !== null) open.parts.push(part);
    else this.#open = this.#content('user', [part], x);
  }

  /**
   * Whether a result of another format goes into the open user content: one of text that came
   * between the model's calls and their results (Gemini wants the responses in the content
   * right after the calls).
   */
  #textAfterCalls(x: Loose | undefined): boolean {
    if (x !== undefined || this.#open !== this.out.at(-1)) return false;
    const model = this.out.at(-2);
    return (
      model?.role === 'model' &&
      Array.isArray(model.parts) &&
      model.parts.some((p) => isObject(p) && Boolean(p.functionCall))
    );
  }

  /** The parts of a function response read from this format: images and kept parts. */
  #responseParts(blocks: readonly WrittenBlock[], at: number, texts: unknown[]): GeminiFunctionResponsePart[] {
    const parts: GeminiFunctionResponsePart[] = [];
    blocks.forEach((b, k) => {
      const bx = extrasOf(b);
      const kept = keptPart(b, bx);
      if (kept !== undefined) parts.push(kept);
      else if (isImage(b)) parts.push(imagePart(b, bx));
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
  #native(m: AssistantMessage, x: Loose | undefined): boolean {
    return x !== undefined || (GOOGLE_APIS.has(m.api) && this.#sameModel(m));
  }

  #sameModel(m: AssistantMessage): boolean {
    const model = this.#model;
    return model === undefined || (model.provider === m.provider && (model.id === undefined || model.id === m.model));
  }

  #assistant(m: AssistantMessage): void {
    const x = extrasOf(m);
    const native = this.#native(m, x);
    const at = this.out.length;
    const parts: Parts = [];
    const blocks: readonly WrittenBlock[] = Array.isArray(m.content) ? m.content : [];
    blocks.forEach((b, k) => {
      const path = `content[${k}]`;
      const bx = extrasOf(b);
      const kept = keptPart(b, bx);
      if (kept !== undefined) {
        parts.push(kept);
        return;
      }
      const type = b?.type;
      if (isText(b)) {
        const text = b;
        if (x === undefined && isBlank(text.text)) {
          if (text.text !== '') this.#warnings.dropped('whitespace-only text has no use in a Gemini content', at, path);
          return;
        }
        const part: GeminiPart = { text: text.text };
        const signature = this.#signature(text.textSignature, native, x);
        if (signature !== undefined) part.thoughtSignature = signature;
        // Text signatures of other providers are their item ids, which Gemini has no use for;
        // a Google one of another model is a signature the reading model would refuse.
        else if (GOOGLE_APIS.has(m.api) && isBase64(text.textSignature))
          this.#warnings.dropped("a text's signature of another model has no use for this one", at, path);
        parts.push(finish(part, bx?.layout));
      } else if (isThinking(b)) {
        const thinking = b;
        const signature = typeof thinking.thinkingSignature === 'string' ? thinking.thinkingSignature : undefined;
        const signed = signature !== undefined;
        if (x !== undefined || (native && signed && isBase64(signature))) {
          const part: GeminiPart = { text: thinking.thinking, thought: true };
          if (signed) part.thoughtSignature = signature;
          parts.push(finish(part, bx?.layout));
        } else if (isBlank(thinking.thinking)) {
          if (signed || thinking.thinking !== '')
            this.#warnings.dropped('blank thinking that Gemini cannot verify', at, path);
        } else {
          this.#warnings.converted(
            native ? 'unsigned thinking is sent as text' : "another model's thinking is sent as text",
            at,
            path,
          );
          parts.push({ text: thinking.thinking });
        }
      } else if (b?.type === 'toolCall') {
        parts.push(this.#call(b, bx, m, native, x, at, path));
      } else if (isImage(b)) parts.push(imagePart(b, bx));
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
  #signature(signature: unknown, native: boolean, x: Loose | undefined): string | undefined {
    if (typeof signature !== 'string') return undefined;
    if (x !== undefined) return signature;
    if (native && isBase64(signature)) return signature;
    return undefined;
  }

  #call(
    b: ToolCall | OtherContent,
    bx: Loose | undefined,
    m: AssistantMessage,
    native: boolean,
    x: Loose | undefined,
    at: number,
    path: string,
  ): GeminiPart {
    const args: JsonObject = isObject(b.arguments) ? b.arguments : {};
    const withId = x !== undefined ? !bx?.noId : this.#partIds;
    const id = typeof b.id === 'string' ? b.id : '';
    this.#ids.set(id, withId);
    const callName = typeof b.name === 'string' ? b.name : '';
    const fc: GeminiFunctionCall = withId
      ? { id: x !== undefined ? id : idSafe64(id), name: callName }
      : { name: callName };
    if (!bx?.noArgs || Object.keys(args).length > 0) fc.args = args;
    const part: GeminiPart = { functionCall: finish(fc, bx?.inner) };
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
function idSafe64(id: unknown): string {
  return String(id)
    .replace(/[^A-Za-z0-9_-]/g, '_')
    .slice(0, 64);
}

/** The object JSON text holds, or undefined. */
function parsedObject(text: string): JsonObject | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return isObject(v) ? (v as JsonObject) : undefined;
  } catch {
    return undefined;
  }
}

/** The signature in the openai-chat format's form of Gemini's `extra_content` (`{google: {thought_signature}}`). */
function chatSignature(signature: string): string | undefined {
  if (signature.charCodeAt(0) !== 0x7b) return undefined;
  const v = parsedObject(signature);
  const inner = v?.google ?? v?.vertex;
  return isObject(inner) && isBase64(inner.thought_signature) ? inner.thought_signature : undefined;
}

/** The request's `systemInstruction`: the stored Gemini value, or the text of another format's. */
function systemOf(system: unknown, warnings: Warnings): GeminiSystem | undefined {
  if (!isObject(system)) return undefined;
  // The value this format's own reader or caller gave, sent as it is.
  if (system.format === name && isObject(system.value)) return system.value as unknown as GeminiSystem;
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
export function write(
  llm: readonly LlmMessage[],
  ctx: WriteContext,
): { messages: GeminiContentOut[]; system?: GeminiSystem } {
  const writer = new Writer(ctx);
  for (const [index, m] of llm.entries()) writer.add(m, index);
  writer.end();
  // Built part by part as the types above describe (kept members included).
  const result: { messages: GeminiContentOut[]; system?: GeminiSystem } = {
    messages: writer.out as GeminiContentOut[],
  };
  const system = systemOf(ctx.system, ctx.warnings);
  if (system !== undefined) result.system = system;
  return result;
}
