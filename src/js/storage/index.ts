// The session stores (docs/guide/storage.md): the contract between the journal
// (`session.changes()`) and every store, and the stores the package ships. The Node file store
// is exported by the Node entry (`import { createFileStore } from 'ctxfold'`).

export type { FileStore, FileStoreOptions } from './node-file.js';
export { createFileStore } from './node-file.js';
export type * from './types.js';
