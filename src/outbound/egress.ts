// The one way the service's outbound requests leave it: webhooks (POST) and OIDC key sets
// (GET), over node:http(s), each connection going only where the target policy
// (target-policy.ts) allows, checked against the address the socket actually connects to.
// A host name is resolved by the request's `lookup`, which refuses before the socket
// connects; an IP-literal host never reaches a lookup (net connects to it directly), so the
// literal is checked before the request is made. Redirects are not followed: a 3xx is an
// answer like any other.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { checkOutboundUrl, type Environment } from '../../actors/platform.js';
import { bareAddress, TargetRefusedError, type TargetPolicy } from './target-policy.js';

/** A webhook endpoint's answer body is read (and dropped) up to this many bytes. */
export const MAX_ANSWER_BYTES = 64 * 1024;
/** How long an idle kept-alive connection stays open (as node's global agent). */
const IDLE_SOCKET_MS = 5_000;

/** What every outbound request says: where, under which environment's rule, for how long. */
export interface OutboundRequest {
  environment: Environment;
  url: string;
  headers: Readonly<Record<string, string>>;
  /** The whole exchange, lookup and answer included, is cut off after this long. */
  timeoutMs: number;
  signal?: AbortSignal;
}

/** A webhook delivery. */
export interface EgressRequest extends OutboundRequest {
  body: string;
}

/** statusCode 0 when no answer came; `refused` says why when the policy stopped it before connecting. */
export interface EgressOutcome {
  statusCode: number;
  ms: number;
  refused?: string;
}

/** Where a webhook goes out: the network (OutboundEgress), or a simulation's platform endpoint. */
export interface Egress {
  /** POSTs the request; never throws (no answer is statusCode 0). */
  post(request: EgressRequest): Promise<EgressOutcome>;
}

/** A document read (an OIDC key set): the answer's body is kept, up to `maxBytes`. */
export interface DocumentRequest extends OutboundRequest {
  maxBytes: number;
}

export interface FetchedDocument {
  statusCode: number;
  body: Buffer;
}

/** Where documents the service reads come from: the network (OutboundEgress), or nowhere in a simulation. */
export interface DocumentFetcher {
  /**
   * GETs the document. Rejects with TargetRefusedError when the policy refuses it (before
   * any connection), with the signal's reason when cut off (a TimeoutError after
   * `timeoutMs`), and with an Error when the answer is larger than `maxBytes` or the network fails.
   */
  get(request: DocumentRequest): Promise<FetchedDocument>;
}

interface Agents {
  http: HttpAgent;
  https: HttpsAgent;
  lookup: LookupFunction;
}

export class OutboundEgress implements Egress, DocumentFetcher {
  readonly #policy: TargetPolicy;
  /**
   * Kept-alive connections per environment kind: a pooled socket is reused without a new
   * lookup, so one opened under sandbox's rule (loopback allowed) must never carry a
   * production request.
   */
  readonly #agents: Record<Environment, Agents>;

  constructor(policy: TargetPolicy) {
    this.#policy = policy;
    const agents = (environment: Environment): Agents => ({
      http: new HttpAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
      https: new HttpsAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
      lookup: this.#lookup(environment),
    });
    this.#agents = { sandbox: agents('sandbox'), production: agents('production') };
  }

