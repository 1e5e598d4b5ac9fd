// Many platforms bench: what 10,000 platforms (20,000 environments) cost the service on one
// node with its LMDB store, and on one cluster node over one local nats-server (its
// environments in the deployment's fixed shards), each against the same with one platform,
// in one run:
//
//   npm run bench:platforms                                   # 10,000 platforms, ~10 min
//   npm run bench:platforms -- --platforms 2000 --duration 3
//
// For each of the four setups: the time to make the platforms (operator endpoint, a few
// at once), the start-up time after a restart until ready (one node: /readyz; the cluster
// node: every shard served; the first restart of the cluster node is apart, as its shards
// then log the first entries of the environments no request had reached), the memory after
// that restart (RSS and heap after three full collections), and one payment's server CPU
// (POST /quotes with immediatelyExecute between funded accounts of the default platform,
// as bench:money sends it; with the nats-server's CPU for the cluster). Everything talks to
// 127.0.0.1 only; the servers are stopped and their directories removed at the end.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { removeOnExit, runBench, stop } from './support/children.js';
import { runScenario } from './support/load.js';
import { lastOutput, loadFailures, operatorAuthorization, quoteRequest, sandboxAuthorization, SENDER_FUNDS, startServiceChild, usdAccount, type ServiceChild } from './support/service.js';
import type { RequestTemplate } from './support/load-protocol.js';
import { positiveFlag } from './support/flags.js';
import { fmtInt, markdownTable } from './support/stats.js';
import { startNatsCluster, type NatsCluster } from '../test/support/nats-cluster.js';

const GC_ON_SIGNAL = fileURLToPath(new URL('./support/gc-on-signal.js', import.meta.url));
/** Funded sender/receiver pairs the payments go between, one per connection (bench:money's shape: fewer make smaller commit groups and more CPU per payment). */
const PAIRS = 64;
/** Keep-alive connections of the payment load, one request in flight each. */
const CONNECTIONS = 64;
/** How long a start may take: a cluster node's first restart logs 20,000 environments' first entries. */
const READY_TIMEOUT_MS = 10 * 60_000;

const { values: flags } = parseArgs({
  options: {
    platforms: { type: 'string', default: '10000' },
    concurrency: { type: 'string', default: '16' },
    duration: { type: 'string', default: '5' },
    shards: { type: 'string', default: '16' },
  },
  strict: true,
});
const manyPlatforms = Math.round(positiveFlag('platforms', flags.platforms));
const concurrency = Math.round(positiveFlag('concurrency', flags.concurrency));
const durationMs = Math.round(positiveFlag('duration', flags.duration) * 1000);
const shards = Math.round(positiveFlag('shards', flags.shards));

type Kind = 'local' | 'cluster';

interface Figures {
  setup: string;
  platforms: number;
  createS: number;
  firstRestartS: number;
  restartS: number;
  rssMiB: number;
  heapMiB: number;
  paymentsPerSecond: number;
  paymentUs: number;
  natsUs: number | undefined;
}

/** A service child with the GC hook, and how to read its memory after collections. */
interface Running {
  service: ServiceChild;
  memoryFile: string;
}

async function start(kind: Kind, dataDir: string, nats: NatsCluster | undefined): Promise<Running> {
  const memoryFile = `${dataDir}.memory.json`;
  const cluster: Record<string, string> = nats === undefined ? {} : { NATS_URL: nats.urls.join(','), NODE_ID: 'node0', CLUSTER_REPLICAS: '1', CLUSTER_SHARDS: String(shards) };
  const service = await startServiceChild({
    dataDir,
    env: { ...cluster, BENCH_MEMORY_FILE: memoryFile, LOG_LEVEL: 'warn' },
    nodeOptions: ['--expose-gc', '--import', GC_ON_SIGNAL],
    readyTimeoutMs: READY_TIMEOUT_MS,
  });
  return { service, memoryFile };
}

