// A platform's webhook endpoint on loopback: a node:http server that records every request
// (exact body bytes and signature) and answers as the test says: a status, or 'hang' (no
// answer until the test closes it).
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verify } from 'node:crypto';
import assert from 'node:assert/strict';
import { delegatingTo, forSuite } from './for-suite.js';

export interface Received {
  body: string;
  json: any;
  signature: string;
  /** Every header of the request, names lower-case. */
  headers: IncomingHttpHeaders;
}

export type Answer = number | 'hang';

export interface Receiver {
  url: string;
  received: Received[];
  /** What the n-th request (from 0) is answered with. */
  answer: (json: any, n: number) => Answer;
  /** Resolves once `count` requests have arrived (real I/O; no clock involved). */
  waitFor(count: number): Promise<void>;
  close(): Promise<void>;
}

const WAIT_LIMIT_MS = 10_000;

export async function startReceiver(answer: (json: any, n: number) => Answer = () => 200): Promise<Receiver> {
  const received: Received[] = [];
  const hanging = new Set<ServerResponse>();
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const receiver: Receiver = {
    url: '',
    received,
    answer,
    waitFor(count) {
      if (received.length >= count) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`receiver got ${received.length} of ${count} requests`)), WAIT_LIMIT_MS);
        waiters.push({ count, resolve: () => (clearTimeout(timer), resolve()) });
      });
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const n = received.length;
      const json = JSON.parse(body);
      received.push({ body, json, signature: String(req.headers['x-service-signature'] ?? ''), headers: req.headers });
      const reply = receiver.answer(json, n);
      if (reply === 'hang') hanging.add(res);
      else res.writeHead(reply).end();
      for (const w of waiters.splice(0)) {
        if (received.length >= w.count) w.resolve();
        else waiters.push(w);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return receiver;
}

/**
 * The receiver of one test file or describe block: started before its tests, closed after
 * them. What it returns is the Receiver of those tests, each member reaching the started
 * one (setting `answer` sets the started one's), read inside hooks and tests.
 */
export function receiverForSuite(answer?: (json: any, n: number) => Answer): Receiver {
  return delegatingTo(forSuite("the suite's webhook receiver", () => startReceiver(answer), (receiver) => receiver.close()));
}

/** Verifies a request's signature with the published PEM, node:crypto alone. */
export function assertSigned(request: Received, publicKeyPem: string): void {
  const ok = verify('sha256', Buffer.from(request.body, 'utf8'), publicKeyPem, Buffer.from(request.signature, 'base64'));
  assert.ok(ok, `signature of ${request.json.id} verifies with webhookPublicKeyPem`);
}
