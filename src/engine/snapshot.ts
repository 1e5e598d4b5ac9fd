// Snapshots: the records, pending timers and effects, and idempotency records as of one log
// sequence. A snapshot is a generation of chunk values in the `snapshots` database, each
// holding many items, so that lmdb does one put and one B-tree insert per chunk, not per item
// (a value per item made lmdb's work, in its write thread and ours, cut the rate of a
// create load to 0.55 of its usual while a snapshot ran, with encoding taken out entirely).
//
// Keys are [generation, chunk]; a chunk is [space, id, item or null (removed)] triples, or
// [space, item] pairs for an item that carries its id (snapshot-writer.ts, Item). A full
// snapshot writes every item in a generation of its own, its `base`; an incremental one writes
// what changed since the previous snapshot in the next generation. Recovery reads the
// generations from base to the manifest's, later ones replacing earlier items. When the items
// written since the base pass COMPACT_AFTER times what the base holds, the next snapshot is
// full again, so recovery reads at most about three times what is live. The manifest is
// switched last: a snapshot abandoned half-written (a higher generation) changes nothing,
// and is removed at the next start; after a full snapshot the generations below it go.
//
// The chunks go to the storage's snapshot tables (storage.ts `snapshotTables`): on LMDB an
// environment of its own, so a log commit never waits for a chunk's transaction, shares its
// fsync or its dirty pages. The log is trimmed under a snapshot only after the snapshot's
// manifest is durable there, so a crash between the two leaves a log that still holds
// everything after the snapshot.
//
// A record is written in the form the machine's `storedForm` makes of it (a customer as a
// fixed layout of its few values, actors/customer.ts), made here in the writer's slices, not
// at capture nor on the hot path; restoring takes either that form or the whole record, so
// the generations written before the form existed still load.
//
// Records the machine names (`lazyKeys`: a million customers, and every payment's settled
// records) go to lazy chunks of their own kind, under negative chunk numbers beside a
// directory per generation (snapshot-lazy.ts); recovery reads only the directories and hands
// them to the machine, which reads a chunk when first asked for one of its records. The
// manifest names those kinds (`lazyKinds`): a base that names others holds their records
// among the rest, and the next snapshot over it is full. The store keeps the chunks of its
// snapshot in one LazySnapshot (`lazy`), which each snapshot written updates before it
// removes anything: a machine that dropped settled records from memory reads them from there.
// A full snapshot copies the chunks the machine names (`carried`: what it dropped) into its
// own, without building their records.
//
// Capture is synchronous and cheap (the engine collects references: records are immutable).
// Encoding runs in the writer (snapshot-writer.ts), a chunk of at most CHUNK_ITEMS items or SLICE_MS of work per event-loop
// turn, each chunk one put; one chunk is in flight at a time, and the writer keeps to
// WRITER_SHARE of the event loop, pausing after each chunk for the rest, so a snapshot costs
// requests a bounded share of the time however much it writes. Closing the engine lifts the
// pause (`hurry`).
//
// Stores written before keep recovering: this layout in the log's own tables (before
// snapshots had their environment), and in those tables the older layouts of
// snapshot-legacy.ts: per-item values under [space, id, generation] in `image` and, before
// them, whole images in chunks under [generation, section, chunk] in `snapshot`. The first
// snapshot taken after any of them is full and removes it. Every value is versioned and
// checksummed (format.ts).
import { decodeStored, encodeStored, StoreCorruptError } from './format.js';
import { ItemSnapshotStore, LegacySnapshotStore } from './snapshot-legacy.js';
import { checkCounts, isGenerationsManifest, MANIFEST_KEY, nextTurn, readManifest, REMOVE_CHUNK, removeInBatches, removeLayout, type Space } from './snapshot-layout.js';
import type { Key, Storage, StorageTable, Tables } from './storage.js';
import type { Effect, IdempotencyRecord, LazyWritten, Timer } from './state-machine.js';
import { expandLazy, LAZY_CHUNK_KEY, lazySource, lazySources, LazySnapshot, type LazyTable } from './snapshot-lazy.js';
import { CHUNK_ITEMS, ChunkBuffer, ChunkWriter, itemId, itemOf, itemValue, LazyChunkBuffer, latestChanges, sectionsOf, type ChunkKey, type Item } from './snapshot-writer.js';
import { streamOf, type SnapshotImage, type SnapshotRest, type SnapshotStats, type SnapshotStream, type SnapshotWrite } from './snapshot-image.js';

