// The replicated log of cluster mode (src/cluster/) on a real three-server JetStream
// cluster: an engine whose log table is a shard's stream acknowledges an entry only once a
// quorum holds it, a new owner replays exactly what was acknowledged, a deposed owner can
// append nothing, and the loss of one server does not stop writes. A shard's blobs are in an
// object store: acknowledged only once it holds them, read whole from another node.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type Msg, type NatsConnection, type Payload, type RequestOptions } from '@nats-io/transport-node';
import type { ObjectInfo } from '@nats-io/obj';
import { randomBytes } from 'node:crypto';
import { ManualClock } from '../src/engine/clock.js';
import { LmdbStorage } from '../src/engine/storage.js';
import { openStore } from '../src/engine/store.js';
import { mirrorStream, replicatedStorage } from '../src/cluster/replicated-storage.js';
import { ShardStream } from '../src/cluster/shard-stream.js';
import { BLOB_BUCKET, BlobShelf, ObjectBlobStore, type BlobObjects } from '../src/cluster/blob-shelf.js';
import { add, openCounterEngine, tempDir, type OpenedCounters } from './support/counter-machine.js';
import { natsClusterForSuite } from './support/nats-cluster.js';

const nats = natsClusterForSuite(3);
const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A node taking the shard: its local log made the stream's, then an engine over it whose log is the stream. */
async function takeShard(name: string, writer: string, holds?: () => boolean, nc: NatsConnection = nats.nc): Promise<OpenedCounters & { stream: ShardStream }> {
  const dir = tempDir();
  dirs.push(dir);
  // A server an earlier test restarted may still be rejoining: a three-replica stream needs all three.
  await nats.cluster.ready();
  const stream = await ShardStream.open(nc, name, { replicas: 3, writer, ...(holds === undefined ? {} : { holds }) });
  const mirror = new LmdbStorage(openStore(dir));
  await mirrorStream(stream, mirror);
  await mirror.close();
  const opened = await openCounterEngine(dir, new ManualClock(), { openStorage: (path) => replicatedStorage(new LmdbStorage(openStore(path)), stream) });
  return { ...opened, stream };
}

const addTo = (node: OpenedCounters, id: string, n: number): Promise<number | undefined> =>
  node.engine.exec([id], () => ({ events: [add(id, n)], reply: () => node.counters.values.get(id) }));

/**
 * `nc`, except that its first `times` answers to the info of `stream` say the stream ends at
 * `lastSeq`: as a server restarted and still behind answered once in a run here.
 */
