// Entry of `ctxfold/ai-sdk` for the "node" condition: the module is set up by ./node.js, as
// for `ctxfold` itself, then the AI SDK integration is exported (and `init`, which resolves at once).

export * from '../ai-sdk/index.js';
export { init } from './node.js';
