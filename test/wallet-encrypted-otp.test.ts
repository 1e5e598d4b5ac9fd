// Encrypted EMAIL_OTP codes (CONTRACT.md "Real clients"), driven as the widely deployed
// client libraries drive them: @turnkey/crypto's encryptOtpCodeToBundle checks the
// otpEncryptionTargetBundle's signature against the signer of GET /config before it
// encrypts to the target; the verificationToken is checked with jose (and with
// @turnkey/crypto's verifyOtpVerificationToken) against the same key; the retry is stamped
// by @turnkey/api-key-stamper with the token's key. Sandbox and production, and a restart.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { decryptCredentialBundle, encryptOtpCodeToBundle, formatHpkeBuf, hpkeEncrypt, verifyOtpVerificationToken } from '@turnkey/crypto';
import { compactVerify } from 'jose';
import { ManualClock } from '../src/engine/clock.js';
import { DATA_FILE } from '../src/engine/store.js';
import { keyPairFromPrivateKey, keyPairToHex, type P256KeyPairHex } from '../src/crypto/p256.js';
import { openPrivateKey } from '../src/crypto/wallet-secrets.js';
import { mailedCode } from './support/outbox.js';
import { serviceForSuite, startTestService, type TestService } from './support/service.js';
import { assertError, assertInvalid, assertStatus, createCustomer, customerAccounts, unique, type Auth } from './support/assertions.js';
import { hex, newKeyPairHex, toHexString, turnkeyStamp } from './support/crypto-fixtures.js';

const GOOGLE_TOKEN =
  [{ alg: 'RS256', typ: 'JWT' }, { iss: 'https://accounts.google.com', sub: 'encrypted-otp' }].map((part) => Buffer.from(JSON.stringify(part)).toString('base64url')).join('.') + '.c2lnbmF0dXJl';

/** The signer of GET /config, which clients trust for target bundles and tokens. */
async function signerOf(svc: TestService, auth: Auth): Promise<string> {
  const res = await svc.request('GET', '/config', { auth });
  assertStatus(res, 200);
  return res.body.embeddedWalletConfig.signerPublicKey;
}

function jwkKey(uncompressedHex: string): KeyObject {
  const bytes = Buffer.from(uncompressedHex, 'hex');
  return createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: bytes.subarray(1, 33).toString('base64url'), y: bytes.subarray(33).toString('base64url') }, format: 'jwk' });
}

/** The token's header and claims, its signature verified with jose against `signer`; both decoders must agree on the claims. */
async function verifiedToken(token: string, signer: string): Promise<{ header: unknown; claims: Record<string, unknown> }> {
  const { payload } = await compactVerify(token, jwkKey(signer), { algorithms: ['ES256'] });
  const header = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString('utf8'));
  const claims = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>;
  assert.deepEqual({ ...(await verifyOtpVerificationToken(token, signer)) }, claims);
  return { header, claims };
}

/** What a target bundle names, with its envelope checked as the client sees it. */
function targetOf(bundle: string, signer: string): string {
  const outer = JSON.parse(bundle);
  assert.deepEqual(Object.keys(outer).sort(), ['data', 'dataSignature', 'enclaveQuorumPublic', 'version']);
  assert.equal(outer.version, 'v1.0.0');
  assert.equal(outer.enclaveQuorumPublic, signer);
  const data = JSON.parse(Buffer.from(outer.data, 'hex').toString('utf8'));
  assert.deepEqual(Object.keys(data), ['targetPublic']);
  assert.match(data.targetPublic, /^04[0-9a-f]{128}$/);
  return data.targetPublic;
}

/** An encryptedOtpBundle to `targetPublic` over any plaintext (for refusals the library would not produce). */
function rawOtpBundle(targetPublic: string, plaintext: string): string {
  return formatHpkeBuf(hpkeEncrypt({ plainTextBuf: new TextEncoder().encode(plaintext), targetKeyBuf: hex(targetPublic) }));
}

