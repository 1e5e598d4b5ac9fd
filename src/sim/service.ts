// The service as the simulation runs it: the same engine, world, routes, request path,
// webhook delivery and crypto as `startService`, put together over simulated storage, a
// manual clock and a simulated platform endpoint, with no socket, file or thread. Crypto
// runs inline (a worker's answer would arrive at a time no seed decides).
import { Engine } from '../engine/engine.js';
import type { ManualClock } from '../engine/clock.js';
import type { Report } from '../engine/report.js';
import { World, type DomainEvent, type TimerMessage } from '../../actors/world.js';
import { MasterKey } from '../crypto/master-key.js';
import { keyPairFromPrivateKey } from '../crypto/p256.js';
import { createHash } from 'node:crypto';
import { CryptoPool, DEFAULT_ROUTES, type CryptoOp, type CryptoRoute } from '../crypto/pool.js';
import { OidcVerifier } from '../wallet/oidc.js';
import type { DocumentFetcher, Egress } from '../outbound/egress.js';
import { TargetPolicy } from '../outbound/target-policy.js';
import { ApiRequests, API_VERSION } from '../http/requests.js';
import type { Route } from '../http/route.js';
import { composeServices, type Services } from '../services.js';
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
  routes: readonly Route[];
  report: Report;
  /** Memory got ahead of the log: the simulated process stops here. */
  onFatal: (what: string, err: Error) => void;
}

/** One life of the simulated service, until it is stopped or crashes. */
export interface SimulatedService {
  services: Services;
  requests: ApiRequests;
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
    return Promise.resolve(`simulated=${createHash('sha256').update(body).digest('base64url')}`);
  }
}

const INLINE: Record<CryptoOp, CryptoRoute> = Object.fromEntries(Object.keys(DEFAULT_ROUTES).map((op) => [op, 'inline'])) as Record<CryptoOp, CryptoRoute>;

export function simulatedService(options: SimulatedServiceOptions): SimulatedService {
  const world = new World();
  const engine = new Engine<DomainEvent, TimerMessage, World>({
    dataDir: '(simulated)',
    clock: options.clock,
    machine: world,
    snapshotEveryEntries: options.snapshotEveryEntries,
    snapshotEveryMs: options.snapshotEveryMs,
    report: options.report,
    openStorage: () => options.disk.open(),
    // Pacing by wall time would cut snapshots and replays at points no seed decides.
    workMeter: () => 0,
    onFatal: options.onFatal,
  });
  const masterKey = new MasterKey(options.masterKey);
  const crypto = new SimulatedCrypto({ routes: INLINE });
  const services = composeServices(
    {
      config: {
        host: 'simulated.invalid',
        port: 0,
        dataDir: '(simulated)',
        baseUrl: `http://simulated.invalid/${API_VERSION}`,
        snapshotEveryEntries: options.snapshotEveryEntries,
        snapshotEveryMs: options.snapshotEveryMs,
        drainTimeoutMs: 0,
        cryptoRoutes: INLINE,
        smtpUrl: undefined,
        maxPendingWebhooks: 1_000_000,
        allowPrivateTargets: true,
        logLevel: 'info',
        metrics: false,
        givenMasterKey: masterKey,
      },
      storeId: 'simulated',
      engine,
      world,
      masterKey,
      crypto,
      walletSigner: keyPairFromPrivateKey(options.signerKey),
      // The simulated platforms use sandbox, which verifies no token and fetches no key set.
      oidc: new OidcVerifier({ fetcher: NO_DOCUMENTS }),
      // Any target is allowed, and nothing is looked up: the simulation has no network.
      outboundTargets: new TargetPolicy({
        allowPrivate: true,
        resolver: () => Promise.reject(new Error('the simulation resolves no names')),
      }),
      egress: options.endpoint,
      delivery: { report: options.report },
    },
    () => crypto.close(),
  );
  const { webhooks } = services;
  return {
    services,
    requests: new ApiRequests(services, options.routes),
    open: async () => {
      await engine.open();
    },
    start: () => webhooks.start(),
    halt: () => webhooks.stop(),
  };
}
