// Issue 39's transaction and wallet operations as a generic HTTP client drives them, the
// service in its own process: cancel a bank payout in flight and confirm a receipt, refresh
// a session and change a wallet's privacy by signed retry. The client side is fetch and JSON,
// with Turnkey's published libraries for keys and stamps; nothing of the service is imported.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiKeyStamper } from '@turnkey/api-key-stamper';
import { generateP256KeyPair } from '@turnkey/crypto';
import { killAll, spawnService, type ServiceChild } from './support/service-process.js';
import { sandboxClient, type PlainClient } from './support/plain-client.js';
import { assertVendorResponse } from './support/vendor-contract.js';

/** A client-held P-256 key pair, as @turnkey/crypto makes it, and its stamps by ApiKeyStamper. */
function clientKey(): { publicKey: string; stamp: (payload: string) => Promise<string> } {
  const pair = generateP256KeyPair();
  const stamper = new ApiKeyStamper({ apiPublicKey: pair.publicKey, apiPrivateKey: pair.privateKey });
  return { publicKey: pair.publicKey, stamp: async (payload) => (await stamper.stamp(payload)).stampHeaderValue };
}

describe('issue 39 transactions and wallet operations through plain HTTP, the service in its own process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'cancel-client-'));
  let child: ServiceChild;
  let api: PlainClient;
  before(async () => {
    child = await spawnService(dataDir);
    api = sandboxClient(child);
    await api.ok('PATCH', '/config', {
      supportedCurrencies: ['USD', 'USDB'].map((currencyCode) => ({ currencyCode, minAmount: 1, maxAmount: 1_000_000_000, enabledTransactionTypes: ['OUTGOING', 'INCOMING'] })),
    });
  });
  after(async () => {
    await killAll();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('a payout still PROCESSING (sandbox 003) is cancelled and refunded; a second cancel is 409; its receipt is confirmed', async () => {
    const pat = await api.ok('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Pat Payer', email: 'pat@example.com' });
    const usd = (await api.ok('GET', `/customers/internal-accounts?customerId=${pat.id}&currency=USD`)).data[0];
    await api.ok('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { amount: 10_000 });
    const bank = await api.ok('POST', '/customers/external-accounts', {
      customerId: pat.id,
      currency: 'USD',
      accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '123456003', routingNumber: '021000021', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Pat Payer' } },
    });
    const quote = await api.ok('POST', '/quotes', { source: { accountId: usd.id }, destination: { destinationType: 'ACCOUNT', accountId: bank.id }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 2_500 });
    const executed = await api.ok('POST', `/quotes/${quote.id}/execute`);
    assert.equal(executed.status, 'PROCESSING');
    const cancelled = await api.call('POST', `/transactions/${executed.transactionId}/cancel`, { reason: 'REQUESTED_AFTER_HOURS' });
    assert.equal(cancelled.status, 200);
    assert.equal(cancelled.body.status, 'FAILED');
    assert.equal(cancelled.body.failureReason, 'CANCELLED');
    assert.equal((await api.ok('GET', `/internal-accounts/${usd.id}`)).balance.amount, 10_000);
    const again = await api.call('POST', `/transactions/${executed.transactionId}/cancel`);
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'TRANSACTION_NOT_CANCELLABLE');
    const confirmed = await api.ok('POST', `/transactions/${executed.transactionId}/confirm`, { receiptDeliveryConfirmedAt: '2026-04-08T15:35:00Z' });
    assert.equal(confirmed.receiptDeliveryConfirmedAt, '2026-04-08T15:35:00.000Z');
    assert.equal((await api.ok('GET', `/transactions/${executed.transactionId}`)).receiptDeliveryConfirmedAt, '2026-04-08T15:35:00.000Z');
  });

  it('a session refreshed by its own stamp, and the new session key turning wallet privacy on', async () => {
    const alice = await api.ok('POST', '/customers', { customerType: 'INDIVIDUAL', email: 'alice@example.com' });
    const wallet = (await api.ok('GET', `/customers/internal-accounts?customerId=${alice.id}&currency=USDB`)).data[0];
    assert.equal(wallet.privateEnabled, false);
    const credential = await api.ok('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: wallet.id });
    const first = clientKey();
    const session = await api.ok('POST', `/auth/credentials/${credential.id}/verify`, { otp: '000000', clientPublicKey: first.publicKey });

    const next = clientKey();
    const refreshPath = `/auth/sessions/${session.id}/refresh`;
    const challenge = await api.call('POST', refreshPath, { clientPublicKey: next.publicKey });
    assert.equal(challenge.status, 202);
    assertVendorResponse('refreshAuthSession', 202, challenge.body);
    const headers = { 'Grid-Wallet-Signature': await first.stamp(challenge.body.payloadToSign), 'Request-Id': challenge.body.requestId };
    const refreshed = await api.call('POST', refreshPath, { clientPublicKey: next.publicKey }, headers);
    assert.equal(refreshed.status, 201);
    assertVendorResponse('refreshAuthSession', 201, refreshed.body);
    const live = await api.ok('GET', `/auth/sessions?accountId=${wallet.id}`);
    assert.deepEqual(live.data.map((s: { id: string }) => s.id), [refreshed.body.id]);

    const update = await api.call('PATCH', `/internal-accounts/${wallet.id}`, { privateEnabled: true });
    assert.equal(update.status, 202);
    const signed = { 'Grid-Wallet-Signature': await next.stamp(update.body.payloadToSign), 'Request-Id': update.body.requestId };
    const updated = await api.call('PATCH', `/internal-accounts/${wallet.id}`, { privateEnabled: true }, signed);
    assert.equal(updated.status, 200);
    assertVendorResponse('updateInternalAccount', 200, updated.body);
    assert.equal((await api.ok('GET', `/internal-accounts/${wallet.id}`)).privateEnabled, true);
  });
});
