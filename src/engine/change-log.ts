// Change tracking for incremental snapshots: the maps that note every set and delete
// (ChangeTrackingMap), and the log they note into (ChangeLog), which a snapshot's start takes
// whole (state-machine.ts, DomainChanges).

/** Keys a change log holds at least before it drops its duplicates on the write path. */
const CHANGE_LOG_FLOOR = 65_536;
/** The latest keys noted that tell whether the log repeats itself. */
const CHANGE_LOG_SAMPLE = 1_024;
/** The latest notes a key noted again replaces its value in (ChangeLog.note): a payment's entry notes about four keys. */
const NOTE_WINDOW = 8;

/**
 * The keys changed since the changes were last taken, each with the value it was set to
 * (undefined: removed), noted with two array pushes: a Set's insert on every write was a
 * hash operation, on the write path, into a table of every key changed since the previous
 * snapshot. Taking them hands over the arrays as they are (`takeNoted`), so a snapshot's
 * start costs nothing however much changed: its writer drops the duplicates later, in its
 * own slices (two seconds of one synchronous block at 1.2 million changes, docs/bench.md,
 * session 44). So that a key written over and over cannot grow the log without bound,
 * duplicates are also dropped when the log has doubled past what it held after the last
 * drop (at least CHANGE_LOG_FLOOR keys) and either its latest keys repeat or it holds twice
 * as many keys as can be distinct. Every key noted since the last take is in one of the maps
 * that note here (`watch`), or was removed from one since. So while records are created (a
 * replayed log of new customers) the log is not searched for duplicates it does not hold,
 * each search having cost a Set insert per key noted so far; and it never holds more than
 * twice the keys of the state it tracks.
 */
export class ChangeLog<K> {
  #keys: K[] = [];
  #values: unknown[] = [];
  #dropAt = CHANGE_LOG_FLOOR;
  readonly #maps = new Set<ReadonlyMap<K, unknown>>();
  /** Keys removed from the watched maps since the last take: distinct keys the maps no longer hold. */
  #removed = 0;

  /** `map` notes its changes here: the keys it holds count towards the keys the log may hold distinct. */
  watch(map: ReadonlyMap<K, unknown>): void {
    this.#maps.add(map);
  }

  /**
   * `key` was set to `value` (undefined: removed). A key noted again within the last
   * NOTE_WINDOW notes takes its earlier place's value instead: one entry writes a record
   * twice (a quote made and executed at once), and the first version, held here until the
   * snapshot's start took it, outlived the collector's young generation for nothing.
   */
  note(key: K, value: unknown): void {
    const keys = this.#keys;
    for (let i = keys.length - 1, end = Math.max(0, keys.length - NOTE_WINDOW); i >= end; i--) {
      if (keys[i] === key) {
        this.#values[i] = value;
        return;
      }
    }
    this.#values.push(value);
    if (this.#keys.push(key) >= this.#dropAt) this.#bound();
  }

  /** A key removed from a watched map. */
  noteRemoved(key: K): void {
    this.#removed++;
    this.note(key, undefined);
  }

  #bound(): void {
    if (this.#keys.length < 2 * this.#distinctAtMost() && !this.#repeating()) {
      this.#dropAt = 2 * this.#keys.length;
      return;
    }
    [this.#keys, this.#values] = latestOf(this.#keys, this.#values);
    this.#dropAt = Math.max(CHANGE_LOG_FLOOR, 2 * this.#keys.length);
  }

  /** How many of the keys noted can be distinct: those the maps hold, and those removed since the last take. */
  #distinctAtMost(): number {
    let distinct = this.#removed;
    for (const map of this.#maps) distinct += map.size;
    return distinct;
  }

  /** Whether fewer than half of the latest keys noted are distinct. */
  #repeating(): boolean {
    const latest = new Set<K>();
    const from = Math.max(0, this.#keys.length - CHANGE_LOG_SAMPLE);
    for (let i = from; i < this.#keys.length; i++) latest.add(this.#keys[i]!);
    return 2 * latest.size < this.#keys.length - from;
  }

  /** Every change noted since the last take, repeats included (but those within NOTE_WINDOW notes of the last), as it was noted; the log starts empty again. */
  takeNoted(): { keys: K[]; values: unknown[] } {
    const noted = { keys: this.#keys, values: this.#values };
    this.clear();
    return noted;
  }

  /** Each key changed since the last take, once, in the order it was first noted, with its last value; the log starts empty again. */
  take(): Array<[K, unknown]> {
    const [keys, values] = latestOf(this.#keys, this.#values);
    this.clear();
    return keys.map((key, i) => [key, values[i]]);
  }

  clear(): void {
    this.#keys = [];
    this.#values = [];
    this.#dropAt = CHANGE_LOG_FLOOR;
    this.#removed = 0;
  }

  /** Keys noted, duplicates included (what the log costs in memory). */
  get length(): number {
    return this.#keys.length;
  }
}

/** Keys and values as noted, each key kept once, in the order it first appears, with the value of its last appearance. */
export class LatestChanges<K> {
  readonly keys: K[] = [];
  readonly values: unknown[] = [];
  readonly #at = new Map<K, number>();

  add(key: K, value: unknown): void {
    const place = this.#at.get(key);
    if (place !== undefined) {
      this.values[place] = value;
      return;
    }
    this.#at.set(key, this.keys.length);
    this.keys.push(key);
    this.values.push(value);
  }
}

/** Each key of `keys` once, in the order it first appears, with the value of its last appearance. */
export function latestOf<K>(keys: readonly K[], values: readonly unknown[]): [K[], unknown[]] {
  const latest = new LatestChanges<K>();
  for (let i = 0; i < keys.length; i++) latest.add(keys[i]!, values[i]);
  return [latest.keys, latest.values];
}

/**
 * A Map that notes the key of every set and delete in a change log, so a snapshot can write
 * only what changed since the previous one. The log may be shared by several maps (the
 * registry's kinds) or be the map's own.
 */
export class ChangeTrackingMap<K, V> extends Map<K, V> {
  // Not a #private field: Map's constructor may call `set` before those exist.
  private changes: ChangeLog<K> | undefined;

  /** From now on, changes are noted in `changes` (undefined: not noted, as while restoring). */
  track(changes: ChangeLog<K> | undefined): void {
    this.changes = changes;
    changes?.watch(this);
  }

  override set(key: K, value: V): this {
    this.changes?.note(key, value);
    return super.set(key, value);
  }

  override delete(key: K): boolean {
    if (!super.delete(key)) return false;
    this.changes?.noteRemoved(key);
    return true;
  }

  override clear(): void {
    if (this.changes !== undefined) for (const key of this.keys()) this.changes.noteRemoved(key);
    super.clear();
  }

  /** The keys changed since the last call, with their values now, when the map tracks its own log. */
  takeChanges(): Array<[K, V | undefined]> {
    // Every value this map noted is one it was set to (or undefined: removed).
    return this.changes === undefined ? [] : (this.changes.take() as Array<[K, V | undefined]>);
  }
}
