// HTTP Basic authentication against platform API tokens: `<token id>:<client secret>`.
// Only the SHA-256 of a secret is stored (secrets are 256-bit random, so a fast hash is
// enough), and hashes are compared in constant time.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { drawBytes } from '../engine/entropy.js';
import type { MasterKey } from '../crypto/master-key.js';
import { PERMISSION_BIT, type Permission, type PlatformEnv, type TokenGrant } from '../../actors/platform.js';
import { DomainError, unauthorized } from '../../actors/errors.js';

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export interface IssuedToken {
  tokenId: string;
  clientSecret: string;
  secretHash: string;
}

/** A token id: its environment, 12 random bytes, and the tag of both (TOKEN_ID_TAG_BYTES), all hex. */
const TAGGED_TOKEN_ID = /^(tok_(?:sbx|prd)_[0-9a-f]{24})([0-9a-f]{16})$/;
/** 64 bits: a made-up id passes the check with odds of 2^-64. */
const TOKEN_ID_TAG_BYTES = 8;

/** The key that tags token ids: derived from the master key, so every process that holds the key holds the same. */
export function tokenIdKey(masterKey: MasterKey): Buffer {
  return masterKey.derive('api token id tag');
}

function tokenIdTag(idKey: Buffer, untagged: string): Buffer {
  return createHmac('sha256', idKey).update(untagged, 'utf8').digest().subarray(0, TOKEN_ID_TAG_BYTES);
}

/**
 * Whether the service issued `tokenId` (its tag checks under `idKey`), told without looking
 * the token up: a token source kept elsewhere is asked only about such ids.
 * Ids issued before tags were added do not pass.
 */
export function isIssuedTokenId(idKey: Buffer, tokenId: string): boolean {
  const m = TAGGED_TOKEN_ID.exec(tokenId);
  return m !== null && timingSafeEqual(Buffer.from(m[2]!, 'hex'), tokenIdTag(idKey, m[1]!));
}

/** A new token's client id and secret, drawn through the entropy seam, and the hash that is all the store keeps. */
export function issueToken(environment: string, idKey: Buffer): IssuedToken {
  const untagged = `tok_${environment === 'sandbox' ? 'sbx' : 'prd'}_${drawBytes(12).toString('hex')}`;
  const tokenId = `${untagged}${tokenIdTag(idKey, untagged).toString('hex')}`;
  const clientSecret = `sk_${drawBytes(32).toString('base64url')}`;
  return { tokenId, clientSecret, secretHash: hashSecret(clientSecret) };
}

const BASIC = /^Basic\s+([A-Za-z0-9+/=_-]{1,4096})\s*$/i;

/** Verified headers kept per server; when full, the oldest goes. */
const VERIFIED_CAPACITY = 4096;

/** The token id and secret of HTTP Basic credentials, or the 401 that says what is wrong with them. */
export function credentialsOf(authorization: string): { tokenId: string; secret: string } {
  if (authorization === '') throw unauthorized('Missing Authorization header (HTTP Basic with an API token)');
  const m = BASIC.exec(authorization);
  if (m === null) throw unauthorized('Authorization must be HTTP Basic credentials');
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) throw unauthorized('Basic credentials must be <token id>:<client secret>');
  return { tokenId: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
}

/** Where tokens and their environments are looked up: the world's index, or a host's copy of every token. */
export interface TokenSource {
  token(tokenId: string): TokenGrant | undefined;
  get(envId: string): PlatformEnv | undefined;
}

/** Whom a request's credentials name: the token's client id and its environment. */
export interface Caller {
  readonly tokenId: string;
  readonly env: PlatformEnv;
}

/** A header that passed the full check: its caller, with the environment as last read (updated in place). */
interface VerifiedHeader {
  readonly tokenId: string;
  readonly secretHash: string;
  env: PlatformEnv;
}

/** 403 naming the permission the token lacks (CONTRACT.md). */
function forbidden(needed: Permission): DomainError {
  return new DomainError('FORBIDDEN', `this API token lacks the ${needed} permission this operation needs; use a token that holds ${needed}`);
}

/**
 * Checks Authorization headers against a token source's API tokens, and the permission a
 * route needs against the token's. Headers already verified are remembered, so the hot path
 * skips base64 and SHA-256 and allocates nothing (the remembered caller is handed out, its
 * environment refreshed); only headers that passed the full check are remembered, and a hit
 * is re-checked against the live token table, so a revoked token stops working at once.
 */
export class Authenticator {
  readonly #verified = new Map<string, VerifiedHeader>();

  constructor(private readonly tokens: TokenSource) {}

  /** The caller the credentials name, or a 401 naming what is wrong with them, or a 403 naming `needed` when the token lacks it. */
  authenticate(authorization: string, needed: Permission): Caller {
    const known = this.#verified.get(authorization);
    if (known !== undefined) {
      const token = this.tokens.token(known.tokenId);
      const env = token !== undefined && token.secretHash === known.secretHash ? this.tokens.get(token.envId) : undefined;
      if (env !== undefined) {
        if ((token!.permissions & PERMISSION_BIT[needed]) === 0) throw forbidden(needed);
        known.env = env;
        return known;
      }
      this.#verified.delete(authorization);
    }
    const { tokenId, secret } = credentialsOf(authorization);
    const token = this.tokens.token(tokenId);
    // Hash even for unknown tokens, so timing does not tell which token ids exist.
    const presented = Buffer.from(hashSecret(secret), 'hex');
    const expected = Buffer.from(token?.secretHash ?? '0'.repeat(64), 'hex');
    if (!timingSafeEqual(presented, expected) || token === undefined) throw unauthorized('Invalid API token id or client secret');
    const env = this.tokens.get(token.envId);
    if (env === undefined) throw unauthorized('Invalid API token id or client secret');
    if (this.#verified.size >= VERIFIED_CAPACITY) this.#verified.delete(this.#verified.keys().next().value!);
    const caller: VerifiedHeader = { tokenId, secretHash: token.secretHash, env };
    this.#verified.set(authorization, caller);
    if ((token.permissions & PERMISSION_BIT[needed]) === 0) throw forbidden(needed);
    return caller;
  }
}
