// The async shell of compaction: `session.compact(options)`.
//
// The Rust core plans and commits (sans-IO) and decides retries (`retryStep`, spec: compaction
// §8.3); this module only awaits: the hooks (§8.8), the summarizer callbacks or the remote
// endpoint (§5.8, with the runtime's `fetch`), timers and the AbortSignal. The commit is the
// last step and the only one that writes, so any failure leaves the session as it was.
//
// A compaction walks a list of methods (`compaction.methodOrder`, §8.3, §8.6): a method that
// cannot run here is skipped, one that fails hands over to the next, and the result names the
// method that ran.

import type { Signal } from '../core/abort.js';
import { toJson } from '../core/args.js';
import { abortError, codedError, messageOf, statusOf, wrapError } from '../core/errors.js';
import type { WasmWalk } from '../core/glue.js';
import { requireRaw } from '../core/raw.js';
import type {
  CompactionAction,
  CompactionCommit,
  CompactionEvent,
  CompactionMethod,
  CompactionPlan,
  CompactionPreparation,
  CompactionProgress,
  CompactOptions,
  CompactOutcome,
  CompactReason,
  CompactResult,
  DropImagesResult,
  ErrorCode,
  HandoffResult,
  LlmMessage,
  LossReport,
  PlanOptions,
  SessionCore,
  SessionEntry,
  ShakeCompactResult,
  ShakeResult,
  ShakeRunOptions,
  SnapcompactArchiveOptions,
  Summarize,
  SummaryRequest,
} from '../core/session.js';
import { compactionOutcomeOf } from '../core/triggers.js';
import { nativeLanes } from '../providers/native-openai.js';
import { runAnthropic, runOpenaiNative } from './native.js';
import { cacheForecast, contextSnapshot } from './report.js';
import { shakeSession } from './shake.js';
import {
  type Candidate,
  callHook,
  defined,
  handlers,
  memberOf,
  pick,
  type SummarizeCalls,
  summarizeOne,
} from './summarizer.js';

/**
 * The options of a compaction as the runner reads them: `CompactOptions`, and what the
 * Maintainer passes besides (its calibration, its measure of the live context, the walk's
 * inputs of an automatic compaction).
 */
export interface RunOptions extends Omit<CompactOptions, 'signal'> {
  signal?: Signal | undefined;
  /** The walk's `remote` failed (the Maintainer starts the core's cooldown). @internal */
  onRemoteFailed?: (() => void) | undefined;
}

/** Sessions with a compaction in flight. */
const running = new WeakSet<SessionCore>();

/** The events' `action` of a method, as the core names it (spec: compaction §8.7); undefined for an unknown name. */
function actionOf(method: string): CompactionAction | undefined {
  return (requireRaw().compactionAction(method) as CompactionAction | undefined) ?? undefined;
}

function emit(hooks: RunOptions['hooks'], event: CompactionEvent): void {
  for (const f of handlers(hooks, 'onEvent')) {
    try {
      f(event);
    } catch {
      // Observers cannot stop a compaction.
    }
  }
}

/**
 * Reports progress of a long step (issue 41) to `onProgress` (the Maintainer turns it into its
 * `compaction_progress` event). Observers cannot stop a compaction.
 */
function progress(o: RunOptions, p: CompactionProgress): void {
  try {
    o.onProgress?.(p);
  } catch {
    // Observers cannot stop a compaction.
  }
}

/** Whether anyone listens to progress (the frames are then drawn one task at a time). */
function listens(o: RunOptions): boolean {
  return typeof o.onProgress === 'function';
}

