// The service's settings, parsed in this one place: every variable the service reads is read
// here, into one typed ServiceConfig, and refused with one line naming the variable when it is
// bad. The hosts (src/main.ts, the scripts, and the functions that start a service) call it
// and pass the parsed settings down; nothing below them reads the environment
// (test/config-env.test.ts scans for it).
import { resolve } from 'node:path';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { MasterKey } from './crypto/master-key.js';
import { DEFAULT_ROUTES, type CryptoOp, type CryptoRoute } from './crypto/pool.js';
import { DEFAULT_MAX_PENDING_WEBHOOKS } from './webhooks/delivery.js';
import { LOG_LEVELS, type LogLevel } from './ops/log.js';
import { API_VERSION } from './http/api-version.js';
import { optional } from './optional.js';
import type { Clock } from './engine/clock.js';
import type { Report } from './engine/report.js';
import type { Resolver } from './outbound/target-policy.js';

export interface ServiceConfig {
  host: string;
  port: number;
  dataDir: string;
  /** `http://HOST:PORT/2025-10-13` as clients should call it */
  baseUrl: string;
  snapshotEveryEntries: number;
  snapshotEveryMs: number;
  /** How long SIGTERM waits for requests in flight before closing what is left. */
  drainTimeoutMs: number;
  /** Operations moved off the defaults (CRYPTO_ROUTES). */
  cryptoRoutes: Partial<Record<CryptoOp, CryptoRoute>>;
  /** OTP mail relay (SMTP_URL); undefined writes mail to `<dataDir>/outbox/`. */
  smtpUrl: string | undefined;
  /**
   * The most PENDING webhook events an environment may hold (MAX_PENDING_WEBHOOKS): past
   * it the oldest are FAILED as dropped from the backlog; no write is refused for it.
   */
  maxPendingWebhooks: number;
  /**
   * OUTBOUND_ALLOW_PRIVATE_TARGETS (or WEBHOOK_ALLOW_PRIVATE_TARGETS): webhooks and key-set
   * fetches may go to any address, for deployments whose receivers live on a private
   * network. Otherwise production goes to public addresses only and sandbox to public and
   * loopback ones (src/outbound/target-policy.ts).
   */
  allowPrivateTargets: boolean;
  /** LOG_LEVEL: the least level logged; `debug` adds a line per request. */
  logLevel: LogLevel;
  /** METRICS: GET /metrics is served and the service measures itself (on by default). */
  metrics: boolean;
  /**
   * MASTER_KEY: the master key the operator gave. Undefined: one node keeps it in
   * `<dataDir>/master.key` (src/store-identity.ts), a cluster in its directory.
   */
  givenMasterKey: MasterKey | undefined;
  /** What the look-ups serve from the operator's settings: VASPS, END_USER_TERMS_VERSION and END_USER_TERMS_URL. */
  lookups: LookupSettings;
  /** Cluster mode (NATS_URL set); undefined runs one node on its embedded store. */
  cluster?: ClusterConfig;
}

/** Cluster mode's settings (docs/cluster.md). */
export interface ClusterConfig {
  /** NATS_URL: the JetStream servers, comma-separated. */
  servers: string[];
  /** NODE_ID: this node's name in the cluster (default: host name and port). */
  nodeId: string;
  /** CLUSTER_REPLICAS: replicas of every stream and bucket; undefined: 3, or the number of servers when fewer. */
  replicas: number | undefined;
  /** CLUSTER_LEASE_SECONDS, in ms. */
  leaseMs: number;
  /**
   * CLUSTER_SHARDS: the deployment's fixed number of shards, recorded in the directory by its
   * first node; undefined: the recorded count, or DEFAULT_CLUSTER_SHARDS for the first node.
   */
  shards: number | undefined;
}

/** A VASP of the operator's directory (GET /vasps), as the vendor's Vasp shape has it. */
export interface Vasp {
  vaspName: string;
  url?: string;
}

/** The End User Terms in force (GET /customers/end-user-terms): where they are published, and their version. */
export interface EndUserTerms {
  version: string;
  url: string;
}

/** The operator's look-up lists: settings of the deployment, the same for every platform, never records. */
export interface LookupSettings {
  /** Sorted by vaspName (in UTF-16 code unit order, as cursors compare positions): GET /vasps pages them so. */
  vasps: readonly Vasp[];
  endUserTerms: EndUserTerms;
}

/** The longest vaspName: a name is also the position a cursor of GET /vasps carries (src/http/pagination.ts). */
export const MAX_VASP_NAME = 100;
/** The most VASPs VASPS may list: a directory, read whole into every node's memory. */
export const MAX_VASPS = 10_000;
/**
 * The terms a deployment that sets none serves: version V1 at a `.invalid` address (RFC 2606),
 * which no client can open, so a missing setting shows rather than sending users to someone
 * else's terms.
 */
export const DEFAULT_END_USER_TERMS: EndUserTerms = { version: 'V1', url: 'https://end-user-terms.invalid/V1' };

