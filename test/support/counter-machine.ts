// A minimal domain for engine tests: named counters. Deterministic, like the real world.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine, type EngineOptions } from '../../src/engine/engine.js';
import type { Clock } from '../../src/engine/clock.js';
import { ChangeLog, ChangeTrackingMap } from '../../src/engine/change-log.js';
import type { DomainChanges, DomainImage, StateMachine } from '../../src/engine/state-machine.js';

/** `drop` removes a counter (so snapshots see removals). */
export type CounterEvent = { type: 'add'; id: string; n: number } | { type: 'drop'; id: string };
/** `bonus` adds n; `broken` always fails, to exercise retries. */
export type CounterTimer = { type: 'bonus'; id: string; n: number } | { type: 'broken'; id: string };

export class Counters implements StateMachine<CounterEvent, CounterTimer> {
  readonly values = new ChangeTrackingMap<string, number>();
  readonly #changed = new ChangeLog<string>();
  applied = 0;
  /** onTimer calls, failed ones included. */
  timerCalls = 0;

  constructor() {
    this.values.track(this.#changed);
  }

  apply(event: CounterEvent): void {
    if (event.type === 'drop') {
      this.values.delete(event.id);
      this.applied++;
      return;
    }
    const next = (this.values.get(event.id) ?? 0) + event.n;
    if (next < 0) throw new Error(`counter ${event.id} would go negative`);
    this.values.set(event.id, next);
    this.applied++;
  }

  capture(): DomainImage {
    this.#changed.clear();
    return [...this.values];
  }

  captureChanges(): DomainChanges {
    // As noted, repeats included, as the registry hands them over: the snapshot's writer drops the repeats.
    const { keys, values } = this.#changed.takeNoted();
    return { noted: keys, values };
  }

  restore(image: DomainImage): void {
    for (const [id, value] of image) this.values.set(id, value as number);
    this.#changed.clear();
  }

  checkInvariants(): string[] {
    return [...this.values].filter(([, v]) => v < 0).map(([id, v]) => `${id} is ${v}`);
  }

  onTimer(message: CounterTimer): CounterEvent[] {
    this.timerCalls++;
    if (message.type === 'broken') throw new Error(`timer handler for ${message.id} is broken`);
    return [{ type: 'add', id: message.id, n: message.n }];
  }
}

export function add(id: string, n: number): CounterEvent {
  return { type: 'add', id, n };
}

export function drop(id: string): CounterEvent {
  return { type: 'drop', id };
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'engine-test-'));
}

export interface OpenedCounters {
  engine: Engine<CounterEvent, CounterTimer>;
  counters: Counters;
  reports: string[];
  /** What `onFatal` was called with (tests record instead of exiting). */
  fatal: string[];
}

type Overrides = Partial<Omit<EngineOptions<CounterEvent, CounterTimer>, 'dataDir' | 'clock' | 'machine'>>;

/** An engine over counters with a manual clock; automatic snapshots are off unless asked for. */
export async function openCounterEngine(
  dataDir: string,
  clock: Clock,
  overrides: Overrides = {},
  beforeOpen?: (engine: Engine<CounterEvent, CounterTimer>) => void,
): Promise<OpenedCounters> {
  const counters = new Counters();
  const reports: string[] = [];
  const fatal: string[] = [];
  const engine = new Engine<CounterEvent, CounterTimer>({
    dataDir,
    clock,
    machine: counters,
    snapshotEveryEntries: 1_000_000,
    snapshotEveryMs: 3_600_000,
    report: (line) => reports.push(line),
    onFatal: (what) => fatal.push(what),
    ...overrides,
  });
  beforeOpen?.(engine);
  await engine.open();
  return { engine, counters, reports, fatal };
}

/** Waits for work that runs on the event loop (timers, effects, background snapshots). */
export async function waitFor(condition: () => boolean, what = 'condition'): Promise<void> {
  for (let i = 0; i < 2500; i++) {
    if (condition()) return;
    // Mostly the disk is awaited (an fsync takes milliseconds), not the clock.
    await new Promise((resolve) => (i < 50 ? setImmediate(resolve) : setTimeout(resolve, 2)));
  }
  throw new Error(`${what} not reached`);
}
