import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { p256 } from '@noble/curves/nist.js';
import { bigIntToBytes, concatBytes } from '../src/crypto/bytes.js';
import { InvalidPublicKeyError } from '../src/crypto/errors.js';
import {
  checkClientPublicKey,
  compressPublicKey,
  decompressPublicKey,
  encodeDerSignature,
  flipS,
  generateP256KeyPair,
  isHighS,
  keyPairFromPrivateKey,
  P256_N,
  parseClientPublicKey,
  parseDerSignature,
  signP256,
  signP256Deterministic,
  signP256Rfc6979,
  verifyP256,
} from '../src/crypto/p256.js';
import { seededEntropy, systemEntropy, useEntropy } from '../src/engine/entropy.js';
import { nobleVerifyP256 } from '../src/crypto/reference-noble.js';
import { hex, toHexString } from './support/crypto-fixtures.js';

/** The first x (as 32-byte hex) with no point on P-256: x^3 - 3x + b is a non-residue. */
function offCurveX(): string {
  for (let x = 1n; ; x++) {
    const xHex = x.toString(16).padStart(64, '0');
    try {
      p256.Point.fromHex('02' + xHex);
    } catch {
      return xHex;
    }
  }
}

describe('clientPublicKey validation', () => {
  const valid = toHexString(generateP256KeyPair().publicKey);

  it('accepts an uncompressed point on the curve, in either hex case', () => {
    assert.deepEqual(checkClientPublicKey(valid), { ok: true, publicKey: hex(valid) });
    assert.equal(checkClientPublicKey(valid.toUpperCase().replace(/^04/, '04')).ok, true);
    assert.deepEqual(parseClientPublicKey(valid), hex(valid));
  });

  it('names the failed check', () => {
    const shape = 'clientPublicKey must be an uncompressed P-256 public key: 130 hex characters starting with 04';
    const cases: [unknown, string][] = [
      [undefined, 'clientPublicKey must be a string'],
      [1234, 'clientPublicKey must be a string'],
      ['', shape],
      [valid.slice(0, 128), shape], // too short
      [valid + '00', shape], // too long
      ['05' + valid.slice(2), shape], // wrong prefix
      [toHexString(compressPublicKey(hex(valid))), shape], // compressed form
      [valid.slice(0, 100) + 'zz' + valid.slice(102), shape], // not hex
      [' ' + valid.slice(1), shape],
      ['04' + '00'.repeat(64), 'clientPublicKey is not a point on the P-256 curve'],
      [valid.slice(0, 128) + ((parseInt(valid.slice(128), 16) ^ 1).toString(16).padStart(2, '0')), 'clientPublicKey is not a point on the P-256 curve'],
    ];
    for (const [input, reason] of cases) {
      assert.deepEqual(checkClientPublicKey(input), { ok: false, reason }, `input ${JSON.stringify(input)}`);
    }
    assert.throws(() => parseClientPublicKey('04'), (e: unknown) => e instanceof InvalidPublicKeyError && e.reason === shape);
  });
});

describe('P-256 keys and encodings', () => {
  it('key pairs match the noble reference; compression round-trips', () => {
    for (let i = 0; i < 16; i++) {
      const pair = generateP256KeyPair();
      assert.deepEqual(pair.publicKey, p256.getPublicKey(pair.privateKey, false));
      assert.deepEqual(pair.publicKeyCompressed, p256.getPublicKey(pair.privateKey, true));
      assert.deepEqual(keyPairFromPrivateKey(pair.privateKey), pair);
      assert.deepEqual(decompressPublicKey(pair.publicKeyCompressed), pair.publicKey);
      assert.deepEqual(compressPublicKey(pair.publicKey), pair.publicKeyCompressed);
    }
  });

  it('rejects private keys outside [1, n-1] and points off the curve', () => {
    assert.throws(() => keyPairFromPrivateKey(new Uint8Array(32)));
    assert.throws(() => keyPairFromPrivateKey(bigIntToBytes(P256_N, 32)));
    assert.throws(() => keyPairFromPrivateKey(new Uint8Array(31).fill(1)));
    assert.equal(toHexString(keyPairFromPrivateKey(bigIntToBytes(P256_N - 1n, 32)).publicKeyCompressed).length, 66);
    assert.throws(() => decompressPublicKey(hex('02' + offCurveX())), InvalidPublicKeyError);
  });
});

describe('strict DER signatures', () => {
  const scalar = fc.bigInt({ min: 1n, max: P256_N - 1n });

  it('encode/parse round-trips every (r, s) in range', () => {
    fc.assert(
      fc.property(scalar, scalar, (r, s) => {
        const der = encodeDerSignature({ r, s });
        assert.deepEqual(parseDerSignature(der), { r, s });
        // noble's DER parser reads the same integers.
        const viaNoble = p256.Signature.fromBytes(der, 'der');
        assert.equal(viaNoble.r, r);
        assert.equal(viaNoble.s, s);
      }),
      { numRuns: 300 },
    );
  });

  it('rejects non-canonical or out-of-range encodings', () => {
    const good = encodeDerSignature({ r: 5n, s: 7n });
    assert.equal(toHexString(good), '3006020105020107');
    const bad = [
      '3007020105020107', // SEQUENCE length does not match
      '300702010502010700', // trailing byte inside the SEQUENCE
      '300602010502010700', // trailing byte after it
      '300702020005020107', // r with a superfluous leading zero (non-minimal)
      '3006020185020107', // negative r
      '3006020100020107', // r = 0
      '3006020105020100', // s = 0
      '3106020105020107', // not a SEQUENCE
      '3006030105020107', // r is not an INTEGER
      '308106020105020107', // long-form length
    ];
    for (const b of bad) assert.equal(parseDerSignature(hex(b)), undefined, b);
    const sEqualsN = encodeDerSignature({ r: 1n, s: 1n });
    const nBytes = bigIntToBytes(P256_N, 32);
    const withN = concatBytes(Uint8Array.of(0x30, 3 + 2 + 33), sEqualsN.subarray(2, 5), Uint8Array.of(0x02, 33, 0), nBytes);
    assert.equal(parseDerSignature(withN), undefined);
  });
});

