// Snapshots: a consistent image of every record, the pending timers and the idempotency
// records, as of one log sequence. The image is captured synchronously (records are
// immutable, so that is a copy of references) and then written in chunks across event-
// loop turns, so requests keep flowing while it is written. A snapshot counts only once
// its manifest is durable; then older snapshots and the log up to its sequence go.
import type { Database, RootDatabase } from 'lmdb';
import type { DomainImage, IdempotencyRecord, Timer } from './state-machine.js';

export interface SnapshotImage<T> {
  seq: number;
  at: number;
  records: DomainImage;
  timers: Timer<T>[];
  idempotency: IdempotencyRecord[];
}

interface Manifest {
  generation: number;
  seq: number;
  at: number;
  recordChunks: number;
  records: number;
}

interface Extras<T> {
  timers: Timer<T>[];
  idempotency: IdempotencyRecord[];
}

type SnapshotKey = string | [number, number] | [number, 'extras'];
type SnapshotValue<T> = Manifest | Array<readonly [string, unknown]> | Extras<T>;

/** Records per chunk: a chunk is one lmdb value, encoded in one piece on the main thread. */
export const SNAPSHOT_CHUNK = 2_000;
const MANIFEST_KEY = 'manifest';

export class SnapshotStore<T> {
  readonly #db: Database<SnapshotValue<T>, SnapshotKey>;

  constructor(root: RootDatabase) {
    this.#db = root.openDB<SnapshotValue<T>, SnapshotKey>({ name: 'snapshot' });
  }

  #manifest(): Manifest | undefined {
    return this.#db.get(MANIFEST_KEY) as Manifest | undefined;
  }

  get latestSeq(): number {
    return this.#manifest()?.seq ?? 0;
  }

  /** The latest complete snapshot, or undefined on a fresh data directory. */
  load(): SnapshotImage<T> | undefined {
    const manifest = this.#manifest();
    if (manifest === undefined) return undefined;
    const records: Array<readonly [string, unknown]> = [];
    for (let i = 0; i < manifest.recordChunks; i++) {
      const chunk = this.#db.get([manifest.generation, i]) as Array<readonly [string, unknown]> | undefined;
      if (chunk === undefined) throw new Error(`snapshot ${manifest.generation} lacks chunk ${i}`);
      for (const record of chunk) records.push(record);
    }
    if (records.length !== manifest.records) {
      throw new Error(`snapshot ${manifest.generation} holds ${records.length} records, manifest says ${manifest.records}`);
    }
    const extras = this.#db.get([manifest.generation, 'extras']) as Extras<T> | undefined;
    if (extras === undefined) throw new Error(`snapshot ${manifest.generation} lacks its timers and idempotency records`);
    return { seq: manifest.seq, at: manifest.at, records, timers: extras.timers, idempotency: extras.idempotency };
  }

  /** Writes `image` chunk by chunk, then switches the manifest to it and drops the previous one. */
  async write(image: SnapshotImage<T>): Promise<void> {
    const previous = this.#manifest();
    const generation = (previous?.generation ?? 0) + 1;
    const chunks = Math.ceil(image.records.length / SNAPSHOT_CHUNK);
    for (let i = 0; i < chunks; i++) {
      const chunk = image.records.slice(i * SNAPSHOT_CHUNK, (i + 1) * SNAPSHOT_CHUNK);
      await this.#db.put([generation, i], chunk);
    }
    await this.#db.put([generation, 'extras'], { timers: image.timers, idempotency: image.idempotency });
    await this.#db.flushed;
    const manifest: Manifest = { generation, seq: image.seq, at: image.at, recordChunks: chunks, records: image.records.length };
    await this.#db.put(MANIFEST_KEY, manifest);
    await this.#db.flushed;
    if (previous !== undefined) await this.#drop(previous.generation);
  }

  async #drop(generation: number): Promise<void> {
    await this.#db.transaction(() => {
      for (const key of this.#db.getKeys({ start: [generation, 0], end: [generation + 1, 0] })) this.#db.remove(key);
    });
  }
}
