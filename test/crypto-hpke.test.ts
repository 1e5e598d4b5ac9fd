import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AEAD_AES_128_GCM, AEAD_AES_256_GCM, HpkeSuite, nodePrimitives, type HpkePrimitives } from '../src/crypto/hpke.js';
import { noblePrimitives } from '../src/crypto/reference-noble.js';
import { A3_INPUTS_AES_256_GCM, hex, RFC9180_A3_1 as V, toHexString } from './support/crypto-fixtures.js';

const implementations: readonly HpkePrimitives[] = [nodePrimitives, noblePrimitives];

for (const primitives of implementations) {
  describe(`RFC 9180 A.3.1 DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-128-GCM, base mode [${primitives.name}]`, () => {
    const suite = new HpkeSuite(AEAD_AES_128_GCM, primitives);

    it('uses the suite identifiers of the vector', () => {
      assert.equal(V.mode, 0);
      assert.equal(toHexString(suite.kemSuiteId), '4b454d' + V.kemId.toString(16).padStart(4, '0'));
      assert.equal(
        toHexString(suite.suiteId),
        '48504b45' + [V.kemId, V.kdfId, V.aeadId].map((n) => n.toString(16).padStart(4, '0')).join(''),
      );
    });

    it('DeriveKeyPair(ikmE) and DeriveKeyPair(ikmR) give skEm/pkEm and skRm/pkRm', () => {
      const e = suite.deriveKeyPair(hex(V.ikmE));
      const r = suite.deriveKeyPair(hex(V.ikmR));
      assert.equal(toHexString(e.privateKey), V.skEm);
      assert.equal(toHexString(e.publicKey), V.pkEm);
      assert.equal(toHexString(r.privateKey), V.skRm);
      assert.equal(toHexString(r.publicKey), V.pkRm);
    });

    it('SetupBaseS with skEm gives enc, shared_secret, key, base_nonce, exporter_secret', () => {
      const { enc, context } = suite.setupBaseS(hex(V.pkRm), hex(V.info), { ephemeralPrivateKey: hex(V.skEm) });
      assert.equal(toHexString(enc), V.enc);
      assert.equal(toHexString(context.sharedSecret), V.sharedSecret);
      assert.equal(toHexString(context.key), V.key);
      assert.equal(toHexString(context.baseNonce), V.baseNonce);
      assert.equal(toHexString(context.exporterSecret), V.exporterSecret);
    });

    it('seals the listed encryptions (sequence numbers 0, 1, 2, 4, 255, 256) to the published ct', () => {
      const { context } = suite.setupBaseS(hex(V.pkRm), hex(V.info), { ephemeralPrivateKey: hex(V.skEm) });
      const wanted = new Map<number, (typeof V.encryptions)[number]>(V.encryptions.map((e) => [e.seq, e]));
      let checked = 0;
      for (let seq = 0; seq <= 256; seq++) {
        const aad = new TextEncoder().encode(`Count-${seq}`);
        const ct = context.seal(aad, hex(V.plaintext));
        const expected = wanted.get(seq);
        if (expected !== undefined) {
          assert.equal(toHexString(aad), expected.aad);
          assert.equal(toHexString(ct), expected.ct, `ct for sequence number ${seq}`);
          checked++;
        }
      }
      assert.equal(checked, V.encryptions.length);
    });

    it('SetupBaseR with skRm opens the published ciphertexts and rejects altered ones', () => {
      const context = suite.setupBaseR(hex(V.enc), hex(V.skRm), hex(V.info));
      assert.equal(toHexString(context.sharedSecret), V.sharedSecret);
      const first = V.encryptions[0];
      assert.equal(toHexString(context.open(hex(first.aad), hex(first.ct))), V.plaintext);
      // The next open uses sequence number 1: the seq-1 ciphertext opens, the seq-0 one does not.
      const second = V.encryptions[1];
      assert.equal(toHexString(context.open(hex(second.aad), hex(second.ct))), V.plaintext);

      const fresh = () => suite.setupBaseR(hex(V.enc), hex(V.skRm), hex(V.info));
      const tampered = hex(first.ct);
      tampered[3] = (tampered[3] ?? 0) ^ 0x01;
      assert.throws(() => fresh().open(hex(first.aad), tampered));
      assert.throws(() => fresh().open(hex(second.aad), hex(first.ct)), 'wrong aad');
      assert.throws(() => suite.setupBaseR(hex(V.enc), hex(V.skRm), new Uint8Array(0)).open(hex(first.aad), hex(first.ct)), 'wrong info');
    });
  });

  describe(`HPKE with AES-256-GCM (the service suite) [${primitives.name}]`, () => {
    const suite = new HpkeSuite(AEAD_AES_256_GCM, primitives);

    it('A.3.1 inputs give the AES-256-GCM key, base_nonce and first ct', () => {
      const { enc, context } = suite.setupBaseS(hex(V.pkRm), hex(V.info), { ephemeralPrivateKey: hex(V.skEm) });
      // The KEM part does not depend on the AEAD: same enc and shared secret as A.3.1.
      assert.equal(toHexString(enc), V.enc);
      assert.equal(toHexString(context.sharedSecret), V.sharedSecret);
      assert.equal(toHexString(context.key), A3_INPUTS_AES_256_GCM.key);
      assert.equal(toHexString(context.baseNonce), A3_INPUTS_AES_256_GCM.baseNonce);
      assert.equal(toHexString(context.seal(hex(V.encryptions[0].aad), hex(V.plaintext))), A3_INPUTS_AES_256_GCM.ctSeq0);
    });

    it('rejects an enc that is not a point on the curve', () => {
      const bad = hex(V.enc);
      bad[64] = (bad[64] ?? 0) ^ 0x01;
      assert.throws(() => suite.setupBaseR(bad, hex(V.skRm), hex(V.info)));
      assert.throws(() => suite.setupBaseS(bad, hex(V.info)));
    });
  });
}

