import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiKeyStamper } from '@turnkey/api-key-stamper';
import { verifyStampSignature } from '@turnkey/crypto';
import { p256 } from '@noble/curves/nist.js';
import { StampError } from '../src/crypto/errors.js';
import { encodeDerSignature, flipS, isHighS, parseDerSignature } from '../src/crypto/p256.js';
import { assertStamp, createStamp, parseStamp, STAMP_SCHEME, verifyStamp, type StampVerification } from '../src/crypto/stamp.js';
import { decodeStampJson, encodeStampJson, hex, newKeyPairHex, toHexString, turnkeyStamp } from './support/crypto-fixtures.js';

const payload = JSON.stringify({ action: 'REVOKE_SESSION', requestId: '0199e0c4-1111-7000-8000-000000000000', expiresAt: '2025-10-13T00:05:00.000Z' });

function failure(result: StampVerification): { kind: string; check?: string; reason: string } {
  assert.equal(result.ok, false, 'expected the stamp to be refused');
  if (result.ok) throw new Error('unreachable');
  return result.error;
}

describe('stamps made by @turnkey/api-key-stamper', () => {
  it('verify, with the expected key, for the Node (OpenSSL) and pure-JS runtimes', async () => {
    const key = newKeyPairHex();
    for (const runtimeOverride of ['node', 'purejs'] as const) {
      const stamper = new ApiKeyStamper({ apiPublicKey: key.publicKeyCompressed, apiPrivateKey: key.privateKey, runtimeOverride });
      for (let i = 0; i < 12; i++) {
        const p = `${payload}#${runtimeOverride}#${i}`;
        const { stampHeaderValue } = await stamper.stamp(p);
        assert.deepEqual(verifyStamp({ header: stampHeaderValue, payload: p, expectedPublicKeys: [key.publicKeyCompressed] }), {
          ok: true,
          publicKey: key.publicKeyCompressed,
        });
      }
    }
  });

  it('verify whether S is low or high (the same stamp in both forms)', async () => {
    const key = newKeyPairHex();
    const header = await turnkeyStamp(payload, key);
    const stamp = decodeStampJson(header);
    const sig = parseDerSignature(hex(stamp.signature));
    assert.ok(sig !== undefined);
    const twin = encodeStampJson({ ...stamp, signature: toHexString(encodeDerSignature(flipS(sig))) });
    assert.notEqual(isHighS(sig), isHighS(flipS(sig)));
    for (const h of [header, twin]) {
      assert.equal(verifyStamp({ header: h, payload, expectedPublicKeys: [key.publicKeyCompressed] }).ok, true);
    }
  });

  it('accept the expected key given uncompressed, and accept plain (padded) base64 headers', async () => {
    const key = newKeyPairHex();
    const header = await turnkeyStamp(payload, key);
    assert.equal(verifyStamp({ header, payload, expectedPublicKeys: [key.publicKey] }).ok, true);
    // A run of '~' (0x7e) encodes to "fn5+" whatever its alignment, so the standard
    // alphabet shows up; pick the filler length that also needs '=' padding.
    const json = decodeStampJson(header);
    const plain = [12, 13, 14]
      .map((n) => encodeStampJson({ ...json, note: '~'.repeat(n) }, 'base64'))
      .find((h) => h.endsWith('=')) ?? '';
    assert.match(plain, /\+/);
    assert.match(plain, /=$/);
    assert.equal(verifyStamp({ header: plain, payload, expectedPublicKeys: [key.publicKeyCompressed] }).ok, true);
    assert.equal(verifyStamp({ header: plain.replace(/=+$/, ''), payload }).ok, true);
  });
});

