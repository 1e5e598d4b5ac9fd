// How a snapshot's values are put (snapshot.ts): chunks of items, and the lazy chunks and
// directory of the records a machine reads on first use (snapshot-lazy.ts), one put in flight
// at a time, the writer keeping to its share of the event loop.
import { encodeStored } from './format.js';
import { LAZY_CHUNK_KEY, LAZY_DIRECTORY_KEY, LazyIndexBuilder, type LazyChunkValue, type LazyDirectory } from './snapshot-lazy.js';
import type { MANIFEST_KEY, Space } from './snapshot-layout.js';
import type { SnapshotStats, SnapshotWrite } from './snapshot-image.js';
import type { StorageTable } from './storage.js';
import { LatestChanges } from './change-log.js';
import { lazyHash, type DomainChanges, type DomainColumns, type LazyChunk, type LazyPlace, type LazyWritten } from './state-machine.js';

/** Items per chunk value at most. */
export const CHUNK_ITEMS = 256;
/** Synchronous work per event-loop turn (ms) before a chunk is cut short. */
const SLICE_MS = 2;
/** Pairs a lazy directory's table takes in per slice of the writer. */
const DIRECTORY_STEP = 65_536;

export type ChunkKey = [generation: number, chunk: number];
/**
 * An item as a chunk holds it: [space, id, value (null: removed)], or [space, value] when the
 * value is an object that carries that very id (a record, a timer, an effect), so that the id
 * is not written twice (about a tenth of a payment's records' bytes and encoding).
 */
export type Item = [Space, string | number, unknown] | [Space, { id: string }];

/** The item for `value` under `id` in `space`, in the shorter shape where it carries its id. */
export function itemOf(space: Space, id: string | number, value: unknown): Item {
  if (typeof id === 'string' && typeof value === 'object' && value !== null && !Array.isArray(value) && (value as { id?: unknown }).id === id) return [space, value as { id: string }];
  return [space, id, value];
}

/** An item's id, of either shape (undefined: neither). */
export function itemId(item: Item): unknown {
  return item.length === 2 ? (item[1] as { id?: unknown }).id : item[1];
}

/** An item's value, of either shape. */
export function itemValue(item: Item): unknown {
  return item.length === 2 ? item[1] : item[2];
}

/** The sections of a snapshot in the order they are written, each with its space. */
export function sectionsOf<T>(snapshot: SnapshotWrite<T>): Array<[Space, ReadonlyArray<readonly [string | number, unknown]> | DomainColumns | DomainChanges]> {
  return [
    ['r', snapshot.records],
    ['t', snapshot.timers],
    ['e', snapshot.effects],
    ['i', snapshot.idempotency],
  ];
}

/**
 * Puts a snapshot's values, one in flight at a time, keeping the writer to its share of the
 * event loop: after each put it pauses for the rest of the time its work took.
 */
export class ChunkWriter {
  readonly stats: SnapshotStats = { written: 0, chunks: 0, bytes: 0, removed: 0 };
  #inFlight: Promise<unknown> | undefined;
  #sliceStart: number;

  constructor(
    private readonly db: StorageTable<ChunkKey | typeof MANIFEST_KEY>,
    readonly generation: number,
    private readonly meter: () => number,
    private readonly pause: (workMs: number) => Promise<void>,
  ) {
    this.#sliceStart = meter();
  }

  /** Whether this slice of work has run its time: the chunk being filled is put now, however full. */
  sliceDue(): boolean {
    return this.meter() - this.#sliceStart >= SLICE_MS;
  }

