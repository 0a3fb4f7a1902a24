// The session tree as the explorer draws it: entries folded into segments, laid out in lanes.
//
// A *segment* is a maximal linear run of entries (each one the only child of the one before),
// so a 100,000-entry chain is one node on screen. Compactions and branch summaries are always
// segments of their own (distinct node kinds). Segments are numbered in pre-order, which is
// also their row on screen; the first child of a segment continues its lane and later children
// open lanes to the right (lowest free lane first, as `git log --graph` does).
//
// Everything here works on typed arrays indexed by entry ordinal (position in `index()`), is
// iterative (no recursion: a hostile session may be 100,000 levels deep) and linear in size.

export const KIND_RUN = 'run';
export const KIND_COMPACTION = 'compaction';
export const KIND_BRANCH_SUMMARY = 'branch_summary';

const special = (type) => type === KIND_COMPACTION || type === KIND_BRANCH_SUMMARY;

/**
 * Builds the tree model of `index` (`Session.index()`).
 * @param {Array<{id: string, parentId: string|null, type: string, role?: string|null, line: number}>} index
 */
export function buildTree(index) {
  const n = index.length;
  const ord = new Map();
  for (let i = 0; i < n; i++) ord.set(index[i].id, i);

  // Parent ordinals and children lists (compressed: childStart/childList, file order kept).
  const parent = new Int32Array(n).fill(-1);
  const childCount = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const p = index[i].parentId;
    const pi = p === null || p === undefined ? -1 : (ord.get(p) ?? -1);
    if (pi !== i) parent[i] = pi;
    if (parent[i] >= 0) childCount[parent[i]]++;
  }
  const childStart = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) childStart[i + 1] = childStart[i] + childCount[i];
  const childList = new Int32Array(childStart[n]);
  const fill = childStart.slice(0, n);
  for (let i = 0; i < n; i++) if (parent[i] >= 0) childList[fill[parent[i]]++] = i;

  // Segments in pre-order. An explicit stack of [entry ordinal, parent segment].
  const segFirst = []; // offset into segEntries
  const segParent = [];
  const segKind = [];
  const segEntries = new Int32Array(n);
  const entrySeg = new Int32Array(n).fill(-1);
  const depth = new Int32Array(n);
  let flat = 0;

  const walk = (rootOrds) => {
    const stack = [];
    for (let k = rootOrds.length - 1; k >= 0; k--) stack.push(rootOrds[k], -1);
    while (stack.length) {
      const ps = stack.pop();
      const start = stack.pop();
      if (entrySeg[start] !== -1) continue; // defensive: never visit twice
      const seg = segFirst.length;
      segFirst.push(flat);
      segParent.push(ps);
      const type = index[start].type;
      segKind.push(special(type) ? type : KIND_RUN);
      let cur = start;
      const parentOrd = parent[cur];
      depth[cur] = parentOrd >= 0 && entrySeg[parentOrd] !== -1 ? depth[parentOrd] + 1 : 0;
      entrySeg[cur] = seg;
      segEntries[flat++] = cur;
      if (!special(type)) {
        while (childCount[cur] === 1) {
          const next = childList[childStart[cur]];
          if (special(index[next].type) || entrySeg[next] !== -1) break;
          depth[next] = depth[cur] + 1;
          cur = next;
          entrySeg[cur] = seg;
          segEntries[flat++] = cur;
        }
      }
      for (let k = childStart[cur + 1] - 1; k >= childStart[cur]; k--) {
        const c = childList[k];
        if (entrySeg[c] === -1) stack.push(c, seg);
      }
    }
  };
  const roots = [];
  for (let i = 0; i < n; i++) if (parent[i] < 0) roots.push(i);
  walk(roots);
  // Entries on a parent cycle are unreachable from any root (the loader breaks cycles, but a
  // model that never hangs is cheap): each unvisited entry starts a tree of its own.
  if (flat < n) {
    for (let i = 0; i < n; i++) {
      if (entrySeg[i] !== -1) continue;
      parent[i] = -1;
      walk([i]);
    }
  }

  const segCount = segFirst.length;
  segFirst.push(flat);
  const tree = {
    index,
    ord,
    parent,
    childStart,
    childList,
    entrySeg,
    depth,
    segEntries,
    segFirst: Int32Array.from(segFirst),
    segParent: Int32Array.from(segParent),
    segKind,
    segCount,
    size: n,
  };
  tree.segChildStart = new Int32Array(segCount + 1);
  tree.segChildList = new Int32Array(Math.max(0, segCount - countRoots(tree.segParent)));
  {
    const counts = new Int32Array(segCount);
    for (let s = 0; s < segCount; s++) if (tree.segParent[s] >= 0) counts[tree.segParent[s]]++;
    for (let s = 0; s < segCount; s++) tree.segChildStart[s + 1] = tree.segChildStart[s] + counts[s];
    const at = tree.segChildStart.slice(0, segCount);
    // Pre-order numbering: children of a segment appear in increasing order.
    for (let s = 0; s < segCount; s++) if (tree.segParent[s] >= 0) tree.segChildList[at[tree.segParent[s]]++] = s;
  }
  layoutLanes(tree);
  tree.stats = treeStats(tree);
  return tree;
}

