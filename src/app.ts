// Opening the service: the store and recovery, the default platform, then the HTTP front.
// Tests open it in-process (port 0, a manual clock); `main.ts` opens it for real.
import { join, resolve } from 'node:path';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { statSync } from 'node:fs';
import { Engine } from './engine/engine.js';
import { systemClock, type Clock } from './engine/clock.js';
import { World, type DomainEvent, type TimerMessage } from '../actors/world.js';
import { notFound } from '../actors/errors.js';
import { loadOrCreateServiceKey } from './crypto/signer-key.js';
import type { MasterKey } from './crypto/master-key.js';
import { registerOtpMail } from './wallet/mail.js';
import { OidcVerifier } from './wallet/oidc.js';
import { ensureDefaultPlatform } from './platforms.js';
import { loadDashboard } from './http/dashboard.js';
import { startHttpServer, API_VERSION, type Extras, type HttpObserver, type HttpServer } from './http/server.js';
import { routes } from './http/routes/index.js';
import { ApiRequests } from './http/requests.js';
import { openApiDocument } from './http/openapi.js';
import { composeServices, type ClusterConfig, type ServiceConfig, type Services } from './services.js';
import { checkLockSupported, checkRecoveredStore, checkStoreBeforeOpen, ensurePrivateDataDir, forgetOwner, lockDataDir, operatorKey, recordOwner, type DataDirLock } from './data-dir.js';
import { createCryptoPool, DEFAULT_ROUTES, type CryptoOp, type CryptoRoute } from './crypto/pool.js';
import { createHash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { DEFAULT_MAX_PENDING_WEBHOOKS, type DeliveryObserver } from './webhooks/delivery.js';
import { OutboundEgress } from './outbound/egress.js';
import { TargetPolicy, type Resolver } from './outbound/target-policy.js';
import { Obj, Str, validator } from './http/validation.js';
import { createPlatform } from './platforms.js';
import { DATA_FILE, openStore } from './engine/store.js';
import { LmdbStorage } from './engine/storage.js';
import type { RootDatabase } from 'lmdb';
import { checkStoreIdentity, loadStoreMasterKey, recordStoreIdentity, type IdentityBeforeOpen } from './store-identity.js';
import type { Report } from './engine/report.js';
import { createLogger, logsRequests, LOG_LEVELS, reportTo, type LogLevel } from './ops/log.js';
import { ServiceMetrics } from './ops/metrics.js';

/** The engine over the domain's world, as the service runs it. */
type DomainEngine = Engine<DomainEvent, TimerMessage, World>;

export const NewPlatformBody = validator(
  Obj({
    umaDomain: Type.Optional(Str({ minLength: 3, maxLength: 253 })),
    isRegulatedFinancialInstitution: Type.Optional(Type.Boolean()),
  }),
);

export interface ServiceOptions {
  host?: string;
  port?: number;
  dataDir?: string;
  clock?: Clock;
  snapshotEveryEntries?: number;
  snapshotEverySeconds?: number;
  /** Where reports go (default: JSON lines on stderr at LOG_LEVEL); tests collect them. */
  report?: Report;
  env?: NodeJS.ProcessEnv;
  /** Stops recovery while it replays (SIGTERM during start): startService rejects with RecoveryAbortedError. */
  signal?: AbortSignal;
  /** How long a webhook endpoint has to answer (default DELIVERY_TIMEOUT_MS, 5 s); tests shorten it. */
  webhookTimeoutMs?: number;
  /** The most PENDING webhook events per environment (default MAX_PENDING_WEBHOOKS); tests lower it. */
  maxPendingWebhooks?: number;
  /** OUTBOUND_ALLOW_PRIVATE_TARGETS, given directly (tests pass `env: {}`). */
  allowPrivateTargets?: boolean;
  /** How the host names of outbound requests (webhooks, key sets) resolve (default: the system's getaddrinfo); tests fake DNS with it. */
  outboundResolver?: Resolver;
}

export interface RunningService {
  services: Services;
  http: HttpServer;
  baseUrl: string;
  credentialsPath: string;
  /** Stops accepting, drains requests in flight, makes the final commit. */
  close(): Promise<void>;
}

/** A configuration value the service cannot start with; the message names the variable. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** An integer setting within [min, max] (unset or empty: the default); anything else names the variable, the value and the range. */
function integerFrom(value: string | undefined, fallback: number, name: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined || value === '') return fallback;
  const n = /^\d+$/.test(value.trim()) ? Number(value.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `an integer of at least ${min}` : `an integer from ${min} to ${max}`;
    throw new ConfigError(`${name}=${value} is not accepted: it must be ${range}`);
  }
  return n;
}

