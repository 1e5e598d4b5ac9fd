// The per-environment cap on PENDING webhook events (ServiceConfig.maxPendingWebhooks,
// set small here through the service option): a request whose decision would take the
// environment's queue past it is 429 RATE_LIMITED with Retry-After, and nothing moves;
// other environments are not affected; once the endpoint takes the events, it is accepted.
// Without an endpoint nothing is queued for delivery, so nothing is refused.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { createPlatform } from '../src/platforms.js';
import { WEBHOOK_QUEUE_RETRY_AFTER_S } from '../src/http/server.js';
import { basicHeader, startTestService, type TestService } from './support/service.js';
import { assertError, assertStatus, createCustomer, customerAccounts, type Auth } from './support/assertions.js';
import { balanceOf, fund, fundedCustomer, getJson, quoteBody, until } from './support/money.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

const LIMIT = 5;

describe('webhook queue cap', () => {
  let svc: TestService;
  let receiver: Receiver;
  const clock = new ManualClock();
  before(async () => {
    svc = await startTestService({ clock, maxPendingWebhooks: LIMIT });
    // The endpoint is down: every event stays PENDING, waiting for its retry.
    receiver = await startReceiver(() => 503);
  });
  after(async () => {
    await svc.stop();
    await receiver.close();
  });

  const pending = async (auth: Auth = 'sandbox'): Promise<number> => (await getJson(svc, '/webhooks/events?deliveryStatus=PENDING', auth)).totalCount;

  it('refuses with 429 RATE_LIMITED and Retry-After what would pass the limit, and moves nothing', async () => {
    assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url } }), 200);
    const alice = await fundedCustomer(svc, 1_000); // INCOMING_PAYMENT and ACCOUNT_STATUS
    const bob = await fundedCustomer(svc, 0);
    assert.equal(await pending(), 2);

    // A transfer records four events: 2 + 4 would pass 5.
    const refused = await svc.request('POST', '/quotes', { body: quoteBody(alice.usd.id, bob.usd.id, 100, { immediatelyExecute: true }) });
    assertError(refused, 429, 'RATE_LIMITED');
    assert.equal(refused.headers.get('retry-after'), String(WEBHOOK_QUEUE_RETRY_AFTER_S));
    assert.equal(await balanceOf(svc, alice.usd.id), 1_000);
    assert.equal(await balanceOf(svc, bob.usd.id), 0);
    assert.equal(svc.service.services.world.quotes.records.size, 0, 'no quote was made');
    assert.equal((await getJson(svc, `/transactions?customerId=${alice.customer.id}&type=OUTGOING`)).totalCount, 0);
    assert.equal(await pending(), 2);

    // A funding records two: 2 + 2 fits, then 4 + 2 does not.
    await fund(svc, alice.usd.id, 1);
    assert.equal(await pending(), 4);
    const again = await svc.request('POST', `/sandbox/internal-accounts/${alice.usd.id}/fund`, { body: { amount: 1 } });
    assertError(again, 429, 'RATE_LIMITED');
    assert.equal(again.headers.get('retry-after'), String(WEBHOOK_QUEUE_RETRY_AFTER_S));
    assert.equal(await balanceOf(svc, alice.usd.id), 1_001);
    assert.equal((await getJson(svc, `/transactions?customerId=${alice.customer.id}`)).totalCount, 2);
    assert.equal(await pending(), 4);

    // Requests that record no event are not refused.
    await createCustomer(svc);

    // Another environment has its own queue.
    const other = await createPlatform(svc.service.services);
    const otherAuth: Auth = { header: basicHeader(other.sandbox.tokenId, other.sandbox.clientSecret) };
    const otherCustomer = await createCustomer(svc, {}, otherAuth);
    const otherUsd = (await customerAccounts(svc, otherCustomer.id, otherAuth)).find((a) => a.balance.currency.code === 'USD');
    assertStatus(await svc.request('POST', `/sandbox/internal-accounts/${otherUsd.id}/fund`, { body: { amount: 5 }, auth: otherAuth }), 200);

    // Once the endpoint is back and has taken the events, the same request is accepted.
    receiver.answer = () => 200;
    const world = svc.service.services.world;
    const envId = [...world.envs.records.keys()].find((id) => id.startsWith(svc.credentials.platformId) && id.endsWith('#sandbox'))!;
    for (let i = 0; i < 30 && world.webhookEvents.pendingIn(envId) > 0; i++) {
      clock.advance(1_000);
      await until(svc, () => receiver.received.length > 0);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(world.webhookEvents.pendingIn(envId), 0);
    const quote = await svc.request('POST', '/quotes', { body: quoteBody(alice.usd.id, bob.usd.id, 100, { immediatelyExecute: true }) });
    assertStatus(quote, 201);
    assert.equal(await balanceOf(svc, bob.usd.id), 100);
  });

  it('refuses nothing while no endpoint is configured: the events wait, readable', async () => {
    const other = await createPlatform(svc.service.services);
    const auth: Auth = { header: basicHeader(other.sandbox.tokenId, other.sandbox.clientSecret) };
    const customer = await createCustomer(svc, {}, auth);
    const usd = (await customerAccounts(svc, customer.id, auth)).find((a) => a.balance.currency.code === 'USD');
    for (let i = 0; i < LIMIT; i++) {
      assertStatus(await svc.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body: { amount: 1 }, auth }), 200);
    }
    assert.equal(await pending(auth), 2 * LIMIT);
    assert.equal(await balanceOf(svc, usd.id, auth), LIMIT);
  });
});
