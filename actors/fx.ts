// Exchange rates and fees (CONTRACT.md "Money"; docs/money.md "Exchange rates and fees").
// The table data/fx-rates.json holds, for every ordered pair of supported currencies, a mid
// rate (receiving major units per sending major unit, a decimal string), the service's
// multiplier on it, a fixed fee (sending smallest units) and a variable fee rate (a
// fraction of the principal). Every price is computed with exact rationals over BigInt and
// rounds toward the platform: the receiver's amount rounds down, the sender's principal
// and fees round up.
import { readFileSync } from 'node:fs';
import { CURRENCIES, dataFile } from './reference.js';
import { DomainError, invalidField } from './errors.js';

export type LockedCurrencySide = 'SENDING' | 'RECEIVING';

/** SERVICE_SPEC part 2, Quote.rateDetails. Multipliers are dimensionless, fees are in the
 *  sending currency's smallest unit. */
export interface RateDetails {
  /** The mid rate in smallest units: receiving smallest units per sending smallest unit. */
  counterpartyMultiplier: number;
  /** Always 0: the service is its own counterparty (no external liquidity provider). */
  counterpartyFixedFee: number;
  /** The service's margin on the mid rate; the applied rate is counterpartyMultiplier × this. */
  serviceApiMultiplier: number;
  serviceApiFixedFee: number;
  /** Fraction of the principal charged as the variable fee. */
  serviceApiVariableFeeRate: number;
  /** The variable fee charged on this transfer (at least principal × rate, rounded up). */
  serviceApiVariableFeeAmount: number;
}

export interface PricedTransfer {
  sendingCurrency: string;
  receivingCurrency: string;
  /** Sending smallest units that are converted. */
  principal: number;
  /** Sending smallest units, >= 0: counterpartyFixedFee + serviceApiFixedFee + serviceApiVariableFeeAmount. */
  feesIncluded: number;
  /** principal + feesIncluded, exactly. */
  totalSendingAmount: number;
  /** Receiving smallest units. */
  totalReceivingAmount: number;
  /** Sending major units per receiving major unit, at the applied rate (fees excluded). */
  exchangeRate: number;
  rateDetails: RateDetails;
}

/** SERVICE_SPEC part 8: lockedCurrencyAmount is at most this; every priced amount is held to it too. */
export const LOCKED_AMOUNT_LIMIT = 9_000_000_000_000_000;

/** A non-negative rational num/den, den > 0. */
export interface Ratio {
  num: bigint;
  den: bigint;
}

/** One pair's parameters, as exact values. */
export interface PairRate {
  sending: string;
  receiving: string;
  /** Receiving major units per sending major unit. */
  midRate: Ratio;
  multiplier: Ratio;
  /** Sending smallest units. */
  fixedFee: number;
  variableFeeRate: Ratio;
  /** Receiving smallest units per sending smallest unit at the mid rate. */
  midUnitRate: Ratio;
  /** midUnitRate × multiplier: what a principal converts at. */
  appliedUnitRate: Ratio;
}

interface RawPair {
  midRate: string;
  multiplier: string;
  fixedFee: number;
  variableFeeRate: string;
}

interface RawTable {
  updatedAt: string;
  pairs: Record<string, Record<string, RawPair>>;
}

const DECIMAL_RE = /^(0|[1-9][0-9]{0,17})(\.[0-9]{1,20})?$/;

function parseDecimal(text: string, what: string): Ratio {
  if (typeof text !== 'string' || !DECIMAL_RE.test(text)) throw new Error(`data/fx-rates.json: ${what} must be a plain decimal string, got ${String(text)}`);
  const [whole, frac = ''] = text.split('.') as [string, string?];
  return { num: BigInt(whole + frac), den: 10n ** BigInt(frac.length) };
}

function toNumber(r: Ratio): number {
  return Number(r.num) / Number(r.den);
}

