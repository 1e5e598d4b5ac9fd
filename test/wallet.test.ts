// Embedded-wallet credentials, sessions, the signed-retry protocol and export, in sandbox
// (SERVICE_SPEC parts 4 and 5, CONTRACT.md "Embedded-wallet API"), driven over HTTP as an
// integrator would, with real client keys: @turnkey/crypto opens the session keys and
// @turnkey/api-key-stamper makes the stamps. Time moves by ManualClock.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { decryptCredentialBundle, hpkeDecrypt } from '@turnkey/crypto';
import { validateMnemonic } from '../src/crypto/wallet-secrets.js';
import { ManualClock } from '../src/engine/clock.js';
import { serviceForSuite, startTestService } from './support/service.js';
import { ID_RE, ISO_TIME, assertError, assertInvalid, assertStatus, createCustomer, customerAccounts, unique } from './support/assertions.js';
import { hex, newKeyPairHex, turnkeyStamp } from './support/crypto-fixtures.js';
import { HoldingClock } from './support/holding-clock.js';
import { until } from './support/money.js';
import { keyPairFromPrivateKey, keyPairToHex, type P256KeyPairHex } from '../src/crypto/p256.js';

const JWT = (claims: Record<string, unknown>): string =>
  [{ alg: 'RS256', typ: 'JWT' }, claims].map((part) => Buffer.from(JSON.stringify(part)).toString('base64url')).join('.') + '.c2lnbmF0dXJl';
const GOOGLE_TOKEN = JWT({ iss: 'https://accounts.google.com', sub: 'google-user-1', email: 'wallet@example.com' });

interface LoggedIn {
  id: string;
  /** The session key pair, opened from encryptedSessionSigningKey with @turnkey/crypto. */
  key: P256KeyPairHex;
}

