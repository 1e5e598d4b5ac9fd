import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import bs58check from 'bs58check';
import { decryptCredentialBundle, decryptExportBundle, hpkeDecrypt, hpkeEncrypt } from '@turnkey/crypto';
import { concatBytes } from '../src/crypto/bytes.js';
import { AEAD_AES_256_GCM, HpkeSuite } from '../src/crypto/hpke.js';
import { BundleError, InvalidPublicKeyError } from '../src/crypto/errors.js';
import { createExportBundle, openExportBundle } from '../src/crypto/export-bundle.js';
import { encodeDerSignature, flipS, generateP256KeyPair, keyPairFromPrivateKey, parseDerSignature } from '../src/crypto/p256.js';
import { noblePrimitives } from '../src/crypto/reference-noble.js';
import { issueSessionKey, openBundle, openSessionBundle, sealToBundle, TURNKEY_HPKE_INFO, turnkeyHpkeSeal } from '../src/crypto/session-bundle.js';
import { generateMnemonic } from '../src/crypto/wallet-secrets.js';
import { decryptExportAsIntegrator, hex, newKeyPairHex, toHexString } from './support/crypto-fixtures.js';

describe('session bundles (encryptedSessionSigningKey)', () => {
  it('@turnkey/crypto decryptCredentialBundle opens them and yields the session private key', () => {
    for (let i = 0; i < 6; i++) {
      const client = newKeyPairHex();
      const issued = issueSessionKey(client.publicKey);
      const sessionPrivateKey = decryptCredentialBundle(issued.encryptedSessionSigningKey, client.privateKey);
      assert.match(sessionPrivateKey, /^[0-9a-f]{64}$/);
      const session = keyPairFromPrivateKey(hex(sessionPrivateKey));
      assert.equal(toHexString(session.publicKeyCompressed), issued.sessionPublicKey);
      assert.equal(toHexString(session.publicKey), issued.sessionPublicKeyUncompressed);
      // And our own client-side opener agrees.
      assert.equal(toHexString(openSessionBundle(issued.encryptedSessionSigningKey, hex(client.privateKey))), sessionPrivateKey);
    }
  });

  it('bundle layout: base58check of a 33-byte compressed enc, then ciphertext + 16-byte tag', () => {
    const client = newKeyPairHex();
    const issued = issueSessionKey(client.publicKey);
    const raw = bs58check.decode(issued.encryptedSessionSigningKey);
    assert.equal(raw.length, 33 + 32 + 16);
    assert.ok(raw[0] === 2 || raw[0] === 3);
    // A second issue for the same client uses a fresh ephemeral key and a fresh session key.
    const again = issueSessionKey(client.publicKey);
    assert.notEqual(again.encryptedSessionSigningKey, issued.encryptedSessionSigningKey);
    assert.notEqual(again.sessionPublicKey, issued.sessionPublicKey);
  });

  it('the noble and node HPKE paths produce bundles Turnkey opens identically', () => {
    const client = newKeyPairHex();
    const secret = generateP256KeyPair().privateKey;
    const eph = generateP256KeyPair().privateKey;
    const viaNode = sealToBundle(client.publicKey, secret, { ephemeralPrivateKey: eph });
    const viaNoble = sealToBundle(client.publicKey, secret, { ephemeralPrivateKey: eph, primitives: noblePrimitives });
    assert.equal(viaNode, viaNoble);
    assert.equal(decryptCredentialBundle(viaNode, client.privateKey), toHexString(secret));
  });

  it('we open bundles sealed by @turnkey/crypto hpkeEncrypt', () => {
    const client = newKeyPairHex();
    const secret = new Uint8Array(32).fill(9);
    const sealed = hpkeEncrypt({ plainTextBuf: secret, targetKeyBuf: hex(client.publicKey) });
    assert.deepEqual(openBundle(bs58check.encode(sealed), hex(client.privateKey)), secret);
  });

  it('refuses a bad clientPublicKey with the validation reason, and a wrong or damaged bundle', () => {
    assert.throws(() => issueSessionKey('04abc'), (e: unknown) => e instanceof InvalidPublicKeyError && /130 hex characters/.test(e.reason));
    assert.throws(() => issueSessionKey('04' + '00'.repeat(64)), (e: unknown) => e instanceof InvalidPublicKeyError && /not a point/.test(e.reason));
    const client = newKeyPairHex();
    const other = newKeyPairHex();
    const { encryptedSessionSigningKey } = issueSessionKey(client.publicKey);
    assert.throws(() => openSessionBundle(encryptedSessionSigningKey, hex(other.privateKey)), BundleError);
    assert.throws(() => decryptCredentialBundle(encryptedSessionSigningKey, other.privateKey));
    const raw = bs58check.decode(encryptedSessionSigningKey);
    raw[40] = (raw[40] ?? 0) ^ 1;
    assert.throws(() => openSessionBundle(bs58check.encode(raw), hex(client.privateKey)), BundleError);
    // Another last character (one in 58 bundles already ends in 'x').
    const altered = encryptedSessionSigningKey.slice(0, -1) + (encryptedSessionSigningKey.endsWith('x') ? 'y' : 'x');
    assert.throws(() => openSessionBundle(altered, hex(client.privateKey)), /base58check/);
  });

  it('aad = enc || recipient key: matches Turnkey, and another aad does not open', () => {
    const client = newKeyPairHex();
    const { enc, ciphertext } = turnkeyHpkeSeal(hex(client.publicKey), new Uint8Array([1, 2, 3]));
    // Turnkey's hpkeDecrypt builds aad = enc || its own public key.
    assert.deepEqual(hpkeDecrypt({ ciphertextBuf: ciphertext, encappedKeyBuf: enc, receiverPriv: client.privateKey }), new Uint8Array([1, 2, 3]));
    const suite = new HpkeSuite(AEAD_AES_256_GCM);
    const open = (aad: Uint8Array) => suite.setupBaseR(enc, hex(client.privateKey), TURNKEY_HPKE_INFO).open(aad, ciphertext);
    assert.deepEqual(open(concatBytes(enc, hex(client.publicKey))), new Uint8Array([1, 2, 3]));
    assert.throws(() => open(concatBytes(enc, hex(newKeyPairHex().publicKey))));
    assert.throws(() => open(new Uint8Array(0)));
  });
});

