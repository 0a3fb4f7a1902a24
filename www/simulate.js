// The Simulate panel: a scripted agent (sim-agent.js) runs in the page through the package's
// real `Maintainer`, turn by turn, with start / pause / step, a window size, a method order and
// a summarizer (the local deterministic one, or the OpenAI-compatible endpoint of the Actions
// tab). The live session is the explorer's session: the tree grows as the agent works, the
// timeline (timeline.js) shows each request's tokens and the maintainer's steps.
//
// `window.__simulation` is a read-only copy of the log: the config, one record per model
// request (`turns`), every maintainer event (`events`, plain fields only) and the chart's
// markers. Nothing leaves the page unless the visitor picked the endpoint summarizer.
import { endpointSummarizer } from './actions.js';
import { $, errorText, fmt, h, yieldToPage } from './dom.js';
import { Maintainer, Session, thresholdTokens } from './pkg/entries/web.js';
import { localSummarizer, ScriptedHost, SimClock, SimModel, workload } from './sim-agent.js';
import { markersFromEvents, Timeline } from './timeline.js';

/** Method orders to choose from (the Maintainer walks them; see docs/guide/maintainer.md). */
export const STRATEGIES = {
  'context-full': ['soft'],
  snapcompact: ['snapcompact', 'soft'],
  shake: ['shake', 'soft'],
  handoff: ['handoff', 'soft'],
};

export const WINDOWS = [32_000, 64_000, 128_000, 200_000, 400_000, 1_000_000];
const IDLE_TIMEOUT_SECONDS = 300;
/** While running, the tree is rebuilt at most this often (ms); the chart every frame. */
const TREE_EVERY_MS = 400;

/** A copy of a compaction report with plain fields only. */
function plainReport(r) {
  if (!r || typeof r !== 'object') return undefined;
  return JSON.parse(JSON.stringify(r));
}

export class Simulation {
  /**
   * @param app the explorer (app.js): useSession, refresh, selectEntry, showCompaction, setStatus
   */
  constructor(app) {
    this.app = app;
    this.config = {
      window: 32_000,
      strategy: 'context-full',
      order: STRATEGIES['context-full'].join(', '),
      summarizer: 'local',
      seed: 1,
      turns: 200,
      promote: false,
      midTurn: true,
    };
    this.state = 'idle'; // idle | running | paused | done | error
    this.reset();
    this.timeline = new Timeline($('timeline'), { onSelect: (marker) => this.selectMarker(marker) });
    // The chart is drawn to the width of its box: again when that changes.
    let width = 0;
    new ResizeObserver(([entry]) => {
      const w = Math.round(entry.contentRect.width);
      if (Math.abs(w - width) < 8) return;
      width = w;
      this.scheduleChart();
    }).observe($('timeline'));
    this.buildControls();
    Object.defineProperty(window, '__simulation', {
      configurable: true,
      get: () => this.snapshot(),
    });
  }

  /** Forgets the run (the session stays in the explorer until another is loaded). */
  reset() {
    this.maintainer?.dispose();
    this.maintainer = null;
    this.host = null;
    this.turns = [];
    this.events = [];
    this.undos = [];
    this.sessions = [];
    this.turn = 0;
    this.error = null;
    this.selectedEvent = null;
    this.runMs = 0;
  }

  // ----- controls ----------------------------------------------------------------------------

