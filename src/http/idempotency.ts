// Idempotency-Key (CONTRACT.md): per environment and route, a key is remembered for 24
// hours with a hash of the request and the exact response. The same key and body get the
// first response again, byte for byte; the same key with another body gets 409. The record
// is written in the same log entry as the change it answers for, so a crash cannot keep
// one without the other. A second request with a key still in flight waits for the first.
//
// The entry does not carry the rendered response: a reply that renders one record (every
// idempotent route's but a DELETE's, whose 204 has no body) names that record, and a replay
// renders the record its entry left again (record-reply.ts). A reply that is not one
// record's render keeps its bytes in the entry (`body`): a new API token's, without the
// secret the first answer showed (`replayBody`), which is never stored.
import { loggedId } from '../engine/ids.js';
import type { EngineEvent, IdempotencyRecord, LoggedIdempotency } from '../engine/state-machine.js';
import type { Services } from '../services.js';
import { DomainError, invalidField } from '../../actors/errors.js';
import { renderedAgain } from './record-reply.js';
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
    work: (remember: (reply: Reply) => EngineEvent<unknown>[]) => Promise<Reply>,
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
      return { replayed: true, status: previous.status, body: replayedBody(previous) };
    }
    const remember = (reply: Reply): EngineEvent<unknown>[] => [{ type: '$idempotency', record: logged(scoped, requestHash, reply) }];
    const running = work(remember);
    this.#inFlight.set(scoped, running);
    try {
      return { replayed: false, reply: await running };
    } finally {
      this.#inFlight.delete(scoped);
    }
  }
}

/** What the entry logs of `reply`: the record it renders by name, else its bytes (its replay's, when they differ; none for a 204). */
function logged(key: string, bodyHash: string, reply: Reply): LoggedIdempotency {
  const { status, reports } = reply;
  if (reports !== undefined) return { key, bodyHash, status, kind: reports.kind, id: loggedId(reports.id, reports.kind) };
  if (reply.replayBody !== undefined) return { key, bodyHash, status, body: JSON.stringify(reply.replayBody) };
  return reply.body === undefined ? { key, bodyHash, status } : { key, bodyHash, status, body: JSON.stringify(reply.body) };
}

/** The first reply's bytes: its record rendered again, or the bytes it was logged with. */
function replayedBody(record: IdempotencyRecord): string {
  if (record.kind !== undefined) return renderedAgain(record.kind, record.reports);
  return record.body ?? '';
}
