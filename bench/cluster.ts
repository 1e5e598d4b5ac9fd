// Cluster bench: the service in cluster mode (NATS_URL) with one, two and three nodes, each
// on its own three-server JetStream cluster on loopback, against the service on one node with
// its embedded LMDB, all in one run.
//
//   npm run bench:cluster                                   # 3 rounds × 4 setups × (1 s warmup + 5 s), ~3 min
//   npm run bench:cluster -- --rounds 5 --duration 10 --connections 96
//   npm run bench:cluster -- --rounds 1 --cpu-prof /tmp/profiles   # where the nodes' CPU goes
//   npm run bench:cluster -- --load config --nodes 2                # what a forward costs without a commit
//
// Throughput: every setup holds the same three platforms, and the load is POST /customers
// (one durable log entry each) on both environments of each, six environments in all
// (in up to six of the deployment's shards). It is sent
// round-robin to every node of the setup ("any node"): a node forwards a request for a shard
// it does not own, as a client sending to any node gets. With two and three nodes it is also
// sent to each shard's owner ("to owner"), which is what forwarding costs set against
// (`--load config` sends GET /config instead, which commits nothing: the hop alone). The
// setups run alternately (local, 1, 2, 3 nodes, then again, --rounds times); each figure is
// the median of the rounds, a ratio the median of the rounds' ratios. CPU per request is
// given per node and for the NATS servers: on this 2-core machine the nodes, the servers and
// the load generators share the cores, and the setups not being measured stay up, idle
// (their idle CPU is measured and printed first).
//
// Commit latency: one request at a time to the node owning the shard (no forward), local
// LMDB commit against a commit a quorum of JetStream servers acknowledged, alternately.
//
// Every response must be 2xx: anything else fails the run (exit 1) after the tables.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { machineBusyMs, removeOnExit, runBench, stop } from './support/children.js';
import { positiveFlag } from './support/flags.js';
import { formatSummary, summariseFile } from './support/cpuprofile.js';
import { runScenario, type LoadTarget, type ScenarioResult } from './support/load.js';
import { API, basicAuthorization, createCustomerRequest, loadFailures, operatorAuthorization, startServiceChild, type ServiceChild } from './support/service.js';
import type { RequestTemplate } from './support/load-protocol.js';
import { fmtInt, fmtMs, fmtRatio, markdownTable, median } from './support/stats.js';
import { startNatsCluster, type NatsCluster } from '../test/support/nats-cluster.js';
import { shardOf } from '../src/cluster/placement.js';
import { DEFAULT_CLUSTER_SHARDS } from '../src/config.js';
import type { PlatformCredentials } from '../src/platforms.js';

const run = promisify(execFile);
const PLATFORM_CLI = fileURLToPath(new URL('../scripts/platform.js', import.meta.url));
/** Platforms every setup holds: the default one and two made with the platform command. */
const PLATFORMS = 3;
/** How long a setup may take to deal its shards over its nodes. */
const SETTLE_MS = 60_000;
/** How long the idle setups' CPU is read for before the rounds. */
const IDLE_MS = 3_000;

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
    connections: { type: 'string', default: '48' },
    rounds: { type: 'string', default: '3' },
    'latency-requests': { type: 'string', default: '400' },
    'cpu-prof': { type: 'string' },
    load: { type: 'string', default: 'create' },
    nodes: { type: 'string', default: '1,2,3' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});

if (flags.help === true) {
  console.log(`usage: node dist/bench/cluster.js [options]
  --duration S           measured seconds per setup and round (default 5)
  --warmup S             unmeasured seconds before each (default 1)
  --connections N        keep-alive connections, one request in flight each, split over the nodes (default 48)
  --rounds N             rounds of the setups, alternately (default 3)
  --latency-requests N   requests, one at a time, per setup and round of the commit latency (default 400)
  --load create|config   the throughput load: POST /customers (default) or GET /config (no commit)
  --nodes LIST           the cluster setups' node counts, each once (default 1,2,3)
  --cpu-prof DIR         run the cluster nodes under --cpu-prof into DIR and summarise each node's profile`);
  process.exit(0);
}

