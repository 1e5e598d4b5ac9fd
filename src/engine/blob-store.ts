// Byte strings kept beside the log in a table of their own (the storage seam, storage.ts):
// a document's file, which a log entry names by key and hash but never holds. `put`
// resolves only once the bytes are durable, so a caller that writes them first and then
// logs the entry naming them can never leave an entry naming missing bytes; a crash in
// between leaves bytes nothing names, which cost space and nothing else.
import type { StorageTable } from './storage.js';

export class BlobStore {
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

  get(key: string): Buffer | undefined {
    return this.#table.get(key);
  }

  /** Frees the bytes under `key` (nothing to do when there are none). */
  async remove(key: string): Promise<void> {
    await this.#table.batch(() => this.#table.remove(key));
  }
}
