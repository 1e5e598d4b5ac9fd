// A dead webhook receiver never blocks money (CONTRACT.md "Webhooks", issue 21): while the
// endpoint does not answer, every write is accepted; after ENDPOINT_DOWN_AFTER unanswered
// tries the endpoint is DOWN and only the queue's head is probed, on the endpoint's own
// backoff (5 s doubling, at most 5 min), without spending the event's tries; when it
// answers again the backlog goes out in creation order. Past MAX_PENDING_WEBHOOKS the
// oldest events are FAILED as dropped, listed and redeliverable; an approval is never
// dropped. Time moves through the ManualClock; the receiver is real, on loopback.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../src/engine/clock.js';
import { createPlatform } from '../src/platforms.js';
import { ENDPOINT_DOWN_AFTER, MAX_PROBE_DELAY_MS } from '../actors/webhook-event.js';
import { basicHeader, startTestService, type TestService } from './support/service.js';
import { assertStatus, createCustomer, customerAccounts, type Auth } from './support/assertions.js';
import { accountIn, balanceOf, fund, fundedCustomer, getJson, until } from './support/money.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';
import { pass, quiet } from './support/webhook-queue.js';

const MINUTE = 60_000;

function sandboxEnvId(svc: TestService, platformId: string): string {
  return [...svc.service.services.world.envs.records.keys()].find((id) => id.startsWith(platformId) && id.endsWith('#sandbox'))!;
}

describe('a dead webhook receiver', () => {
  let svc: TestService;
  let receiver: Receiver;
  let envId: string;
  const clock = new ManualClock();
  before(async () => {
    svc = await startTestService({ clock });
    receiver = await startReceiver(() => 503);
    envId = sandboxEnvId(svc, svc.credentials.platformId);
  });
  after(async () => {
    await svc.stop();
    await receiver.close();
  });

  it('is down for two simulated hours under sustained funding: no write refused, probes on its own backoff, then the backlog in order', async () => {
    assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url } }), 200);
    const alice = await fundedCustomer(svc, 0);
        let funded = 0;
    // A funding a simulated minute for two hours; every one accepted.
    for (let minute = 0; minute < 120; minute++) {
      const res = await svc.request('POST', `/sandbox/internal-accounts/${alice.usd.id}/fund`, { body: { amount: 1 } });
      assertStatus(res, 200);
      funded++;
      await pass(svc, clock, envId, MINUTE);
    }
    assert.equal(await balanceOf(svc, alice.usd.id), funded);
    const events = svc.service.services.world.webhookEvents;
    const all = [...events.idsIn(envId)];
    assert.equal(all.length, 2 * funded, 'INCOMING_PAYMENT and ACCOUNT_STATUS per funding');
    assert.equal(events.pendingIn(envId), all.length, 'nothing FAILED, nothing delivered');

    // Only the head was tried: three retries, then probes 5 s, 10 s ... capped at 5 min.
    const tried = new Set(receiver.received.map((r) => r.json.id));
    assert.deepEqual([...tried], [all[0]]);
    const head = await getJson(svc, `/webhooks/events/${all[0]}`);
    const at: number[] = head.attempts.map((a: any) => Date.parse(a.at));
    // The wait after each try, from the end of that try (its `ms`).
    const waits = at.slice(1).map((t, i) => t - at[i]! - head.attempts[i].ms);
    const probes = [5_000, 10_000, 20_000, 40_000, 80_000, 160_000];
    const expected = [1_000, 2_000, ...probes, ...Array(waits.length - 2 - probes.length).fill(MAX_PROBE_DELAY_MS)];
    assert.deepEqual(waits, expected, 'two retries, then probes 5 s doubling, at most 5 min');
    assert.ok(receiver.received.length <= 32, `${receiver.received.length} tries in two hours, not one per event`);
    assert.equal(head.deliveryStatus, 'PENDING');
    assert.equal(svc.service.services.world.webhookEvents.get(all[0]!)!.tries, ENDPOINT_DOWN_AFTER, 'probes do not spend the tries');

    const down = {
      state: 'DOWN',
      downSince: new Date(at[ENDPOINT_DOWN_AFTER - 1]!).toISOString(),
      nextAttemptAt: new Date(at.at(-1)! + head.attempts.at(-1).ms + MAX_PROBE_DELAY_MS).toISOString(),
      unansweredTries: receiver.received.length,
    };
    // Unauthenticated, /healthz names no tenant; the operator key shows which endpoint is down.
    const open = await svc.request('GET', '/healthz', { auth: 'none' });
    assert.ok(!open.text.includes(envId), `/healthz without credentials names ${envId}: ${open.text}`);
    const health = (await svc.request('GET', '/healthz', { auth: svc.operator() })).body as any;
    assert.equal(health.webhooks.endpointsDown, 1);
    assert.deepEqual(health.webhooks.down, [{ environmentId: envId, ...down }]);
    assert.deepEqual((await getJson(svc, '/webhooks/events?limit=1')).endpoint, down);

    // It answers again: at the next probe the whole backlog goes, oldest first.
    receiver.answer = () => 200;
    const before = receiver.received.length;
    await pass(svc, clock, envId, MAX_PROBE_DELAY_MS);
    await until(svc, () => events.pendingIn(envId) === 0, 'the backlog delivered');
    await quiet(svc);
    assert.deepEqual(receiver.received.slice(before).map((r) => r.json.id), all, 'every event once more, in creation order');
    const up = await getJson(svc, '/webhooks/events?limit=1');
    assert.deepEqual(up.endpoint, { state: 'UP', unansweredTries: 0 });
    assert.equal(((await svc.request('GET', '/healthz', { auth: svc.operator() })).body as any).webhooks.endpointsDown, 0);
  });

  it('an endpoint that answers but refuses one event spends that event\'s tries and stays UP', async () => {
    receiver.received.length = 0;
    // The first event it is sent is the one it refuses.
    let poison: string | undefined;
    receiver.answer = (json) => ((poison ??= json.id) === json.id ? 500 : 200);
    const bob = await fundedCustomer(svc, 0);
    const events = svc.service.services.world.webhookEvents;
    const before = events.idsIn(envId).length;
    await fund(svc, bob.usd.id, 5);
    const fresh = events.idsIn(envId).slice(before);
    await quiet(svc);
    assert.equal(poison, fresh[0]);
    await pass(svc, clock, envId, 2 ** 10 * 1_000);
    await until(svc, () => events.pendingIn(envId) === 0);
    assert.equal(events.get(fresh[0]!)!.deliveryStatus, 'FAILED');
    assert.equal(events.get(fresh[0]!)!.attempts.length, 10);
    assert.equal(events.get(fresh[1]!)!.deliveryStatus, 'DELIVERED');
    assert.deepEqual((await getJson(svc, '/webhooks/events?limit=1')).endpoint, { state: 'UP', unansweredTries: 0 });
  });
});

