// Platform environment actor. A platform has two isolated environments, sandbox and
// production (CONTRACT.md); each is one actor with its own API tokens, configuration and
// webhook signing key. The environment actor also owns the platform's external accounts
// and guards what must be unique across its customers (UMA addresses).
import { newId } from '../src/engine/ids.js';
import { invalidField } from './errors.js';
import { CURRENCIES } from './reference.js';
import { RecordMap, type Appliers, type RecordKind } from './registry.js';
import { isoTime } from './iso-time.js';

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
  /**
   * Only what the platform has set: environments created before embedded wallets existed
   * have none, and defaults that follow umaDomain stay live. `embeddedWalletConfigOf`
   * fills the rest.
   */
  readonly embeddedWallet?: EmbeddedWalletSettings;
  /** ENVELOPE when the platform chose it; absent: FLAT (so every configuration logged before stays as it was). */
  readonly webhookFormat?: 'ENVELOPE';
  readonly createdAt: number;
  readonly updatedAt: number;
}

/**
 * How the environment's webhook events are made (CONTRACT.md "Today's clients, second
 * wave"): FLAT, SERVICE_SPEC's bodies and X-Service-Signature; ENVELOPE, `{id, type,
 * timestamp, data}` with X-Grid-Signature. An event keeps the format it was made in.
 */
export type WebhookFormat = 'FLAT' | 'ENVELOPE';
export const WEBHOOK_FORMATS: readonly WebhookFormat[] = ['FLAT', 'ENVELOPE'];

export function webhookFormatOf(config: PlatformConfig): WebhookFormat {
  return config.webhookFormat ?? 'FLAT';
}

/** A JSON Web Key as a platform lists it inline: public members only (typebox drops the rest). */
export interface PublicJwk {
  readonly kty: string;
  readonly kid?: string;
  readonly alg?: string;
  readonly use?: string;
  readonly crv?: string;
  readonly x?: string;
  readonly y?: string;
  readonly n?: string;
  readonly e?: string;
}

/** An accepted OIDC issuer: its keys by URL or inline, exactly one of the two. */
export interface OidcIssuerConfig {
  readonly issuer: string;
  readonly jwksUri?: string;
  readonly jwks?: { readonly keys: readonly PublicJwk[] };
  /** When set, a token's `aud` must name it. */
  readonly audience?: string;
}

export interface WebauthnConfig {
  readonly rpId: string;
  readonly rpName: string;
  readonly origins: readonly string[];
}

/** The embedded-wallet settings of an environment (CONTRACT.md "Embedded-wallet API"), defaults filled. */
export interface EmbeddedWalletConfig {
  readonly appName: string;
  readonly otpLength: number;
  readonly expirationSeconds: number;
  readonly sendFromEmailAddress: string;
  readonly sendFromEmailSenderName: string;
  readonly sessionLifetimeSeconds: number;
  readonly oidcIssuers: readonly OidcIssuerConfig[];
  readonly webauthn: WebauthnConfig;
}

export interface EmbeddedWalletSettings {
  readonly appName?: string;
  readonly otpLength?: number;
  readonly expirationSeconds?: number;
  readonly sendFromEmailAddress?: string;
  readonly sendFromEmailSenderName?: string;
  readonly sessionLifetimeSeconds?: number;
  readonly oidcIssuers?: readonly OidcIssuerConfig[];
  readonly webauthn?: Partial<WebauthnConfig>;
}

export const OTP_LENGTH = { min: 4, max: 12, default: 6 } as const;
export const OTP_EXPIRATION_SECONDS = { min: 60, max: 3600, default: 600 } as const;
export const SESSION_LIFETIME_SECONDS = { min: 60, max: 86_400, default: 900 } as const;
export const DEFAULT_APP_NAME = 'Embedded Wallet';
/** Sizes of the embedded-wallet settings: they ride in every configuration read, and logins search them. */
export const MAX_OIDC_ISSUERS = 10;
export const MAX_INLINE_JWKS = 20;
export const MAX_WEBAUTHN_ORIGINS = 20;

