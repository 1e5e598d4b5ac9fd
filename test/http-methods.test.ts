// Methods and their headers: HEAD answers like GET without a body (so a keep-alive client
// reads the next response where it starts), 401 names its scheme in WWW-Authenticate, and
// 405's details have the `{field, message}` shape of every other error.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rawExchange, serviceForSuite } from './support/service.js';
import { assertError, createCustomer, fieldsOf } from './support/assertions.js';

const VERSION = '2025-10-13';

describe('HTTP methods', () => {
  const svc = serviceForSuite();

  const head = (path: string, auth = true): string =>
    `HEAD ${path} HTTP/1.1\r\nHost: localhost\r\n${auth ? `Authorization: ${svc.basic('sandbox')}\r\n` : ''}\r\n`;
  const get = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${svc.basic('sandbox')}\r\n\r\n`;

  it('HEAD answers without a body, so the next request on the connection is read correctly', async () => {
    const customer = await createCustomer(svc);
    const paths = ['/healthz', `/${VERSION}/openapi.json`, `/${VERSION}/customers`, `/${VERSION}/customers/${customer.id}`, `/${VERSION}/config`];
    for (const path of paths) {
      const [headRes, getRes] = await rawExchange(svc.service.http.port, head(path) + get(path), [{ head: true }, {}]);
      assert.equal(headRes!.status, 200, `HEAD ${path}`);
      assert.equal(headRes!.body, '');
      assert.match(headRes!.headers['content-type'] ?? '', /^application\/json/);
      assert.equal(getRes!.status, 200, `GET ${path} after HEAD: ${getRes!.body}`);
      assert.equal(typeof JSON.parse(getRes!.body), 'object');
      if (path !== '/healthz') assert.equal(headRes!.headers['content-length'], getRes!.headers['content-length'], `HEAD ${path} reports GET's length`);
    }
  });

  it('HEAD errors have no body either', async () => {
    const cases: Array<[string, boolean, number]> = [
      [`/${VERSION}/nope`, true, 404],
      [`/${VERSION}/customers`, false, 401],
      [`/${VERSION}/users`, true, 405],
    ];
    for (const [path, auth, status] of cases) {
      const [headRes, getRes] = await rawExchange(svc.service.http.port, head(path, auth) + get('/healthz'), [{ head: true }, {}]);
      assert.equal(headRes!.status, status, `HEAD ${path}`);
      assert.equal(getRes!.status, 200, `the request after HEAD ${path}: ${getRes!.body}`);
      assert.equal(JSON.parse(getRes!.body).status, 'ok');
    }
    const res = await fetch(`http://127.0.0.1:${svc.service.http.port}/healthz`, { method: 'HEAD' });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), '');
  });

  it('401 carries WWW-Authenticate: Basic', async () => {
    for (const auth of ['none', { header: 'Bearer x' }] as const) {
      const res = await svc.request('GET', '/customers', { auth });
      assertError(res, 401, 'UNAUTHORIZED');
      assert.match(res.headers.get('www-authenticate') ?? '', /^Basic\b/);
    }
  });

  it('405 details are {field, message} like every other error, and Allow lists the methods', async () => {
    for (const path of ['/customers', '/healthz']) {
      const res = await svc.request('PUT', path);
      const body = assertError(res, 405, 'METHOD_NOT_ALLOWED');
      assert.ok(Array.isArray(body.details));
      for (const d of body.details as unknown[]) {
        assert.equal(typeof (d as { field?: unknown }).field, 'string', JSON.stringify(d));
        assert.equal(typeof (d as { message?: unknown }).message, 'string', JSON.stringify(d));
      }
      assert.deepEqual(fieldsOf(body.details), ['method']);
      assert.ok((res.headers.get('allow') ?? '').includes('GET'));
    }
  });
});
