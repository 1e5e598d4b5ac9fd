// The write-ahead log: every accepted message is one entry, numbered by a gapless,
// increasing sequence and verified on replay. Entries are committed in groups: every entry
// appended in one event-loop turn goes into ONE lmdb value (keyed by its first sequence,
// written in append mode, versioned and checksummed by format.ts), one transaction and
// one fsync, and lmdb starts the next group while the previous one syncs. A table that
// takes few puts at once (a replicated log: `maxPutsInFlight`) gets its next group when a
// put resolves instead, holding every entry appended meanwhile. A reply waits for
// `whenDurable(seq)`. Stores written before groups hold one entry per value (format
// version 1); they read as groups of one.
//
// The in-memory state is applied before its entry is durable (so an actor does not wait
// for the disk between messages); replies, and reads, wait for durability instead. If a
// flush fails, memory is ahead of disk and the process stops: recovery then restores
// exactly what was acknowledged.
import { decodeVersioned, encodeStored, StoreCorruptError, type LaidOutVersion } from './format.js';
import { GroupLayout, readRows } from './log-layout.js';
import type { EngineObserver } from './report.js';
import type { EventLayout } from './state-machine.js';
import type { Storage, StorageTable } from './storage.js';

export interface LogEntry<E> {
  seq: number;
  /** Clock reading (ms) at which the entry's messages were decided. */
  at: number;
  events: E[];
}

/** Entries waiting for their flush are bounded; past this, new work is refused (429). */
export const MAX_PENDING_ENTRIES = 50_000;
/** Entries per log value: a larger turn's entries are split, so one value's encoding stays short. */
export const MAX_GROUP_ENTRIES = 2_048;

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

export class WriteAheadLog<E> {
  readonly #db: StorageTable<number>;
  #lastSeq: number;
  #durableSeq: number;
  #waiters: Waiter[] = [];
  #failure: Error | undefined;
  readonly #onFatal: (err: Error) => void;
  readonly #observer: EngineObserver | undefined;
  /** Entries appended in this event-loop turn, written as one group at its end. */
  #group: Array<LogEntry<E>> = [];
  /** When the group's first entry was appended (for the commit latency observed). */
  #groupStarted = 0;
  /** Puts not yet resolved, and whether a group waits for one of them (maxPutsInFlight). */
  #putsInFlight = 0;
  #groupHeld = false;
  /** Flush statistics, for the bench and the health report. */
  flushes = 0;
  flushedEntries = 0;

  /** The event types written in rows (format version 3), by type; undefined: every group as version 2. */
  readonly #layouts: ReadonlyMap<string, EventLayout> | undefined;

  /** Entries waiting for their flush past which appends are refused. */
  readonly #maxPending: number;

  constructor(storage: Storage, onFatal: (err: Error) => void, observer?: EngineObserver, layouts?: readonly EventLayout[], maxPending = MAX_PENDING_ENTRIES) {
    this.#db = logTable(storage);
    this.#maxPending = maxPending;
    this.#onFatal = onFatal;
    this.#observer = observer;
    this.#layouts = layouts === undefined || layouts.length === 0 ? undefined : new Map(layouts.map((layout) => [layout.type, layout]));
    let last = 0;
    for (const { key, value } of this.#db.getRange({ reverse: true, limit: 1 })) {
      const group = decodeGroup<E>(key, value);
      last = group[group.length - 1]!.seq;
    }
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
    return this.pendingCount < this.#maxPending && this.#failure === undefined;
  }

  /** After a snapshot whose log prefix was trimmed away, numbering continues after it. */
  resumeAfter(seq: number): void {
    if (this.#lastSeq < seq) {
      this.#lastSeq = seq;
      this.#durableSeq = seq;
    }
  }

