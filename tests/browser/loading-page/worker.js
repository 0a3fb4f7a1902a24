// A module worker of the loading test page: it takes a compiled WebAssembly.Module from the
// page and sets the browser entry up from it (`initSync` or `await init`), then answers.
import { init, initSync, Session, version } from '/pkg/entries/web.js';

self.onmessage = async ({ data: { module, how, jsonl } }) => {
  const calls = [];
  for (const name of ['compile', 'compileStreaming', 'instantiate', 'instantiateStreaming']) {
    const original = WebAssembly[name];
    WebAssembly[name] = function (...args) {
      calls.push(`${name}(${args[0] instanceof WebAssembly.Module ? 'module' : typeof args[0]})`);
      return original.apply(this, args);
    };
  }
  if (how === 'initSync') initSync(module);
  else await init(module);
  const session = Session.fromJsonl(jsonl);
  self.postMessage({
    how,
    isModule: module instanceof WebAssembly.Module,
    version: version(),
    entries: session.size,
    text: session.toLlmMessages()[0].content,
    // The message formats come with the browser entry's module graph.
    converted: Session.fromMessages([{ role: 'user', content: 'hi' }], { format: 'openai-chat' }).toMessages({
      format: 'anthropic',
    }).messages,
    calls,
  });
};
