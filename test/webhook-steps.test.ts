// A payment step's webhook events, kept as one record while none of them has a delivery
// state of its own (actors/webhook-event.ts, WebhookStep): their ids are the ones derived
// from the payment's transaction id, the API shows each as it showed a record of its own,
// and an event taken out of its step (tried) keeps its state across a restart, from the log
// and from a snapshot, then goes again with the bytes of its first try. A snapshot names a
// reported transaction by its id while it is current (WebhookEvents.stored); a new version of
// it (a confirmed receipt) leaves the events reporting the version they were made with.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { startTestService } from './support/service.js';
import { assertStatus } from './support/assertions.js';
import { createQuote, fundedCustomer, getJson, quoteBody, until } from './support/money.js';
import { advance, quiet, shownEvents as shown } from './support/webhook-queue.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

describe("a payment step's webhook events", () => {
  for (const fromSnapshot of [false, true]) {
    const from = fromSnapshot ? 'a snapshot' : 'the log';
    it(`are listed under their derived ids; one tried keeps its attempt across a restart from ${from}`, async () => {
      const clock = new ManualClock();
      // The funding's two events are delivered; the payment's first is refused once.
      const receiver = await startReceiver((_json, n) => (n < 2 ? 200 : 500));
      try {
        await restartedWithStep(receiver, clock, fromSnapshot);
      } finally {
        await receiver.close();
      }
    });
  }

  it("of an immediate payment are its quote's until one of them is tried, then stored, and once delivered derived no more, across restarts", async () => {
    const clock = new ManualClock();
    const receiver = await startReceiver(() => 200);
    let svc = await startTestService({ clock });
    const restart = async (fromSnapshot: boolean): Promise<void> => {
      if (fromSnapshot) await svc.service.services.engine.snapshot();
      await svc.stop({ keepData: true });
      svc = await startTestService({ clock, dataDir: svc.dataDir });
    };
    try {
      const alice = await fundedCustomer(svc, 100);
      const bob = await fundedCustomer(svc, 0);
      const quote = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 100, { immediatelyExecute: true }));
      const uuid = (quote.transactionId as string).slice('Transaction:'.length, -2);
      const stem = `Webhook:${uuid}`;
      const paymentIds = ['01', '03', '04', '05'].map((last) => `${stem}${last}`);
      const stored = (): boolean => svc.service.services.world.webhookEvents.records.has(stem);
      const derives = (): boolean => svc.service.services.world.quotes.get(quote.id as string)!.webhookStep !== undefined;
      const before = await shown(svc);
      assert.deepEqual(before.listed.slice(2).map((e) => [e.id, e.type, e.deliveryStatus]), [
        [paymentIds[0], 'OUTGOING_PAYMENT', 'PENDING'],
        [paymentIds[1], 'INCOMING_PAYMENT', 'PENDING'],
        [paymentIds[2], 'ACCOUNT_STATUS', 'PENDING'],
        [paymentIds[3], 'ACCOUNT_STATUS', 'PENDING'],
      ]);
      assert.deepEqual(before.listed.slice(4).map((e) => [e.account.id, e.account.balance.amount]), [[alice.usd.id, 0], [bob.usd.id, 100]], 'each account as the payment left it');
      assert.deepEqual([stored(), derives()], [false, true], 'the step is stored nowhere: its quote derives it');
      for (const fromSnapshot of [false, true]) {
        await restart(fromSnapshot);
        assert.deepEqual(await shown(svc), before, `the same events after a restart from ${fromSnapshot ? 'a snapshot' : 'the log'}`);
        assert.deepEqual([stored(), derives()], [false, true]);
        assert.deepEqual(svc.service.services.world.checkInvariants(), []);
      }
      // Tried, the events are taken out one by one: the step is stored until its last goes.
      assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url } }), 200);
      await receiver.waitFor(6);
      await quiet(svc);
      const world = svc.service.services.world;
      await until(svc, () => paymentIds.every((id) => world.webhookEvents.get(id)?.deliveryStatus === 'DELIVERED'));
      assert.deepEqual(receiver.received.slice(2).map((r) => r.json.id), paymentIds);
      assert.deepEqual([stored(), derives()], [false, false], 'delivered, each event is a record of its own, and the quote derives no step');
      const delivered = await shown(svc);
      assert.deepEqual(delivered.listed.map((e) => e.id), before.listed.map((e) => e.id), 'each event listed once');
      for (const fromSnapshot of [false, true]) {
        await restart(fromSnapshot);
        assert.deepEqual(await shown(svc), delivered, `delivered, the same after a restart from ${fromSnapshot ? 'a snapshot' : 'the log'}`);
        assert.deepEqual(svc.service.services.world.checkInvariants(), []);
      }
      await advance(svc, clock, 60_000);
      assert.equal(receiver.received.length, 6, 'nothing delivered twice');
    } finally {
      await svc.stop();
      await receiver.close();
    }
  });

  for (const snapshotAfter of [false, true]) {
    it(`report the transaction as it was paid after it changed, a snapshot taken before the change${snapshotAfter ? ' and one after' : ''}`, async () => {
      const first = await startTestService();
      let before: { listed: any[]; read: any[] };
      let confirmed: any;
      try {
        const alice = await fundedCustomer(first, 100);
        const bob = await fundedCustomer(first, 0);
        const quote = await createQuote(first, quoteBody(alice.usd.id, bob.usd.id, 100, { immediatelyExecute: true }));
        await first.service.services.engine.snapshot();
        before = await shown(first);
        assert.equal(before.listed.filter((e) => e.transaction?.id === quote.transactionId).length, 1);
        confirmed = await getJson(first, `/transactions/${quote.transactionId}`);
        const answer = await first.request('POST', `/transactions/${quote.transactionId}/confirm`, { body: { receiptDeliveryConfirmedAt: '2026-01-02T03:04:05.000Z' } });
        assertStatus(answer, 200);
        confirmed = await getJson(first, `/transactions/${quote.transactionId}`);
        assert.equal(confirmed.receiptDeliveryConfirmedAt, '2026-01-02T03:04:05.000Z');
        assert.deepEqual(await shown(first), before, 'the events report the transaction as it was paid');
        if (snapshotAfter) await first.service.services.engine.snapshot();
      } finally {
        await first.stop({ keepData: true });
      }
      const second = await startTestService({ dataDir: first.dataDir });
      try {
        assert.deepEqual(await shown(second), before, 'after a restart, the events still report the transaction as it was paid');
        assert.deepEqual(await getJson(second, `/transactions/${confirmed.id}`), confirmed, 'and the transaction is as it is now');
        assert.deepEqual(second.service.services.world.checkInvariants(), []);
      } finally {
        await second.stop();
      }
    });
  }
});

