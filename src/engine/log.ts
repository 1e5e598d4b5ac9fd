// The write-ahead log: every accepted message is one entry, keyed by a gapless,
// increasing sequence (written in lmdb append mode), stored versioned and checksummed
// (format.ts) and verified on replay. Entries are committed in groups: every
// entry appended in one event-loop turn shares one transaction and one fsync, and lmdb
// starts the next group while the previous one syncs. A reply waits for `whenDurable(seq)`.
//
// The in-memory state is applied before its entry is durable (so an actor does not wait
// for the disk between messages); replies, and reads, wait for durability instead. If a
// flush fails, memory is ahead of disk and the process stops: recovery then restores
// exactly what was acknowledged.
import type { Database, RootDatabase } from 'lmdb';
import { decodeStored, encodeStored, StoreCorruptError } from './format.js';

export interface LogEntry<E> {
  seq: number;
  /** Clock reading (ms) at which the entry's messages were decided. */
  at: number;
  events: E[];
}

/** Entries waiting for their flush are bounded; past this, new work is refused (429). */
export const MAX_PENDING_ENTRIES = 50_000;

export class LogFullError extends Error {
  constructor() {
    super('write-ahead log backlog is full');
  }
}

interface Waiter {
  seq: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

/** lmdb's write promise; with `separateFlushed` it carries a second one for the fsync. */
type Written = Promise<boolean> & { flushed?: Promise<boolean> };
/** lmdb's put also takes put flags in an options object (here MDB_APPEND); its typings list only versions. */
type PutWithFlags = (key: number, value: Buffer, flags: { append: true }) => Written;

export class WriteAheadLog<E> {
  readonly #db: Database<Buffer, number>;
  readonly #put: PutWithFlags;
  #lastSeq: number;
  #durableSeq: number;
  #waiters: Waiter[] = [];
  #failure: Error | undefined;
  readonly #onFatal: (err: Error) => void;
  /** The newest write of the current event-loop turn: its flush covers the whole group. */
  #tail: { seq: number; written: Written } | undefined;
  #tailHooked = false;
  /** Flush statistics, for the bench and the health report. */
  flushes = 0;
  flushedEntries = 0;

  constructor(root: RootDatabase, onFatal: (err: Error) => void) {
    this.#db = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
    this.#put = this.#db.put.bind(this.#db) as unknown as PutWithFlags;
    this.#onFatal = onFatal;
    let last = 0;
    for (const key of this.#db.getKeys({ reverse: true, limit: 1 })) last = key;
    this.#lastSeq = last;
    this.#durableSeq = last;
  }

  get lastSeq(): number {
    return this.#lastSeq;
  }

  get durableSeq(): number {
    return this.#durableSeq;
  }

  get pendingCount(): number {
    return this.#lastSeq - this.#durableSeq;
  }

  hasRoom(): boolean {
    return this.pendingCount < MAX_PENDING_ENTRIES && this.#failure === undefined;
  }

  /** After a snapshot whose log prefix was trimmed away, numbering continues after it. */
  resumeAfter(seq: number): void {
    if (this.#lastSeq < seq) {
      this.#lastSeq = seq;
      this.#durableSeq = seq;
    }
  }

  /**
   * Assigns the next sequence and hands the entry to lmdb, which encodes it now and
   * commits every write of this event-loop turn in one transaction (the group). The
   * group is durable when the flush of its last write is.
   */
  append(at: number, events: E[]): number {
    if (this.#failure !== undefined) throw this.#failure;
    const seq = ++this.#lastSeq;
    const entry: LogEntry<E> = { seq, at, events };
    this.#tail = { seq, written: this.#put(seq, encodeStored(entry), { append: true }) };
    if (!this.#tailHooked) {
      this.#tailHooked = true;
      setImmediate(() => this.#hookTail());
    }
    return seq;
  }

  #hookTail(): void {
    this.#tailHooked = false;
    const tail = this.#tail;
    if (tail === undefined) return;
    this.#tail = undefined;
    // With `separateFlushed`, lmdb resolves `flushed` even when the commit itself failed
    // and rejects only the commit promise: the group is durable when both succeeded.
    const flushed = tail.written.flushed ?? tail.written;
    Promise.all([tail.written, flushed]).then(
      ([committed]) => {
        if (committed) this.#flushedThrough(tail.seq);
        else this.#fail(new Error(`lmdb refused the write of entry ${tail.seq}`));
      },
      (err: unknown) => this.#fail(err),
    );
  }

  #flushedThrough(seq: number): void {
    // Commits are serial, so a flushed group implies every earlier one.
    if (seq <= this.#durableSeq) return;
    this.flushes++;
    this.flushedEntries += seq - this.#durableSeq;
    this.#durableSeq = seq;
    const still: Waiter[] = [];
    for (const waiter of this.#waiters) {
      if (waiter.seq <= seq) waiter.resolve();
      else still.push(waiter);
    }
    this.#waiters = still;
  }

  #fail(err: unknown): void {
    if (this.#failure !== undefined) return;
    const failure = err instanceof Error ? err : new Error(String(err));
    this.#failure = failure;
    // Nothing after the failure is acknowledged.
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiters) waiter.reject(failure);
    this.#onFatal(failure);
  }

  /** Resolves once every entry up to `seq` is on disk. */
  whenDurable(seq: number): Promise<void> {
    if (seq <= this.#durableSeq) return Promise.resolve();
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    return new Promise((resolve, reject) => this.#waiters.push({ seq, resolve, reject }));
  }

  /** Resolves when everything appended so far is durable. */
  drain(): Promise<void> {
    return this.whenDurable(this.#lastSeq);
  }

  /** Entries after `seq`, in order and verified: the tail that recovery replays. */
  *readAfter(seq: number): Generator<LogEntry<E>> {
    for (const { key, value } of this.#db.getRange({ start: seq + 1 })) yield decodeEntry<E>(key, value);
  }

  countAfter(seq: number): number {
    return this.#db.getKeysCount({ start: seq + 1 });
  }

  /**
   * Removes entries up to and including `seq` (covered by a durable snapshot). Keys are
   * consecutive sequences, so they are removed by number, without a scan, at most
   * TRIM_CHUNK per batch: no long stretch on the event loop.
   */
  async trimThrough(seq: number): Promise<number> {
    let first: number | undefined;
    for (const key of this.#db.getKeys({ limit: 1 })) first = key;
    if (first === undefined || first > seq) return 0;
    for (let from = first; from <= seq; from += TRIM_CHUNK) {
      const to = Math.min(seq, from + TRIM_CHUNK - 1);
      // A batch: the removals run in lmdb's write thread, not on the event loop.
      await this.#db.batch(() => {
        for (let key = from; key <= to; key++) this.#db.remove(key);
      });
    }
    return seq - first + 1;
  }
}

/** Log entries removed per batch when the log is trimmed. */
const TRIM_CHUNK = 2_000;

/** Verifies and decodes one stored entry; every format version is read here. */
export function decodeEntry<E>(seq: number, bytes: Uint8Array): LogEntry<E> {
  const where = `log entry ${seq}`;
  const entry = decodeStored(bytes, where) as LogEntry<E>;
  if (entry === null || typeof entry !== 'object' || entry.seq !== seq || typeof entry.at !== 'number' || !Array.isArray(entry.events)) {
    throw new StoreCorruptError(where, 'not a log entry for this sequence');
  }
  return entry;
}
