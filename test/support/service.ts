// Test harness: the real service in-process, on an OS-chosen port, with a fresh data
// directory (and optionally a manual clock), plus a small HTTP client that speaks its
// Basic authentication. Tests talk HTTP to it exactly as an integrator would.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import assert from 'node:assert/strict';
import { startService, type RunningService } from '../../src/app.js';
import type { ServiceOptions } from '../../src/config.js';
import type { PlatformCredentials } from '../../src/platforms.js';
import { OPERATOR_KEY_FILE } from '../../src/data-dir.js';
import type { Resolver } from '../../src/outbound/target-policy.js';
import { schemaErrors, type JsonSchema } from './json-schema.js';
import { delegatingTo, forSuite } from './for-suite.js';

const API_PREFIX = '/2025-10-13';

export interface Response<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as-is instead of JSON.stringify(body). */
  raw?: string | Uint8Array;
  headers?: Record<string, string>;
  /** Authorization: 'sandbox' (default), 'production', 'none', or a header value. */
  auth?: 'sandbox' | 'production' | 'none' | { header: string };
}

export interface TestService {
  service: RunningService;
  dataDir: string;
  credentials: PlatformCredentials;
  baseUrl: string;
  /** Every line the service reported (its log), in order. */
  reportLines: readonly string[];
  /** `METHOD /template` of every route that has answered a success conforming to the published schema. */
  conformed: ReadonlySet<string>;
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<Response<T>>;
  basic(environment: 'sandbox' | 'production'): string;
  /** The operator key as a request's `auth` (what /healthz details and /_operator/ need). */
  operator(): { header: string };
  /** Closes the service (final commit) and, unless kept, removes the data directory. */
  stop(options?: { keepData?: boolean }): Promise<void>;
}

interface OpenApi {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema?: JsonSchema }> }> }>>;
}

/**
 * The document's path template a request path falls under, matched as the router does:
 * segment by segment, `{param}` matching any segment, the most literal template winning.
 */
function templateOf(doc: OpenApi, pathname: string): string | undefined {
  let parts: string[];
  try {
    parts = pathname.split('/').filter((p) => p !== '').map((p) => decodeURIComponent(p));
  } catch {
    return undefined; // broken percent-encoding reaches no route
  }
  let best: { template: string; literals: number } | undefined;
  for (const template of Object.keys(doc.paths)) {
    const segments = template.split('/').filter((p) => p !== '');
    if (segments.length !== parts.length) continue;
    let literals = 0;
    const matches = segments.every((segment, i) => {
      if (segment.startsWith('{')) return true;
      literals++;
      return segment === parts[i];
    });
    if (matches && (best === undefined || literals > best.literals)) best = { template, literals };
  }
  return best?.template;
}

export function basicHeader(tokenId: string, secret: string): string {
  return `Basic ${Buffer.from(`${tokenId}:${secret}`).toString('base64')}`;
}

/**
 * The suites' default DNS for outbound hosts (webhooks, key sets): `localhost` is
 * 127.0.0.1 (as /etc/hosts has it) and every other name does not resolve, so no suite
 * sends a DNS query off the machine (the names they configure, *.example.com, do not
 * resolve there either). A suite that needs more passes its own `outboundResolver`.
 */
