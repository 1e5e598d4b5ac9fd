// Creating platforms: both environments with their API tokens and webhook signing keys,
// and the platform's internal accounts, as one log entry. Secrets leave this function
// once, in the returned credentials; the store keeps only hashes and sealed keys.
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { newId } from './engine/ids.js';
import { ENVIRONMENTS, envIdOf, newPlatformEnv, SANDBOX_UMA_DOMAIN, type Environment, type PlatformEnv } from '../actors/platform.js';
import { provisionAccounts, type InternalAccount } from '../actors/internal-account.js';
import type { MasterKey } from './crypto/master-key.js';
import type { DomainEvent } from '../actors/world.js';
import { issueToken, tokenIdKey } from './http/platform-auth.js';
import { generateP256KeyPair } from './crypto/p256.js';
import { toHex } from './crypto/bytes.js';
import type { Services } from './services.js';
import { Type } from '@sinclair/typebox';
import { Obj, Str, validator } from './http/validation.js';

export interface PlatformCredentials {
  platformId: string;
  baseUrl: string;
  sandbox: { tokenId: string; clientSecret: string };
  production: { tokenId: string; clientSecret: string };
}

export interface NewPlatform {
  umaDomain?: string;
  isRegulatedFinancialInstitution?: boolean;
}

/** A new platform as the operator endpoint takes it (one node's and a cluster node's). */
export const NewPlatformBody = validator(
  Obj({
    umaDomain: Type.Optional(Str({ minLength: 3, maxLength: 253 })),
    isRegulatedFinancialInstitution: Type.Optional(Type.Boolean()),
  }),
);

export const CREDENTIALS_FILE = 'credentials.json';

/** credentials.json: the default platform's credentials, and the store they belong to (store-identity.ts). */
export interface CredentialsFile extends PlatformCredentials {
  storeId: string;
}

/**
 * Writes credentials.json (mode 0600) through a temporary file renamed over it, so a crash
 * leaves the old file or the new one, never half of it.
 */
export function writeCredentialsFile(path: string, credentials: CredentialsFile): void {
  const temporary = `${path}.tmp`;
  writeFileSync(temporary, JSON.stringify(credentials, null, 2) + '\n', { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, path);
}

/** Rewrites credentials.json's baseUrl when it names another address (the file was checked at start: store-identity.ts). */
function followServedAddress(path: string, baseUrl: string): void {
  if (!existsSync(path)) return;
  const credentials = JSON.parse(readFileSync(path, 'utf8')) as CredentialsFile;
  if (credentials.baseUrl !== baseUrl) writeCredentialsFile(path, { ...credentials, baseUrl });
}

/** One environment's first log entry: its record and its internal accounts (cluster mode starts a shard with it). */
export interface EnvGenesis {
  env: PlatformEnv;
  accounts: InternalAccount[];
}

/** A new platform's environments, and the credentials that leave the service once. */
export interface PreparedPlatform {
  platformId: string;
  genesis: EnvGenesis[];
  credentials: Omit<PlatformCredentials, 'baseUrl'>;
}

/**
 * Draws a platform's id, API tokens and webhook signing keys, and makes its environments
 * and accounts as of `at`: both environments, each with its token's hash and its signing
 * key sealed under the master key.
 */
export function preparePlatform(masterKey: MasterKey, options: NewPlatform, at: number): PreparedPlatform {
  const platformId = newId('Platform', at);
  // Drawn in this order (tokens, then keys) so that a seeded run draws the same bytes as before.
  const idKey = tokenIdKey(masterKey);
  const issued = { sandbox: issueToken('sandbox', idKey), production: issueToken('production', idKey) };
  const keys = { sandbox: generateP256KeyPair(), production: generateP256KeyPair() };
  const genesis = ENVIRONMENTS.map((environment: Environment): EnvGenesis => {
    const envId = envIdOf(platformId, environment);
    const env = newPlatformEnv(
      {
        platformId,
        environment,
        token: { tokenId: issued[environment].tokenId, secretHash: issued[environment].secretHash },
        umaDomain: environment === 'sandbox' ? SANDBOX_UMA_DOMAIN : (options.umaDomain ?? 'uma.localhost'),
        isRegulatedFinancialInstitution: options.isRegulatedFinancialInstitution ?? false,
        webhookPublicKey: toHex(keys[environment].publicKey),
        webhookPrivateKeySealed: masterKey.seal(keys[environment].privateKey, `webhook-key ${envId}`),
      },
      at,
    );
    return { env, accounts: provisionAccounts(env.id, '', env.config.supportedCurrencies.map((s) => s.currencyCode), at) };
  });
  return {
    platformId,
    genesis,
    credentials: {
      platformId,
      sandbox: { tokenId: issued.sandbox.tokenId, clientSecret: issued.sandbox.clientSecret },
      production: { tokenId: issued.production.tokenId, clientSecret: issued.production.clientSecret },
    },
  };
}

/** The events that create environments: each record, then all their accounts. */
export function genesisEvents(genesis: readonly EnvGenesis[]): DomainEvent[] {
  const events: DomainEvent[] = genesis.map(({ env }) => ({ type: 'platform.env.created', env }));
  events.push({ type: 'platform.accounts.created', accounts: genesis.flatMap((g) => g.accounts) });
  return events;
}

export async function createPlatform(services: Services, options: NewPlatform = {}): Promise<PlatformCredentials> {
  const prepared = preparePlatform(services.masterKey, options, services.engine.clock.now());
  // The new environments' actors: nothing can reach them before this entry, but a decision
  // holds every actor whose state it writes.
  await services.engine.exec(
    prepared.genesis.map((g) => g.env.id),
    () => ({ events: genesisEvents(prepared.genesis), reply: () => undefined }),
  );
  return { ...prepared.credentials, baseUrl: services.config.baseUrl };
}

/**
 * On an empty data directory: one default platform, its credentials written to
 * `<data dir>/credentials.json` with mode 0600, with the store's id. Otherwise the file's
 * baseUrl is brought to the address served now (a restart on another port or host). Returns
 * the file's path.
 */
export async function ensureDefaultPlatform(services: Services): Promise<{ path: string; created: boolean }> {
  const path = join(services.config.dataDir, CREDENTIALS_FILE);
  if (services.world.envs.size > 0) {
    followServedAddress(path, services.config.baseUrl);
    return { path, created: false };
  }
  const credentials = await createPlatform(services);
  writeCredentialsFile(path, { ...credentials, storeId: services.storeId });
  return { path, created: true };
}
