// HTTP load bench: the real service against a bare uWebSockets.js server, both as child
// processes, driven by a closed-loop keep-alive load generator in its own process(es).
//
//   npm run bench:http                       # 4 scenarios × (1 s warmup + 5 s), ~35 s
//   npm run bench:http -- --duration 10 --connections 128 --load-processes 1
//   npm run bench:http -- --scenarios service-post --cpu-prof   # profile the service
//
// Scenarios: bare-post, service-post (durable POST /customers), bare-get, service-get
// (GET /customers/{id} over the ids service-post created; bare-get sends the same
// requests); and, when asked for (npm run bench:money), the money path: bare-quote,
// service-quote (durable POST /quotes with immediatelyExecute between internal accounts
// of distinct sender/receiver pairs; bare-quote sends the same bytes to the bare server)
// and service-hot-account (many senders paying one receiver). Every response must be 2xx:
// anything else, a socket error or a request left unanswered fails the run (exit 1) after
// the table is printed.
import { mkdtempSync, readdirSync, mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { keep, machineLoad, removeOnExit, spawnTracked, stop, freePort, waitForHttp, runBench } from './support/children.js';
import { runScenario, type ScenarioResult } from './support/load.js';
import {
  API,
  api,
  createCustomerRequest,
  health,
  keepOutput,
  lastOutput,
  loadFailures,
  sandboxAuthorization,
  quoteRequest,
  QUOTE_CENTS,
  SENDER_FUNDS,
  startServiceChild,
  usdAccount,
  type ServerChild,
} from './support/service.js';
import type { RequestTemplate } from './support/load-protocol.js';
import { fmtInt, fmtMs, fmtRatio, markdownTable } from './support/stats.js';
import { formatSummary, summariseFile } from './support/cpuprofile.js';

/** Below this many cores busy (all processes), the machine counts as quiet. */
const QUIET_CORES = 0.25;
const SCENARIOS = ['bare-post', 'service-post', 'bare-get', 'service-get', 'bare-quote', 'service-quote', 'service-hot-account'] as const;
type Scenario = (typeof SCENARIOS)[number];
/** Run when --scenarios is not given; the money scenarios are asked for by name (npm run bench:money). */
const DEFAULT_SCENARIOS: readonly Scenario[] = ['bare-post', 'service-post', 'bare-get', 'service-get'];
/** Sender/receiver pairs of service-quote, and senders of service-hot-account: one per default connection. */
const PAYING_ACCOUNTS = 64;

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string' },
    warmup: { type: 'string' },
    connections: { type: 'string' },
    'load-processes': { type: 'string' },
    client: { type: 'string' },
    scenarios: { type: 'string' },
    'cpu-prof': { type: 'boolean', default: false },
    'service-node-options': { type: 'string' },
    'wait-quiet': { type: 'string' },
    'keep-data': { type: 'boolean', default: false },
    json: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});

if (flags.help === true) {
  console.log(`usage: node dist/bench/http-load.js [options]
  --duration S          measured seconds per scenario (BENCH_DURATION, default 5)
  --warmup S            unmeasured seconds before each (BENCH_WARMUP, default 1)
  --connections N       keep-alive connections, one request in flight each (BENCH_CONNECTIONS, default 64)
  --load-processes N    load generator processes sharing the connections (BENCH_LOAD_PROCESSES, default 1)
  --client raw|http     raw sockets (default) or node:http with a keep-alive Agent (BENCH_CLIENT)
  --scenarios LIST      comma-separated subset of ${SCENARIOS.join(',')} (default ${DEFAULT_SCENARIOS.join(',')})
  --wait-quiet S        before each scenario, wait up to S s for other processes to go idle (BENCH_WAIT_QUIET, default 5)
  --cpu-prof            run the service under --cpu-prof and summarise the profile
  --service-node-options="..."  extra node flags for the service child, e.g. "--max-semi-space-size=64"
  --keep-data           keep the service's data directory (and profile)
  --json FILE           also write the results as JSON`);
  process.exit(0);
}

