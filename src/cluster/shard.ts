// One platform environment served by this node: an engine and world of its own over the
// node's LMDB (under DATA_DIR/shards/<name>) with its log replicated through the shard's
// stream, its webhook delivery, and its API requests, answered on the shard's subject while
// it is served here (shard-requests.ts). Opened under a lease: the local log is
// made the stream's, the engine recovers (snapshot plus tail), and a shard whose stream is
// empty logs its environment's first entry from the directory. A shard whose log fails
// (another owner appended, the lease ran out, no quorum for too long) is lost: memory may be
// ahead of the log, so the node drops it and may open it afresh later.
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { Engine } from '../engine/engine.js';
import { systemClock, type Clock } from '../engine/clock.js';
import { LmdbStorage } from '../engine/storage.js';
import { openStore } from '../engine/store.js';
import type { EngineObserver, Report } from '../engine/report.js';
import type { DeliveryObserver } from '../webhooks/delivery.js';
import { World, type DomainEvent, type TimerMessage } from '../../actors/world.js';
import { composeServices, type ServiceParts, type Services } from '../services.js';
import type { ServiceConfig } from '../config.js';
import { ApiRequests } from '../http/requests.js';
import type { Route } from '../http/route.js';
import { registerOtpMail } from '../wallet/mail.js';
import { genesisEvents, type EnvGenesis } from '../platforms.js';
import { ShardStream } from './shard-stream.js';
import { serveShardRequests } from './shard-requests.js';
import { mirrorStream, replicatedStorage, type PublishedSnapshots } from './replicated-storage.js';
import type { Lease, LeaseTable } from './lease.js';
import type { ShardImage, SnapshotShelf } from './snapshot-shelf.js';

/** What every shard of a node shares: the node's settings, secrets, crypto, verifiers and webhook egress. */
export interface NodeParts extends Omit<ServiceParts, 'config' | 'engine' | 'world' | 'storeId' | 'delivery'> {
  nodeId: string;
  config: ServiceConfig;
  nc: NatsConnection;
  leases: LeaseTable;
  replicas: number;
  shelf: SnapshotShelf;
  routes: readonly Route[];
  report: Report;
  clock?: Clock;
  /** The node's metrics, which every shard's log, snapshots, recovery and webhook delivery feed. */
  observer?: EngineObserver & DeliveryObserver;
}

export class Shard {
  #lost = false;
  /** The shard's subject, answered from open until it is closed or lost. */
  #subscription: Subscription | undefined;

  private constructor(
    readonly name: string,
    readonly lease: Lease,
    readonly services: Services,
    readonly requests: ApiRequests,
  ) {}

  /**
   * Opens `name` under `lease`: the stream's log mirrored, the engine recovered, the
   * environment's first entry logged if the stream had none, webhook delivery started.
   * `onLost` is told once if the shard's log fails later.
   */
  static async open(node: NodeParts, name: string, lease: Lease, genesis: EnvGenesis, onLost: (shard: Shard, err: Error) => void): Promise<Shard> {
    const dataDir = join(node.config.dataDir, 'shards', name);
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const stream = await ShardStream.open(node.nc, name, {
      replicas: node.replicas,
      writer: `${node.nodeId}:${lease.term}`,
      holds: () => node.leases.holds(lease),
    });
    const base = await node.shelf.latest(name);
    const local = new LmdbStorage(openStore(dataDir));
    let publishing = false;
    let shard: Shard | undefined;
    let failure: Error | undefined;
    const world = new World();
    const config: ServiceConfig = { ...node.config, dataDir };
    const report: Report = (message, fields) => node.report(`${name}: ${message}`, { ...fields, shard: name });
    // Published, then the stream trimmed below it; one publication at a time (the next snapshot covers a skipped one).
    const published: PublishedSnapshots = {
      ...(base === undefined ? {} : { offeredImage: base }),
      snapshotWritten: (seq, image) => {
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
      },
    };
    const engine = new Engine<DomainEvent, TimerMessage, World>({
      dataDir,
      clock: node.clock ?? systemClock,
      machine: world,
      snapshotEveryEntries: config.snapshotEveryEntries,
      snapshotEveryMs: config.snapshotEveryMs,
      report,
      ...(node.observer === undefined ? {} : { observer: node.observer }),
      openStorage: () => replicatedStorage(local, stream, published),
      onFatal: (_what, err) => {
        failure ??= err;
        if (shard !== undefined) shard.#lose(err, onLost);
      },
    });
    try {
      await mirrorStream(stream, local);
      registerOtpMail(engine, { dataDir, smtpUrl: config.smtpUrl, masterKey: () => node.masterKey });
      await engine.open();
      if (world.envs.get(genesis.env.id) === undefined) {
        await engine.exec([genesis.env.id], () => ({ events: genesisEvents([genesis]), reply: () => undefined }));
      }
    } catch (err) {
      await engine.close().catch(() => undefined);
      throw err;
    }
    const services = composeServices({
      ...node,
      config,
      storeId: name,
      engine,
      world,
      delivery: { report, maxPending: config.maxPendingWebhooks, ...(node.observer === undefined ? {} : { observer: node.observer }) },
    });
    shard = new Shard(name, lease, services, new ApiRequests(services, node.routes));
    if (failure !== undefined) {
      shard.#lose(failure, onLost);
      throw failure;
    }
    services.webhooks.start();
    shard.#subscription = serveShardRequests(node.nc, shard, node.routes, report, () => node.leases.holds(lease));
    return shard;
  }

  /** The log failed: nothing more is served from this memory. */
  get lost(): boolean {
    return this.#lost;
  }

  #lose(err: Error, onLost: (shard: Shard, err: Error) => void): void {
    if (this.#lost) return;
    this.#lost = true;
    // Requests still coming are answered 503 (lost) until the subject is left.
    void this.#leaveSubject();
    onLost(this, err);
  }

  /** Leaves the subject (the requests taken answered first), stops delivery and makes the final commit (while the lease still holds). */
  async close(): Promise<void> {
    await this.#leaveSubject();
    await this.services.close();
  }

  async #leaveSubject(): Promise<void> {
    const subscription = this.#subscription;
    this.#subscription = undefined;
    // A closed connection has left every subject already.
    await subscription?.drain().catch(() => undefined);
  }
}
