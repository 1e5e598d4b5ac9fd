// The engine: actors' mailboxes, the write-ahead log, snapshots, durable timers and
// idempotency records, around a domain state machine.
//
// A message is handled by `exec`: the engine holds the mailboxes of the actors the message
// names (in id order, so two messages that need the same actors cannot deadlock), asks the
// handler to decide with one clock reading, applies the resulting events to memory, appends
// them as ONE log entry, lets the next message in, and answers once the entry is durable.
// A handler that throws changes nothing.
import { mkdirSync } from 'node:fs';
import type { RootDatabase } from 'lmdb';
import { openStore } from './store.js';
import type { Clock } from './clock.js';
import { newId } from './ids.js';
import { WriteAheadLog, LogFullError, type LogEntry } from './log.js';
import { Mailbox, MailboxFullError } from './mailbox.js';
import { SnapshotStore } from './snapshot.js';
import { TimerTable } from './timers.js';
import type { DomainEvent, EngineEvent, IdempotencyRecord, StateMachine, Timer } from './state-machine.js';

export { LogFullError, MailboxFullError };

export class EngineClosedError extends Error {
  constructor() {
    super('the engine is closed');
  }
}

export interface Decision<E, R> {
  events: Array<E | EngineEvent<unknown>>;
  /** Renders the answer from the state after the events are applied. */
  reply: () => R;
}

export interface EngineOptions<E extends DomainEvent, T> {
  dataDir: string;
  clock: Clock;
  machine: StateMachine<E, T>;
  /** Snapshot after this many entries since the last one. */
  snapshotEveryEntries: number;
  /** ...or after this many ms, if anything was logged since. */
  snapshotEveryMs: number;
  /** Progress and warnings go here (stderr in the service). */
  report: (line: string) => void;
}

export interface RecoveryReport {
  snapshotSeq: number;
  replayed: number;
  lastSeq: number;
  ms: number;
}