describe('a down endpoint across a restart', () => {
  for (const from of ['the log', 'a snapshot'] as const) {
    it(`is still DOWN, with the same next probe, when recovered from ${from}`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'svc-webhook-down-'));
      const receiver = await startReceiver(() => 503);
      try {
        const clock = new ManualClock();
        const first = await startTestService({ clock, dataDir });
        const envId = sandboxEnvId(first, first.credentials.platformId);
        assertStatus(await first.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url } }), 200);
        const alice = await fundedCustomer(first, 0);
        await fund(first, alice.usd.id, 1);
        await pass(first, clock, envId, 60_000);
        if (from === 'a snapshot') await first.service.services.engine.snapshot();
        const before = (await getJson(first, '/webhooks/events?limit=1')).endpoint;
        assert.equal(before.state, 'DOWN');
        const tries = receiver.received.length;
        await first.stop({ keepData: true });

        const again = await startTestService({ clock: new ManualClock(clock.now()), dataDir });
        try {
          assert.deepEqual((await getJson(again, '/webhooks/events?limit=1')).endpoint, before);
          assert.equal(receiver.received.length, tries, 'nothing is sent before the probe is due');
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

describe('a full webhook backlog', () => {
  const LIMIT = 5;
  let svc: TestService;
  let receiver: Receiver;
  const clock = new ManualClock();
  before(async () => {
    svc = await startTestService({ clock, maxPendingWebhooks: LIMIT });
    receiver = await startReceiver(() => 503);
  });
  after(async () => {
    await svc.stop();
    await receiver.close();
  });

  it('FAILS its oldest events as dropped instead of refusing writes; they stay listed and redeliverable', async () => {
    const envId = sandboxEnvId(svc, svc.credentials.platformId);
    assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url } }), 200);
    const alice = await fundedCustomer(svc, 0);
    for (let i = 0; i < 10; i++) await fund(svc, alice.usd.id, 1);
    assert.equal(await balanceOf(svc, alice.usd.id), 10, 'every funding accepted');
    const events = svc.service.services.world.webhookEvents;
    await until(svc, () => events.pendingIn(envId) <= LIMIT, 'the backlog trimmed');
    const all = [...events.idsIn(envId)];
    const pending = await getJson(svc, '/webhooks/events?deliveryStatus=PENDING');
    assert.equal(pending.totalCount, LIMIT);
    const failed = await getJson(svc, '/webhooks/events?deliveryStatus=FAILED&limit=100');
    assert.equal(failed.totalCount, all.length - LIMIT);
    // Oldest first out: the head may have been tried (and probed) before it was dropped.
    assert.deepEqual(failed.data.map((e: any) => e.id).reverse(), all.slice(0, all.length - LIMIT));
    for (const e of failed.data) assert.match(e.failureReason, /^dropped from the backlog: the environment held more than 5 undelivered events$/);
    assert.deepEqual(pending.data.map((e: any) => e.id).reverse(), all.slice(all.length - LIMIT));
    // An operator sees the drops: the events, and the log entries that FAILED them.
    const drops = ((await svc.request('GET', '/healthz', { auth: svc.operator() })).body as any).webhooks.dropped;
    assert.equal(drops.events, all.length - LIMIT);
    assert.ok(drops.entries >= 1 && drops.entries <= drops.events, `${drops.entries} drop entries for ${drops.events} events`);

    // The receiver comes back; the five kept go, then a dropped one is redelivered.
    receiver.answer = () => 200;
    await pass(svc, clock, envId, MAX_PROBE_DELAY_MS);
    await until(svc, () => events.pendingIn(envId) === 0);
    const dropped = failed.data.at(-1).id;
    const res = await svc.request('POST', `/webhooks/events/${dropped}/redeliver`);
    assertStatus(res, 200);
    assert.equal(res.body.deliveryStatus, 'PENDING');
    assert.equal(res.body.failureReason, undefined);
    await until(svc, () => events.get(dropped)!.deliveryStatus === 'DELIVERED');
    assert.equal(receiver.received.at(-1)!.json.id, dropped);
  });

  it('never drops a pending approval: its payment waits for the answer', async () => {
    receiver.answer = () => 503;
    const other = await createPlatform(svc.service.services);
    const auth: Auth = { header: basicHeader(other.sandbox.tokenId, other.sandbox.clientSecret) };
    const envId = sandboxEnvId(svc, other.platformId);
    assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url }, auth }), 200);
    const carol = await createCustomer(svc, {}, auth);
    const usd = await accountIn(svc, carol.id, 'USD', auth);
    // The endpoint goes down on the first event, so the queue waits for its next probe.
    await fund(svc, usd.id, 1, auth);
    await pass(svc, clock, envId, 4_000);
    assert.equal((await getJson(svc, '/webhooks/events?limit=1', auth)).endpoint.state, 'DOWN');
    const incoming = await svc.request('POST', '/sandbox/uma/receive', {
      body: { senderUmaAddress: '$alice@sandbox.uma.test', receivingCurrencyCode: 'USD', receivingCurrencyAmount: 700, customerId: carol.id },
      auth,
    });
    assertStatus(incoming, 201);
    assert.equal(incoming.body.status, 'PENDING');
    for (let i = 0; i < 2 * LIMIT; i++) await fund(svc, usd.id, 1, auth);
    const events = svc.service.services.world.webhookEvents;
    await until(svc, () => events.pendingIn(envId) <= LIMIT, 'the backlog trimmed');
    await quiet(svc);
    const approval = [...events.pendingIdsIn(envId)][0]!;
    assert.equal(events.get(approval)!.approval, true, 'the approval is the oldest pending event, kept');
    assert.equal(events.pendingIn(envId), LIMIT, 'the cap counts it: the events after it are kept up to the cap');
    assert.equal((await getJson(svc, `/transactions/${incoming.body.id}`, auth)).status, 'PENDING');

    receiver.answer = () => 200;
    await pass(svc, clock, envId, MAX_PROBE_DELAY_MS);
    await until(svc, () => events.pendingIn(envId) === 0);
    assert.equal((await getJson(svc, `/transactions/${incoming.body.id}`, auth)).status, 'COMPLETED');
    assert.equal(await balanceOf(svc, usd.id, auth), 1 + 2 * LIMIT + 700);
  });

  it('holds its cap without an endpoint too, and refuses no write', async () => {
    const other = await createPlatform(svc.service.services);
    const auth: Auth = { header: basicHeader(other.sandbox.tokenId, other.sandbox.clientSecret) };
    const envId = sandboxEnvId(svc, other.platformId);
    const customer = await createCustomer(svc, {}, auth);
    const usd = (await customerAccounts(svc, customer.id, auth)).find((a) => a.balance.currency.code === 'USD');
    for (let i = 0; i < 2 * LIMIT; i++) await fund(svc, usd.id, 1, auth);
    assert.equal(await balanceOf(svc, usd.id, auth), 2 * LIMIT);
    await until(svc, () => svc.service.services.world.webhookEvents.pendingIn(envId) === LIMIT, 'the backlog trimmed');
    assert.equal((await getJson(svc, '/webhooks/events?deliveryStatus=FAILED', auth)).totalCount, 3 * LIMIT);
  });
});
