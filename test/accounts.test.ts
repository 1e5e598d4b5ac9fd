// Internal accounts (reads), external accounts (create, list) for customers and for the
// platform, and sandbox funding (SERVICE_SPEC parts 2, 3, 4, 8; CONTRACT.md).
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serviceForSuite, startTestService, type TestService } from './support/service.js';
import {
  ACCOUNT_FIXTURES,
  BENEFICIARY,
  DEFAULT_CURRENCIES,
  EIP55_ADDRESS,
  ID_RE,
  ISO_TIME,
  SOLANA_ADDRESS,
  SPARK_MAINNET_ADDRESS,
  absentId,
  assertEnvelope,
  assertError,
  assertInvalid,
  assertStatus,
  clabeEndingWith,
  createCustomer,
  customerAccounts,
  longText,
  read,
  setCurrencies,
  totalCount,
  unique,
  usdAccount,
  walk,
} from './support/assertions.js';

async function accountOf(svc: TestService, customerId: string, code: string): Promise<any> {
  const account = (await customerAccounts(svc, customerId)).find((a) => a.balance.currency.code === code);
  assert.ok(account, `customer ${customerId} has a ${code} account`);
  return account;
}

async function balanceOf(svc: TestService, accountId: string, auth: 'sandbox' | 'production' = 'sandbox'): Promise<number> {
  return JSON.parse(await read(svc, `/internal-accounts/${accountId}`, auth)).balance.amount;
}

