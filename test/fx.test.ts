// Pricing (actors/fx.ts, docs/money.md "Exchange rates and fees"): hand-computed examples
// from data/fx-rates.json for both locked sides, the refusals, and fast-check properties
// over every pair, side and amount.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { DomainError } from '../actors/errors.js';
import { LOCKED_AMOUNT_LIMIT, priceTransfer, priceableSendingRange, type PricedTransfer } from '../actors/fx.js';

function assertClose(actual: number, expected: number): void {
  assert.ok(Math.abs(actual - expected) <= Math.abs(expected) * 1e-12, `${actual} is not ${expected}`);
}

function assertRefused(f: () => PricedTransfer, message: RegExp): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(e instanceof DomainError);
    assert.equal(e.code, 'INVALID_INPUT');
    assert.equal(e.fields?.[0]?.field, 'lockedCurrencyAmount');
    assert.match(e.message, message);
    return true;
  });
}

describe('priceTransfer: hand-computed examples', () => {
  it('USD -> EUR, SENDING 100.00 USD: fees 0.50 + 0.3% rounded up, receiver rounded down', () => {
    // p = floor((10000 - 50) / 1.003) = 9920; variable fee ceil(9920 × 0.003) = ceil(29.76) = 30
    // applied rate 0.86 × 0.995 = 0.8557 cent per cent: floor(9920 × 0.8557) = floor(8488.544)
    const { exchangeRate, ...q } = priceTransfer('USD', 'EUR', 'SENDING', 10_000);
    assertClose(exchangeRate, 1 / 0.8557);
    assert.deepEqual(q, {
      sendingCurrency: 'USD',
      receivingCurrency: 'EUR',
      principal: 9920,
      feesIncluded: 80,
      totalSendingAmount: 10_000,
      totalReceivingAmount: 8488,
      rateDetails: {
        counterpartyMultiplier: 0.86,
        counterpartyFixedFee: 0,
        serviceApiMultiplier: 0.995,
        serviceApiFixedFee: 50,
        serviceApiVariableFeeRate: 0.003,
        serviceApiVariableFeeAmount: 30,
      },
    });
  });

  it('USD -> EUR, RECEIVING 100.00 EUR: principal rounded up, fees on it rounded up', () => {
    // p = ceil(10000 / 0.8557) = ceil(11686.34) = 11687; fees 50 + ceil(35.061) = 86
    const q = priceTransfer('USD', 'EUR', 'RECEIVING', 10_000);
    assert.equal(q.principal, 11_687);
    assert.equal(q.feesIncluded, 86);
    assert.equal(q.rateDetails.serviceApiVariableFeeAmount, 36);
    assert.equal(q.totalSendingAmount, 11_773);
    assert.equal(q.totalReceivingAmount, 10_000);
  });

  it('USD -> BTC (8 decimals), SENDING 1,000.00 USD', () => {
    // p = floor(99950 / 1.005) = 99452; variable fee: the rest, 548 - 50 = 498 = ceil(497.26)
    // applied rate 0.00001111111111 BTC/USD × 0.99 = 10.9999999989 sat per cent:
    // 99452 × 10.9999999989 = 1093971.99989..., rounded down
    const q = priceTransfer('USD', 'BTC', 'SENDING', 100_000);
    assert.equal(q.principal, 99_452);
    assert.equal(q.feesIncluded, 548);
    assert.equal(q.rateDetails.serviceApiVariableFeeAmount, 498);
    assert.equal(q.totalReceivingAmount, 1_093_971);
    assert.equal(q.rateDetails.counterpartyMultiplier, 11.11111111);
    // USD per BTC
    assertClose(q.exchangeRate, 1 / (0.00001111111111 * 0.99));
  });

  it('BTC -> USD, RECEIVING 1,000.00 USD', () => {
    // applied rate 90000 × 0.99 USD/BTC = 0.0891 cent per sat: p = ceil(100000 / 0.0891) = 1122335
    // fees 556 + ceil(1122335 × 0.005) = 556 + ceil(5611.675) = 6168
    const q = priceTransfer('BTC', 'USD', 'RECEIVING', 100_000);
    assert.equal(q.principal, 1_122_335);
    assert.equal(q.feesIncluded, 6168);
    assert.equal(q.totalSendingAmount, 1_128_503);
    assert.equal(q.totalReceivingAmount, 100_000);
    // BTC per USD
    assertClose(q.exchangeRate, 1 / 89_100);
    assert.equal(q.rateDetails.counterpartyMultiplier, 0.09);
  });

  it('USDC -> USDB at par, SENDING 1 USDC: the unit the fee rounding leaves over is fee, not a gift', () => {
    // p = floor(1000000 / 1.001) = 999000 (999001 + ceil(999.001) would pass 1000000)
    const q = priceTransfer('USDC', 'USDB', 'SENDING', 1_000_000);
    assert.equal(q.principal, 999_000);
    assert.equal(q.feesIncluded, 1000);
    assert.equal(q.rateDetails.serviceApiVariableFeeAmount, 1000);
    assert.equal(q.totalReceivingAmount, 999_000);
    assert.equal(q.exchangeRate, 1);
  });

  it('same currency: rate 1, no fees, both sides exact', () => {
    for (const side of ['SENDING', 'RECEIVING'] as const) {
      for (const code of ['USD', 'BTC', 'USDB']) {
        const q = priceTransfer(code, code, side, 12_345);
        assert.equal(q.principal, 12_345);
        assert.equal(q.feesIncluded, 0);
        assert.equal(q.totalSendingAmount, 12_345);
        assert.equal(q.totalReceivingAmount, 12_345);
        assert.equal(q.exchangeRate, 1);
        assert.deepEqual(q.rateDetails, {
          counterpartyMultiplier: 1,
          counterpartyFixedFee: 0,
          serviceApiMultiplier: 1,
          serviceApiFixedFee: 0,
          serviceApiVariableFeeRate: 0,
          serviceApiVariableFeeAmount: 0,
        });
      }
    }
    const top = priceTransfer('INR', 'INR', 'SENDING', LOCKED_AMOUNT_LIMIT);
    assert.equal(top.totalReceivingAmount, LOCKED_AMOUNT_LIMIT);
  });

  it('BTC -> USD, SENDING 1000 sats: 39 cents after the fixed fee of 556 sats', () => {
    // p = floor(444 / 1.005) = 441; floor(441 × 0.0891) = floor(39.29)
    const q = priceTransfer('BTC', 'USD', 'SENDING', 1000);
    assert.equal(q.principal, 441);
    assert.equal(q.feesIncluded, 559);
    assert.equal(q.totalReceivingAmount, 39);
  });

  it('refuses amounts it cannot price, naming lockedCurrencyAmount', () => {
    assertRefused(() => priceTransfer('USD', 'EUR', 'SENDING', 50), /too small.*fees/);
    // 52 leaves a principal of 1 cent, which converts to 0.8557 euro cent
    assertRefused(() => priceTransfer('USD', 'EUR', 'SENDING', 51), /too small.*fees/);
    assertRefused(() => priceTransfer('USD', 'EUR', 'SENDING', 52), /too small.*less than one/);
    assertRefused(() => priceTransfer('USD', 'BTC', 'SENDING', 51), /too small/);
    assertRefused(() => priceTransfer('USD', 'INR', 'SENDING', LOCKED_AMOUNT_LIMIT), /too large: the receiving amount/);
    assertRefused(() => priceTransfer('INR', 'BTC', 'RECEIVING', LOCKED_AMOUNT_LIMIT), /too large: the sending amount/);
    for (const bad of [0, -1, 1.5, LOCKED_AMOUNT_LIMIT + 1, Number.NaN]) {
      assertRefused(() => priceTransfer('USD', 'USD', 'SENDING', bad), /must be an integer/);
    }
  });

  it('refuses a currency outside the table as INVALID_CURRENCY_COMBINATION', () => {
    assert.throws(() => priceTransfer('USD', 'JPY', 'SENDING', 100), (e: unknown) => {
      assert.ok(e instanceof DomainError);
      assert.equal(e.code, 'INVALID_CURRENCY_COMBINATION');
      assert.equal(e.fields?.[0]?.field, 'receivingCurrency');
      return true;
    });
  });
});

