// The entry panel: what a selected node holds. A run lists its entries (virtualised); the
// selected entry is shown in full: message text, thinking, tool calls with their arguments,
// tool results, images, summaries, snapcompact frames. All of it is untrusted text, put in with
// textContent; links are never made from it.
import { fmt, fmtShort, h, jsonText, lazyDetails, longText, oneLine, virtualList } from './dom.js';
import { framesGallery, sessionImage } from './images.js';
import { KIND_BRANCH_SUMMARY, KIND_COMPACTION, segEntry, segLength } from './model.js';

/** Plain text of message content (a string or blocks). */
export function contentText(content, max = Infinity) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let out = '';
  for (const block of content) {
    if (out.length >= max) break;
    if (!block || typeof block !== 'object') continue;
    if (block.type === 'text' && typeof block.text === 'string') out += (out ? '\n' : '') + block.text;
    else if (block.type === 'image') out += `${out ? ' ' : ''}[image]`;
  }
  return out;
}

/** A one-line summary of a message. */
export function messageSnippet(m, max = 160) {
  if (!m || typeof m !== 'object') return '';
  switch (m.role) {
    case 'user':
    case 'developer':
      return oneLine(contentText(m.content, max * 4), max);
    case 'assistant': {
      const parts = [];
      for (const b of Array.isArray(m.content) ? m.content : []) {
        if (b?.type === 'text' && b.text) parts.push(oneLine(b.text, max));
        else if (b?.type === 'toolCall')
          parts.push(`→ ${oneLine(String(b.name ?? '?'), 40)}(${oneLine(safeJson(b.arguments), 60)})`);
        else if (b?.type === 'thinking' && parts.length === 0) parts.push(`(thinking) ${oneLine(b.thinking, max)}`);
        if (parts.join(' ').length > max) break;
      }
      if (m.errorMessage) parts.push(`⚠ ${oneLine(m.errorMessage, 80)}`);
      return oneLine(parts.join('  '), max);
    }
    case 'toolResult':
      return oneLine(`${m.toolName ?? 'tool'}${m.isError ? ' (error)' : ''}: ${contentText(m.content, max * 4)}`, max);
    case 'bashExecution':
      return oneLine(`$ ${m.command ?? ''}`, max);
    case 'pythonExecution':
      return oneLine(`>>> ${m.code ?? ''}`, max);
    case 'fileMention':
      return oneLine(`files: ${(m.files ?? []).map((f) => f?.path).join(', ')}`, max);
    case 'custom':
      return oneLine(`[${m.customType ?? 'custom'}] ${contentText(m.content, max * 4)}`, max);
    case 'branchSummary':
    case 'compactionSummary':
      return oneLine(m.summary, max);
    default:
      return oneLine(`${m.role ?? '?'}`, max);
  }
}

function safeJson(v) {
  try {
    return JSON.stringify(v) ?? '';
  } catch {
    return '';
  }
}

/** A one-line summary of an entry. */
export function entrySnippet(e, max = 160) {
  switch (e?.type) {
    case 'message':
      return messageSnippet(e.message, max);
    case 'compaction':
      return oneLine(e.shortSummary || e.summary, max);
    case 'branch_summary':
      return oneLine(e.summary, max);
    case 'label':
      return oneLine(`label ${e.label === undefined ? '(cleared)' : `“${e.label}”`} → ${e.targetId}`, max);
    case 'model_change':
      return oneLine(`model ${e.model}${e.role ? ` (${e.role})` : ''}`, max);
    case 'thinking_level_change':
      return oneLine(`thinking level ${e.thinkingLevel ?? 'off'}`, max);
    case 'custom_message':
      return oneLine(`[${e.customType}] ${contentText(e.content, max * 4)}`, max);
    case 'custom':
      return oneLine(`[${e.customType}]`, max);
    default:
      return oneLine(String(e?.type ?? '?'), max);
  }
}

