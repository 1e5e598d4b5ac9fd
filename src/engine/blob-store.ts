// Byte strings kept beside the log: a document's file, which a log entry names by key and
// hash but never holds. `put` resolves only once the bytes are durable, so a caller that
// writes them first and then logs the entry naming them can never leave an entry naming
// missing bytes; a crash in between leaves bytes nothing names, which cost space and nothing
// else. A storage may keep them itself (Storage.blobs: one whose log outlives this process's
// disk keeps them where the log's next reader finds them); otherwise they are a table of
// the store, here.
import { createHash } from 'node:crypto';
import { drawBytes } from './entropy.js';
import type { BlobStore, StorageTable } from './storage.js';

export type { BlobStore };

/** What a log entry names of bytes kept beside it: where they are, and the SHA-256 (hex) and size to know them by. */
export interface NamedBytes {
  readonly key: string;
  readonly sha256: string;
  readonly size: number;
}

/** Writes `bytes` under a key drawn through the entropy seam; resolves, once they are durable, to what an entry names of them. */
export async function storeBytes(blobs: BlobStore, bytes: Buffer): Promise<NamedBytes> {
  const named: NamedBytes = { key: drawBytes(16).toString('hex'), sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length };
  await blobs.put(named.key, bytes);
  return named;
}

/** Blobs in a table of the node's own store (LMDB, or the simulator's disk). */
export class TableBlobStore implements BlobStore {
  readonly #table: StorageTable<string>;

  constructor(table: StorageTable<string>) {
    this.#table = table;
  }

  /** Writes `bytes` under `key`; resolves once they are durable (committed and flushed). */
  async put(key: string, bytes: Buffer): Promise<void> {
    const written = this.#table.put(key, bytes);
    // As the log reads it (log.ts): durable once the commit succeeded and its fsync resolved.
    const [committed] = await Promise.all([written, written.flushed ?? written]);
    if (!committed) throw new Error(`the store refused the bytes of ${key}`);
  }

  get(key: string): Promise<Buffer | undefined> {
    return Promise.resolve(this.#table.get(key));
  }

  /** Frees the bytes under `key` (nothing to do when there are none). */
  async remove(key: string): Promise<void> {
    await this.#table.batch(() => this.#table.remove(key));
  }
}
