// The write-ahead log: every accepted message is one entry, keyed by a gapless,
// increasing sequence, msgpack-encoded by lmdb. Entries are committed in groups: all
// appended while the previous group was being flushed share the next flush, so one fsync
// acknowledges many requests. A reply waits for `whenDurable(seq)`.
//
// The in-memory state is applied before its entry is durable (so an actor does not wait
// for the disk between messages); replies, and reads, wait for durability instead. If a
// flush fails, memory is ahead of disk and the process stops: recovery then restores
// exactly what was acknowledged.
import type { Database, RootDatabase } from 'lmdb';

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
}

export class WriteAheadLog<E> {
  readonly #db: Database<LogEntry<E>, number>;
  #lastSeq: number;
  #durableSeq: number;
  #pending: LogEntry<E>[] = [];
  #flushing = false;
  #scheduled = false;
  #waiters: Waiter[] = [];
  #failure: Error | undefined;
  readonly #onFatal: (err: Error) => void;
  /** Flush statistics, for the bench and the health report. */
  flushes = 0;
  flushedEntries = 0;

  constructor(root: RootDatabase, onFatal: (err: Error) => void) {
    this.#db = root.openDB<LogEntry<E>, number>({ name: 'log' });
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
    return this.#pending.length;
  }

  hasRoom(): boolean {
    return this.#pending.length < MAX_PENDING_ENTRIES && this.#failure === undefined;
  }

  /** After a snapshot whose log prefix was trimmed away, numbering continues after it. */
  resumeAfter(seq: number): void {
    if (this.#lastSeq < seq) {
      this.#lastSeq = seq;
      this.#durableSeq = seq;
    }
  }

  /** Assigns the next sequence and queues the entry for the next group commit. */
  append(at: number, events: E[]): number {
    if (this.#failure !== undefined) throw this.#failure;
    const seq = ++this.#lastSeq;
    this.#pending.push({ seq, at, events });
    if (!this.#flushing && !this.#scheduled) {
      this.#scheduled = true;
      // Let the rest of this turn's requests join the group before flushing.
      setImmediate(() => this.#flush());
    }
    return seq;
  }

  /** Resolves once every entry up to `seq` is on disk. */
  whenDurable(seq: number): Promise<void> {
    if (seq <= this.#durableSeq) return Promise.resolve();
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    return new Promise((resolve) => this.#waiters.push({ seq, resolve }));
  }

  /** Resolves when everything appended so far is durable. */
  drain(): Promise<void> {
    return this.whenDurable(this.#lastSeq);
  }

  async #flush(): Promise<void> {
    this.#scheduled = false;
    if (this.#pending.length === 0) return;
    this.#flushing = true;
    const batch = this.#pending;
    this.#pending = [];
    try {
      await this.#db.transaction(() => {
        for (const entry of batch) this.#db.put(entry.seq, entry);
      });
      await this.#db.flushed;
    } catch (err) {
      this.#failure = err instanceof Error ? err : new Error(String(err));
      this.#onFatal(this.#failure);
      return;
    }
    this.flushes++;
    this.flushedEntries += batch.length;
    this.#durableSeq = batch[batch.length - 1]!.seq;
    this.#releaseWaiters();
    this.#flushing = false;
    if (this.#pending.length > 0) this.#flush();
  }

  #releaseWaiters(): void {
    const durable = this.#durableSeq;
    const still: Waiter[] = [];
    for (const waiter of this.#waiters) {
      if (waiter.seq <= durable) waiter.resolve();
      else still.push(waiter);
    }
    this.#waiters = still;
  }

  /** Entries after `seq`, in order: the tail that recovery replays. */
  *readAfter(seq: number): Generator<LogEntry<E>> {
    for (const { value } of this.#db.getRange({ start: seq + 1 })) yield value;
  }

  countAfter(seq: number): number {
    return this.#db.getKeysCount({ start: seq + 1 });
  }

  /** Removes entries up to and including `seq` (covered by a durable snapshot). */
  async trimThrough(seq: number): Promise<number> {
    let removed = 0;
    const keys: number[] = [];
    for (const key of this.#db.getKeys({ end: seq + 1 })) keys.push(key);
    const CHUNK = 10_000;
    for (let i = 0; i < keys.length; i += CHUNK) {
      const slice = keys.slice(i, i + CHUNK);
      await this.#db.transaction(() => {
        for (const key of slice) this.#db.remove(key);
      });
      removed += slice.length;
    }
    return removed;
  }
}
