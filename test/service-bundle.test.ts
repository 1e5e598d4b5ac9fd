// What `npm start` runs is one bundled module (scripts/bundle.ts), not the modules tsc emits:
// the files it reads at run time are found from the bundle's place (src/built-layout.ts).
// Here the bundle runs with every crypto operation on the worker pool, so that its worker
// threads load their own module, and serves the dashboard's files and a stamped payment.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DASHBOARD_DIR } from '../src/built-layout.js';
import { killAll, spawnService, type ServiceChild } from './support/service-process.js';
import { sandboxClient, sealedKeySession, stamp, type PlainClient } from './support/plain-client.js';

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
    const { from, to, sessionKey } = await sealedKeySession(api, 'alice@example.com', 'bob@example.com');
    const quote = await api.ok('POST', '/quotes', { source: { accountId: from.id }, destination: { destinationType: 'ACCOUNT', accountId: to.id }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1_500 });
    const signature = await stamp(quote.paymentInstructions[0].accountOrWalletInfo.payloadToSign, sessionKey);
    const executed = await api.ok('POST', `/quotes/${quote.id}/execute`, undefined, { 'Grid-Wallet-Signature': signature });
    assert.equal(executed.status, 'COMPLETED');
  });
});
