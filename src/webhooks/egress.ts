// The one way a webhook leaves the service: a POST over node:http(s) whose connection goes
// only where the target policy (target-policy.ts) allows, checked against the address the
// socket actually connects to. A host name is resolved by the request's `lookup`, which
// refuses before the socket connects; an IP-literal host never reaches a lookup (net
// connects to it directly), so the literal is checked before the request is made.
// Redirects are not followed: a 3xx is an answer like any other non-2xx.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { checkWebhookUrl, type Environment } from '../../actors/platform.js';
import { bareAddress, TargetRefusedError, type TargetPolicy } from './target-policy.js';

/** An endpoint's answer body is read (and dropped) up to this many bytes. */
export const MAX_ANSWER_BYTES = 64 * 1024;
/** How long an idle kept-alive connection stays open (as node's global agent). */
const IDLE_SOCKET_MS = 5_000;

export interface EgressRequest {
  environment: Environment;
  url: string;
  body: string;
  headers: Readonly<Record<string, string>>;
  /** The whole exchange, lookup and answer included, is cut off after this long. */
  timeoutMs: number;
  signal?: AbortSignal;
}

/** statusCode 0 when no answer came; `refused` says why when the policy stopped it before connecting. */
export interface EgressOutcome {
  statusCode: number;
  ms: number;
  refused?: string;
}

interface Agents {
  http: HttpAgent;
  https: HttpsAgent;
  lookup: LookupFunction;
}

/** Where a webhook goes out: the network (WebhookEgress), or a simulation's platform endpoint. */
export interface Egress {
  /** POSTs the request; never throws (no answer is statusCode 0). */
  post(request: EgressRequest): Promise<EgressOutcome>;
}

export class WebhookEgress implements Egress {
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
    let url: URL;
    try {
      // Checked when it was configured; checked again since a stored value predates the rule.
      url = checkWebhookUrl('url', request.url);
    } catch (err) {
      return Promise.resolve(outcome(0, err instanceof Error ? err.message : String(err)));
    }
    const host = bareAddress(url.hostname);
    if (isIP(host) !== 0) {
      const why = this.#policy.refusal(request.environment, host);
      if (why !== undefined) return Promise.resolve(outcome(0, `${url.hostname} is ${why}`));
    }
    const agents = this.#agents[request.environment];
    const timeout = AbortSignal.timeout(request.timeoutMs);
    const signal = request.signal === undefined ? timeout : AbortSignal.any([request.signal, timeout]);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<EgressOutcome>((resolve) => {
      let settled = false;
      const settle = (statusCode: number, refused?: string): void => {
        if (settled) return;
        settled = true;
        resolve(outcome(statusCode, refused));
      };
      const req = send(
        url,
        {
          method: 'POST',
          agent: url.protocol === 'https:' ? agents.https : agents.http,
          lookup: agents.lookup,
          signal,
          headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
        },
        (res) => drain(res, settle),
      );
      // Refused, reset, past the timeout or aborted: no answer (and the policy's reason, if it refused).
      req.on('error', (err) => settle(0, err instanceof TargetRefusedError ? err.message : undefined));
      req.end(request.body);
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
        (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), ''),
      );
    };
  }
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
