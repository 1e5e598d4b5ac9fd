// Sandbox funding as money arriving (SERVICE_SPEC part 6, CONTRACT.md "Webhooks"): POST
// /sandbox/internal-accounts/{id}/fund records, in one log entry, a COMPLETED INCOMING
// transaction from SANDBOX_FUNDING, its INCOMING_PAYMENT event and the account's
// ACCOUNT_STATUS, in that order; a delivery receiver gets both. A refused funding records
// nothing.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { serviceForSuite, type TestService } from './support/service.js';
import { assertInvalid, assertStatus, createCustomer, ID_RE, ISO_TIME, unique } from './support/assertions.js';
import { accountIn, assertLedgerHolds, balanceOf, getJson, webhooksOf } from './support/money.js';
import { receiverForSuite } from './support/webhook-receiver.js';

async function fundAccount(svc: TestService, accountId: string, amount: number): Promise<any> {
  const res = await svc.request('POST', `/sandbox/internal-accounts/${accountId}/fund`, { body: { amount } });
  assertStatus(res, 200);
  return res.body;
}

describe('sandbox funding records an incoming transaction', () => {
  const clock = new ManualClock();
  const svc = serviceForSuite({ clock });
  const receiver = receiverForSuite();

  it('shows a COMPLETED INCOMING transaction, then INCOMING_PAYMENT and ACCOUNT_STATUS events for it', async () => {
    const platformCustomerId = unique('fund');
    const customer = await createCustomer(svc, { platformCustomerId });
    const usd = await accountIn(svc, customer.id, 'USD');
    const eventsBefore = (await getJson(svc, '/webhooks/events')).totalCount;
    const txBefore = (await getJson(svc, `/transactions?customerId=${customer.id}`)).totalCount;
    assert.equal(txBefore, 0);

    const account = await fundAccount(svc, usd.id, 2_500);
    assert.equal(account.id, usd.id, 'the endpoint still answers with the account');
    assert.equal(account.balance.amount, 2_500);
    assert.deepEqual(account.totalBalance, account.balance, 'no funds are held apart from the balance');
    assert.deepEqual(
      { ...account, balance: usd.balance, totalBalance: usd.totalBalance, updatedAt: usd.updatedAt },
      usd,
      'a movement changes the balance (and its total) and updatedAt only (funding instructions stay)',
    );

    const txs = (await getJson(svc, `/transactions?customerId=${customer.id}`)).data;
    assert.equal(txs.length, 1);
    const tx = txs[0];
    assert.match(tx.id, ID_RE('Transaction'));
    assert.equal(tx.status, 'COMPLETED');
    assert.equal(tx.type, 'INCOMING');
    assert.equal(tx.direction, 'CREDIT');
    assert.deepEqual(tx.source, { sourceType: 'SANDBOX_FUNDING', currency: 'USD' });
    assert.equal(tx.destination.destinationType, 'ACCOUNT');
    assert.equal(tx.destination.accountId, usd.id);
    assert.equal(tx.customerId, customer.id);
    assert.equal(tx.platformCustomerId, platformCustomerId);
    assert.equal(tx.receivedAmount.amount, 2_500);
    assert.equal(tx.receivedAmount.currency.code, 'USD');
    assert.equal(tx.sentAmount, undefined, 'incoming transactions show no sentAmount');
    assert.equal(tx.exchangeRate, 1);
    assert.equal(tx.quoteId, undefined);
    assert.match(tx.settledAt, ISO_TIME);
    assert.equal(tx.settledAt, tx.createdAt);
    assert.deepEqual(await getJson(svc, `/transactions/${tx.id}`), tx);

    const events = (await getJson(svc, '/webhooks/events')).data.slice(0, 2).reverse();
    assert.equal((await getJson(svc, '/webhooks/events')).totalCount, eventsBefore + 2);
    assert.deepEqual(
      events.map((e: any) => e.type),
      ['INCOMING_PAYMENT', 'ACCOUNT_STATUS'],
    );
    const [incoming, status] = events;
    assert.deepEqual(incoming.transaction, tx);
    assert.equal(incoming.account, undefined);
    assert.deepEqual(status.account, await getJson(svc, `/internal-accounts/${usd.id}`));
    assert.equal(status.transaction, undefined);
    assert.deepEqual(webhooksOf(svc, tx.id), [['INCOMING_PAYMENT', 'COMPLETED']]);
    assertLedgerHolds(svc);
  });

  it('funds the platform account with an empty customerId and platformCustomerId', async () => {
    const platform = (await getJson(svc, '/platform/internal-accounts?currency=USDC')).data[0];
    const before = await balanceOf(svc, platform.id);
    await fundAccount(svc, platform.id, 7);
    const tx = (await getJson(svc, '/transactions?type=INCOMING')).data.find((t: any) => t.destination.accountId === platform.id);
    assert.ok(tx, 'the platform account has its incoming transaction');
    assert.equal(tx.customerId, '');
    assert.equal(tx.platformCustomerId, '');
    assert.deepEqual(tx.source, { sourceType: 'SANDBOX_FUNDING', currency: 'USDC' });
    assert.equal(tx.receivedAmount.amount, 7);
    assert.equal(await balanceOf(svc, platform.id), before + 7);
    assertLedgerHolds(svc);
  });

  it('a refused funding records no transaction and no event', async () => {
    const customer = await createCustomer(svc);
    const usd = await accountIn(svc, customer.id, 'USD');
    await fundAccount(svc, usd.id, 50);
    const txBefore = (await getJson(svc, `/transactions?customerId=${customer.id}`)).totalCount;
    const eventsBefore = (await getJson(svc, '/webhooks/events')).totalCount;
    const balance = await balanceOf(svc, usd.id);
    for (const amount of [0, 1_000_000_000_001]) {
      assertInvalid(await svc.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body: { amount } }), 'amount');
    }
    assert.equal(await balanceOf(svc, usd.id), balance);
    assert.equal((await getJson(svc, `/transactions?customerId=${customer.id}`)).totalCount, txBefore);
    assert.equal((await getJson(svc, '/webhooks/events')).totalCount, eventsBefore);
  });

  it('a delivery receiver gets INCOMING_PAYMENT, then ACCOUNT_STATUS', async () => {
    const customer = await createCustomer(svc);
    const usd = await accountIn(svc, customer.id, 'USD');
    await fundAccount(svc, usd.id, 300);
    const pending = (await getJson(svc, '/webhooks/events?deliveryStatus=PENDING')).totalCount;
    assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url } }), 200);
    await receiver.waitFor(pending);
    const last = receiver.received.slice(-2).map((r) => r.json);
    assert.deepEqual(
      last.map((b) => b.type),
      ['INCOMING_PAYMENT', 'ACCOUNT_STATUS'],
    );
    assert.equal(last[0].transaction.destination.accountId, usd.id);
    assert.equal(last[0].transaction.receivedAmount.amount, 300);
    assert.equal(last[0].transaction.source.sourceType, 'SANDBOX_FUNDING');
    assert.equal(last[1].account.id, usd.id);
    assert.equal(last[1].account.balance.amount, 300);
  });
});
