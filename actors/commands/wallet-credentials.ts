// Credential commands of the embedded wallet (SERVICE_SPEC part 4 "Credentials and
// sessions", 5.7, 5.8): add a credential (the account's first directly, any other by signed
// retry), re-issue its challenge, revoke it by signed retry. Adding holds the wallet's
// account and its customer (who must not be deleted, and whose email an EMAIL_OTP
// credential defaults to); the others hold the account.
//
// Sandbox takes the magic values of actors/wallet.ts and sends no mail. Production mails
// OTP codes, verifies OIDC tokens against the environment's issuers and WebAuthn
// registrations for its relying party, all through the WalletPorts; the verifying, and a
// signed retry's stamp, are each command's prepare, done before the wallet is held.
import { newId, uuidv7 } from '../../src/engine/ids.js';
import { cancelTimer, preparedFact, type Decision, type EngineEvent } from '../../src/engine/state-machine.js';
import { assertActive } from '../customer.js';
import { invalidField, rateLimited, unauthorized } from '../errors.js';
import { isoTime } from '../iso-time.js';
import {
  assertNotLast,
  assertTypeFree,
  CHALLENGE_INTERVAL_MS,
  challengeRetryAfter,
  changed,
  credentialOf,
  OTP_TRIES,
  renderAuthMethod,
  replaceCredential,
  revokeCredential,
  SIGNED_REQUEST_WINDOW_MS,
  walletOf,
  withCredential,
  type AuthMethodView,
  type Credential,
  type CredentialType,
  type OtpState,
  type PasskeyChallenge,
  type PasskeyKey,
  type Wallet,
} from '../wallet.js';
import type { DomainCommand, DomainEvent, World } from '../world.js';
import { requireSessionClientKey, walletAccountIn, walletHolding, type OidcIdentity, type PasskeyAttestation, type WalletCommandInput } from './wallet.js';
import {
  acceptSignedRetry,
  decideSignedStep,
  isRetry,
  openSignedRequest,
  prepareSignedStep,
  signedDeleteSpec,
  verifySignedRetry,
  type Signed,
  type SignedCommandInput,
  type SignedRequestSpec,
  type SignedRetryFact,
  type SignedStep,
  type SignedTarget,
} from './wallet-signed-request.js';

/** A fresh production OTP for `email`: its state to keep, with OTP_TRIES tries, and the effect that mails it. */
export function issueOtp(input: WalletCommandInput, accountId: string, email: string, at: number): { otp: OtpState; mail: EngineEvent<unknown> } {
  const config = input.env.config;
  const expiresAt = at + config.expirationSeconds * 1000;
  const { codeHash, mail } = input.ports.issueOtp({ accountId, to: email, expiresAt, config }, at);
  return { otp: { codeHash, expiresAt, triesLeft: OTP_TRIES }, mail };
}

/** An AuthMethod as create and challenge answer it: an EMAIL_OTP one names the target its new code may be encrypted to. */
export type IssuedAuthMethod = AuthMethodView & { otpEncryptionTargetBundle?: string };

/** A create body as the schema let it through; the fields its type needs are checked here. */
export interface NewCredentialBody {
  type: CredentialType;
  accountId: string;
  email?: string;
  oidcToken?: string;
  nickname?: string;
  challenge?: string;
  attestation?: PasskeyAttestation;
}

/** A create body with the fields its type needs. */
type NewCredentialRequest =
  | { type: 'EMAIL_OTP'; email?: string }
  | { type: 'OAUTH'; oidcToken: string }
  | { type: 'PASSKEY'; nickname: string; challenge: string; attestation: PasskeyAttestation };

/** Checked before anything is decided, so a missing field is a 400 even where a 202 would follow. */
function newCredentialRequest(body: NewCredentialBody): NewCredentialRequest {
  switch (body.type) {
    case 'EMAIL_OTP':
      return body.email === undefined ? { type: 'EMAIL_OTP' } : { type: 'EMAIL_OTP', email: body.email };
    case 'OAUTH':
      if (body.oidcToken === undefined) throw invalidField('oidcToken', 'required for OAUTH');
      return { type: 'OAUTH', oidcToken: body.oidcToken };
    case 'PASSKEY':
      if (body.nickname === undefined) throw invalidField('nickname', 'required for PASSKEY');
      if (body.challenge === undefined) throw invalidField('challenge', 'required for PASSKEY');
      if (body.attestation === undefined) throw invalidField('attestation', 'required for PASSKEY');
      return { type: 'PASSKEY', nickname: body.nickname, challenge: body.challenge, attestation: body.attestation };
  }
}

