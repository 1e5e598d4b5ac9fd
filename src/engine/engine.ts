// The engine: held actors, the write-ahead log, snapshots, durable timers, effects
// after commit and idempotency records, around a domain state machine. This class is its
// public face and wires its parts, each in a file of its own:
//
// - executor.ts: executing commands on held actors (hold, decide, apply, append in one run,
//   and answer once the entry is durable);
// - recovery.ts: the state rebuilt at open (snapshot plus replay, invariants checked);
// - scheduling.ts: durable timers and effects after commit (firing, settling, retry with
//   backoff, parking as dead);
// - snapshot-policy.ts: when a snapshot is taken, full or incremental, and the ticker;
// - idempotency.ts: the idempotency records and their expiry;
// - lifecycle.ts: recovering, open, closed or failed, which every part consults.
//
// Every entry, live or replayed, is applied here (`#applyEvent`): the domain's events to the
// machine, the engine's own to its tables.
import type { Clock } from './clock.js';
import { StoreCorruptError } from './format.js';
import { openLmdbStorage, type Storage } from './storage.js';
import { TableBlobStore, type BlobStore } from './blob-store.js';
import { newId } from './ids.js';
import { WriteAheadLog, LogFullError } from './log.js';
import { SnapshotStore, type SnapshotImage, type SnapshotStats, type SnapshotStream } from './snapshot.js';
import { streamOf } from './snapshot-image.js';
import { EffectsFullError, type EffectRunner } from './effects.js';
import type { EngineObserver, Report } from './report.js';
import { EngineClosedError, Lifecycle } from './lifecycle.js';
import { Executor, type ExtraEvents, type LoggedEntry, type LoggedEvent } from './executor.js';
import { IDEMPOTENCY_MAX_RECORDS, IdempotencyRecords, restoredIdempotency } from './idempotency.js';
import { recover, type RecoveryProgress, type RecoveryReport } from './recovery.js';
import { MAX_PENDING_EFFECTS, Scheduler } from './scheduling.js';
import { SnapshotPolicy } from './snapshot-policy.js';
import type { Command, Decide, Decision, DomainEvent, Effect, EngineEvent, IdempotencyRecord, Query, StateMachine, Timer } from './state-machine.js';

export { EffectsFullError, EngineClosedError, LogFullError, StoreCorruptError };
export type { EffectRunner, RecoveryProgress, RecoveryReport };
export type { Decide, Decision };
export { ContendedError, COMMAND_TRIES, ReentrantExecError } from './executor.js';
export { IDEMPOTENCY_MAX_RECORDS, IDEMPOTENCY_TTL_MS } from './idempotency.js';
export { RecoveryAbortedError } from './recovery.js';
export { MAX_ATTEMPTS, MAX_PENDING_EFFECTS, retryDelayMs } from './scheduling.js';

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
  /**
   * Opens the store (default: the LMDB environments of `dataDir`, the log's and the snapshots',
   * by `openLmdbStorage` with openStore's safety checks). A storage may offer a newer snapshot and be told of those written (storage.ts).
   */
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
  /** Pending effects past which decisions adding effects are refused; default MAX_PENDING_EFFECTS. */
  maxPendingEffects?: number;
  /** Log entries waiting for their flush past which messages are refused; default MAX_PENDING_ENTRIES. */
  maxPendingEntries?: number;
}


/** The engine's own pending items after `rebuild`. */
export interface RebuiltItems<T> {
  timers: Timer<T>[];
  effects: Effect[];
  /** In insertion order (the order expiry and eviction follow). */
  idempotency: IdempotencyRecord[];
}

