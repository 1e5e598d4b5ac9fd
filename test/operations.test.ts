// Running it as an operator does: request ids on every answer, Prometheus metrics that move
// with requests and log entries, JSON logs with the request's id, liveness, and readiness
// that says "recovering" while a long log replays.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { basicHeader, rawExchange, serviceForSuite, startTestService } from './support/service.js';
import { assertError } from './support/assertions.js';
import { killAll, launchService, spawnService } from './support/service-process.js';
import { openServices } from '../src/app.js';
import { createCustomer } from '../actors/commands/customers.js';
import type { PlatformCredentials } from '../src/platforms.js';
import { envIdOf } from '../actors/platform.js';
import { ServiceMetrics } from '../src/ops/metrics.js';

const SUITE_TIMEOUT_MS = 180_000;
/** A child's environment with snapshots held off, as the log it recovers was written. */
const NO_SNAPSHOTS = { SNAPSHOT_EVERY_ENTRIES: '10000000' };

/** One sample of a metric in Prometheus' text format (0 when the series is absent). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labelText = line.startsWith(`${name}{`) ? line.slice(name.length + 1, line.lastIndexOf('}')) : '';
    const present = labelText === '' ? [] : labelText.split(',');
    if (wanted.every((label) => present.includes(label))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

describe('request ids', { timeout: SUITE_TIMEOUT_MS }, () => {
  const svc = serviceForSuite();

  it('every answer carries X-Request-Id: a new one per request, the same one in an error body', async () => {
    const ok = await svc.request('GET', '/customers');
    const other = await svc.request('GET', '/customers');
    const okId = ok.headers.get('x-request-id');
    assert.ok(okId !== null && okId.length > 0);
    assert.notEqual(other.headers.get('x-request-id'), okId, 'each request gets its own id');
    const bad = await svc.request('POST', '/customers', { body: { customerType: 'NOT_A_TYPE' } });
    const body = assertError(bad, 400, 'INVALID_INPUT', ['customerType']);
    assert.equal(body.requestId, bad.headers.get('x-request-id'));
    const unauthenticated = await svc.request('GET', '/customers', { auth: 'none' });
    assert.equal(assertError(unauthenticated, 401, 'UNAUTHORIZED').requestId, unauthenticated.headers.get('x-request-id'));
    const unknown = await svc.request('GET', '/no-such-thing');
    assert.equal(assertError(unknown, 404, 'NOT_FOUND').requestId, unknown.headers.get('x-request-id'));
  });

  it("a client's sane X-Request-Id is kept; one that could forge a log line is replaced", async () => {
    const kept = await svc.request('POST', '/customers', { body: { customerType: 'BOGUS' }, headers: { 'x-request-id': 'trace-7f3a.42:retry/1' } });
    assert.equal(kept.headers.get('x-request-id'), 'trace-7f3a.42:retry/1');
    assert.equal((kept.body as { requestId: string }).requestId, 'trace-7f3a.42:retry/1');
    for (const insane of ['has space', 'x'.repeat(129), 'quote"d', '{"level":"fatal"}']) {
      const replaced = await svc.request('GET', '/customers', { headers: { 'x-request-id': insane } });
      const id = replaced.headers.get('x-request-id');
      assert.ok(id !== null && id !== insane && /^[A-Za-z0-9-]+$/.test(id), `${insane} -> ${id}`);
    }
  });

  it('a request refused for its framing carries one too', async () => {
    const [answer] = await rawExchange(
      svc.service.http.port,
      `POST /2025-10-13/customers HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: framed-1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}`,
      [{}],
    );
    assert.equal(answer!.status, 400);
    assert.equal(answer!.headers['x-request-id'], 'framed-1');
    assert.equal((JSON.parse(answer!.body) as { requestId: string }).requestId, 'framed-1');
  });
});

describe('GET /metrics', { timeout: SUITE_TIMEOUT_MS }, () => {
  const scrape = async (): Promise<string> => {
    const res = await fetch(`http://127.0.0.1:${svc.service.http.port}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    return res.text();
  };
  const svc = serviceForSuite();

  it('counts requests by method, route pattern and status, and log entries and bytes as they become durable', async () => {
    const route = '/2025-10-13/customers';
    const first = await scrape();
    const created = await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL' } });
    assert.equal(created.status, 201);
    await svc.request('GET', `/customers/${(created.body as { id: string }).id}`);
    await svc.request('POST', '/customers', { body: { customerType: 'WRONG' } });
    const second = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}): number => sample(second, name, labels) - sample(first, name, labels);
    assert.equal(delta('http_requests_total', { method: 'POST', route, status: '201' }), 1);
    assert.equal(delta('http_requests_total', { method: 'POST', route, status: '400' }), 1);
    assert.equal(delta('http_requests_total', { method: 'GET', route: `${route}/{customerId}`, status: '200' }), 1);
    assert.equal(delta('http_request_duration_seconds_count', { route }), 2);
    assert.ok(delta('wal_entries_total') >= 1, 'the customer was logged');
    assert.ok(delta('wal_bytes_total') > 0);
    assert.ok(delta('wal_commit_duration_seconds_count') >= 1);
    assert.ok(!second.includes((created.body as { id: string }).id), 'route labels are patterns, never raw paths');
  });

  it('has the backlogs, the delivery outcomes and the process metrics, and answers without credentials', async () => {
    const text = await scrape();
    for (const name of ['webhook_events_pending', 'effects_pending', 'timers_pending', 'recovery_entries_total', 'snapshot_duration_seconds_count', 'process_cpu_seconds_total', 'nodejs_heap_size_used_bytes']) {
      assert.ok(new RegExp(`^${name}(\\{| )`, 'm').test(text), `${name} is exposed`);
    }
    assert.ok(text.includes('webhook_deliveries_total{outcome="delivered"} 0'), 'every outcome is a series from the start');
    assert.ok(/^webhook_events_dropped_total 0$/m.test(text), 'no event dropped yet, and the series is there');
  });

  it('a snapshot is timed', async () => {
    const before = sample(await scrape(), 'snapshot_duration_seconds_count');
    await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL' } });
    await svc.service.services.engine.snapshot();
    assert.equal(sample(await scrape(), 'snapshot_duration_seconds_count') - before, 1);
  });

  it('latency buckets are cumulative, a value on a bound counts in it, and each route has its own', async () => {
    const metrics = new ServiceMetrics();
    for (const seconds of [0.00005, 0.001, 0.001, 0.003, 20]) metrics.answered('GET', '/a', 200, seconds);
    metrics.answered('POST', '/b', 201, 0.5);
    const text = await metrics.render();
    const bucket = (route: string, le: string): number => sample(text, 'http_request_duration_seconds_bucket', { route, le });
    assert.deepEqual(
      ['0.0001', '0.001', '0.0025', '0.005', '10', '+Inf'].map((le) => bucket('/a', le)),
      [1, 3, 3, 4, 4, 5],
    );
    assert.equal(sample(text, 'http_request_duration_seconds_count', { route: '/a' }), 5);
    assert.ok(Math.abs(sample(text, 'http_request_duration_seconds_sum', { route: '/a' }) - 20.00505) < 1e-9);
    assert.deepEqual([bucket('/b', '0.25'), bucket('/b', '0.5'), bucket('/b', '+Inf')], [0, 1, 1]);
    assert.equal(sample(text, 'http_requests_total', { method: 'GET', route: '/a', status: '200' }), 5);
  });

  it('METRICS=off: no /metrics, and the API serves as before', async () => {
    const off = await startTestService({ env: { METRICS: 'off' } });
    try {
      const res = await fetch(`http://127.0.0.1:${off.service.http.port}/metrics`);
      assert.equal(res.status, 404);
      assert.equal((await off.request('GET', '/customers')).status, 200);
    } finally {
      await off.stop();
    }
  });
});

describe('liveness and readiness', { timeout: SUITE_TIMEOUT_MS }, () => {
  after(async () => {
    await killAll();
  });

  it('a running service: /livez and /readyz are 200 without credentials', async () => {
    const svc = await startTestService();
    try {
      const live = await fetch(`http://127.0.0.1:${svc.service.http.port}/livez`);
      assert.equal(live.status, 200);
      const ready = await fetch(`http://127.0.0.1:${svc.service.http.port}/readyz`);
      assert.equal(ready.status, 200);
      assert.deepEqual(await ready.json(), { status: 'ready' });
    } finally {
      await svc.stop();
    }
  });

  it('while a long log replays: /readyz is 503 with the progress, the API 503 with Retry-After, /livez 200; then ready', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ops-replay-'));
    try {
      const entries = await writeLongLog(dataDir, 60_000);
      const child = launchService(dataDir, NO_SNAPSHOTS);
      const port = await listeningPort(child.stderr);
      const base = `http://127.0.0.1:${port}`;
      const credentials = JSON.parse(readFileSync(join(dataDir, 'credentials.json'), 'utf8')) as PlatformCredentials;
      const authorization = basicHeader(credentials.sandbox.tokenId, credentials.sandbox.clientSecret);
      let recovering: { status: string; replayed: number; total: number } | undefined;
      let apiDuringRecovery: { status: number; retryAfter: string | null; code: string } | undefined;
      let live = 0;
      for (;;) {
        const ready = await fetch(`${base}/readyz`);
        if (ready.status === 200) break;
        assert.equal(ready.status, 503);
        recovering = (await ready.json()) as typeof recovering;
        const api = await fetch(`${base}/2025-10-13/customers`, { headers: { authorization } });
        const body = (await api.json()) as { code: string };
        if (api.status === 503) apiDuringRecovery = { status: api.status, retryAfter: api.headers.get('retry-after'), code: body.code };
        if ((await fetch(`${base}/livez`)).status === 200) live++;
      }
      assert.ok(recovering !== undefined, 'readiness was seen recovering');
      assert.equal(recovering.status, 'recovering');
      assert.ok(recovering.total >= entries, `total ${recovering.total} covers the ${entries} entries written`);
      assert.ok(recovering.replayed <= recovering.total);
      assert.deepEqual(apiDuringRecovery, { status: 503, retryAfter: '1', code: 'SERVICE_UNAVAILABLE' });
      assert.ok(live > 0, '/livez answered during recovery');
      const list = await fetch(`${base}/2025-10-13/customers?limit=1`, { headers: { authorization } });
      assert.equal(list.status, 200);
      assert.equal(((await list.json()) as { totalCount: number }).totalCount, entries);
      child.proc.kill('SIGTERM');
      assert.equal(await child.exited, 0);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('SIGTERM during recovery stops the replay and exits 0; the next start recovers everything', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ops-sigterm-'));
    try {
      const entries = await writeLongLog(dataDir, 60_000);
      const child = launchService(dataDir, NO_SNAPSHOTS);
      const port = await listeningPort(child.stderr);
      // Signalled once the replay is under way.
      for (;;) {
        const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
        assert.equal(ready.status, 503, 'still recovering when signalled');
        if (((await ready.json()) as { replayed: number }).replayed > 0) break;
      }
      child.proc.kill('SIGTERM');
      assert.equal(await child.exited, 0, child.stderr.join(''));
      const lines = logLines(child.stderr);
      assert.ok(lines.some((line) => line.event === 'service.stopped' && line.during === 'recovery'), 'the stop is logged');
      const again = await spawnService(dataDir);
      const credentials = JSON.parse(readFileSync(again.credentialsPath, 'utf8')) as PlatformCredentials;
      const list = await fetch(`${again.baseUrl}/customers?limit=1`, { headers: { authorization: basicHeader(credentials.sandbox.tokenId, credentials.sandbox.clientSecret) } });
      assert.equal(((await list.json()) as { totalCount: number }).totalCount, entries);
      again.proc.kill('SIGTERM');
      assert.equal(await again.exited, 0);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('logs', { timeout: SUITE_TIMEOUT_MS }, () => {
  after(() => killAll());

  it('JSON lines with level, time and msg; at debug an access line per request with its reqId; at info none', async () => {
    for (const level of ['debug', 'info']) {
      const dataDir = mkdtempSync(join(tmpdir(), `ops-logs-${level}-`));
      try {
        const child = await spawnService(dataDir, { LOG_LEVEL: level, SNAPSHOT_EVERY_ENTRIES: '1' });
        const credentials = JSON.parse(readFileSync(child.credentialsPath, 'utf8')) as PlatformCredentials;
        const res = await fetch(`${child.baseUrl}/customers`, {
          method: 'POST',
          headers: { authorization: basicHeader(credentials.sandbox.tokenId, credentials.sandbox.clientSecret), 'content-type': 'application/json', 'x-request-id': `logs-${level}` },
          body: JSON.stringify({ customerType: 'INDIVIDUAL' }),
        });
        assert.equal(res.status, 201);
        child.proc.kill('SIGTERM');
        assert.equal(await child.exited, 0);
        const lines = logLines(child.stderr);
        assert.ok(lines.length > 0);
        for (const line of lines) {
          assert.equal(typeof line.level, 'string');
          assert.match(String(line.time), /^\d{4}-\d{2}-\d{2}T/);
          assert.equal(typeof line.msg, 'string');
        }
        const events = lines.map((line) => line.event);
        for (const event of ['http.listening', 'service.ready', 'snapshot.written', 'service.stopping', 'service.stopped']) assert.ok(events.includes(event), `${event} in ${events.join(', ')}`);
        const access = lines.filter((line) => line.event === 'http.request');
        if (level === 'debug') {
          const post = access.find((line) => line.reqId === 'logs-debug');
          assert.ok(post !== undefined, 'the request is in the access log under its id');
          assert.deepEqual([post.level, post.method, post.route, post.status], ['debug', 'POST', '/2025-10-13/customers', 201]);
        } else {
          assert.deepEqual(access, [], 'no access log at info');
        }
        assert.ok(!child.stderr.join('').includes(credentials.sandbox.clientSecret), 'no secret in the log');
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    }
  });
});

/** The JSON lines a child wrote to stderr (every line must be one). */
function logLines(stderr: readonly string[]): Array<Record<string, unknown>> {
  return stderr
    .join('')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new assert.AssertionError({ message: `not a JSON log line: ${line}` });
      }
    });
}

