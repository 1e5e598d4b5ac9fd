// Which nodes are alive, and which node should own each shard. Every node writes a
// heartbeat into a JetStream key-value bucket (its id and when it was last seen); a node
// unseen for a lease period is gone. The assignment is a
// pure function of the shard names and the live node ids, so every node that sees the same
// members computes the same owners; leases (lease.ts) make it safe when they briefly do not.
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm, type KV } from '@nats-io/kv';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { BUCKET_OPTIONS, bucketKeys, retrying } from './shard-stream.js';

export const NODES_BUCKET = 'cluster-nodes';

export interface NodeInfo {
  nodeId: string;
  seenAt: number;
}

/**
 * Shards sorted by name, dealt in turn to the live nodes sorted by id: each shard gets one
 * owner and no node more than one shard above any other. Empty without nodes.
 */
export function assignShards(shards: Iterable<string>, nodeIds: Iterable<string>): Map<string, string> {
  const nodes = [...new Set(nodeIds)].sort();
  const owners = new Map<string, string>();
  if (nodes.length === 0) return owners;
  [...new Set(shards)].sort().forEach((shard, n) => owners.set(shard, nodes[n % nodes.length]!));
  return owners;
}

export class Membership {
  readonly #kv: KV;
  readonly #jsm: JetStreamManager;
  readonly #self: Omit<NodeInfo, 'seenAt'>;
  readonly #leaseMs: number;
  readonly #now: () => number;

  private constructor(kv: KV, jsm: JetStreamManager, self: Omit<NodeInfo, 'seenAt'>, leaseMs: number, now: () => number) {
    this.#kv = kv;
    this.#jsm = jsm;
    this.#self = self;
    this.#leaseMs = leaseMs;
    this.#now = now;
  }

  static async open(
    nc: NatsConnection,
    options: { nodeId: string; leaseMs: number; replicas: number; now?: () => number },
  ): Promise<Membership> {
    const kv = await retrying(NODES_BUCKET, () => new Kvm(nc).create(NODES_BUCKET, { replicas: options.replicas, ...BUCKET_OPTIONS }));
    return new Membership(kv, await retrying(NODES_BUCKET, () => jetstreamManager(nc)), { nodeId: options.nodeId }, options.leaseMs, options.now ?? Date.now);
  }

  /** Says this node is alive (every third of a lease keeps it so). */
  async heartbeat(): Promise<void> {
    await this.#kv.put(this.#self.nodeId, JSON.stringify({ ...this.#self, seenAt: this.#now() } satisfies NodeInfo));
  }

  /** Leaves at once, so the others need not wait a lease period to take its shards. */
  async leave(): Promise<void> {
    await this.#kv.delete(this.#self.nodeId);
  }

  /** The nodes seen within a lease period, by id. */
  async live(): Promise<Map<string, NodeInfo>> {
    const since = this.#now() - this.#leaseMs;
    const live = new Map<string, NodeInfo>();
    for (const key of await bucketKeys(this.#jsm, NODES_BUCKET, '*')) {
      const entry = await this.#kv.get(key);
      if (entry === null || entry.operation !== 'PUT') continue;
      const info = entry.json<NodeInfo>();
      if (info.seenAt > since) live.set(info.nodeId, info);
    }
    return live;
  }
}
