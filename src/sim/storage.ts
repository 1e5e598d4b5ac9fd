// Simulated storage for the deterministic simulation: the engine's Storage (tables of
// ordered binary values written by transactions that commit in order), held in memory, with
// the failure model of a disk under LMDB.
//
// A transaction the process makes is pending until the simulator syncs it: only then is it
// applied, readable and durable, and its promises resolve (commit and fsync at once). Syncs
// go in order, as LMDB's commits do. At a crash the process's view dies (its pending writes
// never settle, whatever it still does goes nowhere) and the pending transactions are lost,
// except a prefix the disk got before the power went: the tail of a multi-part write (a log
// turn split into groups, a snapshot's chunks, a trim's batches) can be torn that way, never
// a transaction itself (LMDB commits are atomic). A value may also read back with a bit
// flipped (`flipBit`): recovery must refuse it, and the simulator checks that it did.
import type { Key, KeyRange, Storage, StorageTable, Written } from '../engine/storage.js';
import { immutableStored } from '../engine/format.js';

interface Stored {
  key: Key;
  value: Buffer;
}

/** A table's durable contents, with its keys sorted lazily for range reads. */
class TableContents {
  readonly byKey = new Map<string, Stored>();
  #sorted: Stored[] | undefined;
  /** The highest key, kept as puts come (the log's appends ask for it every time); undefined: not known. */
  #last: Key | undefined;
  #lastKnown = true;

