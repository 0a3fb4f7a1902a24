// The public API of the package, what `import … from 'ctxfold'` gives in every runtime: each
// entry (node, web, workerd) sets the WebAssembly module up its runtime's way and re-exports
// this module, with its own `init`. Names are listed, not `export *`-ed from the modules
// below, so that a helper exported for the package's own modules never becomes public by
// accident (tests/js/exports.test.mjs holds the shipped list to the declared one).

// The errors' codes and shape.
export type { CtxfoldError, ErrorCode } from '../core/errors.js';
// The core: the wrappers over the wasm session and plans, and the functions over the core.
export {
  adaptKeepRecentTokens,
  CompactionPlan,
  estimateTokens,
  NavigationPlan,
  readToolSupersedeKey,
  reserveTokens,
  resolveSettings,
  shouldCompact,
  thresholdTokens,
  usageContextTokens,
  version,
  wasmMemoryBytes,
} from '../core/session.js';
// snapcompact: shapes, billing, text pipeline and PNG frames.
export * from '../core/snapcompact.js';
// The trigger state machine: when to compact, retry, promote, warn or continue (its types,
// then its values).
export type * from '../core/triggers.js';
export {
  CONTINUE_DELAY_MS,
  ContextManager,
  classifyError,
  compactionErrorMessage,
  compactionMethods,
  INCOMPLETE_RECOVERY_MAX_RETRIES,
  isContextOverflow,
  windowBudgets,
} from '../core/triggers.js';
// The data types: messages, entries, options, settings, results.
export type * from '../core/types.js';
// SDK replies in: a provider SDK's response or thrown API error as the reply afterResponse takes.
export type * from '../formats/responses.js';
export { fromError, fromResponse } from '../formats/responses.js';
// Ready summarizers from a provider SDK's client and a model name.
export type * from '../formats/summarizers.js';
export { anthropicSummarizer, geminiSummarizer, openAISummarizer } from '../formats/summarizers.js';
// The context tools the model can call (recall_history, context_status): their definitions in
// each message format, and running a call.
export type * from '../formats/tools.js';
export { contextToolDefinitions, contextTools } from '../formats/tools.js';
// Message formats: Session.fromMessages / appendMessages / toMessages.
export type * from '../formats/types.js';
// Inline imaging: old tool results and system-prompt text sent as frames, request by request.
export type * from '../runner/inline.js';
export { InlineImager } from '../runner/inline.js';
// The runner that carries the trigger decisions out around each provider request.
export type * from '../runner/maintainer.js';
export { Maintainer } from '../runner/maintainer.js';
// The session: the core's operations, the formats and the runs that await.
export { Session } from '../runner/session.js';
export type { ContextToolFigures } from '../runner/tools.js';
export { runContextTool } from '../runner/tools.js';
// Session stores: the contract between `session.changes()` and a store (docs/guide/storage.md).
export type * from '../storage/types.js';
