// Platform environment actor. A platform has two isolated environments, sandbox and
// production (CONTRACT.md); each is one actor with its own API tokens, configuration and
// webhook signing key. The environment actor also owns the platform's external accounts
// and guards what must be unique across its customers (UMA addresses).
import { newId } from '../src/engine/ids.js';
import { invalidField } from './errors.js';
import { CURRENCIES } from './reference.js';
import type { Appliers, RecordKind } from './registry.js';

export type Environment = 'sandbox' | 'production';
export const ENVIRONMENTS: readonly Environment[] = ['sandbox', 'production'];

export type TransactionType = 'OUTGOING' | 'INCOMING';

export interface CounterpartyField {
  name: string;
  mandatory: boolean;
}

export interface SupportedCurrency {
  currencyCode: string;
  minAmount: number;
  maxAmount: number;
  enabledTransactionTypes: TransactionType[];
  requiredCounterpartyFields: CounterpartyField[];
  providerRequiredCustomerFields: string[];
  providerRequiredCounterpartyCustomerFields: string[];
}

export interface PlatformConfig {
  readonly id: string;
  readonly umaDomain: string;
  readonly proxyUmaSubdomain: string;
  readonly webhookEndpoint: string;
  readonly supportedCurrencies: readonly SupportedCurrency[];
  readonly isRegulatedFinancialInstitution: boolean;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface ApiToken {
  readonly tokenId: string;
  /** SHA-256 hex of the client secret; the secret itself is never stored. */
  readonly secretHash: string;
}

export interface PlatformEnv {
  /** `<platform id>#<environment>` */
  readonly id: string;
  readonly platformId: string;
  readonly environment: Environment;
  readonly tokens: readonly ApiToken[];
  readonly config: PlatformConfig;
  readonly webhookPublicKey: string;
  /** Webhook signing key, sealed under the master key (aad: the environment id). */
  readonly webhookPrivateKeySealed: Uint8Array;
  readonly createdAt: number;
}

export type PlatformEvent =
  | { type: 'platform.env.created'; env: PlatformEnv }
  | { type: 'config.updated'; envId: string; config: PlatformConfig };

export function envIdOf(platformId: string, environment: Environment): string {
  return `${platformId}#${environment}`;
}

/** Sandbox defaults (CONTRACT.md): USD, USDC and USDB enabled. */
export const DEFAULT_CURRENCIES = ['USD', 'USDC', 'USDB'];
export const SANDBOX_UMA_DOMAIN = 'sandbox.uma.test';

export function defaultSupportedCurrency(code: string): SupportedCurrency {
  const decimals = CURRENCIES.get(code)?.decimals ?? 2;
  return {
    currencyCode: code,
    minAmount: 1,
    maxAmount: Math.min(1_000_000 * 10 ** decimals, Number.MAX_SAFE_INTEGER),
    enabledTransactionTypes: ['OUTGOING', 'INCOMING'],
    requiredCounterpartyFields: [],
    providerRequiredCustomerFields: [],
    providerRequiredCounterpartyCustomerFields: [],
  };
}

export interface NewEnvInput {
  platformId: string;
  environment: Environment;
  token: ApiToken;
  umaDomain: string;
  isRegulatedFinancialInstitution: boolean;
  webhookPublicKey: string;
  webhookPrivateKeySealed: Uint8Array;
}

export function newPlatformEnv(input: NewEnvInput, at: number): PlatformEnv {
  return {
    id: envIdOf(input.platformId, input.environment),
    platformId: input.platformId,
    environment: input.environment,
    tokens: [input.token],
    config: {
      id: newId('PlatformConfig', at),
      umaDomain: input.umaDomain,
      proxyUmaSubdomain: '',
      webhookEndpoint: '',
      supportedCurrencies: DEFAULT_CURRENCIES.map(defaultSupportedCurrency),
      isRegulatedFinancialInstitution: input.isRegulatedFinancialInstitution,
      createdAt: at,
      updatedAt: at,
    },
    webhookPublicKey: input.webhookPublicKey,
    webhookPrivateKeySealed: input.webhookPrivateKeySealed,
    createdAt: at,
  };
}

/** A supported currency as a PATCH names it: everything but the code may be left out. */
export type SupportedCurrencyPatch = Pick<SupportedCurrency, 'currencyCode'> & Partial<SupportedCurrency>;

export interface ConfigPatch {
  umaDomain?: string;
  proxyUmaSubdomain?: string;
  webhookEndpoint?: string;
  supportedCurrencies?: SupportedCurrencyPatch[];
}

/**
 * Validates a PATCH /config and returns the whole new configuration. A listed currency's
 * omitted settings keep their current values if it is supported already, else take the
 * defaults (a platform adding MXN sends just its code).
 */
export function patchedConfig(config: PlatformConfig, patch: ConfigPatch, at: number): PlatformConfig {
  let supportedCurrencies: SupportedCurrency[] | undefined;
  if (patch.supportedCurrencies !== undefined) {
    if (patch.supportedCurrencies.length === 0) throw invalidField('supportedCurrencies', 'at least one currency must stay supported');
    const seen = new Set<string>();
    supportedCurrencies = patch.supportedCurrencies.map((item, i) => {
      const field = `supportedCurrencies.${i}`;
      if (!CURRENCIES.has(item.currencyCode)) {
        throw invalidField(`${field}.currencyCode`, `unknown currency code ${item.currencyCode}; known: ${[...CURRENCIES.keys()].join(', ')}`);
      }
      if (seen.has(item.currencyCode)) throw invalidField(`${field}.currencyCode`, `${item.currencyCode} is listed twice`);
      seen.add(item.currencyCode);
      const base = config.supportedCurrencies.find((s) => s.currencyCode === item.currencyCode) ?? defaultSupportedCurrency(item.currencyCode);
      const merged: SupportedCurrency = { ...base, ...item };
      if (merged.minAmount > merged.maxAmount) throw invalidField(`${field}.minAmount`, `minAmount must not exceed maxAmount (${merged.maxAmount})`);
      return merged;
    });
  }
  if (patch.webhookEndpoint !== undefined && patch.webhookEndpoint !== '') checkWebhookUrl(patch.webhookEndpoint);
  return {
    ...config,
    ...(patch.umaDomain !== undefined ? { umaDomain: patch.umaDomain.toLowerCase() } : {}),
    ...(patch.proxyUmaSubdomain !== undefined ? { proxyUmaSubdomain: patch.proxyUmaSubdomain } : {}),
    ...(patch.webhookEndpoint !== undefined ? { webhookEndpoint: patch.webhookEndpoint } : {}),
    ...(supportedCurrencies !== undefined ? { supportedCurrencies } : {}),
    updatedAt: at,
  };
}

function checkWebhookUrl(value: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalidField('webhookEndpoint', 'must be an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidField('webhookEndpoint', 'must use http or https');
  if (url.username !== '' || url.password !== '') throw invalidField('webhookEndpoint', 'must not carry credentials');
}

/** The platform environments, and the API-token index authentication reads. */
export class PlatformEnvs implements RecordKind<PlatformEnv, PlatformEvent> {
  readonly idPrefix = 'Platform:';
  readonly #envs = new Map<string, PlatformEnv>();
  readonly #tokens = new Map<string, { envId: string; secretHash: string }>();
  readonly records: ReadonlyMap<string, PlatformEnv> = this.#envs;

  readonly appliers: Appliers<PlatformEvent> = {
    'platform.env.created': (event) => {
      if (this.#envs.has(event.env.id)) throw new Error(`environment ${event.env.id} exists already`);
      this.restore(event.env);
    },
    'config.updated': (event) => {
      const env = this.#envs.get(event.envId);
      if (env === undefined) throw new Error(`no environment ${event.envId}`);
      this.#envs.set(env.id, { ...env, config: event.config });
    },
  };

  restore(env: PlatformEnv): void {
    this.#envs.set(env.id, env);
    for (const t of env.tokens) this.#tokens.set(t.tokenId, { envId: env.id, secretHash: t.secretHash });
  }

  checkInvariants(): string[] {
    return [];
  }

  get(id: string): PlatformEnv | undefined {
    return this.#envs.get(id);
  }

  get size(): number {
    return this.#envs.size;
  }

  token(tokenId: string): { envId: string; secretHash: string } | undefined {
    return this.#tokens.get(tokenId);
  }
}

export interface PlatformConfigView {
  id: string;
  umaDomain: string;
  proxyUmaSubdomain: string;
  webhookEndpoint: string;
  supportedCurrencies: SupportedCurrency[];
  isRegulatedFinancialInstitution: boolean;
  webhookPublicKey: string;
  createdAt: string;
  updatedAt: string;
}

export function renderConfig(env: PlatformEnv): PlatformConfigView {
  const c = env.config;
  return {
    id: c.id,
    umaDomain: c.umaDomain,
    proxyUmaSubdomain: c.proxyUmaSubdomain,
    webhookEndpoint: c.webhookEndpoint,
    supportedCurrencies: c.supportedCurrencies.map((s) => ({ ...s })),
    isRegulatedFinancialInstitution: c.isRegulatedFinancialInstitution,
    webhookPublicKey: env.webhookPublicKey,
    createdAt: new Date(c.createdAt).toISOString(),
    updatedAt: new Date(c.updatedAt).toISOString(),
  };
}

export function supportsCurrency(env: PlatformEnv, code: string): boolean {
  return env.config.supportedCurrencies.some((s) => s.currencyCode === code);
}