describe('encrypted OTP in sandbox', () => {
  // Real time: verifyOtpVerificationToken checks `exp` against Date.now().
  const clock = new ManualClock(Date.now());
  let signer: string;

  const svc = serviceForSuite({ clock });
  before(async () => {
    signer = await signerOf(svc, 'sandbox');
  });

  async function emailCredential(): Promise<{ accountId: string; email: string; credentialId: string; targetBundle: string }> {
    const email = `${unique('e')}@example.com`;
    const customer = await createCustomer(svc, { email });
    const accountId = (await customerAccounts(svc, customer.id)).find((a) => a.type === 'EMBEDDED_WALLET').id;
    const created = await svc.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId } });
    assertStatus(created, 201);
    return { accountId, email, credentialId: created.body.id, targetBundle: created.body.otpEncryptionTargetBundle };
  }

  function verify(credentialId: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<any> {
    return svc.request('POST', `/auth/credentials/${credentialId}/verify`, { body, headers });
  }

  async function liveSessions(accountId: string): Promise<any[]> {
    return (await svc.request('GET', `/auth/sessions?accountId=${accountId}`)).body.data;
  }

  it('GET /config names the service signer; the target bundle is signed by it as the client library checks, and refused once tampered', async () => {
    assert.equal(signer, toHexString(svc.service.services.walletSigner.publicKey));
    const { targetBundle } = await emailCredential();
    targetOf(targetBundle, signer);
    await encryptOtpCodeToBundle('000000', targetBundle, newKeyPairHex().publicKeyCompressed, signer);
    // Another target under the same signature, or another signer, is not trusted.
    const outer = JSON.parse(targetBundle);
    const forged = JSON.stringify({ ...outer, data: Buffer.from(JSON.stringify({ targetPublic: newKeyPairHex().publicKey })).toString('hex') });
    await assert.rejects(encryptOtpCodeToBundle('000000', forged, newKeyPairHex().publicKeyCompressed, signer));
    await assert.rejects(encryptOtpCodeToBundle('000000', targetBundle, newKeyPairHex().publicKeyCompressed, newKeyPairHex().publicKey));
  });

  it('000000 encrypted with a compressed key: 202 with the verificationToken; the retry stamped by that key opens a client-held session', async () => {
    const { accountId, email, credentialId, targetBundle } = await emailCredential();
    const client = newKeyPairHex();
    const body = { encryptedOtpBundle: await encryptOtpCodeToBundle('000000', targetBundle, client.publicKeyCompressed, signer) };
    const step1 = await verify(credentialId, body);
    assertStatus(step1, 202);
    assert.equal(step1.body.type, 'EMAIL_OTP');
    assert.equal(Date.parse(step1.body.expiresAt), clock.now() + 300_000);
    const { header, claims } = await verifiedToken(step1.body.payloadToSign, signer);
    assert.deepEqual(header, { alg: 'ES256', typ: 'JWT' });
    assert.deepEqual(claims, {
      id: step1.body.requestId,
      verification_type: 'OTP_TYPE_EMAIL',
      contact: email,
      organization_id: accountId,
      public_key: client.publicKeyCompressed,
      exp: String(clock.now() + 300_000),
    });
    assert.deepEqual(await liveSessions(accountId), []);

    const retry = async (key: P256KeyPairHex, headers: Record<string, string> = {}): Promise<any> =>
      verify(credentialId, body, { 'Service-Wallet-Signature': await turnkeyStamp(step1.body.payloadToSign, key), 'Request-Id': step1.body.requestId, ...headers });
    assert.equal(assertError(await retry(newKeyPairHex()), 401, 'UNAUTHORIZED').reason, 'Invalid Service-Wallet-Signature');
    const onlyStamp = await verify(credentialId, body, { 'Service-Wallet-Signature': await turnkeyStamp(step1.body.payloadToSign, client) });
    assert.equal(assertError(onlyStamp, 401, 'UNAUTHORIZED').reason, 'Request-Id missing');
    const session = await retry(client);
    assertStatus(session, 200);
    assert.equal(session.body.type, 'EMAIL_OTP');
    assert.equal('encryptedSessionSigningKey' in session.body, false);
    assert.deepEqual((await liveSessions(accountId)).map((s) => s.id), [session.body.id]);
    assert.equal(assertError(await retry(client), 401, 'UNAUTHORIZED').reason, 'Request-Id already used');

    // The client's own key stamps for the session.
    const add = { type: 'OAUTH', accountId, oidcToken: GOOGLE_TOKEN };
    const added1 = await svc.request('POST', '/auth/credentials', { body: add });
    const added = await svc.request('POST', '/auth/credentials', { body: add, headers: { 'Service-Wallet-Signature': await turnkeyStamp(added1.body.payloadToSign, client), 'Request-Id': added1.body.requestId } });
    assertStatus(added, 201);
  });

  it('an uncompressed public_key gets its session key sealed to it', async () => {
    const { accountId, credentialId, targetBundle } = await emailCredential();
    const client = newKeyPairHex();
    const body = { encryptedOtpBundle: await encryptOtpCodeToBundle('000000', targetBundle, client.publicKey, signer) };
    const step1 = await verify(credentialId, body);
    assertStatus(step1, 202);
    assert.equal((await verifiedToken(step1.body.payloadToSign, signer)).claims.public_key, client.publicKey);
    const session = await verify(credentialId, body, { 'Service-Wallet-Signature': await turnkeyStamp(step1.body.payloadToSign, client), 'Request-Id': step1.body.requestId });
    assertStatus(session, 200);
    const sessionKey = keyPairToHex(keyPairFromPrivateKey(hex(decryptCredentialBundle(session.body.encryptedSessionSigningKey, client.privateKey))));
    const exportBody = { clientPublicKey: newKeyPairHex().publicKey };
    const e1 = await svc.request('POST', `/internal-accounts/${accountId}/export`, { body: exportBody });
    const e2 = await svc.request('POST', `/internal-accounts/${accountId}/export`, { body: exportBody, headers: { 'Service-Wallet-Signature': await turnkeyStamp(e1.body.payloadToSign, sessionKey), 'Request-Id': e1.body.requestId } });
    assertStatus(e2, 200);
  });

  it('refusals: a wrong code 401; a malformed, stale or contradicted bundle, both otp and the bundle, or neither 400 naming the field; nothing changes', async () => {
    const { accountId, credentialId, targetBundle } = await emailCredential();
    const client = newKeyPairHex();
    const targetPublic = targetOf(targetBundle, signer);
    const wrong = await verify(credentialId, { encryptedOtpBundle: await encryptOtpCodeToBundle('123456', targetBundle, client.publicKeyCompressed, signer) });
    assert.equal(assertError(wrong, 401, 'UNAUTHORIZED').reason, 'Invalid OTP code');
    const right = await encryptOtpCodeToBundle('000000', targetBundle, client.publicKeyCompressed, signer);
    for (const malformed of [
      'not json',
      '{"encappedPublic":"zz","ciphertext":"00"}',
      JSON.stringify({ encappedPublic: newKeyPairHex().publicKey, ciphertext: '00'.repeat(40) }),
      rawOtpBundle(targetPublic, 'not json'),
      rawOtpBundle(targetPublic, JSON.stringify({ otp_code: '000000', public_key: 'abc' })),
      rawOtpBundle(targetPublic, JSON.stringify({ otp_code: '000000' })),
    ]) {
      assertInvalid(await verify(credentialId, { encryptedOtpBundle: malformed }), 'encryptedOtpBundle');
    }
    assertInvalid(await verify(credentialId, { encryptedOtpBundle: right, otp: '000000' }), 'encryptedOtpBundle');
    assertInvalid(await verify(credentialId, { clientPublicKey: client.publicKeyCompressed }), 'otp');
    assertInvalid(await verify(credentialId, { encryptedOtpBundle: right, clientPublicKey: newKeyPairHex().publicKeyCompressed }), 'clientPublicKey');
    // A challenge makes a new target: a code encrypted to the old one no longer opens.
    clock.advance(30_000);
    const challenged = await svc.request('POST', `/auth/credentials/${credentialId}/challenge`, { body: {} });
    assertStatus(challenged, 200);
    assert.notEqual(targetOf(challenged.body.otpEncryptionTargetBundle, signer), targetPublic);
    assertInvalid(await verify(credentialId, { encryptedOtpBundle: right }), 'encryptedOtpBundle');
    assert.deepEqual(await liveSessions(accountId), []);
    assert.deepEqual(svc.service.services.world.wallets.ofAccount(accountId)!.requests, []);
    // The same body with the new target and the key sent beside it goes through.
    const fresh = await encryptOtpCodeToBundle('000000', challenged.body.otpEncryptionTargetBundle, client.publicKeyCompressed, signer);
    assertStatus(await verify(credentialId, { encryptedOtpBundle: fresh, clientPublicKey: client.publicKeyCompressed }), 202);
  });
});

