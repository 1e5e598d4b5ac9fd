// Session commands of the embedded wallet (SERVICE_SPEC part 4 "Credentials and sessions",
// 5.7, 5.8; CONTRACT.md "Real clients"): verify a credential into a session, and revoke a
// session by signed retry (self-logout allowed). Both hold the wallet's account; a session
// ends by a durable timer at its expiry.
//
// A session's key is the client's: an uncompressed clientPublicKey gets a fresh session key
// sealed to it (the service keeps only the public half); a compressed one is kept by the
// client as the session key itself, and the session is bound to it.
//
// Proof of possession is, in sandbox, the magic values of actors/wallet.ts; in production
// the mailed OTP (five tries per code), an OIDC token of the credential's issuer and
// subject, or a passkey assertion over the challenge, checked through the WalletPorts. An
// EMAIL_OTP code may come encrypted (encryptedOtpBundle) to the credential's OTP target:
// a right one answers 202 with a verification token to sign, and the retry stamped by the
// token's key opens the session for that key.
import { newId } from '../../src/engine/ids.js';
import { cancelTimer, setTimer, type Decision } from '../../src/engine/state-machine.js';
import { invalidField, rateLimited, unauthorized, type DomainError } from '../errors.js';
import {
  assertKeyUnbound,
  changed,
  credentialOf,
  renderSession,
  replaceCredential,
  revokeSession,
  SANDBOX_OIDC_TOKEN,
  SANDBOX_OTP,
  SANDBOX_PASSKEY_SIGNATURE,
  sessionOf,
  sessionRetryAfter,
  withSession,
  type Credential,
  type SessionView,
  type Wallet,
  type WalletSession,
  type WalletTimerMessage,
} from '../wallet.js';
import type { DomainCommand, DomainEvent } from '../world.js';
import {
  heldByClient,
  requireSessionClientKey,
  walletHolding,
  type EncryptedOtp,
  type OtpVerificationClaims,
  type PasskeyAssertion,
  type WalletCommandInput,
  type WalletPorts,
} from './wallet.js';
import {
  acceptSignedRequest,
  isRetry,
  openSignedRequest,
  signedRequestExpiry,
  type Signed,
  type SignedRequestSpec,
  type SignedRetryHeaders,
} from './wallet-signed-request.js';

/** What a verify presents: the proof its credential's type asks for, and the key the session goes to. */
export interface CredentialProof {
  otp?: string;
  /** EMAIL_OTP, instead of `otp`: the code and the client's key, encrypted to the credential's OTP target. */
  encryptedOtpBundle?: string;
  oidcToken?: string;
  assertion?: PasskeyAssertion;
  clientPublicKey?: string;
}

/** A wrong production OTP: the try is spent (and logged), and the answer is still 401. */
interface WrongOtp {
  wrongOtp: Credential;
}

function proveOtp(input: WalletCommandInput, credential: Credential, presented: string | undefined, at: number): Credential | WrongOtp {
  if (presented === undefined) throw invalidField('otp', 'required for EMAIL_OTP (or encryptedOtpBundle)');
  if (input.env.environment !== 'production') {
    if (presented !== SANDBOX_OTP) throw unauthorized('Invalid OTP code');
    return credential;
  }
  const { otp, ...rest } = credential;
  if (otp === undefined || otp.expiresAt <= at) throw unauthorized('Invalid OTP code', 'Invalid OTP code: no code is live; request a new one with /challenge');
  if (input.ports.otpMatches(otp.codeHash, presented)) return { ...rest, updatedAt: at };
  // Five tries per code (OTP_TRIES): the last wrong one spends it.
  return { wrongOtp: otp.triesLeft > 1 ? { ...credential, otp: { ...otp, triesLeft: otp.triesLeft - 1 } } : rest };
}

async function proveOidc(input: WalletCommandInput, credential: Credential, token: string | undefined, at: number): Promise<Credential> {
  if (token === undefined) throw invalidField('oidcToken', 'required for OAUTH');
  if (input.env.environment !== 'production') {
    if (token !== SANDBOX_OIDC_TOKEN) throw unauthorized('Invalid OIDC token');
    return credential;
  }
  const claims = await input.ports.verifyOidcToken(token, input.env.config.oidcIssuers, at);
  if (claims.issuer !== credential.oauth?.issuer || claims.subject !== credential.oauth.subject) {
    throw unauthorized('Invalid OIDC token', 'Invalid OIDC token: it names another user than the credential');
  }
  return credential;
}

