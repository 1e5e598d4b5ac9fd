// The webhook outbox (CONTRACT.md "Webhooks"): every transaction status change records an
// event in the same log entry, listed by GET /webhooks/events with its delivery status.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from './support/service.js';
import { absentId, assertError, assertInvalid, ID_RE, ISO_TIME } from './support/assertions.js';
import { createQuote, fundedCustomer, getJson, quoteBody } from './support/money.js';

describe('GET /webhooks/events', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    await svc.stop();
  });

  it('records OUTGOING_PAYMENT for the sender and INCOMING_PAYMENT for the receiver, PENDING delivery, newest first', async () => {
    const alice = await fundedCustomer(svc, 1_000);
    const bob = await fundedCustomer(svc, 0);
    const quote = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 400, { immediatelyExecute: true }));
    const all = await getJson(svc, '/webhooks/events');
    // Funding alice (INCOMING, ACCOUNT_STATUS), then the transfer: OUTGOING, INCOMING, and both balances.
    assert.deepEqual(all.data.map((e: any) => e.type).reverse(), ['INCOMING_PAYMENT', 'ACCOUNT_STATUS', 'OUTGOING_PAYMENT', 'INCOMING_PAYMENT', 'ACCOUNT_STATUS', 'ACCOUNT_STATUS']);
    const fundingEvent = all.data[all.data.length - 1];
    assert.equal(fundingEvent.transaction.source.sourceType, 'SANDBOX_FUNDING');
    assert.equal(fundingEvent.transaction.customerId, alice.customer.id);
    const list = { data: all.data.filter((e: any) => e.type !== 'ACCOUNT_STATUS' && e.id !== fundingEvent.id) };
    const [incoming, outgoing] = list.data;
    assert.equal(outgoing.type, 'OUTGOING_PAYMENT');
    assert.equal(incoming.type, 'INCOMING_PAYMENT');
    assert.ok(incoming.id > outgoing.id, 'newest first');
    for (const event of list.data) {
      assert.match(event.id, ID_RE('Webhook'));
      assert.match(event.timestamp, ISO_TIME);
      assert.equal(event.deliveryStatus, 'PENDING');
      assert.deepEqual(event.attempts, []);
      assert.equal(event.transaction.status, 'COMPLETED');
      assert.equal(event.account, undefined);
    }
    assert.deepEqual(outgoing.transaction, await getJson(svc, `/transactions/${quote.transactionId}`));
    assert.equal(incoming.transaction.customerId, bob.customer.id);
    assert.deepEqual(await getJson(svc, `/webhooks/events/${outgoing.id}`), outgoing);
    assert.deepEqual((await getJson(svc, '/webhooks/events?type=INCOMING_PAYMENT')).data, [incoming, fundingEvent]);
    assert.equal((await getJson(svc, '/webhooks/events?deliveryStatus=DELIVERED')).totalCount, 0);
    assert.equal((await getJson(svc, '/webhooks/events', 'production')).totalCount, 0);
    assertError(await svc.request('GET', `/webhooks/events/${outgoing.id}`, { auth: 'production' }), 404, 'NOT_FOUND');
    assertError(await svc.request('GET', `/webhooks/events/${absentId('Webhook')}`), 404, 'NOT_FOUND');
    assertInvalid(await svc.request('GET', '/webhooks/events?type=ACCOUNT'), 'type');
    assertInvalid(await svc.request('GET', '/webhooks/events?deliveryStatus=LOST'), 'deliveryStatus');
  });

  it('ACCOUNT_STATUS reports every balance change with the account as it became', async () => {
    const before = (await getJson(svc, '/webhooks/events?type=ACCOUNT_STATUS')).totalCount;
    const alice = await fundedCustomer(svc, 1_000);
    const bob = await fundedCustomer(svc, 0);
    await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 400, { immediatelyExecute: true }));
    const statuses = (await getJson(svc, '/webhooks/events?type=ACCOUNT_STATUS')).data.slice(0, 3).reverse();
    assert.equal((await getJson(svc, '/webhooks/events?type=ACCOUNT_STATUS')).totalCount, before + 3);
    assert.deepEqual(
      statuses.map((e: any) => [e.account.id, e.account.balance.amount]),
      [
        [alice.usd.id, 1_000],
        [alice.usd.id, 600],
        [bob.usd.id, 400],
      ],
    );
    for (const event of statuses) assert.equal(event.transaction, undefined);
    assert.deepEqual(statuses[2].account, await getJson(svc, `/internal-accounts/${bob.usd.id}`));
  });

  it('a refused execute records no event', async () => {
    const alice = await fundedCustomer(svc, 10);
    const bob = await fundedCustomer(svc, 0);
    const before = (await getJson(svc, '/webhooks/events')).totalCount;
    const res = await svc.request('POST', '/quotes', { body: quoteBody(alice.usd.id, bob.usd.id, 11, { immediatelyExecute: true }) });
    assertError(res, 400, 'INSUFFICIENT_BALANCE');
    assert.equal((await getJson(svc, '/webhooks/events')).totalCount, before);
  });
});
