// The service as the simulation runs it: the same shard as one node's (shard.ts: engine,
// world, routes, request path, webhook delivery and crypto), built over simulated storage, a
// manual clock and a simulated platform endpoint, with no socket, file or thread. Crypto
// runs inline (a worker's answer would arrive at a time no seed decides).
import type { ManualClock } from '../engine/clock.js';
import type { Report } from '../engine/report.js';
import { MasterKey } from '../crypto/master-key.js';
import { keyPairFromPrivateKey } from '../crypto/p256.js';
import { hash } from 'node:crypto';
import { CryptoPool, DEFAULT_ROUTES, type CryptoOp, type CryptoRoute } from '../crypto/pool.js';
import { OidcVerifier } from '../wallet/oidc.js';
import type { DocumentFetcher, Egress } from '../outbound/egress.js';
import { TargetPolicy } from '../outbound/target-policy.js';
import { ApiRequests, API_VERSION } from '../http/requests.js';
import type { Route } from '../http/route.js';
import type { Services } from '../services.js';
import { Shard, type DomainEngine } from '../shard.js';
import { lookupSettingsFrom } from '../config.js';
import type { SimulatedDisk } from './storage.js';

/** The simulation has no network to fetch a document from. */
const NO_DOCUMENTS: DocumentFetcher = { get: () => Promise.reject(new Error('the simulation fetches no documents')) };

export interface SimulatedServiceOptions {
  disk: SimulatedDisk;
  /** This life's clock (a crash leaves the old one behind, with whatever it had scheduled). */
  clock: ManualClock;
  /** The platform's webhook endpoint. */
  endpoint: Egress;
  /** 32 bytes each: the same across the process's lives, as a key file would be. */
  masterKey: Uint8Array;
  signerKey: Uint8Array;
  snapshotEveryEntries: number;
  snapshotEveryMs: number;
  /** PENDING webhook events an environment holds before a full backlog drops its oldest. */
  maxPendingWebhooks: number;
  routes: readonly Route[];
  report: Report;
  /** Memory got ahead of the log: the simulated process stops here. */
  onFatal: (what: string, err: Error) => void;
}

/** One life of the simulated service, until it is stopped or crashes. */
export interface SimulatedService {
  /** Its services and request handler, once `open` has resolved. */
  readonly services: Services;
  readonly requests: ApiRequests;
  /** There from the start (the simulator reads how far the log is even of a life that did not recover). */
  engine: DomainEngine;
  /** Recovers the store; the simulator drives the storage while it runs. */
  open(): Promise<void>;
  /** Starts webhook delivery (after `open`). */
  start(): void;
  /** A crash: nothing more is sent, nothing it still does reaches the disk. */
  halt(): void;
}

/**
 * The service's crypto, inline, except that a webhook is signed with a digest of its body
 * instead of ECDSA: the simulated endpoint checks no signature, and P-256 signing took a
 * sixth of a run's time. The webhook suites check the real signature.
 */
class SimulatedCrypto extends CryptoPool {
  override signWebhook(body: string | Uint8Array): Promise<string> {
    return Promise.resolve(`simulated=${hash('sha256', body, 'base64url')}`);
  }
}

const INLINE: Record<CryptoOp, CryptoRoute> = Object.fromEntries(Object.keys(DEFAULT_ROUTES).map((op) => [op, 'inline'])) as Record<CryptoOp, CryptoRoute>;

export function simulatedService(options: SimulatedServiceOptions): SimulatedService {
  const masterKey = new MasterKey(options.masterKey);
  const crypto = new SimulatedCrypto({ routes: INLINE });
  const shard = new Shard({
    settings: {
      host: 'simulated.invalid',
      port: 0,
      dataDir: '(simulated)',
      baseUrl: `http://simulated.invalid/${API_VERSION}`,
      snapshotEveryEntries: options.snapshotEveryEntries,
      snapshotEveryMs: options.snapshotEveryMs,
      drainTimeoutMs: 0,
      cryptoRoutes: INLINE,
      // Sandbox mails no code: the simulated platforms never reach the OTP mail runner.
      smtpUrl: undefined,
      maxPendingWebhooks: options.maxPendingWebhooks,
      allowPrivateTargets: true,
      logLevel: 'info',
      metrics: false,
      givenMasterKey: masterKey,
      // No operator lists: the simulated clients look nothing up.
      lookups: lookupSettingsFrom({}),
    },
    openStorage: () => options.disk.open(),
    clock: options.clock,
    report: options.report,
    routes: options.routes,
    keys: { masterKey, walletSigner: keyPairFromPrivateKey(options.signerKey), storeId: 'simulated' },
    crypto,
    // The simulated platforms use sandbox, which verifies no token and fetches no key set.
    oidc: new OidcVerifier({ fetcher: NO_DOCUMENTS }),
    // Any target is allowed, and nothing is looked up: the simulation has no network.
    outboundTargets: new TargetPolicy({
      allowPrivate: true,
      resolver: () => Promise.reject(new Error('the simulation resolves no names')),
    }),
    egress: options.endpoint,
    engineHooks: {
      // Pacing by wall time would cut snapshots and replays at points no seed decides.
      workMeter: () => 0,
      onFatal: options.onFatal,
    },
    release: () => crypto.close(),
  });
  let opened = false;
  return {
    get services() {
      return shard.services;
    },
    get requests() {
      return shard.requests;
    },
    engine: shard.engine,
    open: async () => {
      await shard.open();
      opened = true;
    },
    start: () => shard.start(),
    // A life that never recovered has no delivery to stop.
    halt: () => {
      if (opened) shard.services.webhooks.stop();
    },
  };
}
