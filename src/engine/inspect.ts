// Reading a store without changing it (store-reader.ts): what the log tool (scripts/wal.ts) reports of the
// write-ahead log and the snapshot, for people testing crash recovery and for operators.
//
// The store is opened read-only (lmdb's `readOnly`: LMDB's MDB_RDONLY, and lmdb-js then has no
// write methods at all), beside a running service or not, and the data directory's lock
// (src/data-dir.ts) is not taken: a reader needs no ownership. `data.mdb` is never written;
// LMDB itself records the reader in `lock.mdb`'s reader table while it reads, as every LMDB
// reader must (so that the writer does not reuse pages it is reading).
//
// Each command reads in one synchronous run: lmdb-js keeps one read transaction until the
// event loop turns, so the snapshot and the log are read as of one commit even while the
// service writes (and trims the log under a new snapshot) meanwhile.
//
// Values are verified as recovery verifies them (format.ts: version and checksum;
// log.ts: the group's shape), and replay applies entries through the engine's own recovery
// path (Engine.rebuild), so what is reported here is what a restart would see.
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { ManualClock } from './clock.js';
import { Engine } from './engine.js';
import { StoreCorruptError } from './format.js';
import { decodeGroup, type LogEntry } from './log.js';
import type { SnapshotImage } from './snapshot.js';
import { stateDigests, type StateDigests } from './state-digest.js';
import { DATA_FILE, StoreDamagedError } from './store.js';
import { continuityError, withStore, type StoreReader } from './store-reader.js';
import type { DomainEvent, EngineEvent, StateMachine } from './state-machine.js';

/** The state at a sequence cannot be rebuilt: the log before the snapshot was removed when it was taken. */
export class BeforeSnapshotError extends Error {
  constructor(
    readonly seq: number,
    readonly snapshotSeq: number,
  ) {
    super(
      `the state at ${seq} cannot be rebuilt: the log up to ${snapshotSeq} was removed when the snapshot at ${snapshotSeq} was taken, ` +
        `so the oldest state this store holds is at ${snapshotSeq} (replay --until ${snapshotSeq} or later)`,
    );
    this.name = 'BeforeSnapshotError';
  }
}

/** A sequence past the end of the store. */
export class PastEndError extends Error {
  constructor(seq: number, last: number) {
    super(`the store ends at sequence ${last}; there is no state at ${seq}`);
    this.name = 'PastEndError';
  }
}

/** Counts per key, in a JSON object with its keys sorted (so the same store prints the same). */
function sortedCounts(counts: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of [...counts.keys()].sort()) out[key] = counts.get(key)!;
  return out;
}

/** A record id's kind: its prefix before the colon (`Customer` of `Customer:0199…`). */
function kindOf(id: string): string {
  const colon = id.indexOf(':');
  return colon < 0 ? id : id.slice(0, colon);
}

/** Records per kind of a snapshot image or a rebuilt state. */
function recordsPerKind(records: Iterable<readonly [string, unknown]>): Record<string, number> {
  const counts = new Map<string, number>();
  for (const [id] of records) counts.set(kindOf(id), (counts.get(kindOf(id)) ?? 0) + 1);
  return sortedCounts(counts);
}

export interface LogStats {
  /** Entries (one per decision, timer firing or effect outcome). */
  entries: number;
  /** Stored values: one per commit group (entries appended in one event-loop turn), a group of more than MAX_GROUP_ENTRIES split over several; one per entry in format version 1. */
  values: number;
  /** Values per format version (format.ts). */
  valuesByFormat: Record<string, number>;
  firstSeq: number | null;
  lastSeq: number | null;
  /** Bytes of the stored values (header, checksum and payload), not counting LMDB's pages. */
  bytes: number;
  /** Events per type, over every entry in the log. */
  eventTypes: Record<string, number>;
}

