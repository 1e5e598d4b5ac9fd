// The HTTP front on uWebSockets.js. Each request goes through, in order: framing and Host
// (400, connection closed: framing.ts), version segment and route (404/405; HEAD is GET
// without the body), authentication (401), environment (403 SANDBOX_ONLY), media type
// (415), size (413), UTF-8, JSON, nesting depth, Unicode and schema (400), list cursor
// (400), idempotency, then the route's handler. The reply leaves only after the handler's
// log entry is durable.
import uWS from 'uWebSockets.js';
import type { TSchema } from '@sinclair/typebox';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Services } from '../services.js';
import { errorBody, statusOf, type ErrorBody } from './errors.js';
import { checkJsonShape } from './validation.js';
import { Authenticator } from './platform-auth.js';
import { IdempotencyKeys } from './idempotency.js';
import { canonicalJson, requestHash } from '../crypto/canonical-json.js';
import { CursorCodec } from './pagination.js';
import type { Reply, Route, RouteContext, RequestHeaders } from './route.js';
import { Router } from './router.js';
import { HeaderScan, framingProblem, refuseFrame, walletSignatureConflict, walletSignatureOf } from './framing.js';
import { EffectsFullError, EngineClosedError, LogFullError, MailboxFullError } from '../engine/engine.js';
import type { PlatformEnv } from '../../actors/platform.js';
import { DomainError, invalidField, invalidInput, unauthorized } from '../../actors/errors.js';

export const API_VERSION = '2025-10-13';
/** Request bodies up to 1 MiB (CONTRACT.md). */
export const MAX_BODY_BYTES = 1024 * 1024;

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  202: '202 Accepted',
  204: '204 No Content',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  409: '409 Conflict',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

interface Incoming {
  method: string;
  path: string;
  query: string;
  authorization: string;
  contentType: string;
  contentLength: string;
  transferEncoding: string;
  headers: RequestHeaders;
}

export interface HttpServer {
  /**
   * Stops accepting, waits up to `timeoutMs` for requests in flight, then closes the
   * connections of those still running (a slow upload cannot hold shutdown) and resolves.
   * Calling it again returns the same promise.
   */
  drain(timeoutMs: number): Promise<void>;
  readonly port: number;
}

/** Endpoints outside the versioned API: readiness, the OpenAPI document, operator commands. */
export interface Extras {
  healthz: () => unknown;
  openapi: () => unknown;
  /** Operator endpoints under `/_operator/`, authenticated with the data directory's operator key. */
  operator: { keyHash: Buffer; handle: (path: string, body: unknown) => Promise<Reply> };
}

type Processor = (raw: Buffer | undefined) => Promise<{ status: number; body: string; headers: Array<[string, string]> }>;

/**
 * What the front keeps across requests: the requests in flight (drain waits for them) and
 * those whose body is still arriving, the only ones a client can hold open, so the ones
 * drain() closes when its time is up. (Tracking every request in a set cost GETs a
 * microsecond each.) Bounded by the connections uWS accepts.
 */
class Front {
  inFlight = 0;
  readonly uploading = new Set<uWS.HttpResponse>();
  draining = false;
  onIdle: (() => void) | undefined;

  constructor(readonly log: (line: string) => void) {}

  finished(res: uWS.HttpResponse): void {
    this.uploading.delete(res);
    this.inFlight--;
    if (this.inFlight === 0 && this.onIdle !== undefined) this.onIdle();
  }
}

/**
 * One request and its answer. Once the body is complete, the handler's completion
 * finishes the request; before that, a client that goes away (mid-upload too) finishes
 * it at once, so drain() is not held up by a request nobody will answer.
 */
class Exchange {
  #aborted = false;
  #finished = false;
  /** The body is complete and the handler runs. */
  processing = false;

  constructor(
    readonly res: uWS.HttpResponse,
    readonly incoming: Incoming,
    private readonly front: Front,
  ) {
    front.inFlight++;
    res.onAborted(() => {
      this.#aborted = true;
      if (!this.processing) this.finish();
    });
  }

  finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    this.front.finished(this.res);
  }

  send(status: number, body: string, headers: ReadonlyArray<[string, string]> = []): void {
    if (this.#aborted) return;
    const { res, incoming } = this;
    res.cork(() => {
      res.writeStatus(STATUS_TEXT[status] ?? `${status} Unknown`);
      for (const [k, v] of headers) res.writeHeader(k, v);
      if (status === 204) {
        res.endWithoutBody();
      } else if (incoming.method === 'HEAD') {
        // What GET would send, without the body: a keep-alive client reads no body after
        // HEAD. (This uWS closes the connection when endWithoutBody is given a length, so
        // the header is written by hand.)
        res.writeHeader('Content-Type', 'application/json');
        res.writeHeader('Content-Length', String(Buffer.byteLength(body)));
        res.endWithoutBody();
      } else {
        res.writeHeader('Content-Type', 'application/json');
        res.end(body);
      }
    });
  }

  fail(err: unknown): void {
    const error = errorAnswer(err, this.front.log);
    const status = statusOf(error);
    const headers: Array<[string, string]> = [];
    if (error.retryAfter !== undefined) headers.push(['Retry-After', String(error.retryAfter)]);
    if (error instanceof MethodNotAllowed) headers.push(['Allow', error.allowed.join(', ')]);
    if (status === 401) headers.push(['WWW-Authenticate', this.incoming.path.startsWith('/_operator/') ? 'Bearer' : 'Basic realm="api"']);
    this.send(status, JSON.stringify(errorBody(error) satisfies ErrorBody), headers);
  }

  /** Fails the request and finishes it: for refusals before the handler runs. */
  refuse(err: unknown): void {
    this.fail(err);
    this.finish();
  }

  /** Runs the handler on the complete body; its answer, or its failure, finishes the request. */
  run(process: Processor, raw: Buffer | undefined): void {
    this.processing = true;
    process(raw).then(
      ({ status, body, headers }) => {
        this.send(status, body, headers);
        this.finish();
      },
      (err: unknown) => this.refuse(err),
    );
  }
}

/** The request line and the headers the front reads, once framing is known to be sound. */
function incomingOf(req: uWS.HttpRequest, h: HeaderScan): Incoming {
  const incoming: Incoming = {
    method: req.getCaseSensitiveMethod().toUpperCase(),
    path: req.getUrl(),
    query: req.getQuery() ?? '',
    authorization: h.authorization,
    contentType: h.contentType,
    contentLength: h.contentLength,
    transferEncoding: h.transferEncoding,
    headers: {},
  };
  // uWS reads a header sent empty, or made only of bytes it trims (from 0x80 up, at
  // either end), as ''; on a POST that is a key to refuse, not a missing one.
  if (h.idempotencyKey !== undefined && (h.idempotencyKey !== '' || incoming.method === 'POST')) incoming.headers.idempotencyKey = h.idempotencyKey;
  if (h.requestId !== '') incoming.headers.requestId = h.requestId;
  const signature = walletSignatureOf(h);
  if (signature !== '') incoming.headers.walletSignature = signature;
  return incoming;
}

/**
 * Reads the body (at most MAX_BODY_BYTES; 413 past it) and runs `process` on it, or at once
 * when none is expected or sent.
 */