/**
 * HOST: an IP address, or a host name (letters, digits, hyphens and dots). A name cannot end
 * in a number (RFC 3696 2: no top-level domain is all digits), so 999.1.1.1 is a bad
 * address, refused here rather than when listening fails.
 */
function hostFrom(value: string | undefined): string {
  if (value === undefined || value === '') return '127.0.0.1';
  const name = /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
  if (isIP(value) === 0 && (!name.test(value) || /(^|\.)\d+$/.test(value))) throw new ConfigError(`HOST=${value} is not accepted: it must be an IP address or a host name`);
  return value;
}

/** LOG_LEVEL: one of pino's level names. */
function logLevelFrom(value: string | undefined): LogLevel {
  if (value === undefined || value === '') return 'info';
  const level = LOG_LEVELS.find((name) => name === value);
  if (level === undefined) throw new ConfigError(`LOG_LEVEL=${value} is not accepted: it must be one of ${LOG_LEVELS.join(', ')}`);
  return level;
}

/** METRICS: `on` (the default) serves GET /metrics, `off` neither serves nor measures. */
function metricsFrom(value: string | undefined): boolean {
  if (value === undefined || value === '' || value === 'on') return true;
  if (value === 'off') return false;
  throw new ConfigError(`METRICS=${value} is not accepted: it must be on or off`);
}

/**
 * MASTER_KEY, checked for its form before anything is opened (whether it opens this store is
 * store-identity.ts's question). A secret: the line gives its length, never its value.
 */
function checkMasterKeyForm(value: string | undefined): void {
  if (value === undefined || value === '' || /^[0-9a-fA-F]{64}$/.test(value)) return;
  throw new ConfigError(`MASTER_KEY (${value.length} characters, not shown) is not accepted: it must be 64 hex characters (32 bytes)`);
}

/** A boolean setting: exactly `true` or `false` (unset or empty: the default). */
function booleanFrom(value: string | undefined, fallback: boolean, name: string): boolean {
  if (value === undefined || value === '') return fallback;
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new ConfigError(`${name} must be true or false, got ${value}`);
}

/**
 * OUTBOUND_ALLOW_PRIVATE_TARGETS, or WEBHOOK_ALLOW_PRIVATE_TARGETS (its name from when only
 * webhooks went out, still read): both given must agree, so no deployment is left unsure
 * which one counts.
 */
function allowPrivateTargetsFrom(env: NodeJS.ProcessEnv): boolean {
  const given = (['OUTBOUND_ALLOW_PRIVATE_TARGETS', 'WEBHOOK_ALLOW_PRIVATE_TARGETS'] as const)
    .filter((name) => env[name] !== undefined && env[name] !== '')
    .map((name) => ({ name, allowed: booleanFrom(env[name], false, name) }));
  const [first, second] = given;
  if (first !== undefined && second !== undefined && first.allowed !== second.allowed) {
    throw new ConfigError(`OUTBOUND_ALLOW_PRIVATE_TARGETS (${String(first.allowed)}) and WEBHOOK_ALLOW_PRIVATE_TARGETS (${String(second.allowed)}) disagree; set only OUTBOUND_ALLOW_PRIVATE_TARGETS`);
  }
  return first?.allowed ?? false;
}

