// The HTTP front on uWebSockets.js. Each request goes through, in order: framing and Host
// (400, or 411 for a chunked body, connection closed: framing.ts), the probes and the
// dashboard, readiness (503 while recovering), size (413) and then the API's own path
// (requests.ts: route, authentication, environment, media type, JSON and schema, cursor,
// idempotency, the handler); a write starts only once the bytes read with it are parsed
// (Exchange.run). The reply leaves only after the handler's log entry is durable.
import uWS from 'uWebSockets.js';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { errorBody, statusOf, type ErrorBody } from './errors.js';
import type { Reply, Route } from './route.js';
import { API_VERSION, MAX_BODY_BYTES, MethodNotAllowed, parseJson, serialise, type Answer, type Incoming, type RequestDispatcher } from './requests.js';
import { HeaderScan, framingProblem, refuseFrame, walletSignatureConflict, walletSignatureOf } from './framing.js';
import { ContendedError, EffectsFullError, EngineClosedError, LogFullError, type RecoveryProgress } from '../engine/engine.js';
import type { Report } from '../engine/report.js';
import { DASHBOARD_HEADERS, type DashboardFile } from './dashboard.js';
import { DomainError, invalidInput, unauthorized } from '../../actors/errors.js';

export { API_VERSION, MAX_BODY_BYTES };

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  202: '202 Accepted',
  204: '204 No Content',
  308: '308 Permanent Redirect',
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

export interface HttpServer {
  /** Starts answering the API (until then every route but the probes answers 503). */
  serve(api: Api): void;
  /**
   * Stops accepting, waits up to `timeoutMs` for requests in flight, then closes the
   * connections of those still running (a slow upload cannot hold shutdown) and resolves.
   * Calling it again returns the same promise.
   */
  drain(timeoutMs: number): Promise<void>;
  readonly port: number;
}

/** Endpoints outside the versioned API: health, the OpenAPI document, operator commands. */
export interface Extras {
  /** What GET /healthz shows a request bearing the operator key; any other is told only `{"status":"ok"}`. */
  healthz: () => unknown;
  openapi: () => unknown;
  /** Operator endpoints under `/_operator/`, authenticated with the data directory's operator key (which also shows /healthz's details). */
  operator: { keyHash: Buffer; handle: (path: string, body: unknown) => Promise<Reply> };
}

/** What the front serves once the store is recovered. */
export interface Api {
  /** The versioned API: ApiRequests, or a host's dispatcher over them. */
  requests: RequestDispatcher;
  /** For the labels metrics and the access log give routes. */
  routes: readonly Route[];
  extras: Extras;
}

/** The front before the API: where it listens, what it reports, and what its probes read. */
export interface FrontOptions {
  host: string;
  port: number;
  report: Report;
  /** Told of every answered request (metrics, the access log); without one nothing is measured. */
  observer?: HttpObserver;
  /** GET /metrics; without it the path is not served. */
  metrics?: { contentType: string; render(): Promise<string> };
  /** How far recovery is, for GET /readyz before the API is served. */
  recovery: () => RecoveryProgress | undefined;
  /** The dashboard's files, served at /dashboard/ (ready or not: the page waits for the API itself). */
  dashboard?: ReadonlyMap<string, DashboardFile>;
}

/**
 * What the front tells its observer about each answered request. The labels are bounded:
 * `route` is a route's pattern (never the raw path) or `unmatched`, and `method` one the
 * API knows or `OTHER`.
 */
export interface HttpObserver {
  answered(method: string, route: string, status: number, seconds: number, requestId: string): void;
}

type Processor = (raw: Buffer | undefined) => Promise<Answer>;