describe('embedded wallet: credentials, sessions, signed retries, export (sandbox)', () => {
  // Holds timers back when a test needs a moment past an expiry that its timer has not reached.
  const clock = new HoldingClock(Date.UTC(2026, 0, 1));

  const svc = serviceForSuite({ clock });

  async function walletAccount(email = `${unique('w')}@example.com`): Promise<{ customerId: string; accountId: string }> {
    const customer = await createCustomer(svc, { email });
    const wallet = (await customerAccounts(svc, customer.id)).find((a) => a.type === 'EMBEDDED_WALLET');
    assert.ok(wallet, 'the customer has an embedded wallet');
    return { customerId: customer.id, accountId: wallet.id };
  }

  async function credentials(accountId: string): Promise<any[]> {
    const res = await svc.request('GET', `/auth/credentials?accountId=${accountId}`);
    assertStatus(res, 200);
    return res.body.data;
  }

  async function sessions(accountId: string): Promise<any[]> {
    const res = await svc.request('GET', `/auth/sessions?accountId=${accountId}`);
    assertStatus(res, 200);
    return res.body.data;
  }

  async function verifyEmail(credentialId: string): Promise<LoggedIn> {
    const client = newKeyPairHex();
    const res = await svc.request('POST', `/auth/credentials/${credentialId}/verify`, { body: { otp: '000000', clientPublicKey: client.publicKey } });
    assertStatus(res, 200);
    return opened(res.body, client);
  }

  function opened(session: any, client: P256KeyPairHex): LoggedIn {
    const privateKey = decryptCredentialBundle(session.encryptedSessionSigningKey, client.privateKey);
    return { id: session.id, key: keyPairToHex(keyPairFromPrivateKey(hex(privateKey))) };
  }

  /** A wallet with a verified EMAIL_OTP credential and one session. */
  async function walletWithSession(): Promise<{ accountId: string; customerId: string; credentialId: string; session: LoggedIn }> {
    const { accountId, customerId } = await walletAccount();
    const created = await svc.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId } });
    assertStatus(created, 201);
    return { accountId, customerId, credentialId: created.body.id, session: await verifyEmail(created.body.id) };
  }

  /** True while the session is on the wallet: its expiry timer has not run. */
  function onWallet(accountId: string, sessionId: string): boolean {
    return svc.service.services.world.wallets.ofAccount(accountId)!.sessions.some((s) => s.id === sessionId);
  }

  /** The session's expiresAt, as the wallet's sessions list it. */
  async function expiryOf(accountId: string, sessionId: string): Promise<number> {
    return Date.parse((await sessions(accountId)).find((s) => s.id === sessionId).expiresAt);
  }

  /**
   * Runs `check` at the session's `expiresAt` with its expiry timer fallen due and held (the
   * session still on the wallet), then lets the timers go.
   */
  async function atHeldExpiry(accountId: string, sessionId: string, expiresAt: number, check: () => Promise<void>): Promise<void> {
    clock.hold();
    try {
      clock.advance(expiresAt - clock.now());
      await svc.service.services.engine.settled();
      assert.ok(clock.heldCount > 0 && onWallet(accountId, sessionId), 'the expiry timer fell due and is held: the session is still on the wallet');
      await check();
    } finally {
      clock.release();
    }
  }

  async function signed(method: string, path: string, body: unknown, key: P256KeyPairHex | 'sandbox'): Promise<{ challenge: any; retry: (over?: { body?: unknown; headers?: Record<string, string> }) => Promise<any> }> {
    const first = await svc.request(method, path, body === undefined ? {} : { body });
    assertStatus(first, 202);
    const challenge = first.body;
    const header = key === 'sandbox' ? 'sandbox-valid-signature' : await turnkeyStamp(challenge.payloadToSign, key);
    return {
      challenge,
      retry: (over = {}) => {
        const sent = over.body ?? body;
        return svc.request(method, path, {
          ...(sent === undefined ? {} : { body: sent }),
          headers: { 'Service-Wallet-Signature': header, 'Request-Id': challenge.requestId, ...(over.headers ?? {}) },
        });
      },
    };
  }

  it('first credential answers 201 AuthMethod; the list shows it; verify opens a session the client can open', async () => {
    const { accountId } = await walletAccount('first@example.com');
    const res = await svc.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId } });
    assertStatus(res, 201);
    assert.match(res.body.id, ID_RE('AuthMethod'));
    // An AuthMethod, and for EMAIL_OTP the target its code may be encrypted to (CONTRACT.md "Real clients").
    assert.deepEqual(Object.keys(res.body).sort(), ['accountId', 'createdAt', 'id', 'nickname', 'otpEncryptionTargetBundle', 'type', 'updatedAt']);
    assert.equal(res.body.nickname, 'first@example.com');
    const { otpEncryptionTargetBundle: _target, ...authMethod } = res.body;
    assert.deepEqual(await credentials(accountId), [authMethod]);

    const client = newKeyPairHex();
    const verified = await svc.request('POST', `/auth/credentials/${res.body.id}/verify`, { body: { otp: '000000', clientPublicKey: client.publicKey } });
    assertStatus(verified, 200);
    assert.match(verified.body.id, ID_RE('Session'));
    assert.equal(verified.body.type, 'EMAIL_OTP');
    assert.equal(Date.parse(verified.body.expiresAt) - clock.now(), 900_000);
    const session = opened(verified.body, client);
    assert.equal(session.key.privateKey.length, 64);
    const listed = await sessions(accountId);
    assert.equal(listed.length, 1);
    assert.equal(listed[0].id, verified.body.id);
    assert.equal(listed[0].encryptedSessionSigningKey, undefined);
  });

  it('verify refusals: wrong OTP, missing or bad clientPublicKey; nothing changes', async () => {
    const { accountId } = await walletAccount();
    const created = await svc.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId } });
    const id = created.body.id;
    const client = newKeyPairHex();
    const wrong = await svc.request('POST', `/auth/credentials/${id}/verify`, { body: { otp: '123456', clientPublicKey: client.publicKey } });
    assert.equal(assertError(wrong, 401, 'UNAUTHORIZED').reason, 'Invalid OTP code');
    assertInvalid(await svc.request('POST', `/auth/credentials/${id}/verify`, { body: { otp: '000000' } }), 'clientPublicKey');
    assertInvalid(await svc.request('POST', `/auth/credentials/${id}/verify`, { body: { otp: '000000', clientPublicKey: '04' + '0'.repeat(128) } }), 'clientPublicKey');
    assertInvalid(await svc.request('POST', `/auth/credentials/${id}/verify`, { body: { clientPublicKey: client.publicKey } }), 'otp');
    assert.deepEqual(await sessions(accountId), []);
    assertError(await svc.request('POST', `/auth/credentials/AuthMethod:00000000-0000-7000-8000-000000000000/verify`, { body: { otp: '000000', clientPublicKey: client.publicKey } }), 404, 'NOT_FOUND');
  });

  it('OAUTH: create needs a structurally valid JWT of a recognised issuer; verify takes the sandbox token', async () => {
    const { accountId } = await walletAccount();
    for (const token of ['sandbox-valid-oidc-token', JWT({ iss: 'https://evil.example', sub: 'x' }), 'a.b.c']) {
      const res = await svc.request('POST', '/auth/credentials', { body: { type: 'OAUTH', accountId, oidcToken: token } });
      assert.equal(assertError(res, 401, 'UNAUTHORIZED').reason, 'Invalid OIDC token');
    }
    assert.deepEqual(await credentials(accountId), []);
    const created = await svc.request('POST', '/auth/credentials', { body: { type: 'OAUTH', accountId, oidcToken: GOOGLE_TOKEN } });
    assertStatus(created, 201);
    assert.equal(created.body.nickname, 'wallet@example.com');
    const client = newKeyPairHex();
    const bad = await svc.request('POST', `/auth/credentials/${created.body.id}/verify`, { body: { oidcToken: GOOGLE_TOKEN, clientPublicKey: client.publicKey } });
    assert.equal(assertError(bad, 401, 'UNAUTHORIZED').reason, 'Invalid OIDC token');
    const ok = await svc.request('POST', `/auth/credentials/${created.body.id}/verify`, { body: { oidcToken: 'sandbox-valid-oidc-token', clientPublicKey: client.publicKey } });
    assertStatus(ok, 200);
    assert.equal(ok.body.type, 'OAUTH');
  });

  it('PASSKEY: challenge binds clientPublicKey and Request-Id; 429 within 30 s; verify takes the sandbox signature', async () => {
    const { accountId } = await walletAccount();
    const attestation = { credentialId: 'cred-1', clientDataJson: 'e30', attestationObject: 'o2M', transports: ['internal'] };
    assertInvalid(await svc.request('POST', '/auth/credentials', { body: { type: 'PASSKEY', accountId, challenge: 'c' } }), 'nickname');
    const created = await svc.request('POST', '/auth/credentials', { body: { type: 'PASSKEY', accountId, nickname: 'laptop', challenge: 'c', attestation } });
    assertStatus(created, 201);
    assert.equal(created.body.nickname, 'laptop');
    const id = created.body.id;
    assertInvalid(await svc.request('POST', `/auth/credentials/${id}/challenge`, { body: {} }), 'clientPublicKey');
    const client = newKeyPairHex();
    const issued = await svc.request('POST', `/auth/credentials/${id}/challenge`, { body: { clientPublicKey: client.publicKey } });
    assertStatus(issued, 200);
    assert.match(issued.body.requestId, /^[0-9a-f-]{36}$/);
    assert.match(issued.body.expiresAt, ISO_TIME);
    const again = await svc.request('POST', `/auth/credentials/${id}/challenge`, { body: { clientPublicKey: client.publicKey } });
    assertError(again, 429, 'RATE_LIMITED');
    assert.equal(again.headers.get('retry-after'), '30');

    const assertion = { credentialId: 'cred-1', clientDataJson: 'e30', authenticatorData: 'YQ', signature: 'sandbox-valid-passkey-signature' };
    const url = `/auth/credentials/${id}/verify`;
    const headers = { 'Request-Id': issued.body.requestId };
    const other = newKeyPairHex();
    assert.equal(assertError(await svc.request('POST', url, { body: { assertion, clientPublicKey: other.publicKey }, headers }), 401, 'UNAUTHORIZED').reason, 'clientPublicKey differs from the one bound into the challenge');
    assert.equal(assertError(await svc.request('POST', url, { body: { assertion: { ...assertion, signature: 'nope' }, clientPublicKey: client.publicKey }, headers }), 401, 'UNAUTHORIZED').reason, 'Invalid passkey signature');
    assert.equal(assertError(await svc.request('POST', url, { body: { assertion, clientPublicKey: client.publicKey } }), 401, 'UNAUTHORIZED').reason, 'Request-Id missing');
    const ok = await svc.request('POST', url, { body: { assertion, clientPublicKey: client.publicKey }, headers });
    assertStatus(ok, 200);
    // The challenge answered one verify.
    assert.equal(assertError(await svc.request('POST', url, { body: { assertion, clientPublicKey: client.publicKey }, headers }), 401, 'UNAUTHORIZED').reason, 'Invalid passkey challenge');
    clock.advance(30_000);
    assertStatus(await svc.request('POST', `/auth/credentials/${id}/challenge`, { body: { clientPublicKey: client.publicKey } }), 200);
  });

  it('create refusals: non-wallet account 400, second of a type 409, deleted customer 409, unknown account 404', async () => {
    const { accountId, customerId } = await walletAccount();
    const usd = (await customerAccounts(svc, customerId)).find((a) => a.type !== 'EMBEDDED_WALLET');
    assertInvalid(await svc.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId: usd.id } }), 'accountId');
    assertStatus(await svc.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId } }), 201);
    assertError(await svc.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId, email: 'other@example.com' } }), 409, 'CREDENTIAL_EXISTS');
    // A body missing its type's fields is a 400 before any signed-retry challenge.
    assertInvalid(await svc.request('POST', '/auth/credentials', { body: { type: 'PASSKEY', accountId, challenge: 'c' } }), 'nickname');
    assertInvalid(await svc.request('POST', '/auth/credentials', { body: { type: 'OAUTH', accountId } }), 'oidcToken');
    assertError(await svc.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId: 'InternalAccount:00000000-0000-7000-8000-000000000000' } }), 404, 'NOT_FOUND');
    assert.equal((await credentials(accountId)).length, 1);

    const gone = await walletAccount();
    assertStatus(await svc.request('DELETE', `/customers/${gone.customerId}`), 200);
    assertError(await svc.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId: gone.accountId } }), 409, 'CONFLICT');
    assert.deepEqual(await credentials(gone.accountId), []);
    const nameless = await createCustomer(svc);
    const wallet = (await customerAccounts(svc, nameless.id)).find((a) => a.type === 'EMBEDDED_WALLET');
    assertInvalid(await svc.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId: wallet.id } }), 'email');
  });

  it('second credential: 202 SignedRequestChallenge, then 201 on the retry stamped by a real session (api-key-stamper)', async () => {
    const { accountId, session } = await walletWithSession();
    const body = { type: 'OAUTH', accountId, oidcToken: GOOGLE_TOKEN };
    const { challenge, retry } = await signed('POST', '/auth/credentials', body, session.key);
    assert.match(challenge.requestId, ID_RE('Request'));
    assert.equal(challenge.type, 'OAUTH');
    assert.equal(Date.parse(challenge.expiresAt) - clock.now(), 300_000);
    const payload = JSON.parse(challenge.payloadToSign);
    assert.equal(payload.accountId, accountId);
    assert.equal(payload.requestId, challenge.requestId);
    assert.equal(payload.action, 'ADD_CREDENTIAL');
    assert.equal((await credentials(accountId)).length, 1);

    const changedBody = await retry({ body: { ...body, oidcToken: JWT({ iss: 'https://accounts.google.com', sub: 'someone-else' }) } });
    assert.equal(assertError(changedBody, 401, 'UNAUTHORIZED').reason, 'Request body differs from the first request');
    const done = await retry();
    assertStatus(done, 201);
    assert.equal(done.body.type, 'OAUTH');
    assert.equal((await credentials(accountId)).length, 2);
    const reused = await retry();
    assert.equal(assertError(reused, 401, 'UNAUTHORIZED').reason, 'Request-Id already used');
    assert.equal((await credentials(accountId)).length, 2);
    // A third type, authorised by the sandbox literal.
    const passkey = await signed('POST', '/auth/credentials', { type: 'PASSKEY', accountId, nickname: 'phone', challenge: 'c', attestation: { credentialId: 'k', clientDataJson: 'e30', attestationObject: 'o2M' } }, 'sandbox');
    assertStatus(await passkey.retry(), 201);
    assertError(await svc.request('POST', '/auth/credentials', { body: { type: 'PASSKEY', accountId, nickname: 'x', challenge: 'c', attestation: { credentialId: 'k', clientDataJson: 'e30', attestationObject: 'o2M' } } }), 409, 'CREDENTIAL_EXISTS');
  });

  it('payloadToSign binds the body: bodySha256 is the SHA-256 hex of the canonical JSON body ({} for DELETE)', async () => {
    const { accountId, session } = await walletWithSession();
    const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
    // Keys out of order and an unknown property: the hash is over the sorted, validated body.
    const body = { oidcToken: GOOGLE_TOKEN, type: 'OAUTH', accountId, unknownProperty: 'dropped' };
    const add = await signed('POST', '/auth/credentials', body, session.key);
    const payload = JSON.parse(add.challenge.payloadToSign);
    assert.equal(payload.bodySha256, sha256(JSON.stringify({ accountId, oidcToken: GOOGLE_TOKEN, type: 'OAUTH' })));
    assertStatus(await add.retry(), 201);

    const clientPublicKey = newKeyPairHex().publicKey;
    const exporting = await signed('POST', `/internal-accounts/${accountId}/export`, { clientPublicKey }, session.key);
    assert.equal(JSON.parse(exporting.challenge.payloadToSign).bodySha256, sha256(JSON.stringify({ clientPublicKey })));

    const revoke = await signed('DELETE', `/auth/sessions/${session.id}`, undefined, session.key);
    assert.equal(JSON.parse(revoke.challenge.payloadToSign).bodySha256, sha256('{}'));
  });

  it('a stamp over another pending request\'s payload of the same wallet authorises neither request', async () => {
    const { accountId, session } = await walletWithSession();
    const add = await signed('POST', '/auth/credentials', { type: 'OAUTH', accountId, oidcToken: GOOGLE_TOKEN }, session.key);
    const exporting = await signed('POST', `/internal-accounts/${accountId}/export`, { clientPublicKey: newKeyPairHex().publicKey }, session.key);
    // A live session's valid stamp, but over the other request's bytes, in both directions.
    const overExport = await turnkeyStamp(exporting.challenge.payloadToSign, session.key);
    assert.equal(assertError(await add.retry({ headers: { 'Service-Wallet-Signature': overExport } }), 401, 'UNAUTHORIZED').reason, 'Invalid Service-Wallet-Signature');
    const overAdd = await turnkeyStamp(add.challenge.payloadToSign, session.key);
    assert.equal(assertError(await exporting.retry({ headers: { 'Service-Wallet-Signature': overAdd } }), 401, 'UNAUTHORIZED').reason, 'Invalid Service-Wallet-Signature');
    assert.equal((await credentials(accountId)).length, 1);
    // Refusals spent nothing: each request goes through with the stamp over its own payload.
    assertStatus(await add.retry(), 201);
    assertStatus(await exporting.retry(), 200);
    assert.equal((await credentials(accountId)).length, 2);
  });

  it('signed-retry refusals: malformed stamp, another account\'s session, wrong path, expired window; nothing changes', async () => {
    const mine = await walletWithSession();
    const theirs = await walletWithSession();
    const body = { type: 'OAUTH', accountId: mine.accountId, oidcToken: GOOGLE_TOKEN };
    const first = await signed('POST', '/auth/credentials', body, theirs.session.key);
    const foreign = await first.retry();
    assert.equal(assertError(foreign, 401, 'UNAUTHORIZED').reason, 'Invalid Service-Wallet-Signature');
    const malformed = await first.retry({ headers: { 'Service-Wallet-Signature': 'not-a-stamp' } });
    assert.equal(assertError(malformed, 401, 'UNAUTHORIZED').reason, 'Invalid Service-Wallet-Signature');
    const overPayload = await turnkeyStamp('{"something":"else"}', mine.session.key);
    assert.equal(assertError(await first.retry({ headers: { 'Service-Wallet-Signature': overPayload } }), 401, 'UNAUTHORIZED').reason, 'Invalid Service-Wallet-Signature');
    const onlyStamp = await svc.request('POST', '/auth/credentials', { body, headers: { 'Service-Wallet-Signature': 'sandbox-valid-signature' } });
    assert.equal(assertError(onlyStamp, 401, 'UNAUTHORIZED').reason, 'Request-Id missing');
    const stranger = await first.retry({ headers: { 'Request-Id': `Request:${crypto.randomUUID()}` } });
    assert.equal(assertError(stranger, 401, 'UNAUTHORIZED').reason, 'Request-Id unknown');
    const onlyId = await svc.request('POST', '/auth/credentials', { body, headers: { 'Request-Id': first.challenge.requestId } });
    assert.equal(assertError(onlyId, 401, 'UNAUTHORIZED').reason, 'Invalid Service-Wallet-Signature');
    // The request id of one route presented on another.
    const elsewhere = await svc.request('DELETE', `/auth/sessions/${mine.session.id}`, {
      headers: { 'Service-Wallet-Signature': 'sandbox-valid-signature', 'Request-Id': first.challenge.requestId },
    });
    assert.equal(assertError(elsewhere, 401, 'UNAUTHORIZED').reason, 'Request-Id was issued for another request');
    assert.equal((await credentials(mine.accountId)).length, 1);

    // Refused retries spent nothing: the right stamp still goes through.
    const stamp = await turnkeyStamp(first.challenge.payloadToSign, mine.session.key);
    assertStatus(await first.retry({ headers: { 'Service-Wallet-Signature': stamp } }), 201);
    assert.equal((await credentials(mine.accountId)).length, 2);

    // A request id is good until its window closes, then never.
    const late = await signed('POST', `/internal-accounts/${mine.accountId}/export`, { clientPublicKey: newKeyPairHex().publicKey }, mine.session.key);
    clock.advance(300_000);
    assert.equal(assertError(await late.retry(), 401, 'UNAUTHORIZED').reason, 'Request-Id expired');
  });

  it('revoke credential: 202 then 204 by another credential\'s session; own session refused; last credential 400', async () => {
    const { accountId, credentialId, session } = await walletWithSession();
    assertError(await svc.request('DELETE', `/auth/credentials/${credentialId}`), 400, 'LAST_CREDENTIAL');
    const add = await signed('POST', '/auth/credentials', { type: 'OAUTH', accountId, oidcToken: GOOGLE_TOKEN }, session.key);
    const oauth = (await add.retry()).body;
    const client = newKeyPairHex();
    const verified = await svc.request('POST', `/auth/credentials/${oauth.id}/verify`, { body: { oidcToken: 'sandbox-valid-oidc-token', clientPublicKey: client.publicKey } });
    const oauthSession = opened(verified.body, client);

    const own = await signed('DELETE', `/auth/credentials/${credentialId}`, undefined, session.key);
    assert.equal(own.challenge.type, 'EMAIL_OTP');
    assert.equal(assertError(await own.retry(), 401, 'UNAUTHORIZED').reason, 'Stamp must come from a session of another credential');
    assert.equal((await credentials(accountId)).length, 2);

    const byOther = await signed('DELETE', `/auth/credentials/${credentialId}`, undefined, oauthSession.key);
    const done = await byOther.retry();
    assertStatus(done, 204);
    assert.deepEqual((await credentials(accountId)).map((c) => c.id), [oauth.id]);
    assert.deepEqual((await sessions(accountId)).map((s) => s.id), [oauthSession.id]);
    // The revoked credential's session can no longer sign.
    const afterRevoke = await signed('POST', `/internal-accounts/${accountId}/export`, { clientPublicKey: newKeyPairHex().publicKey }, session.key);
    assert.equal(assertError(await afterRevoke.retry(), 401, 'UNAUTHORIZED').reason, 'Session revoked');
    assertError(await svc.request('DELETE', `/auth/credentials/${oauth.id}`), 400, 'LAST_CREDENTIAL');
  });

  it('revoke session: self-logout with its own stamp; its stamps are refused afterwards', async () => {
    const { accountId, session } = await walletWithSession();
    const { challenge, retry } = await signed('DELETE', `/auth/sessions/${session.id}`, undefined, session.key);
    assert.equal(challenge.type, 'EMAIL_OTP');
    assertStatus(await retry(), 204);
    assert.deepEqual(await sessions(accountId), []);
    assertError(await svc.request('DELETE', `/auth/sessions/${session.id}`), 404, 'NOT_FOUND');
    const next = await signed('POST', `/internal-accounts/${accountId}/export`, { clientPublicKey: newKeyPairHex().publicKey }, session.key);
    assert.equal(assertError(await next.retry(), 401, 'UNAUTHORIZED').reason, 'Session revoked');
  });

  it('revoke-session refusals leave the session live; other environments see nothing; limits answer 429', async () => {
    const mine = await walletWithSession();
    const theirs = await walletWithSession();
    const attempt = await signed('DELETE', `/auth/sessions/${mine.session.id}`, undefined, theirs.session.key);
    assert.equal(assertError(await attempt.retry(), 401, 'UNAUTHORIZED').reason, 'Invalid Service-Wallet-Signature');
    assert.deepEqual((await sessions(mine.accountId)).map((s) => s.id), [mine.session.id]);
    assertError(await svc.request('DELETE', `/auth/sessions/${mine.session.id}`, { auth: 'production' }), 404, 'NOT_FOUND');
    assertError(await svc.request('GET', `/auth/credentials?accountId=${mine.accountId}`, { auth: 'production' }), 404, 'NOT_FOUND');
    assertInvalid(await svc.request('GET', '/auth/sessions?accountId=Customer:x'), 'accountId');

    // At most 16 signed requests pending per wallet.
    for (let i = 0; i < 15; i++) assertStatus(await svc.request('DELETE', `/auth/sessions/${mine.session.id}`), 202);
    const full = await svc.request('DELETE', `/auth/sessions/${mine.session.id}`);
    assertError(full, 429, 'RATE_LIMITED');
    assert.equal(full.headers.get('retry-after'), '300');

    // At most 20 live sessions per wallet.
    for (let i = 0; i < 19; i++) await verifyEmail(theirs.credentialId);
    const tooMany = await svc.request('POST', `/auth/credentials/${theirs.credentialId}/verify`, { body: { otp: '000000', clientPublicKey: newKeyPairHex().publicKey } });
    assertError(tooMany, 429, 'RATE_LIMITED');
    assert.equal((await sessions(theirs.accountId)).length, 20);
  });

  it('a stamp check and a concurrent revocation are serialised on the wallet account', async () => {
    const { accountId, session } = await walletWithSession();
    const revoke = await signed('DELETE', `/auth/sessions/${session.id}`, undefined, session.key);
    const exporting = await signed('POST', `/internal-accounts/${accountId}/export`, { clientPublicKey: newKeyPairHex().publicKey }, session.key);
    const crypto = svc.service.services.crypto;
    const verifyStamp = crypto.verifyStamp;
    let entered = false;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // The revocation's stamp check waits at the gate inside its decision, holding the account.
    crypto.verifyStamp = async (input) => {
      entered = true;
      await gate;
      return verifyStamp.call(crypto, input);
    };
    try {
      const revoked = revoke.retry();
      // Bounded: a retry refused before its stamp check never enters, and must fail, not spin.
      for (let turns = 0; !entered; turns++) {
        if (turns > 10_000) assert.fail(`the revocation never reached its stamp check: ${JSON.stringify(await revoked)}`);
        await new Promise((resolve) => setImmediate(resolve));
      }
      const exported = exporting.retry();
      release();
      assertStatus(await revoked, 204);
      // The export's check ran after the revocation committed: its session is gone.
      assert.equal(assertError(await exported, 401, 'UNAUTHORIZED').reason, 'Session revoked');
    } finally {
      crypto.verifyStamp = verifyStamp;
    }
  });

  it('sessions expire by durable timer: listed no more, their stamps refused as expired', async () => {
    const { accountId, session } = await walletWithSession();
    const pending = await signed('POST', `/internal-accounts/${accountId}/export`, { clientPublicKey: newKeyPairHex().publicKey }, session.key);
    clock.advance(900_000);
    await svc.service.services.engine.settled();
    assert.deepEqual(await sessions(accountId), []);
    // The request window (5 min) closed too.
    assert.equal(assertError(await pending.retry(), 401, 'UNAUTHORIZED').reason, 'Request-Id expired');
    const fresh = await signed('POST', `/internal-accounts/${accountId}/export`, { clientPublicKey: newKeyPairHex().publicKey }, session.key);
    assert.equal(assertError(await fresh.retry(), 401, 'UNAUTHORIZED').reason, 'Session expired');
  });

  it('a session past expiresAt is refused by the signed retry itself, before its expiry timer has run', async () => {
    const { accountId, session } = await walletWithSession();
    const expiresAt = await expiryOf(accountId, session.id);
    clock.advance(expiresAt - 60_000 - clock.now());
    const pending = await signed('POST', `/internal-accounts/${accountId}/export`, { clientPublicKey: newKeyPairHex().publicKey }, session.key);
    await atHeldExpiry(accountId, session.id, expiresAt, async () => {
      assert.equal(assertError(await pending.retry(), 401, 'UNAUTHORIZED').reason, 'Session expired');
    });
    await until(svc, () => !onWallet(accountId, session.id), 'the expiry timer');
    // Refused, the request id stays usable until its window closes; the answer is the same.
    assert.equal(assertError(await pending.retry(), 401, 'UNAUTHORIZED').reason, 'Session expired');
  });

  it('a session past expiresAt is listed no more, before its expiry timer has run', async () => {
    const { accountId, session } = await walletWithSession();
    await atHeldExpiry(accountId, session.id, await expiryOf(accountId, session.id), async () => {
      assert.deepEqual((await sessions(accountId)).map((s) => s.id), []);
    });
  });

  it('export: 202 binds clientPublicKey; 200 bundle opens with hpkeDecrypt to a BIP-39 mnemonic, the same each time', async () => {
    const { accountId, session } = await walletWithSession();
    const client = newKeyPairHex();
    const { challenge, retry } = await signed('POST', `/internal-accounts/${accountId}/export`, { clientPublicKey: client.publicKey }, session.key);
    assert.equal(challenge.type, undefined);
    assert.equal(JSON.parse(challenge.payloadToSign).clientPublicKey, client.publicKey.toLowerCase());
    const other = newKeyPairHex();
    assert.equal(assertError(await retry({ body: { clientPublicKey: other.publicKey } }), 401, 'UNAUTHORIZED').reason, 'clientPublicKey differs from the one bound at step 1');
    const res = await retry();
    assertStatus(res, 200);
    assert.equal(res.body.id, accountId);
    const bundle = JSON.parse(res.body.encryptedWalletCredentials);
    assert.equal(bundle.dataSignature, '');
    assert.equal(bundle.enclaveQuorumPublic, '');
    const data = JSON.parse(Buffer.from(bundle.data, 'hex').toString('utf8'));
    assert.equal(data.organizationId, accountId);
    const mnemonic = new TextDecoder().decode(hpkeDecrypt({ ciphertextBuf: hex(data.ciphertext), encappedKeyBuf: hex(data.encappedPublic), receiverPriv: client.privateKey }));
    assert.ok(validateMnemonic(mnemonic));

    const second = newKeyPairHex();
    const again = await signed('POST', `/internal-accounts/${accountId}/export`, { clientPublicKey: second.publicKey }, 'sandbox');
    const data2 = JSON.parse(Buffer.from(JSON.parse((await again.retry()).body.encryptedWalletCredentials).data, 'hex').toString('utf8'));
    assert.equal(new TextDecoder().decode(hpkeDecrypt({ ciphertextBuf: hex(data2.ciphertext), encappedKeyBuf: hex(data2.encappedPublic), receiverPriv: second.privateKey })), mnemonic);

    const { customerId } = await walletAccount();
    const usd = (await customerAccounts(svc, customerId)).find((a) => a.type !== 'EMBEDDED_WALLET');
    assertInvalid(await svc.request('POST', `/internal-accounts/${usd.id}/export`, { body: { clientPublicKey: client.publicKey } }), 'id');
    assertInvalid(await svc.request('POST', `/internal-accounts/${accountId}/export`, { body: { clientPublicKey: 'nope' } }), 'clientPublicKey');
  });
});

