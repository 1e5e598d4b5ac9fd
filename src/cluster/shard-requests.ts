// A shard's requests over the cluster's own channel. A node that takes a request for an
// environment served elsewhere prepares and reads it (route, token, environment, media type,
// body and query as the route's schemas say: http/requests.ts) and sends what it read, with
// the request id, as a NATS request on the shard's subject. The node serving the shard
// subscribes to that subject for as long as it serves it (one queue group, so a request runs
// on one node even while an old owner still listens), runs the request on the shard without
// routing or authenticating it again, and replies with the answer as the client gets it, or
// the error it refuses with. NATS rather than HTTP between nodes: the subject follows the
// shard wherever it is served, so no node needs another's address, and a shard nobody serves
// answers at once ("no responders") instead of waiting for a connection.
import { pack, unpack } from 'msgpackr';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { DomainError, type ErrorCode, type FieldProblem } from '../../actors/errors.js';
import type { ApiRequests, Answer, ReadRequest } from '../http/requests.js';
import type { RequestHeaders, Route } from '../http/route.js';
import { errorAnswer } from '../http/server.js';
import type { Report } from '../engine/report.js';
import { EngineClosedError } from '../engine/engine.js';
import type { PlatformEnv } from '../../actors/platform.js';

/** A shard as its requests reach it (cluster/shard.ts's Shard). */
export interface ServedShard {
  readonly name: string;
  /** Its log failed: nothing more is served from its memory. */
  readonly lost: boolean;
  readonly requests: Pick<ApiRequests, 'answer'>;
  /** An environment of the shard, joining it first if it was made since the shard opened (cluster/shard.ts). */
  environment(envId: string): PlatformEnv | Promise<PlatformEnv>;
}

/** A read request on the channel: the route by its operationId, the environment by its id (the owner's own record of it answers). */
interface SentRequest {
  operationId: string;
  envId: string;
  /** The client id of the token the request was authenticated with. */
  tokenId: string;
  params: Record<string, string>;
  query: unknown;
  body: unknown;
  headers: RequestHeaders;
  requestHash: string;
  requestId: string;
}

/** What the owner replies: the answer as the client gets it, or the error the client is refused with. */
type SentAnswer = { answer: Answer } | { error: SentError };

interface SentError {
  code: ErrorCode;
  message: string;
  fields?: readonly FieldProblem[];
  reason?: string;
  retryAfter?: number;
}

/** The subject a shard's requests are sent on (shard names are letters, digits, '-' and '_'). */
export function requestSubject(shard: string): string {
  return `shard-requests.${shard}`;
}

export function encodeRequest(request: ReadRequest, requestId: string): Uint8Array {
  const { route, env, tokenId, params, query, body, headers, requestHash } = request;
  return pack({ operationId: route.operationId, envId: env.id, tokenId, params, query, body, headers, requestHash, requestId } satisfies SentRequest);
}

/** The owner's reply as the client gets it: the answer, or its error thrown as the owner threw it. */
export function decodeAnswer(data: Uint8Array): Answer {
  const sent = unpack(data) as SentAnswer;
  if ('answer' in sent) return sent.answer;
  const { code, message, fields, reason, retryAfter } = sent.error;
  throw new DomainError(code, message, fields, reason, retryAfter);
}

/**
 * Runs a read request on a shard served here. A shard whose log failed under it, or closed
 * as it ran, is changing hands: its outcome is the log's, which the next owner serves.
 */
export async function answerOnShard(shard: ServedShard, envId: string, request: Omit<ReadRequest, 'env'>, requestId: string): Promise<Answer> {
  if (shard.lost) throw unowned(shard.name);
  try {
    // The owner's own record of the environment, as a request authenticated here would have.
    const env = await shard.environment(envId);
    return await shard.requests.answer({ ...request, env }, requestId);
  } catch (err) {
    if (shard.lost || err instanceof EngineClosedError) throw unowned(shard.name);
    throw err;
  }
}

/**
 * Answers the shard's subject while it is served here; the subscription's drain ends it.
 * `holds` says whether the shard's lease still holds: a node stopped past its lease (and
 * still subscribed: NATS learns of it only when its pings go unanswered) reads what
 * arrived meanwhile when it runs again, and must refuse it rather than answer from a
 * memory the new owner has moved past.
 */
export function serveShardRequests(nc: NatsConnection, shard: ServedShard, routes: readonly Route[], report: Report, holds: () => boolean): Subscription {
  const byOperation = new Map(routes.map((route) => [route.operationId, route]));
  const subject = requestSubject(shard.name);
  return nc.subscribe(subject, {
    queue: subject,
    callback: (err, msg) => {
      if (err !== null) return;
      const reply = holds() ? replyTo(msg.data, shard, byOperation, report, nc.info?.max_payload ?? Infinity) : Promise.resolve(pack({ error: sentError(unowned(shard.name), report, '') } satisfies SentAnswer));
      void reply.then((bytes) => msg.respond(bytes));
    },
  });
}

async function replyTo(data: Uint8Array, shard: ServedShard, byOperation: ReadonlyMap<string, Route>, report: Report, limit: number): Promise<Uint8Array> {
  let requestId = 'unknown';
  try {
    const sent = unpack(data) as SentRequest;
    requestId = sent.requestId;
    const route = byOperation.get(sent.operationId);
    // A node of another version sent a route this one does not have: a bug of the deployment, logged.
    if (route === undefined) throw new Error(`no route ${sent.operationId} on this node`);
    const { tokenId, params, query, body, headers, requestHash } = sent;
    const answer = pack({ answer: await answerOnShard(shard, sent.envId, { route, tokenId, params, query, body, headers, requestHash }, requestId) } satisfies SentAnswer);
    if (answer.length > limit) throw new Error(`the answer (${answer.length} bytes) is over the ${limit} bytes a NATS message carries`);
    return answer;
  } catch (err) {
    return pack({ error: sentError(err, report, requestId) } satisfies SentAnswer);
  }
}

/** The error as the HTTP front would answer it (a bug is logged here, under the request's id). */
function sentError(err: unknown, report: Report, requestId: string): SentError {
  const error = errorAnswer(err, report, requestId);
  return {
    code: error.code,
    message: error.message,
    ...(error.fields === undefined ? {} : { fields: error.fields }),
    ...(error.reason === undefined ? {} : { reason: error.reason }),
    ...(error.retryAfter === undefined ? {} : { retryAfter: error.retryAfter }),
  };
}

/** 503 with Retry-After: the shard has no owner that answers now. */
export function unowned(shard: string): DomainError {
  return new DomainError('SERVICE_UNAVAILABLE', `the environment's shard ${shard} is changing hands; retry shortly`, undefined, undefined, 1);
}
