// Records a snapshot holds that recovery does not build: the machine names them (`lazyKeys`),
// the writer puts them into chunks of their own, and recovery hands the machine an index of
// those chunks instead of their records, so a restart with a million customers builds no
// customer and no map entry; the machine reads a chunk the first time it is asked for one of
// its records (actors/customer.ts).
//
// Each generation that holds such chunks has a directory value beside them: how many it
// wrote, and one open-addressing hash table from the hash of each key a record is found by
// (`lazyHash`: its id, and what else the machine asked for, such as a UMA address) to the chunk holding
// it. A hash is only a hint: a probe gives the chunks that may hold a key, and the machine
// reads them to know. The table is built once all chunks are written, in slices like them.
import { lazyHash, type LazyChunk, type LazyRecords } from './state-machine.js';

/** The chunk number the directory of a generation is stored under; lazy chunk n is under LAZY_CHUNK_KEY - n. */
export const LAZY_DIRECTORY_KEY = -1;
export const LAZY_CHUNK_KEY = -2;

/** The stored form of a lazy chunk: its ids, and the stored form of each record in the same order. */
export type LazyChunkValue = [ids: string[], records: unknown[]];

export interface LazyDirectory {
  /** Lazy chunks this generation wrote. */
  chunks: number;
  /**
   * The greatest id among them: an id above it is in none (new ids, UUIDv7 in time order,
   * are above every id of a snapshot, so a record made since probes no table).
   */
  lastId: string;
  /** Slots of [hash, chunk + 1] pairs (0: empty), a power of two of them, as bytes. */
  table: Uint8Array;
}

/** The (hash, chunk) pairs of a generation's lazy chunks as they are written, and the table they make. */
export class LazyIndexBuilder {
  #pairs = new Uint32Array(1024);
  #length = 0;

  /** A key of lazy chunk `chunk` whose `lazyHash` is `hash`. */
  add(hash: number, chunk: number): void {
    if (this.#length + 2 > this.#pairs.length) {
      const grown = new Uint32Array(this.#pairs.length * 2);
      grown.set(this.#pairs);
      this.#pairs = grown;
    }
    this.#pairs[this.#length++] = hash;
    this.#pairs[this.#length++] = chunk + 1;
  }

  /** The table of every pair added, at most half full; `slice` is called between steps of `step` pairs. */
  async table(step: number, slice: () => Promise<void>): Promise<Uint32Array> {
    const count = this.#length / 2;
    let slots = 2;
    while (slots < 2 * count) slots *= 2;
    const table = new Uint32Array(2 * slots);
    const mask = slots - 1;
    for (let p = 0; p < this.#length; p += 2) {
      const hash = this.#pairs[p]!;
      let slot = hash & mask;
      while (table[2 * slot + 1] !== 0) slot = (slot + 1) & mask;
      table[2 * slot] = hash;
      table[2 * slot + 1] = this.#pairs[p + 1]!;
      if ((p / 2) % step === step - 1) await slice();
    }
    return table;
  }
}

/** The chunk numbers of `table` that may hold a key of hash `hash`, each once. */
function probe(table: Uint32Array, hash: number): number[] {
  const slots = table.length / 2;
  const mask = slots - 1;
  const found: number[] = [];
  for (let slot = hash & mask; table[2 * slot + 1] !== 0; slot = (slot + 1) & mask) {
    if (table[2 * slot] !== hash) continue;
    const chunk = table[2 * slot + 1]! - 1;
    if (!found.includes(chunk)) found.push(chunk);
  }
  return found;
}

/** One generation's lazy chunks: its table, and how to read chunk n. */
export interface LazyGenerationSource {
  generation: number;
  /** How many lazy chunks it wrote. */
  chunks: number;
  lastId: string;
  table: Uint32Array;
  read(chunk: number): LazyChunkValue;
}

/** What a probe that finds nothing gives: shared, so the common miss allocates nothing. */
const NO_CHUNKS: readonly LazyChunk[] = Object.freeze([]);

/** One generation's lazy chunks, and those of them anyone has asked for, by number. */
interface LazyGeneration {
  source: LazyGenerationSource;
  chunks: Map<number, LazyChunk>;
}

/** The lazy chunks of a snapshot's generations, each read at most once by whoever holds it. */
export class LazySnapshot implements LazyRecords {
  /** Newest generation first. */
  readonly #generations: LazyGeneration[];
  /** The greatest id any generation holds ('' for none). */
  readonly #lastId: string;

  constructor(generations: LazyGenerationSource[]) {
    this.#generations = [...generations].sort((a, b) => b.generation - a.generation).map((source) => ({ source, chunks: new Map() }));
    this.#lastId = generations.reduce((last, { lastId }) => (lastId > last ? lastId : last), '');
  }

  byId(id: string): readonly LazyChunk[] {
    // A record made since the snapshot (a replayed or new one asking whether it exists) is above every id: no hash, no probe.
    if (id > this.#lastId) return NO_CHUNKS;
    return this.#candidates(lazyHash(id), id);
  }

  byKey(hash: number): readonly LazyChunk[] {
    return this.#candidates(hash, undefined);
  }

  /** The chunks not loaded that may hold a key of hash `hash`; `id`: the key is that id. */
  #candidates(hash: number, id: string | undefined): readonly LazyChunk[] {
    let out: LazyChunk[] | undefined;
    for (const generation of this.#generations) {
      if (id !== undefined && id > generation.source.lastId) continue;
      for (const n of probe(generation.source.table, hash)) {
        const chunk = chunkOf(generation, n);
        if (!chunk.loaded) (out ??= []).push(chunk);
      }
    }
    return out ?? NO_CHUNKS;
  }

  *all(): Generator<LazyChunk> {
    for (const generation of this.#generations) {
      for (let n = 0; n < generation.source.chunks; n++) {
        const chunk = chunkOf(generation, n);
        if (!chunk.loaded) yield chunk;
      }
    }
  }
}

/** Lazy chunk `n` of `generation`, the one object that says whether it is loaded. */
function chunkOf({ source, chunks }: LazyGeneration, n: number): LazyChunk {
  let chunk = chunks.get(n);
  if (chunk === undefined) {
    chunk = { generation: source.generation, loaded: false, read: () => source.read(n) };
    chunks.set(n, chunk);
  }
  return chunk;
}

/** The records of lazy chunks as the log tool reads a snapshot whole: newest generation first, each id once. */
export function expandLazy(lazy: LazyRecords): Array<readonly [string, unknown]> {
  const seen = new Set<string>();
  const out: Array<readonly [string, unknown]> = [];
  for (const chunk of lazy.all()) {
    chunk.loaded = true;
    const [ids, records] = chunk.read();
    ids.forEach((id, i) => {
      if (seen.has(id)) return;
      seen.add(id);
      out.push([id, records[i]]);
    });
  }
  return out;
}
