// The snapshot policy: when the engine takes a snapshot and what it writes. One is taken in
// the background after `everyEntries` entries since the last, or by the ticker every
// `everyMs` if anything was logged since, and on demand (`snapshot`). It is incremental
// (what changed since the previous one) unless a full one is due: none yet in the current
// layout, the last one failed, recovery started from an image the store's own snapshots do
// not build on, or the store asks for one (its increments outgrew the base). Once written,
// the log is trimmed through it and the storage is told of it.
import type { Clock } from './clock.js';
import type { EffectTable } from './effects.js';
import type { IdempotencyTable } from './idempotency-table.js';
import { EngineClosedError, asError, type Lifecycle } from './lifecycle.js';
import type { WriteAheadLog } from './log.js';
import type { EngineObserver, Report } from './report.js';
import type { SnapshotStats, SnapshotWrite } from './snapshot-image.js';
import { sameLazyKinds, type SnapshotStore } from './snapshot.js';
import type { DomainEvent, LazyWritten, StateMachine } from './state-machine.js';
import type { LazySnapshot } from './snapshot-lazy.js';
import { nextTurn } from './snapshot-layout.js';
import type { Storage } from './storage.js';
import type { TimerTable } from './timers.js';

/** What the snapshot policy needs of the rest of the engine. */
export interface SnapshotParts<T> {
  clock: Clock;
  machine: Pick<StateMachine<DomainEvent, T>, 'capture' | 'captureChanges' | 'captureColumns' | 'storedForm' | 'lazyKeys' | 'lazyKinds' | 'lazyWritten'>;
  log: WriteAheadLog<unknown>;
  store: SnapshotStore<T>;
  timers: TimerTable<T>;
  effects: EffectTable<unknown>;
  idempotency: IdempotencyTable;
  lifecycle: Lifecycle;
  report: Report;
  observer: EngineObserver | undefined;
  /** The storage, told of each snapshot written. */
  storage: Storage;
  /** Snapshot after this many entries since the last one... */
  everyEntries: number;
  /** ...or after this many ms, if anything was logged since. */
  everyMs: number;
}

/** Records a snapshot put in lazy chunks that the machine is told of per turn (`#drop`). */
const DROP_SLICE = 8_192;

export class SnapshotPolicy<T> {
  #seq = 0;
  /** The next snapshot writes everything (none yet in the current layout, or the last one failed). */
  #fullNext = true;
  #running: Promise<void> | undefined;
  #last: SnapshotStats | undefined;
  #ticker: (() => void) | undefined;
  readonly #parts: SnapshotParts<T>;

  constructor(parts: SnapshotParts<T>) {
    this.#parts = parts;
  }

  /** The sequence the latest snapshot is at (0: none). */
  get seq(): number {
    return this.#seq;
  }

  /** What the last snapshot of this process wrote and removed. */
  get last(): SnapshotStats | undefined {
    return this.#last;
  }

  /** Recovery restored the snapshot at `seq`; `full`: the next snapshot must write everything. */
  restored(seq: number, full: boolean): void {
    this.#seq = seq;
    this.#fullNext = full;
  }

