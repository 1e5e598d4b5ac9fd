// Embedded-wallet state: the credentials, sessions, pending signed requests and sealed
// mnemonic of one EMBEDDED_WALLET internal account. The account's actor owns it: every
// decision about a wallet holds the account id, so a stamp check and a concurrent
// revocation are serialised by the account's actor.
//
// One record per wallet (`Wallet:<the account's uuid>`), replaced whole on every change:
// it is small and bounded (below), and a change is one `wallet.changed` event carrying the
// new record, so replay is a plain put. The decisions are commands (actors/commands/wallet-*.ts);
// cryptography and the production verifiers happen in src/ behind their WalletPorts: what
// reaches the decisions are results (hashes, public keys, sealed bytes, verified outcomes).
//
// Bounds: one credential of each type (3); MAX_ACTIVE_SESSIONS live sessions; the last
// MAX_ENDED_SESSIONS ended sessions kept (public key only) so a stamp of a revoked or
// expired session is refused as such; MAX_PENDING_REQUESTS signed requests open at once,
// and the ids of the last MAX_ENDED_REQUESTS expired ones.
// Sessions and requests are removed by durable timers at their expiry.
import { DomainError, invalidField, unauthorized } from './errors.js';
import type { InternalAccount } from './internal-account.js';
import { RecordMap, type Appliers, type RecordKind, type RecordLookup } from './registry.js';
import { isoTime } from './iso-time.js';

export type CredentialType = 'OAUTH' | 'EMAIL_OTP' | 'PASSKEY';
export const CREDENTIAL_TYPES: readonly CredentialType[] = ['OAUTH', 'EMAIL_OTP', 'PASSKEY'];

export const MAX_ACTIVE_SESSIONS = 20;
export const MAX_ENDED_SESSIONS = 20;
export const MAX_PENDING_REQUESTS = 16;
export const MAX_ENDED_REQUESTS = 32;
/** How long a signed-retry requestId (and a passkey challenge) stays valid. */
export const SIGNED_REQUEST_WINDOW_MS = 5 * 60_000;
/** At most one challenge per credential in this long (CONTRACT.md). */
export const CHALLENGE_INTERVAL_MS = 30_000;
/** Wrong codes a code survives before it is spent (CONTRACT.md "Embedded-wallet cryptography"). */
export const OTP_TRIES = 5;

// What sandbox accepts in place of each proof (SERVICE_SPEC 5.8), here and nowhere else;
// production accepts none of them. Sandbox takes real stamps as well.
export const SANDBOX_OTP = '000000';
export const SANDBOX_OIDC_TOKEN = 'sandbox-valid-oidc-token';
export const SANDBOX_PASSKEY_SIGNATURE = 'sandbox-valid-passkey-signature';
/** Wherever a Service-Wallet-Signature is asked for; it names no session. */
export const SANDBOX_SIGNATURE = 'sandbox-valid-signature';

export interface OtpState {
  /** Hash of the code; the code itself is never stored. */
  readonly codeHash: string;
  readonly expiresAt: number;
  readonly triesLeft: number;
}

/**
 * The key pair an EMAIL_OTP code may be encrypted to (encryptedOtpBundle), made afresh with
 * each create and challenge and named by the otpEncryptionTargetBundle of that answer.
 */
export interface OtpTarget {
  /** Uncompressed SEC1 hex: the bundle's targetPublic. */
  readonly publicKey: string;
  /** The private key sealed under the master key, bound to its credential; never stored in the clear. */
  readonly sealedPrivateKey: string;
}

export interface PasskeyKey {
  readonly credentialId: string;
  /** The authenticator's public key as registered (empty in sandbox, where nothing verifies it). */
  readonly publicKey: string;
  readonly counter: number;
  readonly transports: readonly string[];
}

export interface PasskeyChallenge {
  readonly requestId: string;
  readonly challenge: string;
  /** The verify that answers this challenge must present this key. */
  readonly clientPublicKey: string;
  readonly expiresAt: number;
}

