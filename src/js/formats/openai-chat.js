// The `openai-chat` format: OpenAI Chat Completions request `messages` (system, developer,
// user, assistant, tool and the legacy function role), read into AgentMessages and written back.
//
// - Leading system and developer messages are the system prompt: kept whole (the `value` of
//   the `ctxfold:system` entry) and written back first; their text is what other formats get.
//   A later one is a developer message (a system one marked so, and written back as `system`).
// - User content: text, `image_url` parts with a `data:` URL (pi's base64 images), and the parts
//   pi has no block for (an image by URL, `input_audio`, `file`) as a describing text that keeps
//   the part (W_CONVERTED when read: other formats get the text).
// - Assistant: the reasoning fields of OpenAI-compatible servers (`reasoning_content` of DeepSeek
//   and Kimi, `reasoning`, `reasoning_text`) as thinking signed with the field's name, as pi
//   keeps them; text (or `content: null`); `refusal`; `tool_calls` (function calls with their
//   JSON argument text, kept when re-stringifying would differ; custom tool calls; a Gemini
//   `extra_content` thought signature as the call's `thoughtSignature`); `name`, `audio`; the
//   legacy `function_call`.
// - Tool results pair with their call by `tool_call_id` (in the batch, then in the session); a
//   legacy `function` result with the latest `function_call` of its name.
// - What pi has no field for (member order, `name`, nulls, unknown members) stays under
//   `ctxfold`, so an uncompacted history is written back as the same JSON.
//
// Writing a history of another format: thinking signed by another provider (or unsigned) is sent
// as text, a tool result's images go in a user message after the run of tool results (the tool
// role takes text), and what has no Chat Completions form is reported (W_CONVERTED, W_DROPPED).
import {
  argumentsText,
  dataUrl,
  extrasOf as extrasOfFormat,
  hasKeys,
  invalidMessage,
  isObject,
  keepExtras,
  kindOf,
  optionalString,
  parseArguments,
  parseDataUrl,
  putMember,
  quote,
  requireObject,
  requireString,
  stringifyArguments,
  systemPromptLength,
} from './common.js';

export const name = 'openai-chat';
/**
 * OpenAI's images-and-vision guide: up to 500 images (and 50 MB of image bytes) per request,
 * whichever endpoint; the count is the budget `toLlmMessages` keeps snapcompact frames and kept
 * images within.
 */
export const maxImages = 500;

const extrasOf = (node) => extrasOfFormat(node, name);
const keep = (node, members) => keepExtras(node, name, members);
const str = requireString;
const obj = requireObject;
const optionalStr = optionalString;

/** The fields OpenAI-compatible servers carry reasoning in; pi signs the thinking with the name. */
const REASONING_FIELDS = ['reasoning_content', 'reasoning', 'reasoning_text'];
/** The members each role has, in the order the writer puts them; others are kept as `more`. */
const MEMBERS = {
  system: ['role', 'content', 'name'],
  developer: ['role', 'content', 'name'],
  user: ['role', 'content', 'name'],
  assistant: ['role', 'content', ...REASONING_FIELDS, 'refusal', 'name', 'audio', 'tool_calls', 'function_call'],
  tool: ['role', 'tool_call_id', 'content'],
  function: ['role', 'name', 'content'],
};
const ROLES = Object.keys(MEMBERS);
/** The text a tool result's images are sent after (the user message that carries them). */
const ATTACHED = 'Attached image(s) from tool result:';

/** The members of `m` its role does not map, in order, or undefined. */
function moreOf(m, known) {
  let out;
  for (const k in m) {
    if (known.includes(k)) continue;
    out ??= {};
    putMember(out, k, m[k]);
  }
  return out;
}

/**
 * The member order of `m` when the writer would not give it back: known members in the
 * writer's order, then the others.
 */
function orderOf(m, known) {
  let next = 0;
  let unknownSeen = false;
  for (const k in m) {
    const at = known.indexOf(k);
    if (at < 0) unknownSeen = true;
    else if (unknownSeen || at < next) return Object.keys(m);
    else next = at + 1;
  }
  return undefined;
}

