// Entry of `ctxfold/ai-sdk` for the "workerd" condition: the module is set up by ./workerd.js, as
// for `ctxfold` itself, then the AI SDK integration is exported (and `init`, which resolves at once).

export * from '../ai-sdk/index.js';
export { init } from './workerd.js';