  buildControls() {
    const c = this.config;
    const windowSel = h(
      'select',
      { id: 'sim-window', onchange: (e) => (c.window = Number(e.target.value)) },
      WINDOWS.map((w) => h('option', { value: String(w), selected: w === c.window, text: `${fmt(w)} tokens` })),
    );
    const orderInput = h('input', {
      id: 'sim-order',
      type: 'text',
      value: c.order,
      size: 22,
      spellcheck: 'false',
      title: 'Method order: remote, snapcompact, handoff, shake, soft',
      onchange: (e) => (c.order = e.target.value),
    });
    const strategySel = h(
      'select',
      {
        id: 'sim-strategy',
        onchange: (e) => {
          c.strategy = e.target.value;
          if (STRATEGIES[c.strategy]) c.order = STRATEGIES[c.strategy].join(', ');
          orderInput.value = c.order;
        },
      },
      Object.keys(STRATEGIES).map((s) => h('option', { value: s, selected: s === c.strategy, text: s })),
    );
    const summarizerSel = h(
      'select',
      { id: 'sim-summarizer', onchange: (e) => (c.summarizer = e.target.value) },
      h('option', { value: 'local', text: 'local, deterministic (no network)' }),
      h('option', { value: 'endpoint', text: 'the OpenAI-compatible endpoint of the Actions tab' }),
    );
    // A whole number ≥ 1 (`fallback` for what is not one) and a switch, bound to `c[key]`.
    const wholeInput = (id, key, fallback, attrs = {}) =>
      h('input', {
        id,
        type: 'number',
        min: 1,
        ...attrs,
        value: String(c[key]),
        class: 'narrow',
        onchange: (e) => (c[key] = Math.max(1, Math.floor(Number(e.target.value) || fallback))),
      });
    const checkbox = (id, key) =>
      h('input', { id, type: 'checkbox', checked: c[key], onchange: (e) => (c[key] = e.target.checked) });
    const seedInput = wholeInput('sim-seed', 'seed', 1);
    const turnsInput = wholeInput('sim-turns', 'turns', 200, { max: 100000 });
    const promote = checkbox('sim-promote', 'promote');
    const midTurn = checkbox('sim-midturn', 'midTurn');
    this.startBtn = h('button', {
      type: 'button',
      id: 'sim-start',
      class: 'primary',
      text: 'Start',
      onclick: () => this.start(),
    });
    this.pauseBtn = h('button', {
      type: 'button',
      id: 'sim-pause',
      text: 'Pause',
      disabled: true,
      onclick: () => this.pause(),
    });
    this.stepBtn = h('button', { type: 'button', id: 'sim-step', text: 'Step', onclick: () => this.stepOnce() });
    this.resetBtn = h('button', { type: 'button', id: 'sim-reset', text: 'New run', onclick: () => this.newRun() });
    this.pauseOnCompaction = h('input', { id: 'sim-pause-compaction', type: 'checkbox' });
    const field = (id, label, input) =>
      h('label', { class: 'sim-field', for: id }, h('span', { class: 'muted small', text: label }), input);
    $('sim-controls').replaceChildren(
      field('sim-window', 'window', windowSel),
      field('sim-strategy', 'strategy', strategySel),
      field('sim-order', 'method order', orderInput),
      field('sim-summarizer', 'summarizer', summarizerSel),
      field('sim-turns', 'requests', turnsInput),
      field('sim-seed', 'seed', seedInput),
      h(
        'label',
        { class: 'sim-check', for: 'sim-midturn', title: 'Check the context before sending tool results' },
        midTurn,
        ' mid-run checks',
      ),
      h('label', { class: 'sim-check', for: 'sim-promote' }, promote, ' promote to a 4× window once'),
      h(
        'label',
        { class: 'sim-check', for: 'sim-pause-compaction' },
        this.pauseOnCompaction,
        ' pause at each compaction',
      ),
      h('span', { class: 'sim-buttons' }, this.startBtn, this.pauseBtn, this.stepBtn, this.resetBtn),
    );
    this.controls = [windowSel, strategySel, orderInput, summarizerSel, seedInput, promote, midTurn];
    this.updateButtons();
  }

  updateButtons() {
    const running = this.state === 'running';
    const started = this.maintainer !== null;
    this.startBtn.disabled = running;
    this.startBtn.textContent = started && this.state !== 'done' ? 'Resume' : 'Start';
    this.pauseBtn.disabled = !running;
    this.stepBtn.disabled = running;
    this.resetBtn.disabled = running || !started;
    // The set-up of a run cannot change under it.
    for (const control of this.controls) control.disabled = started;
    $('sim-panel').dataset.state = this.state;
  }

  setStatus(text, kind = '') {
    const el = $('sim-status');
    el.textContent = text;
    el.className = `small ${kind || 'muted'}`;
  }

  // ----- the run -----------------------------------------------------------------------------

