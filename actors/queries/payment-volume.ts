// Payment volume over a recent period, for the dashboard's overview charts: per currency, what
// completed transactions sent and received in each bucket of the period, and how many of the
// period's transactions stand at each status. Computed when read, from the transactions the
// environment holds, so that a payment pays nothing for it and recovery builds nothing for it;
// a read walks only the period's transactions (their ids sort by creation time), in slices
// with the event loop given back between them, so a long period does not hold up payments.
import { lowerBound } from '../../src/engine/ids.js';
import { TRANSACTION_STATUSES, type Transaction, type TransactionStatus } from '../transaction.js';
import { currencyObject } from '../reference.js';
import type { DomainQuery } from '../world.js';

export type VolumePeriod = 'LAST_HOUR' | 'LAST_DAY' | 'LAST_30_DAYS';
export const VOLUME_PERIODS: readonly VolumePeriod[] = ['LAST_HOUR', 'LAST_DAY', 'LAST_30_DAYS'];

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

/** How each period is cut: that many buckets of that length, the last one holding now. */
const BUCKETS: Readonly<Record<VolumePeriod, { count: number; ms: number }>> = {
  LAST_HOUR: { count: 12, ms: 5 * MINUTE_MS },
  LAST_DAY: { count: 24, ms: HOUR_MS },
  LAST_30_DAYS: { count: 30, ms: DAY_MS },
};

/** One currency's volume: smallest units per bucket, oldest bucket first, and the period's totals. */
export interface CurrencyVolume {
  readonly currency: string;
  /** Digits after the point of the currency's major unit, to show the amounts. */
  readonly decimals: number;
  readonly sent: readonly number[];
  readonly received: readonly number[];
  readonly sentTotal: number;
  readonly receivedTotal: number;
}

export interface PaymentVolume {
  readonly period: VolumePeriod;
  readonly bucketMs: number;
  /** Each bucket's start (epoch ms, aligned to the bucket's length in UTC), oldest first; the last one holds `at`. */
  readonly bucketStarts: readonly number[];
  /** Currencies with any completed volume in the period, by code. */
  readonly currencies: readonly CurrencyVolume[];
  /** The period's transactions (either direction) by the status they stand at now. */
  readonly outcomes: Readonly<Record<TransactionStatus, number>>;
}

interface Tally {
  sent: number[];
  received: number[];
}

/** Transactions one read walks at most before the route gives the event loop back (about 5 ms each). */
export const VOLUME_SLICE = 5_000;

/**
 * The environment's payment volume over `period` up to `at`, added up slice by slice: an
 * OUTGOING transaction counts its sentAmount in its sending currency, an INCOMING one its
 * receivedAmount in its receiving currency, each in the bucket of its creation, once it is
 * COMPLETED. A transaction made while the slices are read still counts if it falls in the period.
 */
export class VolumeTally {
  readonly bucketMs: number;
  readonly first: number;
  readonly #count: number;
  readonly #end: number;
  readonly #tallies = new Map<string, Tally>();
  readonly #outcomes = Object.fromEntries(TRANSACTION_STATUSES.map((status) => [status, 0])) as Record<TransactionStatus, number>;

  constructor(
    readonly period: VolumePeriod,
    at: number,
  ) {
    const { count, ms } = BUCKETS[period];
    const last = Math.floor(at / ms) * ms;
    this.bucketMs = ms;
    this.#count = count;
    this.first = last - (count - 1) * ms;
    this.#end = last + ms;
  }

  add(tx: Transaction): void {
    if (tx.createdAt < this.first || tx.createdAt >= this.#end) return;
    this.#outcomes[tx.status]++;
    if (tx.status === 'COMPLETED') addVolume(this.#tallies, tx, Math.floor((tx.createdAt - this.first) / this.bucketMs), this.#count);
  }

  result(): PaymentVolume {
    const currencies = [...this.#tallies.keys()].sort().map((currency) => {
      const { sent, received } = this.#tallies.get(currency)!;
      return { currency, decimals: currencyObject(currency).decimals, sent, received, sentTotal: sum(sent), receivedTotal: sum(received) };
    });
    const bucketStarts = Array.from({ length: this.#count }, (_, i) => this.first + i * this.bucketMs);
    return { period: this.period, bucketMs: this.bucketMs, bucketStarts, currencies, outcomes: { ...this.#outcomes } };
  }
}

/** A tally of `period` up to the time of the read, empty. */
export const volumeTally: DomainQuery<{ period: VolumePeriod }, VolumeTally> = ({ period }, _world, at) => new VolumeTally(period, at);

/**
 * Adds up to `limit` of the environment's transactions to `tally`, from the id `from` on (or
 * the period's first); answers the id to go on from, or undefined once every one is added.
 */
export const tallyVolume: DomainQuery<{ envId: string; tally: VolumeTally; from?: string; limit: number }, string | undefined> = ({ envId, tally, from, limit }, world) => {
  const ids = world.transactions.idsIn(envId);
  // An id's time is never before its transaction's creation (ids.ts), so none made since `first` sorts before this.
  let i = lowerBound(ids, from ?? idFloor(tally.first));
  const stop = Math.min(ids.length, i + limit);
  for (; i < stop; i++) tally.add(world.transactions.get(ids[i]!)!);
  return i < ids.length ? ids[i] : undefined;
};

function addVolume(tallies: Map<string, Tally>, tx: Transaction, bucket: number, count: number): void {
  const outgoing = tx.type === 'OUTGOING';
  const currency = outgoing ? tx.sendingCurrency : tx.receivingCurrency;
  let tally = tallies.get(currency);
  if (tally === undefined) {
    tally = { sent: new Array<number>(count).fill(0), received: new Array<number>(count).fill(0) };
    tallies.set(currency, tally);
  }
  if (outgoing) tally.sent[bucket]! += tx.sentAmount;
  else tally.received[bucket]! += tx.receivedAmount;
}

/** A string that sorts before every transaction id made at `ms` or later: the kind and the UUIDv7's 48-bit time, up to its first digit after it. */
function idFloor(ms: number): string {
  const time = ms.toString(16).padStart(12, '0');
  return `Transaction:${time.slice(0, 8)}-${time.slice(8)}-`;
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