/** Customers created straight through the engine (one log entry each), on a store that is then closed: a log long enough to watch replay. */
async function writeLongLog(dataDir: string, customers: number): Promise<number> {
  // Snapshots only at the end would replay everything; none at all is what we want.
  const first = await startTestService({ dataDir, snapshotEveryEntries: 10_000_000 });
  await first.stop({ keepData: true });
  const services = await openServices({ dataDir, env: {}, snapshotEveryEntries: 10_000_000, report: () => undefined });
  try {
    const credentials = JSON.parse(readFileSync(join(dataDir, 'credentials.json'), 'utf8')) as PlatformCredentials;
    const envId = envIdOf(credentials.platformId, 'sandbox');
    const BATCH = 2_000;
    for (let done = 0; done < customers; done += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, customers - done) }, () =>
        services.engine.run(createCustomer, { envId, customer: { customerType: 'INDIVIDUAL' } }, () => undefined),
      );
      await Promise.all(batch);
    }
  } finally {
    // No final snapshot: close() only makes the last commit.
    await services.close();
  }
  return customers;
}

/** The port from the service's `http.listening` log line, which comes before recovery. */
async function listeningPort(stderr: readonly string[]): Promise<number> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const m = /"event":"http\.listening"[^\n]*"baseUrl":"http:\/\/127\.0\.0\.1:(\d+)\//.exec(stderr.join(''));
    if (m !== null) return Number(m[1]);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`no http.listening line: ${stderr.join('')}`);
}
