// Look-ups (issue 39, CONTRACT.md "Today's clients, second wave"; docs/api.md "Look-ups"):
// the rails of external accounts as discoveries, the UMA providers an environment reaches,
// the operator's VASP directory and End User Terms (and their defaults), and the crypto
// withdrawal estimate, which charges what a quote of the same amount does. Every answer is
// held to the vendor's published schema, and none of them writes the log.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serviceForSuite, type TestService } from './support/service.js';
import { SOLANA_ADDRESS, EIP55_ADDRESS, assertError, assertInvalid, assertStatus, createCustomer, walk } from './support/assertions.js';
import { accountIn, createQuote, quoteBody } from './support/money.js';
import { assertVendorError } from './support/vendor-error.js';
import { assertVendorResponse } from './support/vendor-contract.js';
import { configFromEnv, ConfigError, DEFAULT_END_USER_TERMS } from '../src/config.js';

const VASPS = [
  { vaspName: 'Kraken', url: 'https://www.kraken.com' },
  { vaspName: 'Bitso' },
  { vaspName: 'Coinbase', url: 'https://www.coinbase.com' },
];
const TERMS = { END_USER_TERMS_VERSION: '2025-06', END_USER_TERMS_URL: 'https://legal.example.com/terms/2025-06' };

/** The log's last entry: a look-up must leave it where it was. */
function lastSeq(svc: TestService): number {
  return svc.service.services.engine.lastSeq;
}

/** An id of the same kind that names nothing: `id` with its last digit changed. */
function otherId(id: string): string {
  return id.replace(/.$/, (c) => (c === '0' ? '1' : '0'));
}

/** A 200 of `operationId`, held to the vendor's schema. */
async function vendorOk(svc: TestService, operationId: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await svc.request(method, path, body === undefined ? {} : { body });
  assertStatus(res, 200);
  assertVendorResponse(operationId, 200, res.body);
  return res.body;
}