/** A short fact line for a node card (compactions: tokens before → after). */
export function entryMeta(e) {
  if (e?.type === 'compaction') {
    const n = e.preserveData?.snapcompact?.frames?.length;
    const frames = Number.isInteger(n) ? ` · ${n} ${n === 1 ? 'frame' : 'frames'}` : '';
    const tokens = Number.isFinite(e.tokensAfter)
      ? `${fmtShort(e.tokensBefore)} → ${fmtShort(e.tokensAfter)} tok`
      : `${fmtShort(e.tokensBefore)} tok before`;
    return `${tokens}${e.method ? ` · ${e.method}` : ''}${frames}`;
  }
  if (e?.type === 'branch_summary') return `from ${e.fromId}`;
  return '';
}

/** The kind shown for an entry: its message role, else its type. */
export function entryKind(info) {
  return info.type === 'message' ? (info.role ?? 'message') : info.type;
}

const ROW = 30;

/**
 * Fills the entry panel for segment `seg` with `entryId` selected. `ctx` holds session, tree,
 * tally, labels, scope, lightbox, path and actions {branch, showContext, selectEntry, navigate}.
 */
export function renderEntryPanel(panel, ctx, seg, entryId) {
  ctx.scope.revokeAll();
  const { tree, session } = ctx;
  const n = segLength(tree, seg);
  const kind = tree.segKind[seg];
  const parts = [];

  const head = h('header', { class: 'panel-head' });
  const kindLabel =
    kind === KIND_COMPACTION
      ? 'Compaction'
      : kind === KIND_BRANCH_SUMMARY
        ? 'Branch summary'
        : n === 1
          ? 'Entry'
          : `Run of ${fmt(n)} entries`;
  head.append(h('h3', { text: kindLabel }));
  const facts = [];
  const first = tree.index[segEntry(tree, seg, 0)];
  const last = tree.index[segEntry(tree, seg, n - 1)];
  facts.push(n === 1 ? `line ${first.line}` : `lines ${first.line}–${last.line}`);
  // The background tally may not have reached this segment yet: count a short one now.
  let segTokens = ctx.tally?.segDone[seg] ? ctx.tally.seg[seg] : NaN;
  if (Number.isNaN(segTokens) && ctx.tally && n <= 5_000) {
    segTokens = 0;
    for (let k = 0; k < n; k++) segTokens += ctx.tally.of(session, segEntry(tree, seg, k));
  }
  if (!Number.isNaN(segTokens)) facts.push(`${fmt(segTokens)} estimated tokens`);
  if (ctx.path?.onPath[seg]) facts.push('on the active path');
  head.append(h('p', { class: 'muted small', text: facts.join(' · ') }));
  parts.push(head);

  if (n > 1) {
    const listBox = h('div', { class: 'seg-list', role: 'listbox', 'aria-label': 'entries of this run' });
    const cache = new Map();
    const selectedOrd = tree.ord.get(entryId);
    let selectedK = -1;
    for (let k = 0; k < n && selectedK < 0; k++) if (segEntry(tree, seg, k) === selectedOrd) selectedK = k;
    parts.push(listBox);
    queueMicrotask(() => {
      const list = virtualList(listBox, {
        count: n,
        rowHeight: ROW,
        renderRow: (k) => {
          const ord = segEntry(tree, seg, k);
          const info = tree.index[ord];
          let snippet = cache.get(ord);
          if (snippet === undefined) {
            try {
              snippet = entrySnippet(session.entry(info.id), 120);
            } catch {
              snippet = '';
            }
            if (cache.size > 4000) cache.clear();
            cache.set(ord, snippet);
          }
          const row = h(
            'div',
            {
              class: `seg-row${k === selectedK ? ' selected' : ''}${ctx.path?.leafOrd === ord ? ' is-leaf' : ''}`,
              dataset: { entry: info.id },
              role: 'option',
            },
            h('span', { class: 'muted num', text: `#${info.line}` }),
            h('span', { class: `role role-${entryKind(info)}`, text: entryKind(info) }),
            h('span', { class: 'snippet', text: snippet }),
          );
          if (ctx.labels?.[info.id]) row.append(h('span', { class: 'tag', text: oneLine(ctx.labels[info.id], 30) }));
          return row;
        },
      });
      if (selectedK >= 0) list.scrollToRow(selectedK);
      listBox.addEventListener('click', (event) => {
        const row = event.target.closest('[data-entry]');
        if (row) ctx.actions.selectEntry(row.dataset.entry);
      });
    });
  }

  const entry = entryId ? session.entry(entryId) : undefined;
  if (entry) parts.push(renderEntry(entry, ctx));
  else parts.push(h('p', { class: 'muted', text: 'Entry not found.' }));
  panel.replaceChildren(...parts);
}