// ---- Properties over every pair, both sides and amounts from 1 to the limit ----
//
// The model below reads data/fx-rates.json itself and states the guarantees as exact
// rational inequalities, so it does not share code with actors/fx.ts.

interface ModelPair {
  fixed: bigint;
  vn: bigint;
  vd: bigint;
  /** Receiving smallest units per sending smallest unit at the applied rate: an / ad. */
  an: bigint;
  ad: bigint;
  /** Sending major units per receiving major unit. */
  majorRate: number;
}

const MODEL: Map<string, ModelPair> = (() => {
  const root = new URL('../../', import.meta.url);
  const table = JSON.parse(readFileSync(new URL('data/fx-rates.json', root), 'utf8')) as {
    pairs: Record<string, Record<string, { midRate: string; multiplier: string; fixedFee: number; variableFeeRate: string }>>;
  };
  const decimals = JSON.parse(readFileSync(new URL('data/currencies.json', root), 'utf8')) as Record<string, { decimals: number }>;
  const ratio = (s: string): [bigint, bigint] => {
    const dot = s.indexOf('.');
    return dot < 0 ? [BigInt(s), 1n] : [BigInt(s.replace('.', '')), 10n ** BigInt(s.length - dot - 1)];
  };
  const model = new Map<string, ModelPair>();
  for (const [s, row] of Object.entries(table.pairs)) {
    for (const [r, p] of Object.entries(row)) {
      const [mn, md] = ratio(p.midRate);
      const [kn, kd] = ratio(p.multiplier);
      const [vn, vd] = ratio(p.variableFeeRate);
      model.set(`${s}->${r}`, {
        fixed: BigInt(p.fixedFee),
        vn,
        vd,
        an: mn * kn * 10n ** BigInt(decimals[r]!.decimals),
        ad: md * kd * 10n ** BigInt(decimals[s]!.decimals),
        majorRate: Number(md * kd) / Number(mn * kn),
      });
    }
  }
  return model;
})();

