// The record-kind registry. Each kind of record (platform environment, customer, account,
// wallet, quote, transaction, webhook event, ...) is one module that declares
// its id prefix, how the event types it cares about change its records and indexes, how
// its records come back from a snapshot, and its invariants. `Registry` composes the kinds
// into the engine's StateMachine: `apply` looks the event type up in a map (one event type
// may change several kinds: a created customer also brings its internal accounts),
// `restore` routes each record by its id prefix, `capture` and `checkInvariants` visit
// every kind. Each kind keeps its records in a `RecordMap`, which notes changed ids in a log
// the registry shares, so `captureChanges` hands a snapshot only what changed. Adding a
// kind is registering it; nothing here changes.
import { ChangeLog, ChangeTrackingMap } from '../src/engine/change-log.js';
import {
  ActorNotHeldError,
  type DomainChanges,
  type DomainColumns,
  type DomainImage,
  type DomainEvent,
  type DomainRecords,
  type EventLayout,
  type LazyChunk,
  type LazyPlace,
  type LazyRecords,
  type LazyStore,
  type LazyWritten,
  type StateMachine,
} from '../src/engine/state-machine.js';
import { lowerBound } from '../src/engine/ids.js';

/**
 * How each event type in `E` changes one kind's records. A kind declares the events it
 * applies as the shapes it reads (often fewer fields than the producer writes), so a kind
 * need not import the module that makes the event; `register` checks that every event of
 * the state machine with such a type fits the shape.
 */
export type Appliers<E extends DomainEvent> = { readonly [T in E['type']]: (event: Extract<E, { type: T }>, at: number) => void };

/** The event types of `K` some event of `E` with that type does not fit (never: all fit). */
type Unfitting<E extends DomainEvent, K extends DomainEvent> = {
  [T in K['type']]: [Extract<E, { type: T }>] extends [Extract<K, { type: T }>] ? never : T;
}[K['type']];

/** What invariant checks may ask about other kinds' records. */
export interface RecordLookup {
  has(id: string): boolean;
}

export interface RecordKind<R, E extends DomainEvent> {
  /** `<Kind>:`; every id of this kind starts with it, and no other kind's does. */
  readonly idPrefix: string;
  /** The event types this kind applies; `apply` must not fail for a decided event. */
  readonly appliers: Appliers<E>;
  /**
   * Every record by id, a `RecordMap` (so snapshots see every change). Records are immutable
   * (replaced, never mutated): a snapshot holds references.
   */
  readonly records: ReadonlyMap<string, R>;
  /**
   * Puts a record read back from a snapshot, with its index entries: the record itself, or
   * the form `stored` made of it (`id` is the record's id, as the snapshot keys it).
   */
  restore(record: R, id: string): void;
  /** Optional: the form a snapshot stores a record in, when cheaper to write and read back than the record. */
  stored?(record: R): unknown;
  /**
   * Optional: called once a snapshot's records of every kind are restored, before anything
   * else reads them, for a stored form that names records of another kind (restored in
   * any order) to take them; kind by kind in the order they were registered (a kind whose
   * stored form names another's records registers after it).
   */
  restoredAll?(): void;
  /**
   * Optional, with `restoreLazy`: a snapshot leaves this kind's records in lazy chunks, and
   * `key` is told the `lazyHash` of each key besides its id a record is found by there
   * (state-machine.ts LazyRecords).
   */
  lazyKeys?(record: R, key: (hash: number) => void): void;
  /** The records a restored snapshot left in lazy chunks: the kind reads them when first asked for. */
  restoreLazy?(lazy: LazyRecords): void;
  /**
   * Optional, instead of `lazyKeys` and `restoreLazy`: snapshots leave this kind's records in
   * lazy chunks, found by id alone, and the registry drops from memory each record for which
   * this is true once a snapshot holds it (settled history: an executed quote, a completed
   * transaction), reading it back on first use. True only of a record whose restore adds
   * nothing but index entries, and those idempotently. Recovery reads such a kind's chunks
   * one by one, for their index entries, and drops the settled records again.
   */
  settled?(record: R): boolean;
  /**
   * Optional, with `settled`: puts a record read back after it left memory, whose index
   * entries are there already (absent: `restore`, which puts them again).
   */
  readBack?(record: R, id: string): void;
  /** Violated invariants of this kind, as sentences. */
  checkInvariants(lookup: RecordLookup): string[];
  /** Whether a record exists, for kinds whose records are not all stored (derived ones); else `records.has`. */
  has?(id: string): boolean;
  /**
   * Optional: the records one by one as the state's digest counts them, for a kind whose
   * `records` holds some grouped (one stored record standing for several); absent: `records`.
   */
  eachRecord?(): Iterable<readonly [string, unknown]>;
  /** Optional: this kind's hot events the log writes in rows (state-machine.ts EventLayout). */
  readonly logLayouts?: readonly EventLayout[];
  /**
   * The actor a decision must hold to read or write `record` (the engine contract); absent:
   * the record is an actor of its own. Undefined: any decision may touch it (the kind says why).
   */
  actorOf?(record: R): string | undefined;
}

