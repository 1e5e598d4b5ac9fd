// Opening the service: the store and recovery, the default platform, then the HTTP front.
// Tests open it in-process (port 0, a manual clock); `main.ts` opens it for real.
import { join, resolve } from 'node:path';
import { isIP } from 'node:net';
import { mkdirSync, statSync } from 'node:fs';
import { Engine } from './engine/engine.js';
import { systemClock, type Clock } from './engine/clock.js';
import { World, type DomainEvent, type TimerMessage } from '../actors/world.js';
import { notFound } from '../actors/errors.js';
import { loadOrCreateServiceKey } from './crypto/signer-key.js';
import type { MasterKey } from './crypto/master-key.js';
import { registerOtpMail } from './wallet/mail.js';
import { OidcVerifier } from './wallet/oidc.js';
import { OtpHasher } from './wallet/otp.js';
import { ensureDefaultPlatform } from './platforms.js';
import { startHttpServer, API_VERSION, type HttpServer } from './http/server.js';
import { routes } from './http/routes/index.js';
import { openApiDocument } from './http/openapi.js';
import type { ServiceConfig, Services } from './services.js';
import { checkRecoveredStore, checkStoreBeforeOpen, forgetOwner, lockDataDir, operatorKey, recordOwner, type DataDirLock } from './data-dir.js';
import { createCryptoPool, DEFAULT_ROUTES, type CryptoOp, type CryptoRoute } from './crypto/pool.js';
import { createHash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { DEFAULT_MAX_PENDING_WEBHOOKS, WebhookDelivery } from './webhooks/delivery.js';
import { WebhookEgress } from './webhooks/egress.js';
import { TargetPolicy, type Resolver } from './webhooks/target-policy.js';
import { Obj, Str, validator } from './http/validation.js';
import { createPlatform } from './platforms.js';
import { DATA_FILE, openStore } from './engine/store.js';
import type { RootDatabase } from 'lmdb';
import { checkStoreIdentity, loadStoreMasterKey, recordStoreIdentity } from './store-identity.js';

const NewPlatformBody = validator(
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
  report?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  /** How long a webhook endpoint has to answer (default DELIVERY_TIMEOUT_MS, 5 s); tests shorten it. */
  webhookTimeoutMs?: number;
  /** The most PENDING webhook events per environment (default MAX_PENDING_WEBHOOKS); tests lower it. */
  maxPendingWebhooks?: number;
  /** WEBHOOK_ALLOW_PRIVATE_TARGETS, given directly (tests pass `env: {}`). */
  allowPrivateWebhookTargets?: boolean;
  /** How webhook host names resolve (default: the system's getaddrinfo); tests fake DNS with it. */
  webhookResolver?: Resolver;
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

/** HOST: an IP address, or a host name (letters, digits, hyphens and dots). */
function hostFrom(value: string | undefined): string {
  if (value === undefined || value === '') return '127.0.0.1';
  const name = /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
  if (isIP(value) === 0 && !name.test(value)) throw new ConfigError(`HOST=${value} is not accepted: it must be an IP address or a host name`);
  return value;
}

/** A boolean setting: exactly `true` or `false` (unset or empty: the default). */
function booleanFrom(value: string | undefined, fallback: boolean, name: string): boolean {
  if (value === undefined || value === '') return fallback;
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new ConfigError(`${name} must be true or false, got ${value}`);
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
    allowPrivateWebhookTargets: options.allowPrivateWebhookTargets ?? booleanFrom(env.WEBHOOK_ALLOW_PRIVATE_TARGETS, false, 'WEBHOOK_ALLOW_PRIVATE_TARGETS'),
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

/**
 * Takes the data directory's lock, checks the store, opens and recovers it, and returns
 * services without serving HTTP (for commands). Rejects with DataDirInUseError when another
 * process holds the directory. Nothing is left open or locked when it rejects.
 */
export async function openServices(options: ServiceOptions = {}): Promise<Services> {
  const report = options.report ?? ((line: string) => process.stderr.write(`${line}\n`));
  const env = options.env ?? process.env;
  const config = configFromEnv(env, options);
  mkdirSync(config.dataDir, { recursive: true });
  const lock = await lockDataDir(config.dataDir);
  // Once open, closed again if a later step fails.
  let engine: Engine<DomainEvent, TimerMessage, World> | undefined;
  try {
    checkStoreBeforeOpen(config.dataDir);
    // Before anything is written (service.json included): another store is refused untouched.
    const identityBeforeOpen = checkStoreIdentity(config.dataDir, env);
    forgetOwner(config.dataDir);
    const world = new World();
    // The master key is loaded once the store is known to be this service's (below); an
    // OTP mail resumed by recovery runs only after open, by which time it is there.
    let masterKeyLoaded: MasterKey | undefined;
    const opened = await openEngine(config, world, options.clock ?? systemClock, report, () => {
      if (masterKeyLoaded === undefined) throw new Error('the master key is not loaded yet');
      return masterKeyLoaded;
    });
    engine = opened.engine;
    checkRecoveredStore(config.dataDir, world.envs.size);
    const masterKey = loadStoreMasterKey({ dataDir: config.dataDir, env, world, before: identityBeforeOpen });
    masterKeyLoaded = masterKey;
    const storeId = await recordStoreIdentity({ dataDir: config.dataDir, root: opened.root, masterKey, before: identityBeforeOpen, report });
    return servicesOver({ config, options, report, engine: opened.engine, world, masterKey, storeId, lock });
  } catch (err) {
    try {
      await engine?.close();
    } finally {
      await lock.release();
    }
    throw err;
  }
}

/** Opens and recovers the engine on the data directory; the OTP mail it resumes reads the master key when it runs. */
async function openEngine(
  config: ServiceConfig,
  world: World,
  clock: Clock,
  report: (line: string) => void,
  masterKey: () => MasterKey,
): Promise<{ engine: Engine<DomainEvent, TimerMessage, World>; root: RootDatabase }> {
  // The environment the engine opens, kept to record the store's identity beside the engine's databases.
  let root: RootDatabase | undefined;
  const engine = new Engine<DomainEvent, TimerMessage, World>({
    dataDir: config.dataDir,
    clock,
    machine: world,
    snapshotEveryEntries: Math.max(1, config.snapshotEveryEntries),
    snapshotEveryMs: Math.max(1000, config.snapshotEveryMs),
    report,
    openStore: (dataDir) => (root = openStore(dataDir)),
  });
  registerOtpMail(engine, { dataDir: config.dataDir, smtpUrl: config.smtpUrl, masterKey });
  await engine.open();
  if (root === undefined) {
    await engine.close();
    throw new Error('the engine opened no store');
  }
  return { engine, root };
}

/** The services over a recovered engine (crypto, webhook delivery, verifiers); `close` closes them all and frees the directory. */
function servicesOver(parts: {
  config: ServiceConfig;
  options: ServiceOptions;
  report: (line: string) => void;
  engine: Engine<DomainEvent, TimerMessage, World>;
  world: World;
  masterKey: MasterKey;
  storeId: string;
  lock: DataDirLock;
}): Services {
  const { config, options, report, engine, world, masterKey, lock } = parts;
  const walletSigner = loadOrCreateServiceKey(config.dataDir, masterKey);
  const pool = createCryptoPool({ routes: config.cryptoRoutes });
  const webhookTargets = new TargetPolicy({
    allowPrivate: config.allowPrivateWebhookTargets,
    ...(options.webhookResolver !== undefined ? { resolver: options.webhookResolver } : {}),
  });
  const egress = new WebhookEgress(webhookTargets);
  const webhooks = new WebhookDelivery({ engine, world, masterKey, crypto: pool, egress }, {
    report,
    maxPending: config.maxPendingWebhooks,
    ...(options.webhookTimeoutMs !== undefined ? { timeoutMs: options.webhookTimeoutMs } : {}),
  });
  let closing: Promise<void> | undefined;
  return {
    config,
    storeId: parts.storeId,
    engine,
    world,
    masterKey,
    crypto: pool,
    walletSigner,
    otpHasher: new OtpHasher(masterKey),
    oidc: new OidcVerifier(),
    webhooks,
    webhookTargets,
    close: () => {
      closing ??= (async () => {
        try {
          webhooks.stop();
          egress.close();
          await engine.close();
          await pool.close();
        } finally {
          forgetOwner(config.dataDir);
          await lock.release();
        }
      })();
      return closing;
    },
  };
}

export async function startService(options: ServiceOptions = {}): Promise<RunningService> {
  const report = options.report ?? ((line: string) => process.stderr.write(`${line}\n`));
  const services = await openServices({ ...options, report });
  let credentialsPath: string;
  let http: HttpServer;
  try {
    credentialsPath = (await ensureDefaultPlatform(services)).path;
    http = await startHttpServer(
      services,
      routes,
      {
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
      },
      report,
    );
  } catch (err) {
    await services.close();
    throw err;
  }
  services.webhooks.start();
  // With port 0 the OS picked one: the base URL names the real port.
  services.config.port = http.port;
  services.config.baseUrl = `http://${services.config.host}:${http.port}/${API_VERSION}`;
  recordOwner(services.config.dataDir, `http://${services.config.host}:${http.port}`);
  let closing: Promise<void> | undefined;
  return {
    services,
    http,
    baseUrl: services.config.baseUrl,
    credentialsPath,
    close: () => {
      closing ??= (async () => {
        await http.drain(services.config.drainTimeoutMs);
        await services.close();
      })();
      return closing;
    },
  };
}
