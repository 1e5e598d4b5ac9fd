// Change tracking for incremental snapshots: the keys a map's writes touched since the
// previous snapshot, noted cheaply on the write path, and the capture a snapshot reads them
// through, as of the moment it was taken (state-machine.ts re-exports these for the domain).

/** The records changed since the previous capture; undefined: removed. */
export type DomainChanges = Iterable<readonly [string, unknown]>;

/**
 * The records changed since the previous capture, each as it was when this capture was
 * taken, however much it changes while the snapshot reads them (ChangeLog `openCapture`);
 * `release` once the snapshot is written or has failed.
 */
export interface CapturedChanges extends DomainChanges {
  release(): void;
}

/**
 * A capture `log` opened (`openCapture`) of `keys`, each read once, as of then: the value kept
 * at its first change since, or `current(key)`, which must read the map itself (no loader).
 */
export function capturedChanges<K extends string>(log: ChangeLog<K>, keys: readonly K[], current: (key: K) => unknown): CapturedChanges {
  return {
    *[Symbol.iterator]() {
      const seen = new Set<K>();
      for (const key of keys) {
        if (seen.has(key)) continue;
        seen.add(key);
        yield [key, log.valueAt(key, current)] as const;
      }
    },
    release: () => log.release(),
  };
}

/** Keys a change log holds at least before it drops its duplicates on the write path. */
const CHANGE_LOG_FLOOR = 65_536;
/** The latest keys noted that tell whether the log repeats itself. */
const CHANGE_LOG_SAMPLE = 1_024;

/**
 * The keys changed since the changes were last taken, noted with an array push: a Set's
 * insert on every write was a hash operation, on the write path, into a table of every key
 * changed since the previous snapshot. Duplicates are dropped when the changes are taken,
 * and, so that a key written over and over cannot grow the log without bound, when the log
 * has doubled past what it held after the last drop (at least CHANGE_LOG_FLOOR keys) and
 * either its latest keys repeat or it holds twice as many keys as can be distinct. Every key
 * noted since the last take is in one of the maps that note here (`watch`), or was removed
 * from one since. So while records are created (a replayed log of new customers) the log is
 * not searched for duplicates it does not hold, each search having cost a Set insert per key
 * noted so far; and it never holds more than twice the keys of the state it tracks.
 */
export class ChangeLog<K> {
  #keys: K[] = [];
  #dropAt = CHANGE_LOG_FLOOR;
  readonly #maps = new Set<ReadonlyMap<K, unknown>>();
  /** Keys removed from the watched maps since the last take: distinct keys the maps no longer hold. */
  #removed = 0;

  /** `map` notes its changes here: the keys it holds count towards the keys the log may hold distinct. */
  watch(map: ReadonlyMap<K, unknown>): void {
    this.#maps.add(map);
  }

  note(key: K): void {
    if (this.#keys.push(key) >= this.#dropAt) this.#bound();
  }

  /** A key removed from a watched map. */
  noteRemoved(key: K): void {
    this.#removed++;
    this.note(key);
  }

  #bound(): void {
    if (this.#keys.length < 2 * this.#distinctAtMost() && !this.#repeating()) {
      this.#dropAt = 2 * this.#keys.length;
      return;
    }
    this.#keys = [...new Set(this.#keys)];
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

  /**
   * While a capture is open (`openCapture`): the value each key held when it was taken,
   * kept at the key's first change since (undefined: it held none).
   */
  #kept: Map<K, unknown> | undefined;

  /** Whether a capture is open: a map's change must first `keep` what it overwrites. */
  get capturing(): boolean {
    return this.#kept !== undefined;
  }

  /** Before `map` changes `key` while a capture is open: keeps `key`'s value, unless kept already. */
  keep(key: K, map: ReadonlyMap<K, unknown>): void {
    if (!this.#kept!.has(key)) this.#kept!.set(key, Map.prototype.get.call(map, key));
  }

  /**
   * The keys noted since the last take, duplicates included, as a capture that `valueAt`
   * reads as of now until `release`: the log starts empty again, and each key's first change
   * from now on keeps the value it overwrites. Taking a capture is constant time, where
   * dropping the duplicates and reading a hundred thousand records held the event loop for
   * a tenth of a second at a snapshot's start; the snapshot reads them in its slices.
   */
  openCapture(): K[] {
    if (this.#kept !== undefined) throw new Error('a capture is open already');
    const keys = this.#keys;
    this.clear();
    this.#kept = new Map();
    return keys;
  }

  /** `key`'s value when the open capture was taken: the one kept, or, when it has not changed since, `current(key)`. */
  valueAt(key: K, current: (key: K) => unknown): unknown {
    return this.#kept?.has(key) === true ? this.#kept.get(key) : current(key);
  }

  /** Ends the open capture: changes keep nothing any more. */
  release(): void {
    this.#kept = undefined;
  }

  /** Each key noted since the last take, once, in the order it was first noted; the log starts empty again. */
  take(): K[] {
    const keys = [...new Set(this.#keys)];
    this.clear();
    return keys;
  }

  clear(): void {
    this.#keys = [];
    this.#dropAt = CHANGE_LOG_FLOOR;
    this.#removed = 0;
  }

  /** Keys noted, duplicates included (what the log costs in memory). */
  get length(): number {
    return this.#keys.length;
  }
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
    const changes = this.changes;
    if (changes !== undefined) {
      if (changes.capturing) changes.keep(key, this);
      changes.note(key);
    }
    return super.set(key, value);
  }

  override delete(key: K): boolean {
    if (this.changes?.capturing === true) this.changes.keep(key, this);
    if (!super.delete(key)) return false;
    this.changes?.noteRemoved(key);
    return true;
  }

  override clear(): void {
    const changes = this.changes;
    if (changes !== undefined) {
      for (const key of this.keys()) {
        if (changes.capturing) changes.keep(key, this);
        changes.noteRemoved(key);
      }
    }
    super.clear();
  }

  /** The keys changed since the last capture, read as of now (`capturedChanges`), when the map tracks its own log of string keys. */
  captureChanges(this: ChangeTrackingMap<string, V>): CapturedChanges {
    const log = this.changes!;
    return capturedChanges(log, log.openCapture(), (key) => Map.prototype.get.call(this, key));
  }

  /** The keys changed since the last call (with their values now) when the map tracks its own log. */
  takeChanges(): Array<[K, V | undefined]> {
    const out: Array<[K, V | undefined]> = [];
    if (this.changes === undefined) return out;
    for (const key of this.changes.take()) out.push([key, this.get(key)]);
    return out;
  }
}
