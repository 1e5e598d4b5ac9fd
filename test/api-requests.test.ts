// The API's request path without a socket (src/http/requests.ts), as a simulation will
// drive it: a request as data gets the answer HTTP would give, validation and
// authentication included, and what it writes is what the HTTP API then reads.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiRequests, API_VERSION, type Incoming } from '../src/http/requests.js';
import { routes } from '../src/http/routes/index.js';
import { DomainError } from '../actors/errors.js';
import { serviceForSuite } from './support/service.js';

describe('the request path as data', () => {
  let requests: ApiRequests;
  const svc = serviceForSuite();
  before(async () => {
    requests = new ApiRequests(svc.service.services, routes);
  });

  const request = (method: string, path: string, body?: unknown, authorization = svc.basic('sandbox')): { incoming: Incoming; raw: Buffer | undefined } => {
    const [pathname = '', query = ''] = path.split('?');
    const raw = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return {
      incoming: {
        method,
        path: `/${API_VERSION}${pathname}`,
        query,
        authorization,
        contentType: raw === undefined ? '' : 'application/json',
        contentLength: raw === undefined ? '' : String(raw.length),
        headers: {},
      },
      raw,
    };
  };
  const answer = async (method: string, path: string, body?: unknown, authorization?: string): Promise<{ status: number; body: any }> => {
    const { incoming, raw } = request(method, path, body, authorization);
    const answered = await requests.handle(requests.prepare(incoming), incoming, raw, 'as-data-1');
    return { status: answered.status, body: answered.body === '' ? undefined : JSON.parse(answered.body) };
  };

  it('creates a customer the HTTP API then serves', async () => {
    const created = await answer('POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'as-data' });
    assert.equal(created.status, 201);
    const served = await svc.request('GET', `/customers/${created.body.id}`);
    assert.equal(served.status, 200);
    assert.deepEqual(served.body, created.body);
  });

  it('validates the body and names the field', async () => {
    const refused = await answer('POST', '/customers', { customerType: 'NOT_A_TYPE' }).catch((err: unknown) => err);
    assert.ok(refused instanceof DomainError, 'a refusal is thrown as the front would turn it into an error body');
    assert.equal(refused.code, 'INVALID_INPUT');
    assert.ok(refused.fields?.some((problem) => problem.field === 'customerType'));
  });

  it('a path reaches its route by its method only, with its own parameters, also when it is found by its exact path', async () => {
    const reached = (method: string, path: string): string => {
      const prepared = requests.prepare(request(method, path).incoming);
      return `${prepared.route.method} ${prepared.route.path} ${JSON.stringify(prepared.params)}`;
    };
    for (let i = 0; i < 2; i++) {
      assert.equal(reached('POST', '/customers'), 'POST /customers {}');
      assert.equal(reached('GET', '/customers'), 'GET /customers {}');
      assert.equal(reached('HEAD', '//customers/'), 'GET /customers {}');
      assert.throws(() => requests.prepare(request('PUT', '/customers').incoming), (err: unknown) => err instanceof DomainError && err.code === 'METHOD_NOT_ALLOWED');
      // Also a path spelled as the route's template: its parameter is the text sent.
      for (const id of ['Customer:a', 'Customer:b', '{customerId}']) assert.equal(reached('GET', `/customers/${id}`), `GET /customers/{customerId} {"customerId":"${id}"}`);
    }
    const created = await answer('POST', '/customers', { customerType: 'INDIVIDUAL' });
    assert.equal(created.status, 201);
  });

  it('authenticates before anything else', () => {
    const { incoming } = request('GET', '/customers', undefined, 'Basic bm9wZTpub3Bl');
    assert.throws(() => requests.prepare(incoming), (err: unknown) => err instanceof DomainError && err.code === 'UNAUTHORIZED');
  });
});
