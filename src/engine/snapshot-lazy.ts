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
//
// A chunk holds one kind's records; the directory says whose (`kinds`). A directory written
// before it did holds one kind's chunks only (one kind could be lazy then), named by the
// first id of its first chunk.
//
// A live process keeps the chunks of the snapshot its store holds in one LazySnapshot: each
// snapshot it writes adds its generation (`add`), a full one replaces the others (`rebase`),
// so what the machine dropped from memory is always read from the store's own chunks.
import { decodeStored, StoreCorruptError, verifyStored } from './format.js';
import type { StorageTable } from './storage.js';
import { lazyHash, type LazyChunk, type LazyRecords, type LazyStore } from './state-machine.js';

/** The kind of record `id` names: its prefix, up to and with its first colon. */
export function kindOf(id: string): string {
  return id.slice(0, id.indexOf(':') + 1);
}

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
  /** The id prefix of each chunk's records, by chunk number; absent in directories written before (one kind's chunks). */
  kinds?: string[];
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

/** One generation's lazy chunks: its table, and how to read chunk n. */
export interface LazyGenerationSource {
  generation: number;
  /** How many lazy chunks it wrote. */
  chunks: number;
  lastId: string;
  table: Uint32Array;
  /** The kind of each chunk's records, by chunk number. */
  kinds: readonly string[];
  read(chunk: number): LazyChunkValue;
}

/** What a probe that finds nothing gives: shared, so the common miss allocates nothing. */
const NO_CHUNKS: readonly LazyChunk[] = Object.freeze([]);

/** One generation's lazy chunks, and those of them anyone has asked for, by number. */
interface LazyGeneration {
  source: LazyGenerationSource;
  chunks: Map<number, LazyChunk>;
  /** Chunks whose records are all in memory from the start (written from it, none dropped since). */
  loaded: ReadonlySet<number>;
}

/** The lazy chunks of a snapshot's generations, each read at most once by whoever holds it. */
export class LazySnapshot implements LazyStore {
  /** Newest generation first. */
  #generations: LazyGeneration[] = [];
  /** The greatest id any generation holds ('' for none). */
  #lastId = '';

  constructor(generations: LazyGenerationSource[]) {
    for (const source of generations) this.add(source);
  }

