// GET /transactions and GET /transactions/{id} (CONTRACT.md "HTTP surface" and "Money"):
// every filter, both sort orders, paging, and bad queries named.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { serviceForSuite } from './support/service.js';
import { absentId, assertError, assertInvalid, walk } from './support/assertions.js';
import { createQuote, execute, fundedCustomer, getJson, quoteBody } from './support/money.js';

describe('transactions', () => {
  const start = Date.UTC(2026, 2, 1, 12, 0, 0);
  const clock = new ManualClock(start);
  let alice: { customer: any; usd: any };
  let bob: { customer: any; usd: any };
  /** Outgoing transaction ids of alice's three payments to bob, one minute apart, oldest first. */
  const sent: string[] = [];
  /** Alice's sandbox funding: an INCOMING transaction, made at `start` before her payments. */
  let funding: string;
  /** The failed one: an execute refused for its balance makes no transaction at all. */
  let refusedQuote: any;

  const svc = serviceForSuite({ clock });
  before(async () => {
    alice = await fundedCustomer(svc, 10_000, { platformCustomerId: 'alice-platform-id' });
    bob = await fundedCustomer(svc, 0, { platformCustomerId: 'bob-platform-id' });
    const funded = (await getJson(svc, `/transactions?customerId=${alice.customer.id}`)).data;
    assert.equal(funded.length, 1);
    funding = funded[0].id;
    for (const amount of [100, 200, 300]) {
      const quote = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, amount));
      sent.push((await execute(svc, quote.id)).transactionId);
      clock.advance(60_000);
    }
    refusedQuote = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 1_000_000));
    assert.equal((await svc.request('POST', `/quotes/${refusedQuote.id}/execute`)).status, 400);
  });

  const ids = async (query: string): Promise<string[]> => (await getJson(svc, `/transactions?${query}`)).data.map((t: any) => t.id);

  it('lists newest first by default, oldest first with sortOrder=asc', async () => {
    const all = [funding, ...sent];
    assert.deepEqual(await ids(`customerId=${alice.customer.id}`), [...all].reverse());
    assert.deepEqual(await ids(`customerId=${alice.customer.id}&sortOrder=asc`), all);
    assert.deepEqual(await ids(`customerId=${alice.customer.id}&sortOrder=desc`), [...all].reverse());
  });

  it('filters by customerId, platformCustomerId, type, status and reference', async () => {
    const incoming = await ids(`customerId=${bob.customer.id}`);
    assert.equal(incoming.length, 3);
    assert.deepEqual(await ids('platformCustomerId=bob-platform-id'), incoming);
    assert.deepEqual(await ids('platformCustomerId=alice-platform-id&type=OUTGOING'), [...sent].reverse());
    assert.deepEqual(await ids('platformCustomerId=alice-platform-id&type=INCOMING'), [funding]);
    assert.deepEqual(await ids(`customerId=${alice.customer.id}&status=COMPLETED`), [...sent].reverse().concat(funding));
    assert.deepEqual(await ids(`customerId=${alice.customer.id}&status=FAILED`), []);
    const first = await getJson(svc, `/transactions/${sent[0]}`);
    const byReference = await getJson(svc, `/transactions?reference=${first.reconciliationInstructions.reference}`);
    assert.deepEqual(byReference.data.map((t: any) => t.type).sort(), ['INCOMING', 'OUTGOING'], 'both sides of a payment share its reference');
    assert.equal(byReference.totalCount, 2);
  });

  it('filters by createdAt between startDate and endDate, both inclusive', async () => {
    const at = (ms: number): string => encodeURIComponent(new Date(ms).toISOString());
    const q = `customerId=${alice.customer.id}&sortOrder=asc`;
    // The funding was made at `start`, as the first payment.
    assert.deepEqual(await ids(`${q}&startDate=${at(start)}&endDate=${at(start)}`), [funding, sent[0]]);
    assert.deepEqual(await ids(`${q}&startDate=${at(start + 60_000)}`), [sent[1], sent[2]]);
    assert.deepEqual(await ids(`${q}&endDate=${at(start + 60_000)}`), [funding, sent[0], sent[1]]);
    assert.deepEqual(await ids(`${q}&startDate=${at(start + 1)}&endDate=${at(start + 59_999)}`), []);
    assert.deepEqual(await ids(`${q}&startDate=2026-03-01`), [funding, ...sent], 'a bare date is midnight UTC');
  });

  it('pages with limit and cursor in either order, each transaction once', async () => {
    // Alice's funding, and the two sides of each of the three payments (bob's are the incoming ones).
    const received = await ids(`customerId=${bob.customer.id}`);
    assert.equal(received.length, 3);
    const oldestFirst = [funding, ...sent, ...received].sort();
    for (const order of ['asc', 'desc']) {
      const { items, pages, totalCounts } = await walk(svc, `/transactions?sortOrder=${order}`, 2);
      assert.equal(pages, 4);
      assert.ok(totalCounts.every((n) => n === 7));
      const paged = items.map((t) => t.id);
      assert.equal(new Set(paged).size, paged.length, `a transaction on two pages: ${paged.join(', ')}`);
      // Exactly these transactions, in creation order (ids are UUIDv7): none left out, none repeated.
      assert.deepEqual(paged, order === 'asc' ? oldestFirst : [...oldestFirst].reverse());
    }
  });

  it('reads one transaction; an unknown or malformed id, or another environment\'s, is refused', async () => {
    const tx = await getJson(svc, `/transactions/${sent[0]}`);
    assert.equal(tx.id, sent[0]);
    assert.equal(tx.status, 'COMPLETED');
    assertError(await svc.request('GET', `/transactions/${absentId('Transaction')}`), 404, 'NOT_FOUND');
    assertError(await svc.request('GET', `/transactions/${sent[0]}`, { auth: 'production' }), 404, 'NOT_FOUND');
    assertInvalid(await svc.request('GET', '/transactions/Transaction:x'), 'transactionId');
    assert.equal((await getJson(svc, '/transactions', 'production')).totalCount, 0);
  });

  it('names the bad query field', async () => {
    assertInvalid(await svc.request('GET', '/transactions?status=DONE'), 'status');
    assertInvalid(await svc.request('GET', '/transactions?type=SIDEWAYS'), 'type');
    assertInvalid(await svc.request('GET', '/transactions?sortOrder=up'), 'sortOrder');
    assertInvalid(await svc.request('GET', '/transactions?startDate=yesterday'), 'startDate');
    assertInvalid(await svc.request('GET', '/transactions?endDate=2026-13-45T00:00:00Z'), 'endDate');
    assertInvalid(await svc.request('GET', '/transactions?startDate=2026-03-02T00:00:00Z&endDate=2026-03-01T00:00:00Z'), 'endDate');
    assertInvalid(await svc.request('GET', '/transactions?customerId=nope'), 'customerId');
    assertInvalid(await svc.request('GET', '/transactions?limit=0'), 'limit');
    assertInvalid(await svc.request('GET', '/transactions?cursor=bogus'), 'cursor');
    assertError(await svc.request('GET', `/transactions?customerId=${absentId('Customer')}`), 404, 'NOT_FOUND');
    const page = await getJson(svc, '/transactions?limit=1');
    assertInvalid(await svc.request('GET', `/transactions?limit=1&sortOrder=asc&cursor=${page.nextCursor}`), 'cursor');
  });

  it('an execute refused for its balance leaves no transaction behind', async () => {
    assert.equal((await getJson(svc, `/quotes/${refusedQuote.id}`)).transactionId, undefined);
    assert.equal((await getJson(svc, `/transactions?customerId=${alice.customer.id}`)).totalCount, 4, 'her funding and three payments');
  });
});
