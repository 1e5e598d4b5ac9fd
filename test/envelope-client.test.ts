// Webhooks in the data envelope as a generic client meets them: the service in its own
// process, fetch and JSON on one side, a plain HTTP receiver on the other that verifies
// X-Grid-Signature with node:crypto over the bytes it got. Nothing of the service's code is
// imported.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { verify } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killAll, spawnService, type ServiceChild } from './support/service-process.js';
import { refusedNaming, sandboxClient, type PlainClient } from './support/plain-client.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

describe('the data envelope through plain HTTP, the service in its own process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'envelope-client-'));
  let child: ServiceChild;
  let api: PlainClient;
  let receiver: Receiver;
  before(async () => {
    child = await spawnService(dataDir);
    api = sandboxClient(child);
    receiver = await startReceiver();
  });
  after(async () => {
    await killAll();
    await receiver.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('switches to ENVELOPE, sends a TEST and a CUSTOMER event signed in X-Grid-Signature, and lists them so', async () => {
    refusedNaming(await api.call('PATCH', '/config', { webhookFormat: 'envelope' }), 'webhookFormat');
    const config = await api.ok('PATCH', '/config', { webhookEndpoint: receiver.url, webhookFormat: 'ENVELOPE' });
    assert.equal(config.webhookFormat, 'ENVELOPE');
    assert.deepEqual(await api.ok('POST', '/sandbox/webhooks/test'), { url: receiver.url, response_status: 200 });
    const customer = await api.ok('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Pat Payee' });
    await receiver.waitFor(2);
    const [test, created] = receiver.received;
    for (const request of [test!, created!]) {
      const signature = Buffer.from(String(request.headers['x-grid-signature']), 'base64');
      assert.ok(verify('sha256', Buffer.from(request.body, 'utf8'), config.webhookPublicKeyPem, signature), `${request.json.type} verifies`);
      assert.equal(request.headers['x-service-signature'], undefined);
    }
    assert.deepEqual({ type: test!.json.type, data: test!.json.data }, { type: 'TEST', data: {} });
    assert.equal(created!.json.type, 'CUSTOMER.KYC_APPROVED');
    assert.deepEqual(created!.json.data, await api.ok('GET', `/customers/${customer.id}`));
    const { deliveryStatus, attempts: _attempts, ...listed } = await api.ok('GET', `/webhooks/events/${created!.json.id}`);
    assert.equal(JSON.stringify(listed), created!.body, 'listed as it was sent');
    assert.ok(['PENDING', 'DELIVERED'].includes(deliveryStatus));
  });
});
