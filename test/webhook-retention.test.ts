// Webhook event retention (docs/api.md, Webhooks): a DELIVERED or FAILED event is kept 30
// days after it settled, then pruned: GET of its id is a 404 like any unknown id, lists skip
// it, and a cursor that stood on it still pages on. An event still PENDING (retrying, or
// redelivered and retrying again) is never pruned, however old. Pruning is logged, so a
// restart, from the log or from a snapshot, keeps what was pruned pruned and what was kept
// kept, and goes on pruning the kept ones when their time comes. Time moves through the
// ManualClock; receivers are real, on loopback.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../src/engine/clock.js';
import { createPlatform } from '../src/platforms.js';
import { basicHeader, startTestService, type TestService } from './support/service.js';
import { assertError, assertStatus, createCustomer, type Auth } from './support/assertions.js';
import { accountIn, fund, fundedCustomer, getJson, until } from './support/money.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';
import { advance } from './support/webhook-queue.js';

const DAY = 24 * 60 * 60 * 1000;
const MINUTE = 60_000;
/** The retention docs/api.md promises (not the constant: a test of the constant against itself holds nothing). */
const RETENTION = 30 * DAY;
/** No snapshot but the ones a test takes: what a restart replays is then the test's choice. */
const NO_TIMED_SNAPSHOTS = 1e9;

function sandboxEnvId(svc: TestService, platformId: string): string {
  return [...svc.service.services.world.envs.records.keys()].find((id) => id.startsWith(platformId) && id.endsWith('#sandbox'))!;
}

/** The ids GET /webhooks/events lists (one page of up to 100), newest first. */
async function listedIds(svc: TestService, query = '', auth: Auth = 'sandbox'): Promise<string[]> {
  return (await getJson(svc, `/webhooks/events?limit=100${query}`, auth)).data.map((e: any) => e.id);
}

/** A 404 naming the id, as for an id that never existed. */
async function assertPruned(svc: TestService, id: string, auth: Auth = 'sandbox'): Promise<void> {
  const read = await svc.request('GET', `/webhooks/events/${id}`, { auth });
  const body = assertError(read, 404, 'NOT_FOUND', ['id']);
  assert.match(body.message, new RegExp(id));
  assertError(await svc.request('POST', `/webhooks/events/${id}/redeliver`, { auth }), 404, 'NOT_FOUND', ['id']);
}

