// The look-ups of issue 39 as a client of the vendor's API drives them: the service in its
// own process, configured by its operator through the environment (VASPS,
// END_USER_TERMS_*), and fetch, Basic auth and JSON on this side, each answer held to the
// vendor's published schema. Nothing of the service's code is imported.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killAll, spawnService } from './support/service-process.js';
import { refusedNaming, sandboxClient, type PlainClient } from './support/plain-client.js';
import { assertVendorResponse } from './support/vendor-contract.js';

const SOLANA_ADDRESS = 'So11111111111111111111111111111111111111112';

describe('look-ups through plain HTTP, the service in its own process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'lookups-client-'));
  let api: PlainClient;
  before(async () => {
    api = sandboxClient(
      await spawnService(dataDir, {
        VASPS: JSON.stringify([{ vaspName: 'Kraken', url: 'https://www.kraken.com' }, { vaspName: 'Bitso' }]),
        END_USER_TERMS_VERSION: 'V2',
        END_USER_TERMS_URL: 'https://legal.example.com/terms/v2',
      }),
    );
  });
  after(async () => {
    await killAll();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** A 200 of `operationId` in the vendor's shape. */
  const vendorOk = async (operationId: string, method: string, path: string, body?: unknown): Promise<any> => {
    const answer = await api.call(method, path, body);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assertVendorResponse(operationId, 200, answer.body);
    return answer.body;
  };

  it('finds a corridor, an UMA provider, a VASP and the terms in force', async () => {
    const mexico = await vendorOk('getDiscoveries', 'GET', '/discoveries?country=MX&currency=MXN');
    assert.deepEqual(mexico.data.map((d: any) => d.bankName), ['CLABE']);
    const providers = await vendorOk('getAvailableUmaProviders', 'GET', '/uma-providers?currencyCode=MXN');
    assert.deepEqual(providers.data.map((p: any) => p.domain), ['sandbox.uma.test']);
    const vasps = await vendorOk('listVasps', 'GET', '/vasps?limit=1');
    assert.deepEqual([vasps.data, vasps.hasMore], [[{ vaspName: 'Bitso' }], true]);
    const rest = await vendorOk('listVasps', 'GET', `/vasps?limit=1&cursor=${encodeURIComponent(vasps.nextCursor)}`);
    assert.deepEqual([rest.data, rest.hasMore], [[{ vaspName: 'Kraken', url: 'https://www.kraken.com' }], false]);
    assert.deepEqual(await vendorOk('getEndUserTerms', 'GET', '/customers/end-user-terms'), { version: 'V2', url: 'https://legal.example.com/terms/v2' });
  });

  it('estimates a USDC withdrawal to Solana, and refuses a network that does not carry it', async () => {
    const customer = await api.ok('POST', '/customers', { customerType: 'INDIVIDUAL' });
    const usdc = (await api.ok('GET', `/customers/internal-accounts?customerId=${customer.id}&currency=USDC`)).data[0];
    const body = { internalAccountId: usdc.id, currency: 'USDC', cryptoNetwork: 'SOLANA', amount: 1_000_000, destinationAddress: SOLANA_ADDRESS };
    const estimate = await vendorOk('estimateCryptoWithdrawalFee', 'POST', '/crypto/estimate-withdrawal-fee', body);
    assert.equal(estimate.networkFeeAsset, 'SOL');
    assert.equal(estimate.netAmount + estimate.totalFee, 1_000_000);
    refusedNaming(await api.call('POST', '/crypto/estimate-withdrawal-fee', { ...body, cryptoNetwork: 'LIGHTNING' }), 'cryptoNetwork');
  });
});
