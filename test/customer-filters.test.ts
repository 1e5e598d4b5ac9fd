// GET /customers filters of CONTRACT.md "Real clients": customerType, currency, the created
// and updated time bounds (inclusive), isIncludingDeleted (deleted customers are hidden
// unless asked for) beside isDeleted; each with a paged walk, and a bad value of a known
// parameter a 400 naming it while an unknown parameter is ignored.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { serviceForSuite } from './support/service.js';
import { assertInvalid, assertStatus, createCustomer, setCurrencies, walk } from './support/assertions.js';

const T0 = Date.UTC(2026, 0, 10, 12, 0, 0);
const iso = (ms: number): string => new Date(ms).toISOString();

describe('GET /customers filters', () => {
  const clock = new ManualClock(T0);
  /** The customers in creation order: a (US, t0, Ann@Example.com), b (MX, t0+1h), c (US, t0+2h, deleted at t0+3h), d (US, t0+2h, updated at t0+4h). */
  const made: Record<'a' | 'b' | 'c' | 'd', any> = {} as Record<'a' | 'b' | 'c' | 'd', any>;

  /** The ids a paged walk (one per page) of `query` lists, newest first, with every page's totalCount equal to their number. */
  async function listed(query: string): Promise<string[]> {
    const { items, totalCounts } = await walk(svc, `/customers?${query}`, 1);
    assert.ok(totalCounts.every((n) => n === items.length), `${query}: totalCount ${totalCounts.join(',')} for ${items.length} listed`);
    return items.map((c) => c.id);
  }
  const ids = (...names: Array<keyof typeof made>): string[] => names.map((n) => made[n].id);

  const svc = serviceForSuite({ clock });
  before(async () => {
    await setCurrencies(svc, ['USD', 'MXN', 'USDC']);
    made.a = await createCustomer(svc, { region: 'US', currencies: ['USD'], email: 'Ann@Example.com' });
    clock.advance(3_600_000);
    made.b = await createCustomer(svc, { region: 'MX', currencies: ['MXN', 'USDC'] });
    clock.advance(3_600_000);
    made.c = await createCustomer(svc, { region: 'US', currencies: ['USD', 'USDC'] });
    made.d = await createCustomer(svc, { region: 'US', currencies: ['USD'] });
    clock.advance(3_600_000);
    assertStatus(await svc.request('DELETE', `/customers/${made.c.id}`), 200);
    clock.advance(3_600_000);
    assertStatus(await svc.request('PATCH', `/customers/${made.d.id}`, { body: { customerType: 'INDIVIDUAL', fullName: 'Dee' } }), 200);
  });

  it('deleted customers are hidden unless isIncludingDeleted=true; isDeleted still selects either side', async () => {
    assert.deepEqual(await listed(''), ids('d', 'b', 'a'));
    assert.deepEqual(await listed('isIncludingDeleted=false'), ids('d', 'b', 'a'));
    assert.deepEqual(await listed('isIncludingDeleted=true'), ids('d', 'c', 'b', 'a'));
    assert.deepEqual(await listed('isDeleted=true'), ids('c'));
    assert.deepEqual(await listed('isDeleted=false&isIncludingDeleted=true'), ids('d', 'b', 'a'));
  });

  it('currency lists the customers holding it', async () => {
    assert.deepEqual(await listed('currency=USDC'), ids('b'));
    assert.deepEqual(await listed('currency=USDC&isIncludingDeleted=true'), ids('c', 'b'));
    assert.deepEqual(await listed('currency=USD'), ids('d', 'a'));
    assert.deepEqual(await listed('currency=EUR'), []);
  });

  it('email selects the customer with that address, in any letter case', async () => {
    assert.deepEqual(await listed('email=ann%40example.com'), ids('a'));
    assert.deepEqual(await listed('email=ANN%40EXAMPLE.COM'), ids('a'));
    assert.deepEqual(await listed('email=nobody%40example.com'), []);
  });

  it('customerType selects on the type', async () => {
    assert.deepEqual(await listed('customerType=INDIVIDUAL&isIncludingDeleted=true'), ids('d', 'c', 'b', 'a'));
  });

  it('createdAfter and createdBefore are inclusive bounds on createdAt, in any ISO 8601 zone', async () => {
    const t1 = T0 + 3_600_000;
    const t2 = T0 + 7_200_000;
    assert.deepEqual(await listed(`createdAfter=${iso(t1)}&isIncludingDeleted=true`), ids('d', 'c', 'b'));
    assert.deepEqual(await listed(`createdAfter=${iso(t1 + 1)}&isIncludingDeleted=true`), ids('d', 'c'));
    assert.deepEqual(await listed(`createdBefore=${iso(t1)}`), ids('b', 'a'));
    assert.deepEqual(await listed(`createdBefore=${iso(t1 - 1)}`), ids('a'));
    assert.deepEqual(await listed(`createdAfter=${iso(t1)}&createdBefore=${iso(t1)}`), ids('b'));
    // t0 (12:00Z) written as 14:00 at +02:00.
    assert.deepEqual(await listed(`createdAfter=${encodeURIComponent('2026-01-10T14:00:00+02:00')}`), ids('d', 'b', 'a'));
    assert.deepEqual(await listed(`createdAfter=${encodeURIComponent('2026-01-10T14:00:00.001+02:00')}`), ids('d', 'b'));
    assert.deepEqual(await listed(`createdAfter=${iso(t2)}`), ids('d'));
    assert.deepEqual(await listed('createdBefore=2026-01-10'), []);
    assert.deepEqual(await listed('createdAfter=2026-01-11'), []);
  });

  it('updatedAfter and updatedBefore are inclusive bounds on updatedAt (a delete and a PATCH update it)', async () => {
    const t3 = T0 + 3 * 3_600_000;
    const t4 = T0 + 4 * 3_600_000;
    assert.deepEqual(await listed(`updatedAfter=${iso(t3)}&isIncludingDeleted=true`), ids('d', 'c'));
    assert.deepEqual(await listed(`updatedAfter=${iso(t4)}&isIncludingDeleted=true`), ids('d'));
    assert.deepEqual(await listed(`updatedBefore=${iso(t3)}&isIncludingDeleted=true`), ids('c', 'b', 'a'));
    assert.deepEqual(await listed(`updatedBefore=${iso(t3 - 1)}&isIncludingDeleted=true`), ids('b', 'a'));
    assert.deepEqual(await listed(`updatedAfter=${iso(t4)}&updatedBefore=${iso(t4)}&currency=USD&region=US`), ids('d'));
  });

  it('a known parameter with a bad value is a 400 naming it; an unknown parameter is ignored', async () => {
    for (const [query, field] of [
      ['customerType=ROBOT', 'customerType'],
      ['currency=usd', 'currency'],
      ['currency=XYZ', 'currency'],
      ['createdAfter=yesterday', 'createdAfter'],
      ['createdBefore=2026-13-45', 'createdBefore'],
      ['updatedAfter=2026-01-10T12:00:00', 'updatedAfter'],
      ['updatedBefore=1736510400000', 'updatedBefore'],
      ['isIncludingDeleted=maybe', 'isIncludingDeleted'],
      ['isIncludingDeleted=1', 'isIncludingDeleted'],
    ] as const) {
      assertInvalid(await svc.request('GET', `/customers?${query}`), field);
    }
    assert.deepEqual(await listed('sortOfFilter=whatever'), ids('d', 'b', 'a'));
  });
});
