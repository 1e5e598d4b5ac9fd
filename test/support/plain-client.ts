// A client of the documented API as any HTTP client is one: fetch, Basic auth, JSON bodies and
// whatever headers a call adds, nothing of the service's code. The generic-client tests drive
// the service in its own process (support/service-process.ts) with it, and with Turnkey's
// published libraries for a wallet's keys and stamps.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ApiKeyStamper } from '@turnkey/api-key-stamper';
import { decryptCredentialBundle, generateP256KeyPair, getPublicKey } from '@turnkey/crypto';
import type { ServiceChild } from './service-process.js';

export interface Answer {
  status: number;
  body: any;
}

/** A client of the documented API: Basic auth, JSON bodies, and whatever headers a call adds. */
export class PlainClient {
  constructor(
    private readonly baseUrl: string,
    private readonly authorization: string,
  ) {}

  async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: { authorization: this.authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
  }

  async ok(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<any> {
    const answer = await this.call(method, path, body, headers);
    assert.ok(answer.status >= 200 && answer.status < 300, `${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  }
}

/** A 400 whose details name `field`. */
export function refusedNaming(answer: Answer, field: string): void {
  assert.equal(answer.status, 400, JSON.stringify(answer.body));
  const fields = (answer.body.details ?? []).map((d: { field: string }) => d.field);
  assert.ok(fields.includes(field), `expected ${field} among ${fields.join(', ')}`);
}

/** A client with the sandbox token the service wrote to its credentials file. */
export function sandboxClient(child: ServiceChild): PlainClient {
  const credentials = JSON.parse(readFileSync(child.credentialsPath, 'utf8')) as Record<'sandbox', { tokenId: string; clientSecret: string }>;
  const { tokenId, clientSecret } = credentials.sandbox;
  return new PlainClient(child.baseUrl, `Basic ${Buffer.from(`${tokenId}:${clientSecret}`).toString('base64')}`);
}

/** The `Grid-Wallet-Signature` a Turnkey client sends for `payload`, stamped with the P-256 key `privateKeyHex`. */
export async function stamp(payload: string, privateKeyHex: string): Promise<string> {
  const apiPublicKey = Buffer.from(getPublicKey(privateKeyHex, true)).toString('hex');
  return (await new ApiKeyStamper({ apiPublicKey, apiPrivateKey: privateKeyHex }).stamp(payload)).stampHeaderValue;
}

/** A customer's embedded wallet: its USDB internal account, found by listing. */
export async function walletOf(api: PlainClient, customerId: string): Promise<any> {
  return (await api.ok('GET', `/customers/internal-accounts?customerId=${customerId}&currency=USDB`)).data[0];
}

/**
 * Two new customers' wallets, the first funded with 5,000, and an EMAIL_OTP session on it
 * whose signing key the service sealed to a fresh client key: that key, decrypted as the
 * client does.
 */
export async function sealedKeySession(api: PlainClient, sender: string, receiver: string): Promise<{ from: any; to: any; sessionKey: string }> {
  const payer = await api.ok('POST', '/customers', { customerType: 'INDIVIDUAL', email: sender });
  const payee = await api.ok('POST', '/customers', { customerType: 'INDIVIDUAL', email: receiver });
  const from = await walletOf(api, payer.id);
  const to = await walletOf(api, payee.id);
  await api.ok('POST', `/sandbox/internal-accounts/${from.id}/fund`, { amount: 5_000 });
  const credential = await api.ok('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: from.id });
  const client = generateP256KeyPair();
  const session = await api.ok('POST', `/auth/credentials/${credential.id}/verify`, { otp: '000000', clientPublicKey: client.publicKeyUncompressed });
  return { from, to, sessionKey: decryptCredentialBundle(session.encryptedSessionSigningKey, client.privateKey) };
}
