// Webhook delivery bench: the service in-process (real clock, a fresh data directory)
// delivering to a node:http receiver on loopback. The bench makes `--fundings` sandbox
// fundings of one USD account per platform (`--platforms`, each its own endpoint and so its
// own delivery lane) from `--concurrency` concurrent clients. A funding records two events
// today (INCOMING_PAYMENT and ACCOUNT_STATUS); the bench does not assume it: it counts the
// events the fundings recorded in the service's outbox and waits until every one of them
// has arrived at the receiver, so the figures cover the whole queue.
//
// Clocks (performance.now() of this process, which runs the service, the clients and the
// receiver alike):
// - events/s: the delivered events / (the first funding sent -> the last event arrived);
// - commit -> arrival: starts when the funding request's 200 comes back, which the service
//   sends once the entry recording the event is durable (the entry's fsync done), and stops
//   when the receiver has read the event's whole body. The 200's own trip back to the client
//   is inside the start, so this is a slight underestimate, by less than a funding's round
//   trip (printed: request sent -> 200 read); an event may even arrive before its funding's
//   200 is read (counted in the output).
// Events are matched to their funding by what they carry: each funding adds a distinct
// amount, so an INCOMING_PAYMENT is known by its account and amount, and an ACCOUNT_STATUS
// by its account and the balance that funding left (the 200's body has that balance).
//
//   npm run bench:webhooks                             # 1,000 fundings, 4 platforms
//   npm run bench:webhooks -- --fundings 250 --platforms 1
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startService } from '../src/app.js';
import { createPlatform, type PlatformCredentials } from '../src/platforms.js';
import { integerFlag } from './support/flags.js';
import { fmtInt, fmtMs, markdownTable } from './support/stats.js';

/** How long the receiver may take to get the whole queue once the fundings are done. */
const DRAIN_LIMIT_MS = 120_000;

