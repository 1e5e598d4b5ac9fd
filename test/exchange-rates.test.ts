// GET /exchange-rates (CONTRACT.md "Money", docs/money.md "Exchange rates and fees"): the
// shipped table priced for a sending amount, its defaults, the platform's bounds, and
// the 400s naming the parameter.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serviceForSuite } from './support/service.js';
import { DEFAULT_CURRENCIES, ISO_TIME, assertInvalid, assertStatus, supportedCurrency } from './support/assertions.js';

const CURRENCY_COUNT = 10;
const UPDATED_AT = '2026-11-21T00:00:00.000Z';

function assertClose(actual: number, expected: number): void {
  assert.ok(Math.abs(actual - expected) <= Math.abs(expected) * 1e-12, `${actual} is not ${expected}`);
}

describe('GET /exchange-rates', () => {
  const svc = serviceForSuite();

  it('prices one pair for a sending amount: fees, receiving amount rounded down, bounds, table date', async () => {
    const res = await svc.request('GET', '/exchange-rates?sourceCurrency=USD&destinationCurrency=EUR&sendingAmount=10000');
    assertStatus(res, 200);
    assert.equal(res.body.data.length, 1);
    const { exchangeRate, ...row } = res.body.data[0];
    // Fees 50 + ceil(9920 × 0.003); floor(9920 × 0.86 × 0.995) (test/fx.test.ts works it through).
    assert.deepEqual(row, {
      sourceCurrency: 'USD',
      destinationCurrency: 'EUR',
      sendingAmount: 10_000,
      receivingAmount: 8488,
      fees: { fixed: 50, total: 80 },
      minSendingAmount: 53,
      maxSendingAmount: 100_000_000,
      updatedAt: UPDATED_AT,
    });
    assertClose(exchangeRate, 1 / (0.86 * 0.995));
  });

  it('takes destinationCurrency repeated, in the order given, once each', async () => {
    const res = await svc.request('GET', '/exchange-rates?sourceCurrency=USD&destinationCurrency=BTC&destinationCurrency=USD&destinationCurrency=BTC&sendingAmount=10000');
    assertStatus(res, 200);
    assert.deepEqual(
      res.body.data.map((r: { destinationCurrency: string }) => r.destinationCurrency),
      ['BTC', 'USD'],
    );
    const [btc, usd] = res.body.data;
    // p = 9900 (9900 + 50 + ceil(49.5) = 10000); floor(9900 × 10.9999999989) sats
    assert.equal(btc.receivingAmount, 108_899);
    assert.deepEqual(btc.fees, { fixed: 50, total: 100 });
    // Same currency: rate 1, no fees.
    assert.equal(usd.receivingAmount, 10_000);
    assert.deepEqual(usd.fees, { fixed: 0, total: 0 });
    assert.equal(usd.exchangeRate, 1);
    assert.equal(usd.minSendingAmount, 1);
  });

  it("without parameters lists every supported source against every other currency, at one major unit each", async () => {
    const res = await svc.request('GET', '/exchange-rates');
    assertStatus(res, 200);
    const rows: any[] = res.body.data;
    assert.equal(rows.length, DEFAULT_CURRENCIES.length * (CURRENCY_COUNT - 1));
    for (const source of DEFAULT_CURRENCIES) {
      const from = rows.filter((r) => r.sourceCurrency === source);
      assert.equal(from.length, CURRENCY_COUNT - 1);
      assert.ok(from.every((r) => r.destinationCurrency !== source));
    }
    for (const r of rows) {
      assert.equal(r.updatedAt, UPDATED_AT);
      assert.match(r.updatedAt, ISO_TIME);
      assert.ok(r.minSendingAmount <= r.sendingAmount && r.sendingAmount <= r.maxSendingAmount, JSON.stringify(r));
      assert.ok(r.receivingAmount >= 1 && r.fees.total >= r.fees.fixed && r.exchangeRate > 0);
    }
    const usdEur = rows.find((r) => r.sourceCurrency === 'USD' && r.destinationCurrency === 'EUR');
    assert.equal(usdEur.sendingAmount, 100);
    const usdcBtc = rows.find((r) => r.sourceCurrency === 'USDC' && r.destinationCurrency === 'BTC');
    assert.equal(usdcBtc.sendingAmount, 1_000_000);

    const one = await svc.request('GET', '/exchange-rates?sourceCurrency=USDB');
    assertStatus(one, 200);
    assert.deepEqual(one.body.data, rows.filter((r) => r.sourceCurrency === 'USDB'));
  });

  it('answers the production environment from its own configuration', async () => {
    const res = await svc.request('GET', '/exchange-rates?sourceCurrency=USD&destinationCurrency=MXN&sendingAmount=100000', { auth: 'production' });
    assertStatus(res, 200);
    // p = floor(99950 / 1.003) = 99651; floor(99651 × 18.4 × 0.995) = floor(1824410.5)
    assert.equal(res.body.data[0].receivingAmount, 1_824_410);
  });

  it('publishes destinationCurrency as a repeatable (array) query parameter', async () => {
    const res = await svc.request('GET', '/2025-10-13/openapi.json', { auth: 'none' });
    assertStatus(res, 200);
    const parameters: Array<{ name: string; in: string; required: boolean; schema: { type: string } }> = res.body.paths['/2025-10-13/exchange-rates'].get.parameters;
    const byName = new Map(parameters.map((p) => [p.name, p]));
    assert.equal(byName.get('destinationCurrency')?.schema.type, 'array');
    assert.equal(byName.get('sourceCurrency')?.schema.type, 'string');
    assert.equal(byName.get('sendingAmount')?.schema.type, 'integer');
    assert.ok(parameters.every((p) => p.in === 'query' && p.required === false));
  });

  it('400 naming the parameter for a bad currency or amount', async () => {
    const cases: Array<[string, string]> = [
      ['sourceCurrency=usd', 'sourceCurrency'],
      ['sourceCurrency=JPY', 'sourceCurrency'],
      ['sourceCurrency=EUR', 'sourceCurrency'],
      ['sourceCurrency=USD&destinationCurrency=XYZ', 'destinationCurrency.0'],
      ['sourceCurrency=USD&destinationCurrency=EUR&destinationCurrency=eur', 'destinationCurrency.1'],
      ['sourceCurrency=USD&destinationCurrency=EUR&destinationCurrency=JPY', 'destinationCurrency.1'],
      ['sourceCurrency=USD&sendingAmount=0', 'sendingAmount'],
      ['sourceCurrency=USD&sendingAmount=-5', 'sendingAmount'],
      ['sourceCurrency=USD&sendingAmount=1.5', 'sendingAmount'],
      ['sourceCurrency=USD&sendingAmount=1e3', 'sendingAmount'],
      ['sourceCurrency=USD&sendingAmount=abc', 'sendingAmount'],
      ['sourceCurrency=USD&sendingAmount=9000000000000001', 'sendingAmount'],
      ['sendingAmount=100', 'sendingAmount'],
      // Below what buys one euro cent after the fees.
      ['sourceCurrency=USD&destinationCurrency=EUR&sendingAmount=52', 'sendingAmount'],
      // Above the platform's maxAmount for USD.
      ['sourceCurrency=USD&destinationCurrency=EUR&sendingAmount=100000001', 'sendingAmount'],
    ];
    for (const [query, field] of cases) {
      const res = await svc.request('GET', `/exchange-rates?${query}`);
      assertInvalid(res, field);
    }
  });
});

