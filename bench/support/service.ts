// The service as a child process of a bench: started on a free port over a data directory,
// its output kept (the last lines, for a failure) and handed line by line to a listener with
// the time it arrived, so a bench can line up the service's report lines (`snapshot at ...`,
// `recovery: ...`) with what its load generators measured.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { freePort, spawnTracked, stop, waitForHttp } from './children.js';
import { runScenario, type ScenarioResult } from './load.js';
import type { RequestTemplate } from './load-protocol.js';
import { SERVICE_BUNDLE } from '../../src/built-layout.js';

export const API = '/2025-10-13';
/** Output lines kept for the failure message. */
const KEPT_LINES = 200;
/** A line longer than this is cut (the service's lines are far shorter; a stack trace is several lines). */
const MAX_LINE_CHARS = 64 * 1024;

/** The report's text of a service output line: the service logs JSON lines (pino) with it in `msg`. */
export function messageOf(line: string): string {
  if (!line.startsWith('{')) return line;
  try {
    const parsed: unknown = JSON.parse(line);
    return typeof parsed === 'object' && parsed !== null && 'msg' in parsed && typeof parsed.msg === 'string' ? parsed.msg : line;
  } catch {
    return line;
  }
}

/** A server child of a bench (the service, or the bare reply server). */
export interface ServerChild {
  name: string;
  child: ChildProcess;
  port: number;
  /** The last KEPT_LINES lines of stdout and stderr. */
  output: string[];
}

export interface ServiceChild extends ServerChild {
  dataDir: string;
}

export interface ServiceStart {
  dataDir: string;
  /** Node flags before the script, e.g. --max-old-space-size=8192 or --cpu-prof. */
  nodeOptions?: readonly string[];
  /** Added to the environment (SNAPSHOT_EVERY_ENTRIES, ...). */
  env?: Readonly<Record<string, string>>;
  /** How long to wait for /healthz (recovering a large store takes a while). Default 30 s. */
  readyTimeoutMs?: number;
  /** Every output line, with when it arrived (ms since the epoch, performance.timeOrigin based). */
  onLine?: (line: string, atEpochMs: number) => void;
  /** Called once the child is spawned, before it is ready, so a failed start still shows its output. */
  spawned?: (service: ServiceChild) => void;
}

/** What /healthz reports (src/app.ts); memory and store are absent from services older than these benches. */
export interface Health {
  lastSeq: number;
  durableSeq: number;
  /** The webhook backlog's drops since the service started (its trimmer's own log entries among them). */
  webhooks?: { dropped: { events: number; entries: number } };
  memory?: { rss: number; heapUsed: number; heapTotal: number; external: number; arrayBuffers: number };
  store?: { dataFileBytes: number; allocatedBytes: number };
}

export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

function lines(stream: Readable | null, sink: (line: string) => void): void {
  let partial = '';
  stream?.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString('utf8')).split('\n');
    partial = (parts.pop() ?? '').slice(0, MAX_LINE_CHARS);
    for (const line of parts) if (line !== '') sink(line);
  });
  stream?.on('end', () => {
    if (partial !== '') sink(partial);
    partial = '';
  });
}

/**
 * Keeps the child's last KEPT_LINES output lines in `output` and hands each line to `onLine`
 * with its arrival time.
 */
export function keepOutput(child: ChildProcess, output: string[], onLine?: (line: string, atEpochMs: number) => void): void {
  const sink = (line: string): void => {
    output.push(line);
    if (output.length > KEPT_LINES) output.shift();
    onLine?.(line, epochNow());
  };
  lines(child.stdout, sink);
  lines(child.stderr, sink);
}

export async function startServiceChild(opts: ServiceStart): Promise<ServiceChild> {
  if (!existsSync(SERVICE_BUNDLE)) throw new Error(`${SERVICE_BUNDLE} is missing: run npm run build first`);
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, ...opts.env, HOST: '127.0.0.1', PORT: String(port), DATA_DIR: opts.dataDir };
  delete env.MASTER_KEY;
  const child = spawnTracked(process.execPath, [...(opts.nodeOptions ?? []), SERVICE_BUNDLE], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  keepOutput(child, output, opts.onLine);
  const service: ServiceChild = { name: 'service', child, port, dataDir: opts.dataDir, output };
  opts.spawned?.(service);
  await waitForHttp(`http://127.0.0.1:${port}/healthz`, child, opts.readyTimeoutMs);
  return service;
}

/** The header that shows /healthz's details: the data directory's operator key (without it /healthz says only up). */
export function operatorAuthorization(dataDir: string): string {
  return `Bearer ${readFileSync(join(dataDir, 'operator.key'), 'utf8').trim()}`;
}

export async function health(service: Pick<ServiceChild, 'port' | 'dataDir'>): Promise<Health> {
  const res = await fetch(`http://127.0.0.1:${service.port}/healthz`, { headers: { authorization: operatorAuthorization(service.dataDir) } });
  if (res.status !== 200) throw new Error(`/healthz answered ${res.status}`);
  return (await res.json()) as Health;
}

/**
 * /healthz once the service has settled after a run: its log durable, and the same last
 * sequence twice in a row 50 ms apart (a webhook drop the trimmer was making is counted),
 * or as it is after 2 s.
 */
export async function settledHealth(service: Pick<ServiceChild, 'port' | 'dataDir'>): Promise<Health> {
  let last = await health(service);
  for (let waited = 0; waited < 2_000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const now = await health(service);
    if (now.durableSeq === now.lastSeq && now.lastSeq === last.lastSeq) return now;
    last = now;
  }
  return last;
}

