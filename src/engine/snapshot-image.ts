// What a snapshot holds, apart from how it is stored (snapshot.ts): what the engine hands the
// snapshot store to write, and what recovery reads back. A storage may offer an image of its
// own (storage.ts), so these types sit below both.
import type { DomainChanges, DomainColumns, DomainImage, DomainRecords, Effect, IdempotencyRecord, LazyPlace, LazyStore, Timer } from './state-machine.js';

/** What a snapshot writes: every item (full), or what changed since the previous one (undefined: removed). */
export interface SnapshotWrite<T> {
  seq: number;
  at: number;
  full: boolean;
  /** Everything as pairs, or as columns when the machine captures everything that way; or the changes as noted (incremental). */
  records: DomainImage | DomainColumns | DomainChanges;
  timers: ReadonlyArray<readonly [string, Timer<T> | undefined]>;
  effects: ReadonlyArray<readonly [string, Effect | undefined]>;
  idempotency: ReadonlyArray<readonly [number, IdempotencyRecord | undefined]>;
  /** The form each record is stored in (StateMachine.storedForm); absent: as it is. */
  storedForm?: (id: string, record: unknown) => unknown;
  /** Which records go to lazy chunks, and the keys each is found by besides its id (StateMachine.lazyKeys). */
  lazyKeys?: (id: string, record: unknown, key: (hash: number) => void) => LazyPlace | undefined;
  /** The kinds whose records `lazyKeys` places (StateMachine.lazyKinds). */
  lazyKinds?: readonly string[];
  /** Items pending after this snapshot, checked at load. */
  counts: { timers: number; effects: number; idempotency: number };
}

export interface SnapshotImage<T> {
  seq: number;
  at: number;
  records: DomainImage;
  timers: Timer<T>[];
  effects: Effect[];
  /** In insertion order, with their insertion numbers. */
  idempotency: Array<[number, IdempotencyRecord]>;
  /** Loaded from an older layout: the next snapshot must write everything. */
  legacy: boolean;
}

export interface SnapshotStats {
  /** Items written (removals included). */
  written: number;
  /** Chunk values put. */
  chunks: number;
  bytes: number;
  /** Values removed after the manifest switch: older generations after a full snapshot, and older layouts once. */
  removed: number;
}

/** What a snapshot holds besides its records: whole only once the records have all been read. */
export type SnapshotRest<T> = Pick<SnapshotImage<T>, 'timers' | 'effects' | 'idempotency'>;

/**
 * A snapshot read as recovery restores it: `records` yields each record once, read and decoded
 * chunk by chunk as it is restored, so what decoding a chunk makes dies young instead of
 * living until the whole snapshot is read; `rest` gives the timers, effects and idempotency
 * records (counted and checked) once `records` has been read to its end.
 */
export interface SnapshotStream<T> {
  seq: number;
  at: number;
  legacy: boolean;
  records: DomainRecords;
  /** The records left in lazy chunks, for the machine to read on first use. */
  lazy?: LazyStore;
  /** How many records `records` has yielded so far. */
  readonly recordsRead: number;
  rest(): SnapshotRest<T>;
}

/** An image read whole (an older layout's, or one a storage offers) as a stream. */
export function streamOf<T>(image: SnapshotImage<T>): SnapshotStream<T> {
  return { seq: image.seq, at: image.at, legacy: image.legacy, records: image.records, recordsRead: image.records.length, rest: () => image };
}
