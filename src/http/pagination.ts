// The list envelope of SERVICE_SPEC part 2: newest first, an opaque cursor, `limit` 1 to
// 100 (default 20) and `totalCount` over all matches. Ids are UUIDv7, so an id index in
// ascending order is creation order and the cursor is the last id handed out.
import { Type } from '@sinclair/typebox';
import { lowerBound } from '../engine/ids.js';
import { invalidField } from './errors.js';
import { Str } from './validation.js';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, description: `1 to ${MAX_LIMIT}, default ${DEFAULT_LIMIT}` })),
  cursor: Type.Optional(Str({ minLength: 1, maxLength: 200, description: 'nextCursor of the previous page' })),
};

export interface Page<V> {
  data: V[];
  hasMore: boolean;
  nextCursor?: string;
  totalCount: number;
}

const ID_PATTERN = /^[A-Za-z]+:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function encodeCursor(id: string): string {
  return Buffer.from(id, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): string {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!ID_PATTERN.test(id) || encodeCursor(id) !== cursor) throw invalidField('cursor', 'not a cursor this service issued');
  return id;
}

/**
 * Walks `ids` (ascending) from the newest, keeping the records `select` returns, and
 * renders one page. Counting every match is what `totalCount` costs.
 */
export function paginate<R, V>(
  ids: readonly string[],
  query: { limit?: number; cursor?: string },
  select: (id: string) => R | undefined,
  render: (record: R) => V,
): Page<V> {
  const limit = query.limit ?? DEFAULT_LIMIT;
  let start = ids.length - 1;
  // The page starts at the last id older than the cursor.
  if (query.cursor !== undefined) start = lowerBound(ids, decodeCursor(query.cursor)) - 1;
  const data: V[] = [];
  let hasMore = false;
  let lastId = '';
  let totalCount = 0;
  for (let i = ids.length - 1; i >= 0; i--) {
    const id = ids[i]!;
    const record = select(id);
    if (record === undefined) continue;
    totalCount++;
    if (i > start) continue;
    if (data.length < limit) {
      data.push(render(record));
      lastId = id;
    } else {
      hasMore = true;
    }
  }
  const page: Page<V> = { data, hasMore, totalCount };
  if (hasMore) page.nextCursor = encodeCursor(lastId);
  return page;
}
