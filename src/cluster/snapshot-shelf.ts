// Published snapshots of cluster mode: each shard's owner puts the snapshots it writes into
// a JetStream object store, one object per snapshot (never overwritten), and moves the
// shard's pointer in a key-value bucket to it by compare-and-set, forward only. A node that
// takes a shard starts from the object the pointer names and replays the stream after it,
// so the stream can be trimmed below the newest published snapshot. A deposed owner that
// publishes late adds an older object and cannot move the pointer back.
//
// Objects are only ever put under new names and removed message by message: the object
// store's own overwrite and delete purge the old chunks, and the nats-server Debian ships
// replays a purge wrongly when a restarted server catches up (object-removal.ts).
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm, type KV } from '@nats-io/kv';
import { Objm, type ObjectStore } from '@nats-io/obj';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { decodeStored, encodeStored } from '../engine/format.js';
import type { SnapshotImage } from '../engine/snapshot.js';
import type { TimerMessage } from '../../actors/world.js';
import type { Report } from '../engine/report.js';
import { BUCKET_OPTIONS, isWrongLastSequence, retrying } from './shard-stream.js';
import { objectRemover, type RemoveObject } from './object-removal.js';

export const SNAPSHOT_BUCKET = 'shard-snapshots';
export const SNAPSHOT_INDEX_BUCKET = 'shard-snapshot-index';

/** Where a shard's newest published snapshot is, and the one before it (kept while a takeover may still read it). */
interface Pointer {
  seq: number;
  object: string;
  previous?: string;
}

export type ShardImage = SnapshotImage<TimerMessage>;

export class SnapshotShelf {
  readonly #objects: ObjectStore;
  readonly #index: KV;
  readonly #removeObject: RemoveObject;
  readonly #report: Report;

  private constructor(objects: ObjectStore, index: KV, removeObject: RemoveObject, report: Report) {
    this.#report = report;
    this.#objects = objects;
    this.#index = index;
    this.#removeObject = removeObject;
  }

  static async open(nc: NatsConnection, options: { replicas: number; report: Report }): Promise<SnapshotShelf> {
    const objects = await retrying(SNAPSHOT_BUCKET, () => new Objm(nc).create(SNAPSHOT_BUCKET, { replicas: options.replicas }));
    const index = await retrying(SNAPSHOT_INDEX_BUCKET, () => new Kvm(nc).create(SNAPSHOT_INDEX_BUCKET, { replicas: options.replicas, ...BUCKET_OPTIONS }));
    const jsm = await retrying(SNAPSHOT_BUCKET, () => jetstreamManager(nc));
    return new SnapshotShelf(objects, index, objectRemover(SNAPSHOT_BUCKET, objects, jetstream(nc), jsm), options.report);
  }

  /** The shard's newest published snapshot, or undefined if none was published. */
  async latest(shard: string): Promise<ShardImage | undefined> {
    const entry = await retrying(SNAPSHOT_INDEX_BUCKET, () => this.#index.get(shard));
    if (entry === null || entry.operation !== 'PUT') return undefined;
    const pointer = entry.json<Pointer>();
    const bytes = await retrying(SNAPSHOT_BUCKET, () => this.#objects.getBlob(pointer.object));
    if (bytes === null) throw new Error(`${shard}: the published snapshot ${pointer.object} is missing`);
    const image = decodeStored(bytes, `published snapshot ${pointer.object}`) as ShardImage;
    if (image.seq !== pointer.seq) throw new Error(`${shard}: the published snapshot ${pointer.object} is at ${image.seq}, not ${pointer.seq}`);
    return image;
  }

  /**
   * Publishes `image` as the shard's snapshot and moves the pointer to it unless a newer one
   * is there; true if the pointer now names it. The object two publications back is removed.
   */
  async publish(shard: string, image: ShardImage): Promise<boolean> {
    const object = `${shard}.${image.seq}`;
    // Put once: the state at one log entry is the same whoever wrote it, and a put over an existing name purges.
    if ((await retrying(SNAPSHOT_BUCKET, () => this.#objects.info(object))) === null) {
      await retrying(SNAPSHOT_BUCKET, () => this.#objects.putBlob({ name: object }, encodeStored(image)));
    }
    for (;;) {
      const entry = await retrying(SNAPSHOT_INDEX_BUCKET, () => this.#index.get(shard));
      const current = entry === null || entry.operation !== 'PUT' ? undefined : entry.json<Pointer>();
      if (current !== undefined && current.seq >= image.seq) {
        if (current.object !== object) await this.#remove(object);
        return current.object === object;
      }
      const next: Pointer = { seq: image.seq, object, ...(current === undefined ? {} : { previous: current.object }) };
      try {
        if (entry === null) await this.#index.create(shard, JSON.stringify(next));
        else await this.#index.update(shard, JSON.stringify(next), entry.revision);
      } catch (err) {
        if (isWrongLastSequence(err)) continue;
        throw err;
      }
      if (current?.previous !== undefined) await this.#remove(current.previous);
      return true;
    }
  }

  /** Removes an object nobody will read again; one that cannot be removed now only takes space, so this never fails the publication; it is reported. */
  async #remove(object: string): Promise<void> {
    try {
      await this.#removeObject(object);
    } catch (err) {
      this.#report(`snapshot object ${object} not removed: ${err instanceof Error ? err.message : String(err)}`, { event: 'cluster.snapshot.remove-failed', level: 'warn', object });
    }
  }
}