/** Shards of a cluster whose first node was given no CLUSTER_SHARDS. */
export const DEFAULT_CLUSTER_SHARDS = 16;
/** The most shards a cluster may have (CLUSTER_SHARDS): each is a stream, a lease and an LMDB environment on its owner. */
export const MAX_CLUSTER_SHARDS = 1_024;

/** The process's environment, or the variables a test gives in its place. */
export type EnvironmentVariables = Readonly<Record<string, string | undefined>>;

/** Settings given directly, over the environment's: tests and commands give these. */
export interface SettingOverrides {
  host?: string;
  port?: number;
  dataDir?: string;
  snapshotEveryEntries?: number;
  snapshotEverySeconds?: number;
  /** The most PENDING webhook events per environment (default MAX_PENDING_WEBHOOKS); tests lower it. */
  maxPendingWebhooks?: number;
  /** OUTBOUND_ALLOW_PRIVATE_TARGETS, given directly (tests pass `env: {}`). */
  allowPrivateTargets?: boolean;
}

/** What a host gives a service besides its settings: the parts a test substitutes. */
export interface HostParts {
  clock?: Clock;
  /** Where reports go (default: JSON lines on stderr at LOG_LEVEL); tests collect them. */
  report?: Report;
  /** Stops recovery while it replays (SIGTERM during start): startService rejects with RecoveryAbortedError. */
  signal?: AbortSignal;
  /** How long a webhook endpoint has to answer (default DELIVERY_TIMEOUT_MS, 5 s); tests shorten it. */
  webhookTimeoutMs?: number;
  /** How the host names of outbound requests (webhooks, key sets) resolve (default: the system's getaddrinfo); tests fake DNS with it. */
  outboundResolver?: Resolver;
}

/** How a service is started (startService, openServices, startClusterNode): its settings and its parts. */
export interface ServiceOptions extends SettingOverrides, HostParts {
  /** The settings as the host parsed them (main.ts, the platform command); given, `env` and the overrides above are not read. */
  config?: ServiceConfig;
  /** The variables the settings are read from (default: the process's environment); tests give theirs. */
  env?: EnvironmentVariables;
}

/** A configuration value the service cannot start with; the message names the variable. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * A service's settings and its parts, from the options it was started with: the settings its
 * host parsed, else its `env` (default: the process's environment) under the overrides. The
 * environment goes no further than here.
 */
export function configAndParts(options: ServiceOptions): { config: ServiceConfig; parts: HostParts } {
  const { config, env, ...parts } = options;
  return { config: config ?? configFromEnv(env ?? process.env, options), parts };
}

export function configFromEnv(env: EnvironmentVariables, overrides: SettingOverrides = {}): ServiceConfig {
  const host = overrides.host ?? hostFrom(env.HOST);
  // 0 asks for any free port (the tests' way); uWebSockets.js would wrap anything past 65535.
  const port = overrides.port ?? integerFrom(env.PORT, 8080, 'PORT', 0, 65_535);
  const dataDir = dataDirFrom(env, overrides.dataDir);
  const givenMasterKey = masterKeyFrom(env.MASTER_KEY);
  return {
    host,
    port,
    dataDir,
    baseUrl: `http://${host}:${port}/${API_VERSION}`,
    snapshotEveryEntries: overrides.snapshotEveryEntries ?? integerFrom(env.SNAPSHOT_EVERY_ENTRIES, 100_000, 'SNAPSHOT_EVERY_ENTRIES', 1),
    snapshotEveryMs: 1000 * (overrides.snapshotEverySeconds ?? integerFrom(env.SNAPSHOT_EVERY_SECONDS, 300, 'SNAPSHOT_EVERY_SECONDS', 1)),
    drainTimeoutMs: 1000 * integerFrom(env.DRAIN_TIMEOUT_SECONDS, 10, 'DRAIN_TIMEOUT_SECONDS', 0),
    cryptoRoutes: cryptoRoutesFrom(env.CRYPTO_ROUTES),
    smtpUrl: smtpUrlFrom(env.SMTP_URL),
    maxPendingWebhooks: overrides.maxPendingWebhooks ?? integerFrom(env.MAX_PENDING_WEBHOOKS, DEFAULT_MAX_PENDING_WEBHOOKS, 'MAX_PENDING_WEBHOOKS', 1),
    allowPrivateTargets: overrides.allowPrivateTargets ?? allowPrivateTargetsFrom(env),
    logLevel: logLevelFrom(env.LOG_LEVEL),
    metrics: metricsFrom(env.METRICS),
    givenMasterKey,
    lookups: lookupSettingsFrom(env),
    ...optional('cluster', clusterFrom(env, port)),
  };
}