/**
 * Ids in ascending order, each with what a listing filters on (`S`), visited from either
 * end without building a list of them all.
 */
export interface IdWalk<S> {
  walk(order: 'asc' | 'desc', visit: (id: string, summary: S) => void): void;
}

/** Which actors the running decision holds (undefined: none is running), shared by a registry's maps. */
class HeldActors {
  actors: ReadonlySet<string> | undefined = undefined;
  /** Reads are checked too (while deciding), not only writes (while applying). */
  reads = false;
  /** Records the running decision created: nobody else knows their ids yet. */
  readonly created = new Set<string>();

  /**
   * Runs `read` unchecked: reading a lazy chunk back is no decision's doing, whichever
   * decision's lookup asked for it, and what a record read back reads to be whole (a
   * transaction its quote) belongs to actors that decision need not hold.
   */
  unchecked(read: () => void): void {
    const { actors, reads } = this;
    this.actors = undefined;
    this.reads = false;
    try {
      read();
    } finally {
      this.actors = actors;
      this.reads = reads;
    }
  }
}

/** What puts a kind's records a snapshot left in lazy chunks into its RecordMap. */
export interface LazyLoader {
  /** Puts the record `id` names (and those read with it), if the loader holds it. */
  load(id: string): void;
  /** Puts every record not yet put. */
  loadAll(): void;
}

/**
 * A kind's stored records by id; the registry it is registered with learns of every change
 * and, while a decision runs, checks that each record read or written is of a held actor.
 */
export class RecordMap<R> extends ChangeTrackingMap<string, R> {
  // Not #private fields: Map's constructor may call `set` before those exist.
  private held: HeldActors | undefined;
  private actorOf: ((record: R) => string | undefined) | undefined;
  private loader: LazyLoader | undefined;
  /** Records read from lazy chunks and not changed since, each with its chunk: what `dropRead` may drop. */
  private read: Map<string, LazyChunk> | undefined;
  /** The chunk whose records are being put (`readFrom`): a `set` now puts a record read, not a change. */
  private reading: LazyChunk | undefined;
  /**
   * No key of the map is greater: every put raises it (`set`, `add`, `install`; the other
   * puts replace a record under its own key). Ids grow with time (ids.ts), so a new record's
   * id is above it and is known absent without a lookup, which missed in a map of a few
   * hundred thousand records at about a microsecond (three misses a payment).
   */
  private newest: string | undefined;

  /** From now on, an id the map does not hold is first looked for by `loader` (undefined: all are held). */
  loadWith(loader: LazyLoader | undefined): void {
    this.loader = loader;
  }

  /** Every record a loader still holds is put into the map (before walking it whole). */
  loadAll(): void {
    this.loader?.loadAll();
  }

  /** Whether the map holds `id` now, without asking the loader. */
  holds(id: string): boolean {
    return super.has(id);
  }

  /**
   * Puts a record a loader read from a snapshot: not a change (the snapshot holds it), and no
   * decision's doing (it was there all along), so neither noted nor checked.
   */
  install(id: string, record: R): void {
    this.#raise(id);
    Map.prototype.set.call(this, id, record);
  }

