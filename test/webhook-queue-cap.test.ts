// The per-environment cap on PENDING webhook events (ServiceConfig.maxPendingWebhooks,
// set small here through the service option): a request whose decision would take the
// environment's queue past it is 429 RATE_LIMITED with Retry-After, and nothing moves;
// other environments are not affected; once the endpoint takes the events, it is accepted.
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
  before(async () => {
    svc = await startTestService({ clock: new ManualClock(), maxPendingWebhooks: LIMIT });
    receiver = await startReceiver();
  });
  after(async () => {
    await svc.stop();
    await receiver.close();
  });

  const pending = async (auth: Auth = 'sandbox'): Promise<number> => (await getJson(svc, '/webhooks/events?deliveryStatus=PENDING', auth)).totalCount;

  it('refuses with 429 RATE_LIMITED and Retry-After what would pass the limit, and moves nothing', async () => {
    // No endpoint is set: every event stays PENDING.
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

    // Once the endpoint has taken the events, the same request is accepted.
    assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url } }), 200);
    await receiver.waitFor(4);
    const world = svc.service.services.world;
    const envId = [...world.envs.records.keys()].find((id) => id.startsWith(svc.credentials.platformId) && id.endsWith('#sandbox'))!;
    await until(svc, () => world.webhookEvents.pendingIn(envId) === 0);
    const quote = await svc.request('POST', '/quotes', { body: quoteBody(alice.usd.id, bob.usd.id, 100, { immediatelyExecute: true }) });
    assertStatus(quote, 201);
    assert.equal(await balanceOf(svc, bob.usd.id), 100);
  });
});
