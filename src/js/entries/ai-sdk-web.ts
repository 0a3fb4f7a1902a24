// Entry of `ctxfold/ai-sdk` for browsers and the default condition: as with `ctxfold` itself,
// `await init()` (exported here too) before the first call.

export * from '../ai-sdk/index.js';
export { init } from './web.js';