const LIMIT = BigInt(LOCKED_AMOUNT_LIMIT);
const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b;
const PAIRS = [...MODEL.keys()].map((k) => k.split('->') as [string, string]);

/** Amounts spread over every magnitude from 1 to LOCKED_AMOUNT_LIMIT, with both ends. */
const amounts = fc.oneof(
  fc.constantFrom(1, 2, LOCKED_AMOUNT_LIMIT - 1, LOCKED_AMOUNT_LIMIT),
  fc.integer({ min: 0, max: 15 }).chain((k) => fc.bigInt({ min: 1n, max: 10n ** BigInt(k + 1) < LIMIT ? 10n ** BigInt(k + 1) : LIMIT }).map(Number)),
);
const cases = fc.tuple(fc.constantFrom(...PAIRS), fc.constantFrom('SENDING' as const, 'RECEIVING' as const), amounts);

/** What the guarantees require for a SENDING-locked total T: the largest principal whose
 *  fees fit in T (undefined when none does), and the receiver's floor of it converted. */
function modelSending(m: ModelPair, total: bigint): { principal: bigint; received: bigint } | undefined {
  const fits = (p: bigint): boolean => p + m.fixed + ceilDiv(p * m.vn, m.vd) <= total;
  // Largest fitting p, by bisection over [0, total].
  let lo = 0n;
  let hi = total;
  while (lo < hi) {
    const mid = (lo + hi + 1n) / 2n;
    if (fits(mid)) lo = mid;
    else hi = mid - 1n;
  }
  if (lo < 1n) return undefined;
  return { principal: lo, received: (lo * m.an) / m.ad };
}

function isAmountRefusal(e: unknown): boolean {
  return e instanceof DomainError && e.code === 'INVALID_INPUT' && e.fields?.[0]?.field === 'lockedCurrencyAmount';
}