describe('stamps that must be refused, each with its own kind', () => {
  it('a changed payload: STAMP_SIGNATURE_INVALID', async () => {
    const key = newKeyPairHex();
    const header = await turnkeyStamp(payload, key);
    const err = failure(verifyStamp({ header, payload: payload.replace('REVOKE_SESSION', 'REVOKE_CREDENTIAL'), expectedPublicKeys: [key.publicKeyCompressed] }));
    assert.equal(err.kind, 'STAMP_SIGNATURE_INVALID');
    assert.equal(err.reason, 'stamp signature does not verify over payloadToSign');
    // Whitespace matters: the payload is verified byte for byte, never re-serialised.
    assert.equal(failure(verifyStamp({ header, payload: payload + ' ' })).kind, 'STAMP_SIGNATURE_INVALID');
    assert.equal(failure(verifyStamp({ header, payload: JSON.stringify(JSON.parse(payload), null, 1) })).kind, 'STAMP_SIGNATURE_INVALID');
  });

  it('a changed signature (still valid DER): STAMP_SIGNATURE_INVALID', async () => {
    const key = newKeyPairHex();
    const stamp = decodeStampJson(await turnkeyStamp(payload, key));
    const sig = parseDerSignature(hex(stamp.signature));
    assert.ok(sig !== undefined);
    const changed = encodeStampJson({ ...stamp, signature: toHexString(encodeDerSignature({ r: sig.r, s: sig.s === 1n ? 2n : sig.s - 1n })) });
    const err = failure(verifyStamp({ header: changed, payload, expectedPublicKeys: [key.publicKeyCompressed] }));
    assert.equal(err.kind, 'STAMP_SIGNATURE_INVALID');
  });

  it('a stamp by another key: STAMP_KEY_MISMATCH (and with that key claimed, STAMP_SIGNATURE_INVALID)', async () => {
    const expected = newKeyPairHex();
    const other = newKeyPairHex();
    const header = await turnkeyStamp(payload, other);
    const err = failure(verifyStamp({ header, payload, expectedPublicKeys: [expected.publicKeyCompressed] }));
    assert.equal(err.kind, 'STAMP_KEY_MISMATCH');
    assert.equal(err.reason, 'stamp was signed by a key that is not an active session key for this request');
    assert.equal(failure(verifyStamp({ header, payload, expectedPublicKeys: [] })).kind, 'STAMP_KEY_MISMATCH');
    // Signed by `other` but claiming `expected`'s key: the signature check catches it.
    const forged = encodeStampJson({ ...decodeStampJson(header), publicKey: expected.publicKeyCompressed });
    assert.equal(failure(verifyStamp({ header: forged, payload, expectedPublicKeys: [expected.publicKeyCompressed] })).kind, 'STAMP_SIGNATURE_INVALID');
  });

  it('malformed headers: STAMP_MALFORMED naming the failed check', async () => {
    const key = newKeyPairHex();
    const good = decodeStampJson(await turnkeyStamp(payload, key));
    let offCurve = '';
    for (let x = 1n; offCurve === ''; x++) {
      const candidate = '02' + x.toString(16).padStart(64, '0');
      try {
        p256.Point.fromHex(candidate);
      } catch {
        offCurve = candidate;
      }
    }
    const cases: [unknown, string][] = [
      [undefined, 'HEADER'],
      ['', 'HEADER'],
      ['   ', 'HEADER'],
      ['A'.repeat(5000), 'HEADER'],
      ['not base64!', 'BASE64'],
      ['abc', 'JSON'], // decodes to bytes that are not JSON
      ['QQ=', 'BASE64'], // bad padding
      ['QR', 'BASE64'], // non-canonical trailing bits
      [encodeStampJson(good).slice(0, 10) + '-+' + encodeStampJson(good).slice(12), 'BASE64'], // both alphabets mixed
      [Buffer.from([0xff, 0xfe, 0xfd]).toString('base64url'), 'JSON'], // not UTF-8
      [Buffer.from('{"publicKey":').toString('base64url'), 'JSON'], // truncated JSON
      [encodeStampJson([good]), 'JSON'],
      [encodeStampJson('string'), 'JSON'],
      [encodeStampJson(null), 'JSON'],
      [encodeStampJson({ publicKey: good.publicKey, scheme: good.scheme }), 'FIELDS'],
      [encodeStampJson({ ...good, signature: 42 }), 'FIELDS'],
      [encodeStampJson({ ...good, publicKey: null }), 'FIELDS'],
      [encodeStampJson({ ...good, scheme: 'SIGNATURE_SCHEME_TK_API_SECP256K1' }), 'SCHEME'],
      [encodeStampJson({ ...good, scheme: '' }), 'SCHEME'],
      [encodeStampJson({ ...good, publicKey: key.publicKey }), 'PUBLIC_KEY'], // uncompressed is not the stamp format
      [encodeStampJson({ ...good, publicKey: good.publicKey.slice(0, 64) }), 'PUBLIC_KEY'],
      [encodeStampJson({ ...good, publicKey: '04' + good.publicKey.slice(2) }), 'PUBLIC_KEY'],
      [encodeStampJson({ ...good, publicKey: offCurve }), 'PUBLIC_KEY'],
      [encodeStampJson({ ...good, signature: good.signature.slice(0, -2) }), 'SIGNATURE'],
      [encodeStampJson({ ...good, signature: good.signature + '00' }), 'SIGNATURE'],
      [encodeStampJson({ ...good, signature: 'zz' + good.signature.slice(2) }), 'SIGNATURE'],
      [encodeStampJson({ ...good, signature: toHexString(p256.Signature.fromBytes(hex(good.signature), 'der').toBytes('compact')) }), 'SIGNATURE'],
      [encodeStampJson({ ...good, signature: '' }), 'SIGNATURE'],
    ];
    for (const [header, check] of cases) {
      const err = failure(verifyStamp({ header, payload, expectedPublicKeys: [key.publicKeyCompressed] }));
      assert.equal(err.kind, 'STAMP_MALFORMED', `header ${String(header).slice(0, 40)}`);
      assert.equal(err.check, check, `header ${String(header).slice(0, 40)}: ${err.reason}`);
      assert.ok(err.reason.length > 10);
    }
  });

  it('extra JSON members are ignored', async () => {
    const key = newKeyPairHex();
    const good = decodeStampJson(await turnkeyStamp(payload, key));
    assert.equal(verifyStamp({ header: encodeStampJson({ ...good, note: 'x' }), payload }).ok, true);
  });

  it('assertStamp throws a StampError carrying kind and reason', async () => {
    const key = newKeyPairHex();
    const header = await turnkeyStamp(payload, key);
    assert.equal(assertStamp({ header, payload }), key.publicKeyCompressed);
    assert.throws(
      () => assertStamp({ header, payload: 'other' }),
      (e: unknown) => e instanceof StampError && e.kind === 'STAMP_SIGNATURE_INVALID' && e.message === e.reason,
    );
  });
});

describe('createStamp (client side, used by the CLI)', () => {
  it('produces the ApiKeyStamper shape, verifies here and with @turnkey/crypto verifyStampSignature', async () => {
    const key = newKeyPairHex();
    const header = createStamp(payload, hex(key.privateKey));
    assert.doesNotMatch(header, /[=+/]/);
    const json = decodeStampJson(header);
    assert.deepEqual(Object.keys(json), ['publicKey', 'scheme', 'signature']);
    assert.equal(json.scheme, STAMP_SCHEME);
    assert.equal(json.publicKey, key.publicKeyCompressed);
    assert.equal(await verifyStampSignature(json.publicKey, json.signature, payload), true);
    assert.equal(verifyStamp({ header, payload, expectedPublicKeys: [key.publicKeyCompressed] }).ok, true);
    const parsed = parseStamp(header);
    assert.ok(parsed.ok);
    assert.equal(isHighS(parseDerSignature(parsed.stamp.signature) ?? { r: 0n, s: 0n }), false);
    // Same structure as the official stamper's output for the same key.
    assert.deepEqual(Object.keys(decodeStampJson(await turnkeyStamp(payload, key))), Object.keys(json));
  });
});
