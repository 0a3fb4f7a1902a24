// The `openai-chat` format: OpenAI Chat Completions `messages` (system, developer, user,
// assistant, tool and the legacy function role), read into AgentMessages and written back.
//
// - Leading system and developer messages are the system prompt (kept whole, written back
//   first); a later one is a developer message written back in its role.
// - User content: text, images (`image_url` with a data: URL become pi's base64 images; a URL
//   has no pi form: other formats read `[image: url]`, this one gets the part back), and the
//   parts pi cannot hold (audio, files, refusals) kept whole (W_CONVERTED at read).
// - Assistant: `reasoning_content` (DeepSeek, Kimi) as thinking signed `reasoning_content`, as
//   the reference keeps it; text (or `content: null`); `refusal`; `tool_calls` with their
//   argument text (kept when re-stringifying would not give it back); `name`, `audio` kept.
// - Tool results pair with their call by `tool_call_id` (a result needs its call); a tool
//   result's images, which the `tool` role cannot carry, go in a user message after it.
import {
  dataUrl,
  extrasOf as extrasOfFormat,
  invalidMessage,
  isObject,
  keepExtras,
  kindOf,
  parseArguments,
  parseDataUrl,
  stringifyArguments,
  textOf,
} from './common.js';

export const name = 'openai-chat';
/** OpenAI accepts up to 500 images per Chat Completions request. */
export const maxImages = 500;

const extrasOf = (node) => extrasOfFormat(node, name);
const keep = (node, members) => keepExtras(node, name, members);
const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'];
/** Members a message may carry that the reader maps; any other is kept as `more`. */
const KNOWN = {
  system: ['role', 'content', 'name'],
  developer: ['role', 'content', 'name'],
  user: ['role', 'content', 'name'],
  assistant: ['role', 'content', 'name', 'tool_calls', 'reasoning_content', 'refusal', 'audio', 'function_call'],
  tool: ['role', 'content', 'tool_call_id'],
  function: ['role', 'content', 'name'],
};

function str(value, index, field) {
  if (typeof value !== 'string') throw invalidMessage(index, field, `must be a string, got ${kindOf(value)}`);
  return value;
}

function more(m) {
  const known = KNOWN[m.role];
  const out = {};
  let any = false;
  for (const k of Object.keys(m)) {
    if (known.includes(k)) continue;
    out[k] = m[k];
    any = true;
  }
  return any ? out : undefined;
}

/** A content part as a pi block; parts pi cannot hold become a text that keeps them. */
function part(p, index, field, warnings) {
  if (!isObject(p)) throw invalidMessage(index, field, `must be an object, got ${kindOf(p)}`);
  switch (p.type) {
    case 'text':
      str(p.text, index, `${field}.text`);
      return Object.keys(p).length === 2
        ? { type: 'text', text: p.text }
        : keep({ type: 'text', text: p.text }, { part: p });
    case 'image_url': {
      const url = typeof p.image_url === 'string' ? p.image_url : p.image_url?.url;
      str(url, index, `${field}.image_url.url`);
      const data = parseDataUrl(url);
      if (data !== undefined) {
        const plain = isObject(p.image_url) && Object.keys(p.image_url).length === 1 && Object.keys(p).length === 2;
        return keep({ type: 'image', data: data.data, mimeType: data.mimeType }, plain ? {} : { part: p });
      }
      warnings.converted('an image by URL has no pi form: other formats read it as text', index, field);
      return keep({ type: 'text', text: `[image: ${url}]` }, { part: p });
    }
    case 'input_audio':
    case 'file':
    case 'refusal':
      warnings.converted(`a ${p.type} part has no pi form: other formats read it as text`, index, field);
      return keep({ type: 'text', text: p.type === 'refusal' ? String(p.refusal ?? '') : `[${p.type}]` }, { part: p });
    default:
      throw invalidMessage(index, `${field}.type`, `is not a content part type: ${JSON.stringify(p.type)}`);
  }
}

/** User-like content (a string, parts, or null/absent) as pi content. */
function content(m, index, warnings) {
  if (typeof m.content === 'string') return m.content;
  if (m.content === null || m.content === undefined) return '';
  if (!Array.isArray(m.content))
    throw invalidMessage(index, 'content', `must be a string, an array or null, got ${kindOf(m.content)}`);
  return m.content.map((p, k) => part(p, index, `content[${k}]`, warnings));
}