export interface SnapshotSummary {
  seq: number;
  /** The clock reading (ms) at which it was taken, as an ISO time. */
  takenAt: string;
  /** `chunks` (the current layout) or `older` (a layout the next snapshot rewrites). */
  layout: 'chunks' | 'older';
  /** In the current layout: its generation, and the full snapshot's it builds on. */
  generation: number | null;
  base: number | null;
  records: Record<string, number>;
  timers: number;
  effects: number;
  idempotencyRecords: number;
}

export interface StoreStats {
  dataDir: string;
  dataFileBytes: number;
  log: LogStats;
  snapshot: SnapshotSummary | null;
}

/** Decodes every log value (verifying each) and counts what it holds. */
function logStats(store: StoreReader): LogStats {
  const stats: LogStats = { entries: 0, values: 0, valuesByFormat: {}, firstSeq: null, lastSeq: null, bytes: 0, eventTypes: {} };
  const formats = new Map<string, number>();
  const types = new Map<string, number>();
  for (const { key, bytes } of store.values()) {
    const entries = decodeGroup<{ type?: unknown }>(key, bytes);
    stats.values++;
    stats.bytes += bytes.length;
    stats.entries += entries.length;
    stats.firstSeq ??= key;
    stats.lastSeq = entries.at(-1)!.seq;
    const format = String(bytes[0]);
    formats.set(format, (formats.get(format) ?? 0) + 1);
    for (const entry of entries) {
      for (const event of entry.events) {
        const type = String(event?.type);
        types.set(type, (types.get(type) ?? 0) + 1);
      }
    }
  }
  stats.valuesByFormat = sortedCounts(formats);
  stats.eventTypes = sortedCounts(types);
  return stats;
}

/** The latest complete snapshot, loaded and verified as recovery loads it; null when there is none. */
function snapshotSummary(store: StoreReader): SnapshotSummary | null {
  const image = store.snapshot();
  if (image === undefined) return null;
  const manifest = store.snapshots.manifest;
  return {
    seq: image.seq,
    takenAt: new Date(image.at).toISOString(),
    layout: image.legacy ? 'older' : 'chunks',
    generation: manifest?.generation ?? null,
    base: manifest?.base ?? null,
    records: recordsPerKind(image.records),
    timers: image.timers.length,
    effects: image.effects.length,
    idempotencyRecords: image.idempotency.length,
  };
}

/** `wal stat`: the log's entries, values, bounds, bytes and event types, and the snapshot's counts. */
export function storeStats(dataDir: string): Promise<StoreStats> {
  return withStore(dataDir, (store) => ({
    dataDir,
    dataFileBytes: statSync(join(dataDir, DATA_FILE)).size,
    log: logStats(store),
    snapshot: snapshotSummary(store),
  }));
}

/** One thing verify found wrong. */
export interface Problem {
  /** The first sequence it concerns, when it concerns one. */
  seq: number | null;
  where: string;
  problem: string;
}

export interface VerifyReport {
  ok: boolean;
  /** The lowest sequence a problem concerns (null: none, or only problems that concern no sequence). */
  firstBadSeq: number | null;
  problems: Problem[];
  log: { values: number; entries: number; firstSeq: number | null; lastSeq: number | null };
  snapshot: { seq: number; records: number; timers: number; effects: number; idempotencyRecords: number } | null;
}

/** Progress of a long check: `done` of `total` (both in sequences). */
export type Progress = (done: number, total: number) => void;

/** A problem of a thrown error: StoreCorruptError and StoreDamagedError name their place; anything else is not a finding. */
function problemOf(err: unknown, seq: number | null): Problem {
  if (err instanceof StoreCorruptError) return { seq, where: err.where, problem: err.problem };
  if (err instanceof StoreDamagedError) return { seq, where: err.path, problem: err.message };
  throw err;
}

/** Loads and verifies the snapshot (manifest, every chunk, counts); a problem names its sequence when the manifest is readable. */
function verifySnapshot(store: StoreReader, problems: Problem[]): VerifyReport['snapshot'] {
  let seq: number | null = null;
  try {
    seq = store.snapshots.manifest?.seq ?? null;
    const image = store.snapshot();
    if (image === undefined) return null;
    return { seq: image.seq, records: image.records.length, timers: image.timers.length, effects: image.effects.length, idempotencyRecords: image.idempotency.length };
  } catch (err) {
    problems.push(problemOf(err, seq));
    return null;
  }
}