const { values: flags } = parseArgs({
  options: {
    fundings: { type: 'string', default: '1000' },
    platforms: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '16' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});
if (flags.help) {
  console.log(`usage: node dist/bench/webhooks.bench.js [--fundings N] [--platforms N] [--concurrency N]
  --fundings N     sandbox fundings to make (default 1000); the events they record are counted, not assumed
  --platforms N    platforms, each with its own endpoint (delivery lane) and account (default 4)
  --concurrency N  concurrent funding clients (default 16)`);
  process.exit(0);
}
const FUNDINGS = integerFlag('fundings', flags.fundings);
const PLATFORMS = integerFlag('platforms', flags.platforms);
const CONCURRENCY = integerFlag('concurrency', flags.concurrency);

/** The fields of a delivered event the bench reads. */
interface Delivered {
  id: string;
  type: string;
  transaction?: { destination: { accountId?: string }; receivedAmount: { amount: number } };
  account?: { id: string; balance: { amount: number } };
}

/** The key that ties an event to its funding; undefined for an event no funding of the bench made. */
function fundingKey(event: Delivered): string | undefined {
  if (event.type === 'INCOMING_PAYMENT' && event.transaction !== undefined) {
    return `${event.transaction.destination.accountId ?? ''} +${event.transaction.receivedAmount.amount}`;
  }
  if (event.type === 'ACCOUNT_STATUS' && event.account !== undefined) return `${event.account.id} =${event.account.balance.amount}`;
  return undefined;
}

/** First arrival per event id (delivery is at least once), with the key of its funding. */
const arrivals = new Map<string, { at: number; key: string | undefined }>();
let duplicates = 0;
let onArrival: () => void = () => undefined;
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const at = performance.now();
    const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Delivered;
    if (arrivals.has(event.id)) duplicates++;
    else arrivals.set(event.id, { at, key: fundingKey(event) });
    res.writeHead(200).end();
    onArrival();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

const dataDir = mkdtempSync(join(tmpdir(), 'bench-webhooks-'));
const service = await startService({ port: 0, dataDir, report: () => undefined, env: {} });
const outbox = service.services.world.webhookEvents;
const platforms: PlatformCredentials[] = [JSON.parse(readFileSync(service.credentialsPath, 'utf8')) as PlatformCredentials];
while (platforms.length < PLATFORMS) platforms.push(await createPlatform(service.services));

async function call<T>(auth: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${service.baseUrl}${path}`, {
    method,
    headers: body === undefined ? { authorization: auth } : { authorization: auth, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

// One account per platform, its endpoint set.
const targets: Array<{ auth: string; accountId: string }> = [];
for (const p of platforms) {
  const auth = `Basic ${Buffer.from(`${p.sandbox.tokenId}:${p.sandbox.clientSecret}`).toString('base64')}`;
  await call(auth, 'PATCH', '/config', { webhookEndpoint: hookUrl });
  const customer = await call<{ id: string }>(auth, 'POST', '/customers', { customerType: 'INDIVIDUAL' });
  const accounts = await call<{ data: Array<{ id: string }> }>(auth, 'GET', `/customers/internal-accounts?customerId=${customer.id}&currency=USD`);
  targets.push({ auth, accountId: accounts.data[0]!.id });
}
// Events of the setup (if any) are delivered before the fundings' and not counted.
const setupEvents = outbox.eventCount;
while (arrivals.size < setupEvents) await new Promise<void>((resolve) => (onArrival = resolve));
arrivals.clear();

/** When each funding's 200 came back, under both keys its events can be found by. */
const committedAt = new Map<string, number>();
/** Each funding's round trip (request sent -> 200 read): a bound on how late the 200 starts the clock. */
const roundTrips: number[] = [];
const started = performance.now();
let issued = 0;
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (issued < FUNDINGS) {
      const i = issued++;
      const target = targets[i % targets.length]!;
      // A distinct amount per funding identifies its INCOMING_PAYMENT and the balance it leaves.
      const amount = i + 1;
      const sent = performance.now();
      const account = await call<{ balance: { amount: number } }>(target.auth, 'POST', `/sandbox/internal-accounts/${target.accountId}/fund`, { amount });
      const at = performance.now();
      roundTrips.push(at - sent);
      committedAt.set(`${target.accountId} +${amount}`, at);
      committedAt.set(`${target.accountId} =${account.balance.amount}`, at);
    }
  }),
);
const fundedAt = performance.now();
const recorded = outbox.eventCount - setupEvents;
const pendingWhenFunded = recorded - arrivals.size;
const deadline = fundedAt + DRAIN_LIMIT_MS;
while (arrivals.size < recorded && performance.now() < deadline) {
  await new Promise<void>((resolve) => {
    onArrival = resolve;
    setTimeout(resolve, 1000);
  });
}
const failures: string[] = [];
if (arrivals.size < recorded) failures.push(`${recorded - arrivals.size} of ${recorded} recorded events had not arrived ${DRAIN_LIMIT_MS / 1000} s after the last funding`);

const latencies: number[] = [];
let unmatched = 0;
let lastArrival = started;
for (const { at, key } of arrivals.values()) {
  lastArrival = Math.max(lastArrival, at);
  const commit = key === undefined ? undefined : committedAt.get(key);
  if (commit === undefined) unmatched++;
  else latencies.push(at - commit);
}
if (unmatched > 0) failures.push(`${unmatched} delivered events match no funding of the bench`);
latencies.sort((a, b) => a - b);
roundTrips.sort((a, b) => a - b);
const quantile = (sorted: readonly number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const at = (q: number): number => quantile(latencies, q);
const seconds = (lastArrival - started) / 1000;

console.log(
  `# Webhook delivery: Node ${process.version}, ${cpus()[0]?.model ?? 'unknown CPU'}, ${availableParallelism()} cores; ` +
    `${fmtInt(FUNDINGS)} sandbox fundings over ${PLATFORMS} platforms (one endpoint each), ${CONCURRENCY} concurrent clients\n`,
);
console.log(
  markdownTable(
    ['fundings', 'events recorded', 'events delivered', 'pending at last 200', 'events/s', 'commit→arrival p50 ms', 'p99 ms', 'max ms'],
    [[fmtInt(FUNDINGS), fmtInt(recorded), fmtInt(arrivals.size), fmtInt(pendingWhenFunded), fmtInt(arrivals.size / seconds), fmtMs(at(0.5)), fmtMs(at(0.99)), fmtMs(latencies.at(-1) ?? NaN)]],
    [true, true, true, true, true, true, true, true],
  ),
);
console.log('');
console.log(`- events recorded per funding: ${(recorded / FUNDINGS).toFixed(2)} (counted in the outbox, not assumed)`);
console.log(
  `- fundings took ${fmtInt(fundedAt - started)} ms (${fmtInt(recorded / ((fundedAt - started) / 1000))} events recorded/s); ` +
    `the last event arrived ${fmtInt(lastArrival - fundedAt)} ms after the last funding's 200`,
);
console.log('- events/s: delivered events / (first funding sent -> last event arrived); the run ends only when every recorded event has arrived');
console.log(
  "- commit→arrival: from the funding's 200 (sent once its entry is durable) to the receiver reading the event; " +
    `${latencies.filter((l) => l < 0).length} events arrived before their funding's 200 was read; duplicate deliveries: ${duplicates}`,
);
console.log(
  `- a funding's round trip (request sent -> 200 read), which bounds how late the 200 starts that clock: p50 ${fmtMs(quantile(roundTrips, 0.5))} ms, p99 ${fmtMs(quantile(roundTrips, 0.99))} ms`,
);
await service.close();
receiver.closeAllConnections();
receiver.close();
rmSync(dataDir, { recursive: true, force: true });
if (failures.length > 0) {
  console.error(`\nFAILED:\n  ${failures.join('\n  ')}`);
  process.exitCode = 1;
}
