// The idempotency records the engine keeps for the HTTP front (an Idempotency-Key's answer):
// each is logged as a `$idempotency` event in the entry of the decision it answers, honoured
// for IDEMPOTENCY_TTL_MS, and at most `max` are kept. Expiry and eviction are driven by entry
// time and count, never by the clock, so a replay drops the same records the live process did.
//
// The log does not carry the rendered reply: a reply that renders one record names it, and
// the record is resolved when the event applies, after the events of its own entry, so it is
// the record as that entry left it, live and on replay alike. Records being immutable, the
// idempotency record keeps a reference to it, which the front renders again for a replay.
import { IdempotencyTable } from './idempotency-table.js';
import { idOf } from './ids.js';
import type { Lifecycle } from './lifecycle.js';
import type { Report } from './report.js';
import { StoreCorruptError } from './format.js';
import type { IdempotencyRecord, LoggedIdempotency } from './state-machine.js';

/** How long idempotency records are honoured (CONTRACT.md: 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** Idempotency records kept at most; past it the oldest go first. */
export const IDEMPOTENCY_MAX_RECORDS = 250_000;

export class IdempotencyRecords {
  /** Insertion-ordered by time, so expiry and eviction trim from the front. */
  readonly table = new IdempotencyTable();
  readonly #max: number;
  readonly #lifecycle: Lifecycle;
  readonly #report: Report;
  /** Evicting records before their 24 hours is reported once per process. */
  #evictionReported = false;

  constructor(max: number, lifecycle: Lifecycle, report: Report) {
    this.#max = max;
    this.#lifecycle = lifecycle;
    this.#report = report;
  }

  get size(): number {
    return this.table.size;
  }

  /** The record under `key` if it is still honoured at `now`. */
  find(key: string, now: number): IdempotencyRecord | undefined {
    const record = this.table.get(key);
    if (record === undefined || record.at + IDEMPOTENCY_TTL_MS <= now) return undefined;
    return record;
  }

  /**
   * Applies a `$idempotency` event of an entry at `at`, the record its reply names resolved by
   * `recordOf` in the state that entry left: the record goes last, then expired and excess ones go.
   */
  apply(logged: LoggedIdempotency, at: number, recordOf: (id: string) => unknown): void {
    const record = remembered(logged, at, recordOf);
    this.table.delete(record.key);
    this.table.set(record.key, record);
    this.#trim(at);
  }

  /**
   * Deterministic expiry and eviction: driven by entry time and count, so replay drops the
   * same records (given the same limit).
   */
  #trim(at: number): void {
    for (const [key, record] of this.table) {
      if (record.at + IDEMPOTENCY_TTL_MS > at && this.table.size <= this.#max) break;
      this.table.delete(key);
      if (record.at + IDEMPOTENCY_TTL_MS > at && !this.#evictionReported && this.#lifecycle.live) {
        this.#evictionReported = true;
        this.#report(`idempotency records at their limit of ${this.#max}: the oldest are forgotten before 24 hours`, {
          event: 'idempotency.evicting',
          level: 'warn',
          limit: this.#max,
        });
      }
    }
  }
}

/** What a logged idempotency record keeps: the reply's record resolved, or the bytes it was logged with. */
function remembered(logged: LoggedIdempotency, at: number, recordOf: (id: string) => unknown): IdempotencyRecord {
  const { key, bodyHash, status, kind } = logged;
  if (kind === undefined || logged.id === undefined) {
    // Entries before issue 38 carry their own time; a reply without a body (204) carries no bytes.
    const record: IdempotencyRecord = { key, bodyHash, status, at: logged.at ?? at };
    if (logged.body !== undefined) record.body = logged.body;
    return record;
  }
  const id = idOf(logged.id, kind);
  const reports = recordOf(id);
  // Only a live decision logs this event, right after the events that left the record: a
  // miss is a bug there (the decision stops the process before its entry is logged).
  if (reports === undefined) throw new Error(`an idempotency record's reply names ${id}, which its entry did not leave`);
  return { key, bodyHash, status, at, kind, reports };
}

/**
 * An idempotency record as a snapshot holds it, its record resolved among those restored when
 * the snapshot named it by id (`current`). Snapshots before session 46 did, while the record
 * was unchanged; a later snapshot that wrote the record changed or removed left the name
 * wrong, so snapshots now hold each reply whole.
 */
export function restoredIdempotency(record: IdempotencyRecord, recordOf: (id: string) => unknown): IdempotencyRecord {
  const id = record.current;
  if (id === undefined) return record;
  const reports = recordOf(id);
  if (reports === undefined) throw new StoreCorruptError(`the snapshot's idempotency record ${record.key}`, `it names ${id}, which the snapshot does not hold`);
  const { key, bodyHash, status, at, kind } = record;
  return { key, bodyHash, status, at, kind, reports };
}
