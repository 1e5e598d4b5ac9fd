// Test harness: the real service in-process, on an OS-chosen port, with a fresh data
// directory (and optionally a manual clock), plus a small HTTP client that speaks its
// Basic authentication. Tests talk HTTP to it exactly as an integrator would.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService, type RunningService, type ServiceOptions } from '../../src/app.js';
import type { PlatformCredentials } from '../../src/platforms.js';

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
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<Response<T>>;
  basic(environment: 'sandbox' | 'production'): string;
  /** Closes the service (final commit) and, unless kept, removes the data directory. */
  stop(options?: { keepData?: boolean }): Promise<void>;
}

export function basicHeader(tokenId: string, secret: string): string {
  return `Basic ${Buffer.from(`${tokenId}:${secret}`).toString('base64')}`;
}

export async function startTestService(options: ServiceOptions & { dataDir?: string } = {}): Promise<TestService> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'svc-test-'));
  const lines: string[] = [];
  const service = await startService({ port: 0, report: (line) => lines.push(line), ...options, dataDir, env: {} });
  const credentials = JSON.parse(readFileSync(service.credentialsPath, 'utf8')) as PlatformCredentials;
  const basic = (environment: 'sandbox' | 'production'): string =>
    basicHeader(credentials[environment].tokenId, credentials[environment].clientSecret);
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
    const res = await fetch(url, { method, headers, body: typeof body === "string" || body === undefined ? body : Buffer.from(body) });
    const text = await res.text();
    let parsed: unknown = undefined;
    if (text !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  };
  return {
    service,
    dataDir,
    credentials,
    baseUrl: service.baseUrl,
    reportLines: lines,
    request,
    basic,
    stop: async ({ keepData = false } = {}) => {
      await service.close();
      if (!keepData) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