/** The entries a damaged value held, as far as the next value's key (undefined: it was the last) tells. */
function heldEntries(key: number, nextKey: number | undefined): string {
  if (nextKey === undefined) return `entries from ${key} on`;
  return nextKey - 1 > key ? `entries ${key} to ${nextKey - 1}` : `entry ${key}`;
}

/**
 * Verifies every log value (version, checksum, shape, each event a typed object) and that the
 * log is one run of sequences, starting at or before the one after the snapshot (at 1 without
 * one). A damaged value is named by its first sequence, with the entries it held as far as the
 * next value's key tells; checking goes on after it.
 */
function verifyLog(store: StoreReader, snapshotSeq: number, problems: Problem[], progress?: Progress): VerifyReport['log'] {
  const summary: VerifyReport['log'] = { values: 0, entries: 0, firstSeq: null, lastSeq: null };
  const firstKey = store.firstSeq() ?? 0;
  const span = (store.lastKey() ?? 0) - firstKey;
  // The last sequence read; undefined before the first entry and after a damaged value (whose extent is unknown).
  let previous: number | undefined;
  // The problem of the value just before, if it was damaged: the next key tells what it held.
  let damaged: { problem: Problem; key: number } | undefined;
  for (const { key, bytes } of store.values()) {
    if (damaged !== undefined) damaged.problem.problem += ` (its value held ${heldEntries(damaged.key, key)})`;
    damaged = undefined;
    progress?.(key - firstKey, span);
    if (summary.values === 0 && key > snapshotSeq + 1) {
      const after = snapshotSeq === 0 ? ' and there is no snapshot' : `, after the snapshot at ${snapshotSeq}`;
      problems.push({ seq: snapshotSeq + 1, where: `log entry ${snapshotSeq + 1}`, problem: `missing (the log starts at ${key}${after})` });
    }
    summary.values++;
    summary.firstSeq ??= key;
    let entries: Array<LogEntry<unknown>>;
    try {
      entries = decodeGroup<unknown>(key, bytes);
    } catch (err) {
      damaged = { problem: problemOf(err, key), key };
      problems.push(damaged.problem);
      previous = undefined;
      continue;
    }
    for (const entry of entries) {
      if (previous !== undefined && entry.seq !== previous + 1) {
        const err = continuityError(previous + 1, entry.seq);
        problems.push({ seq: Math.min(previous + 1, entry.seq), where: err.where, problem: err.problem });
      }
      const bad = entry.events.findIndex((event) => typeof (event as { type?: unknown } | null)?.type !== 'string');
      if (bad >= 0) problems.push({ seq: entry.seq, where: `log entry ${entry.seq}`, problem: `its event ${bad} has no type` });
      previous = entry.seq;
      summary.entries++;
      summary.lastSeq = entry.seq;
    }
  }
  if (damaged !== undefined) damaged.problem.problem += ` (its value held ${heldEntries(damaged.key, undefined)})`;
  return summary;
}

/** `wal verify`: every value of the log and the snapshot, as recovery would check them, and the sequence's continuity. */
export async function verifyStore(dataDir: string, progress?: Progress): Promise<VerifyReport> {
  const problems: Problem[] = [];
  try {
    return await withStore(dataDir, (store) => {
      const snapshot = verifySnapshot(store, problems);
      const log = verifyLog(store, snapshot?.seq ?? 0, problems, progress);
      problems.sort((a, b) => (a.seq ?? Infinity) - (b.seq ?? Infinity));
      return { ok: problems.length === 0, firstBadSeq: problems[0]?.seq ?? null, problems, log, snapshot };
    });
  } catch (err) {
    // data.mdb is cut short: LMDB cannot even be opened on it.
    if (!(err instanceof StoreDamagedError)) throw err;
    problems.push(problemOf(err, null));
    return { ok: false, firstBadSeq: null, problems, log: { values: 0, entries: 0, firstSeq: null, lastSeq: null }, snapshot: null };
  }
}

