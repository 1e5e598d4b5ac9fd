// Benchmark results as SVG charts (`--svg DIR` of bench:http, bench:scale and
// bench:snapshot-window), drawn by the dashboard's own chart module (src/dashboard/chart.ts:
// plain SVG trees, presentation attributes only) and written as files that docs/bench.md
// shows beside its tables. Each chart's title says what was measured; the data is the run's.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { barChart, COLOURS, compact, lineChart, svgText, type SvgNode } from '../../src/dashboard/chart.js';
import type { ScenarioResult } from './load.js';
import { median } from './stats.js';

function write(dir: string, name: string, chart: SvgNode): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  writeFileSync(path, `${svgText(chart)}\n`);
  return path;
}

const ms = (value: number): string => `${compact(value)} ms`;

/**
 * bench:http: each pair's requests per second, the bare reply beside the service
 * (http-throughput.svg), and the median p50 and p99 of every scenario run (http-latency.svg).
 */
export function writeHttpCharts(dir: string, results: ReadonlyMap<string, readonly ScenarioResult[]>): string[] {
  const categories: string[] = [];
  const bare: number[] = [];
  const service: number[] = [];
  for (const [name, runs] of results) {
    if (!name.startsWith('service-')) continue;
    const twin = results.get(name.replace('service-', 'bare-')) ?? [];
    runs.forEach((run, i) => {
      categories.push(`${name.slice('service-'.length)} #${i + 1}`);
      service.push(run.requestsPerSecond);
      bare.push(twin[i]?.requestsPerSecond ?? 0);
    });
  }
  const throughput = barChart({
    title: 'Requests per second, each pair run alternately: the bare uWebSockets.js reply and the service',
    heading: 'Requests per second: bare reply against the service',
    categories,
    series: [
      { name: 'Bare reply', values: bare, colour: COLOURS.muted },
      { name: 'Service', values: service, colour: COLOURS.primary },
    ],
    format: (value) => `${Math.round(value)} req/s`,
    formatAxis: compact,
    width: 720,
  });
  const names = [...results.keys()].filter((name) => (results.get(name) ?? []).length > 0);
  const percentile = (pick: (run: ScenarioResult) => number): number[] => names.map((name) => median(results.get(name)!.map(pick)));
  const latency = barChart({
    title: 'Latency percentiles per scenario (median over its runs)',
    categories: names,
    series: [
      { name: 'p50', values: percentile((run) => run.p50), colour: COLOURS.secondary },
      { name: 'p99', values: percentile((run) => run.p99), colour: COLOURS.warning },
    ],
    format: ms,
    width: 720,
  });
  return [write(dir, 'http-throughput.svg', throughput), write(dir, 'http-latency.svg', latency)];
}

/** bench:scale: each step's requests per second and p99 as the store grows (scale-throughput.svg, scale-p99.svg). */
export function writeScaleCharts(dir: string, rows: ReadonlyArray<{ customers: number; requestsPerSecond: number; p99: number }>): string[] {
  const xs = rows.map((row) => row.customers);
  const formatX = (customers: number): string => `${compact(customers)}`;
  const throughput = lineChart({
    title: 'POST /customers per second as the store grows (customers in the store at the end of each step)',
    heading: 'Creates per second as the store grows',
    xs,
    series: [{ name: 'req/s', values: rows.map((row) => row.requestsPerSecond), colour: COLOURS.primary }],
    formatX,
    formatY: compact,
    width: 720,
  });
  const p99 = lineChart({
    title: 'p99 latency of POST /customers as the store grows',
    heading: 'p99 latency as the store grows',
    xs,
    series: [{ name: 'p99', values: rows.map((row) => row.p99), colour: COLOURS.warning }],
    formatX,
    formatY: ms,
    width: 720,
  });
  return [write(dir, 'scale-throughput.svg', throughput), write(dir, 'scale-p99.svg', p99)];
}

/** bench:snapshot-window: completions per second in each bucket of the window, the snapshots' spans shaded (snapshot-window.svg). */
export function writeSnapshotWindowChart(
  dir: string,
  window: { bucketMs: number; startEpochMs: number; buckets: ReadonlyArray<{ completed: number }>; snapshots: ReadonlyArray<{ seq: number; startEpochMs: number; endEpochMs: number }> },
): string[] {
  const { bucketMs, startEpochMs, buckets, snapshots } = window;
  const chart = lineChart({
    title: `Completions per second in each ${bucketMs} ms of the window; shaded: a snapshot was being written`,
    heading: 'Throughput over the window, snapshots shaded',
    xs: buckets.map((_, i) => ((i + 1) * bucketMs) / 1000),
    series: [{ name: 'per second', values: buckets.map((bucket) => (bucket.completed * 1000) / bucketMs), colour: COLOURS.primary }],
    bands: snapshots.map((s) => ({ from: (s.startEpochMs - startEpochMs) / 1000, to: (s.endEpochMs - startEpochMs) / 1000, name: `snapshot at seq ${s.seq}` })),
    formatX: (seconds) => `${compact(seconds)} s`,
    formatY: compact,
    width: 720,
  });
  return [write(dir, 'snapshot-window.svg', chart)];
}
