// Entry of `ctxfold/ai-sdk` for browsers and the default condition: as with `ctxfold` itself,
// `await init()` (from `ctxfold`) before the first call.
import './web.js';

export * from './ai-sdk.js';