async function provePasskey(input: WalletCommandInput, credential: Credential, proof: CredentialProof, requestId: string | undefined, clientPublicKey: string, at: number): Promise<Credential> {
  const assertion = proof.assertion;
  if (assertion === undefined) throw invalidField('assertion', 'required for PASSKEY');
  const issued = credential.passkeyChallenge;
  if (requestId === undefined) throw unauthorized('Request-Id missing', 'PASSKEY verify needs the Request-Id of the challenge');
  if (issued === undefined || issued.requestId !== requestId) throw unauthorized('Invalid passkey challenge', 'Request-Id names no challenge issued for this credential');
  if (issued.expiresAt <= at) throw unauthorized('Passkey challenge expired');
  if (issued.clientPublicKey !== clientPublicKey.toLowerCase()) throw unauthorized('clientPublicKey differs from the one bound into the challenge');
  // A challenge answers one verify.
  const { passkeyChallenge: _answered, ...rest } = credential;
  if (input.env.environment !== 'production') {
    if (assertion.signature !== SANDBOX_PASSKEY_SIGNATURE) throw unauthorized('Invalid passkey signature');
    return rest;
  }
  const passkey = credential.passkey!;
  const counter = await input.ports.verifyPasskeyAssertion({ assertion, expectedChallenge: issued.challenge, webauthn: input.env.config.webauthn, passkey });
  return { ...rest, passkey: { ...passkey, counter }, updatedAt: at };
}

/**
 * Proof of possession of a credential. Returns the credential as it is after use (an OTP
 * or passkey challenge answers once; a passkey's counter moves).
 */
async function prove(input: VerifyCredentialInput, credential: Credential, clientPublicKey: string, at: number): Promise<Credential | WrongOtp> {
  switch (credential.type) {
    case 'EMAIL_OTP':
      return proveOtp(input, credential, input.proof.otp, at);
    case 'OAUTH':
      return proveOidc(input, credential, input.proof.oidcToken, at);
    case 'PASSKEY':
      return provePasskey(input, credential, input.proof, input.headers.requestId, clientPublicKey, at);
  }
}

export interface VerifyCredentialInput extends WalletCommandInput {
  credentialId: string;
  proof: CredentialProof;
  /** The route's path under the version segment: an encrypted code's signed retry binds it. */
  path: string;
  /** Request-Id: for PASSKEY the challenge answered, for an encrypted code's retry its 202's; the stamp of that retry. */
  headers: SignedRetryHeaders;
}

/** The new session; its signing key sealed to the client's key (here only, never again), unless the client holds it. */
export interface OpenedSession extends SessionView {
  encryptedSessionSigningKey?: string;
}

/**
 * A session (or, for an encrypted code, the challenge whose signed retry opens it), or the
 * refusal of a wrong OTP whose spent try is logged all the same.
 */
export type VerifyOutcome = Signed<OpenedSession> | { refused: DomainError };

type VerifyDecision = Decision<DomainEvent, VerifyOutcome>;

function refuseWrongOtp(wallet: Wallet, proven: WrongOtp, at: number): VerifyDecision {
  const refusal = unauthorized('Invalid OTP code');
  return { events: [changed(replaceCredential(wallet, proven.wrongOtp), at)], reply: () => ({ refused: refusal }) };
}

/**
 * Checked before any proof is spent: a new session fits (else 429 until the soonest live
 * one ends), and a key the client keeps is no live session's already (else 400 naming `field`).
 */
function assertSessionOpens(wallet: Wallet, clientPublicKey: string, field: string, at: number): void {
  const wait = sessionRetryAfter(wallet, at);
  if (wait !== undefined) throw rateLimited(`account ${wallet.accountId} has too many active sessions; revoke one or wait`, wait);
  if (heldByClient(clientPublicKey)) assertKeyUnbound(wallet, clientPublicKey.toLowerCase(), at, field);
}

