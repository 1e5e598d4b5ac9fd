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
//
// What is slow (a production verifier, sealing a session key, signing a verification
// token) is each command's prepare, on the wallet as it was before anything was held; the
// decision, holding the wallet's account, proves the credential again on the held wallet
// from what the verifiers found: the challenge or code still the pending one, the session
// room still there. A session key is made only for a proof that held when prepared.
import { newId } from '../../src/engine/ids.js';
import { cancelTimer, FactsOutdatedError, preparedFact, setTimer, type Decision, type EngineEvent } from '../../src/engine/state-machine.js';
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
  isSessionLive,
  sessionOf,
  sessionRetryAfter,
  withSession,
  type Credential,
  type OtpTarget,
  type PasskeyChallenge,
  type PendingRequest,
  type SessionView,
  type Wallet,
  type WalletSession,
  type WalletTimerMessage,
} from '../wallet.js';
import type { DomainCommand, DomainEvent, World } from '../world.js';
import {
  heldByClient,
  requireSessionClientKey,
  walletHolding,
  type EncryptedOtp,
  type OidcIdentity,
  type OtpVerificationClaims,
  type PasskeyAssertion,
  type WalletCommandInput,
  type WalletPorts,
} from './wallet.js';
import {
  acceptSignedRetry,
  decideSignedStep,
  isRetry,
  openSignedRequest,
  prepareSignedStep,
  signedDeleteSpec,
  signedRequestExpiry,
  verifySignedRetry,
  type Signed,
  type SignedCommandInput,
  type SignedRequestSpec,
  type SignedRetryFact,
  type SignedRetryHeaders,
  type SignedStep,
  type SignedTarget,
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

/** What production verifiers found before the decision held the wallet: who a token names, a passkey assertion's counter. */
interface VerifiedProof {
  oidc?: OidcIdentity;
  /** The assertion verified over the challenge the verify's Request-Id names: its authenticator's counter. */
  passkey?: { counter: number };
}

function proveOidc(input: WalletCommandInput, credential: Credential, token: string | undefined, verified: VerifiedProof): Credential {
  if (token === undefined) throw invalidField('oidcToken', 'required for OAUTH');
  if (input.env.environment !== 'production') {
    if (token !== SANDBOX_OIDC_TOKEN) throw unauthorized('Invalid OIDC token');
    return credential;
  }
  const claims = preparedFact(verified.oidc, 'wallet.credential.verify');
  if (claims.issuer !== credential.oauth?.issuer || claims.subject !== credential.oauth.subject) {
    throw unauthorized('Invalid OIDC token', 'Invalid OIDC token: it names another user than the credential');
  }
  return credential;
}

/** The passkey challenge a verify answers: issued to this credential under `requestId`, in time, for `clientPublicKey`; else 401. */
function answeredChallenge(credential: Credential, proof: CredentialProof, requestId: string | undefined, clientPublicKey: string, at: number): { assertion: PasskeyAssertion; issued: PasskeyChallenge } {
  const assertion = proof.assertion;
  if (assertion === undefined) throw invalidField('assertion', 'required for PASSKEY');
  const issued = credential.passkeyChallenge;
  if (requestId === undefined) throw unauthorized('Request-Id missing', 'PASSKEY verify needs the Request-Id of the challenge');
  if (issued === undefined || issued.requestId !== requestId) throw unauthorized('Invalid passkey challenge', 'Request-Id names no challenge issued for this credential');
  if (issued.expiresAt <= at) throw unauthorized('Passkey challenge expired');
  if (issued.clientPublicKey !== clientPublicKey.toLowerCase()) throw unauthorized('clientPublicKey differs from the one bound into the challenge');
  return { assertion, issued };
}

function provePasskey(input: WalletCommandInput, credential: Credential, proof: CredentialProof, requestId: string | undefined, clientPublicKey: string, at: number, verified: VerifiedProof): Credential {
  const { assertion } = answeredChallenge(credential, proof, requestId, clientPublicKey, at);
  // A challenge answers one verify.
  const { passkeyChallenge: _answered, ...rest } = credential;
  if (input.env.environment !== 'production') {
    if (assertion.signature !== SANDBOX_PASSKEY_SIGNATURE) throw unauthorized('Invalid passkey signature');
    return rest;
  }
  const passkey = credential.passkey!;
  // The request id names one challenge, which answers one verify: the verified counter
  // still moves forward from the held one unless the authenticator keeps none (both 0).
  const { counter } = preparedFact(verified.passkey, 'wallet.credential.verify');
  if ((counter !== 0 || passkey.counter !== 0) && counter <= passkey.counter) throw unauthorized('Invalid passkey signature', 'the signature counter did not move forward');
  return { ...rest, passkey: { ...passkey, counter }, updatedAt: at };
}

/**
 * Proof of possession of a credential, from the verifiers' findings. Returns the credential
 * as it is after use (an OTP or passkey challenge answers once; a passkey's counter moves).
 */
function prove(input: VerifyCredentialInput, credential: Credential, clientPublicKey: string, at: number, verified: VerifiedProof): Credential | WrongOtp {
  switch (credential.type) {
    case 'EMAIL_OTP':
      return proveOtp(input, credential, input.proof.otp, at);
    case 'OAUTH':
      return proveOidc(input, credential, input.proof.oidcToken, verified);
    case 'PASSKEY':
      return provePasskey(input, credential, input.proof, input.headers.requestId, clientPublicKey, at, verified);
  }
}

/** Production's slow checks of a proof, on the unheld credential; `prove` checks the rest when the wallet is held. */
async function verifyProof(input: VerifyCredentialInput, credential: Credential, clientPublicKey: string, at: number): Promise<VerifiedProof> {
  if (input.env.environment !== 'production') return {};
  const { ports, env, proof, headers } = input;
  if (credential.type === 'OAUTH' && proof.oidcToken !== undefined) return { oidc: await ports.verifyOidcToken(proof.oidcToken, env.config.oidcIssuers, at) };
  if (credential.type !== 'PASSKEY') return {};
  const { assertion, issued } = answeredChallenge(credential, proof, headers.requestId, clientPublicKey, at);
  const counter = await ports.verifyPasskeyAssertion({ assertion, expectedChallenge: issued.challenge, webauthn: env.config.webauthn, passkey: credential.passkey! });
  return { passkey: { counter } };
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

/** The session's key: the client's own (compressed), or a fresh one whose private key was sealed to the client's. */
interface SessionKey {
  publicKey: string;
  encryptedSessionSigningKey?: string;
}

/** The client's own key when compressed; else a fresh session key, its private key sealed to the client's. */
async function sessionKeyFor(ports: WalletPorts, clientPublicKey: string): Promise<SessionKey> {
  if (heldByClient(clientPublicKey)) return { publicKey: clientPublicKey.toLowerCase() };
  const issued = await ports.issueSessionKey(clientPublicKey);
  return { publicKey: issued.sessionPublicKey, encryptedSessionSigningKey: issued.encryptedSessionSigningKey };
}

/**
 * A session of `credentialId` for the client's key in `wallet` (which may have just ended
 * another), once `assertSessionOpens` passed; its expiry timer. `events` go first in the entry.
 */
function startSession(
  input: WalletCommandInput,
  credentialId: string,
  wallet: Wallet,
  key: SessionKey,
  at: number,
  events: Array<EngineEvent<WalletTimerMessage>> = [],
): Decision<DomainEvent, Signed<OpenedSession>> {
  const accountId = wallet.accountId;
  const session: WalletSession = {
    id: newId('Session', at),
    credentialId,
    publicKey: key.publicKey,
    createdAt: at,
    expiresAt: at + input.env.config.sessionLifetimeSeconds * 1000,
  };
  const next = withSession(wallet, session, at);
  const sealed = key.encryptedSessionSigningKey === undefined ? {} : { encryptedSessionSigningKey: key.encryptedSessionSigningKey };
  return {
    events: [...events, changed(next, at), setTimer<WalletTimerMessage>(session.expiresAt, [accountId], { type: 'wallet.session.expire', accountId, sessionId: session.id }, at, session.id)],
    reply: () => ({ done: { ...renderSession(next, session), ...sealed } }),
  };
}

/** A plain verify's facts: what the verifiers found, and the session key, made only for a proof that held when prepared. */
interface ProvenFacts {
  verified: VerifiedProof;
  key?: SessionKey;
}

/** The proof checked on the unheld wallet, and a session key made for it unless it failed (a wrong OTP makes none). */
async function prepareSession(input: VerifyCredentialInput, wallet: Wallet, credential: Credential, clientPublicKey: string, at: number): Promise<ProvenFacts> {
  assertSessionOpens(wallet, clientPublicKey, 'clientPublicKey', at);
  const verified = await verifyProof(input, credential, clientPublicKey, at);
  if ('wrongOtp' in prove(input, credential, clientPublicKey, at, verified)) return { verified };
  return { verified, key: await sessionKeyFor(input.ports, clientPublicKey) };
}

function openSession(input: VerifyCredentialInput, wallet: Wallet, credential: Credential, clientPublicKey: string, facts: ProvenFacts, at: number): VerifyDecision {
  assertSessionOpens(wallet, clientPublicKey, 'clientPublicKey', at);
  const proven = prove(input, credential, clientPublicKey, at, facts.verified);
  if ('wrongOtp' in proven) return refuseWrongOtp(wallet, proven, at);
  // Right now though wrong when prepared: the live code changed meanwhile.
  return startSession(input, input.credentialId, replaceCredential(wallet, proven), preparedFact(facts.key, 'wallet.credential.verify'), at);
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

/** An encrypted code's step 1, prepared: the bundle opened with the target it names, and a verification token for a right code. */
interface EncryptedOtpFacts {
  target: OtpTarget;
  sent: EncryptedOtp;
  token?: { requestId: string; payloadToSign: string; expiresAt: number };
}

async function prepareEncryptedOtp(input: VerifyCredentialInput, wallet: Wallet, credential: Credential, bundle: string, at: number): Promise<EncryptedOtpFacts> {
  const sent = openEncryptedOtp(input, credential, bundle);
  const target = credential.otpTarget!;
  assertSessionOpens(wallet, sent.publicKey, 'encryptedOtpBundle', at);
  if ('wrongOtp' in proveOtp(input, credential, sent.otpCode, at)) return { target, sent };
  const requestId = newId('Request', at);
  const expiresAt = signedRequestExpiry(at);
  const claims: OtpVerificationClaims = {
    id: requestId,
    verification_type: 'OTP_TYPE_EMAIL',
    contact: credential.email!,
    organization_id: wallet.accountId,
    public_key: sent.publicKey,
    exp: String(expiresAt),
  };
  return { target, sent, token: { requestId, payloadToSign: await input.ports.signOtpVerificationToken(claims), expiresAt } };
}

/**
 * Step 1 of an encrypted code: a wrong code spends a try as a plain one does; a right one
 * is spent and answers 202 with the verification token to sign, its `id` the Request-Id.
 * A bundle opened with a target replaced since (a new /challenge) is opened again.
 */
function answerEncryptedOtp(input: VerifyCredentialInput, wallet: Wallet, credential: Credential, facts: EncryptedOtpFacts, at: number): VerifyDecision {
  if (credential.otpTarget !== facts.target) throw new FactsOutdatedError('wallet.credential.verify');
  assertSessionOpens(wallet, facts.sent.publicKey, 'encryptedOtpBundle', at);
  const proven = proveOtp(input, credential, facts.sent.otpCode, at);
  if ('wrongOtp' in proven) return refuseWrongOtp(wallet, proven, at);
  const token = preparedFact(facts.token, 'wallet.credential.verify');
  const spec: SignedRequestSpec = { ...otpLoginSpec(input), token, loginPublicKey: facts.sent.publicKey };
  return openSignedRequest(input.ports, replaceCredential(wallet, proven), spec, at);
}

/** An encrypted code's step 2, prepared: the retry's stamp by the token's key, and the session key for that key. */
interface LoginFacts {
  verified: SignedRetryFact;
  key: SessionKey;
}

/** The key the token names, which the retry's request was opened for; 401 for a request of another kind. */
function loginKeyOf(request: PendingRequest): string {
  if (request.loginPublicKey === undefined) throw unauthorized('Request-Id was issued for another request', `${request.id} answers no encrypted OTP code`);
  return request.loginPublicKey;
}

async function prepareLogin(input: VerifyCredentialInput, wallet: Wallet, at: number): Promise<LoginFacts> {
  const spec = otpLoginSpec(input);
  const verified = await verifySignedRetry(input.ports, input.env.environment, wallet, input.headers, spec, at);
  const loginPublicKey = loginKeyOf(acceptSignedRetry(input.ports, wallet, input.headers, spec, verified, at).request);
  assertSessionOpens(wallet, loginPublicKey, 'encryptedOtpBundle', at);
  return { verified, key: await sessionKeyFor(input.ports, loginPublicKey) };
}

/** Step 2: the same verify again, stamped by the token's key with its Request-Id; the session is for that key. */
function finishEncryptedOtp(input: VerifyCredentialInput, wallet: Wallet, facts: LoginFacts, at: number): VerifyDecision {
  const accepted = acceptSignedRetry(input.ports, wallet, input.headers, otpLoginSpec(input), facts.verified, at);
  assertSessionOpens(accepted.wallet, loginKeyOf(accepted.request), 'encryptedOtpBundle', at);
  return startSession(input, input.credentialId, accepted.wallet, facts.key, at);
}

/** What a verify prepares, by the way it proves the credential. */
type VerifyFacts = { way: 'proof'; facts: ProvenFacts } | { way: 'encrypted otp'; facts: EncryptedOtpFacts } | { way: 'login'; facts: LoginFacts };

/** The credential a verify names, and an encryptedOtpBundle it carries (checked not to come with `otp`). */
function verifying(input: VerifyCredentialInput, world: World): { wallet: Wallet; credential: Credential; bundle?: string } {
  const wallet = walletHolding(world, input.env.id, input.credentialId, 'credential');
  const credential = credentialOf(wallet, input.credentialId)!;
  const bundle = input.proof.encryptedOtpBundle;
  if (credential.type !== 'EMAIL_OTP' || bundle === undefined) return { wallet, credential };
  if (input.proof.otp !== undefined) throw invalidField('encryptedOtpBundle', 'send otp or encryptedOtpBundle, not both');
  return { wallet, credential, bundle };
}

/** POST /auth/credentials/{id}/verify: a session for the client's key, at most MAX_ACTIVE_SESSIONS live per wallet. */
export const verifyWalletCredential: DomainCommand<VerifyCredentialInput, VerifyOutcome, VerifyFacts> = {
  name: 'wallet.credential.verify',
  prepare: async (input, world, at) => {
    const { wallet, credential, bundle } = verifying(input, world);
    if (bundle !== undefined) {
      if (isRetry(input.headers)) return { way: 'login', facts: await prepareLogin(input, wallet, at) };
      return { way: 'encrypted otp', facts: await prepareEncryptedOtp(input, wallet, credential, bundle, at) };
    }
    const clientPublicKey = requireSessionClientKey(input.ports, input.proof.clientPublicKey);
    return { way: 'proof', facts: await prepareSession(input, wallet, credential, clientPublicKey, at) };
  },
  actors: ({ env, credentialId }, world) => [walletHolding(world, env.id, credentialId, 'credential').accountId],
  decide: (input, world, at, prepared) => {
    const { wallet, credential } = verifying(input, world);
    switch (prepared.way) {
      case 'login':
        return finishEncryptedOtp(input, wallet, prepared.facts, at);
      case 'encrypted otp':
        return answerEncryptedOtp(input, wallet, credential, prepared.facts, at);
      case 'proof':
        return openSession(input, wallet, credential, requireSessionClientKey(input.ports, input.proof.clientPublicKey), prepared.facts, at);
    }
  },
};

export interface RevokeSessionInput extends SignedCommandInput {
  sessionId: string;
}

/** The session a revoke names, and the signed request that authorises it. */
function revoking(input: RevokeSessionInput, world: World): SignedTarget {
  const id = input.sessionId;
  const wallet = walletHolding(world, input.env.id, id, 'session');
  const session = sessionOf(wallet, id)!;
  return { wallet, spec: signedDeleteSpec('REVOKE_SESSION', input.path, credentialOf(wallet, session.credentialId)!.type, { sessionId: id }) };
}

/** DELETE /auth/sessions/{id}: signed by any live session of the wallet (202, then 204); the signing session may be this one (self-logout). */
export const revokeWalletSession: DomainCommand<RevokeSessionInput, Signed<undefined>, SignedStep> = {
  name: 'wallet.session.revoke',
  prepare: (input, world, at) => prepareSignedStep(input, revoking(input, world), at),
  actors: ({ env, sessionId }, world) => [walletHolding(world, env.id, sessionId, 'session').accountId],
  decide: (input, world, at, prepared) =>
    decideSignedStep(input, revoking(input, world), prepared, at, (accepted) => ({
      events: [changed(revokeSession(accepted.wallet, input.sessionId, at), at), cancelTimer(input.sessionId)],
      reply: () => ({ done: undefined }),
    })),
};

export interface RefreshSessionInput extends SignedCommandInput {
  sessionId: string;
  body: { clientPublicKey: string };
}

/** The session a refresh names, still live at `at` (else 401), its wallet, the key the new session goes to and the signed request. */
function refreshing(input: RefreshSessionInput, world: World, at: number): SignedTarget & { session: WalletSession; clientPublicKey: string } {
  const id = input.sessionId;
  const wallet = walletHolding(world, input.env.id, id, 'session');
  const session = liveSession(wallet, id, at);
  const clientPublicKey = requireSessionClientKey(input.ports, input.body.clientPublicKey).toLowerCase();
  const spec: SignedRequestSpec = { action: 'REFRESH_SESSION', method: 'POST', path: input.path, body: input.body, clientPublicKey, binds: { sessionId: id } };
  return { wallet, spec, session, clientPublicKey };
}

/** Session `id` of `wallet` while it may still sign: a refresh needs it live on both steps (an ended one calls for a new verify). */
function liveSession(wallet: Wallet, id: string, at: number): WalletSession {
  const session = sessionOf(wallet, id);
  if (session === undefined || !isSessionLive(session, at)) throw unauthorized('Session expired', `session ${id} is no longer active: verify a credential for a new one`);
  return session;
}

/** A refresh's facts: none at step 1; at step 2 the verified stamp and the new session's key (sealed to the client's unless it keeps it). */
type RefreshFacts = { step: 'open' } | { step: 'retry'; verified: SignedRetryFact; key: SessionKey };

/**
 * Step 2 on the held wallet: the stamp is the refreshed session's own (sandbox: or the
 * literal) and that session still live; it ends (revoked, its expiry timer cancelled) and a
 * new session of the same credential starts for the key bound at step 1, in one entry.
 */
function replaceSession(
  input: RefreshSessionInput,
  target: SignedTarget & { clientPublicKey: string },
  facts: Extract<RefreshFacts, { step: 'retry' }>,
  at: number,
): Decision<DomainEvent, Signed<OpenedSession>> {
  const accepted = acceptSignedRetry(input.ports, target.wallet, input.retry, target.spec, facts.verified, at);
  const signedBy = accepted.signer.sessionId;
  if (signedBy !== undefined && signedBy !== input.sessionId) throw unauthorized('Stamp must come from the session being refreshed', `the stamp was made by ${signedBy}, not ${input.sessionId}`);
  const old = liveSession(accepted.wallet, input.sessionId, at);
  if (heldByClient(target.clientPublicKey)) assertKeyUnbound(accepted.wallet, target.clientPublicKey, at, 'clientPublicKey');
  return startSession(input, old.credentialId, revokeSession(accepted.wallet, old.id, at), facts.key, at, [cancelTimer(old.id)]);
}

/**
 * POST /auth/sessions/{id}/refresh: signed by the session itself (202, then 201); the
 * answer is a new session for the clientPublicKey bound at step 1, with a full lifetime,
 * and the refreshed one ends. Holds the wallet's account.
 */
export const refreshWalletSession: DomainCommand<RefreshSessionInput, Signed<OpenedSession>, RefreshFacts> = {
  name: 'wallet.session.refresh',
  prepare: async (input, world, at) => {
    const target = refreshing(input, world, at);
    if (!isRetry(input.retry)) return { step: 'open' };
    const verified = await verifySignedRetry(input.ports, input.env.environment, target.wallet, input.retry, target.spec, at);
    return { step: 'retry', verified, key: await sessionKeyFor(input.ports, target.clientPublicKey) };
  },
  actors: ({ env, sessionId }, world) => [walletHolding(world, env.id, sessionId, 'session').accountId],
  decide: (input, world, at, prepared) => {
    const target = refreshing(input, world, at);
    if (prepared.step === 'retry') return replaceSession(input, target, prepared, at);
    if (heldByClient(target.clientPublicKey)) assertKeyUnbound(target.wallet, target.clientPublicKey, at, 'clientPublicKey');
    return openSignedRequest(input.ports, target.wallet, target.spec, at);
  },
};
