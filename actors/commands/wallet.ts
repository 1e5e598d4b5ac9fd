// What the embedded-wallet commands share (SERVICE_SPEC parts 4 and 5, CONTRACT.md
// "Embedded-wallet API"): the ports through which their prepare steps (and a decision's cheap
// checks) reach cryptography and the production verifiers (implemented in src/wallet/ports.ts), the environment as the request
// found it, and the finders of a wallet's account, credential or session. Every wallet
// decision holds the wallet's internal account, the actor that owns the wallet record.
//
// The commands: wallet-credentials.ts (add, challenge, revoke a credential),
// wallet-sessions.ts (verify a credential into a session, revoke a session),
// wallet-export.ts; the signed-retry protocol they share is wallet-signed-request.ts.
import type { EngineEvent } from '../../src/engine/state-machine.js';
import { invalidField, notFound } from '../errors.js';
import type { InternalAccount } from '../internal-account.js';
import type { EmbeddedWalletConfig, Environment, OidcIssuerConfig, WebauthnConfig } from '../platform.js';
import type { OtpTarget, PasskeyKey, Wallet } from '../wallet.js';
import type { World } from '../world.js';

/** Who an id token names. Sandbox tokens may lack a subject. */
export interface OidcIdentity {
  issuer: string;
  subject?: string;
  /** The `email` claim, when the token carries one. */
  email?: string;
}

/** A WebAuthn registration as the client sends it (binary fields base64url). */
export interface PasskeyAttestation {
  credentialId: string;
  clientDataJson: string;
  attestationObject: string;
  transports?: readonly string[];
}

/** A WebAuthn assertion as the client sends it (binary fields base64url). */
export interface PasskeyAssertion {
  credentialId: string;
  clientDataJson: string;
  authenticatorData: string;
  signature: string;
  userHandle?: string;
}

export type StampCheck = { ok: true; publicKey: string } | { ok: false; reason: string };

/** An encryptedOtpBundle opened: the code typed, and the client key the session is asked for. */
export interface EncryptedOtp {
  otpCode: string;
  /** Lowercase hex, compressed or uncompressed (checked to be a P-256 key). */
  publicKey: string;
}

/**
 * The claims of an OTP verificationToken, all strings as the widely deployed client
 * libraries read them; `exp` is a millisecond epoch.
 */
export interface OtpVerificationClaims {
  id: string;
  verification_type: 'OTP_TYPE_EMAIL';
  contact: string;
  organization_id: string;
  public_key: string;
  exp: string;
}

/**
 * What the wallet's decisions need from src/: cryptography, the OTP mail and the production
 * verifiers. A verifier that refuses throws the API's 401 (`unauthorized`, its reason naming
 * the check). None of them reads or writes the state.
 */
