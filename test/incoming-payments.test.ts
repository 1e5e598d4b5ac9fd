// Incoming UMA payments (CONTRACT.md "Webhooks", SERVICE_SPEC parts 3 and 4): POST
// /sandbox/uma/receive records an INCOMING transaction PENDING whose INCOMING_PAYMENT
// webhook asks a real receiver on loopback to approve; each answer ends in the state
// CONTRACT.md names, with the balance to match and the ledger invariant intact.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { DELIVERY_TIMEOUT_MS } from '../src/webhooks/delivery.js';
import { serviceForSuite, startTestService } from './support/service.js';
import { absentId, assertError, assertInvalid, assertStatus, createCustomer } from './support/assertions.js';
import { accountIn, assertLedgerHolds, balanceOf, externalUsd, fundedCustomer, getJson, quoteBody, until, webhooksOf } from './support/money.js';
import { quiesce } from './support/quiesce.js';
import { receiverForSuite, startReceiver, type Answer } from './support/webhook-receiver.js';

/** How long the receiver may stay silent before the service gives up (shortened from 5 s). */
const TIMEOUT_MS = 300;

/**
 * Waits for a webhook's answer, which is real I/O (a silent receiver takes TIMEOUT_MS of
 * real time, whatever the ManualClock says): polls every 10 ms for at most 5 s.
 */
