// Published snapshots of cluster mode: each shard's owner puts the snapshots it writes into
// a JetStream object store, one object per snapshot (never overwritten), and moves the
// shard's pointer in a key-value bucket to it by compare-and-set, forward only. A node that
// takes a shard starts from the object the pointer names and replays the stream after it,
// so the stream can be trimmed below the newest published snapshot. A deposed owner that
// publishes late adds an older object and cannot move the pointer back.
//
// Objects are only ever put under new names and removed message by message: the object
// store's own overwrite and delete purge the old chunks, and the nats-server Debian ships
// replays a purge wrongly when a restarted server catches up (see deleteMessages).
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm, type KV } from '@nats-io/kv';
import { Objm, type ObjectStore } from '@nats-io/obj';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { decodeStored, encodeStored } from '../engine/format.js';
import type { SnapshotImage } from '../engine/snapshot.js';
import type { TimerMessage } from '../../actors/world.js';
import type { Report } from '../engine/report.js';
import { BUCKET_OPTIONS, deleteMessages, isWrongLastSequence, retrying } from './shard-stream.js';

export const SNAPSHOT_BUCKET = 'shard-snapshots';
export const SNAPSHOT_INDEX_BUCKET = 'shard-snapshot-index';
/** How long listing an object's chunks waits for one more. */
const CHUNK_LIST_WAIT_MS = 2_000;
/** The stream under the object store (the @nats-io/obj naming). */
const SNAPSHOT_STREAM = `OBJ_${SNAPSHOT_BUCKET}`;

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
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #report: Report;

  private constructor(objects: ObjectStore, index: KV, js: JetStreamClient, jsm: JetStreamManager, report: Report) {
    this.#report = report;
    this.#objects = objects;
    this.#index = index;
    this.#js = js;
    this.#jsm = jsm;
  }

  static async open(nc: NatsConnection, options: { replicas: number; report: Report }): Promise<SnapshotShelf> {
    const objects = await retrying(SNAPSHOT_BUCKET, () => new Objm(nc).create(SNAPSHOT_BUCKET, { replicas: options.replicas }));
    const index = await retrying(SNAPSHOT_INDEX_BUCKET, () => new Kvm(nc).create(SNAPSHOT_INDEX_BUCKET, { replicas: options.replicas, ...BUCKET_OPTIONS }));
    const jsm = await retrying(SNAPSHOT_BUCKET, () => jetstreamManager(nc));
    return new SnapshotShelf(objects, index, jetstream(nc), jsm, options.report);
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

  /**
   * Removes an object nobody will read again: its description first (it is gone for readers
   * at once), then its chunks. One that cannot be removed now only takes space, so this never
   * fails the publication; it is reported.
   */
  async #remove(object: string): Promise<void> {
    try {
      const info = await retrying(SNAPSHOT_BUCKET, () => this.#objects.info(object));
      if (info === null) return;
      await deleteMessages(this.#jsm, SNAPSHOT_STREAM, [info.revision]);
      await deleteMessages(this.#jsm, SNAPSHOT_STREAM, await this.#chunkSeqs(info.nuid, info.chunks));
    } catch (err) {
      this.#report(`snapshot object ${object} not removed: ${err instanceof Error ? err.message : String(err)}`, { event: 'cluster.snapshot.remove-failed', level: 'warn', object });
    }
  }

  /** The stream sequences of an object's `count` chunks. */
  async #chunkSeqs(nuid: string, count: number): Promise<number[]> {
    if (count === 0) return [];
    const consumer = await retrying(SNAPSHOT_BUCKET, () => this.#js.consumers.get(SNAPSHOT_STREAM, { filter_subjects: `$O.${SNAPSHOT_BUCKET}.C.${nuid}`, headers_only: true }));
    // A fetch, not a consume: chunks already removed (an earlier try) end it at its expiry instead of never.
    const messages = await consumer.fetch({ max_messages: count, expires: CHUNK_LIST_WAIT_MS });
    const seqs: number[] = [];
    for await (const message of messages) {
      seqs.push(message.seq);
      if (seqs.length >= count || message.info.pending === 0) break;
    }
    await messages.close();
    return seqs;
  }
}
