// The signed-retry protocol (SERVICE_SPEC 5.5, CONTRACT.md "Embedded-wallet API") and the
// stamp check every wallet-authorised action shares (quote execution included). Step 1
// answers 202 with a payload to sign and keeps it as a pending request; step 2 repeats the
// request with the Request-Id and a stamp over that payload. The stamp is verified before the
// decision holds anything (a command's prepare); the decision, holding the wallet's account,
// checks again that the request is still pending and the stamp's session still live, so a
// session revoked or a retry answered meanwhile is refused.
import { newId } from '../../src/engine/ids.js';
import { setTimer, type Decision, type EngineEvent } from '../../src/engine/state-machine.js';
import { rateLimited, unauthorized } from '../errors.js';
import { isoTime } from '../iso-time.js';
import type { Environment } from '../platform.js';
import {
  changed,
  markUsed,
  pendingRequest,
  requestRetryAfter,
  SANDBOX_SIGNATURE,
  sessionForKey,
  SIGNED_REQUEST_WINDOW_MS,
  withRequest,
  type CredentialType,
  type PendingRequest,
  type SignedAction,
  type Wallet,
  type WalletEvent,
  type WalletTimerMessage,
} from '../wallet.js';
import type { WalletCommandInput, WalletPorts } from './wallet.js';

/** Who signed: a session of the wallet, or (sandbox) the magic literal, which names none. */
export interface WalletSigner {
  sessionId?: string;
  credentialId?: string;
}

/** A verified stamp: `publicKey` signed `payload`; no key: the sandbox literal, which names none. */
export interface StampFact {
  payload: string;
  publicKey?: string;
}

/**
 * Verifies a `Service-Wallet-Signature` over `payload` (the service's own copy), before the
 * decision holds anything; throws 401 with the failed check as `reason`. Whose key made it
 * is the decision's to check (`signerOf`), on the wallet it holds.
 */
export async function verifyStampOver(ports: WalletPorts, environment: Environment, header: string | undefined, payload: string): Promise<StampFact> {
  if (header === undefined) throw unauthorized('Invalid Service-Wallet-Signature', 'the Service-Wallet-Signature header is missing');
  if (environment === 'sandbox' && header === SANDBOX_SIGNATURE) return { payload };
  const stamp = await ports.verifyStamp(header, payload);
  if (!stamp.ok) throw unauthorized('Invalid Service-Wallet-Signature', `Invalid Service-Wallet-Signature: ${stamp.reason}`);
  return { payload, publicKey: stamp.publicKey };
}

/**
 * The live session of the held `wallet` whose key made `stamp` at `at`, else 401: a session
 * revoked or expired since the stamp was verified is refused here, as it would have been
 * had it ended before.
 */
export function signerOf(wallet: Wallet | undefined, stamp: StampFact, at: number): WalletSigner {
  if (stamp.publicKey === undefined) return {};
  if (wallet === undefined) throw unauthorized('Invalid Service-Wallet-Signature', 'the wallet has no sessions');
  const session = sessionForKey(wallet, stamp.publicKey, at);
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
  /**
   * OTP_LOGIN: what the client signs is a token prepared for the decision (the
   * verification token, which names `requestId`), not the service's JSON of the request;
   * its own expiry is the request's.
   */
  token?: { requestId: string; payloadToSign: string; expiresAt: number };
  /** OTP_LOGIN: the key whose stamp the retry needs (PendingRequest.loginPublicKey). */
  loginPublicKey?: string;
}

/**
 * A signed DELETE of the wallet's credential or session that `binds` names: bodiless, and
 * its challenge answers with `credentialType` (the credential's, or the session's).
 */
export function signedDeleteSpec(action: SignedAction, path: string, credentialType: CredentialType, binds: Readonly<Record<string, string>>): SignedRequestSpec {
  return { action, method: 'DELETE', path, body: {}, credentialType, binds };
}

/** A signed request's window: its expiresAt (and a verification token's exp) for one opened at `at`. */
export function signedRequestExpiry(at: number): number {
  return at + SIGNED_REQUEST_WINDOW_MS;
}