/**
 * The embedded-wallet settings with defaults filled. Defaults naming a host follow the
 * environment's current umaDomain: mail from `no-reply@<umaDomain>`, passkeys for the
 * relying party `<umaDomain>` at `https://<umaDomain>`.
 */
export function embeddedWalletConfigOf(config: PlatformConfig): EmbeddedWalletConfig {
  const set = config.embeddedWallet ?? {};
  const appName = set.appName ?? DEFAULT_APP_NAME;
  const rpId = set.webauthn?.rpId ?? config.umaDomain;
  return {
    appName,
    otpLength: set.otpLength ?? OTP_LENGTH.default,
    expirationSeconds: set.expirationSeconds ?? OTP_EXPIRATION_SECONDS.default,
    sendFromEmailAddress: set.sendFromEmailAddress ?? `no-reply@${config.umaDomain}`,
    sendFromEmailSenderName: set.sendFromEmailSenderName ?? appName,
    sessionLifetimeSeconds: set.sessionLifetimeSeconds ?? SESSION_LIFETIME_SECONDS.default,
    oidcIssuers: set.oidcIssuers ?? [],
    webauthn: {
      rpId,
      rpName: set.webauthn?.rpName ?? appName,
      origins: set.webauthn?.origins ?? [`https://${rpId}`],
    },
  };
}

/** What an API token may do (CONTRACT.md): each route needs one of them. */
export type Permission = 'VIEW' | 'TRANSACT' | 'MANAGE';
export const PERMISSIONS: readonly Permission[] = ['VIEW', 'TRANSACT', 'MANAGE'];

/**
 * A token's permissions as bits, so that authentication checks one with an AND on every
 * request instead of searching a list.
 */
export type PermissionBits = number;
export const PERMISSION_BIT: Readonly<Record<Permission, PermissionBits>> = { VIEW: 1, TRANSACT: 2, MANAGE: 4 };
const ALL_PERMISSIONS: PermissionBits = 7;

export function permissionBits(permissions: readonly Permission[]): PermissionBits {
  let bits = 0;
  for (const p of permissions) bits |= PERMISSION_BIT[p];
  return bits;
}

/** What a token's permissions grant: a token made before permissions existed (none listed) holds all three. */
export function grantedBits(permissions: readonly Permission[] | undefined): PermissionBits {
  return permissions === undefined ? ALL_PERMISSIONS : permissionBits(permissions);
}

/** Most tokens an environment holds at once: every token rides in its environment's record. */
export const MAX_TOKENS_PER_ENV = 100;

export interface ApiToken {
  /** The token's client id: the user name of HTTP Basic credentials. */
  readonly tokenId: string;
  /** SHA-256 hex of the client secret; the secret itself is never stored. */
  readonly secretHash: string;
  /**
   * `Token:<UUIDv7>`, and what POST /tokens set (name, permissions, time). The tokens an
   * environment is created with have none of them: they hold every permission, and
   * `tokenRecordOf` gives them an id and name of their own.
   */
  readonly id?: string;
  readonly name?: string;
  readonly permissions?: readonly Permission[];
  readonly createdAt?: number;
}

/** A token as the API shows it: every field filled, the secret's hash aside. */
export interface TokenRecord {
  readonly id: string;
  readonly tokenId: string;
  readonly name: string;
  readonly permissions: readonly Permission[];
  readonly createdAt: number;
}

/**
 * The token as the API shows it. An environment's first token gets an id derived from the
 * environment's creation time and the random part of its client id: a UUIDv7 in form, so it
 * sorts and pages like the ids of created tokens, and the same on every replay.
 */
export function tokenRecordOf(env: PlatformEnv, token: ApiToken): TokenRecord {
  return {
    id: token.id ?? firstTokenId(env.createdAt, token.tokenId),
    tokenId: token.tokenId,
    name: token.name ?? `${env.environment === 'sandbox' ? 'Sandbox' : 'Production'} token made with the platform`,
    permissions: token.permissions ?? PERMISSIONS,
    createdAt: token.createdAt ?? env.createdAt,
  };
}