/** The client's own key when compressed; else a fresh session key, its private key sealed to the client's. */
async function sessionKeyFor(ports: WalletPorts, clientPublicKey: string): Promise<{ publicKey: string; encryptedSessionSigningKey?: string }> {
  if (heldByClient(clientPublicKey)) return { publicKey: clientPublicKey.toLowerCase() };
  const issued = await ports.issueSessionKey(clientPublicKey);
  return { publicKey: issued.sessionPublicKey, encryptedSessionSigningKey: issued.encryptedSessionSigningKey };
}

/** A session of the verified credential for `clientPublicKey`, once `assertSessionOpens` passed; its expiry timer. */
async function startSession(input: VerifyCredentialInput, wallet: Wallet, clientPublicKey: string, at: number): Promise<VerifyDecision> {
  const accountId = wallet.accountId;
  const key = await sessionKeyFor(input.ports, clientPublicKey);
  const session: WalletSession = {
    id: newId('Session', at),
    credentialId: input.credentialId,
    publicKey: key.publicKey,
    createdAt: at,
    expiresAt: at + input.env.config.sessionLifetimeSeconds * 1000,
  };
  const next = withSession(wallet, session, at);
  const sealed = key.encryptedSessionSigningKey === undefined ? {} : { encryptedSessionSigningKey: key.encryptedSessionSigningKey };
  return {
    events: [changed(next, at), setTimer<WalletTimerMessage>(session.expiresAt, [accountId], { type: 'wallet.session.expire', accountId, sessionId: session.id }, at, session.id)],
    reply: () => ({ done: { ...renderSession(next, session), ...sealed } }),
  };
}

async function openSession(input: VerifyCredentialInput, wallet: Wallet, credential: Credential, clientPublicKey: string, at: number): Promise<VerifyDecision> {
  const proven = await prove(input, credential, clientPublicKey, at);
  if ('wrongOtp' in proven) return refuseWrongOtp(wallet, proven, at);
  return startSession(input, replaceCredential(wallet, proven), clientPublicKey, at);
}

/** The signed request of an encrypted code: its retry repeats this verify. */
function otpLoginSpec(input: VerifyCredentialInput): SignedRequestSpec {
  return { action: 'OTP_LOGIN', method: 'POST', path: input.path, body: input.proof, credentialType: 'EMAIL_OTP' };
}

/** The code and key an encryptedOtpBundle carries; 400 naming the field when it cannot be read or contradicts the body. */
function openEncryptedOtp(input: VerifyCredentialInput, credential: Credential, bundle: string): EncryptedOtp {
  const target = credential.otpTarget;
  if (target === undefined) throw invalidField('encryptedOtpBundle', `no OTP encryption target was issued to ${credential.id}; get one with /challenge`);
  const opened = input.ports.openOtpBundle(credential.id, target, bundle);
  if ('problem' in opened) throw invalidField('encryptedOtpBundle', opened.problem);
  const sent = input.proof.clientPublicKey;
  if (sent !== undefined && sent.toLowerCase() !== opened.publicKey) {
    throw invalidField('clientPublicKey', 'with encryptedOtpBundle it may be left out; sent, it must be the public_key inside the bundle');
  }
  return opened;
}

/**
 * Step 1 of an encrypted code: a wrong code spends a try as a plain one does; a right one
 * is spent and answers 202 with the verification token to sign, its `id` the Request-Id.
 */
async function answerEncryptedOtp(input: VerifyCredentialInput, wallet: Wallet, credential: Credential, bundle: string, at: number): Promise<VerifyDecision> {
  const sent = openEncryptedOtp(input, credential, bundle);
  assertSessionOpens(wallet, sent.publicKey, 'encryptedOtpBundle', at);
  const proven = proveOtp(input, credential, sent.otpCode, at);
  if ('wrongOtp' in proven) return refuseWrongOtp(wallet, proven, at);
  const requestId = newId('Request', at);
  const claims: OtpVerificationClaims = {
    id: requestId,
    verification_type: 'OTP_TYPE_EMAIL',
    contact: credential.email!,
    organization_id: wallet.accountId,
    public_key: sent.publicKey,
    exp: String(signedRequestExpiry(at)),
  };
  const token = await input.ports.signOtpVerificationToken(claims);
  const spec: SignedRequestSpec = { ...otpLoginSpec(input), token: { requestId, payloadToSign: token }, loginPublicKey: sent.publicKey };
  return openSignedRequest(input.ports, replaceCredential(wallet, proven), spec, at);
}

