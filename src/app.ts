// Opening the service: the store and recovery, the default platform, then the HTTP front.
// Tests open it in-process (port 0, a manual clock); `main.ts` opens it for real.
import { join } from 'node:path';
import { statSync } from 'node:fs';
import { Engine } from './engine/engine.js';
import { systemClock } from './engine/clock.js';
import { World, type DomainEvent, type TimerMessage } from '../actors/world.js';
import { notFound } from '../actors/errors.js';
import { loadOrCreateServiceKey } from './crypto/signer-key.js';
import type { MasterKey } from './crypto/master-key.js';
import { registerOtpMail } from './wallet/mail.js';
import { OidcVerifier } from './wallet/oidc.js';
import { ensureDefaultPlatform } from './platforms.js';
import { loadDashboard } from './http/dashboard.js';
import { startHttpServer, API_VERSION, type Extras, type HttpServer } from './http/server.js';
import { routes } from './http/routes/index.js';
import { ApiRequests } from './http/requests.js';
import { openApiDocument } from './http/openapi.js';
import { composeServices, type Services } from './services.js';
import { configAndParts, type HostParts, type ServiceConfig, type ServiceOptions } from './config.js';
import { optional } from './optional.js';
import { checkLockSupported, checkRecoveredStore, checkStoreBeforeOpen, ensurePrivateDataDir, forgetOwner, lockDataDir, operatorKey, recordOwner, type DataDirLock } from './data-dir.js';
import { createCryptoPool } from './crypto/pool.js';
import { createHash } from 'node:crypto';
import type { DeliveryObserver } from './webhooks/delivery.js';
import { OutboundEgress } from './outbound/egress.js';
import { TargetPolicy } from './outbound/target-policy.js';
import { createPlatform, NewPlatformBody } from './platforms.js';
import { DATA_FILE, openStore } from './engine/store.js';
import { LmdbStorage } from './engine/storage.js';
import type { RootDatabase } from 'lmdb';
import { checkStoreIdentity, loadStoreMasterKey, recordStoreIdentity, type IdentityBeforeOpen } from './store-identity.js';
import type { Report } from './engine/report.js';
import { createLogger, logsRequests, reportTo } from './ops/log.js';
import { httpObserverOf, ServiceMetrics } from './ops/metrics.js';

/** The engine over the domain's world, as the service runs it. */
type DomainEngine = Engine<DomainEvent, TimerMessage, World>;

export interface RunningService {
  services: Services;
  http: HttpServer;
  baseUrl: string;
  credentialsPath: string;
  /** Stops accepting, drains requests in flight, makes the final commit. */
  close(): Promise<void>;
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
  lock: DataDirLock;
  identityBeforeOpen: IdentityBeforeOpen;
}

/**
 * Takes the data directory's lock and checks the store before anything opens it (another
 * store's files are refused untouched). Rejects with DataDirInUseError when another process
 * holds the directory; nothing is left locked when it rejects.
 */
async function prepareDataDir(config: ServiceConfig): Promise<PreparedDataDir> {
  checkLockSupported();
  ensurePrivateDataDir(config.dataDir);
  const lock = await lockDataDir(config.dataDir);
  try {
    checkStoreBeforeOpen(config.dataDir);
    // Before anything is written (service.json included).
    const identityBeforeOpen = checkStoreIdentity(config.dataDir, config.givenMasterKey);
    forgetOwner(config.dataDir);
    return { config, lock, identityBeforeOpen };
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
  parts: HostParts,
  report: Report,
  hooks: { metrics?: ServiceMetrics; opening?: (engine: DomainEngine) => void } = {},
): Promise<Services> {
  const { config, lock, identityBeforeOpen } = prepared;
  let engine: DomainEngine | undefined;
  try {
    const world = new World();
    // The master key is loaded once the store is known to be this service's (below); an
    // OTP mail resumed by recovery runs only after open, by which time it is there.
    let masterKeyLoaded: MasterKey | undefined;
    let root: RootDatabase | undefined;
    engine = new Engine<DomainEvent, TimerMessage, World>({
      dataDir: config.dataDir,
      clock: parts.clock ?? systemClock,
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
    await engine.open(parts.signal);
    if (root === undefined) throw new Error('the engine opened no store');
    checkRecoveredStore(config.dataDir, world.envs.size);
    const masterKey = loadStoreMasterKey({ dataDir: config.dataDir, givenMasterKey: config.givenMasterKey, world, before: identityBeforeOpen });
    masterKeyLoaded = masterKey;
    const storeId = await recordStoreIdentity({ dataDir: config.dataDir, root, masterKey, before: identityBeforeOpen, report });
    return servicesOver({ config, parts, report, engine, world, masterKey, storeId, lock, ...optional('deliveryObserver', hooks.metrics) });
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
  const { config, parts } = configAndParts(options);
  const report = parts.report ?? reportTo(createLogger(config.logLevel));
  return openPrepared(await prepareDataDir(config), parts, report);
}

/** The services over a recovered engine (crypto, webhook delivery, verifiers); `close` closes them all and frees the directory. */
function servicesOver(opened: {
  config: ServiceConfig;
  parts: HostParts;
  report: Report;
  engine: DomainEngine;
  world: World;
  masterKey: MasterKey;
  storeId: string;
  lock: DataDirLock;
  deliveryObserver?: DeliveryObserver;
}): Services {
  const { config, parts, report, engine, world, masterKey, lock } = opened;
  const pool = createCryptoPool({ routes: config.cryptoRoutes });
  const outboundTargets = new TargetPolicy({
    allowPrivate: config.allowPrivateTargets,
    ...optional('resolver', parts.outboundResolver),
  });
  const egress = new OutboundEgress(outboundTargets);
  return composeServices(
    {
      config,
      storeId: opened.storeId,
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
        ...optional('observer', opened.deliveryObserver),
        maxPending: config.maxPendingWebhooks,
        ...optional('timeoutMs', parts.webhookTimeoutMs),
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
 * Listens first, then recovers the store: while the log replays, /livez answers, /readyz
 * says how far recovery is and every other route answers 503. Once recovered, the default
 * platform exists (credentials.json naming the address actually served) and the API is
 * served. `options.signal` stops a recovery in progress (RecoveryAbortedError).
 */
export async function startService(options: ServiceOptions = {}): Promise<RunningService> {
  const { config, parts } = configAndParts(options);
  const report = parts.report ?? reportTo(createLogger(config.logLevel));
  const metrics = config.metrics ? new ServiceMetrics() : undefined;
  const prepared = await prepareDataDir(config);
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
    services = await openPrepared(prepared, parts, report, {
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