/** Lets the runtime run other tasks (a timer's turn: a page paints, input is handled). */
function nextTask(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** The reading model's id, provider, window and input, from `model` (id or object) and the options. */
function modelOf(o: RunOptions) {
  const m = o.model;
  const object = m !== null && typeof m === 'object' ? m : undefined;
  return {
    id: typeof m === 'object' && m !== null ? m.id : m,
    provider: o.provider ?? object?.provider,
    contextWindow: o.contextWindow ?? object?.contextWindow,
    maxTokens: object?.maxTokens,
    input: o.input ?? object?.input,
  };
}

/** The summarizer callbacks of `o`, as summarizeOne's candidates. */
function callbacks(o: RunOptions): Candidate[] {
  const list: unknown[] = [o.summarize].flat();
  return list.filter((f): f is Summarize => typeof f === 'function').map((f) => ({ summarize: f }));
}

/** The remote endpoint (the host's, else the settings'), as summarizeOne's only candidate. */
function endpointOf(o: RunOptions): Candidate[] {
  const url = o.remoteEndpoint ?? o.settings?.remoteEndpoint;
  return typeof url === 'string' && url !== ''
    ? [{ remote: { url, headers: o.headers ?? {}, model: modelOf(o).id } }]
    : [];
}

/**
 * Whether a provider-native lane may serve `remote` for the model of `o` (`{model, provider,
 * settings}`): an OpenAI Responses lane, or Anthropic server compaction for an eligible Claude
 * model from `liveTokens` (spec: compaction §8.3, §13), as the core decides (`nativeLanes`).
 */
export function nativeLane(o: Parameters<typeof nativeLanes>[0], liveTokens?: number): boolean {
  try {
    return nativeLanes(o, liveTokens).usable;
  } catch {
    // Bad settings surface from the walk or the ContextManager with their own error.
    return false;
  }
}

/** A count for the walk: a finite non-negative number, else left out. */
function count(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
}

/**
 * The core's method walk of this compaction (spec: compaction §8.3, §8.6): which methods run,
 * in which order, what ends the walk. This module only reports what the host has: callbacks,
 * routes, the model, the live size in the provider's tokens.
 */
function newWalk(session: SessionCore, o: RunOptions): WasmWalk {
  const model = modelOf(o);
  const estimated = contextSnapshot(session).tokens;
  const methods: unknown[] | undefined = Array.isArray(o.methods) ? o.methods : undefined;
  const input: unknown[] | undefined = Array.isArray(model.input) ? [...model.input] : undefined;
  const walkInput = {
    reason: o.reason ?? 'manual',
    methods: methods?.filter((m) => typeof m === 'string'),
    explicit: typeof o.explicit === 'string' ? o.explicit : undefined,
    model: {
      provider: typeof model.provider === 'string' ? model.provider : '',
      id: typeof model.id === 'string' ? model.id : '',
      contextWindow: count(model.contextWindow),
      input: input?.filter((i) => typeof i === 'string'),
    },
    summarizer: callbacks(o).length > 0,
    remoteEndpoint: typeof o.remoteEndpoint === 'string' && o.remoteEndpoint !== '',
    nativeLane: nativeLane(o, o.liveTokens),
    remoteBlocked: Boolean(o.remoteBlocked),
    excludeSnapcompact: Boolean(o.excludeSnapcompact),
    customInstructions: typeof o.customInstructions === 'string' && o.customInstructions !== '',
    // An automatic handoff waits for the end of a turn (the core's rule; it asks the session).
    midTurn: session.turnUnderWay(),
    // The live context in the provider's tokens: the host's figure, else the core's estimate.
    liveTokens: count(o.liveTokens) ?? estimated,
    // The core's own estimate beside it: how far the host's figure runs above it.
    estimatedTokens: estimated,
    // The request overhead, in either spelling the options give it.
    overheadTokens: count(o.nonMessageTokens) ?? count(o.snapcompact?.nonMessageTokens),
    providerRatio: providerRatio(o),
    imageRatio: positiveRatio(o.imageRatio),
    // The host's clock (a handoff document saved to disk is named from it).
    now: o.now ?? Date.now(),
  };
  // The settings as given: the walk reads `strategy` and `enabled` there (spec: compaction §9.2).
  return new (requireRaw().WasmWalk)(JSON.stringify(walkInput), JSON.stringify(o.settings ?? {}));
}

/** What the `session.compacting` hooks add to a plan. */
type HookExtras = Pick<PlanOptions, 'extraContext' | 'promptOverride' | 'preserveData'>;

/** The session.compacting hooks' additions (context lines, prompt override, preserveData). */
async function hookExtras(
  session: SessionCore,
  o: RunOptions,
  preparation: CompactionPreparation,
  signal: Signal,
): Promise<HookExtras> {
  const extra: HookExtras = {};
  const context: string[] = [];
  for (const f of handlers(o.hooks, 'session.compacting')) {
    const answer = await callHook(f, { sessionId: session.header.id, preparation }, signal);
    if (Array.isArray(answer?.context)) context.push(...answer.context.filter((l) => typeof l === 'string'));
    if (typeof answer?.prompt === 'string') extra.promptOverride = answer.prompt;
    if (answer?.preserveData && typeof answer.preserveData === 'object') {
      extra.preserveData = { ...extra.preserveData, ...answer.preserveData };
    }
  }
  if (context.length) extra.extraContext = context;
  return extra;
}

/** A summary request as a candidate receives it (a handoff's carries the live turn's prefix). */
type Decorate = (r: SummaryRequest) => SummaryRequest;

/** The plumbing of one method's calls; `sequential`: one request after the other. */
interface MethodCalls extends SummarizeCalls {
  sequential?: boolean;
  /** Progress of each request (`summarizer` started/answered), with the method that asks. */
  report?: { method: CompactionMethod; to: (p: CompactionProgress) => void } | undefined;
}

/**
 * Answers every pending request of `work`, round by round: a round's requests in parallel, or
 * one after the other with `calls.sequential` (the remote endpoint: its first failure ends the
 * method, so a failing endpoint sees no more POSTs than one request's retry policy allows).
 */
async function answerAll(
  work: CompactionPlan,
  candidates: Candidate[],
  calls: MethodCalls,
  decorate: Decorate = (r) => r,
): Promise<void> {
  const { signal, wording, sequential, report } = calls;
  const ask = async (r: SummaryRequest) => {
    if (report === undefined) return summarizeOne(decorate(r), candidates, calls);
    const { method, to } = report;
    to({ phase: 'summarizer', state: 'started', requestId: r.id, method });
    const started = Date.now();
    const answer = await summarizeOne(decorate(r), candidates, calls);
    const durationMs = Math.max(0, Date.now() - started);
    to({
      phase: 'summarizer',
      state: 'answered',
      requestId: r.id,
      method,
      durationMs,
      chars: answer.text?.length ?? 0,
    });
    return answer;
  };
  while (!work.isComplete) {
    const pending = work.pending;
    if (pending.length === 0) throw codedError('E_SUMMARIZER', 'the plan is stuck without pending requests');
    type Outcome = PromiseSettledResult<Awaited<ReturnType<typeof summarizeOne>>>;
    let outcomes: Outcome[];
    if (sequential) {
      outcomes = [];
      for (const r of pending) {
        try {
          outcomes.push({ status: 'fulfilled', value: await ask(r) });
        } catch (reason) {
          outcomes.push({ status: 'rejected', reason });
          break;
        }
      }
    } else {
      outcomes = await Promise.allSettled(pending.map(ask));
    }
    if (signal.aborted) throw abortError();
    outcomes.forEach((outcome, i) => {
      const request = pending[i];
      if (request === undefined) return;
      if (outcome.status === 'rejected') {
        const err: unknown = outcome.reason;
        throw memberOf(err, 'code') ? err : wrapError('E_SUMMARIZER', wording(messageOf(err)), err);
      }
      if (!outcome.value.shrink) {
        work.answer(request.id, outcome.value.text);
        return;
      }
      try {
        work.retrySmaller(request.id);
      } catch (err) {
        throw wrapError('E_SUMMARIZER', wording(messageOf(err)), err);
      }
    });
  }
}

/** A summary request as a handoff sends it: the live turn's system prompt, tools and history. */
interface CachePrefixedRequest extends SummaryRequest {
  tools: NonNullable<CompactOptions['tools']>;
  toolChoice: 'none';
  messages: LlmMessage[];
}

/**
 * The handoff request as the live turn would send it (spec: compaction §5.9): the core builds
 * its members from the host's system prompt and tools and the session's LLM history
 * (`handoffRequestJson`); each pending request gets its own copy of them.
 */
function cachePrefixed(session: SessionCore, o: RunOptions): Decorate {
  const given = (v: unknown) => (v === undefined ? undefined : toJson(v ?? null));
  const fields = requireRaw().handoffRequestJson(
    toJson(session.toLlmMessages()),
    given(o.systemPrompt),
    given(o.tools),
    typeof o.customInstructions === 'string' ? o.customInstructions : undefined,
  );
  if (fields === undefined) return (r) => r;
  return (r): CachePrefixedRequest => ({
    ...r,
    ...(JSON.parse(fields) as Omit<CachePrefixedRequest, keyof SummaryRequest>),
  });
}

/** A step of the core's walk (`WasmWalk.poll`). */
type WalkStep =
  | { step: 'warn'; message: string; method: CompactionMethod | null }
  | {
      step: 'plan';
      method: CompactionMethod;
      strategy: NonNullable<CompactOptions['strategy']>;
      remoteEnabled: boolean;
    }
  | { step: 'shake'; preset: NonNullable<ShakeRunOptions['preset']> }
  | { step: 'rebuild'; limitTokens: number | null }
  | { step: 'dropImages' }
  | { step: 'summarize'; method: CompactionMethod; route: string; sequential: boolean; initiator: 'agent' | null }
  | { step: 'commit'; method: CompactionMethod; artifact: WalkArtifact | null }
  | { step: 'done'; method: CompactionMethod | null; remoteFailed: boolean }
  | { step: 'failed'; code: ErrorCode; message: string; errorMessage: string; remoteFailed: boolean }
  | { step: 'skipped'; why: 'off' | 'disabled' };

/** A document the walk's `commit` step saves through `saveArtifact` (a handoff's). */
interface WalkArtifact {
  name: string;
  kind: 'handoff';
}

/** A plan for the walk's `plan` step, with the hooks' additions `extra`. */
function planMethod(
  session: SessionCore,
  step: { strategy: NonNullable<CompactOptions['strategy']>; method: CompactionMethod; remoteEnabled?: boolean },
  o: RunOptions,
  extra: PlanOptions,
): CompactionPlan {
  const methodSettings = defined({ ...o.settings, strategy: step.strategy, remoteEnabled: step.remoteEnabled });
  const planOptions: PlanOptions = pick(o, ['customInstructions', 'leafId']);
  const model = modelOf(o);
  if (model.provider !== undefined) planOptions.provider = model.provider;
  if (model.contextWindow !== undefined) planOptions.contextWindow = model.contextWindow;
  if (model.maxTokens !== undefined) planOptions.maxTokens = model.maxTokens;
  // The reading model: a snapcompact commit resolves its archive from the plan.
  if (o.model !== undefined)
    planOptions.model = typeof o.model === 'string' ? o.model : defined({ id: o.model.id, api: o.model.api });
  return session.planCompaction(
    methodSettings,
    defined({ ...planOptions, ...extra, method: step.method === 'remote' ? ('remote' as const) : undefined }),
  );
}

/** The summarize-call plumbing of one method: signal, retry settings, call options, wording. */
function callsOf(o: RunOptions, signal: Signal): SummarizeCalls {
  return {
    signal,
    retryJson: o.retry === undefined ? undefined : JSON.stringify(o.retry),
    // Passed through to every summarize call (initiator override, session id, metadata).
    callOptions: pick(o, ['initiator', 'sessionId', 'metadata']),
    // A failure's message as the `auto_compaction_end` error text (spec §8.3 prefixes).
    wording: (message) => requireRaw().compactionErrorMessage(o.reason ?? 'manual', message),
  };
}

/** The walk's `summarize` step on the plan `work` (a native lane commits: its result, else undefined). */
async function summarize(
  session: SessionCore,
  step: Extract<WalkStep, { step: 'summarize' }>,
  work: CompactionPlan,
  o: RunOptions,
  signal: Signal,
): Promise<CompactionCommit | null | undefined> {
  if (step.route === 'native') {
    // Provider-native lanes (spec §5.7 step 1, §13): the OpenAI lanes for a Responses model,
    // else Anthropic server compaction; `null` when neither applies to this plan.
    return (await runOpenaiNative(work, o, signal)) ?? (await runAnthropic(work, o, signal)) ?? null;
  }
  const calls = callsOf(o, signal);
  // The walk says how the route's requests go and who started them (the host's option wins).
  const callOptions = step.initiator === null ? calls.callOptions : { initiator: step.initiator, ...calls.callOptions };
  const candidates = step.route === 'endpoint' ? endpointOf(o) : callbacks(o);
  // A handoff is asked as the live turn (spec: compaction §5.9).
  const decorate = step.method === 'handoff' ? cachePrefixed(session, o) : undefined;
  const report = listens(o) ? { method: step.method, to: (p: CompactionProgress) => progress(o, p) } : undefined;
  await answerAll(work, candidates, { ...calls, callOptions, sequential: step.sequential, report }, decorate);
  return undefined;
}

/** A handoff's commit: the new session and its document. */
interface HandoffCommit {
  entryId: null;
  handoff: true;
  session: SessionCore;
  document: string;
  fromExtension: false;
  tokensAfter?: undefined;
}

/** What a step of the walk committed. */
type Committed = (CompactionCommit & { session?: undefined; method?: CompactionMethod | null }) | HandoffCommit;

/** `{now}` of a commit, left out when the host gave none. */
function nowOption(o: RunOptions): { now?: number } {
  return o.now === undefined ? {} : { now: o.now };
}

/** The walk's `commit` step: snapcompact prints its frames, a handoff starts the new session. */
async function commit(
  session: SessionCore,
  walk: WasmWalk,
  step: { method: CompactionMethod; artifact: WalkArtifact | null },
  work: CompactionPlan,
  o: RunOptions,
  signal: Signal,
): Promise<Committed> {
  if (step.method === 'snapcompact') {
    // No summarizer: the commit prints the history onto frames (spec: snapcompact §9.2). The
    // plan carries the reading model, so a plain plan/commit archives the same; `snapcompact`
    // only overrides (and the request's own tokens narrow the frame cap).
    const snapcompact = archiveOptions(walk, work, o);
    if (listens(o)) await drawFrames(session, work, snapcompact, o, signal);
    return session.commitCompaction(work, { snapcompact, ...nowOption(o) });
  }
  if (step.method === 'handoff') {
    // An empty document fails in summarizeOne, so the walk falls back to the next method.
    const next = session.commitHandoff(work, {
      ...(o.handoffSessionId === undefined ? {} : { sessionId: o.handoffSessionId }),
      ...nowOption(o),
    });
    const first = next.entries()[0];
    const content = first !== undefined && 'content' in first ? first.content : undefined;
    const document = typeof content === 'string' ? content : '';
    // The walk says whether the document is saved, and under which name (spec: compaction §5.9).
    if (o.saveArtifact && step.artifact) {
      await callHook(o.saveArtifact, { ...step.artifact, text: document }, signal);
    }
    return { entryId: null, handoff: true, session: next, document, fromExtension: false };
  }
  return session.commitCompaction(work, nowOption(o));
}

/**
 * Draws the frames of a snapcompact commit of `work` one task at a time (issue 41), reporting
 * `frames` progress k of n; the commit that follows takes them (its bytes are those of a commit
 * alone). A plan the core cannot lay out is left to the commit, which throws the same error.
 */
async function drawFrames(
  session: SessionCore,
  work: CompactionPlan,
  snapcompact: SnapcompactArchiveOptions,
  o: RunOptions,
  signal: Signal,
): Promise<void> {
  let frames: ReturnType<SessionCore['snapcompactFrames']>;
  try {
    frames = session.snapcompactFrames(work, { snapcompact });
  } catch {
    return;
  }
  try {
    const total = frames.count;
    progress(o, { phase: 'frames', done: 0, total });
    for (let k = 0; k < total; k++) {
      await nextTask();
      if (signal.aborted) throw abortError();
      frames.render(k);
      progress(o, { phase: 'frames', done: k + 1, total });
    }
  } finally {
    frames.free();
  }
}

/**
 * The snapcompact options of a commit of `work`: the host's, with the request overhead, what
 * the provider counts above the core's estimate of the kept tail, and its text and image rates
 * (the walk works them out), so that the frame cap, the fit and the reduction tests read the
 * real window.
 */
function archiveOptions(walk: WasmWalk, work: CompactionPlan, o: RunOptions): SnapcompactArchiveOptions {
  // The walk's figures (the host's overhead among them) stand in for the host's own.
  const fit: { nonMessageTokens: number; textRatio: number; imageRatio: number } = JSON.parse(
    walk.archiveFitJson(work.preparation.estimatedTokens.recentMessages),
  );
  return { ...o.snapcompact, ...fit };
}

/**
 * The walk's `rebuild` step (the dead-end rescue's first tier, spec: compaction §8.3): the
 * core plans the rebuild of the latest snapcompact archive and commits it with fewer frames,
 * under the walk's limit. The commit, or undefined when the core refused (nothing to rebuild,
 * no smaller archive).
 */
function rebuildArchive(
  session: SessionCore,
  walk: WasmWalk,
  step: { limitTokens: number | null },
  o: RunOptions,
): CompactionCommit | undefined {
  let work: CompactionPlan | undefined;
  try {
    work = planMethod(session, { strategy: 'snapcompact', method: 'snapcompact' }, o, { rebuildArchive: true });
    const archive = archiveOptions(walk, work, o);
    if (typeof step.limitTokens === 'number') archive.limitTokens = step.limitTokens;
    return session.commitCompaction(work, { snapcompact: archive, ...nowOption(o) });
  } catch {
    // The core's refusal: the walk goes on with the shake.
    return undefined;
  } finally {
    work?.free();
  }
}

/** The host's measure of the live context after a commit or a shake, if it has one. */
function measured(o: RunOptions): number | undefined {
  return typeof o.measureLive === 'function' ? o.measureLive() : undefined;
}

/** The stable code of a thrown value (E_SUMMARIZER for a plain Error). */
function codeOf(err: unknown): string {
  const code = memberOf(err, 'code');
  return typeof code === 'string' ? code : 'E_SUMMARIZER';
}

/** A shake of the walk, as the result reports it. */
type WalkShake = ShakeResult & { rescue?: true };

/** What the walk resolves before `runCompaction` adds the report: a commit, a handoff or a shake. */
interface WalkResult {
  entryId: string | null;
  method?: CompactionMethod | null;
  preparation?: CompactionPreparation | null;
  loss?: LossReport | undefined;
  shake?: WalkShake;
  imagesDropped?: DropImagesResult;
  remoteFailed?: true;
  framesOmitted?: number;
  session?: SessionCore | undefined;
}

/**
 * Runs the core's walk (spec: compaction §8.3): poll a step, do it, report the outcome. The
 * walk decides which method runs, which comes next, what ends the walk, when to shake.
 */
async function run(
  session: SessionCore,
  o: RunOptions,
  signal: Signal,
  walk: WasmWalk,
  first: WalkStep,
): Promise<WalkResult> {
  // The step `runCompaction` polled (a warning is given once), then the walk's.
  let polled: WalkStep | undefined = first;
  const plans: CompactionPlan[] = [];
  // Shakes applied during the walk (they rewrite lines in place; a later method sees them).
  let shaken: WalkShake | undefined;
  // The images the dead-end rescue's last tier dropped (in place too): `{removed, entries}`.
  let imagesDropped: DropImagesResult | undefined;
  // The hooks' additions, and the preparation the hooks saw (the first plan's).
  let extra: HookExtras | undefined;
  let preparation: CompactionPreparation | null = null;
  let work: CompactionPlan | undefined;
  let committed: Committed | undefined;
  let last: unknown;
  const fail = (err: unknown): [string, string] => {
    last = err;
    return [codeOf(err), messageOf(err)];
  };
  try {
    for (;;) {
      if (signal.aborted) throw abortError();
      const step: WalkStep = polled ?? JSON.parse(walk.poll());
      polled = undefined;
      switch (step.step) {
        case 'warn':
          emit(o.hooks, {
            type: 'compaction_warning',
            message: step.message,
            ...(step.method ? { method: step.method } : {}),
          });
          break;
        case 'plan': {
          try {
            work = planMethod(session, step, o, extra ?? {});
          } catch (err) {
            if (signal.aborted) throw abortError();
            walk.planFailed(...fail(err));
            break;
          }
          plans.push(work);
          if (extra === undefined) {
            // The preparation is the same for every summarizing method: the hooks see it once.
            preparation = work.preparation;
            extra = {};
            for (const f of handlers(o.hooks, 'session_before_compact')) {
              // `branchEntries` (pi's event field) is parsed only when the hook reads it.
              const event = {
                preparation,
                get branchEntries(): SessionEntry[] {
                  return session.branchEntries();
                },
                ...pick(o, ['customInstructions']),
                signal,
              };
              const answer = await callHook(f, event, signal);
              if (answer?.cancel === true) {
                throw codedError('E_CANCELLED', 'Compaction cancelled by a session_before_compact hook');
              }
              if (answer?.compaction !== undefined && answer.compaction !== null) {
                committed = {
                  ...session.commitExtensionCompaction(work, answer.compaction, nowOption(o)),
                  method: null,
                };
                break;
              }
            }
            if (committed !== undefined) {
              walk.planned();
              walk.extensionCommitted();
              break;
            }
            extra = await hookExtras(session, o, preparation, signal);
            if (Object.keys(extra).length > 0) {
              work = planMethod(session, step, o, extra);
              plans.push(work);
            }
          }
          walk.planned();
          break;
        }
        case 'shake': {
          // `session.shake()`, called below the public Session: the same runner and core call.
          const options = shakeOptions(o, signal, step.preset, walk.thresholdTokens());
          const r = await shakeSession(session, options, (config, now) => session._shakeNow(config, now));
          const dropped = r.toolResultsDropped + r.blocksDropped;
          if (dropped > 0) {
            const report: WalkShake = step.preset === 'rescue' ? { ...r, rescue: true } : r;
            shaken = shaken ? combinedShake(shaken, report) : report;
          }
          walk.shaken(dropped, r.tokensFreed ?? 0, measured(o));
          break;
        }
        case 'dropImages': {
          // The dead-end rescue's last tier (spec: compaction §8.3): the core strips the
          // images of the branch; the walk re-tests progress.
          const r = session.dropImages(o.leafId === undefined ? {} : { leafId: o.leafId });
          if (r.removed > 0) imagesDropped = r;
          walk.imagesDropped(r.removed, measured(o));
          break;
        }
        case 'rebuild': {
          const rebuilt = rebuildArchive(session, walk, step, o);
          if (rebuilt === undefined) walk.rebuildFailed();
          else {
            committed = rebuilt;
            walk.rebuilt(rebuilt.tokensAfter ?? 0, measured(o));
          }
          break;
        }
        case 'summarize': {
          try {
            if (work === undefined) throw codedError('E_SUMMARIZER', 'the walk summarizes without a plan');
            const native = await summarize(session, step, work, o, signal);
            if (native === null) walk.nativeUnavailable();
            else if (native !== undefined) {
              committed = native;
              walk.committed(native.tokensAfter ?? 0, measured(o));
            } else walk.summarized();
          } catch (err) {
            if (memberOf(err, 'code') === 'E_ABORTED') throw err;
            if (signal.aborted) throw abortError();
            walk.methodFailed(...fail(err), statusOf(err) ?? statusOf(memberOf(err, 'cause')));
          }
          break;
        }
        case 'commit': {
          try {
            if (work === undefined) throw codedError('E_SUMMARIZER', 'the walk commits without a plan');
            committed = await commit(session, walk, step, work, o, signal);
          } catch (err) {
            if (memberOf(err, 'code') === 'E_ABORTED') throw err;
            if (signal.aborted) throw abortError();
            walk.methodFailed(...fail(err), undefined);
            break;
          }
          walk.committed(committed.tokensAfter ?? 0, committed.session ? undefined : measured(o));
          break;
        }
        case 'done': {
          const flags: { remoteFailed?: true } = step.remoteFailed ? { remoteFailed: true } : {};
          if (step.remoteFailed) o.onRemoteFailed?.();
          const images = imagesDropped ? { imagesDropped } : {};
          if (committed === undefined) {
            return {
              entryId: null,
              method: 'shake',
              shake: shaken ?? noShake(),
              preparation: null,
              ...images,
              ...flags,
            };
          }
          // What the commit left the model (issue 38 item 4), from the plan it committed.
          const loss = work ? (committed.session ?? session).lossReport(work) : undefined;
          // Object.assign, not a spread: a commit's `compactionEntry` is read only when asked.
          return Object.assign(
            committed,
            { method: step.method, preparation, loss },
            shaken ? { shake: shaken } : {},
            images,
            flags,
          ) as WalkResult;
        }
        case 'skipped':
          // Only ever the first step, which `runCompaction` answers.
          throw codedError('E_SETTINGS', 'the compaction walk was skipped after it started');
        default: {
          if (step.remoteFailed) o.onRemoteFailed?.();
          // The thrown value itself when it carries the code (its cause and status stay with it).
          const err: unknown =
            last !== undefined && memberOf(last, 'code') === step.code
              ? last
              : wrapError(step.code, step.message, last);
          if (err !== null && typeof err === 'object') {
            // A shake that ran stays applied (like a prune): the error says what it elided.
            if (shaken) Object.assign(err, { shake: shaken });
            if (imagesDropped) Object.assign(err, { imagesDropped });
            if (step.remoteFailed) Object.assign(err, { remoteFailed: true });
          }
          throw err;
        }
      }
    }
  } finally {
    for (const p of plans) p.free();
  }
}

/** The options of a shake the walk runs: the preset, the model's threshold (the automatic preset scales to it), and the host's `saveArtifact`, signal, clock and leaf. */
function shakeOptions(
  o: RunOptions,
  signal: Signal,
  preset: NonNullable<ShakeRunOptions['preset']>,
  thresholdTokens: number | undefined,
): ShakeRunOptions {
  return defined({ preset, thresholdTokens, saveArtifact: o.saveArtifact, signal, now: o.now, leafId: o.leafId });
}

/** The report of a rescue that elided nothing (its image drop was the reduction). */
function noShake(): WalkShake {
  return {
    mode: 'elide',
    toolResultsDropped: 0,
    blocksDropped: 0,
    thinkingBlocksDropped: 0,
    tokensFreed: 0,
    artifactId: null,
    entries: [],
    rescue: true,
  };
}

/** Two shakes of one walk as one report: counts added, entries joined, the later one's artifact and flags. */
function combinedShake(a: WalkShake, b: WalkShake): WalkShake {
  const sum = {
    entries: [...new Set([...(a.entries ?? []), ...(b.entries ?? [])])],
    toolResultsDropped: (a.toolResultsDropped ?? 0) + (b.toolResultsDropped ?? 0),
    blocksDropped: (a.blocksDropped ?? 0) + (b.blocksDropped ?? 0),
    thinkingBlocksDropped: (a.thinkingBlocksDropped ?? 0) + (b.thinkingBlocksDropped ?? 0),
    tokensFreed: (a.tokensFreed ?? 0) + (b.tokensFreed ?? 0),
  };
  return { ...a, ...b, ...sum };
}

/**
 * The provider's tokens per token of the core's estimate (`o.providerRatio`, the Maintainer's
 * calibration; undefined when unknown, which the core reads as any rate a provider may count).
 * The walk reads the core's figures through it, as `liveTokens` and `nonMessageTokens` already are.
 */
function providerRatio(o: RunOptions): number | undefined {
  return typeof o.providerRatio === 'number' ? o.providerRatio : undefined;
}

/** A ratio the caller passed, or 1 when it is not a positive number. */
function positiveRatio(r: unknown): number {
  return typeof r === 'number' && Number.isFinite(r) && r > 0 ? r : 1;
}

/** `o` with its `strategy` option written into the settings, where the walk reads it. */
function withStrategy(o: RunOptions): RunOptions {
  return o.strategy === undefined ? o : { ...o, settings: { ...o.settings, strategy: o.strategy } };
}

/**
 * Runs a compaction without its start/end events and returns the commit with its `report`
 * (the Maintainer words the events itself). The core's walk decides (spec: compaction §9.2):
 * a reason other than `manual` with strategy `off` (or `enabled: false`) resolves `{skipped}`
 * and changes nothing, before the E_BUSY check; a strategy other than `off` is walked first
 * unless `methods` is given.
 */
export async function runCompaction(session: SessionCore, options: RunOptions): Promise<CompactOutcome> {
  const o = withStrategy({ ...options });
  const reason: CompactReason = o.reason ?? 'manual';
  const walk = newWalk(session, o);
  let release = false;
  try {
    const first: WalkStep = JSON.parse(walk.poll());
    if (first.step === 'skipped') return { skipped: first.why, method: null, reason };
    if (running.has(session)) throw codedError('E_BUSY', 'Compaction already in progress');
    running.add(session);
    release = true;
    return await walkCompaction(session, o, reason, walk, first);
  } finally {
    if (release) running.delete(session);
    walk.free();
  }
}

/** `runCompaction` once the walk runs: the walk, then the report and the `session_compact` hooks. */
async function walkCompaction(
  session: SessionCore,
  o: RunOptions,
  reason: CompactReason,
  walk: WasmWalk,
  first: WalkStep,
): Promise<CompactOutcome> {
  const signal: Signal = o.signal ?? new AbortController().signal;
  try {
    if (signal.aborted) throw abortError();
    const before = contextSnapshot(session);
    const result = await run(session, o, signal, walk, first);
    const after = contextSnapshot(result.session ?? session, { byKind: true });
    // Taken off in place, not by a rest spread: `compactionEntry` stays unread until asked for.
    const { preparation, loss } = result;
    delete result.preparation;
    delete result.loss;
    const outcome = Object.assign(result, {
      report: {
        method: result.method ?? null,
        reason,
        tokensBefore: before.tokens,
        tokensAfter: after.tokens,
        entriesSummarized: preparation
          ? preparation.messagesToSummarize.length + preparation.turnPrefixMessages.length
          : 0,
        tokensByKind: after.byKind,
        imagesOmitted: Math.max(0, before.images - after.images),
        framesOmitted: result.framesOmitted ?? 0,
        pruned: 0,
        shakeTokensFreed: result.shake?.tokensFreed ?? 0,
        lost: loss?.lost ?? [],
        anchored: loss?.anchored ?? [],
      },
    }) as CompactResult | HandoffResult | ShakeCompactResult;
    // Where the request changed and what that costs the provider's cache (the core's figures):
    // the entries the walk rewrote or appended; a handoff's new session is new from its start.
    const changed = result.session
      ? []
      : [result.entryId, ...(result.shake?.entries ?? []), ...(result.imagesDropped?.entries ?? [])].filter(
          (id): id is string => typeof id === 'string',
        );
    if (result.session || changed.length > 0) {
      const freed = Math.max(0, before.tokens - after.tokens);
      const m = typeof o.model === 'object' ? o.model : undefined;
      const priced = { provider: m?.provider ?? o.provider, api: m?.api };
      const cache = cacheForecast(result.session ?? session, changed, freed, priced);
      if (cache !== null) Object.assign(outcome.report, cache);
    }
    // Every result reaches the hook, a shake's too (its declared event names the two commits).
    const onCompact = handlers(o.hooks, 'session_compact') as Array<(event: typeof outcome) => unknown>;
    for (const f of onCompact) await callHook(f, outcome, signal).catch(() => {});
    return outcome;
  } catch (caught) {
    throw memberOf(caught, 'code') === 'E_ABORTED' ? abortError('Compaction') : caught;
  }
}

/**
 * Runs a whole compaction of `session` (see `CompactOptions` in the types). Rejects with a
 * coded Error; nothing is appended then. Automatic reasons emit `auto_compaction_start` and
 * `auto_compaction_end` through `hooks.onEvent`, naming the method that ran.
 */
export async function compactSession(session: SessionCore, options: RunOptions | undefined): Promise<CompactOutcome> {
  const o: RunOptions = options ?? {};
  const reason = o.reason ?? 'manual';
  const auto = reason !== 'manual';
  let action: CompactionAction = 'context-full';
  // Only automatic compactions have events: a manual one builds no walk to name the action.
  if (auto) {
    try {
      // The method the walk tries first names the action (the settings' strategy picks it).
      const { explicit: _given, ...rest } = withStrategy(o);
      const w = newWalk(session, rest);
      const first: string | undefined = JSON.parse(w.methodsJson())[0];
      w.free();
      const named = first === undefined ? undefined : actionOf(first);
      if (named !== undefined) action = named;
    } catch {
      // Bad settings surface from runCompaction with their own error.
    }
    emit(o.hooks, { type: 'auto_compaction_start', reason, action });
  }
  try {
    const result = await runCompaction(session, o);
    if (auto) {
      emit(o.hooks, {
        type: 'auto_compaction_end',
        action: (result.method ? actionOf(result.method) : action) ?? action,
        aborted: false,
        willRetry: Boolean(o.willRetry),
        skipped: 'skipped' in result && result.skipped !== undefined,
        // Any result (the declared event names the two commits).
        result: result as CompactResult | HandoffResult,
      });
    }
    return result;
  } catch (err) {
    if (auto) {
      const message = memberOf(err, 'message');
      emit(o.hooks, {
        type: 'auto_compaction_end',
        action,
        // Which errors abort a compaction is the core's (`CompactionOutcome::of_error`).
        aborted: compactionOutcomeOf(err).status === 'aborted',
        willRetry: false,
        ...(typeof message === 'string' ? { errorMessage: message } : {}),
      });
    }
    throw err;
  }
}
