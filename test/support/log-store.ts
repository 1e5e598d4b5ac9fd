// Fault injection at the store: the real LMDB store, with every put to the write-ahead
// log passed through a wrapper that may change what the engine sees of its commit.
import type { Database, DatabaseOptions, RootDatabase } from 'lmdb';
import { openStore } from '../../src/engine/store.js';

/** lmdb's write promise; with `separateFlushed` it carries a second one for the fsync. */
export type Written = Promise<boolean> & { flushed?: Promise<boolean> };

/** An `openStore` whose log database hands each put's `Written` to `wrap` first. */
export function storeWithLogPuts(wrap: (written: Written) => Written): (dir: string) => RootDatabase {
  return (dir) =>
    new Proxy(openStore(dir), {
      get(root, prop, receiver) {
        if (prop !== 'openDB') return Reflect.get(root, prop, receiver) as unknown;
        return (options: DatabaseOptions & { name: string }): Database => {
          const db = root.openDB(options);
          if (options.name !== 'log') return db;
          return new Proxy(db, {
            get(target, dbProp, dbReceiver) {
              if (dbProp !== 'put') return Reflect.get(target, dbProp, dbReceiver) as unknown;
              return (...args: Parameters<Database['put']>): Written => wrap(target.put(...args) as Written);
            },
          });
        };
      },
    });
}
