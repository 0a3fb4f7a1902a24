// The session stores' declarations, checked by the TypeScript compiler from consumers: a browser
// app (OPFS, IndexedDB, a host's own store against the `SessionStore` contract) and a Cloudflare
// Durable Object whose `ctx.storage` is typed as @cloudflare/workers-types declares it (a generic
// `exec<T>` returning a cursor): it must fit `createDurableObjectStore` as it is.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { outDir, testsDir } from './support/project.mjs';

const tsc = path.join(testsDir, 'node_modules', '.bin', 'tsc');
const strict = {
  strict: true,
  noEmit: true,
  skipLibCheck: false,
  target: 'es2022',
  types: [],
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  module: 'esnext',
  moduleResolution: 'bundler',
};

const consumers = {
  browser: {
    compilerOptions: { ...strict, customConditions: ['browser'], lib: ['es2022', 'dom'] },
    source: `
      import { createIndexedDbStore, createOpfsStore, init, Session, type SessionChanges, type SessionStore } from 'ctxfold';
      await init();
      const stores: SessionStore[] = [
        createIndexedDbStore('sessions'),
        createOpfsStore(),
        createOpfsStore({ directory: 'mine' }),
        createOpfsStore({ directory: await navigator.storage.getDirectory() }),
      ];
      // A host's own store against the contract.
      const mine: SessionStore = {
        async open(id) { return id === 'x' ? new Uint8Array(0) : null; },
        async save(_id, changes) { const n: number = changes.lineCount + changes.appended.length + changes.rewritten.length; void n; },
        async list() { return ['x']; },
      };
      const changes: SessionChanges = { since: null, mark: 'm', reset: true, rewritten: [], appended: ['{}'], lineCount: 1 };
      for (const store of [...stores, mine]) await store.save('x', changes);
      const bytes = await stores[0]!.open('x');
      const session = bytes === null ? Session.create() : Session.fromJsonl(bytes);
      // @ts-expect-error a directory is a name or a handle
      createOpfsStore({ directory: 1 });
      // @ts-expect-error a line count is a number
      const bad: SessionChanges = { ...changes, lineCount: '1' };
      export { session, bad };
    `,
  },
  workerd: {
    compilerOptions: { ...strict, customConditions: ['workerd'], lib: ['es2022'] },
    source: `
      import { createDurableObjectStore, type SessionStore } from 'ctxfold';
      // The shapes of @cloudflare/workers-types (SqlStorage, DurableObjectStorage), abridged.
      type SqlStorageValue = ArrayBuffer | string | number | null;
      interface SqlStorageCursor<T extends Record<string, SqlStorageValue>> {
        toArray(): T[];
        one(): T;
        [Symbol.iterator](): IterableIterator<T>;
      }
      interface SqlStorage {
        exec<T extends Record<string, SqlStorageValue>>(query: string, ...bindings: any[]): SqlStorageCursor<T>;
        get databaseSize(): number;
      }
      interface DurableObjectStorage {
        get sql(): SqlStorage;
        transactionSync<T>(closure: () => T): T;
        deleteAll(): Promise<void>;
      }
      declare const ctx: { storage: DurableObjectStorage };
      const store: SessionStore = createDurableObjectStore(ctx.storage);
      // @ts-expect-error the storage, not the context
      createDurableObjectStore(ctx);
      // @ts-expect-error createOpfsStore is browser-only
      import { createOpfsStore } from 'ctxfold';
      export { store, createOpfsStore };
    `,
  },
};

for (const [name, { compilerOptions, source }] of Object.entries(consumers)) {
  test(`storage types: a ${name} consumer type-checks`, () => {
    const dir = path.join(outDir, 'storage-types', name);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['main.ts'] }, null, 2));
    writeFileSync(path.join(dir, 'main.ts'), source);
    const res = spawnSync(tsc, ['-p', dir], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(res.status, 0, `tsc failed:\n${res.stdout}${res.stderr}`);
  });
}