/** Until the service is ready: one node's store recovered (/readyz), every shard served by the cluster node. */
async function ready(kind: Kind, service: ServiceChild): Promise<void> {
  const origin = `http://127.0.0.1:${service.port}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (kind === 'local') {
      if ((await fetch(`${origin}/readyz`)).status === 200) return;
    } else {
      const health = (await (await fetch(`${origin}/healthz`, { headers: { authorization: operatorAuthorization(service.dataDir) } })).json()) as { cluster: { owned: string[] } };
      if (health.cluster.owned.length === shards) return;
    }
    if (Date.now() > deadline) throw new Error(`${kind}: not ready within ${READY_TIMEOUT_MS} ms\n${lastOutput(service)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Makes `count` platforms through the operator endpoint, `concurrency` at a time. */
async function makePlatforms(service: ServiceChild, count: number): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      next++;
      const res = await fetch(`http://127.0.0.1:${service.port}/_operator/platforms`, {
        method: 'POST',
        headers: { authorization: operatorAuthorization(service.dataDir), 'content-type': 'application/json' },
        body: '{}',
      });
      if (res.status !== 201) throw new Error(`making a platform: ${res.status} ${await res.text()}`);
      await res.arrayBuffer().catch(() => undefined);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** The service's memory after three full collections (the GC hook writes it on SIGUSR2). */
async function settledMemory(running: Running): Promise<NodeJS.MemoryUsage> {
  rmSync(running.memoryFile, { force: true });
  running.service.child.kill('SIGUSR2');
  for (let tries = 0; tries < 600; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    try {
      return JSON.parse(readFileSync(running.memoryFile, 'utf8')) as NodeJS.MemoryUsage;
    } catch {
      // not written yet (or half written)
    }
  }
  throw new Error('the service wrote no memory figures');
}

/** Stops the service and starts it again; seconds until it is ready. */
async function restart(kind: Kind, running: Running, nats: NatsCluster | undefined): Promise<{ running: Running; seconds: number }> {
  await stop(running.service.child);
  const began = performance.now();
  const again = await start(kind, running.service.dataDir, nats);
  await ready(kind, again.service);
  return { running: again, seconds: (performance.now() - began) / 1000 };
}

async function measure(kind: Kind, platforms: number, root: string, failures: string[]): Promise<Figures> {
  const setup = kind === 'local' ? 'one node, LMDB' : `cluster node, ${shards} shards`;
  process.stderr.write(`${setup}, ${fmtInt(platforms)} platform(s) ...\n`);
  const nats = kind === 'cluster' ? await startNatsCluster(1) : undefined;
  const dataDir = mkdtempSync(join(root, `${kind}-${platforms}-`));
  let running = await start(kind, dataDir, nats);
  try {
    await ready(kind, running.service);
    const began = performance.now();
    // The default platform is the first.
    await makePlatforms(running.service, platforms - 1);
    const createS = (performance.now() - began) / 1000;
    const authorization = sandboxAuthorization(dataDir);
    const payments: RequestTemplate[] = [];
    for (let i = 0; i < PAIRS; i++) payments.push(quoteRequest(authorization, await usdAccount(running.service.port, authorization, SENDER_FUNDS), await usdAccount(running.service.port, authorization, 0)));
    const first = await restart(kind, running, nats);
    const second = await restart(kind, first.running, nats);
    running = second.running;
    const memory = await settledMemory(running);
    const result = await runScenario({
      name: `${kind} ${platforms}: quote and execute`,
      processes: 1,
      serverPid: running.service.child.pid,
      watch: [nats?.pids()[0]],
      spec: { host: '127.0.0.1', port: running.service.port, connections: CONNECTIONS, warmupMs: 1_000, durationMs, drainMs: 10_000, requests: payments, collectIds: 0, client: 'raw' },
    });
    failures.push(...loadFailures(result));
    const natsMs = result.watchedCpuMs[0];
    return {
      setup,
      platforms,
      createS,
      firstRestartS: first.seconds,
      restartS: second.seconds,
      rssMiB: memory.rss / 2 ** 20,
      heapMiB: memory.heapUsed / 2 ** 20,
      paymentsPerSecond: result.requestsPerSecond,
      paymentUs: result.serverCpuUsPerRequest ?? NaN,
      natsUs: natsMs === undefined ? undefined : (natsMs * 1000) / result.completed,
    };
  } finally {
    await stop(running.service.child);
    await nats?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

runBench('many-platforms', async () => {
  const root = mkdtempSync(join(tmpdir(), 'bench-many-platforms-'));
  removeOnExit(root);
  const failures: string[] = [];
  const figures: Figures[] = [];
  for (const kind of ['local', 'cluster'] as const) {
    for (const platforms of [1, manyPlatforms]) figures.push(await measure(kind, platforms, root, failures));
  }
  const fixed = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : '–');
  console.log(
    markdownTable(
      ['setup', 'platforms', 'make them, s', 'first restart, s', 'restart, s', 'RSS MiB', 'heap MiB after GC', 'payments/s', 'CPU µs/payment', 'NATS CPU µs/payment'],
      figures.map((f) => [
        f.setup,
        fmtInt(f.platforms),
        fixed(f.createS),
        fixed(f.firstRestartS, 2),
        fixed(f.restartS, 2),
        fixed(f.rssMiB, 0),
        fixed(f.heapMiB, 0),
        fmtInt(f.paymentsPerSecond),
        fixed(f.paymentUs, 0),
        f.natsUs === undefined ? '–' : fixed(f.natsUs, 0),
      ]),
      [false, true, true, true, true, true, true, true, true, true],
    ),
  );
  return failures;
});
