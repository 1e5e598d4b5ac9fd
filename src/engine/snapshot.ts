// Snapshots: the records, pending timers and effects, and idempotency records as of one log
// sequence, stored one lmdb value per item, so a snapshot writes only what changed since the
// previous one.
//
// Keys are [space, id, generation]: the item as of snapshot `generation`, or a tombstone
// where it was removed. The manifest {generation, base, seq} is switched last; recovery takes
// per item the highest generation in [base, generation] and ignores the rest, so a snapshot
// abandoned half-written (higher generations) or older versions not yet removed change
// nothing. A full snapshot (the first one, or after a failed one) writes everything with
// base = its own generation, so every older value stops counting at once.
//
// Capture is synchronous and cheap (the engine collects references: records are immutable);
// encoding runs here in chunks of at most SNAPSHOT_CHUNK values or SLICE_MS of work across
// event-loop turns, so requests keep flowing. Each chunk is one lmdb batch: its puts are
// executed and committed by lmdb's write thread, so B-tree work (page allocation included,
// measured at up to 50 ms for one chunk written inside a transaction callback) stays off the
// event loop. After the manifest switch the older versions of what was written are removed,
// in chunks too.
// Every value is versioned and checksummed (format.ts).
import type { Database, RootDatabase } from 'lmdb';
import { decodeStored, encodeStored, StoreCorruptError } from './format.js';
import type { DomainChanges, DomainColumns, DomainImage, Effect, IdempotencyRecord, Timer } from './state-machine.js';

/** Key spaces: domain records, pending timers, pending effects, idempotency records by insertion number. */
type Space = 'r' | 't' | 'e' | 'i';
type ValueKey = [Space, string | number, number];
type ImageKey = ValueKey | typeof MANIFEST_KEY;

const MANIFEST_KEY = 'manifest';
const SPACE_NAMES: Record<Space, string> = { r: 'record', t: 'timer', e: 'effect', i: 'idempotency record' };

/** Values per lmdb batch at most, while writing or removing. */
export const SNAPSHOT_CHUNK = 1_000;
/** Synchronous work per event-loop turn (ms) before a chunk is cut short. */
const SLICE_MS = 2;
/** Chunk batches queued at once while writing (lmdb commits queued ones together). */
const CHUNKS_IN_FLIGHT = 4;

/** What a snapshot writes: every item (full), or what changed since the previous one (undefined: removed). */
export interface SnapshotWrite<T> {
  seq: number;
  at: number;
  full: boolean;
  /** Columns when the machine captures everything that way. */
  records: DomainChanges | DomainColumns;
  timers: ReadonlyArray<readonly [string, Timer<T> | undefined]>;
  effects: ReadonlyArray<readonly [string, Effect | undefined]>;
  idempotency: ReadonlyArray<readonly [number, IdempotencyRecord | undefined]>;
  /** Items pending after this snapshot, checked at load. */
  counts: { timers: number; effects: number; idempotency: number };
}

export interface SnapshotImage<T> {
  seq: number;
  at: number;
  records: DomainImage;
  timers: Timer<T>[];
  effects: Effect[];
  /** In insertion order, with their insertion numbers. */
  idempotency: Array<[number, IdempotencyRecord]>;
  /** Loaded from the old chunked layout: the next snapshot must write everything. */
  legacy: boolean;
}

export interface SnapshotStats {
  /** Values put (items and tombstones). */
  written: number;
  bytes: number;
  /** Older versions and tombstones removed after the manifest switch (and the old layout, once). */
  removed: number;
}

interface Manifest {
  generation: number;
  base: number;
  seq: number;
  at: number;
  counts: SnapshotWrite<unknown>['counts'];
}