export type { SnapshotImage, SnapshotStats, SnapshotStream, SnapshotWrite };
export { CHUNK_ITEMS } from './snapshot-writer.js';

/**
 * The share of the event loop's time a snapshot's writer takes at most while the engine runs.
 * At 0.2 the worst second of a create load during a snapshot was 0.63 of a usual one; at 0.1,
 * 0.79-0.80, while a snapshot of 100k changes took about 3 s instead of 2 (docs/bench.md).
 */
export const WRITER_SHARE = 0.1;
/** Items written by incremental snapshots, as a multiple of what the base holds, after which the next one is full. */
export const COMPACT_AFTER = 2;

/** What the manifest of the current layout says of the latest complete snapshot. */
export type SnapshotManifest = Readonly<Manifest>;

interface Manifest {
  generation: number;
  base: number;
  seq: number;
  at: number;
  counts: SnapshotWrite<unknown>['counts'];
  /** Items the base generation holds, and items written by the generations after it. */
  baseItems: number;
  sinceBase: number;
  /** Records the machine names (`lazyKeys`) are in lazy chunks in every generation from the base (snapshot-lazy.ts). */
  lazy?: true;
  /** The kinds (id prefixes) whose records those are; absent in manifests written before: one kind, named by its chunks. */
  lazyKinds?: string[];
}

/** Whether two lists of lazy kinds name the same kinds. */
export function sameLazyKinds(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  return (a ?? []).length === (b ?? []).length && (a ?? []).every((kind) => b!.includes(kind));
}


/** A snapshot layout an earlier version wrote, read until a snapshot in the current one exists. */
interface OlderLayout<T> {
  load(): Omit<SnapshotImage<T>, 'legacy'> | undefined;
  removeLeftovers(): Promise<number>;
  removeAll(): Promise<number>;
}

/**
 * The layouts older than the chunks in `storage`'s snapshot tables: with tables of their own,
 * the same chunks in the storage's tables (where they were before), which in turn reads the
 * layouts before those; without, the layouts of snapshot-legacy.ts.
 */
function olderLayouts<T>(storage: Pick<Storage, 'table' | 'snapshotTables'>, meter: () => number): Array<OlderLayout<T>> {
  if (storage.snapshotTables !== undefined) return [new SnapshotStore<T>({ table: (name) => storage.table(name) }, meter)];
  const tables: Tables = storage;
  return [new ItemSnapshotStore<T>(tables), new LegacySnapshotStore<T>(tables)];
}

export class SnapshotStore<T> implements OlderLayout<T> {
  readonly #db: StorageTable<ChunkKey | typeof MANIFEST_KEY>;
  readonly #older: Array<OlderLayout<T>>;
  #manifest: Manifest | undefined;
  /** The highest generation any chunk has; each write takes the next, so none is reused. */
  #generation = 0;
  /** Chunks found at load that no longer count (below the base, or of an abandoned snapshot). */
  #stale: ChunkKey[] = [];
  /** No pauses: the engine is closing. */
  #hurried = false;
  /** The lazy chunks of the snapshot recovery started from and of each written since (undefined: none yet). */
  #live: LazySnapshot | undefined;
  readonly #meter: () => number;

  /**
   * `meter` reads the time (ms) the writer's slices and pauses are measured in; a simulation
   * passes one that stands still, so chunks are cut by CHUNK_ITEMS alone and the writer
   * yields a turn between them: the same chunks on any machine.
   */
  constructor(storage: Pick<Storage, 'table' | 'snapshotTables'>, meter: () => number = () => performance.now()) {
    this.#meter = meter;
    this.#db = (storage.snapshotTables ?? storage).table<ChunkKey | typeof MANIFEST_KEY>('snapshots');
    this.#older = olderLayouts<T>(storage, meter);
    this.#manifest = readManifest<Manifest>(this.#db as StorageTable<Key>, isGenerationsManifest);
  }

  /** The latest complete snapshot's manifest in this layout; undefined when there is none (or only an older layout). */
  get manifest(): SnapshotManifest | undefined {
    return this.#manifest;
  }

  /**
   * The lazy chunks of the store's snapshot as recovery read them (`stream`) and each snapshot
   * written since changed them, one object throughout (undefined: none yet).
   */
  get lazy(): LazySnapshot | undefined {
    return this.#live;
  }