function countRoots(segParent) {
  let r = 0;
  for (const p of segParent) if (p < 0) r++;
  return r;
}

/** A min-heap of free lane numbers. */
class LaneHeap {
  constructor() {
    this.a = [];
  }
  push(v) {
    const a = this.a;
    a.push(v);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p] <= a[i]) break;
      [a[p], a[i]] = [a[i], a[p]];
      i = p;
    }
  }
  pop() {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (a.length) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l] < a[m]) m = l;
        if (r < a.length && a[r] < a[m]) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i], a[m]];
        i = m;
      }
    }
    return top;
  }
  get size() {
    return this.a.length;
  }
}

/**
 * Lanes: `segLane[s]` is the column of segment s, `rowWidth[s]` the number of lanes in use on
 * its row (so its card goes right of every line passing through). `suffixMinParent[s]` is the
 * smallest parent row among segments ≥ s: the edges crossing rows [a, b] are those of segments
 * c ≥ a while `suffixMinParent[c] <= b`.
 */
function layoutLanes(tree) {
  const { segCount, segParent, segChildStart, segChildList } = tree;
  const segLane = new Int32Array(segCount);
  const rowWidth = new Int32Array(segCount);
  const pending = new Int32Array(segCount).fill(-1);
  const busy = new Uint8Array(segCount + 1);
  const free = new LaneHeap();
  let top = 0; // lanes ever opened
  let maxBusy = -1;
  const allocate = () => {
    const lane = free.size ? free.pop() : top++;
    busy[lane] = 1;
    if (lane > maxBusy) maxBusy = lane;
    return lane;
  };
  const release = (lane) => {
    busy[lane] = 0;
    free.push(lane);
    while (maxBusy >= 0 && !busy[maxBusy]) maxBusy--;
  };
  let maxLanes = 1;
  for (let s = 0; s < segCount; s++) {
    const lane = pending[s] >= 0 ? pending[s] : allocate();
    segLane[s] = lane;
    const c0 = segChildStart[s];
    const c1 = segChildStart[s + 1];
    if (c1 > c0) {
      pending[segChildList[c0]] = lane;
      for (let k = c0 + 1; k < c1; k++) pending[segChildList[k]] = allocate();
    }
    rowWidth[s] = maxBusy + 1;
    if (rowWidth[s] > maxLanes) maxLanes = rowWidth[s];
    if (c1 === c0) release(lane);
  }
  const suffixMinParent = new Int32Array(segCount + 1).fill(2 ** 31 - 1);
  for (let s = segCount - 1; s >= 0; s--) {
    const p = segParent[s] < 0 ? 2 ** 31 - 1 : segParent[s];
    suffixMinParent[s] = Math.min(p, suffixMinParent[s + 1]);
  }
  tree.segLane = segLane;
  tree.rowWidth = rowWidth;
  tree.maxLanes = maxLanes;
  tree.suffixMinParent = suffixMinParent;
}

function treeStats(tree) {
  const { index, childStart, size, segKind } = tree;
  let branchPoints = 0;
  for (let i = 0; i < size; i++) if (childStart[i + 1] - childStart[i] > 1) branchPoints++;
  let compactions = 0;
  let branchSummaries = 0;
  for (const k of segKind) {
    if (k === KIND_COMPACTION) compactions++;
    else if (k === KIND_BRANCH_SUMMARY) branchSummaries++;
  }
  let roots = 0;
  for (let i = 0; i < size; i++) if (tree.parent[i] < 0) roots++;
  return { entries: index.length, segments: tree.segCount, branchPoints, compactions, branchSummaries, roots };
}

/** Number of entries in segment `s`. */
export const segLength = (tree, s) => tree.segFirst[s + 1] - tree.segFirst[s];
/** Ordinal of the k-th entry of segment `s`. */
export const segEntry = (tree, s, k) => tree.segEntries[tree.segFirst[s] + k];
/** Ordinal of the last entry of segment `s`. */
export const segLast = (tree, s) => tree.segEntries[tree.segFirst[s + 1] - 1];
/** Number of children of the entry with ordinal `i`. */
export const childCountOf = (tree, i) => tree.childStart[i + 1] - tree.childStart[i];
/** Position of entry ordinal `i` within its segment. */
export const posInSeg = (tree, i) => tree.depth[i] - tree.depth[tree.segEntries[tree.segFirst[tree.entrySeg[i]]]];

