// The signed-retry protocol (SERVICE_SPEC 5.5, CONTRACT.md "Embedded-wallet API") and the
// stamp check every wallet-authorised action shares (quote execution included). Both run
// inside a decision that holds the wallet's account, so the sessions they check cannot be
// revoked or expire underneath them.
import { rateLimited, unauthorized } from '../../actors/errors.js';
import type { Environment } from '../../actors/platform.js';
import {
  changed,
  markUsed,
  pendingRequest,
  requestRetryAfter,
  sessionForKey,
  SIGNED_REQUEST_WINDOW_MS,
  withRequest,
  type CredentialType,
  type PendingRequest,
  type SignedAction,
  type Wallet,
  type WalletEvent,
} from '../../actors/wallet.js';
import { newId } from '../engine/ids.js';
import type { EngineEvent } from '../engine/state-machine.js';
import type { TimerMessage } from '../../actors/world.js';
import { requestHash } from '../crypto/canonical-json.js';
import type { Services } from '../services.js';
import { isoTime } from '../../actors/iso-time.js';

/** Sandbox accepts this literal wherever a stamp is asked for (SERVICE_SPEC 5.8). */
export const SANDBOX_SIGNATURE = 'sandbox-valid-signature';

/** Who signed: a session of the wallet, or (sandbox) the magic literal, which names none. */
export interface WalletSigner {
  sessionId?: string;
  credentialId?: string;
}

/**
 * Verifies a `Service-Wallet-Signature` over `payload` (the service's own copy) against
 * the live sessions of the embedded wallet `accountId` at `at`; throws 401 with the failed
 * check as `reason`. Call it inside a decision holding `accountId` (quote execution does,
 * with the quote's payloadToSign), so no revocation or expiry can slip in between.
 */
export async function verifyWalletStamp(
  services: Services,
  environment: Environment,
  accountId: string,
  header: string | undefined,
  payload: string,
  at: number,
): Promise<WalletSigner> {
  if (header === undefined) throw unauthorized('Invalid Service-Wallet-Signature', 'the Service-Wallet-Signature header is missing');
  if (environment === 'sandbox' && header === SANDBOX_SIGNATURE) return {};
  const result = await services.crypto.verifyStamp({ header, payload });
  if (!result.ok) throw unauthorized('Invalid Service-Wallet-Signature', `Invalid Service-Wallet-Signature: ${result.error.reason}`);
  const wallet = services.world.wallets.ofAccount(accountId);
  if (wallet === undefined) throw unauthorized('Invalid Service-Wallet-Signature', 'the wallet has no sessions');
  const session = sessionForKey(wallet, result.publicKey, at);
  return { sessionId: session.id, credentialId: session.credentialId };
}

/** What a signed request binds besides action, account, request id, expiry and body. */
export interface SignedRequestSpec {
  action: SignedAction;
  method: string;
  /** The route's path with its parameters (under the version segment). */
  path: string;
  /** The validated body ({} for a bodiless request). */
  body: unknown;
  credentialType?: CredentialType;
  /** Export: the key the bundle will be sealed to. */
  clientPublicKey?: string;
  /** Named targets (credentialId, sessionId) put into the payload as they are. */
  binds?: Readonly<Record<string, string>>;
}

type Events = Array<WalletEvent | EngineEvent<TimerMessage>>;

/** Step 1: a pending request, its expiry timer, and the 202 SignedRequestChallenge. */
export function openSignedRequest(services: Services, wallet: Wallet, spec: SignedRequestSpec, at: number): { events: Events; body: Record<string, string> } {
  const retryAfter = requestRetryAfter(wallet, at);
  if (retryAfter !== undefined) throw rateLimited(`account ${wallet.accountId} has too many signed requests pending`, retryAfter);
  const requestId = newId('Request', at);
  const expiresAt = at + SIGNED_REQUEST_WINDOW_MS;
  const bodyHash = requestHash(spec.body);
  // Key order is fixed here; the client signs these exact bytes and the service keeps them.
  const payloadToSign = JSON.stringify({
    action: spec.action,
    accountId: wallet.accountId,
    requestId,
    method: spec.method,
    path: spec.path,
    ...(spec.binds ?? {}),
    ...(spec.clientPublicKey !== undefined ? { clientPublicKey: spec.clientPublicKey } : {}),
    bodySha256: bodyHash,
    expiresAt: isoTime(expiresAt),
  });
  const request: PendingRequest = {
    id: requestId,
    action: spec.action,
    method: spec.method,
    path: spec.path,
    bodyHash,
    payloadToSign,
    createdAt: at,
    expiresAt,
    used: false,
    ...(spec.credentialType !== undefined ? { credentialType: spec.credentialType } : {}),
    ...(spec.clientPublicKey !== undefined ? { clientPublicKey: spec.clientPublicKey } : {}),
  };
  const body: Record<string, string> = { payloadToSign, requestId, expiresAt: isoTime(expiresAt) };
  if (spec.credentialType !== undefined) body.type = spec.credentialType;
  return {
    events: [
      changed(withRequest(wallet, request, at), at),
      services.engine.timer(expiresAt, [wallet.accountId], { type: 'wallet.request.expire', accountId: wallet.accountId, requestId }, at, requestId),
    ],
    body,
  };
}

/** The headers of a signed retry (step 2): which pending request, and the stamp over it. */
export interface SignedRetryHeaders {
  readonly requestId?: string;
  readonly walletSignature?: string;
}

/** True when the request carries either signed-retry header: it is a step-2 retry. */
export function isRetry(headers: SignedRetryHeaders): boolean {
  return headers.requestId !== undefined || headers.walletSignature !== undefined;
}

/**
 * Step 2: the pending request the retry names (known, unused, in time, the same method,
 * path and body), the stamp over its payloadToSign verified, and the wallet with the
 * request marked used. Throws 401 naming the failed check; nothing changes then.
 */
export async function acceptSignedRequest(
  services: Services,
  environment: Environment,
  wallet: Wallet | undefined,
  headers: SignedRetryHeaders,
  spec: SignedRequestSpec,
  at: number,
): Promise<{ request: PendingRequest; signer: WalletSigner; wallet: Wallet }> {
  const requestId = headers.requestId;
  if (requestId === undefined) throw unauthorized('Request-Id missing', 'a signed retry needs the Request-Id header with Service-Wallet-Signature');
  if (headers.walletSignature === undefined) throw unauthorized('Invalid Service-Wallet-Signature', 'a signed retry needs the Service-Wallet-Signature header with Request-Id');
  if (wallet === undefined) throw unauthorized('Request-Id unknown', `Request-Id ${requestId} was not issued for this request's account`);
  const request = pendingRequest(
    wallet,
    { requestId, method: spec.method, path: spec.path, bodyHash: requestHash(spec.body), ...(spec.clientPublicKey !== undefined ? { clientPublicKey: spec.clientPublicKey } : {}) },
    at,
  );
  const signer = await verifyWalletStamp(services, environment, wallet.accountId, headers.walletSignature, request.payloadToSign, at);
  return { request, signer, wallet: markUsed(wallet, request.id) };
}
