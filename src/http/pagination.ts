// The list envelope of SERVICE_SPEC part 2: newest first, an opaque cursor, `limit` 1 to
// 100 (default 20) and `totalCount` over all matches. Ids are UUIDv7, so an id index in
// ascending order is creation order and the cursor stands for the last id handed out.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { IdWalk } from '../../actors/registry.js';
import { invalidField } from '../../actors/errors.js';
import { lowerBound } from '../engine/ids.js';
import { Text } from './validation.js';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, description: `1 to ${MAX_LIMIT}, default ${DEFAULT_LIMIT}` })),
  cursor: Type.Optional(Text({ minLength: 1, maxLength: 200, description: 'nextCursor of the previous page' })),
};

export interface Page<V> {
  data: V[];
  hasMore: boolean;
  nextCursor?: string;
  totalCount: number;
}

const ID_PATTERN = /^[A-Za-z]+:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const TAG_BYTES = 16;

/**
 * Cursors are opaque and authenticated: base64url of the position id followed by a
 * truncated HMAC-SHA256 over the list's identity (environment, route, filters) and the
 * id, so a cursor opens only on the list that issued it. The key is derived from the
 * master key, so cursors outlive a restart.
 */
export class CursorCodec {
  constructor(private readonly key: Buffer) {}

  seal(list: string, id: string): string {
    return Buffer.concat([Buffer.from(id, 'utf8'), this.#tag(list, id)]).toString('base64url');
  }

  /** The position id, or a 400 naming `cursor`. */
  open(list: string, cursor: string): string {
    const bytes = Buffer.from(cursor, 'base64url');
    const id = bytes.subarray(0, Math.max(0, bytes.length - TAG_BYTES)).toString('utf8');
    const valid =
      bytes.length > TAG_BYTES &&
      bytes.toString('base64url') === cursor &&
      ID_PATTERN.test(id) &&
      timingSafeEqual(bytes.subarray(bytes.length - TAG_BYTES), this.#tag(list, id));
    if (!valid) throw invalidField('cursor', 'not a cursor this service issued for this list');
    return id;
  }

  #tag(list: string, id: string): Buffer {
    return createHmac('sha256', this.key).update(list).update('\0').update(id).digest().subarray(0, TAG_BYTES);
  }
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
  query: { limit?: number; cursor?: string },
  select: (id: string) => R | undefined,
  render: (record: R) => V,
  order?: 'asc' | 'desc',
): Page<V>;
export function paginate<S, R, V>(
  ids: IdWalk<S>,
  query: { limit?: number; cursor?: string },
  select: (id: string, summary: S) => R | undefined,
  render: (record: R) => V,
  order?: 'asc' | 'desc',
): Page<V>;
export function paginate<S, R, V>(
  ids: readonly string[] | IdWalk<S>,
  query: { limit?: number; cursor?: string },
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
  query: { limit?: number; cursor?: string },
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