/** What `dump` selects. */
export interface DumpFilter {
  from: number;
  to: number;
  /** Only entries with an event of one of these types (all of their events shown); empty: every entry. */
  types: ReadonlySet<string>;
}

/** `wal dump`: the verified entries in the filter's range, in order, that hold an event of its types. */
export function* selectedEntries(store: StoreReader, filter: DumpFilter): Generator<LogEntry<unknown>> {
  for (const entry of store.entries<{ type?: unknown }>(filter.from, filter.to, false)) {
    if (filter.types.size === 0 || entry.events.some((event) => typeof event?.type === 'string' && filter.types.has(event.type))) yield entry;
  }
}

export interface ReplayReport {
  /** The sequence the state is as of. */
  seq: number;
  /** The snapshot it started from (null: the log from its first entry). */
  fromSnapshot: number | null;
  /** Log entries applied after it. */
  replayed: number;
  digest: StateDigests;
  counts: { records: Record<string, number>; timers: number; effects: number; idempotencyRecords: number };
  /** The machine's invariants that do not hold in the rebuilt state. */
  violations: string[];
}

/**
 * Where a replay to `until` starts: the snapshot if it is at or before `until` (as recovery
 * does), else the log from entry 1 if the log still holds it; otherwise the state at `until`
 * is gone (BeforeSnapshotError).
 */
function replayStart(store: StoreReader, until: number, snapshotSeq: number | undefined): SnapshotImage<unknown> | undefined {
  if (snapshotSeq !== undefined && snapshotSeq <= until) return store.snapshot();
  const firstSeq = store.firstSeq();
  if (firstSeq === undefined || firstSeq === 1) return undefined;
  if (snapshotSeq !== undefined) throw new BeforeSnapshotError(until, snapshotSeq);
  throw new StoreCorruptError('log entry 1', `missing (the log starts at ${firstSeq} and there is no snapshot)`);
}

/**
 * `wal replay`: the state as of `until` (default: the end of the store), rebuilt in `machine`
 * (a fresh one) from the latest snapshot at or before it and the log after it, through the
 * engine's recovery path (Engine.rebuild), with the machine's invariants checked. Nothing is
 * written.
 */
export function replayStore<E extends DomainEvent, T, S extends StateMachine<E, T>>(dataDir: string, machine: S, until?: number): Promise<ReplayReport> {
  return withStore(dataDir, (store) => {
    const snapshotSeq = store.snapshotSeq();
    const last = Math.max(store.lastSeq() ?? 0, snapshotSeq ?? 0);
    const seq = until ?? last;
    if (seq > last) throw new PastEndError(seq, last);
    // The store holds what this machine's engine wrote: its timers carry the machine's messages.
    const image = replayStart(store, seq, snapshotSeq) as SnapshotImage<T> | undefined;
    const from = (image?.seq ?? 0) + 1;
    let replayed = 0;
    const entries = function* (): Generator<LogEntry<E | EngineEvent<unknown>>> {
      for (const entry of store.entries<E | EngineEvent<unknown>>(from, seq, true)) {
        replayed++;
        yield entry;
      }
    };
    // Never opened: the engine only applies, as its recovery does (no clock reading, no snapshot, no report).
    const engine = new Engine<E, T, S>({ dataDir, clock: new ManualClock(0), machine, snapshotEveryEntries: 1, snapshotEveryMs: 1, report: () => undefined });
    const pending = engine.rebuild(image, entries());
    const records = machine.capture();
    return {
      seq,
      fromSnapshot: image?.seq ?? null,
      replayed,
      digest: stateDigests({ records, ...pending }),
      counts: { records: recordsPerKind(records), timers: pending.timers.length, effects: pending.effects.length, idempotencyRecords: pending.idempotency.length },
      violations: machine.checkInvariants(),
    };
  });
}
