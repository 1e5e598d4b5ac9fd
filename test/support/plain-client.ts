// A client of the documented API as any HTTP client is one: fetch, Basic auth, JSON bodies and
// whatever headers a call adds, nothing of the service's code. The generic-client tests drive
// the service in its own process (support/service-process.ts) with it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
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
