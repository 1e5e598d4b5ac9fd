// The chart module the dashboard and the benches share (src/dashboard/chart.ts), the metrics
// reading of the Operations page (src/dashboard/metrics.ts) and the benches' SVG files
// (bench/support/svg-charts.ts), without a browser: bars as tall as their values on a round
// axis, text escaped, no inline style anywhere (the dashboard's CSP), a quantile as
// Prometheus interpolates it, and a bench's chart written as a file naming its figures.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { barChart, lineChart, meterChart, niceCeiling, svgText, type SvgNode } from '../src/dashboard/chart.js';
import { histogram, parseMetrics, quantile, since } from '../src/dashboard/metrics.js';
import { writeHttpCharts } from '../bench/support/svg-charts.js';
import type { ScenarioResult } from '../bench/support/load.js';

/** Every node of a tree, depth first. */
function nodes(tree: SvgNode): SvgNode[] {
  return [tree, ...tree.children.flatMap((child) => (typeof child === 'string' ? [] : nodes(child)))];
}

/** The bars of a bar chart: the rects with a title, by that title. */
function bars(tree: SvgNode): Map<string, SvgNode> {
  return new Map(nodes(tree).filter((n) => n.tag === 'rect' && typeof n.children[0] === 'object').map((n) => [(n.children[0] as SvgNode).children[0] as string, n]));
}

describe('charts and metrics, without a browser', () => {
  it('draws bars as tall as their values under a round axis top, one title per bar naming its series, bucket and value', () => {
    assert.deepEqual([0, 1, 7, 10, 11, 240, 251, 4_288].map(niceCeiling), [1, 1, 10, 10, 20, 250, 500, 5_000]);
    const chart = barChart({ title: 'USD', categories: ['09:00', '10:00'], series: [{ name: 'Sent', values: [125, 250], colour: '#000' }], format: (v) => `${v} USD` });
    const drawn = bars(chart);
    const low = drawn.get('Sent, 09:00: 125 USD')!;
    const high = drawn.get('Sent, 10:00: 250 USD')!;
    assert.equal(Number(high.attrs.height), 2 * Number(low.attrs.height), 'twice the value, twice the height');
    assert.equal(Number(high.attrs.y), 36, 'the top of the axis (250) is the top of the plot');
  });

  it('escapes every text and attribute, and colours by presentation attributes, never style=', () => {
    const title = '<script>alert(1)</script> & "quotes"';
    const charts = [
      barChart({ title, categories: [title], series: [{ name: title, values: [1], colour: '#000' }], format: String }),
      lineChart({ title, xs: [1, 2], series: [{ name: title, values: [1, 2], colour: '#000' }], formatX: String, formatY: String, bands: [{ from: 1, to: 2, name: title }] }),
      meterChart(title, [{ label: title, value: 3, colour: '#000' }]),
    ];
    for (const chart of charts) {
      const text = svgText(chart);
      assert.ok(!text.includes('<script>') && !text.includes('"quotes"'), text);
      assert.ok(text.includes('&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;'));
      assert.ok(nodes(chart).every((n) => !('style' in n.attrs)), 'no inline style');
    }
  });

  it("reads GET /metrics' text and takes a quantile between two readings as histogram_quantile does", () => {
    const reading = (fast: number, slow: number): string =>
      [
        '# HELP http_request_duration_seconds Time',
        '# TYPE http_request_duration_seconds histogram',
        `http_request_duration_seconds_bucket{le="0.001",route="GET /customers"} ${fast}`,
        `http_request_duration_seconds_bucket{le="0.01",route="GET /customers"} ${fast + slow}`,
        `http_request_duration_seconds_bucket{le="+Inf",route="GET /customers"} ${fast + slow}`,
        `http_request_duration_seconds_bucket{le="0.001",route="/metrics"} 1000`,
        `http_request_duration_seconds_bucket{le="+Inf",route="/metrics"} 1000`,
      ].join('\n');
    const keep = (labels: Readonly<Record<string, string>>): boolean => labels.route !== '/metrics';
    const before = histogram(parseMetrics(reading(10, 0)), 'http_request_duration_seconds', keep);
    const after = histogram(parseMetrics(reading(100, 10)), 'http_request_duration_seconds', keep);
    // Between the readings: 90 under 1 ms and 10 between 1 and 10 ms. The 99th of 100 is the
    // 9th of the 10 in the second bucket: 1 ms + 9/10 of its 9 ms.
    assert.ok(Math.abs(quantile(since(after, before), 0.99)! - 0.0091) < 1e-12);
    assert.ok(Math.abs(quantile(since(after, before), 0.5)! - 0.001 * (50 / 90)) < 1e-12);
    assert.equal(quantile(since(before, before), 0.99), undefined, 'nothing observed, nothing to say');
  });

  it("a bench's --svg writes the pairs against the bare reply, each bar titled with its figure", () => {
    const run = (requestsPerSecond: number, p50: number, p99: number): ScenarioResult => ({ requestsPerSecond, p50, p99 }) as ScenarioResult;
    const dir = mkdtempSync(join(tmpdir(), 'charts-svg-'));
    try {
      const results = new Map([
        ['bare-post', [run(20_000, 2, 8), run(24_000, 2, 9)]],
        ['service-post', [run(3_000, 18, 80), run(3_300, 17, 70)]],
      ]);
      const [throughput, latency] = writeHttpCharts(dir, results);
      const text = readFileSync(throughput!, 'utf8');
      assert.match(text, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
      for (const title of ['Bare reply, post #1: 20000 req/s', 'Service, post #1: 3000 req/s', 'Bare reply, post #2: 24000 req/s', 'Service, post #2: 3300 req/s']) assert.ok(text.includes(`<title>${title}</title>`), title);
      assert.ok(readFileSync(latency!, 'utf8').includes('<title>p99, service-post: 75 ms</title>'), 'the median p99 of the runs');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