function loadTable(): { updatedAt: string; pairs: ReadonlyMap<string, PairRate> } {
  const raw = JSON.parse(readFileSync(dataFile('fx-rates.json'), 'utf8')) as RawTable;
  if (typeof raw.updatedAt !== 'string' || Number.isNaN(Date.parse(raw.updatedAt))) throw new Error('data/fx-rates.json: updatedAt must be a date-time');
  const pairs = new Map<string, PairRate>();
  for (const [sending, sendingInfo] of CURRENCIES) {
    for (const [receiving, receivingInfo] of CURRENCIES) {
      const where = `${sending}->${receiving}`;
      const entry = raw.pairs[sending]?.[receiving];
      if (entry === undefined) throw new Error(`data/fx-rates.json: no rate for ${where}`);
      const midRate = parseDecimal(entry.midRate, `${where} midRate`);
      const multiplier = parseDecimal(entry.multiplier, `${where} multiplier`);
      const variableFeeRate = parseDecimal(entry.variableFeeRate, `${where} variableFeeRate`);
      if (midRate.num === 0n || multiplier.num === 0n) throw new Error(`data/fx-rates.json: ${where} rates must be positive`);
      if (multiplier.num > multiplier.den) throw new Error(`data/fx-rates.json: ${where} multiplier must not exceed 1`);
      if (variableFeeRate.num >= variableFeeRate.den) throw new Error(`data/fx-rates.json: ${where} variableFeeRate must be below 1`);
      if (!Number.isSafeInteger(entry.fixedFee) || entry.fixedFee < 0) throw new Error(`data/fx-rates.json: ${where} fixedFee must be a non-negative integer`);
      // Moves between two accounts of one currency are exact: rate 1 and no fees.
      if (sending === receiving && (midRate.num !== midRate.den || multiplier.num !== multiplier.den || entry.fixedFee !== 0 || variableFeeRate.num !== 0n)) {
        throw new Error(`data/fx-rates.json: ${where} must have rate 1 and no fees`);
      }
      const scale = 10n ** BigInt(receivingInfo.decimals);
      const unscale = 10n ** BigInt(sendingInfo.decimals);
      pairs.set(where, {
        sending,
        receiving,
        midRate,
        multiplier,
        fixedFee: entry.fixedFee,
        variableFeeRate,
        midUnitRate: { num: midRate.num * scale, den: midRate.den * unscale },
        appliedUnitRate: { num: midRate.num * multiplier.num * scale, den: midRate.den * multiplier.den * unscale },
      });
    }
  }
  return { updatedAt: new Date(raw.updatedAt).toISOString(), pairs };
}

const TABLE = loadTable();

/** When the shipped table was last set (ISO 8601). */
export const FX_TABLE_UPDATED_AT = TABLE.updatedAt;

/** The table's parameters for a pair, or undefined when either currency is not supported. */
export function pairRate(sending: string, receiving: string): PairRate | undefined {
  return TABLE.pairs.get(`${sending}->${receiving}`);
}

function requirePair(sending: string, receiving: string): PairRate {
  const pair = pairRate(sending, receiving);
  if (pair === undefined) {
    throw new DomainError('INVALID_CURRENCY_COMBINATION', `no exchange rate from ${sending} to ${receiving}`, [
      { field: CURRENCIES.has(sending) ? 'receivingCurrency' : 'sendingCurrency', message: `${CURRENCIES.has(sending) ? receiving : sending} is not a supported currency` },
    ]);
  }
  return pair;
}

/** Sending major units per receiving major unit at the applied rate (the Quote's exchangeRate). */
export function exchangeRate(sending: string, receiving: string): number {
  const pair = requirePair(sending, receiving);
  return Number(pair.midRate.den * pair.multiplier.den) / Number(pair.midRate.num * pair.multiplier.num);
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}

const LIMIT = BigInt(LOCKED_AMOUNT_LIMIT);

function tooLarge(what: string): DomainError {
  return invalidField('lockedCurrencyAmount', `too large: the ${what} would exceed ${LOCKED_AMOUNT_LIMIT}`);
}

/** What a principal costs the sender: p + fixedFee + ceil(p × variableFeeRate). */
function totalFor(pair: PairRate, principal: bigint): bigint {
  return principal + BigInt(pair.fixedFee) + ceilDiv(principal * pair.variableFeeRate.num, pair.variableFeeRate.den);
}

/**
 * The SENDING-locked amounts priceTransfer accepts for a pair, as the interval [min, max]:
 * min buys one smallest unit of the receiving currency after fees; max is the largest
 * total whose conversion stays within LOCKED_AMOUNT_LIMIT (and at most the limit itself).
 */
