// Passkeys (src/wallet/webauthn.ts) against a software authenticator: a P-256 key made
// here, attestationObject (fmt "none") and authenticatorData assembled by hand in CBOR,
// clientDataJSON with type, challenge and origin, assertions signed over
// authenticatorData || SHA-256(clientDataJSON).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { verifyPasskeyAssertion, verifyPasskeyRegistration, type StoredPasskey } from '../src/wallet/webauthn.js';
import { WalletAuthError } from '../src/wallet/errors.js';
import { FLAG_AT, FLAG_UP, RP, SoftwareAuthenticator, b64u } from './support/webauthn-authenticator.js';


async function refused(promise: Promise<unknown>, reason: string, detail: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof WalletAuthError, String(error));
    assert.equal(error.reason, reason);
    assert.match(error.detail, detail);
    return true;
  });
}

const challenge = (): string => b64u(randomBytes(32));

async function registered(authenticator: SoftwareAuthenticator): Promise<StoredPasskey> {
  const c = challenge();
  return verifyPasskeyRegistration({ attestation: authenticator.register(c), expectedChallenge: c, webauthn: RP });
}

describe('wallet-auth webauthn', () => {
  it('registers a passkey: its COSE key, counter 0 and the known transports', async () => {
    const authenticator = new SoftwareAuthenticator();
    const c = challenge();
    const passkey = await verifyPasskeyRegistration({ attestation: authenticator.register(c), expectedChallenge: c, webauthn: RP });
    assert.deepEqual(passkey, {
      credentialId: b64u(authenticator.credentialId),
      publicKey: b64u(authenticator.cose),
      counter: 0,
      transports: ['hybrid', 'internal'],
    });
  });

  it('verifies assertions with a rising counter and returns it; a replayed or lower counter is refused', async () => {
    const authenticator = new SoftwareAuthenticator();
    let stored = await registered(authenticator);
    for (const expected of [1, 2]) {
      const c = challenge();
      const { newCounter } = await verifyPasskeyAssertion({ assertion: authenticator.assert(c), expectedChallenge: c, webauthn: RP, credential: stored });
      assert.equal(newCounter, expected);
      stored = { ...stored, counter: newCounter };
    }
    // The same assertion again, and a fresh one from a clone still at counter 1.
    const c = challenge();
    const assertion = authenticator.assert(c);
    stored = { ...stored, counter: (await verifyPasskeyAssertion({ assertion, expectedChallenge: c, webauthn: RP, credential: stored })).newCounter };
    await refused(verifyPasskeyAssertion({ assertion, expectedChallenge: c, webauthn: RP, credential: stored }), 'Invalid passkey signature', /counter/);
    const c2 = challenge();
    await refused(verifyPasskeyAssertion({ assertion: authenticator.assert(c2, { counter: 1 }), expectedChallenge: c2, webauthn: RP, credential: stored }), 'Invalid passkey signature', /counter/);
  });

  it('an authenticator without a counter (always 0) keeps verifying', async () => {
    const authenticator = new SoftwareAuthenticator();
    const stored = await registered(authenticator);
    for (let i = 0; i < 2; i++) {
      const c = challenge();
      assert.equal((await verifyPasskeyAssertion({ assertion: authenticator.assert(c, { counter: 0 }), expectedChallenge: c, webauthn: RP, credential: stored })).newCounter, 0);
    }
  });

  it('refuses registrations with a wrong origin, challenge, rpId, ceremony type, missing user verification or another credential id', async () => {
    const authenticator = new SoftwareAuthenticator();
    const c = challenge();
    const reason = 'Invalid passkey registration';
    const attempt = (attestation: ReturnType<SoftwareAuthenticator['register']>, expectedChallenge = c) =>
      verifyPasskeyRegistration({ attestation, expectedChallenge, webauthn: RP });
    await refused(attempt(authenticator.register(c, { origin: 'https://evil.example' })), reason, /origin/i);
    await refused(attempt(authenticator.register(challenge())), reason, /challenge/i);
    await refused(attempt(authenticator.register(c, { rpId: 'evil.example' })), reason, /RP ID/i);
    await refused(attempt(authenticator.register(c, { type: 'webauthn.get' })), reason, /type/i);
    await refused(attempt(authenticator.register(c, { flags: FLAG_UP | FLAG_AT })), reason, /verif/i);
    await refused(attempt({ ...authenticator.register(c), credentialId: b64u(randomBytes(32)) }), reason, /credential/i);
    await refused(attempt({ ...authenticator.register(c), attestationObject: b64u('not cbor') }), reason, /./);
    // A listed subdomain origin is fine.
    assert.equal((await attempt(authenticator.register(c, { origin: 'https://app.acme.example' }))).counter, 0);
  });

  it('refuses assertions with a wrong origin, challenge or rpId, another key, tampered data, another credential or no user verification', async () => {
    const authenticator = new SoftwareAuthenticator();
    const stored = await registered(authenticator);
    const reason = 'Invalid passkey signature';
    const c = challenge();
    const attempt = (assertion: ReturnType<SoftwareAuthenticator['assert']>, expectedChallenge = c) =>
      verifyPasskeyAssertion({ assertion, expectedChallenge, webauthn: RP, credential: stored });
    await refused(attempt(authenticator.assert(c, { origin: 'https://acme.example.evil.example' })), reason, /origin/i);
    await refused(attempt(authenticator.assert(c, { origin: 'http://acme.example' })), reason, /origin/i);
    await refused(attempt(authenticator.assert(challenge())), reason, /challenge/i);
    await refused(attempt(authenticator.assert(c), challenge()), reason, /challenge/i);
    await refused(attempt(authenticator.assert(c, { rpId: 'evil.example' })), reason, /RP ID/i);
    await refused(attempt(authenticator.assert(c, { signer: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey })), reason, /verif/i);
    await refused(attempt(authenticator.assert(c, { flags: FLAG_UP })), reason, /verif/i);
    const good = authenticator.assert(c);
    const tampered = Buffer.from(good.authenticatorData, 'base64url');
    tampered[tampered.length - 1]! ^= 0x01;
    await refused(attempt({ ...good, authenticatorData: b64u(tampered) }), reason, /verif/i);
    await refused(attempt({ ...good, credentialId: b64u(randomBytes(32)) }), reason, /another credential/);
    // Nothing above moved the stored counter: the untouched assertion still verifies, in standard base64 too.
    const toBase64 = (v: string): string => Buffer.from(v, 'base64url').toString('base64');
    const inBase64 = { ...good, clientDataJson: toBase64(good.clientDataJson), authenticatorData: toBase64(good.authenticatorData), signature: toBase64(good.signature) };
    assert.equal((await attempt(inBase64)).newCounter, authenticator.counter);
  });
});
