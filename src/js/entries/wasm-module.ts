// The type of a `.wasm?module` import (entries/workerd.ts): Cloudflare's and Vercel's bundlers
// turn it into a compiled WebAssembly.Module. An ambient declaration for the compiler only: no
// declaration the package ships imports it (workerd.d.ts names only the API), and its emitted
// JavaScript is empty.
declare module '*.wasm?module' {
  const compiled: WebAssembly.Module;
  export default compiled;
}