// ----- reading -------------------------------------------------------------------------------

/** What other formats read for a part pi has no block for. */
function placeholder(p) {
  if (p.type === 'image_url') return `[image: ${typeof p.image_url === 'string' ? p.image_url : p.image_url.url}]`;
  if (p.type === 'input_audio') return `[audio: ${p.input_audio.format}]`;
  return `[file: ${p.file.filename ?? p.file.file_id ?? 'inline data'}]`;
}

/** A user, system, developer or tool content part as a pi block. */
function readPart(p, index, field, warnings) {
  obj(p, index, field);
  switch (p.type) {
    case 'text': {
      const text = str(p.text, index, `${field}.text`);
      return hasKeys(p, ['type', 'text']) ? { type: 'text', text } : keep({ type: 'text', text }, { part: p });
    }
    case 'image_url': {
      const form = typeof p.image_url === 'string' ? 'string' : undefined;
      if (form === undefined) obj(p.image_url, index, `${field}.image_url`);
      const url = form ? p.image_url : str(p.image_url.url, index, `${field}.image_url.url`);
      const detail = form ? undefined : optionalStr(p.image_url.detail, index, `${field}.image_url.detail`);
      const data = parseDataUrl(url);
      if (data !== undefined) {
        const plain =
          hasKeys(p, ['type', 'image_url']) &&
          (form !== undefined || hasKeys(p.image_url, detail === undefined ? ['url'] : ['url', 'detail']));
        const block = { type: 'image', data: data.data, mimeType: data.mimeType };
        // A part with members of its own is kept whole (its data twice: rare, and exact).
        return keep(block, plain ? { detail, form } : { part: p });
      }
      warnings.converted('an image by URL has no pi form: other formats read it as text', index, field);
      return keep({ type: 'text', text: placeholder(p) }, { part: p });
    }
    case 'input_audio': {
      obj(p.input_audio, index, `${field}.input_audio`);
      str(p.input_audio.data, index, `${field}.input_audio.data`);
      str(p.input_audio.format, index, `${field}.input_audio.format`);
      warnings.converted('an audio part has no pi form: other formats read it as text', index, field);
      return keep({ type: 'text', text: placeholder(p) }, { part: p });
    }
    case 'file': {
      obj(p.file, index, `${field}.file`);
      for (const k of ['file_data', 'file_id', 'filename']) optionalStr(p.file[k], index, `${field}.file.${k}`);
      warnings.converted('a file part has no pi form: other formats read it as text', index, field);
      return keep({ type: 'text', text: placeholder(p) }, { part: p });
    }
    default:
      throw invalidMessage(
        index,
        `${field}.type`,
        `must be 'text', 'image_url', 'input_audio' or 'file', got ${quote(p.type)}`,
      );
  }
}

/** Content of a user-like message: a string, parts, or null/absent (`form`). */
function readContent(m, index, warnings) {
  if (typeof m.content === 'string') return { content: m.content };
  if (m.content === null) return { content: '', form: 'null' };
  if (m.content === undefined) return { content: '', form: 'absent' };
  if (!Array.isArray(m.content))
    throw invalidMessage(index, 'content', `must be a string, an array of parts or null, got ${kindOf(m.content)}`);
  // Indexed, not `map`: a sparse array's holes are malformed parts, not skipped ones.
  const blocks = [];
  for (let k = 0; k < m.content.length; k++) blocks.push(readPart(m.content[k], index, `content[${k}]`, warnings));
  return { content: blocks, form: 'parts' };
}

/** The text of a leading system/developer message (parts joined as the API joins them). */
function systemTextOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const b of content) if (b.type === 'text') text += b.text;
  return text;
}