const TOMBSTONE = encodeStored(null);

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class SnapshotStore<T> {
  readonly #db: Database<Buffer, ImageKey>;
  readonly #legacy: LegacySnapshotStore<T>;
  #manifest: Manifest | undefined;
  /** The highest generation any value has; each write takes the next, so none is reused. */
  #generation = 0;
  /** Keys found at load that no longer count (abandoned, shadowed, tombstones), in key order. */
  #stale: ValueKey[] = [];

  constructor(root: RootDatabase) {
    this.#db = root.openDB<Buffer, ImageKey>({ name: 'image', encoding: 'binary' });
    this.#legacy = new LegacySnapshotStore<T>(root);
    this.#manifest = this.#readManifest();
  }

  #readManifest(): Manifest | undefined {
    const bytes = this.#db.get(MANIFEST_KEY);
    if (bytes === undefined) return undefined;
    const manifest = decodeStored(bytes, 'snapshot manifest') as Manifest;
    if (typeof manifest?.generation !== 'number' || typeof manifest.base !== 'number' || typeof manifest.seq !== 'number' || manifest.counts === undefined) {
      throw new StoreCorruptError('snapshot manifest', 'not a manifest');
    }
    return manifest;
  }

  /**
   * The latest complete snapshot, verified, or undefined on a fresh data directory. Reads
   * the key range once; what no longer counts is noted for `removeLeftovers`.
   */
  load(): SnapshotImage<T> | undefined {
    const manifest = this.#manifest;
    this.#stale = [];
    let highest = manifest?.generation ?? 0;
    if (manifest === undefined) {
      // Anything here belongs to a first snapshot that never got its manifest.
      for (const key of this.#db.getKeys()) {
        if (Array.isArray(key)) {
          this.#stale.push(key);
          highest = Math.max(highest, key[2]);
        }
      }
      this.#generation = highest;
      const legacy = this.#legacy.load();
      return legacy === undefined ? undefined : { ...legacy, legacy: true };
    }
    const { generation, base } = manifest;
    const records: Array<readonly [string, unknown]> = [];
    const timers: Timer<T>[] = [];
    const effects: Effect[] = [];
    const idempotency: Array<[number, IdempotencyRecord]> = [];
    // Keys sort by space, id, then generation: an item's versions are adjacent, oldest first.
    let space: Space | undefined;
    let id: string | number | undefined;
    let value: unknown;
    let versions: ValueKey[] = [];
    const emit = (): void => {
      if (versions.length === 0) return;
      // The newest version counts (unless it is a tombstone); the older ones are stale.
      const live = value !== null;
      for (let i = 0; i < versions.length - (live ? 1 : 0); i++) this.#stale.push(versions[i]!);
      if (live) {
        if (space === 'r') records.push([id as string, value]);
        else if (space === 't') timers.push(value as Timer<T>);
        else if (space === 'e') effects.push(value as Effect);
        else idempotency.push([id as number, value as IdempotencyRecord]);
      }
      versions = [];
      value = null;
    };
    for (const { key, value: bytes } of this.#db.getRange()) {
      if (!Array.isArray(key)) continue;
      const [keySpace, keyId, keyGeneration] = key;
      highest = Math.max(highest, keyGeneration);
      if (keySpace !== space || keyId !== id) {
        emit();
        space = keySpace;
        id = keyId;
      }
      if (keyGeneration < base || keyGeneration > generation) {
        // Older than the base, or of an abandoned snapshot: never counts.
        this.#stale.push(key);
        continue;
      }
      // Decoded now (lmdb may reuse the buffer); usually an item has one version only.
      value = decodeStored(bytes, `snapshot at ${manifest.seq} (generation ${keyGeneration}), ${SPACE_NAMES[keySpace]} ${keyId}`);
      versions.push(key);
    }
    emit();
    this.#generation = highest;
    const where = `snapshot at ${manifest.seq} (generation ${generation})`;
    const check = (what: string, found: number, expected: number): void => {
      if (found !== expected) throw new StoreCorruptError(where, `${found} ${what}, manifest says ${expected}`);
    };
    check('timers', timers.length, manifest.counts.timers);
    check('effects', effects.length, manifest.counts.effects);
    check('idempotency records', idempotency.length, manifest.counts.idempotency);
    return { seq: manifest.seq, at: manifest.at, records, timers, effects, idempotency, legacy: false };
  }

  /**
   * Removes what `load` found no longer counting, and the old chunked layout once a new
   * snapshot exists. Returns how many values were removed.
   */
  async removeLeftovers(): Promise<number> {
    let removed = await this.#removeInChunks(this.#stale);
    this.#stale = [];
    if (this.#manifest !== undefined) removed += await this.#legacy.removeAll();
    else removed += await this.#legacy.removeLeftovers();
    return removed;
  }

  /** Writes `snapshot` chunk by chunk, then switches the manifest to it and removes what it replaced. */
  async write(snapshot: SnapshotWrite<T>): Promise<SnapshotStats> {
    const previous = this.#manifest;
    if (!snapshot.full && previous === undefined) throw new Error('an incremental snapshot needs a previous one');
    if (!snapshot.full && 'ids' in snapshot.records) throw new Error('an incremental snapshot holds changes as pairs, not columns');
    const generation = ++this.#generation;
    const base = snapshot.full ? generation : previous!.base;
    const stats: SnapshotStats = { written: 0, bytes: 0, removed: 0 };
    const sections: Array<[Space, ReadonlyArray<readonly [string | number, unknown]> | DomainColumns]> = [
      ['r', snapshot.records],
      ['t', snapshot.timers],
      ['e', snapshot.effects],
      ['i', snapshot.idempotency],
    ];
    // A few batches queued while the next chunks are encoded.
    const inFlight: Array<Promise<unknown>> = [];
    for (const [space, items] of sections) {
      const columns = 'ids' in items ? items : undefined;
      const pairs = 'ids' in items ? undefined : items;
      const length = columns?.ids.length ?? pairs!.length;
      let i = 0;
      while (i < length) {
        const chunk: Array<[ValueKey, Buffer]> = [];
        const sliceEnd = performance.now() + SLICE_MS;
        while (i < length && chunk.length < SNAPSHOT_CHUNK && performance.now() < sliceEnd) {
          const [id, item] = columns !== undefined ? [columns.ids[i]!, columns.records[i]] : pairs![i]!;
          i++;
          const bytes = item === undefined ? TOMBSTONE : encodeStored(item);
          chunk.push([[space, id, generation], bytes]);
          stats.bytes += bytes.length;
        }
        stats.written += chunk.length;
        if (inFlight.length >= CHUNKS_IN_FLIGHT) await inFlight.shift();
        const committing = this.#db.batch(() => {
          for (const [key, bytes] of chunk) this.#db.put(key, bytes);
        });
        // Its failure is thrown where it is awaited, not reported as unhandled meanwhile.
        committing.catch(() => undefined);
        inFlight.push(committing);
        await nextTurn();
      }
    }
    for (const committing of inFlight) await committing;
    await this.#db.flushed;
    const manifest: Manifest = { generation, base, seq: snapshot.seq, at: snapshot.at, counts: snapshot.counts };
    await this.#db.put(MANIFEST_KEY, encodeStored(manifest));
    await this.#db.flushed;
    this.#manifest = manifest;
    if (snapshot.full) {
      stats.removed += await this.#removeBelow(base);
      stats.removed += await this.#legacy.removeAll();
    } else {
      // Pairs only (checked at the start).
      for (const [space, items] of sections) if (!('ids' in items)) stats.removed += await this.#removeOlderVersions(space, items, generation);
    }
    return stats;
  }

  /**
   * Removes the versions before `generation` of the items just written, and their tombstone
   * at `generation` (nothing older is left for it to hide). Per item, older versions go
   * first, in batches committed in order, so a crash in between never uncovers one.
   */
  async #removeOlderVersions(space: Space, items: ReadonlyArray<readonly [string | number, unknown]>, generation: number): Promise<number> {
    let removed = 0;
    let i = 0;
    while (i < items.length) {
      await this.#db.batch(() => {
        // The lookups run here (the removals in the write thread): SLICE_MS or SNAPSHOT_CHUNK items.
        const sliceEnd = performance.now() + SLICE_MS;
        const end = Math.min(items.length, i + SNAPSHOT_CHUNK);
        do {
          const [id, item] = items[i++]!;
          for (const key of this.#db.getKeys({ start: [space, id], end: [space, id, generation] })) {
            this.#db.remove(key);
            removed++;
          }
          if (item === undefined) {
            this.#db.remove([space, id, generation]);
            removed++;
          }
        } while (i < end && performance.now() < sliceEnd);
      });
      await nextTurn();
    }
    return removed;
  }

  /** After a full snapshot: removes every value older than `base`, scanning the keys in chunks. */
  async #removeBelow(base: number): Promise<number> {
    const SCAN = SNAPSHOT_CHUNK * 4;
    let removed = 0;
    let start: ImageKey | undefined;
    for (;;) {
      const stale: ValueKey[] = [];
      let scanned = 0;
      for (const key of this.#db.getKeys({ start, limit: SCAN })) {
        scanned++;
        start = key;
        if (Array.isArray(key) && key[2] < base) stale.push(key);
      }
      removed += await this.#removeInChunks(stale);
      // The next scan starts at the last key seen (inclusive): at most one key is seen twice.
      if (scanned < SCAN) return removed;
      // Nothing to remove awaits nothing: yield anyway, a scan is a turn's work.
      await nextTurn();
    }
  }

  /** Removes `keys` in chunked batches, in order. */
  async #removeInChunks(keys: readonly ValueKey[]): Promise<number> {
    for (let i = 0; i < keys.length; i += SNAPSHOT_CHUNK) {
      const slice = keys.slice(i, i + SNAPSHOT_CHUNK);
      await this.#db.batch(() => {
        for (const key of slice) this.#db.remove(key);
      });
      await nextTurn();
    }
    return keys.length;
  }
}

