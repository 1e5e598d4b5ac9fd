// Webhooks in the data envelope (CONTRACT.md "Today's clients, second wave"): PATCH /config
// webhookFormat ENVELOPE makes later events `{id, type, timestamp, data}`, signed in
// X-Grid-Signature, with the kinds FLAT never had; earlier events keep their format when
// delivered, listed and redelivered, also after a restart; an INCOMING_PAYMENT.PENDING's
// answer approves as in FLAT; POST /sandbox/webhooks/test sends a recorded TEST event. The
// receiver here checks each signature as a platform would: over the exact bytes it got,
// with the environment's webhookPublicKey (uncompressed SEC1 hex). Time moves through the
// ManualClock.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../src/engine/clock.js';
import { startTestService, type TestService } from './support/service.js';
import { assertError, assertInvalid, assertStatus, createCustomer, ID_RE } from './support/assertions.js';
import { createQuote, externalUsd, fundedCustomer, getJson, quoteBody, until } from './support/money.js';
import { startReceiver, type Received, type Receiver } from './support/webhook-receiver.js';
import { assertVendorResponse, assertVendorSchema, assertVendorWebhook } from './support/vendor-contract.js';

/** The platform's side: the key of GET /config's webhookPublicKey (04 || x || y, hex). */
function keyOf(sec1Hex: string): KeyObject {
  const bytes = Buffer.from(sec1Hex, 'hex');
  const coordinate = (from: number) => bytes.subarray(from, from + 32).toString('base64url');
  return createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: coordinate(1), y: coordinate(33) }, format: 'jwk' });
}

/** True when the request's X-Grid-Signature verifies over `bytes` (the body as received, unless a test gives others). */
function gridSigned(request: Received, key: KeyObject, bytes: Buffer = Buffer.from(request.body, 'utf8')): boolean {
  const signature = request.headers['x-grid-signature'];
  return typeof signature === 'string' && verify('sha256', bytes, key, Buffer.from(signature, 'base64'));
}

/** The vendor's webhook (vendor-subset.json `webhooks`) each OBJECT.EVENT type is published under. */
const VENDOR_WEBHOOK: Readonly<Record<string, string>> = {
  OUTGOING_PAYMENT: 'outgoing-payment',
  INCOMING_PAYMENT: 'incoming-payment',
  INTERNAL_ACCOUNT: 'internal-account-status',
  CUSTOMER: 'customer-update',
  EXTERNAL_ACCOUNT: 'external-account-status',
  VERIFICATION: 'verification-update',
  TEST: 'test-webhook',
};

/** An envelope as received: signed over its bytes, without the FLAT header, and what the vendor's clients parse. */
function assertEnvelope(request: Received, key: KeyObject): void {
  const { json } = request;
  assert.deepEqual(Object.keys(json), ['id', 'type', 'timestamp', 'data']);
  assert.match(json.id, ID_RE('Webhook'));
  assert.ok(gridSigned(request, key), `X-Grid-Signature of ${json.type} ${json.id} verifies over the bytes received`);
  assert.equal(request.headers['x-service-signature'], undefined);
  const webhook = VENDOR_WEBHOOK[json.type.split('.')[0]]!;
  if (DATA_AS_TODAY.has(webhook)) {
    // The frame and type are the vendor's; the data is today's GET, which has not caught up with the vendor's schema (docs/api.md).
    assertVendorSchema('BaseWebhook', json);
  } else if (json.data.source?.sourceType === 'SANDBOX_FUNDING') {
    // Sandbox funding names its source SANDBOX_FUNDING, as its GET does: a sandbox-only value the vendor does not list.
    assertVendorWebhook(webhook, { ...json, data: { ...json.data, source: { sourceType: 'REALTIME_FUNDING', currency: json.data.source.currency } } });
  } else assertVendorWebhook(webhook, json);
}

/**
 * The webhooks whose data, the resource as its GET shows it today, differs from the vendor's
 * schema of it (a Transaction's rateDetails, an InternalAccount's balances, an
 * ExternalAccount's accountInfo, a Verification's PENDING): their frame and type are checked.
 */
const DATA_AS_TODAY: ReadonlySet<string> = new Set(['outgoing-payment', 'internal-account-status', 'external-account-status', 'verification-update']);

