// Signed quote execution under load (SERVICE_SPEC 5.6): POST /quotes/{id}/execute from
// EMBEDDED_WALLET sources, each request carrying a real Service-Wallet-Signature that the
// service verifies inside the execute decision, with stamp verification inline and on the
// crypto pool (CRYPTO_ROUTES), beside the bare uWebSockets.js server under the same load,
// and beside the ceiling of node:crypto itself: raw ECDSA P-256 verifies per second of
// this process on one core, measured in the same run.
//
//   npm run bench:signed-quotes                                # 1 s warmup + 5 s per scenario
//   npm run bench:signed-quotes -- --duration 2 --quotes 30000
//
// Setup, per service: --wallets embedded wallets (each a customer with an EMAIL_OTP
// credential, one session whose key is opened as a client would, and funds), then
// --quotes quotes round-robin over them, each paying the wallet's own USD account (so no
// two wallets share an actor), each stamped over its payloadToSign with the session key.
// The load generator sends the requests round robin and a quote executes once, so the
// quotes must outlast warmup + window: a 409 in the table means they ran out (raise --quotes).
import { mkdtempSync, readFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { ChildProcess } from 'node:child_process';
import { decryptCredentialBundle } from '@turnkey/crypto';
import { ApiKeyStamper } from '@turnkey/api-key-stamper';
import { utf8 } from '../src/crypto/bytes.js';
import { generateP256KeyPair, keyPairFromPrivateKey, keyPairToHex, verifyP256 } from '../src/crypto/p256.js';
import { parseStamp } from '../src/crypto/stamp.js';
import { freePort, removeOnExit, spawnTracked, stop, waitForHttp, runBench } from './support/children.js';
import { runScenario, type ScenarioResult } from './support/load.js';
import type { RequestTemplate } from './support/load-protocol.js';
import { fmtInt, fmtMs, fmtRatio, markdownTable } from './support/stats.js';

const API = '/2025-10-13';
/** Concurrent setup requests: enough to keep the service busy, few enough to stay polite. */
const SETUP_CONCURRENCY = 32;

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
    connections: { type: 'string', default: '64' },
    wallets: { type: 'string', default: '64' },
    quotes: { type: 'string', default: '40000' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});
if (flags.help === true) {
  console.log(`usage: node dist/bench/signed-quotes.js [--duration S] [--warmup S] [--connections N] [--wallets N] [--quotes N]
  quotes must cover every execute of warmup + window in each signed scenario (default 40000)`);
  process.exit(0);
}

function positive(name: string, raw: string, max: number): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0 || n > max) throw new Error(`--${name} must be a number in (0, ${max}], got ${raw}`);
  return n;
}
const durationMs = Math.round(positive('duration', flags.duration, 600) * 1000);
const warmupMs = Math.round(positive('warmup', flags.warmup, 60) * 1000);
const connections = Math.round(positive('connections', flags.connections, 1024));
const walletCount = Math.round(positive('wallets', flags.wallets, 10_000));
const quoteCount = Math.round(positive('quotes', flags.quotes, 1_000_000));

const MAIN = fileURLToPath(new URL('../src/main.js', import.meta.url));
const BARE = fileURLToPath(new URL('./support/bare-server.js', import.meta.url));

interface Server {
  child: ChildProcess;
  port: number;
  output: string[];
}

