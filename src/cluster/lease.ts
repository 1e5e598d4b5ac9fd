// Shard ownership: one lease per shard in a JetStream key-value bucket. nats-server 2.9 has
// no per-key expiry, so a lease is a value holding its owner and the wall-clock time it
// expires at, and every change is a compare-and-set on the key's revision: of two nodes
// that read the same expired lease, one takes it and the other's write is refused.
//
// The owner renews before expiry. It may serve the shard only until `validUntil`: the time
// it SENT its last successful write, plus the lease, minus a margin. Others see the lease
// expire at that send time plus the lease (written in the value, so later than validUntil by
// the margin), so a node that cannot renew has stopped serving before anyone else may take
// the shard. This holds while the nodes' clocks differ by less than the margin.
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm, type KV } from '@nats-io/kv';
import { BUCKET_OPTIONS, isWrongLastSequence, retrying } from './shard-stream.js';

export const LEASE_BUCKET = 'shard-leases';

export interface LeaseOptions {
  nodeId: string;
  /** How long a lease lasts unrenewed (CLUSTER_LEASE_SECONDS). */
  leaseMs: number;
  /** Replicas of the bucket. */
  replicas: number;
  /** Wall-clock reading in ms; tests may move it. */
  now?: () => number;
}

interface LeaseValue {
  owner: string;
  expiresAt: number;
}

export interface Lease {
  readonly shard: string;
  /** The key's revision when this node took the lease: its ownership term, unique per shard. */
  readonly term: number;
  /** The key's revision after the last renewal (what the next one must find). */
  revision: number;
  /** Until when (this node's clock) it may serve the shard. */
  validUntil: number;
}

/** Who holds a shard's lease, as the bucket says. */
export interface LeaseHolder {
  owner: string;
  expiresAt: number;
}

export class LeaseTable {
  readonly #kv: KV;
  readonly #nodeId: string;
  readonly #leaseMs: number;
  readonly #marginMs: number;
  readonly #now: () => number;

  private constructor(kv: KV, options: LeaseOptions) {
    this.#kv = kv;
    this.#nodeId = options.nodeId;
    this.#leaseMs = options.leaseMs;
    // A fifth of the lease, at most a second: the clock difference the nodes may have.
    this.#marginMs = Math.min(1_000, options.leaseMs / 5);
    this.#now = options.now ?? Date.now;
  }

  static async open(nc: NatsConnection, options: LeaseOptions): Promise<LeaseTable> {
    const kv = await retrying(LEASE_BUCKET, () => new Kvm(nc).create(LEASE_BUCKET, { replicas: options.replicas, ...BUCKET_OPTIONS }));
    return new LeaseTable(kv, options);
  }

  /** Whether this node may still serve under `lease`. */
  holds(lease: Lease): boolean {
    return this.#now() < lease.validUntil;
  }

  async holder(shard: string): Promise<LeaseHolder | undefined> {
    const entry = await retrying(LEASE_BUCKET, () => this.#kv.get(shard));
    if (entry === null || entry.operation !== 'PUT') return undefined;
    const value = entry.json<LeaseValue>();
    return value.expiresAt > this.#now() ? value : undefined;
  }

  /** Takes the shard's lease if nobody holds a live one (undefined if somebody does, or another node won the race). */
  async acquire(shard: string): Promise<Lease | undefined> {
    const entry = await this.#kv.get(shard);
    const sentAt = this.#now();
    const value = this.#encode(sentAt);
    try {
      let revision: number;
      if (entry === null || entry.operation !== 'PUT') {
        // Never held, or released (create also takes over a deletion marker).
        revision = await this.#kv.create(shard, value);
      } else {
        const held = entry.json<LeaseValue>();
        if (held.owner !== this.#nodeId && held.expiresAt > sentAt) return undefined;
        revision = await this.#kv.update(shard, value, entry.revision);
      }
      return { shard, term: revision, revision, validUntil: this.#validUntil(sentAt) };
    } catch (err) {
      if (isWrongLastSequence(err)) return undefined;
      throw err;
    }
  }

  /** Extends `lease`; false if it is lost (another node took it). */
  async renew(lease: Lease): Promise<boolean> {
    const sentAt = this.#now();
    try {
      lease.revision = await this.#kv.update(lease.shard, this.#encode(sentAt), lease.revision);
      lease.validUntil = this.#validUntil(sentAt);
      return true;
    } catch (err) {
      if (isWrongLastSequence(err)) {
        lease.validUntil = 0;
        return false;
      }
      throw err;
    }
  }

  /** Gives the lease up at once, so another node need not wait for it to expire. */
  async release(lease: Lease): Promise<void> {
    lease.validUntil = 0;
    try {
      await this.#kv.delete(lease.shard, { previousSeq: lease.revision });
    } catch (err) {
      // Somebody else holds it already: nothing of ours to give up.
      if (!isWrongLastSequence(err)) throw err;
    }
  }

  /** A write sent at `sentAt` lets this node serve until the lease it wrote expires, less the margin. */
  #validUntil(sentAt: number): number {
    return sentAt + this.#leaseMs - this.#marginMs;
  }

  #encode(sentAt: number): string {
    return JSON.stringify({ owner: this.#nodeId, expiresAt: sentAt + this.#leaseMs } satisfies LeaseValue);
  }
}
