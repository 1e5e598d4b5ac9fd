// Reading a store without changing it: what the log tool (scripts/wal.ts) reports of the
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
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import { ManualClock } from './clock.js';
import { Engine } from './engine.js';
import { StoreCorruptError } from './format.js';
import { decodeGroup, logTable, type LogEntry } from './log.js';
import { LmdbStorage, type Storage, type StorageTable } from './storage.js';
import { SnapshotStore, type SnapshotImage } from './snapshot.js';
import { DATA_FILE, inspectStore, STORE_MAP_BYTES, StoreDamagedError } from './store.js';
import type { DomainEvent, Effect, EngineEvent, IdempotencyRecord, StateMachine, Timer } from './state-machine.js';

/** There is no store to read in the directory. */
export class NoStoreError extends Error {
  constructor(dataDir: string, state: string) {
    super(`${join(dataDir, DATA_FILE)} ${state}: there is no store to read`);
    this.name = 'NoStoreError';
  }
}

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

/**
 * The LMDB environment of `dataDir`, read-only, after the checks of `inspectStore` (a
 * truncated data.mdb is refused with StoreDamagedError before LMDB maps it). The map size is
 * the service's, so a store the service grows while this reads stays within the map.
 */
export function openStoreReadOnly(dataDir: string): RootDatabase {
  const contents = inspectStore(dataDir);
  if (contents.kind === 'missing') throw new NoStoreError(dataDir, 'does not exist');
  if (contents.kind === 'zero-length') throw new NoStoreError(dataDir, 'is empty (0 bytes)');
  return open({ path: dataDir, noSubdir: false, readOnly: true, mapSize: STORE_MAP_BYTES });
}

/** Runs `read` on the store of `dataDir` opened read-only, and closes it again. */
export async function withStore<R>(dataDir: string, read: (store: StoreReader) => R): Promise<R> {
  const storage = new LmdbStorage(openStoreReadOnly(dataDir));
  try {
    return read(new StoreReader(storage));
  } finally {
    await storage.close();
  }
}

/** One stored log value: a commit group (format version 2), or one entry (version 1). */
interface LogValue {
  key: number;
  bytes: Buffer;
}

/** What one opened store holds: its log values and its snapshot layouts. */
export class StoreReader {
  readonly log: StorageTable<number>;
  readonly #storage: Storage;
  #snapshots: SnapshotStore<unknown> | undefined;
  /** The loaded snapshot: undefined until loaded, null when there is none. */
  #image: SnapshotImage<unknown> | null | undefined;

  constructor(storage: Storage) {
    this.#storage = storage;
    this.log = logTable(storage);
  }

  /** The snapshot layouts; opening them reads and verifies the manifest (StoreCorruptError when damaged). */
  get snapshots(): SnapshotStore<unknown> {
    this.#snapshots ??= new SnapshotStore<unknown>(this.#storage);
    return this.#snapshots;
  }

  /** The latest complete snapshot, loaded and verified as recovery loads it (once); undefined when there is none. */
  snapshot(): SnapshotImage<unknown> | undefined {
    this.#image ??= this.snapshots.load() ?? null;
    return this.#image ?? undefined;
  }

  /** The latest snapshot's sequence: from the manifest when the current layout has one, else by loading an older layout. */
  snapshotSeq(): number | undefined {
    return this.snapshots.manifest?.seq ?? this.snapshot()?.seq;
  }

  /** The stored log values in sequence order, undecoded. */
  *values(): Generator<LogValue> {
    for (const { key, value } of this.log.getRange()) yield { key, bytes: value };
  }

  /** The first sequence in the log, undefined when it is empty: a value's key is its first entry's. */
  firstSeq(): number | undefined {
    for (const key of this.log.getKeys({ limit: 1 })) return key;
    return undefined;
  }

  /** The key of the last log value (the first sequence it holds), undefined when the log is empty. */
  lastKey(): number | undefined {
    for (const key of this.log.getKeys({ reverse: true, limit: 1 })) return key;
    return undefined;
  }

  /** The last sequence in the log (its last value decoded and verified), undefined when it is empty. */
  lastSeq(): number | undefined {
    for (const { key, value } of this.log.getRange({ reverse: true, limit: 1 })) return decodeGroup(key, value).at(-1)!.seq;
    return undefined;
  }

