// Memory per idle customer (with the internal accounts POST /customers provisions): N
// sandbox customers made through the World directly, by the real decision and apply code,
// with no HTTP and no log, and the heap and RSS growth divided by N after a full GC. Then
// the same creates as log entries: their stored size (encodeStored, as the log writes
// them) and how fast a fresh World decodes and applies them, as recovery replays them.
//
//   npm run build && node --expose-gc dist/bench/customer-memory.js [customers, default 100000]
import { decideCreateCustomer } from '../actors/customer.js';
import type { PlatformEnv } from '../actors/platform.js';
import { samplePlatformEnv } from './support/sample-event.js';
import { World, type DomainEvent } from '../actors/world.js';
import { decodeStored, encodeStored } from '../src/engine/format.js';
import { newId } from '../src/engine/ids.js';
import { settledMemory } from './support/gc.js';

const count = Number(process.argv[2] ?? 100_000);
if (!Number.isSafeInteger(count) || count < 1) {
  console.error(`not a customer count: ${process.argv[2]}`);
  process.exit(2);
}


const start = Date.UTC(2026, 0, 1);
const env = samplePlatformEnv(newId('Platform', start), start);

function worldWith(platform: PlatformEnv): World {
  const world = new World();
  world.apply({ type: 'platform.env.created', env: platform }, start);
  return world;
}

const world = worldWith(env);
const before = settledMemory();
const began = performance.now();
for (let i = 0; i < count; i++) {
  // One customer per millisecond of entry time, as a steady load would space them.
  const at = start + i;
  for (const event of decideCreateCustomer(world.envs.get(env.id)!, { customerType: 'INDIVIDUAL' }, world.customers, at)) world.apply(event, at);
}
const createMs = performance.now() - began;
const after = settledMemory();

const accounts = world.internalAccounts.idsOwnedBy(world.customers.idsIn(env.id)[0]!).length;
const perCustomer = (bytes: number): string => `${Math.round(bytes / count)} B`;
console.log(`customers: ${count} (each with ${accounts} internal accounts), created and applied in ${Math.round(createMs)} ms`);
console.log(`heap used per customer: ${perCustomer(after.heapUsed - before.heapUsed)}`);
console.log(`RSS per customer: ${perCustomer(after.rss - before.rss)}`);
console.log(`stored records: ${world.customers.records.size} customers, ${world.internalAccounts.records.size} internal accounts`);
console.log(`heap used ${(after.heapUsed / 2 ** 20).toFixed(1)} MiB, RSS ${(after.rss / 2 ** 20).toFixed(1)} MiB`);

// The log: one entry per create, encoded as the log stores it, then replayed into a fresh World.
const writer = worldWith(env);
const entries: Buffer[] = [];
let logBytes = 0;
for (let i = 0; i < count; i++) {
  const at = start + i;
  const events: DomainEvent[] = decideCreateCustomer(writer.envs.get(env.id)!, { customerType: 'INDIVIDUAL' }, writer.customers, at);
  for (const event of events) writer.apply(event, at);
  const stored = encodeStored({ seq: i + 1, at, events });
  logBytes += stored.length;
  entries.push(stored);
}
const replayed = worldWith(env);
const replayBegan = performance.now();
for (let i = 0; i < entries.length; i++) {
  const entry = decodeStored(entries[i]!, `entry ${i + 1}`) as { at: number; events: DomainEvent[] };
  for (const event of entry.events) replayed.apply(event, entry.at);
}
const replayMs = performance.now() - replayBegan;
console.log(`log entry per create: ${Math.round(logBytes / count)} B; decode and apply: ${Math.round(count / (replayMs / 1000))} entries/s (${Math.round(replayMs)} ms)`);
