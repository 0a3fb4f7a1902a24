// Node.js module hooks that load `*.wasm?module` imports the way Cloudflare's workerd and
// Vercel's edge runtime do: the default export is a compiled WebAssembly.Module.
// (Hooks run on their own thread: the module is compiled by the generated source, on the main one.)
import { fileURLToPath } from 'node:url';

export async function load(url, context, nextLoad) {
  const parsed = new URL(url);
  if (parsed.protocol === 'file:' && parsed.pathname.endsWith('.wasm') && parsed.search === '?module') {
    parsed.search = '';
    const file = fileURLToPath(parsed);
    return {
      format: 'module',
      shortCircuit: true,
      source:
        "import { readFileSync } from 'node:fs';\n" +
        `export default new WebAssembly.Module(readFileSync(${JSON.stringify(file)}));\n`,
    };
  }
  return nextLoad(url, context);
}