export interface WalletPorts {
  /** SHA-256 hex of the body's canonical JSON: what a signed request binds as `bodySha256`. */
  requestHash(body: unknown): string;
  /** Why `value` is not an uncompressed P-256 public key, or undefined when it is one. */
  clientPublicKeyProblem(value: string | undefined): string | undefined;
  /** Why `value` is not a P-256 public key in either SEC1 form (a session's clientPublicKey), or undefined when it is one. */
  sessionClientKeyProblem(value: string | undefined): string | undefined;
  /** `bytes` random bytes, hex. */
  randomHex(bytes: number): string;
  sha256Base64url(text: string): string;
  /** A fresh code mailed to `to`: its keyed hash to keep, and the effect that mails the code (sealed) once the entry is durable. */
  issueOtp(mail: { accountId: string; to: string; expiresAt: number; config: EmbeddedWalletConfig }, at: number): { codeHash: string; mail: EngineEvent<unknown> };
  otpMatches(codeHash: string, presented: string): boolean;
  /** Production: the token verified against `issuers` at `at` (signature, audience, freshness). */
  verifyOidcToken(token: string, issuers: readonly OidcIssuerConfig[], at: number): Promise<OidcIdentity>;
  /** Sandbox: a structurally valid token of a configured or well-known issuer; its signature is not checked. */
  readSandboxOidcToken(token: string, configuredIssuers: readonly string[]): OidcIdentity;
  /** Production: the attestation verified for the relying party; the key to keep. */
  verifyPasskeyRegistration(input: { attestation: PasskeyAttestation; expectedChallenge: string; webauthn: WebauthnConfig }): Promise<PasskeyKey>;
  /** Production: the assertion verified against the stored key; the counter to keep. */
  verifyPasskeyAssertion(input: { assertion: PasskeyAssertion; expectedChallenge: string; webauthn: WebauthnConfig; passkey: PasskeyKey }): Promise<number>;
  /**
   * The public key that made a stamp over `payload`, or why the stamp is not a valid one;
   * with `expectedPublicKey` (either form), a stamp by any other key is not valid.
   */
  verifyStamp(header: string, payload: string, expectedPublicKey?: string): Promise<StampCheck>;
  /** A session key pair: its public key, and its private key sealed (HPKE) to the client's key. */
  issueSessionKey(clientPublicKey: string): Promise<{ sessionPublicKey: string; encryptedSessionSigningKey: string }>;
  /** A fresh target for encrypted codes of `credentialId`, and the signed otpEncryptionTargetBundle naming it. */
  issueOtpTarget(credentialId: string): { target: OtpTarget; bundle: string };
  /** The code and key inside an encryptedOtpBundle to `target`, or why it is not one (undecryptable with it included). */
  openOtpBundle(credentialId: string, target: OtpTarget, bundle: string): EncryptedOtp | { problem: string };
  /** The verificationToken: an ES256 JWT of `claims` by the service signer. */
  signOtpVerificationToken(claims: OtpVerificationClaims): Promise<string>;
  newMnemonic(): string;
  sealMnemonic(accountId: string, mnemonic: string): string;
  openMnemonic(accountId: string, sealed: string): string;
  /** The mnemonic sealed to the client's key as an export bundle, `signed` with the service's export key or not. */
  exportBundle(input: { clientPublicKey: string; mnemonic: string; organizationId: string; signed: boolean }): Promise<string>;
}

/**
 * The environment as the request found it. The wallet's decisions do not hold the
 * environment's actor, which would order every wallet decision of the environment behind
 * every other, and their prepare steps, which reach crypto and production OIDC key sets,
 * read its configuration before anything is held.
 */
export interface WalletEnv {
  id: string;
  environment: Environment;
  config: EmbeddedWalletConfig;
}

/** What every wallet command's input carries. */
export interface WalletCommandInput {
  ports: WalletPorts;
  env: WalletEnv;
}

/** The EMBEDDED_WALLET account `id` of the environment; a 404 or 400 names `field`. */
export function walletAccountIn(world: World, envId: string, id: string, field = 'accountId'): InternalAccount {
  const account = world.internalAccounts.inEnv(envId, id);
  if (account === undefined) throw notFound(field, 'internal account', id);
  if (account.type !== 'EMBEDDED_WALLET') throw invalidField(field, `${id} is an ${account.type} account; only EMBEDDED_WALLET accounts take credentials`);
  return account;
}

/** The wallet of the environment holding credential or session `id` (`what` says which), else 404. */
export function walletHolding(world: World, envId: string, id: string, what: 'credential' | 'session'): Wallet {
  const wallet = world.wallets.holding(id);
  if (wallet === undefined || wallet.envId !== envId) throw notFound('id', what, id);
  return wallet;
}

/** The client's key, once it is an uncompressed P-256 public key; else 400. */
export function requireClientPublicKey(ports: WalletPorts, value: string | undefined): string {
  const problem = ports.clientPublicKeyProblem(value);
  if (problem !== undefined) throw invalidField('clientPublicKey', problem);
  return value!;
}

/** A session's clientPublicKey, once it is a P-256 public key in either form; else 400. */
export function requireSessionClientKey(ports: WalletPorts, value: string | undefined): string {
  const problem = ports.sessionClientKeyProblem(value);
  if (problem !== undefined) throw invalidField('clientPublicKey', problem);
  return value!;
}

/**
 * A compressed key (33 bytes, 66 hex characters) means the client keeps its private half
 * as the session key; an uncompressed one asks for a session key sealed to it. Call with a
 * key already checked to be one of the two.
 */
export function heldByClient(publicKey: string): boolean {
  return publicKey.length === 66;
}