  /** `id`'s record is no longer as a lazy chunk holds it (not `dropRead`'s to drop); a new id, above `newest`, was never read. */
  #changedSinceRead(id: string): void {
    if (this.newest !== undefined && id <= this.newest) this.read?.delete(id);
  }

  #raise(id: string): void {
    if (this.newest === undefined || id > this.newest) this.newest = id;
  }

  /**
   * Puts a record under an id no record holds (a created record's), with one lookup of the map
   * where `has` then `set` take two (a fifth of replaying a new customer). False when a record
   * held the id: it is replaced then, and the caller fails (an applier's failure stops the
   * engine). The loader is asked first, as `has` asks it.
   */
  add(id: string, record: R): boolean {
    this.loader?.load(id);
    this.#changedSinceRead(id);
    this.#raise(id);
    const size = this.size;
    super.set(id, record);
    if (this.size === size) return false;
    if (this.held?.actors !== undefined) this.held.created.add(id);
    return true;
  }

  #loaded(id: string): R | undefined {
    const record = this.newest === undefined || id > this.newest ? undefined : super.get(id);
    // While a chunk's records are put, a record not there yet is not looked for elsewhere: the reader put newer chunks first.
    if (record !== undefined || this.loader === undefined || this.reading !== undefined) return record;
    // A new id (every created record's, while a restored snapshot is lazy) is asked for once,
    // not twice: a loader that put nothing left the map as large as it was.
    const size = this.size;
    this.loader.load(id);
    return this.size === size ? undefined : super.get(id);
  }

  override has(id: string): boolean {
    return this.#loaded(id) !== undefined;
  }

  /** Checks reads and writes against `held` from now on, `actorOf` naming each record's actor. */
  guard(held: HeldActors, actorOf: (record: R) => string | undefined): void {
    this.held = held;
    this.actorOf = actorOf;
  }

  /** The record without the holding check: for finding the actor of another record. */
  peek(id: string): R | undefined {
    return this.#loaded(id);
  }

  override get(id: string): R | undefined {
    const record = this.#loaded(id);
    if (record !== undefined && this.held?.reads === true) this.#check(id, record, this.held.actors!);
    return record;
  }

  override set(id: string, record: R): this {
    if (this.reading !== undefined) {
      // A record read from a lazy chunk: neither a change nor any decision's doing.
      this.#raise(id);
      Map.prototype.set.call(this, id, record);
      (this.read ??= new Map()).set(id, this.reading);
      return this;
    }
    // Raised only after the lookups below, which a new id (above `newest`) skips.
    this.#changedSinceRead(id);
    if (this.held?.actors !== undefined) {
      const before = this.#loaded(id);
      if (before === undefined) this.held.created.add(id);
      else this.#check(id, before, this.held.actors);
    }
    this.#raise(id);
    return super.set(id, record);
  }

  /**
   * Sets `record` as a change, outside the holding check: a change that another record's
   * change implies, under whichever actor that one's decision holds (a repriced quote stores
   * the transactions it derived: actors/transaction.ts).
   */
  setUnchecked(id: string, record: R): void {
    this.#changedSinceRead(id);
    this.#raise(id);
    super.set(id, record);
  }

  override delete(id: string): boolean {
    this.#changedSinceRead(id);
    if (this.held?.actors !== undefined) {
      const before = super.get(id);
      if (before !== undefined) this.#check(id, before, this.held.actors);
    }
    return super.delete(id);
  }

  /** Runs `put`, whose `set`s put the records of lazy chunk `chunk` as read (not changes). */
  readFrom(chunk: LazyChunk, put: () => void): void {
    this.reading = chunk;
    try {
      put();
    } finally {
      this.reading = undefined;
    }
  }

  /** Drops `record` from memory if it is still the map's record `id` (a snapshot holds it in a lazy chunk): not a change. */
  drop(id: string, record: R): void {
    if (super.get(id) === record) Map.prototype.delete.call(this, id);
  }

  /**
   * Drops the records read from lazy chunks and not changed since for which `droppable` is
   * true; their chunks are read again when one of them is next asked for.
   */
  dropRead(droppable: (record: R) => boolean): void {
    const read = this.read;
    if (read === undefined || read.size === 0) return;
    for (const [id, chunk] of read) {
      const record = super.get(id);
      if (record === undefined || !droppable(record)) continue;
      Map.prototype.delete.call(this, id);
      chunk.loaded = false;
    }
    read.clear();
  }

  #check(id: string, record: R, actors: ReadonlySet<string>): void {
    const actor = this.actorOf!(record);
    if (actor === undefined || actors.has(actor) || this.held!.created.has(id)) return;
    throw new ActorNotHeldError(id, actor);
  }
}

