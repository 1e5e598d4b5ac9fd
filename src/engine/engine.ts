// The engine: actors' mailboxes, the write-ahead log, snapshots, durable timers, effects
// after commit and idempotency records, around a domain state machine.
//
// A message is handled by `exec`: the engine holds the mailboxes of the actors the message
// names (in id order, so two messages that need the same actors cannot deadlock), reads the
// clock once, asks the handler to decide (it may await; its actors stay held meanwhile and
// other actors go on), applies the resulting events to memory, appends them as ONE log
// entry, lets the next message in, and answers once the entry is durable. A handler that
// throws changes nothing; a throw after the first event is applied stops the process.
import { mkdirSync } from 'node:fs';
import type { Clock } from './clock.js';
import { StoreCorruptError } from './format.js';
import { openStore } from './store.js';
import { LmdbStorage, type Storage } from './storage.js';
import { newId } from './ids.js';
import { WriteAheadLog, LogFullError, type LogEntry } from './log.js';
import { Mailbox, MailboxFullError } from './mailbox.js';
import { IdempotencyTable } from './idempotency-table.js';
import { SnapshotStore, type SnapshotImage, type SnapshotStats, type SnapshotWrite } from './snapshot.js';
import { TimerTable } from './timers.js';
import { EffectsFullError, EffectTable, type EffectRunner } from './effects.js';
import type { EngineObserver, Report } from './report.js';
import {
  type Command,
  type Decide,
  type Decision,
  type DomainEvent,
  type Effect,
  type EngineEvent,
  type IdempotencyRecord,
  type LastStep,
  type Query,
  type StateMachine,
  type Timer,
} from './state-machine.js';

export { EffectsFullError, LogFullError, MailboxFullError, StoreCorruptError };
export type { EffectRunner };
export type { Decide, Decision, LastStep };

export class EngineClosedError extends Error {
  constructor() {
    super('the engine is closed');
  }
}

/** Recovery was asked to stop (SIGTERM while the log replays): nothing was written, the store is closed. */
export class RecoveryAbortedError extends Error {
  constructor(replayed: number, total: number) {
    super(`recovery stopped after ${replayed} of ${total} log entries`);
    this.name = 'RecoveryAbortedError';
  }
}

/**
 * Replay yields to the event loop after this much work, so the process answers readiness
 * probes and signals while a long log replays; each pause costs one turn of the loop.
 */
const REPLAY_SLICE_MS = 20;



export interface EngineOptions<E extends DomainEvent, T, S extends StateMachine<E, T> = StateMachine<E, T>> {
  dataDir: string;
  clock: Clock;
  machine: S;
  /** Snapshot after this many entries since the last one. */
  snapshotEveryEntries: number;
  /** ...or after this many ms, if anything was logged since. */
  snapshotEveryMs: number;
  /** Progress and warnings go here (the service's JSON log). */
  report: Report;
  /** Told of commit groups, snapshots and replay progress (the service's metrics). */
  observer?: EngineObserver;
  /** Opens the store (default: the LMDB environment of `dataDir`, by `openStore` with its safety checks). */
  openStorage?: (dataDir: string) => Storage;
  /**
   * Reads the time (ms) that paces recovery's replay slices and the snapshot writer's
   * share of the loop (default performance.now); a simulation's stands still.
   */
  workMeter?: () => number;
  /**
   * Called once memory may be ahead of the log (after the `fatal:` report line). Default:
   * exit with status 70, so recovery restores exactly what was acknowledged.
   */
  onFatal?: (what: string, err: Error) => void;
  /** Idempotency records kept (oldest evicted first); default IDEMPOTENCY_MAX_RECORDS. */
  maxIdempotencyRecords?: number;
  /**
   * A snapshot from elsewhere (cluster mode: the shard's newest published one): recovery
   * starts from it when it is newer than the store's own, and the next snapshot is full.
   */
  baseImage?: SnapshotImage<T>;
  /** Told after each snapshot is written and the log trimmed, with a reader of the image (cluster mode publishes it). */
  snapshotWritten?: (seq: number, image: () => SnapshotImage<T>) => void;
  /** Pending effects past which decisions adding effects are refused; default MAX_PENDING_EFFECTS. */
  maxPendingEffects?: number;
}

/** How far recovery is: entries replayed of those to replay (after the snapshot). */
export interface RecoveryProgress {
  replayed: number;
  total: number;
}

/** The engine's own pending items after `rebuild`. */
export interface RebuiltItems<T> {
  timers: Timer<T>[];
  effects: Effect[];
  /** In insertion order (the order expiry and eviction follow). */
  idempotency: IdempotencyRecord[];
}

export interface RecoveryReport {
  snapshotSeq: number;
  replayed: number;
  lastSeq: number;
  ms: number;
}