/** A token as GET /tokens shows it (the vendor's ApiToken): never its secret, which only the 201 of its creation carries. */
export interface TokenView {
  id: string;
  name: string;
  permissions: Permission[];
  clientId: string;
  createdAt: string;
  updatedAt: string;
}

/** A token cannot change, so it was last updated when it was made. */
export function renderToken(token: TokenRecord): TokenView {
  const createdAt = isoTime(token.createdAt);
  return { id: token.id, name: token.name, permissions: [...token.permissions], clientId: token.tokenId, createdAt, updatedAt: createdAt };
}

/** `Token:` and a UUIDv7 of `createdAt` whose other bits are the first 19 hex digits of the client id's random part. */
function firstTokenId(createdAt: number, tokenId: string): string {
  const random = tokenId.slice(tokenId.lastIndexOf('_') + 1).padEnd(19, '0');
  const time = createdAt.toString(16).padStart(12, '0').slice(-12);
  const variant = (8 | (parseInt(random[3]!, 16) & 3)).toString(16);
  return `Token:${time.slice(0, 8)}-${time.slice(8)}-7${random.slice(0, 3)}-${variant}${random.slice(4, 7)}-${random.slice(7, 19)}`;
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
  | { type: 'config.updated'; envId: string; config: PlatformConfig }
  /** POST /tokens: the token with its secret's hash; it was made at the entry's time. */
  | { type: 'token.created'; envId: string; token: Omit<ApiToken, 'createdAt'> }
  /** DELETE /tokens/{id}: the token, by its client id, opens nothing from this entry on. */
  | { type: 'token.revoked'; envId: string; tokenId: string };

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
  embeddedWalletConfig?: EmbeddedWalletSettings;
  webhookFormat?: WebhookFormat;
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
  if (patch.webhookEndpoint !== undefined && patch.webhookEndpoint !== '') checkOutboundUrl('webhookEndpoint', patch.webhookEndpoint);
  const embeddedWallet = patch.embeddedWalletConfig === undefined ? undefined : patchedEmbeddedWallet(config, patch.embeddedWalletConfig);
  const { webhookFormat: _format, ...unformatted } = config;
  const webhookFormat = patch.webhookFormat ?? webhookFormatOf(config);
  return {
    ...unformatted,
    ...(webhookFormat === 'ENVELOPE' ? { webhookFormat } : {}),
    ...(patch.umaDomain !== undefined ? { umaDomain: patch.umaDomain.toLowerCase() } : {}),
    ...(patch.proxyUmaSubdomain !== undefined ? { proxyUmaSubdomain: patch.proxyUmaSubdomain } : {}),
    ...(patch.webhookEndpoint !== undefined ? { webhookEndpoint: patch.webhookEndpoint } : {}),
    ...(supportedCurrencies !== undefined ? { supportedCurrencies } : {}),
    ...(embeddedWallet !== undefined ? { embeddedWallet } : {}),
    updatedAt: at,
  };
}

/**
 * Merges an embeddedWalletConfig patch: omitted fields (and omitted webauthn members) keep
 * their values; a given oidcIssuers list replaces the old one. Ranges and formats the
 * schema cannot express are checked here, each refusal naming its field.
 */