describe('priceTransfer: properties', () => {
  it('every result is a whole, non-negative, in-limit split of the locked amount, rounded toward the platform; every refusal is justified', () => {
    fc.assert(
      fc.property(cases, ([[sending, receiving], side, amount]) => {
        const m = MODEL.get(`${sending}->${receiving}`)!;
        const locked = BigInt(amount);
        let q: PricedTransfer;
        try {
          q = priceTransfer(sending, receiving, side, amount);
        } catch (e) {
          assert.ok(isAmountRefusal(e), String(e));
          if (side === 'SENDING') {
            // Refused only when no principal fits, or it buys nothing, or more than the limit.
            const best = modelSending(m, locked);
            assert.ok(best === undefined || best.received < 1n || best.received > LIMIT, `refused ${amount} ${sending}->${receiving}`);
          } else {
            // Refused only when the cheapest principal plus its fees passes the limit.
            const p = ceilDiv(locked * m.ad, m.an);
            assert.ok(p + m.fixed + ceilDiv(p * m.vn, m.vd) > LIMIT, `refused ${amount} ${sending}->${receiving}`);
          }
          return;
        }
        const amountsOf = [q.principal, q.feesIncluded, q.totalSendingAmount, q.totalReceivingAmount, q.rateDetails.serviceApiFixedFee, q.rateDetails.serviceApiVariableFeeAmount, q.rateDetails.counterpartyFixedFee];
        for (const a of amountsOf) assert.ok(Number.isSafeInteger(a) && a >= 0 && a <= LOCKED_AMOUNT_LIMIT, `amount ${a}`);
        assert.ok(q.principal >= 1 && q.totalReceivingAmount >= 1);
        assert.equal(q.totalSendingAmount, q.principal + q.feesIncluded);
        assert.equal(q.feesIncluded, q.rateDetails.counterpartyFixedFee + q.rateDetails.serviceApiFixedFee + q.rateDetails.serviceApiVariableFeeAmount);
        assert.equal(BigInt(q.rateDetails.serviceApiFixedFee), m.fixed);
        assert.ok(Math.abs(q.exchangeRate - m.majorRate) <= m.majorRate * 1e-12);

        const p = BigInt(q.principal);
        const received = BigInt(q.totalReceivingAmount);
        const variableFee = BigInt(q.rateDetails.serviceApiVariableFeeAmount);
        // Fees round up: the variable fee is at least the exact rate times the principal.
        assert.ok(variableFee * m.vd >= p * m.vn);
        // No unit created: the receiver gets at most the principal converted exactly.
        assert.ok(received * m.ad <= p * m.an);
        if (side === 'SENDING') {
          assert.equal(q.totalSendingAmount, amount);
          // No unit lost to the sender beyond rounding: the principal is the largest whose
          // fees fit, and the receiver is short of the exact conversion by less than one unit.
          assert.deepEqual(modelSending(m, locked), { principal: p, received });
          assert.ok((received + 1n) * m.ad > p * m.an);
        } else {
          assert.equal(q.totalReceivingAmount, amount);
          // The sender pays the smallest principal that buys the locked amount, and fees on it
          // rounded up by less than one unit.
          assert.ok((p - 1n) * m.an < received * m.ad);
          assert.equal(variableFee, ceilDiv(p * m.vn, m.vd));
        }
      }),
      { numRuns: 5000 },
    );
  });

  it('the two sides agree: locking the other side at the priced amount never does better for the sender', () => {
    fc.assert(
      fc.property(cases, ([[sending, receiving], side, amount]) => {
        let q: PricedTransfer;
        try {
          q = priceTransfer(sending, receiving, side, amount);
        } catch (e) {
          assert.ok(isAmountRefusal(e), String(e));
          return;
        }
        if (side === 'SENDING') {
          const back = priceTransfer(sending, receiving, 'RECEIVING', q.totalReceivingAmount);
          assert.ok(back.totalSendingAmount <= q.totalSendingAmount);
          return;
        }
        let forth: PricedTransfer;
        try {
          forth = priceTransfer(sending, receiving, 'SENDING', q.totalSendingAmount);
        } catch (e) {
          // Near the limit the sending side may buy more than the limit allows.
          assert.ok(isAmountRefusal(e) && /too large: the receiving amount/.test((e as Error).message), String(e));
          return;
        }
        assert.ok(forth.totalReceivingAmount >= q.totalReceivingAmount);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('priceableSendingRange', () => {
  it('is exactly the interval of SENDING amounts priceTransfer accepts, for every pair', () => {
    for (const [sending, receiving] of PAIRS) {
      const { min, max } = priceableSendingRange(sending, receiving);
      assert.ok(min >= 1 && min <= max && max <= LOCKED_AMOUNT_LIMIT, `${sending}->${receiving} [${min}, ${max}]`);
      assert.ok(priceTransfer(sending, receiving, 'SENDING', min).totalReceivingAmount >= 1);
      assert.ok(priceTransfer(sending, receiving, 'SENDING', max).totalReceivingAmount <= LOCKED_AMOUNT_LIMIT);
      if (min > 1) assert.throws(() => priceTransfer(sending, receiving, 'SENDING', min - 1), isAmountRefusal);
      if (max < LOCKED_AMOUNT_LIMIT) assert.throws(() => priceTransfer(sending, receiving, 'SENDING', max + 1), isAmountRefusal);
    }
    assert.deepEqual(priceableSendingRange('USD', 'EUR'), { min: 53, max: LOCKED_AMOUNT_LIMIT });
    assert.deepEqual(priceableSendingRange('EUR', 'EUR'), { min: 1, max: LOCKED_AMOUNT_LIMIT });
  });
});