/** The scenario of both restarts: `receiver` refuses the payment's first try, then the service restarts, from a snapshot taken after that try or from the log. */
async function restartedWithStep(receiver: Receiver, clock: ManualClock, fromSnapshot: boolean): Promise<void> {
  const from = fromSnapshot ? 'a snapshot' : 'the log';
  const first = await startTestService({ clock });
  let before: { listed: any[]; read: any[] };
  let paymentIds: string[];
  try {
    assertStatus(await first.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url } }), 200);
    const alice = await fundedCustomer(first, 100);
    const bob = await fundedCustomer(first, 0);
    await receiver.waitFor(2);
    const quote = await createQuote(first, quoteBody(alice.usd.id, bob.usd.id, 100, { immediatelyExecute: true }));
    await receiver.waitFor(3);
    await quiet(first);
    // The execution derives its ids from the transaction's: the receiver's transaction takes 02.
    const uuid = (quote.transactionId as string).slice('Transaction:'.length, -2);
    paymentIds = ['01', '03', '04', '05'].map((last) => `Webhook:${uuid}${last}`);
    before = await shown(first);
    assert.deepEqual(before.listed.slice(2).map((e) => e.id), paymentIds);
    assert.deepEqual(before.listed.slice(2).map((e) => e.type), ['OUTGOING_PAYMENT', 'INCOMING_PAYMENT', 'ACCOUNT_STATUS', 'ACCOUNT_STATUS']);
    assert.deepEqual(before.read, before.listed, 'each event reads as it is listed');
    assert.equal(before.listed[2].transaction.id, quote.transactionId);
    assert.deepEqual(before.listed[2].attempts.map((a: any) => a.statusCode), [500], 'the tried event shows its try');
    assert.deepEqual(before.listed.slice(3).map((e) => [e.deliveryStatus, e.attempts.length]), Array(3).fill(['PENDING', 0]));
    assert.deepEqual(first.service.services.world.checkInvariants(), []);
    if (fromSnapshot) await first.service.services.engine.snapshot();
  } finally {
    await first.stop({ keepData: true });
  }
  const second = await startTestService({ clock, dataDir: first.dataDir });
  try {
    const after = await shown(second);
    assert.deepEqual(after, before, `the same events, states and bodies after a restart from ${from}`);
    assert.deepEqual(second.service.services.world.checkInvariants(), []);
    receiver.answer = () => 200;
    clock.advance(60_000);
    await receiver.waitFor(7);
    const world = second.service.services.world;
    await until(second, () => paymentIds.every((id) => world.webhookEvents.get(id)?.deliveryStatus === 'DELIVERED'));
    assert.deepEqual(receiver.received.slice(3).map((r) => r.json.id), paymentIds, 'creation order, each once more after its restart');
    assert.equal(receiver.received[3]!.body, receiver.received[2]!.body, 'the retry sends the bytes of the first try');
    assert.deepEqual(world.checkInvariants(), []);
  } finally {
    await second.stop();
  }
}
