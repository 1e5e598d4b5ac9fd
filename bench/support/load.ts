// Runs one load scenario: forks the load-generator processes (bench/support/load-worker),
// splits the connections among them, reads the server's CPU time at the window's start
// and end, and merges what the generators measured.
import { fileURLToPath } from 'node:url';
import { forkTracked, machineBusyMs, processCpuMs } from './children.js';
import { LatencyHistogram } from './stats.js';
import type { LoadResult, LoadSpec, RequestTemplate, WorkerMessage } from './load-protocol.js';

const WORKER = fileURLToPath(new URL('./load-worker.js', import.meta.url));

export interface ScenarioResult {
  name: string;
  requestsPerSecond: number;
  completed: number;
  /** The window (ms): the spec's durationMs, or less when its `limit` ended it early. */
  elapsedMs: number;
  /** When the first generator's window started (ms since the epoch). */
  windowStartEpochMs: number;
  /** Completions per spec.bucketMs of the window, summed over the generators; empty without bucketMs. */
  buckets: number[];
  p50: number;
  p99: number;
  max: number;
  mean: number;
  statuses: Record<string, number>;
  non2xx: number;
  errors: number;
  errorSamples: string[];
  unanswered: number;
  /** Server CPU during the window, as a share of one core (1 = 100%). */
  serverCores: number | undefined;
  /** The server's main (JavaScript) thread alone, as a share of one core. */
  serverMainCores: number | undefined;
  /** Server CPU time per completed request (µs). */
  serverCpuUsPerRequest: number | undefined;
  /** CPU time (ms) each of the options' `watch` processes used during the window, in their order. */
  watchedCpuMs: Array<number | undefined>;
  /** Load generators' CPU during the window, as a share of one core, summed. */
  generatorCores: number;
  /** The whole machine's busy CPU during the window (cores): server + generators + kernel + anything else. */
  machineCores: number | undefined;
  ids: string[];
}

/** Where a generator sends: a port, and the requests it sends there (else the spec's). */
export interface LoadTarget {
  port: number;
  requests?: RequestTemplate[];
}

export interface ScenarioOptions {
  name: string;
  /** Load generator processes; connections are split among them. */
  processes: number;
  serverPid: number | undefined;
  /**
   * Spread the generators over these targets instead of spec.port (generator i sends to
   * targets[i % length], at least one generator each), each with its own requests when given.
   */
  targets?: ReadonlyArray<LoadTarget>;
  /** More processes whose CPU during the window is read (a cluster's other nodes, its NATS servers). */
  watch?: ReadonlyArray<number | undefined>;
  spec: Omit<LoadSpec, 'connections' | 'offset'> & { connections: number };
}

function runWorker(spec: LoadSpec, onWindow?: (edge: 'start' | 'end') => void): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = forkTracked(WORKER, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' });
    let settled = false;
    child.on('message', (message: WorkerMessage) => {
      if (message.type === 'window-start') onWindow?.('start');
      else if (message.type === 'window-end') onWindow?.('end');
      else if (message.type === 'result') {
        settled = true;
        resolve(message.result);
      } else if (message.type === 'error') {
        settled = true;
        reject(new Error(`load generator failed: ${message.message}`));
      }
    });
    // 'close' comes after the IPC channel is drained, so a result sent just before exiting is seen.
    child.once('close', (code, signal) => {
      if (!settled) reject(new Error(`load generator exited (${code ?? signal}) without a result`));
    });
    child.send({ type: 'run', spec });
  });
}

