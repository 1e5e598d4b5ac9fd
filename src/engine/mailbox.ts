// A mailbox admits one message at a time to its actor, in arrival order, and keeps the
// actor held while that message waits for the other actors it names. Waiting messages are bounded:
// a full mailbox refuses at once, so overload becomes a 429 instead of unbounded memory.

export class MailboxFullError extends Error {
  constructor(readonly actorId: string) {
    super(`mailbox of ${actorId} is full`);
  }
}

export const MAILBOX_CAPACITY = 1024;

export class Mailbox {
  #busy = false;
  readonly #waiting: Array<() => void> = [];

  constructor(readonly actorId: string, readonly capacity = MAILBOX_CAPACITY) {}

  get depth(): number {
    return this.#waiting.length + (this.#busy ? 1 : 0);
  }

  /** Takes the actor at once if it is idle; the fast path needs no promise. */
  tryEnter(): boolean {
    if (this.#busy) return false;
    this.#busy = true;
    return true;
  }

  enter(): Promise<void> {
    if (this.tryEnter()) return Promise.resolve();
    if (this.#waiting.length >= this.capacity) return Promise.reject(new MailboxFullError(this.actorId));
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** Hands the actor to the next waiting message, or marks it idle. */
  leave(): void {
    const next = this.#waiting.shift();
    if (next === undefined) this.#busy = false;
    else next();
  }
}