  /** Builds the maintainer, the fake model and the host of a new run; the session goes to the explorer. */
  setup() {
    const c = this.config;
    const methodOrder = c.order
      .split(/[\s,]+/)
      .map((s) => s.trim())
      .filter(Boolean);
    let summarize;
    if (c.summarizer === 'endpoint') {
      summarize = endpointSummarizer();
      if (!summarize)
        throw new Error(
          'set the endpoint up in the Actions tab first (context-full via an OpenAI-compatible endpoint)',
        );
    } else {
      summarize = localSummarizer(c.seed);
    }
    const clock = new SimClock();
    const work = workload(c.window);
    const model = {
      provider: 'anthropic',
      id: 'claude-sonnet-4-5',
      api: 'anthropic-messages',
      contextWindow: c.window,
      maxTokens: Math.min(8_192, Math.round(c.window / 16)),
      input: ['text', 'image'],
    };
    const settings = {
      ...work.settings,
      methodOrder,
      idleEnabled: true,
      idleTimeoutSeconds: IDLE_TIMEOUT_SECONDS,
      // Off: tool results go out unchecked, so a large one can overflow the window (recovery).
      midTurnEnabled: c.midTurn,
    };
    const session = Session.create({ ids: 'deterministic', id: `simulation-${c.seed}`, cwd: '/w', now: clock.now() });
    const fake = new SimModel({ model, seed: c.seed, clock, work });
    let promoted = false;
    this.maintainer = new Maintainer(session, {
      model,
      summarize,
      settings,
      onEvent: (e) => this.record(e),
      now: clock.now,
      setTimer: clock.setTimer,
      // One promotion to a model with four times the window, when asked for.
      promote: c.promote
        ? () => {
            if (promoted) return null;
            promoted = true;
            fake.model = { ...fake.model, id: 'claude-sonnet-4-5-long', contextWindow: fake.model.contextWindow * 4 };
            return fake.model;
          }
        : () => null,
    });
    this.settings = settings;
    this.fake = fake;
    this.host = new ScriptedHost({
      maintainer: this.maintainer,
      fake,
      clock,
      seed: c.seed,
      idleTimeoutSeconds: IDLE_TIMEOUT_SECONDS,
    });
    this.sessions = [session];
    // The tree's token bars measure against the simulated window.
    this.app.settings.contextWindow = c.window;
    this.app.useSession(session, `simulation-${c.strategy}-${c.window / 1000}k.jsonl`, { owned: false, quiet: true });
    this.app.setStatus("Simulating: the tree follows the agent's session; Download saves it.", 'ok');
  }

  /** One maintainer event into the log, as plain fields (the live objects stay here). */
  record(e) {
    const rec = { turn: this.turn, type: e.type };
    switch (e.type) {
      case 'auto_compaction_start':
        rec.reason = e.reason;
        rec.action = e.action;
        this.lastStart = e.reason;
        break;
      case 'auto_compaction_end': {
        const result = e.result;
        rec.action = e.action;
        rec.aborted = e.aborted;
        rec.willRetry = e.willRetry;
        if (e.errorMessage) rec.errorMessage = e.errorMessage;
        if (e.skipped) rec.skipped = true;
        rec.compacted = !e.aborted && !e.errorMessage && !e.skipped && result !== undefined;
        rec.reason = this.lastStart;
        if (result) {
          rec.method = result.report?.method ?? result.method ?? e.action;
          rec.entryId = result.entryId ?? null;
          rec.report = plainReport(result.report);
          if (result.session) rec.handoff = true;
        }
        break;
      }
      case 'prune':
        rec.pass = e.pass;
        rec.prunedCount = e.prunedCount;
        rec.tokensSaved = e.tokensSaved;
        rec.report = plainReport(e.report);
        break;
      case 'promotion':
        rec.reason = e.reason;
        rec.from = e.from?.contextWindow;
        rec.to = e.to?.contextWindow;
        break;
      case 'continue':
        rec.kind = e.kind;
        rec.afterMs = e.afterMs;
        if (e.kind === 'retry')
          rec.recovery = this.host?.current?.overflow ? 'overflow' : this.host?.current?.stopReason;
        break;
      case 'handoff':
        rec.document = typeof e.document === 'string' ? e.document.length : 0;
        this.sessions.push(e.session);
        break;
      case 'compaction_warning':
        rec.message = e.message;
        break;
      case 'notice':
        rec.level = e.level;
        rec.text = e.text;
        break;
      default:
        break;
    }
    this.events.push(rec);
    if (rec.compacted && this.pauseOnCompaction.checked && this.state === 'running') this.pauseRequested = true;
  }

  /** One model request of the scripted host; returns false when the run is over. */
  async turnOnce() {
    if (!this.maintainer) this.setup();
    if (this.turns.length >= this.config.turns) return false;
    this.turn = this.turns.length + 1;
    const m = this.maintainer;
    const t0 = performance.now();
    const r = await this.host.step();
    this.runMs += performance.now() - t0;
    if (this.maintainer !== m) return false; // detached while the request ran
    r.threshold = thresholdTokens(m.model.contextWindow, this.settings, m.model);
    r.leafId = m.session.leafId;
    this.turns.push(r);
    if (m.session !== this.app.session) {
      // A handoff: the explorer follows the live session.
      this.app.useSession(m.session, `simulation-handoff-${this.sessions.length}.jsonl`, { owned: false, quiet: true });
    }
    return true;
  }