export interface Credential {
  readonly id: string;
  readonly type: CredentialType;
  readonly nickname: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly email?: string;
  readonly otp?: OtpState;
  /** EMAIL_OTP: the target of the latest create or challenge (credentials made before encrypted codes have none until a challenge). */
  readonly otpTarget?: OtpTarget;
  readonly oauth?: { readonly issuer: string; readonly subject: string };
  readonly passkey?: PasskeyKey;
  readonly passkeyChallenge?: PasskeyChallenge;
  readonly lastChallengeAt?: number;
}

export interface WalletSession {
  readonly id: string;
  readonly credentialId: string;
  /**
   * Compressed SEC1 hex of the key that stamps for the session: either a key the service
   * made and sealed to the client (its private half went to the client only), or the
   * client's own compressed clientPublicKey, whose private half never left the client.
   */
  readonly publicKey: string;
  readonly createdAt: number;
  readonly expiresAt: number;
}

export interface EndedSession {
  readonly id: string;
  readonly publicKey: string;
  readonly endedAt: number;
  readonly why: 'expired' | 'revoked';
}

/** OTP_LOGIN: a right encrypted OTP code, whose session the verification token's key asks for. */
/** REFRESH_SESSION: a live session replaced by a new one for the key bound at step 1; UPDATE_ACCOUNT: PATCH /internal-accounts/{id}. */
export type SignedAction = 'ADD_CREDENTIAL' | 'REVOKE_CREDENTIAL' | 'REVOKE_SESSION' | 'REFRESH_SESSION' | 'EXPORT_WALLET' | 'UPDATE_ACCOUNT' | 'OTP_LOGIN';

export interface PendingRequest {
  /** `Request:<uuid>` */
  readonly id: string;
  readonly action: SignedAction;
  readonly method: string;
  /** The route's path with its parameters, as the first request reached it. */
  readonly path: string;
  /** SHA-256 hex of the first request's canonical JSON body. */
  readonly bodyHash: string;
  /** What the client signs, byte for byte; the service verifies against this copy. */
  readonly payloadToSign: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly used: boolean;
  /** The credential type added, revoked, or whose session is revoked. */
  readonly credentialType?: CredentialType;
  /** Export: the key bound at step 1. */
  readonly clientPublicKey?: string;
  /**
   * OTP_LOGIN: the public_key of the encrypted code (lowercase hex, either form). Its private
   * key stamps the retry, not a session's, and the session goes to it.
   */
  readonly loginPublicKey?: string;
}