/** The headers of a signed retry (step 2): which pending request, and the stamp over it. */
export interface SignedRetryHeaders {
  readonly requestId?: string;
  readonly walletSignature?: string;
}

/** A signed command's input: the route's path, bound into the request, and the retry's headers (none at step 1). */
export interface SignedCommandInput extends WalletCommandInput {
  /** The route's path under the version segment. */
  path: string;
  retry: SignedRetryHeaders;
}

/** True when the request carries either signed-retry header: it is a step-2 retry. */
export function isRetry(headers: SignedRetryHeaders): boolean {
  return headers.requestId !== undefined || headers.walletSignature !== undefined;
}

/** The 202 answer of step 1 (SignedRequestChallenge). */
export interface SignedRequestChallenge {
  payloadToSign: string;
  requestId: string;
  expiresAt: string;
  /** The credential type added, revoked, or whose session is revoked. */
  type?: CredentialType;
}

/** A signed action's result: the challenge of step 1, or what step 2 did. */
export type Signed<R> = { challenge: SignedRequestChallenge } | { done: R };

type WalletEvents = Array<WalletEvent | EngineEvent<WalletTimerMessage>>;

/** Step 1: a pending request and its expiry timer; the result is the challenge to answer 202 with. */
export function openSignedRequest(ports: WalletPorts, wallet: Wallet, spec: SignedRequestSpec, at: number): Decision<WalletEvent, Signed<never>> {
  const retryAfter = requestRetryAfter(wallet, at);
  if (retryAfter !== undefined) throw rateLimited(`account ${wallet.accountId} has too many signed requests pending`, retryAfter);
  const requestId = spec.token?.requestId ?? newId('Request', at);
  const expiresAt = spec.token?.expiresAt ?? signedRequestExpiry(at);
  const bodyHash = ports.requestHash(spec.body);
  // Key order is fixed here; the client signs these exact bytes and the service keeps them.
  const payloadToSign =
    spec.token?.payloadToSign ??
    JSON.stringify({
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
    ...(spec.loginPublicKey !== undefined ? { loginPublicKey: spec.loginPublicKey } : {}),
  };
  const challenge: SignedRequestChallenge = { payloadToSign, requestId, expiresAt: isoTime(expiresAt) };
  if (spec.credentialType !== undefined) challenge.type = spec.credentialType;
  const events: WalletEvents = [
    changed(withRequest(wallet, request, at), at),
    setTimer<WalletTimerMessage>(expiresAt, [wallet.accountId], { type: 'wallet.request.expire', accountId: wallet.accountId, requestId }, at, requestId),
  ];
  return { events, reply: () => ({ challenge }) };
}

/**
 * An OTP_LOGIN retry is stamped by the key the verification token names: no session of the
 * wallet exists for it yet. Sandbox takes the literal here too, as on every signed retry.
 */
async function verifyLoginStamp(ports: WalletPorts, environment: Environment, header: string, payload: string, loginPublicKey: string): Promise<StampFact> {
  if (environment === 'sandbox' && header === SANDBOX_SIGNATURE) return { payload };
  const stamp = await ports.verifyStamp(header, payload, loginPublicKey);
  if (!stamp.ok) throw unauthorized('Invalid Service-Wallet-Signature', `Invalid Service-Wallet-Signature: ${stamp.reason} (the retry must be stamped by the public_key of the verification token)`);
  return { payload, publicKey: loginPublicKey };
}

/**
 * The pending request a retry names (known, unused, in time, the same method, path and
 * body) in `wallet`, with its stamp header; throws 401 naming the failed check.
 */
function pendingRetry(
  ports: WalletPorts,
  wallet: Wallet | undefined,
  headers: SignedRetryHeaders,
  spec: SignedRequestSpec,
  at: number,
): { wallet: Wallet; request: PendingRequest; stamp: string } {
  const requestId = headers.requestId;
  if (requestId === undefined) throw unauthorized('Request-Id missing', 'a signed retry needs the Request-Id header with Service-Wallet-Signature');
  if (headers.walletSignature === undefined) throw unauthorized('Invalid Service-Wallet-Signature', 'a signed retry needs the Service-Wallet-Signature header with Request-Id');
  if (wallet === undefined) throw unauthorized('Request-Id unknown', `Request-Id ${requestId} was not issued for this request's account`);
  const presented = { requestId, method: spec.method, path: spec.path, bodyHash: ports.requestHash(spec.body), ...(spec.clientPublicKey !== undefined ? { clientPublicKey: spec.clientPublicKey } : {}) };
  return { wallet, request: pendingRequest(wallet, presented, at), stamp: headers.walletSignature };
}

/** A step 2 verified before anything is held: the stamp over the payloadToSign of the request its Request-Id names. */
export interface SignedRetryFact {
  stamp: StampFact;
}

/**
 * Step 2, the slow part: the pending request the retry names, as the unheld `wallet` has
 * it, and the stamp over its payloadToSign verified (for OTP_LOGIN, by the token's key).
 * Throws 401 naming the failed check.
 */
export async function verifySignedRetry(
  ports: WalletPorts,
  environment: Environment,
  wallet: Wallet | undefined,
  headers: SignedRetryHeaders,
  spec: SignedRequestSpec,
  at: number,
): Promise<SignedRetryFact> {
  const { request, stamp } = pendingRetry(ports, wallet, headers, spec, at);
  if (request.loginPublicKey !== undefined) return { stamp: await verifyLoginStamp(ports, environment, stamp, request.payloadToSign, request.loginPublicKey) };
  return { stamp: await verifyStampOver(ports, environment, stamp, request.payloadToSign) };
}

/** A retry accepted: who signed it, the wallet with its request marked used, and the request. */
export interface AcceptedRetry {
  signer: WalletSigner;
  wallet: Wallet;
  request: PendingRequest;
}

/**
 * Step 2, decided on the held `wallet`: the request is still pending (a retry answered
 * meanwhile is now used, one expired is gone) and the stamp's session still live; the
 * wallet with the request marked used. A Request-Id names one payloadToSign, so the
 * verified stamp is over this request's. Throws 401 naming the failed check.
 */
export function acceptSignedRetry(
  ports: WalletPorts,
  wallet: Wallet | undefined,
  headers: SignedRetryHeaders,
  spec: SignedRequestSpec,
  verified: SignedRetryFact,
  at: number,
): AcceptedRetry {
  const pending = pendingRetry(ports, wallet, headers, spec, at);
  const signer = pending.request.loginPublicKey !== undefined ? {} : signerOf(pending.wallet, verified.stamp, at);
  return { signer, wallet: markUsed(pending.wallet, pending.request.id), request: pending.request };
}

/** A signed action's facts: none at step 1 (it opens the request); the verified retry at step 2. */
export type SignedStep = { step: 'open' } | { step: 'retry'; verified: SignedRetryFact };

/** The wallet a signed command acts on, and the request that authorises it. */
export interface SignedTarget {
  wallet: Wallet;
  spec: SignedRequestSpec;
}

/** Prepares a signed action on the unheld `target.wallet`: step 1 needs nothing slow; step 2 verifies its stamp. */
export async function prepareSignedStep(input: SignedCommandInput, target: SignedTarget, at: number): Promise<SignedStep> {
  if (!isRetry(input.retry)) return { step: 'open' };
  return { step: 'retry', verified: await verifySignedRetry(input.ports, input.env.environment, target.wallet, input.retry, target.spec, at) };
}

/**
 * A signed action decided on the held `target.wallet`: step 1 opens its request; step 2
 * accepts the retry verified in prepare, and `act` decides what the accepted request does.
 */
export function decideSignedStep<R>(
  input: SignedCommandInput,
  target: SignedTarget,
  prepared: SignedStep,
  at: number,
  act: (accepted: AcceptedRetry) => Decision<WalletEvent, Signed<R>>,
): Decision<WalletEvent, Signed<R>> {
  if (prepared.step === 'open') return openSignedRequest(input.ports, target.wallet, target.spec, at);
  return act(acceptSignedRetry(input.ports, target.wallet, input.retry, target.spec, prepared.verified, at));
}
