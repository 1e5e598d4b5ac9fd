// Bulk import beside a payment load (issue 39): the service as a child on a fresh data
// directory, a CSV of N valid INDIVIDUAL customers (distinct platformCustomerIds) made in
// memory, and quote-and-execute payments between funded internal accounts sent at a fixed
// rate (open loop: each payment has a due time and its latency counts from it, so a stall
// of the service shows in full and is not hidden by a generator that waits). First a
// baseline window without the import, then the file is uploaded (POST /customers/bulk/csv)
// and the job polled (GET /customers/bulk/jobs/{jobId}) until it ends, the payments going
// on at the same rate meanwhile.
//
//   npm run bench:bulk                                       # 100,000 rows, 500 payments/s, 10 s baseline
//   npm run bench:bulk -- --rows 10000 --baseline 5
//   npm run bench:bulk -- --payment-rate 0                    # the import alone
//   npm run bench:bulk -- --service-node-options="--cpu-prof --cpu-prof-dir=/tmp/prof"
//
// Report: the import's wall time (the upload sent to the job's completedAt) and rows/s, the
// job's final progress, and the payments due in each window: done, their rate, p50/p99/max
// latency, and the service's CPU in cores.
import { integerFlag, positiveFlag } from './support/flags.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { processCpuMs, removeOnExit, runBench } from './support/children.js';
import type { RequestTemplate } from './support/load-protocol.js';
import { API, epochNow, health, quoteRequest, sandboxAuthorization, SENDER_FUNDS, startServiceChild, usdAccount, type ServiceChild, showLastOutput, stopCleanly } from './support/service.js';
import { fmtInt, fmtMs, LatencyHistogram, markdownTable } from './support/stats.js';

/** The columns of the CSV (docs/api.md's bulk import section; as test/bulk-client.test.ts sends them). */
const HEADER = 'umaAddress,platformCustomerId,customerType,fullName,birthDate,addressLine1,city,state,postalCode,country';
/** Longest the bench waits for the job to end. */
const JOB_CAP_MS = 30 * 60 * 1000;
/** After the load stops: how long the payments still in flight may take. */
const DRAIN_MS = 10_000;
/** Payments due but not sent because this many were already waiting for an answer (the service has stalled). */
const MAX_WAITING = 20_000;

const { values: flags } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000' },
    'payment-rate': { type: 'string', default: '500' },
    baseline: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    pairs: { type: 'string', default: '16' },
    connections: { type: 'string', default: '64' },
    poll: { type: 'string', default: '100' },
    'service-node-options': { type: 'string', default: '' },
    json: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});

if (flags.help === true) {
  console.log(`usage: node dist/bench/bulk-import.js [options]
  --rows N                      data rows in the CSV (default 100000, the import's limit)
  --payment-rate N              quote-and-execute payments sent per second, open loop (default 500; 0: none)
  --baseline S                  measured seconds of payments before the upload (default 10)
  --warmup S                    unmeasured seconds of payments before the baseline (default 2)
  --pairs N                     funded sender/receiver account pairs the payments go round (default 16)
  --connections N               keep-alive connections the payments share at most (default 64)
  --poll MS                     how often the job is read while it runs (default 100)
  --service-node-options="..."  node flags for the service (e.g. --cpu-prof --cpu-prof-dir=DIR)
  --json FILE                   also write the figures as JSON`);
  process.exit(0);
}

const rows = integerFlag('rows', flags.rows);
const paymentRate = integerFlag('payment-rate', flags['payment-rate'], true);
const baselineMs = positiveFlag('baseline', flags.baseline) * 1000;
const warmupMs = integerFlag('warmup', flags.warmup, true) * 1000;
const pairs = integerFlag('pairs', flags.pairs);
const connections = integerFlag('connections', flags.connections);
const pollMs = integerFlag('poll', flags.poll);
const nodeOptions = flags['service-node-options'].split(' ').filter((a) => a !== '');

