// `node --import ./support/register-wasm-module.mjs`: installs wasm-module-hooks.mjs.
import { register } from 'node:module';

register('./wasm-module-hooks.mjs', import.meta.url);