async function patchConfig(svc: TestService, body: Record<string, unknown>, auth: 'sandbox' | 'production' = 'sandbox'): Promise<any> {
  const res = await svc.request('PATCH', '/config', { body, auth });
  assertStatus(res, 200);
  return res.body;
}

/** The listed event without its delivery state: what its endpoint gets. */
async function listedBody(svc: TestService, id: string): Promise<string> {
  const { deliveryStatus: _status, attempts: _attempts, failureReason: _reason, ...body } = await getJson(svc, `/webhooks/events/${id}`);
  return JSON.stringify(body);
}

describe('webhooks in the data envelope', () => {
  const clock = new ManualClock();
  let svc: TestService;
  let receiver: Receiver;
  let key: KeyObject;
  before(async () => {
    svc = await startTestService({ clock });
    receiver = await startReceiver();
  });
  after(async () => {
    await svc.stop();
    await receiver.close();
  });

  it('FLAT by default; ENVELOPE changes only the events made afterwards, each delivered and listed in its own format', async () => {
    const config = await patchConfig(svc, { webhookEndpoint: receiver.url });
    assert.equal(config.webhookFormat, 'FLAT');
    key = keyOf(config.webhookPublicKey);
    const alice = await fundedCustomer(svc, 1_000);
    const bob = await fundedCustomer(svc, 0);
    await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 400, { immediatelyExecute: true }));
    await receiver.waitFor(6);
    const flat = receiver.received.splice(0);
    assert.deepEqual(flat.map((r) => r.json.type), ['INCOMING_PAYMENT', 'ACCOUNT_STATUS', 'OUTGOING_PAYMENT', 'INCOMING_PAYMENT', 'ACCOUNT_STATUS', 'ACCOUNT_STATUS']);
    for (const r of flat) assert.equal(r.headers['x-grid-signature'], undefined);

    assertInvalid(await svc.request('PATCH', '/config', { body: { webhookFormat: 'XML' } }), 'webhookFormat');
    assert.equal((await getJson(svc, '/config')).webhookFormat, 'FLAT', 'a refused patch changes nothing');
    assert.equal((await patchConfig(svc, { webhookFormat: 'ENVELOPE' })).webhookFormat, 'ENVELOPE');
    assert.equal((await getJson(svc, '/config', 'production')).webhookFormat, 'FLAT', 'the other environment keeps its own');

    const carol = await fundedCustomer(svc, 1_000);
    const dave = await fundedCustomer(svc, 0);
    const quote = await createQuote(svc, quoteBody(carol.usd.id, dave.usd.id, 400, { immediatelyExecute: true }));
    await receiver.waitFor(8);
    const enveloped = receiver.received.splice(0);
    assert.deepEqual(enveloped.map((r) => r.json.type), [
      'CUSTOMER.KYC_APPROVED',
      'INCOMING_PAYMENT.COMPLETED',
      'INTERNAL_ACCOUNT.BALANCE_UPDATED',
      'CUSTOMER.KYC_APPROVED',
      'OUTGOING_PAYMENT.COMPLETED',
      'INCOMING_PAYMENT.COMPLETED',
      'INTERNAL_ACCOUNT.BALANCE_UPDATED',
      'INTERNAL_ACCOUNT.BALANCE_UPDATED',
    ]);
    for (const r of enveloped) {
      assertEnvelope(r, key);
      assert.equal(await listedBody(svc, r.json.id), r.body, 'listed as sent');
    }
    const [carolCreated, , , , outgoing] = enveloped.map((r) => r.json);
    assert.deepEqual(carolCreated.data, await getJson(svc, `/customers/${carol.customer.id}`));
    assert.deepEqual(outgoing.data, await getJson(svc, `/transactions/${quote.transactionId}`));
    assert.deepEqual(enveloped[7]!.json.data, await getJson(svc, `/internal-accounts/${dave.usd.id}`));
    for (const r of flat) assert.equal(await listedBody(svc, r.json.id), r.body, 'an event made in FLAT is still listed FLAT');
    const list = await getJson(svc, '/webhooks/events?limit=100');
    assert.deepEqual(list.data.map((e: any) => e.type.includes('.')), [...Array(8).fill(true), ...Array(6).fill(false)]);
  });

  it('ENVELOPE makes CUSTOMER, EXTERNAL_ACCOUNT and VERIFICATION events; FLAT makes none', async () => {
    const productionBefore = (await getJson(svc, '/webhooks/events', 'production')).totalCount;
    await createCustomer(svc, {}, 'production');
    assert.equal((await getJson(svc, '/webhooks/events', 'production')).totalCount, productionBefore, 'a FLAT environment records no CUSTOMER event');

    const person = await createCustomer(svc, { fullName: 'Zoë Ðurić' });
    const business = await createCustomer(svc, { customerType: 'BUSINESS', businessInfo: { legalName: 'Acme Ltd', registrationNumber: 'REG-000001', country: 'US', taxId: '12-3456789', incorporatedOn: '2020-01-15' } });
    const rejected = await svc.request('PATCH', `/customers/${person.id}`, { body: { customerType: 'INDIVIDUAL', kycStatus: 'REJECTED' } });
    assertStatus(rejected, 200);
    const renamed = await svc.request('PATCH', `/customers/${person.id}`, { body: { customerType: 'INDIVIDUAL', email: 'zoe@example.com' } });
    assertStatus(renamed, 200);
    const bank = await externalUsd(svc, person.id, '123');
    // A business without owners, documents or an address: its verification lists what is missing.
    const verification = await svc.request('POST', '/verifications', { body: { customerId: business.id } });
    assertStatus(verification, 200);
    await receiver.waitFor(5);
    const got = receiver.received.splice(0);
    assert.deepEqual(got.map((r) => r.json.type), [
      'CUSTOMER.KYC_APPROVED',
      'CUSTOMER.KYB_PENDING',
      'CUSTOMER.KYC_REJECTED',
      'EXTERNAL_ACCOUNT.STATUS_UPDATED',
      'VERIFICATION.RESOLVE_ERRORS',
    ], 'an update that moves no status is no event');
    for (const r of got) assertEnvelope(r, key);
    assert.equal(got[2]!.json.data.kycStatus, 'REJECTED');
    assert.deepEqual(got[2]!.json.data, rejected.body, 'the customer as that update left it');
    assert.deepEqual(got[3]!.json.data, bank);
    assert.deepEqual(got[4]!.json.data, verification.body);
  });

  it("an INCOMING_PAYMENT.PENDING's answer approves or rejects the payment as in FLAT", async () => {
    const customer = await createCustomer(svc);
    receiver.answer = (json) => (json.type === 'INCOMING_PAYMENT.PENDING' && json.data.receivedAmount.amount === 777 ? 403 : 200);
    const receive = async (amount: number): Promise<string> => {
      const res = await svc.request('POST', '/sandbox/uma/receive', {
        body: { senderUmaAddress: '$alice@sandbox.uma.test', receivingCurrencyCode: 'USD', receivingCurrencyAmount: amount, receiverUmaAddress: customer.umaAddress },
      });
      assertStatus(res, 201);
      assert.equal(res.body.status, 'PENDING');
      return res.body.id;
    };
    const approved = await receive(555);
    const refused = await receive(777);
    const statusOf = (id: string) => svc.service.services.world.transactions.get(id)!.status;
    await until(svc, () => statusOf(approved) === 'COMPLETED' && statusOf(refused) !== 'PENDING', 'both answered');
    assert.equal(statusOf(refused), 'REJECTED');
    const pending = receiver.received.filter((r) => r.json.type === 'INCOMING_PAYMENT.PENDING');
    assert.deepEqual(pending.map((r) => r.json.data.id), [approved, refused]);
    for (const r of pending) assertEnvelope(r, key);
    receiver.answer = () => 200;
    receiver.received.length = 0;
  });

  it('POST /sandbox/webhooks/test sends a recorded TEST event once and answers with its try', async () => {
    const sent = await svc.request('POST', '/sandbox/webhooks/test');
    assertStatus(sent, 200);
    assert.deepEqual(sent.body, { url: receiver.url, response_status: 200 });
    assertVendorResponse('sendTestWebhook', 200, sent.body);
    const test = receiver.received.find((r) => r.json.type === 'TEST')!;
    assertEnvelope(test, key);
    assert.deepEqual(test.json.data, {});
    const listed = await getJson(svc, `/webhooks/events/${test.json.id}`);
    assert.equal(listed.deliveryStatus, 'DELIVERED');
    assert.equal(await listedBody(svc, test.json.id), test.body);

    receiver.answer = () => 500;
    const refused = await svc.request('POST', '/sandbox/webhooks/test');
    assertVendorResponse('sendTestWebhook', 400, assertError(refused, 400, 'WEBHOOK_DELIVERY_ERROR'));
    const failed = (await getJson(svc, '/webhooks/events?type=TEST')).data[0];
    assert.equal(failed.deliveryStatus, 'FAILED', 'tried once, never retried');
    assert.equal(failed.attempts.length, 1);
    receiver.answer = () => 200;

    assertError(await svc.request('POST', '/sandbox/webhooks/test', { auth: 'production' }), 403, 'SANDBOX_ONLY');
    assertVendorResponse('sendTestWebhook', 401, assertError(await svc.request('POST', '/sandbox/webhooks/test', { auth: 'none' }), 401, 'UNAUTHORIZED'));
    await patchConfig(svc, { webhookEndpoint: '' });
    const unset = assertError(await svc.request('POST', '/sandbox/webhooks/test'), 400, 'WEBHOOK_ENDPOINT_NOT_SET');
    assert.match(unset.message, /webhookEndpoint/);
    assertVendorResponse('sendTestWebhook', 400, unset);
    await patchConfig(svc, { webhookEndpoint: receiver.url, webhookFormat: 'FLAT' });
    receiver.received.length = 0;
    assertStatus(await svc.request('POST', '/sandbox/webhooks/test'), 200);
    const flatTest = receiver.received[0]!;
    assert.deepEqual(Object.keys(flatTest.json), ['id', 'type', 'timestamp'], 'a FLAT environment gets the FLAT TEST body');
    assert.equal(flatTest.headers['x-grid-signature'], undefined);
  });
});