export interface Wallet {
  /** `Wallet:<uuid of the internal account>` */
  readonly id: string;
  readonly accountId: string;
  readonly envId: string;
  readonly credentials: readonly Credential[];
  readonly sessions: readonly WalletSession[];
  readonly ended: readonly EndedSession[];
  readonly requests: readonly PendingRequest[];
  /** Ids of the last MAX_ENDED_REQUESTS requests whose window closed, so a late retry hears "expired". */
  readonly expiredRequests: readonly string[];
  /** The BIP-39 mnemonic sealed under the master key, made on first export. */
  readonly sealedMnemonic?: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export type WalletEvent = { type: 'wallet.changed'; wallet: Wallet };

/** What the wallet's durable timers deliver (held on the account's actor). */
export type WalletTimerMessage =
  | { type: 'wallet.session.expire'; accountId: string; sessionId: string }
  | { type: 'wallet.request.expire'; accountId: string; requestId: string };

const ACCOUNT_PREFIX = 'InternalAccount:';

export function walletIdOf(accountId: string): string {
  return `Wallet:${accountId.slice(ACCOUNT_PREFIX.length)}`;
}

/** The wallet of an EMBEDDED_WALLET account (see `walletAccountIn`), or a fresh empty one. */
export function walletOf(existing: Wallet | undefined, account: InternalAccount, at: number): Wallet {
  return existing ?? { id: walletIdOf(account.id), accountId: account.id, envId: account.envId, credentials: [], sessions: [], ended: [], requests: [], expiredRequests: [], createdAt: at, updatedAt: at };
}

export function changed(wallet: Wallet, at: number): WalletEvent {
  return { type: 'wallet.changed', wallet: { ...wallet, updatedAt: at } };
}

export function credentialOf(wallet: Wallet, credentialId: string): Credential | undefined {
  return wallet.credentials.find((c) => c.id === credentialId);
}

export function replaceCredential(wallet: Wallet, credential: Credential): Wallet {
  return { ...wallet, credentials: wallet.credentials.map((c) => (c.id === credential.id ? credential : c)) };
}

/** Refuses a second credential of a type (409). */
export function assertTypeFree(wallet: Wallet, type: CredentialType): void {
  const existing = wallet.credentials.find((c) => c.type === type);
  if (existing !== undefined) throw new DomainError('CREDENTIAL_EXISTS', `account ${wallet.accountId} already has a ${type} credential (${existing.id})`);
}

export function withCredential(wallet: Wallet, credential: Credential): Wallet {
  assertTypeFree(wallet, credential.type);
  return { ...wallet, credentials: [...wallet.credentials, credential] };
}

/** Seconds until the credential may be challenged again, or undefined when it may now. */
export function challengeRetryAfter(credential: Credential, at: number): number | undefined {
  if (credential.lastChallengeAt === undefined) return undefined;
  const wait = credential.lastChallengeAt + CHALLENGE_INTERVAL_MS - at;
  return wait > 0 ? Math.ceil(wait / 1000) : undefined;
}

/**
 * A session signs until its expiresAt, whether or not its expiry timer has fired yet: the
 * one rule for what may stamp, what counts against MAX_ACTIVE_SESSIONS and what is listed.
 */
export function isSessionLive(session: WalletSession, at: number): boolean {
  return session.expiresAt > at;
}

/** Seconds until a new session fits (the oldest live one expires), or undefined when it fits now. */
export function sessionRetryAfter(wallet: Wallet, at: number): number | undefined {
  const live = wallet.sessions.filter((s) => isSessionLive(s, at));
  if (live.length < MAX_ACTIVE_SESSIONS) return undefined;
  const soonest = Math.min(...live.map((s) => s.expiresAt));
  return Math.max(1, Math.ceil((soonest - at) / 1000));
}

/** Adds a session, dropping sessions already past expiry whose timer has not fired yet. */
export function withSession(wallet: Wallet, session: WalletSession, at: number): Wallet {
  const expired = wallet.sessions.filter((s) => !isSessionLive(s, at));
  const ended = endSessions(wallet, expired, 'expired', at);
  return { ...ended, sessions: [...ended.sessions, session] };
}

function endSessions(wallet: Wallet, sessions: readonly WalletSession[], why: EndedSession['why'], at: number): Wallet {
  if (sessions.length === 0) return wallet;
  const gone = new Set(sessions.map((s) => s.id));
  const tombstones = sessions.map((s) => ({ id: s.id, publicKey: s.publicKey, endedAt: at, why }));
  return {
    ...wallet,
    sessions: wallet.sessions.filter((s) => !gone.has(s.id)),
    ended: [...wallet.ended, ...tombstones].slice(-MAX_ENDED_SESSIONS),
  };
}

/**
 * A key the client keeps (a compressed clientPublicKey) stamps for one live session at a
 * time: a second would outlive the first's revocation. 400 naming `field` when `publicKey`
 * is already a live session's.
 */
export function assertKeyUnbound(wallet: Wallet, publicKey: string, at: number, field: string): void {
  const bound = wallet.sessions.find((s) => s.publicKey === publicKey && isSessionLive(s, at));
  if (bound !== undefined) throw invalidField(field, `the key is already that of live session ${bound.id}; use a fresh key for each verification`);
}

export function sessionOf(wallet: Wallet, sessionId: string): WalletSession | undefined {
  return wallet.sessions.find((s) => s.id === sessionId);
}

export function revokeSession(wallet: Wallet, sessionId: string, at: number): Wallet {
  return endSessions(wallet, wallet.sessions.filter((s) => s.id === sessionId), 'revoked', at);
}

/** The account's last credential cannot go (400). */
export function assertNotLast(wallet: Wallet, credentialId: string): void {
  if (wallet.credentials.length === 1 && wallet.credentials[0]!.id === credentialId) {
    throw new DomainError('LAST_CREDENTIAL', `${credentialId} is the account's last credential and cannot be revoked`);
  }
}

/** Removes a credential and revokes its sessions. */
export function revokeCredential(wallet: Wallet, credentialId: string, at: number): Wallet {
  assertNotLast(wallet, credentialId);
  const without = endSessions(wallet, wallet.sessions.filter((s) => s.credentialId === credentialId), 'revoked', at);
  return { ...without, credentials: without.credentials.filter((c) => c.id !== credentialId) };
}

/** Seconds until a pending request slot frees, or undefined when one is free now. */
export function requestRetryAfter(wallet: Wallet, at: number): number | undefined {
  const open = wallet.requests.filter((r) => r.expiresAt > at);
  if (open.length < MAX_PENDING_REQUESTS) return undefined;
  return Math.max(1, Math.ceil((Math.min(...open.map((r) => r.expiresAt)) - at) / 1000));
}

/** Adds a pending request; requests past their window whose timer has not fired yet end here. */
export function withRequest(wallet: Wallet, request: PendingRequest, at: number): Wallet {
  const closed = wallet.requests.filter((r) => r.expiresAt <= at).map((r) => r.id);
  return {
    ...wallet,
    requests: [...wallet.requests.filter((r) => r.expiresAt > at), request],
    expiredRequests: closed.length === 0 ? wallet.expiredRequests : [...wallet.expiredRequests, ...closed].slice(-MAX_ENDED_REQUESTS),
  };
}

/** What the retry presents, to be compared with what the first request bound. */
export interface RetryPresented {
  requestId: string;
  method: string;
  path: string;
  bodyHash: string;
  /** Export: the key the retry asks the bundle to be sealed to. */
  clientPublicKey?: string;
}

/** The pending request the retry names, once it is known, unused, in time and repeated exactly; else 401. */
export function pendingRequest(wallet: Wallet, presented: RetryPresented, at: number): PendingRequest {
  const request = wallet.requests.find((r) => r.id === presented.requestId);
  if (request === undefined) {
    if (wallet.expiredRequests.includes(presented.requestId)) throw unauthorized('Request-Id expired');
    throw unauthorized('Request-Id unknown', `Request-Id ${presented.requestId} is not pending for this request's account`);
  }
  if (request.used) throw unauthorized('Request-Id already used');
  if (request.expiresAt <= at) throw unauthorized('Request-Id expired');
  if (request.method !== presented.method || request.path !== presented.path) {
    throw unauthorized('Request-Id was issued for another request', `Request-Id was issued for ${request.method} ${request.path}, not ${presented.method} ${presented.path}`);
  }
  if (request.clientPublicKey !== undefined && request.clientPublicKey.toLowerCase() !== presented.clientPublicKey?.toLowerCase()) {
    throw unauthorized('clientPublicKey differs from the one bound at step 1');
  }
  if (request.bodyHash !== presented.bodyHash) {
    throw unauthorized('Request body differs from the first request', 'the retry must repeat the body of the request the Request-Id was issued for');
  }
  return request;
}

export function markUsed(wallet: Wallet, requestId: string): Wallet {
  return { ...wallet, requests: wallet.requests.map((r) => (r.id === requestId ? { ...r, used: true } : r)) };
}

/**
 * The live session whose key made a (verified) stamp, else 401: an ended session is named
 * as such, any other key is not one of this account's sessions.
 */
export function sessionForKey(wallet: Wallet, publicKey: string, at: number): WalletSession {
  const session = wallet.sessions.find((s) => s.publicKey === publicKey);
  if (session !== undefined && isSessionLive(session, at)) return session;
  if (session !== undefined) throw unauthorized('Session expired');
  // Newest last: a key is one session's, but read from the end to be sure of the latest outcome.
  const ended = [...wallet.ended].reverse().find((s) => s.publicKey === publicKey);
  if (ended?.why === 'expired') throw unauthorized('Session expired');
  if (ended?.why === 'revoked') throw unauthorized('Session revoked');
  throw unauthorized('Invalid Service-Wallet-Signature', 'the stamp was not made by an active session of this account');
}

/** A due timer: the session ends if it is still there and due. */
export function decideTimer(wallet: Wallet | undefined, message: WalletTimerMessage, at: number): WalletEvent[] {
  if (wallet === undefined) return [];
  if (message.type === 'wallet.session.expire') {
    const due = wallet.sessions.filter((s) => s.id === message.sessionId && !isSessionLive(s, at));
    return due.length === 0 ? [] : [changed(endSessions(wallet, due, 'expired', at), at)];
  }
  if (!wallet.requests.some((r) => r.id === message.requestId && r.expiresAt <= at)) return [];
  const requests = wallet.requests.filter((r) => r.id !== message.requestId);
  const expiredRequests = [...wallet.expiredRequests, message.requestId].slice(-MAX_ENDED_REQUESTS);
  return [changed({ ...wallet, requests, expiredRequests }, at)];
}

/**
 * The wallets, with indexes from credential and session ids to their wallet (for the
 * routes that name only those). Indexes change only through `wallet.changed`, under the
 * account's actor.
 */
export class Wallets implements RecordKind<Wallet, WalletEvent> {
  readonly idPrefix = 'Wallet:';
  /** A wallet is its EMBEDDED_WALLET account's state. */
  actorOf(wallet: Wallet): string {
    return wallet.accountId;
  }
  readonly #wallets = new RecordMap<Wallet>();
  readonly #byMember = new Map<string, string>();
  readonly records: ReadonlyMap<string, Wallet> = this.#wallets;