describe('wallet export bundles (encryptedWalletCredentials)', () => {
  const organizationId = 'InternalAccount:0199e0c4-2222-7000-8000-000000000000';

  it('production: decryptExportBundle with our signer key as the override returns the mnemonic', async () => {
    const client = newKeyPairHex();
    const signer = generateP256KeyPair();
    const mnemonic = generateMnemonic();
    const bundle = createExportBundle({ clientPublicKey: client.publicKey, mnemonic, organizationId, signer });
    const opened = await decryptExportAsIntegrator(bundle, client.privateKey, organizationId, toHexString(signer.publicKey));
    assert.equal(opened, mnemonic);
    assert.deepEqual(openExportBundle({ bundle, privateKey: hex(client.privateKey), organizationId, signerPublicKey: toHexString(signer.publicKey) }), {
      mnemonic,
      signature: 'trusted',
    });
  });

  it('has the documented shape', () => {
    const client = newKeyPairHex();
    const signer = generateP256KeyPair();
    const bundle = JSON.parse(createExportBundle({ clientPublicKey: client.publicKey, mnemonic: generateMnemonic(12), organizationId, signer })) as Record<string, string>;
    assert.deepEqual(Object.keys(bundle), ['version', 'data', 'dataSignature', 'enclaveQuorumPublic']);
    assert.equal(bundle.version, 'v1.0.0');
    assert.equal(bundle.enclaveQuorumPublic, toHexString(signer.publicKey));
    assert.match(bundle.dataSignature ?? '', /^30[0-9a-f]+$/);
    const data = JSON.parse(Buffer.from(bundle.data ?? '', 'hex').toString('utf8')) as Record<string, string>;
    assert.deepEqual(Object.keys(data), ['encappedPublic', 'ciphertext', 'organizationId']);
    assert.match(data.encappedPublic ?? '', /^04[0-9a-f]{128}$/);
    assert.equal(data.organizationId, organizationId);
  });

  it('decryptExportBundle refuses a wrong organization, another signer, altered data and a wrong key', async () => {
    const client = newKeyPairHex();
    const signer = generateP256KeyPair();
    const mnemonic = generateMnemonic();
    const bundle = createExportBundle({ clientPublicKey: client.publicKey, mnemonic, organizationId, signer });
    const base = { exportBundle: bundle, embeddedKey: client.privateKey, organizationId, dangerouslyOverrideSignerPublicKey: toHexString(signer.publicKey), returnMnemonic: true };
    await assert.rejects(decryptExportBundle({ ...base, organizationId: 'InternalAccount:other' }), /organization id does not match/);
    await assert.rejects(decryptExportBundle({ ...base, dangerouslyOverrideSignerPublicKey: toHexString(generateP256KeyPair().publicKey) }), /expected signer key/);
    await assert.rejects(decryptExportBundle({ ...base, embeddedKey: newKeyPairHex().privateKey }));
    const parsed = JSON.parse(bundle) as Record<string, string>;
    const data = Buffer.from(parsed.data ?? '', 'hex').toString('utf8').replace(organizationId, organizationId.replace('2222', '3333'));
    const altered = JSON.stringify({ ...parsed, data: Buffer.from(data).toString('hex') });
    await assert.rejects(decryptExportBundle({ ...base, exportBundle: altered, organizationId: organizationId.replace('2222', '3333') }), /failed to verify enclave signature/);
    assert.throws(
      () => openExportBundle({ bundle: altered, privateKey: hex(client.privateKey), organizationId, signerPublicKey: toHexString(signer.publicKey) }),
      /dataSignature does not verify/,
    );
  });

  it('decryptExportBundle verifies like we do: over the decoded data bytes, and accepts high-S', async () => {
    const client = newKeyPairHex();
    const signer = generateP256KeyPair();
    const mnemonic = generateMnemonic();
    const parsed = JSON.parse(createExportBundle({ clientPublicKey: client.publicKey, mnemonic, organizationId, signer })) as Record<string, string>;
    const sig = parseDerSignature(hex(parsed.dataSignature ?? ''));
    assert.ok(sig !== undefined);
    const highS = JSON.stringify({ ...parsed, dataSignature: toHexString(encodeDerSignature(flipS(sig))) });
    const opened = await decryptExportAsIntegrator(highS, client.privateKey, organizationId, toHexString(signer.publicKey));
    assert.equal(opened, mnemonic);
  });

  it('sandbox (unsigned): decryptExportBundle refuses it; hpkeDecrypt and our opener read it', async () => {
    const client = newKeyPairHex();
    const mnemonic = generateMnemonic();
    const bundle = createExportBundle({ clientPublicKey: client.publicKey, mnemonic, organizationId, signer: null });
    const parsed = JSON.parse(bundle) as Record<string, string>;
    assert.equal(parsed.dataSignature, '');
    assert.equal(parsed.enclaveQuorumPublic, '');
    // decryptExportBundle has no unsigned mode: an empty override falls back to Turnkey's
    // production signer key, which cannot match "".
    await assert.rejects(
      decryptExportBundle({ exportBundle: bundle, embeddedKey: client.privateKey, organizationId, dangerouslyOverrideSignerPublicKey: '', returnMnemonic: true }),
      /expected signer key/,
    );
    // The documented way for sandbox: take encappedPublic and ciphertext from data and call hpkeDecrypt.
    const data = JSON.parse(Buffer.from(parsed.data ?? '', 'hex').toString('utf8')) as Record<string, string>;
    const plaintext = hpkeDecrypt({ ciphertextBuf: hex(data.ciphertext ?? ''), encappedKeyBuf: hex(data.encappedPublic ?? ''), receiverPriv: client.privateKey });
    assert.equal(new TextDecoder().decode(plaintext), mnemonic);
    assert.deepEqual(openExportBundle({ bundle, privateKey: hex(client.privateKey), organizationId }), { mnemonic, signature: 'unsigned' });
    assert.throws(
      () => openExportBundle({ bundle, privateKey: hex(client.privateKey), organizationId, signerPublicKey: toHexString(generateP256KeyPair().publicKey) }),
      /unsigned but a signer key was required/,
    );
  });

  it('without a trusted key, a signed bundle is checked against the key it carries', () => {
    const client = newKeyPairHex();
    const signer = generateP256KeyPair();
    const bundle = createExportBundle({ clientPublicKey: client.publicKey, mnemonic: generateMnemonic(), organizationId, signer });
    assert.equal(openExportBundle({ bundle, privateKey: hex(client.privateKey), organizationId }).signature, 'embedded');
    const parsed = JSON.parse(bundle) as Record<string, string>;
    const wrongKey = JSON.stringify({ ...parsed, enclaveQuorumPublic: toHexString(generateP256KeyPair().publicKey) });
    assert.throws(() => openExportBundle({ bundle: wrongKey, privateKey: hex(client.privateKey), organizationId }), /does not verify/);
    assert.throws(() => openExportBundle({ bundle: '{"version":"v2"}', privateKey: hex(client.privateKey), organizationId }), BundleError);
    assert.throws(() => openExportBundle({ bundle: 'nope', privateKey: hex(client.privateKey), organizationId }), /not JSON/);
  });
});
