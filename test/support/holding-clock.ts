// A ManualClock whose due callbacks can be held back: while held, `advance` moves time
// but what falls due (the engine's durable timers, the webhook worker's wake-ups) only
// waits, until `release` runs it in the order it fell due. A test can then put a request
// at a moment past some expiry before the timer that ends it has run, which is the only
// way to show that the request's own check, not the timer, refuses it.
import { ManualClock } from '../../src/engine/clock.js';

export class HoldingClock extends ManualClock {
  #holding = false;
  readonly #held: Array<{ fn: () => void; cancelled: boolean }> = [];

  override schedule(at: number, fn: () => void): () => void {
    const entry = { fn, cancelled: false };
    // Decided when the callback falls due, so callbacks scheduled before `hold` are held too.
    const cancel = super.schedule(at, () => {
      if (this.#holding) this.#held.push(entry);
      else fn();
    });
    // A callback cancelled while held must not run on release (the engine re-arms by cancelling).
    return () => {
      entry.cancelled = true;
      cancel();
    };
  }

  /** From now on, callbacks that fall due wait for `release`. */
  hold(): void {
    this.#holding = true;
  }

  /** Runs the held callbacks (in the order they fell due) and stops holding. */
  release(): void {
    this.#holding = false;
    for (const entry of this.#held.splice(0)) if (!entry.cancelled) entry.fn();
  }

  /** How many callbacks fell due while held and wait to run. */
  get heldCount(): number {
    return this.#held.filter((e) => !e.cancelled).length;
  }
}
