// The API's request path without a transport: from a request as data (method, path, query,
// the headers the API reads, the body's bytes) to its answer. In order: version segment and
// route (404/405; HEAD is GET without the body), authentication (401) with the route's
// permission (403 FORBIDDEN), environment (403 SANDBOX_ONLY), media type (415), UTF-8, JSON, nesting depth, Unicode and schema (400),
// list cursor (400), idempotency, then the route's handler, whose reply comes once its log
// entry is durable. The uWebSockets.js front (server.ts) feeds it after framing and size;
// a simulation can feed it directly.
import type { TSchema } from '@sinclair/typebox';
import type { Services } from '../services.js';
import { checkJsonShape } from './validation.js';
import { Authenticator, issueToken, tokenIdKey } from './platform-auth.js';
import { IdempotencyKeys } from './idempotency.js';
import { canonicalJson, requestHash } from '../crypto/canonical-json.js';
import { CursorCodec } from './pagination.js';
import type { Reply, Route, RouteContext, RoutePorts, RequestHeaders, TokensChanged } from './route.js';
import { toHex } from '../crypto/bytes.js';
import { ServiceWalletPorts } from '../wallet/ports.js';
import { Router } from './router.js';
import type { PlatformEnv } from '../../actors/platform.js';
import { DomainError, invalidField } from '../../actors/errors.js';
import { API_VERSION } from './api-version.js';
import type { MultipartBody } from './multipart.js';
import { createHash } from 'node:crypto';

export { API_VERSION };

/** A request as the API reads it. */
export interface Incoming {
  method: string;
  path: string;
  query: string;
  authorization: string;
  contentType: string;
  contentLength: string;
  headers: RequestHeaders;
}

/** An answer as it goes out: status, JSON text, extra headers. */
export type Answer = { status: number; body: string; headers: Array<[string, string]>; contentType?: string };

/** A request taken on from its head: whether a body is read for it, and what answers it once the body is in. */
export interface Dispatched {
  expectsBody: boolean;
  /** The most body bytes the route takes (the front answers 413 past it). */
  maxBodyBytes: number;
  process(raw: Buffer | undefined, requestId: string): Promise<Answer>;
}

/**
 * What the HTTP front hands the versioned API to: ApiRequests, or a host's dispatcher that
 * prepares and reads requests with the functions below and answers them elsewhere. Throws
 * what the head alone refuses; `matched` learns the route as soon as it is known.
 */
export interface RequestDispatcher {
  dispatch(incoming: Incoming, matched: (route: Route) => void): Dispatched;
}

/**
 * The API over recovered services: its router, authenticator, idempotency records and list
 * cursors, made once. `prepare` decides what the head alone decides, `readRequest` what the
 * body adds, and `answer` runs the request read.
 */
export class ApiRequests implements RequestDispatcher {
  readonly #services: Services;
  readonly #ports: RoutePorts;
  readonly #router: Router;
  readonly #auth: Authenticator;
  readonly #idempotency: IdempotencyKeys;
  readonly #cursors: CursorCodec;

  constructor(services: Services, routes: readonly Route[], tokensChanged: TokensChanged = async () => undefined) {
    this.#services = services;
    this.#ports = routePorts(services, tokensChanged);
    this.#router = new Router(routes);
    this.#auth = new Authenticator(services.world.envs);
    this.#idempotency = new IdempotencyKeys(services);
    this.#cursors = new CursorCodec(services.masterKey.derive('list cursors'));
  }

