// Snapshot cost against store size and change, at the engine (no HTTP). A store of N
// customer-shaped records (the sandbox customer record the service writes, with its own id)
// gets a full first snapshot; then k records change and an incremental snapshot is taken.
// For each: wall time, values and bytes written, the longest synchronous stretch while it
// runs (the largest gap between event-loop turns, and monitorEventLoopDelay's max), and at
// the end the time to recover the store (load the snapshot, replay the tail).
//
//   npm run build && node dist/bench/snapshot.bench.js
//   node dist/bench/snapshot.bench.js --sizes 100000,1000000 --changes 1000,10000
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Engine } from '../src/engine/engine.js';
import { systemClock } from '../src/engine/clock.js';
import { ChangeLog, ChangeTrackingMap } from '../src/engine/change-log.js';
import type { DomainChanges, DomainColumns, DomainImage, StateMachine } from '../src/engine/state-machine.js';
import { sampleCustomerRecord } from './support/sample-event.js';
import { fmtInt, fmtMs, markdownTable } from './support/stats.js';

function listArg(name: string, fallback: number[]): number[] {
  const at = process.argv.indexOf(name);
  return at < 0 ? fallback : process.argv[at + 1]!.split(',').map(Number);
}
const SIZES = listArg('--sizes', [100_000, 1_000_000]);
const CHANGES = listArg('--changes', [1_000, 10_000]);
/** Records created per log entry while the store is built (keeps the build quick). */
const CREATE_PER_ENTRY = 2_000;
/** Records changed per log entry (one request's worth of change each would be slower to build, same snapshot). */
const CHANGE_PER_ENTRY = 10;

const template = sampleCustomerRecord(Date.now());
type CustomerLike = typeof template;

/** Compact events: records are derived from (first, count), so building a million costs little log. */
type BenchEvent = { type: 'create'; first: number; count: number } | { type: 'touch'; ids: number[] };

const idOf = (n: number): string => `Customer:019a0000-0000-7000-8000-${String(n).padStart(12, '0')}`;

class CustomerStore implements StateMachine<BenchEvent, never> {
  readonly records = new ChangeTrackingMap<string, CustomerLike>();
  readonly #changed = new ChangeLog<string>();

  constructor() {
    this.records.track(this.#changed);
  }

  apply(event: BenchEvent, at: number): void {
    if (event.type === 'create') {
      for (let n = event.first; n < event.first + event.count; n++) this.records.set(idOf(n), { ...template, id: idOf(n) });
    } else {
      for (const n of event.ids) this.records.set(idOf(n), { ...this.records.get(idOf(n))!, updatedAt: at });
    }
  }
  capture(): DomainImage {
    this.#changed.clear();
    return [...this.records];
  }
  captureColumns(): DomainColumns {
    this.#changed.clear();
    return { ids: [...this.records.keys()], records: [...this.records.values()] };
  }
  captureChanges(): DomainChanges {
    const changes = this.records.takeChanges();
    return { noted: changes.map(([id]) => id), values: changes.map(([, record]) => record) };
  }
  restore(image: DomainImage): void {
    this.records.track(undefined);
    for (const [id, record] of image) this.records.set(id, record as CustomerLike);
    this.records.track(this.#changed);
  }
  checkInvariants(): string[] {
    return [];
  }
  onTimer(): never[] {
    return [];
  }
}

function openEngine(dataDir: string, machine: CustomerStore, reports: string[]): Engine<BenchEvent, never> {
  return new Engine<BenchEvent, never>({
    dataDir,
    clock: systemClock,
    machine,
    snapshotEveryEntries: Number.MAX_SAFE_INTEGER,
    snapshotEveryMs: 24 * 3_600_000,
    report: (line) => reports.push(line),
  });
}

interface Measured {
  ms: number;
  /** Largest gap between two event-loop turns (a setImmediate chain) while it ran. */
  longestTurnMs: number;
  /** monitorEventLoopDelay's max over the same time (1 ms resolution). */
  loopDelayMaxMs: number;
  /** Gaps between turns longer than 10 ms (on a busy machine, preemption counts too). */
  turnsOver10ms: number;
}

async function measure(work: () => Promise<void>): Promise<Measured> {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  let longest = 0;
  let over10 = 0;
  let last = performance.now();
  let running = true;
  const tick = (): void => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    if (now - last > 10) over10++;
    last = now;
    if (running) setImmediate(tick);
  };
  delay.enable();
  setImmediate(tick);
  const started = performance.now();
  await work();
  const ms = performance.now() - started;
  running = false;
  delay.disable();
  return { ms, longestTurnMs: longest, loopDelayMaxMs: delay.max / 1e6, turnsOver10ms: over10 };
}

const dirSize = (dir: string): number => statSync(join(dir, 'data.mdb')).size;

const rows: string[][] = [];
const loads: string[][] = [];
for (const size of SIZES) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-snapshot-'));
  try {
    const reports: string[] = [];
    const machine = new CustomerStore();
    const engine = openEngine(dir, machine, reports);
    await engine.open();
    for (let first = 0; first < size; first += CREATE_PER_ENTRY) {
      const count = Math.min(CREATE_PER_ENTRY, size - first);
      await engine.exec([], () => ({ events: [{ type: 'create', first, count }], reply: () => undefined }));
    }
    const full = await measure(() => engine.snapshot());
    const row = (what: string, m: Measured): string[] => [
      fmtInt(size),
      what,
      fmtInt(engine.lastSnapshot!.written),
      fmtInt(engine.lastSnapshot!.bytes),
      fmtMs(m.ms),
      fmtMs(m.longestTurnMs),
      fmtMs(m.loopDelayMaxMs),
      fmtInt(m.turnsOver10ms),
    ];
    rows.push(row('full (first)', full));
    let touched = 0;
    for (const changes of CHANGES) {
      for (let done = 0; done < changes; done += CHANGE_PER_ENTRY) {
        const ids = Array.from({ length: CHANGE_PER_ENTRY }, (_, i) => (touched + done + i) % size);
        await engine.exec([], () => ({ events: [{ type: 'touch', ids }], reply: () => undefined }));
      }
      touched += changes;
      rows.push(row(`${fmtInt(changes)} changed`, await measure(() => engine.snapshot())));
    }
    // A tail for recovery to replay after the snapshot.
    for (let i = 0; i < 1000; i++) {
      const ids = [i % size];
      await engine.exec([], () => ({ events: [{ type: 'touch', ids }], reply: () => undefined }));
    }
    await engine.close();

    const storeBytes = dirSize(dir);
    const recovered: string[] = [];
    const again = openEngine(dir, new CustomerStore(), recovered);
    const started = performance.now();
    const report = await again.open();
    const ms = performance.now() - started;
    await again.close();
    const loaded = recovered.find((line) => line.includes(' loaded: ')) ?? '';
    loads.push([fmtInt(size), fmtMs(ms), fmtInt(size / (ms / 1000)), fmtInt(report.replayed), fmtInt(storeBytes / 1e6), loaded.replace(/^.*\(/, '(')]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log('\nSnapshot cost (customer-shaped records; times in ms)\n');
console.log(
  markdownTable(
    ['records', 'snapshot', 'values written', 'bytes written', 'wall ms', 'longest turn ms', 'loop delay max ms', 'turns > 10 ms'],
    rows,
    [true, false, true, true, true, true, true, true],
  ),
);
console.log('\nRecovery (load the snapshot, replay a 1,000-entry tail)\n');
console.log(markdownTable(['records', 'open ms', 'records/s', 'entries replayed', 'data.mdb MB', 'read / restore'], loads, [true, true, true, true, true, false]));
