// One 404 (issue 14): a record that does not exist, and one of another tenant, answer the
// same NOT_FOUND whose details name where the request gave the id: a path parameter or a
// body field. An unknown path names `path`.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serviceForSuite } from './support/service.js';
import { absentId, assertError, createCustomer, customerAccounts, type Auth } from './support/assertions.js';
import { quoteBody } from './support/money.js';

describe('one 404', () => {
  const svc = serviceForSuite();

  it('names the field that gave the id, and says the same for a missing record and another tenant’s', async () => {
    // Records of the production environment: to the sandbox token they are another tenant's.
    const other = await createCustomer(svc, {}, 'production');
    const otherUsd = (await customerAccounts(svc, other.id, 'production')).find((a) => a.balance.currency.code === 'USD');
    const mine = await createCustomer(svc);
    const myUsd = (await customerAccounts(svc, mine.id)).find((a) => a.balance.currency.code === 'USD');
    const cases: Array<{ request: (id: string) => Promise<any>; field: string; absent: string; foreign: string }> = [
      { request: (id) => svc.request('GET', `/customers/${id}`), field: 'customerId', absent: absentId('Customer'), foreign: other.id },
      { request: (id) => svc.request('GET', `/customers/internal-accounts?customerId=${id}`), field: 'customerId', absent: absentId('Customer'), foreign: other.id },
      { request: (id) => svc.request('GET', `/internal-accounts/${id}`), field: 'id', absent: absentId('InternalAccount'), foreign: otherUsd.id },
      { request: (id) => svc.request('POST', '/quotes', { body: quoteBody(id, myUsd.id, 100) }), field: 'source.accountId', absent: absentId('InternalAccount'), foreign: otherUsd.id },
      { request: (id) => svc.request('POST', '/quotes', { body: quoteBody(myUsd.id, id, 100) }), field: 'destination.accountId', absent: absentId('InternalAccount'), foreign: otherUsd.id },
    ];
    for (const c of cases) {
      const missing = await c.request(c.absent);
      const foreign = await c.request(c.foreign);
      // Each names its own request; everything else must match.
      const bodies = [missing, foreign].map((res) => ({ ...assertError(res, 404, 'NOT_FOUND', [c.field]), requestId: undefined }));
      assert.deepEqual(
        JSON.parse(JSON.stringify(bodies[1]).replaceAll(c.foreign, 'ID')),
        JSON.parse(JSON.stringify(bodies[0]).replaceAll(c.absent, 'ID')),
        `${c.field}: another tenant's record reads as a missing one`,
      );
    }
    for (const [path, auth] of [['/quotes/' + absentId('Quote'), 'sandbox'], ['/webhooks/events/' + absentId('Webhook'), 'sandbox']] as Array<[string, Auth]>) {
      assertError(await svc.request('GET', path, { auth }), 404, 'NOT_FOUND', [path.startsWith('/quotes') ? 'quoteId' : 'id']);
    }
    assertError(await svc.request('GET', '/no-such-thing'), 404, 'NOT_FOUND', ['path']);
  });
});