/** How long idempotency records are honoured (CONTRACT.md: 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** Idempotency records kept at most; past it the oldest go first. */
export const IDEMPOTENCY_MAX_RECORDS = 250_000;
/** Effects recorded and not yet done (or dead); past it, decisions adding effects get EffectsFullError. */
export const MAX_PENDING_EFFECTS = 10_000;
/** Failed runs of an effect, or deliveries of a timer, before it is parked as dead. */
export const MAX_ATTEMPTS = 8;
/** Backoff after the n-th failure: 1 s, 2 s, 4 s ... capped at 5 minutes. */
export function retryDelayMs(failures: number): number {
  return Math.min(1000 * 2 ** (failures - 1), 5 * 60_000);
}

/** Times a command is run again because the actors it needs changed while it waited for them. */
export const COMMAND_TRIES = 4;

/** The actors a command needs changed while it waited for them (COMMAND_TRIES times in a row). */
export class ActorsChangedError extends Error {
  constructor(command: string, tries: number) {
    super(`${command}: the actors it needs changed while it waited for them (${tries} tries)`);
  }
}

function idsOf(held: readonly Mailbox[]): Set<string> {
  const ids = new Set<string>();
  for (const mailbox of held) ids.add(mailbox.actorId);
  return ids;
}

/** A command's decision with its reply rendered. */
function rendered<E, R, V>(decided: Decision<E, R> | Promise<Decision<E, R> | LastStep<E, R>>, render: (result: R) => V): Decision<E, V> | Promise<Decision<E, V> | LastStep<E, V>> {
  const renderDecision = (d: Decision<E, R>): Decision<E, V> => ({ events: d.events, reply: () => render(d.reply()) });
  if (!(decided instanceof Promise)) return renderDecision(decided);
  return decided.then((d) => (typeof d === 'function' ? () => renderDecision(d()) : renderDecision(d)));
}

type Entry<E> = LogEntry<E | EngineEvent<unknown>>;
type AnyEvent<E> = E | EngineEvent<unknown>;
type Ev<K extends EngineEvent<unknown>['type']> = Extract<EngineEvent<unknown>, { type: K }>;

export class Engine<E extends DomainEvent, T, S extends StateMachine<E, T> = StateMachine<E, T>> {
  readonly clock: Clock;
  readonly #machine: S;
  readonly #opts: EngineOptions<E, T, S>;
  readonly #maxIdempotency: number;
  readonly #workMeter: () => number;
  #storage!: Storage;
  #log!: WriteAheadLog<AnyEvent<E>>;
  #snapshots!: SnapshotStore<T>;
  readonly #mailboxes = new Map<string, Mailbox>();
  readonly #timers: TimerTable<T>;
  /** Insertion-ordered by time, so expiry and eviction trim from the front. */
  readonly #idempotency = new IdempotencyTable();
  /** Evicting records before their 24 hours is reported once per process. */
  #evictionReported = false;
  readonly #effects: EffectTable<E>;
  #snapshotSeq = 0;
  /** The next snapshot writes everything (none yet in the current layout, or the last one failed). */
  #fullSnapshotNext = true;
  #snapshotting: Promise<void> | undefined;
  #lastSnapshot: SnapshotStats | undefined;
  #snapshotTicker: (() => void) | undefined;
  /** No new work is accepted (closing, or failed). */
  #closed = false;
  #failed = false;
  #storeClosed = false;
  #recovering = false;
  #recoveryProgress: RecoveryProgress = { replayed: 0, total: 0 };