export function priceableSendingRange(sending: string, receiving: string): { min: number; max: number } {
  const pair = requirePair(sending, receiving);
  const { num: rn, den: rd } = pair.appliedUnitRate;
  // The smallest principal converting to at least 1; the total that first fits it.
  const min = totalFor(pair, ceilDiv(rd, rn));
  // The largest principal converting to at most the limit; one unit short of the total
  // that would fit the next principal.
  const largest = ceilDiv((LIMIT + 1n) * rd, rn) - 1n;
  const max = totalFor(pair, largest + 1n) - 1n;
  return { min: Number(min), max: Number(max < LIMIT ? max : LIMIT) };
}

/**
 * Prices a transfer of `lockedAmount` smallest units of the locked side's currency.
 *
 * SENDING: totalSendingAmount = lockedAmount; the principal is the largest p with
 * p + fixedFee + ceil(p × variableFeeRate) <= lockedAmount and the fees are the rest, so
 * every unit the sender pays is principal or fee; the receiver gets floor(p × appliedUnitRate).
 * RECEIVING: totalReceivingAmount = lockedAmount; the principal is the smallest p with
 * p × appliedUnitRate >= lockedAmount; fees = fixedFee + ceil(p × variableFeeRate).
 * Either way the receiver never gets more than the principal converted exactly.
 *
 * Throws DomainError('INVALID_INPUT', ..., [{field: 'lockedCurrencyAmount', ...}]) when the
 * locked amount cannot be priced (not a positive integer up to LOCKED_AMOUNT_LIMIT, too small
 * to pay the fees or to receive anything, or results past the limit), and
 * INVALID_CURRENCY_COMBINATION for a currency outside the table.
 */
export function priceTransfer(sending: string, receiving: string, side: LockedCurrencySide, lockedAmount: number): PricedTransfer {
  const pair = requirePair(sending, receiving);
  if (!Number.isSafeInteger(lockedAmount) || lockedAmount < 1 || lockedAmount > LOCKED_AMOUNT_LIMIT) {
    throw invalidField('lockedCurrencyAmount', `must be an integer from 1 to ${LOCKED_AMOUNT_LIMIT}`);
  }
  const locked = BigInt(lockedAmount);
  const fixedFee = BigInt(pair.fixedFee);
  const { num: vn, den: vd } = pair.variableFeeRate;
  const { num: rn, den: rd } = pair.appliedUnitRate;

  let principal: bigint;
  let fees: bigint;
  let received: bigint;
  if (side === 'SENDING') {
    // p × (1 + v) <= locked - fixed, and p + ceil(p × v) <= locked - fixed follows because
    // the right side is an integer.
    principal = locked <= fixedFee ? 0n : ((locked - fixedFee) * vd) / (vd + vn);
    if (principal < 1n) throw invalidField('lockedCurrencyAmount', `too small: ${lockedAmount} does not cover the fees of ${pair.fixedFee} plus the variable fee`);
    fees = locked - principal;
    received = (principal * rn) / rd;
    if (received < 1n) throw invalidField('lockedCurrencyAmount', `too small: ${lockedAmount} converts to less than one smallest unit of ${receiving}`);
    if (received > LIMIT) throw tooLarge('receiving amount');
  } else {
    received = locked;
    principal = ceilDiv(locked * rd, rn);
    fees = fixedFee + ceilDiv(principal * vn, vd);
    if (principal + fees > LIMIT) throw tooLarge('sending amount');
  }
  const variableFee = fees - fixedFee;
  return {
    sendingCurrency: sending,
    receivingCurrency: receiving,
    principal: Number(principal),
    feesIncluded: Number(fees),
    totalSendingAmount: Number(principal + fees),
    totalReceivingAmount: Number(received),
    exchangeRate: exchangeRate(sending, receiving),
    rateDetails: {
      counterpartyMultiplier: toNumber(pair.midUnitRate),
      counterpartyFixedFee: 0,
      serviceApiMultiplier: toNumber(pair.multiplier),
      serviceApiFixedFee: pair.fixedFee,
      serviceApiVariableFeeRate: toNumber(pair.variableFeeRate),
      serviceApiVariableFeeAmount: Number(variableFee),
    },
  };
}