describe('webhook event retention', () => {
  let svc: TestService;
  let up: Receiver;
  let failing: Receiver;
  const clock = new ManualClock();
  before(async () => {
    svc = await startTestService({ clock });
    up = await startReceiver(() => 200);
    failing = await startReceiver(() => 200);
  });
  after(async () => {
    await svc.stop();
    await up.close();
    await failing.close();
  });

  it('prunes a settled event 30 days after it settled: GET is a 404, lists skip it, cursors page on; retrying events stay', async () => {
    const envId = sandboxEnvId(svc, svc.credentials.platformId);
    const events = svc.service.services.world.webhookEvents;
    assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: up.url } }), 200);
    const alice = await fundedCustomer(svc, 0);
    for (let i = 0; i < 3; i++) await fund(svc, alice.usd.id, 1);
    await until(svc, () => events.pendingIn(envId) === 0, 'the fundings delivered');
    const old = (await listedIds(svc)).reverse();
    assert.equal(old.length, 6, 'INCOMING_PAYMENT and ACCOUNT_STATUS per funding');
    const settled = clock.now();

    // Another environment whose receiver stops answering: one of its delivered events is
    // redelivered and retries from then on, and its new events wait behind it, PENDING.
    const other = await createPlatform(svc.service.services);
    const auth: Auth = { header: basicHeader(other.sandbox.tokenId, other.sandbox.clientSecret) };
    const otherEnv = sandboxEnvId(svc, other.platformId);
    assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: failing.url }, auth }), 200);
    const bob = await createCustomer(svc, {}, auth);
    const bobUsd = await accountIn(svc, bob.id, 'USD', auth);
    await fund(svc, bobUsd.id, 1, auth);
    await until(svc, () => events.pendingIn(otherEnv) === 0, 'the other environment delivered');
    const [redelivered, deliveredOnce] = (await listedIds(svc, '', auth)) as [string, string];
    failing.answer = () => 503;
    await advance(svc, clock, DAY);
    assert.equal((await svc.request('POST', `/webhooks/events/${redelivered}/redeliver`, { auth })).body.deliveryStatus, 'PENDING');
    await fund(svc, bobUsd.id, 1, auth);
    await until(svc, () => events.get(redelivered)!.attempts.length === 2, 'the redelivered event tried again, and refused');
    const retrying = await listedIds(svc, '&deliveryStatus=PENDING', auth);
    assert.equal(retrying.length, 3);
    assert.ok(retrying.includes(redelivered));

    // Day 15: an old event is redelivered (it settles again) and a new funding is delivered.
    await advance(svc, clock, 14 * DAY);
    assertStatus(await svc.request('POST', `/webhooks/events/${old[2]}/redeliver`), 200);
    await fund(svc, alice.usd.id, 1);
    await until(svc, () => events.pendingIn(envId) === 0, 'the day-15 events delivered');
    const fresh = (await listedIds(svc)).slice(0, 2);
    const page = await getJson(svc, '/webhooks/events?limit=3');
    assert.deepEqual(page.data.map((e: any) => e.id), [...fresh, old[5]]);
    const deliveredPage = await getJson(svc, '/webhooks/events?deliveryStatus=DELIVERED&limit=3');
    assert.deepEqual(deliveredPage.data.map((e: any) => e.id), [...fresh, old[5]]);

    // A minute short of 30 days after they settled, all are kept.
    await advance(svc, clock, settled + RETENTION - MINUTE - clock.now());
    assert.equal((await getJson(svc, `/webhooks/events/${old[5]}`)).deliveryStatus, 'DELIVERED');
    assert.equal((await listedIds(svc)).length, 8);

    // 30 days after: the five that settled on day 0 are gone; the redelivered one settled on day 15.
    await advance(svc, clock, MINUTE);
    await until(svc, () => events.get(old[5]!) === undefined, 'the pruning');
    for (const id of old.filter((id) => id !== old[2])) await assertPruned(svc, id!);
    assert.deepEqual(await listedIds(svc), [...fresh, old[2]]);
    assert.equal((await getJson(svc, '/webhooks/events')).totalCount, 3);
    assert.equal((await getJson(svc, '/webhooks/events?deliveryStatus=DELIVERED')).totalCount, 3);
    // The cursors stood on old[5], pruned since: the next page is what is older than it and kept.
    const next = await getJson(svc, `/webhooks/events?limit=3&cursor=${page.nextCursor}`);
    assert.deepEqual({ ids: next.data.map((e: any) => e.id), hasMore: next.hasMore, totalCount: next.totalCount }, { ids: [old[2]], hasMore: false, totalCount: 3 });
    const nextDelivered = await getJson(svc, `/webhooks/events?deliveryStatus=DELIVERED&limit=3&cursor=${deliveredPage.nextCursor}`);
    assert.deepEqual(nextDelivered.data.map((e: any) => e.id), [old[2]]);

    // The other environment's event delivered on day 0 is gone too; its retrying ones,
    // the redelivered one among them (it settled on day 0 before), are all there, PENDING.
    await assertPruned(svc, deliveredOnce, auth);
    assert.deepEqual(await listedIds(svc, '', auth), retrying);
    for (const id of retrying) assert.equal((await getJson(svc, `/webhooks/events/${id}`, auth)).deliveryStatus, 'PENDING');
  });
});