describe('node and noble HPKE agree', () => {
  it('same ephemeral key, same recipient: byte-identical enc and ciphertext; each opens the other', () => {
    const node = new HpkeSuite(AEAD_AES_256_GCM, nodePrimitives);
    const noble = new HpkeSuite(AEAD_AES_256_GCM, noblePrimitives);
    for (let i = 0; i < 8; i++) {
      const recipient = node.deriveKeyPair(new Uint8Array([i, 1, 2, 3]));
      const eph = node.deriveKeyPair(new Uint8Array([i, 9, 9, 9]));
      const info = new TextEncoder().encode('turnkey_hpke');
      const pt = new Uint8Array(32 + i).fill(i);
      const a = node.seal(recipient.publicKey, info, new Uint8Array([i]), pt, { ephemeralPrivateKey: eph.privateKey });
      const b = noble.seal(recipient.publicKey, info, new Uint8Array([i]), pt, { ephemeralPrivateKey: eph.privateKey });
      assert.deepEqual(a, b);
      assert.deepEqual(noble.open(a.enc, recipient.privateKey, info, new Uint8Array([i]), a.ciphertext), pt);
      assert.deepEqual(node.open(b.enc, recipient.privateKey, info, new Uint8Array([i]), b.ciphertext), pt);
    }
  });

  it('a random ephemeral key gives a different enc each time', () => {
    const suite = new HpkeSuite(AEAD_AES_256_GCM);
    const recipient = suite.deriveKeyPair(new Uint8Array([7]));
    const a = suite.seal(recipient.publicKey, new Uint8Array(0), new Uint8Array(0), new Uint8Array([1]));
    const b = suite.seal(recipient.publicKey, new Uint8Array(0), new Uint8Array(0), new Uint8Array([1]));
    assert.notDeepEqual(a.enc, b.enc);
    assert.deepEqual(suite.open(a.enc, recipient.privateKey, new Uint8Array(0), new Uint8Array(0), a.ciphertext), new Uint8Array([1]));
  });
});