async function answered(done: () => boolean): Promise<void> {
  for (let waited = 0; waited < 5_000; waited += 10) {
    if (done()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.fail('the webhook was not answered');
}

describe('incoming UMA payments', () => {
  const clock = new ManualClock();
  const svc = serviceForSuite({ clock, webhookTimeoutMs: TIMEOUT_MS });
  /** The approval answer for a payment, by its amount (each case uses its own). */
  const answers = new Map<number, Answer>();
  const receiver = receiverForSuite((json) =>
    json.type === 'INCOMING_PAYMENT' && json.transaction.status === 'PENDING' ? (answers.get(json.transaction.receivedAmount.amount) ?? 200) : 200,
  );

  const receive = async (customer: any, amount: number, over: Record<string, unknown> = {}): Promise<any> => {
    const res = await svc.request('POST', '/sandbox/uma/receive', {
      body: { senderUmaAddress: '$alice@sandbox.uma.test', receivingCurrencyCode: 'USD', receivingCurrencyAmount: amount, receiverUmaAddress: customer.umaAddress, ...over },
    });
    assertStatus(res, 201);
    assert.equal(res.body.type, 'INCOMING');
    assert.equal(res.body.direction, 'CREDIT');
    assert.deepEqual(res.body.source, { sourceType: 'UMA_ADDRESS', umaAddress: over.senderUmaAddress ?? '$alice@sandbox.uma.test', currency: 'USD' });
    return res.body;
  };
  const statusOf = (id: string): string => svc.service.services.world.transactions.get(id)!.status;
  const approvalEvent = (txId: string) => {
    const world = svc.service.services.world;
    for (const env of world.envs.records.keys()) {
      for (const id of world.webhookEvents.idsIn(env)) {
        const e = world.webhookEvents.get(id)!;
        if (e.approval === true && e.transaction?.id === txId) return e;
      }
    }
    return undefined;
  };

  it('without a webhookEndpoint the payment is approved at once and credited', async () => {
    const customer = await createCustomer(svc);
    const usd = await accountIn(svc, customer.id, 'USD');
    const tx = await receive(customer, 1_234);
    assert.equal(tx.status, 'COMPLETED');
    assert.equal(tx.receivedAmount.amount, 1_234);
    assert.equal(tx.customerId, customer.id);
    assert.equal(await balanceOf(svc, usd.id), 1_234);
    assert.deepEqual(webhooksOf(svc, tx.id), [
      ['INCOMING_PAYMENT', 'PENDING'],
      ['INCOMING_PAYMENT', 'COMPLETED'],
    ]);
    assert.deepEqual(await getJson(svc, `/transactions/${tx.id}`), tx);
    assert.deepEqual(tx.destination.accountId, usd.id);
    assertLedgerHolds(svc);
  });

  it("an approved payment is paid out to the customer's default UMA deposit account", async () => {
    const customer = await createCustomer(svc);
    const usd = await accountIn(svc, customer.id, 'USD');
    const deposit = await externalUsd(svc, customer.id, '123', { defaultUmaDepositAccount: true });
    const tx = await receive(customer, 2_500);
    assert.equal(tx.status, 'COMPLETED');
    assert.equal(tx.destination.accountId, deposit.id);
    assert.equal(await balanceOf(svc, usd.id), 0, 'the money passes through and leaves');
    const world = svc.service.services.world;
    const internal = world.internalAccounts.get(usd.id)!;
    assert.deepEqual([internal.inflow, internal.outflow], [2_500, 2_500]);
    assertLedgerHolds(svc);
  });

  it('each approval answer ends in the state CONTRACT.md names, balances to match', async () => {
    assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url } }), 200);
    const cases: Array<{ amount: number; answer: Answer; then?: 'approve' | 'reject' | 'silence'; status: string; reason?: string; credited: boolean }> = [
      { amount: 101, answer: 200, status: 'COMPLETED', credited: true },
      { amount: 102, answer: 403, status: 'REJECTED', credited: false },
      { amount: 103, answer: 202, then: 'approve', status: 'COMPLETED', credited: true },
      { amount: 104, answer: 202, then: 'reject', status: 'REJECTED', credited: false },
      { amount: 105, answer: 500, status: 'FAILED', reason: 'PAYMENT_APPROVAL_WEBHOOK_ERROR', credited: false },
      { amount: 106, answer: 'hang', status: 'FAILED', reason: 'PAYMENT_APPROVAL_WEBHOOK_ERROR', credited: false },
      { amount: 107, answer: 202, then: 'silence', status: 'FAILED', reason: 'PAYMENT_APPROVAL_TIMED_OUT', credited: false },
    ];
    for (const c of cases) {
      answers.set(c.amount, c.answer);
      const customer = await createCustomer(svc);
      const usd = await accountIn(svc, customer.id, 'USD');
      const pending = await receive(customer, c.amount, c.amount % 2 === 0 ? { receiverUmaAddress: undefined, customerId: customer.id } : {});
      assert.equal(pending.status, 'PENDING', `${c.amount}`);
      assert.equal(pending.failureReason, undefined);
      // The approval webhook is tried once and its answer logged.
      await answered(() => approvalEvent(pending.id)?.deliveryStatus !== 'PENDING');
      if (c.then === undefined) await until(svc, () => statusOf(pending.id) !== 'PENDING');
      else {
        assert.equal(statusOf(pending.id), 'PENDING', '202: the platform decides within 5 s');
        // A millisecond short of the window: a timeout that fired anyway has been applied once the engine is idle.
        clock.advance(4_999);
        await quiesce(svc.service.services.engine);
        assert.equal(statusOf(pending.id), 'PENDING');
        if (c.then === 'silence') {
          clock.advance(1);
          await until(svc, () => statusOf(pending.id) !== 'PENDING');
        } else {
          const res = await svc.request('POST', `/transactions/${pending.id}/${c.then}`);
          assertStatus(res, 200);
          assert.equal(res.body.status, c.status);
          // The cancelled timer does nothing: past its due time, the status (read below) and events are the decision's.
          clock.advance(10_000);
          await quiesce(svc.service.services.engine);
        }
      }
      const tx = await getJson(svc, `/transactions/${pending.id}`);
      assert.equal(tx.status, c.status, `answer ${c.answer} ${c.then ?? ''}`);
      assert.equal(tx.failureReason, c.reason);
      assert.equal(await balanceOf(svc, usd.id), c.credited ? c.amount : 0, `answer ${c.answer} ${c.then ?? ''}`);
      const event = approvalEvent(pending.id)!;
      assert.equal(event.attempts.length, 1, 'the approval webhook is not retried');
      // The service's webhookTimeoutMs reaches delivery: a silent receiver is given up after it, not after the default.
      if (c.answer === 'hang') assert.ok(event.attempts[0]!.ms >= TIMEOUT_MS && event.attempts[0]!.ms < DELIVERY_TIMEOUT_MS, `gave up after ${event.attempts[0]!.ms} ms`);
      assert.equal(event.deliveryStatus, c.answer === 200 || c.answer === 202 ? 'DELIVERED' : 'FAILED');
      assert.deepEqual(webhooksOf(svc, pending.id), [
        ['INCOMING_PAYMENT', 'PENDING'],
        ['INCOMING_PAYMENT', c.status],
      ]);
      assertError(await svc.request('POST', `/transactions/${pending.id}/approve`), 409, 'TRANSACTION_NOT_PENDING');
      assertError(await svc.request('POST', `/transactions/${pending.id}/reject`), 409, 'TRANSACTION_NOT_PENDING');
      assert.equal(await balanceOf(svc, usd.id), c.credited ? c.amount : 0, 'a refused approve moves nothing');
    }
    // The second INCOMING_PAYMENT of an approved payment reaches the receiver too.
    const completed = receiver.received.filter((r) => r.json.type === 'INCOMING_PAYMENT' && r.json.transaction.status === 'COMPLETED');
    assert.ok(completed.some((r) => r.json.transaction.receivedAmount.amount === 101));
    clock.advance(60_000);
    await quiesce(svc.service.services.engine);
    assertLedgerHolds(svc);
  });

  it('refuses what it cannot receive, naming the field; approve and reject only pending incoming payments', async () => {
    const customer = await createCustomer(svc);
    const body = { senderUmaAddress: '$alice@sandbox.uma.test', receivingCurrencyCode: 'USD', receivingCurrencyAmount: 100, customerId: customer.id };
    const post = (over: Record<string, unknown>, auth: 'sandbox' | 'production' = 'sandbox') => svc.request('POST', '/sandbox/uma/receive', { body: { ...body, ...over }, auth });
    assertInvalid(await post({ senderUmaAddress: '$alice@example.com' }), 'senderUmaAddress');
    assertInvalid(await post({ customerId: undefined }), 'receiverUmaAddress');
    assertInvalid(await post({ receivingCurrencyAmount: 0 }), 'receivingCurrencyAmount');
    assertInvalid(await post({ receivingCurrencyCode: 'EUR' }), 'receivingCurrencyCode');
    assertError(await post({ customerId: absentId('Customer') }), 404, 'NOT_FOUND');
    assertError(await post({ customerId: undefined, receiverUmaAddress: '$nobody@sandbox.uma.test' }), 404, 'NOT_FOUND');
    assert.equal((await post({}, 'production')).status, 403);
    assert.equal(await balanceOf(svc, (await accountIn(svc, customer.id, 'USD')).id), 0);

    assertError(await svc.request('POST', `/transactions/${absentId('Transaction')}/approve`), 404, 'NOT_FOUND');
    const alice = await fundedCustomer(svc, 500);
    const bob = await fundedCustomer(svc, 0);
    const quote = await svc.request('POST', '/quotes', { body: quoteBody(alice.usd.id, bob.usd.id, 100, { immediatelyExecute: true }) });
    assertStatus(quote, 201);
    assertError(await svc.request('POST', `/transactions/${quote.body.transactionId}/approve`), 409, 'TRANSACTION_NOT_PENDING');
    assertError(await svc.request('POST', `/transactions/${quote.body.transactionId}/approve`, { auth: 'production' }), 404, 'NOT_FOUND');
  });
});