  /** Everything that can be decided from the request line and headers alone; `matched` learns the route as soon as it is known. */
  prepare(incoming: Incoming, matched: (route: Route) => void = () => undefined): Prepared {
    return prepare(this.#auth, this.#router, incoming, matched);
  }

  dispatch(incoming: Incoming, matched: (route: Route) => void): Dispatched {
    const prepared = this.prepare(incoming, matched);
    return { expectsBody: prepared.expectsBody, maxBodyBytes: prepared.maxBodyBytes, process: (raw, requestId) => this.handle(prepared, incoming, raw, requestId) };
  }

  /** The answer to a prepared request with its body (a refusal of the body rejects, never throws). */
  async handle(prepared: Prepared, incoming: Incoming, raw: Buffer | undefined, requestId: string): Promise<Answer> {
    return this.answer(readRequest(prepared, incoming, raw), requestId);
  }

  /** The answer to a request read in full (here, or by whoever prepared it), without routing or authenticating it again. */
  answer(request: ReadRequest, requestId: string): Promise<Answer> {
    return answer({ services: this.#services, ports: this.#ports, idempotency: this.#idempotency, cursors: this.#cursors }, request, requestId);
  }
}

/** The ports a route reaches (route.ts says why each is one), over the services. */
function routePorts(services: Services, tokensChanged: TokensChanged): RoutePorts {
  const idKey = tokenIdKey(services.masterKey);
  return {
    issueToken: (environment) => issueToken(environment, idKey),
    tokensChanged,
    signerPublicKey: toHex(services.walletSigner.publicKey),
    outboundTargets: services.outboundTargets,
    webhooks: services.webhooks,
    lookups: services.config.lookups,
    wallet: new ServiceWalletPorts(services),
    documentBytes: services.engine.blobs(DOCUMENT_BYTES_TABLE),
    bulkImports: services.bulkImports,
  };
}

/** The store's table of documents' bytes. */
const DOCUMENT_BYTES_TABLE = 'document-bytes';

/** Request bodies up to 1 MiB (CONTRACT.md), but for multipart routes, which set their own limit. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** What answering a request uses, made once with its ApiRequests. */
interface Answering {
  services: Services;
  ports: RoutePorts;
  idempotency: IdempotencyKeys;
  cursors: CursorCodec;
}

export interface Prepared {
  route: Route;
  params: Record<string, string>;
  env: PlatformEnv;
  /** The client id of the token that authenticated the request. */
  tokenId: string;
  expectsBody: boolean;
  maxBodyBytes: number;
}

/**
 * Everything that can be decided from the request line and headers alone; `matched` learns
 * the route as soon as it is known. Exported for a dispatcher that authenticates against
 * another token source than one world's.
 */
export function prepare(auth: Pick<Authenticator, 'authenticate'>, router: Router, incoming: Incoming, matched: (route: Route) => void): Prepared {
  const match = routeOf(router, incoming);
  matched(match.route);
  const { env, tokenId } = auth.authenticate(incoming.authorization, match.route.permission);
  if (match.route.sandboxOnly === true && env.environment !== 'sandbox') {
    throw new DomainError('SANDBOX_ONLY', 'this endpoint exists only in sandbox; use a sandbox API token');
  }
  // Routes without a body schema (execute, approve) still read what is sent: nothing, an
  // empty body or JSON is fine (and ignored), anything else is 415.
  const expectsBody = match.route.body !== undefined || match.route.method !== 'GET';
  const { multipart } = match.route;
  if (multipart !== undefined) {
    if (!isMultipartForm(incoming.contentType)) throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'this request body must be multipart/form-data');
    return { route: match.route, params: match.params, env, tokenId, expectsBody, maxBodyBytes: multipart.maxBytes };
  }
  if (expectsBody && incoming.contentLength !== '' && incoming.contentLength !== '0' && !isJson(incoming.contentType)) {
    throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'request bodies must be application/json');
  }
  return { route: match.route, params: match.params, env, tokenId, expectsBody, maxBodyBytes: MAX_BODY_BYTES };
}

/** Where every path of this version starts. */
const VERSION_PREFIX = `/${API_VERSION}`;

/**
 * The route and path parameters the request reaches, or the 404, 405 or 400 (version,
 * percent-encoding) that says why none. A parameterless route's own path is looked up as
 * sent (Router.exact) instead of split, decoded and matched.
 */
function routeOf(router: Router, incoming: Incoming): { route: Route; params: Record<string, string> } {
  // HEAD is GET without the body (send() leaves it out).
  const method = incoming.method === 'HEAD' ? 'GET' : incoming.method;
  const exact = incoming.path.startsWith(VERSION_PREFIX) ? router.exact(method, incoming.path.slice(VERSION_PREFIX.length)) : undefined;
  if (exact !== undefined) return { route: exact, params: {} };
  const parts = incoming.path.split('/').filter((p) => p !== '');
  const version = parts.shift();
  if (version !== API_VERSION) {
    if (version !== undefined && /^\d{4}-\d{2}-\d{2}$/.test(version)) {
      throw new DomainError('UNSUPPORTED_VERSION', `API version ${version} is not supported; use ${API_VERSION}`);
    }
    throw new DomainError('NOT_FOUND', `no route ${incoming.path}`, [{ field: 'path', message: `no route ${incoming.path}` }]);
  }
  let decoded: string[];
  try {
    decoded = parts.map((p) => decodeURIComponent(p));
  } catch {
    throw invalidField('path', 'malformed percent-encoding');
  }
  const match = router.match(method, decoded);
  if (match.kind === 'none') throw new DomainError('NOT_FOUND', `no route ${incoming.method} ${incoming.path}`, [{ field: 'path', message: `no route ${incoming.method} ${incoming.path}` }]);
  if (match.kind === 'wrong-method') {
    throw new MethodNotAllowed(incoming.method, match.allowed);
  }
  return match;
}

/** A Content-Type's media type, without its parameters, in lower case. */
function mediaType(contentType: string): string {
  return contentType.split(';', 1)[0]!.trim().toLowerCase();
}

function isMultipartForm(contentType: string): boolean {
  return mediaType(contentType) === 'multipart/form-data';
}

function isJson(contentType: string): boolean {
  if (contentType === 'application/json') return true;
  const type = mediaType(contentType);
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/**
 * A request read in full, as its route's schemas say: what the route handler and the
 * idempotency records need, with nothing of the transport. Plain data (JSON values), so a
 * host may carry it to where the request's environment is served.
 */
export interface ReadRequest {
  route: Route;
  env: PlatformEnv;
  /** The client id of the token that authenticated the request. */
  tokenId: string;
  /** The path parameters as matched (the route's `params` schema reads them as the handler is called). */
  params: Record<string, string>;
  query: unknown;
  body: unknown;
  headers: RequestHeaders;
  /** The Idempotency-Key's request hash ('' when the route or the request has no key). */
  requestHash: string;
}

/** A prepared request with its body: JSON parsed and checked, hashed for its Idempotency-Key, body and query validated. */
export function readRequest(prepared: Prepared, incoming: Incoming, raw: Buffer | undefined): ReadRequest {
  const { route, env, tokenId, params } = prepared;
  if (route.multipart !== undefined) return readMultipart(prepared, incoming, raw);
  const json = parseJson(raw, incoming.contentType);
  const keyed = route.idempotent === true && incoming.headers.idempotencyKey !== undefined;
  // Hashed before validation, which drops unknown properties in place. A route without a
  // body ignores whatever was sent, so that is not part of the request either.
  const hash = keyed ? requestHash(route.body === undefined ? {} : json) : '';
  const body = route.body === undefined ? undefined : route.body.parse(json);
  const query = route.query === undefined ? undefined : route.query.parse(parseQuery(incoming.query, route.query.schema));
  return { route, env, tokenId, params, query, body, headers: incoming.headers, requestHash: hash };
}

/** A multipart request: its bytes go to the handler as they came (multipart.ts parses them); its Idempotency-Key hashes them. */
function readMultipart({ route, env, tokenId, params }: Prepared, incoming: Incoming, raw: Buffer | undefined): ReadRequest {
  const bytes = raw ?? Buffer.alloc(0);
  const keyed = route.idempotent === true && incoming.headers.idempotencyKey !== undefined;
  const hash = keyed ? requestHash({ multipart: createHash('sha256').update(bytes).digest('hex') }) : '';
  const query = route.query === undefined ? undefined : route.query.parse(parseQuery(incoming.query, route.query.schema));
  return { route, env, tokenId, params, query, body: { contentType: incoming.contentType, bytes } satisfies MultipartBody, headers: incoming.headers, requestHash: hash };
}

async function answer({ services, ports, idempotency, cursors }: Answering, request: ReadRequest, requestId: string): Promise<Answer> {
  const { route, env, tokenId, params, headers } = request;
  const list = pagedList(env.id, route, params, request.query);
  const query = list === undefined ? request.query : openCursor(cursors, list, request.query as PageRequest);
  const key = route.idempotent === true ? headers.idempotencyKey : undefined;

  const { engine } = services;
  // The path parameters are read as the handler is called, after the idempotency checks, as they always were.
  const invoke = (run: RouteContext<unknown, unknown>['run']): Promise<Reply> =>
    route.handle({
      env,
      tokenId,
      params: route.params === undefined ? params : route.params.parse(params),
      query,
      body: request.body,
      headers,
      ports,
      run,
      read: (question, input) => engine.read(question, input),
    });
  if (key !== undefined) {
    const scoped = idempotency.scope(env.id, route.method, scopePath(route, params), key);
    const outcome = await idempotency.run(scoped, request.requestHash, (remember) => invoke((command, input, render) => engine.run(command, input, render, remember)));
    if (outcome.replayed) return { status: outcome.status, body: withRequestId(outcome.status, outcome.body, requestId), headers: [['Idempotent-Replayed', 'true']] };
    return serialise(outcome.reply, requestId);
  }
  const reply = await invoke((command, input, render) => engine.run(command, input, render));
  return serialise(list === undefined ? reply : sealNextCursor(cursors, list, reply), requestId);
}

type PageRequest = Record<string, unknown> & { cursor?: string };

/**
 * A paged route's list identity: environment, route with its parameters, and the filters
 * (the query without `cursor` and `limit`, which may change from page to page).
 */
function pagedList(envId: string, route: Route, params: Readonly<Record<string, string>>, query: unknown): string | undefined {
  const properties = route.query?.schema.properties as Record<string, unknown> | undefined;
  if (properties?.cursor === undefined || query === null || typeof query !== 'object') return undefined;
  const filters: Record<string, unknown> = { ...(query as Record<string, unknown>) };
  delete filters.cursor;
  delete filters.limit;
  return `${envId} ${scopePath(route, params)} ${canonicalJson(filters)}`;
}

/** The route sees the position id the client's cursor stands for (pagination.ts). */
function openCursor(cursors: CursorCodec, list: string, query: PageRequest): PageRequest {
  return query.cursor === undefined ? query : { ...query, cursor: cursors.open(list, query.cursor) };
}

function sealNextCursor(cursors: CursorCodec, list: string, reply: Reply): Reply {
  const page = reply.body as { nextCursor?: unknown } | null;
  if (page === null || typeof page !== 'object' || typeof page.nextCursor !== 'string') return reply;
  return { ...reply, body: { ...page, nextCursor: cursors.seal(list, page.nextCursor) } };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * An absent or empty body reads as `{}`; schemas then say what is missing. Bytes that are
 * not UTF-8 are refused rather than replaced, and the parsed value passes checkJsonShape
 * before anything else (hashing, validation) walks it.
 */
export function parseJson(raw: Buffer | undefined, contentType: string): unknown {
  if (raw === undefined || raw.length === 0) return {};
  if (!isJson(contentType)) throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'request bodies must be application/json');
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw invalidField('body', 'must be UTF-8');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw invalidField('body', 'malformed JSON');
  }
  checkJsonShape(json, text);
  return json;
}

/**
 * Idempotency keys belong to the route a request reaches, with its decoded parameters,
 * however the path was spelled (`//fund`, `/fund/`, percent-encoding). `%` and `/` in a
 * parameter are escaped so that two parameter lists cannot render the same.
 */
function scopePath(route: Route, params: Readonly<Record<string, string>>): string {
  const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => (params[name] ?? '').replaceAll('%', '%25').replaceAll('/', '%2F'));
  return `/${API_VERSION}${path}`;
}

