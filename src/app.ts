// One node, the host of a single shard over its LMDB store: the data directory locked and
// checked, the HTTP front listening (host.ts), the shard recovered (shard.ts) with the keys
// its store holds, the default platform, then the API served. Tests open it in-process
// (port 0, a manual clock); `main.ts` opens it for real.
import { join } from 'node:path';
import { statSync } from 'node:fs';
import type { RootDatabase } from 'lmdb';
import { systemClock } from './engine/clock.js';
import { DATA_FILE } from './engine/store.js';
import { openLmdbStorage } from './engine/storage.js';
import type { Report } from './engine/report.js';
import { loadOrCreateServiceKey } from './crypto/signer-key.js';
import { createPlatform, ensureDefaultPlatform } from './platforms.js';
import { loadDashboard } from './http/dashboard.js';
import type { Extras, HttpServer } from './http/server.js';
import { routes } from './http/routes/index.js';
import type { Services } from './services.js';
import { Shard } from './shard.js';
import { hostExtras, listen, sharedParts } from './host.js';
import { configAndParts, type HostParts, type ServiceConfig, type ServiceOptions } from './config.js';
import { optional } from './optional.js';
import { checkLockSupported, checkRecoveredStore, checkStoreBeforeOpen, ensurePrivateDataDir, forgetOwner, lockDataDir, recordOwner, type DataDirLock } from './data-dir.js';
import { checkStoreIdentity, loadStoreMasterKey, recordStoreIdentity, type IdentityBeforeOpen } from './store-identity.js';
import { createLogger, reportTo } from './ops/log.js';
import { ServiceMetrics } from './ops/metrics.js';

export interface RunningService {
  services: Services;
  http: HttpServer;
  baseUrl: string;
  credentialsPath: string;
  /** Stops accepting, drains requests in flight, makes the final commit. */
  close(): Promise<void>;
}

/** The store's size on disk, as /healthz reports it (bytes). */
export interface StoreFigures {
  /** data.mdb: its length, and the disk blocks it holds (smaller while LMDB's map has holes). */
  dataFileBytes: number;
  allocatedBytes: number;
}

/** Read on every /healthz (it is polled): one stat() of data.mdb; no LMDB transaction, nothing walked. */
export function storeFigures(dataDir: string): StoreFigures {
  const data = statSync(join(dataDir, DATA_FILE));
  return { dataFileBytes: data.size, allocatedBytes: data.blocks * 512 };
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
 * The shard over the prepared store: LMDB in the data directory, the keys read from it once
 * recovered (store-identity.ts), the shared parts made here. Closing it (final commit) frees
 * them and the directory's lock. Not yet open.
 */
function shardOver(prepared: PreparedDataDir, parts: HostParts, report: Report, metrics?: ServiceMetrics): Shard {
  const { config, lock, identityBeforeOpen } = prepared;
  const shared = sharedParts(config, parts);
  let root: RootDatabase | undefined;
  return new Shard({
    ...shared,
    settings: config,
    openStorage: (dataDir) => {
      const storage = openLmdbStorage(dataDir);
      root = storage.root;
      return storage;
    },
    clock: parts.clock ?? systemClock,
    report,
    ...optional('observer', metrics),
    routes,
    keys: async (world) => {
      if (root === undefined) throw new Error('the engine opened no store');
      checkRecoveredStore(config.dataDir, world.envs.size);
      const masterKey = loadStoreMasterKey({ dataDir: config.dataDir, givenMasterKey: config.givenMasterKey, world, before: identityBeforeOpen });
      const storeId = await recordStoreIdentity({ dataDir: config.dataDir, root, masterKey, before: identityBeforeOpen, report });
      return { masterKey, storeId, walletSigner: loadOrCreateServiceKey(config.dataDir, masterKey) };
    },
    ...optional('webhookTimeoutMs', parts.webhookTimeoutMs),
    release: async () => {
      try {
        await shared.close();
      } finally {
        forgetOwner(config.dataDir);
        await lock.release();
      }
    },
  });
}

/**
 * Takes the data directory's lock, checks the store, opens and recovers it, and returns
 * services without serving HTTP (for commands). Rejects with DataDirInUseError when another
 * process holds the directory. Nothing is left open or locked when it rejects.
 */
export async function openServices(options: ServiceOptions = {}): Promise<Services> {
  const { config, parts } = configAndParts(options);
  const report = parts.report ?? reportTo(createLogger(config.logLevel));
  const shard = shardOver(await prepareDataDir(config), parts, report);
  await shard.open(parts.signal);
  return shard.services;
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
  let recovering: Shard | undefined;
  let http: HttpServer;
  try {
    http = await listen(config, { report, metrics, recovery: () => recovering?.engine.recovery, dashboard: loadDashboard() });
  } catch (err) {
    await prepared.lock.release();
    throw err;
  }
  report(`listening on ${config.baseUrl} (recovering the store)`, { event: 'http.listening', baseUrl: config.baseUrl });
  let shard: Shard;
  let credentialsPath: string;
  try {
    shard = recovering = shardOver(prepared, parts, report, metrics);
    await shard.open(parts.signal);
    try {
      credentialsPath = (await ensureDefaultPlatform(shard.services)).path;
    } catch (err) {
      await shard.close();
      throw err;
    }
  } catch (err) {
    await http.drain(0);
    throw err;
  }
  const { services } = shard;
  metrics?.watch({
    webhookEventsPending: () => services.webhooks.stats().pending,
    effectsPending: () => services.engine.pendingEffects,
    timersPending: () => services.engine.pendingTimers,
  });
  http.serve({ requests: shard.requests, routes, extras: extrasOf(services) });
  shard.start();
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
        await shard.close();
        report('stopped: the final commit is made', { event: 'service.stopped', lastSeq: services.engine.lastSeq });
      })();
      return closing;
    },
  };
}

/** /healthz with the log's and the store's figures and the webhook queue, the OpenAPI document, and platforms made in this store. */
function extrasOf(services: Services): Extras {
  return hostExtras({
    config: services.config,
    routes,
    figures: () => ({
      lastSeq: services.engine.lastSeq,
      durableSeq: services.engine.durableSeq,
      webhooks: services.webhooks.stats(),
      store: storeFigures(services.config.dataDir),
    }),
    createPlatform: (input) => createPlatform(services, input),
  });
}