export class Engine<E extends DomainEvent, T, S extends StateMachine<E, T> = StateMachine<E, T>> {
  readonly clock: Clock;
  readonly #machine: S;
  readonly #opts: EngineOptions<E, T, S>;
  readonly #lifecycle = new Lifecycle();
  readonly #scheduler: Scheduler<E, T>;
  readonly #idempotency: IdempotencyRecords;
  // Made by `open`, each over the store it opens.
  #storage!: Storage;
  #log!: WriteAheadLog<LoggedEvent<E>>;
  #executor!: Executor<E, T, S>;
  #snapshots!: SnapshotPolicy<T>;
  #snapshotStore!: SnapshotStore<T>;
  #recoveryProgress: RecoveryProgress = { replayed: 0, total: 0 };
  /** Paces recovery's replay slices and the snapshot writer's share of the loop. */
  readonly #workMeter: () => number;

  constructor(opts: EngineOptions<E, T, S>) {
    this.#opts = opts;
    this.clock = opts.clock;
    this.#machine = opts.machine;
    this.#workMeter = opts.workMeter ?? (() => performance.now());
    this.#idempotency = new IdempotencyRecords(opts.maxIdempotencyRecords ?? IDEMPOTENCY_MAX_RECORDS, this.#lifecycle, opts.report);
    this.#scheduler = new Scheduler<E, T>({
      clock: opts.clock,
      machine: opts.machine,
      lifecycle: this.#lifecycle,
      report: opts.report,
      maxPendingEffects: opts.maxPendingEffects ?? MAX_PENDING_EFFECTS,
      exec: (actors, decide) => this.exec(actors, decide),
      appendedDurable: () => this.#log.whenDurable(this.#log.lastSeq + 1),
    });
  }

  get lastSeq(): number {
    return this.#log.lastSeq;
  }

  get durableSeq(): number {
    return this.#log.durableSeq;
  }

  get snapshotSeq(): number {
    return this.#snapshots.seq;
  }

  get pendingTimers(): number {
    return this.#scheduler.timers.size;
  }

  /** When the earliest pending timer is due (undefined: none pending); one still pending past it has not fired or not finished. */
  earliestTimerDue(): number | undefined {
    return this.#scheduler.timers.earliestDue();
  }

  get pendingEffects(): number {
    return this.#scheduler.effects.size;
  }

  get idempotencyRecords(): number {
    return this.#idempotency.size;
  }

  /** What the last snapshot of this process wrote and removed (benches and tests). */
  get lastSnapshot(): SnapshotStats | undefined {
    return this.#snapshots.last;
  }

  get logStats(): { flushes: number; entries: number } {
    return { flushes: this.#log.flushes, entries: this.#log.flushedEntries };
  }

  /** While `open` recovers: how far the replay is (readiness reports it); undefined otherwise. */
  get recovery(): RecoveryProgress | undefined {
    return this.#lifecycle.recovering ? this.#recoveryProgress : undefined;
  }

  /**
   * Opens the store and rebuilds state: latest snapshot, then the log tail, all verified
   * (recovery.ts). `signal` stops the replay between slices (RecoveryAbortedError, the store
   * closed, nothing written).
   */
  async open(signal?: AbortSignal): Promise<RecoveryReport> {
    const started = performance.now();
    const storage: Storage = (this.#opts.openStorage ?? openLmdbStorage)(this.#opts.dataDir);
    this.#storage = storage;
    try {
      this.#openParts(storage);
      this.#lifecycle.recovering = true;
      return await recover<E, T>(
        {
          machine: this.#machine,
          log: this.#log,
          store: this.#snapshotStore,
          // A stored image's timers carry this machine's messages, as the store's own snapshots do.
          offered: storage.offeredImage as SnapshotImage<T> | undefined,
          restore: (image) => this.#restoreImage(image),
          restored: (seq, fullNext) => this.#snapshots.restored(seq, fullNext),
          applyEntry: (entry) => this.#applyEntry(entry),
          resume: () => this.#resume(),
          progress: (progress) => (this.#recoveryProgress = progress),
          report: this.#opts.report,
          observer: this.#opts.observer,
          workMeter: this.#workMeter,
        },
        started,
        signal,
      );
    } catch (err) {
      // A store that cannot be recovered (or recovery stopped) is left closed, not half open.
      this.#lifecycle.closed = true;
      this.#lifecycle.storeClosed = true;
      this.#scheduler.stop();
      await storage.close();
      throw err;
    }
  }

  /** The log, the snapshot store, the executor and the snapshot policy over the opened `storage`. */
  #openParts(storage: Storage): void {
    this.#log = new WriteAheadLog(storage, (err) => this.#fatal('log commit failed', err), this.#opts.observer, this.#machine.logLayouts, this.#opts.maxPendingEntries);
    this.#snapshotStore = new SnapshotStore<T>(storage, this.#workMeter);
    this.#executor = new Executor<E, T, S>({
      machine: this.#machine,
      clock: this.clock,
      log: this.#log,
      lifecycle: this.#lifecycle,
      apply: (event, at) => this.#applyEvent(event, at),
      effects: this.#scheduler.effects,
      fatal: (what, err) => this.#fatal(what, err),
      committed: () => this.#snapshots.committed(),
    });
    this.#snapshots = new SnapshotPolicy<T>({
      clock: this.clock,
      machine: this.#machine,
      log: this.#log,
      store: this.#snapshotStore,
      timers: this.#scheduler.timers,
      effects: this.#scheduler.effects,
      idempotency: this.#idempotency.table,
      lifecycle: this.#lifecycle,
      report: this.#opts.report,
      observer: this.#opts.observer,
      storage,
      everyEntries: this.#opts.snapshotEveryEntries,
      everyMs: this.#opts.snapshotEveryMs,
    });
  }

  /** Recovery is done: timers armed, pending effects scheduled, the snapshot ticker started. */
  #resume(): void {
    this.#lifecycle.recovering = false;
    this.#scheduler.start();
    this.#snapshots.startTicker();
  }

  /** Puts a snapshot into the machine and the engine's tables, its records as they are read. */
  #restoreImage(snapshot: SnapshotStream<T>): void {
    const { timers, effects } = this.#scheduler;
    this.#machine.restore(snapshot.records, snapshot.lazy);
    const image = snapshot.rest();
    for (const timer of image.timers) timers.add(timer);
    for (const effect of image.effects) effects.set(effect);
    const recordOf = (id: string): unknown => this.#machine.recordOf?.(id);
    for (const [order, record] of image.idempotency) this.#idempotency.table.restore(order, restoredIdempotency(record, recordOf));
    // What was restored is what the snapshot holds; only the tail replayed after it is new.
    timers.forgetChanges();
    effects.forgetChanges();
  }

  /**
   * Rebuilds state from a snapshot image (or none) and the log entries after it, each applied
   * exactly as recovery applies it, on an engine that is never opened: no store, nothing
   * armed, run or reported. For read-only tools (src/engine/inspect.ts), which read and check
   * the entries themselves. The domain state is left in the machine; the engine's own pending
   * items are returned, idempotency records in insertion order.
   */
  rebuild(image: SnapshotImage<T> | undefined, entries: Iterable<LoggedEntry<E>>): RebuiltItems<T> {
    // #log is set by `open` alone; definite-assignment typing aside, it is undefined until then.
    if ((this.#log as WriteAheadLog<LoggedEvent<E>> | undefined) !== undefined) throw new Error('rebuild is for an engine that is never opened');
    // Closed and recovering: nothing is accepted, and applying stays silent and inert (not live).
    this.#lifecycle.closed = true;
    this.#lifecycle.recovering = true;
    if (image !== undefined) this.#restoreImage(streamOf(image));
    for (const entry of entries) this.#applyEntry(entry);
    return {
      timers: [...this.#scheduler.timers.values()],
      effects: [...this.#scheduler.effects.values()],
      idempotency: [...this.#idempotency.table.values()],
    };
  }

  /**
   * Handles one message for `actors` (executor.ts). The decision is applied and logged as one
   * entry; the promise resolves with the reply once that entry is durable. `extra` may add
   * engine events computed from the reply (the idempotency record) to the same entry.
   */
  exec<R>(actors: readonly string[], decide: Decide<E, R>, extra?: ExtraEvents<R>): Promise<R> {
    return this.#executor.exec(actors, decide, extra);
  }

  /**
   * Runs a command (executor.ts): prepares its facts before anything is held, then holds the
   * actors it names and decides as `exec` does, in the same run, the reply being `render` of
   * the command's result (prepared again if the decision finds its facts outdated).
   */
  run<I, R, V, F>(command: Command<S, I, R, E, F>, input: I, render: (result: R) => V, extra?: ExtraEvents<V>): Promise<V> {
    return this.#executor.run(command, input, render, extra);
  }

  /**
   * Answers `query` on the state now, once everything applied so far is durable, a refusal
   * too: a read never shows what a crash could take back. (Run after a wait instead, it saw
   * what was applied during the wait, before that was durable.)
   */
  read<I, R>(query: Query<S, I, R>, input: I): Promise<R> {
    let answer: R;
    try {
      answer = query(input, this.#machine, this.clock.now());
    } catch (err) {
      return this.settled().then(() => Promise.reject(err));
    }
    return this.settled().then(() => answer);
  }

  /** Reads see only durable state: wait until everything applied so far is on disk. */
  settled(): Promise<void> {
    return this.#executor.settled();
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
    this.#scheduler.effects.register(kind, runner as EffectRunner<E, never, unknown>);
  }

  idempotencyRecord(key: string): IdempotencyRecord | undefined {
    return this.#idempotency.find(key, this.clock.now());
  }

  /** Byte strings `name` kept beside the log (blob-store.ts): where the storage keeps them, else its table `name`; the engine must be open. */
  blobs(name: string): BlobStore {
    return this.#storage.blobs?.(name) ?? new TableBlobStore(this.#storage.table<string>(name));
  }

  /** Takes a snapshot now (also used by tests and on shutdown). */
  snapshot(): Promise<void> {
    return this.#snapshots.snapshot();
  }

  /** Final commit: waits for pending entries and a running snapshot, then closes the store. */
  async close(): Promise<void> {
    if (this.#lifecycle.storeClosed) return;
    this.#lifecycle.storeClosed = true;
    this.#lifecycle.closed = true;
    this.#snapshots.hurry();
    this.#scheduler.stop();
    await this.#log.drain().catch((err: unknown) => {
      // After a fatal failure there is nothing more to commit; the store is closed anyway.
      if (!this.#lifecycle.failed) throw err;
    });
    await this.#snapshots.idle();
    await this.#storage.close();
  }

  #applyEntry(entry: LoggedEntry<E>): void {
    for (const event of entry.events) this.#applyEvent(event, entry.at);
  }

  #applyEvent(event: LoggedEvent<E>, at: number): void {
    switch (event.type) {
      case '$timer.set':
      case '$timer.done':
      case '$timer.cancel':
      case '$timer.retry':
      case '$timer.dead':
      case '$effect.add':
      case '$effect.done':
      case '$effect.retry':
      case '$effect.dead':
        this.#scheduler.apply(event as EngineEvent<unknown>);
        return;
      case '$idempotency':
        this.#idempotency.apply((event as Extract<EngineEvent<unknown>, { type: '$idempotency' }>).record, at, (id) => this.#machine.recordOf?.(id));
        return;
      default:
        this.#machine.apply(event as E, at);
    }
  }

  /**
   * Memory may be ahead of disk: refuse everything from now on and stop (by default the
   * process exits 70), so recovery restores what was acknowledged. Returns the error for
   * the caller to throw when an injected `onFatal` returns.
   */
  #fatal(what: string, err: Error): Error {
    if (!this.#lifecycle.failed) {
      this.#lifecycle.failed = true;
      this.#lifecycle.closed = true;
      this.#snapshots.stopTicker();
      this.#scheduler.stop();
      this.#opts.report(`fatal: ${what}: ${err.stack ?? err.message}`, { event: 'engine.fatal', level: 'fatal', what, error: err.message });
      (this.#opts.onFatal ?? exitOnFatal)(what, err);
    }
    return new EngineClosedError();
  }
}

function exitOnFatal(): void {
  process.exit(70);
}
