// Client-held-key sessions (CONTRACT.md "Real clients"): a compressed clientPublicKey on
// verify or on a passkey challenge makes the client's own key the session key; an
// uncompressed one keeps the sealed-key flow. Both side by side over HTTP, with stamps made
// by @turnkey/api-key-stamper and sealed keys opened by @turnkey/crypto.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decryptCredentialBundle } from '@turnkey/crypto';
import { ManualClock } from '../src/engine/clock.js';
import { keyPairFromPrivateKey, keyPairToHex, type P256KeyPairHex } from '../src/crypto/p256.js';
import { serviceForSuite, startTestService } from './support/service.js';
import { assertError, assertInvalid, assertStatus, createCustomer, customerAccounts, unique } from './support/assertions.js';
import { hex, newKeyPairHex, turnkeyStamp } from './support/crypto-fixtures.js';

const GOOGLE_TOKEN =
  [{ alg: 'RS256', typ: 'JWT' }, { iss: 'https://accounts.google.com', sub: 'client-keys' }].map((part) => Buffer.from(JSON.stringify(part)).toString('base64url')).join('.') + '.c2lnbmF0dXJl';

describe('client-held-key sessions beside sealed-key sessions', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));

  const svc = serviceForSuite({ clock });

  async function emailWallet(): Promise<{ accountId: string; credentialId: string }> {
    const customer = await createCustomer(svc, { email: `${unique('k')}@example.com` });
    const accountId = (await customerAccounts(svc, customer.id)).find((a) => a.type === 'EMBEDDED_WALLET').id;
    const created = await svc.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId } });
    assertStatus(created, 201);
    return { accountId, credentialId: created.body.id };
  }

  function verify(credentialId: string, clientPublicKey: string): Promise<any> {
    return svc.request('POST', `/auth/credentials/${credentialId}/verify`, { body: { otp: '000000', clientPublicKey } });
  }

  /** Step 1 of a signed request and its retry stamped by `key` (ApiKeyStamper: the stamp carries the compressed key). */
  async function signedBy(method: string, path: string, body: unknown, key: P256KeyPairHex): Promise<any> {
    const first = await svc.request(method, path, body === undefined ? {} : { body });
    assertStatus(first, 202);
    const stamp = await turnkeyStamp(first.body.payloadToSign, key);
    return svc.request(method, path, { ...(body === undefined ? {} : { body }), headers: { 'Service-Wallet-Signature': stamp, 'Request-Id': first.body.requestId } });
  }

  it('a compressed key is the session key: no sealed key, its own stamps pass, another key is refused; an uncompressed key still gets a sealed one', async () => {
    const { accountId, credentialId } = await emailWallet();
    const held = newKeyPairHex();
    const heldSession = await verify(credentialId, held.publicKeyCompressed);
    assertStatus(heldSession, 200);
    assert.equal('encryptedSessionSigningKey' in heldSession.body, false);
    assert.equal(svc.service.services.world.wallets.ofAccount(accountId)!.sessions[0]!.publicKey, held.publicKeyCompressed.toLowerCase());

    const sealedClient = newKeyPairHex();
    const sealedSession = await verify(credentialId, sealedClient.publicKey);
    assertStatus(sealedSession, 200);
    const sealedKey = keyPairToHex(keyPairFromPrivateKey(hex(decryptCredentialBundle(sealedSession.body.encryptedSessionSigningKey, sealedClient.privateKey))));
    const listed = (await svc.request('GET', `/auth/sessions?accountId=${accountId}`)).body.data;
    assert.deepEqual(listed.map((s: any) => s.id), [heldSession.body.id, sealedSession.body.id]);
    assert.ok(listed.every((s: any) => !('encryptedSessionSigningKey' in s)));

    // The client's own private key stamps for its session.
    const added = await signedBy('POST', '/auth/credentials', { type: 'OAUTH', accountId, oidcToken: GOOGLE_TOKEN }, held);
    assertStatus(added, 201);
    // A key that is no session's is refused; so is the sealed session's client key (its session key is the sealed one).
    const exportBody = { clientPublicKey: newKeyPairHex().publicKey };
    assert.equal(assertError(await signedBy('POST', `/internal-accounts/${accountId}/export`, exportBody, newKeyPairHex()), 401, 'UNAUTHORIZED').reason, 'Invalid Service-Wallet-Signature');
    assert.equal(assertError(await signedBy('POST', `/internal-accounts/${accountId}/export`, exportBody, sealedClient), 401, 'UNAUTHORIZED').reason, 'Invalid Service-Wallet-Signature');
    assertStatus(await signedBy('POST', `/internal-accounts/${accountId}/export`, exportBody, sealedKey), 200);
    assertStatus(await signedBy('POST', `/internal-accounts/${accountId}/export`, exportBody, held), 200);

    // One live session per client-held key; self-logout ends what the key may sign.
    assertInvalid(await verify(credentialId, held.publicKeyCompressed), 'clientPublicKey');
    assertStatus(await signedBy('DELETE', `/auth/sessions/${heldSession.body.id}`, undefined, held), 204);
    assert.equal(assertError(await signedBy('POST', `/internal-accounts/${accountId}/export`, exportBody, held), 401, 'UNAUTHORIZED').reason, 'Session revoked');
    assert.deepEqual((await svc.request('GET', `/auth/sessions?accountId=${accountId}`)).body.data.map((s: any) => s.id), [sealedSession.body.id]);
  });

  it('refuses a compressed key off the curve, and export still takes only an uncompressed key', async () => {
    const { accountId, credentialId } = await emailWallet();
    assertInvalid(await verify(credentialId, `02${'f'.repeat(64)}`), 'clientPublicKey');
    assertInvalid(await verify(credentialId, `05${'1'.repeat(64)}`), 'clientPublicKey');
    assert.deepEqual((await svc.request('GET', `/auth/sessions?accountId=${accountId}`)).body.data, []);
    assertInvalid(await svc.request('POST', `/internal-accounts/${accountId}/export`, { body: { clientPublicKey: newKeyPairHex().publicKeyCompressed } }), 'clientPublicKey');
  });

  it('a passkey challenge bound to a compressed key opens a session for that key, whose stamps pass', async () => {
    const customer = await createCustomer(svc, { email: `${unique('p')}@example.com` });
    const accountId = (await customerAccounts(svc, customer.id)).find((a) => a.type === 'EMBEDDED_WALLET').id;
    const attestation = { credentialId: 'cred-k', clientDataJson: 'e30', attestationObject: 'o2M' };
    const created = await svc.request('POST', '/auth/credentials', { body: { type: 'PASSKEY', accountId, nickname: 'phone', challenge: 'c', attestation } });
    assertStatus(created, 201);
    const held = newKeyPairHex();
    const issued = await svc.request('POST', `/auth/credentials/${created.body.id}/challenge`, { body: { clientPublicKey: held.publicKeyCompressed } });
    assertStatus(issued, 200);
    const assertion = { credentialId: 'cred-k', clientDataJson: 'e30', authenticatorData: 'YQ', signature: 'sandbox-valid-passkey-signature' };
    const url = `/auth/credentials/${created.body.id}/verify`;
    const headers = { 'Request-Id': issued.body.requestId };
    // The uncompressed form of the same key is not the key the challenge bound.
    assert.equal(assertError(await svc.request('POST', url, { body: { assertion, clientPublicKey: held.publicKey }, headers }), 401, 'UNAUTHORIZED').reason, 'clientPublicKey differs from the one bound into the challenge');
    const session = await svc.request('POST', url, { body: { assertion, clientPublicKey: held.publicKeyCompressed }, headers });
    assertStatus(session, 200);
    assert.equal('encryptedSessionSigningKey' in session.body, false);
    assertStatus(await signedBy('POST', `/internal-accounts/${accountId}/export`, { clientPublicKey: newKeyPairHex().publicKey }, held), 200);
  });
});