describe('encrypted OTP in production: the mailed code, the five tries shared with the plain otp', () => {
  const clock = new ManualClock(Date.now());
  const prod = { auth: 'production' as const };
  let signer: string;

  const svc = serviceForSuite({ clock });
  before(async () => {
    signer = await signerOf(svc, 'production');
  });

  function verify(credentialId: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<any> {
    return svc.request('POST', `/auth/credentials/${credentialId}/verify`, { ...prod, body, headers });
  }

  function triesLeft(accountId: string): number | undefined {
    return svc.service.services.world.wallets.ofAccount(accountId)!.credentials[0]!.otp?.triesLeft;
  }

  it('a right code answers 202 and is spent; wrong encrypted codes spend tries as plain ones do; 000000 is a wrong code', async () => {
    const email = `${unique('prod')}@example.com`;
    const customer = await createCustomer(svc, { email }, 'production');
    const accountId = (await customerAccounts(svc, customer.id, 'production')).find((a) => a.type === 'EMBEDDED_WALLET').id;
    const created = await svc.request('POST', '/auth/credentials', { ...prod, body: { type: 'EMAIL_OTP', accountId } });
    assertStatus(created, 201);
    const credentialId = created.body.id;
    const client = newKeyPairHex();
    const encrypted = (code: string, bundle: string, key = client): Promise<string> => encryptOtpCodeToBundle(code, bundle, key.publicKeyCompressed, signer);
    const first = await mailedCode(svc, email, 0);
    const wrong = first === '000000' ? '111111' : '000000';

    // Four wrong (the sandbox value among them) leave the code one try...
    for (let i = 0; i < 4; i++) {
      const refused = await verify(credentialId, { encryptedOtpBundle: await encrypted(wrong, created.body.otpEncryptionTargetBundle) });
      assert.equal(assertError(refused, 401, 'UNAUTHORIZED').reason, 'Invalid OTP code');
      assert.equal(triesLeft(accountId), 4 - i);
    }
    // ...and the right one still opens: 202, the code spent, the token's key stamps the retry.
    const body = { encryptedOtpBundle: await encrypted(first, created.body.otpEncryptionTargetBundle) };
    const step1 = await verify(credentialId, body);
    assertStatus(step1, 202);
    assert.equal(triesLeft(accountId), undefined);
    assert.equal((await verifiedToken(step1.body.payloadToSign, signer)).claims.contact, email);
    assert.equal(assertError(await verify(credentialId, { otp: first, clientPublicKey: newKeyPairHex().publicKey }), 401, 'UNAUTHORIZED').reason, 'Invalid OTP code');
    const literal = await verify(credentialId, body, { 'Service-Wallet-Signature': 'sandbox-valid-signature', 'Request-Id': step1.body.requestId });
    assert.equal(assertError(literal, 401, 'UNAUTHORIZED').reason, 'Invalid Service-Wallet-Signature');
    const session = await verify(credentialId, body, { 'Service-Wallet-Signature': await turnkeyStamp(step1.body.payloadToSign, client), 'Request-Id': step1.body.requestId });
    assertStatus(session, 200);
    assert.equal('encryptedSessionSigningKey' in session.body, false);

    // A new code (and a new key: the first is its session's): two wrong plain and three wrong encrypted tries spend it; then neither form opens.
    const next = newKeyPairHex();
    clock.advance(30_000);
    const challenged = await svc.request('POST', `/auth/credentials/${credentialId}/challenge`, { ...prod, body: {} });
    assertStatus(challenged, 200);
    const second = await mailedCode(svc, email, 1);
    const other = newKeyPairHex().publicKey;
    const wrongSecond = second === '000000' ? '111111' : '000000';
    for (let i = 0; i < 2; i++) assertError(await verify(credentialId, { otp: wrongSecond, clientPublicKey: other }), 401, 'UNAUTHORIZED');
    for (let i = 0; i < 3; i++) assertError(await verify(credentialId, { encryptedOtpBundle: await encrypted(wrongSecond, challenged.body.otpEncryptionTargetBundle, next) }), 401, 'UNAUTHORIZED');
    assert.equal(triesLeft(accountId), undefined);
    const spent = await verify(credentialId, { encryptedOtpBundle: await encrypted(second, challenged.body.otpEncryptionTargetBundle, next) });
    assert.equal(assertError(spent, 401, 'UNAUTHORIZED').reason, 'Invalid OTP code');
    assert.equal(assertError(await verify(credentialId, { otp: second, clientPublicKey: other }), 401, 'UNAUTHORIZED').reason, 'Invalid OTP code');
    assert.deepEqual((await svc.request('GET', `/auth/sessions?accountId=${accountId}`, prod)).body.data.map((s: any) => s.id), [session.body.id]);
  });
});

describe('encrypted OTP across restarts: the target key is kept sealed', () => {
  /** A service on `dataDir` for `use`, stopped (its data kept) whatever `use` does. */
  async function across<T>(clock: ManualClock, dataDir: string | undefined, use: (svc: TestService) => Promise<T>): Promise<{ result: T; dataDir: string; report: string }> {
    const svc = await startTestService({ clock, ...(dataDir === undefined ? {} : { dataDir }) });
    try {
      return { result: await use(svc), dataDir: svc.dataDir, report: svc.reportLines.join('\n') };
    } finally {
      await svc.stop({ keepData: true });
    }
  }

  it('a code encrypted to a target issued before a restart opens after it, its login finishes after another; the key is nowhere in the clear', async () => {
    const clock = new ManualClock(Date.now());
    const client = newKeyPairHex();
    const first = await across(clock, undefined, async (svc) => {
      const signer = await signerOf(svc, 'sandbox');
      const customer = await createCustomer(svc, { email: 'restart-otp@example.com' });
      const accountId = (await customerAccounts(svc, customer.id)).find((a) => a.type === 'EMBEDDED_WALLET').id;
      const created = await svc.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId } });
      assertStatus(created, 201);
      const target = svc.service.services.world.wallets.ofAccount(accountId)!.credentials[0]!.otpTarget!;
      return {
        credentialId: created.body.id as string,
        targetPrivate: openPrivateKey(svc.service.services.masterKey, `otp-target:${created.body.id}`, target.sealedPrivateKey),
        body: { encryptedOtpBundle: await encryptOtpCodeToBundle('000000', created.body.otpEncryptionTargetBundle, client.publicKeyCompressed, signer) },
      };
    });
    const dataDir = first.dataDir;
    try {
      const { credentialId, targetPrivate, body } = first.result;
      const url = `/auth/credentials/${credentialId}/verify`;
      const second = await across(clock, dataDir, async (svc) => {
        const step1 = await svc.request('POST', url, { body });
        assertStatus(step1, 202);
        return step1.body;
      });
      const third = await across(clock, dataDir, async (svc) => {
        const stamp = await turnkeyStamp(second.result.payloadToSign, client);
        assertStatus(await svc.request('POST', url, { body, headers: { 'Service-Wallet-Signature': stamp, 'Request-Id': second.result.requestId } }), 200);
      });
      const stored = readFileSync(join(dataDir, DATA_FILE));
      assert.equal(stored.indexOf(Buffer.from(targetPrivate)), -1, 'the target private key is not stored in the clear');
      assert.equal(stored.indexOf(Buffer.from(toHexString(targetPrivate))), -1, 'nor its hex');
      assert.equal([first.report, second.report, third.report].join('\n').includes(toHexString(targetPrivate)), false, 'nor reported');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