describe('embedded wallet state survives a restart', () => {
  it('credentials and sessions come back; a session expires by its recovered timer', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const first = await startTestService({ clock });
    const dataDir = first.dataDir;
    const customer = await createCustomer(first, { email: 'restart@example.com' });
    const accountId = (await customerAccounts(first, customer.id)).find((a) => a.type === 'EMBEDDED_WALLET').id;
    const created = await first.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId } });
    const client = newKeyPairHex();
    const verified = await first.request('POST', `/auth/credentials/${created.body.id}/verify`, { body: { otp: '000000', clientPublicKey: client.publicKey } });
    assertStatus(verified, 200);
    // A signed request used before the restart and one still pending across it.
    const exportUrl = `/internal-accounts/${accountId}/export`;
    const body = { clientPublicKey: newKeyPairHex().publicKey };
    const used = await first.request('POST', exportUrl, { body });
    const signature = { 'Service-Wallet-Signature': 'sandbox-valid-signature' };
    assertStatus(await first.request('POST', exportUrl, { body, headers: { ...signature, 'Request-Id': used.body.requestId } }), 200);
    const pending = await first.request('POST', exportUrl, { body });
    assertStatus(pending, 202);
    await first.stop({ keepData: true });

    const second = await startTestService({ clock, dataDir });
    try {
      assert.equal((await second.request('GET', `/auth/credentials?accountId=${accountId}`)).body.data[0].id, created.body.id);
      assert.equal((await second.request('GET', `/auth/sessions?accountId=${accountId}`)).body.data[0].id, verified.body.id);
      const reused = await second.request('POST', exportUrl, { body, headers: { ...signature, 'Request-Id': used.body.requestId } });
      assert.equal(assertError(reused, 401, 'UNAUTHORIZED').reason, 'Request-Id already used');
      clock.advance(300_000);
      await second.service.services.engine.settled();
      const late = await second.request('POST', exportUrl, { body, headers: { ...signature, 'Request-Id': pending.body.requestId } });
      assert.equal(assertError(late, 401, 'UNAUTHORIZED').reason, 'Request-Id expired');
      assert.equal(second.service.services.world.wallets.ofAccount(accountId)!.requests.length, 0, 'the expiry timers removed both requests');
      clock.advance(600_000);
      await second.service.services.engine.settled();
      assert.deepEqual((await second.request('GET', `/auth/sessions?accountId=${accountId}`)).body.data, []);
    } finally {
      await second.stop();
    }
  });
});