/** A Gemini thought signature of a tool call's `extra_content` (`{google|vertex: {thought_signature}}`). */
function geminiSignature(extra) {
  if (!isObject(extra)) return undefined;
  const keys = Object.keys(extra);
  if (keys.length !== 1 || (keys[0] !== 'google' && keys[0] !== 'vertex')) return undefined;
  const inner = extra[keys[0]];
  if (!hasKeys(inner, ['thought_signature']) || typeof inner.thought_signature !== 'string') return undefined;
  return inner.thought_signature === '' ? undefined : JSON.stringify(extra);
}

function readToolCall(c, index, f, st) {
  obj(c, index, f);
  const id = str(c.id, index, `${f}.id`);
  if (c.type === 'custom') {
    obj(c.custom, index, `${f}.custom`);
    const tool = str(c.custom.name, index, `${f}.custom.name`);
    const input = str(c.custom.input, index, `${f}.custom.input`);
    st.calls.set(id, tool);
    const exact = hasKeys(c, ['id', 'type', 'custom']) && hasKeys(c.custom, ['name', 'input']);
    return keep(
      { type: 'toolCall', id, name: tool, arguments: { input } },
      { custom: true, call: exact ? undefined : c },
    );
  }
  if (c.type !== undefined && c.type !== 'function')
    throw invalidMessage(index, `${f}.type`, `must be 'function' or 'custom', got ${quote(c.type)}`);
  obj(c.function, index, `${f}.function`);
  const tool = str(c.function.name, index, `${f}.function.name`);
  const text = str(c.function.arguments, index, `${f}.function.arguments`);
  const args = parseArguments(text, index, `${f}.function.arguments`);
  st.calls.set(id, tool);
  const block = { type: 'toolCall', id, name: tool, arguments: args };
  let keys = ['id', 'type', 'function'];
  if (c.extra_content !== undefined) {
    const signature = geminiSignature(c.extra_content);
    if (signature !== undefined) {
      block.thoughtSignature = signature;
      keys = [...keys, 'extra_content'];
    }
  }
  if (!hasKeys(c, keys) || !hasKeys(c.function, ['name', 'arguments'])) return keep(block, { call: c });
  return keep(block, { arguments: stringifyArguments(args) === text ? undefined : text });
}

/** The id of a legacy `function_call` (which has none): the first of its name not yet taken. */
function legacyId(tool, st) {
  for (let k = 0; ; k++) {
    const id = `function_call_${k}_${tool}`;
    if (!st.calls.has(id) && st.ctx.toolCall(id) === undefined) return id;
  }
}

/** The id of the latest legacy `function_call` of a name: in this batch, else in the session. */
function legacyCallOf(tool, st) {
  const here = st.legacy.get(tool);
  if (here !== undefined) return here;
  let found;
  for (let k = 0; ; k++) {
    const id = `function_call_${k}_${tool}`;
    if (st.ctx.toolCall(id) === undefined) return found;
    found = id;
  }
}

