// The contract between the engine and the domain (actors/). The engine owns ordering,
// durability, snapshots and time; the domain owns what a message means. Everything the
// domain does in `apply` is a pure function of the current state and the entry, so that
// replaying the log rebuilds the same state.
import { newId, type IdKind, type LoggedId } from './ids.js';

/** Events the engine itself writes and applies; domain event types never start with `$`. */
export type EngineEvent<T> =
  | { type: '$timer.set'; timer: Timer<T> }
  | { type: '$timer.done'; id: string }
  | { type: '$timer.cancel'; id: string }
  /** The handler failed: try again at `due` (attempt counts the failures so far). */
  | { type: '$timer.retry'; id: string; attempt: number; due: number; error: string }
  /** Failed too often: removed from the pending set, kept here in the log for inspection. */
  | { type: '$timer.dead'; timer: Timer<T>; error: string }
  | { type: '$effect.add'; effect: Effect }
  | { type: '$effect.done'; id: string; outcome: unknown }
  | { type: '$effect.retry'; id: string; attempt: number; due: number; error: string }
  | { type: '$effect.dead'; effect: Effect; error: string }
  | { type: '$idempotency'; record: LoggedIdempotency };

export interface Timer<T> {
  /** Generated, or the key the domain chose (so that it can cancel or replace the timer). */
  id: string;
  /** Clock reading (ms) at which the message is delivered. */
  due: number;
  /** The actors the message needs, held while it is handled. */
  actors: string[];
  message: T;
  /** Failed deliveries so far (absent: none). */
  attempt?: number;
}

/**
 * Work outside the state (a webhook, a mail, a sandbox outcome) caused by a change: recorded
 * in the same entry as the change, run only once that entry is durable, its outcome logged.
 */
export interface Effect {
  id: string;
  /** Selects the runner registered with `Engine.onEffect`. */
  kind: string;
  /** Held while the outcome is logged (with the events the runner's `settle` returns). */
  actors: string[];
  payload: unknown;
  /** Failed runs so far. */
  attempt: number;
  /** Clock reading (ms) from which it may run (again). */
  due: number;
}

/**
 * An Idempotency-Key's answer as its entry logs it: the reply is not logged rendered. A reply
 * that renders one record names it (`kind` and `id`), and the engine resolves that name once
 * the entry's own events are applied, to the record as the entry left it.
 */
export interface LoggedIdempotency {
  /** environment, route and client key, joined */
  key: string;
  /** SHA-256 hex of the request body */
  bodyHash: string;
  status: number;
  /** The kind of the record the reply renders (absent: the reply is not one record's render). */
  kind?: IdKind;
  /** That record's id, in its logged form. */
  id?: LoggedId;
  /** The reply's exact bytes, for a reply that is not one record's render; every entry before issue 38 logged them. */
  body?: string;
  /** Entries before issue 38: the entry's time, which the entry itself now gives. */
  at?: number;
}

/**
 * An idempotency record as the engine keeps it (and a snapshot stores it): what a replay
 * answers. `reports` is a reference to the record of that moment (records are immutable, so
 * it costs a pointer while the record is current; a snapshot stores the record itself), which
 * the front renders again; `body` the exact bytes, for the replies logged with them.
 */
export interface IdempotencyRecord {
  key: string;
  bodyHash: string;
  status: number;
  at: number;
  /** The kind of `reports`, which picks its render. */
  kind?: IdKind;
  /** The record the reply rendered, as the entry that made this record left it. */
  reports?: unknown;
  /** The reply's exact bytes, as text (absent with `reports`, and for a reply without a body). */
  body?: string;
  /**
   * In a snapshot only, in place of `reports`: the id of the record it reports, which was that
   * record's current version when the snapshot was captured, so the snapshot holds it once
   * and the restored idempotency record shares the restored record.
   */
  current?: string;
}

export interface DomainEvent {
  type: string;
}

