// Webhook delivery bench: the service in-process (real clock, a fresh data directory)
// delivering to a node:http receiver on loopback. Each sandbox funding records one
// ACCOUNT_STATUS event; the bench funds accounts of `--platforms` platforms (each its own
// endpoint and lane) from `--concurrency` concurrent clients until `--events` events are
// recorded, and reports delivery throughput (events/s, first funding to last arrival) and
// the added latency from commit (the event's timestamp, the decision's clock reading) to
// arrival at the receiver (p50, p99, max).
//
//   npm run bench:webhooks                          # 2,000 events, 4 platforms
//   npm run bench:webhooks -- --events 500 --platforms 1
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startService } from '../src/app.js';
import { createPlatform, type PlatformCredentials } from '../src/platforms.js';
import { fmtInt, fmtMs, markdownTable } from './support/stats.js';

const { values: flags } = parseArgs({
  options: {
    events: { type: 'string', default: '2000' },
    platforms: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '16' },
  },
});
const EVENTS = Number(flags.events);
const PLATFORMS = Number(flags.platforms);
const CONCURRENCY = Number(flags.concurrency);

const arrivals = new Map<string, number>();
let allArrived: () => void = () => undefined;
const done = new Promise<void>((resolve) => (allArrived = resolve));
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; timestamp: string };
    if (!arrivals.has(event.id)) arrivals.set(event.id, Date.now() - Date.parse(event.timestamp));
    res.writeHead(200).end();
    if (arrivals.size >= EVENTS) allArrived();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

const dataDir = mkdtempSync(join(tmpdir(), 'bench-webhooks-'));
const service = await startService({ port: 0, dataDir, report: () => undefined, env: {} });
const platforms: PlatformCredentials[] = [JSON.parse(readFileSync(service.credentialsPath, 'utf8')) as PlatformCredentials];
while (platforms.length < PLATFORMS) platforms.push(await createPlatform(service.services));

async function call(auth: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${service.baseUrl}${path}`, {
    method,
    headers: body === undefined ? { authorization: auth } : { authorization: auth, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

// One account per platform, its endpoint set.
const targets: Array<{ auth: string; accountId: string }> = [];
for (const p of platforms) {
  const auth = `Basic ${Buffer.from(`${p.sandbox.tokenId}:${p.sandbox.clientSecret}`).toString('base64')}`;
  await call(auth, 'PATCH', '/config', { webhookEndpoint: hookUrl });
  const customer = await call(auth, 'POST', '/customers', { customerType: 'INDIVIDUAL' });
  const accounts = await call(auth, 'GET', `/customers/internal-accounts?customerId=${customer.id}&currency=USD`);
  targets.push({ auth, accountId: accounts.data[0].id });
}

const started = performance.now();
let issued = 0;
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (issued < EVENTS) {
      const target = targets[issued++ % targets.length]!;
      await call(target.auth, 'POST', `/sandbox/internal-accounts/${target.accountId}/fund`, { amount: 1 });
    }
  }),
);
await done;
const seconds = (performance.now() - started) / 1000;
const latencies = [...arrivals.values()].sort((a, b) => a - b);
const at = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
console.log(
  markdownTable(
    ['events', 'platforms', 'concurrency', 'events/s', 'commit→arrival p50', 'p99', 'max'],
    [[fmtInt(arrivals.size), String(PLATFORMS), String(CONCURRENCY), fmtInt(arrivals.size / seconds), fmtMs(at(0.5)), fmtMs(at(0.99)), fmtMs(latencies.at(-1)!)]],
  ),
);
await service.close();
receiver.closeAllConnections();
receiver.close();
rmSync(dataDir, { recursive: true, force: true });
