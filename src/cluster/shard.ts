// One shard served by this node, holding the environments placed in it (placement.ts): an
// engine and world of its own over the node's LMDB (under DATA_DIR/shards/<name>) with its
// log replicated through the shard's stream, its webhook delivery, and its API requests,
// answered on the shard's subject while it is served here (shard-requests.ts). Opened under
// a lease: the local log is made the stream's, the engine recovers (snapshot plus tail), and
// the owner logs the first entry (from the directory) of every environment of the shard its
// world does not hold yet, and brings the directory's API tokens of its environments to what
// its world holds; an environment made while the shard is open joins it the same way on its
// first request. Only the owner logs, so no other node writes to the shard. A
// shard whose log fails (another owner appended, the lease ran out, no quorum for too long)
// is lost: memory may be ahead of the log, so the node drops it and may open it afresh later.
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { systemClock, type Clock } from '../engine/clock.js';
import { openLmdbStorage } from '../engine/storage.js';
import type { EngineObserver, Report } from '../engine/report.js';
import type { DeliveryObserver } from '../webhooks/delivery.js';
import type { Services } from '../services.js';
import type { ServiceConfig } from '../config.js';
import type { ApiRequests } from '../http/requests.js';
import type { Route } from '../http/route.js';
import { Shard, type EngineHooks, type ShardKeys, type SharedParts } from '../shard.js';
import { genesisEvents, type EnvGenesis } from '../platforms.js';
import { optional } from '../optional.js';
import { ShardStream } from './shard-stream.js';
import { serveShardRequests } from './shard-requests.js';
import { mirrorStream, replicatedStorage, type PublishedSnapshots } from './replicated-storage.js';
import type { Lease, LeaseTable } from './lease.js';
import type { ShardImage, SnapshotShelf } from './snapshot-shelf.js';
import type { BlobShelf } from './blob-shelf.js';
import type { Directory } from './directory.js';
import type { PlatformEnv } from '../../actors/platform.js';

/** Where a shard's owner reads the first entries of its environments. */
export type ShardDirectory = Pick<Directory, 'genesisOf' | 'genesisOfShard' | 'syncTokens'>;

/** Environments whose first entries go in one log entry: a shard opening with thousands new logs them in entries a NATS message carries. */
const GENESIS_PER_ENTRY = 32;

/** What every shard of a node shares: the node's settings, secrets, crypto, verifiers and webhook egress. */
export interface NodeParts extends SharedParts {
  nodeId: string;
  config: ServiceConfig;
  /** The cluster's master key and export signer (its directory holds them). */
  keys: Omit<ShardKeys, 'storeId'>;
  nc: NatsConnection;
  leases: LeaseTable;
  replicas: number;
  shelf: SnapshotShelf;
  /** Where every shard's blobs are kept, for whichever node owns it. */
  blobs: BlobShelf;
  routes: readonly Route[];
  report: Report;
  clock?: Clock;
  /** The node's metrics, which every shard's log, snapshots, recovery and webhook delivery feed. */
  observer?: EngineObserver & DeliveryObserver;
}

export class ClusterShard {
  #lost = false;
  /** The shard's subject, answered from open until it is closed or lost. */
  #subscription: Subscription | undefined;
  /** Environments joining on a first request: read and logged once, however many requests wait. */
  readonly #joining = new Map<string, Promise<PlatformEnv>>();

  private constructor(
    readonly name: string,
    readonly lease: Lease,
    readonly shard: Shard,
    private readonly directory: ShardDirectory,
  ) {}

  get services(): Services {
    return this.shard.services;
  }

  get requests(): ApiRequests {
    return this.shard.requests;
  }