describe('webhook event retention across a restart', () => {
  for (const from of ['the log', 'a snapshot'] as const) {
    it(`keeps the pruned pruned and the kept kept, and goes on pruning, when recovered from ${from}`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'svc-webhook-retention-'));
      const receiver = await startReceiver(() => 200);
      try {
        const clock = new ManualClock();
        const first = await startTestService({ clock, dataDir, snapshotEverySeconds: NO_TIMED_SNAPSHOTS });
        const events = first.service.services.world.webhookEvents;
        const envId = sandboxEnvId(first, first.credentials.platformId);
        assertStatus(await first.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url } }), 200);
        const alice = await fundedCustomer(first, 0);
        await fund(first, alice.usd.id, 1);
        await until(first, () => events.pendingIn(envId) === 0, 'the first funding delivered');
        const pruned = await listedIds(first);
        await advance(first, clock, 15 * DAY);
        await fund(first, alice.usd.id, 1);
        await until(first, () => events.pendingIn(envId) === 0, 'the second funding delivered');
        const kept = (await listedIds(first)).slice(0, 2);
        // The snapshot holds all four: recovered from the log, the pruning is replayed over it.
        await first.service.services.engine.snapshot();
        // A minute past the first funding's retention.
        await advance(first, clock, RETENTION - 15 * DAY + MINUTE);
        await until(first, () => events.get(pruned[0]!) === undefined, 'the pruning');
        assert.deepEqual(await listedIds(first), kept);
        const engine = first.service.services.engine;
        if (from === 'a snapshot') {
          await engine.snapshot();
          assert.equal(engine.snapshotSeq, engine.lastSeq, 'the pruning is in the snapshot');
        } else {
          assert.ok(engine.snapshotSeq < engine.lastSeq, 'the pruning is in the log after the snapshot');
        }
        await first.stop({ keepData: true });

        const againClock = new ManualClock(clock.now());
        const again = await startTestService({ clock: againClock, dataDir, snapshotEverySeconds: NO_TIMED_SNAPSHOTS });
        try {
          for (const id of pruned) await assertPruned(again, id);
          assert.deepEqual(await listedIds(again), kept);
          for (const id of kept) assert.equal((await getJson(again, `/webhooks/events/${id}`)).deliveryStatus, 'DELIVERED');
          // The kept ones settled on day 15: 30 days after that, the restarted service prunes them.
          await advance(again, againClock, 15 * DAY - 2 * MINUTE); // a minute short of day 15 + RETENTION
          assert.deepEqual(await listedIds(again), kept);
          await advance(again, againClock, MINUTE);
          await until(again, () => again.service.services.world.webhookEvents.get(kept[0]!) === undefined, 'the second pruning');
          for (const id of kept) await assertPruned(again, id);
          assert.equal((await getJson(again, '/webhooks/events')).totalCount, 0);
        } finally {
          await again.stop({ keepData: true });
        }
      } finally {
        await receiver.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  }
});

describe('webhook event retention without any endpoint', () => {
  // No environment has an endpoint, so new events wake no delivery (src/webhooks/delivery.ts
  // takes its short way for them); the backlog's bound still drops the oldest, and the
  // events it drops still settle and are pruned when their time comes.
  const LIMIT = 3;
  const clock = new ManualClock();
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ clock, maxPendingWebhooks: LIMIT });
  });
  after(async () => {
    await svc.stop();
  });

  it('prunes the events a full backlog dropped 30 days after they were dropped', async () => {
    const envId = sandboxEnvId(svc, svc.credentials.platformId);
    const events = svc.service.services.world.webhookEvents;
    const customer = await createCustomer(svc, {});
    const usd = (await getJson(svc, `/customers/internal-accounts?customerId=${encodeURIComponent(customer.id)}&limit=100`)).data.find((a: any) => a.balance.currency.code === 'USD');
    for (let i = 0; i < 3; i++) await fund(svc, usd.id, 1);
    await until(svc, () => events.pendingIn(envId) === LIMIT, 'the backlog trimmed');
    const dropped = await listedIds(svc, '&deliveryStatus=FAILED');
    assert.equal(dropped.length, 3, 'each funding made two events; the oldest three were dropped');
    await advance(svc, clock, RETENTION - MINUTE);
    assert.deepEqual(await listedIds(svc, '&deliveryStatus=FAILED'), dropped, 'kept until their time');
    await advance(svc, clock, 2 * MINUTE);
    for (const id of dropped) await assertPruned(svc, id);
    assert.equal((await getJson(svc, '/webhooks/events?limit=100')).totalCount, LIMIT, 'the pending ones stay');
  });
});
