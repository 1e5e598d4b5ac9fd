// The log holds decided facts, not rendered records: payment steps name their quote's new
// status, transactions made from a quote leave out what they take from it, and webhook
// events name the record they report. Replaying that log (and loading a snapshot of it)
// must rebuild exactly what the running service answered.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../src/engine/clock.js';
import { SHORT_OUTCOME_MS } from '../actors/transaction.js';
import { answersTo, startTestService, type TestService } from './support/service.js';
import { createQuote, execute, externalUsd, fundedCustomer, quoteBody, until } from './support/money.js';
import { startReceiver, type Answer, type Receiver } from './support/webhook-receiver.js';

describe('replaying the compact log', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'log-replay-'));
  const clock = new ManualClock(Date.UTC(2026, 6, 1));
  let svc: TestService | undefined;
  const reads: string[] = ['/transactions?limit=100', '/webhooks/events?limit=100', '/internal-accounts?limit=100', '/customers?limit=100'];
  let receiver: Receiver | undefined;
  after(async () => {
    await svc?.stop({ keepData: true });
    await receiver?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });


  it('rebuilds payments, transfers, fundings, incoming payments, their quotes and webhook events exactly, from the log and from a snapshot', async () => {
    svc = await startTestService({ clock, dataDir });
    const a = await fundedCustomer(svc, 1_000_000, { platformCustomerId: 'sender' });
    const b = await fundedCustomer(svc, 5, { platformCustomerId: 'receiver' });
    const internal = await createQuote(svc, { ...quoteBody(a.usd.id, b.usd.id, 1_234, { description: 'lunch' }), immediatelyExecute: true });
    const refunds = await externalUsd(svc, a.customer.id, '004');
    const payout = await execute(svc, (await createQuote(svc, quoteBody(a.usd.id, refunds.id, 700, { destination: { destinationType: 'ACCOUNT', accountId: refunds.id, paymentRail: 'ACH' } }))).id);
    // Transfers log their facts too: one in at once, one out that the sandbox bank holds and then refunds.
    const plain = await externalUsd(svc, b.customer.id, '123');
    const transfer = (path: string, body: Record<string, unknown>) => svc!.request('POST', path, { body });
    assert.equal((await transfer('/transfer-in', { source: { accountId: plain.id }, destination: { accountId: b.usd.id }, amount: 300 })).status, 201);
    const heldOut = await transfer('/transfer-out', { source: { accountId: a.usd.id }, destination: { accountId: refunds.id }, amount: 450 });
    assert.equal(heldOut.status, 201, heldOut.text);
    // Money for a REALTIME_FUNDING quote, and incoming UMA payments: one approved at once (no endpoint yet), then
    // with an endpoint one approved by its webhook's answer, one rejected after a 202 and one its approval timer fails.
    const funding = await createQuote(svc, { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: b.customer.id }, destination: { destinationType: 'ACCOUNT', accountId: b.usd.id }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 800 });
    assert.equal((await svc.request('POST', '/sandbox/send', { body: { quoteId: funding.id, currencyCode: 'USD' } })).status, 200);
    const receive = async (amount: number): Promise<string> => {
      const res = await svc!.request('POST', '/sandbox/uma/receive', { body: { senderUmaAddress: '$alice@sandbox.uma.test', customerId: b.customer.id, receivingCurrencyCode: 'USD', receivingCurrencyAmount: amount } });
      assert.equal(res.status, 201, res.text);
      return res.body.id;
    };
    await receive(50);
    const answers = new Map<number, Answer>([[61, 200], [62, 202], [63, 202]]);
    receiver = await startReceiver((json) => (json.transaction?.status === 'PENDING' ? (answers.get(json.transaction.receivedAmount.amount) ?? 200) : 200));
    assert.equal((await svc.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url } })).status, 200);
    const [approved, rejected, timedOut] = [await receive(61), await receive(62), await receive(63)];
    const statusOf = (id: string) => svc!.service.services.world.transactions.get(id)?.status;
    const pendingEvents = () => [...svc!.service.services.world.envs.records.keys()].reduce((n, env) => n + svc!.service.services.world.webhookEvents.pendingIn(env), 0);
    await until(svc, () => statusOf(approved) === 'COMPLETED' && pendingEvents() === 0, 'the approvals answered');
    assert.equal((await svc.request('POST', `/transactions/${rejected}/reject`)).status, 200);
    clock.advance(SHORT_OUTCOME_MS + 1);
    await until(svc, () => statusOf(payout.transactionId) === 'REFUNDED' && statusOf(heldOut.body.id) === 'REFUNDED' && statusOf(timedOut) === 'FAILED');
    await until(svc, () => pendingEvents() === 0, 'every event delivered');
    assert.deepEqual([statusOf(approved), statusOf(rejected)], ['COMPLETED', 'REJECTED']);
    reads.push(`/quotes/${internal.id}`, `/quotes/${payout.id}`);
    const live = await answersTo(svc, reads);
    // The webhook bodies are part of it: each event says what its transaction was then.
    const events = (live['/webhooks/events?limit=100'] as { data: Array<{ type: string; transaction?: { id: string; status: string } }> }).data;
    const payoutStatuses = events.filter((e) => e.transaction?.id === payout.transactionId).map((e) => e.transaction!.status).reverse();
    assert.deepEqual(payoutStatuses, ['PROCESSING', 'FAILED', 'REFUNDED']);

    await svc.stop({ keepData: true });
    svc = await startTestService({ clock, dataDir });
    assert.equal(svc.service.services.engine.snapshotSeq, 0, 'replayed from the log alone');
    assert.deepEqual(await answersTo(svc, reads), live);

    await svc.service.services.engine.snapshot();
    await svc.stop({ keepData: true });
    svc = await startTestService({ clock, dataDir });
    assert.ok(svc.service.services.engine.snapshotSeq > 0, 'loaded from a snapshot');
    assert.deepEqual(await answersTo(svc, reads), live);
    assert.deepEqual(svc.service.services.world.checkInvariants(), []);
  });
});
