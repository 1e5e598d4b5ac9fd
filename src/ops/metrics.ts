// Prometheus metrics (GET /metrics): the HTTP front, the write-ahead log, snapshots,
// recovery, webhook delivery, effects and timers, plus prom-client's process metrics.
// Counters and histograms are fed by observers called once per commit group, snapshot or
// delivery try; backlogs are gauges read only when scraped. Requests, the one per-request
// feed, are tallied in plain numbers and handed to prom-client when scraped: its labelled
// inc and observe cost 0.8 µs a request (hashing the labels each call), 1.3% of a POST's
// server CPU, against 3% allowed for everything seeing the service costs.
// httpObserverOf joins the metrics and the access log into the front's one observer.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EngineObserver, Report } from '../engine/report.js';
import type { DeliveryObserver, DeliveryOutcome } from '../webhooks/delivery.js';
import type { HttpObserver } from '../http/server.js';

/** The backlogs, read at scrape time from the running services (absent while recovering). */
export interface Backlogs {
  webhookEventsPending(): number;
  effectsPending(): number;
  timersPending(): number;
}

/**
 * Process metrics belong to the process, not to one service: collected once, into their own
 * registry (tests open many services in one process; each would add an event-loop monitor).
 */
let processRegistry: Registry | undefined;
function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** Seconds, from 100 µs (a GET from memory) to 10 s (a webhook endpoint's timeout). */
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const HTTP_SECONDS = 'http_request_duration_seconds';
const HTTP_SECONDS_HELP = 'Time from a request head to its answer, by route';

/** Answers of one method, route and status. */
interface StatusTally {
  labels: { method: string; route: string; status: string };
  count: number;
}

/** One route's latencies: per bucket (not cumulative; the last is past every bound), their sum and count. */
interface LatencyTally {
  perBucket: Float64Array;
  sum: number;
  count: number;
}

/** The requests answered, in plain numbers: two map reads and a few additions per request. */
class RequestTally {
  readonly statuses = new Map<string, StatusTally>();
  readonly latencies = new Map<string, LatencyTally>();

  add(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let tally = this.statuses.get(key);
    if (tally === undefined) {
      tally = { labels: { method, route, status: String(status) }, count: 0 };
      this.statuses.set(key, tally);
    }
    tally.count++;
    let latency = this.latencies.get(route);
    if (latency === undefined) {
      latency = { perBucket: new Float64Array(LATENCY_BUCKETS.length + 1), sum: 0, count: 0 };
      this.latencies.set(route, latency);
    }
    let bucket = 0;
    while (bucket < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[bucket]!) bucket++;
    latency.perBucket[bucket]!++;
    latency.sum += seconds;
    latency.count++;
  }
}

/** http_requests_total from the tally: prom-client's counter, its values read when scraped. */
class TalliedRequests extends Counter<'method' | 'route' | 'status'> {
  constructor(
    registry: Registry,
    private readonly tally: RequestTally,
  ) {
    super({ name: 'http_requests_total', help: 'HTTP requests answered', labelNames: ['method', 'route', 'status'], registers: [registry] });
  }

  override async get(): ReturnType<Counter<'method' | 'route' | 'status'>['get']> {
    const base = await super.get();
    return { ...base, values: [...this.tally.statuses.values()].map(({ labels, count }) => ({ labels, value: count })) };
  }
}

/**
 * http_request_duration_seconds from the tally: prom-client's histogram, its buckets read
 * when scraped. The registry renders a histogram from its `getForPromString` (`get` only
 * reshapes that for JSON), so that is what answers from the tally here.
 */
class TalliedLatencies extends Histogram<'route'> {
  constructor(
    registry: Registry,
    private readonly tally: RequestTally,
  ) {
    super({ name: HTTP_SECONDS, help: HTTP_SECONDS_HELP, labelNames: ['route'], buckets: LATENCY_BUCKETS, registers: [registry] });
  }

  async getForPromString(): Promise<{ name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: ExportedSample[] }> {
    const values: ExportedSample[] = [];
    for (const [route, { perBucket, sum, count }] of this.tally.latencies) {
      let cumulative = 0;
      LATENCY_BUCKETS.forEach((le, i) => {
        cumulative += perBucket[i]!;
        values.push({ metricName: `${HTTP_SECONDS}_bucket`, labels: { le, route }, value: cumulative });
      });
      values.push({ metricName: `${HTTP_SECONDS}_bucket`, labels: { le: '+Inf', route }, value: count });
      values.push({ metricName: `${HTTP_SECONDS}_sum`, labels: { route }, value: sum });
      values.push({ metricName: `${HTTP_SECONDS}_count`, labels: { route }, value: count });
    }
    return { name: HTTP_SECONDS, help: HTTP_SECONDS_HELP, type: 'histogram', aggregator: 'sum', values };
  }
}

/** One line of a histogram as the registry renders it. */
interface ExportedSample {
  metricName: string;
  labels: { route: string; le?: string | number };
  value: number;
}

export class ServiceMetrics implements EngineObserver, DeliveryObserver, HttpObserver {
  readonly #registry = new Registry();
  readonly #requests = new RequestTally();
  readonly #walEntries = new Counter({ name: 'wal_entries_total', help: 'Log entries made durable', registers: [this.#registry] });
  readonly #walBytes = new Counter({ name: 'wal_bytes_total', help: 'Bytes of log values made durable', registers: [this.#registry] });
  readonly #walCommit = new Histogram({
    name: 'wal_commit_duration_seconds',
    help: "Time from a commit group's first append to durable",
    buckets: LATENCY_BUCKETS,
    registers: [this.#registry],
  });
  readonly #snapshotSeconds = new Histogram({
    name: 'snapshot_duration_seconds',
    help: 'Time to write a snapshot and trim the log behind it',
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [this.#registry],
  });
  readonly #recovered = new Counter({ name: 'recovery_entries_total', help: 'Log entries replayed by recovery', registers: [this.#registry] });
  readonly #deliveries = new Counter({ name: 'webhook_deliveries_total', help: 'Webhook delivery tries, by outcome', labelNames: ['outcome'] as const, registers: [this.#registry] });
  readonly #dropped = new Counter({ name: 'webhook_events_dropped_total', help: 'Webhook events a full backlog FAILED as dropped', registers: [this.#registry] });
  #backlogs: Backlogs | undefined;

  constructor() {
    // Each metric joins the registry as it is made: nothing else needs to hold them.
    new TalliedRequests(this.#registry, this.#requests);
    new TalliedLatencies(this.#registry, this.#requests);
    const backlog = (name: string, help: string, read: (backlogs: Backlogs) => number): void => {
      const metrics = this;
      new Gauge({
        name,
        help,
        registers: [this.#registry],
        collect() {
          if (metrics.#backlogs !== undefined) this.set(read(metrics.#backlogs));
        },
      });
    };
    backlog('webhook_events_pending', 'Webhook events waiting for delivery', (b) => b.webhookEventsPending());
    backlog('effects_pending', 'Effects after commit not yet done', (b) => b.effectsPending());
    backlog('timers_pending', 'Durable timers not yet fired', (b) => b.timersPending());
    // Every delivery outcome is a series from the start, so a rate over it is defined at zero.
    for (const outcome of ['delivered', 'rejected', 'unanswered', 'refused'] satisfies DeliveryOutcome[]) this.#deliveries.inc({ outcome }, 0);
  }

  /** The services' backlogs, once they are open. */
  watch(backlogs: Backlogs): void {
    this.#backlogs = backlogs;
  }

  answered(method: string, route: string, status: number, seconds: number): void {
    this.#requests.add(method, route, status, seconds);
  }

  groupDurable(entries: number, bytes: number, seconds: number): void {
    this.#walEntries.inc(entries);
    this.#walBytes.inc(bytes);
    this.#walCommit.observe(seconds);
  }

  snapshotWritten(seconds: number): void {
    this.#snapshotSeconds.observe(seconds);
  }

  replayed(entries: number): void {
    if (entries > 0) this.#recovered.inc(entries);
  }

  attempted(outcome: DeliveryOutcome): void {
    this.#deliveries.inc({ outcome });
  }

  dropped(events: number): void {
    this.#dropped.inc(events);
  }

  get contentType(): string {
    return this.#registry.contentType;
  }

  /** The exposition text: this service's metrics, then the process's. */
  async render(): Promise<string> {
    const [own, process] = await Promise.all([this.#registry.metrics(), processMetrics().metrics()]);
    return `${own}\n${process}`;
  }
}

/**
 * The HTTP front's observer: metrics, and at `debug` one access-log line per request
 * (method, route pattern, status, milliseconds, reqId). Undefined when neither is on, so
 * the front does not even read the clock.
 */
export function httpObserverOf(metrics: ServiceMetrics | undefined, report: Report, accessLog: boolean): HttpObserver | undefined {
  if (!accessLog) return metrics;
  return {
    answered(method, route, status, seconds, requestId) {
      metrics?.answered(method, route, status, seconds);
      const ms = Math.round(seconds * 10_000) / 10;
      report(`${method} ${route} ${status} ${ms} ms`, { event: 'http.request', level: 'debug', reqId: requestId, method, route, status, ms });
    },
  };
}
