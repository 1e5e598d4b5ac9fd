// Webhook delivery (CONTRACT.md "Webhooks") to a real HTTP receiver on loopback: signed
// bodies that verify with the published key, creation order per endpoint across retries,
// 1 s doubling backoff and FAILED after 10 tries, redelivery, endpoints independent of
// each other, POST /webhooks/test, and an event's bytes the same on every delivery. Time
// moves through the ManualClock.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../src/engine/clock.js';
import { SHORT_OUTCOME_MS } from '../actors/transaction.js';
import { verifyWebhookSignature } from '../src/crypto/index.js';
import { basicHeader, startTestService, type TestService } from './support/service.js';
import { createPlatform } from '../src/platforms.js';
import { assertError, assertInvalid, assertStatus, createCustomer, customerAccounts, type Auth } from './support/assertions.js';
import { createQuote, externalUsd, fundedCustomer, getJson, quoteBody, until } from './support/money.js';
import { assertSigned, startReceiver, type Received, type Receiver } from './support/webhook-receiver.js';
import { quiet } from './support/webhook-queue.js';

async function setEndpoint(svc: TestService, url: string, auth: Auth = 'sandbox'): Promise<any> {
  const res = await svc.request('PATCH', '/config', { body: { webhookEndpoint: url }, auth });
  assertStatus(res, 200);
  return res.body;
}

/**
 * A transfer between two fresh customers: six events (the funding's INCOMING_PAYMENT and
 * ACCOUNT_STATUS, then OUTGOING_PAYMENT, INCOMING_PAYMENT and the two balances).
 */
async function transfer(svc: TestService, amount = 100): Promise<void> {
  const alice = await fundedCustomer(svc, amount);
  const bob = await fundedCustomer(svc, 0);
  await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, amount, { immediatelyExecute: true }));
}
const PER_TRANSFER = 6;

/** Event ids of the sandbox environment, oldest first. */
function eventIds(svc: TestService): string[] {
  const world = svc.service.services.world;
  const envId = [...world.envs.records.keys()].find((id) => id.endsWith('#sandbox'))!;
  return [...world.webhookEvents.idsIn(envId)];
}

function statusOf(svc: TestService, id: string): string {
  return svc.service.services.world.webhookEvents.get(id)!.deliveryStatus;
}

