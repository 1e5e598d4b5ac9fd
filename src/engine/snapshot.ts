// Snapshots: a consistent image of every record, the pending timers and effects, and the
// idempotency records, as of one log sequence. The image is captured synchronously
// (records are immutable, so that is a copy of references) and then written in chunks,
// one chunk per lmdb write, across event-loop turns, so requests keep flowing while it is
// written. A snapshot counts only once its manifest is durable; then older snapshots and
// the log up to its sequence go. Every value is versioned and checksummed (format.ts).
import type { Database, RootDatabase } from 'lmdb';
import { decodeStored, encodeStored, StoreCorruptError } from './format.js';
import type { DomainImage, Effect, IdempotencyRecord, Timer } from './state-machine.js';

export interface SnapshotImage<T> {
  seq: number;
  at: number;
  records: DomainImage;
  timers: readonly Timer<T>[];
  effects: readonly Effect[];
  idempotency: readonly IdempotencyRecord[];
}

/** The chunked parts of an image, in the order they are written. */
const SECTIONS = ['records', 'timers', 'effects', 'idempotency'] as const;
type Section = (typeof SECTIONS)[number];

interface Manifest {
  generation: number;
  seq: number;
  at: number;
  /** Chunks and items per section. */
  sections: Record<Section, { chunks: number; items: number }>;
}

type SnapshotKey = string | [number, Section, number];

/** Items per chunk: a chunk is one lmdb value, encoded in one piece on the main thread. */
export const SNAPSHOT_CHUNK = 2_000;
const MANIFEST_KEY = 'manifest';

export class SnapshotStore<T> {
  readonly #db: Database<Buffer, SnapshotKey>;

  constructor(root: RootDatabase) {
    this.#db = root.openDB<Buffer, SnapshotKey>({ name: 'snapshot', encoding: 'binary' });
  }

  #manifest(): Manifest | undefined {
    const bytes = this.#db.get(MANIFEST_KEY);
    if (bytes === undefined) return undefined;
    const manifest = decodeStored(bytes, 'snapshot manifest') as Manifest;
    if (typeof manifest?.generation !== 'number' || typeof manifest.seq !== 'number' || manifest.sections === undefined) {
      throw new StoreCorruptError('snapshot manifest', 'not a manifest');
    }
    return manifest;
  }

  get latestSeq(): number {
    return this.#manifest()?.seq ?? 0;
  }

  /** The latest complete snapshot, verified, or undefined on a fresh data directory. */
  load(): SnapshotImage<T> | undefined {
    const manifest = this.#manifest();
    if (manifest === undefined) return undefined;
    const read = <V>(section: Section): V[] => {
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
      idempotency: read<IdempotencyRecord>('idempotency'),
    };
  }

  /**
   * Removes chunks of any generation but the manifest's: a crash between writing a
   * manifest and dropping the previous snapshot (or during a snapshot that never got its
   * manifest) leaves them behind. Returns how many values were removed.
   */
  async removeLeftovers(): Promise<number> {
    const current = this.#manifest()?.generation;
    const stale: SnapshotKey[] = [];
    for (const key of this.#db.getKeys()) {
      if (Array.isArray(key) && key[0] !== current) stale.push(key);
    }
    if (stale.length > 0) {
      await this.#db.transaction(() => {
        for (const key of stale) this.#db.remove(key);
      });
    }
    return stale.length;
  }

  /** Writes `image` chunk by chunk, then switches the manifest to it and drops the previous one. */
  async write(image: SnapshotImage<T>): Promise<void> {
    const previous = this.#manifest();
    const generation = (previous?.generation ?? 0) + 1;
    const sections = {} as Manifest['sections'];
    for (const section of SECTIONS) {
      const items: ReadonlyArray<unknown> = image[section];
      const chunks = Math.ceil(items.length / SNAPSHOT_CHUNK);
      for (let i = 0; i < chunks; i++) {
        // One chunk per turn: each put's encoding is the only synchronous work.
        await this.#db.put([generation, section, i], encodeStored(items.slice(i * SNAPSHOT_CHUNK, (i + 1) * SNAPSHOT_CHUNK)));
      }
      sections[section] = { chunks, items: items.length };
    }
    await this.#db.flushed;
    const manifest: Manifest = { generation, seq: image.seq, at: image.at, sections };
    await this.#db.put(MANIFEST_KEY, encodeStored(manifest));
    await this.#db.flushed;
    if (previous !== undefined) await this.#drop(previous.generation);
  }

  async #drop(generation: number): Promise<void> {
    await this.#db.transaction(() => {
      for (const key of this.#db.getKeys({ start: [generation], end: [generation + 1] })) this.#db.remove(key);
    });
  }
}
