// The flows of issue 16 as a generic HTTP client drives them: the service runs as its own
// process (`npm start`'s bundle), and the client side is fetch, headers and JSON bodies,
// with Turnkey's published libraries for the wallet's keys and stamps. Nothing here imports
// the service's code: what passes here passes for any client that speaks the documented API.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encryptOtpCodeToBundle, generateP256KeyPair, verifyOtpVerificationToken } from '@turnkey/crypto';
import { killAll, spawnService, type ServiceChild } from './support/service-process.js';
import { refusedNaming, sandboxClient, sealedKeySession, stamp, walletOf, type PlainClient } from './support/plain-client.js';

describe('issue 16 flows through plain HTTP, the service in its own process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'generic-client-'));
  let child: ServiceChild;
  let api: PlainClient;
  before(async () => {
    child = await spawnService(dataDir);
    api = sandboxClient(child);
    await api.ok('PATCH', '/config', {
      supportedCurrencies: ['USD', 'USDB'].map((currencyCode) => ({ currencyCode, minAmount: 1, maxAmount: 1_000_000_000, enabledTransactionTypes: ['OUTGOING', 'INCOMING'] })),
    });
  });
  /** A customer's embedded wallet, found by listing its USDB account. */
  after(async () => {
    await killAll();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('a BUSINESS customer, found by the list filters, pays a person; a deleted external account is refused', async () => {
    const since = new Date().toISOString();
    const acme = await api.ok('POST', '/customers', {
      customerType: 'BUSINESS',
      businessInfo: { legalName: 'Acme LLC', country: 'US', taxId: '12-3456789', incorporatedOn: '2015-03-14', registrationNumber: 'R-001', entityType: 'LLC' },
    });
    assert.equal(acme.kybStatus, 'PENDING');
    const pat = await api.ok('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Pat Payee', email: 'pat@example.com' });
    const listed = await api.ok('GET', `/customers?customerType=BUSINESS&currency=USD&createdAfter=${encodeURIComponent(since)}`);
    assert.deepEqual(listed.data.map((c: { id: string }) => c.id), [acme.id]);
    refusedNaming(await api.call('GET', '/customers?createdAfter=last-tuesday'), 'createdAfter');

    const accounts = await api.ok('GET', `/customers/internal-accounts?customerId=${acme.id}&currency=USD`);
    const acmeUsd = accounts.data[0];
    await api.ok('POST', `/sandbox/internal-accounts/${acmeUsd.id}/fund`, { amount: 10_000 });
    const bank = await api.ok('POST', '/customers/external-accounts', {
      customerId: pat.id,
      currency: 'USD',
      accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '123456789', routingNumber: '021000021', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Pat Payee' } },
    });
    assert.deepEqual(await api.ok('GET', `/customers/external-accounts/${bank.id}`), bank);
    const quoteBody = { source: { accountId: acmeUsd.id }, destination: { destinationType: 'ACCOUNT', accountId: bank.id }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 2_500 };
    const quote = await api.ok('POST', '/quotes', quoteBody);
    assert.equal((await api.ok('POST', `/quotes/${quote.id}/execute`)).status, 'COMPLETED');
    assert.equal((await api.call('DELETE', `/customers/external-accounts/${bank.id}`)).status, 204);
    assert.equal((await api.call('GET', `/customers/external-accounts/${bank.id}`)).status, 404);
    refusedNaming(await api.call('POST', '/quotes', quoteBody), 'destination.accountId');
  });

  it('a sealed-key session stamps a wallet payment under Grid-Wallet-Signature', async () => {
    const { from, to, sessionKey } = await sealedKeySession(api, 'alice@example.com', 'bob@example.com');

    const quote = await api.ok('POST', '/quotes', { source: { accountId: from.id }, destination: { destinationType: 'ACCOUNT', accountId: to.id }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1_500 });
    const payload = quote.paymentInstructions[0].accountOrWalletInfo.payloadToSign;
    assert.equal((await api.call('POST', `/quotes/${quote.id}/execute`)).status, 401);
    const executed = await api.ok('POST', `/quotes/${quote.id}/execute`, undefined, { 'Grid-Wallet-Signature': await stamp(payload, sessionKey) });
    assert.equal(executed.status, 'COMPLETED');
    assert.equal((await api.ok('GET', `/internal-accounts/${to.id}`)).balance.amount, 1_500);
  });

  it('an encrypted OTP opens a client-held-key session, whose own key then stamps a wallet payment', async () => {
    const carol = await api.ok('POST', '/customers', { customerType: 'INDIVIDUAL', email: 'carol@example.com' });
    const dave = await api.ok('POST', '/customers', { customerType: 'INDIVIDUAL', email: 'dave@example.com' });
    const from = await walletOf(api, carol.id);
    const to = await walletOf(api, dave.id);
    await api.ok('POST', `/sandbox/internal-accounts/${from.id}/fund`, { amount: 5_000 });
    const signer = (await api.ok('GET', '/config')).embeddedWalletConfig.signerPublicKey;
    const credential = await api.ok('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: from.id });

    // The client keeps this key: its compressed public half goes inside the encrypted code.
    const client = generateP256KeyPair();
    const encryptedOtpBundle = await encryptOtpCodeToBundle('000000', credential.otpEncryptionTargetBundle, client.publicKey, signer);
    const challenge = await api.call('POST', `/auth/credentials/${credential.id}/verify`, { encryptedOtpBundle });
    assert.equal(challenge.status, 202, JSON.stringify(challenge.body));
    const claims = await verifyOtpVerificationToken(challenge.body.payloadToSign, signer);
    assert.equal(claims.public_key, client.publicKey);
    assert.equal(claims.contact, 'carol@example.com');
    const session = await api.ok('POST', `/auth/credentials/${credential.id}/verify`, { encryptedOtpBundle }, {
      'Grid-Wallet-Signature': await stamp(challenge.body.payloadToSign, client.privateKey),
      'Request-Id': challenge.body.requestId,
    });
    assert.equal(session.encryptedSessionSigningKey, undefined);

    const quote = await api.ok('POST', '/quotes', { source: { accountId: from.id }, destination: { destinationType: 'ACCOUNT', accountId: to.id }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 700 });
    const payload = quote.paymentInstructions[0].accountOrWalletInfo.payloadToSign;
    const stranger = generateP256KeyPair();
    assert.equal((await api.call('POST', `/quotes/${quote.id}/execute`, undefined, { 'Grid-Wallet-Signature': await stamp(payload, stranger.privateKey) })).status, 401);
    const executed = await api.ok('POST', `/quotes/${quote.id}/execute`, undefined, { 'Grid-Wallet-Signature': await stamp(payload, client.privateKey) });
    assert.equal(executed.status, 'COMPLETED');
    assert.equal((await api.ok('GET', `/internal-accounts/${to.id}`)).balance.amount, 700);
  });
});
