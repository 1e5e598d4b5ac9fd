// Memory per idle customer (with the internal accounts POST /customers provisions): N
// sandbox customers made through the World directly, by the real decision and apply code,
// with no HTTP and no log, and the heap and RSS growth divided by N after a full GC.
//
//   npm run build && node --expose-gc dist/bench/customer-memory.js [customers, default 100000]
import { decideCreateCustomer } from '../actors/customer.js';
import { newPlatformEnv } from '../actors/platform.js';
import { World } from '../actors/world.js';
import { newId } from '../src/engine/ids.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  console.error('run with node --expose-gc');
  process.exit(2);
}
const fullGc: () => void = gc;

const count = Number(process.argv[2] ?? 100_000);
if (!Number.isSafeInteger(count) || count < 1) {
  console.error(`not a customer count: ${process.argv[2]}`);
  process.exit(2);
}

function settledMemory(): NodeJS.MemoryUsage {
  for (let i = 0; i < 3; i++) fullGc();
  return process.memoryUsage();
}

const start = Date.UTC(2026, 0, 1);
const world = new World();
const env = newPlatformEnv(
  {
    platformId: newId('Platform', start),
    environment: 'sandbox',
    token: { tokenId: 'tok_memory', secretHash: '0'.repeat(64) },
    umaDomain: 'sandbox.uma.test',
    isRegulatedFinancialInstitution: false,
    webhookPublicKey: `04${'0'.repeat(128)}`,
    webhookPrivateKeySealed: new Uint8Array(61),
  },
  start,
);
world.apply({ type: 'platform.env.created', env }, start);

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
