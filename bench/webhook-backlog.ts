// What a webhook backlog costs: N PENDING events in one environment (an endpoint that is
// down), made by the real sandbox-funding decision and applied to a World directly (no
// HTTP, no log). Heap per event is the difference between a World that took the fundings
// with their webhook events and one that took the same fundings without them, after a
// full GC, divided by N; then the endpoint comes back and every event is delivered, oldest
// first, through the same applier a logged try uses: the time per delivery shows that
// taking the head off a long queue does not depend on its length. Last, 30 days on, the
// retention sweep's decisions prune them all, PRUNE_BATCH per entry: the time per entry, and
// the heap left beside the World that never had the events.
//
//   npm run build && node --expose-gc dist/bench/webhook-backlog.js [events, default 1000000]
import { decideAttempt, decidePrune, pruneCandidates, PRUNE_BATCH, WEBHOOK_RETENTION_MS, type WebhookEvent } from '../actors/webhook-event.js';
import { decideCreateCustomer } from '../actors/customer.js';
import { decideSandboxFund, fundingRecorded } from '../actors/payment.js';
import { samplePlatformEnv } from './support/sample-event.js';
import { World } from '../actors/world.js';
import { newId } from '../src/engine/ids.js';
import { settledMemory } from './support/gc.js';

const events = Number(process.argv[2] ?? 1_000_000);
if (!Number.isSafeInteger(events) || events < 2 || events % 2 !== 0) {
  console.error(`not an even event count: ${process.argv[2]}`);
  process.exit(2);
}
const fundings = events / 2; // each records INCOMING_PAYMENT and ACCOUNT_STATUS

const start = Date.UTC(2026, 0, 1);
const env = samplePlatformEnv(newId('Platform', start), start);

function heapUsed(): number {
  return settledMemory().heapUsed;
}

/** A World with one customer whose USD account took `fundings` sandbox fundings, with or without their events. */
function funded(withWebhooks: boolean): { world: World; heap: number } {
  const world = new World();
  world.apply({ type: 'platform.env.created', env }, start);
  for (const event of decideCreateCustomer(world.envs.get(env.id)!, { customerType: 'INDIVIDUAL' }, world.customers, start)) world.apply(event, start);
  const customer = [...world.customers.records.values()][0]!;
  const usd = [...world.internalAccounts.idsOwnedBy(customer.id)].map((id) => world.internalAccounts.get(id)!).find((a) => a.currency === 'USD')!;
  for (let i = 0; i < fundings; i++) {
    const at = start + 1 + i;
    for (const decided of decideSandboxFund(world.internalAccounts.get(usd.id)!, 1, world, at)) {
      const event = fundingRecorded(decided, world, at);
      world.apply(withWebhooks ? event : { ...event, webhooks: [] }, at);
    }
  }
  return { world, heap: heapUsed() };
}

const baseline = heapUsed();
const withoutBytes = funded(false).heap - baseline; // that World is garbage once measured, as this one's events are once pruned
const backlog = funded(true);
const withBytes = backlog.heap - baseline;
const pending = backlog.world.webhookEvents.pendingIn(env.id);
if (pending !== events) throw new Error(`expected ${events} pending events, found ${pending}`);
console.log(`${events} pending events: ${((withBytes - withoutBytes) / events).toFixed(0)} bytes of heap each (the fundings alone: ${(withoutBytes / fundings).toFixed(0)} bytes each)`);

// The endpoint answers again: every event delivered, oldest first.
const world = backlog.world;
const url = 'https://hooks.example.com/';
const began = performance.now();
let delivered = 0;
for (let head: WebhookEvent | undefined = world.webhookEvents.queueHead(env.id); head !== undefined; head = world.webhookEvents.queueHead(env.id)) {
  const at = start + fundings + delivered;
  const outcome = decideAttempt(head, world.webhookEndpoints.get(env.id), url, { at, statusCode: 200, ms: 1 });
  if (outcome === undefined) throw new Error(`${head.id} is not pending`);
  world.apply(outcome, at);
  delivered++;
}
const ms = performance.now() - began;
console.log(`delivered ${delivered} in creation order: ${((ms * 1000) / delivered).toFixed(2)} µs of applying each (${ms.toFixed(0)} ms)`);

// Their retention over: pruned, a batch per entry, as the sweep logs them.
const later = start + fundings + delivered + WEBHOOK_RETENTION_MS;
const pruneBegan = performance.now();
let entries = 0;
for (let batch = pruneCandidates(world.webhookEvents, later, PRUNE_BATCH); batch.length > 0; batch = pruneCandidates(world.webhookEvents, later, PRUNE_BATCH)) {
  for (const event of decidePrune(world.webhookEvents, batch, later)) world.apply(event, later);
  entries++;
}
const pruneMs = performance.now() - pruneBegan;
const left = world.webhookEvents.idsIn(env.id).length;
if (left !== 0) throw new Error(`${left} events left after pruning`);
// The ids changed since the last snapshot are held until the next one takes them: taken here.
world.captureChanges();
const prunedBytes = heapUsed() - baseline;
console.log(
  `pruned ${delivered} in ${entries} entries: ${(pruneMs / entries).toFixed(2)} ms of deciding and applying each (${pruneMs.toFixed(0)} ms); ` +
    `heap left beyond the fundings alone: ${((prunedBytes - withoutBytes) / events).toFixed(0)} bytes per pruned event`,
);
