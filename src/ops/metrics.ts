// Prometheus metrics (GET /metrics): the HTTP front, the write-ahead log, snapshots,
// recovery, webhook delivery, effects and timers, plus prom-client's process metrics.
// Counters and histograms are fed by observers called once per request, commit group,
// snapshot or delivery try; backlogs are gauges read only when scraped.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EngineObserver } from '../engine/report.js';
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

/** The label children of one method, route and status, made once: the per-request cost is two map reads. */
interface RequestSeries {
  count: Counter.Internal;
  duration: Histogram.Internal<'route'>;
}

export class ServiceMetrics implements EngineObserver, DeliveryObserver, HttpObserver {
  readonly #registry = new Registry();
  readonly #requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered', labelNames: ['method', 'route', 'status'] as const, registers: [this.#registry] });
  readonly #requestSeconds = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from a request head to its answer, by route',
    labelNames: ['route'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.#registry],
  });
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
  readonly #series = new Map<string, RequestSeries>();
  #backlogs: Backlogs | undefined;

  constructor() {
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
    const key = `${method} ${status} ${route}`;
    let series = this.#series.get(key);
    if (series === undefined) {
      series = { count: this.#requests.labels(method, route, String(status)), duration: this.#requestSeconds.labels(route) };
      this.#series.set(key, series);
    }
    series.count.inc();
    series.duration.observe(seconds);
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

  get contentType(): string {
    return this.#registry.contentType;
  }

  /** The exposition text: this service's metrics, then the process's. */
  async render(): Promise<string> {
    const [own, process] = await Promise.all([this.#registry.metrics(), processMetrics().metrics()]);
    return `${own}\n${process}`;
  }
}