/** How long idempotency records are honoured (CONTRACT.md: 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

type Entry<E> = LogEntry<E | EngineEvent<unknown>>;

export class Engine<E extends DomainEvent, T> {
  readonly clock: Clock;
  readonly #machine: StateMachine<E, T>;
  readonly #opts: EngineOptions<E, T>;
  #root!: RootDatabase;
  #log!: WriteAheadLog<E | EngineEvent<unknown>>;
  #snapshots!: SnapshotStore<T>;
  readonly #mailboxes = new Map<string, Mailbox>();
  readonly #timers: TimerTable<T>;
  /** Insertion-ordered by time, so expiry trims from the front. */
  readonly #idempotency = new Map<string, IdempotencyRecord>();
  #snapshotSeq = 0;
  #snapshotting: Promise<void> | undefined;
  #snapshotTicker: (() => void) | undefined;
  #closed = false;
  #recovering = false;

  constructor(opts: EngineOptions<E, T>) {
    this.#opts = opts;
    this.clock = opts.clock;
    this.#machine = opts.machine;
    this.#timers = new TimerTable<T>(opts.clock, (due) => this.#fireTimers(due));
  }

  get lastSeq(): number {
    return this.#log.lastSeq;
  }

  get durableSeq(): number {
    return this.#log.durableSeq;
  }

  get snapshotSeq(): number {
    return this.#snapshotSeq;
  }

  get pendingTimers(): number {
    return this.#timers.size;
  }

  get logStats(): { flushes: number; entries: number } {
    return { flushes: this.#log.flushes, entries: this.#log.flushedEntries };
  }

  /** Opens the store and rebuilds state: latest snapshot, then the log tail. */
  async open(): Promise<RecoveryReport> {
    const started = performance.now();
    mkdirSync(this.#opts.dataDir, { recursive: true });
    this.#root = openStore(this.#opts.dataDir);
    this.#log = new WriteAheadLog(this.#root, (err) => this.#fatal(err, 'log commit failed'));
    this.#snapshots = new SnapshotStore<T>(this.#root);

    this.#recovering = true;
    const image = this.#snapshots.load();
    let expected = 1;
    if (image !== undefined) {
      this.#machine.restore(image.records);
      for (const timer of image.timers) this.#timers.add(timer);
      for (const record of image.idempotency) this.#idempotency.set(record.key, record);
      this.#snapshotSeq = image.seq;
      expected = image.seq + 1;
      this.#log.resumeAfter(image.seq);
    }

    const total = this.#log.countAfter(this.#snapshotSeq);
    let replayed = 0;
    let lastReport = performance.now();
    for (const entry of this.#log.readAfter(this.#snapshotSeq)) {
      if (entry.seq !== expected) throw new Error(`log gap: expected entry ${expected}, found ${entry.seq}`);
      this.#applyEntry(entry);
      expected++;
      replayed++;
      const now = performance.now();
      if (now - lastReport >= 1000) {
        const rate = Math.round(replayed / ((now - started) / 1000));
        this.#opts.report(`recovery: replayed ${replayed}/${total} log entries (${rate} entries/s)`);
        lastReport = now;
      }
    }
    const violations = this.#machine.checkInvariants();
    if (violations.length > 0) throw new Error(`invariants violated after recovery:\n  ${violations.join('\n  ')}`);

    this.#recovering = false;
    this.#timers.arm();
    this.#startSnapshotTicker();
    const ms = Math.round(performance.now() - started);
    if (replayed > 0 || image !== undefined) {
      this.#opts.report(
        `recovery: snapshot at ${this.#snapshotSeq}, replayed ${replayed} entries in ${ms} ms` +
          (replayed > 0 ? ` (${Math.round(replayed / Math.max(ms / 1000, 0.001))} entries/s)` : ''),
      );
    }
    return { snapshotSeq: this.#snapshotSeq, replayed, lastSeq: this.#log.lastSeq, ms };
  }

  /**
   * Handles one message for `actors`. The decision is applied and logged as one entry;
   * the promise resolves with the reply once that entry is durable. `extra` may add
   * engine events computed from the reply (the idempotency record) to the same entry.
   */
  async exec<R>(
    actors: readonly string[],
    decide: (at: number) => Decision<E, R> | Promise<Decision<E, R>>,
    extra?: (reply: R, at: number) => EngineEvent<unknown>[],
  ): Promise<R> {
    if (this.#closed) throw new EngineClosedError();
    if (!this.#log.hasRoom()) throw new LogFullError();
    const held = await this.#enter(actors);
    let seq = 0;
    let reply: R;
    try {
      const at = this.clock.now();
      // A synchronous decision is applied in the same turn it was made, so checks against
      // shared indexes (unique addresses, references) cannot be overtaken in between.
      const decided = decide(at);
      const decision = decided instanceof Promise ? await decided : decided;
      const events = decision.events;
      this.#applyDecided(events, at);
      reply = decision.reply();
      if (extra !== undefined) {
        const more = extra(reply, at);
        this.#applyDecided(more, at);
        for (const event of more) events.push(event);
      }
      if (events.length > 0) seq = this.#log.append(at, events);
    } finally {
      for (const mailbox of held) this.#leave(mailbox);
    }
    if (seq > 0) {
      await this.#log.whenDurable(seq);
      this.#maybeSnapshot();
    } else {
      await this.settled();
    }
    return reply;
  }

  /**
   * Applies events that a handler decided. They cannot fail for valid decisions; if one
   * does, memory may be half changed, so the process stops before anything is answered
   * and recovery rebuilds the acknowledged state.
   */
  #applyDecided(events: Array<E | EngineEvent<unknown>>, at: number): void {
    try {
      for (const event of events) this.#applyEvent(event, at);
    } catch (err) {
      this.#fatal(err instanceof Error ? err : new Error(String(err)), 'applying a decided event failed');
    }
  }

  /** Reads see only durable state: wait until everything applied so far is on disk. */
  settled(): Promise<void> {
    return this.#log.whenDurable(this.#log.lastSeq);
  }

  /** An engine event that sets a durable timer; put it in a decision's events. */
  timer(due: number, actors: string[], message: T, at: number): EngineEvent<unknown> {
    const timer: Timer<T> = { id: newId('Timer', at), due, actors, message };
    return { type: '$timer.set', timer };
  }

  idempotencyRecord(key: string): IdempotencyRecord | undefined {
    const record = this.#idempotency.get(key);
    if (record === undefined || record.at + IDEMPOTENCY_TTL_MS <= this.clock.now()) return undefined;
    return record;
  }

  /** Takes a snapshot now (also used by tests and on shutdown). */
  snapshot(): Promise<void> {
    if (this.#snapshotting !== undefined) return this.#snapshotting;
    const seq = this.#log.lastSeq;
    if (seq === this.#snapshotSeq) return Promise.resolve();
    const image = {
      seq,
      at: this.clock.now(),
      records: this.#machine.capture(),
      timers: [...this.#timers.values()],
      idempotency: [...this.#idempotency.values()],
    };
    this.#snapshotting = (async () => {
      try {
        const started = performance.now();
        await this.#log.whenDurable(seq);
        await this.#snapshots.write(image);
        this.#snapshotSeq = seq;
        const trimmed = await this.#log.trimThrough(seq);
        this.#opts.report(
          `snapshot at ${seq}: ${image.records.length} records, ${trimmed} log entries trimmed, ${Math.round(performance.now() - started)} ms`,
        );
      } finally {
        this.#snapshotting = undefined;
      }
    })();
    return this.#snapshotting;
  }

  /** Final commit: waits for pending entries and a running snapshot, then closes the store. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#snapshotTicker?.();
    this.#timers.stop();
    await this.#log.drain();
    if (this.#snapshotting !== undefined) await this.#snapshotting.catch(() => undefined);
    await this.#root.close();
  }

  #applyEntry(entry: Entry<E>): void {
    for (const event of entry.events) this.#applyEvent(event, entry.at);
  }

  #applyEvent(event: E | EngineEvent<unknown>, at: number): void {
    switch (event.type) {
      case '$timer.set': {
        const { timer } = event as Extract<EngineEvent<T>, { type: '$timer.set' }>;
        this.#timers.add(timer);
        if (!this.#recovering && !this.#closed) this.#timers.arm();
        return;
      }
      case '$timer.done':
        this.#timers.remove((event as Extract<EngineEvent<T>, { type: '$timer.done' }>).id);
        return;
      case '$idempotency': {
        const { record } = event as Extract<EngineEvent<T>, { type: '$idempotency' }>;
        this.#idempotency.delete(record.key);
        this.#idempotency.set(record.key, record);
        this.#expireIdempotency(at);
        return;
      }
      default:
        this.#machine.apply(event as E, at);
    }
  }

  /** Deterministic expiry: driven by entry time, so replay drops the same records. */
  #expireIdempotency(at: number): void {
    for (const [key, record] of this.#idempotency) {
      if (record.at + IDEMPOTENCY_TTL_MS > at) break;
      this.#idempotency.delete(key);
    }
  }

  #fireTimers(due: Timer<T>[]): void {
    if (this.#closed) return;
    for (const timer of due) {
      this.exec(timer.actors, (at) => {
        // A timer done by another path in the meantime does nothing.
        if (!this.#timers.has(timer.id)) return { events: [], reply: () => undefined };
        const events: Array<E | EngineEvent<unknown>> = [{ type: '$timer.done', id: timer.id }];
        for (const event of this.#machine.onTimer(timer.message, at)) events.push(event);
        return { events, reply: () => undefined };
      }).catch((err: unknown) => {
        // Overload: try again shortly rather than lose the timer (it is still pending).
        this.#opts.report(`timer ${timer.id} deferred: ${err instanceof Error ? err.message : String(err)}`);
        this.clock.schedule(this.clock.now() + 100, () => this.#fireTimers([timer]));
      });
    }
  }

  async #enter(actors: readonly string[]): Promise<Mailbox[]> {
    const ids = actors.length <= 1 ? actors : [...new Set(actors)].sort();
    const held: Mailbox[] = [];
    try {
      for (const id of ids) {
        let mailbox = this.#mailboxes.get(id);
        if (mailbox === undefined) {
          mailbox = new Mailbox(id);
          this.#mailboxes.set(id, mailbox);
        }
        if (!mailbox.tryEnter()) await mailbox.enter();
        held.push(mailbox);
      }
    } catch (err) {
      for (const mailbox of held) this.#leave(mailbox);
      throw err;
    }
    return held;
  }

  #leave(mailbox: Mailbox): void {
    mailbox.leave();
    // Idle mailboxes are dropped, so memory follows the actors in flight, not all actors.
    if (mailbox.depth === 0) this.#mailboxes.delete(mailbox.actorId);
  }

  #maybeSnapshot(): void {
    if (this.#snapshotting !== undefined || this.#closed) return;
    if (this.#log.lastSeq - this.#snapshotSeq >= this.#opts.snapshotEveryEntries) this.#backgroundSnapshot();
  }

  #backgroundSnapshot(): void {
    this.snapshot().catch((err: unknown) => {
      this.#opts.report(`snapshot failed: ${err instanceof Error ? err.message : String(err)}`);
    });
  }

  #startSnapshotTicker(): void {
    const tick = (): void => {
      if (this.#closed) return;
      if (this.#log.lastSeq > this.#snapshotSeq) this.#backgroundSnapshot();
      this.#snapshotTicker = this.clock.schedule(this.clock.now() + this.#opts.snapshotEveryMs, tick);
    };
    this.#snapshotTicker = this.clock.schedule(this.clock.now() + this.#opts.snapshotEveryMs, tick);
  }

  #fatal(err: Error, what: string): never {
    // Memory is ahead of disk: stop, and let recovery restore what was acknowledged.
    this.#opts.report(`fatal: ${what}: ${err.stack ?? err.message}`);
    process.exit(70);
  }
}