/** An engine event that sets a durable timer; with a `key` it replaces the timer of that key. */
export function setTimer<T>(due: number, actors: string[], message: T, at: number, key?: string): EngineEvent<T> {
  return { type: '$timer.set', timer: { id: key ?? newId('Timer', at), due, actors, message } };
}

/** An engine event that cancels the timer set with `key` (nothing if it is not pending). */
export function cancelTimer<T>(key: string): EngineEvent<T> {
  return { type: '$timer.cancel', id: key };
}

/** What a decision produces: the events of one log entry, and its result, read once they are applied. */
export interface Decision<E, R> {
  events: Array<E | EngineEvent<unknown>>;
  /** Renders the answer from the state after the events are applied. */
  reply: () => R;
}

/** A decision made at clock reading `at`: synchronous, so nothing else runs between it and its apply. */
export type Decide<E, R> = (at: number) => Decision<E, R>;

/**
 * One operation of the domain. It names the actors it needs from its input and the state
 * (`actors`); the engine holds them and, in the same run, lets it `decide`.
 *
 * What is slow (crypto, key sets fetched over the network) is its `prepare`, which the
 * engine runs before it holds anything: it reads the state unheld, and what it yields are
 * verified facts (this key signed this payload; this token names this subject), which
 * `decide` checks again against the held state. `decide` returns its decision, never a
 * promise: while it runs its actors are held, and nothing can change what it read before
 * its events are applied.
 */
export interface Command<S, I, R, E extends DomainEvent = DomainEvent, F = undefined> {
  /** What the operation is, for reports and tests. */
  readonly name: string;
  /**
   * Optional: the slow part, run at clock reading `at` before anything is held; a throw
   * (the API's 4xx) refuses and changes nothing. Without it `decide` gets undefined.
   */
  prepare?(input: I, state: S, at: number): Promise<F>;
  /** Every actor whose records the decision reads or writes. May throw (a 404) before anything is held. */
  actors(input: I, state: S): readonly string[];
  /**
   * Decides with the actors held, from the input, the held state and the prepared facts;
   * a throw refuses and changes nothing (FactsOutdatedError: prepare again).
   */
  decide(input: I, state: S, at: number, facts: F): Decision<E, R>;
}

/**
 * Thrown by a decision whose prepared facts the held state has harmlessly moved past (a
 * mnemonic another export made first, say): the engine runs the command again from
 * `prepare`, at most COMMAND_TRIES times in all.
 */
export class FactsOutdatedError extends Error {
  constructor(what: string) {
    super(`${what}: the state moved past the facts prepared for it`);
  }
}

/** A fact a decision needs, which its prepare did not make on the state it read then: prepare again. */
export function preparedFact<T>(fact: T | undefined, command: string): T {
  if (fact === undefined) throw new FactsOutdatedError(command);
  return fact;
}

/**
 * A question to the domain: a pure function of its input, the state and the clock reading
 * `at`, changing nothing. `Engine.read` answers it once what came before it is durable.
 */
export type Query<S, I, R> = (input: I, state: S, at: number) => R;

/** A decision read or wrote a record of an actor it does not hold: its command names too few actors. */
export class ActorNotHeldError extends Error {
  constructor(
    readonly recordId: string,
    readonly actorId: string,
  ) {
    super(`a decision touched ${recordId} without holding its actor ${actorId}`);
  }
}

/** One consistent image of the domain: immutable records, safe to encode later. */
export type DomainImage = ReadonlyArray<readonly [string, unknown]>;
/** Records as a snapshot hands them to `restore`: a whole image, or a stream read as it is restored. */
export type DomainRecords = Iterable<readonly [string, unknown]>;

/** Every record as two arrays of one length: for millions of records much cheaper than pairs. */
export interface DomainColumns {
  ids: string[];
  records: unknown[];
  /**
   * The lazy chunks not loaded whose records a full snapshot copies as they are (records the
   * machine dropped from memory), newest generation first: a record in none of `ids` is
   * copied from the first of them that holds it. Such a kind's records are found by id alone.
   */
  carried?: readonly LazyChunk[];
}

