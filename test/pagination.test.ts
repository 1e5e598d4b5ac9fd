// A list without a filter pages by binary search (paginateAll) instead of walking every id
// (paginate): for any ids, cursor, limit and order, both must hand out the same page.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { paginate, paginateAll } from '../actors/page.js';

/** Sorted, distinct ids of a few digits, so a cursor often falls between two of them. */
const sortedIds = fc.uniqueArray(fc.integer({ min: 0, max: 999 }), { maxLength: 60 }).map((ns) => ns.sort((a, b) => a - b).map(idOf));

function idOf(n: number): string {
  return `Transaction:${String(n).padStart(3, '0')}`;
}

describe('paginateAll', () => {
  it('gives the page, hasMore, nextCursor and totalCount that walking every id gives', () => {
    fc.assert(
      fc.property(
        sortedIds,
        fc.option(fc.integer({ min: 0, max: 999 }).map(idOf), { nil: undefined }),
        fc.option(fc.integer({ min: 1, max: 25 }), { nil: undefined }),
        fc.constantFrom('asc' as const, 'desc' as const),
        (ids, cursor, limit, order) => {
          const query = { ...(cursor === undefined ? {} : { cursor }), ...(limit === undefined ? {} : { limit }) };
          const render = (id: string): string => `rendered ${id}`;
          const walked = paginate(ids, query, (id) => id, render, order);
          assert.deepEqual(paginateAll(ids, query, (id) => id, render, order), walked);
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('pages through a long list in both orders, each id once', () => {
    const ids = Array.from({ length: 1_000 }, (_, n) => idOf(n));
    for (const order of ['asc', 'desc'] as const) {
      const seen: string[] = [];
      let cursor: string | undefined;
      for (;;) {
        const page = paginateAll(ids, { limit: 100, ...(cursor === undefined ? {} : { cursor }) }, (id) => id, (id) => id, order);
        assert.equal(page.totalCount, 1_000);
        seen.push(...page.data);
        if (!page.hasMore) break;
        cursor = page.nextCursor;
      }
      assert.deepEqual(seen, order === 'asc' ? ids : [...ids].reverse());
    }
  });
});
