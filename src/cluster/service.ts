// A node of cluster mode (NATS_URL set): the same HTTP front and API as one node, over
// shards instead of one store. It listens at once, connects to the JetStream servers, reads
// the cluster's shared secrets from the directory, joins the ownership loop, and serves.
// The first node of an empty cluster makes the default platform and writes credentials.json
// into its DATA_DIR, as one node does. Nothing of the node's own is replicated: its data
// directory holds the shards' local mirrors and snapshots, its lock and its operator key.
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { configAndParts, type ClusterConfig, type HostParts, type ServiceConfig, type ServiceOptions } from '../config.js';
import { optional } from '../optional.js';
import { createLogger, reportTo } from '../ops/log.js';
import { ServiceMetrics } from '../ops/metrics.js';
import type { Extras, HttpServer } from '../http/server.js';
import { routes } from '../http/routes/index.js';
import { forgetOwner, lockDataDir, recordOwner, checkLockSupported, ensurePrivateDataDir } from '../data-dir.js';
import type { MasterKey } from '../crypto/master-key.js';
import { CREDENTIALS_FILE, preparePlatform, writeCredentialsFile, type NewPlatform, type PlatformCredentials } from '../platforms.js';
import type { Report } from '../engine/report.js';
import { hostExtras, listen, sharedParts } from '../host.js';
import { Directory } from './directory.js';
import { LeaseTable } from './lease.js';
import { Membership } from './membership.js';
import { ClusterNode } from './node.js';
import { ClusterRequests } from './front.js';
import { SnapshotShelf } from './snapshot-shelf.js';
import { BlobShelf } from './blob-shelf.js';

export interface RunningNode {
  http: HttpServer;
  baseUrl: string;
  /** credentials.json in this node's DATA_DIR: written by the node that made the default platform, else not there. */
  credentialsPath: string;
  node: ClusterNode;
  /** Stops accepting, drains requests in flight, hands every shard over (final commits) and leaves the cluster. */
  close(): Promise<void>;
}

/** Replicas of every stream and bucket: CLUSTER_REPLICAS, else 3, or the servers the cluster has when fewer. */
function replicasOf(cluster: ClusterConfig, nc: NatsConnection): number {
  if (cluster.replicas !== undefined) return cluster.replicas;
  const known = new Set([...cluster.servers, ...(nc.info?.connect_urls ?? [])]).size;
  return Math.max(1, Math.min(3, known));
}