/**
 * CRYPTO_ROUTES: comma-separated `operation=inline|pool` pairs moving operations off the
 * defaults (DEFAULT_ROUTES, chosen from bench/crypto.bench.ts; see docs/crypto.md).
 */
export function cryptoRoutesFrom(value: string | undefined): Partial<Record<CryptoOp, CryptoRoute>> {
  const routes: Partial<Record<CryptoOp, CryptoRoute>> = {};
  if (value === undefined || value.trim() === '') return routes;
  const ops = Object.keys(DEFAULT_ROUTES) as CryptoOp[];
  for (const pair of value.split(',')) {
    const [name, route, ...rest] = pair.split('=').map((part) => part.trim());
    const op = ops.find((candidate) => candidate === name);
    if (op === undefined || rest.length > 0 || (route !== 'inline' && route !== 'pool')) {
      throw new ConfigError(
        `CRYPTO_ROUTES: "${pair.trim()}" is not operation=inline|pool (operations: ${ops.join(', ')}), in ${JSON.stringify(value)}`,
      );
    }
    routes[op] = route;
  }
  return routes;
}

export function configFromEnv(env: NodeJS.ProcessEnv, options: ServiceOptions = {}): ServiceConfig {
  const host = options.host ?? hostFrom(env.HOST);
  // 0 asks for any free port (the tests' way); uWebSockets.js would wrap anything past 65535.
  const port = options.port ?? integerFrom(env.PORT, 8080, 'PORT', 0, 65_535);
  const dataDir = resolve(options.dataDir ?? env.DATA_DIR ?? './data/db');
  checkMasterKeyForm(env.MASTER_KEY);
  return {
    host,
    port,
    dataDir,
    baseUrl: `http://${host}:${port}/${API_VERSION}`,
    snapshotEveryEntries: options.snapshotEveryEntries ?? integerFrom(env.SNAPSHOT_EVERY_ENTRIES, 100_000, 'SNAPSHOT_EVERY_ENTRIES', 1),
    snapshotEveryMs: 1000 * (options.snapshotEverySeconds ?? integerFrom(env.SNAPSHOT_EVERY_SECONDS, 300, 'SNAPSHOT_EVERY_SECONDS', 1)),
    drainTimeoutMs: 1000 * integerFrom(env.DRAIN_TIMEOUT_SECONDS, 10, 'DRAIN_TIMEOUT_SECONDS', 0),
    cryptoRoutes: cryptoRoutesFrom(env.CRYPTO_ROUTES),
    smtpUrl: smtpUrlFrom(env.SMTP_URL),
    maxPendingWebhooks: options.maxPendingWebhooks ?? integerFrom(env.MAX_PENDING_WEBHOOKS, DEFAULT_MAX_PENDING_WEBHOOKS, 'MAX_PENDING_WEBHOOKS', 1),
    allowPrivateTargets: options.allowPrivateTargets ?? allowPrivateTargetsFrom(env),
    logLevel: logLevelFrom(env.LOG_LEVEL),
    metrics: metricsFrom(env.METRICS),
    ...optional('cluster', clusterFrom(env, port)),
  };
}

/** NATS_URL turns cluster mode on; NODE_ID, CLUSTER_REPLICAS and CLUSTER_LEASE_SECONDS tune it. */
function clusterFrom(env: NodeJS.ProcessEnv, port: number): ClusterConfig | undefined {
  const url = env.NATS_URL?.trim();
  if (url === undefined || url === '') return undefined;
  const servers = url.split(',').map((server) => server.trim());
  for (const server of servers) {
    if (!/^(nats|tls):\/\/[^\s,]+$|^[A-Za-z0-9.-]+:\d+$/.test(server)) throw new ConfigError(`NATS_URL: "${server}" is not a NATS server address such as nats://127.0.0.1:4222`);
  }
  // A node id is a key of the cluster's buckets: letters, digits, '-' and '_'.
  const nodeId = env.NODE_ID === undefined || env.NODE_ID === '' ? `${hostname()}-${port}`.replace(/[^A-Za-z0-9_-]/g, '_') : env.NODE_ID;
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(nodeId)) throw new ConfigError(`NODE_ID=${nodeId} is not accepted: it must be 1 to 64 letters, digits, '-' or '_'`);
  return {
    servers,
    nodeId,
    replicas: env.CLUSTER_REPLICAS === undefined || env.CLUSTER_REPLICAS === '' ? undefined : integerFrom(env.CLUSTER_REPLICAS, 3, 'CLUSTER_REPLICAS', 1, 5),
    leaseMs: 1000 * integerFrom(env.CLUSTER_LEASE_SECONDS, 5, 'CLUSTER_LEASE_SECONDS', 1, 300),
  };
}

