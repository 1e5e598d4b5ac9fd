// A page of a list (SERVICE_SPEC part 2): newest first, `limit` records from past a
// position, and `totalCount` over all matches. Ids are UUIDv7, so an id index in ascending
// order is creation order and a position is the last id handed out; the HTTP front turns
// positions into opaque cursors (src/http/pagination.ts).
import type { IdWalk } from './registry.js';
import { lowerBound } from '../src/engine/ids.js';

export const DEFAULT_LIMIT = 20;

/** Which page: at most `limit` records, from past the position id `cursor`. */
export interface PageRequest {
  limit?: number;
  cursor?: string;
}

export interface Page<V> {
  data: V[];
  hasMore: boolean;
  nextCursor?: string;
  totalCount: number;
}

/**
 * Walks `ids` (ascending) from the newest (or, with order 'asc', from the oldest), keeping
 * the records `select` returns, and renders one page. Counting every match is what
 * `totalCount` costs (a list without a filter has `paginateAll`). Here `cursor` and
 * `nextCursor` are position ids: the HTTP front opens the cursor a client sends before the
 * route runs and seals `nextCursor` in the reply (CursorCodec). `ids` is an array, or a walk
 * that hands `select` each id's summary.
 */
export function paginate<R, V>(
  ids: readonly string[],
  query: PageRequest,
  select: (id: string) => R | undefined,
  render: (record: R) => V,
  order?: 'asc' | 'desc',
): Page<V>;
export function paginate<S, R, V>(
  ids: IdWalk<S>,
  query: PageRequest,
  select: (id: string, summary: S) => R | undefined,
  render: (record: R) => V,
  order?: 'asc' | 'desc',
): Page<V>;
export function paginate<S, R, V>(
  ids: readonly string[] | IdWalk<S>,
  query: PageRequest,
  select: (id: string, summary: S) => R | undefined,
  render: (record: R) => V,
  order: 'asc' | 'desc' = 'desc',
): Page<V> {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const cursor = query.cursor;
  const data: V[] = [];
  let hasMore = false;
  let lastId = '';
  let totalCount = 0;
  const ascending = order === 'asc';
  const visit = (id: string, summary: S): void => {
    const record = select(id, summary);
    if (record === undefined) return;
    totalCount++;
    // The page starts past the cursor: the first id newer (asc) or older (desc) than it.
    if (cursor !== undefined && (ascending ? id <= cursor : id >= cursor)) return;
    if (data.length < limit) {
      data.push(render(record));
      lastId = id;
    } else {
      hasMore = true;
    }
  };
  if (isArray(ids)) {
    // The array overload's `select` takes the id alone: there is no summary to give it.
    for (let n = 0; n < ids.length; n++) visit(ids[ascending ? n : ids.length - 1 - n]!, undefined as S);
  } else {
    ids.walk(order, visit);
  }
  const page: Page<V> = { data, hasMore, totalCount };
  if (hasMore) page.nextCursor = lastId;
  return page;
}

/**
 * `paginate` for a list every id of which matches (no filter): `totalCount` is the list's
 * length and the page starts where a binary search puts the cursor, so a page costs
 * O(limit + log n) however long the list, where a filtered one walks every id.
 */
export function paginateAll<R, V>(
  ids: readonly string[],
  query: PageRequest,
  get: (id: string) => R,
  render: (record: R) => V,
  order: 'asc' | 'desc' = 'desc',
): Page<V> {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const cursor = query.cursor;
  // The page: the `limit` ids that come next after the cursor, in `order`.
  let picked: string[];
  let hasMore: boolean;
  if (order === 'asc') {
    let first = 0;
    if (cursor !== undefined) {
      first = lowerBound(ids, cursor);
      if (ids[first] === cursor) first++;
    }
    const last = Math.min(ids.length, first + limit);
    picked = ids.slice(first, last);
    hasMore = last < ids.length;
  } else {
    const first = cursor === undefined ? ids.length : lowerBound(ids, cursor);
    const last = Math.max(0, first - limit);
    picked = ids.slice(last, first).reverse();
    hasMore = last > 0;
  }
  const page: Page<V> = { data: picked.map((id) => render(get(id))), hasMore, totalCount: ids.length };
  if (hasMore) page.nextCursor = picked[picked.length - 1]!;
  return page;
}

function isArray<S>(ids: readonly string[] | IdWalk<S>): ids is readonly string[] {
  return Array.isArray(ids);
}