describe('a client-held-key session survives a restart', () => {
  it('its stamps pass after recovery, and its expiry timer still ends it', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const first = await startTestService({ clock });
    const held = newKeyPairHex();
    let accountId: string;
    try {
      const customer = await createCustomer(first, { email: 'held-restart@example.com' });
      accountId = (await customerAccounts(first, customer.id)).find((a) => a.type === 'EMBEDDED_WALLET').id;
      const created = await first.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId } });
      assertStatus(await first.request('POST', `/auth/credentials/${created.body.id}/verify`, { body: { otp: '000000', clientPublicKey: held.publicKeyCompressed } }), 200);
    } finally {
      await first.stop({ keepData: true });
    }

    const second = await startTestService({ clock, dataDir: first.dataDir });
    try {
      const url = `/internal-accounts/${accountId}/export`;
      const body = { clientPublicKey: newKeyPairHex().publicKey };
      const step1 = await second.request('POST', url, { body });
      const stamp = await turnkeyStamp(step1.body.payloadToSign, held);
      assertStatus(await second.request('POST', url, { body, headers: { 'Service-Wallet-Signature': stamp, 'Request-Id': step1.body.requestId } }), 200);
      clock.advance(900_000);
      await second.service.services.engine.settled();
      const late = await second.request('POST', url, { body });
      const lateStamp = await turnkeyStamp(late.body.payloadToSign, held);
      const refused = await second.request('POST', url, { body, headers: { 'Service-Wallet-Signature': lateStamp, 'Request-Id': late.body.requestId } });
      assert.equal(assertError(refused, 401, 'UNAUTHORIZED').reason, 'Session expired');
    } finally {
      await second.stop();
    }
  });
});