  set(key: Key, value: Buffer | undefined): void {
    const id = keyId(key);
    if (value === undefined) {
      this.byKey.delete(id);
      if (this.#last !== undefined && keyId(this.#last) === id) this.#lastKnown = false;
    } else {
      this.byKey.set(id, { key, value });
      if (this.#lastKnown && (this.#last === undefined || compareKeys(key, this.#last) > 0)) this.#last = key;
    }
    this.#sorted = undefined;
  }

  lastKey(): Key | undefined {
    if (!this.#lastKnown) {
      this.#last = this.sorted().at(-1)?.key;
      this.#lastKnown = true;
    }
    return this.#last;
  }

  sorted(): Stored[] {
    this.#sorted ??= [...this.byKey.values()].sort((a, b) => compareKeys(a.key, b.key));
    return this.#sorted;
  }
}

interface Transaction {
  table: string;
  /** Puts (a value) and removals (undefined), in order. */
  writes: Array<[Key, Buffer | undefined]>;
  settle: (ok: boolean) => void;
}

/**
 * A value served with one bit flipped, until it is repaired: damage at rest, which the
 * process alive when it came (`since`) does not see (it reads back the lazy chunks it wrote
 * itself), and the next one's recovery meets.
 */
interface FlippedBit {
  table: string;
  key: string;
  bit: number;
  served: boolean;
  since: SimulatedStorage | undefined;
}

/** What the disk holds across the process's lives. */
export class SimulatedDisk {
  readonly #tables = new Map<string, TableContents>();
  #pending: Transaction[] = [];
  /** The live process's view; earlier ones are dead. */
  #view: SimulatedStorage | undefined;
  #flipped: FlippedBit | undefined;
  /** Pending transactions lost in crashes over the run, for the report. */
  readonly stats = { lost: 0 };

  /** A new process's view of the disk; the previous one dies. */
  open(): SimulatedStorage {
    this.#view?.die();
    this.#view = new SimulatedStorage(this);
    return this.#view;
  }

  get pendingCount(): number {
    return this.#pending.length;
  }

  /** Makes the oldest `count` pending transactions durable (all of them by default), in order. */
  sync(count = this.#pending.length): void {
    const done = this.#pending.splice(0, count);
    for (const transaction of done) this.#apply(transaction);
    for (const transaction of done) transaction.settle(true);
  }

  /**
   * The power goes: the live view dies, the first `survivors` pending transactions reach the
   * disk (unacknowledged: their promises never settle) and the rest are lost.
   */
  crash(survivors: number): void {
    this.#view?.die();
    this.#view = undefined;
    const pending = this.#pending;
    this.#pending = [];
    for (const transaction of pending.slice(0, survivors)) this.#apply(transaction);
    this.stats.lost += Math.max(0, pending.length - survivors);
  }

  /**
   * From now on `table`'s value number `pick` (modulo the values it has) reads back with bit
   * `bit` (modulo its length) flipped. Returns false when the table is empty.
   */
  flipBit(table: string, pick: number, bit: number): boolean {
    const values = [...(this.#tables.get(table)?.byKey.entries() ?? [])];
    if (values.length === 0) return false;
    const [key, stored] = values[pick % values.length]!;
    this.#flipped = { table, key, bit: bit % (stored.value.length * 8), served: false, since: this.#view };
    return true;
  }

  /** Ends the flipped bit; whether the damaged value was read meanwhile. */
  repair(): boolean {
    const served = this.#flipped?.served ?? false;
    this.#flipped = undefined;
    return served;
  }

  contents(table: string): TableContents {
    let contents = this.#tables.get(table);
    if (contents === undefined) {
      contents = new TableContents();
      this.#tables.set(table, contents);
    }
    return contents;
  }

  enqueue(transaction: Transaction): void {
    this.#pending.push(transaction);
  }

  /** The stored value as `view` reads it: a copy with the bit flipped when it is the damaged one, for a process started since. */
  served(table: string, stored: Stored, view: SimulatedStorage): Buffer {
    const flipped = this.#flipped;
    if (flipped === undefined || flipped.since === view || flipped.table !== table || flipped.key !== keyId(stored.key)) return stored.value;
    flipped.served = true;
    const copy = Buffer.from(stored.value);
    copy[flipped.bit >> 3]! ^= 1 << (flipped.bit & 7);
    return copy;
  }

  #apply(transaction: Transaction): void {
    const contents = this.contents(transaction.table);
    for (const [key, value] of transaction.writes) {
      // Never changed once written, and every read hands out this same buffer: decoded once (format.ts).
      if (value !== undefined) immutableStored(value);
      contents.set(key, value);
    }
  }
}

/** One process's view of the disk: dead after a crash, when nothing it does reaches the disk. */
export class SimulatedStorage implements Storage {
  readonly #disk: SimulatedDisk;
  #alive = true;

  constructor(disk: SimulatedDisk) {
    this.#disk = disk;
  }

  get alive(): boolean {
    return this.#alive;
  }

  die(): void {
    this.#alive = false;
  }

  table<K extends Key>(name: string): StorageTable<K> {
    return new SimulatedTable<K>(this.#disk, this, name);
  }

  async close(): Promise<void> {
    // Everything written was synced by the simulator before it closes the engine.
  }
}

/**
 * Never settles: a dead process waits forever. A new one each time: what waits on it (the
 * dead life's log, engine and state) goes with it, where a promise shared by every life
 * kept each crashed life reachable to the end of the run.
 */
function never(): Promise<boolean> {
  return new Promise<boolean>(() => undefined);
}

class SimulatedTable<K extends Key> implements StorageTable<K> {
  readonly #disk: SimulatedDisk;
  readonly #view: SimulatedStorage;
  readonly #name: string;
  /** Removals collected by the running `batch`. */
  #batch: Array<[Key, undefined]> | undefined;

  constructor(disk: SimulatedDisk, view: SimulatedStorage, name: string) {
    this.#disk = disk;
    this.#view = view;
    this.#name = name;
  }

  get(key: K): Buffer | undefined {
    if (!this.#view.alive) return undefined;
    const stored = this.#disk.contents(this.#name).byKey.get(keyId(key));
    return stored === undefined ? undefined : this.#disk.served(this.#name, stored, this.#view);
  }

  *getRange(range: KeyRange<K> = {}): Iterable<{ key: K; value: Buffer }> {
    for (const stored of this.#range(range)) yield { key: stored.key as K, value: this.#disk.served(this.#name, stored, this.#view) };
  }

  *getKeys(range: KeyRange<K> = {}): Iterable<K> {
    for (const stored of this.#range(range)) yield stored.key as K;
  }

  put(key: K, value: Buffer, options?: { append: true }): Written {
    if (options?.append === true) {
      const last = this.#disk.contents(this.#name).lastKey();
      if (last !== undefined && compareKeys(key, last) <= 0) throw new Error(`append of key ${keyId(key)} not above the last key ${keyId(last)}`);
    }
    const written: Written = this.#write([[key, value]]);
    written.flushed = written;
    return written;
  }

  batch(action: () => void): Promise<boolean> {
    const removals: Array<[Key, undefined]> = [];
    this.#batch = removals;
    try {
      action();
    } finally {
      this.#batch = undefined;
    }
    return this.#write(removals);
  }

  remove(key: K): void {
    if (this.#batch === undefined) throw new Error('remove outside a batch');
    this.#batch.push([key, undefined]);
  }

  get flushed(): Promise<boolean> {
    if (!this.#view.alive) return never();
    // Syncs go in order: an empty transaction made now is durable after every earlier one.
    return this.#disk.pendingCount === 0 ? Promise.resolve(true) : this.#write([]);
  }

  #write(writes: Array<[Key, Buffer | undefined]>): Promise<boolean> {
    if (!this.#view.alive) return never();
    return new Promise<boolean>((settle) => this.#disk.enqueue({ table: this.#name, writes, settle }));
  }

  *#range(range: KeyRange<K>): Generator<Stored> {
    if (!this.#view.alive) return;
    const sorted = this.#disk.contents(this.#name).sorted();
    const { start, end, reverse = false, limit = Infinity } = range;
    let yielded = 0;
    if (!reverse) {
      let i = start === undefined ? 0 : lowerBound(sorted, start);
      for (; i < sorted.length && yielded < limit; i++) {
        if (end !== undefined && compareKeys(sorted[i]!.key, end) >= 0) return;
        yielded++;
        yield sorted[i]!;
      }
      return;
    }
    // Reversed: from the last key at or below `start` down to (not including) `end`.
    let i = start === undefined ? sorted.length - 1 : upperBound(sorted, start) - 1;
    for (; i >= 0 && yielded < limit; i--) {
      if (end !== undefined && compareKeys(sorted[i]!.key, end) <= 0) return;
      yielded++;
      yield sorted[i]!;
    }
  }
}

/** A key as a map key: the engine's keys are numbers, strings and arrays of them. */
function keyId(key: Key): string {
  return JSON.stringify(key);
}

/** Type rank, then value: numbers, then strings, then arrays (element by element). */
function compareKeys(a: Key, b: Key): number {
  const rank = (k: Key): number => (typeof k === 'number' ? 0 : typeof k === 'string' ? 1 : Array.isArray(k) ? 2 : 3);
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      const c = compareKeys(a[i] as Key, b[i] as Key);
      if (c !== 0) return c;
    }
    return a.length - b.length;
  }
  throw new Error(`simulated storage does not order keys like ${keyId(a)}`);
}

/** The first index whose key is not below `key`. */
function lowerBound(sorted: readonly Stored[], key: Key): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compareKeys(sorted[mid]!.key, key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first index whose key is above `key`. */
function upperBound(sorted: readonly Stored[], key: Key): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compareKeys(sorted[mid]!.key, key) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
