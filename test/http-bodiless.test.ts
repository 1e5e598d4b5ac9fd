// A POST whose route takes no body (execute, approve): clients send it with no body at
// all, an empty body without Content-Type, or `{}`; all succeed (a chunked one, empty or
// not, is 411 like any other: test/http-framing.test.ts).
// A body that is there and is not JSON is still 415.
import type { DomainCommand } from '../actors/world.js';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rawExchange, startTestService, type TestService } from './support/service.js';
import { startHttpServer, type HttpServer } from '../src/http/server.js';
import { ApiRequests } from '../src/http/requests.js';
import { route } from '../src/http/route.js';
import { Type } from '@sinclair/typebox';

const VERSION = '2025-10-13';

describe('POST without a body schema', () => {
  let svc: TestService;
  let http: HttpServer;
  let calls = 0;
  before(async () => {
    svc = await startTestService();
    const execute = route({
      method: 'POST',
      path: '/things/{id}/execute',
      operationId: 'executeThing',
      summary: 'a bodiless action',
      tag: 'Test',
      permission: 'TRANSACT',
      response: Type.Object({ executed: Type.String() }, { required: ['executed'] }),
      status: 200,
      handle: async ({ params }) => {
        calls++;
        return { status: 200, body: { executed: params.id } };
      },
    });
    const approve = route({
      method: 'POST',
      path: '/things/{id}/approve',
      operationId: 'approveThing',
      summary: 'a bodiless action that honours Idempotency-Key',
      tag: 'Test',
      permission: 'TRANSACT',
      response: Type.Object({ approval: Type.Integer() }, { required: ['approval'] }),
      status: 200,
      idempotent: true,
      handle: async (ctx) => {
        calls++;
        const approval: DomainCommand<undefined, number> = { name: 'test.approve', actors: () => [], decide: () => ({ events: [], reply: () => calls }) };
        return ctx.run(approval, undefined, (n) => ({ status: 200, body: { approval: n } }));
      },
    });
    const services = svc.service.services;
    http = await startHttpServer({ host: services.config.host, port: 0, report: () => undefined, recovery: () => undefined });
    http.serve({
      requests: new ApiRequests(services, [execute, approve]),
      routes: [execute, approve],
      extras: { healthz: () => ({}), openapi: () => ({}), operator: { keyHash: Buffer.alloc(32), handle: async () => ({ status: 404, body: {} }) } },
    });
  });
  after(async () => {
    await http.drain(1000);
    await svc.stop();
  });

  const post = (headers: string, body = ''): string =>
    `POST /${VERSION}/things/t1/execute HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${svc.basic('sandbox')}\r\n${headers}\r\n${body}`;

  it('no body, Content-Length: 0 without Content-Type and {} all succeed', async () => {
    const before = calls;
    const requests = [
      post(''),
      post('Content-Length: 0\r\n'),
      post('Content-Type: application/json\r\nContent-Length: 2\r\n', '{}'),
    ];
    for (const request of requests) {
      const [res] = await rawExchange(http.port, request, [{}]);
      assert.equal(res!.status, 200, `${JSON.stringify(request)}: ${res!.body}`);
      assert.deepEqual(JSON.parse(res!.body), { executed: 't1' });
    }
    assert.equal(calls, before + requests.length);
  });

  it('a body that is not JSON is 415 and the action does not run', async () => {
    const before = calls;
    for (const request of [
      post('Content-Type: text/plain\r\nContent-Length: 5\r\n', 'hello'),
      post('Content-Length: 5\r\n', 'hello'),
    ]) {
      const [res] = await rawExchange(http.port, request, [{}]);
      assert.equal(res!.status, 415, `${JSON.stringify(request)}: ${res!.body}`);
      assert.equal(JSON.parse(res!.body).code, 'UNSUPPORTED_MEDIA_TYPE');
    }
    assert.equal(calls, before);
  });

  it('with one Idempotency-Key, no body, an empty body and any JSON body are the same request', async () => {
    const before = calls;
    const key = `approve-${process.pid}-${Date.now()}`;
    const approve = (headers: string, body = ''): string =>
      `POST /${VERSION}/things/t1/approve HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${svc.basic('sandbox')}\r\nIdempotency-Key: ${key}\r\n${headers}\r\n${body}`;
    const bodies: string[] = [];
    for (const request of [approve(''), approve('Content-Length: 0\r\n'), approve('Content-Type: application/json\r\nContent-Length: 2\r\n', '{}'), approve('Content-Type: application/json\r\nContent-Length: 10\r\n', '{"note":1}')]) {
      const [res] = await rawExchange(http.port, request, [{}]);
      assert.equal(res!.status, 200, res!.body);
      bodies.push(res!.body);
    }
    assert.equal(new Set(bodies).size, 1, bodies.join(' '));
    assert.equal(calls, before + 1);
  });
});