const durationMs = Math.round(positiveFlag('duration', flags.duration) * 1000);
const warmupMs = Math.round(positiveFlag('warmup', flags.warmup) * 1000);
const connections = Math.round(positiveFlag('connections', flags.connections));
const rounds = Math.round(positiveFlag('rounds', flags.rounds));
const latencyRequests = Math.round(positiveFlag('latency-requests', flags['latency-requests']));
const profileDir = flags['cpu-prof'];
const LOADS = { create: { what: 'POST /customers', make: createCustomerRequest }, config: { what: 'GET /config', make: readConfig } } as const;
if (flags.load !== 'create' && flags.load !== 'config') throw new Error(`--load must be create or config, got ${flags.load}`);
const throughputLoad = LOADS[flags.load];
const NODE_COUNTS = flags.nodes.split(',').map((n) => {
  const count = Number(n);
  if (!Number.isInteger(count) || count < 1 || count > 5) throw new Error(`--nodes must list node counts from 1 to 5, got ${flags.nodes}`);
  return count;
});
// Each setup's nodes keep their data under cluster<count>-node<i>: a count twice would share them.
if (new Set(NODE_COUNTS).size !== NODE_COUNTS.length) throw new Error(`--nodes must list each node count once, got ${flags.nodes}`);

/** One way of running the service: its nodes (one for the local setup), their NATS servers, and what the load sends. */
interface Setup {
  name: string;
  nodes: ServiceChild[];
  nats: NatsCluster | undefined;
  /** The load (--load) on each environment of each platform. */
  requests: RequestTemplate[];
  /** The same requests, each sent to its shard's owner (empty for the local setup). */
  toOwner: LoadTarget[];
  /** A POST /customers and the port of the node owning its shard, for the commit latency. */
  direct: { request: RequestTemplate; port: number };
}