/** SMTP_URL: smtp:// or smtps://, credentials allowed in it (so it is never echoed back). */
export function smtpUrlFrom(value: string | undefined): string | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  let protocol: string;
  try {
    protocol = new URL(value.trim()).protocol;
  } catch {
    throw new ConfigError('SMTP_URL must be a URL such as smtp://user:pass@relay.example.com:587');
  }
  if (protocol !== 'smtp:' && protocol !== 'smtps:') throw new ConfigError(`SMTP_URL must use smtp: or smtps:, got ${protocol}`);
  return value.trim();
}

/** Process memory and the store's size on disk, as /healthz reports them (all in bytes). */
export interface ResourceFigures {
  memory: { rss: number; heapUsed: number; heapTotal: number; external: number; arrayBuffers: number };
  /** data.mdb: its length, and the disk blocks it holds (smaller while LMDB's map has holes). */
  store: { dataFileBytes: number; allocatedBytes: number };
}

/**
 * Read on every /healthz (it is polled): process.memoryUsage() reads /proc/self/statm and the
 * heap's counters, and one stat() of data.mdb; no LMDB transaction, nothing walked.
 */
export function resourceFigures(dataDir: string): ResourceFigures {
  const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
  const data = statSync(join(dataDir, DATA_FILE));
  return {
    memory: { rss, heapUsed, heapTotal, external, arrayBuffers },
    store: { dataFileBytes: data.size, allocatedBytes: data.blocks * 512 },
  };
}

/** A data directory locked and checked, not yet opened: what `openPrepared` recovers. */
interface PreparedDataDir {
  config: ServiceConfig;
  env: NodeJS.ProcessEnv;
  lock: DataDirLock;
  identityBeforeOpen: IdentityBeforeOpen;
}

/**
 * Takes the data directory's lock and checks the store before anything opens it (another
 * store's files are refused untouched). Rejects with DataDirInUseError when another process
 * holds the directory; nothing is left locked when it rejects.
 */
async function prepareDataDir(config: ServiceConfig, env: NodeJS.ProcessEnv): Promise<PreparedDataDir> {
  checkLockSupported();
  ensurePrivateDataDir(config.dataDir);
  const lock = await lockDataDir(config.dataDir);
  try {
    checkStoreBeforeOpen(config.dataDir);
    // Before anything is written (service.json included).
    const identityBeforeOpen = checkStoreIdentity(config.dataDir, env);
    forgetOwner(config.dataDir);
    return { config, env, lock, identityBeforeOpen };
  } catch (err) {
    await lock.release();
    throw err;
  }
}

/**
 * Opens and recovers the prepared store and returns the services over it. `opening` is told
 * of the engine before it recovers (readiness reads its progress). Nothing is left open or
 * locked when it rejects.
 */