describe("GET /exchange-rates within the platform's amount bounds", () => {
  const svc = serviceForSuite();
  before(async () => {
    const res = await svc.request('PATCH', '/config', {
      body: {
        supportedCurrencies: [
          supportedCurrency('USD', { minAmount: 1000, maxAmount: 500_000 }),
          supportedCurrency('USDC'),
          supportedCurrency('BTC', { minAmount: 1, maxAmount: 560 }),
        ],
      },
    });
    assertStatus(res, 200);
  });

  it("narrows min and max to the platform's minAmount and maxAmount, and the default amount with them", async () => {
    const res = await svc.request('GET', '/exchange-rates?sourceCurrency=USD&destinationCurrency=EUR');
    assertStatus(res, 200);
    const [row] = res.body.data;
    assert.equal(row.minSendingAmount, 1000);
    assert.equal(row.maxSendingAmount, 500_000);
    assert.equal(row.sendingAmount, 1000);
    assertInvalid(await svc.request('GET', '/exchange-rates?sourceCurrency=USD&destinationCurrency=EUR&sendingAmount=999'), 'sendingAmount');
    assertInvalid(await svc.request('GET', '/exchange-rates?sourceCurrency=USD&destinationCurrency=EUR&sendingAmount=500001'), 'sendingAmount');
    const top = await svc.request('GET', '/exchange-rates?sourceCurrency=USD&destinationCurrency=EUR&sendingAmount=500000');
    assertStatus(top, 200);
  });

  it('skips a pair no allowed amount can be sent on when listing, and refuses it when asked for', async () => {
    // With at most 560 sats, BTC pays the 556-sat fixed fee plus the variable fee on a
    // principal that must buy one smallest unit: MXN (1 sat), BRL (3), INR (1), USDC and
    // USDB (1) fit; AED (4 sats: 561), USD (12: 569), EUR (14: 571), GBP (15: 572) do not.
    const listed = await svc.request('GET', '/exchange-rates?sourceCurrency=BTC');
    assertStatus(listed, 200);
    assert.deepEqual(
      listed.body.data.map((r: { destinationCurrency: string }) => r.destinationCurrency),
      ['MXN', 'BRL', 'INR', 'USDC', 'USDB'],
    );
    const brl = listed.body.data[1];
    assert.deepEqual([brl.minSendingAmount, brl.sendingAmount, brl.maxSendingAmount], [560, 560, 560]);
    assertInvalid(await svc.request('GET', '/exchange-rates?sourceCurrency=BTC&destinationCurrency=MXN&destinationCurrency=AED'), 'destinationCurrency.1');
  });
});