function readConfig(auth: string): RequestTemplate {
  return { method: 'GET', path: `${API}/config`, headers: { Authorization: auth } };
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const by = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (performance.now() > by) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The default platform (whichever node wrote credentials.json) and PLATFORMS - 1 more, made through the platform command. */
async function makePlatforms(nodes: readonly ServiceChild[], env: NodeJS.ProcessEnv): Promise<PlatformCredentials[]> {
  const first = await until('the default platform', SETTLE_MS, async () => {
    const node = nodes.find((n) => existsSync(join(n.dataDir, 'credentials.json')));
    return node === undefined ? undefined : (JSON.parse(readFileSync(join(node.dataDir, 'credentials.json'), 'utf8')) as PlatformCredentials);
  });
  const made = [first];
  while (made.length < PLATFORMS) {
    const { stdout } = await run(process.execPath, [PLATFORM_CLI, 'create', '--data', nodes[made.length % nodes.length]!.dataDir], { env: { PATH: process.env.PATH ?? '', ...env } });
    made.push(JSON.parse(stdout) as PlatformCredentials);
  }
  return made;
}

interface ClusterHealth {
  cluster: { nodeId: string; owned: string[]; nodes: string[] };
}

/** Waits until every shard is owned, by a node that every node sees, and every node owns some: the dealing has settled. */
async function settled(nodes: readonly ServiceChild[], shards: readonly string[]): Promise<Map<string, ServiceChild>> {
  return until(`${nodes.length} node(s) serving ${shards.length} shards`, SETTLE_MS, async () => {
    const healths = await Promise.all(nodes.map(async (node) => (await (await fetch(`http://127.0.0.1:${node.port}/healthz`, { headers: { authorization: operatorAuthorization(node.dataDir) } })).json()) as ClusterHealth));
    if (healths.some((h) => h.cluster.nodes.length !== nodes.length)) return undefined;
    const owners = new Map<string, ServiceChild>();
    healths.forEach((h, i) => h.cluster.owned.forEach((shard) => owners.set(shard, nodes[i]!)));
    if (shards.some((shard) => !owners.has(shard))) return undefined;
    if (nodes.some((node) => ![...owners.values()].includes(node))) return undefined;
    return owners;
  });
}

function requestsOf(platforms: readonly PlatformCredentials[]): Array<{ shard: string; request: RequestTemplate; create: RequestTemplate }> {
  return platforms.flatMap((p) =>
    (['sandbox', 'production'] as const).map((env) => {
      const auth = basicAuthorization(p[env]);
      return { shard: shardOf(`${p.platformId}#${env}`, DEFAULT_CLUSTER_SHARDS), request: throughputLoad.make(auth), create: createCustomerRequest(auth) };
    }),
  );
}

async function localSetup(root: string): Promise<Setup> {
  const node = await startServiceChild({ dataDir: join(root, 'local') });
  const platforms = await makePlatforms([node], {});
  const shards = requestsOf(platforms);
  return { name: 'local LMDB', nodes: [node], nats: undefined, requests: shards.map((s) => s.request), toOwner: [], direct: { request: shards[0]!.create, port: node.port } };
}

async function clusterSetup(root: string, count: number): Promise<Setup> {
  const nats = await startNatsCluster(3);
  const env = { NATS_URL: nats.urls.join(',') };
  const nodes: ServiceChild[] = [];
  for (let i = 0; i < count; i++) {
    const profile = profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, `cluster${count}-node${i}`)}`];
    nodes.push(await startServiceChild({ dataDir: join(root, `cluster${count}-node${i}`), env: { ...env, NODE_ID: `node${i}` }, readyTimeoutMs: SETTLE_MS, nodeOptions: profile }));
  }
  const platforms = await makePlatforms(nodes, env);
  const shards = requestsOf(platforms);
  const owners = await settled(
    nodes,
    shards.map((s) => s.shard),
  );
  const first = shards[0]!;
  const toOwner = nodes.map((node) => ({ port: node.port, requests: shards.filter((s) => owners.get(s.shard) === node).map((s) => s.request) }));
  return {
    name: `${count} node${count === 1 ? '' : 's'}`,
    nodes,
    nats,
    requests: shards.map((s) => s.request),
    toOwner,
    direct: { request: first.create, port: owners.get(first.shard)!.port },
  };
}

interface Measured {
  result: ScenarioResult;
  /** CPU µs per completed request of each node, in order. */
  nodeUs: number[];
  /** CPU µs per completed request of the NATS servers together (0 for the local setup). */
  natsUs: number;
}

async function measure(setup: Setup, spec: { connections: number; warmupMs: number; durationMs: number; targets: LoadTarget[]; limit?: number }): Promise<Measured> {
  const natsPids = setup.nats?.pids() ?? [];
  const nodePids = setup.nodes.map((n) => n.child.pid);
  const result = await runScenario({
    name: setup.name,
    processes: spec.targets.length,
    serverPid: setup.nodes[0]!.child.pid,
    targets: spec.targets,
    watch: [...nodePids, ...natsPids],
    spec: {
      host: '127.0.0.1',
      port: spec.targets[0]!.port,
      connections: spec.connections,
      warmupMs: spec.warmupMs,
      durationMs: spec.durationMs,
      drainMs: 10_000,
      requests: setup.requests,
      collectIds: 0,
      client: 'raw',
      ...(spec.limit === undefined ? {} : { limit: spec.limit }),
    },
  });
  const usPerRequest = (ms: number | undefined): number => (ms === undefined || result.completed === 0 ? NaN : (ms * 1000) / result.completed);
  const nodeUs = result.watchedCpuMs.slice(0, nodePids.length).map(usPerRequest);
  const natsUs = result.watchedCpuMs.slice(nodePids.length).reduce<number>((sum, ms) => sum + usPerRequest(ms), 0);
  return { result, nodeUs, natsUs };
}

/** One throughput measurement a round: a setup, and where its requests go. */
interface Load {
  name: string;
  setup: Setup;
  targets: LoadTarget[];
}

function loadsOf(setups: readonly Setup[]): Load[] {
  return setups.flatMap((setup) => {
    const anyNode = { name: setup.nats === undefined ? setup.name : `${setup.name}, any node`, setup, targets: setup.nodes.map((n) => ({ port: n.port })) };
    return setup.nodes.length > 1 ? [anyNode, { name: `${setup.name}, to owner`, setup, targets: setup.toOwner }] : [anyNode];
  });
}

/** The machine's busy cores while every setup is up and none is loaded. */
async function idleCores(): Promise<number> {
  const [start, at] = [machineBusyMs(), performance.now()];
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  const end = machineBusyMs();
  return start === undefined || end === undefined ? NaN : (end - start) / (performance.now() - at);
}

function throughputRow(load: Load, runs: readonly Measured[], local: readonly Measured[]): string[] {
  const ratios = runs.map((m, i) => m.result.requestsPerSecond / local[i]!.result.requestsPerSecond);
  const nodeUs = load.setup.nodes.map((_, n) => median(runs.map((m) => m.nodeUs[n]!)));
  return [
    load.name,
    fmtInt(median(runs.map((m) => m.result.requestsPerSecond))),
    `${fmtRatio(median(ratios))} (${fmtRatio(Math.min(...ratios))}–${fmtRatio(Math.max(...ratios))})`,
    fmtMs(median(runs.map((m) => m.result.p50))),
    fmtMs(median(runs.map((m) => m.result.p99))),
    nodeUs.map((us) => fmtInt(us)).join(' / '),
    fmtInt(nodeUs.reduce((sum, us) => sum + us, 0)),
    load.setup.nats === undefined ? '–' : fmtInt(median(runs.map((m) => m.natsUs))),
    median(runs.map((m) => m.result.machineCores ?? NaN)).toFixed(2),
  ];
}

function printLatency(local: readonly Measured[], cluster: readonly Measured[]): void {
  const row = (name: string, runs: readonly Measured[]): string[] => [
    name,
    fmtMs(median(runs.map((m) => m.result.p50))),
    fmtMs(median(runs.map((m) => m.result.p99))),
    fmtInt(median(runs.map((m) => m.result.requestsPerSecond))),
  ];
  const extraP50 = median(cluster.map((m, i) => m.result.p50 - local[i]!.result.p50));
  const extraP99 = median(cluster.map((m, i) => m.result.p99 - local[i]!.result.p99));
  console.log(`\n## Commit latency: one POST /customers at a time to the shard's owner, ${latencyRequests} requests a round\n`);
  console.log(markdownTable(['commit', 'p50 ms', 'p99 ms', 'req/s'], [row('local LMDB', local), row('JetStream R3 quorum', cluster)], [false, true, true, true]));
  console.log(`\nA replicated commit adds ${fmtMs(extraP50)} ms at the median and ${fmtMs(extraP99)} ms at p99 (medians of the rounds' differences).`);
}

