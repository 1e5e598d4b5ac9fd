// What the write-ahead log and the snapshot store need of a store: named tables of binary
// values under ordered keys, written by transactions that commit in the order they are
// made. The service runs on LMDB (`lmdbStorage`, over `openStore` of store.ts); a
// deterministic simulation runs the same log and snapshot code on simulated storage
// (src/sim/storage.ts) that loses what was not durable when it "crashes".
//
// A storage may keep its snapshot tables apart from the log's (`snapshotTables`): on LMDB they
// are an environment of their own (store.ts, SNAPSHOT_DIR), so that a log commit never shares a
// transaction, a write thread's turn or an fsync with a snapshot's chunks.
//
// A storage may also keep snapshots outside its tables, where other processes over the same
// log read and write them: it then offers the newest such image at open (recovery starts from
// it when it is newer than the store's own) and is told of each snapshot the engine writes.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Database, Key, RootDatabase } from 'lmdb';
import { drawBytes } from './entropy.js';
import { openSnapshotStore, openStore, SNAPSHOT_DIR, StoreDamagedError } from './store.js';
import type { SnapshotImage } from './snapshot-image.js';

export type { Key };

/** A key range as lmdb reads it: `start` inclusive, `end` exclusive; reversed, from `start` down to `end`. */
export interface KeyRange<K extends Key> {
  start?: K;
  end?: K;
  reverse?: boolean;
  limit?: number;
}

/** A write's commit; with `flushed`, a second promise for its fsync (durable when both succeed). */
export type Written = Promise<boolean> & { flushed?: Promise<boolean> };

export interface StorageTable<K extends Key> {
  get(key: K): Buffer | undefined;
  /**
   * `views`: a value may be a view of a buffer that the iteration's next step reuses, for a
   * reader done with each value before it asks for the next (recovery's log replay): no copy
   * and no buffer of its own per value. A storage may give stable values either way.
   */
  getRange(range?: KeyRange<K>, views?: 'views'): Iterable<{ key: K; value: Buffer }>;
  getKeys(range?: KeyRange<K>): Iterable<K>;
  /** One transaction; `append` promises a key above every key in the table (lmdb's MDB_APPEND). */
  put(key: K, value: Buffer, options?: { append: true }): Written;
  /** Removes every key `remove` is called with inside `action`, in one transaction. */
  batch(action: () => void): Promise<boolean>;
  remove(key: K): void;
  /** Resolves once every transaction made so far is durable. */
  readonly flushed: Promise<boolean>;
  /** The largest value a put may carry (a replicated log's message size); absent: no limit the log must respect. */
  readonly maxValueBytes?: number;
  /**
   * Puts the log may have unresolved at once before it holds its next group back, so that
   * everything appended meanwhile goes in that group (lmdb's, where each put is a commit and
   * an fsync; a replicated log's, where each is a message for a quorum of servers). Absent:
   * a group every event-loop turn.
   */
  readonly maxPutsInFlight?: number;
}

/**
 * Byte strings kept beside the log (blob-store.ts): `put` resolves once the bytes are durable,
 * `remove` frees them (nothing to do when there are none).
 */
export interface BlobStore {
  put(key: string, bytes: Buffer): Promise<void>;
  get(key: string): Promise<Buffer | undefined>;
  remove(key: string): Promise<void>;
}

/** Named tables, as a storage and its snapshot tables each have them. */
export interface Tables {
  table<K extends Key>(name: string): StorageTable<K>;
}

export interface Storage extends Tables {
  /**
   * Where snapshots are written, apart from the log's tables; absent: in the storage's own
   * tables (the simulator's disk, a test's wrapper). Snapshots an older version left in the
   * storage's own tables are still read from there until the next one is written here.
   */
  readonly snapshotTables?: Tables;
  /** Waits for what was written, then closes. */
  close(): Promise<void>;
  /**
   * A snapshot of this log kept outside the store, which may be newer than the store's own:
   * recovery starts from it when it is, and the next snapshot written is full (the store's
   * own increments do not build on it).
   */
  readonly offeredImage?: SnapshotImage<unknown>;
  /** Told after each snapshot is written and the log trimmed through `seq`, with a reader of its image. */
  snapshotWritten?(seq: number, image: () => SnapshotImage<unknown>): void;
  /**
   * The blobs named `name`, where this storage keeps them as durable as its log (one whose
   * log is replicated elsewhere keeps them there too, for whoever reads the log next).
   * Absent: a table of the storage's own (TableBlobStore).
   */
  blobs?(name: string): BlobStore;
}

/** lmdb's put also takes put flags in an options object (here MDB_APPEND); its typings list only versions. */
type PutWithFlags<K> = (key: K, value: Buffer, flags?: { append: true }) => Written;

/**
 * lmdb hands a database's decoder the bytes in its shared read buffer when the decoder says it
 * copies what it keeps (`decoderCopies`); its typings list neither option.
 */
interface ViewDecoding {
  decoder: { decode(bytes: Buffer, size: number): Buffer };
  decoderCopies: true;
}

class LmdbTable<K extends Key> implements StorageTable<K> {
  /**
   * One commit at a time: a group waits for the one being synced and takes every entry
   * appended meanwhile. A group every turn, overlapping their syncs, made twice the commits
   * under a payment load (15 entries each against 29) and cost about a tenth more CPU a
   * payment, with no better latency (docs/bench.md, session 48).
   */
  readonly maxPutsInFlight = 1;
  readonly #db: Database<Buffer, K>;
  /** The same database read as views of lmdb's read buffer (`getRange(range, 'views')`), opened at the first such read. */
  #views: Database<Buffer, K> | undefined;
  readonly #openViews: () => Database<Buffer, K>;