/** What production's verifiers found in a new credential before anything was held: who its token names, its passkey's key. */
interface VerifiedCredential {
  oidc?: OidcIdentity;
  passkey?: PasskeyKey;
}

/** Production's slow checks of a new credential (its OIDC token, its passkey registration); sandbox has none. */
async function verifyNewCredential(input: WalletCommandInput, request: NewCredentialRequest, at: number): Promise<VerifiedCredential> {
  const { ports, env } = input;
  if (env.environment !== 'production') return {};
  if (request.type === 'OAUTH') return { oidc: await ports.verifyOidcToken(request.oidcToken, env.config.oidcIssuers, at) };
  if (request.type === 'PASSKEY') {
    const { challenge, attestation } = request;
    return { passkey: await ports.verifyPasskeyRegistration({ attestation, expectedChallenge: challenge, webauthn: env.config.webauthn }) };
  }
  return {};
}

/** The new credential, checked for its type, the effects it causes (the OTP mail) and an EMAIL_OTP's target bundle. */
function newCredential(
  input: WalletCommandInput,
  accountId: string,
  request: NewCredentialRequest,
  customerEmail: string | undefined,
  verified: VerifiedCredential,
  at: number,
): { credential: Credential; effects: Array<EngineEvent<unknown>>; otpEncryptionTargetBundle?: string } {
  const { ports, env } = input;
  const base = { id: newId('AuthMethod', at), type: request.type, createdAt: at, updatedAt: at };
  const production = env.environment === 'production';
  switch (request.type) {
    case 'EMAIL_OTP': {
      const email = request.email ?? customerEmail;
      if (email === undefined) throw invalidField('email', 'required: the customer record has no email address');
      // The OTP sent with the credential counts as its first challenge. Sandbox sends none (the OTP is the magic value).
      const target = ports.issueOtpTarget(base.id);
      const credential: Credential = { ...base, nickname: email, email, lastChallengeAt: at, otpTarget: target.target };
      if (!production) return { credential, effects: [], otpEncryptionTargetBundle: target.bundle };
      const issued = issueOtp(input, accountId, email, at);
      return { credential: { ...credential, otp: issued.otp }, effects: [issued.mail], otpEncryptionTargetBundle: target.bundle };
    }
    case 'OAUTH': {
      const claims = production ? preparedFact(verified.oidc, 'wallet.credential.add') : ports.readSandboxOidcToken(request.oidcToken, env.config.oidcIssuers.map((i) => i.issuer));
      const subject = claims.subject ?? '';
      return { credential: { ...base, nickname: claims.email ?? (subject || claims.issuer), oauth: { issuer: claims.issuer, subject } }, effects: [] };
    }
    case 'PASSKEY': {
      const { nickname, attestation } = request;
      // Sandbox stores the attestation as given: nothing in sandbox verifies with its key.
      const passkey = production ? preparedFact(verified.passkey, 'wallet.credential.add') : { credentialId: attestation.credentialId, publicKey: '', counter: 0, transports: attestation.transports ?? [] };
      return { credential: { ...base, nickname, passkey }, effects: [] };
    }
  }
}

export interface AddCredentialInput extends SignedCommandInput {
  body: NewCredentialBody;
}

type AddDecision = Decision<DomainEvent, Signed<IssuedAuthMethod>>;

function addToWallet(input: AddCredentialInput, wallet: Wallet, request: NewCredentialRequest, customerEmail: string | undefined, verified: VerifiedCredential, at: number): AddDecision {
  const { credential, effects, otpEncryptionTargetBundle } = newCredential(input, wallet.accountId, request, customerEmail, verified, at);
  const next = withCredential(wallet, credential);
  const view: IssuedAuthMethod = renderAuthMethod(next, credential);
  if (otpEncryptionTargetBundle !== undefined) view.otpEncryptionTargetBundle = otpEncryptionTargetBundle;
  return { events: [changed(next, at), ...effects], reply: () => ({ done: view }) };
}

