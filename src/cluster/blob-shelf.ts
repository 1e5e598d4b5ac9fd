// A shard's blobs in cluster mode (a document's file: blob-store.ts): in a JetStream object
// store with the replicas of the shards' streams, so they outlive the node that wrote them
// as the shard's log does, and the node that takes the shard over reads and frees them.
// One bucket for every shard, each object named `<shard>.<table>.<key>`, as the published
// snapshots share theirs. A put resolves once the object store's put has: its chunks and its
// description each acknowledged by a quorum of the bucket's servers, so an entry naming the
// bytes is logged only after they are held as the entry will be.
//
// Objects are put once under a name (keys are drawn, never reused) and removed message by
// message (object-removal.ts): the object store's overwrite and delete purge, which the
// nats-server Debian ships replays wrongly on a restarted server.
import { createHash } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { Objm, type ObjectInfo, type ObjectStore } from '@nats-io/obj';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { BlobStore } from '../engine/storage.js';
import type { Report } from '../engine/report.js';
import { retrying } from './shard-stream.js';
import { objectRemover, type RemoveObject } from './object-removal.js';

export const BLOB_BUCKET = 'shard-blobs';
/** How the object store writes an object's digest: SHA-256 of its bytes, base64url. */
const DIGEST_PREFIX = 'SHA-256=';

/** What a blob store needs of the object store (a unit test gives one that holds its acknowledgements). */
export type BlobObjects = Pick<ObjectStore, 'info' | 'putBlob' | 'getBlob'>;

/** The bucket every shard's blobs are in, opened once per node. */
export class BlobShelf {
  private constructor(
    readonly objects: BlobObjects,
    readonly removeObject: RemoveObject,
    readonly report: Report,
  ) {}

  static async open(nc: NatsConnection, options: { replicas: number; report: Report }): Promise<BlobShelf> {
    const objects = await retrying(BLOB_BUCKET, () => new Objm(nc).create(BLOB_BUCKET, { replicas: options.replicas }));
    const jsm = await retrying(BLOB_BUCKET, () => jetstreamManager(nc));
    return new BlobShelf(objects, objectRemover(BLOB_BUCKET, objects, jetstream(nc), jsm), options.report);
  }

  /** The blobs `name` of `shard` (Storage.blobs of the shard's storage). */
  of(shard: string, name: string): BlobStore {
    return new ObjectBlobStore(this.objects, `${shard}.${name}.`, this.removeObject, this.report);
  }
}

/** Blobs under one prefix of an object store. */
export class ObjectBlobStore implements BlobStore {
  constructor(
    private readonly objects: BlobObjects,
    private readonly prefix: string,
    private readonly removeObject: RemoveObject,
    private readonly report: Report,
  ) {}

  /** Resolves once the object store's put has resolved: the bytes and their description held by the bucket's replicas. */
  async put(key: string, bytes: Buffer): Promise<void> {
    const name = this.prefix + key;
    // Looked up first on every try: a put over a name that is there (an earlier try whose answer was lost) would purge.
    await retrying(BLOB_BUCKET, async () => {
      const there = await this.objects.info(name);
      if (there === null) await this.objects.putBlob({ name }, bytes);
      else if (!holds(there, bytes)) throw new Error(`the blob ${name} is there with other bytes`);
    });
  }

  /** The bytes under `key`, checked against the digest they were put with (the object store's get checks it). */
  async get(key: string): Promise<Buffer | undefined> {
    const bytes = await retrying(BLOB_BUCKET, () => this.objects.getBlob(this.prefix + key));
    return bytes === null ? undefined : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /**
   * Frees the bytes under `key`. The entry that stopped naming them is durable already, so
   * bytes that cannot be removed now only take space: reported, not failed.
   */
  async remove(key: string): Promise<void> {
    try {
      await this.removeObject(this.prefix + key);
    } catch (err) {
      this.report(`blob ${this.prefix + key} not removed: ${err instanceof Error ? err.message : String(err)}`, { event: 'cluster.blob.remove-failed', level: 'warn', object: this.prefix + key });
    }
  }
}

/** Whether the object `info` describes is `bytes`. */
function holds(info: ObjectInfo, bytes: Buffer): boolean {
  if (info.size !== bytes.length || !info.digest.startsWith(DIGEST_PREFIX)) return false;
  return Buffer.from(info.digest.slice(DIGEST_PREFIX.length), 'base64url').equals(createHash('sha256').update(bytes).digest());
}
