// What `npm start` runs is one bundled module (scripts/bundle.ts), not the modules tsc emits:
// the files it reads at run time are found from the bundle's place (src/built-layout.ts).
// Here the bundle runs with every crypto operation on the worker pool, so that its worker
// threads load their own module, and serves the dashboard's files and a stamped payment.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiKeyStamper } from '@turnkey/api-key-stamper';
import { decryptCredentialBundle, generateP256KeyPair, getPublicKey } from '@turnkey/crypto';
import { DASHBOARD_DIR } from '../src/built-layout.js';
import { killAll, spawnService, type ServiceChild } from './support/service-process.js';
import { sandboxClient, type PlainClient } from './support/plain-client.js';

const ALL_ON_THE_POOL = 'verifyStamp=pool,issueSessionKey=pool,createExportBundle=pool,signWebhook=pool';

describe("npm start's bundle finds its files: the dashboard, the crypto pool's worker", () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'service-bundle-'));
  let child: ServiceChild;
  let api: PlainClient;
  before(async () => {
    child = await spawnService(dataDir, { CRYPTO_ROUTES: ALL_ON_THE_POOL });
    api = sandboxClient(child);
  });
  after(async () => {
    await killAll();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves the built dashboard page', async () => {
    const page = await fetch(new URL('/dashboard/', child.baseUrl));
    assert.equal(page.status, 200);
    assert.equal(await page.text(), readFileSync(join(DASHBOARD_DIR, 'index.html'), 'utf8'));
  });

  it('opens a sealed-key session and verifies its stamp on the pool', async () => {
    const walletOf = async (customerId: string): Promise<{ id: string }> => (await api.ok('GET', `/customers/internal-accounts?customerId=${customerId}&currency=USDB`)).data[0];
    const alice = await api.ok('POST', '/customers', { customerType: 'INDIVIDUAL', email: 'alice@example.com' });
    const bob = await api.ok('POST', '/customers', { customerType: 'INDIVIDUAL', email: 'bob@example.com' });
    const from = await walletOf(alice.id);
    const to = await walletOf(bob.id);
    await api.ok('POST', `/sandbox/internal-accounts/${from.id}/fund`, { amount: 5_000 });
    const credential = await api.ok('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: from.id });
    const client = generateP256KeyPair();
    const session = await api.ok('POST', `/auth/credentials/${credential.id}/verify`, { otp: '000000', clientPublicKey: client.publicKeyUncompressed });
    const sessionKey = decryptCredentialBundle(session.encryptedSessionSigningKey, client.privateKey);
    const quote = await api.ok('POST', '/quotes', { source: { accountId: from.id }, destination: { destinationType: 'ACCOUNT', accountId: to.id }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1_500 });
    const apiPublicKey = Buffer.from(getPublicKey(sessionKey, true)).toString('hex');
    const { stampHeaderValue } = await new ApiKeyStamper({ apiPublicKey, apiPrivateKey: sessionKey }).stamp(quote.paymentInstructions[0].accountOrWalletInfo.payloadToSign);
    const executed = await api.ok('POST', `/quotes/${quote.id}/execute`, undefined, { 'Grid-Wallet-Signature': stampHeaderValue });
    assert.equal(executed.status, 'COMPLETED');
  });
});
