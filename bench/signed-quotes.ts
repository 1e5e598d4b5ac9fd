// Signed quote execution under load (SERVICE_SPEC 5.6): POST /quotes/{id}/execute from
// EMBEDDED_WALLET sources, each request carrying a real Service-Wallet-Signature that the
// service verifies inside the execute decision, with stamp verification inline and on the
// crypto pool (CRYPTO_ROUTES), each against the bare uWebSockets.js server and against the
// one-thread verify ceiling, all measured in the same run.
//
//   npm run bench:signed-quotes                                   # 3 pairs of (1 s warmup + 2 s) per route
//   npm run bench:signed-quotes -- --pairs 5 --duration 5 --quotes 120000
//
// Setup, per service: --wallets embedded wallets (each a customer with an EMAIL_OTP
// credential, one session whose key is opened as a client would, and funds), then
// --quotes quotes round-robin over them, each paying the wallet's own USD account (so no
// two wallets share an actor), each stamped over its payloadToSign with the session key.
//
// Like with like: the quotes are split into --pairs slices. Pair k sends slice k to the bare
// server and to the service: the same requests (path, Authorization and stamp headers, no
// body; only the Host header's port differs), over the same --connections, each run 1 warmup
// + 1 window, the order inside a pair alternating (bare first, then service first), so drift
// on a shared machine falls on both sides. The ratio of a pair is service req/s / bare req/s;
// the bench reports each pair and the median. A quote executes once, so the service run sends
// each request of its slice once at most: a slice used up before the window's end cuts the
// window short (the table says so; raise --quotes).
//
// The verify ceiling is timed in each pair too, on this process's one thread, over the
// stamps and payloads of that pair's own requests: the whole verifyStamp the service runs
// inline (header parse, key check, ECDSA P-256 verify), and the bare ECDSA verify alone.
import { mkdtempSync, readFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { decryptCredentialBundle } from '@turnkey/crypto';
import { ApiKeyStamper } from '@turnkey/api-key-stamper';
import { utf8 } from '../src/crypto/bytes.js';
import { generateP256KeyPair, keyPairFromPrivateKey, keyPairToHex, verifyP256 } from '../src/crypto/p256.js';
import { parseStamp, verifyStamp } from '../src/crypto/stamp.js';
import { freePort, removeOnExit, spawnTracked, waitForHttp, runBench } from './support/children.js';
import { keepOutput, showLastOutput, stopCleanly, type ServerChild } from './support/service.js';
import { runScenario, type ScenarioResult } from './support/load.js';
import type { RequestTemplate } from './support/load-protocol.js';
import { fmtInt, fmtMs, fmtRatio, markdownTable, median } from './support/stats.js';
import { SERVICE_BUNDLE } from '../src/built-layout.js';

const API = '/2025-10-13';
/** Concurrent setup requests: enough to keep the service busy, few enough to stay polite. */
const SETUP_CONCURRENCY = 32;
/** How long each pair times the verify ceiling (each of its two forms). */
const CEILING_MS = 1000;

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '2' },
    warmup: { type: 'string', default: '1' },
    pairs: { type: 'string', default: '3' },
    connections: { type: 'string', default: '64' },
    wallets: { type: 'string', default: '64' },
    quotes: { type: 'string', default: '40000' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});
if (flags.help === true) {
  console.log(`usage: node dist/bench/signed-quotes.js [--duration S] [--warmup S] [--pairs N] [--connections N] [--wallets N] [--quotes N]
  --duration S     measured seconds of each run (default 2)
  --warmup S       unmeasured seconds before each run (default 1)
  --pairs N        bare/service pairs per route, alternating which goes first (default 3)
  --connections N  keep-alive connections, one request in flight each, for both servers (default 64)
  --wallets N      embedded wallets per service (default 64)
  --quotes N       signed quotes per service, split evenly over the pairs (default 40000):
                   a slice should cover every execute of one warmup + window`);
  process.exit(0);
}

function positive(name: string, raw: string, max: number): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0 || n > max) throw new Error(`--${name} must be a number in (0, ${max}], got ${raw}`);
  return n;
}
const durationMs = Math.round(positive('duration', flags.duration, 600) * 1000);
const warmupMs = Math.round(positive('warmup', flags.warmup, 60) * 1000);
const pairCount = Math.round(positive('pairs', flags.pairs, 100));
const connections = Math.round(positive('connections', flags.connections, 1024));
const walletCount = Math.round(positive('wallets', flags.wallets, 10_000));
const quoteCount = Math.round(positive('quotes', flags.quotes, 1_000_000));
if (quoteCount < pairCount * connections) throw new Error(`--quotes ${quoteCount} gives fewer than --connections quotes to each of the ${pairCount} pairs`);

