import assert from 'node:assert/strict';
import { verify as nodeVerify, createPublicKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { p256 } from '@noble/curves/nist.js';
import { MasterKey, loadMasterKey } from '../src/crypto/master-key.js';
import { loadOrCreateServiceKey } from '../src/crypto/signer-key.js';
import { generateP256KeyPair, isHighS, parseDerSignature } from '../src/crypto/p256.js';
import {
  generateMnemonic,
  mnemonicFromEntropy,
  openPrivateKey,
  openWalletMnemonic,
  sealPrivateKey,
  sealWalletMnemonic,
  validateMnemonic,
} from '../src/crypto/wallet-secrets.js';
import { signWebhookBody, verifyWebhookSignature } from '../src/crypto/webhook-signature.js';
import { toHexString } from './support/crypto-fixtures.js';

describe('BIP-39 mnemonics', () => {
  it('generates valid English mnemonics of the requested length, each different', () => {
    const seen = new Set<string>();
    for (const words of [12, 15, 18, 21, 24] as const) {
      const m = generateMnemonic(words);
      assert.equal(m.split(' ').length, words);
      assert.equal(validateMnemonic(m), true);
      seen.add(m);
    }
    assert.equal(generateMnemonic().split(' ').length, 24);
    assert.equal(seen.size, 5);
  });

  it('matches the BIP-39 reference vector and rejects bad checksums and words', () => {
    // Trezor reference vector: 16 zero bytes of entropy.
    assert.equal(
      mnemonicFromEntropy(new Uint8Array(16)),
      'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about',
    );
    assert.equal(validateMnemonic('abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about'), true);
    assert.equal(validateMnemonic('abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon'), false);
    assert.equal(validateMnemonic('abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon notaword'), false);
    assert.equal(validateMnemonic(''), false);
  });
});

describe('wallet secrets sealed under the MasterKey', () => {
  const master = new MasterKey(new Uint8Array(32).fill(7));

  it('a sealed mnemonic opens only for its owner and only with the same master key', () => {
    const mnemonic = generateMnemonic();
    const sealed = sealWalletMnemonic(master, 'InternalAccount:a', mnemonic);
    assert.ok(!sealed.includes(mnemonic.split(' ')[0] ?? '@'));
    assert.equal(openWalletMnemonic(master, 'InternalAccount:a', sealed), mnemonic);
    assert.throws(() => openWalletMnemonic(master, 'InternalAccount:b', sealed));
    assert.throws(() => openWalletMnemonic(new MasterKey(new Uint8Array(32).fill(8)), 'InternalAccount:a', sealed));
    assert.throws(() => sealWalletMnemonic(master, 'InternalAccount:a', 'not a mnemonic'), TypeError);
  });

  it('private keys round-trip under their label', () => {
    const key = generateP256KeyPair().privateKey;
    const sealed = sealPrivateKey(master, 'webhook:sandbox', key);
    assert.deepEqual(openPrivateKey(master, 'webhook:sandbox', sealed), key);
    assert.throws(() => openPrivateKey(master, 'webhook:production', sealed));
  });

  it('works with a key file made by loadMasterKey (mode 0600)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crypto-master-'));
    try {
      const a = loadMasterKey(dir, undefined);
      assert.equal(statSync(join(dir, 'master.key')).mode & 0o777, 0o600);
      const sealed = sealWalletMnemonic(a, 'x', mnemonicFromEntropy(new Uint8Array(32).fill(1)));
      assert.equal(openWalletMnemonic(loadMasterKey(dir, undefined), 'x', sealed), mnemonicFromEntropy(new Uint8Array(32).fill(1)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('service keys in the data directory', () => {
  it('creates the export signer once (0600, sealed), then loads the same key', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crypto-signer-'));
    try {
      const master = new MasterKey(new Uint8Array(32).fill(3));
      const first = loadOrCreateServiceKey(dir, master);
      const path = join(dir, 'export-signer.key');
      assert.equal(statSync(path).mode & 0o777, 0o600);
      assert.ok(!readFileSync(path, 'utf8').includes(toHexString(first.privateKey)));
      assert.deepEqual(loadOrCreateServiceKey(dir, master), first);
      assert.notDeepEqual(loadOrCreateServiceKey(dir, master, 'other-key').privateKey, first.privateKey);
      assert.throws(() => loadOrCreateServiceKey(dir, new MasterKey(new Uint8Array(32).fill(4))));
      assert.throws(() => loadOrCreateServiceKey(dir, master, '../escape'), TypeError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('webhook body signatures', () => {
  const body = JSON.stringify({ id: 'Webhook:0199e0c4-3333-7000-8000-000000000000', type: 'TEST', timestamp: '2025-10-13T00:00:00.000Z' });

  it('base64 DER over the exact body bytes, verifiable with plain node:crypto and noble', () => {
    const key = generateP256KeyPair();
    const signature = signWebhookBody(body, key.privateKey);
    assert.match(signature, /^[A-Za-z0-9+/]+={0,2}$/);
    const der = Buffer.from(signature, 'base64');
    const parsed = parseDerSignature(der);
    assert.ok(parsed !== undefined);
    assert.equal(isHighS(parsed), false);
    // What a receiver would do with webhookPublicKey (uncompressed hex) and nothing of ours:
    const jwkKey = createPublicKey({
      key: { kty: 'EC', crv: 'P-256', x: Buffer.from(key.publicKey.subarray(1, 33)).toString('base64url'), y: Buffer.from(key.publicKey.subarray(33)).toString('base64url') },
      format: 'jwk',
    });
    assert.equal(nodeVerify('sha256', Buffer.from(body), jwkKey, der), true);
    assert.equal(p256.verify(der, new TextEncoder().encode(body), key.publicKey, { format: 'der' }), true);
    assert.equal(verifyWebhookSignature(body, signature, toHexString(key.publicKey)), true);
    assert.equal(verifyWebhookSignature(new TextEncoder().encode(body), signature, key.publicKey), true);
  });

  it('verification fails for a changed body, another key, or a damaged signature', () => {
    const key = generateP256KeyPair();
    const signature = signWebhookBody(body, key.privateKey);
    assert.equal(verifyWebhookSignature(body + ' ', signature, key.publicKey), false);
    assert.equal(verifyWebhookSignature(body, signature, generateP256KeyPair().publicKey), false);
    const der = Buffer.from(signature, 'base64');
    der[der.length - 1] = (der[der.length - 1] ?? 0) ^ 1;
    assert.equal(verifyWebhookSignature(body, der.toString('base64'), key.publicKey), false);
    assert.equal(verifyWebhookSignature(body, 'not base64!', key.publicKey), false);
    assert.equal(verifyWebhookSignature(body, signature, 'zz'), false);
    assert.equal(verifyWebhookSignature(body, signature, '04' + '00'.repeat(64)), false);
  });
});