function readAssistant(m, index, st) {
  const blocks = [];
  /** Members given as null (or an empty reasoning string): written back as they were. */
  let fields;
  const field = (k, v) => {
    fields ??= {};
    fields[k] = v;
  };
  for (const k in m) {
    if (!REASONING_FIELDS.includes(k)) continue;
    const v = m[k];
    if (v === null || v === '') field(k, v);
    else blocks.push({ type: 'thinking', thinking: str(v, index, k), thinkingSignature: k });
  }
  let form;
  if (typeof m.content === 'string') {
    if (m.content === '') form = 'empty';
    else blocks.push({ type: 'text', text: m.content });
  } else if (m.content === null) form = 'null';
  else if (m.content === undefined) form = 'absent';
  else if (Array.isArray(m.content)) {
    form = 'parts';
    for (let k = 0; k < m.content.length; k++) {
      const p = m.content[k];
      const at = `content[${k}]`;
      obj(p, index, at);
      if (p.type === 'text') {
        const text = str(p.text, index, `${at}.text`);
        blocks.push(hasKeys(p, ['type', 'text']) ? { type: 'text', text } : keep({ type: 'text', text }, { part: p }));
      } else if (p.type === 'refusal') {
        const text = str(p.refusal, index, `${at}.refusal`);
        blocks.push(
          keep({ type: 'text', text }, hasKeys(p, ['type', 'refusal']) ? { refusalPart: true } : { part: p }),
        );
      } else throw invalidMessage(index, `${at}.type`, `must be 'text' or 'refusal', got ${quote(p.type)}`);
    }
  } else
    throw invalidMessage(index, 'content', `must be a string, an array of parts or null, got ${kindOf(m.content)}`);
  if (m.refusal === null) field('refusal', null);
  else if (m.refusal !== undefined)
    blocks.push(keep({ type: 'text', text: str(m.refusal, index, 'refusal') }, { refusal: true }));
  if (m.audio !== undefined && m.audio !== null) str(obj(m.audio, index, 'audio').id, index, 'audio.id');
  if (m.tool_calls === null) field('tool_calls', null);
  else if (m.tool_calls !== undefined) {
    if (!Array.isArray(m.tool_calls))
      throw invalidMessage(index, 'tool_calls', `must be an array, got ${kindOf(m.tool_calls)}`);
    for (let k = 0; k < m.tool_calls.length; k++)
      blocks.push(readToolCall(m.tool_calls[k], index, `tool_calls[${k}]`, st));
  }
  if (m.function_call === null) field('function_call', null);
  else if (m.function_call !== undefined) {
    const fc = obj(m.function_call, index, 'function_call');
    const tool = str(fc.name, index, 'function_call.name');
    const text = str(fc.arguments, index, 'function_call.arguments');
    const args = parseArguments(text, index, 'function_call.arguments');
    const id = legacyId(tool, st);
    st.calls.set(id, tool);
    st.legacy.set(tool, id);
    const exact = hasKeys(fc, ['name', 'arguments']);
    blocks.push(
      keep(
        { type: 'toolCall', id, name: tool, arguments: args },
        exact
          ? { functionCall: true, arguments: stringifyArguments(args) === text ? undefined : text }
          : { functionCall: true, call: fc },
      ),
    );
  }
  const known = MEMBERS.assistant;
  return keep(
    {
      role: 'assistant',
      content: blocks,
      api: st.api,
      provider: st.provider,
      model: st.model,
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 },
      stopReason: blocks.some((b) => b.type === 'toolCall') ? 'toolUse' : 'stop',
    },
    { form, fields, name: m.name, audio: m.audio, more: moreOf(m, known), order: orderOf(m, known) },
  );
}

function readToolResult(m, index, st) {
  let id;
  let tool;
  if (m.role === 'tool') {
    id = str(m.tool_call_id, index, 'tool_call_id');
    tool = st.calls.get(id) ?? st.ctx.toolCall(id)?.name;
    if (tool === undefined) throw invalidMessage(index, 'tool_call_id', `names no tool call before it: ${quote(id)}`);
  } else {
    tool = str(m.name, index, 'name');
    id = legacyCallOf(tool, st);
    if (id === undefined) throw invalidMessage(index, 'name', `names no function_call before it: ${quote(tool)}`);
  }
  const { content, form } = readContent(m, index, st.ctx.warnings);
  const known = MEMBERS[m.role];
  return keep(
    {
      role: 'toolResult',
      toolCallId: id,
      toolName: tool,
      content: typeof content === 'string' ? [{ type: 'text', text: content }] : content,
      isError: false,
    },
    {
      function: m.role === 'function' || undefined,
      form,
      more: moreOf(m, known),
      order: orderOf(m, known),
    },
  );
}

