// Durable timers: a timer is written to the log when set and when done, so the pending
// set is part of the recovered state and re-arms after a restart. One clock callback is
// armed at a time, for the earliest due timer; a min-heap keeps the order. Firing is
// paced: at most TIMERS_PER_TURN are started per event-loop turn, the rest on the next
// turns, so thousands that fell due during an outage do not start in one storm.
import type { Clock } from './clock.js';
import { ChangeLog, ChangeTrackingMap } from './change-log.js';
import type { Timer } from './state-machine.js';

/** Timers started per event-loop turn when many are due at once. */
export const TIMERS_PER_TURN = 100;

export class TimerTable<T> {
  readonly #pending = new ChangeTrackingMap<string, Timer<T>>();
  /** Ids set or removed since the last snapshot capture (bounded by the entries between snapshots). */
  readonly #changed = new ChangeLog<string>();
  #heap: Timer<T>[] = [];
  #cancelArmed: (() => void) | undefined;
  #armedAt = Infinity;
  /** Set while the next paced batch waits for its turn. */
  #nextBatch: NodeJS.Immediate | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly fire: (timers: Timer<T>[]) => void,
  ) {
    this.#pending.track(this.#changed);
  }

  get size(): number {
    return this.#pending.size;
  }

  /** The earliest due time among pending timers (fired ones included until they are done). */
  earliestDue(): number | undefined {
    let earliest: number | undefined;
    for (const timer of this.#pending.values()) if (earliest === undefined || timer.due < earliest) earliest = timer.due;
    return earliest;
  }

  values(): IterableIterator<Timer<T>> {
    return this.#pending.values();
  }

  add(timer: Timer<T>): void {
    this.#pending.set(timer.id, timer);
    this.#push(timer);
  }

  remove(id: string): void {
    // Heap entries of removed timers are skipped when they surface.
    this.#pending.delete(id);
  }

  get(id: string): Timer<T> | undefined {
    return this.#pending.get(id);
  }

  /** The timers set or removed since the last call (undefined: removed), for a snapshot. */
  takeChanges(): Array<[string, Timer<T> | undefined]> {
    return this.#pending.takeChanges();
  }

  /** What is pending now is what the snapshot holds: no changes to write. */
  forgetChanges(): void {
    this.#changed.clear();
  }

  /** Arms the clock for the earliest pending timer (after recovery, and after each change). */
  arm(): void {
    if (this.#nextBatch !== undefined) return;
    const next = this.#peek();
    if (next === undefined) {
      this.#disarm();
      return;
    }
    if (next.due >= this.#armedAt && this.#cancelArmed !== undefined) return;
    this.#disarm();
    this.#armedAt = next.due;
    this.#cancelArmed = this.clock.schedule(next.due, () => {
      this.#cancelArmed = undefined;
      this.#armedAt = Infinity;
      this.#fireDue();
    });
  }

  stop(): void {
    this.#disarm();
    if (this.#nextBatch !== undefined) clearImmediate(this.#nextBatch);
    this.#nextBatch = undefined;
  }

  #disarm(): void {
    this.#cancelArmed?.();
    this.#cancelArmed = undefined;
    this.#armedAt = Infinity;
  }

  #fireDue(): void {
    this.#nextBatch = undefined;
    const now = this.clock.now();
    const due: Timer<T>[] = [];
    let next = this.#peek();
    for (; next !== undefined && next.due <= now && due.length < TIMERS_PER_TURN; next = this.#peek()) {
      this.#pop();
      due.push(next);
    }
    if (due.length > 0) this.fire(due);
    if (next !== undefined && next.due <= now) {
      this.#disarm();
      this.#nextBatch = setImmediate(() => this.#fireDue());
    } else {
      this.arm();
    }
  }

  /** The earliest live timer, dropping stale heap entries on the way. */
  #peek(): Timer<T> | undefined {
    while (this.#heap.length > 0) {
      const top = this.#heap[0]!;
      if (this.#pending.get(top.id) === top) return top;
      this.#pop();
    }
    return undefined;
  }

  #push(timer: Timer<T>): void {
    const heap = this.#heap;
    heap.push(timer);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop();
    if (last === undefined || heap.length === 0) return;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
      if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
      if (m === i) break;
      [heap[i], heap[m]] = [heap[m]!, heap[i]!];
      i = m;
    }
  }
}

function before<T>(a: Timer<T>, b: Timer<T>): boolean {
  return a.due < b.due || (a.due === b.due && a.id < b.id);
}