async function openPrepared(
  prepared: PreparedDataDir,
  options: ServiceOptions,
  report: Report,
  hooks: { metrics?: ServiceMetrics; opening?: (engine: DomainEngine) => void } = {},
): Promise<Services> {
  const { config, env, lock, identityBeforeOpen } = prepared;
  let engine: DomainEngine | undefined;
  try {
    const world = new World();
    // The master key is loaded once the store is known to be this service's (below); an
    // OTP mail resumed by recovery runs only after open, by which time it is there.
    let masterKeyLoaded: MasterKey | undefined;
    let root: RootDatabase | undefined;
    engine = new Engine<DomainEvent, TimerMessage, World>({
      dataDir: config.dataDir,
      clock: options.clock ?? systemClock,
      machine: world,
      snapshotEveryEntries: config.snapshotEveryEntries,
      snapshotEveryMs: config.snapshotEveryMs,
      report,
      ...optional('observer', hooks.metrics),
      openStorage: (dataDir) => {
        const storage = new LmdbStorage(openStore(dataDir));
        root = storage.root;
        return storage;
      },
    });
    registerOtpMail(engine, {
      dataDir: config.dataDir,
      smtpUrl: config.smtpUrl,
      masterKey: () => {
        if (masterKeyLoaded === undefined) throw new Error('the master key is not loaded yet');
        return masterKeyLoaded;
      },
    });
    hooks.opening?.(engine);
    await engine.open(options.signal);
    if (root === undefined) throw new Error('the engine opened no store');
    checkRecoveredStore(config.dataDir, world.envs.size);
    const masterKey = loadStoreMasterKey({ dataDir: config.dataDir, env, world, before: identityBeforeOpen });
    masterKeyLoaded = masterKey;
    const storeId = await recordStoreIdentity({ dataDir: config.dataDir, root, masterKey, before: identityBeforeOpen, report });
    return servicesOver({ config, options, report, engine, world, masterKey, storeId, lock, ...optional('deliveryObserver', hooks.metrics) });
  } catch (err) {
    try {
      await engine?.close();
    } finally {
      await lock.release();
    }
    throw err;
  }
}

/**
 * Takes the data directory's lock, checks the store, opens and recovers it, and returns
 * services without serving HTTP (for commands). Rejects with DataDirInUseError when another
 * process holds the directory. Nothing is left open or locked when it rejects.
 */
export async function openServices(options: ServiceOptions = {}): Promise<Services> {
  const env = options.env ?? process.env;
  const config = configFromEnv(env, options);
  const report = options.report ?? reportTo(createLogger(config.logLevel));
  return openPrepared(await prepareDataDir(config, env), options, report);
}

/** The services over a recovered engine (crypto, webhook delivery, verifiers); `close` closes them all and frees the directory. */
function servicesOver(parts: {
  config: ServiceConfig;
  options: ServiceOptions;
  report: Report;
  engine: DomainEngine;
  world: World;
  masterKey: MasterKey;
  storeId: string;
  lock: DataDirLock;
  deliveryObserver?: DeliveryObserver;
}): Services {
  const { config, options, report, engine, world, masterKey, lock } = parts;
  const pool = createCryptoPool({ routes: config.cryptoRoutes });
  const outboundTargets = new TargetPolicy({
    allowPrivate: config.allowPrivateTargets,
    ...optional('resolver', options.outboundResolver),
  });
  const egress = new OutboundEgress(outboundTargets);
  return composeServices(
    {
      config,
      storeId: parts.storeId,
      engine,
      world,
      masterKey,
      crypto: pool,
      walletSigner: loadOrCreateServiceKey(config.dataDir, masterKey),
      oidc: new OidcVerifier({ fetcher: egress }),
      outboundTargets,
      egress,
      delivery: {
        report,
        ...optional('observer', parts.deliveryObserver),
        maxPending: config.maxPendingWebhooks,
        ...optional('timeoutMs', options.webhookTimeoutMs),
      },
    },
    async () => {
      try {
        egress.close();
        await pool.close();
      } finally {
        forgetOwner(config.dataDir);
        await lock.release();
      }
    },
  );
}

/**
 * The HTTP front's observer: metrics, and at `debug` one access-log line per request
 * (method, route pattern, status, milliseconds, reqId). Undefined when neither is on, so
 * the front does not even read the clock.
 */
export function httpObserverOf(metrics: ServiceMetrics | undefined, report: Report, accessLog: boolean): HttpObserver | undefined {
  if (!accessLog) return metrics;
  return {
    answered(method, route, status, seconds, requestId) {
      metrics?.answered(method, route, status, seconds);
      const ms = Math.round(seconds * 10_000) / 10;
      report(`${method} ${route} ${status} ${ms} ms`, { event: 'http.request', level: 'debug', reqId: requestId, method, route, status, ms });
    },
  };
}