function num(flag: string | undefined, env: string, fallback: number, min = Number.MIN_VALUE): number {
  const raw = flag ?? process.env[env];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) throw new Error(`${env} (or its flag) must be a number ${min === Number.MIN_VALUE ? '> 0' : `≥ ${min}`}, got ${raw}`);
  return n;
}

const durationMs = Math.round(num(flags.duration, 'BENCH_DURATION', 5) * 1000);
const warmupMs = Math.round(num(flags.warmup, 'BENCH_WARMUP', 1) * 1000);
const connections = Math.round(num(flags.connections, 'BENCH_CONNECTIONS', 64));
const loadProcesses = Math.round(num(flags['load-processes'], 'BENCH_LOAD_PROCESSES', 1));
const waitQuietMs = Math.round(num(flags['wait-quiet'], 'BENCH_WAIT_QUIET', 5, 0) * 1000);
const serviceNodeOptions = (flags['service-node-options'] ?? '').split(' ').filter((a) => a !== '');
const client = (flags.client ?? process.env.BENCH_CLIENT ?? 'raw') as 'raw' | 'http';
if (client !== 'raw' && client !== 'http') throw new Error(`--client must be raw or http, got ${String(client)}`);
const selected = new Set<Scenario>(
  (flags.scenarios ?? DEFAULT_SCENARIOS.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => {
      if (!(SCENARIOS as readonly string[]).includes(s)) throw new Error(`unknown scenario ${s}; known: ${SCENARIOS.join(', ')}`);
      return s as Scenario;
    }),
);
if (selected.has('service-get') && !selected.has('service-post')) selected.add('service-post');

const BARE = fileURLToPath(new URL('./support/bare-server.js', import.meta.url));