// An event keeps the format and the bytes it was made with: a redelivery after the
// environment went back to FLAT, and one after a restart that rebuilt it from the log,
// send the envelope of the first delivery, signed in X-Grid-Signature.
describe('an ENVELOPE event delivered again', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'envelope-again-'));
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

  it('keeps its format and bytes after the setting changed and after a restart', async () => {
    svc = await startTestService({ clock, dataDir });
    const config = await patchConfig(svc, { webhookEndpoint: receiver.url, webhookFormat: 'ENVELOPE' });
    const key = keyOf(config.webhookPublicKey);
    const alice = await fundedCustomer(svc, 1_000);
    const bob = await fundedCustomer(svc, 0);
    await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 400, { immediatelyExecute: true }));
    await until(svc, () => receiver.received.some((r) => r.json.type === 'OUTGOING_PAYMENT.COMPLETED'), 'the payment delivered');
    const first = receiver.received.find((r) => r.json.type === 'OUTGOING_PAYMENT.COMPLETED')!;
    const again = async (): Promise<Received> => {
      const count = receiver.received.length;
      assertStatus(await svc!.request('POST', `/webhooks/events/${first.json.id}/redeliver`), 200);
      const redelivered = () => receiver.received.slice(count).find((r) => r.json.id === first.json.id);
      await until(svc!, () => redelivered() !== undefined, 'the redelivery');
      return redelivered()!;
    };
    const sameAsFirst = async (delivery: Received, when: string): Promise<void> => {
      assert.equal(delivery.body, first.body, `the bytes ${when}`);
      assert.ok(gridSigned(delivery, key, Buffer.from(first.body, 'utf8')), `X-Grid-Signature covers the first delivery's bytes ${when}`);
      assert.equal(await listedBody(svc!, first.json.id), first.body, `the listing ${when}`);
    };
    await patchConfig(svc, { webhookFormat: 'FLAT' });
    await sameAsFirst(await again(), 'after the environment went back to FLAT');
    await svc.stop({ keepData: true });
    clock.advance(60_000);
    svc = await startTestService({ clock, dataDir });
    await sameAsFirst(await again(), 'after a restart');
  });
});