  async start() {
    if (this.state === 'running') return;
    if (this.state === 'done') this.newRun();
    this.state = 'running';
    this.pauseRequested = false;
    this.updateButtons();
    const t0 = performance.now();
    let lastTree = t0;
    let lastYield = t0;
    try {
      while (this.state === 'running') {
        if (!(await this.turnOnce())) {
          this.state = 'done';
          break;
        }
        const now = performance.now();
        if (now - lastTree > TREE_EVERY_MS) {
          lastTree = now;
          this.app.refresh();
        }
        this.scheduleChart();
        if (this.pauseRequested) {
          this.state = 'paused';
          this.pauseRequested = false;
        }
        // Let the page paint and take clicks (pause) now and then.
        if (now - lastYield > 30) {
          lastYield = now;
          await yieldToPage();
        }
      }
    } catch (err) {
      this.fail(err);
    }
    this.redraw();
  }

  /** The explorer, the chart, the buttons and the status line, after a run or a step. */
  redraw() {
    this.app.refresh();
    this.drawChart();
    this.updateButtons();
    this.statusLine();
  }

  pause() {
    if (this.state === 'running') this.state = 'paused';
    this.updateButtons();
  }

  async stepOnce() {
    if (this.state === 'running') return;
    try {
      const more = await this.turnOnce();
      this.state = more ? 'paused' : 'done';
    } catch (err) {
      this.fail(err);
    }
    this.redraw();
  }

  /** Another session replaces the simulation's in the explorer: stop and forget the run. */
  detach() {
    if (!this.maintainer) return;
    this.reset();
    this.state = 'idle';
    this.drawChart();
    this.updateButtons();
    this.setStatus('The run was closed: another session was opened.');
  }

  fail(err) {
    this.state = 'error';
    this.error = errorText(err);
    this.setStatus(`The simulation stopped: ${this.error}`, 'error');
  }

  newRun() {
    this.reset();
    this.state = 'idle';
    this.drawChart();
    this.updateButtons();
    this.setStatus('A new run starts with Start or Step.');
  }

  statusLine() {
    if (this.state === 'error') return;
    const markers = markersFromEvents(this.events);
    const count = (kind) => markers.filter((m) => m.kind === kind).length;
    const last = this.turns[this.turns.length - 1];
    const words = { idle: 'ready', running: 'running', paused: 'paused', done: 'done' };
    this.setStatus(
      `${words[this.state] ?? this.state} · ${fmt(this.turns.length)} requests in ${fmt(Math.round(this.runMs))} ms · ` +
        `${count('compaction')} compactions, ${count('prune')} prunes, ${count('recovery')} recoveries, ` +
        `${count('promotion')} promotions${last ? ` · last request ${fmt(last.promptTokens)} / ${fmt(last.window)} tokens` : ''}`,
    );
  }

  // ----- chart, markers, undo ---------------------------------------------------------------

  scheduleChart() {
    if (this.chartScheduled) return;
    this.chartScheduled = true;
    requestAnimationFrame(() => {
      this.chartScheduled = false;
      this.drawChart();
      this.statusLine();
    });
  }

  drawChart() {
    this.timeline.render({ turns: this.turns, markers: markersFromEvents(this.events), selected: this.selectedEvent });
  }

  /** A marker was clicked: a compaction is selected in the tree and its report opens. */
  selectMarker(marker) {
    if (!marker) return;
    this.selectedEvent = marker.event;
    this.drawChart();
    if (marker.kind !== 'compaction') {
      this.app.setStatus(`${marker.kind} at request ${marker.turn}: see its report in the tooltip.`);
      return;
    }
    if (!marker.entryId) {
      this.app.setStatus(
        marker.method === 'shake'
          ? 'A shake rewrote heavy tool output in place: there is no compaction entry to select.'
          : 'A handoff started a new session: there is no compaction entry to select.',
      );
      return;
    }
    this.app.showCompaction(marker.entryId);
  }

  /** The report the maintainer gave for compaction entry `entryId`, if this run made it. */
  reportFor(entryId) {
    for (const e of this.events) if (e.type === 'auto_compaction_end' && e.entryId === entryId) return e;
    return null;
  }

  /** Records that compaction `entryId` was undone (its marker turns hollow). */
  undone(entryId, leafBefore, leafAfter) {
    const e = this.reportFor(entryId);
    if (e) e.undone = true;
    this.undos.push({ entryId, leafBefore, leafAfter, turn: this.turns.length });
    this.drawChart();
  }

  /** What `window.__simulation` shows: a plain copy of the log. */
  snapshot() {
    return JSON.parse(
      JSON.stringify({
        state: this.state,
        error: this.error,
        config: this.config,
        runMs: this.runMs,
        sessionId: this.maintainer?.session.header.id ?? null,
        leafId: this.maintainer?.session.leafId ?? null,
        turns: this.turns,
        events: this.events,
        markers: markersFromEvents(this.events),
        undos: this.undos,
      }),
    );
  }
}