function assistant(m, index, ctx, calls) {
  const blocks = [];
  if (m.reasoning_content !== undefined && m.reasoning_content !== null) {
    str(m.reasoning_content, index, 'reasoning_content');
    blocks.push({ type: 'thinking', thinking: m.reasoning_content, thinkingSignature: 'reasoning_content' });
  }
  let form;
  if (typeof m.content === 'string') {
    if (m.content !== '') blocks.push({ type: 'text', text: m.content });
    form = m.content === '' ? 'empty' : 'string';
  } else if (m.content === null) form = 'null';
  else if (m.content === undefined) form = 'absent';
  else if (Array.isArray(m.content)) {
    form = 'parts';
    m.content.forEach((p, k) => {
      if (!isObject(p)) throw invalidMessage(index, `content[${k}]`, `must be an object, got ${kindOf(p)}`);
      if (p.type === 'text') blocks.push({ type: 'text', text: str(p.text, index, `content[${k}].text`) });
      else if (p.type === 'refusal')
        blocks.push(
          keep({ type: 'text', text: str(p.refusal, index, `content[${k}].refusal`) }, { refusalPart: true }),
        );
      else
        throw invalidMessage(index, `content[${k}].type`, `must be 'text' or 'refusal', got ${JSON.stringify(p.type)}`);
    });
  } else throw invalidMessage(index, 'content', `must be a string, an array or null, got ${kindOf(m.content)}`);
  if (m.refusal !== undefined && m.refusal !== null)
    blocks.push(keep({ type: 'text', text: str(m.refusal, index, 'refusal') }, { refusal: true }));
  if (m.tool_calls !== undefined && m.tool_calls !== null) {
    if (!Array.isArray(m.tool_calls))
      throw invalidMessage(index, 'tool_calls', `must be an array, got ${kindOf(m.tool_calls)}`);
    m.tool_calls.forEach((c, k) => {
      const f = `tool_calls[${k}]`;
      if (!isObject(c)) throw invalidMessage(index, f, `must be an object, got ${kindOf(c)}`);
      const id = str(c.id, index, `${f}.id`);
      if (c.type !== undefined && c.type !== 'function')
        throw invalidMessage(index, `${f}.type`, `must be 'function', got ${JSON.stringify(c.type)}`);
      if (!isObject(c.function))
        throw invalidMessage(index, `${f}.function`, `must be an object, got ${kindOf(c.function)}`);
      const tool = str(c.function.name, index, `${f}.function.name`);
      const text = str(c.function.arguments, index, `${f}.function.arguments`);
      const args = parseArguments(text, index, `${f}.function.arguments`);
      calls.set(id, tool);
      const exact =
        stringifyArguments(args) === text &&
        c.type === 'function' &&
        Object.keys(c).length === 3 &&
        Object.keys(c.function).length === 2;
      blocks.push(keep({ type: 'toolCall', id, name: tool, arguments: args }, exact ? {} : { call: c }));
    });
  }
  if (m.function_call !== undefined && m.function_call !== null) {
    // The legacy single call: no id, so it pairs with the next `function` message by name.
    if (!isObject(m.function_call))
      throw invalidMessage(index, 'function_call', `must be an object, got ${kindOf(m.function_call)}`);
    const tool = str(m.function_call.name, index, 'function_call.name');
    const text = str(m.function_call.arguments, index, 'function_call.arguments');
    const id = `function-${index}`;
    calls.set(id, tool);
    calls.set(`function:${tool}`, id);
    blocks.push(
      keep(
        { type: 'toolCall', id, name: tool, arguments: parseArguments(text, index, 'function_call.arguments') },
        { functionCall: m.function_call },
      ),
    );
  }
  if (m.name !== undefined) str(m.name, index, 'name');
  const model = ctx.model ?? {};
  const out = {
    role: 'assistant',
    content: blocks,
    api: model.api ?? 'openai-completions',
    provider: model.provider ?? 'openai',
    model: model.id ?? 'unknown',
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 },
    stopReason: blocks.some((b) => b.type === 'toolCall') ? 'toolUse' : 'stop',
  };
  return keep(out, {
    form: form === 'string' ? undefined : form,
    name: m.name,
    audio: m.audio,
    more: more(m),
    nullReasoning: m.reasoning_content === null || undefined,
    nullRefusal: m.refusal === null || undefined,
    nullCalls: m.tool_calls === null || undefined,
  });
}