describe('look-ups of a service with no operator settings', () => {
  const svc = serviceForSuite();

  // Errors are CONTRACT.md's `{status, code, message, details}`: held to the vendor's schema
  // for their status except where CONTRACT.md decides otherwise (support/vendor-error.ts).
  it('answers 400 and 404 in the vendor\'s error shapes, as CONTRACT.md amends them', async () => {
    assertVendorError('getDiscoveries', 400, (await svc.request('GET', '/discoveries?country=mex')).body);
    assertVendorError('listVasps', 400, (await svc.request('GET', '/vasps?limit=0')).body);
    const customer = await createCustomer(svc);
    const usdc = await accountIn(svc, customer.id, 'USDC');
    const body = { internalAccountId: usdc.id, currency: 'DOGE', cryptoNetwork: 'SOLANA', amount: 1_000_000, destinationAddress: SOLANA_ADDRESS };
    assertVendorError('estimateCryptoWithdrawalFee', 400, (await svc.request('POST', '/crypto/estimate-withdrawal-fee', { body })).body);
    const unknown = { ...body, currency: 'USDC', internalAccountId: otherId(usdc.id) };
    assertVendorError('estimateCryptoWithdrawalFee', 404, (await svc.request('POST', '/crypto/estimate-withdrawal-fee', { body: unknown })).body);
  });

  it('GET /discoveries lists each bank rail for each region of its currency, and filters by country and currency', async () => {
    const before = lastSeq(svc);
    const all = (await vendorOk(svc, 'getDiscoveries', 'GET', '/discoveries')).data;
    const clabe = all.filter((d: any) => d.bankName === 'CLABE');
    assert.deepEqual(clabe, [{ bankName: 'CLABE', displayName: 'Mexican bank account (SPEI), currency MXN', country: 'MX', currency: 'MXN' }]);
    // IBAN carries EUR, GBP and AED: every euro-area region, GB and AE.
    const iban = all.filter((d: any) => d.bankName === 'IBAN');
    assert.ok(iban.some((d: any) => d.country === 'DE' && d.currency === 'EUR'));
    assert.ok(iban.some((d: any) => d.country === 'GB' && d.currency === 'GBP'));
    assert.ok(iban.some((d: any) => d.country === 'AE' && d.currency === 'AED'));
    assert.ok(!all.some((d: any) => /WALLET|LIGHTNING/.test(d.bankName)), 'wallets are not corridors');

    const mexico = (await vendorOk(svc, 'getDiscoveries', 'GET', '/discoveries?country=MX&currency=MXN')).data;
    assert.deepEqual(mexico, clabe);
    const us = (await vendorOk(svc, 'getDiscoveries', 'GET', '/discoveries?country=US')).data;
    assert.deepEqual(us.map((d: any) => d.bankName).sort(), ['USD_ACCOUNT', 'US_ACCOUNT']);
    assert.deepEqual((await vendorOk(svc, 'getDiscoveries', 'GET', '/discoveries?country=PH&currency=PHP')).data, []);

    assertInvalid(await svc.request('GET', '/discoveries?country=mex'), 'country');
    assert.equal(lastSeq(svc), before);
  });

  it('a discovered rail is one an external account is created on, with bankName as discovered', async () => {
    const [rail] = (await vendorOk(svc, 'getDiscoveries', 'GET', '/discoveries?country=MX')).data;
    const customer = await createCustomer(svc, { region: 'MX' });
    const res = await svc.request('POST', '/customers/external-accounts', {
      body: {
        customerId: customer.id,
        currency: rail.currency,
        accountInfo: { accountType: rail.bankName, clabe: '032180000118359719', bankName: rail.bankName, beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Pat Payee' } },
      },
    });
    assertStatus(res, 201);
    assert.equal(res.body.accountInfo.bankName, 'CLABE');
  });

  it('GET /uma-providers lists the sandbox domain, with the test addresses\' currencies, and the own domain once it differs', async () => {
    const before = lastSeq(svc);
    const sandbox = await vendorOk(svc, 'getAvailableUmaProviders', 'GET', '/uma-providers');
    assert.equal(sandbox.totalCount, 1);
    const [shared] = sandbox.data;
    assert.equal(shared.domain, 'sandbox.uma.test');
    // The platform's USD, USDC and USDB, and the EUR and MXN of $success.eur and $success.mxn.
    assert.deepEqual(shared.supportedCurrencies.map((c: any) => c.code), ['USD', 'USDC', 'USDB', 'EUR', 'MXN']);
    assert.ok(shared.supportedRegions.includes('MX') && shared.supportedRegions.includes('US') && shared.supportedRegions.includes('FR'));
    assert.equal(lastSeq(svc), before);

    assertStatus(await svc.request('PATCH', '/config', { body: { umaDomain: 'pay.example.com' } }), 200);
    try {
      // Descending by domain unless asked otherwise; one a page, the cursor leads on.
      const first = await vendorOk(svc, 'getAvailableUmaProviders', 'GET', '/uma-providers?limit=1');
      assert.deepEqual([first.data[0].domain, first.hasMore, first.totalCount], ['sandbox.uma.test', true, 2]);
      const second = await vendorOk(svc, 'getAvailableUmaProviders', 'GET', `/uma-providers?limit=1&cursor=${encodeURIComponent(first.nextCursor)}`);
      assert.deepEqual([second.data[0].domain, second.hasMore], ['pay.example.com', false]);
      assert.deepEqual(second.data[0].supportedCurrencies.map((c: any) => c.code), ['USD', 'USDC', 'USDB']);
      const ascending = await walk(svc, '/uma-providers?sortOrder=asc', 1);
      assert.deepEqual(ascending.items.map((p: any) => p.domain), ['pay.example.com', 'sandbox.uma.test']);
      const euro = await vendorOk(svc, 'getAvailableUmaProviders', 'GET', '/uma-providers?currencyCode=EUR&countryCode=FR&hasBlockedProviders=false');
      assert.deepEqual(euro.data.map((p: any) => [p.name, p.domain]), [['Sandbox test addresses', 'sandbox.uma.test']]);
      // A cursor of the list in the other order does not open here.
      const otherOrder = await svc.request('GET', `/uma-providers?cursor=${encodeURIComponent(first.nextCursor)}&sortOrder=asc`);
      assertInvalid(otherOrder, 'cursor');
    } finally {
      assertStatus(await svc.request('PATCH', '/config', { body: { umaDomain: 'sandbox.uma.test' } }), 200);
    }
  });

  it('production reaches no test address: its one provider is its own domain', async () => {
    const res = await svc.request('GET', '/uma-providers', { auth: 'production' });
    assertStatus(res, 200);
    assertVendorResponse('getAvailableUmaProviders', 200, res.body);
    const config = await svc.request('GET', '/config', { auth: 'production' });
    assert.deepEqual(res.body.data.map((p: any) => p.domain), [config.body.umaDomain]);
    assert.notEqual(config.body.umaDomain, 'sandbox.uma.test');
  });

  it('GET /vasps is empty and GET /customers/end-user-terms the placeholder terms when the operator sets none', async () => {
    const vasps = await vendorOk(svc, 'listVasps', 'GET', '/vasps');
    assert.deepEqual(vasps, { data: [], hasMore: false, totalCount: 0 });
    const terms = await vendorOk(svc, 'getEndUserTerms', 'GET', '/customers/end-user-terms');
    assert.deepEqual(terms, DEFAULT_END_USER_TERMS);
    assertInvalid(await svc.request('GET', '/vasps?limit=0'), 'limit');
  });

  it('POST /crypto/estimate-withdrawal-fee charges what a quote of the same amount to a wallet on that network does, and logs nothing', async () => {
    const customer = await createCustomer(svc);
    const usdc = await accountIn(svc, customer.id, 'USDC');
    const wallet = await svc.request('POST', '/customers/external-accounts', {
      body: { customerId: customer.id, currency: 'USDC', cryptoNetwork: 'SOLANA_MAINNET', accountInfo: { accountType: 'SOLANA_WALLET', address: SOLANA_ADDRESS } },
    });
    assertStatus(wallet, 201);
    const amount = 1_234_567;
    const quote = await createQuote(svc, quoteBody(usdc.id, wallet.body.id, amount));
    const before = lastSeq(svc);
    const estimate = await vendorOk(svc, 'estimateCryptoWithdrawalFee', 'POST', '/crypto/estimate-withdrawal-fee', {
      internalAccountId: usdc.id,
      currency: 'USDC',
      cryptoNetwork: 'SOLANA',
      amount,
      destinationAddress: SOLANA_ADDRESS,
    });
    assert.deepEqual(estimate, { networkFee: 0, networkFeeAsset: 'SOL', applicationFee: quote.feesIncluded, totalFee: quote.feesIncluded, netAmount: quote.totalReceivingAmount });
    assert.equal(estimate.netAmount + estimate.totalFee, amount);
    // One network of the family, as external accounts name it, estimates the same.
    const onBase = await vendorOk(svc, 'estimateCryptoWithdrawalFee', 'POST', '/crypto/estimate-withdrawal-fee', {
      internalAccountId: usdc.id,
      currency: 'USDC',
      cryptoNetwork: 'BASE_MAINNET',
      amount,
      destinationAddress: EIP55_ADDRESS,
    });
    assert.deepEqual(onBase, { ...estimate, networkFeeAsset: 'ETH' });
    assert.equal(lastSeq(svc), before);
  });

  it('refuses an unknown currency, network or address with a 400 naming the field, and an unknown account with a 404', async () => {
    const customer = await createCustomer(svc);
    const usdc = await accountIn(svc, customer.id, 'USDC');
    const usd = await accountIn(svc, customer.id, 'USD');
    const body = { internalAccountId: usdc.id, currency: 'USDC', cryptoNetwork: 'SOLANA', amount: 1_000_000, destinationAddress: SOLANA_ADDRESS };
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ currency: 'DOGE' }, 'currency'],
      [{ currency: 'BTC' }, 'currency'],
      [{ cryptoNetwork: 'POLYGON' }, 'cryptoNetwork'],
      [{ cryptoNetwork: 'SPARK' }, 'cryptoNetwork'],
      [{ destinationAddress: EIP55_ADDRESS }, 'destinationAddress'],
      [{ internalAccountId: usd.id, currency: 'USD' }, 'internalAccountId'],
      [{ amount: 0 }, 'amount'],
      [{ amount: 1.5 }, 'amount'],
    ];
    for (const [change, field] of refusals) {
      assertInvalid(await svc.request('POST', '/crypto/estimate-withdrawal-fee', { body: { ...body, ...change } }), field);
    }
    const unknown = await svc.request('POST', '/crypto/estimate-withdrawal-fee', { body: { ...body, internalAccountId: otherId(usdc.id) } });
    assertError(unknown, 404, 'NOT_FOUND', ['internalAccountId']);
    const production = await svc.request('POST', '/crypto/estimate-withdrawal-fee', { body, auth: 'production' });
    assertError(production, 404, 'NOT_FOUND', ['internalAccountId']);
  });
});