  /**
   * Opens `name` under `lease`: the stream's log mirrored, the engine recovered, the first
   * entries of the shard's environments not in its world yet logged, webhook delivery started.
   * `onLost` is told once if the shard's log fails later.
   */
  static async open(node: NodeParts, directory: ShardDirectory, name: string, lease: Lease, onLost: (shard: ClusterShard, err: Error) => void): Promise<ClusterShard> {
    const dataDir = join(node.config.dataDir, 'shards', name);
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const stream = await ShardStream.open(node.nc, name, {
      replicas: node.replicas,
      writer: `${node.nodeId}:${lease.term}`,
      holds: () => node.leases.holds(lease),
    });
    const base = await node.shelf.latest(name);
    const local = openLmdbStorage(dataDir);
    let opened: ClusterShard | undefined;
    let failure: Error | undefined;
    const report: Report = (message, fields) => node.report(`${name}: ${message}`, { ...fields, shard: name });
    // Published, then the stream trimmed below it (the storage seam: the engine knows no cluster).
    const published: PublishedSnapshots = {
      ...optional('offeredImage', base),
      snapshotWritten: publishing(node, name, lease, stream, report),
    };
    const hooks: EngineHooks = {
      onFatal: (_what, err) => {
        failure ??= err;
        if (opened !== undefined) opened.#lose(err, onLost);
      },
    };
    try {
      await mirrorStream(stream, local);
    } catch (err) {
      await local.close().catch(() => undefined);
      throw err;
    }
    const shard = new Shard({
      ...node,
      settings: { ...node.config, dataDir },
      openStorage: () => replicatedStorage(local, stream, published, (table) => node.blobs.of(name, table)),
      clock: node.clock ?? systemClock,
      report,
      keys: { ...node.keys, storeId: name },
      engineHooks: hooks,
      // Every node authenticates against the directory's tokens: a token made or revoked here reaches it before the answer.
      tokensChanged: (env) => directory.syncTokens(env),
    });
    await shard.open();
    try {
      const joining = await directory.genesisOfShard(name, shard.world.envs.records.keys());
      for (let start = 0; start < joining.length; start += GENESIS_PER_ENTRY) await logGenesis(shard, joining.slice(start, start + GENESIS_PER_ENTRY));
      // A token change whose directory write a crash cut short (its entry is durable) is written now.
      for (const env of shard.world.envs.records.values()) await directory.syncTokens(env);
    } catch (err) {
      await shard.close().catch(() => undefined);
      throw err;
    }
    opened = new ClusterShard(name, lease, shard, directory);
    if (failure !== undefined) {
      opened.#lose(failure, onLost);
      throw failure;
    }
    shard.start();
    opened.#subscription = serveShardRequests(node.nc, opened, node.routes, report, () => node.leases.holds(lease));
    return opened;
  }

  /**
   * An environment of this shard: its world's, or one made since the shard opened, whose
   * first entry is read from the directory and logged here once, then served.
   */
  environment(envId: string): PlatformEnv | Promise<PlatformEnv> {
    const env = this.shard.world.envs.get(envId);
    if (env !== undefined) return env;
    let joining = this.#joining.get(envId);
    if (joining === undefined) {
      joining = this.#join(envId);
      this.#joining.set(envId, joining);
      // Forgotten once settled: the world holds it then, or a later request tries again.
      void joining.then(
        () => this.#joining.delete(envId),
        () => this.#joining.delete(envId),
      );
    }
    return joining;
  }

  async #join(envId: string): Promise<PlatformEnv> {
    const genesis = await this.directory.genesisOf(this.name, envId);
    // A request placed in the wrong shard (a node placing environments otherwise): a bug of the deployment, answered as one.
    if (genesis === undefined) throw new Error(`environment ${envId} is not one of shard ${this.name}'s in the directory`);
    await logGenesis(this.shard, [genesis]);
    const env = this.shard.world.envs.get(envId);
    if (env === undefined) throw new Error(`environment ${envId} was logged and is not in shard ${this.name}'s world`);
    return env;
  }

  /** The log failed: nothing more is served from this memory. */
  get lost(): boolean {
    return this.#lost;
  }

  #lose(err: Error, onLost: (shard: ClusterShard, err: Error) => void): void {
    if (this.#lost) return;
    this.#lost = true;
    // Requests still coming are answered 503 (lost) until the subject is left.
    void this.#leaveSubject();
    onLost(this, err);
  }

  /** Leaves the subject (the requests taken answered first), stops delivery and makes the final commit (while the lease still holds). */
  async close(): Promise<void> {
    await this.#leaveSubject();
    await this.shard.close();
  }

  async #leaveSubject(): Promise<void> {
    const subscription = this.#subscription;
    this.#subscription = undefined;
    // A closed connection has left every subject already.
    await subscription?.drain().catch(() => undefined);
  }
}

/** Logs the first entries of environments the shard's world does not hold (looked at again as it decides: one may have joined meanwhile). */
async function logGenesis(shard: Shard, genesis: readonly EnvGenesis[]): Promise<void> {
  await shard.engine.exec(
    genesis.map((g) => g.env.id),
    () => {
      const joining = genesis.filter((g) => shard.world.envs.get(g.env.id) === undefined);
      return { events: joining.length === 0 ? [] : genesisEvents(joining), reply: () => undefined };
    },
  );
}

/**
 * Each snapshot written is published, then the stream trimmed below it; one publication at a
 * time (the next snapshot covers a skipped one), and none once the lease is gone.
 */
function publishing(node: NodeParts, name: string, lease: Lease, stream: ShardStream, report: Report): PublishedSnapshots['snapshotWritten'] {
  let publishing = false;
  return (seq, image) => {
    if (publishing || !node.leases.holds(lease)) return;
    publishing = true;
    void (async () => {
      try {
        // This shard's engine wrote it: its timers carry the world's messages.
        if (await node.shelf.publish(name, image() as ShardImage)) {
          const trimmed = await stream.trimThrough(seq);
          report(`snapshot at ${seq} published; ${trimmed} stream messages trimmed`, { event: 'cluster.snapshot.published', seq, trimmed });
        }
      } catch (err) {
        report(`snapshot at ${seq} not published: ${err instanceof Error ? err.message : String(err)}`, { event: 'cluster.snapshot.publish-failed', level: 'warn', seq });
      } finally {
        publishing = false;
      }
    })();
  };
}
