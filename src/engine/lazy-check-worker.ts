// The worker thread of lazy-check.ts: opens the snapshots' environment the main thread has
// open (LMDB shares it within the process), reads each lazy chunk's bytes where they lie
// (`getBinaryFast`: no copy, valid until the next read) and checks its checksum.
import { parentPort, workerData } from 'node:worker_threads';
import { StoreCorruptError } from './format.js';
import { checkLazyChunks, lazyChunkRange, type LazyCheckAnswer, type LazyCheckRequest } from './lazy-check.js';
import type { ChunkKey } from './snapshot-writer.js';
import { openStoreInThread } from './store.js';

const request = workerData as LazyCheckRequest;
const root = openStoreInThread(request.dir);
let answer: LazyCheckAnswer = { ok: true };
try {
  const table = root.openDB<Buffer, ChunkKey>({ name: request.table, encoding: 'binary' });
  for (const generation of request.generations) {
    const keys = table.getKeys(lazyChunkRange(generation));
    checkLazyChunks(keys.map((key) => ({ key, value: table.getBinaryFast(key)! })), generation, request.where);
  }
} catch (err) {
  if (!(err instanceof StoreCorruptError)) throw err;
  answer = { ok: false, where: err.where, problem: err.problem };
} finally {
  await root.close();
}
parentPort!.postMessage(answer);