describe('webhook delivery', () => {
  let svc: TestService;
  let clock: ManualClock;
  let receiver: Receiver;
  before(async () => {
    clock = new ManualClock();
    svc = await startTestService({ clock });
    receiver = await startReceiver();
  });
  after(async () => {
    await svc.stop();
    await receiver.close();
  });

  it('publishes the key as hex and PEM; every body is signed over its exact bytes', async () => {
    const config = await setEndpoint(svc, receiver.url);
    assert.match(config.webhookPublicKeyPem, /^-----BEGIN PUBLIC KEY-----\n[A-Za-z0-9+/=\n]+-----END PUBLIC KEY-----\n$/);
    const jwk = createPublicKey(config.webhookPublicKeyPem).export({ format: 'jwk' });
    const sec1 = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, 'base64url'), Buffer.from(jwk.y!, 'base64url')]).toString('hex');
    assert.equal(sec1, config.webhookPublicKey, 'the PEM and the hex name one key');
    await transfer(svc);
    await receiver.waitFor(PER_TRANSFER);
    const ids = eventIds(svc);
    assert.deepEqual(receiver.received.map((r) => r.json.id), ids);
    for (const request of receiver.received) {
      assertSigned(request, config.webhookPublicKeyPem);
      assert.ok(verifyWebhookSignature(request.body, request.signature, config.webhookPublicKey));
      assert.ok(!verifyWebhookSignature(request.body + ' ', request.signature, config.webhookPublicKey), 'a changed body does not verify');
      const event = await getJson(svc, `/webhooks/events/${request.json.id}`);
      const { deliveryStatus: _status, attempts: _attempts, ...body } = event;
      assert.deepEqual(request.json, body, 'the body is the event without its delivery state');
    }
    await until(svc, () => ids.every((id) => statusOf(svc, id) === 'DELIVERED'));
    const delivered = await getJson(svc, `/webhooks/events/${ids[0]}`);
    assert.equal(delivered.deliveryStatus, 'DELIVERED');
    assert.equal(delivered.attempts.length, 1);
    assert.equal(delivered.attempts[0].statusCode, 200);
    assert.equal(delivered.attempts[0].at, new Date(clock.now()).toISOString());
    assert.ok(Number.isInteger(delivered.attempts[0].ms) && delivered.attempts[0].ms >= 0);
    assert.equal((await getJson(svc, '/webhooks/events?deliveryStatus=DELIVERED')).totalCount, PER_TRANSFER);
    assert.equal((await getJson(svc, '/webhooks/events?deliveryStatus=DELIVERED&type=OUTGOING_PAYMENT')).totalCount, 1);
  });

  it('a receiver that fails five times then recovers gets every event once more, in creation order', async () => {
    receiver.received.length = 0;
    const before = eventIds(svc).length;
    receiver.answer = (_json, n) => (n < 5 ? 500 : 200);
    await transfer(svc);
    await transfer(svc);
    const fresh = eventIds(svc).slice(before);
    assert.equal(fresh.length, 2 * PER_TRANSFER);
    // Tries 1 to 5 fail with 500 (an answer, so the endpoint stays UP and the event's own
    // schedule applies); each waits 1 s, 2 s, 4 s, 8 s, 16 s, counted from the end of the try.
    for (let n = 1; n <= 5; n++) {
      await receiver.waitFor(n);
      await quiet(svc);
      const waiting = await getJson(svc, `/webhooks/events/${fresh[0]}`);
      assert.equal(waiting.deliveryStatus, 'PENDING');
      assert.deepEqual(waiting.attempts.map((a: any) => a.statusCode), Array(n).fill(500));
      const last = waiting.attempts.at(-1);
      const due = Date.parse(last.at) + last.ms + 1000 * 2 ** (n - 1);
      assert.equal((await getJson(svc, '/webhooks/events?limit=1')).endpoint.nextAttemptAt, new Date(due).toISOString());
      clock.advance(due - 1 - clock.now());
      // A try that went early would be under way now: let it reach the receiver and the log.
      await quiet(svc);
      assert.equal(receiver.received.length, n, `nothing is sent before retry ${n} is due, the later events neither`);
      clock.advance(1);
      await receiver.waitFor(n + 1);
      assert.equal(receiver.received[n]!.json.id, fresh[0], `retry ${n} goes at its due time, the failing event first`);
    }
    await receiver.waitFor(5 + 2 * PER_TRANSFER);
    assert.deepEqual(receiver.received.map((r) => r.json.id), [...Array(5).fill(fresh[0]), ...fresh]);
    await until(svc, () => fresh.every((id) => statusOf(svc, id) === 'DELIVERED'));
    const first = await getJson(svc, `/webhooks/events/${fresh[0]}`);
    assert.deepEqual(first.attempts.map((a: any) => a.statusCode), [500, 500, 500, 500, 500, 200]);
  });

  it('after 10 failed tries the event is FAILED and the next one goes; redeliver queues it again', async () => {
    receiver.received.length = 0;
    const before = eventIds(svc).length;
    receiver.answer = (json) => (json.type === 'OUTGOING_PAYMENT' ? 500 : 200);
    await transfer(svc);
    const fresh = eventIds(svc).slice(before);
    const typeOf = (id: string): string => svc.service.services.world.webhookEvents.get(id)!.type;
    const outgoing = fresh.find((id) => typeOf(id) === 'OUTGOING_PAYMENT')!;
    // The transfer's INCOMING_PAYMENT, not the funding's (which comes before the outgoing one).
    const incoming = fresh.slice(fresh.indexOf(outgoing)).find((id) => typeOf(id) === 'INCOMING_PAYMENT')!;
    // The funding's two events go first; then ten tries of the outgoing event.
    for (let n = 1; n <= 10; n++) {
      await receiver.waitFor(2 + n);
      await until(svc, () => svc.service.services.world.webhookEvents.get(outgoing)!.attempts.length === n);
      if (n < 10) clock.advance(1000 * 2 ** (n - 1) + 1000);
    }
    await receiver.waitFor(PER_TRANSFER + 9);
    await until(svc, () => fresh.every((id) => id === outgoing || statusOf(svc, id) === 'DELIVERED'));
    assert.deepEqual(
      receiver.received.map((r) => r.json.id),
      [fresh[0], fresh[1], ...Array(10).fill(outgoing), ...fresh.slice(3)],
      'the later events wait for the failing one, then go in order',
    );
    const failed = await getJson(svc, `/webhooks/events/${outgoing}`);
    assert.equal(failed.deliveryStatus, 'FAILED');
    assert.equal(failed.attempts.length, 10);
    assert.deepEqual((await getJson(svc, '/webhooks/events?deliveryStatus=FAILED')).data.map((e: any) => e.id), [outgoing]);

    receiver.answer = () => 200;
    const res = await svc.request('POST', `/webhooks/events/${outgoing}/redeliver`);
    assertStatus(res, 200);
    assert.equal(res.body.deliveryStatus, 'PENDING');
    await receiver.waitFor(PER_TRANSFER + 10);
    await until(svc, () => statusOf(svc, outgoing) === 'DELIVERED');
    assert.equal(receiver.received.at(-1)!.json.id, outgoing);
    assert.equal((await getJson(svc, `/webhooks/events/${outgoing}`)).attempts.length, 11);
    // Redeliver of a delivered event sends it once more.
    const again = await svc.request('POST', `/webhooks/events/${incoming}/redeliver`);
    assertStatus(again, 200);
    await receiver.waitFor(PER_TRANSFER + 11);
    assert.equal(receiver.received.at(-1)!.json.id, incoming);
    assertError(await svc.request('POST', `/webhooks/events/${incoming}/redeliver`, { auth: 'production' }), 404, 'NOT_FOUND');
  });

  it("an endpoint that never answers holds back only its own platform's events", async () => {
    const stuck = await startReceiver(() => 'hang');
    try {
      const other = await createPlatform(svc.service.services);
      const otherAuth: Auth = { header: basicHeader(other.sandbox.tokenId, other.sandbox.clientSecret) };
      await setEndpoint(svc, stuck.url, otherAuth);
      const otherCustomer = await createCustomer(svc, {}, otherAuth);
      const otherUsd = (await customerAccounts(svc, otherCustomer.id, otherAuth)).find((a) => a.balance.currency.code === 'USD');
      assertStatus(await svc.request('POST', `/sandbox/internal-accounts/${otherUsd.id}/fund`, { body: { amount: 500 }, auth: otherAuth }), 200);
      const otherPeer = await createCustomer(svc, {}, otherAuth);
      const peerUsd = (await customerAccounts(svc, otherPeer.id, otherAuth)).find((a) => a.balance.currency.code === 'USD');
      const quote = await svc.request('POST', '/quotes', { body: quoteBody(otherUsd.id, peerUsd.id, 100, { immediatelyExecute: true }), auth: otherAuth });
      assertStatus(quote, 201);
      await stuck.waitFor(1); // its first event is in flight and stays so
      receiver.received.length = 0;
      await transfer(svc);
      await transfer(svc);
      await receiver.waitFor(2 * PER_TRANSFER);
      await until(svc, () => eventIds(svc).every((id) => statusOf(svc, id) !== 'PENDING'));
      const health = await svc.request('GET', '/healthz', { auth: svc.operator() });
      assert.equal(health.body.webhooks.inFlight, 1, 'only the stuck request is in flight');
      assert.ok(health.body.webhooks.pending >= 2, "the other platform's two events wait");
      assert.equal(health.body.webhooks.maxConnections, 32);
      assert.equal(stuck.received.length, 1, 'one in flight per endpoint');
    } finally {
      await stuck.close();
    }
  });

  it('POST /webhooks/test sends a signed TEST event to the url or the configured endpoint', async () => {
    const config = await getJson(svc, '/config');
    const other = await startReceiver((_json, n) => (n === 0 ? 200 : 418));
    try {
      const res = await svc.request('POST', '/webhooks/test', { body: { url: other.url } });
      assertStatus(res, 200);
      assert.deepEqual(res.body, { url: other.url, delivered: true, statusCode: 200 });
      assert.equal(other.received[0]!.json.type, 'TEST');
      assertSigned(other.received[0]!, config.webhookPublicKeyPem);
      const refused = await svc.request('POST', '/webhooks/test', { body: { url: other.url } });
      assert.deepEqual(refused.body, { url: other.url, delivered: false, statusCode: 418 });
    } finally {
      await other.close();
    }
    const before = receiver.received.length;
    const res = await svc.request('POST', '/webhooks/test', { body: {} });
    assert.deepEqual(res.body, { url: receiver.url, delivered: true, statusCode: 200 });
    assert.equal(receiver.received[before]!.json.type, 'TEST');
    assertInvalid(await svc.request('POST', '/webhooks/test', { body: { url: 'ftp://example.com/x' } }), 'url');
    assertInvalid(await svc.request('POST', '/webhooks/test', { body: {}, auth: 'production' }), 'url');
  });
});