export async function runScenario(opts: ScenarioOptions): Promise<ScenarioResult> {
  const targets = opts.targets ?? [{ port: opts.spec.port }];
  const processes = Math.max(1, targets.length, Math.min(opts.processes, opts.spec.connections));
  const watch = opts.watch ?? [];
  let watchStart: Array<number | undefined> = [];
  let watchEnd: Array<number | undefined> = [];
  let cpuStart: number | undefined;
  let cpuEnd: number | undefined;
  let mainStart: number | undefined;
  let mainEnd: number | undefined;
  let machineStart: number | undefined;
  let machineEnd: number | undefined;
  let wallStart = 0;
  let wallEnd = 0;
  const results = await Promise.all(
    Array.from({ length: processes }, (_, i) => {
      const connections = Math.floor(opts.spec.connections / processes) + (i < opts.spec.connections % processes ? 1 : 0);
      const target = targets[i % targets.length]!;
      const requests = target.requests ?? opts.spec.requests;
      const offset = Math.floor((i * requests.length) / processes);
      const limit = opts.spec.limit === undefined ? {} : { limit: Math.floor(opts.spec.limit / processes) + (i < opts.spec.limit % processes ? 1 : 0) };
      const spec: LoadSpec = { ...opts.spec, ...limit, port: target.port, requests, connections, offset, collectIds: Math.ceil(opts.spec.collectIds / processes) };
      // The first generator's window marks when the server's CPU is read.
      return runWorker(
        spec,
        i === 0
          ? (edge) => {
              if (edge === 'start') {
                cpuStart = processCpuMs(opts.serverPid);
                mainStart = processCpuMs(opts.serverPid, opts.serverPid);
                machineStart = machineBusyMs();
                watchStart = watch.map((pid) => processCpuMs(pid));
                wallStart = performance.now();
              } else {
                cpuEnd = processCpuMs(opts.serverPid);
                mainEnd = processCpuMs(opts.serverPid, opts.serverPid);
                machineEnd = machineBusyMs();
                watchEnd = watch.map((pid) => processCpuMs(pid));
                wallEnd = performance.now();
              }
            }
          : undefined,
      );
    }),
  );
  const histogram = new LatencyHistogram();
  const statuses: Record<string, number> = {};
  let completed = 0;
  let non2xx = 0;
  let errors = 0;
  let unanswered = 0;
  let generatorCores = 0;
  const errorSamples: string[] = [];
  const ids: string[] = [];
  const buckets: number[] = [];
  let elapsedMs = 0;
  for (const r of results) {
    elapsedMs = Math.max(elapsedMs, r.elapsedMs);
    r.buckets.forEach((n, i) => {
      buckets[i] = (buckets[i] ?? 0) + n;
    });
    histogram.merge(r.histogram);
    completed += r.completed;
    non2xx += r.non2xx;
    errors += r.errors;
    unanswered += r.unanswered;
    generatorCores += r.cpuWindowMs > 0 ? r.cpuMs / r.cpuWindowMs : 0;
    for (const [status, n] of Object.entries(r.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
    for (const e of r.errorSamples) if (errorSamples.length < 5) errorSamples.push(e);
    for (const id of r.ids) ids.push(id);
  }
  const serverCpuMs = cpuStart !== undefined && cpuEnd !== undefined ? cpuEnd - cpuStart : undefined;
  const windowMs = wallEnd - wallStart;
  return {
    name: opts.name,
    requestsPerSecond: elapsedMs > 0 ? completed / (elapsedMs / 1000) : 0,
    completed,
    elapsedMs,
    windowStartEpochMs: results[0]?.windowStartEpochMs ?? 0,
    buckets,
    p50: histogram.percentile(0.5),
    p99: histogram.percentile(0.99),
    max: histogram.max,
    mean: histogram.mean,
    statuses,
    non2xx,
    errors,
    errorSamples,
    unanswered,
    serverCores: serverCpuMs !== undefined && windowMs > 0 ? serverCpuMs / windowMs : undefined,
    serverMainCores: mainStart !== undefined && mainEnd !== undefined && windowMs > 0 ? (mainEnd - mainStart) / windowMs : undefined,
    serverCpuUsPerRequest: serverCpuMs !== undefined && completed > 0 ? (serverCpuMs * 1000 * (elapsedMs / windowMs)) / completed : undefined,
    watchedCpuMs: watch.map((_, i) => {
      const [start, end] = [watchStart[i], watchEnd[i]];
      return start === undefined || end === undefined ? undefined : end - start;
    }),
    generatorCores,
    machineCores: machineStart !== undefined && machineEnd !== undefined && windowMs > 0 ? (machineEnd - machineStart) / windowMs : undefined,
    ids,
  };
}
