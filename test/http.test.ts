// The HTTP surface every route shares (CONTRACT.md "HTTP surface", SERVICE_SPEC parts 5
// and 7): version segment, routing, 405 with Allow, Basic authentication, media type, body
// size, malformed JSON, error bodies and Idempotency-Key, observed as an integrator would.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { basicHeader, serviceForSuite, startTestService, type TestService } from './support/service.js';
import { ManualClock } from '../src/engine/clock.js';
import {
  absentId,
  assertError,
  assertInvalid,
  assertStatus,
  createCustomer,
  deadline,
  read,
  totalCount,
  unique,
} from './support/assertions.js';

const VERSION = '2025-10-13';
const MiB = 1024 * 1024;

function allowOf(res: { headers: Headers }): string[] {
  const allow = res.headers.get('allow');
  assert.ok(allow !== null, 'a 405 carries an Allow header');
  return allow
    .split(',')
    .map((m) => m.trim())
    .filter((m) => m !== '')
    .sort();
}

/** A body of unknown length as node:http sends it (chunked), which fetch with a string body never does. */
function chunkedPost(svc: TestService, path: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: svc.service.http.port,
        method: 'POST',
        path: `/${VERSION}${path}`,
        headers: { authorization: svc.basic('sandbox'), 'content-type': 'application/json' },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    // write() before end(): end(body) alone would send Content-Length.
    req.write(body);
    req.end();
  });
}

