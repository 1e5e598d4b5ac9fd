// The list envelope of SERVICE_SPEC part 2 as HTTP carries it: `limit` 1 to 100 (default
// 20) and an opaque cursor, sealed here around the position the page (actors/page.ts)
// stands on: a record's id, or, for a list of named entries (VASPs, UMA providers), a name.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { invalidField } from '../../actors/errors.js';
import { DEFAULT_LIMIT } from '../../actors/page.js';
import { Text } from './validation.js';

export const MAX_LIMIT = 100;

/**
 * The longest position a cursor carries, in UTF-8 bytes: a record id, a VASP's name (at
 * most 100 characters) or a domain name (at most 253).
 */
export const MAX_POSITION_BYTES = 300;
const TAG_BYTES = 16;

export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, description: `1 to ${MAX_LIMIT}, default ${DEFAULT_LIMIT}` })),
  cursor: Type.Optional(Text({ minLength: 1, maxLength: Math.ceil(((MAX_POSITION_BYTES + TAG_BYTES) * 4) / 3), description: 'nextCursor of the previous page' })),
};

/** A position: text without control characters (a record id, `Kind:<UUIDv7>`, or a name). */
const POSITION_PATTERN = /^[^\u0000-\u001f\u007f]+$/u;

/**
 * Cursors are opaque and authenticated: base64url of the position followed by a
 * truncated HMAC-SHA256 over the list's identity (environment, route, filters) and the
 * position, so a cursor opens only on the list that issued it, and its position is one
 * this service handed out there. The key is derived from the
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
      bytes.length <= MAX_POSITION_BYTES + TAG_BYTES &&
      bytes.toString('base64url') === cursor &&
      POSITION_PATTERN.test(id) &&
      timingSafeEqual(bytes.subarray(bytes.length - TAG_BYTES), this.#tag(list, id));
    if (!valid) throw invalidField('cursor', 'not a cursor this service issued for this list');
    return id;
  }

  #tag(list: string, id: string): Buffer {
    return createHmac('sha256', this.key).update(list).update('\0').update(id).digest().subarray(0, TAG_BYTES);
  }
}