/** The route label of requests that match no route (metrics, the access log). */
const UNMATCHED = 'unmatched';
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS']);
/** A client's X-Request-Id is kept when it is this tame (it goes into logs and bodies); otherwise a new one is made. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._~:/+=@-]{1,128}$/;

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
  /** Request ids this process makes: a random prefix per start, then a counter. */
  readonly #idPrefix = `${randomBytes(6).toString('hex')}-`;
  #issued = 0;

  constructor(
    readonly report: Report,
    readonly observer: HttpObserver | undefined,
  ) {}

  /** Requests that may change state, held until uWS has parsed every byte of its current read (Exchange.run). */
  #held: Array<() => void> = [];
  readonly #release = (): void => {
    const held = this.#held;
    this.#held = [];
    for (const run of held) run();
  };

  /**
   * Runs `run` once uWS has parsed the rest of the bytes it is parsing: in the check phase
   * right after the poll that read them (one setImmediate for all the requests of a read).
   * Microtasks and nextTicks would not do: Node drains both when each handler callback
   * returns, before the parser goes on to the next request (an answer given from either
   * still pipelines; one from a setImmediate does not: README.md, "HTTP framing").
   */
  afterParse(run: () => void): void {
    if (this.#held.push(run) === 1) setImmediate(this.#release);
  }

  requestId(sent: string): string {
    return sent !== '' && SANE_REQUEST_ID.test(sent) ? sent : this.#idPrefix + (++this.#issued).toString(36);
  }

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
  /** The route's pattern once one matched (metrics and the access log). */
  route = UNMATCHED;
  /** When the head arrived (performance.now()), read only when the front has an observer. */
  readonly #started: number;

  constructor(
    readonly res: uWS.HttpResponse,
    readonly incoming: Incoming,
    readonly requestId: string,
    private readonly front: Front,
  ) {
    this.#started = front.observer === undefined ? 0 : performance.now();
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

  send(status: number, body: string, headers: ReadonlyArray<[string, string]> = [], contentType = 'application/json'): void {
    if (this.#aborted) return;
    const { res, incoming } = this;
    res.cork(() => {
      res.writeStatus(STATUS_TEXT[status] ?? `${status} Unknown`);
      res.writeHeader('X-Request-Id', this.requestId);
      for (const [k, v] of headers) res.writeHeader(k, v);
      if (status === 204) {
        res.endWithoutBody();
      } else if (incoming.method === 'HEAD') {
        // What GET would send, without the body: a keep-alive client reads no body after
        // HEAD. (This uWS closes the connection when endWithoutBody is given a length, so
        // the header is written by hand.)
        res.writeHeader('Content-Type', contentType);
        res.writeHeader('Content-Length', String(Buffer.byteLength(body)));
        res.endWithoutBody();
      } else {
        res.writeHeader('Content-Type', contentType);
        res.end(body);
      }
    });
    const { observer } = this.front;
    if (observer !== undefined) {
      const method = KNOWN_METHODS.has(incoming.method) ? incoming.method : 'OTHER';
      observer.answered(method, this.route, status, (performance.now() - this.#started) / 1000, this.requestId);
    }
  }

  fail(err: unknown): void {
    const error = errorAnswer(err, this.front.report, this.requestId);
    const status = statusOf(error);
    const headers: Array<[string, string]> = [];
    if (error.retryAfter !== undefined) headers.push(['Retry-After', String(error.retryAfter)]);
    if (error instanceof MethodNotAllowed) headers.push(['Allow', error.allowed.join(', ')]);
    if (status === 401) headers.push(['WWW-Authenticate', this.incoming.path.startsWith('/_operator/') ? 'Bearer' : 'Basic realm="api"']);
    this.send(status, JSON.stringify(errorBody(error, this.requestId) satisfies ErrorBody), headers);
  }

  /** Fails the request and finishes it: for refusals before the handler runs. */
  refuse(err: unknown): void {
    this.fail(err);
    this.finish();
  }

  /** Answers from the head alone, and finishes. */
  answer(status: number, body: unknown, headers: ReadonlyArray<[string, string]> = []): void {
    this.send(status, JSON.stringify(body), headers);
    this.finish();
  }

  /**
   * Runs the handler on the complete body; its answer, or its failure, finishes the request.
   * A request that may change state (any method but GET and HEAD) runs only once uWS has
   * parsed the rest of the bytes it read with it, and not at all if they held another
   * request: uWS closes a connection whose next request arrives before the previous answer
   * is sent (its HttpContext refuses "async pipelining"), so a write pipelined with anything
   * would commit and lose its answer, and a client without an Idempotency-Key would retry
   * it into a second one. Held, it is dropped unexecuted with the connection (onAborted),
   * and the client's retry of both requests is safe. Reads answer within their own callback
   * and keep uWS's in-order pipelining (README.md, "HTTP framing").
   */
  run(process: Processor, raw: Buffer | undefined): void {
    const { method } = this.incoming;
    if (method === 'GET' || method === 'HEAD') {
      this.#execute(process, raw);
      return;
    }
    this.front.afterParse(() => {
      if (!this.#aborted) this.#execute(process, raw);
    });
  }

  #execute(process: Processor, raw: Buffer | undefined): void {
    this.processing = true;
    process(raw).then(
      ({ status, body, headers, contentType }) => {
        this.send(status, body, headers, contentType);
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
 * Reads the body (at most `maxBodyBytes`, the route's: MAX_BODY_BYTES but for multipart
 * routes; 413 when more is declared) and runs `process` on it, or at once when none is
 * expected or sent.
 */
function readBody(exchange: Exchange, front: Front, { expectsBody, maxBodyBytes, process }: Handler): void {
  const { res, incoming } = exchange;
  if (!expectsBody) {
    exchange.run(process, undefined);
    return;
  }
  const declared = incoming.contentLength === '' ? undefined : Number(incoming.contentLength);
  if (declared !== undefined && declared > maxBodyBytes) {
    exchange.refuse(payloadTooLarge(maxBodyBytes));
    return;
  }
  if (declared === undefined || declared === 0) {
    exchange.run(process, undefined);
    return;
  }
  // Only Content-Length frames a body (framing.ts refuses chunked): uWS hands over exactly
  // the declared bytes, so the check above bounds the whole body.
  const chunks: Buffer[] = [];
  front.uploading.add(res);
  res.onData((chunk, isLast) => {
    // uWS reuses the chunk's memory after this callback returns: copy it.
    chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (isLast) {
      front.uploading.delete(res);
      exchange.run(process, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    }
  });
}

/** How a request is handled once its body is in; undefined when it was answered from its head alone. */
type Dispatch = (exchange: Exchange) => Handler | undefined;
interface Handler {
  expectsBody: boolean;
  maxBodyBytes: number;
  process: Processor;
}

/**
 * The versioned API, the health and OpenAPI documents and the operator endpoints, over
 * recovered services.
 */
function apiDispatch(api: Api): Dispatch {
  const { requests, routes, extras } = api;
  // Labels made once: metrics and the access log name a route by its published path.
  const labels = new Map(routes.map((r) => [r, `/${API_VERSION}${r.path}`]));
  let openapiJson: string | undefined;

  return (exchange) => {
    const { incoming } = exchange;
    if (incoming.path === '/healthz' || incoming.path === OPENAPI_PATH) {
      exchange.route = incoming.path;
      if (incoming.method !== 'GET' && incoming.method !== 'HEAD') throw new MethodNotAllowed(incoming.method, ['GET']);
      if (incoming.path === '/healthz') {
        // Unauthenticated probes learn up or down; the details name tenants (a down webhook endpoint's environment).
        exchange.answer(200, presentsOperatorKey(extras.operator.keyHash, incoming) ? extras.healthz() : { status: 'ok' });
      } else {
        openapiJson ??= JSON.stringify(extras.openapi());
        exchange.send(200, openapiJson);
        exchange.finish();
      }
      return undefined;
    }
    if (incoming.path.startsWith('/_operator/')) {
      checkOperator(extras.operator.keyHash, incoming);
      return { expectsBody: true, maxBodyBytes: MAX_BODY_BYTES, process: async (raw) => serialise(await extras.operator.handle(incoming.path, parseJson(raw, incoming.contentType)), exchange.requestId) };
    }
    const dispatched = requests.dispatch(incoming, (route) => (exchange.route = labels.get(route) ?? UNMATCHED));
    return { expectsBody: dispatched.expectsBody, maxBodyBytes: dispatched.maxBodyBytes, process: (raw) => dispatched.process(raw, exchange.requestId) };
  };
}

const OPENAPI_PATH = `/${API_VERSION}/openapi.json`;

/**
 * The probes, answered from the head alone, ready or not: `/livez` while the process runs,
 * `/readyz` (503 with recovery's progress until the API is served), `/metrics` when on.
 * Undefined for every other path.
 */
function probe(exchange: Exchange, options: FrontOptions, ready: boolean): Handler | 'answered' | undefined {
  const { incoming } = exchange;
  const path = incoming.path;
  if (path !== '/livez' && path !== '/readyz' && (path !== '/metrics' || options.metrics === undefined)) return undefined;
  exchange.route = path;
  if (incoming.method !== 'GET' && incoming.method !== 'HEAD') throw new MethodNotAllowed(incoming.method, ['GET']);
  if (path === '/livez') {
    exchange.answer(200, { status: 'ok' });
  } else if (path === '/readyz') {
    const progress = options.recovery() ?? { replayed: 0, total: 0 };
    if (ready) exchange.answer(200, { status: 'ready' });
    else exchange.answer(503, { status: 'recovering', replayed: progress.replayed, total: progress.total }, [['Retry-After', '1']]);
  } else {
    const metrics = options.metrics!;
    return { expectsBody: false, maxBodyBytes: 0, process: async () => ({ status: 200, body: await metrics.render(), headers: [], contentType: metrics.contentType }) };
  }
  return 'answered';
}

/** Answers a request under /dashboard from the dashboard's files; false for any other path. */
function serveDashboard(exchange: Exchange, files: ReadonlyMap<string, DashboardFile>): boolean {
  const { incoming } = exchange;
  if (incoming.path !== '/dashboard' && !incoming.path.startsWith('/dashboard/')) return false;
  exchange.route = '/dashboard';
  if (incoming.method !== 'GET' && incoming.method !== 'HEAD') throw new MethodNotAllowed(incoming.method, ['GET']);
  if (incoming.path === '/dashboard') {
    // Relative URLs in the page (style.css, app.js) resolve under /dashboard/.
    exchange.send(308, '', [['Location', '/dashboard/'], ...DASHBOARD_HEADERS], 'text/plain; charset=utf-8');
    exchange.finish();
    return true;
  }
  const name = incoming.path.slice('/dashboard/'.length) || 'index.html';
  const file = files.get(name);
  if (file === undefined) throw new DomainError('NOT_FOUND', `no dashboard file ${name}`, [{ field: 'path', message: `no dashboard file ${name}` }]);
  exchange.send(200, file.body, DASHBOARD_HEADERS, file.contentType);
  exchange.finish();
  return true;
}

/**
 * Listens at once, before the store is recovered: the probes answer from the start, every
 * other route 503 SERVICE_UNAVAILABLE until `serve` hands it the API.
 */
export function startHttpServer(options: FrontOptions): Promise<HttpServer> {
  const app = uWS.App();
  const scan = new HeaderScan();
  const front = new Front(options.report, options.observer);
  let api: Dispatch | undefined;

  const dispatch: Dispatch = (exchange) => {
    if (options.dashboard !== undefined && serveDashboard(exchange, options.dashboard)) return undefined;
    const probed = probe(exchange, options, api !== undefined);
    if (probed === 'answered') return undefined;
    if (probed !== undefined) return probed;
    if (api === undefined) throw notReady();
    return api(exchange);
  };

  app.any('/*', (res, req) => {
    // Framing first: a request whose end is in doubt is answered and its connection closed
    // before anything else, so nothing after it is read as a request (framing.ts).
    const h = scan.read(req);
    const requestId = front.requestId(h.xRequestId);
    const refusal = framingProblem(h);
    if (refusal !== undefined) {
      refuseFrame(res, req, refusal, requestId);
      return;
    }
    const exchange = new Exchange(res, incomingOf(req, h), requestId, front);
    if (front.draining) {
      exchange.refuse(shuttingDown());
      return;
    }
    const conflict = walletSignatureConflict(h);
    if (conflict !== undefined) {
      exchange.refuse(invalidInput([conflict], `${conflict.field} ${conflict.message}`));
      return;
    }
    let handler: ReturnType<Dispatch>;
    try {
      handler = dispatch(exchange);
    } catch (err) {
      exchange.refuse(err);
      return;
    }
    if (handler !== undefined) readBody(exchange, front, handler);
  });

  return listen(app, options, front, (served) => (api = apiDispatch(served)));
}

/** The address or port cannot be listened on (uWebSockets.js says no more than that). */
export class ListenError extends Error {
  constructor(host: string, port: number) {
    super(`cannot listen on ${host}:${port}: no interface of this machine has that address, or the port is taken`);
    this.name = 'ListenError';
  }
}

/** Listens on the configured host and port; the server's drain() stops accepting and waits for the front to be idle. */
function listen(app: uWS.TemplatedApp, options: FrontOptions, front: Front, serve: (api: Api) => void): Promise<HttpServer> {
  let drained: Promise<void> | undefined;
  return new Promise((resolve, reject) => {
    app.listen(options.host, options.port, (socket) => {
      if (socket === false) {
        reject(new ListenError(options.host, options.port));
        return;
      }
      const port = uWS.us_socket_local_port(socket);
      resolve({
        port,
        serve,
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
              front.report(`drain: ${front.inFlight} request(s) still in flight after ${timeoutMs} ms; closing the ${left.length} still uploading`, {
                event: 'drain.timeout',
                level: 'warn',
                inFlight: front.inFlight,
                closed: left.length,
                timeoutMs,
              });
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

/** Whether the request carries the operator key as its Bearer token (compared in constant time, as hashes). */
function presentsOperatorKey(keyHash: Buffer, incoming: Incoming): boolean {
  const m = /^Bearer\s+(\S{1,512})$/.exec(incoming.authorization);
  const presented = createHash('sha256').update(m?.[1] ?? '').digest();
  return timingSafeEqual(presented, keyHash) && m !== null;
}

function checkOperator(keyHash: Buffer, incoming: Incoming): void {
  if (incoming.method !== 'POST') throw new MethodNotAllowed(incoming.method, ['POST']);
  if (!presentsOperatorKey(keyHash, incoming)) throw unauthorized('Operator endpoints need the operator key as a Bearer token');
}

function notReady(): DomainError {
  return new DomainError('SERVICE_UNAVAILABLE', 'the service is recovering its store; GET /readyz says how far', undefined, undefined, 1);
}

function shuttingDown(): DomainError {
  return new DomainError('SERVICE_UNAVAILABLE', 'the service is shutting down', undefined, undefined, 1);
}

function payloadTooLarge(limit: number): DomainError {
  return new DomainError('PAYLOAD_TOO_LARGE', `this request's body is limited to ${limit} bytes`);
}

/** What a failed request answers: its own error, or for the engine's refusals and bugs the API's (a bug is logged under the request's id). */
export function errorAnswer(err: unknown, report: Report, requestId: string): DomainError {
  if (err instanceof DomainError) return err;
  if (err instanceof EngineClosedError) return shuttingDown();
  if (err instanceof LogFullError || err instanceof EffectsFullError) {
    return new DomainError('RATE_LIMITED', 'the service is at capacity; retry shortly', undefined, undefined, 1);
  }
  if (err instanceof ContendedError) {
    return new DomainError('CONFLICT', 'the records this request needs kept changing while it ran; nothing was changed: send it again', undefined, undefined, 1);
  }
  report(`request ${requestId} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`, {
    event: 'request.failed',
    level: 'error',
    reqId: requestId,
    error: err instanceof Error ? err.message : String(err),
  });
  return new DomainError('INTERNAL_ERROR', `internal error (request ${requestId})`);
}