describe("look-ups of the operator's settings", () => {
  const svc = serviceForSuite({ env: { VASPS: JSON.stringify(VASPS), ...TERMS } });

  it('GET /vasps lists the configured directory by name, a page at a time', async () => {
    const all = await vendorOk(svc, 'listVasps', 'GET', '/vasps');
    assert.deepEqual(all.data, [VASPS[1], VASPS[2], VASPS[0]]);
    const first = await vendorOk(svc, 'listVasps', 'GET', '/vasps?limit=2');
    assert.deepEqual([first.data.map((v: any) => v.vaspName), first.hasMore], [['Bitso', 'Coinbase'], true]);
    const rest = await vendorOk(svc, 'listVasps', 'GET', `/vasps?limit=2&cursor=${encodeURIComponent(first.nextCursor)}`);
    assert.deepEqual([rest.data, rest.hasMore, rest.nextCursor], [[VASPS[0]], false, undefined]);
  });

  it('GET /customers/end-user-terms answers the configured version and address', async () => {
    assert.deepEqual(await vendorOk(svc, 'getEndUserTerms', 'GET', '/customers/end-user-terms'), { version: '2025-06', url: 'https://legal.example.com/terms/2025-06' });
  });
});

describe('the look-ups settings refuse what they cannot serve, naming the variable', () => {
  it('a bad VASPS or END_USER_TERMS_* is a ConfigError that names it', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ VASPS: 'Kraken,Bitso' }, /^VASPS .*JSON array/],
      [{ VASPS: '{"vaspName":"Kraken"}' }, /^VASPS .*JSON array/],
      [{ VASPS: '[{"vaspName":""}]' }, /^VASPS\[0\]\.vaspName/],
      [{ VASPS: `[{"vaspName":"${'K'.repeat(101)}"}]` }, /^VASPS\[0\]\.vaspName/],
      [{ VASPS: '[{"vaspName":"Kraken","website":"https://www.kraken.com"}]' }, /^VASPS\[0\] .*website/],
      [{ VASPS: '[{"vaspName":"Kraken","url":"www.kraken.com"}]' }, /^VASPS\[0\]\.url/],
      [{ VASPS: '[{"vaspName":"Kraken"},{"vaspName":"Kraken"}]' }, /^VASPS\[1\] .*twice/],
      [{ END_USER_TERMS_URL: 'ftp://legal.example.com/terms' }, /^END_USER_TERMS_URL=ftp/],
      [{ END_USER_TERMS_URL: 'legal.example.com/terms' }, /^END_USER_TERMS_URL=/],
      [{ END_USER_TERMS_VERSION: 'version 2' }, /^END_USER_TERMS_VERSION=version 2/],
    ];
    for (const [env, message] of cases) {
      assert.throws(() => configFromEnv(env), (err: unknown) => err instanceof ConfigError && message.test(err.message), JSON.stringify(env));
    }
  });
});