/** The payments due within one window, and what became of them. */
class PaymentWindow {
  readonly histogram = new LatencyHistogram();
  /** From the request written out to the end of its answer: the service's share, without the wait for a due time's turn or a free connection. */
  readonly written = new LatencyHistogram();
  readonly statuses: Record<string, number> = {};
  sent = 0;
  /** Answered 2xx. */
  done = 0;
  errors = 0;
  errorSamples: string[] = [];
  /** Due but never sent: MAX_WAITING were already unanswered. */
  skipped = 0;
  startMs = 0;
  endMs = 0;
  /** The longest latency of the payments due in each second of the window, from its start. */
  readonly maxBySecond: number[] = [];
  startCpuMs: number | undefined;
  endCpuMs: number | undefined;

  constructor(readonly name: string) {}

  answered(status: number, dueMs: number, latencyMs: number, writtenMs: number): void {
    this.statuses[status] = (this.statuses[status] ?? 0) + 1;
    if (status >= 200 && status < 300) {
      this.done++;
      const second = Math.max(0, Math.floor((dueMs - this.startMs) / 1000));
      this.maxBySecond[second] = Math.max(this.maxBySecond[second] ?? 0, latencyMs);
      this.histogram.record(latencyMs);
      this.written.record(writtenMs);
    }
  }

  failed(err: Error): void {
    this.errors++;
    if (this.errorSamples.length < 5) this.errorSamples.push(err.message);
  }

  get non2xx(): number {
    return Object.entries(this.statuses).reduce((n, [s, count]) => (s.startsWith('2') ? n : n + count), 0);
  }

  get seconds(): number {
    return (this.endMs - this.startMs) / 1000;
  }

  summary(): Record<string, unknown> {
    const h = this.histogram;
    const cpu = this.startCpuMs !== undefined && this.endCpuMs !== undefined ? (this.endCpuMs - this.startCpuMs) / (this.endMs - this.startMs) : undefined;
    return {
      name: this.name,
      seconds: this.seconds,
      sent: this.sent,
      done: this.done,
      perSecond: this.seconds > 0 ? this.done / this.seconds : 0,
      p50: h.percentile(0.5),
      p99: h.percentile(0.99),
      max: h.max,
      writtenP50: this.written.percentile(0.5),
      writtenP99: this.written.percentile(0.99),
      statuses: this.statuses,
      errors: this.errors,
      errorSamples: this.errorSamples,
      skipped: this.skipped,
      serviceCores: cpu,
      maxBySecond: Array.from(this.maxBySecond, (ms) => Math.round(ms ?? 0)),
    };
  }
}

/**
 * Payments at a fixed rate: payment k is due at start + k / rate; each is sent when due
 * (a timer checks every millisecond) over a keep-alive agent, and counts to the window open
 * at its due time, its latency from that due time to the end of its answer.
 */
class PacedPayments {
  readonly #agent: Agent;
  readonly #requests: RequestTemplate[];
  readonly #bodies: Buffer[];
  #window: PaymentWindow | undefined;
  #timer: NodeJS.Timeout | undefined;
  #startMs = 0;
  #next = 0;
  #waiting = 0;
  #drained: (() => void) | undefined;

  constructor(
    readonly port: number,
    requests: RequestTemplate[],
    readonly rate: number,
    readonly serverPid: number | undefined,
  ) {
    this.#agent = new Agent({ keepAlive: true, maxSockets: connections });
    this.#requests = requests;
    this.#bodies = requests.map((r) => Buffer.from(r.body ?? ''));
  }

  start(): void {
    if (this.rate === 0) return;
    this.#startMs = performance.now();
    this.#timer = setInterval(() => this.#sendDue(), 1);
  }

  /** Payments due from now on count to `window` (undefined: to none). */
  open(window: PaymentWindow | undefined): void {
    const now = performance.now();
    const cpu = processCpuMs(this.serverPid);
    if (this.#window !== undefined) {
      this.#window.endMs = now;
      this.#window.endCpuMs = cpu;
    }
    if (window !== undefined) {
      window.startMs = now;
      window.startCpuMs = cpu;
    }
    this.#window = window;
  }

