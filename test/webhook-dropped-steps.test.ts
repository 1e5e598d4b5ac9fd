// A full backlog drops a payment's webhook events where they are: its step keeps them, FAILED
// as dropped (actors/webhook-event.ts, WebhookStep.droppedAt; a step its quote derived is
// stored from its first drop), instead of taking each out as a
// record of its own (what made a sustained payment load run at a third of its rate once the
// backlog was full). The API shows them as before: listed FAILED with the drop's reason,
// redeliverable, pruned 30 days after the drop; the same after a restart from the log and from
// a snapshot. No endpoint is configured, so nothing is delivered meanwhile.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../src/engine/clock.js';
import { startTestService } from './support/service.js';
import { assertError, assertStatus, createCustomer } from './support/assertions.js';
import { accountIn, createQuote, fund, fundedCustomer, getJson, quoteBody, until } from './support/money.js';
import { advance, quiet, shownEvents as shown } from './support/webhook-queue.js';

const DAY = 24 * 60 * 60 * 1000;
const MINUTE = 60_000;
/** Past the cap, the funding's events and most payments' are dropped, the last across a step: the cap keeps the last payment's four and one more. */
const LIMIT = 5;
const PAYMENTS = 6;
const NO_TIMED_SNAPSHOTS = 1e9;
const REASON = `dropped from the backlog: the environment held more than ${LIMIT} undelivered events`;