  /** Puts one value of `items` items (a chunk; 0 for a directory). */
  async put(key: ChunkKey, value: unknown, items = Array.isArray(value) ? value.length : 0): Promise<void> {
    const bytes = encodeStored(value);
    this.stats.chunks++;
    this.stats.written += items;
    this.stats.bytes += bytes.length;
    // The writer's own work on the event loop; waiting for the previous commit is not.
    const workMs = this.meter() - this.#sliceStart;
    if (this.#inFlight !== undefined) await this.#inFlight;
    this.#inFlight = this.db.put(key, bytes);
    // Its failure is thrown where it is awaited, not reported as unhandled meanwhile.
    this.#inFlight.catch(() => undefined);
    await this.pause(workMs);
    this.#sliceStart = this.meter();
  }

  /** A pause in the middle of work that puts nothing (building a directory). */
  async yieldSlice(): Promise<void> {
    await this.pause(this.meter() - this.#sliceStart);
    this.#sliceStart = this.meter();
  }

  /** Every value put is durable. */
  async settled(): Promise<void> {
    if (this.#inFlight !== undefined) await this.#inFlight;
    await this.db.flushed;
  }
}

/**
 * Items gathered into a chunk of at most CHUNK_ITEMS, put when full or when the slice is due:
 * `add` says when, and only then does the writer wait for `flush` (a promise per item, awaited
 * or not, costs the writer's loop more than the item).
 */
export class ChunkBuffer<I> {
  #items: I[] = [];

  constructor(private readonly putChunk: (items: I[]) => Promise<void>) {}

  /** Adds `item`; true when the chunk is to be put now (`flush`). */
  add(item: I, due: boolean): boolean {
    this.#items.push(item);
    return this.#items.length >= CHUNK_ITEMS || due;
  }

  async flush(): Promise<void> {
    if (this.#items.length === 0) return;
    const items = this.#items;
    this.#items = [];
    await this.putChunk(items);
  }
}

/** One kind's lazy chunk being filled, and its number in the generation. */
interface LazyLane {
  readonly kind: string;
  chunk: number;
  ids: string[];
  records: unknown[];
}

/** What a generation's lazy chunks came to: its directory and table, which chunks hold only records in memory, and the records to drop. */
export interface LazyChunksWritten {
  directory: LazyDirectory & { kinds: string[] };
  table: Uint32Array;
  loaded: Set<number>;
  dropped: LazyWritten;
}

/**
 * Records the machine leaves to be read on first use: lazy chunks of ids and stored forms,
 * one kind's each, and the generation's directory (snapshot-lazy.ts). Each kind fills a chunk
 * of its own (a lane); a chunk's number is taken when its first record comes. It notes the
 * records the machine may drop from memory once the snapshot holds them, and the chunks that
 * hold records not in memory (those, and records copied from older chunks: `copy`).
 */
export class LazyChunkBuffer {
  readonly #lanes = new Map<string, LazyLane>();
  /** A lane's chunk is full. */
  #full = false;
  /** The kind of each chunk numbered so far. */
  readonly #kinds: string[] = [];
  #lastId = '';
  readonly #index = new LazyIndexBuilder();
  /** The hashes of the other keys of the record about to be added. */
  readonly #keys: number[] = [];
  readonly #dropped: { ids: string[]; records: unknown[] } = { ids: [], records: [] };
  /** Chunks that hold records not in memory once the snapshot is written. */
  readonly #unloaded = new Set<number>();
  /** The ids added from memory, which no copied older version replaces (kept only when some will be copied). */
  readonly #fromMemory: Set<string> | undefined;
  /** Told the hash of each key of the record about to be added besides its id (StateMachine.lazyKeys). */
  readonly key = (hash: number): void => {
    this.#keys.push(hash);
  };

  /** `copying`: older chunks will be copied (`copy`), so the ids added before are remembered. */
  constructor(
    private readonly out: ChunkWriter,
    copying: boolean,
  ) {
    this.#fromMemory = copying ? new Set() : undefined;
  }

  /**
   * Adds the record `id` (`record`, stored as `form`) where `place` says, its other keys told
   * to `key`; true when the chunks are to be put now (`flush`).
   */
  add(place: LazyPlace, id: string, record: unknown, form: unknown, due: boolean): boolean {
    const n = this.#add(place.kind, id, form);
    this.#fromMemory?.add(id);
    if (place.drop) {
      this.#dropped.ids.push(id);
      this.#dropped.records.push(record);
      this.#unloaded.add(n);
    }
    return this.#full || due;
  }

  /** Copies the records of `chunks` (newest generation first) that memory did not hold, each id's newest once. */
  async copy(chunks: readonly LazyChunk[]): Promise<void> {
    const seen = this.#fromMemory;
    if (seen === undefined) return;
    for (const older of chunks) {
      const [ids, forms] = older.read();
      for (let i = 0; i < ids.length; i++) {
        if (seen.has(ids[i]!)) continue;
        seen.add(ids[i]!);
        this.#unloaded.add(this.#add(older.kind, ids[i]!, forms[i]));
        if (this.#full || this.out.sliceDue()) await this.flush();
      }
    }
  }

  /**
   * Adds `form` to `kind`'s lane; returns the number of the chunk that takes it. Chunks of 32
   * records for the kinds dropped from memory (a read back restores its whole chunk) made a
   * payment load's closing snapshot outlast the bench's 15 s: a put waits for the one before.
   */
  #add(kind: string, id: string, form: unknown): number {
    let lane = this.#lanes.get(kind);
    if (lane === undefined) this.#lanes.set(kind, (lane = { kind, chunk: -1, ids: [], records: [] }));
    if (lane.chunk < 0) {
      lane.chunk = this.#kinds.length;
      this.#kinds.push(kind);
    }
    lane.ids.push(id);
    lane.records.push(form);
    if (id > this.#lastId) this.#lastId = id;
    this.#index.add(lazyHash(id), lane.chunk);
    for (const hash of this.#keys) this.#index.add(hash, lane.chunk);
    this.#keys.length = 0;
    if (lane.ids.length >= CHUNK_ITEMS) this.#full = true;
    return lane.chunk;
  }

  /** Puts every chunk begun. */
  async flush(): Promise<void> {
    this.#full = false;
    for (const lane of this.#lanes.values()) {
      if (lane.ids.length === 0) continue;
      const value: LazyChunkValue = [lane.ids, lane.records];
      const chunk = lane.chunk;
      lane.ids = [];
      lane.records = [];
      lane.chunk = -1;
      await this.out.put([this.out.generation, LAZY_CHUNK_KEY - chunk], value, value[0].length);
    }
  }

  /** Puts what is left, then the directory. */
  async finish(): Promise<LazyChunksWritten> {
    await this.flush();
    const table = await this.#index.table(DIRECTORY_STEP, () => this.out.yieldSlice());
    const directory = { chunks: this.#kinds.length, lastId: this.#lastId, table: new Uint8Array(table.buffer, table.byteOffset, table.byteLength), kinds: this.#kinds };
    await this.out.put([this.out.generation, LAZY_DIRECTORY_KEY], directory, 0);
    const loaded = new Set<number>();
    for (let n = 0; n < directory.chunks; n++) if (!this.#unloaded.has(n)) loaded.add(n);
    return { directory, table, loaded, dropped: this.#dropped };
  }
}

/** Changes noted per latestChanges' slice of work before it looks at the time. */
const LATEST_STEP = 4_096;

/**
 * Each record a snapshot's changes name, once, in the order first changed, with the record its
 * last change left (undefined: removed): what `latestOf` gives, made a slice at a time, since a
 * snapshot's changes run to millions (their repeats were dropped at its start, synchronously, before).
 */
export async function latestChanges(changes: DomainChanges, out: ChunkWriter): Promise<DomainColumns> {
  const latest = new LatestChanges<string>();
  const { noted, values } = changes;
  for (let i = 0; i < noted.length; i++) {
    latest.add(noted[i]!, values[i]);
    if (i % LATEST_STEP === LATEST_STEP - 1 && out.sliceDue()) await out.yieldSlice();
  }
  return { ids: latest.keys, records: latest.values };
}
