// POST /auth/sessions/{id}/refresh and PATCH /internal-accounts/{id} (CONTRACT.md "Today's
// clients, second wave"; the vendor's refreshAuthSession and updateInternalAccount): both
// through the signed-retry protocol. A refresh, stamped by the session itself, replaces it by
// a new session for the key bound at step 1 with a full lifetime (its expiry a durable timer);
// an update changes the wallet's privacy on the retry. Stamps made by @turnkey/api-key-stamper,
// sealed keys opened by @turnkey/crypto; every answer held to the vendor's contract.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decryptCredentialBundle } from '@turnkey/crypto';
import { ManualClock } from '../src/engine/clock.js';
import { keyPairFromPrivateKey, keyPairToHex, type P256KeyPairHex } from '../src/crypto/p256.js';
import { serviceForSuite } from './support/service.js';
import { assertError, assertInvalid, assertStatus, createCustomer, customerAccounts, unique } from './support/assertions.js';
import { hex, newKeyPairHex, turnkeyStamp } from './support/crypto-fixtures.js';
import { until } from './support/money.js';
import { assertVendorResponse } from './support/vendor-contract.js';
import { assertVendorError } from './support/vendor-error.js';

const LIFETIME_MS = 15 * 60_000;

describe('session refresh and wallet update by signed retry (sandbox)', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 5));
  const svc = serviceForSuite({ clock });

  /** A wallet with a verified EMAIL_OTP credential and a session whose key the client holds (compressed). */
  async function walletWithSession(): Promise<{ accountId: string; sessionId: string; key: P256KeyPairHex }> {
    const customer = await createCustomer(svc, { email: `${unique('r')}@example.com` });
    const accountId = (await customerAccounts(svc, customer.id)).find((a) => a.type === 'EMBEDDED_WALLET').id;
    const created = await svc.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId } });
    assertStatus(created, 201);
    const key = newKeyPairHex();
    const verified = await svc.request('POST', `/auth/credentials/${created.body.id}/verify`, { body: { otp: '000000', clientPublicKey: key.publicKeyCompressed } });
    assertStatus(verified, 200);
    return { accountId, sessionId: verified.body.id, key };
  }

  /** Step 1 (checked 202 against the vendor) and a retry stamped by `key`, the same body unless `over` says otherwise. */
  async function signed(operationId: string, method: string, path: string, body: unknown, key: P256KeyPairHex) {
    const first = await svc.request(method, path, { body });
    assertStatus(first, 202);
    assertVendorResponse(operationId, 202, first.body);
    const stamp = await turnkeyStamp(first.body.payloadToSign, key);
    return {
      challenge: first.body,
      retry: (over: { body?: unknown; headers?: Record<string, string> } = {}) =>
        svc.request(method, path, { body: over.body ?? body, headers: { 'Grid-Wallet-Signature': stamp, 'Request-Id': first.body.requestId, ...(over.headers ?? {}) } }),
    };
  }

  const sessionIds = async (accountId: string): Promise<string[]> => (await svc.request('GET', `/auth/sessions?accountId=${accountId}`)).body.data.map((s: any) => s.id);
  const refreshPath = (sessionId: string) => `/auth/sessions/${sessionId}/refresh`;

  it('a refresh stamped by the session replaces it: a new session for the bound key, a full lifetime, the old key refused', async () => {
    const { accountId, sessionId, key } = await walletWithSession();
    clock.advance(10 * 60_000);
    const next = newKeyPairHex();
    const refresh = await signed('refreshAuthSession', 'POST', refreshPath(sessionId), { clientPublicKey: next.publicKeyCompressed }, key);
    assert.match(refresh.challenge.payloadToSign, new RegExp(next.publicKeyCompressed.toLowerCase()));
    // Step 1 alone changes nothing.
    assert.deepEqual(await sessionIds(accountId), [sessionId]);
    const res = await refresh.retry();
    assertStatus(res, 201);
    assertVendorResponse('refreshAuthSession', 201, res.body);
    assert.notEqual(res.body.id, sessionId);
    assert.equal(res.body.accountId, accountId);
    assert.equal(res.body.expiresAt, new Date(clock.now() + LIFETIME_MS).toISOString());
    assert.equal('encryptedSessionSigningKey' in res.body, false, 'the client holds a compressed key itself');
    assert.deepEqual(await sessionIds(accountId), [res.body.id]);
    // The old key signs no more; the new one does.
    const again = { clientPublicKey: newKeyPairHex().publicKeyCompressed };
    const byOld = await svc.request('POST', refreshPath(res.body.id), { body: again });
    const stale = await svc.request('POST', refreshPath(res.body.id), {
      body: again,
      headers: { 'Grid-Wallet-Signature': await turnkeyStamp(byOld.body.payloadToSign, key), 'Request-Id': byOld.body.requestId },
    });
    assert.equal(assertError(stale, 401, 'UNAUTHORIZED').reason, 'Session revoked');
    assertVendorError('refreshAuthSession', 401, stale.body);
    // The old session's expiry timer was cancelled; the new one's ends the new session on time.
    clock.advance(LIFETIME_MS - 1);
    await until(svc, () => true);
    assert.deepEqual(await sessionIds(accountId), [res.body.id]);
    clock.advance(1);
    await until(svc, () => !svc.service.services.world.wallets.ofAccount(accountId)!.sessions.some((s) => s.id === res.body.id), 'the refreshed session to expire');
    assert.deepEqual(await sessionIds(accountId), []);
  });

  it('an uncompressed key gets the new session key sealed to it, and that key stamps', async () => {
    const { accountId, sessionId, key } = await walletWithSession();
    const client = newKeyPairHex();
    const res = await (await signed('refreshAuthSession', 'POST', refreshPath(sessionId), { clientPublicKey: client.publicKey }, key)).retry();
    assertStatus(res, 201);
    assertVendorResponse('refreshAuthSession', 201, res.body);
    const sessionKey = keyPairToHex(keyPairFromPrivateKey(hex(decryptCredentialBundle(res.body.encryptedSessionSigningKey, client.privateKey))));
    const update = await signed('updateInternalAccount', 'PATCH', `/internal-accounts/${accountId}`, { privateEnabled: true }, sessionKey);
    assertStatus(await update.retry(), 200);
  });

  it('without a signed retry nothing is refreshed: no Request-Id, another session\'s stamp, another key, a bad key, an unknown session', async () => {
    const { accountId, sessionId, key } = await walletWithSession();
    const other = newKeyPairHex();
    const verified = await svc.request('POST', `/auth/credentials/${(await svc.request('GET', `/auth/credentials?accountId=${accountId}`)).body.data[0].id}/verify`, {
      body: { otp: '000000', clientPublicKey: other.publicKeyCompressed },
    });
    assertStatus(verified, 200);
    const body = { clientPublicKey: newKeyPairHex().publicKeyCompressed };
    const byOwn = await signed('refreshAuthSession', 'POST', refreshPath(sessionId), body, key);
    const noRequestId = await svc.request('POST', refreshPath(sessionId), { body, headers: { 'Grid-Wallet-Signature': 'sandbox-valid-signature' } });
    assert.equal(assertError(noRequestId, 401, 'UNAUTHORIZED').reason, 'Request-Id missing');
    assertVendorError('refreshAuthSession', 401, noRequestId.body);
    const otherKey = await byOwn.retry({ body: { clientPublicKey: newKeyPairHex().publicKeyCompressed } });
    assert.equal(assertError(otherKey, 401, 'UNAUTHORIZED').reason, 'clientPublicKey differs from the one bound at step 1');
    const byOther = await signed('refreshAuthSession', 'POST', refreshPath(sessionId), body, other);
    assert.equal(assertError(await byOther.retry(), 401, 'UNAUTHORIZED').reason, 'Stamp must come from the session being refreshed');
    assert.deepEqual(await sessionIds(accountId), [sessionId, verified.body.id], 'nothing was refreshed');
    const bad = await svc.request('POST', refreshPath(sessionId), { body: { clientPublicKey: '05abc' } });
    assertInvalid(bad, 'clientPublicKey');
    assertVendorError('refreshAuthSession', 400, bad.body);
    const unknown = await svc.request('POST', refreshPath('Session:0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b'), { body });
    assertError(unknown, 404, 'NOT_FOUND');
    assertVendorError('refreshAuthSession', 404, unknown.body);
    // The session's own stamp still refreshes it.
    assertStatus(await byOwn.retry(), 201);
  });

  it('PATCH /internal-accounts/{id} sets privateEnabled on the signed retry only, and reads show it', async () => {
    const { accountId, key } = await walletWithSession();
    const before = await svc.request('GET', `/internal-accounts/${accountId}`);
    assert.equal(before.body.privateEnabled, false);
    const update = await signed('updateInternalAccount', 'PATCH', `/internal-accounts/${accountId}`, { privateEnabled: true }, key);
    assert.equal((await svc.request('GET', `/internal-accounts/${accountId}`)).body.privateEnabled, false, 'step 1 changes nothing');
    const otherBody = await update.retry({ body: { privateEnabled: false } });
    assert.equal(assertError(otherBody, 401, 'UNAUTHORIZED').reason, 'Request body differs from the first request');
    assertVendorError('updateInternalAccount', 401, otherBody.body);
    const res = await update.retry();
    assertStatus(res, 200);
    assertVendorResponse('updateInternalAccount', 200, res.body);
    assert.equal(res.body.privateEnabled, true);
    assert.deepEqual((await svc.request('GET', `/internal-accounts/${accountId}`)).body, res.body);
    const unsigned = await svc.request('PATCH', `/internal-accounts/${accountId}`, { body: { privateEnabled: false }, headers: { 'Request-Id': update.challenge.requestId } });
    assertError(unsigned, 401, 'UNAUTHORIZED');
    assert.equal((await svc.request('GET', `/internal-accounts/${accountId}`)).body.privateEnabled, true);
  });

  it('PATCH refuses an empty update, a non-wallet account and an unknown one', async () => {
    const { accountId } = await walletWithSession();
    const empty = await svc.request('PATCH', `/internal-accounts/${accountId}`, { body: {} });
    assertInvalid(empty, 'privateEnabled');
    assertVendorError('updateInternalAccount', 400, empty.body);
    const customer = await createCustomer(svc, { email: `${unique('f')}@example.com` });
    const fiat = (await customerAccounts(svc, customer.id)).find((a) => a.type !== 'EMBEDDED_WALLET');
    assertInvalid(await svc.request('PATCH', `/internal-accounts/${fiat.id}`, { body: { privateEnabled: true } }), 'id');
    const unknown = await svc.request('PATCH', '/internal-accounts/InternalAccount:0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b', { body: { privateEnabled: true } });
    assertError(unknown, 404, 'NOT_FOUND');
    assertVendorError('updateInternalAccount', 404, unknown.body);
  });
});
