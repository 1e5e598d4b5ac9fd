// The idempotency records by key, in insertion order (expiry and eviction trim from the
// front, so after a restore the order must be the one the live process had). Each key gets
// an insertion number when it is set; a snapshot stores records by that number, so loading
// them in key order rebuilds the Map's order, and only insertions and removals since the
// previous snapshot are written.
import type { IdempotencyRecord } from './state-machine.js';

export class IdempotencyTable extends Map<string, IdempotencyRecord> {
  // Built empty only: Map's constructor would call `set` before these fields exist.
  private readonly orderOf = new Map<string, number>();
  private nextOrder = 0;
  /** Insertion numbers from here on were never captured by a snapshot. */
  private uncapturedFrom = 0;
  /**
   * By insertion number, what a snapshot must write: the record, or undefined where a
   * captured one was removed. Bounded by the records kept plus those removed since the last
   * capture.
   */
  private readonly changes = new Map<number, IdempotencyRecord | undefined>();

  override set(key: string, record: IdempotencyRecord): this {
    let order = this.orderOf.get(key);
    if (order === undefined) {
      order = this.nextOrder++;
      this.orderOf.set(key, order);
    }
    this.changes.set(order, record);
    return super.set(key, record);
  }

  override delete(key: string): boolean {
    const order = this.orderOf.get(key);
    if (order === undefined) return false;
    this.orderOf.delete(key);
    // Removing what no snapshot holds yet needs no tombstone.
    if (order >= this.uncapturedFrom) this.changes.delete(order);
    else this.changes.set(order, undefined);
    return super.delete(key);
  }

  override clear(): void {
    for (const key of [...this.keys()]) this.delete(key);
  }

  /** Puts a record read back from a snapshot, at its insertion number (call in ascending order). */
  restore(order: number, record: IdempotencyRecord): void {
    this.orderOf.set(record.key, order);
    super.set(record.key, record);
    this.nextOrder = Math.max(this.nextOrder, order + 1);
    this.uncapturedFrom = this.nextOrder;
  }

  /** Every record with its insertion number, for a full snapshot; change tracking restarts. */
  captureAll(): Array<[number, IdempotencyRecord]> {
    this.#restartChanges();
    const out: Array<[number, IdempotencyRecord]> = [];
    for (const [key, record] of this) out.push([this.orderOf.get(key)!, record]);
    return out;
  }

  /** Insertions (the record) and removals (undefined) since the last capture, by insertion number. */
  captureChanges(): Array<[number, IdempotencyRecord | undefined]> {
    const out = [...this.changes];
    this.#restartChanges();
    return out;
  }

  #restartChanges(): void {
    this.changes.clear();
    this.uncapturedFrom = this.nextOrder;
  }
}
