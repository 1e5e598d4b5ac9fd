// Operations: the service's own metrics (GET /metrics), read every few seconds while the page
// is open: the API's request rate and p99 latency, the log's commit latency and the snapshots'
// duration, as figures and as lines over the readings kept. The figures of the last reading
// are a table too, the charts' text alternative. The reading stops once the page is left.
import { COLOURS, compact, lineChart } from '../chart.js';
import { h, show, svg } from '../dom.js';
import { histogram, parseMetrics, quantile, since, total, type Sample } from '../metrics.js';
import type { DashboardPage, PageContext } from '../page.js';

/** How often the page reads the metrics, and how many readings its lines keep (five minutes). */
export const OPERATIONS_REFRESH_MS = 5_000;
const READINGS_KEPT = 60;

/** The page's own reads and files are not the API's traffic. */
const apiRoute = (labels: Readonly<Record<string, string>>): boolean => labels.route !== '/metrics' && labels.route !== '/dashboard';

interface Reading {
  at: number;
  requests: number;
  latency: Map<number, number>;
  commit: Map<number, number>;
  snapshots: { count: number; seconds: number };
}

/** What the page shows for one reading against the one before it (undefined: nothing to say yet). */
interface Figures {
  at: number;
  requestRate?: number;
  p99Seconds?: number;
  commitP99Seconds?: number;
  snapshots: number;
  snapshotMeanSeconds?: number;
}

export const operationsPage: DashboardPage = { name: 'Operations', path: 'operations', render: operations };

async function operations({ main }: PageContext): Promise<void> {
  const area = h('div', { 'aria-live': 'off' });
  const status = h('p', { class: 'empty', role: 'status', 'aria-label': 'Last reading' });
  show(main, h('h2', {}, 'Operations'), h('p', {}, `This service's own metrics (GET /metrics), read every ${OPERATIONS_REFRESH_MS / 1000} s while this page is open.`), status, area);
  const history: Figures[] = [];
  let previous: Reading | undefined;
  const read = async (): Promise<void> => {
    const res = await fetch('/metrics', { credentials: 'omit' });
    if (res.status === 404) {
      show(status, 'The service runs with METRICS=off: there are no metrics to show.');
      return;
    }
    const reading = readingOf(parseMetrics(await res.text()), Date.now());
    history.push(figuresOf(reading, previous));
    if (history.length > READINGS_KEPT) history.shift();
    previous = reading;
    show(status, `Read at ${new Date(reading.at).toISOString().slice(11, 19)} UTC (${history.length} readings).`);
    show(area, ...view(history));
  };
  await read();
  const timer = setInterval(() => {
    // Leaving the page replaces what `main` shows: the reading stops with it.
    if (!area.isConnected) clearInterval(timer);
    else read().catch((err: unknown) => show(status, `Reading the metrics failed: ${String(err)}`));
  }, OPERATIONS_REFRESH_MS);
}

function readingOf(samples: readonly Sample[], at: number): Reading {
  return {
    at,
    requests: total(samples, 'http_requests_total', apiRoute),
    latency: histogram(samples, 'http_request_duration_seconds', apiRoute),
    commit: histogram(samples, 'wal_commit_duration_seconds'),
    snapshots: { count: total(samples, 'snapshot_duration_seconds_count'), seconds: total(samples, 'snapshot_duration_seconds_sum') },
  };
}

/** Rates and quantiles over the time between two readings; the first reading's are since the service started. */
function figuresOf(reading: Reading, previous: Reading | undefined): Figures {
  const seconds = previous === undefined ? 0 : (reading.at - previous.at) / 1000;
  const { count, seconds: snapshotSeconds } = reading.snapshots;
  return {
    at: reading.at,
    ...(seconds > 0 ? { requestRate: (reading.requests - previous!.requests) / seconds } : {}),
    ...optional('p99Seconds', quantile(since(reading.latency, previous?.latency), 0.99)),
    ...optional('commitP99Seconds', quantile(since(reading.commit, previous?.commit), 0.99)),
    snapshots: count,
    ...(count > 0 ? { snapshotMeanSeconds: snapshotSeconds / count } : {}),
  };
}

function optional<K extends string>(key: K, value: number | undefined): Partial<Record<K, number>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, number>);
}

const perSecond = (rate: number | undefined): string => (rate === undefined ? '–' : `${compact(rate)} req/s`);
const millis = (seconds: number | undefined): string => (seconds === undefined ? '–' : `${(seconds * 1000).toFixed(2)} ms`);

function view(history: readonly Figures[]): HTMLElement[] {
  const last = history.at(-1)!;
  const rows: Array<[string, string]> = [
    ['Request rate', perSecond(last.requestRate)],
    ['p99 latency', millis(last.p99Seconds)],
    ['Log commit p99', millis(last.commitP99Seconds)],
    ['Snapshots written', String(last.snapshots)],
    ['Snapshot duration (mean)', last.snapshotMeanSeconds === undefined ? '–' : `${last.snapshotMeanSeconds.toFixed(2)} s`],
  ];
  const xs = history.map((figures) => figures.at);
  const formatX = (at: number): string => new Date(at).toISOString().slice(11, 19);
  const line = (title: string, name: string, values: number[], colour: string, formatY: (v: number) => string): HTMLElement =>
    h('section', { class: 'card' }, h('figure', { class: 'chart' }, svg(lineChart({ title, xs, series: [{ name, values, colour }], formatX, formatY, width: 400, height: 220 }))));
  return [
    h('div', { class: 'figures' }, ...rows.map(([label, value]) => h('div', { class: 'card figure' }, h('p', { class: 'figure-label' }, label), h('p', { class: 'figure-value' }, value)))),
    h(
      'div',
      { class: 'cards' },
      line('API requests per second', 'Requests', history.map((f) => f.requestRate ?? 0), COLOURS.primary, (v) => compact(v)),
      line('API p99 latency (ms)', 'p99', history.map((f) => (f.p99Seconds ?? 0) * 1000), COLOURS.warning, (v) => compact(v)),
      line('Log commit p99 (ms)', 'Commit p99', history.map((f) => (f.commitP99Seconds ?? 0) * 1000), COLOURS.secondary, (v) => compact(v)),
    ),
    h('table', { 'aria-label': 'Service metrics', class: 'visually-hidden' }, h('tbody', {}, ...rows.map(([label, value]) => h('tr', {}, h('th', { scope: 'row' }, label), h('td', {}, value))))),
  ];
}
