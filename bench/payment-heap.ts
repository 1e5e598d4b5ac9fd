// What a payment keeps in memory: a test service in this process, funded sender/receiver
// pairs, a warm-up, then `--payments` quote-and-execute payments; the heap after full
// collections before and after, divided by the payments. Needs the collector exposed:
//
//   npm run build && node --expose-gc dist/bench/payment-heap.js --payments 20000
//
// A snapshot is taken after each run of payments, as the service takes them as it runs: a
// settled payment's quote and transactions leave memory once a snapshot holds them
// (registry.ts, RecordKind.settled); what stays is what each payment costs the heap for as
// long as the service runs (docs/bench.md, sessions 45 and 46).
import { getHeapStatistics } from 'node:v8';
import { parseArgs } from 'node:util';
import { integerFlag } from './support/flags.js';
import { startTestService } from '../test/support/service.js';
import { createQuote, fundedCustomer, quoteBody } from '../test/support/money.js';

const { values: flags } = parseArgs({ options: { payments: { type: 'string', default: '20000' }, pairs: { type: 'string', default: '16' } } });
const payments = integerFlag('payments', flags.payments);
const pairCount = integerFlag('pairs', flags.pairs);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc: the heap is measured after full collections');
const collect = gc;

const svc = await startTestService({ snapshotEverySeconds: 1e9 });
try {
  const pairs: Array<[string, string]> = [];
  for (let i = 0; i < pairCount; i++) pairs.push([(await fundedCustomer(svc, 1e12)).usd.id, (await fundedCustomer(svc, 0)).usd.id]);
  const pay = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const [from, to] = pairs[i % pairs.length]!;
      await createQuote(svc, quoteBody(from, to, 1, { immediatelyExecute: true }));
    }
    await svc.service.services.engine.settled();
    // As the running service does every so often: settled payments leave memory once a snapshot holds them.
    await svc.service.services.engine.snapshot();
  };
  const heapUsed = (): number => {
    collect();
    collect();
    return process.memoryUsage().heapUsed;
  };
  await pay(500);
  const before = heapUsed();
  await pay(payments);
  const grown = heapUsed() - before;
  const limit = getHeapStatistics().heap_size_limit;
  console.log(`${payments} payments: the heap grew ${(grown / 2 ** 20).toFixed(1)} MiB, ${Math.round(grown / payments)} bytes a payment`);
  console.log(`heap limit ${(limit / 2 ** 20).toFixed(0)} MiB: about ${Math.round(limit / (grown / payments) / 1000) * 1000} such payments fill it`);
} finally {
  await svc.stop();
}