export async function startClusterNode(options: ServiceOptions = {}): Promise<RunningNode> {
  const { config, parts } = configAndParts(options);
  const cluster = config.cluster;
  if (cluster === undefined) throw new Error('cluster mode needs NATS_URL');
  const report = parts.report ?? reportTo(createLogger(config.logLevel));
  const metrics = config.metrics ? new ServiceMetrics() : undefined;
  checkLockSupported();
  ensurePrivateDataDir(config.dataDir);
  const lock = await lockDataDir(config.dataDir);
  const closers: Array<() => Promise<void> | void> = [() => lock.release(), () => forgetOwner(config.dataDir)];
  const closeAll = async (): Promise<void> => {
    // Each part is closed even when one before it fails; a failure is reported, not thrown over the others.
    for (const close of closers.reverse()) {
      await Promise.resolve(close()).catch((err: unknown) => report(`closing: ${err instanceof Error ? err.message : String(err)}`, { event: 'service.close.failed', level: 'error' }));
    }
  };
  try {
    forgetOwner(config.dataDir);
    const http = await listen(config, { report, metrics, recovery: () => undefined });
    closers.push(() => http.drain(config.drainTimeoutMs));
    const origin = `http://${config.host}:${http.port}`;
    // No async traces: they build an Error (a stack capture) for every request and publish, some 8% of a node's CPU under load.
    const nc = await connect({ servers: cluster.servers, name: cluster.nodeId, maxReconnectAttempts: -1, noAsyncTraces: true });
    closers.push(() => nc.close());
    const { node, directory, masterKey, replicas } = await joinCluster({ config, cluster, nc, parts, report, closers, metrics });
    closers.push(() => node.stop());
    metrics?.watch(node.backlogs);
    await node.start();
    const platforms = { config, directory, node, masterKey, leaseMs: cluster.leaseMs };
    const requests = new ClusterRequests(node, directory, nc, routes, 2 * cluster.leaseMs);
    http.serve({ requests, routes, extras: clusterExtras(platforms) });
    const credentialsPath = join(config.dataDir, CREDENTIALS_FILE);
    if (await directory.claimDefaultPlatform(cluster.nodeId)) {
      const credentials = await createClusterPlatform(platforms, {});
      writeCredentialsFile(credentialsPath, { ...credentials, storeId: `cluster:${cluster.nodeId}` });
    }
    recordOwner(config.dataDir, origin);
    report(`ready: node ${cluster.nodeId} serving ${config.baseUrl} (${directory.placement.count} shards, ${replicas} replicas)`, { event: 'service.ready', baseUrl: config.baseUrl, nodeId: cluster.nodeId });
    let closing: Promise<void> | undefined;
    return {
      http,
      baseUrl: config.baseUrl,
      credentialsPath,
      node,
      close: () => (closing ??= closeAll().then(() => report('stopped: every shard handed over', { event: 'service.stopped' }))),
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

/** Connected: the cluster's buckets and shared secrets read, the node's shared parts made, its ownership loop not yet started. */
async function joinCluster(joining: {
  config: ServiceConfig;
  cluster: ClusterConfig;
  nc: NatsConnection;
  parts: HostParts;
  report: Report;
  closers: Array<() => Promise<void> | void>;
  metrics: ServiceMetrics | undefined;
}): Promise<{ node: ClusterNode; directory: Directory; masterKey: MasterKey; replicas: number }> {
  const { config, cluster, nc, parts, report, closers, metrics } = joining;
  const replicas = replicasOf(cluster, nc);
  const directory = await Directory.open(nc, { replicas, shards: cluster.shards });
  const masterKey = await directory.masterKey(config.givenMasterKey);
  await directory.followTokens(masterKey);
  const leases = await LeaseTable.open(nc, { nodeId: cluster.nodeId, leaseMs: cluster.leaseMs, replicas });
  const membership = await Membership.open(nc, { nodeId: cluster.nodeId, leaseMs: cluster.leaseMs, replicas });
  const shelf = await SnapshotShelf.open(nc, { replicas, report });
  const blobs = await BlobShelf.open(nc, { replicas, report });
  const shared = sharedParts(config, parts);
  closers.push(() => shared.close());
  const node = new ClusterNode(
    {
      ...shared,
      nodeId: cluster.nodeId,
      config,
      keys: { masterKey, walletSigner: await directory.exportSigner(masterKey) },
      nc,
      leases,
      replicas,
      shelf,
      blobs,
      routes,
      report,
      ...optional('clock', parts.clock),
      ...optional('observer', metrics),
    },
    directory,
    membership,
    cluster.leaseMs,
  );
  return { node, directory, masterKey, replicas };
}

interface ClusterPlatforms {
  config: ServiceConfig;
  directory: Directory;
  node: ClusterNode;
  masterKey: MasterKey;
  leaseMs: number;
}

/**
 * Makes a platform: its environments' first entries go into the directory under their
 * shards (their owners log them on the first request, or when they open), and the answer
 * waits until a node holds each shard's lease (two lease periods at most), so the
 * credentials work when they arrive.
 */
async function createClusterPlatform(platforms: ClusterPlatforms, options: NewPlatform): Promise<PlatformCredentials> {
  const prepared = preparePlatform(platforms.masterKey, options, Date.now());
  await platforms.directory.register(prepared.genesis);
  const shards = prepared.genesis.map((g) => platforms.directory.placement.shardOf(g.env.id));
  const deadline = Date.now() + 2 * platforms.leaseMs;
  await platforms.node.poke();
  while (!(await platforms.node.held(shards)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  return { ...prepared.credentials, baseUrl: platforms.config.baseUrl };
}

/** /healthz with this node's view of the cluster, the OpenAPI document, and platforms made in the cluster's directory. */
function clusterExtras(platforms: ClusterPlatforms): Extras {
  const { node } = platforms;
  return hostExtras({
    config: platforms.config,
    routes,
    figures: () => ({ cluster: { nodeId: node.nodeId, owned: node.owned, nodes: node.nodes } }),
    createPlatform: (input) => createClusterPlatform(platforms, input),
  });
}