/** Step 2: the same verify again, stamped by the token's key with its Request-Id; the session is for that key. */
async function finishEncryptedOtp(input: VerifyCredentialInput, wallet: Wallet, at: number): Promise<VerifyDecision> {
  const accepted = await acceptSignedRequest(input.ports, input.env.environment, wallet, input.headers, otpLoginSpec(input), at);
  const loginPublicKey = accepted.request.loginPublicKey;
  if (loginPublicKey === undefined) throw unauthorized('Request-Id was issued for another request', `${accepted.request.id} answers no encrypted OTP code`);
  assertSessionOpens(accepted.wallet, loginPublicKey, 'encryptedOtpBundle', at);
  return startSession(input, accepted.wallet, loginPublicKey, at);
}

/** POST /auth/credentials/{id}/verify: a session for the client's key, at most MAX_ACTIVE_SESSIONS live per wallet. */
export const verifyWalletCredential: DomainCommand<VerifyCredentialInput, VerifyOutcome> = {
  name: 'wallet.credential.verify',
  actors: ({ env, credentialId }, world) => [walletHolding(world, env.id, credentialId, 'credential').accountId],
  decide: (input, world, at) => {
    const wallet = walletHolding(world, input.env.id, input.credentialId, 'credential');
    const credential = credentialOf(wallet, input.credentialId)!;
    const bundle = input.proof.encryptedOtpBundle;
    if (credential.type === 'EMAIL_OTP' && bundle !== undefined) {
      if (input.proof.otp !== undefined) throw invalidField('encryptedOtpBundle', 'send otp or encryptedOtpBundle, not both');
      return isRetry(input.headers) ? finishEncryptedOtp(input, wallet, at) : answerEncryptedOtp(input, wallet, credential, bundle, at);
    }
    const clientPublicKey = requireSessionClientKey(input.ports, input.proof.clientPublicKey);
    assertSessionOpens(wallet, clientPublicKey, 'clientPublicKey', at);
    return openSession(input, wallet, credential, clientPublicKey, at);
  },
};

export interface RevokeSessionInput extends WalletCommandInput {
  sessionId: string;
  path: string;
  retry: SignedRetryHeaders;
}

/** The signing session may be this one (self-logout). */
async function revokeSessionOnceSigned(input: RevokeSessionInput, wallet: Wallet, spec: SignedRequestSpec, at: number): Promise<Decision<DomainEvent, Signed<undefined>>> {
  const accepted = await acceptSignedRequest(input.ports, input.env.environment, wallet, input.retry, spec, at);
  return { events: [changed(revokeSession(accepted.wallet, input.sessionId, at), at), cancelTimer(input.sessionId)], reply: () => ({ done: undefined }) };
}

/** DELETE /auth/sessions/{id}: signed by any live session of the wallet (202, then 204). */
export const revokeWalletSession: DomainCommand<RevokeSessionInput, Signed<undefined>> = {
  name: 'wallet.session.revoke',
  actors: ({ env, sessionId }, world) => [walletHolding(world, env.id, sessionId, 'session').accountId],
  decide: (input, world, at) => {
    const id = input.sessionId;
    const wallet = walletHolding(world, input.env.id, id, 'session');
    const session = sessionOf(wallet, id)!;
    const spec: SignedRequestSpec = {
      action: 'REVOKE_SESSION',
      method: 'DELETE',
      path: input.path,
      body: {},
      credentialType: credentialOf(wallet, session.credentialId)!.type,
      binds: { sessionId: id },
    };
    if (isRetry(input.retry)) return revokeSessionOnceSigned(input, wallet, spec, at);
    return openSignedRequest(input.ports, wallet, spec, at);
  },
};
