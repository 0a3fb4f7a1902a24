// Search and filter in the tree: text (the package's `Session.searchHistory`, BM25 over the
// entries), an entry id (exact), a role or entry type (from `Session.index()`) and a tool name
// (the `toolName` of tool results, read once per session in slices). Matches are listed in a
// virtual list under the toolbar: only the rows in view are in the DOM, whatever the count.
import { errorText, fmt, h, runSliced, virtualList, yieldToPage } from './dom.js';

/** Hits asked of `searchHistory` (its maximum). */
const TEXT_LIMIT = 200;
const ROW = 26;
/** Filter values that are entry types rather than message roles, and their `searchHistory` role. */
const TYPE_ROLES = { compaction: 'compactionSummary', branch_summary: 'branchSummary' };
const ROLES = ['user', 'assistant', 'toolResult', 'bashExecution', 'custom', 'compaction', 'branch_summary'];

export class TreeSearch {
  /**
   * `form` holds #tree-search, #tree-role and #tree-tool; `results` is the list's container.
   * `onSelect(entryId)` selects an entry; `model()` returns `{session, tree}` or null.
   */
  constructor({ form, results, onSelect, model }) {
    this.form = form;
    this.results = results;
    this.onSelect = onSelect;
    this.model = model;
    this.text = form.querySelector('#tree-search');
    this.role = form.querySelector('#tree-role');
    this.tool = form.querySelector('#tree-tool');
    this.role.replaceChildren(
      h('option', { value: '', text: 'any role' }),
      ...ROLES.map((r) => h('option', { value: r, text: r })),
    );
    this.count = h('p', { class: 'small muted search-count', id: 'search-count', role: 'status' });
    this.list = h('div', { class: 'search-list', id: 'search-list', 'aria-label': 'matching entries' });
    this.results.replaceChildren(this.count, this.list);
    this.matches = [];
    this.run = 0;
    this.tools = null; // { session, names: Map<ord, toolName> } once read
    let timer = 0;
    const later = () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.update(), 150);
    };
    this.text.addEventListener('input', later);
    this.tool.addEventListener('input', later);
    this.role.addEventListener('change', () => this.update());
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      clearTimeout(timer);
      this.update();
    });
    this.view = virtualList(this.list, { count: 0, rowHeight: ROW, renderRow: (i) => this.row(i) });
  }

  /** A new session (or a changed one): the tool names are read again, the search redone. */
  reset() {
    this.tools = null;
    if (this.active()) this.update();
  }

  active() {
    return Boolean(this.text.value.trim() || this.role.value || this.tool.value.trim());
  }

  /** Runs the search of the form; resolves when its matches are listed. */
  async update() {
    const run = ++this.run;
    const m = this.model();
    if (!m || !this.active()) {
      this.show([], '');
      this.results.hidden = true;
      this.form.dataset.state = 'idle';
      return;
    }
    const { session, tree } = m;
    const query = this.text.value.trim();
    const role = this.role.value;
    const tool = this.tool.value.trim().toLowerCase();
    this.results.hidden = false;
    this.form.dataset.state = 'busy';
    this.count.textContent = 'searching…';
    await yieldToPage();
    if (run !== this.run) return;
    try {
      let candidates; // ordinals, in file order or by score
      let snippets = null;
      let capped = false;
      if (query) {
        candidates = [];
        snippets = new Map();
        // An entry id: that entry, exactly.
        const exact = tree.ord.get(query);
        if (exact !== undefined) candidates.push(exact);
        const roles = role ? [TYPE_ROLES[role] ?? role] : undefined;
        const hits = session.searchHistory(query, { limit: TEXT_LIMIT, ...(roles ? { roles } : {}) });
        capped = hits.length >= TEXT_LIMIT;
        for (const hit of hits) {
          const ord = hit.entryId === null ? undefined : tree.ord.get(hit.entryId);
          if (ord === undefined || ord === exact) continue;
          candidates.push(ord);
          snippets.set(ord, hit.snippet);
        }
        if (role && exact !== undefined && !matchesRole(tree.index[exact], role)) candidates.shift();
      } else {
        candidates = [];
        for (let i = 0; i < tree.size; i++) if (!role || matchesRole(tree.index[i], role)) candidates.push(i);
      }
      if (tool) {
        const names = await this.toolNames(session, tree, () => run !== this.run);
        if (!names) return;
        candidates = candidates.filter((i) => names.get(i)?.toLowerCase().includes(tool));
      }
      if (run !== this.run) return;
      this.snippets = snippets;
      const what = [query && `“${query}”`, role && `role ${role}`, tool && `tool ${tool}`].filter(Boolean).join(', ');
      this.show(
        candidates,
        `${fmt(candidates.length)} match${candidates.length === 1 ? '' : 'es'} for ${what}${capped ? ` (the ${TEXT_LIMIT} best text hits)` : ''}`,
      );
    } catch (err) {
      if (run !== this.run) return;
      this.show([], `No search: ${errorText(err)}`);
    }
    this.form.dataset.state = 'done';
  }

  show(ords, text) {
    this.matches = ords;
    this.count.textContent = text;
    this.list.scrollTop = 0;
    this.view.setCount(ords.length);
  }

  row(i) {
    const m = this.model();
    const ord = this.matches[i];
    const e = m?.tree.index[ord];
    if (!e) return h('div');
    const snippet = this.snippets?.get(ord) ?? '';
    const row = h(
      'button',
      { type: 'button', class: 'search-row', 'data-entry': e.id, title: e.id },
      h('span', { class: 'search-role', text: e.role ?? e.type }),
      h('code', { class: 'search-id', text: e.id }),
      h('span', { class: 'search-snippet muted', text: snippet }),
    );
    row.addEventListener('click', () => this.onSelect(e.id));
    return row;
  }

  /** `toolName` of each tool result, by ordinal: read once per session, in slices. */
  async toolNames(session, tree, isCancelled) {
    if (this.tools?.session === session && this.tools.size === tree.size) return this.tools.names;
    const names = new Map();
    const results = [];
    for (let i = 0; i < tree.size; i++) if (tree.index[i].role === 'toolResult') results.push(i);
    this.count.textContent = `reading the tool names of ${fmt(results.length)} results…`;
    const done = await runSliced(
      results.length,
      (k) => {
        const name = session.entry(tree.index[results[k]].id)?.message?.toolName;
        if (typeof name === 'string') names.set(results[k], name);
      },
      { isCancelled },
    );
    if (!done) return null;
    this.tools = { session, size: tree.size, names };
    return names;
  }
}

/** Whether index entry `e` is of the filter's role (a message role or an entry type). */
function matchesRole(e, role) {
  return e.role === role || e.type === role;
}