  /** An entry is durable: snapshot in the background once enough entries came since the last. */
  committed(): void {
    if (this.#running !== undefined || this.#parts.lifecycle.closed) return;
    if (this.#parts.log.lastSeq - this.#seq >= this.#parts.everyEntries) this.#background();
  }

  /** Starts the ticker that snapshots every `everyMs` if anything was logged since. */
  startTicker(): void {
    const clock = this.#parts.clock;
    const tick = (): void => {
      if (this.#parts.lifecycle.closed) return;
      if (this.#parts.log.lastSeq > this.#seq) this.#background();
      this.#ticker = clock.schedule(clock.now() + this.#parts.everyMs, tick);
    };
    this.#ticker = clock.schedule(clock.now() + this.#parts.everyMs, tick);
  }

  stopTicker(): void {
    this.#ticker?.();
  }

  /** Closing: no more ticks, and a snapshot in progress writes at full speed (nothing else runs now). */
  hurry(): void {
    this.stopTicker();
    this.#parts.store.hurry();
  }

  /** Resolves once the snapshot in progress, if any, is done (its failure is its starter's: reported, or rejected to the caller). */
  async idle(): Promise<void> {
    if (this.#running !== undefined) await this.#running.catch(() => undefined);
  }

  /** Takes a snapshot now (also used by tests and on shutdown). */
  snapshot(): Promise<void> {
    if (this.#parts.lifecycle.failed) return Promise.reject(new EngineClosedError());
    if (this.#running !== undefined) return this.#running;
    const seq = this.#parts.log.lastSeq;
    if (seq === this.#seq) return Promise.resolve();
    const captured = this.#capture(seq);
    this.#running = (async () => {
      try {
        await this.#write(captured);
      } catch (err) {
        // What this one captured is no longer tracked anywhere: the next one writes everything.
        this.#fullNext = true;
        throw err;
      } finally {
        this.#running = undefined;
      }
    })();
    return this.#running;
  }

  /** Writes what was captured once the log holds it durably, trims the log, reports, and tells the storage. */
  async #write(captured: SnapshotWrite<T>): Promise<void> {
    const { log, store, report, observer, storage } = this.#parts;
    const seq = captured.seq;
    const started = performance.now();
    await log.whenDurable(seq);
    // Told once the store holds it: the machine may drop what it put in lazy chunks.
    let dropping: { lazy: LazySnapshot; written: LazyWritten; generation: number } | undefined;
    const stats = await store.write(captured, (lazy, written, generation) => (dropping = { lazy, written, generation }));
    if (dropping !== undefined) await this.#drop(dropping.lazy, dropping.written, dropping.generation);
    this.#seq = seq;
    this.#last = stats;
    const trimmed = await log.trimThrough(seq);
    const ms = performance.now() - started;
    observer?.snapshotWritten(ms / 1000);
    report(
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
    storage.snapshotWritten?.(seq, () => {
      const written = store.load();
      if (written === undefined || written.seq !== seq) throw new Error(`the snapshot at ${seq} is not the store's newest`);
      return written;
    });
  }

  /**
   * Tells the machine of the records a snapshot put in lazy chunks, DROP_SLICE a turn: a
   * payment load's snapshot names hundreds of thousands, and dropping each from its map costs
   * about 1.6 µs, so in one turn it held requests up for a third of a second. A closing engine
   * drops nothing (its memory is going). The store holds the generation before the machine
   * drops its records, so reads in between may read its chunks: each slice dropped, they are
   * read again when asked for (LazySnapshot.dropped).
   */
  async #drop(lazy: LazySnapshot, written: LazyWritten, generation: number): Promise<void> {
    const machine = this.#parts.machine;
    for (let from = 0; !this.#parts.lifecycle.closed; from += DROP_SLICE) {
      const to = Math.min(from + DROP_SLICE, written.ids.length);
      const slice = { ids: written.ids.slice(from, to), records: written.records.slice(from, to) };
      machine.lazyWritten?.(lazy, slice);
      lazy.dropped(generation);
      if (to >= written.ids.length) return;
      await nextTurn();
    }
  }

  /**
   * Synchronous: references to everything (full) or to what changed since the previous
   * capture; records, timers, effects and idempotency records are immutable, so they can be
   * encoded later while new entries apply.
   */
  #capture(seq: number): SnapshotWrite<T> {
    const { machine, timers, effects, idempotency } = this.#parts;
    // A base written before lazy chunks existed, or of other kinds, holds some records built: the next base leaves them to be read on first use.
    const manifest = this.#parts.store.manifest;
    const upgrade = machine.lazyKeys !== undefined && (manifest?.lazy !== true || !sameLazyKinds(manifest.lazyKinds, machine.lazyKinds));
    const full = this.#fullNext || this.#parts.store.wantsFull || upgrade || machine.captureChanges === undefined;
    this.#fullNext = false;
    const counts = { timers: timers.size, effects: effects.size, idempotency: idempotency.size };
    const at = this.#parts.clock.now();
    const storedForm = machine.storedForm?.bind(machine);
    const lazyKeys = machine.lazyKeys?.bind(machine);
    const lazyKinds = machine.lazyKinds;
    if (!full) {
      return {
        seq,
        at,
        full,
        counts,
        storedForm,
        lazyKeys,
        lazyKinds,
        records: machine.captureChanges!(),
        timers: timers.takeChanges(),
        effects: effects.takeChanges(),
        // Each reply whole: one named by its record's id went wrong once a later snapshot wrote that record changed or removed.
        idempotency: idempotency.captureChanges(),
      };
    }
    timers.forgetChanges();
    effects.forgetChanges();
    return {
      seq,
      at,
      full,
      counts,
      storedForm,
      lazyKeys,
      lazyKinds,
      records: machine.captureColumns?.() ?? machine.capture(),
      timers: [...timers.values()].map((timer) => [timer.id, timer] as const),
      effects: [...effects.values()].map((effect) => [effect.id, effect] as const),
      idempotency: idempotency.captureAll(),
    };
  }

  #background(): void {
    this.snapshot().catch((err: unknown) => {
      this.#parts.report(`snapshot failed: ${asError(err).message}`, { event: 'snapshot.failed', level: 'error', error: asError(err).message });
    });
  }
}