/** The full view of one entry. */
export function renderEntry(e, ctx) {
  const art = h('article', { class: 'entry', dataset: { entry: e.id, type: e.type } });
  const ord = ctx.tree.ord.get(e.id);
  const isLeaf = ctx.session.leafId === e.id;
  const title = h('div', { class: 'entry-title' });
  title.append(
    h('span', {
      class: `role role-${e.type === 'message' ? e.message?.role : e.type}`,
      text: e.type === 'message' ? (e.message?.role ?? 'message') : e.type,
    }),
  );
  title.append(h('code', { class: 'entry-id', text: e.id }));
  if (isLeaf) title.append(h('span', { class: 'badge leaf', text: 'leaf' }));
  if (ctx.labels?.[e.id]) title.append(h('span', { class: 'tag', text: ctx.labels[e.id] }));
  art.append(title);

  const meta = [];
  if (typeof e.timestamp === 'string') meta.push(e.timestamp);
  if (ord !== undefined) {
    meta.push(`line ${ctx.tree.index[ord].line}`);
    meta.push(`${fmt(ctx.tally ? ctx.tally.of(ctx.session, ord) : ctx.session.entryTokens(e.id))} tokens (estimate)`);
  }
  if (e.parentId) meta.push(`parent ${e.parentId}`);
  art.append(h('p', { class: 'muted small', text: meta.join(' · ') }));

  const buttons = h('div', { class: 'entry-actions' });
  if (!isLeaf) buttons.append(actionButton('branch', 'Make this the leaf', () => ctx.actions.branch(e.id)));
  if (ctx.actions.navigate)
    buttons.append(actionButton('navigate', 'Navigate here with a branch summary…', () => ctx.actions.navigate(e.id)));
  buttons.append(actionButton('context', 'LLM context at this entry', () => ctx.actions.showContext(e.id)));
  art.append(buttons);

  art.append(renderBody(e, ctx));
  art.append(lazyDetails('Raw JSON', () => longText(jsonText(e), { className: 'json' }), { className: 'raw' }));
  return art;
}

/** A button of the entry's action bar, named by its `data-action`. */
function actionButton(action, text, onclick) {
  return h('button', { type: 'button', dataset: { action }, text, onclick });
}

function field(name, value) {
  return h(
    'div',
    { class: 'field' },
    h('span', { class: 'field-name', text: name }),
    h('span', { class: 'field-value', text: String(value) }),
  );
}

function jumpButton(ctx, label, id) {
  return h('button', {
    type: 'button',
    class: 'link',
    text: `${label} ${id}`,
    onclick: () => ctx.actions.selectEntry(id),
  });
}