function answeringFromBehind(nc: NatsConnection, stream: string, lastSeq: number, times: number): NatsConnection {
  let left = times;
  const request = async (subject: string, payload?: Payload, options?: RequestOptions): Promise<Pick<Msg, 'data'>> => {
    const answer = await nc.request(subject, payload, options);
    if (subject !== `$JS.API.STREAM.INFO.${stream}` || left === 0) return answer;
    left--;
    const info = answer.json<{ state: { last_seq: number; messages: number } }>();
    info.state.last_seq = lastSeq;
    info.state.messages = lastSeq;
    return { data: new TextEncoder().encode(JSON.stringify(info)) };
  };
  return new Proxy(nc, {
    get(target, property) {
      if (property === 'request') return request;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('the replicated log', () => {
  it('acknowledges entries a quorum holds, and a new owner replays exactly them', async () => {
    const first = await takeShard('ONE', 'a:1');
    const replies = await Promise.all(Array.from({ length: 300 }, (_, n) => addTo(first, `c${n % 7}`, 1)));
    assert.equal(replies.length, 300);
    const acknowledged = new Map(first.counters.values);
    assert.equal([...acknowledged.values()].reduce((a, b) => a + b, 0), 300);
    // The stream holds every group (a group is one message).
    assert.equal((await (await jetstreamManager(nats.nc)).streams.info('ONE')).state.last_seq, first.stream.lastSeq);
    await first.engine.close();

    const second = await takeShard('ONE', 'b:2');
    assert.deepEqual(new Map(second.counters.values), acknowledged);
    assert.equal(await addTo(second, 'c0', 5), acknowledged.get('c0')! + 5);
    await second.engine.close();
  });

  it('refuses a deposed owner: its append fails and the log does not fork', async () => {
    const deposed = await takeShard('TWO', 'a:1');
    await addTo(deposed, 'x', 1);
    const owner = await takeShard('TWO', 'b:2');
    assert.equal(await addTo(owner, 'x', 10), 11);

    await assert.rejects(addTo(deposed, 'x', 100), /another owner appended/);
    assert.deepEqual(deposed.fatal, ['log commit failed'], 'the deposed engine stops');
    await owner.engine.close();

    const next = await takeShard('TWO', 'c:3');
    assert.equal(next.counters.values.get('x'), 11, "the deposed owner's entry is nowhere");
    await next.engine.close();
  });

  it('appends nothing once its lease has run out', async () => {
    let leased = true;
    const node = await takeShard('FIVE', 'a:1', () => leased);
    await addTo(node, 'w', 1);
    leased = false;
    await assert.rejects(addTo(node, 'w', 1), /its lease ran out/);
    assert.deepEqual(node.fatal, ['log commit failed'], 'the engine stops');
    const next = await takeShard('FIVE', 'b:2');
    assert.equal(next.counters.values.get('w'), 1);
    await next.engine.close();
  });

  it('answers nothing while no quorum holds the entry, and answers once one does', async () => {
    const node = await takeShard('FOUR', 'a:1');
    await addTo(node, 'z', 1);
    await nats.cluster.kill(1);
    await nats.cluster.kill(2);
    let answered = false;
    const reply = addTo(node, 'z', 1).then((value) => {
      answered = true;
      return value;
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      assert.equal(answered, false, 'a reply went out before a quorum held its entry');
    } finally {
      nats.cluster.start(1);
      nats.cluster.start(2);
    }
    assert.equal(await reply, 2);
    await node.engine.close();
  });

  it('goes on writing when the server leading the stream is killed', async () => {
    const node = await takeShard('THREE', 'a:1');
    await addTo(node, 'y', 1);
    const jsm = await jetstreamManager(nats.nc);
    const leader = (await jsm.streams.info('THREE')).cluster?.leader;
    assert.ok(leader !== undefined, 'the stream has a leader');
    const index = Number(leader.slice(1));
    await nats.cluster.kill(index);
    try {
      for (let n = 0; n < 20; n++) await addTo(node, 'y', 1);
      assert.equal(node.counters.values.get('y'), 21);
      assert.deepEqual(node.fatal, []);
    } finally {
      nats.cluster.start(index);
    }
    await node.engine.close();
    const next = await takeShard('THREE', 'b:2');
    assert.equal(next.counters.values.get('y'), 21);
    await next.engine.close();
  });

  it('a new owner told an old end of the stream (a server behind answering) still replays every acknowledged entry', async () => {
    const node = await takeShard('BEHIND', 'a:1');
    for (let n = 0; n < 21; n++) await addTo(node, 'v', 1);
    // The end as a replica that got only the first owner's marker and first group would tell it.
    const behind = node.stream.lastSeq - 20;
    await node.engine.close();
    // Told twice (its takeover, then its read): a new owner trusting what it is told replays one entry.
    const next = await takeShard('BEHIND', 'b:2', undefined, answeringFromBehind(nats.nc, 'BEHIND', behind, 2));
    assert.equal(next.counters.values.get('v'), 21, 'every acknowledged entry is replayed');
    assert.equal(await addTo(next, 'v', 1), 22, 'and the new owner appends after them');
    assert.deepEqual(next.fatal, []);
    await next.engine.close();
  });

  it('a trimmed stream stays trimmed exactly where it was on every server, also on one restarted since', async () => {
    const node = await takeShard('TRIMMED', 'a:1');
    for (let n = 0; n < 40; n++) await addTo(node, 'z', 1);
    assert.equal(await node.stream.trimThrough(20), 20, 'the groups holding entries 1 to 20 are removed');
    for (let n = 0; n < 20; n++) await addTo(node, 'z', 1);
    const jsm = await jetstreamManager(nats.nc);
    const stateOf = async (): Promise<{ leader: string | undefined; first: number; messages: number; current: boolean }> => {
      const info = await jsm.streams.info('TRIMMED');
      const replicas = info.cluster?.replicas ?? [];
      return { leader: info.cluster?.leader, first: info.state.first_seq, messages: info.state.messages, current: replicas.length === 2 && replicas.every((r) => r.current) };
    };
    // A server restarted replays its log of the stream: the trim must replay as itself.
    await nats.cluster.kill(0);
    nats.cluster.start(0);
    // Only a replica that has caught up can be elected: until the restarted one has, step-downs
    // would only pass the lead between the other two (a slow machine's restart takes a while).
    await waitForLeader(async () => {
      const state = await stateOf();
      return { ...state, leader: state.current ? state.leader : undefined };
    });
    const leaders = new Set<string>();
    // Each step-down elects one of the other two at random: 30 turns miss a server about once in 10^9.
    // Sequence 1 is the owner's takeover marker, trimmed with the groups after it: the first left is entry 21's, at 22.
    for (let turn = 0; turn < 30 && leaders.size < 3; turn++) {
      const state = await waitForLeader(stateOf);
      assert.deepEqual({ first: state.first, messages: state.messages }, { first: 22, messages: 40 }, `the stream as ${state.leader} leads it`);
      leaders.add(state.leader!);
      await nats.nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.TRIMMED`, undefined, { timeout: 5_000 }).catch(() => undefined);
    }
    assert.equal(leaders.size, 3, 'every server led the stream once');
    await node.engine.close();
    // Without a snapshot of entries 1 to 20, a node cannot take the shard, and says why.
    await assert.rejects(takeShard('TRIMMED', 'b:2'), /log entry 1: missing \(the log goes on at 21\)/);
  });
});

/**
 * How long a stream may go without a leader before the test gives up: a guard against a hang,
 * not a measure. After a server's restart, only a replica that has caught up can be elected,
 * and on the 2-core machine running the other suites beside this one that took past 20 s.
 */
const LEADER_WAIT_MS = 60_000;

/** The stream's state once a leader answers (after a step-down or a restart, the election takes a moment). */
async function waitForLeader<T extends { leader: string | undefined }>(read: () => Promise<T>): Promise<T> {
  const giveUpAt = Date.now() + LEADER_WAIT_MS;
  for (;;) {
    const state = await read().catch(() => undefined);
    if (state?.leader !== undefined) return state;
    if (Date.now() > giveUpAt) throw new Error(`the stream has no leader after ${LEADER_WAIT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe("a shard's blobs in the object store", () => {
  it('put resolves only once the object store has acknowledged the put', async () => {
    let acknowledge!: () => void;
    const acknowledged = new Promise<void>((resolve) => (acknowledge = resolve));
    const stored = new Map<string, Uint8Array>();
    const objects: BlobObjects = {
      info: async () => null,
      putBlob: async (meta, data) => {
        await acknowledged;
        stored.set(meta.name, data ?? new Uint8Array());
        return { name: meta.name } as ObjectInfo;
      },
      getBlob: async (name) => stored.get(name) ?? null,
    };
    const blobs = new ObjectBlobStore(objects, 's0001.document-bytes.', async () => undefined, () => undefined);
    let resolved = false;
    const put = blobs.put('k', Buffer.from('%PDF-1.4')).then(() => (resolved = true));
    for (let turn = 0; turn < 10; turn++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(resolved, false, 'put resolved before the object store acknowledged');
    acknowledge();
    await put;
    assert.deepEqual(await blobs.get('k'), Buffer.from('%PDF-1.4'));
  });

  it('another node reads what one put, whole; removed, it is gone for both', async () => {
    const report = () => undefined;
    // A server an earlier test restarted may still be rejoining: a three-replica bucket needs all three.
    await nats.cluster.ready();
    const writer = await BlobShelf.open(nats.nc, { replicas: 3, report });
    const otherConnection = await connect({ servers: [...nats.cluster.urls] });
    try {
      const reader = await BlobShelf.open(otherConnection, { replicas: 3, report });
      // Larger than a chunk (128 KiB): the object is several messages.
      const bytes = randomBytes(300 * 1024);
      await writer.of('s0007', 'document-bytes').put('doc1', bytes);
      assert.deepEqual(await reader.of('s0007', 'document-bytes').get('doc1'), bytes);
      assert.equal(await reader.of('s0008', 'document-bytes').get('doc1'), undefined, "another shard's name");
      // A retried put of the same bytes is a no-op; other bytes under the name are refused.
      await writer.of('s0007', 'document-bytes').put('doc1', bytes);
      await assert.rejects(writer.of('s0007', 'document-bytes').put('doc1', randomBytes(10)), /other bytes/);
      await reader.of('s0007', 'document-bytes').remove('doc1');
      assert.equal(await writer.of('s0007', 'document-bytes').get('doc1'), undefined);
      const jsm = await jetstreamManager(nats.nc);
      assert.equal((await jsm.streams.info(`OBJ_${BLOB_BUCKET}`)).state.messages, 0, 'its description and chunks are deleted');
    } finally {
      await otherConnection.close();
    }
  });
});