describe('accounts', () => {
  const svc = serviceForSuite();
  before(async () => {
    await setCurrencies(svc, DEFAULT_CURRENCIES);
  });

  describe('GET /internal-accounts and /internal-accounts/{id}', () => {
    it("lists customers' and the platform's accounts, filtered by customerId and type, paging each once", async () => {
      const c = await createCustomer(svc);
      await createCustomer(svc);
      const { items, totalCounts } = await walk(svc, '/internal-accounts', 2);
      assert.equal(new Set(items.map((a) => a.id)).size, items.length);
      assert.equal(items.length, totalCounts[0]);
      assert.ok(items.some((a) => a.customerId === ''), 'platform accounts are listed');
      assert.ok(items.some((a) => a.customerId === c.id), "the customer's accounts are listed");
      for (let i = 1; i < items.length; i++) assert.ok(items[i - 1].id > items[i].id, 'newest first');
      for (const a of items) {
        assert.match(a.id, ID_RE('InternalAccount'));
        assert.ok(['INTERNAL_FIAT', 'INTERNAL_CRYPTO', 'EMBEDDED_WALLET'].includes(a.type));
        assert.match(a.updatedAt, ISO_TIME);
      }
      const mine = await svc.request('GET', `/internal-accounts?customerId=${c.id}`);
      assertStatus(mine, 200);
      assertEnvelope(mine.body);
      assert.equal(mine.body.totalCount, 3);
      assert.ok(mine.body.data.every((a: { customerId: string }) => a.customerId === c.id));
      const wallets = await walk(svc, '/internal-accounts?type=EMBEDDED_WALLET', 100);
      assert.ok(wallets.items.length >= 2);
      assert.ok(wallets.items.every((a) => a.type === 'EMBEDDED_WALLET' && a.customerId !== '' && a.balance.currency.code === 'USDB'));
      const mineFiat = await svc.request('GET', `/internal-accounts?customerId=${c.id}&type=INTERNAL_FIAT`);
      assert.equal(mineFiat.body.totalCount, 1);
      assert.equal(mineFiat.body.data[0].balance.currency.code, 'USD');
    });

    it('reads one account by id, for a customer or the platform', async () => {
      const c = await createCustomer(svc);
      const usd = await accountOf(svc, c.id, 'USD');
      assert.deepEqual(JSON.parse(await read(svc, `/internal-accounts/${usd.id}`)), usd);
      const platform = (await svc.request('GET', '/platform/internal-accounts?currency=USD')).body.data[0];
      assert.deepEqual(JSON.parse(await read(svc, `/internal-accounts/${platform.id}`)), platform);
    });

    it('malformed ids are 400 naming id; unknown and other-environment ids are 404', async () => {
      for (const id of ['nope', 'InternalAccount:1', absentId('Customer'), 'InternalAccount:zzzzzzzz-0000-7000-8000-000000000000']) {
        assertInvalid(await svc.request('GET', `/internal-accounts/${encodeURIComponent(id)}`), 'id');
      }
      assertError(await svc.request('GET', `/internal-accounts/${absentId('InternalAccount')}`), 404, 'NOT_FOUND');
      const prd = await createCustomer(svc, {}, 'production');
      const prdAccount = (await customerAccounts(svc, prd.id, 'production'))[0];
      assertError(await svc.request('GET', `/internal-accounts/${prdAccount.id}`, { auth: 'sandbox' }), 404, 'NOT_FOUND');
      const sbx = await createCustomer(svc);
      const sbxAccount = (await customerAccounts(svc, sbx.id))[0];
      assertError(await svc.request('GET', `/internal-accounts/${sbxAccount.id}`, { auth: 'production' }), 404, 'NOT_FOUND');
    });

    it('bad query parameters are 400 naming the parameter; an unknown customer is 404', async () => {
      const cases: Array<[string, string]> = [
        ['customerId=abc', 'customerId'],
        [`customerId=${longText(1025)}`, 'customerId'],
        ['type=SAVINGS', 'type'],
        ['type=embedded_wallet', 'type'],
        ['limit=0', 'limit'],
        ['limit=101', 'limit'],
        ['limit=ten', 'limit'],
        ['cursor=%%%', 'cursor'],
        ['cursor=bm90LWEtY3Vyc29y', 'cursor'],
      ];
      for (const [query, field] of cases) assertInvalid(await svc.request('GET', `/internal-accounts?${query}`), field);
      assertError(await svc.request('GET', `/internal-accounts?customerId=${absentId('Customer')}`), 404, 'NOT_FOUND');
      const prd = await createCustomer(svc, {}, 'production');
      assertError(await svc.request('GET', `/internal-accounts?customerId=${prd.id}`), 404, 'NOT_FOUND');
    });
  });

  describe('GET /customers/internal-accounts', () => {
    it("lists only customers' accounts, filtered by customerId, currency and type", async () => {
      const c = await createCustomer(svc);
      const { items } = await walk(svc, '/customers/internal-accounts', 5);
      assert.ok(items.length >= 3);
      assert.equal(new Set(items.map((a) => a.id)).size, items.length);
      assert.ok(items.every((a) => a.customerId !== ''), 'no platform account among them');
      const usdc = await svc.request('GET', `/customers/internal-accounts?customerId=${c.id}&currency=USDC`);
      assertStatus(usdc, 200);
      assert.equal(usdc.body.totalCount, 1);
      assert.equal(usdc.body.data[0].type, 'INTERNAL_CRYPTO');
      const fiat = await walk(svc, '/customers/internal-accounts?type=INTERNAL_FIAT&currency=USD', 100);
      assert.ok(fiat.items.length >= 1);
      assert.ok(fiat.items.every((a) => a.type === 'INTERNAL_FIAT' && a.balance.currency.code === 'USD' && a.customerId !== ''));
      assert.equal(await totalCount(svc, `/customers/internal-accounts?customerId=${c.id}&currency=EUR`), 0);
    });

    it('bad query parameters are 400; unknown or other-environment customers are 404', async () => {
      const cases: Array<[string, string]> = [
        ['customerId=Customer:1', 'customerId'],
        ['currency=usd', 'currency'],
        [`currency=${longText(1025)}`, 'currency'],
        ['type=CHECKING', 'type'],
        ['limit=-5', 'limit'],
        ['cursor=garbage', 'cursor'],
      ];
      for (const [query, field] of cases) assertInvalid(await svc.request('GET', `/customers/internal-accounts?${query}`), field);
      assertError(await svc.request('GET', `/customers/internal-accounts?customerId=${absentId('Customer')}`), 404, 'NOT_FOUND');
      const sbx = await createCustomer(svc);
      assertError(await svc.request('GET', `/customers/internal-accounts?customerId=${sbx.id}`, { auth: 'production' }), 404, 'NOT_FOUND');
    });
  });

  describe('GET /platform/internal-accounts', () => {
    it("lists only the platform's accounts: USD fiat with platform funding instructions, USDC and USDB crypto", async () => {
      const res = await svc.request('GET', '/platform/internal-accounts?limit=100');
      assertStatus(res, 200);
      assertEnvelope(res.body);
      const accounts = res.body.data;
      assert.ok(accounts.every((a: { customerId: string }) => a.customerId === ''));
      const byCode = new Map<string, any>(accounts.map((a: any) => [a.balance.currency.code, a]));
      for (const code of DEFAULT_CURRENCIES) assert.ok(byCode.has(code), `platform holds ${code}`);
      const usd = byCode.get('USD');
      assert.equal(usd.type, 'INTERNAL_FIAT');
      assert.equal(usd.fundingPaymentInstructions.length, 1);
      assert.equal(usd.fundingPaymentInstructions[0].isPlatformAccount, true);
      assert.equal(typeof usd.fundingPaymentInstructions[0].accountOrWalletInfo.reference, 'string');
      assert.equal(byCode.get('USDC').type, 'INTERNAL_CRYPTO');
      assert.equal(byCode.get('USDB').type, 'INTERNAL_CRYPTO', "the platform's USDB is not an embedded wallet");
      const only = await svc.request('GET', '/platform/internal-accounts?currency=USDC&type=INTERNAL_CRYPTO');
      assert.equal(only.body.totalCount, 1);
      assert.equal(only.body.data[0].id, byCode.get('USDC').id);
      assert.equal(await totalCount(svc, '/platform/internal-accounts?type=EMBEDDED_WALLET'), 0);
      // Production has its own.
      const prd = await svc.request('GET', '/platform/internal-accounts?limit=100', { auth: 'production' });
      const sbxIds = new Set(accounts.map((a: { id: string }) => a.id));
      assert.ok(prd.body.data.length >= 3);
      assert.ok(prd.body.data.every((a: { id: string }) => !sbxIds.has(a.id)));
    });

    it('bad query parameters are 400 naming the parameter', async () => {
      for (const [query, field] of [
        ['currency=us', 'currency'],
        ['type=PLATFORM', 'type'],
        ['limit=1000', 'limit'],
        ['cursor=x', 'cursor'],
      ] as const) {
        assertInvalid(await svc.request('GET', `/platform/internal-accounts?${query}`), field);
      }
    });
  });

  describe('POST /sandbox/internal-accounts/{accountId}/fund', () => {
    it('raises the balance, which reads back', async () => {
      const c = await createCustomer(svc);
      const usd = await accountOf(svc, c.id, 'USD');
      const res = await svc.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body: { amount: 12_345 } });
      assertStatus(res, 200);
      assert.equal(res.body.id, usd.id);
      assert.equal(res.body.type, 'INTERNAL_FIAT');
      assert.equal(res.body.balance.amount, 12_345);
      assert.equal(res.body.balance.currency.code, 'USD');
      assert.equal(res.body.customerId, c.id);
      assert.equal(await balanceOf(svc, usd.id), 12_345);
      const more = await svc.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body: { amount: 1_000_000_000_000 } });
      assertStatus(more, 200);
      assert.equal(more.body.balance.amount, 1_000_000_012_345);
      // Other accounts are untouched.
      assert.equal(await balanceOf(svc, (await accountOf(svc, c.id, 'USDC')).id), 0);
      // Embedded wallets and platform accounts can be funded too.
      const wallet = await accountOf(svc, c.id, 'USDB');
      assert.equal((await svc.request('POST', `/sandbox/internal-accounts/${wallet.id}/fund`, { body: { amount: 5 } })).body.balance.amount, 5);
      const platform = (await svc.request('GET', '/platform/internal-accounts?currency=USDC')).body.data[0];
      const before = await balanceOf(svc, platform.id);
      assert.equal((await svc.request('POST', `/sandbox/internal-accounts/${platform.id}/fund`, { body: { amount: 7 } })).body.balance.amount, before + 7);
    });

    it('the new balance survives a restart on the same data directory', async () => {
      const first = await startTestService();
      const c = await createCustomer(first);
      const usd = await accountOf(first, c.id, 'USD');
      assertStatus(await first.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body: { amount: 4_200 } }), 200);
      assertStatus(await first.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body: { amount: 800 } }), 200);
      await first.stop({ keepData: true });
      const second = await startTestService({ dataDir: first.dataDir });
      try {
        assert.equal(await balanceOf(second, usd.id), 5_000);
        assertStatus(await second.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body: { amount: 1 } }), 200);
        assert.equal(await balanceOf(second, usd.id), 5_001);
      } finally {
        await second.stop();
      }
    });

    it('balances, defaults and UMA ownership survive a restart from a snapshot', async () => {
      const first = await startTestService({ snapshotEveryEntries: 1 });
      const umaAddress = `$${unique('snap.')}@sandbox.uma.test`;
      const c = await createCustomer(first, { umaAddress });
      const usd = await accountOf(first, c.id, 'USD');
      assertStatus(await first.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body: { amount: 777 } }), 200);
      const oldDefault = await first.request('POST', '/customers/external-accounts', { body: usdAccount('320000001', { customerId: c.id, defaultUmaDepositAccount: true }) });
      assertStatus(oldDefault, 201);
      const customerBefore = await read(first, `/customers/${c.id}`);
      await first.stop({ keepData: true });
      const second = await startTestService({ dataDir: first.dataDir, snapshotEveryEntries: 1 });
      try {
        assert.equal(await read(second, `/customers/${c.id}`), customerBefore);
        assert.equal(await balanceOf(second, usd.id), 777);
        assertError(await second.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', umaAddress } }), 400, 'UMA_ADDRESS_TAKEN');
        const newDefault = await second.request('POST', '/customers/external-accounts', { body: usdAccount('320000002', { customerId: c.id, defaultUmaDepositAccount: true }) });
        assertStatus(newDefault, 201);
        const listed = (await walk(second, `/customers/external-accounts?customerId=${c.id}`, 100)).items;
        assert.deepEqual(
          listed.map((x) => [x.id, x.defaultUmaDepositAccount]),
          [
            [newDefault.body.id, true],
            [oldDefault.body.id, false],
          ],
        );
      } finally {
        await second.stop();
      }
    });

    it('amounts outside 1..10^12 or not integers are 400 naming amount, and leave the balance unchanged', async () => {
      const c = await createCustomer(svc);
      const usd = await accountOf(svc, c.id, 'USD');
      assertStatus(await svc.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body: { amount: 100 } }), 200);
      for (const body of [
        { amount: 0 },
        { amount: -1 },
        { amount: 1_000_000_000_001 },
        { amount: 1.5 },
        { amount: '10' },
        { amount: null },
        { amount: true },
        { amount: [10] },
        {},
        { amount: 1e300 },
      ]) {
        assertInvalid(await svc.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body }), 'amount');
      }
      assertInvalid(
        await svc.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { raw: '{"amount":', headers: { 'content-type': 'application/json' } }),
        'body',
      );
      assert.equal(await balanceOf(svc, usd.id), 100);
    });

    it('a production token gets 403 SANDBOX_ONLY, and nothing is funded', async () => {
      const prd = await createCustomer(svc, {}, 'production');
      const prdAccount = (await customerAccounts(svc, prd.id, 'production')).find((a) => a.balance.currency.code === 'USD');
      assert.ok(prdAccount);
      for (const body of [{ amount: 100 }, { amount: 0 }, { nonsense: true }]) {
        assertError(await svc.request('POST', `/sandbox/internal-accounts/${prdAccount.id}/fund`, { body, auth: 'production' }), 403, 'SANDBOX_ONLY');
      }
      assertError(await svc.request('POST', `/sandbox/internal-accounts/${absentId('InternalAccount')}/fund`, { body: { amount: 1 }, auth: 'production' }), 403, 'SANDBOX_ONLY');
      assert.equal(await balanceOf(svc, prdAccount.id, 'production'), 0);
    });

    it('malformed ids are 400 naming accountId; unknown and production accounts are 404', async () => {
      assertInvalid(await svc.request('POST', '/sandbox/internal-accounts/abc/fund', { body: { amount: 1 } }), 'accountId');
      assertInvalid(await svc.request('POST', `/sandbox/internal-accounts/${absentId('Customer')}/fund`, { body: { amount: 1 } }), 'accountId');
      assertError(await svc.request('POST', `/sandbox/internal-accounts/${absentId('InternalAccount')}/fund`, { body: { amount: 1 } }), 404, 'NOT_FOUND');
      const prd = await createCustomer(svc, {}, 'production');
      const prdAccount = (await customerAccounts(svc, prd.id, 'production'))[0];
      assertError(await svc.request('POST', `/sandbox/internal-accounts/${prdAccount.id}/fund`, { body: { amount: 1 } }), 404, 'NOT_FOUND');
      assert.equal(await balanceOf(svc, prdAccount.id, 'production'), 0);
    });

    it('honours Idempotency-Key: a replay funds once, another amount with the key is 409', async () => {
      const c = await createCustomer(svc);
      const usd = await accountOf(svc, c.id, 'USD');
      const key = unique('fund-');
      const first = await svc.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body: { amount: 250 }, headers: { 'idempotency-key': key } });
      assertStatus(first, 200);
      const replay = await svc.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body: { amount: 250 }, headers: { 'idempotency-key': key } });
      assert.equal(replay.status, 200);
      assert.equal(replay.text, first.text);
      assertError(
        await svc.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body: { amount: 251 }, headers: { 'idempotency-key': key } }),
        409,
        'IDEMPOTENCY_KEY_REUSED',
      );
      assert.equal(await balanceOf(svc, usd.id), 250);
      // Concurrent retries with a fresh key fund once.
      const key2 = unique('fund-');
      const many = await Promise.all(
        Array.from({ length: 8 }, () => svc.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body: { amount: 10 }, headers: { 'idempotency-key': key2 } })),
      );
      for (const r of many) assert.equal(r.text, many[0]!.text);
      assert.equal(await balanceOf(svc, usd.id), 260);
    });
  });

  describe('POST /customers/external-accounts', () => {
    for (const fixture of ACCOUNT_FIXTURES) {
      it(`creates a ${fixture.name} account for a customer`, async () => {
        const c = await createCustomer(svc);
        const body: Record<string, unknown> = { currency: fixture.currency, accountInfo: fixture.accountInfo, customerId: c.id };
        if (fixture.cryptoNetwork !== undefined) body.cryptoNetwork = fixture.cryptoNetwork;
        const res = await svc.request('POST', '/customers/external-accounts', { body });
        assertStatus(res, 201);
        const a = res.body;
        assert.match(a.id, ID_RE('ExternalAccount'));
        assert.equal(a.status, 'ACTIVE');
        assert.equal(a.currency, fixture.currency);
        assert.deepEqual(a.accountInfo, fixture.accountInfo);
        assert.equal(a.customerId, c.id);
        assert.equal(a.defaultUmaDepositAccount, false);
        assert.equal(a.beneficiaryVerificationStatus, fixture.verification);
        assert.equal(a.cryptoNetwork, fixture.cryptoNetwork);
        assert.match(a.createdAt, ISO_TIME);
        assert.match(a.updatedAt, ISO_TIME);
        const beneficiary = (fixture.accountInfo as { beneficiary?: { fullName: string } }).beneficiary;
        if (beneficiary !== undefined) assert.deepEqual(a.beneficiaryVerifiedData, { fullName: beneficiary.fullName });
        else assert.equal(a.beneficiaryVerifiedData, undefined);
        const listed = await svc.request('GET', `/customers/external-accounts?customerId=${c.id}`);
        assert.equal(listed.body.totalCount, 1);
        assert.deepEqual(listed.body.data[0], a);
      });
    }

    it('fiat bank accounts need the beneficiary: without one USD_ACCOUNT, US_ACCOUNT, CLABE and IBAN are 400; BRL_ACCOUNT is not', async () => {
      const c = await createCustomer(svc);
      const before = await totalCount(svc, `/customers/external-accounts?customerId=${c.id}`);
      const nameless: Array<[string, Record<string, unknown>]> = [
        ['USD', { accountType: 'USD_ACCOUNT', accountNumber: '123456789', routingNumber: '021000021' }],
        ['USD', { accountType: 'US_ACCOUNT', accountNumber: '987654321', routingNumber: '011000015' }],
        ['MXN', { accountType: 'CLABE', clabe: '032180000118359719' }],
        ['EUR', { accountType: 'IBAN', iban: 'DE89370400440532013000' }],
      ];
      for (const [currency, accountInfo] of nameless) {
        const res = await svc.request('POST', '/customers/external-accounts', { body: { currency, customerId: c.id, accountInfo } });
        const error = assertInvalid(res, 'accountInfo.beneficiary');
        assert.match(JSON.stringify(error.details), /is required/, String(accountInfo.accountType));
      }
      assert.equal(await totalCount(svc, `/customers/external-accounts?customerId=${c.id}`), before);
      const brl = await svc.request('POST', '/customers/external-accounts', {
        body: { currency: 'BRL', customerId: c.id, accountInfo: { accountType: 'BRL_ACCOUNT', pixKey: '52998224725', pixKeyType: 'CPF' } },
      });
      assertStatus(brl, 201);
      assert.equal(brl.body.accountInfo.beneficiary, undefined);
    });

    it('US bank accounts without bankAccountType or accountCategory default to CHECKING (CONTRACT.md)', async () => {
      const c = await createCustomer(svc);
      const beneficiary = { beneficiaryType: 'INDIVIDUAL', fullName: 'Grace Hopper' };
      const sent = [
        { accountType: 'USD_ACCOUNT', accountNumber: '123456789', routingNumber: '021000021', bankName: 'Chase', beneficiary },
        { accountType: 'US_ACCOUNT', accountNumber: '987654321', routingNumber: '011000015', bankName: 'BoA', beneficiary },
      ];
      for (const [accountInfo, category] of [
        [sent[0]!, { bankAccountType: 'CHECKING' }],
        [sent[1]!, { accountCategory: 'CHECKING' }],
      ] as const) {
        const res = await svc.request('POST', '/customers/external-accounts', { body: { currency: 'USD', customerId: c.id, accountInfo } });
        assertStatus(res, 201);
        assert.deepEqual(res.body.accountInfo, { ...accountInfo, ...category });
        assert.equal(res.body.beneficiaryVerificationStatus, 'MATCHED');
        assert.deepEqual(res.body.beneficiaryVerifiedData, { fullName: 'Grace Hopper' });
      }
      const listed = await walk(svc, `/customers/external-accounts?customerId=${c.id}`, 100);
      assert.deepEqual(listed.items.map((a) => a.accountInfo.bankAccountType ?? a.accountInfo.accountCategory), ['CHECKING', 'CHECKING']);
    });

    it('without customerId the account belongs to the platform', async () => {
      const res = await svc.request('POST', '/customers/external-accounts', { body: usdAccount('555000111', { platformAccountId: unique('pa-') }) });
      assertStatus(res, 201);
      assert.equal(res.body.customerId, null);
      const platform = await walk(svc, '/platform/external-accounts', 100);
      assert.ok(platform.items.some((a) => a.id === res.body.id));
    });

    it('crypto wallets need a cryptoNetwork of their family; bank accounts take none', async () => {
      const c = await createCustomer(svc);
      const before = await totalCount(svc, `/customers/external-accounts?customerId=${c.id}`);
      const wallet = (accountType: string, address: string, currency: string, cryptoNetwork?: string): Record<string, unknown> => ({
        customerId: c.id,
        currency,
        accountInfo: { accountType, address },
        ...(cryptoNetwork !== undefined ? { cryptoNetwork } : {}),
      });
      for (const body of [
        wallet('ETHEREUM_WALLET', EIP55_ADDRESS, 'USDC'),
        wallet('SOLANA_WALLET', SOLANA_ADDRESS, 'USDC'),
        wallet('SPARK_WALLET', SPARK_MAINNET_ADDRESS, 'BTC'),
        wallet('LIGHTNING', 'ada@getalby.com', 'BTC'),
        wallet('ETHEREUM_WALLET', EIP55_ADDRESS, 'USDC', 'SOLANA_MAINNET'),
        wallet('BASE_WALLET', EIP55_ADDRESS, 'USDC', 'ETHEREUM_MAINNET'),
        wallet('ETHEREUM_WALLET', EIP55_ADDRESS, 'USDC', 'DOGE_MAINNET'),
        wallet('ETHEREUM_WALLET', EIP55_ADDRESS, 'USDC', 'ethereum_mainnet'),
        usdAccount('123456789', { customerId: c.id, cryptoNetwork: 'ETHEREUM_MAINNET' }),
      ]) {
        assertInvalid(await svc.request('POST', '/customers/external-accounts', { body }), 'cryptoNetwork');
      }
      assert.equal(await totalCount(svc, `/customers/external-accounts?customerId=${c.id}`), before);
    });

    it('an invalid wallet address is 400 naming accountInfo.address', async () => {
      const c = await createCustomer(svc);
      const before = await totalCount(svc, '/customers/external-accounts');
      const mixedCaseWrong = EIP55_ADDRESS.replace('aA', 'Aa');
      for (const [accountType, address, currency, cryptoNetwork] of [
        ['ETHEREUM_WALLET', '0x123', 'USDC', 'ETHEREUM_MAINNET'],
        ['ETHEREUM_WALLET', mixedCaseWrong, 'USDC', 'ETHEREUM_MAINNET'],
        ['BASE_WALLET', `0x${'g'.repeat(40)}`, 'USDC', 'BASE_MAINNET'],
        ['SOLANA_WALLET', 'So1111111111111111111111111111111', 'USDC', 'SOLANA_MAINNET'],
        ['SOLANA_WALLET', '0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl', 'USDC', 'SOLANA_MAINNET'],
        ['SPARK_WALLET', SPARK_MAINNET_ADDRESS.slice(0, -1) + 'q', 'BTC', 'SPARK_MAINNET'],
        ['SPARK_WALLET', SPARK_MAINNET_ADDRESS, 'BTC', 'SPARK_TESTNET'],
        ['LIGHTNING', 'not a lightning address', 'BTC', 'LIGHTNING_MAINNET'],
        ['ETHEREUM_WALLET', `0x${longText(1030)}`, 'USDC', 'ETHEREUM_MAINNET'],
      ] as const) {
        const res = await svc.request('POST', '/customers/external-accounts', { body: { customerId: c.id, currency, cryptoNetwork, accountInfo: { accountType, address } } });
        assertInvalid(res, 'accountInfo.address');
      }
      assert.equal(await totalCount(svc, '/customers/external-accounts'), before);
    });

    it('bad inputs are 400 naming the field, and create nothing', async () => {
      const c = await createCustomer(svc);
      const base = usdAccount('123456789', { customerId: c.id });
      const info = base.accountInfo as Record<string, unknown>;
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ ...base, currency: undefined }, 'currency'],
        [{ ...base, currency: 'EUR' }, 'currency'],
        [{ ...base, currency: 'usd' }, 'currency'],
        [{ ...base, currency: 'XYZ' }, 'currency'],
        [{ ...base, currency: 840 }, 'currency'],
        [{ ...base, accountInfo: undefined }, 'accountInfo'],
        [{ ...base, accountInfo: 'USD_ACCOUNT 123456789' }, 'accountInfo'],
        [{ ...base, accountInfo: [info] }, 'accountInfo'],
        [{ ...base, accountInfo: { ...info, accountType: 'CHEQUE' } }, 'accountInfo.accountType'],
        [{ ...base, accountInfo: { ...info, accountType: undefined } }, 'accountInfo.accountType'],
        [{ ...base, accountInfo: { ...info, accountNumber: undefined } }, 'accountInfo.accountNumber'],
        [{ ...base, accountInfo: { ...info, accountNumber: 123456789 } }, 'accountInfo.accountNumber'],
        [{ ...base, accountInfo: { ...info, accountNumber: '12' } }, 'accountInfo.accountNumber'],
        [{ ...base, accountInfo: { ...info, routingNumber: '021000022' } }, 'accountInfo.routingNumber'],
        [{ ...base, accountInfo: { ...info, bankAccountType: 'MONEY_MARKET' } }, 'accountInfo.bankAccountType'],
        [{ ...base, accountInfo: { ...info, bankName: longText(1025) } }, 'accountInfo.bankName'],
        [{ ...base, accountInfo: { ...info, beneficiary: { beneficiaryType: 'INDIVIDUAL' } } }, 'accountInfo.beneficiary.fullName'],
        [{ ...base, accountInfo: { ...info, beneficiary: { beneficiaryType: 'COMPANY', fullName: 'X' } } }, 'accountInfo.beneficiary.beneficiaryType'],
        [{ ...base, accountInfo: { ...info, beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: '   ' } } }, 'accountInfo.beneficiary.fullName'],
        [{ currency: 'EUR', customerId: c.id, accountInfo: { accountType: 'IBAN', iban: 'DE88370400440532013000', beneficiary: BENEFICIARY } }, 'accountInfo.iban'],
        [{ currency: 'MXN', customerId: c.id, accountInfo: { accountType: 'CLABE', clabe: '032180000118359718', beneficiary: BENEFICIARY } }, 'accountInfo.clabe'],
        [{ currency: 'BRL', customerId: c.id, accountInfo: { accountType: 'BRL_ACCOUNT', pixKey: '52998224726', pixKeyType: 'CPF' } }, 'accountInfo.pixKey'],
        [{ currency: 'AED', customerId: c.id, accountInfo: { accountType: 'AED_ACCOUNT', iban: 'DE89370400440532013000', swiftCode: 'NBADAEAA' } }, 'accountInfo.iban'],
        [{ ...base, customerId: 'Customer:123' }, 'customerId'],
        [{ ...base, customerId: 42 }, 'customerId'],
        [{ ...base, platformAccountId: longText(1025) }, 'platformAccountId'],
        [{ ...base, platformAccountId: '' }, 'platformAccountId'],
        [{ ...base, defaultUmaDepositAccount: 'yes' }, 'defaultUmaDepositAccount'],
        [{ ...usdAccount(), defaultUmaDepositAccount: true }, 'defaultUmaDepositAccount'],
      ];
      const before = await totalCount(svc, '/customers/external-accounts');
      for (const [body, field] of cases) {
        const clean = JSON.parse(JSON.stringify(body)) as Record<string, unknown>;
        assertInvalid(await svc.request('POST', '/customers/external-accounts', { body: clean }), field);
      }
      assert.equal(await totalCount(svc, '/customers/external-accounts'), before);
    });

    it('an unknown customer or one of the other environment is 404, and nothing is created', async () => {
      const before = await totalCount(svc, '/customers/external-accounts');
      assertError(await svc.request('POST', '/customers/external-accounts', { body: usdAccount('123456789', { customerId: absentId('Customer') }) }), 404, 'NOT_FOUND');
      const prd = await createCustomer(svc, {}, 'production');
      assertError(await svc.request('POST', '/customers/external-accounts', { body: usdAccount('123456789', { customerId: prd.id }) }), 404, 'NOT_FOUND');
      assert.equal(await totalCount(svc, '/customers/external-accounts'), before);
      assert.equal(await totalCount(svc, `/customers/external-accounts?customerId=${prd.id}`, 'production'), 0);
    });

    it('a deleted customer gets no new external account (409)', async () => {
      const c = await createCustomer(svc);
      assertStatus(await svc.request('DELETE', `/customers/${c.id}`), 200);
      assertError(await svc.request('POST', '/customers/external-accounts', { body: usdAccount('123456789', { customerId: c.id }) }), 409, 'CONFLICT');
      assert.equal(await totalCount(svc, `/customers/external-accounts?customerId=${c.id}`), 0);
    });

    it('sandbox beneficiary verification follows the account-number suffix table', async () => {
      const c = await createCustomer(svc);
      const beneficiary = { beneficiaryType: 'INDIVIDUAL', fullName: 'Ada Lovelace' };
      const outcomes: Array<[string, string]> = [
        ['100', 'MATCHED'],
        ['101', 'MATCHED'],
        ['102', 'NOT_MATCHED'],
        ['103', 'PARTIAL_MATCH'],
        ['104', 'PENDING'],
        ['106', 'UNSUPPORTED'],
        ['107', 'CHECKED_BY_RECEIVING_FI'],
        ['108', 'MATCHED'],
        ['002', 'MATCHED'],
      ];
      for (const [suffix, status] of outcomes) {
        const body = usdAccount(`5550001${suffix}`, { customerId: c.id });
        (body.accountInfo as Record<string, unknown>).beneficiary = beneficiary;
        const res = await svc.request('POST', '/customers/external-accounts', { body });
        assertStatus(res, 201);
        assert.equal(res.body.beneficiaryVerificationStatus, status, `suffix ${suffix}`);
        if (status === 'MATCHED' || status === 'PARTIAL_MATCH') assert.deepEqual(res.body.beneficiaryVerifiedData, { fullName: 'Ada Lovelace' });
        else assert.equal(res.body.beneficiaryVerifiedData, undefined, `suffix ${suffix}`);
      }
      // Every bank rail: a CLABE ending in 102 is NOT_MATCHED.
      const clabe = await svc.request('POST', '/customers/external-accounts', {
        body: { customerId: c.id, currency: 'MXN', accountInfo: { accountType: 'CLABE', clabe: clabeEndingWith('102'), beneficiary: BENEFICIARY } },
      });
      assertStatus(clabe, 201);
      assert.equal(clabe.body.beneficiaryVerificationStatus, 'NOT_MATCHED');
    });

    it('suffix 105 is 400 (invalid account) and 109 is 500 SIMULATED_ERROR; neither creates an account', async () => {
      const c = await createCustomer(svc);
      const before = await totalCount(svc, '/customers/external-accounts');
      const invalid = await svc.request('POST', '/customers/external-accounts', { body: usdAccount('555000105', { customerId: c.id }) });
      assertError(invalid, 400, 'INVALID_ACCOUNT', ['accountInfo']);
      const simulated = await svc.request('POST', '/customers/external-accounts', { body: usdAccount('555000109', { customerId: c.id }) });
      assertError(simulated, 500, 'SIMULATED_ERROR');
      const upi = await svc.request('POST', '/customers/external-accounts', { body: { customerId: c.id, currency: 'INR', accountInfo: { accountType: 'UPI', vpa: 'ada105@okaxis' } } });
      assertError(upi, 400, 'INVALID_ACCOUNT');
      const platform = await svc.request('POST', '/platform/external-accounts', { body: usdAccount('555000109') });
      assertError(platform, 500, 'SIMULATED_ERROR');
      assert.equal(await totalCount(svc, '/customers/external-accounts'), before);
      // Wallets have no name to verify, whatever their suffix.
      const wallet = await svc.request('POST', '/customers/external-accounts', {
        body: { customerId: c.id, currency: 'BTC', cryptoNetwork: 'LIGHTNING_MAINNET', accountInfo: { accountType: 'LIGHTNING', address: 'ada105@getalby.com' } },
      });
      assertStatus(wallet, 201);
      assert.equal(wallet.body.beneficiaryVerificationStatus, 'UNSUPPORTED');
    });

    it('production ignores the sandbox suffixes', async () => {
      const c = await createCustomer(svc, {}, 'production');
      const plain = await svc.request('POST', '/customers/external-accounts', {
        body: { customerId: c.id, currency: 'BRL', accountInfo: { accountType: 'BRL_ACCOUNT', pixKey: 'ana105@example.com', pixKeyType: 'EMAIL' } },
        auth: 'production',
      });
      assertStatus(plain, 201);
      assert.equal(plain.body.beneficiaryVerificationStatus, 'UNSUPPORTED');
      const named = usdAccount('555000109', { customerId: c.id });
      (named.accountInfo as Record<string, unknown>).beneficiary = { beneficiaryType: 'INDIVIDUAL', fullName: 'Ada Lovelace' };
      const pending = await svc.request('POST', '/customers/external-accounts', { body: named, auth: 'production' });
      assertStatus(pending, 201);
      assert.equal(pending.body.beneficiaryVerificationStatus, 'PENDING');
    });

    it('a new defaultUmaDepositAccount replaces the previous default, which reads back false', async () => {
      const c = await createCustomer(svc);
      const other = await createCustomer(svc);
      const create = async (customerId: string, accountNumber: string, isDefault?: boolean): Promise<any> => {
        const res = await svc.request('POST', '/customers/external-accounts', {
          body: usdAccount(accountNumber, { customerId, ...(isDefault !== undefined ? { defaultUmaDepositAccount: isDefault } : {}) }),
        });
        assertStatus(res, 201);
        return res.body;
      };
      const otherDefault = await create(other.id, '400000001', true);
      const a = await create(c.id, '400000002', true);
      assert.equal(a.defaultUmaDepositAccount, true);
      const b = await create(c.id, '400000003', true);
      assert.equal(b.defaultUmaDepositAccount, true);
      const d = await create(c.id, '400000004', false);
      assert.equal(d.defaultUmaDepositAccount, false);
      const e = await create(c.id, '400000005');
      assert.equal(e.defaultUmaDepositAccount, false);
      const listed = (await walk(svc, `/customers/external-accounts?customerId=${c.id}`, 100)).items;
      const byId = new Map(listed.map((x) => [x.id, x]));
      assert.equal(byId.get(a.id).defaultUmaDepositAccount, false, 'the old default reads back false');
      assert.equal(byId.get(b.id).defaultUmaDepositAccount, true);
      assert.equal(listed.filter((x) => x.defaultUmaDepositAccount).length, 1);
      // Another customer's default is its own business.
      const otherListed = (await svc.request('GET', `/customers/external-accounts?customerId=${other.id}`)).body.data;
      assert.equal(otherListed.find((x: { id: string }) => x.id === otherDefault.id).defaultUmaDepositAccount, true);
    });

    it('concurrent default deposit accounts for one customer leave exactly one default', async () => {
      const c = await createCustomer(svc);
      const results = await Promise.all(
        ['310000001', '310000002', '310000003', '310000004', '310000005'].map((n) =>
          svc.request('POST', '/customers/external-accounts', { body: usdAccount(n, { customerId: c.id, defaultUmaDepositAccount: true }) }),
        ),
      );
      for (const r of results) assertStatus(r, 201);
      const listed = (await walk(svc, `/customers/external-accounts?customerId=${c.id}`, 100)).items;
      assert.equal(listed.length, 5);
      assert.equal(listed.filter((x) => x.defaultUmaDepositAccount).length, 1);
      // The newest one is the default.
      assert.equal(listed[0].defaultUmaDepositAccount, true);
    });

    it('honours Idempotency-Key: one account per key', async () => {
      const c = await createCustomer(svc);
      const key = unique('ext-');
      const body = usdAccount('777000123', { customerId: c.id });
      const first = await svc.request('POST', '/customers/external-accounts', { body, headers: { 'idempotency-key': key } });
      assertStatus(first, 201);
      const again = await svc.request('POST', '/customers/external-accounts', { body, headers: { 'idempotency-key': key } });
      assert.equal(again.status, 201);
      assert.equal(again.text, first.text);
      assertError(
        await svc.request('POST', '/customers/external-accounts', { body: usdAccount('777000124', { customerId: c.id }), headers: { 'idempotency-key': key } }),
        409,
        'IDEMPOTENCY_KEY_REUSED',
      );
      assert.equal(await totalCount(svc, `/customers/external-accounts?customerId=${c.id}`), 1);
    });
  });

  describe('GET /customers/external-accounts', () => {
    it('lists newest first with filters, paging each account once', async () => {
      const c = await createCustomer(svc);
      const made: string[] = [];
      for (const n of ['601', '602', '603', '604', '605']) {
        const res = await svc.request('POST', '/customers/external-accounts', { body: usdAccount(`888000${n}`, { customerId: c.id }) });
        assertStatus(res, 201);
        made.push(res.body.id);
      }
      const eur = await svc.request('POST', '/customers/external-accounts', {
        body: { customerId: c.id, currency: 'EUR', accountInfo: { accountType: 'IBAN', iban: 'DE89370400440532013000', beneficiary: BENEFICIARY } },
      });
      assertStatus(eur, 201);
      made.push(eur.body.id);
      const { items, totalCounts } = await walk(svc, `/customers/external-accounts?customerId=${c.id}`, 2);
      assert.deepEqual(items.map((a) => a.id), [...made].reverse());
      assert.ok(totalCounts.every((t) => t === 6));
      const usdOnly = await svc.request('GET', `/customers/external-accounts?customerId=${c.id}&currency=USD`);
      assert.equal(usdOnly.body.totalCount, 5);
      assert.ok(usdOnly.body.data.every((a: { currency: string }) => a.currency === 'USD'));
      const all = await walk(svc, '/customers/external-accounts', 7);
      assert.equal(new Set(all.items.map((a) => a.id)).size, all.items.length);
      assert.ok(made.every((id) => all.items.some((a) => a.id === id)));
      const eurAll = await walk(svc, '/customers/external-accounts?currency=EUR', 100);
      assert.ok(eurAll.items.every((a) => a.currency === 'EUR'));
      // Production sees none of them.
      const prd = await walk(svc, '/customers/external-accounts', 100, 'production');
      assert.ok(!prd.items.some((a) => made.includes(a.id)));
    });

    it('bad query parameters are 400; unknown or other-environment customers are 404', async () => {
      for (const [query, field] of [
        ['customerId=abc', 'customerId'],
        ['currency=eur', 'currency'],
        ['limit=0', 'limit'],
        ['limit=x', 'limit'],
        ['cursor=abc', 'cursor'],
      ] as const) {
        assertInvalid(await svc.request('GET', `/customers/external-accounts?${query}`), field);
      }
      assertError(await svc.request('GET', `/customers/external-accounts?customerId=${absentId('Customer')}`), 404, 'NOT_FOUND');
      const sbx = await createCustomer(svc);
      assertError(await svc.request('GET', `/customers/external-accounts?customerId=${sbx.id}`, { auth: 'production' }), 404, 'NOT_FOUND');
    });
  });

  describe('POST and GET /platform/external-accounts', () => {
    it("creates platform accounts (platformAccountId may sit inside accountInfo) and lists only the platform's", async () => {
      const platformAccountId = unique('ops-');
      const body = usdAccount('246813579');
      (body.accountInfo as Record<string, unknown>).platformAccountId = platformAccountId;
      const res = await svc.request('POST', '/platform/external-accounts', { body });
      assertStatus(res, 201);
      assert.match(res.body.id, ID_RE('ExternalAccount'));
      assert.equal(res.body.customerId, null);
      assert.equal(res.body.platformAccountId, platformAccountId);
      assert.equal(res.body.defaultUmaDepositAccount, false);
      assert.equal(res.body.status, 'ACTIVE');
      const top = await svc.request('POST', '/platform/external-accounts', {
        body: { currency: 'USDC', cryptoNetwork: 'BASE_MAINNET', platformAccountId: 'treasury', accountInfo: { accountType: 'BASE_WALLET', address: EIP55_ADDRESS } },
      });
      assertStatus(top, 201);
      assert.equal(top.body.platformAccountId, 'treasury');
      assert.equal(top.body.cryptoNetwork, 'BASE_MAINNET');
      // A customer's account does not show up among the platform's.
      const c = await createCustomer(svc);
      const customers = await svc.request('POST', '/customers/external-accounts', { body: usdAccount('135792468', { customerId: c.id }) });
      assertStatus(customers, 201);
      const { items } = await walk(svc, '/platform/external-accounts', 1);
      assert.ok(items.every((a) => a.customerId === null));
      assert.ok(items.some((a) => a.id === res.body.id));
      assert.ok(items.some((a) => a.id === top.body.id));
      assert.ok(!items.some((a) => a.id === customers.body.id));
      for (let i = 1; i < items.length; i++) assert.ok(items[i - 1].id > items[i].id, 'newest first');
      const usdc = await walk(svc, '/platform/external-accounts?currency=USDC', 100);
      assert.ok(usdc.items.length >= 1 && usdc.items.every((a) => a.currency === 'USDC'));
      // Production's platform list is separate.
      const prd = await walk(svc, '/platform/external-accounts', 100, 'production');
      assert.ok(!prd.items.some((a) => a.id === res.body.id));
    });

    it('bad inputs are 400 naming the field, and create nothing', async () => {
      const before = await totalCount(svc, '/platform/external-accounts');
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ accountInfo: usdAccount().accountInfo }, 'currency'],
        [{ currency: 'USD' }, 'accountInfo'],
        [{ ...usdAccount(), currency: 'BRL' }, 'currency'],
        [{ currency: 'USDC', accountInfo: { accountType: 'ETHEREUM_WALLET', address: EIP55_ADDRESS } }, 'cryptoNetwork'],
        [{ currency: 'USDC', cryptoNetwork: 'ETHEREUM_MAINNET', accountInfo: { accountType: 'ETHEREUM_WALLET', address: '0xdeadbeef' } }, 'accountInfo.address'],
        [{ ...usdAccount(), platformAccountId: longText(1025) }, 'platformAccountId'],
        [{ ...usdAccount(), cryptoNetwork: 'MOON_MAINNET' }, 'cryptoNetwork'],
        [{ currency: 'USD', accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '123456789', routingNumber: '021000021', bankAccountType: 'CHECKING', bankName: longText(1025), beneficiary: BENEFICIARY } }, 'accountInfo.bankName'],
      ];
      for (const [body, field] of cases) assertInvalid(await svc.request('POST', '/platform/external-accounts', { body }), field);
      assertInvalid(await svc.request('GET', '/platform/external-accounts?limit=101'), 'limit');
      assertInvalid(await svc.request('GET', '/platform/external-accounts?currency=u$d'), 'currency');
      assertInvalid(await svc.request('GET', '/platform/external-accounts?cursor=zzz'), 'cursor');
      assert.equal(await totalCount(svc, '/platform/external-accounts'), before);
    });
  });
});