  /** Stops sending; resolves when every payment sent is answered, or after DRAIN_MS with how many were not. */
  async stop(): Promise<number> {
    this.open(undefined);
    if (this.#timer !== undefined) clearInterval(this.#timer);
    if (this.#waiting > 0) {
      await Promise.race([new Promise<void>((resolve) => (this.#drained = resolve)), new Promise((resolve) => setTimeout(resolve, DRAIN_MS))]);
    }
    this.#agent.destroy();
    return this.#waiting;
  }

  #sendDue(): void {
    const now = performance.now();
    for (;;) {
      const dueMs = this.#startMs + (this.#next * 1000) / this.rate;
      if (dueMs > now) return;
      const window = this.#window;
      const template = this.#requests[this.#next % this.#requests.length]!;
      const body = this.#bodies[this.#next % this.#bodies.length]!;
      this.#next++;
      if (this.#waiting >= MAX_WAITING) {
        if (window !== undefined) window.skipped++;
        continue;
      }
      if (window !== undefined) window.sent++;
      this.#send(template, body, dueMs, window);
    }
  }

  #send(template: RequestTemplate, body: Buffer, dueMs: number, window: PaymentWindow | undefined): void {
    this.#waiting++;
    const settle = (): void => {
      this.#waiting--;
      if (this.#waiting === 0) this.#drained?.();
    };
    const req = request(
      { host: '127.0.0.1', port: this.port, method: template.method, path: template.path, headers: { ...template.headers, 'Content-Length': String(body.length) }, agent: this.#agent },
      (res) => {
        res.resume();
        res.on('end', () => {
          const now = performance.now();
          window?.answered(res.statusCode ?? 0, dueMs, now - dueMs, now - writtenAt);
          settle();
        });
        res.on('error', (err) => {
          window?.failed(err);
          settle();
        });
      },
    );
    let writtenAt = dueMs;
    req.on('finish', () => (writtenAt = performance.now()));
    req.on('error', (err) => {
      window?.failed(err);
      settle();
    });
    req.end(body);
  }
}

/** A CSV of `count` valid INDIVIDUAL customers, platformCustomerIds bulk-bench-1 ... bulk-bench-N. */
function makeCsv(count: number): string {
  const lines = [HEADER];
  for (let i = 1; i <= count; i++) lines.push(`,bulk-bench-${i},INDIVIDUAL,Person ${i},1990-01-15,${i} Main St,Austin,TX,78701,US`);
  return lines.join('\n') + '\n';
}

interface JobView {
  id: string;
  status: string;
  progress: { total: number; processed: number; successful: number; failed: number };
  errors: unknown[];
  completedAt?: string;
  failureReason?: string;
}

interface ImportRun {
  csvBytes: number;
  /** The upload's 202, from sending it (ms). */
  acceptedMs: number;
  /** The upload sent to the job's completedAt (ms since the epoch both), or to the poll that saw it ended when completedAt is absent. */
  wallMs: number;
  /** The upload sent to the poll that saw the job ended. */
  observedMs: number;
  job: JobView;
  /** [ms since the upload was sent, rows processed] at each poll. */
  progress: Array<[number, number]>;
}

async function importFile(service: ServiceChild, authorization: string, csv: string): Promise<ImportRun> {
  const form = new FormData();
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'customers.csv');
  const sentEpoch = epochNow();
  const sent = performance.now();
  const res = await fetch(`http://127.0.0.1:${service.port}${API}/customers/bulk/csv`, { method: 'POST', body: form, headers: { Authorization: authorization } });
  const answer = await res.text();
  const acceptedMs = performance.now() - sent;
  if (res.status !== 202) throw new Error(`POST /customers/bulk/csv answered ${res.status}: ${answer.slice(0, 500)}`);
  const { jobId } = JSON.parse(answer) as { jobId: string };
  process.stderr.write(`job ${jobId} accepted in ${fmtInt(acceptedMs)} ms; polling every ${pollMs} ms ...\n`);
  const progress: Array<[number, number]> = [];
  let lastReport = 0;
  for (;;) {
    const r = await fetch(`http://127.0.0.1:${service.port}${API}/customers/bulk/jobs/${encodeURIComponent(jobId)}`, { headers: { Authorization: authorization } });
    const text = await r.text();
    if (r.status !== 200) throw new Error(`GET /customers/bulk/jobs/${jobId} answered ${r.status}: ${text.slice(0, 500)}`);
    const job = JSON.parse(text) as JobView;
    const at = performance.now() - sent;
    progress.push([Math.round(at), job.progress.processed]);
    if (job.status === 'COMPLETED' || job.status === 'FAILED') {
      const completed = job.completedAt === undefined ? NaN : Date.parse(job.completedAt) - sentEpoch;
      // The service's clock and ours are the machine's; completedAt is exact where the poll is late by up to --poll.
      const wallMs = Number.isFinite(completed) && completed > 0 && completed <= at + 1000 ? completed : at;
      return { csvBytes: Buffer.byteLength(csv), acceptedMs, wallMs, observedMs: at, job, progress };
    }
    if (at > JOB_CAP_MS) throw new Error(`job ${jobId} did not end within ${JOB_CAP_MS / 60_000} min (progress ${JSON.stringify(job.progress)})`);
    if (at - lastReport >= 5000) {
      lastReport = at;
      process.stderr.write(`  ${(at / 1000).toFixed(0)} s: ${fmtInt(job.progress.processed)} of ${fmtInt(job.progress.total)} rows\n`);
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

async function paymentRequests(service: ServiceChild, authorization: string): Promise<RequestTemplate[]> {
  if (paymentRate === 0) return [];
  process.stderr.write(`setting up ${pairs} funded sender/receiver pairs ...\n`);
  const requests: RequestTemplate[] = [];
  for (let i = 0; i < pairs; i++) {
    requests.push(quoteRequest(authorization, await usdAccount(service.port, authorization, SENDER_FUNDS), await usdAccount(service.port, authorization, 0)));
  }
  return requests;
}

function windowFailures(w: PaymentWindow): string[] {
  const out: string[] = [];
  if (w.non2xx > 0) out.push(`${w.name}: ${w.non2xx} non-2xx payments (${Object.entries(w.statuses).filter(([s]) => !s.startsWith('2')).map(([s, n]) => `${s}×${n}`).join(', ')})`);
  if (w.errors > 0) out.push(`${w.name}: ${w.errors} connection errors (${w.errorSamples.join('; ')})`);
  if (w.skipped > 0) out.push(`${w.name}: ${w.skipped} payments not sent (${MAX_WAITING} already unanswered)`);
  return out;
}

function printReport(run: ImportRun, windows: readonly PaymentWindow[]): void {
  const p = run.job.progress;
  console.log(
    markdownTable(
      ['measure', 'value'],
      [
        ['rows', fmtInt(rows)],
        ['CSV', `${(run.csvBytes / (1024 * 1024)).toFixed(1)} MiB`],
        ['upload answered (202)', `${fmtInt(run.acceptedMs)} ms`],
        ['import wall time (upload sent to completedAt)', `${(run.wallMs / 1000).toFixed(2)} s`],
        ['rows/s', fmtInt(rows / (run.wallMs / 1000))],
        ['job status', run.job.status + (run.job.failureReason === undefined ? '' : ` (${run.job.failureReason})`)],
        ['final progress (total / processed / successful / failed)', `${fmtInt(p.total)} / ${fmtInt(p.processed)} / ${fmtInt(p.successful)} / ${fmtInt(p.failed)}`],
        ['row errors', fmtInt(run.job.errors.length)],
      ],
      [false, true],
    ),
  );
  console.log('');
  if (paymentRate === 0) return;
  console.log(
    markdownTable(
      ['payments due', 'window s', 'sent', 'done (2xx)', 'done/s', 'p50 ms', 'p99 ms', 'max ms', 'written to answer p50 / p99 ms', 'not 2xx / errors', 'service CPU (cores)'],
      windows.map((w) => {
        const s = w.summary();
        const cores = s.serviceCores;
        return [
          w.name,
          w.seconds.toFixed(1),
          fmtInt(w.sent),
          fmtInt(w.done),
          fmtInt(w.seconds > 0 ? w.done / w.seconds : 0),
          fmtMs(w.histogram.percentile(0.5)),
          fmtMs(w.histogram.percentile(0.99)),
          fmtMs(w.histogram.max),
          `${fmtMs(w.written.percentile(0.5))} / ${fmtMs(w.written.percentile(0.99))}`,
          `${fmtInt(w.non2xx)} / ${fmtInt(w.errors + w.skipped)}`,
          typeof cores === 'number' ? cores.toFixed(2) : 'n/a',
        ];
      }),
      [false, true, true, true, true, true, true, true, true, true, true],
    ),
  );
  console.log('');
  for (const w of windows) console.log(`- ${w.name}, the longest payment due in each second (ms): ${Array.from(w.maxBySecond, (ms) => fmtInt(ms ?? 0)).join(' ')}`);
  console.log(`- payments: POST /quotes with immediatelyExecute, ${fmtInt(paymentRate)}/s due at fixed times over ${pairs} pairs; latency counts from a payment's due time to the end of its answer`);
  console.log('- the import window runs from the upload sent to the poll that saw the job end; the import wall time ends at the job\'s own completedAt');
  console.log(`- the job\'s rows processed by seconds since the upload was sent: ${run.progress.filter((_, i, all) => i === all.length - 1 || Math.floor(all[i + 1]![0] / 1000) > Math.floor(all[i]![0] / 1000)).map(([ms, n]) => `${(ms / 1000).toFixed(1)} s ${fmtInt(n)}`).join(', ')}`);
}

async function main(): Promise<string[]> {
  const failures: string[] = [];
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-bulk-import-'));
  removeOnExit(dataDir);
  console.log(
    `# Bulk import: Node ${process.version}, ${cpus()[0]?.model ?? 'unknown CPU'}, ${availableParallelism()} cores; ` +
      `${fmtInt(rows)} rows; payments ${paymentRate === 0 ? 'none' : `${fmtInt(paymentRate)}/s over ${pairs} pairs, ${warmupMs / 1000} s warmup + ${baselineMs / 1000} s baseline`}` +
      (nodeOptions.length > 0 ? `; service node options: ${nodeOptions.join(' ')}` : '') +
      '\n',
  );
  const csv = makeCsv(rows);
  let service: ServiceChild | undefined;
  try {
    service = await startServiceChild({ dataDir: join(dataDir, 'db'), nodeOptions });
    const authorization = sandboxAuthorization(service.dataDir);
    const payments = new PacedPayments(service.port, await paymentRequests(service, authorization), paymentRate, service.child.pid);
    const baseline = new PaymentWindow('without the import (baseline)');
    const during = new PaymentWindow('while the import runs');
    payments.start();
    if (paymentRate > 0) {
      process.stderr.write(`payments at ${paymentRate}/s: ${warmupMs / 1000} s warmup, ${baselineMs / 1000} s baseline ...\n`);
      await new Promise((resolve) => setTimeout(resolve, warmupMs));
      payments.open(baseline);
      await new Promise((resolve) => setTimeout(resolve, baselineMs));
    }
    payments.open(during);
    process.stderr.write(`uploading ${fmtInt(rows)} rows ...\n`);
    const run = await importFile(service, authorization, csv);
    const unanswered = await payments.stop();
    if (unanswered > 0) failures.push(`${unanswered} payments still unanswered ${DRAIN_MS} ms after the load stopped`);
    const windows = [baseline, during];
    if (paymentRate > 0) for (const w of windows) failures.push(...windowFailures(w));
    const p = run.job.progress;
    if (run.job.status !== 'COMPLETED' || p.processed !== rows || p.successful !== rows || p.failed !== 0) failures.push(`the job ended ${run.job.status} with progress ${JSON.stringify(p)}, not every row imported`);
    const h = await health(service);
    if (h.durableSeq !== h.lastSeq) failures.push('the log is not fully durable after the run');
    printReport(run, windows);
    if (flags.json !== undefined) {
      writeFileSync(
        flags.json,
        JSON.stringify({ rows, paymentRate, pairs, baselineMs, import: { ...run, rowsPerSecond: rows / (run.wallMs / 1000) }, payments: paymentRate === 0 ? [] : windows.map((w) => w.summary()), failures }, null, 2),
      );
    }
  } catch (err) {
    showLastOutput(service);
    throw err;
  } finally {
    await stopCleanly(service, failures, 120_000);
  }
  return failures;
}

runBench('bulk-import bench', main);
