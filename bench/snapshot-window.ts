// Throughput while automatic snapshots run: the service as a child on a fresh data directory,
// preloaded with customers (so a snapshot has records to write), then under a steady durable
// load for a measured window: POST /customers (`--load customers`, the default), or
// quote-and-execute payments between 64 funded sender/receiver pairs (`--load payments`,
// each payment a quote, two transactions, four webhook events and two balances changed). The generators count completions per bucket
// (default 1 s); the service's `snapshot at <seq>: ... <ms> ms` lines (reported when a
// snapshot ends, with how long it took) give the spans during which snapshots ran.
//
//   npm run bench:snapshot-window                                  # 200k preloaded, 30 s window
//   npm run bench:snapshot-window -- --preload 20000 --duration 10 --snapshot-every-entries 20000
//   npm run bench:snapshot-window -- --load payments
//
// Report: the usual bucket (median of the buckets no snapshot overlaps), the worst bucket a
// snapshot overlaps, their ratio (aim ≥ 0.8) and the window's p99 latency.
import { integerFlag } from './support/flags.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { removeOnExit, runBench } from './support/children.js';
import { runScenario, type ScenarioResult } from './support/load.js';
import {
  createCustomerRequest,
  createCustomers,
  health,
  quoteRequest,
  SENDER_FUNDS,
  usdAccount,
  loadFailures,
  messageOf,
  sandboxAuthorization,
  startServiceChild,
  type ServiceChild,
  showLastOutput,
  stopCleanly,
} from './support/service.js';
import { fmtInt, fmtMs, markdownTable, median } from './support/stats.js';
import { writeSnapshotWindowChart } from './support/svg-charts.js';

/** Aim of issue 10: the worst bucket during a snapshot against the usual one. */
const AIM_RATIO = 0.8;
/**
 * `snapshot at 1234: ... 567 ms`, or since incremental snapshots `snapshot at 1234 (changes): ...
 * 567 ms` (engine.ts): the seq, and how long it took, at the end of the line.
 */
const SNAPSHOT_LINE = /^snapshot at (\d+)(?: \((?:full|changes)\))?:.*?(\d+) ms\s*$/;