function renderBody(e, ctx) {
  const body = h('div', { class: 'entry-body' });
  switch (e.type) {
    case 'message':
      body.append(renderMessage(e.message, ctx));
      break;
    case 'compaction': {
      const facts = h('div', { class: 'fields' });
      facts.append(field('tokens before', fmt(e.tokensBefore)));
      if (e.tokensAfter !== undefined) facts.append(field('tokens after', fmt(e.tokensAfter)));
      if (e.method) facts.append(field('method', e.method));
      if (e.fromExtension) facts.append(field('from extension', 'yes'));
      if (e.warning) facts.append(field('warning', e.warning));
      body.append(facts, h('p', null, jumpButton(ctx, 'first kept entry', e.firstKeptEntryId)));
      if (e.shortSummary) body.append(h('h4', { text: 'Short summary' }), longText(e.shortSummary));
      body.append(h('h4', { text: 'Summary' }), longText(e.summary));
      if (Array.isArray(e.preserveData?.snapcompact?.frames)) {
        // Through the session: a frame stored by reference (`dataRef`) comes with its bytes.
        const frames = ctx.session.archiveFrames(e.id);
        body.append(framesGallery(frames, ctx.scope, { title: 'snapcompact archive', lightbox: ctx.lightbox }));
      }
      if (e.details) body.append(fileLists(e.details));
      break;
    }
    case 'branch_summary':
      body.append(h('p', null, jumpButton(ctx, 'summarises the branch left at', e.fromId)));
      body.append(h('h4', { text: 'Summary' }), longText(e.summary));
      if (e.details) body.append(fileLists(e.details));
      break;
    case 'label':
      body.append(
        field('label', e.label === undefined ? '(cleared)' : e.label),
        h('p', null, jumpButton(ctx, 'target', e.targetId)),
      );
      break;
    case 'model_change':
      body.append(field('model', e.model));
      if (e.role) body.append(field('role', e.role));
      break;
    case 'thinking_level_change':
      body.append(field('thinking level', e.thinkingLevel ?? 'off'));
      break;
    case 'custom_message':
      body.append(
        field('custom type', e.customType),
        field('display', e.display ? 'yes' : 'no'),
        renderContent(e.content, ctx),
      );
      break;
    case 'custom':
      body.append(field('custom type', e.customType), longText(jsonText(e.data), { className: 'json' }));
      break;
    default:
      body.append(h('p', { class: 'muted', text: `An entry of type “${String(e.type)}” (kept as is).` }));
  }
  return body;
}

function fileLists(details) {
  const read = Array.isArray(details.readFiles) ? details.readFiles : [];
  const modified = Array.isArray(details.modifiedFiles) ? details.modifiedFiles : [];
  if (!read.length && !modified.length)
    return lazyDetails('Details', () => longText(jsonText(details), { className: 'json' }));
  return lazyDetails(`Files: ${read.length} read, ${modified.length} modified`, () =>
    h(
      'div',
      { class: 'files' },
      h('h5', { text: 'Read' }),
      longText(read.join('\n')),
      h('h5', { text: 'Modified' }),
      longText(modified.join('\n')),
    ),
  );
}

/** Message content: text blocks as text, image blocks as images of their own bytes. */
function renderContent(content, ctx) {
  if (typeof content === 'string') return longText(content);
  const box = h('div', { class: 'content' });
  for (const block of Array.isArray(content) ? content : []) box.append(renderBlock(block, ctx));
  return box;
}

function renderBlock(b, ctx) {
  if (!b || typeof b !== 'object') return longText(jsonText(b), { className: 'json' });
  switch (b.type) {
    case 'text':
      return longText(b.text);
    case 'image':
      return sessionImage(b, ctx.scope);
    case 'thinking':
      return lazyDetails(
        `Thinking (${fmt(String(b.thinking ?? '').length)} characters)`,
        () => longText(b.thinking, { className: 'text thinking' }),
        { className: 'thinking-block' },
      );
    case 'redactedThinking':
      return h('p', { class: 'note', text: '[redacted thinking]' });
    case 'toolCall':
      return h(
        'div',
        { class: 'tool-call' },
        h(
          'div',
          { class: 'tool-call-head' },
          h('span', { class: 'tool-name', text: String(b.name ?? '?') }),
          h('code', { class: 'muted small', text: String(b.id ?? '') }),
          b.contextOmitted ? h('span', { class: 'badge', text: 'hidden from model' }) : null,
        ),
        longText(jsonText(b.arguments), { className: 'json' }),
      );
    default:
      return h(
        'div',
        { class: 'other-block' },
        h('span', { class: 'muted small', text: `block “${String(b.type)}”` }),
        longText(jsonText(b), { className: 'json' }),
      );
  }
}

