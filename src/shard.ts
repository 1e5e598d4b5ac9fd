// A shard: an engine over the domain's world, its effect runners (webhook delivery, OTP mail,
// the engine's timers) and its request handler, built here from a host's parts and nowhere
// else. One node (app.ts) holds one over its LMDB store, a cluster node (cluster/shard.ts) one
// per shard over a log replicated through JetStream, the simulation (sim/service.ts) one per
// life over its simulated disk; the hosts differ only in what they hand in. A shard is
// built, opened (recovered), started (webhook delivery) and closed (final commit).
import { Engine, type EngineOptions } from './engine/engine.js';
import type { Clock } from './engine/clock.js';
import type { Storage } from './engine/storage.js';
import type { EngineObserver, Report } from './engine/report.js';
import { World, type DomainEvent, type TimerMessage } from '../actors/world.js';
import type { MasterKey } from './crypto/master-key.js';
import type { CryptoPool } from './crypto/pool.js';
import type { P256KeyPair } from './crypto/p256.js';
import type { OidcVerifier } from './wallet/oidc.js';
import { registerOtpMail } from './wallet/mail.js';
import type { DeliveryObserver } from './webhooks/delivery.js';
import type { Egress } from './outbound/egress.js';
import type { TargetPolicy } from './outbound/target-policy.js';
import { ApiRequests } from './http/requests.js';
import type { Route, TokensChanged } from './http/route.js';
import { composeServices, type Services } from './services.js';
import type { ServiceConfig } from './config.js';
import { optional } from './optional.js';

/** The engine over the domain's world, as a shard runs it. */
export type DomainEngine = Engine<DomainEvent, TimerMessage, World>;

/** What a shard serves with: the secrets it keeps and the identity of its store. */
export interface ShardKeys {
  masterKey: MasterKey;
  /** Production wallet exports and OTP encryption targets and tokens (Services.walletSigner). */
  walletSigner: P256KeyPair;
  /** The store's identity (Services.storeId). */
  storeId: string;
}

/** What the shards of one host may share: wallet crypto, the way out to the network and what it may reach, the OIDC verifier. */
export interface SharedParts {
  /** Inline, or on worker threads per operation. */
  crypto: CryptoPool;
  /** Where the shard's webhooks are sent. */
  egress: Egress;
  outboundTargets: TargetPolicy;
  oidc: OidcVerifier;
}

/** Engine options only some hosts set: the simulation's still work meter, what a failed log does. */
export type EngineHooks = Pick<EngineOptions<DomainEvent, TimerMessage, World>, 'workMeter' | 'onFatal'>;

/** Everything a shard is built from; nothing else about its host reaches it. */
export interface ShardParts extends SharedParts {
  /** The shard's settings: its data directory, snapshot pacing, mail relay, webhook backlog cap and base URL. */
  settings: ServiceConfig;
  /** Told of an environment whose API tokens changed (http/route.ts's TokensChanged); default nothing. */
  tokensChanged?: TokensChanged;
  /** Opens the shard's store: LMDB, LMDB replicated over JetStream, or the simulated disk. */
  openStorage: (dataDir: string) => Storage;
  clock: Clock;
  report: Report;
  /** Told of the log, snapshots, recovery and webhook delivery (the host's metrics). */
  observer?: EngineObserver & DeliveryObserver;
  routes: readonly Route[];
  /**
   * The keys, given, or read once the store is recovered (one node's come from the store:
   * store-identity.ts). An OTP mail run before they are read fails and is retried.
   */
  keys: ShardKeys | ((world: World) => ShardKeys | Promise<ShardKeys>);
  /** How long a webhook endpoint has to answer (default DELIVERY_TIMEOUT_MS). */
  webhookTimeoutMs?: number;
  engineHooks?: EngineHooks;
  /** What the host frees after the shard's final commit (its shared parts, the data directory's lock); default nothing. */
  release?: () => Promise<void>;
}

export class Shard {
  readonly world = new World();
  readonly engine: DomainEngine;
  readonly #parts: ShardParts;
  #keys: ShardKeys | undefined;
  #opened: { services: Services; requests: ApiRequests } | undefined;
  #closing: Promise<void> | undefined;

  /** The engine is made and its effect runners registered; nothing is opened yet (readiness may watch `engine.recovery`). */
  constructor(parts: ShardParts) {
    this.#parts = parts;
    const { settings } = parts;
    if (typeof parts.keys !== 'function') this.#keys = parts.keys;
    this.engine = new Engine<DomainEvent, TimerMessage, World>({
      dataDir: settings.dataDir,
      clock: parts.clock,
      machine: this.world,
      snapshotEveryEntries: settings.snapshotEveryEntries,
      snapshotEveryMs: settings.snapshotEveryMs,
      report: parts.report,
      ...optional('observer', parts.observer),
      openStorage: parts.openStorage,
      ...parts.engineHooks,
    });
    registerOtpMail(this.engine, {
      dataDir: settings.dataDir,
      smtpUrl: settings.smtpUrl,
      masterKey: () => {
        if (this.#keys === undefined) throw new Error('the master key is not loaded yet');
        return this.#keys.masterKey;
      },
    });
  }

  /**
   * Recovers the store (`signal` stops the replay: RecoveryAbortedError), takes the keys and
   * puts the services and the request handler together. Nothing is left open when it
   * rejects: the engine is closed and the host's release has run.
   */
  async open(signal?: AbortSignal): Promise<void> {
    const parts = this.#parts;
    try {
      await this.engine.open(signal);
      this.#keys = typeof parts.keys === 'function' ? await parts.keys(this.world) : parts.keys;
      const services = composeServices(
        {
          config: parts.settings,
          ...this.#keys,
          engine: this.engine,
          world: this.world,
          crypto: parts.crypto,
          oidc: parts.oidc,
          outboundTargets: parts.outboundTargets,
          egress: parts.egress,
          delivery: {
            report: parts.report,
            ...optional('observer', parts.observer),
            maxPending: parts.settings.maxPendingWebhooks,
            ...optional('timeoutMs', parts.webhookTimeoutMs),
          },
        },
        () => this.close(),
      );
      this.#opened = { services, requests: new ApiRequests(services, parts.routes, parts.tokensChanged) };
    } catch (err) {
      // The open's failure is what the caller needs to hear, not a failure to close after it.
      await this.close().catch(() => undefined);
      throw err;
    }
  }

  /** The services over the recovered store (routes reach them); there once `open` has resolved. */
  get services(): Services {
    return this.#openedOrThrow().services;
  }

  /** The API over this shard's services: a request as data to its answer. */
  get requests(): ApiRequests {
    return this.#openedOrThrow().requests;
  }

  /** Starts webhook delivery and the bulk importer (the engine runs its timers and other effects from `open` on). */
  start(): void {
    const { services } = this.#openedOrThrow();
    services.webhooks.start();
    services.bulkImports.start();
  }

  /** Stops delivery, makes the final commit, then runs the host's release; calling it again returns the same promise. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#opened?.services.webhooks.stop();
      this.#opened?.services.bulkImports.stop();
      try {
        await this.engine.close();
      } finally {
        await this.#parts.release?.();
      }
    })();
    return this.#closing;
  }

  #openedOrThrow(): { services: Services; requests: ApiRequests } {
    if (this.#opened === undefined) throw new Error('the shard is not open');
    return this.#opened;
  }
}