function patchedEmbeddedWallet(config: PlatformConfig, patch: EmbeddedWalletSettings): EmbeddedWalletSettings {
  const prefix = 'embeddedWalletConfig';
  const current = config.embeddedWallet ?? {};
  checkRange(`${prefix}.otpLength`, patch.otpLength, OTP_LENGTH);
  checkRange(`${prefix}.expirationSeconds`, patch.expirationSeconds, OTP_EXPIRATION_SECONDS);
  checkRange(`${prefix}.sessionLifetimeSeconds`, patch.sessionLifetimeSeconds, SESSION_LIFETIME_SECONDS);
  if (patch.oidcIssuers !== undefined) {
    const seen = new Set<string>();
    patch.oidcIssuers.forEach((item, i) => {
      const field = `${prefix}.oidcIssuers.${i}`;
      checkHttpUrl(`${field}.issuer`, item.issuer);
      if (seen.has(item.issuer)) throw invalidField(`${field}.issuer`, `${item.issuer} is listed twice`);
      seen.add(item.issuer);
      if ((item.jwksUri === undefined) === (item.jwks === undefined)) throw invalidField(`${field}.jwksUri`, 'give exactly one of jwksUri or jwks');
      if (item.jwksUri !== undefined) {
        // Fetched by the service: an outbound URL (where it leads is the route's check).
        checkOutboundUrl(`${field}.jwksUri`, item.jwksUri);
        checkHttpUrl(`${field}.jwksUri`, item.jwksUri);
      }
      if (item.jwks !== undefined && item.jwks.keys.length === 0) throw invalidField(`${field}.jwks.keys`, 'at least one key');
    });
  }
  const webauthn = patch.webauthn === undefined ? current.webauthn : { ...current.webauthn, ...patch.webauthn };
  const next: EmbeddedWalletSettings = { ...current, ...patch, ...(webauthn !== undefined ? { webauthn } : {}) };
  if (patch.webauthn !== undefined) {
    const filled = embeddedWalletConfigOf({ ...config, embeddedWallet: next }).webauthn;
    if (patch.webauthn.rpId !== undefined) checkRpId(`${prefix}.webauthn.rpId`, filled.rpId);
    if (filled.origins.length === 0) throw invalidField(`${prefix}.webauthn.origins`, 'at least one origin');
    filled.origins.forEach((origin, i) => checkOrigin(`${prefix}.webauthn.origins.${i}`, origin, filled.rpId));
  }
  return next;
}

function checkRange(field: string, value: number | undefined, range: { min: number; max: number }): void {
  if (value === undefined) return;
  if (!Number.isInteger(value) || value < range.min || value > range.max) {
    throw invalidField(field, `must be an integer from ${range.min} to ${range.max}`);
  }
}

/** Loopback hosts may use http: a development identity provider or relying party. */
function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '127.0.0.1' || hostname === '[::1]';
}

function parseUrl(field: string, value: string): URL {
  try {
    return new URL(value);
  } catch {
    throw invalidField(field, 'must be an absolute URL');
  }
}

function checkHttpUrl(field: string, value: string): void {
  const url = parseUrl(field, value);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))) throw invalidField(field, 'must use https (http only on a loopback host)');
  if (url.username !== '' || url.password !== '') throw invalidField(field, 'must not carry credentials');
}

const DOMAIN_RE = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

function checkRpId(field: string, rpId: string): void {
  if (!DOMAIN_RE.test(rpId)) throw invalidField(field, 'must be a lower-case domain name without scheme or port');
}

/** WebAuthn origins: scheme, host and port only, on the relying party's domain or a subdomain of it. */
function checkOrigin(field: string, value: string, rpId: string): void {
  checkHttpUrl(field, value);
  const url = new URL(value);
  if (url.origin !== value) throw invalidField(field, `must be an origin such as ${url.origin} (no path, query or trailing slash)`);
  if (url.hostname !== rpId && !url.hostname.endsWith(`.${rpId}`)) throw invalidField(field, `host must be ${rpId} or a subdomain of it`);
}

/**
 * The syntax of a URL the service fetches because a platform gave it (`webhookEndpoint`,
 * POST /webhooks/test's `url`, an OIDC issuer's `jwksUri`): an absolute http(s) URL
 * without credentials. Whitespace and control characters are refused anywhere, not
 * trimmed: the URL parser silently drops them (leading, trailing, or a tab inside), so what
 * is stored would not be what is called. Where the URL may lead is the outbound policy's
 * question (src/outbound/target-policy.ts), which needs the network.
 */
