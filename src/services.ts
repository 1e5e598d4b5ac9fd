// What routes can reach: the engine (to decide and log), the world (to read), the
// clock, the secrets the service keeps and the crypto pool. Put together by
// `composeServices` for each shard, by the shard itself (shard.ts) once it is recovered.
import type { Engine } from './engine/engine.js';
import type { DomainEvent, TimerMessage, World } from '../actors/world.js';
import type { MasterKey } from './crypto/master-key.js';
import type { CryptoPool } from './crypto/pool.js';
import type { P256KeyPair } from './crypto/p256.js';
import type { OidcVerifier } from './wallet/oidc.js';
import { OtpHasher } from './wallet/otp.js';
import { WebhookDelivery, type DeliveryOptions } from './webhooks/delivery.js';
import type { Egress } from './outbound/egress.js';
import type { TargetPolicy } from './outbound/target-policy.js';
import type { ServiceConfig } from './config.js';
import { BulkImportWorker } from './bulk/import-worker.js';

export interface Services {
  config: ServiceConfig;
  /** The store's identity (store-identity.ts): credentials.json carries it too. */
  storeId: string;
  engine: Engine<DomainEvent, TimerMessage, World>;
  world: World;
  masterKey: MasterKey;
  /** Wallet cryptography, inline or on worker threads per operation. */
  crypto: CryptoPool;
  /**
   * The service signer: production wallet exports, OTP encryption targets and OTP
   * verification tokens (`enclaveQuorumPublic` and `embeddedWalletConfig.signerPublicKey`
   * are its public key). Kept in `<data dir>/export-signer.key`.
   */
  walletSigner: P256KeyPair;
  /** Keyed hashes of OTP codes (the codes are never stored). */
  otpHasher: OtpHasher;
  /** Production OAUTH: tokens checked against the environment's issuers (JWKS cached). */
  oidc: OidcVerifier;
  /** Webhook delivery; started by `startService`, idle in commands that only open the store. */
  webhooks: WebhookDelivery;
  /** The bulk importer; started by the shard with webhook delivery (it resumes unfinished jobs then). */
  bulkImports: BulkImportWorker;
  /** Where outbound requests (webhooks, key sets) may go: checked when a URL is given, and again on every connection. */
  outboundTargets: TargetPolicy;
  /** The shard's close: final commit, then what its host frees (one node: the crypto workers and the data directory's lock). */
  close(): Promise<void>;
}

/** What one shard's services are made of; the crypto pool, signer, verifiers and egress may be shared by several. */
export interface ServiceParts extends Omit<Services, 'otpHasher' | 'webhooks' | 'bulkImports' | 'close'> {
  /** Where this engine's webhooks are sent. */
  egress: Egress;
  delivery: DeliveryOptions;
}

/** The services over a recovered engine, with its webhook delivery (not started); `close` is the shard's. */
export function composeServices(parts: ServiceParts, close: () => Promise<void>): Services {
  const { engine, world, masterKey, crypto, egress } = parts;
  const webhooks = new WebhookDelivery({ engine, world, masterKey, crypto, egress }, parts.delivery);
  return {
    config: parts.config,
    storeId: parts.storeId,
    engine,
    world,
    masterKey,
    crypto,
    walletSigner: parts.walletSigner,
    otpHasher: new OtpHasher(masterKey),
    oidc: parts.oidc,
    webhooks,
    bulkImports: new BulkImportWorker({ engine, world, clock: engine.clock, report: parts.delivery.report ?? (() => undefined) }),
    outboundTargets: parts.outboundTargets,
    close,
  };
}