async function startServer(module: string, env: NodeJS.ProcessEnv): Promise<Server> {
  const port = await freePort();
  const child = spawnTracked(process.execPath, [module], { env: { ...process.env, ...env, HOST: '127.0.0.1', PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const add = (chunk: Buffer): void => {
    output.push(...chunk.toString('utf8').split('\n').filter((l) => l !== ''));
    // Only the tail matters (shown if the run fails).
    output.splice(0, Math.max(0, output.length - 50));
  };
  child.stdout?.on('data', add);
  child.stderr?.on('data', add);
  await waitForHttp(`http://127.0.0.1:${port}/healthz`, child);
  return { child, port, output };
}

/** A client of one service process: JSON requests with the sandbox credentials. */
function clientOf(port: number, authorization: string): (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<any> {
  return async (method, path, body, headers = {}) => {
    const res = await fetch(`http://127.0.0.1:${port}${API}${path}`, {
      method,
      headers: { Authorization: authorization, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`setup: ${method} ${path} answered ${res.status}: ${text.slice(0, 300)}`);
    return text === '' ? undefined : JSON.parse(text);
  };
}

/** Runs `task(i)` for i in [0, count), at most SETUP_CONCURRENCY at a time. */
async function inParallel<T>(count: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const out = new Array<T>(count);
  let next = 0;
  const lanes = Array.from({ length: Math.min(SETUP_CONCURRENCY, count) }, async () => {
    while (next < count) {
      const i = next++;
      out[i] = await task(i);
    }
  });
  await Promise.all(lanes);
  return out;
}

interface BenchWallet {
  accountId: string;
  usdAccountId: string;
  stamper: ApiKeyStamper;
}

/** Wallets with a live session each, and `quoteCount` stamped execute requests over them. */
async function signedExecutes(port: number, dataDir: string): Promise<RequestTemplate[]> {
  const authorization = sandboxAuthorization(dataDir);
  const call = clientOf(port, authorization);
  const wallets = await inParallel(walletCount, async (i): Promise<BenchWallet> => {
    const customer = await call('POST', '/customers', { customerType: 'INDIVIDUAL', email: `bench-${i}@example.com` });
    const accounts = (await call('GET', `/internal-accounts?customerId=${customer.id}`)).data as Array<{ id: string; type: string; balance: { currency: { code: string } } }>;
    const wallet = accounts.find((a) => a.type === 'EMBEDDED_WALLET');
    const usd = accounts.find((a) => a.balance.currency.code === 'USD');
    if (wallet === undefined || usd === undefined) throw new Error(`setup: customer ${customer.id} lacks an embedded wallet or a USD account`);
    await call('POST', `/sandbox/internal-accounts/${wallet.id}/fund`, { amount: 1_000_000_000_000 });
    const credential = await call('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: wallet.id });
    const client = keyPairToHex(generateP256KeyPair());
    const session = await call('POST', `/auth/credentials/${credential.id}/verify`, { otp: '000000', clientPublicKey: client.publicKey });
    const key = keyPairToHex(keyPairFromPrivateKey(Buffer.from(decryptCredentialBundle(session.encryptedSessionSigningKey, client.privateKey), 'hex')));
    return { accountId: wallet.id, usdAccountId: usd.id, stamper: new ApiKeyStamper({ apiPublicKey: key.publicKeyCompressed, apiPrivateKey: key.privateKey }) };
  });
  return inParallel(quoteCount, async (i): Promise<RequestTemplate> => {
    const w = wallets[i % wallets.length]!;
    const quote = await call('POST', '/quotes', {
      source: { sourceType: 'ACCOUNT', accountId: w.accountId },
      destination: { destinationType: 'ACCOUNT', accountId: w.usdAccountId },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 10_000_000,
    });
    const payload: string = quote.paymentInstructions[0].accountOrWalletInfo.payloadToSign;
    const stamp = (await w.stamper.stamp(payload)).stampHeaderValue;
    return { method: 'POST', path: `${API}/quotes/${quote.id}/execute`, headers: { Authorization: authorization, 'Service-Wallet-Signature': stamp } };
  });
}

/** The sandbox token the service wrote on its first start. */
function sandboxAuthorization(dataDir: string): string {
  const credentials = JSON.parse(readFileSync(join(dataDir, 'credentials.json'), 'utf8')) as { sandbox: { tokenId: string; clientSecret: string } };
  return `Basic ${Buffer.from(`${credentials.sandbox.tokenId}:${credentials.sandbox.clientSecret}`).toString('base64')}`;
}

/**
 * The ceiling: raw node:crypto verifies of one stamp-sized payload per second on this
 * process's single thread (no parsing, no HTTP, no engine), for `ms`.
 */
async function rawVerifyCeiling(ms: number): Promise<number> {
  const key = keyPairToHex(generateP256KeyPair());
  const payload = JSON.stringify({ action: 'EXECUTE_QUOTE', accountId: 'InternalAccount:019a0000-0000-7000-8000-000000000000', quoteId: 'Quote:019a0000-0000-7000-8000-000000000001', totalSendingAmount: 100 });
  const parsed = parseStamp((await new ApiKeyStamper({ apiPublicKey: key.publicKeyCompressed, apiPrivateKey: key.privateKey }).stamp(payload)).stampHeaderValue);
  if (!parsed.ok) throw new Error('ceiling: the stamp does not parse');
  const message = utf8.encode(payload);
  const publicKey = Buffer.from(key.publicKeyCompressed, 'hex');
  let done = 0;
  const start = performance.now();
  while (performance.now() - start < ms) {
    for (let i = 0; i < 100; i++) if (!verifyP256(message, parsed.stamp.signature, publicKey)) throw new Error('ceiling: a good signature did not verify');
    done += 100;
  }
  return done / ((performance.now() - start) / 1000);
}

function failuresOf(r: ScenarioResult): string[] {
  const out: string[] = [];
  if (r.non2xx > 0) out.push(`${r.name}: non-2xx ${Object.entries(r.statuses).filter(([s]) => !s.startsWith('2')).map(([s, n]) => `${s}×${n}`).join(', ')}${r.statuses['409'] !== undefined ? ' (409: the quotes ran out, raise --quotes)' : ''}`);
  if (r.errors > 0) out.push(`${r.name}: ${r.errors} connection errors (${r.errorSamples.join('; ')})`);
  if (r.unanswered > 0) out.push(`${r.name}: ${r.unanswered} requests unanswered after the drain`);
  if (r.completed === 0) out.push(`${r.name}: no request completed in the window`);
  return out;
}

async function main(): Promise<string[]> {
  const base = { host: '127.0.0.1', connections, warmupMs, durationMs, drainMs: 10_000, client: 'raw' as const, collectIds: 0 };
  const results: ScenarioResult[] = [];
  const failures: string[] = [];
  console.log(
    `# Signed quote execution: Node ${process.version}, ${cpus()[0]?.model ?? 'unknown CPU'}, ${availableParallelism()} cores; ` +
      `${connections} connections, ${warmupMs / 1000} s warmup + ${durationMs / 1000} s per scenario; ${walletCount} wallets, ${quoteCount} quotes per service\n`,
  );

  const bare = await startServer(BARE, {});
  try {
    process.stderr.write('running bare-post ...\n');
    const r = await runScenario({
      name: 'bare-post',
      processes: 1,
      serverPid: bare.child.pid,
      spec: { ...base, port: bare.port, requests: [{ method: 'POST', path: `${API}/quotes/x/execute`, headers: { 'Content-Type': 'application/json' }, body: '{}' }] },
    });
    results.push(r);
    failures.push(...failuresOf(r));
  } finally {
    await stop(bare.child, 'SIGTERM', 15_000);
  }

  for (const route of ['inline', 'pool'] as const) {
    const name = `signed-execute-${route}`;
    const dataDir = mkdtempSync(join(tmpdir(), 'bench-signed-'));
    removeOnExit(dataDir);
    const env: NodeJS.ProcessEnv = { DATA_DIR: dataDir, CRYPTO_ROUTES: `verifyStamp=${route}` };
    const service = await startServer(MAIN, env);
    try {
      process.stderr.write(`${name}: setting up ${walletCount} wallets and ${quoteCount} signed quotes ...\n`);
      const t0 = performance.now();
      const requests = await signedExecutes(service.port, dataDir);
      process.stderr.write(`${name}: setup took ${((performance.now() - t0) / 1000).toFixed(1)} s; running ...\n`);
      const r = await runScenario({ name, processes: 1, serverPid: service.child.pid, spec: { ...base, port: service.port, requests } });
      results.push(r);
      failures.push(...failuresOf(r));
    } catch (err) {
      process.stderr.write(`--- last output of the service ---\n${service.output.join('\n')}\n`);
      throw err;
    } finally {
      const how = await stop(service.child, 'SIGTERM', 15_000);
      if (how !== 0) failures.push(`${name}: the service did not exit cleanly on SIGTERM (${how})`);
    }
  }

  process.stderr.write('measuring the raw node:crypto verify ceiling ...\n');
  const ceiling = await rawVerifyCeiling(durationMs);

  console.log(
    markdownTable(
      ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'non-2xx/err', 'server CPU', 'server JS thread', 'server CPU µs/req'],
      results.map((r) => [
        r.name,
        fmtInt(r.requestsPerSecond),
        fmtMs(r.p50),
        fmtMs(r.p99),
        fmtMs(r.max),
        fmtInt(r.non2xx + r.errors + r.unanswered),
        r.serverCores === undefined ? 'n/a' : `${(r.serverCores * 100).toFixed(0)}%`,
        r.serverMainCores === undefined ? 'n/a' : `${(r.serverMainCores * 100).toFixed(0)}%`,
        r.serverCpuUsPerRequest === undefined ? 'n/a' : r.serverCpuUsPerRequest.toFixed(0),
      ]),
      [false, true, true, true, true, true, true, true, true],
    ),
  );
  console.log('');
  console.log(`- raw node:crypto ECDSA P-256 verify, one thread: ${fmtInt(ceiling)}/s (${(1e6 / ceiling).toFixed(1)} µs each)`);
  const bareRate = results.find((r) => r.name === 'bare-post')?.requestsPerSecond;
  for (const r of results.filter((x) => x.name !== 'bare-post')) {
    console.log(
      `- ${r.name}: ${fmtRatio(r.requestsPerSecond / ceiling)} of the one-thread verify ceiling` +
        (bareRate === undefined ? '' : `, ${fmtRatio(r.requestsPerSecond / bareRate)} of bare-post`),
    );
  }
  return failures;
}

runBench('signed-quotes', main);