/** DATA_DIR (default ./data/db), or the directory a command was given instead, as an absolute path. */
export function dataDirFrom(env: EnvironmentVariables, given?: string): string {
  return resolve(given ?? env.DATA_DIR ?? './data/db');
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
function masterKeyFrom(value: string | undefined): MasterKey | undefined {
  if (value === undefined || value === '') return undefined;
  if (!/^[0-9a-fA-F]{64}$/.test(value)) {
    throw new ConfigError(`MASTER_KEY (${value.length} characters, not shown) is not accepted: it must be 64 hex characters (32 bytes)`);
  }
  return new MasterKey(Buffer.from(value, 'hex'));
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
function allowPrivateTargetsFrom(env: EnvironmentVariables): boolean {
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
function cryptoRoutesFrom(value: string | undefined): Partial<Record<CryptoOp, CryptoRoute>> {
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

/** The look-ups' settings: VASPS (default none), END_USER_TERMS_VERSION and END_USER_TERMS_URL (default DEFAULT_END_USER_TERMS). */
export function lookupSettingsFrom(env: EnvironmentVariables): LookupSettings {
  return {
    vasps: vaspsFrom(env.VASPS),
    endUserTerms: {
      version: termsVersionFrom(env.END_USER_TERMS_VERSION),
      url: env.END_USER_TERMS_URL === undefined || env.END_USER_TERMS_URL === '' ? DEFAULT_END_USER_TERMS.url : webUrlFrom(env.END_USER_TERMS_URL, 'END_USER_TERMS_URL'),
    },
  };
}

/** An absolute http or https URL, as given (a typo such as `htps:` or a bare host refused by name). */
function webUrlFrom(value: string, name: string): string {
  let protocol: string;
  try {
    protocol = new URL(value).protocol;
  } catch {
    throw new ConfigError(`${name}=${value} is not accepted: it must be an absolute http or https URL`);
  }
  if (protocol !== 'https:' && protocol !== 'http:') throw new ConfigError(`${name}=${value} is not accepted: it must use http or https, not ${protocol}`);
  return value;
}

/** END_USER_TERMS_VERSION: what a customer accepts, compared as given: 1 to 64 letters, digits, '.', '_' or '-'. */
function termsVersionFrom(value: string | undefined): string {
  if (value === undefined || value === '') return DEFAULT_END_USER_TERMS.version;
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(value)) throw new ConfigError(`END_USER_TERMS_VERSION=${value} is not accepted: it must be 1 to 64 letters, digits, '.', '_' or '-'`);
  return value;
}

/**
 * VASPS: a JSON array of the vendor's Vasp objects, `[{"vaspName": "Kraken", "url":
 * "https://www.kraken.com"}]`, at most MAX_VASPS. A name is text of 1 to MAX_VASP_NAME characters
 * without control characters, given once (names are what counterparty declarations pass);
 * `url`, optional, an http or https URL. Any other key is refused, so a misspelt `url`
 * does not vanish.
 */
function vaspsFrom(value: string | undefined): Vasp[] {
  if (value === undefined || value.trim() === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new ConfigError('VASPS is not accepted: it must be a JSON array such as [{"vaspName":"Kraken","url":"https://www.kraken.com"}]');
  }
  if (!Array.isArray(parsed)) throw new ConfigError('VASPS is not accepted: it must be a JSON array of {"vaspName", "url"?} objects');
  if (parsed.length > MAX_VASPS) throw new ConfigError(`VASPS is not accepted: it lists ${parsed.length} VASPs, more than ${MAX_VASPS}`);
  const seen = new Set<string>();
  const vasps = parsed.map((item: unknown, index) => {
    const vasp = vaspFrom(item, `VASPS[${index}]`);
    if (seen.has(vasp.vaspName)) throw new ConfigError(`VASPS[${index}] is not accepted: the vaspName ${JSON.stringify(vasp.vaspName)} is listed twice`);
    seen.add(vasp.vaspName);
    return vasp;
  });
  return vasps.sort((a, b) => (a.vaspName < b.vaspName ? -1 : 1));
}

function vaspFrom(item: unknown, where: string): Vasp {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) throw new ConfigError(`${where} is not accepted: it must be an object {"vaspName", "url"?}`);
  const { vaspName, url, ...rest } = item as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw new ConfigError(`${where} is not accepted: ${unknown.join(', ')} is not a VASP field (vaspName, url)`);
  if (typeof vaspName !== 'string' || vaspName.trim() === '' || vaspName.length > MAX_VASP_NAME || /[\u0000-\u001f\u007f]/.test(vaspName)) {
    throw new ConfigError(`${where}.vaspName is not accepted: it must be text of 1 to ${MAX_VASP_NAME} characters without control characters`);
  }
  if (url === undefined) return { vaspName };
  if (typeof url !== 'string') throw new ConfigError(`${where}.url is not accepted: it must be a string`);
  return { vaspName, url: webUrlFrom(url, `${where}.url`) };
}

/** SMTP_URL: smtp:// or smtps://, credentials allowed in it (so it is never echoed back). */
function smtpUrlFrom(value: string | undefined): string | undefined {
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

/** NATS_URL turns cluster mode on; NODE_ID, CLUSTER_REPLICAS, CLUSTER_LEASE_SECONDS and CLUSTER_SHARDS tune it. */
function clusterFrom(env: EnvironmentVariables, port: number): ClusterConfig | undefined {
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
    shards: env.CLUSTER_SHARDS === undefined || env.CLUSTER_SHARDS === '' ? undefined : integerFrom(env.CLUSTER_SHARDS, DEFAULT_CLUSTER_SHARDS, 'CLUSTER_SHARDS', 1, MAX_CLUSTER_SHARDS),
  };
}