type Applier = (event: DomainEvent, at: number) => void;

/** Chunks recovery reads of one dropping kind before the records they read of other kinds leave memory again. */
const OTHER_KINDS_DROPPED_EVERY = 64;

/**
 * Reads a kind's lazy chunks into its RecordMap on first use, each record restored as the
 * kind restores a snapshot's, as read (not a change). A record's newest version is read
 * first: before a chunk's records are put, the newer generations' chunks that may hold any
 * of them are, and a record the map holds (read, made or changed since) is not replaced.
 */
class LazyKindLoader implements LazyLoader {
  constructor(
    private readonly records: RecordMap<unknown>,
    private readonly view: LazyRecords,
    private readonly restore: (form: unknown, id: string) => void,
    private readonly held: HeldActors,
  ) {}

  load(id: string): void {
    for (const chunk of this.view.byId(id)) this.read(chunk);
  }

  loadAll(): void {
    for (const chunk of this.view.all()) this.read(chunk);
  }

  /**
   * `seen`: the chunks are read newest generation first, and these ids were in a newer one
   * (recovery's pass over them all, which needs no probe of the newer generations per id).
   */
  read(chunk: LazyChunk, seen?: Set<string>): void {
    if (chunk.loaded) return;
    chunk.loaded = true;
    try {
      this.held.unchecked(() => this.#put(chunk, seen));
    } catch (err) {
      // Marked loaded, a chunk read in part would hide the records it did not put.
      chunk.loaded = false;
      throw err;
    }
  }

  #put(chunk: LazyChunk, seen: Set<string> | undefined): void {
    const [ids, forms] = chunk.read();
    if (seen === undefined) for (const id of ids) for (const newer of this.view.byId(id)) if (newer.generation > chunk.generation) this.read(newer);
    this.records.readFrom(chunk, () => {
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i]!;
        if (seen !== undefined) {
          if (seen.has(id)) continue;
          seen.add(id);
        }
        if (!this.records.holds(id)) this.restore(forms[i], id);
      }
    });
  }
}

interface Registered {
  readonly prefix: string;
  readonly records: RecordMap<unknown>;
  restore(record: unknown, id: string): void;
  stored: ((record: unknown) => unknown) | undefined;
  restoredAll: (() => void) | undefined;
  lazyKeys: ((record: unknown, key: (hash: number) => void) => void) | undefined;
  restoreLazy: ((lazy: LazyRecords) => void) | undefined;
  settled: ((record: unknown) => boolean) | undefined;
  /** Where a snapshot puts its records: in lazy chunks to keep in memory, or to drop (undefined: not lazy). */
  keep: LazyPlace | undefined;
  drop: LazyPlace | undefined;
  /** Reads its lazy chunks (a droppable kind's, once a snapshot has written some or recovery found some). */
  loader: LazyKindLoader | undefined;
  readBack: ((record: unknown, id: string) => void) | undefined;
  checkInvariants(lookup: RecordLookup): string[];
  has(id: string): boolean;
  /** The records as `capture` gives them: one by one (RecordKind.eachRecord). */
  eachRecord(): Iterable<readonly [string, unknown]>;
}

export abstract class Registry<E extends DomainEvent, T> implements StateMachine<E, T>, RecordLookup {
  readonly #appliers = new Map<string, Applier[]>();
  readonly #byPrefix = new Map<string, Registered>();
  readonly #kinds: Registered[] = [];
  /** Ids set or removed since the last capture, in every kind (bounded by the entries between snapshots). */
  readonly #changed = new ChangeLog<string>();
  readonly #held = new HeldActors();
  /** Every kind's `logLayouts`. */
  readonly logLayouts: EventLayout[] = [];
  /** The kinds whose records snapshots leave in lazy chunks. */
  readonly lazyKinds: string[] = [];
  /** The kinds whose settled records leave memory once a snapshot holds them. */
  readonly #dropping: Registered[] = [];
  /** The kind `#kindOf` found last. */
  #lastKind: Registered | undefined;