// The old layout (before per-item values): an image in chunks of 2,000 items per section
// under [generation, section, chunk], and a manifest. Kept to recover a store written by an
// older version; the first snapshot taken since writes the new layout in full and removes it.

const LEGACY_SECTIONS = ['records', 'timers', 'effects', 'idempotency'] as const;
type LegacySection = (typeof LEGACY_SECTIONS)[number];
type LegacyKey = string | [number, LegacySection, number];

interface LegacyManifest {
  generation: number;
  seq: number;
  at: number;
  sections: Record<LegacySection, { chunks: number; items: number }>;
}

class LegacySnapshotStore<T> {
  readonly #db: Database<Buffer, LegacyKey>;

  constructor(root: RootDatabase) {
    this.#db = root.openDB<Buffer, LegacyKey>({ name: 'snapshot', encoding: 'binary' });
  }

  #manifest(): LegacyManifest | undefined {
    const bytes = this.#db.get(MANIFEST_KEY);
    if (bytes === undefined) return undefined;
    const manifest = decodeStored(bytes, 'snapshot manifest') as LegacyManifest;
    if (typeof manifest?.generation !== 'number' || typeof manifest.seq !== 'number' || manifest.sections === undefined) {
      throw new StoreCorruptError('snapshot manifest', 'not a manifest');
    }
    return manifest;
  }

  load(): Omit<SnapshotImage<T>, 'legacy'> | undefined {
    const manifest = this.#manifest();
    if (manifest === undefined) return undefined;
    const read = <V>(section: LegacySection): V[] => {
      const { chunks, items } = manifest.sections[section];
      const out: V[] = [];
      for (let i = 0; i < chunks; i++) {
        const where = `snapshot at ${manifest.seq} (generation ${manifest.generation}), ${section} chunk ${i}`;
        const bytes = this.#db.get([manifest.generation, section, i]);
        if (bytes === undefined) throw new StoreCorruptError(where, 'missing');
        const chunk = decodeStored(bytes, where);
        if (!Array.isArray(chunk)) throw new StoreCorruptError(where, 'not a chunk');
        for (const item of chunk as V[]) out.push(item);
      }
      if (out.length !== items) {
        throw new StoreCorruptError(`snapshot at ${manifest.seq}, ${section}`, `${out.length} items, manifest says ${items}`);
      }
      return out;
    };
    return {
      seq: manifest.seq,
      at: manifest.at,
      records: read<readonly [string, unknown]>('records'),
      timers: read<Timer<T>>('timers'),
      effects: read<Effect>('effects'),
      // Stored in insertion order.
      idempotency: read<IdempotencyRecord>('idempotency').map((record, order): [number, IdempotencyRecord] => [order, record]),
    };
  }

  /** Removes chunks of any generation but the manifest's (a snapshot a crash left behind). */
  async removeLeftovers(): Promise<number> {
    const current = this.#manifest()?.generation;
    const stale: LegacyKey[] = [];
    for (const key of this.#db.getKeys()) {
      if (Array.isArray(key) && key[0] !== current) stale.push(key);
    }
    return this.#remove(stale);
  }

  /** Removes the whole old layout, once a snapshot in the new one counts. */
  async removeAll(): Promise<number> {
    // The manifest goes first: without it the chunks no longer count.
    const keys: LegacyKey[] = [];
    if (this.#db.get(MANIFEST_KEY) !== undefined) keys.push(MANIFEST_KEY);
    for (const key of this.#db.getKeys()) if (Array.isArray(key)) keys.push(key);
    return this.#remove(keys);
  }

  async #remove(keys: readonly LegacyKey[]): Promise<number> {
    // Old chunks hold 2,000 items each: a few keys per batch.
    for (let i = 0; i < keys.length; i += 100) {
      const slice = keys.slice(i, i + 100);
      await this.#db.batch(() => {
        for (const key of slice) this.#db.remove(key);
      });
    }
    return keys.length;
  }
}