export function checkOutboundUrl(field: string, value: string): URL {
  if (/[\s\u0000-\u001f\u007f]/u.test(value)) throw invalidField(field, 'must not contain whitespace or control characters');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalidField(field, 'must be an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidField(field, 'must use http or https');
  if (url.username !== '' || url.password !== '') throw invalidField(field, 'must not carry credentials');
  return url;
}

/** What a token opens, as authentication reads it on every request. */
export interface TokenGrant {
  readonly envId: string;
  readonly secretHash: string;
  readonly permissions: PermissionBits;
}

/** The platform environments, and the API-token index authentication reads. */
export class PlatformEnvs implements RecordKind<PlatformEnv, PlatformEvent> {
  readonly idPrefix = 'Platform:';
  readonly #envs = new RecordMap<PlatformEnv>();
  readonly #tokens = new Map<string, TokenGrant>();
  readonly records: ReadonlyMap<string, PlatformEnv> = this.#envs;

  readonly appliers: Appliers<PlatformEvent> = {
    'platform.env.created': (event) => {
      if (this.#envs.has(event.env.id)) throw new Error(`environment ${event.env.id} exists already`);
      this.restore(event.env);
    },
    'config.updated': (event) => {
      const env = this.#existing(event.envId);
      this.#envs.set(env.id, { ...env, config: event.config });
    },
    'token.created': (event, at) => {
      const env = this.#existing(event.envId);
      const token: ApiToken = { ...event.token, createdAt: at };
      this.#envs.set(env.id, { ...env, tokens: [...env.tokens, token] });
      this.#index(env.id, token);
    },
    'token.revoked': (event) => {
      const env = this.#existing(event.envId);
      this.#envs.set(env.id, { ...env, tokens: env.tokens.filter((t) => t.tokenId !== event.tokenId) });
      this.#tokens.delete(event.tokenId);
    },
  };

  #existing(envId: string): PlatformEnv {
    const env = this.#envs.get(envId);
    if (env === undefined) throw new Error(`no environment ${envId}`);
    return env;
  }

  #index(envId: string, token: ApiToken): void {
    this.#tokens.set(token.tokenId, { envId, secretHash: token.secretHash, permissions: grantedBits(token.permissions) });
  }

  restore(env: PlatformEnv): void {
    this.#envs.set(env.id, env);
    for (const t of env.tokens) this.#index(env.id, t);
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

  token(tokenId: string): TokenGrant | undefined {
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
  webhookPublicKeyPem: string;
  embeddedWalletConfig: EmbeddedWalletConfig & { signerPublicKey: string };
  webhookFormat: WebhookFormat;
  createdAt: string;
  updatedAt: string;
}

/** `signerPublicKey`: the service signer's uncompressed hex (one key for every environment of the store). */
export function renderConfig(env: PlatformEnv, signerPublicKey: string): PlatformConfigView {
  const c = env.config;
  return {
    id: c.id,
    umaDomain: c.umaDomain,
    proxyUmaSubdomain: c.proxyUmaSubdomain,
    webhookEndpoint: c.webhookEndpoint,
    supportedCurrencies: c.supportedCurrencies.map((s) => ({ ...s })),
    isRegulatedFinancialInstitution: c.isRegulatedFinancialInstitution,
    webhookPublicKey: env.webhookPublicKey,
    webhookPublicKeyPem: p256SpkiPem(env.webhookPublicKey),
    embeddedWalletConfig: { ...embeddedWalletConfigOf(c), signerPublicKey },
    webhookFormat: webhookFormatOf(c),
    createdAt: isoTime(c.createdAt),
    updatedAt: isoTime(c.updatedAt),
  };
}

/** DER prefix of a P-256 SubjectPublicKeyInfo (id-ecPublicKey, prime256v1) before the 65 key bytes. */
const P256_SPKI_PREFIX = '3059301306072a8648ce3d020106082a8648ce3d030107034200';

/** The SPKI PEM of an uncompressed SEC1 P-256 key (hex): what node:crypto's createPublicKey reads. */
export function p256SpkiPem(sec1Hex: string): string {
  const base64 = Buffer.from(P256_SPKI_PREFIX + sec1Hex, 'hex').toString('base64');
  const lines = base64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN PUBLIC KEY-----\n${lines.join('\n')}\n-----END PUBLIC KEY-----\n`;
}

export function supportsCurrency(env: PlatformEnv, code: string): boolean {
  return env.config.supportedCurrencies.some((s) => s.currencyCode === code);
}
