// Embedded wallets in production, end to end over HTTP: the OTP arrives as a mail (the
// outbox, as without SMTP_URL) and is read from it; wrong codes spend the code's tries;
// OIDC tokens are verified with jose against the environment's configured issuer (inline
// JWKS); magic values and the sandbox signature literal are refused; the export bundle is
// signed by the service signer and opened with @turnkey/crypto's decryptExportBundle.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decryptCredentialBundle } from '@turnkey/crypto';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { ManualClock } from '../src/engine/clock.js';
import { keyPairFromPrivateKey, keyPairToHex, type P256KeyPairHex } from '../src/crypto/p256.js';
import { validateMnemonic } from '../src/crypto/wallet-secrets.js';
import { mailedCode as mailedCodeOf } from './support/outbox.js';
import { serviceForSuite } from './support/service.js';
import { assertError, assertStatus, createCustomer, customerAccounts } from './support/assertions.js';
import { decryptExportAsIntegrator, hex, newKeyPairHex, toHexString, turnkeyStamp } from './support/crypto-fixtures.js';
import { RP, SoftwareAuthenticator, b64u } from './support/webauthn-authenticator.js';
import { randomBytes } from 'node:crypto';

const ISSUER = 'https://idp.example.com';
const AUDIENCE = 'wallet-app';