/** Chat Completions messages → AgentMessages, and the leading system/developer messages. */
export function read(messages, ctx) {
  const model = ctx.model;
  const st = {
    ctx,
    api: typeof model?.api === 'string' ? model.api : 'openai-completions',
    provider: typeof model?.provider === 'string' ? model.provider : 'openai',
    model: typeof model?.id === 'string' ? model.id : 'unknown',
    /** Tool call id → tool name, of this batch. */
    calls: new Map(),
    /** Function name → the id of its latest legacy `function_call`, of this batch. */
    legacy: new Map(),
  };
  const out = [];
  const leading = [];
  const prompt = systemPromptLength(messages, (m) => m.role === 'system' || m.role === 'developer', ctx);
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (!isObject(m)) throw invalidMessage(i, '', `must be an object, got ${kindOf(m)}`);
    if (!ROLES.includes(m.role))
      throw invalidMessage(i, 'role', `must be one of ${ROLES.join(', ')}, got ${quote(m.role)}`);
    if (m.name !== undefined && m.role !== 'tool') str(m.name, i, 'name');
    switch (m.role) {
      case 'system':
      case 'developer':
      case 'user': {
        const { content, form } = readContent(m, i, ctx.warnings);
        if (i < prompt) {
          leading.push(m);
          break;
        }
        const known = MEMBERS[m.role];
        out.push(
          keep(
            { role: m.role === 'user' ? 'user' : 'developer', content },
            {
              role: m.role === 'system' ? 'system' : undefined,
              name: m.name,
              form: form === 'parts' ? undefined : form,
              more: moreOf(m, known),
              order: orderOf(m, known),
            },
          ),
        );
        break;
      }
      case 'assistant':
        out.push(readAssistant(m, i, st));
        break;
      default:
        out.push(readToolResult(m, i, st));
    }
  }
  if (leading.length === 0) return { messages: out };
  const text = leading
    .map((m) => systemTextOf(m.content))
    .filter((t) => t !== '')
    .join('\n\n');
  return { messages: out, system: { text, value: leading } };
}

// ----- writing -------------------------------------------------------------------------------

/** A kept part, when the block still holds what it was read from (pruning rewrites text). */
function keptPart(b, x) {
  const p = x?.part;
  if (!isObject(p)) return undefined;
  if (b.type === 'image') return parseDataUrl(p.image_url?.url ?? p.image_url)?.data === b.data ? p : undefined;
  if (p.type === 'text' || p.type === 'refusal') return (p.text ?? p.refusal) === b.text ? p : undefined;
  return placeholder(p) === b.text ? p : undefined;
}

/** A user-like block as a content part, or undefined (reported) for a block with none. */
function partOut(b, warnings, index, path) {
  const x = extrasOf(b);
  const kept = keptPart(b, x);
  if (kept !== undefined) return kept;
  if (b.type === 'text') return { type: 'text', text: b.text };
  if (b.type === 'image') {
    if (x?.form === 'string') return { type: 'image_url', image_url: dataUrl(b) };
    const image = { url: dataUrl(b) };
    if (typeof x?.detail === 'string') image.detail = x.detail;
    return { type: 'image_url', image_url: image };
  }
  warnings.dropped(`a ${b.type} block has no Chat Completions form`, index, path);
  return undefined;
}

function contentOut(content, warnings, index) {
  if (typeof content === 'string') return content;
  const parts = [];
  content.forEach((b, k) => {
    const p = partOut(b, warnings, index, `content[${k}]`);
    if (p !== undefined) parts.push(p);
  });
  return parts;
}

/** `out` with the kept members after it, in the order they were read in. */
function finish(out, x) {
  if (isObject(x?.more)) for (const k of Object.keys(x.more)) putMember(out, k, x.more[k]);
  if (!Array.isArray(x?.order)) return out;
  const ordered = {};
  for (const k of x.order) if (Object.hasOwn(out, k)) putMember(ordered, k, out[k]);
  for (const k of Object.keys(out)) if (!Object.hasOwn(ordered, k)) putMember(ordered, k, out[k]);
  return ordered;
}