async function startBare(): Promise<ServerChild> {
  const port = await freePort();
  const child = spawnTracked(process.execPath, [BARE], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  keepOutput(child, output);
  await waitForHttp(`http://127.0.0.1:${port}/healthz`, child);
  return { name: 'bare', child, port, output };
}

async function main(): Promise<string[]> {
  const results = new Map<Scenario, ScenarioResult>();
  const notes: string[] = [];
  const failures: string[] = [];
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-http-'));
  if (flags['keep-data'] === true) keep(dataDir);
  else removeOnExit(dataDir);
  const profileDir = flags['cpu-prof'] === true ? join(dataDir, 'profile') : undefined;
  if (profileDir !== undefined) {
    mkdirSync(profileDir, { recursive: true });
    keep(dataDir);
  }
  const serviceDir = join(dataDir, 'db');

  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  console.log(
    `# HTTP load: Node ${process.version}, ${cpu}, ${availableParallelism()} cores; ${connections} keep-alive connections, ` +
      `${loadProcesses} load-generator process(es) (${client} client), ${warmupMs / 1000} s warmup + ${durationMs / 1000} s per scenario` +
      (serviceNodeOptions.length > 0 ? `; service node options: ${serviceNodeOptions.join(' ')}` : '') +
      '\n',
  );

  const needBare = selected.has('bare-post') || selected.has('bare-get') || selected.has('bare-quote');
  const servers: ServerChild[] = [];
  let bare: ServerChild | undefined;
  try {
    const service = await startServiceChild({
      dataDir: serviceDir,
      nodeOptions: [...serviceNodeOptions, ...(profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`])],
      spawned: (child) => servers.push(child),
    });
    if (needBare) {
      bare = await startBare();
      servers.push(bare);
    }
    const authorization = sandboxAuthorization(serviceDir);
    const post = createCustomerRequest(authorization);
    const base = { host: '127.0.0.1', connections, warmupMs, durationMs, drainMs: 10_000, client };
    const run = async (name: Scenario, server: ServerChild, requests: RequestTemplate[], collectIds = 0): Promise<ScenarioResult> => {
      // On a shared 2-core machine anything else running skews the figures: wait a little for quiet.
      const quietBy = performance.now() + waitQuietMs;
      let idle = await machineLoad(500);
      while (idle !== undefined && idle > QUIET_CORES && performance.now() < quietBy) idle = await machineLoad(500);
      if (idle !== undefined && idle > QUIET_CORES) {
        notes.push(`${name}: other processes were using ${idle.toFixed(2)} cores when it started: its figures are disturbed`);
      }
      process.stderr.write(`running ${name} ...\n`);
      const r = await runScenario({
        name,
        processes: loadProcesses,
        serverPid: server.child.pid,
        spec: { ...base, port: server.port, requests, collectIds },
      });
      results.set(name, r);
      failures.push(...loadFailures(r));
      return r;
    };

    if (selected.has('bare-post') && bare !== undefined) await run('bare-post', bare, [post]);
    let ids: string[] = [];
    if (selected.has('service-post')) {
      const before = await health(service.port);
      const r = await run('service-post', service, [post], 1_000_000);
      const after = await health(service.port);
      ids = r.ids;
      const created = r.statuses['201'] ?? 0;
      const appended = after.lastSeq - before.lastSeq;
      notes.push(`service-post: ${fmtInt(created)} customers created (201) in all; log entries appended ${fmtInt(appended)}; durableSeq ${after.durableSeq} of lastSeq ${after.lastSeq}`);
      if (appended !== created) failures.push(`service-post: ${created} responses 201 but ${appended} log entries appended`);
      if (after.durableSeq !== after.lastSeq) failures.push('service-post: the log is not fully durable after the run');
    }
    if (ids.length === 0) ids = ['Customer:019a0000-0000-7000-8000-000000000000'];
    const gets: RequestTemplate[] = ids.map((id) => ({ method: 'GET', path: `${API}/customers/${id}`, headers: { Authorization: authorization } }));
    if (selected.has('bare-get') && bare !== undefined) await run('bare-get', bare, gets);
    if (selected.has('service-get')) {
      await run('service-get', service, gets);
      notes.push(`service-get: over ${fmtInt(ids.length)} customer ids (round-robin)`);
    }

    // The money path: every 201 is one durable entry that creates the quote, moves the money and records the transaction.
    const measureQuotes = async (name: Scenario, requests: RequestTemplate[]): Promise<number> => {
      const before = await health(service.port);
      const r = await run(name, service, requests);
      const after = await health(service.port);
      const executed = r.statuses['201'] ?? 0;
      const appended = after.lastSeq - before.lastSeq;
      notes.push(`${name}: ${fmtInt(executed)} quotes created and executed (201); log entries appended ${fmtInt(appended)}`);
      if (appended !== executed) failures.push(`${name}: ${executed} responses 201 but ${appended} log entries appended`);
      if (after.durableSeq !== after.lastSeq) failures.push(`${name}: the log is not fully durable after the run`);
      return executed;
    };
    if (selected.has('bare-quote') || selected.has('service-quote')) {
      process.stderr.write(`setting up ${PAYING_ACCOUNTS} funded sender/receiver pairs ...\n`);
      const pairs: RequestTemplate[] = [];
      for (let i = 0; i < PAYING_ACCOUNTS; i++) {
        pairs.push(quoteRequest(authorization, await usdAccount(service.port, authorization, SENDER_FUNDS), await usdAccount(service.port, authorization, 0)));
      }
      if (selected.has('bare-quote') && bare !== undefined) await run('bare-quote', bare, pairs);
      if (selected.has('service-quote')) await measureQuotes('service-quote', pairs);
    }
    if (selected.has('service-hot-account')) {
      process.stderr.write(`setting up ${PAYING_ACCOUNTS} funded senders and one receiver ...\n`);
      const receiver = await usdAccount(service.port, authorization, 0);
      const senders: RequestTemplate[] = [];
      for (let i = 0; i < PAYING_ACCOUNTS; i++) senders.push(quoteRequest(authorization, await usdAccount(service.port, authorization, SENDER_FUNDS), receiver));
      const executed = await measureQuotes('service-hot-account', senders);
      const balance = ((await api(service.port, authorization, 'GET', `/internal-accounts/${receiver}`)) as { balance: { amount: number } }).balance.amount;
      notes.push(`service-hot-account: ${PAYING_ACCOUNTS} senders to one receiver, which holds ${fmtInt(balance)} cents`);
      if (balance !== executed * QUOTE_CENTS) failures.push(`service-hot-account: the receiver holds ${balance} cents, not ${executed} × ${QUOTE_CENTS}`);
    }
  } catch (err) {
    for (const server of servers) {
      if (server.output.length > 0) process.stderr.write(lastOutput(server));
    }
    throw err;
  } finally {
    for (const server of servers) {
      const how = await stop(server.child, 'SIGTERM', 15_000);
      if (how !== 0) failures.push(`${server.name} server did not exit cleanly on SIGTERM (${how})`);
    }
  }

  // The table.
  const rows = SCENARIOS.filter((s) => results.has(s)).map((s) => {
    const r = results.get(s)!;
    return [
      s,
      fmtInt(r.requestsPerSecond),
      fmtMs(r.p50),
      fmtMs(r.p99),
      fmtMs(r.max),
      fmtInt(r.non2xx + r.errors + r.unanswered),
      r.serverCores === undefined ? 'n/a' : `${(r.serverCores * 100).toFixed(0)}%`,
      r.serverMainCores === undefined ? 'n/a' : `${(r.serverMainCores * 100).toFixed(0)}%`,
      r.serverCpuUsPerRequest === undefined ? 'n/a' : r.serverCpuUsPerRequest.toFixed(0),
      `${(r.generatorCores * 100).toFixed(0)}%`,
      r.machineCores === undefined ? 'n/a' : `${(r.machineCores * 100).toFixed(0)}%`,
    ];
  });
  console.log(
    markdownTable(
      ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'non-2xx/err', 'server CPU', 'server JS thread', 'server CPU µs/req', 'load-gen CPU', 'machine CPU'],
      rows,
      [false, true, true, true, true, true, true, true, true, true, true],
    ),
  );
  console.log('');
  for (const note of notes) console.log(`- ${note}`);
  const ratio = (a: Scenario, b: Scenario): number | undefined => {
    const x = results.get(a);
    const y = results.get(b);
    return x === undefined || y === undefined ? undefined : x.requestsPerSecond / y.requestsPerSecond;
  };
  const postRatio = ratio('service-post', 'bare-post');
  const quoteRatio = ratio('service-quote', 'bare-quote');
  const getRatio = ratio('service-get', 'bare-get');
  if (postRatio !== undefined) {
    console.log(`- service/bare POST: ${fmtRatio(postRatio)} — aim ≥ 0.50×: ${postRatio >= 0.5 ? 'MET' : 'NOT MET'}`);
  }
  if (getRatio !== undefined) console.log(`- service/bare GET:  ${fmtRatio(getRatio)}`);
  if (quoteRatio !== undefined) console.log(`- service/bare quote-and-execute: ${fmtRatio(quoteRatio)}`);
  console.log(
    `- CPU columns: share of one core over the window (the machine has ${availableParallelism()}, so 200% is all of it); ` +
      'server = the server process with all its threads, JS thread = its main thread alone; machine = everything, kernel included.',
  );

  if (profileDir !== undefined) {
    const files = readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile'));
    if (files.length === 0) {
      console.log(`\nno .cpuprofile was written in ${profileDir}`);
    } else {
      const file = join(profileDir, files[0]!);
      let handled = 0;
      for (const s of ['service-post', 'service-get', 'service-quote', 'service-hot-account'] as const) {
        const r = results.get(s);
        if (r !== undefined) handled += Object.values(r.statuses).reduce((a, b) => a + b, 0);
      }
      console.log(`\n## Service CPU profile (${file})\n`);
      console.log(formatSummary(summariseFile(file, 30), handled > 0 ? handled : undefined));
      if (handled > 0) console.log(`\nµs/request divides by all ${fmtInt(handled)} service requests of the run (warmup and drain included).`);
    }
  }

  if (flags.json !== undefined) {
    const out = Object.fromEntries([...results].map(([k, r]) => [k, { ...r, ids: r.ids.length }]));
    writeFileSync(flags.json, JSON.stringify({ connections, loadProcesses, client, durationMs, warmupMs, results: out, postRatio, getRatio, quoteRatio, failures }, null, 2));
  }

  return failures;
}

runBench('http-load', main);