  readonly appliers: Appliers<WalletEvent> = {
    'wallet.changed': (event) => this.restore(event.wallet),
  };

  restore(wallet: Wallet): void {
    const previous = this.#wallets.get(wallet.id);
    if (previous !== undefined) for (const id of memberIds(previous)) this.#byMember.delete(id);
    this.#wallets.set(wallet.id, wallet);
    for (const id of memberIds(wallet)) this.#byMember.set(id, wallet.id);
  }

  checkInvariants(lookup: RecordLookup): string[] {
    const problems: string[] = [];
    for (const w of this.#wallets.values()) {
      if (!lookup.has(w.accountId)) problems.push(`${w.id} belongs to unknown account ${w.accountId}`);
      for (const type of CREDENTIAL_TYPES) {
        if (w.credentials.filter((c) => c.type === type).length > 1) problems.push(`${w.id} has more than one ${type} credential`);
      }
      for (const s of w.sessions) {
        if (credentialOf(w, s.credentialId) === undefined) problems.push(`${s.id} of ${w.id} belongs to no credential of the wallet`);
      }
      if (w.sessions.length > MAX_ACTIVE_SESSIONS) problems.push(`${w.id} holds ${w.sessions.length} sessions`);
      if (w.ended.length > MAX_ENDED_SESSIONS) problems.push(`${w.id} keeps ${w.ended.length} ended sessions`);
      if (w.requests.length > MAX_PENDING_REQUESTS) problems.push(`${w.id} holds ${w.requests.length} pending requests`);
      if (w.expiredRequests.length > MAX_ENDED_REQUESTS) problems.push(`${w.id} remembers ${w.expiredRequests.length} expired requests`);
    }
    return problems;
  }