  /** Whether the next snapshot should be full: the increments since the base outgrew it. */
  get wantsFull(): boolean {
    const m = this.#manifest;
    return m === undefined || m.sinceBase > COMPACT_AFTER * Math.max(m.baseItems, CHUNK_ITEMS);
  }

  /** From now on the writer does not pause (the engine is closing and waits for it). */
  hurry(): void {
    this.#hurried = true;
  }

  /**
   * The latest complete snapshot, read whole and verified, or undefined on a fresh data
   * directory (the log tool's reads; recovery streams it). Chunks that no longer count are
   * noted for `removeLeftovers`.
   */
  load(): SnapshotImage<T> | undefined {
    const stream = this.#stream();
    if (stream === undefined) return undefined;
    const records = [...stream.records];
    // The log tool reads everything: the lazy chunks' records after the rest, as a restore that read them all would hold.
    if (stream.lazy !== undefined) for (const record of expandLazy(stream.lazy)) records.push(record);
    return { seq: stream.seq, at: stream.at, legacy: stream.legacy, records, ...stream.rest() };
  }

  /**
   * The latest complete snapshot as recovery restores it, or undefined on a fresh data
   * directory: the generations after the base are read now (what changed since the base, a
   * bounded share of it), the base's chunks as its records are taken (LiveItems). Every chunk
   * is verified as it is read; the counts once all are. Chunks that no longer count are noted
   * for `removeLeftovers`.
   */
  stream(): SnapshotStream<T> | undefined {
    const stream = this.#stream();
    this.#live = stream?.lazy;
    return stream;
  }