export function read(messages, ctx) {
  const out = [];
  const calls = new Map();
  let i = 0;
  const leading = [];
  for (
    ;
    i < messages.length && isObject(messages[i]) && (messages[i].role === 'system' || messages[i].role === 'developer');
    i++
  ) {
    const m = messages[i];
    content(m, i, ctx.warnings);
    if (m.name !== undefined) str(m.name, i, 'name');
    leading.push(m);
  }
  const system =
    leading.length > 0
      ? {
          text: leading.map((m) => textOf(typeof m.content === 'string' ? m.content : (m.content ?? []))).join('\n\n'),
          value: leading,
        }
      : undefined;
  for (; i < messages.length; i++) {
    const m = messages[i];
    if (!isObject(m)) throw invalidMessage(i, '', `must be an object, got ${kindOf(m)}`);
    if (!ROLES.includes(m.role))
      throw invalidMessage(i, 'role', `must be one of ${ROLES.join(', ')}, got ${JSON.stringify(m.role)}`);
    if (m.name !== undefined && m.role !== 'tool') str(m.name, i, 'name');
    switch (m.role) {
      case 'system':
      case 'developer':
      case 'user': {
        const c = content(m, i, ctx.warnings);
        const role = m.role === 'user' ? 'user' : 'developer';
        out.push(
          keep(
            { role, content: c },
            {
              role: m.role === 'system' ? 'system' : undefined,
              name: m.name,
              more: more(m),
              form: m.content === null ? 'null' : m.content === undefined ? 'absent' : undefined,
            },
          ),
        );
        break;
      }
      case 'assistant':
        out.push(assistant(m, i, ctx, calls));
        break;
      case 'tool':
      case 'function': {
        let id;
        let tool;
        if (m.role === 'tool') {
          id = str(m.tool_call_id, i, 'tool_call_id');
          tool = calls.get(id) ?? ctx.toolCall(id)?.name;
          if (tool === undefined)
            throw invalidMessage(i, 'tool_call_id', `names no tool call before it: ${JSON.stringify(id)}`);
        } else {
          tool = str(m.name, i, 'name');
          id = calls.get(`function:${tool}`);
          if (id === undefined)
            throw invalidMessage(i, 'name', `names no function call before it: ${JSON.stringify(tool)}`);
        }
        const c = content(m, i, ctx.warnings);
        const blocks = typeof c === 'string' ? [{ type: 'text', text: c }] : c;
        out.push(
          keep(
            { role: 'toolResult', toolCallId: id, toolName: tool, content: blocks, isError: false },
            {
              parts: Array.isArray(m.content) || undefined,
              function: m.role === 'function' || undefined,
              more: more(m),
            },
          ),
        );
        break;
      }
    }
  }
  return { messages: out, ...(system && { system }) };
}

// ----- writing -------------------------------------------------------------------------------

function partOut(b, warnings, index, k) {
  const x = extrasOf(b);
  if (x?.part !== undefined) return x.part;
  if (b.type === 'text') return { type: 'text', text: b.text };
  if (b.type === 'image') return { type: 'image_url', image_url: { url: dataUrl(b) } };
  warnings.dropped(`a ${b.type} block has no Chat Completions form`, index, `content[${k}]`);
  return undefined;
}

function contentOut(c, warnings, index) {
  if (typeof c === 'string') return c;
  return c.map((b, k) => partOut(b, warnings, index, k)).filter((p) => p !== undefined);
}

/** The message members kept under `ctxfold` (name, more) put back, in the order they came. */
function finish(base, x) {
  const out = { ...base };
  if (x?.name !== undefined) out.name = x.name;
  if (x?.more !== undefined) Object.assign(out, x.more);
  return out;
}