/**
 * Listens first, then recovers the store: while the log replays, /livez answers, /readyz
 * says how far recovery is and every other route answers 503. Once recovered, the default
 * platform exists (credentials.json naming the address actually served) and the API is
 * served. `options.signal` stops a recovery in progress (RecoveryAbortedError).
 */
export async function startService(options: ServiceOptions = {}): Promise<RunningService> {
  const env = options.env ?? process.env;
  const config = configFromEnv(env, options);
  const report = options.report ?? reportTo(createLogger(config.logLevel));
  const metrics = config.metrics ? new ServiceMetrics() : undefined;
  const prepared = await prepareDataDir(config, env);
  let recovering: DomainEngine | undefined;
  let http: HttpServer;
  try {
    http = await startHttpServer({
      host: config.host,
      port: config.port,
      report,
      ...optional('observer', httpObserverOf(metrics, report, logsRequests(config.logLevel))),
      ...optional('metrics', metrics),
      recovery: () => recovering?.recovery,
      dashboard: loadDashboard(),
    });
  } catch (err) {
    await prepared.lock.release();
    throw err;
  }
  // With port 0 the OS picked one: the base URL (and credentials.json) name the real port.
  config.port = http.port;
  config.baseUrl = `http://${config.host}:${http.port}/${API_VERSION}`;
  report(`listening on ${config.baseUrl} (recovering the store)`, { event: 'http.listening', baseUrl: config.baseUrl });
  let services: Services;
  let credentialsPath: string;
  try {
    services = await openPrepared(prepared, options, report, {
      ...optional('metrics', metrics),
      opening: (engine) => (recovering = engine),
    });
    try {
      credentialsPath = (await ensureDefaultPlatform(services)).path;
    } catch (err) {
      await services.close();
      throw err;
    }
  } catch (err) {
    await http.drain(0);
    throw err;
  }
  metrics?.watch({
    webhookEventsPending: () => services.webhooks.stats().pending,
    effectsPending: () => services.engine.pendingEffects,
    timersPending: () => services.engine.pendingTimers,
  });
  http.serve({ requests: new ApiRequests(services, routes), routes, extras: extrasOf(services) });
  services.webhooks.start();
  recordOwner(config.dataDir, `http://${config.host}:${http.port}`);
  report(`ready: serving ${config.baseUrl}`, { event: 'service.ready', baseUrl: config.baseUrl, lastSeq: services.engine.lastSeq });
  let closing: Promise<void> | undefined;
  return {
    services,
    http,
    baseUrl: config.baseUrl,
    credentialsPath,
    close: () => {
      closing ??= (async () => {
        await http.drain(config.drainTimeoutMs);
        await services.close();
        report('stopped: the final commit is made', { event: 'service.stopped', lastSeq: services.engine.lastSeq });
      })();
      return closing;
    },
  };
}

/** `{[key]: value}` when there is a value: optional properties stay absent rather than undefined (exactOptionalPropertyTypes). */
export function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/** /healthz, the OpenAPI document and the operator endpoints over the running services. */
function extrasOf(services: Services): Extras {
  return {
    healthz: () => ({
      status: 'ok',
      lastSeq: services.engine.lastSeq,
      durableSeq: services.engine.durableSeq,
      webhooks: services.webhooks.stats(),
      ...resourceFigures(services.config.dataDir),
    }),
    openapi: () => openApiDocument(routes, services.config.baseUrl),
    operator: {
      keyHash: createHash('sha256').update(operatorKey(services.config.dataDir)).digest(),
      handle: async (path, body) => {
        if (path !== '/_operator/platforms') throw notFound('path', 'operator endpoint', path);
        const input = NewPlatformBody.parse(body);
        return { status: 201, body: await createPlatform(services, input) };
      },
    },
  };
}
