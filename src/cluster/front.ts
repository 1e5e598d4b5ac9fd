// The versioned API in cluster mode. Every node asks a request's head the same questions as
// one node would, in the same order (version and route, then the API token against the
// replicated directory, environment, media type: requests.ts's `prepare`), reads its body as
// the route's schemas say, and runs it where its environment's shard (placement.ts: a pure
// function of its id, no read) is served: on the shard
// open here, or on the node serving it, over the shard's subject (shard-requests.ts), whose
// answer is passed back as it came. Neither routes nor authenticates it again. While a shard
// has no owner that answers within the forward timeout, the answer is 503
// SERVICE_UNAVAILABLE with Retry-After, never a guess.
import type { NatsConnection } from '@nats-io/transport-node';
import { DomainError } from '../../actors/errors.js';
import { Authenticator, credentialsOf } from '../http/platform-auth.js';
import { MAX_BODY_BYTES, prepare, readRequest, type Answer, type Dispatched, type Incoming, type ReadRequest, type RequestDispatcher } from '../http/requests.js';
import type { Route } from '../http/route.js';
import { Router } from '../http/router.js';
import type { Directory } from './directory.js';
import type { ClusterNode } from './node.js';
import { answerOnShard, decodeAnswer, encodeRequest, requestSubject, unowned } from './shard-requests.js';

export class ClusterRequests implements RequestDispatcher {
  readonly #node: Pick<ClusterNode, 'serving' | 'poke'>;
  readonly #directory: Directory;
  readonly #nc: NatsConnection;
  readonly #router: Router;
  readonly #auth: Authenticator;
  readonly #forwardTimeoutMs: number;

  constructor(node: Pick<ClusterNode, 'serving' | 'poke'>, directory: Directory, nc: NatsConnection, routes: readonly Route[], forwardTimeoutMs: number) {
    this.#node = node;
    this.#directory = directory;
    this.#nc = nc;
    this.#router = new Router(routes);
    this.#auth = new Authenticator(directory);
    this.#forwardTimeoutMs = forwardTimeoutMs;
  }

  dispatch(incoming: Incoming, matched: (route: Route) => void): Dispatched {
    try {
      return this.#dispatchRead(incoming, matched);
    } catch (err) {
      // An issued token not copied here yet (made moments ago on another node), or one whose environment is not read yet: read it, then decide again.
      const tokenId = err instanceof DomainError && err.code === 'UNAUTHORIZED' ? unreadTokenId(this.#directory, incoming.authorization) : undefined;
      if (tokenId === undefined) throw err;
      return {
        expectsBody: true,
        // The route is not known before the token is: JSON's limit (a document upload above it is refused until the token is read here).
        maxBodyBytes: MAX_BODY_BYTES,
        process: async (raw, requestId) => {
          await this.#directory.fetchToken(tokenId);
          const dispatched = this.#dispatchRead(incoming, matched);
          return dispatched.process(dispatched.expectsBody ? raw : undefined, requestId);
        },
      };
    }
  }

  /** With the request's token read (or known not to be there). */
  #dispatchRead(incoming: Incoming, matched: (route: Route) => void): Dispatched {
    const prepared = prepare(this.#auth, this.#router, incoming, matched);
    return {
      expectsBody: prepared.expectsBody,
      maxBodyBytes: prepared.maxBodyBytes,
      process: async (raw, requestId) => {
        const request = readRequest(prepared, incoming, raw);
        const shard = this.#directory.placement.shardOf(prepared.env.id);
        // Where the shard is served is asked once the body is in: it may have moved during the upload.
        const local = this.#node.serving(shard);
        return local === undefined ? this.#forward(shard, request, requestId) : answerOnShard(local, prepared.env.id, request, requestId);
      },
    };
  }

  /** Sends the read request on the shard's subject, and passes the owner's answer back as it came. */
  async #forward(shard: string, request: ReadRequest, requestId: string): Promise<Answer> {
    const payload = encodeRequest(request, requestId);
    const limit = this.#nc.info?.max_payload;
    if (limit !== undefined && payload.length > limit) throw tooLargeToSend(payload.length, limit);
    let reply: Uint8Array;
    try {
      reply = (await this.#nc.request(requestSubject(shard), payload, { timeout: this.#forwardTimeoutMs })).data;
    } catch {
      // No node serves the shard, or its owner is gone or stalled: its lease moves within two lease periods.
      void this.#node.poke();
      throw unowned(shard);
    }
    return decodeAnswer(reply);
  }
}

/** Refused as a body over the front's limit is: the request, as read here, is more than a NATS message carries to the shard's node. */
function tooLargeToSend(bytes: number, limit: number): DomainError {
  return new DomainError('PAYLOAD_TOO_LARGE', `this request comes to ${bytes} bytes as sent to its environment's node, over the ${limit} allowed; send a smaller body`);
}

/** The token id of Basic credentials worth reading the directory for now (an id the service did not issue never is). */
function unreadTokenId(directory: Directory, authorization: string): string | undefined {
  let tokenId: string;
  try {
    tokenId = credentialsOf(authorization).tokenId;
  } catch {
    return undefined; // malformed: the 401 stands
  }
  return directory.shouldFetch(tokenId) ? tokenId : undefined;
}
