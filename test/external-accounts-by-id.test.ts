// One external account by id (CONTRACT.md "Real clients"): GET and DELETE under
// /customers/external-accounts/{id} and /platform/external-accounts/{id}. A deleted account
// is gone from reads and lists, refused as a payment's destination or a transfer's party
// (400 naming the field), and a payout already under way to it still plays out; all of it
// holds after a restart, from the log and from a snapshot.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { serviceForSuite, startTestService, type TestService } from './support/service.js';
import { absentId, assertError, assertInvalid, assertStatus, createCustomer, setCurrencies, usdAccount, walk } from './support/assertions.js';
import { assertLedgerHolds, balanceOf, createQuote, execute, externalUsd, fundedCustomer, getJson, quoteBody, until } from './support/money.js';

const FUNDS = 100_000;
const AMOUNT = 10_000;

async function platformAccount(svc: TestService, number: string): Promise<any> {
  const res = await svc.request('POST', '/platform/external-accounts', { body: usdAccount(number) });
  assertStatus(res, 201);
  return res.body;
}

async function listedIds(svc: TestService, path: string): Promise<string[]> {
  return (await walk(svc, path, 100)).items.map((a) => a.id);
}

describe('external accounts by id', () => {
  const clock = new ManualClock(Date.UTC(2026, 4, 1));
  const svc = serviceForSuite({ clock });
  before(async () => {
    await setCurrencies(svc, ['USD', 'USDC', 'MXN']);
  });

  it("GET reads a customer's account under /customers and the platform's under both; /platform does not reach a customer's", async () => {
    const c = await createCustomer(svc);
    const mine = await externalUsd(svc, c.id, '111');
    const ours = await platformAccount(svc, '555000111');
    assert.deepEqual(await getJson(svc, `/customers/external-accounts/${mine.id}`), mine);
    assert.deepEqual(await getJson(svc, `/customers/external-accounts/${ours.id}`), ours);
    assert.deepEqual(await getJson(svc, `/platform/external-accounts/${ours.id}`), ours);
    assertError(await svc.request('GET', `/platform/external-accounts/${mine.id}`), 404, 'NOT_FOUND');
  });

  it('a malformed id is 400 naming id; an unknown one or one of the other environment is 404', async () => {
    for (const prefix of ['/customers', '/platform']) {
      for (const method of ['GET', 'DELETE'] as const) {
        assertInvalid(await svc.request(method, `${prefix}/external-accounts/abc`), 'id');
        assertError(await svc.request(method, `${prefix}/external-accounts/${absentId('ExternalAccount')}`), 404, 'NOT_FOUND');
      }
    }
    const ours = await platformAccount(svc, '555000112');
    assertError(await svc.request('GET', `/platform/external-accounts/${ours.id}`, { auth: 'production' }), 404, 'NOT_FOUND');
    assertError(await svc.request('DELETE', `/platform/external-accounts/${ours.id}`, { auth: 'production' }), 404, 'NOT_FOUND');
    assert.deepEqual(await getJson(svc, `/platform/external-accounts/${ours.id}`), ours);
  });

  it('DELETE answers 204 with no body; the account is then 404 and gone from every list, and a second DELETE is 404', async () => {
    const c = await createCustomer(svc);
    const keep = await externalUsd(svc, c.id, '121');
    const gone = await externalUsd(svc, c.id, '122');
    const res = await svc.request('DELETE', `/customers/external-accounts/${gone.id}`);
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
    assertError(await svc.request('GET', `/customers/external-accounts/${gone.id}`), 404, 'NOT_FOUND');
    assert.deepEqual(await listedIds(svc, `/customers/external-accounts?customerId=${c.id}`), [keep.id]);
    assert.equal((await getJson(svc, `/customers/external-accounts?customerId=${c.id}`)).totalCount, 1);
    assert.ok(!(await listedIds(svc, '/customers/external-accounts')).includes(gone.id));
    assertError(await svc.request('DELETE', `/customers/external-accounts/${gone.id}`), 404, 'NOT_FOUND');
    assertError(await svc.request('GET', `/receiver/external-account/${gone.id}`), 404, 'NOT_FOUND');
  });

  it("/platform deletes the platform's accounts, not a customer's", async () => {
    const c = await createCustomer(svc);
    const mine = await externalUsd(svc, c.id, '131');
    assertError(await svc.request('DELETE', `/platform/external-accounts/${mine.id}`), 404, 'NOT_FOUND');
    assert.deepEqual(await getJson(svc, `/customers/external-accounts/${mine.id}`), mine);
    const ours = await platformAccount(svc, '555000131');
    assert.equal((await svc.request('DELETE', `/platform/external-accounts/${ours.id}`)).status, 204);
    assertError(await svc.request('GET', `/platform/external-accounts/${ours.id}`), 404, 'NOT_FOUND');
    assert.ok(!(await listedIds(svc, '/platform/external-accounts')).includes(ours.id));
  });

  it('a deleted account is refused as a quote destination, a direct-pull source and a transfer party (400 naming the field); a quote made before is refused at execute', async () => {
    const { customer, usd } = await fundedCustomer(svc, FUNDS);
    const bank = await externalUsd(svc, customer.id, '141');
    const early = await createQuote(svc, quoteBody(usd.id, bank.id, AMOUNT));
    assert.equal((await svc.request('DELETE', `/customers/external-accounts/${bank.id}`)).status, 204);
    assertInvalid(await svc.request('POST', '/quotes', { body: quoteBody(usd.id, bank.id, AMOUNT) }), 'destination.accountId');
    assertInvalid(await svc.request('POST', `/quotes/${early.id}/execute`), 'destination.accountId');
    assertInvalid(await svc.request('POST', '/quotes', { body: quoteBody(bank.id, usd.id, AMOUNT) }), 'source.accountId');
    assertInvalid(
      await svc.request('POST', '/transfer-out', { body: { source: { accountId: usd.id }, destination: { accountId: bank.id }, amount: AMOUNT } }),
      'destination.accountId',
    );
    assertInvalid(
      await svc.request('POST', '/transfer-in', { body: { source: { accountId: bank.id }, destination: { accountId: usd.id }, amount: AMOUNT } }),
      'source.accountId',
    );
    assert.equal(await balanceOf(svc, usd.id), FUNDS);
    assert.equal((await getJson(svc, `/quotes/${early.id}`)).status, 'PENDING');
    assertLedgerHolds(svc);
  });

  it('a payout under way to an account deleted meanwhile completes as it would have (sandbox 003: 6 minutes in transit)', async () => {
    const { customer, usd } = await fundedCustomer(svc, FUNDS);
    const bank = await externalUsd(svc, customer.id, '003');
    const quote = await execute(svc, (await createQuote(svc, quoteBody(usd.id, bank.id, AMOUNT))).id);
    assert.equal(quote.status, 'PROCESSING');
    assert.equal((await svc.request('DELETE', `/customers/external-accounts/${bank.id}`)).status, 204);
    clock.advance(6 * 60_000);
    await until(svc, () => svc.service.services.world.transactions.get(quote.transactionId)?.status === 'COMPLETED');
    assert.equal((await getJson(svc, `/quotes/${quote.id}`)).status, 'COMPLETED');
    assert.equal(await balanceOf(svc, usd.id), FUNDS - AMOUNT);
    assertLedgerHolds(svc);
  });

  it('a deleted default UMA deposit account stops being the default; a new default can be set', async () => {
    const c = await createCustomer(svc);
    const first = await svc.request('POST', '/customers/external-accounts', { body: usdAccount('321000151', { customerId: c.id, defaultUmaDepositAccount: true }) });
    assertStatus(first, 201);
    assert.equal((await svc.request('DELETE', `/customers/external-accounts/${first.body.id}`)).status, 204);
    assert.equal(svc.service.services.world.externalAccounts.defaultDepositAccount(c.id), undefined);
    const second = await svc.request('POST', '/customers/external-accounts', { body: usdAccount('321000152', { customerId: c.id, defaultUmaDepositAccount: true }) });
    assertStatus(second, 201);
    assert.deepEqual(await listedIds(svc, `/customers/external-accounts?customerId=${c.id}`), [second.body.id]);
    assert.deepEqual(svc.service.services.world.checkInvariants(), []);
  });

  it('production: a customer account reads, deletes, and is then refused as a quote destination', async () => {
    const prod = { auth: 'production' as const };
    const c = await createCustomer(svc, {}, 'production');
    const bank = await svc.request('POST', '/customers/external-accounts', { body: usdAccount('777000181', { customerId: c.id }), ...prod });
    assertStatus(bank, 201);
    assert.deepEqual((await svc.request('GET', `/customers/external-accounts/${bank.body.id}`, prod)).body, bank.body);
    assertError(await svc.request('GET', `/customers/external-accounts/${bank.body.id}`), 404, 'NOT_FOUND');
    assert.equal((await svc.request('DELETE', `/customers/external-accounts/${bank.body.id}`, prod)).status, 204);
    assertError(await svc.request('GET', `/customers/external-accounts/${bank.body.id}`, prod), 404, 'NOT_FOUND');
    const usd = (await svc.request('GET', `/customers/internal-accounts?customerId=${c.id}&currency=USD`, prod)).body.data[0];
    assertInvalid(await svc.request('POST', '/quotes', { body: quoteBody(usd.id, bank.body.id, 100), ...prod }), 'destination.accountId');
  });

  it('honours Idempotency-Key: a replayed DELETE answers 204 again', async () => {
    const ours = await platformAccount(svc, '555000161');
    const headers = { 'idempotency-key': `del-${ours.id}` };
    assert.equal((await svc.request('DELETE', `/platform/external-accounts/${ours.id}`, { headers })).status, 204);
    assert.equal((await svc.request('DELETE', `/platform/external-accounts/${ours.id}`, { headers })).status, 204);
    assertError(await svc.request('DELETE', `/platform/external-accounts/${ours.id}`), 404, 'NOT_FOUND');
  });

  for (const snapshotEveryEntries of [undefined, 1]) {
    it(`a deletion survives a restart (${snapshotEveryEntries === undefined ? 'from the log' : 'from a snapshot'})`, async () => {
      const first = await startTestService(snapshotEveryEntries === undefined ? {} : { snapshotEveryEntries });
      const c = await createCustomer(first);
      const keep = await externalUsd(first, c.id, '171');
      const gone = await externalUsd(first, c.id, '172');
      assert.equal((await first.request('DELETE', `/customers/external-accounts/${gone.id}`)).status, 204);
      await first.stop({ keepData: true });
      const second = await startTestService({ dataDir: first.dataDir, ...(snapshotEveryEntries === undefined ? {} : { snapshotEveryEntries }) });
      try {
        assertError(await second.request('GET', `/customers/external-accounts/${gone.id}`), 404, 'NOT_FOUND');
        assert.deepEqual(await listedIds(second, `/customers/external-accounts?customerId=${c.id}`), [keep.id]);
        const usd = (await getJson(second, `/customers/internal-accounts?customerId=${c.id}&currency=USD`)).data[0];
        assertInvalid(await second.request('POST', '/quotes', { body: quoteBody(usd.id, gone.id, 1) }), 'destination.accountId');
      } finally {
        await second.stop();
      }
    });
  }
});