describe('ECDSA P-256 SHA-256 on node:crypto', () => {
  it('signatures are low-S DER and verify under noble with low-S enforced', () => {
    const pair = generateP256KeyPair();
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 256 }), (message) => {
        const der = signP256(message, pair.privateKey);
        const parsed = parseDerSignature(der);
        assert.ok(parsed !== undefined);
        assert.equal(isHighS(parsed), false);
        assert.equal(p256.verify(der, message, pair.publicKey, { format: 'der', lowS: true }), true);
        assert.equal(verifyP256(message, der, pair.publicKeyCompressed), true);
      }),
      { numRuns: 60 },
    );
  });

  it('accepts the high-S twin of a valid signature, like OpenSSL and Turnkey do', () => {
    const pair = generateP256KeyPair();
    const message = new TextEncoder().encode('payload');
    const low = signP256(message, pair.privateKey);
    const parsed = parseDerSignature(low);
    assert.ok(parsed !== undefined);
    const high = encodeDerSignature(flipS(parsed));
    assert.equal(isHighS(flipS(parsed)), true);
    assert.equal(verifyP256(message, high, pair.publicKey), true);
    assert.equal(nobleVerifyP256(message, high, pair.publicKey), true);
    // noble's default (low-S only) would refuse it: this is a deliberate policy choice.
    assert.equal(p256.verify(high, message, pair.publicKey, { format: 'der' }), false);
  });

  it('node and noble verification agree on valid and corrupted signatures', () => {
    const pair = generateP256KeyPair();
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.nat({ max: 69 }), fc.boolean(), (message, flipAt, corrupt) => {
        const der = signP256(message, pair.privateKey);
        const sig = Uint8Array.from(der);
        if (corrupt) sig[Math.min(flipAt, sig.length - 1)] = (sig[Math.min(flipAt, sig.length - 1)] ?? 0) ^ 0x10;
        assert.equal(verifyP256(message, sig, pair.publicKey), nobleVerifyP256(message, sig, pair.publicKey));
        if (!corrupt) assert.equal(verifyP256(message, sig, pair.publicKey), true);
      }),
      { numRuns: 100 },
    );
  });

  it('a signature does not verify under another key or over another message', () => {
    const a = generateP256KeyPair();
    const b = generateP256KeyPair();
    const der = signP256(new Uint8Array([1, 2, 3]), a.privateKey);
    assert.equal(verifyP256(new Uint8Array([1, 2, 3]), der, b.publicKey), false);
    assert.equal(verifyP256(new Uint8Array([1, 2, 4]), der, a.publicKey), false);
  });
});

describe('deterministic ECDSA (RFC 6979) under a seeded source', () => {
  // RFC 6979 A.2.5: P-256 with SHA-256; s given as the RFC has it, before low-S normalisation.
  const rfcKey = hex('c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721');
  const rfcVectors = [
    { message: 'sample', r: 0xefd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716n, s: 0xf7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8n },
    { message: 'test', r: 0xf1abb023518351cd71d881567b1ea663ed3efcf6c5132b354f28d3b0b7d38367n, s: 0x019f4113742a2b14bd25926b49c649155f267e60d3814b4c0cc84250e46f0083n },
  ];

  it("gives RFC 6979's signatures of its test vectors, normalised to low-S", () => {
    for (const vector of rfcVectors) {
      const parsed = parseDerSignature(signP256Deterministic(new TextEncoder().encode(vector.message), rfcKey));
      const lowS = vector.s > P256_N / 2n ? P256_N - vector.s : vector.s;
      assert.deepEqual(parsed, { r: vector.r, s: lowS }, vector.message);
    }
  });

  it("is byte for byte @noble/curves' RFC 6979 signature, for any key and message", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.uint8Array({ maxLength: 300 }), (seed, message) => {
        const privateKey = new Uint8Array(createHash('sha256').update(seed).digest());
        assert.equal(toHexString(signP256Deterministic(message, privateKey)), toHexString(signP256Rfc6979(message, privateKey)));
      }),
      { numRuns: 100 },
    );
  });

  it('is what signP256 gives under a seeded source, the same bytes each time, and it verifies', () => {
    const pair = generateP256KeyPair();
    const message = new TextEncoder().encode('a stamped request');
    useEntropy(seededEntropy(7));
    let first: Uint8Array;
    let second: Uint8Array;
    try {
      first = signP256(message, pair.privateKey);
      second = signP256(message, pair.privateKey);
    } finally {
      useEntropy(systemEntropy);
    }
    assert.equal(toHexString(first), toHexString(signP256Rfc6979(message, pair.privateKey)));
    assert.equal(toHexString(second), toHexString(first));
    assert.equal(verifyP256(message, first, pair.publicKey), true);
  });
});