  /**
   * Assigns the next sequence and queues the entry for this event-loop turn's group, which
   * is encoded and handed to lmdb (one value, one transaction) at the end of the turn. The
   * group is durable when its flush is. Events must not change after they are appended.
   */
  append(at: number, events: E[]): number {
    if (this.#failure !== undefined) throw this.#failure;
    const seq = ++this.#lastSeq;
    if (this.#group.length === 0) {
      this.#groupStarted = performance.now();
      setImmediate(() => this.#writeGroup());
    }
    this.#group.push({ seq, at, events });
    return seq;
  }

  #writeGroup(): void {
    const limit = this.#db.maxPutsInFlight;
    if (limit !== undefined && this.#putsInFlight >= limit) {
      // Written when a put resolves, with every entry appended until then.
      this.#groupHeld = true;
      return;
    }
    const group = this.#group;
    const firstAppended = this.#groupStarted;
    this.#group = [];
    try {
      for (let start = 0; start < group.length; start += MAX_GROUP_ENTRIES) this.#writePart(group.slice(start, start + MAX_GROUP_ENTRIES), firstAppended);
    } catch (err) {
      // An entry that cannot be encoded or stored: it is applied in memory, so nothing may go on.
      this.#fail(err);
    }
  }

  /** Writes `part` as one value, or as halves (recursively) while it is over the table's `maxValueBytes`. */
  #writePart(part: Array<LogEntry<E>>, firstAppended: number): void {
    const first = part[0]!.seq;
    const last = part[part.length - 1]!.seq;
    const stored = this.#encode(first, part);
    const limit = this.#db.maxValueBytes;
    if (limit !== undefined && stored.length > limit) {
      if (part.length === 1) throw new Error(`log entry ${first} is ${stored.length} bytes, over the ${limit} bytes one log value may hold`);
      const half = part.length >> 1;
      this.#writePart(part.slice(0, half), firstAppended);
      this.#writePart(part.slice(half), firstAppended);
      return;
    }
    const written = this.#db.put(first, stored, { append: true });
    this.#putsInFlight++;
    // With `separateFlushed`, lmdb resolves `flushed` even when the commit itself failed
    // and rejects only the commit promise: the group is durable when both succeeded.
    const flushed = written.flushed ?? written;
    Promise.all([written, flushed]).then(
      ([committed]) => {
        if (!committed) {
          this.#fail(new Error(`lmdb refused the write of entries ${first} to ${last}`));
          return;
        }
        // Only after a put that landed: a held group after a refused one would leave a gap.
        this.#putResolved();
        this.#flushedThrough(last);
        this.#observer?.groupDurable(part.length, stored.length, (performance.now() - firstAppended) / 1000);
      },
      (err: unknown) => this.#fail(err),
    );
  }

  /**
   * A group's value: version 2, or version 3 when some of its events fit a layout. A group
   * with no event of a laid-out type (every payment's) builds no GroupLayout.
   */
  #encode(first: number, part: Array<LogEntry<E>>): Buffer {
    const layouts = this.#layouts;
    let layout: GroupLayout | undefined;
    const entries = part.map((entry): StoredEntry<unknown> => {
      const { events } = entry;
      let placed: unknown[] = events;
      if (layouts !== undefined) {
        for (let i = 0; i < events.length; i++) {
          const event = events[i] as { type: string };
          if (!layouts.has(event.type)) continue;
          layout ??= new GroupLayout(layouts);
          const row = layout.place(event);
          if (row === event) continue;
          if (placed === events) placed = events.slice();
          placed[i] = row;
        }
      }
      return [entry.at, placed];
    });
    const laid = layout?.done();
    if (laid === undefined) return encodeStored([first, entries]);
    return encodeStored([first, entries, laid.layouts, laid.table, laid.rows], laid.version);
  }

  #putResolved(): void {
    this.#putsInFlight--;
    if (this.#groupHeld && this.#failure === undefined) {
      this.#groupHeld = false;
      this.#writeGroup();
    }
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
    // The group holding seq + 1 may start before it (a snapshot can fall inside a group).
    let start = seq + 1;
    for (const key of this.#db.getKeys({ start: seq + 1, reverse: true, limit: 1 })) start = key;
    // Views: each value is decoded whole (decodeGroup copies out all it keeps) before the next is read.
    for (const { key, value } of this.#db.getRange({ start }, 'views')) {
      for (const entry of decodeGroup<E>(key, value)) if (entry.seq > seq) yield entry;
    }
  }

  /** How many entries follow `seq` (for progress reports). */
  countAfter(seq: number): number {
    return Math.max(0, this.#lastSeq - seq);
  }

  /**
   * Removes the groups whose entries all lie at or before `seq` (covered by a durable
   * snapshot); a group that straddles it stays until a later trim.
   */
  async trimThrough(seq: number): Promise<number> {
    const keys: number[] = [];
    for (const key of this.#db.getKeys({ end: seq + 2 })) keys.push(key);
    // Each key but the last is followed by a group starting at most at seq + 1: it ends by seq.
    // The last group's end is known only from its successor, which lies past seq + 1.
    keys.pop();
    let removed = 0;
    const CHUNK = 2_000;
    for (let i = 0; i < keys.length; i += CHUNK) {
      const slice = keys.slice(i, i + CHUNK);
      // A batch: the removals run in lmdb's write thread, not on the event loop.
      await this.#db.batch(() => {
        for (const key of slice) this.#db.remove(key);
      });
      removed += slice.length;
    }
    return removed;
  }
}

