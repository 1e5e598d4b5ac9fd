// The versioned API in cluster mode. Every node asks a request's head the same questions as
// one node would, in the same order (version and route, then the API token against the
// replicated directory, environment, media type: requests.ts's `prepare`), and then sends it
// where its environment's shard is served: to the shard open here, or on to the node the
// shard is dealt to, whose answer is passed back as it came. While a shard has no owner the
// answer is 503 SERVICE_UNAVAILABLE with Retry-After, never a guess.
import { Pool } from 'undici';
import { DomainError } from '../../actors/errors.js';
import { Authenticator, credentialsOf } from '../http/platform-auth.js';
import { prepare, type Answer, type Dispatched, type Incoming, type RequestDispatcher } from '../http/requests.js';
import type { Route } from '../http/route.js';
import { Router } from '../http/router.js';
import { EngineClosedError } from '../engine/engine.js';
import { shardNameOf, type Directory } from './directory.js';
import type { ClusterNode } from './node.js';

/** Keep-alive connections this node holds open to each other node, for the requests it forwards. */
const FORWARD_CONNECTIONS = 16;

/** Headers of the owner's answer that the client must see as the owner sent them. */
const ANSWER_HEADERS = ['retry-after', 'idempotent-replayed', 'allow', 'www-authenticate'];

export class ClusterRequests implements RequestDispatcher {
  readonly #node: ClusterNode;
  readonly #directory: Directory;
  readonly #router: Router;
  readonly #auth: Authenticator;
  readonly #forwardTimeoutMs: number;
  /** One pool per node forwarded to (a handful: the cluster's nodes, past and present). */
  readonly #pools = new Map<string, Pool>();

  constructor(node: ClusterNode, directory: Directory, routes: readonly Route[], forwardTimeoutMs: number) {
    this.#node = node;
    this.#directory = directory;
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
    const shard = shardNameOf(prepared.env.id);
    const route = this.#node.route(shard);
    if (route.kind === 'local') {
      const local = route.shard;
      const dispatched = local.requests.dispatch(incoming, () => undefined);
      return {
        expectsBody: dispatched.expectsBody,
        process: (raw, requestId) =>
          dispatched.process(raw, requestId).catch((err: unknown) => {
            // The shard's log failed under this request: its outcome is the log's, which the next owner serves.
            if (local.lost || err instanceof EngineClosedError) throw unowned(shard);
            throw err;
          }),
      };
    }
    if (route.kind === 'remote' && incoming.forwarded !== true) {
      return { expectsBody: prepared.expectsBody, process: (raw, requestId) => this.#forward(route.url, shard, incoming, raw, requestId) };
    }
    throw unowned(shard);
  }

  /** Sends the request on to `url` as it came (with its request id), and passes the answer back. */
  async #forward(url: string, shard: string, incoming: Incoming, raw: Buffer | undefined, requestId: string): Promise<Answer> {
    const headers: Record<string, string> = { 'x-request-id': requestId, 'cluster-forwarded': this.#node.nodeId };
    if (incoming.authorization !== '') headers.authorization = incoming.authorization;
    if (incoming.contentType !== '') headers['content-type'] = incoming.contentType;
    if (incoming.headers.idempotencyKey !== undefined) headers['idempotency-key'] = incoming.headers.idempotencyKey;
    if (incoming.headers.requestId !== undefined) headers['request-id'] = incoming.headers.requestId;
    if (incoming.headers.walletSignature !== undefined) headers['service-wallet-signature'] = incoming.headers.walletSignature;
    const query = incoming.query === '' ? '' : `?${incoming.query}`;
    let pool = this.#pools.get(url);
    if (pool === undefined) {
      // The owner is given the forward timeout to connect, to send the answer's head, and between the body's chunks.
      const timeout = this.#forwardTimeoutMs;
      pool = new Pool(url, { connections: FORWARD_CONNECTIONS, connectTimeout: timeout, headersTimeout: timeout, bodyTimeout: timeout });
      this.#pools.set(url, pool);
    }
    try {
      const res = await pool.request({
        path: `${incoming.path}${query}`,
        // HEAD goes as GET: the answer's length is GET's, and this front leaves the body out.
        method: incoming.method === 'HEAD' ? 'GET' : incoming.method,
        headers,
        ...(raw === undefined ? {} : { body: raw }),
      });
      const body = await res.body.text();
      const kept: Array<[string, string]> = [];
      for (const name of ANSWER_HEADERS) {
        const value = res.headers[name];
        if (typeof value === 'string') kept.push([name, value]);
      }
      const contentType = res.headers['content-type'];
      return { status: res.statusCode, body, headers: kept, contentType: typeof contentType === 'string' ? contentType : 'application/json' };
    } catch {
      // The owner is gone or stalled: its lease moves within two lease periods.
      void this.#node.poke();
      throw unowned(shard);
    }
  }

  /** Closes the connections to other nodes (after the HTTP front has drained). */
  async close(): Promise<void> {
    await Promise.all([...this.#pools.values()].map((pool) => pool.close()));
  }
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

function unowned(shard: string): DomainError {
  return new DomainError('SERVICE_UNAVAILABLE', `the environment's shard ${shard} is changing hands; retry shortly`, undefined, undefined, 1);
}