  #stream(): (SnapshotStream<T> & { lazy?: LazySnapshot }) | undefined {
    const manifest = this.#manifest;
    this.#stale = [];
    let highest = 0;
    for (const key of this.#db.getKeys()) {
      if (!Array.isArray(key)) continue;
      highest = Math.max(highest, key[0]);
      if (manifest === undefined || key[0] < manifest.base || key[0] > manifest.generation) this.#stale.push(key);
    }
    this.#generation = Math.max(highest, manifest?.generation ?? 0);
    if (manifest === undefined) {
      for (const layout of this.#older) {
        const older = layout.load();
        if (older !== undefined) return { ...streamOf({ ...older, legacy: true }), lazy: undefined };
      }
      return undefined;
    }
    const { base, generation } = manifest;
    const where = `snapshot at ${manifest.seq} (generation ${generation})`;
    const live = new LiveItems(where);
    for (const chunk of this.#chunks(base + 1, generation, where)) live.putNewer(chunk);
    const records = live.records(this.#chunks(base, base, where));
    let rest: SnapshotRest<T> | undefined;
    return {
      seq: manifest.seq,
      at: manifest.at,
      legacy: false,
      records,
      lazy: manifest.lazy === true ? new LazySnapshot(lazySources(this.#db as LazyTable, base, generation, where)) : undefined,
      get recordsRead() {
        return live.recordsRead;
      },
      rest: () => {
        if (rest !== undefined) return rest;
        if (!live.finished) throw new Error(`${where}: its timers, effects and idempotency records are whole only after its records are read`);
        rest = live.rest<T>();
        checkCounts(where, rest, manifest.counts);
        return rest;
      },
    };
  }

  /** The items of each chunk of generations `from` to `to`, in key order, each verified as it is read. */
  *#chunks(from: number, to: number, where: string): Generator<Item[]> {
    for (const { key, value } of this.#db.getRange({ start: [from, 0], end: [to + 1, 0] })) {
      // A lazy chunk or directory (a negative chunk number) is read when its records are asked for.
      if (!Array.isArray(key) || key[1] < 0) continue;
      const chunk = decodeStored(value, `${where}, chunk ${key[1]} of generation ${key[0]}`);
      if (!Array.isArray(chunk)) throw new StoreCorruptError(`${where}, chunk ${key[1]} of generation ${key[0]}`, 'not a chunk');
      yield chunk as Item[];
    }
  }

  /**
   * Removes what `load` found no longer counting, and the older layouts once a snapshot in
   * this one exists. Returns how many values were removed.
   */
  async removeLeftovers(): Promise<number> {
    let removed = await removeInBatches(this.#db, this.#stale, REMOVE_CHUNK);
    this.#stale = [];
    for (const layout of this.#older) removed += await (this.#manifest !== undefined ? layout.removeAll() : layout.removeLeftovers());
    return removed;
  }

  /** Removes every value of this layout, its manifest first (an older layout, once a newer one holds a snapshot). */
  async removeAll(): Promise<number> {
    let removed = await removeLayout(this.#db, REMOVE_CHUNK);
    this.#manifest = undefined;
    for (const layout of this.#older) removed += await layout.removeAll();
    return removed;
  }

  /**
   * Writes `snapshot` chunk by chunk, then switches the manifest to it, updates `lazy` to its
   * chunks, tells `switched` of the records it put in lazy chunks (of generation `generation`)
   * that the machine may drop from memory, and removes what it replaced.
   */
  async write(snapshot: SnapshotWrite<T>, switched?: (lazy: LazySnapshot, written: LazyWritten, generation: number) => void): Promise<SnapshotStats> {
    const previous = this.#manifest;
    if (!snapshot.full && previous === undefined) throw new Error('an incremental snapshot needs a previous one');
    if (!snapshot.full && 'ids' in snapshot.records) throw new Error('an incremental snapshot holds changes as noted, not columns');
    const generation = ++this.#generation;
    // Records go to lazy chunks only above a base that put the same kinds there: a base written before holds them among the rest.
    const lazyKeys = snapshot.full || (previous?.lazy === true && sameLazyKinds(previous.lazyKinds, snapshot.lazyKinds)) ? snapshot.lazyKeys : undefined;
    const out = new ChunkWriter(this.#db, generation, this.#meter, (workMs) => this.#pause(workMs));
    const chunk = new ChunkBuffer<Item>((items) => out.put([generation, out.stats.chunks], items));
    const carried = 'carried' in snapshot.records ? (snapshot.records.carried ?? []) : [];
    const lazy = lazyKeys !== undefined ? new LazyChunkBuffer(out, carried.length > 0) : undefined;
    for (const [space, section] of sectionsOf(snapshot)) {
      // The records' changes as noted, their repeats dropped here, a slice at a time.
      const items = 'noted' in section ? await latestChanges(section, out) : section;
      const columns = 'ids' in items ? items : undefined;
      const pairs = 'ids' in items ? undefined : items;
      const length = columns?.ids.length ?? pairs!.length;
      const stored = space === 'r' ? snapshot.storedForm : undefined;
      for (let i = 0; i < length; i++) {
        const id = columns !== undefined ? columns.ids[i]! : pairs![i]![0];
        const item = columns !== undefined ? columns.records[i] : pairs![i]![1];
        const record = item === undefined ? null : stored !== undefined && typeof id === 'string' ? stored(id, item) : item;
        const place = lazy !== undefined && space === 'r' && item !== undefined && typeof id === 'string' ? lazyKeys!(id, item, lazy.key) : undefined;
        if (place !== undefined) {
          if (lazy!.add(place, id as string, item, record, out.sliceDue())) await lazy!.flush();
        } else if (chunk.add(itemOf(space, id, record), out.sliceDue())) await chunk.flush();
      }
    }
    await chunk.flush();
    // What the machine dropped from memory is copied as stored: each id's newest version, unless memory held it.
    await lazy?.copy(carried);
    const lazyWritten = lazy !== undefined ? await lazy.finish() : undefined;
    await out.settled();
    const manifest = this.#manifestOf(snapshot, generation, out.stats, lazyKeys !== undefined);
    await this.#db.put(MANIFEST_KEY, encodeStored(manifest));
    await this.#db.flushed;
    this.#manifest = manifest;
    if (lazyWritten !== undefined) {
      const { directory, table, loaded, dropped } = lazyWritten;
      const source = lazySource(this.#db as LazyTable, generation, { ...directory, table }, `snapshot at ${snapshot.seq} (generation ${generation})`);
      const live = (this.#live ??= new LazySnapshot([]));
      if (snapshot.full) live.rebase(source, loaded);
      else live.add(source, loaded);
      switched?.(live, dropped, generation);
    } else if (snapshot.full) this.#live = undefined;
    const { stats } = out;
    if (snapshot.full) {
      const older: ChunkKey[] = [];
      for (const key of this.#db.getKeys({ start: [0, 0], end: [manifest.base, LAZY_CHUNK_KEY - 2 ** 40] })) if (Array.isArray(key)) older.push(key);
      stats.removed += await removeInBatches(this.#db, older, REMOVE_CHUNK);
      for (const layout of this.#older) stats.removed += await layout.removeAll();
    }
    return stats;
  }

  /** The manifest of `snapshot`, written as generation `generation`; `lazy`: its lazy kinds are in lazy chunks. */
  #manifestOf(snapshot: SnapshotWrite<T>, generation: number, stats: SnapshotStats, lazy: boolean): Manifest {
    const previous = this.#manifest;
    const manifest: Manifest = {
      generation,
      base: snapshot.full ? generation : previous!.base,
      seq: snapshot.seq,
      at: snapshot.at,
      counts: snapshot.counts,
      baseItems: snapshot.full ? stats.written : previous!.baseItems,
      sinceBase: snapshot.full ? 0 : previous!.sinceBase + stats.written,
    };
    if (lazy) {
      manifest.lazy = true;
      manifest.lazyKinds = [...(snapshot.lazyKinds ?? [])];
    }
    return manifest;
  }

  /** After `workMs` of the writer's work: waits so that the writer keeps to WRITER_SHARE of the time. */
  #pause(workMs: number): Promise<void> {
    if (this.#hurried) return nextTurn();
    const ms = (workMs * (1 - WRITER_SHARE)) / WRITER_SHARE;
    return ms < 1 ? nextTurn() : new Promise((resolve) => setTimeout(resolve, ms));
  }
}

/**
 * The items of a snapshot's generations: those of the generations after the base first
 * (`putNewer`, oldest first, a later item replacing, null removing, an earlier one), then the
 * base's, which `records` yields as it reads them, each record with its latest version in
 * place of the base's; the records the later generations added follow. A record goes through
 * a map only when it changed since the base (putting every item into one profiled at about a
 * sixth of loading a snapshot). Records come kind by kind, as the snapshot wrote them.
 */
class LiveItems {
  readonly #newer = new Map<string, unknown>();
  readonly #timers = new Map<string, unknown>();
  readonly #effects = new Map<string, unknown>();
  readonly #idempotency = new Map<number, unknown>();
  readonly #where: string;
  recordsRead = 0;
  finished = false;

  constructor(where: string) {
    this.#where = where;
  }

  /** A chunk of a generation after the base: its items replace what older generations held. */
  putNewer(chunk: Item[]): void {
    for (const each of chunk) {
      const space = each[0];
      const id = itemId(each);
      const item = itemValue(each);
      if (space === 'r' && typeof id === 'string') this.#newer.set(id, item);
      else this.#pending(space, id, item, true);
    }
  }

  /** The records of the base's chunks as they are read, then those the later generations added. */
  *records(baseChunks: Iterable<Item[]>): Generator<readonly [string, unknown]> {
    const newer = this.#newer;
    for (const chunk of baseChunks) {
      for (const each of chunk) {
        const space = each[0];
        const id = itemId(each);
        const item = itemValue(each);
        if (space !== 'r' || typeof id !== 'string') {
          // The base is older than every later generation: their items win.
          this.#pending(space, id, item, false);
          continue;
        }
        let record = item;
        if (newer.size > 0) {
          const latest = newer.get(id);
          if (latest !== undefined) {
            newer.delete(id);
            record = latest;
          }
        }
        if (record === null) continue;
        this.recordsRead++;
        yield [id, record];
      }
    }
    for (const [id, item] of newer) {
      if (item === null) continue;
      this.recordsRead++;
      yield [id, item];
    }
    newer.clear();
    this.finished = true;
  }

  /** A timer, effect or idempotency item; `newer`: of a later generation than any put before it. */
  #pending(space: Space, id: unknown, item: unknown, newer: boolean): void {
    const map = space === 't' && typeof id === 'string' ? this.#timers : space === 'e' && typeof id === 'string' ? this.#effects : space === 'i' && typeof id === 'number' ? this.#idempotency : undefined;
    if (map === undefined) throw new StoreCorruptError(this.#where, `an item of unknown space ${String(space)} or id ${String(id)}`);
    const key = id as string | number;
    if (newer || !(map as Map<string | number, unknown>).has(key)) (map as Map<string | number, unknown>).set(key, item);
  }

  rest<T>(): SnapshotRest<T> {
    const live = <V>(map: Map<unknown, unknown>): V[] => [...map.values()].filter((v) => v !== null) as V[];
    const idempotency = [...this.#idempotency].filter(([, v]) => v !== null) as Array<[number, IdempotencyRecord]>;
    idempotency.sort((a, b) => a[0] - b[0]);
    return { timers: live<Timer<T>>(this.#timers), effects: live<Effect>(this.#effects), idempotency };
  }
}
