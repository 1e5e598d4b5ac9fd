// Engine micro-benchmarks (tinybench): the write-ahead log's group commit and actor dispatch
// through Engine.exec. Each task runs BENCH_TIME_MS (default
// 1500 ms) after a short warmup; the whole file takes about 30 s.
//
//   npm run bench:engine
//   BENCH_TIME_MS=3000 npm run bench:engine
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bench, type Task } from 'tinybench';
import { open, type RootDatabase } from 'lmdb';
import { Engine } from '../src/engine/engine.js';
import { WriteAheadLog } from '../src/engine/log.js';
import { LmdbStorage } from '../src/engine/storage.js';
import { systemClock } from '../src/engine/clock.js';
import { Counters, type CounterEvent, type CounterTimer } from '../test/support/counter-machine.js';
import { sampleCustomerEvent, type SampleEvent } from './support/sample-event.js';
import { LatencyHistogram, fmtInt, fmtMs, fmtRatio, markdownTable } from './support/stats.js';

const TIME_MS = Number(process.env.BENCH_TIME_MS ?? 1500);
const WARMUP_MS = Math.min(300, TIME_MS / 4);
const GROUP = 64;
const BIG_GROUP = 1024;
const ACTORS = 256;

const dirs: string[] = [];
const tempDir = (name: string): string => {
  const dir = mkdtempSync(join(tmpdir(), `bench-engine-${name}-`));
  dirs.push(dir);
  return dir;
};
process.on('exit', () => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const fatal = (err: Error): void => {
  console.error(`log failure: ${err.message}`);
  process.exit(70);
};

interface Row {
  group: string;
  task: string;
  /** Operations one iteration of the task performs. */
  perIteration: number;
}

const rows = new Map<string, Row>();
const bench = new Bench({ time: TIME_MS, warmupTime: WARMUP_MS, throws: true });
const add = (group: string, task: string, perIteration: number, fn: () => unknown): void => {
  const name = `${group} | ${task}`;
  rows.set(name, { group, task, perIteration });
  bench.add(name, fn as () => void);
};

// (a) The write-ahead log, used directly on an lmdb root opened as the engine opens it.
const logRoot: RootDatabase = open({ path: tempDir('log'), overlappingSync: true, separateFlushed: true });
const log = new WriteAheadLog<SampleEvent>(new LmdbStorage(logRoot), fatal);
const entry = (): SampleEvent[] => [sampleCustomerEvent(Date.now())];
const sampleBytes = Buffer.byteLength(JSON.stringify(sampleCustomerEvent(Date.now())));

add('log', 'one at a time: append, await its commit', 1, async () => {
  await log.whenDurable(log.append(Date.now(), entry()));
});
add('log', `group of ${GROUP}: ${GROUP} appends in one turn, each awaits its commit`, GROUP, async () => {
  const waits: Promise<void>[] = [];
  for (let i = 0; i < GROUP; i++) waits.push(log.whenDurable(log.append(Date.now(), entry())));
  await Promise.all(waits);
});
add('log', `group of ${BIG_GROUP}`, BIG_GROUP, async () => {
  const waits: Promise<void>[] = [];
  for (let i = 0; i < BIG_GROUP; i++) waits.push(log.whenDurable(log.append(Date.now(), entry())));
  await Promise.all(waits);
});

// (b) Actor dispatch through the engine, on a counter state machine.
const machine = new Counters();
const engine = new Engine<CounterEvent, CounterTimer>({
  dataDir: tempDir('engine'),
  clock: systemClock,
  machine,
  snapshotEveryEntries: Number.MAX_SAFE_INTEGER,
  snapshotEveryMs: 3_600_000,
  report: (line) => console.error(line),
});
await engine.open();
const actorIds = Array.from({ length: ACTORS }, (_, i) => `Counter:${String(i).padStart(4, '0')}`);
const bump = (actor: string): Promise<number> =>
  engine.exec([actor], () => ({ events: [{ type: 'add', id: actor, n: 1 }], reply: () => machine.values.get(actor) ?? 0 }));
const read = (actor: string): Promise<number> => engine.exec([actor], () => ({ events: [], reply: () => machine.values.get(actor) ?? 0 }));

add('engine', `${ACTORS} concurrent execs, ${ACTORS} actors (durable)`, ACTORS, () => Promise.all(actorIds.map(bump)));
add('engine', `${ACTORS} concurrent execs, 1 hot actor (durable)`, ACTORS, () => Promise.all(actorIds.map(() => bump(actorIds[0]!))));
add('engine', `${ACTORS} concurrent execs, ${ACTORS} actors (no events: dispatch only)`, ACTORS, () => Promise.all(actorIds.map(read)));
add('engine', `${ACTORS} concurrent execs, 1 hot actor (no events: dispatch only)`, ACTORS, () => Promise.all(actorIds.map(() => read(actorIds[0]!))));

/** Closed loop, like HTTP clients: `writers` each append and await durability, again and again. */
async function closedLoop(writers: number, ms: number): Promise<{ perSecond: number; perFlush: number; p50: number; p99: number }> {
  const flushes0 = log.flushes;
  const entries0 = log.flushedEntries;
  const histogram = new LatencyHistogram();
  const started = performance.now();
  const end = started + ms;
  let done = 0;
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await log.whenDurable(log.append(Date.now(), entry()));
        histogram.record(performance.now() - t);
        done++;
      }
    }),
  );
  const elapsed = performance.now() - started;
  const flushes = log.flushes - flushes0;
  return { perSecond: (done * 1000) / elapsed, perFlush: (log.flushedEntries - entries0) / Math.max(1, flushes), p50: histogram.percentile(0.5), p99: histogram.percentile(0.99) };
}