  /** POSTs `body` to `url` under `environment`'s rule; never throws. */
  post(request: EgressRequest): Promise<EgressOutcome> {
    const started = performance.now();
    const outcome = (statusCode: number, refused?: string): EgressOutcome => ({
      statusCode,
      ms: Math.round(performance.now() - started),
      ...(refused !== undefined ? { refused } : {}),
    });
    return new Promise<EgressOutcome>((resolve) => {
      let settled = false;
      const settle = (statusCode: number, refused?: string): void => {
        if (settled) return;
        settled = true;
        resolve(outcome(statusCode, refused));
      };
      const headers = { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) };
      this.#request('POST', { ...request, headers }, request.body, (res) => drain(res, settle), (err) => {
        // Refused, reset, past the timeout or aborted: no answer (and the policy's reason, if it refused).
        settle(0, err instanceof TargetRefusedError ? err.message : undefined);
      });
    });
  }

  /** GETs `url` under `environment`'s rule and reads the answer (see DocumentFetcher). */
  get(request: DocumentRequest): Promise<FetchedDocument> {
    return new Promise<FetchedDocument>((resolve, reject) => {
      this.#request('GET', request, undefined, (res, signal) => readBounded(res, { maxBytes: request.maxBytes, signal }, resolve, reject), reject);
    });
  }

  /** Closes the kept-alive connections. */
  close(): void {
    for (const agents of Object.values(this.#agents)) {
      agents.http.destroy();
      agents.https.destroy();
    }
  }

  /**
   * Sends a request (with `body`, if any) that connects only where the policy allows;
   * `failed` hears a refusal (TargetRefusedError, and then no request is made), the cut-off
   * signal's reason, or the network's error. At most one of `answered` (with the signal that
   * cuts the exchange off) and `failed` is called.
   */
  #request(
    method: 'GET' | 'POST',
    request: OutboundRequest,
    body: string | undefined,
    answered: (res: IncomingMessage, signal: AbortSignal) => void,
    failed: (err: Error) => void,
  ): void {
    let url: URL;
    try {
      // Checked when it was configured; checked again since a stored value predates the rule.
      url = checkOutboundUrl('url', request.url);
    } catch (err) {
      failed(new TargetRefusedError(err instanceof Error ? err.message : String(err)));
      return;
    }
    const host = bareAddress(url.hostname);
    const why = isIP(host) !== 0 ? this.#policy.refusal(request.environment, host) : undefined;
    if (why !== undefined) {
      failed(new TargetRefusedError(`${url.hostname} is ${why}`));
      return;
    }
    const agents = this.#agents[request.environment];
    const timeout = AbortSignal.timeout(request.timeoutMs);
    const signal = request.signal === undefined ? timeout : AbortSignal.any([request.signal, timeout]);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const options = { method, agent: url.protocol === 'https:' ? agents.https : agents.http, lookup: agents.lookup, signal, headers: request.headers };
    const attempt = (mayRetry: boolean): void => {
      let done = false;
      const req = send(url, options, (res) => {
        done = true;
        answered(res, signal);
      });
      req.on('error', (err) => {
        if (done) return;
        done = true;
        // A kept-alive socket the other side closed as this request went out on it: nothing
        // was answered, so the request goes once more, on a new connection, within the same
        // time limit (Node's documented pattern, request.reusedSocket).
        if (mayRetry && req.reusedSocket && isReset(err) && !signal.aborted) attempt(false);
        else failed(signal.aborted && !(err instanceof TargetRefusedError) ? asError(signal.reason) : err);
      });
      req.end(body);
    };
    attempt(true);
  }

  /**
   * net's `lookup` hook for one environment kind: resolves through the policy, which
   * refuses the name unless every address is allowed, so no socket is opened to a refused
   * one. With `all` (happy eyeballs, node's default) net may try each address it is given.
   */
  #lookup(environment: Environment): LookupFunction {
    return (hostname, options, callback) => {
      this.#policy.resolve(environment, hostname).then(
        (found) => {
          const wanted = options.family === 4 || options.family === 6 ? found.filter((a) => a.family === options.family) : found;
          const first = wanted[0];
          if (first === undefined) {
            callback(Object.assign(new Error(`${hostname} has no IPv${String(options.family)} address`), { code: 'ENOTFOUND' }), '');
          } else if (options.all === true) {
            callback(null, wanted);
          } else {
            callback(null, first.address, first.family);
          }
        },
        (err: unknown) => callback(asError(err), ''),
      );
    };
  }
}

function isReset(err: Error): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}

function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason));
}

/**
 * Reads and drops the answer, at most MAX_ANSWER_BYTES (so a kept-alive connection can be
 * reused), then settles with its status; an answer cut short settles with 0.
 */
function drain(res: IncomingMessage, settle: (statusCode: number) => void): void {
  const statusCode = res.statusCode ?? 0;
  let read = 0;
  res.on('data', (chunk: Buffer) => {
    read += chunk.byteLength;
    if (read > MAX_ANSWER_BYTES) {
      settle(statusCode);
      res.destroy();
    }
  });
  res.on('end', () => settle(statusCode));
  res.on('error', () => settle(0));
  res.on('close', () => settle(0));
}

/** Reads the whole answer; one larger than `maxBytes`, or cut short (by the signal: its reason), is an error. */
function readBounded(
  res: IncomingMessage,
  limits: { maxBytes: number; signal: AbortSignal },
  resolve: (document: FetchedDocument) => void,
  reject: (err: Error) => void,
): void {
  const { maxBytes, signal } = limits;
  const chunks: Buffer[] = [];
  let read = 0;
  let settled = false;
  const fail = (err: Error): void => {
    if (settled) return;
    settled = true;
    reject(signal.aborted ? asError(signal.reason) : err);
  };
  res.on('data', (chunk: Buffer) => {
    read += chunk.byteLength;
    if (read > maxBytes) {
      fail(new Error(`the answer is larger than ${maxBytes} bytes`));
      res.destroy();
    } else {
      chunks.push(chunk);
    }
  });
  res.on('end', () => {
    if (settled) return;
    settled = true;
    resolve({ statusCode: res.statusCode ?? 0, body: Buffer.concat(chunks) });
  });
  res.on('error', fail);
  res.on('close', () => fail(new Error('the answer was cut short')));
}
