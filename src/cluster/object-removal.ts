// Removing an object from a JetStream object store message by message: its description
// first (readers find nothing at once), then its chunks. The object store's own delete
// purges the chunks, and the nats-server Debian ships replays a purge wrongly when a
// restarted server catches up (nats-server#4196, see deleteMessages in shard-stream.ts):
// its replica would lose every other object of the bucket. Published snapshots and
// shards' blobs are removed this way.
import type { ObjectStore } from '@nats-io/obj';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { deleteMessages, retrying } from './shard-stream.js';

/** How long listing an object's chunks waits for one more. */
const CHUNK_LIST_WAIT_MS = 2_000;

/** Removes an object of one bucket by name (nothing to do when there is none). */
export type RemoveObject = (name: string) => Promise<void>;

/** Removes objects of `bucket` (open as `objects`) without a purge. */
export function objectRemover(bucket: string, objects: Pick<ObjectStore, 'info'>, js: JetStreamClient, jsm: JetStreamManager): RemoveObject {
  const stream = `OBJ_${bucket}`;
  return async (name) => {
    const info = await retrying(bucket, () => objects.info(name));
    if (info === null) return;
    await deleteMessages(jsm, stream, [info.revision]);
    await deleteMessages(jsm, stream, await chunkSeqs(js, bucket, info.nuid, info.chunks));
  };
}

/** The stream sequences of an object's `count` chunks. */
async function chunkSeqs(js: JetStreamClient, bucket: string, nuid: string, count: number): Promise<number[]> {
  if (count === 0) return [];
  const consumer = await retrying(bucket, () => js.consumers.get(`OBJ_${bucket}`, { filter_subjects: `$O.${bucket}.C.${nuid}`, headers_only: true }));
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