function userOut(m, warnings, index) {
  const x = extrasOf(m);
  const role = m.role === 'user' ? 'user' : x?.role === 'system' ? 'system' : 'developer';
  const out = { role };
  const empty = m.content === '' || (Array.isArray(m.content) && m.content.length === 0);
  if (x?.form === 'null' && empty) out.content = null;
  else if (x?.form !== 'absent' || !empty) out.content = contentOut(m.content, warnings, index);
  if (typeof x?.name === 'string') out.name = x.name;
  return finish(out, x);
}

function toolCallOut(b, m, warnings, index, path) {
  const x = extrasOf(b);
  const kept = isObject(x?.call) ? x.call : undefined;
  if (x?.custom) {
    const input = typeof b.arguments?.input === 'string' ? b.arguments.input : stringifyArguments(b.arguments);
    if (kept?.id === b.id && kept.custom?.name === b.name && kept.custom?.input === input) return kept;
    return { id: b.id, type: 'custom', custom: { name: b.name, input } };
  }
  if (kept?.id === b.id && kept.function?.name === b.name && typeof kept.function.arguments === 'string') {
    if (argumentsText(b.arguments, kept.function.arguments) === kept.function.arguments) return kept;
  }
  const call = {
    id: b.id,
    type: 'function',
    function: { name: b.name, arguments: argumentsText(b.arguments, x?.arguments) },
  };
  if (typeof b.thoughtSignature === 'string' && b.thoughtSignature !== '') {
    let extra;
    try {
      extra = JSON.parse(b.thoughtSignature);
    } catch {
      extra = undefined;
    }
    if (geminiSignature(extra) !== undefined) call.extra_content = extra;
    else warnings.dropped(`a ${m.api ?? 'provider'} tool-call signature has no Chat Completions form`, index, path);
  }
  return call;
}

function functionCallOut(b, x) {
  const kept = isObject(x?.call) ? x.call : undefined;
  const text = argumentsText(b.arguments, kept?.arguments ?? x?.arguments);
  if (kept?.name === b.name && kept.arguments === text) return kept;
  return { name: b.name, arguments: text };
}

function assistantOut(m, warnings, index) {
  const x = extrasOf(m);
  const fields = isObject(x?.fields) ? x.fields : {};
  const reasoning = {};
  const texts = [];
  const parts = [];
  const calls = [];
  let refusal;
  let functionCall;
  let demoted = false;
  m.content.forEach((b, k) => {
    const path = `content[${k}]`;
    const bx = extrasOf(b);
    if (b.type === 'thinking') {
      const field = REASONING_FIELDS.includes(b.thinkingSignature) ? b.thinkingSignature : undefined;
      if (field !== undefined)
        reasoning[field] = reasoning[field] === undefined ? b.thinking : `${reasoning[field]}\n${b.thinking}`;
      else if (typeof b.thinking === 'string' && b.thinking.trim() !== '') {
        warnings.converted('thinking without a Chat Completions reasoning field is sent as text', index, path);
        texts.push(b.thinking);
        parts.push({ type: 'text', text: b.thinking });
        demoted = true;
      } else if (b.thinkingSignature)
        warnings.dropped('signed thinking without text has no Chat Completions form', index, path);
    } else if (b.type === 'text') {
      if (bx?.refusal) refusal = b.text;
      else {
        if (demoted) texts[texts.length - 1] += '\n';
        demoted = false;
        texts.push(b.text);
        const kept = keptPart(b, bx);
        parts.push(kept ?? (bx?.refusalPart ? { type: 'refusal', refusal: b.text } : { type: 'text', text: b.text }));
      }
    } else if (b.type === 'toolCall') {
      if (bx?.functionCall) functionCall = functionCallOut(b, bx);
      else calls.push(toolCallOut(b, m, warnings, index, path));
    } else if (b.type === 'redactedThinking')
      warnings.dropped('redacted thinking has no Chat Completions form', index, path);
    else warnings.dropped(`an assistant ${b.type} block has no Chat Completions form`, index, path);
  });
  const out = { role: 'assistant' };
  const form = x?.form;
  if (form === 'parts') out.content = parts;
  else if (texts.length > 0) out.content = texts.join('');
  else if (form === 'null') out.content = null;
  else if (form !== 'absent') out.content = '';
  for (const f of REASONING_FIELDS) {
    if (reasoning[f] !== undefined) out[f] = reasoning[f];
    else if (Object.hasOwn(fields, f)) out[f] = fields[f];
  }
  if (refusal !== undefined) out.refusal = refusal;
  else if (Object.hasOwn(fields, 'refusal')) out.refusal = null;
  if (typeof x?.name === 'string') out.name = x.name;
  if (x?.audio !== undefined) out.audio = x.audio;
  if (calls.length > 0) out.tool_calls = calls;
  else if (Object.hasOwn(fields, 'tool_calls')) out.tool_calls = null;
  if (functionCall !== undefined) out.function_call = functionCall;
  else if (Object.hasOwn(fields, 'function_call')) out.function_call = null;
  return finish(out, x);
}