function assistantOut(m, warnings, index) {
  const x = extrasOf(m);
  const out = { role: 'assistant' };
  const texts = [];
  const refusalParts = [];
  let refusal;
  let reasoning;
  const calls = [];
  let functionCall;
  m.content.forEach((b, k) => {
    const bx = extrasOf(b);
    if (b.type === 'thinking' && b.thinkingSignature === 'reasoning_content')
      reasoning = (reasoning ?? '') + b.thinking;
    else if (b.type === 'thinking')
      warnings.dropped(
        'thinking without a reasoning_content signature has no Chat Completions form',
        index,
        `content[${k}]`,
      );
    else if (b.type === 'text' && bx?.refusal) refusal = b.text;
    else if (b.type === 'text' && bx?.refusalPart) refusalParts.push({ k: texts.length, text: b.text });
    else if (b.type === 'text') texts.push(b.text);
    else if (b.type === 'toolCall' && bx?.functionCall !== undefined) functionCall = bx.functionCall;
    else if (b.type === 'toolCall') {
      calls.push(
        bx?.call ?? {
          id: b.id,
          type: 'function',
          function: { name: b.name, arguments: stringifyArguments(b.arguments) },
        },
      );
    } else warnings.dropped(`an assistant ${b.type} block has no Chat Completions form`, index, `content[${k}]`);
  });
  if (x?.nullReasoning) out.reasoning_content = null;
  if (reasoning !== undefined) out.reasoning_content = reasoning;
  const form = x?.form;
  if (form === 'parts') {
    const parts = texts.map((text) => ({ type: 'text', text }));
    for (const r of refusalParts) parts.splice(r.k, 0, { type: 'refusal', refusal: r.text });
    out.content = parts;
  } else if (form === 'null') out.content = texts.length > 0 ? texts.join('') : null;
  else if (form === 'absent') {
    if (texts.length > 0) out.content = texts.join('');
  } else out.content = texts.join('');
  if (refusal !== undefined) out.refusal = refusal;
  else if (x?.nullRefusal) out.refusal = null;
  if (x?.audio !== undefined) out.audio = x.audio;
  if (calls.length > 0) out.tool_calls = calls;
  else if (x?.nullCalls) out.tool_calls = null;
  if (functionCall !== undefined) out.function_call = functionCall;
  return finish(out, x);
}

export function write(llm, ctx) {
  const warnings = ctx.warnings;
  const out = [];
  if (ctx.system !== undefined) {
    if (ctx.system.format === name && Array.isArray(ctx.system.value)) out.push(...ctx.system.value);
    else out.push({ role: 'system', content: ctx.system.text });
  }
  llm.forEach((m, index) => {
    const x = extrasOf(m);
    if (m.providerPayload !== undefined)
      warnings.dropped(
        'a provider-native compaction payload has no Chat Completions form; the summary text is sent',
        index,
      );
    switch (m.role) {
      case 'user':
      case 'developer': {
        const role = m.role === 'user' ? 'user' : x?.role === 'system' ? 'system' : 'developer';
        const base = { role };
        if (x?.form === 'null') base.content = null;
        else if (x?.form !== 'absent') base.content = contentOut(m.content, warnings, index);
        out.push(finish(base, x));
        break;
      }
      case 'assistant':
        out.push(assistantOut(m, warnings, index));
        break;
      case 'toolResult': {
        const texts = m.content.filter((b) => b.type === 'text');
        const images = m.content.filter((b) => b.type === 'image');
        const text = texts.map((b) => b.text).join('');
        const c = x?.parts ? texts.map((b) => ({ type: 'text', text: b.text })) : text;
        const base = x?.function
          ? { role: 'function', content: c, name: m.toolName }
          : { role: 'tool', content: c, tool_call_id: m.toolCallId };
        out.push(finish(base, x?.more === undefined ? undefined : { more: x.more }));
        if (images.length > 0) {
          warnings.converted(
            "a tool result's images go in a user message after it (the tool role takes text only)",
            index,
          );
          out.push({
            role: 'user',
            content: images.map((b) => ({ type: 'image_url', image_url: { url: dataUrl(b) } })),
          });
        }
        break;
      }
      default:
        warnings.dropped(`a ${m.role} message has no Chat Completions form`, index);
    }
  });
  return { messages: out };
}
