// A child process for test/engine-commit-failure.test.ts: an engine over counters whose
// log commits start failing (lmdb's shape of that failure: the commit promise rejects,
// `flushed` resolves). Prints one `acknowledged <n>` line per reply it receives; the
// engine must stop the process (exit 70) before acknowledging anything after the failure.
import { systemClock } from '../../src/engine/clock.js';
import { Engine } from '../../src/engine/engine.js';
import { Counters, add, type CounterEvent, type CounterTimer } from './counter-machine.js';
import { storeWithLogPuts, type Written } from './log-store.js';

const dataDir = process.argv[2];
if (dataDir === undefined) throw new Error('usage: commit-failure.js <dataDir>');
let failing = false;

/** Once `failing`, each log put's commit promise rejects while its fsync resolves. */
const openFailingStore = storeWithLogPuts((written) => {
  if (!failing) return written;
  const failed: Written = written.then(() => {
    throw new Error('injected: MDB_MAP_FULL during commit');
  });
  failed.flushed = written.flushed;
  return failed;
});

const counters = new Counters();
const engine = new Engine<CounterEvent, CounterTimer>({
  dataDir,
  clock: systemClock,
  machine: counters,
  snapshotEveryEntries: 1_000_000,
  snapshotEveryMs: 3_600_000,
  report: (line) => process.stderr.write(`${line}\n`),
  openStorage: openFailingStore,
});
await engine.open();
const bump = (n: number): Promise<void> =>
  engine.exec(['c'], () => ({ events: [add('c', 1)], reply: () => n })).then((reply) => {
    process.stdout.write(`acknowledged ${reply}\n`);
  });
for (let n = 1; n <= 3; n++) await bump(n);
failing = true;
await Promise.allSettled([4, 5, 6, 7, 8].map(bump));
process.stdout.write('still running after the failure\n');
await engine.close();