/** An add's facts: the new credential verified when it is added now (the first, or on the signed retry), and that retry's stamp. */
interface AddFacts {
  credential?: VerifiedCredential;
  retry?: SignedRetryFact;
}

/** The request, the wallet (made on first need) and the customer's email an add names; the customer must be active. */
function adding(input: AddCredentialInput, world: World, at: number): { request: NewCredentialRequest; wallet: Wallet; customerEmail: string | undefined } {
  const request = newCredentialRequest(input.body);
  const account = walletAccountIn(world, input.env.id, input.body.accountId);
  const customer = world.customers.get(account.customerId)!;
  assertActive(customer);
  return { request, wallet: walletOf(world.wallets.ofAccount(account.id), account, at), customerEmail: customer.email };
}

function addSpec(input: AddCredentialInput): SignedRequestSpec {
  return { action: 'ADD_CREDENTIAL', method: 'POST', path: input.path, body: input.body, credentialType: input.body.type };
}

/** POST /auth/credentials: the account's first credential at once (201); any other on a signed retry (202, then 201). */
export const addWalletCredential: DomainCommand<AddCredentialInput, Signed<IssuedAuthMethod>, AddFacts> = {
  name: 'wallet.credential.add',
  prepare: async (input, world, at) => {
    const { request, wallet } = adding(input, world, at);
    if (wallet.credentials.length === 0) return { credential: await verifyNewCredential(input, request, at) };
    if (!isRetry(input.retry)) return {};
    const retry = await verifySignedRetry(input.ports, input.env.environment, wallet, input.retry, addSpec(input), at);
    return { retry, credential: await verifyNewCredential(input, request, at) };
  },
  // The customer too: a credential is added only while it is active, and its email is the OTP's address.
  actors: ({ env, body }, world) => {
    const account = walletAccountIn(world, env.id, body.accountId);
    return [account.customerId, account.id];
  },
  decide: (input, world, at, facts) => {
    const { request, wallet, customerEmail } = adding(input, world, at);
    if (wallet.credentials.length === 0) return addToWallet(input, wallet, request, customerEmail, preparedFact(facts.credential, 'wallet.credential.add'), at);
    if (isRetry(input.retry)) {
      const accepted = acceptSignedRetry(input.ports, wallet, input.retry, addSpec(input), preparedFact(facts.retry, 'wallet.credential.add'), at);
      return addToWallet(input, accepted.wallet, request, customerEmail, preparedFact(facts.credential, 'wallet.credential.add'), at);
    }
    assertTypeFree(wallet, input.body.type);
    return openSignedRequest(input.ports, wallet, addSpec(input), at);
  },
};

export interface ChallengeCredentialInput extends WalletCommandInput {
  credentialId: string;
  /** PASSKEY: the key the session will be for (sealed to it, or the client's own when compressed), bound into the challenge. */
  clientPublicKey?: string;
}

/** A PASSKEY's challenge answers with the WebAuthn challenge to sign. */
export type ChallengedCredential = IssuedAuthMethod | (AuthMethodView & { challenge: string; requestId: string; expiresAt: string });

/**
 * EMAIL_OTP: a new code, mailed in production (sandbox sends none: the OTP is the magic
 * value), and a new target to encrypt it to. OAUTH has nothing to issue.
 */
function renewChallenge(input: WalletCommandInput, wallet: Wallet, credential: Credential, at: number): Decision<DomainEvent, ChallengedCredential> {
  let renewed: Credential = { ...credential, lastChallengeAt: at, updatedAt: at };
  const effects: Array<EngineEvent<unknown>> = [];
  let otpEncryptionTargetBundle: string | undefined;
  if (credential.type === 'EMAIL_OTP') {
    const target = input.ports.issueOtpTarget(credential.id);
    renewed = { ...renewed, otpTarget: target.target };
    otpEncryptionTargetBundle = target.bundle;
    if (input.env.environment === 'production') {
      const issued = issueOtp(input, wallet.accountId, credential.email!, at);
      renewed = { ...renewed, otp: issued.otp };
      effects.push(issued.mail);
    }
  }
  const next = replaceCredential(wallet, renewed);
  const view: IssuedAuthMethod = renderAuthMethod(next, renewed);
  if (otpEncryptionTargetBundle !== undefined) view.otpEncryptionTargetBundle = otpEncryptionTargetBundle;
  return { events: [changed(next, at), ...effects], reply: () => view };
}

