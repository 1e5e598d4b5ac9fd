// Creating platforms: both environments with their API tokens and webhook signing keys,
// and the platform's internal accounts, as one log entry. Secrets leave this function
// once, in the returned credentials; the store keeps only hashes and sealed keys.
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { newId } from './engine/ids.js';
import { ENVIRONMENTS, envIdOf, newPlatformEnv, SANDBOX_UMA_DOMAIN, type Environment, type PlatformEnv } from '../actors/platform.js';
import { provisionAccounts } from '../actors/internal-account.js';
import type { DomainEvent } from '../actors/world.js';
import { issueToken } from './http/platform-auth.js';
import { generateP256KeyPair } from './crypto/p256.js';
import { toHex } from './crypto/bytes.js';
import type { Services } from './services.js';

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

export async function createPlatform(services: Services, options: NewPlatform = {}): Promise<PlatformCredentials> {
  const platformId = newId('Platform', services.engine.clock.now());
  const issued = { sandbox: issueToken('sandbox'), production: issueToken('production') };
  const keys = { sandbox: generateP256KeyPair(), production: generateP256KeyPair() };
  const envIds = ENVIRONMENTS.map((environment) => envIdOf(platformId, environment));
  // The new environments' actors: nothing can reach them before this entry, but a decision
  // holds every actor whose state it writes.
  await services.engine.exec(envIds, (at) => {
    const events: DomainEvent[] = [];
    const envs: PlatformEnv[] = ENVIRONMENTS.map((environment: Environment) => {
      const envId = envIdOf(platformId, environment);
      const key = keys[environment];
      return newPlatformEnv(
        {
          platformId,
          environment,
          token: { tokenId: issued[environment].tokenId, secretHash: issued[environment].secretHash },
          umaDomain: environment === 'sandbox' ? SANDBOX_UMA_DOMAIN : (options.umaDomain ?? 'uma.localhost'),
          isRegulatedFinancialInstitution: options.isRegulatedFinancialInstitution ?? false,
          webhookPublicKey: toHex(key.publicKey),
          webhookPrivateKeySealed: services.masterKey.seal(key.privateKey, `webhook-key ${envId}`),
        },
        at,
      );
    });
    for (const env of envs) events.push({ type: 'platform.env.created', env });
    const accounts = envs.flatMap((env) =>
      provisionAccounts(env.id, '', env.config.supportedCurrencies.map((s) => s.currencyCode), at),
    );
    events.push({ type: 'platform.accounts.created', accounts });
    return { events, reply: () => undefined };
  });
  return {
    platformId,
    baseUrl: services.config.baseUrl,
    sandbox: { tokenId: issued.sandbox.tokenId, clientSecret: issued.sandbox.clientSecret },
    production: { tokenId: issued.production.tokenId, clientSecret: issued.production.clientSecret },
  };
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