  /**
   * The verified entries with sequences from `from` through `to`, in order, each following the
   * one before (StoreCorruptError names the first that does not). `complete`: the first must
   * be `from` and the last `to`; otherwise the range is what the log holds of it.
   */
  *entries<E>(from: number, to: number, complete: boolean): Generator<LogEntry<E>> {
    // The value holding `from` may start before it: a group holds many entries.
    let start = from;
    for (const key of this.log.getKeys({ start: from, reverse: true, limit: 1 })) start = key;
    let expected: number | undefined = complete ? from : undefined;
    for (const { key, value } of this.log.getRange({ start })) {
      if (key > to) break;
      for (const entry of decodeGroup<E>(key, value)) {
        if (entry.seq < from) continue;
        if (entry.seq > to) break;
        if (expected !== undefined && entry.seq !== expected) throw continuityError(expected, entry.seq);
        expected = entry.seq + 1;
        yield entry;
      }
    }
    const next = expected ?? from;
    if (complete && next <= to) throw new StoreCorruptError(`log entry ${next}`, `missing (the log ends at ${next - 1})`);
  }
}

/** The entry after `expected - 1` is not `expected`. */
function continuityError(expected: number, found: number): StoreCorruptError {
  return found > expected
    ? new StoreCorruptError(`log entry ${expected}`, `missing (the log goes on at ${found})`)
    : new StoreCorruptError(`log entry ${found}`, `stored twice (the log had reached ${expected - 1})`);
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

/** A value that JSON can carry without loss. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * `value` as JSON can carry it, the one encoding of the tool's output and of state digests:
 * bytes (Buffer, Uint8Array) as {"$binary": base64}, bigints as {"$bigint": decimal},
 * non-finite numbers as {"$number": "NaN" | "Infinity" | "-Infinity"}, dates as ISO strings;
 * properties whose value is undefined are left out (as JSON.stringify does), undefined in an
 * array is null. With `sortKeys` every object's keys are in sorted order, so equal values
 * encode to equal text whatever order their properties were set in. Anything else (a Map, a
 * class instance) is refused rather than encoded lossily.
 */
export function toJsonValue(value: unknown, sortKeys: boolean): JsonValue {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case 'boolean':
    case 'string':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : { $number: String(value) };
    case 'bigint':
      return { $bigint: value.toString() };
    case 'object':
      break;
    default:
      throw new TypeError(`cannot encode a ${typeof value} as JSON`);
  }
  if (value instanceof Uint8Array) return { $binary: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') };
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map((item: unknown) => toJsonValue(item, sortKeys));
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) throw new TypeError(`cannot encode a ${value.constructor.name} as JSON`);
  const out: { [key: string]: JsonValue } = {};
  const keys = Object.keys(value);
  if (sortKeys) keys.sort();
  for (const key of keys) {
    const item = (value as Record<string, unknown>)[key];
    if (item !== undefined) out[key] = toJsonValue(item, sortKeys);
  }
  return out;
}

/** The state a replay rebuilt: the domain's records and the engine's pending items. */
export interface RebuiltState<T> {
  records: ReadonlyArray<readonly [string, unknown]>;
  timers: ReadonlyArray<Timer<T>>;
  effects: readonly Effect[];
  /** In insertion order. */
  idempotency: readonly IdempotencyRecord[];
}

export interface StateDigests {
  /** sha256 of the lines `records <hex>`, `timers <hex>`, `effects <hex>`, `idempotency <hex>`, each ending in a newline. */
  state: string;
  /** Per section, sha256 of its items' canonical JSON (toJsonValue with sorted keys), one line each. */
  records: string;
  timers: string;
  effects: string;
  idempotency: string;
}

function digestOfLines(items: Iterable<unknown>): string {
  const hash = createHash('sha256');
  for (const item of items) hash.update(JSON.stringify(toJsonValue(item, true)) + '\n');
  return hash.digest('hex');
}

function byId<V extends { id: string }>(items: readonly V[]): V[] {
  return [...items].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * A digest of a state that depends on nothing but the state: records as [id, record] sorted
 * by id, timers and effects sorted by id, idempotency records in insertion order (which
 * decides which go first), each item canonically encoded (toJsonValue with sorted keys).
 */
export function stateDigests<T>(state: RebuiltState<T>): StateDigests {
  const records = digestOfLines([...state.records].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
  const timers = digestOfLines(byId(state.timers));
  const effects = digestOfLines(byId(state.effects));
  const idempotency = digestOfLines(state.idempotency);
  const whole = createHash('sha256').update(`records ${records}\ntimers ${timers}\neffects ${effects}\nidempotency ${idempotency}\n`).digest('hex');
  return { state: whole, records, timers, effects, idempotency };
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