/** The log's table: values keyed by the first sequence of the group they hold. */
export function logTable(storage: Storage): StorageTable<number> {
  return storage.table<number>('log');
}

/** A stored entry within its group: its sequence is the group's first plus its position. */
type StoredEntry<E> = [at: number, events: E[]];
type StoredGroup<E> = [first: number, entries: Array<StoredEntry<E>>];

/**
 * Verifies and decodes one stored log value into its entries; every format version is read
 * here (version 1: one `{seq, at, events}` entry per value).
 */
export function decodeGroup<E>(key: number, bytes: Uint8Array): Array<LogEntry<E>> {
  const where = `log entry ${key}`;
  const { version, value: decoded } = decodeVersioned(bytes, where);
  if (Array.isArray(decoded)) {
    const [first, entries] = decoded as StoredGroup<E>;
    if (first !== key || !Array.isArray(entries) || entries.length === 0) throw new StoreCorruptError(where, 'not a log group for this sequence');
    const rows = version === 3 || version === 4 ? laidOutEvents(version, decoded, where) : undefined;
    let placed = 0;
    const group = entries.map(([at, events], i) => {
      if (typeof at !== 'number' || !Array.isArray(events)) throw new StoreCorruptError(`log entry ${key + i}`, 'not a log entry');
      if (rows === undefined) return { seq: key + i, at, events };
      const [withRows, placedHere] = placeRows(events, rows, key + i);
      placed += placedHere;
      return { seq: key + i, at, events: withRows as E[] };
    });
    if (rows !== undefined && placed !== rows.length) throw new StoreCorruptError(where, `${rows.length - placed} rows no entry names`);
    return group;
  }
  const entry = decoded as LogEntry<E>;
  if (entry === null || typeof entry !== 'object' || entry.seq !== key || typeof entry.at !== 'number' || !Array.isArray(entry.events)) {
    throw new StoreCorruptError(where, 'not a log entry for this sequence');
  }
  return [entry];
}

/** The events a version 3 or 4 group's rows stand for (log-layout.ts). */
function laidOutEvents(version: LaidOutVersion, group: unknown[], where: string): unknown[] {
  try {
    return readRows(version, group[2], group[3], group[4]);
  } catch (err) {
    throw new StoreCorruptError(where, `undecodable rows (${err instanceof Error ? err.message : String(err)})`);
  }
}

/**
 * The entry's events with each row they name (by number) in its place, each row used once,
 * and how many it placed. A new array when it places any: a decoded value may be shared and
 * frozen (format.ts, immutableStored).
 */
function placeRows(events: unknown[], rows: unknown[], seq: number): [events: unknown[], placed: number] {
  let placed = 0;
  let out = events;
  for (let i = 0; i < events.length; i++) {
    const row = events[i];
    if (typeof row !== 'number') continue;
    const event = rows[row];
    if (event === undefined) throw new StoreCorruptError(`log entry ${seq}`, `names row ${row}, which the group does not have or gave already`);
    if (out === events) out = events.slice();
    out[i] = event;
    rows[row] = undefined;
    placed++;
  }
  return [out, placed];
}
