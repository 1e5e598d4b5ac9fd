// Recovery: the state as the log left it, rebuilt at open. The newest snapshot (the store's
// own, or one the storage offers that is newer) is restored, the log after it is replayed
// entry by entry, verified (checksums, and no gap in the sequence), and the machine's
// invariants are checked; only then is anything armed or run. The replay yields to the event
// loop every REPLAY_SLICE_MS, so the process answers readiness probes and signals meanwhile,
// and an abort signal stops it there with nothing written.
import { StoreCorruptError } from './format.js';
import type { WriteAheadLog } from './log.js';
import type { EngineObserver, Report } from './report.js';
import { streamOf, type SnapshotImage, type SnapshotStream } from './snapshot-image.js';
import type { SnapshotStore } from './snapshot.js';
import type { DomainEvent, StateMachine } from './state-machine.js';
import type { LoggedEntry, LoggedEvent } from './executor.js';

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
/**
 * The clock is read once per this many entries, not per entry: reading it was 3-4% of a
 * replay of small entries; a slice runs over by at most this many entries less one.
 */
const ENTRIES_PER_CLOCK_READ = 16;

/** How far recovery is: entries replayed of those to replay (after the snapshot). */
export interface RecoveryProgress {
  replayed: number;
  total: number;
}

export interface RecoveryReport {
  snapshotSeq: number;
  replayed: number;
  lastSeq: number;
  ms: number;
}

/** What recovery needs of the rest of the engine. */
export interface RecoveryParts<E, T> {
  machine: Pick<StateMachine<DomainEvent, T>, 'checkInvariants'>;
  log: WriteAheadLog<LoggedEvent<E>>;
  store: SnapshotStore<T>;
  /** A snapshot kept outside the store, used when it is newer than the store's own. */
  offered: SnapshotImage<T> | undefined;
  /** Puts a snapshot into the machine and the engine's tables, its records as they are read. */
  restore: (snapshot: SnapshotStream<T>) => void;
  /** Tells the snapshot policy where the restored snapshot is (its sequence), and whether the next one must be full. */
  restored: (seq: number, fullNext: boolean) => void;
  /** Applies one replayed entry as it was applied when it was made. */
  applyEntry: (entry: LoggedEntry<E>) => void;
  /** Starts what recovery held back (timers, effects, the snapshot ticker); the state is whole. */
  resume: () => void;
  /** Told of the replay's progress as it goes (readiness reports it). */
  progress: (progress: RecoveryProgress) => void;
  report: Report;
  observer: EngineObserver | undefined;
  /** Reads the time (ms) that paces the replay's slices. */
  workMeter: () => number;
}

/** Recovers the state into the machine and the engine's tables, then resumes the engine. `started`: when opening began (performance.now). */
export async function recover<E, T>(parts: RecoveryParts<E, T>, started: number, signal: AbortSignal | undefined): Promise<RecoveryReport> {
  const { log, report } = parts;
  // The store's own snapshot is read as it is restored: only its manifest and what changed since its base are read now.
  const own = parts.store.stream();
  const base = parts.offered;
  const image = base !== undefined && (own === undefined || base.seq > own.seq) ? streamOf(base) : own;
  const openMs = performance.now() - started;
  // Before any new snapshot, so none of them can ever count.
  const leftovers = await parts.store.removeLeftovers();
  if (leftovers > 0) report(`recovery: removed ${leftovers} values of an abandoned snapshot`, { event: 'recovery.leftovers', removed: leftovers });
  let snapshotSeq = 0;
  if (image !== undefined) {
    const restoreStarted = performance.now();
    parts.restore(image);
    // The store's own snapshots do not build on an image from outside it.
    parts.restored(image.seq, image.legacy || image !== own);
    const restoreMs = Math.round(performance.now() - restoreStarted);
    const { idempotency } = image.rest();
    report(
      `recovery: snapshot at ${image.seq} loaded: ${image.recordsRead} records, ${idempotency.length} idempotency records ` +
        `(read ${Math.round(openMs)} ms, restored ${restoreMs} ms)`,
      { event: 'recovery.snapshot', seq: image.seq, records: image.recordsRead, idempotencyRecords: idempotency.length, readMs: Math.round(openMs), restoreMs },
    );
    snapshotSeq = image.seq;
    log.resumeAfter(image.seq);
  }

  const replayStarted = performance.now();
  const replayed = await replayTail(parts, snapshotSeq, signal);
  const replayMs = performance.now() - replayStarted;
  const violations = parts.machine.checkInvariants();
  if (violations.length > 0) throw new Error(`invariants violated after recovery:\n  ${violations.join('\n  ')}`);

  parts.resume();
  const ms = Math.round(performance.now() - started);
  if (replayed > 0 || image !== undefined) {
    const rate = Math.round(replayed / Math.max(replayMs / 1000, 0.001));
    report(
      `recovery: snapshot at ${snapshotSeq}, replayed ${replayed} entries in ${ms} ms` +
        (replayed > 0 ? ` (the replay itself ${Math.round(replayMs)} ms, ${rate} entries/s)` : ''),
      { event: 'recovery.done', snapshotSeq, replayed, ms, replayMs: Math.round(replayMs), entriesPerSecond: rate },
    );
  }
  return { snapshotSeq, replayed, lastSeq: log.lastSeq, ms };
}

/** Applies the log after the snapshot at `snapshotSeq`, pausing for the event loop between slices. */
async function replayTail<E, T>(parts: RecoveryParts<E, T>, snapshotSeq: number, signal: AbortSignal | undefined): Promise<number> {
  const { log, observer, workMeter } = parts;
  const progress: RecoveryProgress = { replayed: 0, total: log.countAfter(snapshotSeq) };
  parts.progress(progress);
  const replayStarted = workMeter();
  let expected = snapshotSeq + 1;
  let lastReport = replayStarted;
  let sliceStarted = replayStarted;
  let observed = 0;
  for (const entry of log.readAfter(snapshotSeq)) {
    if (entry.seq !== expected) {
      throw new StoreCorruptError(`log entry ${expected}`, `missing (the log goes on at ${entry.seq})`);
    }
    parts.applyEntry(entry);
    expected++;
    progress.replayed++;
    if (progress.replayed % ENTRIES_PER_CLOCK_READ !== 0) continue;
    const now = workMeter();
    if (now - sliceStarted < REPLAY_SLICE_MS) continue;
    observer?.replayed(progress.replayed - observed);
    observed = progress.replayed;
    if (now - lastReport >= 1000) {
      const rate = Math.round(progress.replayed / ((now - replayStarted) / 1000));
      parts.report(`recovery: replayed ${progress.replayed}/${progress.total} log entries (${rate} entries/s)`, {
        event: 'recovery.progress',
        replayed: progress.replayed,
        total: progress.total,
        entriesPerSecond: rate,
      });
      lastReport = now;
    }
    await new Promise<void>((resume) => setImmediate(resume));
    if (signal?.aborted === true) throw new RecoveryAbortedError(progress.replayed, progress.total);
    sliceStarted = workMeter();
  }
  observer?.replayed(progress.replayed - observed);
  return progress.replayed;
}