const BARE = fileURLToPath(new URL('./support/bare-server.js', import.meta.url));

async function startServer(name: string, module: string, env: NodeJS.ProcessEnv): Promise<ServerChild> {
  const port = await freePort();
  const child = spawnTracked(process.execPath, [module], { env: { ...process.env, ...env, HOST: '127.0.0.1', PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  keepOutput(child, output);
  await waitForHttp(`http://127.0.0.1:${port}/healthz`, child);
  return { name, child, port, output };
}

/** A client of one service process: JSON requests with the sandbox credentials; the parsed answer is the caller's to type. */
function clientOf(port: number, authorization: string): <T>(method: string, path: string, body?: unknown) => Promise<T> {
  return async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`http://127.0.0.1:${port}${API}${path}`, {
      method,
      headers: { Authorization: authorization, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`setup: ${method} ${path} answered ${res.status}: ${text.slice(0, 300)}`);
    return JSON.parse(text) as T;
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
  publicKey: string;
  stamper: ApiKeyStamper;
}

/** One signed execute: the request as sent, and what the service verifies its stamp against. */
interface SignedExecute {
  request: RequestTemplate;
  payload: string;
  stamp: string;
  publicKey: string;
}

/** Wallets with a live session each, and `quoteCount` stamped execute requests over them. */
async function signedExecutes(port: number, dataDir: string): Promise<SignedExecute[]> {
  const authorization = sandboxAuthorization(dataDir);
  const call = clientOf(port, authorization);
  const wallets = await inParallel(walletCount, async (i): Promise<BenchWallet> => {
    const customer = await call<{ id: string }>('POST', '/customers', { customerType: 'INDIVIDUAL', email: `bench-${i}@example.com` });
    const accounts = (await call<{ data: Array<{ id: string; type: string; balance: { currency: { code: string } } }> }>('GET', `/internal-accounts?customerId=${customer.id}`)).data;
    const wallet = accounts.find((a) => a.type === 'EMBEDDED_WALLET');
    const usd = accounts.find((a) => a.balance.currency.code === 'USD');
    if (wallet === undefined || usd === undefined) throw new Error(`setup: customer ${customer.id} lacks an embedded wallet or a USD account`);
    await call('POST', `/sandbox/internal-accounts/${wallet.id}/fund`, { amount: 1_000_000_000_000 });
    const credential = await call<{ id: string }>('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: wallet.id });
    const client = keyPairToHex(generateP256KeyPair());
    const session = await call<{ encryptedSessionSigningKey: string }>('POST', `/auth/credentials/${credential.id}/verify`, { otp: '000000', clientPublicKey: client.publicKey });
    const key = keyPairToHex(keyPairFromPrivateKey(Buffer.from(decryptCredentialBundle(session.encryptedSessionSigningKey, client.privateKey), 'hex')));
    return {
      accountId: wallet.id,
      usdAccountId: usd.id,
      publicKey: key.publicKeyCompressed,
      stamper: new ApiKeyStamper({ apiPublicKey: key.publicKeyCompressed, apiPrivateKey: key.privateKey }),
    };
  });
  return inParallel(quoteCount, async (i): Promise<SignedExecute> => {
    const w = wallets[i % wallets.length]!;
    const quote = await call<{ id: string; paymentInstructions: Array<{ accountOrWalletInfo: { payloadToSign: string } }> }>('POST', '/quotes', {
      source: { sourceType: 'ACCOUNT', accountId: w.accountId },
      destination: { destinationType: 'ACCOUNT', accountId: w.usdAccountId },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 10_000_000,
    });
    const payload = quote.paymentInstructions[0]!.accountOrWalletInfo.payloadToSign;
    const stamp = (await w.stamper.stamp(payload)).stampHeaderValue;
    return {
      request: { method: 'POST', path: `${API}/quotes/${quote.id}/execute`, headers: { Authorization: authorization, 'Service-Wallet-Signature': stamp } },
      payload,
      stamp,
      publicKey: w.publicKey,
    };
  });
}

/** The sandbox token the service wrote on its first start. */
function sandboxAuthorization(dataDir: string): string {
  const credentials = JSON.parse(readFileSync(join(dataDir, 'credentials.json'), 'utf8')) as { sandbox: { tokenId: string; clientSecret: string } };
  return `Basic ${Buffer.from(`${credentials.sandbox.tokenId}:${credentials.sandbox.clientSecret}`).toString('base64')}`;
}

/** Verifies per second on this process's one thread: no HTTP, no engine. */
interface Ceiling {
  /** The whole verifyStamp, as the service runs it inline: header parse, key check, ECDSA verify. */
  verifyStamp: number;
  /** The ECDSA P-256 verify alone, over the same payloads and signatures (parsed beforehand). */
  ecdsa: number;
}

/**
 * Calls of `one` per second, going round `count` inputs for `ms`, after an unmeasured tenth
 * of that (the first pair's ceiling would otherwise include compiling the code it times).
 */
function perSecond(ms: number, count: number, one: (i: number) => boolean): number {
  const warmUntil = performance.now() + ms / 10;
  for (let i = 0; performance.now() < warmUntil; i++) if (!one(i % count)) throw new Error('ceiling: a good stamp did not verify');
  let done = 0;
  const start = performance.now();
  while (performance.now() - start < ms) {
    for (let i = 0; i < 100; i++, done++) if (!one(done % count)) throw new Error('ceiling: a good stamp did not verify');
  }
  return done / ((performance.now() - start) / 1000);
}

/** Both forms of the ceiling over the given executes' own stamps and payloads, `ms` each. */
function verifyCeiling(executes: readonly SignedExecute[], ms: number): Ceiling {
  const parsed = executes.map((e) => {
    const p = parseStamp(e.stamp);
    if (!p.ok) throw new Error('ceiling: a stamp does not parse');
    return { message: utf8.encode(e.payload), signature: p.stamp.signature, key: Buffer.from(p.stamp.publicKey, 'hex') };
  });
  return {
    verifyStamp: perSecond(ms, executes.length, (i) => {
      const e = executes[i]!;
      return verifyStamp({ header: e.stamp, payload: e.payload, expectedPublicKeys: [e.publicKey] }).ok;
    }),
    ecdsa: perSecond(ms, parsed.length, (i) => {
      const p = parsed[i]!;
      return verifyP256(p.message, p.signature, p.key);
    }),
  };
}

function failuresOf(r: ScenarioResult): string[] {
  const out: string[] = [];
  if (r.non2xx > 0) out.push(`${r.name}: non-2xx ${Object.entries(r.statuses).filter(([s]) => !s.startsWith('2')).map(([s, n]) => `${s}×${n}`).join(', ')}`);
  if (r.errors > 0) out.push(`${r.name}: ${r.errors} connection errors (${r.errorSamples.join('; ')})`);
  if (r.unanswered > 0) out.push(`${r.name}: ${r.unanswered} requests unanswered after the drain`);
  if (r.completed === 0) out.push(`${r.name}: no request completed in the window`);
  return out;
}

/** One pair: the bare server and the service on the same requests, and the ceiling over them. */
interface Pair {
  /** Requests in the pair's slice: quotes the service run could execute. */
  slice: number;
  bare: ScenarioResult;
  service: ScenarioResult;
  ceiling: Ceiling;
}

/** Responses of the whole run (warmup, window, drain): all of a slice when its quotes were used up. */
const answered = (r: ScenarioResult): number => Object.values(r.statuses).reduce((a, b) => a + b, 0);
const cpuUs = (r: ScenarioResult): string => (r.serverCpuUsPerRequest === undefined ? 'n/a' : r.serverCpuUsPerRequest.toFixed(0));

async function main(): Promise<string[]> {
  const base = { host: '127.0.0.1', connections, warmupMs, durationMs, drainMs: 10_000, client: 'raw' as const, collectIds: 0 };
  const failures: string[] = [];
  console.log(
    `# Signed quote execution: Node ${process.version}, ${cpus()[0]?.model ?? 'unknown CPU'}, ${availableParallelism()} cores; ` +
      `${connections} connections to either server, ${pairCount} alternating bare/service pairs per route, each run ${warmupMs / 1000} s warmup + ${durationMs / 1000} s; ` +
      `${walletCount} wallets, ${quoteCount} quotes per service\n`,
  );

  const bare = await startServer('bare', BARE, {});
  const byRoute = new Map<string, Pair[]>();
  try {
    for (const route of ['inline', 'pool'] as const) {
      const name = `signed-execute-${route}`;
      const dataDir = mkdtempSync(join(tmpdir(), 'bench-signed-'));
      removeOnExit(dataDir);
      const env: NodeJS.ProcessEnv = { DATA_DIR: dataDir, CRYPTO_ROUTES: `verifyStamp=${route}` };
      const service = await startServer(name, SERVICE_BUNDLE, env);
      try {
        process.stderr.write(`${name}: setting up ${walletCount} wallets and ${quoteCount} signed quotes ...\n`);
        const t0 = performance.now();
        const executes = await signedExecutes(service.port, dataDir);
        process.stderr.write(`${name}: setup took ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
        const pairs: Pair[] = [];
        const slice = Math.floor(executes.length / pairCount);
        for (let k = 0; k < pairCount; k++) {
          const mine = executes.slice(k * slice, (k + 1) * slice);
          const requests = mine.map((e) => e.request);
          const runBare = (): Promise<ScenarioResult> => runScenario({ name: `bare (pair ${k + 1})`, processes: 1, serverPid: bare.child.pid, spec: { ...base, port: bare.port, requests } });
          // A quote executes once: the service run stops at the end of its slice (its window then
          // ends early and the rate is over what it lasted) rather than answer 409s.
          const runService = (): Promise<ScenarioResult> =>
            runScenario({ name: `${name} (pair ${k + 1})`, processes: 1, serverPid: service.child.pid, spec: { ...base, port: service.port, requests, limit: requests.length } });
          process.stderr.write(`${name}: pair ${k + 1} of ${pairCount} ...\n`);
          // Which side goes first alternates, so a trend in the machine's load is shared out.
          let b: ScenarioResult;
          let s: ScenarioResult;
          if (k % 2 === 0) {
            b = await runBare();
            s = await runService();
          } else {
            s = await runService();
            b = await runBare();
          }
          failures.push(...failuresOf(b), ...failuresOf(s));
          pairs.push({ slice: requests.length, bare: b, service: s, ceiling: verifyCeiling(mine, CEILING_MS) });
        }
        byRoute.set(name, pairs);
      } catch (err) {
        showLastOutput(service);
        throw err;
      } finally {
        await stopCleanly(service, failures, 15_000);
      }
    }
  } finally {
    await stopCleanly(bare, failures, 15_000);
  }

  const rows: string[][] = [];
  for (const [name, pairs] of byRoute) {
    pairs.forEach((p, k) => {
      rows.push([
        name,
        `${k + 1} (${k % 2 === 0 ? 'bare first' : 'service first'})`,
        fmtInt(p.bare.requestsPerSecond),
        cpuUs(p.bare),
        `${fmtInt(p.service.requestsPerSecond)}${answered(p.service) >= p.slice ? ` (${(p.service.elapsedMs / 1000).toFixed(2)} s: quotes used up)` : ''}`,
        fmtMs(p.service.p50),
        fmtMs(p.service.p99),
        cpuUs(p.service),
        fmtRatio(p.service.requestsPerSecond / p.bare.requestsPerSecond),
        fmtInt(p.ceiling.verifyStamp),
        fmtRatio(p.service.requestsPerSecond / p.ceiling.verifyStamp),
        fmtInt(p.ceiling.ecdsa),
      ]);
    });
  }
  console.log(
    markdownTable(
      ['route', 'pair', 'bare req/s', 'bare CPU µs/req', 'service req/s', 'p50 ms', 'p99 ms', 'service CPU µs/req', 'service / bare', 'verifyStamp/s, 1 thread', 'service / verifyStamp', 'ECDSA verify/s, 1 thread'],
      rows,
      [false, false, true, true, true, true, true, true, true, true, true, true],
    ),
  );
  console.log('');
  for (const [name, pairs] of byRoute) {
    const med = (f: (p: Pair) => number | undefined): number => median(pairs.map(f).filter((x): x is number => x !== undefined));
    console.log(
      `- ${name}, medians of ${pairs.length} pairs: ${fmtRatio(med((p) => p.service.requestsPerSecond / p.bare.requestsPerSecond))} of bare ` +
        `(${fmtInt(med((p) => p.service.requestsPerSecond))} against ${fmtInt(med((p) => p.bare.requestsPerSecond))} req/s; ` +
        `server CPU ${med((p) => p.service.serverCpuUsPerRequest).toFixed(0)} against ${med((p) => p.bare.serverCpuUsPerRequest).toFixed(0)} µs/req), ` +
        `${fmtRatio(med((p) => p.service.requestsPerSecond / p.ceiling.verifyStamp))} of the one-thread verifyStamp ceiling ` +
        `(${fmtInt(med((p) => p.ceiling.verifyStamp))}/s, ${(1e6 / med((p) => p.ceiling.verifyStamp)).toFixed(1)} µs; the ECDSA verify alone ${(1e6 / med((p) => p.ceiling.ecdsa)).toFixed(1)} µs)`,
    );
  }
  console.log(
    "- each pair: the bare server and the service got the same requests (path, Authorization, Service-Wallet-Signature, no body) over the same connections; " +
      `the ceiling was timed after the pair for ${CEILING_MS} ms per form, over that pair's own stamps and payloads`,
  );
  return failures;
}

runBench('signed-quotes', main);
