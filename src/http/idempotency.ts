// Idempotency-Key (CONTRACT.md): per environment and route, a key is remembered for 24
// hours with a hash of the request and the exact response. The same key and body get the
// first response again, byte for byte; the same key with another body gets 409. The record
// is written in the same log entry as the change it answers for, so a crash cannot keep
// one without the other. A second request with a key still in flight waits for the first.
import { createHash } from 'node:crypto';
import type { EngineEvent } from '../engine/state-machine.js';
import type { Services } from '../services.js';
import { DomainError, invalidField } from '../../actors/errors.js';
import type { Reply } from './route.js';

export const IDEMPOTENCY_KEY_MAX = 255;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export type Outcome = { replayed: false; reply: Reply } | { replayed: true; status: number; body: string };

export class IdempotencyKeys {
  readonly #inFlight = new Map<string, Promise<unknown>>();

  constructor(private readonly services: Services) {}

  /** Validates the header value and scopes it to environment and route. */
  scope(envId: string, method: string, path: string, key: string): string {
    if (!KEY_PATTERN.test(key)) {
      throw invalidField('Idempotency-Key', `must be 1 to ${IDEMPOTENCY_KEY_MAX} printable ASCII characters without spaces`);
    }
    return `${envId} ${method} ${path} ${key}`;
  }

  /**
   * Runs `work` once per scoped key: replays a remembered response, refuses a reused key,
   * or runs it with `remember` to add to the entry.
   */
  async run(
    scoped: string,
    requestHash: string,
    work: (remember: (reply: Reply, at: number) => EngineEvent<unknown>[]) => Promise<Reply>,
  ): Promise<Outcome> {
    for (;;) {
      const running = this.#inFlight.get(scoped);
      if (running === undefined) break;
      await running.catch(() => undefined);
    }
    const previous = this.services.engine.idempotencyRecord(scoped);
    if (previous !== undefined) {
      if (previous.bodyHash !== requestHash) {
        throw new DomainError('IDEMPOTENCY_KEY_REUSED', 'Idempotency-Key was already used with a different request body');
      }
      return { replayed: true, status: previous.status, body: previous.body };
    }
    const remember = (reply: Reply, at: number): EngineEvent<unknown>[] => [
      { type: '$idempotency', record: { key: scoped, bodyHash: requestHash, status: reply.status, body: JSON.stringify(reply.body), at } },
    ];
    const running = work(remember);
    this.#inFlight.set(scoped, running);
    try {
      return { replayed: false, reply: await running };
    } finally {
      this.#inFlight.delete(scoped);
    }
  }
}

/** SHA-256 of the body with object keys sorted, so formatting does not matter. */
export function requestHash(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}

/**
 * JSON with object keys sorted, without recursion: the body has passed checkJsonShape, but
 * the hash must not depend on that to stay off the stack. Work items are values to render
 * or literal text; the stack holds at most the body's values.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  const work: Array<{ value: unknown } | string> = [{ value }];
  for (let item = work.pop(); item !== undefined; item = work.pop()) {
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    const v = item.value;
    if (v === null || typeof v !== 'object') {
      out.push(JSON.stringify(v) ?? 'null');
      continue;
    }
    // Pushed in reverse, so they pop in order.
    const parts: Array<{ value: unknown } | string> = [];
    if (Array.isArray(v)) {
      parts.push('[');
      v.forEach((element, i) => {
        if (i > 0) parts.push(',');
        parts.push({ value: element });
      });
      parts.push(']');
    } else {
      const entries = Object.entries(v as Record<string, unknown>)
        .filter(([, e]) => e !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      parts.push('{');
      entries.forEach(([k, e], i) => {
        parts.push(`${i > 0 ? ',' : ''}${JSON.stringify(k)}:`);
        parts.push({ value: e });
      });
      parts.push('}');
    }
    for (let i = parts.length - 1; i >= 0; i--) work.push(parts[i]!);
  }
  return out.join('');
}