async function main(): Promise<string[]> {
  const root = mkdtempSync(join(tmpdir(), 'bench-cluster-'));
  removeOnExit(root);
  const failures: string[] = [];
  console.log(
    `# Cluster: Node ${process.version}, ${cpus()[0]?.model ?? 'unknown CPU'}, ${availableParallelism()} cores; ${PLATFORMS} platforms (6 shards), ` +
      `${connections} keep-alive connections split over the nodes, ${warmupMs / 1000} s warmup + ${durationMs / 1000} s, ${rounds} rounds of the setups alternately\n`,
  );
  const setups: Setup[] = [];
  try {
    process.stderr.write('starting the setups ...\n');
    setups.push(await localSetup(root));
    for (const count of NODE_COUNTS) setups.push(await clusterSetup(root, count));
    console.log(`Idle, every setup up (${setups.reduce((n, s) => n + s.nodes.length, 0)} service nodes, ${3 * NODE_COUNTS.length} nats-servers): ${(await idleCores()).toFixed(2)} cores busy.\n`);

    const loads = loadsOf(setups);
    const throughput = new Map<Load, Measured[]>(loads.map((l) => [l, []]));
    const [localSetupOf, clusterSetupOf] = [setups[0]!, setups[1]!];
    const latency = new Map<Setup, Measured[]>([
      [localSetupOf, []],
      [clusterSetupOf, []],
    ]);
    for (let round = 1; round <= rounds; round++) {
      for (const load of loads) {
        process.stderr.write(`round ${round}: ${load.name} ...\n`);
        const m = await measure(load.setup, { connections, warmupMs, durationMs, targets: load.targets });
        throughput.get(load)!.push(m);
        failures.push(...loadFailures(m.result).map((f) => `round ${round}, ${load.name}: ${f}`));
      }
      for (const [setup, runs] of latency) {
        const m = await measure(setup, { connections: 1, warmupMs: 0, durationMs: 60_000, targets: [{ port: setup.direct.port, requests: [setup.direct.request] }], limit: latencyRequests });
        runs.push(m);
        failures.push(...loadFailures(m.result).map((f) => `round ${round} latency, ${setup.name}: ${f}`));
      }
    }

    const local = throughput.get(loads[0]!)!;
    console.log(`## Throughput: ${throughputLoad.what}, sent round-robin to every node (any node) or to each shard's owner\n`);
    console.log(
      markdownTable(
        ['setup', 'req/s', 'vs local (range)', 'p50 ms', 'p99 ms', 'CPU µs/req per node', 'nodes CPU µs/req', 'NATS CPU µs/req', 'machine cores'],
        loads.map((load) => throughputRow(load, throughput.get(load)!, local)),
        [false, true, false, true, true, false, true, true, true],
      ),
    );
    printLatency(latency.get(localSetupOf)!, latency.get(clusterSetupOf)!);
  } finally {
    for (const setup of setups) {
      // SIGTERM: a node under --cpu-prof writes its profile as it exits.
      await Promise.all(setup.nodes.map((node) => stop(node.child)));
      await setup.nats?.stop();
    }
  }
  if (profileDir !== undefined) {
    for (const dir of readdirSync(profileDir).sort()) {
      for (const file of readdirSync(join(profileDir, dir)).filter((f) => f.endsWith('.cpuprofile'))) {
        console.log(`\n## CPU profile of ${dir} (the whole run)\n\n${formatSummary(summariseFile(join(profileDir, dir, file)))}`);
      }
    }
  }
  return failures;
}

runBench('bench:cluster', main);