describe('HTTP surface', () => {
  const svc = serviceForSuite();

  describe('unauthenticated endpoints', () => {
    it('GET /healthz without the operator key says up and nothing more; with it, the details', async () => {
      for (const auth of ['none', 'sandbox', { header: 'Bearer not-the-operator-key' }] as const) {
        const res = await svc.request('GET', '/healthz', { auth });
        assertStatus(res, 200);
        assert.deepEqual(res.body, { status: 'ok' }, `auth ${JSON.stringify(auth)}`);
      }
      const res = await svc.request('GET', '/healthz', { auth: svc.operator() });
      assertStatus(res, 200);
      assert.equal(res.body.status, 'ok');
      assert.equal(typeof res.body.lastSeq, 'number');
      assert.equal(typeof res.body.durableSeq, 'number');
      assert.ok(res.body.durableSeq <= res.body.lastSeq);
    });

    it('GET /healthz reports the process memory and the size of data.mdb on disk', async () => {
      const res = await svc.request('GET', '/healthz', { auth: svc.operator() });
      assertStatus(res, 200);
      for (const field of ['rss', 'heapUsed', 'heapTotal', 'external', 'arrayBuffers']) {
        assert.ok(Number.isInteger(res.body.memory[field]) && res.body.memory[field] > 0, `memory.${field} is a byte count`);
      }
      assert.ok(res.body.memory.heapUsed <= res.body.memory.heapTotal);
      assert.equal(res.body.store.dataFileBytes, statSync(join(svc.dataDir, 'data.mdb')).size);
      assert.ok(res.body.store.dataFileBytes > 0 && Number.isInteger(res.body.store.allocatedBytes));
    });

    it('GET /2025-10-13/openapi.json describes every route of this issue', async () => {
      const res = await svc.request('GET', `/${VERSION}/openapi.json`, { auth: 'none' });
      assertStatus(res, 200);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      const doc = res.body;
      assert.equal(doc.openapi, '3.1.0');
      assert.equal(doc.info.version, VERSION);
      const expected: Array<[string, string]> = [
        ['post', '/customers'],
        ['get', '/customers'],
        ['get', '/customers/{customerId}'],
        ['patch', '/customers/{customerId}'],
        ['delete', '/customers/{customerId}'],
        ['post', '/users'],
        ['get', '/internal-accounts'],
        ['get', '/internal-accounts/{id}'],
        ['get', '/customers/internal-accounts'],
        ['get', '/platform/internal-accounts'],
        ['post', '/customers/external-accounts'],
        ['get', '/customers/external-accounts'],
        ['post', '/platform/external-accounts'],
        ['get', '/platform/external-accounts'],
        ['get', '/config'],
        ['patch', '/config'],
        ['post', '/sandbox/internal-accounts/{accountId}/fund'],
      ];
      for (const [method, path] of expected) {
        assert.ok(doc.paths[`/${VERSION}${path}`]?.[method] !== undefined, `openapi.json lacks ${method.toUpperCase()} ${path}`);
      }
      // A wallet stamp's headers, under both names (CONTRACT.md, "Real clients"), and a signed retry's Request-Id,
      // each published once under components/parameters and referred to.
      type Parameter = { name: string; in: string } | { $ref: string };
      const parameterOf = (p: Parameter): { name: string; in: string } => ('$ref' in p ? doc.components.parameters[p.$ref.slice('#/components/parameters/'.length)] : p);
      const headersOf = (path: string, method: string): string[] =>
        (doc.paths[`/${VERSION}${path}`][method].parameters as Parameter[]).map(parameterOf).filter((p) => p.in === 'header').map((p) => p.name);
      for (const name of ['Service-Wallet-Signature', 'Grid-Wallet-Signature']) {
        assert.ok(headersOf('/quotes/{quoteId}/execute', 'post').includes(name), `execute does not publish ${name}`);
        assert.ok(headersOf('/internal-accounts/{id}/export', 'post').includes(name), `export does not publish ${name}`);
      }
      assert.ok(headersOf('/auth/sessions/{id}', 'delete').includes('Request-Id'));
      // The same document is served byte for byte on every call.
      const again = await svc.request('GET', `/${VERSION}/openapi.json`, { auth: 'none' });
      assert.equal(again.text, res.text);
    });

    it('a wrong method on /healthz and openapi.json is 405 with Allow: GET', async () => {
      for (const path of ['/healthz', `/${VERSION}/openapi.json`]) {
        const res = await svc.request('POST', path, { auth: 'none', body: {} });
        assertError(res, 405, 'METHOD_NOT_ALLOWED');
        assert.deepEqual(allowOf(res), ['GET'], path);
      }
    });
  });

  describe('routing and versions', () => {
    it('an unknown route is 404 NOT_FOUND, with or without credentials', async () => {
      const paths = [
        '/nope',
        '/customers/internal-accounts/extra/segments',
        '/customers/external-accounts/x/y',
        `/${VERSION}`,
        `/${VERSION}/`,
        '/2x/customers',
      ];
      for (const path of paths) {
        for (const auth of ['sandbox', 'none'] as const) {
          assertError(await svc.request('GET', path, { auth }), 404, 'NOT_FOUND');
        }
      }
      // Outside the version segment altogether.
      for (const path of ['/', '/customers', '/v1/customers']) {
        const res = await fetch(`http://127.0.0.1:${svc.service.http.port}${path}`, { headers: { authorization: svc.basic('sandbox') } });
        assert.equal(res.status, 404, path);
        assert.equal(((await res.json()) as { code: string }).code, 'NOT_FOUND', path);
      }
    });

    it('another date segment is 404 UNSUPPORTED_VERSION naming the supported version', async () => {
      for (const version of ['2024-01-01', '2025-10-14', '2099-12-31']) {
        for (const auth of ['sandbox', 'none'] as const) {
          const res = await svc.request('GET', `/${version}/customers`, { auth });
          const body = assertError(res, 404, 'UNSUPPORTED_VERSION');
          assert.match(body.message, new RegExp(VERSION));
        }
      }
      const old = await fetch(`http://127.0.0.1:${svc.service.http.port}/1999-12-31/customers`, { headers: { authorization: svc.basic('sandbox') } });
      assert.equal(old.status, 404);
      assert.equal(((await old.json()) as { code: string }).code, 'UNSUPPORTED_VERSION');
      // A POST to another version creates nothing.
      const before = await totalCount(svc, '/customers');
      assertError(await svc.request('POST', '/2024-01-01/customers', { body: { customerType: 'INDIVIDUAL' } }), 404, 'UNSUPPORTED_VERSION');
      assert.equal(await totalCount(svc, '/customers'), before);
    });

    it('a wrong method is 405 METHOD_NOT_ALLOWED with the allowed methods in Allow', async () => {
      const customer = await createCustomer(svc);
      const cases: Array<[string, string, string[]]> = [
        ['PUT', '/customers', ['GET', 'POST']],
        ['DELETE', '/customers', ['GET', 'POST']],
        ['PUT', `/customers/${customer.id}`, ['DELETE', 'GET', 'PATCH']],
        ['POST', `/customers/${customer.id}`, ['DELETE', 'GET', 'PATCH']],
        ['GET', '/users', ['POST']],
        ['DELETE', '/config', ['GET', 'PATCH']],
        ['POST', '/internal-accounts', ['GET']],
        ['DELETE', `/internal-accounts/${absentId('InternalAccount')}`, ['GET', 'PATCH']],
        ['PATCH', '/customers/external-accounts', ['GET', 'POST']],
        ['DELETE', '/customers/internal-accounts', ['GET']],
        ['PUT', '/platform/external-accounts', ['GET', 'POST']],
        ['POST', '/platform/internal-accounts', ['GET']],
        ['GET', `/sandbox/internal-accounts/${absentId('InternalAccount')}/fund`, ['POST']],
      ];
      for (const [method, path, allowed] of cases) {
        const res = await svc.request(method, path, { auth: 'none' });
        assertError(res, 405, 'METHOD_NOT_ALLOWED');
        assert.deepEqual(allowOf(res), allowed, `${method} ${path}`);
      }
      // The customer is untouched by the refused PUT/POST.
      assert.equal(JSON.parse(await read(svc, `/customers/${customer.id}`)).updatedAt, customer.updatedAt);
    });

    it('percent-encoded path segments are decoded; broken encoding is a 400 naming the path', async () => {
      const customer = await createCustomer(svc);
      const res = await svc.request('GET', `/customers/${encodeURIComponent(customer.id)}`);
      assertStatus(res, 200);
      assert.equal(res.body.id, customer.id);
      assertInvalid(await svc.request('GET', '/customers/%E0%A4%A'), 'path');
    });
  });

  describe('list query parameters', () => {
    it('every list route refuses a limit that is not a whole number (400 naming limit), rather than truncating it', async () => {
      const lists = [
        '/customers',
        '/internal-accounts',
        '/customers/internal-accounts',
        '/platform/internal-accounts',
        '/customers/external-accounts',
        '/platform/external-accounts',
      ];
      for (const path of lists) {
        for (const limit of ['1.5', '2.9', '1e1', '0x10']) {
          assertInvalid(await svc.request('GET', `${path}?limit=${limit}`), 'limit');
        }
      }
    });

    it('every list route refuses limit 0, 101 and a cursor it did not issue', async () => {
      for (const path of ['/customers', '/internal-accounts', '/customers/internal-accounts', '/platform/internal-accounts', '/customers/external-accounts', '/platform/external-accounts']) {
        assertInvalid(await svc.request('GET', `${path}?limit=0`), 'limit');
        assertInvalid(await svc.request('GET', `${path}?limit=101`), 'limit');
        assertInvalid(await svc.request('GET', `${path}?cursor=not-a-cursor`), 'cursor');
        assertStatus(await svc.request('GET', `${path}?limit=100`), 200);
        assertStatus(await svc.request('GET', `${path}?limit=1`), 200);
      }
    });
  });

  describe('authentication', () => {
    it('missing, garbled or wrong credentials are 401 UNAUTHORIZED with a reason, and change nothing', async () => {
      const { sandbox } = svc.credentials;
      const headers: Array<[string, string | undefined]> = [
        ['missing', undefined],
        ['bearer', `Bearer ${sandbox.clientSecret}`],
        ['garbled base64', 'Basic !!!not-base64!!!'],
        ['no colon', `Basic ${Buffer.from('justatoken').toString('base64')}`],
        ['empty token id', `Basic ${Buffer.from(`:${sandbox.clientSecret}`).toString('base64')}`],
        ['wrong secret', basicHeader(sandbox.tokenId, `${sandbox.clientSecret}x`)],
        ['empty secret', basicHeader(sandbox.tokenId, '')],
        ['unknown token id', basicHeader('tok_sbx_000000000000000000000000', sandbox.clientSecret)],
        ['secret of the other environment', basicHeader(sandbox.tokenId, svc.credentials.production.clientSecret)],
      ];
      const before = await totalCount(svc, '/customers');
      for (const [name, header] of headers) {
        const auth = header === undefined ? ('none' as const) : { header };
        for (const [method, path, body] of [
          ['GET', '/customers', undefined],
          ['POST', '/customers', { customerType: 'INDIVIDUAL' }],
          ['GET', '/config', undefined],
        ] as const) {
          const res = await svc.request(method, path, { auth, ...(body !== undefined ? { body } : {}) });
          const err = assertError(res, 401, 'UNAUTHORIZED');
          assert.equal(typeof err.reason, 'string', `${name}: 401 carries reason`);
          assert.ok(err.reason!.length > 0, `${name}: reason is not empty`);
        }
      }
      assert.equal(await totalCount(svc, '/customers'), before);
    });

    it('the reason names the failed check', async () => {
      const missing = assertError(await svc.request('GET', '/config', { auth: 'none' }), 401, 'UNAUTHORIZED');
      assert.match(missing.reason!, /Authorization/i);
      const scheme = assertError(await svc.request('GET', '/config', { auth: { header: 'Bearer abc' } }), 401, 'UNAUTHORIZED');
      assert.match(scheme.reason!, /Basic/);
      const wrong = assertError(
        await svc.request('GET', '/config', { auth: { header: basicHeader(svc.credentials.sandbox.tokenId, 'nope') } }),
        401,
        'UNAUTHORIZED',
      );
      assert.match(wrong.reason!, /token|secret/i);
    });

    it('authentication is checked before media type, size and body (401 wins)', async () => {
      const before = await totalCount(svc, '/customers');
      const res415 = await svc.request('POST', '/customers', { auth: 'none', raw: 'x', headers: { 'content-type': 'text/plain' } });
      assertError(res415, 401, 'UNAUTHORIZED');
      const res400 = await svc.request('POST', '/customers', { auth: 'none', raw: '{nope', headers: { 'content-type': 'application/json' } });
      assertError(res400, 401, 'UNAUTHORIZED');
      assert.equal(await totalCount(svc, '/customers'), before);
    });

    it('each environment token works and sees only its own records', async () => {
      const sbx = await createCustomer(svc, {}, 'sandbox');
      const prd = await createCustomer(svc, {}, 'production');
      assertStatus(await svc.request('GET', `/customers/${sbx.id}`, { auth: 'sandbox' }), 200);
      assertStatus(await svc.request('GET', `/customers/${prd.id}`, { auth: 'production' }), 200);
      assertError(await svc.request('GET', `/customers/${sbx.id}`, { auth: 'production' }), 404, 'NOT_FOUND');
      assertError(await svc.request('GET', `/customers/${prd.id}`, { auth: 'sandbox' }), 404, 'NOT_FOUND');
    });
  });

  describe('media type, size and JSON', () => {
    it('a non-JSON content type is 415 UNSUPPORTED_MEDIA_TYPE and creates nothing', async () => {
      const before = await totalCount(svc, '/customers');
      const body = JSON.stringify({ customerType: 'INDIVIDUAL' });
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx']) {
        assertError(await svc.request('POST', '/customers', { raw: body, headers: { 'content-type': type } }), 415, 'UNSUPPORTED_MEDIA_TYPE');
      }
      // A body without any content type is not JSON either.
      assertError(await svc.request('POST', '/customers', { raw: new TextEncoder().encode(body) }), 415, 'UNSUPPORTED_MEDIA_TYPE');
      assertError(
        await svc.request('PATCH', '/config', { raw: '{"umaDomain":"x.example.com"}', headers: { 'content-type': 'text/plain' } }),
        415,
        'UNSUPPORTED_MEDIA_TYPE',
      );
      assert.equal(await totalCount(svc, '/customers'), before);
    });

    it('application/json with parameters and +json types are accepted', async () => {
      const body = JSON.stringify({ customerType: 'INDIVIDUAL' });
      assertStatus(await svc.request('POST', '/customers', { raw: body, headers: { 'content-type': 'application/json; charset=utf-8' } }), 201);
      assertStatus(await svc.request('POST', '/customers', { raw: body, headers: { 'content-type': 'Application/JSON' } }), 201);
      assertStatus(await svc.request('POST', '/customers', { raw: body, headers: { 'content-type': 'application/vnd.api+json' } }), 201);
    });

    it('a body over 1 MiB is 413 PAYLOAD_TOO_LARGE, a chunked one 411 LENGTH_REQUIRED; either creates nothing, and the service keeps answering', async () => {
      const before = await totalCount(svc, '/customers');
      const big = `{"customerType":"INDIVIDUAL","fullName":"${'x'.repeat(MiB)}"}`;
      assertError(await svc.request('POST', '/customers', { raw: big, headers: { 'content-type': 'application/json' } }), 413, 'PAYLOAD_TOO_LARGE');
      const chunked = await chunkedPost(svc, '/customers', JSON.stringify({ customerType: 'INDIVIDUAL' }));
      assert.equal(chunked.status, 411, chunked.body);
      assert.equal(JSON.parse(chunked.body).code, 'LENGTH_REQUIRED');
      // Still serving, reads and writes alike.
      assertStatus(await svc.request('GET', '/healthz'), 200);
      assert.equal(await totalCount(svc, '/customers'), before);
      await createCustomer(svc);
      assert.equal(await totalCount(svc, '/customers'), before + 1);
    });

    it('a body of exactly 1 MiB is read (and then judged by its schema, not its size)', async () => {
      const head = '{"customerType":"INDIVIDUAL","fullName":"';
      const tail = '"}';
      const body = head + 'x'.repeat(MiB - head.length - tail.length) + tail;
      assert.equal(Buffer.byteLength(body), MiB);
      const before = await totalCount(svc, '/customers');
      assertInvalid(await svc.request('POST', '/customers', { raw: body, headers: { 'content-type': 'application/json' } }), 'fullName');
      assert.equal(await totalCount(svc, '/customers'), before);
    });

    it('malformed JSON is 400 INVALID_INPUT naming the body, and creates nothing', async () => {
      const before = await totalCount(svc, '/customers');
      for (const raw of ['{', '{"customerType": INDIVIDUAL}', "{'customerType':'INDIVIDUAL'}", '{"customerType":"INDIVIDUAL",}', 'undefined']) {
        assertInvalid(await svc.request('POST', '/customers', { raw, headers: { 'content-type': 'application/json' } }), 'body');
      }
      // Valid JSON that is not an object.
      for (const raw of ['[]', '"INDIVIDUAL"', '42', 'null', 'true']) {
        assertInvalid(await svc.request('POST', '/customers', { raw, headers: { 'content-type': 'application/json' } }), 'body');
      }
      assert.equal(await totalCount(svc, '/customers'), before);
    });

    it('a missing body on a route that needs one is a 400 naming the required field', async () => {
      const before = await totalCount(svc, '/customers');
      assertInvalid(await svc.request('POST', '/customers'), 'customerType');
      assertInvalid(await svc.request('POST', '/customers', { raw: '', headers: { 'content-type': 'application/json' } }), 'customerType');
      assert.equal(await totalCount(svc, '/customers'), before);
    });

    it('a client that disconnects in the middle of its upload does not keep the service from shutting down', async () => {
      const own = await startTestService();
      let stopped = false;
      try {
        await new Promise<void>((resolve, reject) => {
          const sock = net.connect(own.service.http.port, '127.0.0.1', () => {
            sock.write(
              `POST /${VERSION}/customers HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${own.basic('sandbox')}\r\n` +
                'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"customerTy',
            );
            // Half-close: the server reads the partial body, then sees the client go away.
            sock.end();
          });
          sock.on('error', reject);
          sock.on('close', () => resolve());
          sock.resume();
        });
        assertStatus(await own.request('GET', '/healthz'), 200);
        const outcome = await Promise.race([own.stop().then(() => 'stopped' as const), deadline(5000)]);
        stopped = outcome === 'stopped';
        assert.equal(outcome, 'stopped', 'close() never finished: the aborted upload is still counted as in flight');
      } finally {
        if (!stopped) {
          // Release the store so the test process can exit.
          await own.service.services.engine.close();
          rmSync(own.dataDir, { recursive: true, force: true });
        }
      }
    });
  });

  describe('Idempotency-Key', () => {
    it('same key and same body: same status, byte-identical body, one customer', async () => {
      const key = unique('idem-');
      const before = await totalCount(svc, '/customers');
      const body = { customerType: 'INDIVIDUAL', platformCustomerId: unique('pc-'), fullName: 'Grace Hopper' };
      const first = await svc.request('POST', '/customers', { body, headers: { 'idempotency-key': key } });
      assertStatus(first, 201);
      const second = await svc.request('POST', '/customers', { body, headers: { 'idempotency-key': key } });
      assert.equal(second.status, 201);
      assert.equal(second.text, first.text);
      // The same JSON with other key order and whitespace is the same request.
      const reordered = `{ "fullName": "Grace Hopper",\n "platformCustomerId": ${JSON.stringify(body.platformCustomerId)}, "customerType": "INDIVIDUAL" }`;
      const third = await svc.request('POST', '/customers', { raw: reordered, headers: { 'idempotency-key': key, 'content-type': 'application/json' } });
      assert.equal(third.status, 201);
      assert.equal(third.text, first.text);
      assert.equal(await totalCount(svc, '/customers'), before + 1);
      assert.equal(await totalCount(svc, `/customers?platformCustomerId=${body.platformCustomerId}`), 1);
    });

    it('without a key, two identical requests create two customers', async () => {
      const before = await totalCount(svc, '/customers');
      const a = await createCustomer(svc, { fullName: 'Twin' });
      const b = await createCustomer(svc, { fullName: 'Twin' });
      assert.notEqual(a.id, b.id);
      assert.equal(await totalCount(svc, '/customers'), before + 2);
    });

    it('same key with a different body is 409 IDEMPOTENCY_KEY_REUSED and changes nothing', async () => {
      const key = unique('idem-');
      const first = await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', fullName: 'One' }, headers: { 'idempotency-key': key } });
      assertStatus(first, 201);
      const before = await totalCount(svc, '/customers');
      const reused = await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', fullName: 'Two' }, headers: { 'idempotency-key': key } });
      assertError(reused, 409, 'IDEMPOTENCY_KEY_REUSED');
      assert.equal(await totalCount(svc, '/customers'), before);
      assert.equal(await totalCount(svc, '/customers?platformCustomerId=' + first.body.platformCustomerId), 1);
      // The first response is still what the key replays.
      const replay = await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', fullName: 'One' }, headers: { 'idempotency-key': key } });
      assert.equal(replay.status, 201);
      assert.equal(replay.text, first.text);
    });

    it('the same key in the other environment, or on another route, is independent', async () => {
      const key = unique('idem-');
      const body = { customerType: 'INDIVIDUAL', fullName: 'Env' };
      const sbxBefore = await totalCount(svc, '/customers', 'sandbox');
      const prdBefore = await totalCount(svc, '/customers', 'production');
      const sbx = await svc.request('POST', '/customers', { body, headers: { 'idempotency-key': key }, auth: 'sandbox' });
      const prd = await svc.request('POST', '/customers', { body, headers: { 'idempotency-key': key }, auth: 'production' });
      assertStatus(sbx, 201);
      assertStatus(prd, 201);
      assert.notEqual(prd.body.id, sbx.body.id);
      assert.equal(prd.body.kycStatus, 'UNVERIFIED');
      assert.equal(sbx.body.kycStatus, 'APPROVED');
      // Production with another body is not a reuse of the sandbox key's body.
      const prdOther = await svc.request('POST', '/customers', { body: { ...body, fullName: 'Other' }, headers: { 'idempotency-key': key }, auth: 'production' });
      assertError(prdOther, 409, 'IDEMPOTENCY_KEY_REUSED');
      // POST /users is another route: the key is fresh there.
      const users = await svc.request('POST', '/users', { body: { userType: 'INDIVIDUAL' }, headers: { 'idempotency-key': key } });
      assertStatus(users, 201);
      assert.notEqual(users.body.id, sbx.body.id);
      assert.equal(await totalCount(svc, '/customers', 'sandbox'), sbxBefore + 2);
      assert.equal(await totalCount(svc, '/customers', 'production'), prdBefore + 1);
      // Both keys still replay their own first answers.
      assert.equal((await svc.request('POST', '/customers', { body, headers: { 'idempotency-key': key }, auth: 'sandbox' })).text, sbx.text);
      assert.equal((await svc.request('POST', '/customers', { body, headers: { 'idempotency-key': key }, auth: 'production' })).text, prd.text);
    });

    it('concurrent identical requests with one key create one record and all get its response', async () => {
      const key = unique('idem-');
      const before = await totalCount(svc, '/customers');
      const body = { customerType: 'INDIVIDUAL', platformCustomerId: unique('race-') };
      const responses = await Promise.all(Array.from({ length: 12 }, () => svc.request('POST', '/customers', { body, headers: { 'idempotency-key': key } })));
      for (const r of responses) {
        assert.equal(r.status, 201, r.text);
        assert.equal(r.text, responses[0]!.text);
      }
      assert.equal(await totalCount(svc, '/customers'), before + 1);
      assert.equal(await totalCount(svc, `/customers?platformCustomerId=${body.platformCustomerId}`), 1);
    });

    it('a request refused by validation is not remembered: the key can then be used', async () => {
      const key = unique('idem-');
      const before = await totalCount(svc, '/customers');
      assertInvalid(await svc.request('POST', '/customers', { body: { customerType: 'NOPE' }, headers: { 'idempotency-key': key } }), 'customerType');
      const ok = await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL' }, headers: { 'idempotency-key': key } });
      assertStatus(ok, 201);
      assert.equal(await totalCount(svc, '/customers'), before + 1);
    });

    it('a malformed key is 400 naming Idempotency-Key and creates nothing', async () => {
      const before = await totalCount(svc, '/customers');
      for (const key of ['has space', 'x'.repeat(256), 'tab\there']) {
        const res = await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL' }, headers: { 'idempotency-key': key } });
        assertInvalid(res, 'Idempotency-Key');
      }
      assertStatus(await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL' }, headers: { 'idempotency-key': 'x'.repeat(255) } }), 201);
      assert.equal(await totalCount(svc, '/customers'), before + 1);
    });

    it('after a restart on the same data directory the key still replays, and still refuses another body', async () => {
      const first = await startTestService();
      const key = unique('idem-');
      const body = { customerType: 'INDIVIDUAL', fullName: 'Durable' };
      const created = await first.request('POST', '/customers', { body, headers: { 'idempotency-key': key } });
      assertStatus(created, 201);
      await first.stop({ keepData: true });
      const second = await startTestService({ dataDir: first.dataDir });
      try {
        const replay = await second.request('POST', '/customers', { body, headers: { 'idempotency-key': key } });
        assert.equal(replay.status, 201);
        assert.equal(replay.text, created.text);
        assertError(await second.request('POST', '/customers', { body: { ...body, fullName: 'Else' }, headers: { 'idempotency-key': key } }), 409, 'IDEMPOTENCY_KEY_REUSED');
        assert.equal(await totalCount(second, '/customers'), 1);
        assert.equal(JSON.parse(await read(second, `/customers/${created.body.id}`)).fullName, 'Durable');
      } finally {
        await second.stop();
      }
    });

    it('a key is remembered for 24 hours, then forgotten', async () => {
      const clock = new ManualClock();
      const own = await startTestService({ clock });
      try {
        const key = unique('idem-');
        const first = await own.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', fullName: 'Day one' }, headers: { 'idempotency-key': key } });
        assertStatus(first, 201);
        clock.advance(24 * 60 * 60 * 1000 - 1000);
        assertError(
          await own.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', fullName: 'Day two' }, headers: { 'idempotency-key': key } }),
          409,
          'IDEMPOTENCY_KEY_REUSED',
        );
        assert.equal((await own.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', fullName: 'Day one' }, headers: { 'idempotency-key': key } })).text, first.text);
        clock.advance(2000);
        const later = await own.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', fullName: 'Day two' }, headers: { 'idempotency-key': key } });
        assertStatus(later, 201);
        assert.notEqual(later.body.id, first.body.id);
        assert.equal(await totalCount(own, '/customers'), 2);
      } finally {
        await own.stop();
      }
    });
  });
});