describe('embedded wallet in production: real OTP mail, OIDC, stamps and signed export', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  let signingKey: CryptoKey;

  const svc = serviceForSuite({ clock });
  before(async () => {
    const pair = await generateKeyPair('ES256', { extractable: true });
    signingKey = pair.privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    const res = await svc.request('PATCH', '/config', {
      auth: 'production',
      body: { embeddedWalletConfig: { appName: 'Acme Pay', oidcIssuers: [{ issuer: ISSUER, jwks: { keys: [jwk] }, audience: AUDIENCE }], webauthn: { rpId: RP.rpId, rpName: 'Acme', origins: RP.origins } } },
    });
    assertStatus(res, 200);
  });

  const prod = { auth: 'production' as const };

  function oidcToken(sub: string, iatMs = clock.now() - 1000): Promise<string> {
    return new SignJWT({ email: `${sub}@example.com` })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'JWT' })
      .setIssuer(ISSUER)
      .setSubject(sub)
      .setAudience(AUDIENCE)
      .setIssuedAt(Math.floor(iatMs / 1000))
      .setExpirationTime(Math.floor(iatMs / 1000) + 3600)
      .sign(signingKey);
  }

  const mailedCode = (to: string, seen: number): Promise<string> => mailedCodeOf(svc, to, seen);

  function opened(session: any, client: P256KeyPairHex): P256KeyPairHex {
    return keyPairToHex(keyPairFromPrivateKey(hex(decryptCredentialBundle(session.encryptedSessionSigningKey, client.privateKey))));
  }

  it('EMAIL_OTP: the mailed code opens a session; magic values and spent codes are refused', async () => {
    const email = 'prod-user@example.com';
    const customer = await createCustomer(svc, { email }, 'production');
    const accountId = (await customerAccounts(svc, customer.id, 'production')).find((a) => a.type === 'EMBEDDED_WALLET').id;
    const created = await svc.request('POST', '/auth/credentials', { ...prod, body: { type: 'EMAIL_OTP', accountId } });
    assertStatus(created, 201);
    const first = await mailedCode(email, 0);
    assert.equal(first.length, 6);
    const verifyUrl = `/auth/credentials/${created.body.id}/verify`;
    const client = newKeyPairHex();
    const wrong = first === '000000' ? '111111' : '000000';
    // Five tries: four wrong ones leave the code usable...
    for (let i = 0; i < 4; i++) {
      assert.equal(assertError(await svc.request('POST', verifyUrl, { ...prod, body: { otp: wrong, clientPublicKey: client.publicKey } }), 401, 'UNAUTHORIZED').reason, 'Invalid OTP code');
    }
    // ...the fifth spends it, and then even the right code is refused.
    assertError(await svc.request('POST', verifyUrl, { ...prod, body: { otp: wrong, clientPublicKey: client.publicKey } }), 401, 'UNAUTHORIZED');
    assert.equal(assertError(await svc.request('POST', verifyUrl, { ...prod, body: { otp: first, clientPublicKey: client.publicKey } }), 401, 'UNAUTHORIZED').reason, 'Invalid OTP code');

    const challengeUrl = `/auth/credentials/${created.body.id}/challenge`;
    assertError(await svc.request('POST', challengeUrl, { ...prod, body: {} }), 429, 'RATE_LIMITED');
    clock.advance(30_000);
    assertStatus(await svc.request('POST', challengeUrl, { ...prod, body: {} }), 200);
    const second = await mailedCode(email, 1);
    const ok = await svc.request('POST', verifyUrl, { ...prod, body: { otp: second, clientPublicKey: client.publicKey } });
    assertStatus(ok, 200);
    const sessionKey = opened(ok.body, client);
    // A code answers once.
    assertError(await svc.request('POST', verifyUrl, { ...prod, body: { otp: second, clientPublicKey: newKeyPairHex().publicKey } }), 401, 'UNAUTHORIZED');

    // OAUTH as a second credential, through the signed retry with a real stamp.
    const sandboxToken = await svc.request('POST', '/auth/credentials', { ...prod, body: { type: 'OAUTH', accountId, oidcToken: 'sandbox-valid-oidc-token' } });
    assertStatus(sandboxToken, 202);
    const body = { type: 'OAUTH', accountId, oidcToken: await oidcToken('alice') };
    const step1 = await svc.request('POST', '/auth/credentials', { ...prod, body });
    assertStatus(step1, 202);
    const literal = await svc.request('POST', '/auth/credentials', { ...prod, body, headers: { 'Service-Wallet-Signature': 'sandbox-valid-signature', 'Request-Id': step1.body.requestId } });
    assert.equal(assertError(literal, 401, 'UNAUTHORIZED').reason, 'Invalid Service-Wallet-Signature');
    const stamp = await turnkeyStamp(step1.body.payloadToSign, sessionKey);
    const added = await svc.request('POST', '/auth/credentials', { ...prod, body, headers: { 'Service-Wallet-Signature': stamp, 'Request-Id': step1.body.requestId } });
    assertStatus(added, 201);
    assert.equal(added.body.nickname, 'alice@example.com');

    const oauthVerify = `/auth/credentials/${added.body.id}/verify`;
    const oauthClient = newKeyPairHex();
    assert.equal(assertError(await svc.request('POST', oauthVerify, { ...prod, body: { oidcToken: 'sandbox-valid-oidc-token', clientPublicKey: oauthClient.publicKey } }), 401, 'UNAUTHORIZED').reason, 'Invalid OIDC token');
    assert.equal(assertError(await svc.request('POST', oauthVerify, { ...prod, body: { oidcToken: await oidcToken('mallory'), clientPublicKey: oauthClient.publicKey } }), 401, 'UNAUTHORIZED').reason, 'Invalid OIDC token');
    const stale = await oidcToken('alice', clock.now() - 61_000);
    assert.equal(assertError(await svc.request('POST', oauthVerify, { ...prod, body: { oidcToken: stale, clientPublicKey: oauthClient.publicKey } }), 401, 'UNAUTHORIZED').reason, 'Invalid OIDC token');
    assertStatus(await svc.request('POST', oauthVerify, { ...prod, body: { oidcToken: await oidcToken('alice'), clientPublicKey: oauthClient.publicKey } }), 200);

    // Export: signed by the service signer; decryptExportBundle checks it with the override.
    const exportClient = newKeyPairHex();
    const exportUrl = `/internal-accounts/${accountId}/export`;
    const e1 = await svc.request('POST', exportUrl, { ...prod, body: { clientPublicKey: exportClient.publicKey } });
    assertStatus(e1, 202);
    const e2 = await svc.request('POST', exportUrl, {
      ...prod,
      body: { clientPublicKey: exportClient.publicKey },
      headers: { 'Service-Wallet-Signature': await turnkeyStamp(e1.body.payloadToSign, sessionKey), 'Request-Id': e1.body.requestId },
    });
    assertStatus(e2, 200);
    const signer = toHexString(svc.service.services.walletSigner.publicKey);
    assert.equal(JSON.parse(e2.body.encryptedWalletCredentials).enclaveQuorumPublic, signer);
    const mnemonic = await decryptExportAsIntegrator(e2.body.encryptedWalletCredentials, exportClient.privateKey, accountId, signer);
    assert.ok(validateMnemonic(mnemonic));
  });

  it('EMAIL_OTP: a code past expirationSeconds is refused', async () => {
    const email = 'late-user@example.com';
    const customer = await createCustomer(svc, { email }, 'production');
    const accountId = (await customerAccounts(svc, customer.id, 'production')).find((a) => a.type === 'EMBEDDED_WALLET').id;
    const created = await svc.request('POST', '/auth/credentials', { ...prod, body: { type: 'EMAIL_OTP', accountId } });
    assertStatus(created, 201);
    const code = await mailedCode(email, 0);
    clock.advance(600_000);
    const late = await svc.request('POST', `/auth/credentials/${created.body.id}/verify`, { ...prod, body: { otp: code, clientPublicKey: newKeyPairHex().publicKey } });
    assert.equal(assertError(late, 401, 'UNAUTHORIZED').reason, 'Invalid OTP code');
    assert.deepEqual((await svc.request('GET', `/auth/sessions?accountId=${accountId}`, prod)).body.data, []);
  });

  it('OAUTH create refuses a stale token and the sandbox literal, and takes a fresh token of the configured issuer', async () => {
    const customer = await createCustomer(svc, {}, 'production');
    const accountId = (await customerAccounts(svc, customer.id, 'production')).find((a) => a.type === 'EMBEDDED_WALLET').id;
    for (const refused of ['sandbox-valid-oidc-token', await oidcToken('bob', clock.now() - 120_000)]) {
      const res = await svc.request('POST', '/auth/credentials', { ...prod, body: { type: 'OAUTH', accountId, oidcToken: refused } });
      assert.equal(assertError(res, 401, 'UNAUTHORIZED').reason, 'Invalid OIDC token');
    }
    assert.deepEqual((await svc.request('GET', `/auth/credentials?accountId=${accountId}`, prod)).body.data, []);
    assertStatus(await svc.request('POST', '/auth/credentials', { ...prod, body: { type: 'OAUTH', accountId, oidcToken: await oidcToken('bob') } }), 201);
  });

  it('PASSKEY: WebAuthn registration and assertion for the relying party; a replayed counter and a wrong challenge are refused', async () => {
    const customer = await createCustomer(svc, {}, 'production');
    const accountId = (await customerAccounts(svc, customer.id, 'production')).find((a) => a.type === 'EMBEDDED_WALLET').id;
    const authenticator = new SoftwareAuthenticator();
    const registration = b64u(randomBytes(32));
    const forged = await svc.request('POST', '/auth/credentials', { ...prod, body: { type: 'PASSKEY', accountId, nickname: 'laptop', challenge: b64u(randomBytes(32)), attestation: authenticator.register(registration) } });
    assert.equal(assertError(forged, 401, 'UNAUTHORIZED').reason, 'Invalid passkey registration');
    const created = await svc.request('POST', '/auth/credentials', { ...prod, body: { type: 'PASSKEY', accountId, nickname: 'laptop', challenge: registration, attestation: authenticator.register(registration) } });
    assertStatus(created, 201);

    const client = newKeyPairHex();
    const verifyUrl = `/auth/credentials/${created.body.id}/verify`;
    const challenge = async (): Promise<any> => {
      const res = await svc.request('POST', `/auth/credentials/${created.body.id}/challenge`, { ...prod, body: { clientPublicKey: client.publicKey } });
      assertStatus(res, 200);
      return res.body;
    };
    const first = await challenge();
    const wrongChallenge = await svc.request('POST', verifyUrl, { ...prod, body: { assertion: authenticator.assert(b64u(randomBytes(32))), clientPublicKey: client.publicKey }, headers: { 'Request-Id': first.requestId } });
    assert.equal(assertError(wrongChallenge, 401, 'UNAUTHORIZED').reason, 'Invalid passkey signature');
    const magic = { ...authenticator.assert(first.challenge), signature: 'sandbox-valid-passkey-signature' };
    assert.equal(assertError(await svc.request('POST', verifyUrl, { ...prod, body: { assertion: magic, clientPublicKey: client.publicKey }, headers: { 'Request-Id': first.requestId } }), 401, 'UNAUTHORIZED').reason, 'Invalid passkey signature');
    const ok = await svc.request('POST', verifyUrl, { ...prod, body: { assertion: authenticator.assert(first.challenge), clientPublicKey: client.publicKey }, headers: { 'Request-Id': first.requestId } });
    assertStatus(ok, 200);
    opened(ok.body, client);

    clock.advance(30_000);
    const second = await challenge();
    const replayed = authenticator.assert(second.challenge, { counter: authenticator.counter });
    assert.equal(assertError(await svc.request('POST', verifyUrl, { ...prod, body: { assertion: replayed, clientPublicKey: client.publicKey }, headers: { 'Request-Id': second.requestId } }), 401, 'UNAUTHORIZED').reason, 'Invalid passkey signature');
    assertStatus(await svc.request('POST', verifyUrl, { ...prod, body: { assertion: authenticator.assert(second.challenge), clientPublicKey: client.publicKey }, headers: { 'Request-Id': second.requestId } }), 200);
  });
});