/** The Basic authorization of an API token. */
export function basicAuthorization(token: { tokenId: string; clientSecret: string }): string {
  return `Basic ${Buffer.from(`${token.tokenId}:${token.clientSecret}`).toString('base64')}`;
}

/** The Basic authorization of the sandbox token the service wrote into its data directory. */
export function sandboxAuthorization(dataDir: string): string {
  const credentials = JSON.parse(readFileSync(join(dataDir, 'credentials.json'), 'utf8')) as {
    sandbox: { tokenId: string; clientSecret: string };
  };
  return basicAuthorization(credentials.sandbox);
}

/** POST /customers as the load generators send it (one durable log entry each). */
export function createCustomerRequest(authorization: string): RequestTemplate {
  return {
    method: 'POST',
    path: `${API}/customers`,
    headers: { Authorization: authorization, 'Content-Type': 'application/json' },
    body: '{"customerType":"INDIVIDUAL"}',
  };
}

/** Longest a count-limited load run may take (it ends when its last request is answered). */
const LOAD_CAP_MS = 2 * 60 * 60 * 1000;

export interface LoadShape {
  connections: number;
  processes: number;
}

/**
 * Creates `count` customers through the raw keep-alive generators, as fast as the service
 * answers (closed loop). The result's window is the whole run; its statuses say how many
 * were created (201).
 */
export function createCustomers(service: ServiceChild, authorization: string, count: number, shape: LoadShape, name = 'create customers'): Promise<ScenarioResult> {
  return runScenario({
    name,
    processes: shape.processes,
    serverPid: service.child.pid,
    spec: {
      host: '127.0.0.1',
      port: service.port,
      connections: Math.min(shape.connections, count),
      warmupMs: 0,
      durationMs: LOAD_CAP_MS,
      drainMs: 10_000,
      requests: [createCustomerRequest(authorization)],
      collectIds: 0,
      client: 'raw',
      limit: count,
    },
  });
}

/** What went wrong in a load run (non-2xx, socket errors, requests left unanswered), one line each. */
export function loadFailures(r: ScenarioResult): string[] {
  const out: string[] = [];
  if (r.non2xx > 0) {
    const bad = Object.entries(r.statuses).filter(([s]) => !s.startsWith('2'));
    out.push(`${r.name}: ${r.non2xx} non-2xx responses (${bad.map(([s, n]) => `${s}×${n}`).join(', ')})`);
  }
  if (r.errors > 0) out.push(`${r.name}: ${r.errors} connection errors (${r.errorSamples.join('; ')})`);
  if (r.unanswered > 0) out.push(`${r.name}: ${r.unanswered} requests still unanswered after the drain`);
  if (r.completed === 0) out.push(`${r.name}: no request completed in the window`);
  return out;
}

/** The last lines of a child's output, for an error report. */
export function lastOutput(server: ServerChild, count = 30): string {
  return `--- last output of the ${server.name} server ---\n${server.output.slice(-count).join('\n')}\n`;
}

/** Writes each server's last output (those that printed anything) for the report of an error that ends the bench. */
export function showLastOutput(...servers: ReadonlyArray<ServerChild | undefined>): void {
  for (const server of servers) {
    if (server !== undefined && server.output.length > 0) process.stderr.write(lastOutput(server));
  }
}

/**
 * Stops a server at the end of a bench, however the run ended: SIGTERM, SIGKILL after
 * `graceMs`; an exit other than 0 (a shutdown that hung or crashed) is one of the run's failures.
 */
export async function stopCleanly(server: ServerChild | undefined, failures: string[], graceMs: number): Promise<void> {
  if (server === undefined) return;
  const how = await stop(server.child, 'SIGTERM', graceMs);
  if (how !== 0) failures.push(`the ${server.name} server did not exit cleanly on SIGTERM (${how})`);
}

/** Each bench quote delivers this many cents (locked on the receiving side, so the receiver gets exactly it). */
export const QUOTE_CENTS = 100;
/** A paying account's funds: far more than any run can spend at QUOTE_CENTS plus fees a quote. */
export const SENDER_FUNDS = 100_000_000_000;

/** One setup call to the service (outside any measured window); anything but 2xx aborts the bench. */
export async function api(port: number, authorization: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`http://127.0.0.1:${port}${API}${path}`, {
    method,
    headers: { Authorization: authorization, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`setup ${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

/** A new customer's USD internal account, funded with `amount` cents through the sandbox. */
export async function usdAccount(port: number, authorization: string, amount: number): Promise<string> {
  const customer = (await api(port, authorization, 'POST', '/customers', { customerType: 'INDIVIDUAL' })) as { id: string };
  const accounts = (await api(port, authorization, 'GET', `/customers/internal-accounts?customerId=${encodeURIComponent(customer.id)}&limit=100`)) as {
    data: Array<{ id: string; balance: { currency: { code: string } } }>;
  };
  const usd = accounts.data.find((a) => a.balance.currency.code === 'USD');
  if (usd === undefined) throw new Error(`customer ${customer.id} has no USD account`);
  if (amount > 0) await api(port, authorization, 'POST', `/sandbox/internal-accounts/${usd.id}/fund`, { amount });
  return usd.id;
}

export function quoteRequest(authorization: string, from: string, to: string): RequestTemplate {
  return {
    method: 'POST',
    path: `${API}/quotes`,
    headers: { Authorization: authorization, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      source: { sourceType: 'ACCOUNT', accountId: from },
      destination: { destinationType: 'ACCOUNT', accountId: to },
      lockedCurrencySide: 'RECEIVING',
      lockedCurrencyAmount: QUOTE_CENTS,
      immediatelyExecute: true,
    }),
  };
}