/**
 * The entry that stands for segment `s`: its first user message (what a run is about) within
 * the first 50 entries, else its first entry.
 */
export function segPick(tree, s) {
  const from = tree.segFirst[s];
  const to = Math.min(tree.segFirst[s + 1], from + 50);
  for (let k = from; k < to; k++) {
    const info = tree.index[tree.segEntries[k]];
    if (info.type === 'message' && info.role === 'user') return tree.segEntries[k];
  }
  return tree.segEntries[from];
}

/** Counts of entry kinds in a segment, by role for messages (memoised). */
export function segComposition(tree, s) {
  tree.compositionCache ??= new Map();
  let c = tree.compositionCache.get(s);
  if (c) return c;
  c = { user: 0, assistant: 0, tool: 0, other: 0 };
  const from = tree.segFirst[s];
  const to = tree.segFirst[s + 1];
  for (let k = from; k < to; k++) {
    const info = tree.index[tree.segEntries[k]];
    if (info.type !== 'message') c.other++;
    else if (info.role === 'user' || info.role === 'developer') c.user++;
    else if (info.role === 'assistant') c.assistant++;
    else if (info.role === 'toolResult' || info.role === 'bashExecution' || info.role === 'pythonExecution') c.tool++;
    else c.other++;
  }
  tree.compositionCache.set(s, c);
  return c;
}

/**
 * The active path of `leafId` on the tree: `onPath[s]` = 1 for segments on it; `leafSeg` and
 * the leaf's position within it (a leaf may sit inside a run).
 */
export function activePath(tree, leafId) {
  const onPath = new Uint8Array(tree.segCount);
  const entry = leafId === null ? undefined : tree.ord.get(leafId);
  if (entry === undefined) return { onPath, leafSeg: -1, leafOrd: -1, leafPos: -1, length: 0 };
  const leafSeg = tree.entrySeg[entry];
  for (let s = leafSeg; s >= 0; s = tree.segParent[s]) onPath[s] = 1;
  return { onPath, leafSeg, leafOrd: entry, leafPos: posInSeg(tree, entry), length: tree.depth[entry] + 1 };
}

/**
 * Per-entry token estimates, filled in the background (`Session.entryTokens` costs about 15 µs
 * an entry: 50,000 entries would block the page for most of a second in one go).
 */
export class TokenTally {
  constructor(tree) {
    this.tree = tree;
    this.entry = new Float64Array(tree.size).fill(NaN);
    this.seg = new Float64Array(tree.segCount);
    this.segDone = new Uint8Array(tree.segCount);
    this.done = 0;
  }
  /** Carries over the estimates of a previous tally of the same session (ids still valid). */
  adopt(previous) {
    if (!previous) return;
    const { tree } = this;
    for (let i = 0; i < tree.size; i++) {
      const old = previous.tree.ord.get(tree.index[i].id);
      if (old !== undefined && !Number.isNaN(previous.entry[old])) this.entry[i] = previous.entry[old];
    }
  }
  /** Estimates every entry, segment by segment; `onProgress` after each slice. */
  async run(session, { isCancelled, onProgress, runSliced }) {
    const { tree } = this;
    const order = tree.segEntries; // pre-order: the top of the tree first
    let s = 0;
    const total = tree.size;
    const ok = await runSliced(
      total,
      (k) => {
        const i = order[k];
        if (Number.isNaN(this.entry[i])) {
          let t = 0;
          try {
            t = session.entryTokens(tree.index[i].id);
          } catch {
            t = 0;
          }
          this.entry[i] = t;
        }
        while (s < tree.segCount && k + 1 >= tree.segFirst[s + 1]) {
          this.finishSeg(s);
          s++;
        }
      },
      {
        isCancelled,
        onSlice: (k) => {
          this.done = k;
          onProgress?.();
        },
      },
    );
    return ok;
  }
  finishSeg(s) {
    const { tree } = this;
    let sum = 0;
    for (let k = tree.segFirst[s]; k < tree.segFirst[s + 1]; k++) sum += this.entry[tree.segEntries[k]] || 0;
    this.seg[s] = sum;
    this.segDone[s] = 1;
  }
  /** Estimate of one entry, computed now if the background pass has not reached it. */
  of(session, ord) {
    if (Number.isNaN(this.entry[ord])) {
      try {
        this.entry[ord] = session.entryTokens(this.tree.index[ord].id);
      } catch {
        this.entry[ord] = 0;
      }
    }
    return this.entry[ord];
  }
}