const { values: flags } = parseArgs({
  options: {
    preload: { type: 'string', default: '200000' },
    load: { type: 'string', default: 'customers' },
    duration: { type: 'string', default: '30' },
    warmup: { type: 'string', default: '2' },
    bucket: { type: 'string', default: '1000' },
    'snapshot-every-entries': { type: 'string', default: '100000' },
    connections: { type: 'string', default: '64' },
    'load-processes': { type: 'string', default: '1' },
    'service-node-options': { type: 'string', default: '' },
    json: { type: 'string' },
    svg: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});

if (flags.help === true) {
  console.log(`usage: node dist/bench/snapshot-window.js [options]
  --preload N                   customers created before the window (default 200000)
  --load customers|payments     what the window sends: POST /customers, or quote-and-execute between 64 pairs (default customers)
  --duration S                  measured seconds (default 30)
  --warmup S                    unmeasured seconds of load before it (default 2)
  --bucket MS                   completions are counted per bucket of MS ms (default 1000)
  --snapshot-every-entries N    the service's SNAPSHOT_EVERY_ENTRIES (default 100000)
  --connections N               keep-alive connections, one request in flight each (default 64)
  --load-processes N            load generator processes sharing them (default 1: one clock for the buckets)
  --service-node-options="..."  node flags for the service
  --json FILE                   also write the buckets, the snapshots and the verdict as JSON
  --svg DIR                     also draw the window as an SVG chart in DIR (snapshot-window.svg)`);
  process.exit(0);
}


const preload = integerFlag('preload', flags.preload, true);
const load = flags.load;
if (load !== 'customers' && load !== 'payments') throw new Error(`--load must be customers or payments, not ${load}`);
/** Sender/receiver pairs of the payment load. */
const PAYING_PAIRS = 64;
const durationMs = integerFlag('duration', flags.duration) * 1000;
const warmupMs = integerFlag('warmup', flags.warmup, true) * 1000;
const bucketMs = integerFlag('bucket', flags.bucket);
const snapshotEvery = integerFlag('snapshot-every-entries', flags['snapshot-every-entries']);
const connections = integerFlag('connections', flags.connections);
const loadProcesses = integerFlag('load-processes', flags['load-processes']);
const nodeOptions = flags['service-node-options'].split(' ').filter((a) => a !== '');
if (durationMs < 2 * bucketMs) throw new Error('--duration must hold at least two buckets');

interface SnapshotSpan {
  seq: number;
  startEpochMs: number;
  endEpochMs: number;
  line: string;
}

/** Snapshot lines the bench keeps (one per snapshot; far more than any window holds). */
const MAX_SPANS = 10_000;

async function main(): Promise<string[]> {
  const failures: string[] = [];
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-snapshot-window-'));
  removeOnExit(dataDir);
  console.log(
    `# Snapshot window: Node ${process.version}, ${cpus()[0]?.model ?? 'unknown CPU'}, ${availableParallelism()} cores; ` +
      `${fmtInt(preload)} customers preloaded; load: ${load}; SNAPSHOT_EVERY_ENTRIES=${snapshotEvery}; ${connections} keep-alive connections; ` +
      `${warmupMs / 1000} s warmup + ${durationMs / 1000} s in ${bucketMs} ms buckets` +
      (nodeOptions.length > 0 ? `; service node options: ${nodeOptions.join(' ')}` : '') +
      '\n',
  );

  const spans: SnapshotSpan[] = [];
  let service: ServiceChild | undefined;
  let result: ScenarioResult;
  try {
    service = await startServiceChild({
      dataDir: join(dataDir, 'db'),
      nodeOptions,
      env: { SNAPSHOT_EVERY_ENTRIES: String(snapshotEvery) },
      onLine: (line, at) => {
        const m = SNAPSHOT_LINE.exec(messageOf(line));
        if (m !== null && spans.length < MAX_SPANS) spans.push({ seq: Number(m[1]), startEpochMs: at - Number(m[2]), endEpochMs: at, line });
      },
    });
    const authorization = sandboxAuthorization(service.dataDir);
    if (preload > 0) {
      process.stderr.write(`preloading ${fmtInt(preload)} customers ...\n`);
      const r = await createCustomers(service, authorization, preload, { connections, processes: loadProcesses }, 'preload');
      const problems = loadFailures(r);
      if (problems.length > 0) throw new Error(`preload failed: ${problems.join('; ')}`);
    }
    const requests = [createCustomerRequest(authorization)];
    if (load === 'payments') {
      process.stderr.write(`setting up ${PAYING_PAIRS} funded sender/receiver pairs ...\n`);
      requests.length = 0;
      for (let i = 0; i < PAYING_PAIRS; i++) {
        requests.push(quoteRequest(authorization, await usdAccount(service.port, authorization, SENDER_FUNDS), await usdAccount(service.port, authorization, 0)));
      }
    }
    process.stderr.write(`measuring ${durationMs / 1000} s under load ...\n`);
    result = await runScenario({
      name: load === 'payments' ? 'POST /quotes (immediatelyExecute)' : 'POST /customers',
      processes: loadProcesses,
      serverPid: service.child.pid,
      spec: {
        host: '127.0.0.1',
        port: service.port,
        connections,
        warmupMs,
        durationMs,
        drainMs: 10_000,
        requests,
        collectIds: 0,
        client: 'raw',
        bucketMs,
      },
    });
    failures.push(...loadFailures(result));
    const h = await health(service);
    if (h.durableSeq !== h.lastSeq) failures.push('the log is not fully durable after the run');
  } catch (err) {
    showLastOutput(service);
    throw err;
  } finally {
    await stopCleanly(service, failures, 120_000);
  }

  // Whole buckets only; a bucket overlaps a snapshot if their spans intersect.
  const start = result.windowStartEpochMs;
  const whole = Math.floor(durationMs / bucketMs);
  const buckets = Array.from({ length: whole }, (_, i) => {
    const from = start + i * bucketMs;
    const to = from + bucketMs;
    const during = spans.filter((s) => s.startEpochMs < to && s.endEpochMs > from);
    return { index: i, completed: result.buckets[i] ?? 0, snapshots: during.map((s) => s.seq) };
  });
  const quiet = buckets.filter((b) => b.snapshots.length === 0).map((b) => b.completed);
  const busy = buckets.filter((b) => b.snapshots.length > 0);
  const inWindow = spans.filter((s) => s.startEpochMs < start + whole * bucketMs && s.endEpochMs > start);
  const perSecond = (n: number): number => (n * 1000) / bucketMs;

  console.log(
    markdownTable(
      ['snapshot at seq', 'started s', 'took ms', 'report line'],
      inWindow.map((s) => [fmtInt(s.seq), ((s.startEpochMs - start) / 1000).toFixed(2), fmtInt(s.endEpochMs - s.startEpochMs), s.line]),
      [true, true, true, false],
    ),
  );
  console.log('');
  console.log(
    `completions per ${bucketMs} ms bucket (* = a snapshot overlaps it): ` + buckets.map((b) => `${b.completed}${b.snapshots.length > 0 ? '*' : ''}`).join(' '),
  );
  console.log('');
  console.log(`- window: ${fmtInt(result.requestsPerSecond)} req/s, p50 ${fmtMs(result.p50)} ms, p99 ${fmtMs(result.p99)} ms, max ${fmtMs(result.max)} ms`);
  console.log('- a snapshot spans from (its report line\'s arrival - the ms it reports) to that arrival');
  let ratio: number | undefined;
  if (busy.length === 0) {
    failures.push('no snapshot ran during the window: lower --snapshot-every-entries or lengthen --duration');
  } else if (quiet.length === 0) {
    failures.push('snapshots overlapped every bucket: there is no usual bucket to compare with (raise --snapshot-every-entries)');
  } else {
    const usual = median(quiet);
    const worst = busy.reduce((a, b) => (b.completed < a.completed ? b : a));
    ratio = worst.completed / usual;
    console.log(`- usual bucket (median of ${quiet.length} without a snapshot): ${fmtInt(perSecond(usual))} req/s`);
    console.log(`- worst bucket during a snapshot (${busy.length} overlap one): ${fmtInt(perSecond(worst.completed))} req/s at ${((worst.index * bucketMs) / 1000).toFixed(2)} s`);
    console.log(`- worst / usual: ${ratio.toFixed(2)} — aim ≥ ${AIM_RATIO}: ${ratio >= AIM_RATIO ? 'MET' : 'NOT MET'}`);
  }
  if (flags.svg !== undefined) for (const path of writeSnapshotWindowChart(flags.svg, { bucketMs, startEpochMs: start, buckets, snapshots: inWindow })) console.log(`- chart: ${path}`);
  if (flags.json !== undefined) {
    writeFileSync(
      flags.json,
      JSON.stringify({ preload, load, snapshotEvery, durationMs, bucketMs, connections, requestsPerSecond: result.requestsPerSecond, p50: result.p50, p99: result.p99, buckets, snapshots: inWindow, ratio, failures }, null, 2),
    );
  }
  return failures;
}

runBench('snapshot-window bench', main);
