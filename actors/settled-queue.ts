// The webhook events that reached DELIVERED or FAILED, oldest settled first: what the
// retention sweep (actors/webhook-event.ts) walks from the front, so a sweep costs what it
// prunes, not what the outbox holds. An index, not state: rebuilt on restore, and an entry
// whose event was requeued, settled again or pruned stays here until the front passes it
// (the owner tells stale from live), so removal is never a search.

/** Entries the front may pass before the passed prefix is cut off the arrays. */
const RECLAIM_AFTER = 1024;

export class SettledQueue {
  /** Parallel arrays (no object per entry): the id, and when it settled. */
  #ids: string[] = [];
  #times: number[] = [];
  #start = 0;
  /** False after a restore put entries in id order; sorted once before the first read. */
  #sorted = true;

  get size(): number {
    return this.#ids.length - this.#start;
  }

  /**
   * An event that settled at `at`, in log order: an entry of an older time than the one
   * before it (its decision waited on something) is pruned late, never early, as the sweep
   * stops at the first entry not yet due.
   */
  push(id: string, at: number): void {
    this.#ids.push(id);
    this.#times.push(at);
  }

  /** An entry from a snapshot: the order is set right before the next read. */
  restore(id: string, at: number): void {
    this.push(id, at);
    this.#sorted = false;
  }

  /** The oldest entry, undefined when empty. */
  head(): { id: string; at: number } | undefined {
    this.#sort();
    if (this.#start === this.#ids.length) return undefined;
    return { id: this.#ids[this.#start]!, at: this.#times[this.#start]! };
  }

  /** Drops the oldest entry. */
  shift(): void {
    this.#start++;
    if (this.#start > RECLAIM_AFTER && this.#start * 2 > this.#ids.length) {
      this.#ids = this.#ids.slice(this.#start);
      this.#times = this.#times.slice(this.#start);
      this.#start = 0;
    }
  }

  /** Visits entries oldest first while `visit` returns true. */
  walk(visit: (id: string, at: number) => boolean): void {
    this.#sort();
    for (let i = this.#start; i < this.#ids.length; i++) if (!visit(this.#ids[i]!, this.#times[i]!)) return;
  }

  #sort(): void {
    if (this.#sorted) return;
    this.#sorted = true;
    const order = Array.from({ length: this.#ids.length - this.#start }, (_, i) => this.#start + i);
    const ids = this.#ids;
    const times = this.#times;
    order.sort((a, b) => times[a]! - times[b]! || (ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : 0));
    this.#ids = order.map((i) => ids[i]!);
    this.#times = order.map((i) => times[i]!);
    this.#start = 0;
  }
}