function renderMessage(m, ctx) {
  const box = h('div', { class: 'message' });
  if (!m || typeof m !== 'object') return longText(jsonText(m), { className: 'json' });
  switch (m.role) {
    case 'user':
    case 'developer':
      box.append(renderContent(m.content, ctx));
      break;
    case 'assistant': {
      const facts = [];
      if (m.provider || m.model) facts.push(`${m.provider ?? '?'}/${m.model ?? '?'}`);
      if (m.api) facts.push(m.api);
      if (m.stopReason) facts.push(`stop: ${m.stopReason}`);
      if (m.usage)
        facts.push(
          `usage: ${fmt(m.usage.input)} in, ${fmt(m.usage.output)} out, ${fmt(m.usage.cacheRead)} cache read, ${fmt(m.usage.cacheWrite)} cache write`,
        );
      if (facts.length) box.append(h('p', { class: 'muted small', text: facts.join(' · ') }));
      if (m.errorMessage) box.append(h('p', { class: 'error', text: m.errorMessage }));
      box.append(renderContent(m.content, ctx));
      break;
    }
    case 'toolResult': {
      const head = h(
        'div',
        { class: 'tool-call-head' },
        h('span', { class: 'tool-name', text: String(m.toolName ?? '?') }),
        h('code', { class: 'muted small', text: String(m.toolCallId ?? '') }),
      );
      if (m.isError) head.append(h('span', { class: 'badge error', text: 'error' }));
      if (m.prunedAt)
        head.append(h('span', { class: 'badge pruned', text: `pruned ${new Date(m.prunedAt).toISOString()}` }));
      if (m.useless) head.append(h('span', { class: 'badge', text: 'useless' }));
      if (m.contextOmitted) head.append(h('span', { class: 'badge', text: 'hidden from model' }));
      box.append(head, renderContent(m.content, ctx));
      if (m.details !== undefined)
        box.append(lazyDetails('Details', () => longText(jsonText(m.details), { className: 'json' })));
      break;
    }
    case 'bashExecution':
      box.append(h('pre', { class: 'text command', text: `$ ${m.command ?? ''}` }), longText(m.output ?? ''));
      box.append(
        h('p', {
          class: 'muted small',
          text: `exit ${m.exitCode ?? '?'}${m.cancelled ? ' · cancelled' : ''}${m.truncated ? ' · truncated' : ''}${m.excludeFromContext ? ' · excluded from context' : ''}`,
        }),
      );
      break;
    case 'pythonExecution':
      box.append(longText(m.code ?? '', { className: 'text command' }), longText(m.output ?? ''));
      box.append(
        h('p', { class: 'muted small', text: `exit ${m.exitCode ?? '?'}${m.cancelled ? ' · cancelled' : ''}` }),
      );
      break;
    case 'fileMention':
      for (const f of Array.isArray(m.files) ? m.files : []) {
        box.append(h('h5', { text: String(f?.path ?? '?') }), longText(f?.content ?? ''));
        if (f?.image) box.append(sessionImage(f.image, ctx.scope));
      }
      break;
    case 'custom':
      box.append(field('custom type', m.customType), renderContent(m.content, ctx));
      break;
    case 'branchSummary':
    case 'compactionSummary':
      box.append(longText(m.summary));
      break;
    default:
      box.append(longText(jsonText(m), { className: 'json' }));
  }
  return box;
}
