// The checksums of a snapshot's lazy chunks, checked at start: a damaged store is refused at
// start, not found when a request first reads the chunk (snapshot.ts). The chunks are the
// bulk of a large snapshot (169 MB at a million customers) and recovery decodes none of
// them, so on LMDB the check runs in a worker thread over the same environment while the
// main thread replays the log, and recovery waits for it before the service is ready: the
// restart's largest read no longer comes before the replay.
import { Worker } from 'node:worker_threads';
import { StoreCorruptError, verifyStored } from './format.js';
import { LAZY_CHUNK_KEY, LAZY_DIRECTORY_KEY } from './snapshot-lazy.js';
import type { ChunkKey } from './snapshot-writer.js';

/** One generation's lazy chunks to check: how many its directory says it wrote. */
export interface LazyChunksToCheck {
  generation: number;
  chunks: number;
}

/** What the worker is given: the snapshots' environment, its table, the generations, and the snapshot's name for errors. */
export interface LazyCheckRequest {
  dir: string;
  table: string;
  generations: LazyChunksToCheck[];
  where: string;
}

/** What the worker answers: all whole, or the first problem as StoreCorruptError says it. */
export type LazyCheckAnswer = { ok: true } | { ok: false; where: string; problem: string };

/** The keys generation `generation`'s `chunks` lazy chunks are stored under (`end` exclusive). */
export function lazyChunkRange({ generation, chunks }: LazyChunksToCheck): { start: ChunkKey; end: ChunkKey } {
  return { start: [generation, LAZY_CHUNK_KEY - chunks + 1], end: [generation, LAZY_DIRECTORY_KEY] };
}

/**
 * Checks that `values` (the range `lazyChunkRange` gives, key by key) are `chunks` lazy chunks,
 * each whole (its checksum), without decoding any; throws StoreCorruptError naming the first
 * damaged one. Native crc32 over the raw bytes.
 */
export function checkLazyChunks(values: Iterable<{ key: unknown; value: Uint8Array }>, { generation, chunks }: LazyChunksToCheck, where: string): void {
  let found = 0;
  for (const { key, value } of values) {
    if (!Array.isArray(key)) continue;
    verifyStored(value, `${where}, lazy chunk ${LAZY_CHUNK_KEY - (key[1] as number)} of generation ${generation}`);
    found++;
  }
  if (found !== chunks) throw new StoreCorruptError(`${where}, generation ${generation}`, `${found} of its ${chunks} lazy chunks`);
}

/**
 * Checks `request`'s chunks in a worker thread running `workerFile` (lazy-check-worker.ts, as
 * the host's build places it); rejects with StoreCorruptError as `checkLazyChunks` would throw it.
 */
export function checkLazyChunksAside(workerFile: string, request: LazyCheckRequest): Promise<void> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerFile, { workerData: request });
    let answered = false;
    worker.once('message', (answer: LazyCheckAnswer) => {
      answered = true;
      if (answer.ok) resolve();
      else reject(new StoreCorruptError(answer.where, answer.problem));
    });
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (!answered) reject(new Error(`the lazy chunks' check ended (exit code ${code}) without an answer`));
    });
  });
}
