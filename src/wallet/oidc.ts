// OIDC id tokens for OAUTH credentials. Production verifies each token against the
// environment's trusted issuers (embeddedWalletConfig.oidcIssuers): the signature by a key
// of the issuer's JWKS (inline, or fetched from jwksUri and cached), the issuer, the
// audience where one is configured, `exp`, and freshness: SERVICE_SPEC part 8 wants `iat`
// less than 60 seconds before the request, so a fresh token is needed on every call.
// Sandbox only parses the token (`parseSandboxOidc`).
//
// A jwksUri is a URL the platform chose, so its key set is fetched through the service's
// one egress (src/outbound/egress.ts) under the outbound policy, never by jose's own
// fetch: production's rule (public addresses only unless the operator allows private
// targets), checked against the address connected to, no redirects, a bounded answer.
// Only production verifies tokens, so production's rule is the one that applies.
import { createLocalJWKSet, createRemoteJWKSet, customFetch, decodeJwt, decodeProtectedHeader, errors, jwtVerify, type FetchImplementation, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { OidcIdentity } from '../../actors/commands/wallet.js';
import type { OidcIssuerConfig } from '../../actors/platform.js';
import type { DocumentFetcher } from '../outbound/egress.js';
import { WalletAuthError } from './errors.js';

/** SERVICE_SPEC part 8: `iat` less than 60 s before the request. */
export const OIDC_MAX_TOKEN_AGE_MS = 60_000;
/** How far an issuer's clock may run ahead of ours (an `iat` in the future). */
export const OIDC_CLOCK_SKEW_MS = 5_000;
/** Issuers that sandbox accepts without configuration (CONTRACT.md). */
export const WELL_KNOWN_ISSUERS: readonly string[] = ['https://accounts.google.com', 'https://appleid.apple.com'];
/** Id tokens are a few KiB; anything far larger is refused before parsing. */
export const MAX_OIDC_TOKEN_CHARS = 16 * 1024;
/** Asymmetric algorithms only: a JWKS publishes public keys, and `none` or HMAC must never pass. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
/** A key set is a few KiB (a provider publishing certificate chains, some tens); a larger answer is refused. */
export const MAX_KEY_SET_BYTES = 256 * 1024;

export interface OidcVerifierOptions {
  /** Where key sets are fetched: the service's OutboundEgress, which applies the outbound policy. */
  fetcher: DocumentFetcher;
  /** Abort a JWKS fetch after this long (default 5 s). */
  fetchTimeoutMs?: number;
  /** Keep fetched keys this long before fetching again (default 10 min); an unknown `kid` refetches, at most every 30 s. */
  cacheMaxAgeMs?: number;
  /** Remote key sets kept (one per jwksUri; the least recently used goes first); default 100. */
  maxRemoteSets?: number;
}

export interface VerifiedOidcToken {
  issuer: string;
  subject: string;
  /** The `email` claim when the token carries one (the credential's nickname). */
  email?: string;
  issuedAtMs: number;
  expiresAtMs: number;
}

export class OidcVerifier {
  readonly #fetch: FetchImplementation;
  readonly #fetchTimeoutMs: number;
  readonly #cacheMaxAgeMs: number;
  readonly #maxRemoteSets: number;
  /** jwksUri -> key set; Map order is use order (re-inserted on each use). */
  readonly #remote = new Map<string, JWTVerifyGetKey>();
  /** Inline key sets by the configuration object holding them (replaced, never mutated, by PATCH /config). */
  readonly #inline = new WeakMap<object, JWTVerifyGetKey>();

  constructor(options: OidcVerifierOptions) {
    this.#fetchTimeoutMs = options.fetchTimeoutMs ?? 5_000;
    this.#cacheMaxAgeMs = options.cacheMaxAgeMs ?? 10 * 60_000;
    this.#maxRemoteSets = options.maxRemoteSets ?? 100;
    this.#fetch = keySetFetch(options.fetcher, this.#fetchTimeoutMs);
  }

  /** Verifies `token` at `nowMs` against `issuers`; throws WalletAuthError('Invalid OIDC token') naming the failed check in `detail`. */
  async verify(token: string, issuers: readonly OidcIssuerConfig[], nowMs: number): Promise<VerifiedOidcToken> {
    const claims = decodeClaims(token);
    const issuer = issuers.find((candidate) => candidate.issuer === claims.iss);
    if (issuer === undefined) throw refused(`issuer ${JSON.stringify(claims.iss ?? null)} is not a trusted issuer of this environment`);
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.#keySet(issuer), {
        issuer: issuer.issuer,
        ...(issuer.audience !== undefined ? { audience: issuer.audience } : {}),
        algorithms: ALGORITHMS,
        requiredClaims: ['iat', 'exp', 'sub'],
        currentDate: new Date(nowMs),
      }));
    } catch (error) {
      throw refused(describeJoseError(error));
    }
    const issuedAtMs = payload.iat! * 1000;
    if (issuedAtMs > nowMs + OIDC_CLOCK_SKEW_MS) throw refused(`iat is ${Math.round((issuedAtMs - nowMs) / 1000)} s in the future`);
    if (nowMs - issuedAtMs >= OIDC_MAX_TOKEN_AGE_MS) throw refused(`iat is ${Math.round((nowMs - issuedAtMs) / 1000)} s old; at most ${OIDC_MAX_TOKEN_AGE_MS / 1000} s allowed`);
    return {
      issuer: issuer.issuer,
      subject: payload.sub!,
      ...(typeof payload.email === 'string' ? { email: payload.email } : {}),
      issuedAtMs,
      expiresAtMs: payload.exp! * 1000,
    };
  }

  #keySet(issuer: OidcIssuerConfig): JWTVerifyGetKey {
    if (issuer.jwks !== undefined) {
      let set = this.#inline.get(issuer.jwks);
      if (set === undefined) {
        // jose wants a mutable JSONWebKeySet; the configuration's is read-only.
        set = createLocalJWKSet({ keys: issuer.jwks.keys.map((key) => ({ ...key })) });
        this.#inline.set(issuer.jwks, set);
      }
      return set;
    }
    const uri = issuer.jwksUri!;
    let set = this.#remote.get(uri);
    if (set === undefined) {
      set = createRemoteJWKSet(new URL(uri), { timeoutDuration: this.#fetchTimeoutMs, cacheMaxAge: this.#cacheMaxAgeMs, [customFetch]: this.#fetch });
      if (this.#remote.size >= this.#maxRemoteSets) this.#remote.delete(this.#remote.keys().next().value!);
    } else {
      this.#remote.delete(uri);
    }
    this.#remote.set(uri, set);
    return set;
  }
}

/**
 * jose's fetch for remote key sets, through `fetcher` under production's rule. A refusal,
 * a timeout (jose reports a TimeoutError as such) or an oversized answer rejects; any
 * status but 200 is refused here, a redirect included, with the status in the message.
 */
function keySetFetch(fetcher: DocumentFetcher, timeoutMs: number): FetchImplementation {
  return async (url, options) => {
    const headers: Record<string, string> = {};
    options.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const answer = await fetcher.get({
      environment: 'production',
      url,
      headers,
      timeoutMs,
      signal: options.signal,
      maxBytes: MAX_KEY_SET_BYTES,
    });
    if (answer.statusCode !== 200) throw new Error(`the key set endpoint answered ${answer.statusCode}, not 200`);
    return new Response(new Uint8Array(answer.body), { status: 200, headers: { 'content-type': 'application/json' } });
  };
}

/**
 * Sandbox `POST /auth/credentials` with OAUTH: the token must be a structurally valid JWT
 * (three base64url parts, JSON header with `alg`, JSON claims) whose `iss` is one of
 * `knownIssuers` (the configured ones) or a well-known issuer. The signature is not checked.
 */
export function parseSandboxOidc(token: string, knownIssuers: readonly string[]): OidcIdentity {
  const claims = decodeClaims(token);
  if (typeof claims.iss !== 'string' || !(knownIssuers.includes(claims.iss) || WELL_KNOWN_ISSUERS.includes(claims.iss))) {
    throw refused(`issuer ${JSON.stringify(claims.iss ?? null)} is not recognised`);
  }
  return {
    issuer: claims.iss,
    ...(typeof claims.sub === 'string' ? { subject: claims.sub } : {}),
    ...(typeof claims.email === 'string' ? { email: claims.email } : {}),
  };
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** The claims of a compact JWS, unverified; refuses anything that is not one. */
function decodeClaims(token: string): JWTPayload {
  if (token.length > MAX_OIDC_TOKEN_CHARS) throw refused(`token longer than ${MAX_OIDC_TOKEN_CHARS} characters`);
  if (!JWT_SHAPE.test(token)) throw refused('not a compact JWT (header.payload.signature in base64url)');
  try {
    const header = decodeProtectedHeader(token);
    if (typeof header.alg !== 'string') throw new Error('no alg in the header');
    return decodeJwt(token);
  } catch (error) {
    throw refused(`not a JWT: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function refused(detail: string): WalletAuthError {
  return new WalletAuthError('Invalid OIDC token', detail);
}

/** jose's errors say which check failed; none of them quotes the token. */
function describeJoseError(error: unknown): string {
  if (error instanceof errors.JOSEError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
