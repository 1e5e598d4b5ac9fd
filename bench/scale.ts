// Load to a million customers: the service as a child on a fresh data directory, filled with
// durable POST /customers from the raw keep-alive generators (closed loop, as fast as it
// answers), measured step by step as the store grows.
//
//   npm run bench:scale -- --customers 1000000            # the figure (long: tens of minutes)
//   npm run bench:scale -- --customers 20000 --step 5000 --warmup 2000  # a quick look
//   npm run bench:scale -- --customers 1000000 --service-node-options="--max-old-space-size=8192" --keep-data
//
// Before the first step it creates --warmup customers (default 10,000) the same way, unmeasured,
// so the first step is not the one that pays for the JIT compiling the request path: a cold
// first step is slower, which made "last step against the first" look better than it was.
// The warm-up customers stay in the store and count in every row (customers so far, and the
// per-customer figures); the steps then create --customers more.
// After each step (default 100k customers) it reads /healthz: RSS, heap used, data.mdb on disk.
// Per customer = (figure now - figure before loading) / customers so far. The verdict compares
// the last step's req/s with the first (aim: within 20%) and RSS per customer with 2 KB.
// A step's clock runs from its first request sent to its last response read.
// With --keep-data the service is killed with SIGKILL at the end (its log as written, for
// `npm run bench:recovery -- --data DIR`), otherwise stopped with SIGTERM and the directory removed.
import { integerFlag } from './support/flags.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { keep, processRss, removeOnExit, stop, runBench } from './support/children.js';
import { createCustomers, health, loadFailures, sandboxAuthorization, startServiceChild, type Health, type ServiceChild, showLastOutput, stopCleanly } from './support/service.js';
import { fmtInt, fmtMs, markdownTable } from './support/stats.js';
import { writeScaleCharts } from './support/svg-charts.js';

/** Aims of issue 10. */
const AIM_STEADY = 0.8;
const AIM_BYTES_PER_CUSTOMER = 2048;
const MiB = 1024 * 1024;

