// Where an environment lives in cluster mode. A deployment has a fixed number of shards
// (CLUSTER_SHARDS, recorded in the directory by its first node), and an environment's shard
// is a pure function of its id and that count: any node routes a request with no read, and
// every node places every environment alike. The count never changes, because a different
// count would place most environments in another shard, that is on another log.
import { createHash } from 'node:crypto';

/** A shard's name: `s` and its index in four digits, so that names sort as indexes do. */
export function shardName(index: number): string {
  return `s${String(index).padStart(4, '0')}`;
}

/** The shard of an environment: the first four bytes of SHA-256 of its id, big-endian, modulo the count. */
export function shardOf(envId: string, count: number): string {
  return shardName(createHash('sha256').update(envId).digest().readUInt32BE(0) % count);
}

/** An environment's id as a key of the directory may hold it: anything a key or a stream name may not hold made `_` (ids are unique in the rest). */
export function envKeyOf(envId: string): string {
  return envId.replace(/[^A-Za-z0-9_-]/g, '_');
}

/** A deployment's shards: their count, their names in order, and where each environment goes. */
export class Placement {
  readonly shards: readonly string[];

  constructor(readonly count: number) {
    this.shards = Array.from({ length: count }, (_, index) => shardName(index));
  }

  shardOf(envId: string): string {
    return shardOf(envId, this.count);
  }
}