const flushes0 = log.flushes;
const entries0 = log.flushedEntries;
await bench.run();
const tinyFlushes = log.flushes - flushes0;
const tinyEntries = log.flushedEntries - entries0;
const loop = await closedLoop(GROUP, TIME_MS);

await engine.close();
if (machine.applied === 0) throw new Error('the engine bench applied no events');
await logRoot.close();

// Report.
const perSecond = (task: Task): { ops: number; p50: number; p99: number } => {
  const r = task.result;
  if (r.state !== 'completed') throw new Error(`${task.name}: ${r.state}`);
  const per = rows.get(task.name)!.perIteration;
  return { ops: (per * 1000) / r.latency.mean, p50: r.latency.p50, p99: r.latency.p99 };
};
const byName = new Map(bench.tasks.map((t) => [t.name, perSecond(t)]));
const cpu = cpus()[0]?.model ?? 'unknown CPU';
console.log(`# Engine bench: Node ${process.version}, ${cpu}, ${availableParallelism()} cores, ${TIME_MS} ms per task\n`);
console.log(
  markdownTable(
    ['area', 'task', 'ops/s', 'iteration p50 ms', 'iteration p99 ms'],
    bench.tasks.map((t) => {
      const row = rows.get(t.name)!;
      const s = byName.get(t.name)!;
      return [row.group, row.task, fmtInt(s.ops), fmtMs(s.p50), fmtMs(s.p99)];
    }),
    [false, false, true, true, true],
  ),
);
const single = byName.get(`log | one at a time: append, await its commit`)!.ops;
const grouped = byName.get(`log | group of ${GROUP}: ${GROUP} appends in one turn, each awaits its commit`)!.ops;
const big = byName.get(`log | group of ${BIG_GROUP}`)!.ops;
const many = byName.get(`engine | ${ACTORS} concurrent execs, ${ACTORS} actors (durable)`)!.ops;
const hot = byName.get(`engine | ${ACTORS} concurrent execs, 1 hot actor (durable)`)!.ops;
console.log('');
console.log(`- log entry: a customer.created event of ${sampleBytes} bytes as JSON; the log's lmdb root is opened as the engine opens it (overlappingSync, separateFlushed)`);
console.log(`- group commit: ${GROUP} per group ${fmtRatio(grouped / single)} and ${BIG_GROUP} per group ${fmtRatio(big / single)} the entries/s of one at a time (${fmtInt(single)} entries/s, i.e. ${fmtMs(1000 / single)} ms per commit + fsync)`);
console.log(`- closed loop, ${GROUP} writers each appending and awaiting durability: ${fmtInt(loop.perSecond)} entries/s, ${loop.perFlush.toFixed(1)} entries per flush, latency p50 ${fmtMs(loop.p50)} ms, p99 ${fmtMs(loop.p99)} ms`);
console.log(`- log over the tinybench tasks: ${fmtInt(tinyEntries)} entries in ${fmtInt(tinyFlushes)} flushes`);
console.log(`- actor dispatch: one hot actor runs at ${fmtRatio(hot / many)} the rate of ${ACTORS} distinct actors (its actor is let go before the fsync)`);