describe('a full backlog drops a payment step\'s events', () => {
  it("drops those of a payment between one customer's own accounts (no receiver's transaction), read the same after a restart from a snapshot", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-webhook-dropped-own-'));
    try {
      const clock = new ManualClock();
      const first = await startTestService({ clock, dataDir, maxPendingWebhooks: 1, snapshotEverySeconds: NO_TIMED_SNAPSHOTS });
      let before: { listed: any[]; read: any[] };
      try {
        const events = first.service.services.world.webhookEvents;
        const customer = await createCustomer(first, { currencies: ['USD', 'USDC'] });
        const usd = await accountIn(first, customer.id, 'USD');
        const usdc = await accountIn(first, customer.id, 'USDC');
        await fund(first, usd.id, 1_000);
        for (const amount of [100, 200]) await createQuote(first, quoteBody(usd.id, usdc.id, amount, { immediatelyExecute: true }));
        await until(first, () => [...events.queuedEnvs()].every((envId) => events.pendingIn(envId) <= 1), 'the backlog trimmed');
        await quiet(first);
        before = await shown(first);
        const payments = before.listed.slice(-6);
        assert.deepEqual(payments.map((e) => e.type), ['OUTGOING_PAYMENT', 'ACCOUNT_STATUS', 'ACCOUNT_STATUS', 'OUTGOING_PAYMENT', 'ACCOUNT_STATUS', 'ACCOUNT_STATUS']);
        assert.deepEqual(payments.map((e) => e.deliveryStatus), [...Array(5).fill('FAILED'), 'PENDING']);
        assert.deepEqual(payments.map((e) => e.account?.id ?? e.transaction.id.slice(-2)), ['00', usd.id, usdc.id, '00', usd.id, usdc.id]);
        assert.deepEqual(before.read, before.listed, 'each event reads as it is listed');
        await first.service.services.engine.snapshot();
      } finally {
        await first.stop({ keepData: true });
      }
      const again = await startTestService({ clock, dataDir, maxPendingWebhooks: 1, snapshotEverySeconds: NO_TIMED_SNAPSHOTS });
      try {
        assert.deepEqual(await shown(again), before, 'the same events after a restart from a snapshot');
        assert.deepEqual(again.service.services.world.checkInvariants(), []);
      } finally {
        await again.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('drops again, as records of their own, the events of a step redelivered one by one until the step is gone', async () => {
    const clock = new ManualClock();
    const svc = await startTestService({ clock, maxPendingWebhooks: 1, snapshotEverySeconds: NO_TIMED_SNAPSHOTS });
    try {
      const events = svc.service.services.world.webhookEvents;
      const trimmed = (): Promise<void> => until(svc, () => [...events.queuedEnvs()].every((envId) => events.pendingIn(envId) <= 1), 'the backlog trimmed');
      const alice = await fundedCustomer(svc, 1_000);
      const bob = await fundedCustomer(svc, 0);
      for (let i = 0; i < 2; i++) await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 10, { immediatelyExecute: true }));
      await trimmed();
      // The first payment's four events, dropped in their step.
      const first = (await shown(svc)).listed.slice(-8, -4);
      assert.deepEqual(first.map((e) => e.deliveryStatus), Array(4).fill('FAILED'));
      const stem = first[0].id.slice(0, -2);
      assert.ok(first.every((e) => e.id.startsWith(stem)), 'one step');
      // Each goes back to the queue, out of the step, and is the oldest there: the backlog drops it again.
      for (const event of first) {
        assertStatus(await svc.request('POST', `/webhooks/events/${event.id}/redeliver`), 200);
        await trimmed();
      }
      assert.equal(events.records.get(stem), undefined, 'the step went with its last event');
      for (const event of first) {
        const now = await getJson(svc, `/webhooks/events/${event.id}`);
        assert.equal(now.deliveryStatus, 'FAILED', `${event.id} dropped again`);
        assert.equal(now.failureReason, 'dropped from the backlog: the environment held more than 1 undelivered events');
      }
      assert.deepEqual(svc.service.services.world.checkInvariants(), []);
    } finally {
      await svc.stop();
    }
  });

  for (const from of ['the log', 'a snapshot'] as const) {
    it(`keeps them in their step, FAILED as dropped, redeliverable and pruned on time, also after a restart from ${from}`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'svc-webhook-dropped-'));
      try {
        const clock = new ManualClock();
        const first = await startTestService({ clock, dataDir, maxPendingWebhooks: LIMIT, snapshotEverySeconds: NO_TIMED_SNAPSHOTS });
        let before: { listed: any[]; read: any[] };
        let dropped: string[];
        try {
          const events = first.service.services.world.webhookEvents;
          const alice = await fundedCustomer(first, 1_000);
          const bob = await fundedCustomer(first, 0);
          for (let i = 0; i < PAYMENTS; i++) await createQuote(first, quoteBody(alice.usd.id, bob.usd.id, 10, { immediatelyExecute: true }));
          await until(first, () => [...events.queuedEnvs()].every((envId) => events.pendingIn(envId) <= LIMIT), 'the backlog trimmed');
          await quiet(first);
          before = await shown(first);
          // Alice's funding's two events, then four a payment.
          assert.equal(before.listed.length, 2 + 4 * PAYMENTS);
          const failed = before.listed.filter((e) => e.deliveryStatus === 'FAILED');
          dropped = failed.map((e) => e.id);
          assert.deepEqual(dropped, before.listed.slice(0, before.listed.length - LIMIT).map((e) => e.id), 'the oldest are dropped');
          for (const e of failed) {
            assert.equal(e.failureReason, REASON);
            assert.equal(e.attempts.length, 0);
          }
          assert.deepEqual(before.read, before.listed, 'each event reads as it is listed');
          // A step for the funding and one for each payment whose events were dropped, none of
          // their events a record of its own; the last payment's step, nothing dropped, its quote derives.
          const stems = new Set(dropped.map((id) => id.slice(0, -2)));
          assert.deepEqual([...events.records.keys()].sort(), [...stems].sort(), 'the dropped events stay in their steps');
          assert.equal(stems.size, PAYMENTS);
          assert.deepEqual(first.service.services.world.checkInvariants(), []);
          if (from === 'a snapshot') await first.service.services.engine.snapshot();
        } finally {
          await first.stop({ keepData: true });
        }

        const againClock = new ManualClock(clock.now());
        // Room for one more, so that the event requeued below is not the oldest dropped again.
        const again = await startTestService({ clock: againClock, dataDir, maxPendingWebhooks: LIMIT + 1, snapshotEverySeconds: NO_TIMED_SNAPSHOTS });
        try {
          assert.deepEqual(await shown(again), before, `the same events, states and reasons after a restart from ${from}`);
          assert.deepEqual(again.service.services.world.checkInvariants(), []);
          // One dropped event goes back to the queue, out of its step; the others stay dropped.
          const redelivered = dropped[5]!;
          const res = await again.request('POST', `/webhooks/events/${redelivered}/redeliver`);
          assertStatus(res, 200);
          assert.equal(res.body.deliveryStatus, 'PENDING');
          assert.equal(res.body.failureReason, undefined);
          assert.equal((await getJson(again, `/webhooks/events/${dropped[4]!}`)).deliveryStatus, 'FAILED');
          // 30 days after the drop, the dropped ones are pruned; the requeued one and the pending stay.
          await advance(again, againClock, 30 * DAY - MINUTE);
          assert.equal((await getJson(again, '/webhooks/events?deliveryStatus=FAILED&limit=100')).totalCount, dropped.length - 1, 'kept until their time');
          await advance(again, againClock, 2 * MINUTE);
          for (const id of dropped.filter((id) => id !== redelivered)) assertError(await again.request('GET', `/webhooks/events/${id}`), 404, 'NOT_FOUND', ['id']);
          const left = (await getJson(again, '/webhooks/events?limit=100')).data;
          assert.deepEqual(left.map((e: any) => e.deliveryStatus), Array(LIMIT + 1).fill('PENDING'));
          assert.deepEqual(again.service.services.world.checkInvariants(), []);
        } finally {
          await again.stop({ keepData: true });
        }
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  }
});
