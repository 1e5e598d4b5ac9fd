// Byte strings kept beside the log: a document's file, which a log entry names by key and
// hash but never holds. `put` resolves only once the bytes are durable, so a caller that
// writes them first and then logs the entry naming them can never leave an entry naming
// missing bytes; a crash in between leaves bytes nothing names, which cost space and nothing
// else. A storage may keep them itself (Storage.blobs: one whose log outlives this process's
// disk keeps them where the log's next reader finds them); otherwise they are a table of
// the store, here.
import type { BlobStore, StorageTable } from './storage.js';

export type { BlobStore };

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