/**
 * PASSKEY: the WebAuthn challenge is the hash of the session-creation payload, which names
 * the clientPublicKey: the authenticator's signature commits to the key the session goes to.
 */
function passkeyChallenge(ports: WalletCommandInput['ports'], wallet: Wallet, credential: Credential, clientPublicKey: string, at: number): Decision<DomainEvent, ChallengedCredential> {
  const requestId = uuidv7(at);
  const expiresAt = at + SIGNED_REQUEST_WINDOW_MS;
  const sessionPayload = JSON.stringify({
    action: 'CREATE_SESSION',
    credentialId: credential.id,
    clientPublicKey,
    requestId,
    nonce: ports.randomHex(16),
    expiresAt: isoTime(expiresAt),
  });
  const issued: PasskeyChallenge = { requestId, challenge: ports.sha256Base64url(sessionPayload), clientPublicKey, expiresAt };
  const renewed: Credential = { ...credential, lastChallengeAt: at, updatedAt: at, passkeyChallenge: issued };
  const next = replaceCredential(wallet, renewed);
  return {
    events: [changed(next, at)],
    reply: () => ({ ...renderAuthMethod(next, renewed), challenge: issued.challenge, requestId, expiresAt: isoTime(expiresAt) }),
  };
}

/** POST /auth/credentials/{id}/challenge: at most one per CHALLENGE_INTERVAL_MS per credential. */
export const challengeWalletCredential: DomainCommand<ChallengeCredentialInput, ChallengedCredential> = {
  name: 'wallet.credential.challenge',
  actors: ({ env, credentialId }, world) => [walletHolding(world, env.id, credentialId, 'credential').accountId],
  decide: (input, world, at) => {
    const id = input.credentialId;
    const wallet = walletHolding(world, input.env.id, id, 'credential');
    const credential = credentialOf(wallet, id)!;
    const clientPublicKey = credential.type === 'PASSKEY' ? requireSessionClientKey(input.ports, input.clientPublicKey).toLowerCase() : undefined;
    const wait = challengeRetryAfter(credential, at);
    if (wait !== undefined) throw rateLimited(`credential ${id} was challenged less than ${CHALLENGE_INTERVAL_MS / 1000} seconds ago`, wait);
    if (clientPublicKey === undefined) return renewChallenge(input, wallet, credential, at);
    return passkeyChallenge(input.ports, wallet, credential, clientPublicKey, at);
  },
};

export interface RevokeCredentialInput extends SignedCommandInput {
  credentialId: string;
}

/** The credential a revoke names (never the wallet's last), and the signed request that authorises it. */
function revoking(input: RevokeCredentialInput, world: World): SignedTarget {
  const id = input.credentialId;
  const wallet = walletHolding(world, input.env.id, id, 'credential');
  const credential = credentialOf(wallet, id)!;
  assertNotLast(wallet, id);
  return { wallet, spec: signedDeleteSpec('REVOKE_CREDENTIAL', input.path, credential.type, { credentialId: id }) };
}

/** DELETE /auth/credentials/{id}: signed by a session of another credential (202, then 204); never the last one. */
export const revokeWalletCredential: DomainCommand<RevokeCredentialInput, Signed<undefined>, SignedStep> = {
  name: 'wallet.credential.revoke',
  prepare: (input, world, at) => prepareSignedStep(input, revoking(input, world), at),
  actors: ({ env, credentialId }, world) => [walletHolding(world, env.id, credentialId, 'credential').accountId],
  decide: (input, world, at, prepared) =>
    decideSignedStep(input, revoking(input, world), prepared, at, (accepted) => {
      const id = input.credentialId;
      if (accepted.signer.credentialId === id) {
        throw unauthorized('Stamp must come from a session of another credential', 'a credential cannot authorise its own revocation');
      }
      const ending = accepted.wallet.sessions.filter((s) => s.credentialId === id);
      return { events: [changed(revokeCredential(accepted.wallet, id, at), at), ...ending.map((s) => cancelTimer(s.id))], reply: () => ({ done: undefined }) };
    }),
};
