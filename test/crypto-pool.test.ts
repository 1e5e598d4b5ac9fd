import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decryptCredentialBundle } from '@turnkey/crypto';
import { CryptoOverloadedError, InvalidPublicKeyError } from '../src/crypto/errors.js';
import { generateP256KeyPair, keyPairFromPrivateKey, verifyP256 } from '../src/crypto/p256.js';
import { CryptoPool, DEFAULT_ROUTES, type CryptoOp } from '../src/crypto/pool.js';
import { verifyStamp } from '../src/crypto/stamp.js';
import { generateMnemonic } from '../src/crypto/wallet-secrets.js';
import { decryptExportAsIntegrator, hex, newKeyPairHex, toHexString, turnkeyStamp } from './support/crypto-fixtures.js';

const allPool: Record<CryptoOp, 'pool'> = { verifyStamp: 'pool', issueSessionKey: 'pool', createExportBundle: 'pool', signWebhook: 'pool' };

for (const mode of ['pool', 'inline'] as const) {
  describe(`CryptoPool API, operations routed ${mode === 'pool' ? 'to worker threads' : 'inline'}`, () => {
    let pool: CryptoPool;
    before(() => {
      pool = mode === 'pool' ? new CryptoPool({ threads: 2, routes: allPool }) : new CryptoPool({ routes: DEFAULT_ROUTES });
    });
    after(async () => {
      await pool.close();
    });

    it('verifyStamp gives the same outcomes as the library call', async () => {
      const key = newKeyPairHex();
      const payload = '{"requestId":"r1"}';
      const header = await turnkeyStamp(payload, key);
      const inputs = [
        { header, payload, expectedPublicKeys: [key.publicKeyCompressed] },
        { header, payload: '{"requestId":"r2"}', expectedPublicKeys: [key.publicKeyCompressed] },
        { header, payload, expectedPublicKeys: [newKeyPairHex().publicKeyCompressed] },
        { header: 'garbage!', payload },
        { header: undefined, payload },
        { header, payload: new TextEncoder().encode(payload) },
      ];
      const results = await Promise.all(inputs.map((input) => pool.verifyStamp(input)));
      assert.deepEqual(results, inputs.map((input) => verifyStamp(input)));
      assert.deepEqual(
        results.map((r) => (r.ok ? 'OK' : r.error.kind)),
        ['OK', 'STAMP_SIGNATURE_INVALID', 'STAMP_KEY_MISMATCH', 'STAMP_MALFORMED', 'STAMP_MALFORMED', 'OK'],
      );
    });

    it('issueSessionKey returns bundles @turnkey/crypto opens; a bad key rejects with InvalidPublicKeyError', async () => {
      const client = newKeyPairHex();
      const issued = await pool.issueSessionKey(client.publicKey);
      const sessionPrivateKey = decryptCredentialBundle(issued.encryptedSessionSigningKey, client.privateKey);
      assert.equal(toHexString(keyPairFromPrivateKey(hex(sessionPrivateKey)).publicKeyCompressed), issued.sessionPublicKey);
      await assert.rejects(
        pool.issueSessionKey('04' + '11'.repeat(64)),
        (e: unknown) => e instanceof InvalidPublicKeyError && e.reason === 'clientPublicKey is not a point on the P-256 curve',
      );
    });

    it('createExportBundle and signWebhook work through the pool', async () => {
      const client = newKeyPairHex();
      const signer = generateP256KeyPair();
      const mnemonic = generateMnemonic();
      const organizationId = 'InternalAccount:pool';
      const bundle = await pool.createExportBundle({ clientPublicKey: client.publicKey, mnemonic, organizationId, signer });
      const opened = await decryptExportAsIntegrator(bundle, client.privateKey, organizationId, toHexString(signer.publicKey));
      assert.equal(opened, mnemonic);
      const body = new TextEncoder().encode('{"type":"TEST"}');
      const signature = await pool.signWebhook(body, signer.privateKey);
      assert.equal(verifyP256(body, Buffer.from(signature, 'base64'), signer.publicKey), true);
    });
  });
}

describe('CryptoPool limits and lifecycle', () => {
  it('rejects with CryptoOverloadedError once threads + maxQueue tasks are in flight', async () => {
    const pool = new CryptoPool({ threads: 1, maxQueue: 2, routes: allPool });
    try {
      const client = newKeyPairHex();
      // Submitted in one synchronous burst: 1 running + 2 queued fill the pool.
      const accepted = [pool.issueSessionKey(client.publicKey), pool.issueSessionKey(client.publicKey), pool.issueSessionKey(client.publicKey)];
      const refused = pool.issueSessionKey(client.publicKey);
      await assert.rejects(refused, (e: unknown) => e instanceof CryptoOverloadedError && e.kind === 'CRYPTO_OVERLOADED' && e.limit === 2);
      const done = await Promise.all(accepted);
      assert.equal(done.length, 3);
      assert.equal(pool.stats().rejectedOverloaded, 1);
      assert.equal(pool.stats().inFlight, 0);
      // Capacity is back once the queue drains.
      assert.ok((await pool.issueSessionKey(client.publicKey)).sessionPublicKey.length === 66);
    } finally {
      await pool.close();
    }
  });

  it('inline routes do not count against the worker queue', async () => {
    const pool = new CryptoPool({ threads: 1, maxQueue: 0, routes: { ...allPool, verifyStamp: 'inline' } });
    try {
      const key = newKeyPairHex();
      const header = await turnkeyStamp('p', key);
      const busy = pool.issueSessionKey(newKeyPairHex().publicKey);
      await assert.rejects(pool.signWebhook('x', hex(key.privateKey)), CryptoOverloadedError);
      assert.equal((await pool.verifyStamp({ header, payload: 'p' })).ok, true);
      await busy;
    } finally {
      await pool.close();
    }
  });

  it('is sized to the cores by default, and refuses work after close()', async () => {
    const pool = new CryptoPool();
    assert.ok(pool.threads >= 1);
    assert.equal(pool.maxQueue, 64 * pool.threads);
    await pool.close();
    await assert.rejects(pool.verifyStamp({ header: undefined, payload: '' }), /closed/);
  });
});