const { values: flags } = parseArgs({
  options: {
    customers: { type: 'string', default: '1000000' },
    step: { type: 'string', default: '100000' },
    warmup: { type: 'string', default: '10000' },
    connections: { type: 'string', default: '64' },
    'load-processes': { type: 'string', default: '1' },
    'service-node-options': { type: 'string', default: '' },
    'snapshot-every-entries': { type: 'string' },
    'keep-data': { type: 'boolean', default: false },
    'trace-gc': { type: 'boolean', default: false },
    json: { type: 'string' },
    svg: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});

if (flags.help === true) {
  console.log(`usage: node dist/bench/scale.js [options]
  --customers N                 customers to create in measured steps (default 1000000)
  --step N                      a row every N customers (default 100000)
  --warmup N                    customers created first, unmeasured, so the first step runs warm (default 10000; 0: none)
  --connections N               keep-alive connections, one request in flight each (default 64)
  --load-processes N            load generator processes sharing them (default 1)
  --service-node-options="..."  node flags for the service, e.g. "--max-old-space-size=8192"
  --snapshot-every-entries N    the service's SNAPSHOT_EVERY_ENTRIES (default: the service's own)
  --keep-data                   keep the data directory; the service is then killed with SIGKILL at the end
  --trace-gc                    run the service with --trace-gc and add its GC pauses per step to the table
  --json FILE                   also write the rows and the verdict as JSON
  --svg DIR                     also draw the steps as SVG charts in DIR (scale-throughput.svg, scale-p99.svg)`);
  process.exit(0);
}


const customers = integerFlag('customers', flags.customers);
const step = integerFlag('step', flags.step);
const warmup = integerFlag('warmup', flags.warmup, true);
const connections = integerFlag('connections', flags.connections);
const loadProcesses = integerFlag('load-processes', flags['load-processes']);
const traceGc = flags['trace-gc'];
const nodeOptions = [...flags['service-node-options'].split(' ').filter((a) => a !== ''), ...(traceGc ? ['--trace-gc'] : [])];
/**
 * A --trace-gc line: `[pid:0x..]  1234 ms: Scavenge 45.2 (60.1) -> 40.3 (61.1) MB, 2.34 / 0.00 ms ...`;
 * the first figure after MB is the pause on the main thread.
 */
const GC_LINE = /\d ms: ([A-Za-z-]+)[^,]*MB, ([\d.]+) \/ [\d.]+ ms/;
const snapshotEvery = flags['snapshot-every-entries'];
if (snapshotEvery !== undefined) integerFlag('snapshot-every-entries', snapshotEvery);

/** GC pauses the service reported (--trace-gc) during a step. */
interface GcPauses {
  /** Young generation (Scavenge, Minor Mark-Compact). */
  youngMs: number;
  /** Old generation (Mark-Compact, Mark-sweep). */
  oldMs: number;
  longestMs: number;
}

interface Row {
  customers: number;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  /** Snapshots the service reported during the step. */
  snapshots: number;
  rss: number;
  anonRss: number;
  heapUsed: number;
  storeBytes: number;
  rssPerCustomer: number;
  anonRssPerCustomer: number;
  heapPerCustomer: number;
  storePerCustomer: number;
  /** The step's wall time (ms). */
  elapsedMs: number;
  gc: GcPauses;
}

interface Figures {
  rss: number;
  /** Anonymous RSS: RSS without file-backed pages (lmdb's map of data.mdb, code). */
  anonRss: number;
  heapUsed: number;
  storeBytes: number;
}

function figures(h: Health, pid: number | undefined): Figures {
  if (h.memory === undefined || h.store === undefined) throw new Error('/healthz reports no memory or store figures: this service predates the scale benches');
  const rss = processRss(pid);
  if (rss === undefined) throw new Error(`cannot read /proc/${pid}/status for the service's anonymous RSS`);
  return { rss: h.memory.rss, anonRss: rss.anon, heapUsed: h.memory.heapUsed, storeBytes: h.store.dataFileBytes };
}

async function main(): Promise<string[]> {
  const failures: string[] = [];
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-scale-'));
  if (flags['keep-data']) keep(dataDir);
  else removeOnExit(dataDir);
  console.log(
    `# Scale: Node ${process.version}, ${cpus()[0]?.model ?? 'unknown CPU'}, ${availableParallelism()} cores; ${fmtInt(customers)} customers ` +
      `in steps of ${fmtInt(step)} after ${fmtInt(warmup)} warm-up customers (unmeasured, kept in the store); ${connections} keep-alive connections, ${loadProcesses} load-generator process(es)` +
      (nodeOptions.length > 0 ? `; service node options: ${nodeOptions.join(' ')}` : '') +
      (snapshotEvery !== undefined ? `; SNAPSHOT_EVERY_ENTRIES=${snapshotEvery}` : '') +
      '\n',
  );

  let snapshotsSeen = 0;
  let gc: GcPauses = { youngMs: 0, oldMs: 0, longestMs: 0 };
  let service: ServiceChild | undefined;
  const rows: Row[] = [];
  let baseline: Figures;
  try {
    service = await startServiceChild({
      dataDir: join(dataDir, 'db'),
      nodeOptions,
      env: snapshotEvery === undefined ? {} : { SNAPSHOT_EVERY_ENTRIES: snapshotEvery },
      onLine: (line) => {
        if (line.startsWith('snapshot at ')) snapshotsSeen++;
        const pause = traceGc ? GC_LINE.exec(line) : null;
        if (pause !== null) {
          const ms = Number(pause[2]);
          if (pause[1] === 'Scavenge' || pause[1] === 'Minor') gc.youngMs += ms;
          else gc.oldMs += ms;
          gc.longestMs = Math.max(gc.longestMs, ms);
        }
      },
    });
    const authorization = sandboxAuthorization(service.dataDir);
    baseline = figures(await health(service), service.child.pid);
    const startSeq = (await health(service)).lastSeq;
    let created = 0;
    if (warmup > 0) {
      process.stderr.write(`warm-up: creating ${fmtInt(warmup)} customers, unmeasured ...\n`);
      const r = await createCustomers(service, authorization, warmup, { connections, processes: loadProcesses }, 'warm-up');
      failures.push(...loadFailures(r));
      created = r.statuses['201'] ?? 0;
    }
    const measuredUntil = created + customers;
    const warmedUp = failures.length === 0;
    while (warmedUp && created < measuredUntil) {
      const count = Math.min(step, measuredUntil - created);
      const snapshotsBefore = snapshotsSeen;
      gc = { youngMs: 0, oldMs: 0, longestMs: 0 };
      process.stderr.write(`creating customers ${fmtInt(created + 1)} to ${fmtInt(created + count)} ...\n`);
      const r = await createCustomers(service, authorization, count, { connections, processes: loadProcesses }, `customers to ${fmtInt(created + count)}`);
      const problems = loadFailures(r);
      if (problems.length > 0) {
        failures.push(...problems);
        const exit = service.child.exitCode ?? service.child.signalCode;
        if (exit !== null) {
          // A V8 abort ends in a native stack trace: its FATAL ERROR line says why.
          const why = service.output.filter((line) => /fatal|out of memory/i.test(line)).slice(-3);
          failures.push(`the service exited (${exit}) after about ${fmtInt(created)} customers:\n    ${(why.length > 0 ? why : service.output.slice(-5)).join('\n    ')}`);
        }
        break;
      }
      created += r.statuses['201'] ?? 0;
      const h = await health(service);
      const now = figures(h, service.child.pid);
      if (h.lastSeq - startSeq !== created) failures.push(`${created} customers created (201) but ${h.lastSeq - startSeq} log entries appended`);
      rows.push({
        customers: created,
        requestsPerSecond: r.requestsPerSecond,
        p50: r.p50,
        p99: r.p99,
        snapshots: snapshotsSeen - snapshotsBefore,
        ...now,
        rssPerCustomer: (now.rss - baseline.rss) / created,
        anonRssPerCustomer: (now.anonRss - baseline.anonRss) / created,
        heapPerCustomer: (now.heapUsed - baseline.heapUsed) / created,
        storePerCustomer: (now.storeBytes - baseline.storeBytes) / created,
        elapsedMs: r.elapsedMs,
        gc,
      });
    }
    if (failures.length === 0) {
      const last = await health(service);
      if (last.durableSeq !== last.lastSeq) failures.push('the log is not fully durable after the run');
    }
  } catch (err) {
    showLastOutput(service);
    throw err;
  } finally {
    if (service !== undefined && flags['keep-data']) await stop(service.child, 'SIGKILL');
    else await stopCleanly(service, failures, 120_000);
  }

  const gcHeader = traceGc ? ['GC % of step', 'scavenge ms', 'mark-compact ms', 'longest GC ms'] : [];
  const header = ['customers', 'req/s', 'p50 ms', 'p99 ms', 'snapshots', 'RSS MiB', 'anon RSS MiB', 'heap used MiB', 'data.mdb MiB', 'RSS B/customer', 'anon RSS B/customer', 'heap B/customer', 'data.mdb B/customer', ...gcHeader];
  console.log(
    markdownTable(
      header,
      rows.map((r) => [
        fmtInt(r.customers),
        fmtInt(r.requestsPerSecond),
        fmtMs(r.p50),
        fmtMs(r.p99),
        String(r.snapshots),
        (r.rss / MiB).toFixed(0),
        (r.anonRss / MiB).toFixed(0),
        (r.heapUsed / MiB).toFixed(0),
        (r.storeBytes / MiB).toFixed(0),
        fmtInt(r.rssPerCustomer),
        fmtInt(r.anonRssPerCustomer),
        fmtInt(r.heapPerCustomer),
        fmtInt(r.storePerCustomer),
        ...(traceGc
          ? [`${(((r.gc.youngMs + r.gc.oldMs) / r.elapsedMs) * 100).toFixed(0)}%`, fmtInt(r.gc.youngMs), fmtInt(r.gc.oldMs), fmtMs(r.gc.longestMs)]
          : []),
      ]),
      header.map(() => true),
    ),
  );
  console.log('');
  console.log(`- warm-up: ${fmtInt(warmup)} customers created before the first step, not measured; they are in every row's customers and per-customer figures`);
  console.log(`- baseline before loading: RSS ${(baseline!.rss / MiB).toFixed(0)} MiB (anon ${(baseline!.anonRss / MiB).toFixed(0)}), heap used ${(baseline!.heapUsed / MiB).toFixed(0)} MiB, data.mdb ${(baseline!.storeBytes / MiB).toFixed(1)} MiB`);
  console.log(
    '- req/s, p50 and p99 are over each step; snapshots = automatic snapshots the service reported during it; heap used includes garbage not yet collected; ' +
      'anon RSS = RSS without file-backed pages (lmdb maps data.mdb: the pages it touched count in RSS)',
  );
  const first = rows[0];
  const final = rows.at(-1);
  let steady: number | undefined;
  if (first !== undefined && final !== undefined && rows.length > 1) {
    steady = final.requestsPerSecond / first.requestsPerSecond;
    console.log(`- last step against the first: ${steady.toFixed(2)}× req/s — aim within 20% (≥ ${AIM_STEADY}): ${steady >= AIM_STEADY ? 'MET' : 'NOT MET'}`);
    const rates = rows.map((r) => r.requestsPerSecond);
    console.log(`- slowest step against the fastest: ${(Math.min(...rates) / Math.max(...rates)).toFixed(2)}×`);
  }
  if (final !== undefined) {
    console.log(
      `- RSS per customer at ${fmtInt(final.customers)}: ${fmtInt(final.rssPerCustomer)} B (anon ${fmtInt(final.anonRssPerCustomer)} B, heap ${fmtInt(final.heapPerCustomer)} B) — aim < ${AIM_BYTES_PER_CUSTOMER} B: ` +
        `${final.rssPerCustomer < AIM_BYTES_PER_CUSTOMER ? 'MET' : 'NOT MET'}`,
    );
  }
  if (flags['keep-data']) console.log(`- data directory kept (service killed with SIGKILL): ${join(dataDir, 'db')}  →  npm run bench:recovery -- --data ${join(dataDir, 'db')}`);
  if (flags.svg !== undefined) for (const path of writeScaleCharts(flags.svg, rows)) console.log(`- chart: ${path}`);
  if (flags.json !== undefined) {
    writeFileSync(flags.json, JSON.stringify({ customers, step, connections, loadProcesses, nodeOptions, baseline: baseline!, rows, steady, failures }, null, 2));
  }
  return failures;
}

runBench('scale bench', main);