// An event says what its record was when it was made: its body is rendered from that record
// on every delivery and listing, so a redelivery after the record changed, and after a
// restart that rebuilt the record from the log's facts, sends the bytes the first delivery
// sent, and the signature covers them.
describe('a webhook event delivered again', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'webhook-again-'));
  const clock = new ManualClock(Date.UTC(2026, 6, 1));
  let svc: TestService | undefined;
  let receiver: Receiver;
  before(async () => {
    receiver = await startReceiver();
  });
  after(async () => {
    await svc?.stop();
    await receiver.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('sends the bytes of its first delivery, signed, after its transaction changed and after a restart', async () => {
    svc = await startTestService({ clock, dataDir });
    const { webhookPublicKey } = await setEndpoint(svc, receiver.url);
    const { customer, usd } = await fundedCustomer(svc, 5_000);
    const bank = await externalUsd(svc, customer.id, '004');
    const held = await svc.request('POST', '/transfer-out', { body: { source: { accountId: usd.id }, destination: { accountId: bank.id }, amount: 2_000 } });
    assertStatus(held, 201);
    const txId: string = held.body.id;
    const reportsTx = (status: string) => (r: Received) => r.json.type === 'OUTGOING_PAYMENT' && r.json.transaction.id === txId && r.json.transaction.status === status;
    await until(svc, () => receiver.received.some(reportsTx('PROCESSING')), 'the transfer delivered');
    const first = receiver.received.find(reportsTx('PROCESSING'))!;
    // The sandbox bank refuses it and the money comes back: the transaction is REJECTED, then REFUNDED.
    clock.advance(SHORT_OUTCOME_MS + 1);
    await until(svc, () => receiver.received.some(reportsTx('REFUNDED')), 'the refund delivered');
    const again = async (): Promise<Received> => {
      const count = receiver.received.length;
      assertStatus(await svc!.request('POST', `/webhooks/events/${first.json.id}/redeliver`), 200);
      const redelivered = () => receiver.received.slice(count).find((r) => r.json.id === first.json.id);
      await until(svc!, () => redelivered() !== undefined, 'the redelivery');
      return redelivered()!;
    };
    const sameAsFirst = async (delivery: Received, when: string): Promise<void> => {
      assert.equal(delivery.json.id, first.json.id);
      assert.equal(delivery.body, first.body, `the bytes ${when}`);
      assert.ok(verifyWebhookSignature(first.body, delivery.signature, webhookPublicKey), `its signature covers the first delivery's bytes ${when}`);
      const { deliveryStatus: _status, attempts: _attempts, ...listed } = await getJson(svc!, `/webhooks/events/${first.json.id}`);
      assert.equal(JSON.stringify(listed), first.body, `the listing ${when}`);
    };
    await sameAsFirst(await again(), 'after the transaction changed');
    await svc.stop({ keepData: true });
    clock.advance(60_000);
    svc = await startTestService({ clock, dataDir });
    await sameAsFirst(await again(), 'after a restart');
  });
});
