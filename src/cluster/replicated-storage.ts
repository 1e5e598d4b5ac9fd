// A shard's storage in cluster mode: the node's LMDB for everything, with the log table
// replicated. A commit group is put locally and published to the shard's stream, and it is
// durable when the stream acknowledges it (a quorum of servers holds it): the local copy is
// a mirror the engine reads synchronously at start, not the record. Before the engine opens
// a shard, `mirrorStream` makes the local log exactly the stream's messages, so a group the
// stream never acknowledged is not replayed, and a new owner replays what the old one wrote.
// The engine recovers from the shard's newest published snapshot when it is newer than the
// local store's own, and each snapshot it writes is offered for publication. Its blobs (a
// document's bytes) are not the node's: they are kept where every owner of the shard reads
// them (blob-shelf.ts), when the shard is given a place for them.
import type { Key, KeyRange, Storage, StorageTable, Written } from '../engine/storage.js';
import { logTable } from '../engine/log.js';
import type { ShardStream } from './shard-stream.js';

class ReplicatedLogTable implements StorageTable<number> {
  readonly #local: StorageTable<number>;
  readonly #stream: ShardStream;
  /** The newest put: `flushed` waits for it, and puts are acknowledged in order. */
  #last: Promise<boolean> = Promise.resolve(true);

  constructor(local: StorageTable<number>, stream: ShardStream) {
    this.#local = local;
    this.#stream = stream;
  }

  get(key: number): Buffer | undefined {
    return this.#local.get(key);
  }

  getRange(range?: KeyRange<number>): Iterable<{ key: number; value: Buffer }> {
    return this.#local.getRange(range);
  }

  getKeys(range?: KeyRange<number>): Iterable<number> {
    return this.#local.getKeys(range);
  }

  put(key: number, value: Buffer, options?: { append: true }): Written {
    const local = this.#local.put(key, value, options);
    const replicated = this.#stream.append(value, key);
    this.#last = Promise.all([local, replicated]).then(([committed]) => committed);
    return this.#last;
  }

  /** Trims the local mirror; the stream is trimmed when a snapshot is published. */
  batch(action: () => void): Promise<boolean> {
    return this.#local.batch(action);
  }

  remove(key: number): void {
    this.#local.remove(key);
  }

  get flushed(): Promise<boolean> {
    return this.#last;
  }

  /** A group is one message: the log splits a larger one. */
  get maxValueBytes(): number {
    return this.#stream.maxGroupBytes;
  }

  /**
   * One group in flight: every message costs each of the stream's servers a round of
   * replication, so what is appended while one is out waits and goes as one message.
   */
  readonly maxPutsInFlight = 1;
}

/** What a shard's storage adds to the store: the shard's newest published snapshot, and a hook that publishes those written. */
export type PublishedSnapshots = Pick<Storage, 'offeredImage' | 'snapshotWritten'>;

/**
 * `local` with its log table replicated through `stream`, offering and publishing snapshots
 * through `published`, its blobs in `blobs` (absent: tables of `local`, as a test's log needs).
 */
export function replicatedStorage(local: Storage, stream: ShardStream, published: PublishedSnapshots = {}, blobs?: Storage['blobs']): Storage {
  return {
    table<K extends Key>(name: string): StorageTable<K> {
      const table = local.table<K>(name);
      if (name !== 'log') return table;
      return new ReplicatedLogTable(table as StorageTable<number>, stream) as unknown as StorageTable<K>;
    },
    close: () => local.close(),
    // The snapshots stay the node's own (published whole through `published`), in their own environment.
    snapshotTables: local.snapshotTables,
    ...published,
    ...(blobs === undefined ? {} : { blobs }),
  };
}

/** Makes `local`'s log table hold exactly the stream's messages (each keyed by its first entry); returns how many. */
export async function mirrorStream(stream: ShardStream, local: Storage): Promise<number> {
  const table = logTable(local);
  const keys = [...table.getKeys()];
  await table.batch(() => {
    for (const key of keys) table.remove(key);
  });
  const puts: Written[] = [];
  for await (const message of stream.read()) {
    puts.push(table.put(message.firstEntry, Buffer.from(message.data.buffer, message.data.byteOffset, message.data.byteLength), { append: true }));
  }
  const committed = await Promise.all(puts);
  if (committed.includes(false)) throw new Error(`${stream.name}: the local store refused a log group while mirroring the stream`);
  return puts.length;
}