export const localOnlyResolver: Resolver = async (hostname) => {
  if (hostname.toLowerCase() === 'localhost') return [{ address: '127.0.0.1', family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
};

export type TestServiceOptions = ServiceOptions & { dataDir?: string };

export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'svc-test-'));
  const lines: string[] = [];
  const service = await startService({ port: 0, report: (line) => lines.push(line), outboundResolver: localOnlyResolver, ...options, dataDir, env: options.env ?? {} });
  const credentials = JSON.parse(readFileSync(service.credentialsPath, 'utf8')) as PlatformCredentials;
  const basic = (environment: 'sandbox' | 'production'): string =>
    basicHeader(credentials[environment].tokenId, credentials[environment].clientSecret);
  const conformed = new Set<string>();
  let published: Promise<OpenApi> | undefined;
  // Every response `request` sees is held to the schema GET /openapi.json publishes for
  // its method, path template and status (errors to the default one), so every suite is
  // a conformance check.
  const conform = async (method: string, path: string, status: number, body: unknown): Promise<void> => {
    const pathname = path.split('?', 1)[0]!;
    if (method === 'HEAD' || pathname === '/healthz' || !pathname.startsWith(`${API_PREFIX}/`) || pathname === `${API_PREFIX}/openapi.json`) return;
    published ??= fetch(`http://127.0.0.1:${service.http.port}${API_PREFIX}/openapi.json`).then((r) => r.json() as Promise<OpenApi>);
    const doc = await published;
    const template = templateOf(doc, pathname);
    const operation = template === undefined ? undefined : doc.paths[template]?.[method.toLowerCase()];
    const where = `${method} ${template ?? pathname} answered ${status}`;
    const success = status >= 200 && status < 300;
    // Errors are checked where the request reached a published operation (a 404 for a
    // path nobody publishes has none to check against).
    if (operation === undefined && !success) return;
    if (operation === undefined) throw new assert.AssertionError({ message: `${where}, but the OpenAPI document publishes no such operation` });
    const response = operation.responses[String(status)] ?? (success ? undefined : operation.responses.default);
    if (status === 204) {
      if (response === undefined || response.content !== undefined) throw new assert.AssertionError({ message: `${where}, but the document publishes no bodiless 204` });
      if (body !== undefined) throw new assert.AssertionError({ message: `${where} with a body` });
      conformed.add(`${method} ${template!.slice(API_PREFIX.length)}`);
      return;
    }
    const schema = response?.content?.['application/json']?.schema;
    if (schema === undefined) throw new assert.AssertionError({ message: `${where}, but the document publishes no JSON schema for ${status}` });
    const errors = schemaErrors(schema, body, doc);
    if (errors.length > 0) throw new assert.AssertionError({ message: `${where} with a body that does not conform to the published schema:\n${errors.slice(0, 10).join('\n')}` });
    if (success) conformed.add(`${method} ${template!.slice(API_PREFIX.length)}`);
  };
  const request = async <T>(method: string, path: string, opts: RequestOptions = {}): Promise<Response<T>> => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    const auth = opts.auth ?? 'sandbox';
    if (auth === 'sandbox' || auth === 'production') headers.authorization = basic(auth);
    else if (auth !== 'none') headers.authorization = auth.header;
    let body: string | Uint8Array | undefined;
    if (opts.raw !== undefined) body = opts.raw;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const url = path.startsWith('/2') || path.startsWith('/healthz') ? `http://127.0.0.1:${service.http.port}${path}` : `${service.baseUrl}${path}`;
    const res = await fetch(url, { method, headers, body: typeof body === 'string' || body === undefined ? body : Buffer.from(body) });
    const text = await res.text();
    let parsed: unknown = undefined;
    if (text !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    await conform(method, new URL(url).pathname, res.status, parsed);
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  };
  return {
    service,
    dataDir,
    credentials,
    baseUrl: service.baseUrl,
    reportLines: lines,
    conformed,
    request,
    basic,
    operator: () => ({ header: `Bearer ${readFileSync(join(dataDir, OPERATOR_KEY_FILE), 'utf8').trim()}` }),
    stop: async ({ keepData = false } = {}) => {
      await service.close();
      if (!keepData) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The service of one test file or describe block: started with `options` before its tests,
 * stopped (its data directory removed) after them. What it returns is the TestService of
 * those tests, each member reaching the started service, so it is read inside hooks and
 * tests, not while the suite is declared. A suite that stops its service itself (to keep
 * its data, to restart it) starts its own with startTestService.
 */
export function serviceForSuite(options: TestServiceOptions = {}): TestService {
  return delegatingTo(forSuite("the suite's service", () => startTestService(options), (svc) => svc.stop()));
}

export interface RawResponse {
  status: number;
  /** Header names lower-case. */
  headers: Record<string, string>;
  body: string;
}

/**
 * Writes `payload` (one or more HTTP/1.1 requests) on one connection and reads one
 * response per entry of `expect`, for what fetch will not send (non-ASCII header bytes,
 * pipelined keep-alive requests). A response to HEAD has no body whatever its
 * Content-Length says, so `head` tells the reader not to wait for one.
 */
export function rawExchange(port: number, payload: string | Buffer, expect: ReadonlyArray<{ head?: boolean }>): Promise<RawResponse[]> {
  return new Promise((resolve, reject) => {
    const responses: RawResponse[] = [];
    let buffered = Buffer.alloc(0);
    const sock = net.connect(port, '127.0.0.1', () => sock.write(payload));
    const parse = (): void => {
      while (responses.length < expect.length) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const lines = buffered.subarray(0, end).toString('latin1').split('\r\n');
        const status = Number(lines[0]!.split(' ')[1]);
        const headers: Record<string, string> = {};
        for (const line of lines.slice(1)) {
          const colon = line.indexOf(':');
          headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
        }
        const length = expect[responses.length]!.head === true ? 0 : Number(headers['content-length'] ?? 0);
        if (buffered.length < end + 4 + length) return;
        responses.push({ status, headers, body: buffered.subarray(end + 4, end + 4 + length).toString('utf8') });
        buffered = buffered.subarray(end + 4 + length);
      }
      sock.destroy();
      resolve(responses);
    };
    sock.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      parse();
    });
    sock.on('error', reject);
    sock.on('close', () => {
      if (responses.length < expect.length) reject(new Error(`connection closed after ${responses.length} of ${expect.length} responses; unread: ${buffered.toString('latin1')}`));
    });
  });
}

/** The 200 answers to GETs of `paths`, by path: what a client reading the service sees. */
export async function answersTo(svc: TestService, paths: readonly string[]): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const path of paths) {
    const res = await svc.request('GET', path);
    assert.equal(res.status, 200, `${path}: ${res.text}`);
    out[path] = res.body;
  }
  return out;
}
