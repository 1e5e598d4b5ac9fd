// Fault injection at the store: the real LMDB store, with the writes to one of its tables
// passed through a wrapper that may change what the engine sees of them.
import { openLmdbStorage, type Key, type Storage, type StorageTable, type Tables, type Written } from '../../src/engine/storage.js';

export type { Written };

/** The LMDB store of a directory, with table `name` (of the log's tables or the snapshots') replaced by what `change` makes of it. */
function storeWithTable(name: string, change: <K extends Key>(table: StorageTable<K>) => StorageTable<K>): (dir: string) => Storage {
  const changing = (tables: Tables): Tables => ({
    table: <K extends Key>(tableName: string): StorageTable<K> => {
      const table = tables.table<K>(tableName);
      return tableName === name ? change(table) : table;
    },
  });
  return (dir) => {
    const storage = openLmdbStorage(dir);
    return { ...changing(storage), snapshotTables: changing(storage.snapshotTables!), close: () => storage.close() };
  };
}

/** The LMDB store of a directory, with table `name`'s puts made by `put` (given the table's own). */
export function storeWithPuts(name: string, put: <K extends Key>(table: StorageTable<K>, key: K, value: Buffer, options?: { append: true }) => Written): (dir: string) => Storage {
  return storeWithTable(name, (table) => delegatingTo(table, { put: (key, value, options) => put(table, key, value, options) }));
}

/** The LMDB store of a directory whose log table says a value may hold at most `maxValueBytes` (as a replicated log's does). */
export function storeWithLogValueLimit(maxValueBytes: number): (dir: string) => Storage {
  return storeWithTable('log', (table) => delegatingTo(table, { maxValueBytes }));
}

/** The LMDB store of a directory whose log table takes `maxPutsInFlight` puts at once (as a replicated log's does), each put handed to `put`. */
export function storeWithLogPutsInFlight(maxPutsInFlight: number, put: (table: StorageTable<number>, key: number, value: Buffer) => Written): (dir: string) => Storage {
  return storeWithTable('log', (table) => delegatingTo(table, { maxPutsInFlight, put: (key, value, options) => put(table as unknown as StorageTable<number>, key as number, value) }));
}

/** An `openStorage` whose log table hands each put's `Written` to `wrap` first. */
export function storeWithLogPuts(wrap: (written: Written) => Written): (dir: string) => Storage {
  return storeWithPuts('log', (table, key, value, options) => wrap(table.put(key, value, options)));
}

/** A table that does what `table` does, but for what `changed` gives (`flushed` stays read when asked). */
function delegatingTo<K extends Key>(table: StorageTable<K>, changed: Partial<Pick<StorageTable<K>, 'put' | 'maxValueBytes' | 'maxPutsInFlight'>>): StorageTable<K> {
  return {
    get: (key) => table.get(key),
    getRange: (range) => table.getRange(range),
    getKeys: (range) => table.getKeys(range),
    put: changed.put ?? ((key, value, options) => table.put(key, value, options)),
    batch: (action) => table.batch(action),
    remove: (key) => table.remove(key),
    get flushed() {
      return table.flushed;
    },
    ...(changed.maxValueBytes === undefined ? {} : { maxValueBytes: changed.maxValueBytes }),
    ...(changed.maxPutsInFlight === undefined ? {} : { maxPutsInFlight: changed.maxPutsInFlight }),
  };
}