  /** A generation written since; `loaded`: the chunks whose records are in memory already. */
  add(source: LazyGenerationSource, loaded: ReadonlySet<number> = new Set()): void {
    this.#generations.push({ source, chunks: new Map(), loaded });
    this.#generations.sort((a, b) => b.source.generation - a.source.generation);
    if (source.lastId > this.#lastId) this.#lastId = source.lastId;
  }

  /** A full snapshot's generation, which holds every lazy record: the older ones are gone. */
  rebase(source: LazyGenerationSource, loaded: ReadonlySet<number>): void {
    this.#generations = [];
    this.#lastId = '';
    this.add(source, loaded);
  }

  /**
   * The machine dropped more of `generation`'s records from memory (a slice of what it put
   * in lazy chunks for it to drop). A chunk of it read since it was added, while memory still
   * held those records (so the read put them not), is marked loaded and would be passed over
   * for them from now on: it is read again when asked for. What a read put stays: a read
   * never replaces a record memory holds.
   */
  dropped(generation: number): void {
    for (const { source, chunks, loaded } of this.#generations) {
      if (source.generation !== generation) continue;
      for (const [n, chunk] of chunks) if (chunk.loaded && !loaded.has(n)) chunk.loaded = false;
    }
  }

  byId(id: string): readonly LazyChunk[] {
    // A record made since the snapshot (a replayed or new one asking whether it exists) is above every id: no hash, no probe.
    if (id > this.#lastId) return NO_CHUNKS;
    return this.#candidates(lazyHash(id), id, undefined);
  }

  byKey(hash: number): readonly LazyChunk[] {
    return this.#candidates(hash, undefined, undefined);
  }

  all(): Iterable<LazyChunk> {
    return this.#all(undefined);
  }

  ofKind(kind: string): LazyRecords {
    return {
      byId: (id) => (id > this.#lastId ? NO_CHUNKS : this.#candidates(lazyHash(id), id, kind)),
      byKey: (hash) => this.#candidates(hash, undefined, kind),
      all: () => this.#all(kind),
    };
  }

  /** The chunks not loaded (of `kind`, if given) that may hold a key of hash `hash`; `id`: the key is that id. */
  #candidates(hash: number, id: string | undefined, kind: string | undefined): readonly LazyChunk[] {
    let out: LazyChunk[] | undefined;
    for (const generation of this.#generations) {
      const { source } = generation;
      if (id !== undefined && id > source.lastId) continue;
      // The table's slots from the hash's own on, to the first empty one; no list per probe (recovery probes every id).
      const table = source.table;
      const mask = table.length / 2 - 1;
      for (let slot = hash & mask; table[2 * slot + 1] !== 0; slot = (slot + 1) & mask) {
        if (table[2 * slot] !== hash) continue;
        const n = table[2 * slot + 1]! - 1;
        if (kind !== undefined && source.kinds[n] !== kind) continue;
        const chunk = chunkOf(generation, n);
        if (!chunk.loaded && (out === undefined || !out.includes(chunk))) (out ??= []).push(chunk);
      }
    }
    return out ?? NO_CHUNKS;
  }

  *#all(kind: string | undefined): Generator<LazyChunk> {
    for (const generation of this.#generations) {
      for (let n = 0; n < generation.source.chunks; n++) {
        if (kind !== undefined && generation.source.kinds[n] !== kind) continue;
        const chunk = chunkOf(generation, n);
        if (!chunk.loaded) yield chunk;
      }
    }
  }
}

/** Lazy chunk `n` of `generation`, the one object that says whether it is loaded. */
function chunkOf(generation: LazyGeneration, n: number): LazyChunk {
  let chunk = generation.chunks.get(n);
  if (chunk === undefined) {
    const { source } = generation;
    chunk = { generation: source.generation, kind: source.kinds[n]!, loaded: generation.loaded.has(n), read: () => source.read(n) };
    generation.chunks.set(n, chunk);
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

/** The snapshot table as lazy chunks are read from it: under [generation, chunk] keys. */
export type LazyTable = StorageTable<[number, number]>;

/** The lazy chunks of generations `from` to `to`, by their directories: each chunk verified now, decoded when first asked for. */
export function lazySources(db: LazyTable, from: number, to: number, where: string): LazyGenerationSource[] {
  const generations: LazyGenerationSource[] = [];
  for (let generation = from; generation <= to; generation++) {
    const bytes = db.get([generation, LAZY_DIRECTORY_KEY]);
    if (bytes === undefined) continue;
    const directory = decodeStored(bytes, `${where}, the lazy directory of generation ${generation}`) as LazyDirectory;
    if (
      typeof directory?.chunks !== 'number' ||
      typeof directory.lastId !== 'string' ||
      !(directory.table instanceof Uint8Array) ||
      directory.table.byteLength % 8 !== 0 ||
      (directory.kinds !== undefined && (!Array.isArray(directory.kinds) || directory.kinds.length !== directory.chunks))
    ) {
      throw new StoreCorruptError(`${where}, generation ${generation}`, 'not a lazy directory');
    }
    verifyLazyChunks(db, generation, directory.chunks, where);
    // Copied into a buffer of its own: a Uint32Array needs its offset aligned.
    const table = new Uint32Array(directory.table.byteLength / 4);
    new Uint8Array(table.buffer).set(directory.table);
    const source = lazySource(db, generation, { chunks: directory.chunks, lastId: directory.lastId, table, kinds: [] }, where);
    // A directory written before chunks had kinds holds one kind's: its first chunk's first id names it.
    const kinds = directory.kinds ?? new Array<string>(directory.chunks).fill(directory.chunks === 0 ? '' : kindOf(source.read(0)[0][0] ?? ''));
    generations.push({ ...source, kinds });
  }
  return generations;
}

/** Generation `generation`'s lazy chunks as a source of reads, each chunk read and verified when asked for. */
export function lazySource(db: LazyTable, generation: number, directory: Omit<LazyGenerationSource, 'generation' | 'read'>, where: string): LazyGenerationSource {
  const read = (chunk: number): LazyChunkValue => {
    const at = `${where}, lazy chunk ${chunk} of generation ${generation}`;
    const value = db.get([generation, LAZY_CHUNK_KEY - chunk]);
    if (value === undefined) throw new StoreCorruptError(at, 'missing');
    const decoded = decodeStored(value, at);
    if (!Array.isArray(decoded) || !Array.isArray(decoded[0]) || !Array.isArray(decoded[1]) || decoded[0].length !== decoded[1].length) throw new StoreCorruptError(at, 'not a lazy chunk');
    return decoded as LazyChunkValue;
  };
  return { generation, chunks: directory.chunks, lastId: directory.lastId, table: directory.table, kinds: directory.kinds, read };
}

/**
 * Checks that generation `generation` holds its `chunks` lazy chunks, each whole (its checksum),
 * without decoding any: a damaged store is refused at start, not found when a request first
 * reads the chunk. Native crc32 over the raw bytes: 169 MB, about 0.15 s, at 1M customers.
 */
function verifyLazyChunks(db: LazyTable, generation: number, chunks: number, where: string): void {
  let found = 0;
  // Views of lmdb's read buffer: each value is checked before the next is read, and a copy
  // of each (169 MB at 1M customers) was about a third of the check's CPU.
  for (const { key, value } of db.getRange({ start: [generation, LAZY_CHUNK_KEY - chunks + 1], end: [generation, LAZY_DIRECTORY_KEY] }, 'views')) {
    if (!Array.isArray(key)) continue;
    verifyStored(value, `${where}, lazy chunk ${LAZY_CHUNK_KEY - key[1]} of generation ${generation}`);
    found++;
  }
  if (found !== chunks) throw new StoreCorruptError(`${where}, generation ${generation}`, `${found} of its ${chunks} lazy chunks`);
}
