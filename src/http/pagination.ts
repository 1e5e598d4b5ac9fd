// The list envelope of SERVICE_SPEC part 2 as HTTP carries it: `limit` 1 to 100 (default
// 20) and an opaque cursor, sealed here around the position id the page (actors/page.ts)
// stands on.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { invalidField } from '../../actors/errors.js';
import { DEFAULT_LIMIT } from '../../actors/page.js';
import { Text } from './validation.js';

export const MAX_LIMIT = 100;

export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, description: `1 to ${MAX_LIMIT}, default ${DEFAULT_LIMIT}` })),
  cursor: Type.Optional(Text({ minLength: 1, maxLength: 200, description: 'nextCursor of the previous page' })),
};

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
