// Time is injected so that handlers stay deterministic and tests move time instead of
// sleeping. The engine reads the clock once per log entry; every delay is a durable timer
// scheduled through `schedule`.

export interface Clock {
  now(): number;
  /** Calls `fn` once the clock reaches `at` (ms since epoch). Returns a cancel function. */
  schedule(at: number, fn: () => void): () => void;
}

/** Longest single setTimeout Node accepts; longer waits are re-armed in steps. */
const MAX_TIMEOUT_MS = 2_147_483_647;

export const systemClock: Clock = {
  now: () => Date.now(),
  schedule(at, fn) {
    let handle: NodeJS.Timeout;
    const arm = (): void => {
      const wait = at - Date.now();
      if (wait <= 0) {
        handle = setTimeout(fn, 0);
      } else {
        handle = setTimeout(wait > MAX_TIMEOUT_MS ? arm : fn, Math.min(wait, MAX_TIMEOUT_MS));
      }
      handle.unref();
    };
    arm();
    return () => clearTimeout(handle);
  },
};

interface Scheduled {
  at: number;
  order: number;
  fn: () => void;
  cancelled: boolean;
}

/** A clock that only moves when told to. Due callbacks run in (time, scheduling) order. */
export class ManualClock implements Clock {
  #now: number;
  #order = 0;
  #pending: Scheduled[] = [];

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  schedule(at: number, fn: () => void): () => void {
    const entry: Scheduled = { at, order: this.#order++, fn, cancelled: false };
    this.#pending.push(entry);
    return () => {
      entry.cancelled = true;
    };
  }

  /** Moves time forward by `ms`, running every callback that falls due on the way. */
  advance(ms: number): void {
    if (ms < 0) throw new Error('time does not run backwards');
    const target = this.#now + ms;
    for (;;) {
      this.#pending = this.#pending.filter((e) => !e.cancelled);
      this.#pending.sort((a, b) => a.at - b.at || a.order - b.order);
      const next = this.#pending[0];
      if (next === undefined || next.at > target) break;
      this.#pending.shift();
      this.#now = Math.max(this.#now, next.at);
      next.fn();
    }
    this.#now = target;
  }
}