  /** Registers kinds; called once, from the subclass's constructor. */
  protected register<R, KE extends DomainEvent>(kind: RecordKind<R, KE>, ...fits: [Unfitting<E, KE>] extends [never] ? [] : [unfitting: Unfitting<E, KE>]): void {
    if (this.#byPrefix.has(kind.idPrefix)) throw new Error(`two record kinds use the id prefix ${kind.idPrefix}`);
    if (kind.settled !== undefined && (kind.lazyKeys !== undefined || kind.restoreLazy !== undefined)) throw new Error(`the kind ${kind.idPrefix} is both dropped and read lazily by itself`);
    // A plain Map would change records behind the snapshots' back.
    if (!(kind.records instanceof RecordMap)) throw new Error(`the records of kind ${kind.idPrefix} are not a RecordMap`);
    kind.records.track(this.#changed);
    const actorOf = kind.actorOf?.bind(kind) ?? ((record: R) => (record as { id: string }).id);
    kind.records.guard(this.#held, actorOf);
    const registered: Registered = {
      prefix: kind.idPrefix,
      records: kind.records as RecordMap<unknown>,
      // A snapshot record under this prefix was captured from this kind's records.
      restore: (record, id) => kind.restore(record as R, id),
      stored: kind.stored !== undefined ? (record) => kind.stored!(record as R) : undefined,
      restoredAll: kind.restoredAll?.bind(kind),
      lazyKeys: kind.lazyKeys !== undefined ? (record, key) => kind.lazyKeys!(record as R, key) : undefined,
      restoreLazy: kind.restoreLazy?.bind(kind),
      settled: kind.settled !== undefined ? (record) => kind.settled!(record as R) : undefined,
      keep: kind.lazyKeys !== undefined || kind.settled !== undefined ? { kind: kind.idPrefix, drop: false } : undefined,
      drop: kind.settled !== undefined ? { kind: kind.idPrefix, drop: true } : undefined,
      loader: undefined,
      readBack: kind.readBack !== undefined ? (record, id) => kind.readBack!(record as R, id) : undefined,
      checkInvariants: (lookup) => kind.checkInvariants(lookup),
      has: kind.has !== undefined ? (id) => kind.has!(id) : (id) => kind.records.has(id),
      eachRecord: kind.eachRecord !== undefined ? () => kind.eachRecord!() : () => kind.records,
    };
    this.#byPrefix.set(kind.idPrefix, registered);
    this.#kinds.push(registered);
    if (registered.keep !== undefined) this.lazyKinds.push(kind.idPrefix);
    if (registered.settled !== undefined) this.#dropping.push(registered);
    if (kind.logLayouts !== undefined) this.logLayouts.push(...kind.logLayouts);
    for (const type of Object.keys(kind.appliers) as Array<KE['type']>) {
      // Dispatch is by `type`, so each applier only ever sees the event type it is keyed by.
      const applier = kind.appliers[type] as Applier;
      const list = this.#appliers.get(type);
      if (list === undefined) this.#appliers.set(type, [applier]);
      else list.push(applier);
    }
  }

  hold(actors: ReadonlySet<string> | undefined, checked: 'reads and writes' | 'writes' = 'reads and writes'): void {
    this.#held.actors = actors;
    this.#held.reads = actors !== undefined && checked === 'reads and writes';
    if (actors === undefined) this.#held.created.clear();
  }

  apply(event: E, at: number): void {
    const appliers = this.#appliers.get(event.type);
    if (appliers === undefined) throw new Error(`no record kind applies ${event.type}`);
    for (let i = 0; i < appliers.length; i++) appliers[i]!(event, at);
  }

  capture(): DomainImage {
    for (const kind of this.#kinds) kind.records.loadAll();
    this.#changed.clear();
    const image: Array<readonly [string, unknown]> = [];
    for (const kind of this.#kinds) for (const entry of kind.eachRecord()) image.push(entry);
    return image;
  }

  captureColumns(): DomainColumns {
    // A full snapshot writes every record: those still in a restored snapshot's lazy chunks are
    // read now, except a dropping kind's, whose chunks it copies as they are.
    const carried: LazyChunk[] = [];
    for (const kind of this.#kinds) {
      if (kind.loader === undefined) kind.records.loadAll();
      else for (const chunk of this.#lazy!.ofKind(kind.prefix).all()) carried.push(chunk);
    }
    this.#changed.clear();
    const ids: string[] = [];
    const records: unknown[] = [];
    for (const kind of this.#kinds) {
      for (const id of kind.records.keys()) ids.push(id);
      for (const record of kind.records.values()) records.push(record);
    }
    return { ids, records, carried };
  }

  captureChanges(): DomainChanges {
    // The changes as noted, each with the record it left: nothing to look up or sort out at a
    // snapshot's start, however much changed (the writer drops the repeats in its slices).
    const { keys, values } = this.#changed.takeNoted();
    return { noted: keys, values };
  }

  /** The kind of record `id`; a snapshot's records come kind by kind, so the previous one's kind is tried first. */
  #kindOf(id: string): Registered | undefined {
    const last = this.#lastKind;
    if (last !== undefined && id.startsWith(last.prefix)) return last;
    // A scan of the few prefixes: slicing the prefix off each id cost recovery's invariant
    // check a string per reference (a million accounts name two records each).
    for (const kind of this.#kinds) {
      if (!id.startsWith(kind.prefix)) continue;
      this.#lastKind = kind;
      return kind;
    }
    return undefined;
  }

  storedForm(id: string, record: unknown): unknown {
    const stored = this.#kindOf(id)?.stored;
    return stored === undefined ? record : stored(record);
  }

  lazyKeys(id: string, record: unknown, key: (hash: number) => void): LazyPlace | undefined {
    const kind = this.#kindOf(id);
    if (kind?.keep === undefined) return undefined;
    if (kind.settled !== undefined) return kind.settled(record) ? kind.drop : kind.keep;
    kind.lazyKeys!(record, key);
    return kind.keep;
  }

  /** The lazy chunks of the store's snapshot (undefined: none yet), as the store keeps them up to date. */
  #lazy: LazyStore | undefined;
  /** Recovery is reading the dropping kinds' chunks for their index entries (`#restoreDropping`). */
  #indexing = false;

  /** The dropping kinds read their chunks from `lazy` from now on. */
  #attach(lazy: LazyStore): void {
    this.#lazy = lazy;
    for (const kind of this.#dropping) {
      if (kind.loader !== undefined) continue;
      // Recovery reads every chunk once for the index entries; a record read back later has them.
      const put = (form: unknown, id: string): void => (this.#indexing || kind.readBack === undefined ? kind.restore(form, id) : kind.readBack(form, id));
      kind.loader = new LazyKindLoader(kind.records, lazy.ofKind(kind.prefix), put, this.#held);
      kind.records.loadWith(kind.loader);
    }
  }

  lazyWritten(lazy: LazyStore, written: LazyWritten): void {
    this.#attach(lazy);
    for (let i = 0; i < written.ids.length; i++) {
      const id = written.ids[i]!;
      this.#kindOf(id)?.records.drop(id, written.records[i]);
    }
    for (const kind of this.#dropping) kind.records.dropRead(kind.settled!);
  }

  restore(image: DomainRecords, lazy?: LazyStore): void {
    // What a snapshot holds is not a change: not noted at all (a million Set entries saved).
    for (const kind of this.#kinds) kind.records.track(undefined);
    try {
      // An image holds records kind by kind: the previous record's kind is tried first.
      let kind: Registered | undefined;
      for (const [id, record] of image) {
        if (kind === undefined || !id.startsWith(kind.prefix)) {
          kind = this.#byPrefix.get(id.slice(0, id.indexOf(':') + 1));
          if (kind === undefined) throw new Error(`snapshot holds a record of unknown kind: ${id}`);
        }
        kind.restore(record, id);
      }
      if (lazy !== undefined) this.#restoreDropping(lazy);
      for (const each of this.#kinds) each.restoredAll?.();
      // What restoring another kind read back (a step's transactions) leaves again.
      for (const each of this.#dropping) each.records.dropRead(each.settled!);
    } finally {
      for (const kind of this.#kinds) kind.records.track(this.#changed);
    }
    this.#changed.clear();
    if (lazy !== undefined) for (const kind of this.#kinds) kind.restoreLazy?.(lazy.ofKind(kind.prefix));
  }

  /**
   * A dropping kind's records are read from the snapshot's chunks one chunk at a time, for the
   * index entries their restore makes, and those settled are dropped again at once: the heap
   * holds at most a chunk's records beside what stays.
   */
  #restoreDropping(lazy: LazyStore): void {
    this.#attach(lazy);
    this.#indexing = true;
    try {
      for (const kind of this.#dropping) {
        const seen = new Set<string>();
        let read = 0;
        for (const chunk of lazy.ofKind(kind.prefix).all()) {
          kind.loader!.read(chunk, seen);
          kind.records.dropRead(kind.settled!);
          // A chunk's records may have read another kind's (a transaction its quote's): those the
          // next chunks likely read too (made at the same time) leave after a run of chunks.
          if (++read % OTHER_KINDS_DROPPED_EVERY === 0) for (const each of this.#dropping) each.records.dropRead(each.settled!);
        }
      }
      for (const each of this.#dropping) each.records.dropRead(each.settled!);
    } finally {
      this.#indexing = false;
    }
  }

  checkInvariants(): string[] {
    return this.#kinds.flatMap((kind) => kind.checkInvariants(this));
  }

  /**
   * The stored record `id` names now, of whichever kind its prefix says: the engine's
   * idempotency records resolve their replies' records. A derived record (an internal account
   * no entry changed) is not stored, and no reply that names its record reports one.
   */
  recordOf(id: string): unknown {
    return this.#byPrefix.get(id.slice(0, id.indexOf(':') + 1))?.records.peek(id);
  }

  has(id: string): boolean {
    // Through the last-kind cache: an invariant check asks of one kind's references in a row
    // (every transaction's account), where a scan tried a dozen prefixes each time.
    return this.#kindOf(id)?.has(id) ?? false;
  }

  abstract onTimer(message: T, at: number, id: string): E[];
}

/** A listing index: ids sorted ascending, which for UUIDv7 ids is creation order. */
export class SortedIds {
  readonly ids: string[] = [];

  insert(id: string): void {
    const ids = this.ids;
    if (ids.length === 0 || ids[ids.length - 1]! < id) {
      ids.push(id);
      return;
    }
    const at = lowerBound(ids, id);
    if (ids[at] !== id) ids.splice(at, 0, id);
  }

  remove(id: string): void {
    const at = lowerBound(this.ids, id);
    if (this.ids[at] === id) this.ids.splice(at, 1);
  }

  /**
   * Inserts every id of `more` (sorted here) in one pass from the end: an insert each may
   * splice the whole list each time, as a restore's ids of records it derives would.
   */
  merge(more: string[]): void {
    insertSorted(this.ids, more);
  }

  /**
   * Removes every id of `gone` in one pass, O(n) at most where a `remove` each is O(n) each.
   * Ids that go together (the oldest, usually) are one run, spliced out at once.
   */
  removeAll(gone: ReadonlySet<string>): void {
    const ids = this.ids;
    const at: number[] = [];
    for (const id of gone) {
      const i = lowerBound(ids, id);
      if (ids[i] === id) at.push(i);
    }
    if (at.length === 0) return;
    at.sort((a, b) => a - b);
    if (at[at.length - 1]! - at[0]! === at.length - 1) {
      ids.splice(at[0]!, at.length);
      return;
    }
    let kept = at[0]!;
    for (let n = 0; n < at.length; n++) {
      const end = n + 1 < at.length ? at[n + 1]! : ids.length;
      for (let i = at[n]! + 1; i < end; i++) ids[kept++] = ids[i]!;
    }
    ids.length = kept;
  }
}

/** Inserts the ids of `more` (sorted here; those `ids` holds already left out) into the ascending `ids`, merged from the end in place. */
export function insertSorted(ids: string[], more: string[]): void {
  more.sort();
  let n = 0;
  for (let j = 0; j < more.length; j++) {
    const id = more[j]!;
    if ((j > 0 && id === more[j - 1]) || ids[lowerBound(ids, id)] === id) continue;
    more[n++] = id;
  }
  more.length = n;
  if (n === 0) return;
  let i = ids.length - 1;
  let j = n - 1;
  ids.length += n;
  for (let k = ids.length - 1; j >= 0; k--) ids[k] = i >= 0 && ids[i]! > more[j]! ? ids[i--]! : more[j--]!;
}

/** The SortedIds of `key`, created on first use. */
export function bucket<K>(map: Map<K, SortedIds>, key: K): SortedIds {
  let ids = map.get(key);
  if (ids === undefined) {
    ids = new SortedIds();
    map.set(key, ids);
  }
  return ids;
}