/** A handler's reply on the wire; an error a handler answers (rather than throws) carries the request id like any other. */
export function serialise(reply: Reply, requestId: string): Answer {
  if (reply.status === 204) return { status: 204, body: '', headers: [] };
  const body = reply.status >= 400 && isObject(reply.body) ? { ...reply.body, requestId } : reply.body;
  return { status: reply.status, body: JSON.stringify(body), headers: [] };
}

/** A replayed error answer was recorded with the first request's id: the replay names its own. */
function withRequestId(status: number, body: string, requestId: string): string {
  if (status < 400) return body;
  const parsed: unknown = JSON.parse(body);
  return isObject(parsed) ? JSON.stringify({ ...parsed, requestId }) : body;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Query strings become plain objects; a repeated parameter keeps its first value, unless
 *  the route's query schema makes it an array, which collects every value (bounded by the
 *  schema's maxItems when validated, and by the URL length before that). */
function parseQuery(query: string, schema: TSchema): Record<string, string | string[]> {
  const properties = (schema.properties ?? {}) as Record<string, TSchema>;
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(query)) {
    const seen = out[k];
    if (properties[k]?.type === 'array') out[k] = Array.isArray(seen) ? [...seen, v] : [v];
    else if (seen === undefined) out[k] = v;
  }
  return out;
}

/** 405: `details` names the method like any field; the Allow header lists the methods. */
export class MethodNotAllowed extends DomainError {
  constructor(
    method: string,
    readonly allowed: readonly string[],
  ) {
    const message = `${method} is not allowed here; allowed: ${allowed.join(', ')}`;
    super('METHOD_NOT_ALLOWED', message, [{ field: 'method', message }]);
  }
}
