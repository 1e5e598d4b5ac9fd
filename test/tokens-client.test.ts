// API tokens as a plain HTTP client uses them, the service in its own process: make tokens
// with fewer permissions, call with them, revoke one, and after a kill -9 find the
// revocation kept. Nothing here imports the service's code.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killAll, spawnService, type ServiceChild } from './support/service-process.js';
import { PlainClient, refusedNaming, sandboxClient } from './support/plain-client.js';

/** A token made here: its id, and its Basic credentials as a client sends them. */
interface Made {
  id: string;
  basic: string;
}

describe('API tokens through plain HTTP, the service in its own process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'tokens-client-'));
  let child: ServiceChild;
  let admin: PlainClient;
  before(async () => {
    child = await spawnService(dataDir);
    admin = sandboxClient(child);
  });
  after(async () => {
    await killAll();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const make = async (name: string, permissions: string[]): Promise<Made> => {
    const token = await admin.ok('POST', '/tokens', { name, permissions });
    assert.equal(typeof token.clientSecret, 'string');
    const basic = `Basic ${Buffer.from(`${token.clientId}:${token.clientSecret}`).toString('base64')}`;
    return { id: token.id, basic };
  };
  const as = (token: Made): PlainClient => new PlainClient(child.baseUrl, token.basic);

  it('a VIEW token reads, a TRANSACT token quotes, neither manages; a revoked token is refused, also after a kill -9', async () => {
    const viewer = await make('dashboard read-only', ['VIEW']);
    const payer = await make('payments service', ['TRANSACT']);
    const customer = await admin.ok('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Ada Payer' });
    const [usd] = (await admin.ok('GET', `/customers/internal-accounts?customerId=${customer.id}&currency=USD`)).data;

    assert.equal((await as(viewer).ok('GET', `/customers/${customer.id}`)).id, customer.id);
    const quote = { source: { sourceType: 'ACCOUNT', accountId: usd.id }, destination: { destinationType: 'ACCOUNT', accountId: usd.id }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 100 };
    const refused = await as(viewer).call('POST', '/quotes', quote);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'FORBIDDEN');
    assert.match(refused.body.message, /TRANSACT/);
    const managing = await as(payer).call('PATCH', '/config', { umaDomain: 'payer.example.com' });
    assert.deepEqual([managing.status, managing.body.code], [403, 'FORBIDDEN']);
    assert.match(managing.body.message, /MANAGE/);
    refusedNaming(await admin.call('POST', '/tokens', { name: 'none', permissions: [] }), 'permissions');

    const listed = await admin.ok('GET', '/tokens?name=dashboard%20read-only');
    assert.deepEqual(listed.data.map((t: { id: string }) => t.id), [viewer.id]);
    assert.equal(listed.data[0].clientSecret, undefined);
    assert.equal((await admin.call('DELETE', `/tokens/${viewer.id}`)).status, 204);
    assert.equal((await as(viewer).call('GET', '/tokens')).status, 401);

    await killAll();
    child = await spawnService(dataDir);
    admin = sandboxClient(child);
    assert.equal((await as(viewer).call('GET', '/tokens')).status, 401);
    assert.equal((await admin.call('GET', `/tokens/${viewer.id}`)).status, 404);
    assert.equal((await admin.ok('GET', `/tokens/${payer.id}`)).name, 'payments service');
  });
});