  constructor(opts: EngineOptions<E, T, S>) {
    this.#opts = opts;
    this.clock = opts.clock;
    this.#machine = opts.machine;
    this.#maxIdempotency = opts.maxIdempotencyRecords ?? IDEMPOTENCY_MAX_RECORDS;
    this.#workMeter = opts.workMeter ?? (() => performance.now());
    this.#effects = new EffectTable<E>(opts.clock, opts.maxPendingEffects ?? MAX_PENDING_EFFECTS, {
      closed: () => this.#closed,
      settle: (effect, runner, outcome) => this.#settleEffect(effect, runner, outcome),
      failed: (effect, err) => this.#effectFailed(effect, asError(err)),
      report: (message, fields) => this.#opts.report(message, fields),
    });
    this.#timers = new TimerTable<T>(opts.clock, (due) => {
      for (const timer of due) this.#fireTimer(timer);
    });
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

  /** When the earliest pending timer is due (undefined: none pending); one still pending past it has not fired or not finished. */
  earliestTimerDue(): number | undefined {
    return this.#timers.earliestDue();
  }

  get pendingEffects(): number {
    return this.#effects.size;
  }

  get idempotencyRecords(): number {
    return this.#idempotency.size;
  }

  /** What the last snapshot of this process wrote and removed (benches and tests). */
  get lastSnapshot(): SnapshotStats | undefined {
    return this.#lastSnapshot;
  }

  get logStats(): { flushes: number; entries: number } {
    return { flushes: this.#log.flushes, entries: this.#log.flushedEntries };
  }

  /** While `open` recovers: how far the replay is (readiness reports it); undefined otherwise. */
  get recovery(): RecoveryProgress | undefined {
    return this.#recovering ? this.#recoveryProgress : undefined;
  }

  /**
   * Opens the store and rebuilds state: latest snapshot, then the log tail, all verified.
   * The replay yields to the event loop every REPLAY_SLICE_MS; `signal` stops it there
   * (RecoveryAbortedError, the store closed, nothing written).
   */
  async open(signal?: AbortSignal): Promise<RecoveryReport> {
    const started = performance.now();
    this.#storage = (this.#opts.openStorage ?? openLmdbStorage)(this.#opts.dataDir);
    try {
      return await this.#recover(started, signal);
    } catch (err) {
      // A store that cannot be recovered (or recovery stopped) is left closed, not half open.
      this.#closed = true;
      this.#storeClosed = true;
      this.#timers.stop();
      await this.#storage.close();
      throw err;
    }
  }

  async #recover(started: number, signal: AbortSignal | undefined): Promise<RecoveryReport> {
    this.#log = new WriteAheadLog(this.#storage, (err) => this.#fatal('log commit failed', err), this.#opts.observer);
    this.#snapshots = new SnapshotStore<T>(this.#storage, this.#workMeter);
    this.#recovering = true;
    const own = this.#snapshots.load();
    const base = this.#opts.baseImage;
    const image = base !== undefined && (own === undefined || base.seq > own.seq) ? base : own;
    const readMs = performance.now() - started;
    // Before any new snapshot, so none of them can ever count.
    const leftovers = await this.#snapshots.removeLeftovers();
    if (leftovers > 0) this.#opts.report(`recovery: removed ${leftovers} values of an abandoned snapshot`, { event: 'recovery.leftovers', removed: leftovers });
    let expected = 1;
    if (image !== undefined) {
      const restoreStarted = performance.now();
      this.#restoreImage(image);
      // The store's own snapshots do not build on a base from elsewhere.
      this.#fullSnapshotNext = image.legacy || image === base;
      const restoreMs = Math.round(performance.now() - restoreStarted);
      this.#opts.report(
        `recovery: snapshot at ${image.seq} loaded: ${image.records.length} records, ${image.idempotency.length} idempotency records ` +
          `(read ${Math.round(readMs)} ms, restored ${restoreMs} ms)`,
        { event: 'recovery.snapshot', seq: image.seq, records: image.records.length, idempotencyRecords: image.idempotency.length, readMs: Math.round(readMs), restoreMs },
      );
      this.#snapshotSeq = image.seq;
      expected = image.seq + 1;
      this.#log.resumeAfter(image.seq);
    }

    const replayStarted = performance.now();
    const replayed = await this.#replayTail(expected, signal);
    const replayMs = performance.now() - replayStarted;
    const violations = this.#machine.checkInvariants();
    if (violations.length > 0) throw new Error(`invariants violated after recovery:\n  ${violations.join('\n  ')}`);

    this.#recovering = false;
    this.#timers.arm();
    for (const effect of this.#effects.values()) this.#effects.schedule(effect);
    this.#startSnapshotTicker();
    const ms = Math.round(performance.now() - started);
    if (replayed > 0 || image !== undefined) {
      const rate = Math.round(replayed / Math.max(replayMs / 1000, 0.001));
      this.#opts.report(
        `recovery: snapshot at ${this.#snapshotSeq}, replayed ${replayed} entries in ${ms} ms` +
          (replayed > 0 ? ` (the replay itself ${Math.round(replayMs)} ms, ${rate} entries/s)` : ''),
        { event: 'recovery.done', snapshotSeq: this.#snapshotSeq, replayed, ms, replayMs: Math.round(replayMs), entriesPerSecond: rate },
      );
    }
    return { snapshotSeq: this.#snapshotSeq, replayed, lastSeq: this.#log.lastSeq, ms };
  }

  /** Applies the log after the snapshot, from sequence `expected`, pausing for the event loop between slices. */
  async #replayTail(expected: number, signal: AbortSignal | undefined): Promise<number> {
    const progress: RecoveryProgress = { replayed: 0, total: this.#log.countAfter(this.#snapshotSeq) };
    this.#recoveryProgress = progress;
    const replayStarted = this.#workMeter();
    let lastReport = replayStarted;
    let sliceStarted = replayStarted;
    let observed = 0;
    for (const entry of this.#log.readAfter(this.#snapshotSeq)) {
      if (entry.seq !== expected) {
        throw new StoreCorruptError(`log entry ${expected}`, `missing (the log goes on at ${entry.seq})`);
      }
      this.#applyEntry(entry);
      expected++;
      progress.replayed++;
      const now = this.#workMeter();
      if (now - sliceStarted < REPLAY_SLICE_MS) continue;
      this.#opts.observer?.replayed(progress.replayed - observed);
      observed = progress.replayed;
      if (now - lastReport >= 1000) {
        const rate = Math.round(progress.replayed / ((now - replayStarted) / 1000));
        this.#opts.report(`recovery: replayed ${progress.replayed}/${progress.total} log entries (${rate} entries/s)`, {
          event: 'recovery.progress',
          replayed: progress.replayed,
          total: progress.total,
          entriesPerSecond: rate,
        });
        lastReport = now;
      }
      await new Promise<void>((resume) => setImmediate(resume));
      if (signal?.aborted === true) throw new RecoveryAbortedError(progress.replayed, progress.total);
      sliceStarted = this.#workMeter();
    }
    this.#opts.observer?.replayed(progress.replayed - observed);
    return progress.replayed;
  }

  /** Puts a loaded snapshot into the machine and the engine's tables. */
  #restoreImage(image: SnapshotImage<T>): void {
    this.#machine.restore(image.records);
    for (const timer of image.timers) this.#timers.add(timer);
    for (const effect of image.effects) this.#effects.set(effect);
    for (const [order, record] of image.idempotency) this.#idempotency.restore(order, record);
    // What was restored is what the snapshot holds; only the tail replayed after it is new.
    this.#timers.forgetChanges();
    this.#effects.forgetChanges();
  }

  /**
   * Rebuilds state from a snapshot image (or none) and the log entries after it, each applied
   * exactly as recovery applies it, on an engine that is never opened: no store, nothing
   * armed, run or reported. For read-only tools (src/engine/inspect.ts), which read and check
   * the entries themselves. The domain state is left in the machine; the engine's own pending
   * items are returned, idempotency records in insertion order.
   */
  rebuild(image: SnapshotImage<T> | undefined, entries: Iterable<Entry<E>>): RebuiltItems<T> {
    // #log is set by `open` alone; definite-assignment typing aside, it is undefined until then.
    if ((this.#log as WriteAheadLog<AnyEvent<E>> | undefined) !== undefined) throw new Error('rebuild is for an engine that is never opened');
    // Closed and recovering: nothing is accepted, and applying stays silent and inert (#live).
    this.#closed = true;
    this.#recovering = true;
    if (image !== undefined) this.#restoreImage(image);
    for (const entry of entries) this.#applyEntry(entry);
    return {
      timers: [...this.#timers.values()],
      effects: [...this.#effects.values()],
      idempotency: [...this.#idempotency.values()],
    };
  }

  /**
   * Handles one message for `actors`. The decision is applied and logged as one entry;
   * the promise resolves with the reply once that entry is durable. `extra` may add
   * engine events computed from the reply (the idempotency record) to the same entry.
   */
  exec<R>(
    actors: readonly string[],
    decide: Decide<E, R>,
    extra?: (reply: R, at: number) => EngineEvent<unknown>[],
  ): Promise<R> {
    if (this.#closed) return Promise.reject(new EngineClosedError());
    if (!this.#log.hasRoom()) return Promise.reject(new LogFullError());
    // The usual case, idle actors, takes them without a promise.
    const held = this.#tryEnter(actors);
    if (held !== undefined) return this.#decide(held, decide, extra);
    return this.#enter(actors).then((waited) => this.#decide(waited, decide, extra));
  }

  /**
   * Runs a command: holds the actors it names and, if it had to wait for them, asks it again
   * once they are held; if it now needs others too (a record changed while it waited), lets
   * them go and tries again holding both, at most COMMAND_TRIES times. Then decides as `exec` does, the reply being
   * `render` of the command's result.
   */
  run<I, R, V>(command: Command<S, I, R, E>, input: I, render: (result: R) => V, extra?: (reply: V, at: number) => EngineEvent<unknown>[]): Promise<V> {
    let actors: readonly string[];
    try {
      actors = command.actors(input, this.#machine);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.#runHolding(command, input, render, extra, actors, 1);
  }

  #runHolding<I, R, V>(
    command: Command<S, I, R, E>,
    input: I,
    render: (result: R) => V,
    extra: ((reply: V, at: number) => EngineEvent<unknown>[]) | undefined,
    actors: readonly string[],
    tries: number,
  ): Promise<V> {
    const held = new Set(actors);
    let needed: readonly string[] = actors;
    // The first try's actors were named in this run; if they are all free, the decision runs
    // in this run too (exec's fast path), where nothing can have changed what it names.
    let namedInThisRun = tries === 1;
    const decide: Decide<E, V> = (at) => {
      if (!namedInThisRun) {
        // Naming the actors reads records the held ones may not own: unchecked, it decides nothing.
        this.#machine.hold?.(undefined);
        needed = command.actors(input, this.#machine);
        if (needed.some((id) => !held.has(id))) throw new ActorsChangedError(command.name, tries);
        this.#machine.hold?.(held);
      }
      return rendered(command.decide(input, this.#machine, at), render);
    };
    const replied = this.exec(actors, decide, extra);
    namedInThisRun = false;
    return replied.catch((err: unknown) => {
      if (!(err instanceof ActorsChangedError) || tries >= COMMAND_TRIES) throw err;
      return this.#runHolding(command, input, render, extra, [...held, ...needed], tries + 1);
    });
  }

  /** Decides with `held` taken; lets them go once the entry is appended (or nothing was decided). */
  #decide<R>(
    held: Mailbox[],
    decide: Decide<E, R>,
    extra: ((reply: R, at: number) => EngineEvent<unknown>[]) | undefined,
  ): Promise<R> {
    let decided: Decision<E, R> | Promise<Decision<E, R> | LastStep<E, R>>;
    let at: number;
    // The held actors' ids, for the holding check of every phase of this decision.
    const actors = idsOf(held);
    try {
      // The engine may have closed (or failed) while this message waited for its actors.
      if (this.#closed) throw new EngineClosedError();
      // Read only once every mailbox is held: the decision sees time after its wait.
      at = this.clock.now();
      this.#machine.hold?.(actors);
      decided = decide(at);
    } catch (err) {
      this.#leaveAll(held);
      return Promise.reject(err);
    } finally {
      this.#machine.hold?.(undefined);
    }
    // A synchronous decision is applied in the same turn it was made, so checks against
    // shared indexes (unique addresses, references) cannot be overtaken in between.
    if (!(decided instanceof Promise)) return this.#commit(held, actors, decided, at, extra);
    return decided.then(
      (decision) => {
        if (this.#closed) {
          this.#leaveAll(held);
          throw new EngineClosedError();
        }
        if (typeof decision !== 'function') return this.#commit(held, actors, decision, at, extra);
        // The last step and the apply in one synchronous run, like a synchronous decision.
        let last: Decision<E, R>;
        try {
          this.#machine.hold?.(actors);
          last = decision();
        } catch (err) {
          this.#leaveAll(held);
          throw err;
        } finally {
          this.#machine.hold?.(undefined);
        }
        return this.#commit(held, actors, last, at, extra);
      },
      (err: unknown) => {
        this.#leaveAll(held);
        throw err;
      },
    );
  }

  /** Applies and appends the decision as one entry, releases the actors, answers once durable. */
  #commit<R>(held: Mailbox[], actors: ReadonlySet<string>, decision: Decision<E, R>, at: number, extra: ((reply: R, at: number) => EngineEvent<unknown>[]) | undefined): Promise<R> {
    let seq = 0;
    let reply: R;
    try {
      const events = decision.events;
      this.#effects.checkRoom(events);
      let applied = false;
      try {
        // From the first apply until the append, memory is ahead of the log: a throw in
        // between (an event, the reply, the extra events) would let a later snapshot make an
        // unlogged change durable, so it stops the process instead.
        this.#machine.hold?.(actors, 'writes');
        for (const event of events) {
          applied = true;
          this.#applyEvent(event, at);
        }
        reply = decision.reply();
        if (extra !== undefined) {
          for (const event of extra(reply, at)) {
            applied = true;
            this.#applyEvent(event, at);
            events.push(event);
          }
        }
        if (events.length > 0) seq = this.#log.append(at, events);
      } catch (err) {
        if (applied) throw this.#fatal('a decision failed after it was applied', asError(err));
        throw err;
      }
    } catch (err) {
      return Promise.reject(err);
    } finally {
      this.#machine.hold?.(undefined);
      this.#leaveAll(held);
    }
    if (seq === 0) return this.settled().then(() => reply);
    return this.#log.whenDurable(seq).then(() => {
      this.#maybeSnapshot();
      return reply;
    });
  }

  /** Answers `query` once everything applied before it is durable: a read never shows what a crash could take back. */
  read<I, R>(query: Query<S, I, R>, input: I): Promise<R> {
    return this.settled().then(() => query(input, this.#machine, this.clock.now()));
  }

  /** Reads see only durable state: wait until everything applied so far is on disk. */
  settled(): Promise<void> {
    return this.#log.whenDurable(this.#log.lastSeq);
  }

  /**
   * An engine event that records an effect in the decision's entry. It runs (through the
   * runner registered for `kind`) once that entry is durable, and again after a restart
   * until its outcome is logged.
   */
  effect<P>(kind: string, actors: string[], payload: P, at: number): EngineEvent<T> {
    const effect: Effect = { id: newId('Effect', at), kind, actors, payload, attempt: 0, due: at };
    return { type: '$effect.add', effect };
  }

  /** Registers the runner of one effect kind; do it before `open`, so resumed effects find it. */
  onEffect<P, O>(kind: string, runner: EffectRunner<E, P, O>): void {
    this.#effects.register(kind, runner as EffectRunner<E, never, unknown>);
  }

  idempotencyRecord(key: string): IdempotencyRecord | undefined {
    const record = this.#idempotency.get(key);
    if (record === undefined || record.at + IDEMPOTENCY_TTL_MS <= this.clock.now()) return undefined;
    return record;
  }

  /** Takes a snapshot now (also used by tests and on shutdown). */
  snapshot(): Promise<void> {
    if (this.#failed) return Promise.reject(new EngineClosedError());
    if (this.#snapshotting !== undefined) return this.#snapshotting;
    const seq = this.#log.lastSeq;
    if (seq === this.#snapshotSeq) return Promise.resolve();
    const captured = this.#capture(seq);
    this.#snapshotting = (async () => {
      try {
        const started = performance.now();
        await this.#log.whenDurable(seq);
        const stats = await this.#snapshots.write(captured);
        this.#snapshotSeq = seq;
        this.#lastSnapshot = stats;
        const trimmed = await this.#log.trimThrough(seq);
        const ms = performance.now() - started;
        this.#opts.observer?.snapshotWritten(ms / 1000);
        this.#opts.report(
          `snapshot at ${seq} (${captured.full ? 'full' : 'changes'}): ${stats.written} items in ${stats.chunks} chunks, ${stats.bytes} bytes, ` +
            `${stats.removed} older values removed, ${trimmed} log entries trimmed, ${Math.round(ms)} ms`,
          {
            event: 'snapshot.written',
            seq,
            full: captured.full,
            items: stats.written,
            chunks: stats.chunks,
            bytes: stats.bytes,
            removed: stats.removed,
            trimmedGroups: trimmed,
            ms: Math.round(ms),
          },
        );
        this.#opts.snapshotWritten?.(seq, () => {
          const written = this.#snapshots.load();
          if (written === undefined || written.seq !== seq) throw new Error(`the snapshot at ${seq} is not the store's newest`);
          return written;
        });
      } catch (err) {
        // What this one captured is no longer tracked anywhere: the next one writes everything.
        this.#fullSnapshotNext = true;
        throw err;
      } finally {
        this.#snapshotting = undefined;
      }
    })();
    return this.#snapshotting;
  }

  /**
   * Synchronous: references to everything (full) or to what changed since the previous
   * capture; records, timers, effects and idempotency records are immutable, so they can be
   * encoded later while new entries apply.
   */
  #capture(seq: number): SnapshotWrite<T> {
    const full = this.#fullSnapshotNext || this.#snapshots.wantsFull || this.#machine.captureChanges === undefined;
    this.#fullSnapshotNext = false;
    const counts = { timers: this.#timers.size, effects: this.#effects.size, idempotency: this.#idempotency.size };
    const at = this.clock.now();
    if (!full) {
      return {
        seq,
        at,
        full,
        counts,
        records: this.#machine.captureChanges!(),
        timers: this.#timers.takeChanges(),
        effects: this.#effects.takeChanges(),
        idempotency: this.#idempotency.captureChanges(),
      };
    }
    this.#timers.forgetChanges();
    this.#effects.forgetChanges();
    return {
      seq,
      at,
      full,
      counts,
      records: this.#machine.captureColumns?.() ?? this.#machine.capture(),
      timers: [...this.#timers.values()].map((timer) => [timer.id, timer] as const),
      effects: [...this.#effects.values()].map((effect) => [effect.id, effect] as const),
      idempotency: this.#idempotency.captureAll(),
    };
  }

  /** Final commit: waits for pending entries and a running snapshot, then closes the store. */
  async close(): Promise<void> {
    if (this.#storeClosed) return;
    this.#storeClosed = true;
    this.#closed = true;
    this.#snapshotTicker?.();
    this.#timers.stop();
    // Nothing else runs now: a snapshot in progress writes at full speed.
    this.#snapshots.hurry();
    await this.#log.drain().catch((err: unknown) => {
      // After a fatal failure there is nothing more to commit; the store is closed anyway.
      if (!this.#failed) throw err;
    });
    if (this.#snapshotting !== undefined) await this.#snapshotting.catch(() => undefined);
    await this.#storage.close();
  }

  #applyEntry(entry: Entry<E>): void {
    for (const event of entry.events) this.#applyEvent(event, entry.at);
  }

  #applyEvent(event: AnyEvent<E>, at: number): void {
    switch (event.type) {
      case '$timer.set': {
        this.#timers.add((event as Ev<'$timer.set'>).timer as Timer<T>);
        this.#armTimers();
        return;
      }
      case '$timer.done':
      case '$timer.cancel':
        this.#timers.remove((event as Ev<'$timer.done'>).id);
        return;
      case '$timer.retry': {
        const { id, attempt, due, error } = event as Ev<'$timer.retry'>;
        const timer = this.#timers.get(id);
        if (timer === undefined) return;
        this.#timers.add({ ...timer, attempt, due });
        this.#armTimers();
        if (this.#live()) this.#reportRetry('timer', id, undefined, attempt, due, error);
        return;
      }
      case '$timer.dead': {
        const { timer, error } = event as Ev<'$timer.dead'>;
        this.#timers.remove(timer.id);
        if (this.#live()) this.#reportDead('timer', timer.id, undefined, error);
        return;
      }
      case '$effect.add': {
        const { effect } = event as Ev<'$effect.add'>;
        this.#effects.set(effect);
        // Applied just before its entry is appended: it runs once that entry is durable.
        if (this.#live()) {
          this.#log.whenDurable(this.#log.lastSeq + 1).then(
            () => this.#effects.schedule(effect),
            () => undefined, // the log failed: the process stops
          );
        }
        return;
      }
      case '$effect.done':
        this.#effects.delete((event as Ev<'$effect.done'>).id);
        return;
      case '$effect.retry': {
        const { id, attempt, due, error } = event as Ev<'$effect.retry'>;
        const effect = this.#effects.get(id);
        if (effect === undefined) return;
        const next: Effect = { ...effect, attempt, due };
        this.#effects.set(next);
        if (this.#live()) {
          this.#reportRetry('effect', id, effect.kind, attempt, due, error);
          this.#effects.schedule(next);
        }
        return;
      }
      case '$effect.dead': {
        const { effect, error } = event as Ev<'$effect.dead'>;
        this.#effects.delete(effect.id);
        if (this.#live()) this.#reportDead('effect', effect.id, effect.kind, error);
        return;
      }
      case '$idempotency': {
        const { record } = event as Ev<'$idempotency'>;
        this.#idempotency.delete(record.key);
        this.#idempotency.set(record.key, record);
        this.#trimIdempotency(at);
        return;
      }
      default:
        this.#machine.apply(event as E, at);
    }
  }

  /** A timer or an effect failed and waits for its next attempt (reported live only: a replay repeats no report). */
  #reportRetry(what: 'timer' | 'effect', id: string, kind: string | undefined, attempt: number, due: number, error: string): void {
    const retryAt = new Date(due).toISOString();
    const name = kind === undefined ? `${what} ${id}` : `${what} ${id} (${kind})`;
    this.#opts.report(`${name} failed (attempt ${attempt} of ${MAX_ATTEMPTS}): ${error}; retry at ${retryAt}`, {
      event: `${what}.retry`,
      level: 'warn',
      id,
      kind,
      attempt,
      error,
      retryAt,
    });
  }

  /** A timer or an effect failed its last attempt and is parked dead. */
  #reportDead(what: 'timer' | 'effect', id: string, kind: string | undefined, error: string): void {
    const name = kind === undefined ? `${what} ${id}` : `${what} ${id} (${kind})`;
    this.#opts.report(`${name} parked dead after ${MAX_ATTEMPTS} failed attempts: ${error}`, { event: `${what}.dead`, level: 'error', id, kind, error });
  }

  #live(): boolean {
    return !this.#recovering && !this.#closed;
  }

  #armTimers(): void {
    if (this.#live()) this.#timers.arm();
  }

  /**
   * Deterministic expiry and eviction: driven by entry time and count, so replay drops the
   * same records (given the same limit).
   */
  #trimIdempotency(at: number): void {
    for (const [key, record] of this.#idempotency) {
      if (record.at + IDEMPOTENCY_TTL_MS > at && this.#idempotency.size <= this.#maxIdempotency) break;
      this.#idempotency.delete(key);
      if (record.at + IDEMPOTENCY_TTL_MS > at && !this.#evictionReported && this.#live()) {
        this.#evictionReported = true;
        this.#opts.report(`idempotency records at their limit of ${this.#maxIdempotency}: the oldest are forgotten before 24 hours`, {
          event: 'idempotency.evicting',
          level: 'warn',
          limit: this.#maxIdempotency,
        });
      }
    }
  }


  #fireTimer(timer: Timer<T>): void {
    if (this.#closed) return;
    this.exec(timer.actors, async (at) => {
      // Cancelled, replaced or done by another path in the meantime: nothing to do.
      if (this.#timers.get(timer.id) !== timer) return { events: [], reply: () => undefined };
      const produced = await this.#machine.onTimer(timer.message, at);
      if (this.#timers.get(timer.id) !== timer) return { events: [], reply: () => undefined };
      const events: Array<AnyEvent<E>> = [{ type: '$timer.done', id: timer.id }];
      for (const event of produced) events.push(event);
      return { events, reply: () => undefined };
    }).catch((err: unknown) => this.#timerFailed(timer, asError(err)));
  }

  /** A timer whose handler failed: retried or parked (#retryOrPark); it stays pending in the log meanwhile. */
  #timerFailed(timer: Timer<T>, err: Error): void {
    void this.#retryOrPark({
      what: `timer ${timer.id}`,
      err,
      attempts: timer.attempt ?? 0,
      current: () => this.#timers.get(timer.id) === timer,
      again: () => this.#fireTimer(timer),
      dead: (error) => ({ type: '$timer.dead', timer, error }),
      retry: (attempt, due, error) => ({ type: '$timer.retry', id: timer.id, attempt, due, error }),
    });
  }

  /** Logs an effect's outcome, held on its actors, with the events its runner's `settle` adds. */
  async #settleEffect(effect: Effect, runner: EffectRunner<E, never, unknown>, outcome: unknown): Promise<void> {
    await this.exec(effect.actors, (at) => {
      if (this.#effects.get(effect.id) !== effect) return { events: [], reply: () => undefined };
      const events: Array<AnyEvent<E>> = [{ type: '$effect.done', id: effect.id, outcome }];
      if (runner.settle !== undefined) for (const event of runner.settle(effect, outcome, at)) events.push(event);
      return { events, reply: () => undefined };
    });
  }

  /** An effect whose run failed: retried or parked (#retryOrPark); effects are at least once. */
  async #effectFailed(effect: Effect, err: Error): Promise<void> {
    await this.#retryOrPark({
      what: `effect ${effect.id}`,
      err,
      attempts: effect.attempt,
      current: () => this.#effects.get(effect.id) === effect,
      again: () => this.#effects.schedule(effect),
      dead: (error) => ({ type: '$effect.dead', effect, error }),
      retry: (attempt, due, error) => ({ type: '$effect.retry', id: effect.id, attempt, due, error }),
    });
  }

  /**
   * The one retry-or-park policy of timers and effects: a failure is logged as a retry
   * after retryDelayMs(attempt) or, at MAX_ATTEMPTS, as dead. Overload, and a log that
   * refuses the outcome, are not failures of the work: it is tried again after the first
   * backoff step without counting an attempt. Nothing is logged for a timer or effect that
   * is no longer the current one (it finished or was replaced meanwhile).
   */
  async #retryOrPark(failure: {
    what: string;
    err: Error;
    attempts: number;
    current: () => boolean;
    again: () => void;
    dead: (error: string) => EngineEvent<T>;
    retry: (attempt: number, due: number, error: string) => EngineEvent<T>;
  }): Promise<void> {
    if (this.#closed) return;
    const retryLater = (why: Error): void => {
      if (this.#closed) return;
      this.#opts.report(`${failure.what} deferred: ${why.message}`, { event: 'work.deferred', level: 'warn', what: failure.what, error: why.message });
      this.clock.schedule(this.clock.now() + retryDelayMs(1), () => {
        if (failure.current()) failure.again();
      });
    };
    if (isOverload(failure.err)) {
      retryLater(failure.err);
      return;
    }
    const attempt = failure.attempts + 1;
    const error = failure.err.message;
    try {
      await this.exec([], (at) => {
        if (!failure.current()) return { events: [], reply: () => undefined };
        return { events: [attempt >= MAX_ATTEMPTS ? failure.dead(error) : failure.retry(attempt, at + retryDelayMs(attempt), error)], reply: () => undefined };
      });
    } catch (logErr) {
      retryLater(asError(logErr));
    }
  }

  /**
   * The common case without a promise: no actor, or one that is idle, is taken at once.
   * Undefined when the message must wait (or names several actors): nothing is taken then.
   */
  #tryEnter(actors: readonly string[]): Mailbox[] | undefined {
    if (actors.length === 0) return [];
    if (actors.length > 1) return undefined;
    const mailbox = this.#mailboxOf(actors[0]!);
    return mailbox.tryEnter() ? [mailbox] : undefined;
  }

  #mailboxOf(id: string): Mailbox {
    let mailbox = this.#mailboxes.get(id);
    if (mailbox === undefined) {
      mailbox = new Mailbox(id);
      this.#mailboxes.set(id, mailbox);
    }
    return mailbox;
  }

  async #enter(actors: readonly string[]): Promise<Mailbox[]> {
    const ids = actors.length <= 1 ? actors : [...new Set(actors)].sort();
    const held: Mailbox[] = [];
    try {
      for (const id of ids) {
        const mailbox = this.#mailboxOf(id);
        if (!mailbox.tryEnter()) await mailbox.enter();
        held.push(mailbox);
      }
    } catch (err) {
      this.#leaveAll(held);
      throw err;
    }
    return held;
  }

  #leaveAll(held: readonly Mailbox[]): void {
    for (const mailbox of held) this.#leave(mailbox);
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
      this.#opts.report(`snapshot failed: ${asError(err).message}`, { event: 'snapshot.failed', level: 'error', error: asError(err).message });
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

  /**
   * Memory may be ahead of disk: refuse everything from now on and stop (by default the
   * process exits 70), so recovery restores what was acknowledged. Returns the error for
   * the caller to throw when an injected `onFatal` returns.
   */
  #fatal(what: string, err: Error): Error {
    if (!this.#failed) {
      this.#failed = true;
      this.#closed = true;
      this.#snapshotTicker?.();
      this.#timers.stop();
      this.#opts.report(`fatal: ${what}: ${err.stack ?? err.message}`, { event: 'engine.fatal', level: 'fatal', what, error: err.message });
      (this.#opts.onFatal ?? exitOnFatal)(what, err);
    }
    return new EngineClosedError();
  }
}

/** The LMDB environment of `dataDir` (created if missing), opened by `openStore` with its checks. */
function openLmdbStorage(dataDir: string): Storage {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  return new LmdbStorage(openStore(dataDir));
}

function exitOnFatal(): void {
  process.exit(70);
}

/** Refusals of the moment, not failures of the work itself. */
function isOverload(err: Error): boolean {
  return err instanceof MailboxFullError || err instanceof LogFullError || err instanceof EffectsFullError;
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
