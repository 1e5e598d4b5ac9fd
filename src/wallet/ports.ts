// The wallet's decisions (actors/commands/wallet-*.ts) reach cryptography, the OTP mail and
// the production verifiers through WalletPorts; this is their implementation over the
// services. A verifier's refusal (WalletAuthError) becomes the API's 401 here, with the
// client-facing reason only: its detail, which names the failed check, stays out of the answer.
import { createHash } from 'node:crypto';
import { drawBytes } from '../engine/entropy.js';
import { unauthorized } from '../../actors/errors.js';
import type { EmbeddedWalletConfig, OidcIssuerConfig, WebauthnConfig } from '../../actors/platform.js';
import type { OtpTarget, PasskeyKey } from '../../actors/wallet.js';
import type { EncryptedOtp, OidcIdentity, OtpVerificationClaims, PasskeyAssertion, PasskeyAttestation, StampCheck, WalletPorts } from '../../actors/commands/wallet.js';
import type { EngineEvent } from '../engine/state-machine.js';
import { requestHash } from '../crypto/canonical-json.js';
import { checkClientPublicKey, checkSessionClientKey } from '../crypto/p256.js';
import { generateMnemonic, openWalletMnemonic, sealWalletMnemonic } from '../crypto/wallet-secrets.js';
import type { Services } from '../services.js';
import { issueOtpTarget, openEncryptedOtp, signVerificationToken } from './encrypted-otp.js';
import { WalletAuthError } from './errors.js';
import { OTP_MAIL_EFFECT, otpMail } from './mail.js';
import { parseSandboxOidc } from './oidc.js';
import { newOtp, otpMatches } from './otp.js';
import { verifyPasskeyAssertion, verifyPasskeyRegistration } from './webauthn.js';

/** A check's refusal as the API's 401; anything else as it is. */
function refusal(err: unknown): unknown {
  return err instanceof WalletAuthError ? unauthorized(err.reason) : err;
}

async function walletAuth<T>(check: () => Promise<T>): Promise<T> {
  try {
    return await check();
  } catch (err) {
    throw refusal(err);
  }
}

/**
 * WalletPorts over `services`. Cheap to make (one object per request); members are read
 * from the services at each call, so a replaced crypto pool method (tests) is the one used.
 */
export class ServiceWalletPorts implements WalletPorts {
  constructor(private readonly services: Services) {}

  requestHash(body: unknown): string {
    return requestHash(body);
  }

  clientPublicKeyProblem(value: string | undefined): string | undefined {
    const check = checkClientPublicKey(value);
    return check.ok ? undefined : check.reason;
  }

  sessionClientKeyProblem(value: string | undefined): string | undefined {
    const check = checkSessionClientKey(value);
    return check.ok ? undefined : check.reason;
  }

  randomHex(bytes: number): string {
    return drawBytes(bytes).toString('hex');
  }

  sha256Base64url(text: string): string {
    return createHash('sha256').update(text).digest('base64url');
  }

  issueOtp(mail: { accountId: string; to: string; expiresAt: number; config: EmbeddedWalletConfig }, at: number): { codeHash: string; mail: EngineEvent<unknown> } {
    const { code, codeHash } = newOtp(mail.config.otpLength, this.services.otpHasher);
    const payload = otpMail({ to: mail.to, code, expiresAt: mail.expiresAt, config: mail.config }, this.services.masterKey);
    return { codeHash, mail: this.services.engine.effect(OTP_MAIL_EFFECT, [mail.accountId], payload, at) };
  }

  otpMatches(codeHash: string, presented: string): boolean {
    return otpMatches(codeHash, presented, this.services.otpHasher);
  }

  verifyOidcToken(token: string, issuers: readonly OidcIssuerConfig[], at: number): Promise<OidcIdentity> {
    return walletAuth(() => this.services.oidc.verify(token, issuers, at));
  }

  readSandboxOidcToken(token: string, configuredIssuers: readonly string[]): OidcIdentity {
    try {
      return parseSandboxOidc(token, configuredIssuers);
    } catch (err) {
      throw refusal(err);
    }
  }

  verifyPasskeyRegistration(input: { attestation: PasskeyAttestation; expectedChallenge: string; webauthn: WebauthnConfig }): Promise<PasskeyKey> {
    return walletAuth(() => verifyPasskeyRegistration(input));
  }

  async verifyPasskeyAssertion(input: { assertion: PasskeyAssertion; expectedChallenge: string; webauthn: WebauthnConfig; passkey: PasskeyKey }): Promise<number> {
    const { newCounter } = await walletAuth(() =>
      verifyPasskeyAssertion({ assertion: input.assertion, expectedChallenge: input.expectedChallenge, webauthn: input.webauthn, credential: input.passkey }),
    );
    return newCounter;
  }

  async verifyStamp(header: string, payload: string, expectedPublicKey?: string): Promise<StampCheck> {
    const result = await this.services.crypto.verifyStamp(expectedPublicKey === undefined ? { header, payload } : { header, payload, expectedPublicKeys: [expectedPublicKey] });
    return result.ok ? { ok: true, publicKey: result.publicKey } : { ok: false, reason: result.error.reason };
  }

  issueSessionKey(clientPublicKey: string): Promise<{ sessionPublicKey: string; encryptedSessionSigningKey: string }> {
    return this.services.crypto.issueSessionKey(clientPublicKey);
  }

  issueOtpTarget(credentialId: string): { target: OtpTarget; bundle: string } {
    return issueOtpTarget(this.services.masterKey, this.services.walletSigner, credentialId);
  }

  openOtpBundle(credentialId: string, target: OtpTarget, bundle: string): EncryptedOtp | { problem: string } {
    return openEncryptedOtp(this.services.masterKey, credentialId, target, bundle);
  }

  signOtpVerificationToken(claims: OtpVerificationClaims): Promise<string> {
    return signVerificationToken(this.services.walletSigner, claims);
  }

  newMnemonic(): string {
    return generateMnemonic();
  }

  sealMnemonic(accountId: string, mnemonic: string): string {
    return sealWalletMnemonic(this.services.masterKey, accountId, mnemonic);
  }

  openMnemonic(accountId: string, sealed: string): string {
    return openWalletMnemonic(this.services.masterKey, accountId, sealed);
  }

  exportBundle(input: { clientPublicKey: string; mnemonic: string; organizationId: string; signed: boolean }): Promise<string> {
    const { clientPublicKey, mnemonic, organizationId } = input;
    return this.services.crypto.createExportBundle({ clientPublicKey, mnemonic, organizationId, signer: input.signed ? this.services.walletSigner : null });
  }
}
