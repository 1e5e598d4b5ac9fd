// List cursors are opaque and checked: only a cursor this service issued for the same
// list (environment, route, filters) is accepted, and it keeps working after a restart.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serviceForSuite, startTestService, type Response, type TestService } from './support/service.js';
import { assertInvalid, assertStatus, createCustomer } from './support/assertions.js';

/** What a list answers, as far as paging goes. */
interface ListPage {
  data: Array<{ id: string }>;
  hasMore: boolean;
  nextCursor?: string;
}

/** The ids of a list's first page of one item, and the cursor to its second page. */
async function firstPage(svc: TestService, path: string, auth: 'sandbox' | 'production' = 'sandbox'): Promise<{ ids: string[]; cursor: string }> {
  const sep = path.includes('?') ? '&' : '?';
  const res = await svc.request<ListPage>('GET', `${path}${sep}limit=1`, { auth });
  assertStatus(res, 200);
  assert.equal(typeof res.body.nextCursor, 'string', `${path} has a second page`);
  return { ids: res.body.data.map((item) => item.id), cursor: res.body.nextCursor! };
}

async function firstCursor(svc: TestService, path: string, auth: 'sandbox' | 'production' = 'sandbox'): Promise<string> {
  return (await firstPage(svc, path, auth)).cursor;
}

/** The ids of the whole list in one page, the order the pages must follow. */
async function allIds(svc: TestService, path: string): Promise<string[]> {
  const res = await svc.request<ListPage>('GET', `${path}?limit=100`);
  assertStatus(res, 200);
  assert.equal(res.body.hasMore, false);
  return res.body.data.map((item) => item.id);
}

describe('list cursors', () => {
  const svc = serviceForSuite();
  before(async () => {
    for (let i = 0; i < 3; i++) {
      await createCustomer(svc, {}, 'sandbox');
      await createCustomer(svc, {}, 'production');
    }
  });

  it('an issued cursor reads the next page: page by page, the whole list in order, each item once', async () => {
    const expected = await allIds(svc, '/customers');
    assert.equal(expected.length, 3);
    const first = await firstPage(svc, '/customers');
    assert.deepEqual(first.ids, expected.slice(0, 1));
    const paged = [...first.ids];
    let cursor: string | undefined = first.cursor;
    while (cursor !== undefined) {
      const res: Response<ListPage> = await svc.request<ListPage>('GET', `/customers?limit=1&cursor=${encodeURIComponent(cursor)}`);
      assertStatus(res, 200);
      assert.equal(res.body.data.length, 1);
      const id = res.body.data[0]!.id;
      // Pages do not overlap (which also ends the walk if a cursor led back).
      assert.ok(!paged.includes(id), `page ${paged.length + 1} repeats ${id}, already on an earlier page`);
      paged.push(id);
      cursor = res.body.nextCursor;
      assert.equal(res.body.hasMore, cursor !== undefined);
    }
    assert.deepEqual(paged, expected);
  });

  it('a forged cursor (base64url of a well-formed id, of this kind or another) is 400 naming cursor', async () => {
    const all = await svc.request('GET', '/customers?limit=10');
    const accounts = await svc.request('GET', '/internal-accounts?limit=10');
    for (const id of [all.body.data[0].id, all.body.data[2].id, accounts.body.data[0].id, 'Customer:01900000-0000-7000-8000-000000000000']) {
      assertInvalid(await svc.request('GET', `/customers?limit=1&cursor=${Buffer.from(id).toString('base64url')}`), 'cursor');
    }
  });

  it('an altered cursor is 400', async () => {
    const cursor = await firstCursor(svc, '/customers');
    const bytes = Buffer.from(cursor, 'base64url');
    for (const i of [0, Math.floor(bytes.length / 2), bytes.length - 1]) {
      const altered = Buffer.from(bytes);
      altered[i] = altered[i]! ^ 1;
      assertInvalid(await svc.request('GET', `/customers?limit=1&cursor=${altered.toString('base64url')}`), 'cursor');
    }
    assertInvalid(await svc.request('GET', `/customers?limit=1&cursor=${cursor.slice(0, -2)}`), 'cursor');
    assertInvalid(await svc.request('GET', `/customers?limit=1&cursor=${cursor}A`), 'cursor');
  });

  it('a cursor of another list, another filter or the other environment is 400', async () => {
    const customers = await firstCursor(svc, '/customers');
    assertInvalid(await svc.request('GET', `/internal-accounts?limit=1&cursor=${customers}`), 'cursor');
    assertInvalid(await svc.request('GET', `/customers?limit=1&isDeleted=false&cursor=${customers}`), 'cursor');
    assertInvalid(await svc.request('GET', `/customers?limit=1&cursor=${customers}`, { auth: 'production' }), 'cursor');
    const filtered = await firstCursor(svc, '/customers?isDeleted=false');
    assertStatus(await svc.request('GET', `/customers?limit=1&isDeleted=false&cursor=${filtered}`), 200);
    assertInvalid(await svc.request('GET', `/customers?limit=1&cursor=${filtered}`), 'cursor');
    // Another page size is the same list.
    assertStatus(await svc.request('GET', `/customers?limit=5&cursor=${customers}`), 200);
  });

  it('a cursor still works after a restart on the same data directory', async () => {
    const first = await startTestService();
    await createCustomer(first);
    await createCustomer(first);
    const expected = await allIds(first, '/customers');
    const { ids, cursor } = await firstPage(first, '/customers');
    assert.deepEqual(ids, expected.slice(0, 1));
    await first.stop({ keepData: true });
    const second = await startTestService({ dataDir: first.dataDir });
    try {
      const res = await second.request<ListPage>('GET', `/customers?limit=1&cursor=${cursor}`);
      assertStatus(res, 200);
      // The page after the first, not the first again.
      assert.deepEqual(res.body.data.map((item) => item.id), expected.slice(1, 2));
    } finally {
      await second.stop();
    }
  });
});