describe('an incoming payment awaiting approval across a restart', () => {
  it('recovers PENDING with its approval window, and the platform approves it after', async () => {
    // Found by the simulation (seed 1): recovery's invariant check took a payment waiting
    // for the platform's decision for a payout that had lost its outcome, and refused to start.
    const clock = new ManualClock();
    const receiver = await startReceiver(() => 202);
    after(() => receiver.close());
    const first = await startTestService({ clock, webhookTimeoutMs: TIMEOUT_MS });
    const { dataDir } = first;
    assertStatus(await first.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url } }), 200);
    const customer = await createCustomer(first);
    const usd = await accountIn(first, customer.id, 'USD');
    const res = await first.request('POST', '/sandbox/uma/receive', {
      body: { senderUmaAddress: '$alice@sandbox.uma.test', receivingCurrencyCode: 'USD', receivingCurrencyAmount: 777, customerId: customer.id },
    });
    assertStatus(res, 201);
    await answered(() => receiver.received.length > 0);
    await quiesce(first.service.services.engine);
    await first.stop({ keepData: true });

    const second = await startTestService({ clock, dataDir, webhookTimeoutMs: TIMEOUT_MS });
    try {
      assert.equal((await getJson(second, `/transactions/${res.body.id}`)).status, 'PENDING');
      const approved = await second.request('POST', `/transactions/${res.body.id}/approve`);
      assertStatus(approved, 200);
      assert.equal(approved.body.status, 'COMPLETED');
      assert.equal(await balanceOf(second, usd.id), 777);
      assertLedgerHolds(second);
    } finally {
      await second.stop();
    }
  });
});