  get(id: string): Wallet | undefined {
    return this.#wallets.get(id);
  }

  ofAccount(accountId: string): Wallet | undefined {
    return this.#wallets.get(walletIdOf(accountId));
  }

  /** The wallet holding a credential or session id. */
  holding(memberId: string): Wallet | undefined {
    const walletId = this.#byMember.get(memberId);
    return walletId === undefined ? undefined : this.#wallets.get(walletId);
  }
}

function memberIds(wallet: Wallet): string[] {
  return [...wallet.credentials.map((c) => c.id), ...wallet.sessions.map((s) => s.id)];
}

export interface AuthMethodView {
  id: string;
  accountId: string;
  type: CredentialType;
  nickname: string;
  createdAt: string;
  updatedAt: string;
}

export function renderAuthMethod(wallet: Wallet, credential: Credential): AuthMethodView {
  return {
    id: credential.id,
    accountId: wallet.accountId,
    type: credential.type,
    nickname: credential.nickname,
    createdAt: isoTime(credential.createdAt),
    updatedAt: isoTime(credential.updatedAt),
  };
}

export interface SessionView extends AuthMethodView {
  expiresAt: string;
}

export function renderSession(wallet: Wallet, session: WalletSession): SessionView {
  const credential = credentialOf(wallet, session.credentialId)!;
  return {
    id: session.id,
    accountId: wallet.accountId,
    type: credential.type,
    nickname: credential.nickname,
    createdAt: isoTime(session.createdAt),
    updatedAt: isoTime(session.createdAt),
    expiresAt: isoTime(session.expiresAt),
  };
}