/** A tool result message, and its images when the tool role cannot carry them here. */
function toolResultOut(m, warnings, index) {
  const x = extrasOf(m);
  const images = [];
  const texts = [];
  const parts = [];
  const asParts = x?.form === 'parts';
  m.content.forEach((b, k) => {
    const path = `content[${k}]`;
    if (b.type === 'text') {
      texts.push(b.text);
      if (asParts) parts.push(partOut(b, warnings, index, path));
    } else if (b.type === 'image') {
      // Read from a tool message's parts: given back where it was; otherwise after the results.
      if (asParts) parts.push(partOut(b, warnings, index, path));
      else images.push(partOut(b, warnings, index, path));
    } else warnings.dropped(`a tool-result ${b.type} block has no Chat Completions form`, index, path);
  });
  let content;
  const text = texts.join('\n');
  if (asParts) content = parts;
  else if (text !== '') content = text;
  else if (images.length > 0) content = '(see attached image)';
  else if (x?.form === 'null') content = null;
  else if (x?.form !== 'absent') content = '';
  if (images.length > 0)
    warnings.converted("a tool result's images go in a user message after the tool results", index);
  if (m.isError === true)
    warnings.converted('the tool role has no error flag: a failed result is sent as its text', index);
  const out = x?.function ? { role: 'function', name: m.toolName } : { role: 'tool', tool_call_id: m.toolCallId };
  if (content !== undefined) out.content = content;
  return { message: finish(out, x), images };
}

/** The system prompt as the messages that open the request. */
function systemOut(system) {
  if (system === undefined || system === null) return [];
  if (system.format === name && Array.isArray(system.value)) return system.value;
  if (system.format === name && typeof system.value === 'string') return [{ role: 'system', content: system.value }];
  return typeof system.text === 'string' && system.text !== '' ? [{ role: 'system', content: system.text }] : [];
}

/** The LLM view → Chat Completions `messages` (the system prompt first). */
export function write(llm, ctx) {
  const warnings = ctx.warnings;
  const out = [...systemOut(ctx.system)];
  let images = [];
  const flush = () => {
    if (images.length === 0) return;
    out.push({ role: 'user', content: [{ type: 'text', text: ATTACHED }, ...images] });
    images = [];
  };
  llm.forEach((m, index) => {
    if (m.role !== 'toolResult') flush();
    if (m.providerPayload !== undefined)
      warnings.dropped(
        'a provider-native compaction payload has no Chat Completions form, and the kept messages it holds are ' +
          'not in this view: the summary is sent as text (write for a reading model without a Responses api)',
        index,
      );
    switch (m.role) {
      case 'user':
      case 'developer':
        out.push(userOut(m, warnings, index));
        break;
      case 'assistant':
        out.push(assistantOut(m, warnings, index));
        break;
      case 'toolResult': {
        const result = toolResultOut(m, warnings, index);
        out.push(result.message);
        images.push(...result.images);
        break;
      }
      default:
        warnings.dropped(`a ${m.role} message has no Chat Completions form`, index);
    }
  });
  flush();
  return { messages: out };
}
