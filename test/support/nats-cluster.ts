// A JetStream cluster of Debian's nats-server on loopback ports, for the cluster suites and
// bench:cluster: each server with its own config file and store directory, every server
// routing to the others (one alone is a server without a cluster). A server can be killed (any signal) and started again on the same
// ports and store; `stop` kills every server and removes their directories.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { ensureDebianPackages, NATS_SERVER_PACKAGE } from './debian.js';

export const NATS_SERVER = NATS_SERVER_PACKAGE.binary;
/** Commit groups travel as one message each; the default 1 MB would refuse a large one. */
export const MAX_PAYLOAD_BYTES = 8 * 1024 * 1024;
/** How long the servers may take to elect a JetStream meta leader. */
const READY_TIMEOUT_MS = 30_000;

export interface NatsCluster {
  /** `nats://127.0.0.1:PORT` of each server, in order. */
  readonly urls: readonly string[];
  /** The running servers' process ids, in order (undefined for one not running). */
  pids(): Array<number | undefined>;
  /** Sends `signal` to server `index` and waits for it to exit. */
  kill(index: number, signal?: NodeJS.Signals): Promise<void>;
  /** Starts server `index` again on its ports and store. */
  start(index: number): void;
  /** Resolves once every server takes part again: a stream with a replica on each can be created. */
  ready(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * `count` distinct free loopback ports. Every probe listener stays open until all are
 * taken: closed one by one, the OS could hand the same port out twice.
 */
async function freePorts(count: number): Promise<number[]> {
  const listeners = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Server>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = listeners.map((server) => {
    const address = server.address();
    if (typeof address !== 'object' || address === null) throw new Error('a probe listener has no port');
    return address.port;
  });
  await Promise.all(listeners.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

/** Starts `size` clustered JetStream servers and resolves once the cluster can create a replicated stream. */
export async function startNatsCluster(size = 3): Promise<NatsCluster> {
  ensureDebianPackages([NATS_SERVER_PACKAGE], 'the cluster suites run a JetStream cluster');
  const dir = mkdtempSync(join(tmpdir(), 'nats-cluster-'));
  const ports = await freePorts(2 * size);
  const clientPorts = ports.slice(0, size);
  const routePorts = ports.slice(size);
  const configs = clientPorts.map((port, n) => {
    const store = join(dir, `n${n}`);
    mkdirSync(store, { recursive: true });
    const routes = routePorts.filter((_, other) => other !== n).map((p) => `nats-route://127.0.0.1:${p}`);
    const config = join(dir, `n${n}.conf`);
    writeFileSync(
      config,
      [
        `server_name: n${n}`,
        `listen: 127.0.0.1:${port}`,
        `max_payload: ${MAX_PAYLOAD_BYTES}`,
        `jetstream { store_dir: "${store}" }`,
        // One server alone runs JetStream without a cluster (a cluster of one has no routes and is refused).
        ...(size === 1 ? [] : [`cluster { name: c1, listen: 127.0.0.1:${routePorts[n]}, routes: [${routes.join(', ')}] }`]),
      ].join('\n') + '\n',
    );
    return config;
  });
  const servers: Array<ChildProcess | undefined> = configs.map(() => undefined);
  const exited: Array<Promise<void>> = configs.map(() => Promise.resolve());
  const failures: Array<string | undefined> = configs.map(() => undefined);
  const start = (index: number): void => {
    if (servers[index] !== undefined) throw new Error(`nats server ${index} is running`);
    const child = spawn(NATS_SERVER, ['-c', configs[index]!], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    servers[index] = child;
    exited[index] = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        servers[index] = undefined;
        // Killed by us (a signal) is expected; exiting by itself is a failure to report.
        if (signal === null) failures[index] = `nats-server n${index} exited with ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`;
        resolve();
      });
    });
    // A server that cannot start exits; the readiness wait reports the cluster as not ready.
    child.once('error', (err) => {
      stderr += `\n${err.message}`;
      failures[index] = stderr;
    });
  };
  const cluster: NatsCluster = {
    urls: clientPorts.map((port) => `nats://127.0.0.1:${port}`),
    pids: () => servers.map((child) => child?.pid),
    async kill(index, signal = 'SIGKILL') {
      servers[index]?.kill(signal);
      await exited[index];
    },
    start,
    ready: () => untilReplicatedStreamWorks(clientPorts.map((port) => `nats://127.0.0.1:${port}`), size),
    async stop() {
      for (const child of servers) child?.kill('SIGKILL');
      await Promise.all(exited);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  configs.forEach((_, n) => start(n));
  try {
    await untilReplicatedStreamWorks(cluster.urls, size);
  } catch (err) {
    await cluster.stop();
    const reasons = failures.filter((failure) => failure !== undefined);
    throw reasons.length === 0 ? err : new Error(`${err instanceof Error ? err.message : String(err)}; ${reasons.join('; ')}`);
  }
  return cluster;
}

/** A cluster and a connection to it for one test file: started before its tests, stopped after them. */
export function natsClusterForSuite(size = 3): { readonly cluster: NatsCluster; readonly nc: NatsConnection } {
  let cluster: NatsCluster | undefined;
  let nc: NatsConnection | undefined;
  before(async () => {
    cluster = await startNatsCluster(size);
    nc = await connect({ servers: [...cluster.urls] });
  });
  after(async () => {
    await nc?.close();
    await cluster?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the NATS cluster is not started yet (use it inside a test)');
    return value;
  };
  return {
    get cluster() {
      return started(cluster);
    },
    get nc() {
      return started(nc);
    },
  };
}

/** Until a stream with `replicas` replicas can be created (the meta leader is elected), then removes it. */
async function untilReplicatedStreamWorks(urls: readonly string[], replicas: number): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const nc = await connect({ servers: [...urls], timeout: 2_000 });
      try {
        const jsm = await jetstreamManager(nc, { timeout: 5_000 });
        await jsm.streams.add({ name: 'READY_PROBE', subjects: ['ready.probe'], num_replicas: replicas });
        await jsm.streams.delete('READY_PROBE');
        return;
      } finally {
        await nc.close();
      }
    } catch (err) {
      last = err;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  throw new Error(`the JetStream cluster was not ready within ${READY_TIMEOUT_MS} ms: ${last instanceof Error ? last.message : String(last)}`);
}
