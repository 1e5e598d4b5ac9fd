// Reading a store without changing it (inspect.ts says how and why): the store opened
// read-only, and what it holds, its log values and its snapshot layouts, each verified as
// recovery verifies it.
import { join } from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import { StoreCorruptError } from './format.js';
import { decodeGroup, logTable, type LogEntry } from './log.js';
import { LmdbStorage, type Storage, type StorageTable } from './storage.js';
import { SnapshotStore, type SnapshotImage } from './snapshot.js';
import { DATA_FILE, inspectStore, SNAPSHOT_DIR, STORE_MAP_BYTES } from './store.js';

/** There is no store to read in the directory. */
export class NoStoreError extends Error {
  constructor(dataDir: string, state: string) {
    super(`${join(dataDir, DATA_FILE)} ${state}: there is no store to read`);
    this.name = 'NoStoreError';
  }
}

/**
 * The LMDB environment of `dataDir`, read-only, after the checks of `inspectStore` (a
 * truncated data.mdb is refused with StoreDamagedError before LMDB maps it). The map size is
 * the service's, so a store the service grows while this reads stays within the map.
 */
export function openStoreReadOnly(dataDir: string): RootDatabase {
  const contents = inspectStore(dataDir);
  if (contents.kind === 'missing') throw new NoStoreError(dataDir, 'does not exist');
  if (contents.kind === 'zero-length') throw new NoStoreError(dataDir, 'is empty (0 bytes)');
  return open({ path: dataDir, noSubdir: false, readOnly: true, mapSize: STORE_MAP_BYTES });
}

/** The snapshots' environment of `dataDir`, read-only; undefined when there is none yet (a store of an older version). */
function openSnapshotStoreReadOnly(dataDir: string): RootDatabase | undefined {
  const dir = join(dataDir, SNAPSHOT_DIR);
  const contents = inspectStore(dir);
  if (contents.kind === 'missing' || contents.kind === 'zero-length') return undefined;
  return open({ path: dir, noSubdir: false, readOnly: true, mapSize: STORE_MAP_BYTES });
}

/** Runs `read` on the store of `dataDir` opened read-only, and closes it again. */
export async function withStore<R>(dataDir: string, read: (store: StoreReader) => R): Promise<R> {
  const root = openStoreReadOnly(dataDir);
  let storage: LmdbStorage;
  try {
    storage = new LmdbStorage(root, openSnapshotStoreReadOnly(dataDir));
  } catch (err) {
    await root.close();
    throw err;
  }
  try {
    const reader = new StoreReader(storage);
    // The log's read transaction starts first: the service switches a snapshot's manifest
    // before it trims the log under it, so a snapshot read after the log is never older
    // than what the log read has lost to a trim.
    reader.firstSeq();
    return read(reader);
  } finally {
    await storage.close();
  }
}

/** One stored log value: a commit group (format version 2), or one entry (version 1). */
interface LogValue {
  key: number;
  bytes: Buffer;
}

/** What one opened store holds: its log values and its snapshot layouts. */
export class StoreReader {
  readonly log: StorageTable<number>;
  readonly #storage: Storage;
  #snapshots: SnapshotStore<unknown> | undefined;
  /** The loaded snapshot: undefined until loaded, null when there is none. */
  #image: SnapshotImage<unknown> | null | undefined;

  constructor(storage: Storage) {
    this.#storage = storage;
    this.log = logTable(storage);
  }

  /** The snapshot layouts; opening them reads and verifies the manifest (StoreCorruptError when damaged). */
  get snapshots(): SnapshotStore<unknown> {
    this.#snapshots ??= new SnapshotStore<unknown>(this.#storage);
    return this.#snapshots;
  }

  /** The latest complete snapshot, loaded and verified as recovery loads it (once); undefined when there is none. */
  snapshot(): SnapshotImage<unknown> | undefined {
    this.#image ??= this.snapshots.load() ?? null;
    return this.#image ?? undefined;
  }

  /** The latest snapshot's sequence: from the manifest when the current layout has one, else by loading an older layout. */
  snapshotSeq(): number | undefined {
    return this.snapshots.manifest?.seq ?? this.snapshot()?.seq;
  }

  /** The stored log values in sequence order, undecoded. */
  *values(): Generator<LogValue> {
    for (const { key, value } of this.log.getRange()) yield { key, bytes: value };
  }

  /** The first sequence in the log, undefined when it is empty: a value's key is its first entry's. */
  firstSeq(): number | undefined {
    for (const key of this.log.getKeys({ limit: 1 })) return key;
    return undefined;
  }

  /** The key of the last log value (the first sequence it holds), undefined when the log is empty. */
  lastKey(): number | undefined {
    for (const key of this.log.getKeys({ reverse: true, limit: 1 })) return key;
    return undefined;
  }

  /** The last sequence in the log (its last value decoded and verified), undefined when it is empty. */
  lastSeq(): number | undefined {
    for (const { key, value } of this.log.getRange({ reverse: true, limit: 1 })) return decodeGroup(key, value).at(-1)!.seq;
    return undefined;
  }

  /**
   * The verified entries with sequences from `from` through `to`, in order, each following the
   * one before (StoreCorruptError names the first that does not). `complete`: the first must
   * be `from` and the last `to`; otherwise the range is what the log holds of it.
   */
  *entries<E>(from: number, to: number, complete: boolean): Generator<LogEntry<E>> {
    // The value holding `from` may start before it: a group holds many entries.
    let start = from;
    for (const key of this.log.getKeys({ start: from, reverse: true, limit: 1 })) start = key;
    let expected: number | undefined = complete ? from : undefined;
    for (const { key, value } of this.log.getRange({ start })) {
      if (key > to) break;
      for (const entry of decodeGroup<E>(key, value)) {
        if (entry.seq < from) continue;
        if (entry.seq > to) break;
        if (expected !== undefined && entry.seq !== expected) throw continuityError(expected, entry.seq);
        expected = entry.seq + 1;
        yield entry;
      }
    }
    const next = expected ?? from;
    if (complete && next <= to) throw new StoreCorruptError(`log entry ${next}`, `missing (the log ends at ${next - 1})`);
  }
}

/** The entry after `expected - 1` is not `expected`. */
export function continuityError(expected: number, found: number): StoreCorruptError {
  return found > expected
    ? new StoreCorruptError(`log entry ${expected}`, `missing (the log goes on at ${found})`)
    : new StoreCorruptError(`log entry ${found}`, `stored twice (the log had reached ${expected - 1})`);
}
