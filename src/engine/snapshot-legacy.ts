// The snapshot layouts of older versions, kept so that their stores still recover: the
// per-item layout, and before it whole images in chunks. The first snapshot taken in the
// current layout (snapshot.ts) is full and removes them.
import { decodeStored, StoreCorruptError } from './format.js';
import type { SnapshotImage, SnapshotWrite } from './snapshot-image.js';
import { checkCounts, isGenerationsManifest, MANIFEST_KEY, readManifest, REMOVE_CHUNK, removeInBatches, removeLayout, SPACE_NAMES, type Space } from './snapshot-layout.js';
import type { Effect, IdempotencyRecord, Timer } from './state-machine.js';
import type { Key, StorageTable, Tables } from './storage.js';

// The per-item layout (before chunks): one value per item under [space, id, generation] in
// `image`, and a manifest {generation, base, seq}; per item the highest generation in
// [base, generation] counts. Kept to recover a store written by an older version.

type ValueKey = [Space, string | number, number];
type ImageKey = ValueKey | typeof MANIFEST_KEY;

interface ItemManifest {
  generation: number;
  base: number;
  seq: number;
  at: number;
  counts: SnapshotWrite<unknown>['counts'];
}

export class ItemSnapshotStore<T> {
  readonly #db: StorageTable<ImageKey>;

  constructor(storage: Tables) {
    this.#db = storage.table<ImageKey>('image');
  }

  #manifest(): ItemManifest | undefined {
    return readManifest<ItemManifest>(this.#db as StorageTable<Key>, isGenerationsManifest);
  }

  load(): Omit<SnapshotImage<T>, 'legacy'> | undefined {
    const manifest = this.#manifest();
    if (manifest === undefined) return undefined;
    const { generation, base } = manifest;
    const records: Array<readonly [string, unknown]> = [];
    const timers: Timer<T>[] = [];
    const effects: Effect[] = [];
    const idempotency: Array<[number, IdempotencyRecord]> = [];
    // Keys sort by space, id, then generation: an item's versions are adjacent, oldest first.
    let space: Space | undefined;
    let id: string | number | undefined;
    let value: unknown = null;
    const emit = (): void => {
      if (value !== null) {
        if (space === 'r') records.push([id as string, value]);
        else if (space === 't') timers.push(value as Timer<T>);
        else if (space === 'e') effects.push(value as Effect);
        else idempotency.push([id as number, value as IdempotencyRecord]);
      }
      value = null;
    };
    for (const { key, value: bytes } of this.#db.getRange()) {
      if (!Array.isArray(key)) continue;
      const [keySpace, keyId, keyGeneration] = key;
      if (keySpace !== space || keyId !== id) {
        emit();
        space = keySpace;
        id = keyId;
      }
      // Older than the base, or of an abandoned snapshot: never counts.
      if (keyGeneration < base || keyGeneration > generation) continue;
      value = decodeStored(bytes, `snapshot at ${manifest.seq} (generation ${keyGeneration}), ${SPACE_NAMES[keySpace]} ${keyId}`);
    }
    emit();
    checkCounts(`snapshot at ${manifest.seq} (generation ${generation})`, { timers, effects, idempotency }, manifest.counts);
    return { seq: manifest.seq, at: manifest.at, records, timers, effects, idempotency };
  }

  /** Without a manifest nothing here counts: what a first snapshot left without one goes. */
  async removeLeftovers(): Promise<number> {
    return this.#manifest() === undefined ? this.removeAll() : 0;
  }

  /** Removes the whole layout. */
  removeAll(): Promise<number> {
    return removeLayout(this.#db, REMOVE_CHUNK);
  }
}

// The old layout (before per-item values): an image in chunks of 2,000 items per section
// under [generation, section, chunk], and a manifest. Kept to recover a store written by an
// older version; the first snapshot taken since writes the new layout in full and removes it.

const LEGACY_SECTIONS = ['records', 'timers', 'effects', 'idempotency'] as const;
type LegacySection = (typeof LEGACY_SECTIONS)[number];
type LegacyKey = string | [number, LegacySection, number];
/** Old chunks hold 2,000 items each: a few keys per batch. */
const LEGACY_REMOVE_CHUNK = 100;

interface LegacyManifest {
  generation: number;
  seq: number;
  at: number;
  sections: Record<LegacySection, { chunks: number; items: number }>;
}

export class LegacySnapshotStore<T> {
  readonly #db: StorageTable<LegacyKey>;

  constructor(storage: Tables) {
    this.#db = storage.table<LegacyKey>('snapshot');
  }

  #manifest(): LegacyManifest | undefined {
    return readManifest<LegacyManifest>(this.#db as StorageTable<Key>, (m) => typeof m.generation === 'number' && typeof m.seq === 'number' && m.sections !== undefined);
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
    return removeInBatches(this.#db, stale, LEGACY_REMOVE_CHUNK);
  }

  /** Removes the whole old layout, once a snapshot in the new one counts. */
  removeAll(): Promise<number> {
    return removeLayout(this.#db, LEGACY_REMOVE_CHUNK);
  }
}