  constructor(db: Database<Buffer, K>, openViews: () => Database<Buffer, K>) {
    this.#db = db;
    this.#openViews = openViews;
  }

  get(key: K): Buffer | undefined {
    return this.#db.get(key);
  }

  getRange(range?: KeyRange<K>, views?: 'views'): Iterable<{ key: K; value: Buffer }> {
    // A copy per value was a seventh of replaying a log of small entries, and its buffers
    // brought the collector's external-memory compactions.
    if (views === undefined) return this.#db.getRange(range);
    this.#views ??= this.#openViews();
    return this.#views.getRange(range);
  }

  getKeys(range?: KeyRange<K>): Iterable<K> {
    return this.#db.getKeys(range);
  }

  put(key: K, value: Buffer, options?: { append: true }): Written {
    const put = this.#db.put.bind(this.#db) as unknown as PutWithFlags<K>;
    return options === undefined ? put(key, value) : put(key, value, options);
  }

  batch(action: () => void): Promise<boolean> {
    return this.#db.batch(action);
  }

  remove(key: K): void {
    // Inside `batch`: part of its transaction, which the batch's promise reports on.
    void this.#db.remove(key);
  }

  get flushed(): Promise<boolean> {
    return this.#db.flushed;
  }
}

/** A table a read-only store does not have: nothing in it, and nothing can be written. */
function missingTable<K extends Key>(name: string): StorageTable<K> {
  const readOnly = (): never => {
    throw new Error(`the store has no ${name} table and is open read-only`);
  };
  return { get: () => undefined, getRange: () => [], getKeys: () => [], put: readOnly, batch: readOnly, remove: readOnly, flushed: Promise.resolve(true) };
}

/** A named database of `root` as a table. */
function lmdbTable<K extends Key>(root: RootDatabase, name: string): StorageTable<K> {
  // Read-only, lmdb answers undefined for a database the store does not have (one written
  // before it existed), where a writable open creates it empty: it reads as empty either way.
  const db = root.openDB<Buffer, K>({ name, encoding: 'binary' }) as Database<Buffer, K> | undefined;
  if (db === undefined) return missingTable(name);
  const viewing: ViewDecoding = { decoder: { decode: (bytes, size) => bytes.subarray(0, size) }, decoderCopies: true };
  return new LmdbTable(db, () => root.openDB<Buffer, K>({ name, encoding: 'binary', ...viewing }));
}

/**
 * LMDB as the engine's storage: each table a named database of binary values, the snapshot
 * tables in `snapshotRoot`'s environment when there is one (a store read-only from before
 * snapshots had their own has none).
 */
export class LmdbStorage implements Storage {
  readonly snapshotTables: Tables | undefined;

  constructor(
    readonly root: RootDatabase,
    readonly snapshotRoot?: RootDatabase,
  ) {
    this.snapshotTables = snapshotRoot === undefined ? undefined : { table: (name) => lmdbTable(snapshotRoot, name) };
  }

  table<K extends Key>(name: string): StorageTable<K> {
    return lmdbTable(this.root, name);
  }

  async close(): Promise<void> {
    try {
      await this.snapshotRoot?.close();
    } finally {
      await this.root.close();
    }
  }
}

/** The LMDB environments of `dataDir` (created if missing), the log's and the snapshots', opened with openStore's checks and checked to be a pair. */
export function openLmdbStorage(dataDir: string): LmdbStorage {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const root = openStore(dataDir);
  let snapshotRoot: RootDatabase | undefined;
  try {
    snapshotRoot = openSnapshotStore(dataDir);
    pairSnapshotStore(dataDir, root, snapshotRoot);
    return new LmdbStorage(root, snapshotRoot);
  } catch (err) {
    void snapshotRoot?.close();
    void root.close();
    throw err;
  }
}

/** Where each environment keeps the id of the pair they make. */
const PAIRING_TABLE = 'snapshot-pairing';
const PAIRING_KEY = 'pair';

function pairingOf(root: RootDatabase): Database<Buffer, string> {
  return root.openDB<Buffer, string>({ name: PAIRING_TABLE, encoding: 'binary' });
}

/**
 * Both environments name the pair they make, so that a snapshots/ directory of another store
 * (copied in, or restored from another backup) is refused instead of recovered from: its
 * snapshot could stand anywhere in this log. The log's environment is written first, so a
 * crash in between leaves the log named and the snapshots' environment unnamed, which the
 * next open names; a snapshots' environment that is named, or holds anything, while the log's
 * names no pair or another one, is not this store's.
 */
export function pairSnapshotStore(dataDir: string, root: RootDatabase, snapshotRoot: RootDatabase): void {
  const logSide = pairingOf(root);
  const snapshotSide = pairingOf(snapshotRoot);
  const logPair = logSide.get(PAIRING_KEY);
  const snapshotPair = snapshotSide.get(PAIRING_KEY);
  if (logPair !== undefined && snapshotPair !== undefined && logPair.equals(snapshotPair)) return;
  const snapshotsEmpty = snapshotPair === undefined && isEmpty(snapshotRoot);
  if ((logPair === undefined && !(snapshotPair === undefined && snapshotsEmpty)) || (logPair !== undefined && !snapshotsEmpty)) {
    throw new StoreDamagedError(join(dataDir, SNAPSHOT_DIR), "is not this store's snapshots (they name another pair, or this store's log names none)");
  }
  const pair = logPair ?? drawBytes(16);
  if (logPair === undefined) logSide.putSync(PAIRING_KEY, pair);
  snapshotSide.putSync(PAIRING_KEY, pair);
}

/** Whether an environment holds no named table but the pairing one (lmdb lists named databases as keys of the root). */
function isEmpty(root: RootDatabase): boolean {
  for (const key of root.getKeys()) if (key !== PAIRING_TABLE) return false;
  return true;
}