/**
 * The records changed since the previous capture, as noted: each change's id and the record it
 * left (undefined: removed), in the order made, an id changed more than once noted each time
 * (its last change gives the record as it is now). Taking them is O(1) at a snapshot's start;
 * the snapshot's writer drops the repeats in its own slices (snapshot-writer.ts, latestChanges).
 */
export interface DomainChanges {
  readonly noted: readonly string[];
  readonly values: readonly unknown[];
}

/** Where a lazy chunk's records are found by a key: FNV-1a's offset basis, which `lazyHash` starts from. */
export const LAZY_HASH_START = 0x811c9dc5;

/**
 * FNV-1a over the UTF-16 code units of `text`, continuing from `hash` (so a key of several
 * parts is hashed without building it); `caseless`: as `text.toLowerCase()` would hash. A
 * hint of which lazy chunk holds a record, not its identity (snapshot-lazy.ts).
 */
export function lazyHash(text: string, hash = LAZY_HASH_START, caseless = false): number {
  let h = hash;
  for (let i = 0; i < text.length; i++) {
    let unit = text.charCodeAt(i);
    if (caseless && unit >= 0x41) {
      // Only ASCII letters are folded by hand; any other text goes through toLowerCase whole.
      if (unit >= 0x80) return lazyHash(text.toLowerCase(), hash);
      if (unit <= 0x5a) unit += 0x20;
    }
    h ^= unit;
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A chunk of records a snapshot holds that the machine reads on first use (snapshot-lazy.ts). */
export interface LazyChunk {
  readonly generation: number;
  /** The id prefix of its records: a chunk holds one kind's. */
  readonly kind: string;
  /** Set by whoever reads it: its records are in the machine now. */
  loaded: boolean;
  /** Its ids and the stored form of each record, read and verified now. */
  read(): [ids: string[], records: unknown[]];
}

/**
 * The records a restored snapshot holds in lazy chunks: a later generation's version of a
 * record replaces an earlier one's, so a chunk is put into the machine only after the
 * chunks of later generations that may hold its records.
 */
export interface LazyRecords {
  /** The chunks not yet loaded that may hold the record `id`, newest generation first. */
  byId(id: string): readonly LazyChunk[];
  /** The chunks not yet loaded that may hold a record `lazyKeys` gave a key of hash `hash`, newest generation first. */
  byKey(hash: number): readonly LazyChunk[];
  /** Every chunk not yet loaded, newest generation first. */
  all(): Iterable<LazyChunk>;
}

/**
 * The lazy chunks of the snapshot the store holds now, as it changes: each snapshot a live
 * process writes adds its generation, a full one replaces the rest (snapshot-lazy.ts).
 */
export interface LazyStore extends LazyRecords {
  /** The chunks of one kind's records (`kind`: its id prefix), as a live view. */
  ofKind(kind: string): LazyRecords;
}

/**
 * Where a snapshot puts a record of a kind left to lazy chunks: its kind's chunks, and whether
 * the machine may drop it from memory once the snapshot holds it (`drop`: settled history).
 */
export interface LazyPlace {
  readonly kind: string;
  readonly drop: boolean;
}

/** The records a snapshot put in lazy chunks that the machine may drop from memory, as captured. */
export interface LazyWritten {
  readonly ids: readonly string[];
  readonly records: readonly unknown[];
}

/**
 * An event type the log writes in rows rather than as a msgpack map (format versions 3 and 4,
 * log-layout.ts): its fields besides `type`, in the order its producer sets them, each short
 * ASCII text (`ascii`, at most 255 characters), a string or list of strings the group's
 * events share (`shared`), a logged id's 16 bytes (`id`), a number (`number`), or a list of
 * at most 255 numbers and strings (`list`). An event with other fields, or whose values do
 * not fit, is written as msgpack.
 */
export interface EventLayout {
  readonly type: string;
  readonly fields: ReadonlyArray<readonly [name: string, kind: 'ascii' | 'shared' | 'id' | 'number' | 'list']>;
}

export interface StateMachine<E extends DomainEvent, T> {
  /** Optional: the hot event types the log lays out in rows (replayed in a third of msgpack's time). */
  readonly logLayouts?: readonly EventLayout[];
  /** Applies one event. Must not fail for an event its own decide step produced. */
  apply(event: E, at: number): void;
  /**
   * References to every record, taken synchronously; records are never mutated in place.
   * Change tracking (`captureChanges`) starts again from here.
   */
  capture(): DomainImage;
  /**
   * Optional: what `capture` takes, as columns (a full snapshot uses it when present); the
   * records of kinds dropped from memory stay in their lazy chunks, which it names (`carried`).
   */
  captureColumns?(): DomainColumns;
  /**
   * Optional: the records set or removed since the previous `capture`, `captureChanges` or
   * `restore`, as noted (DomainChanges), taken synchronously and cheaply, so a snapshot's
   * cost follows what changed. Without it every snapshot captures everything.
   */
  captureChanges?(): DomainChanges;
  /**
   * Optional: the form a snapshot stores `record` (of id `id`) in, made while the snapshot
   * is written, never on the hot path; `restore` takes back either this form or the record
   * itself (what snapshots written before the form held). Without it, records are stored as
   * they are.
   */
  storedForm?(id: string, record: unknown): unknown;
  /**
   * Optional: where a snapshot leaves the record `id`: in its kind's lazy chunks (LazyPlace),
   * or none (undefined: it is restored whole at recovery); if in lazy chunks, `key` is told
   * the `lazyHash` of each key besides its id that the machine finds it by. Hashes, not
   * strings: called for every record a snapshot writes. A kind's records go to lazy chunks
   * all or none.
   */
  lazyKeys?(id: string, record: unknown, key: (hash: number) => void): LazyPlace | undefined;
  /** Optional, with `lazyKeys`: the id prefixes of the kinds whose records go to lazy chunks. */
  readonly lazyKinds?: readonly string[];
  /**
   * Optional: told after each snapshot with lazy chunks is written (the store holds its
   * generation now), with the records it put there that the machine may drop from memory.
   */
  lazyWritten?(lazy: LazyStore, written: LazyWritten): void;
  /**
   * Rebuilds state (and derived indexes) from an image; restored records are not changes.
   * `lazy`: the records the snapshot left in lazy chunks, read when first asked for.
   */
  restore(image: DomainRecords, lazy?: LazyStore): void;
  /** Violated invariants, as sentences; empty when all hold. */
  checkInvariants(): string[];
  /**
   * Optional, the check behind the engine contract: from `hold(actors)` until
   * `hold(undefined)`, touching a record whose actor is not in `actors` (and that the
   * decision did not create) throws ActorNotHeldError. The engine checks reads and writes
   * while a decision decides (a prepare reads unheld, and is not checked), and writes while it applies the events:
   * applying, and rendering the reply, run in one synchronous run, which nothing else can
   * interleave with, so what they read is not checked.
   */
  hold?(actors: ReadonlySet<string> | undefined, checked?: 'reads and writes' | 'writes'): void;
  /**
   * Optional: the record `id` names now (a derived one built), undefined if there is none;
   * for the engine's own events that refer to a record (an idempotency record's reply).
   */
  recordOf?(id: string): unknown;
  /**
   * Decides what a due timer's message does now, synchronously (its actors are held); a
   * throw is retried with backoff. `id` is the timer's (its key, when the domain chose one),
   * so a message need not repeat what its key already names.
   */
  onTimer(message: T, at: number, id: string): E[];
}