function readBody(exchange: Exchange, front: Front, expectsBody: boolean, process: Processor): void {
  const { res, incoming } = exchange;
  if (!expectsBody) {
    exchange.run(process, undefined);
    return;
  }
  const declared = incoming.contentLength === '' ? undefined : Number(incoming.contentLength);
  if (declared !== undefined && declared > MAX_BODY_BYTES) {
    exchange.refuse(payloadTooLarge());
    return;
  }
  if (declared === 0 || (declared === undefined && incoming.transferEncoding === '')) {
    exchange.run(process, undefined);
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let refused = false;
  front.uploading.add(res);
  res.onData((chunk, isLast) => {
    if (refused) return;
    size += chunk.byteLength;
    if (size > MAX_BODY_BYTES) {
      refused = true;
      exchange.refuse(payloadTooLarge());
      return;
    }
    // uWS reuses the chunk's memory after this callback returns: copy it.
    chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (isLast) {
      front.uploading.delete(res);
      exchange.run(process, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    }
  });
}

export function startHttpServer(services: Services, routes: readonly Route[], extras: Extras, log: (line: string) => void): Promise<HttpServer> {
  const router = new Router(routes);
  const idempotency = new IdempotencyKeys(services);
  const cursors = new CursorCodec(services.masterKey.derive('list cursors'));
  const auth = new Authenticator(services.world);
  const app = uWS.App();
  const scan = new HeaderScan();
  const front = new Front(log);
  let openapiJson: string | undefined;

  /** What handles the request once its body is in, or undefined when it was answered from its head alone. */
  const dispatch = (exchange: Exchange): { expectsBody: boolean; process: Processor } | undefined => {
    const { incoming } = exchange;
    if (incoming.path === '/healthz' || incoming.path === `/${API_VERSION}/openapi.json`) {
      if (incoming.method !== 'GET' && incoming.method !== 'HEAD') throw new MethodNotAllowed(incoming.method, ['GET']);
      if (incoming.path === '/healthz') {
        exchange.send(200, JSON.stringify(extras.healthz()));
      } else {
        openapiJson ??= JSON.stringify(extras.openapi());
        exchange.send(200, openapiJson);
      }
      exchange.finish();
      return undefined;
    }
    if (incoming.path.startsWith('/_operator/')) {
      checkOperator(extras.operator.keyHash, incoming);
      return { expectsBody: true, process: async (raw) => serialise(await extras.operator.handle(incoming.path, parseJson(raw, incoming.contentType))) };
    }
    const prepared = prepare(auth, router, incoming);
    return { expectsBody: prepared.expectsBody, process: (raw) => handle(services, idempotency, cursors, prepared, incoming, raw) };
  };

  app.any('/*', (res, req) => {
    // Framing first: a request whose end is in doubt is answered and its connection closed
    // before anything else, so nothing after it is read as a request (framing.ts).
    const h = scan.read(req);
    const problem = framingProblem(h);
    if (problem !== undefined) {
      refuseFrame(res, req, problem);
      return;
    }
    const exchange = new Exchange(res, incomingOf(req, h), front);
    if (front.draining) {
      exchange.refuse(shuttingDown());
      return;
    }
    const conflict = walletSignatureConflict(h);
    if (conflict !== undefined) {
      exchange.refuse(invalidInput([conflict], `${conflict.field} ${conflict.message}`));
      return;
    }
    let handler: ReturnType<typeof dispatch>;
    try {
      handler = dispatch(exchange);
    } catch (err) {
      exchange.refuse(err);
      return;
    }
    if (handler !== undefined) readBody(exchange, front, handler.expectsBody, handler.process);
  });

  return listen(app, services, front);
}

/** Listens on the configured host and port; the server's drain() stops accepting and waits for the front to be idle. */
function listen(app: uWS.TemplatedApp, services: Services, front: Front): Promise<HttpServer> {
  let drained: Promise<void> | undefined;
  return new Promise((resolve, reject) => {
    app.listen(services.config.host, services.config.port, (socket) => {
      if (socket === false) {
        reject(new Error(`cannot listen on ${services.config.host}:${services.config.port}`));
        return;
      }
      const port = uWS.us_socket_local_port(socket);
      resolve({
        port,
        drain: (timeoutMs: number) => {
          drained ??= new Promise<void>((done) => {
            front.draining = true;
            uWS.us_listen_socket_close(socket);
            if (front.inFlight === 0) {
              done();
              return;
            }
            const timer = setTimeout(() => {
              front.onIdle = undefined;
              const left = [...front.uploading];
              front.log(`drain: ${front.inFlight} request(s) still in flight after ${timeoutMs} ms; closing the ${left.length} still uploading`);
              // Closing runs each one's onAborted. Requests past their upload are deciding or
              // waiting for their entry, which the final commit makes durable.
              for (const res of left) res.close();
              front.uploading.clear();
              done();
            }, timeoutMs);
            front.onIdle = () => {
              clearTimeout(timer);
              done();
            };
          });
          return drained;
        },
      });
    });
  });
}

interface Prepared {
  route: Route;
  params: Record<string, string>;
  env: PlatformEnv;
  expectsBody: boolean;
}

/** Everything that can be decided from the request line and headers alone. */
function prepare(auth: Authenticator, router: Router, incoming: Incoming): Prepared {
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
  // HEAD is GET without the body (send() leaves it out).
  const match = router.match(incoming.method === 'HEAD' ? 'GET' : incoming.method, decoded);
  if (match.kind === 'none') throw new DomainError('NOT_FOUND', `no route ${incoming.method} ${incoming.path}`, [{ field: 'path', message: `no route ${incoming.method} ${incoming.path}` }]);
  if (match.kind === 'wrong-method') {
    throw new MethodNotAllowed(incoming.method, match.allowed);
  }
  const env = auth.authenticate(incoming.authorization);
  if (match.route.sandboxOnly === true && env.environment !== 'sandbox') {
    throw new DomainError('SANDBOX_ONLY', 'this endpoint exists only in sandbox; use a sandbox API token');
  }
  // Routes without a body schema (execute, approve) still read what is sent: nothing, an
  // empty body or JSON is fine (and ignored), anything else is 415.
  const expectsBody = match.route.body !== undefined || match.route.method !== 'GET';
  if (expectsBody && incoming.contentLength !== '' && incoming.contentLength !== '0' && !isJson(incoming.contentType)) {
    throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'request bodies must be application/json');
  }
  return { route: match.route, params: match.params, env, expectsBody };
}

function isJson(contentType: string): boolean {
  if (contentType === 'application/json') return true;
  const type = contentType.split(';', 1)[0]!.trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

async function handle(
  services: Services,
  idempotency: IdempotencyKeys,
  cursors: CursorCodec,
  prepared: Prepared,
  incoming: Incoming,
  raw: Buffer | undefined,
): Promise<{ status: number; body: string; headers: Array<[string, string]> }> {
  const { route, env, params } = prepared;
  const json = parseJson(raw, incoming.contentType);
  const key = route.idempotent === true ? incoming.headers.idempotencyKey : undefined;
  // Hashed before validation, which drops unknown properties in place. A route without a
  // body ignores whatever was sent, so that is not part of the request either.
  const hash = key === undefined ? '' : requestHash(route.body === undefined ? {} : json);
  const body = route.body === undefined ? undefined : route.body.parse(json);
  const parsedQuery = route.query === undefined ? undefined : route.query.parse(parseQuery(incoming.query, route.query.schema));
  const list = pagedList(env.id, route, params, parsedQuery);
  const query = list === undefined ? parsedQuery : openCursor(cursors, list, parsedQuery as PageRequest);

  const base: Omit<RouteContext<unknown, unknown>, 'run'> = { env, params, query, body, headers: incoming.headers, services };
  if (key !== undefined) {
    const scoped = idempotency.scope(env.id, route.method, scopePath(route, params), key);
    const outcome = await idempotency.run(scoped, hash, (remember) =>
      route.handle({
        ...base,
        run: (command, input, render) => services.engine.run(command, input, render, remember),
      }),
    );
    if (outcome.replayed) return { status: outcome.status, body: outcome.body, headers: [['Idempotent-Replayed', 'true']] };
    return serialise(outcome.reply);
  }
  const reply = await route.handle({
    ...base,
    run: (command, input, render) => services.engine.run(command, input, render),
  });
  return serialise(list === undefined ? reply : sealNextCursor(cursors, list, reply));
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
function parseJson(raw: Buffer | undefined, contentType: string): unknown {
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

function checkOperator(keyHash: Buffer, incoming: Incoming): void {
  if (incoming.method !== 'POST') throw new MethodNotAllowed(incoming.method, ['POST']);
  const m = /^Bearer\s+(\S{1,512})$/.exec(incoming.authorization);
  const presented = createHash('sha256').update(m?.[1] ?? '').digest();
  if (m === null || !timingSafeEqual(presented, keyHash)) throw unauthorized('Operator endpoints need the operator key as a Bearer token');
}

function serialise(reply: Reply): { status: number; body: string; headers: Array<[string, string]> } {
  return { status: reply.status, body: reply.status === 204 ? '' : JSON.stringify(reply.body), headers: [] };
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
class MethodNotAllowed extends DomainError {
  constructor(
    method: string,
    readonly allowed: readonly string[],
  ) {
    const message = `${method} is not allowed here; allowed: ${allowed.join(', ')}`;
    super('METHOD_NOT_ALLOWED', message, [{ field: 'method', message }]);
  }
}

function shuttingDown(): DomainError {
  return new DomainError('SERVICE_UNAVAILABLE', 'the service is shutting down', undefined, undefined, 1);
}

function payloadTooLarge(): DomainError {
  return new DomainError('PAYLOAD_TOO_LARGE', `request bodies are limited to ${MAX_BODY_BYTES} bytes`);
}

/** What a failed request answers: its own error, or for the engine's refusals and bugs the API's. */
function errorAnswer(err: unknown, log: (line: string) => void): DomainError {
  if (err instanceof DomainError) return err;
  if (err instanceof EngineClosedError) return shuttingDown();
  if (err instanceof LogFullError || err instanceof MailboxFullError || err instanceof EffectsFullError) {
    return new DomainError('RATE_LIMITED', 'the service is at capacity; retry shortly', undefined, undefined, 1);
  }
  const id = randomBytes(6).toString('hex');
  log(`error ${id}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  return new DomainError('INTERNAL_ERROR', `internal error (reference ${id})`);
}
