// Encrypted EMAIL_OTP codes (CONTRACT.md "Real clients"): the target key pair each issued
// code may be encrypted to, kept on the credential with its private key sealed under the
// master key; the opening of an encryptedOtpBundle with it; and the verificationToken a
// right code earns, an ES256 JWT by the service signer (jose). The formats themselves are
// src/crypto/otp-bundle.ts.
import { CompactSign } from 'jose';
import type { EncryptedOtp, OtpVerificationClaims } from '../../actors/commands/wallet.js';
import type { OtpTarget } from '../../actors/wallet.js';
import { toHex, utf8 } from '../crypto/bytes.js';
import { BundleError } from '../crypto/errors.js';
import type { ExportSigner } from '../crypto/export-bundle.js';
import type { MasterKey } from '../crypto/master-key.js';
import { openOtpBundle, otpTargetBundle } from '../crypto/otp-bundle.js';
import { generateP256KeyPair, privateKeyObject } from '../crypto/p256.js';
import { openPrivateKey, sealPrivateKey } from '../crypto/wallet-secrets.js';

/** The sealing label binds a target's private key to its credential: copied onto another, it does not open. */
function sealingLabel(credentialId: string): string {
  return `otp-target:${credentialId}`;
}

/** A fresh target for `credentialId`'s next code, and the otpEncryptionTargetBundle naming it, signed by `signer`. */
export function issueOtpTarget(masterKey: MasterKey, signer: ExportSigner, credentialId: string): { target: OtpTarget; bundle: string } {
  const pair = generateP256KeyPair();
  const target: OtpTarget = { publicKey: toHex(pair.publicKey), sealedPrivateKey: sealPrivateKey(masterKey, sealingLabel(credentialId), pair.privateKey) };
  return { target, bundle: otpTargetBundle(pair.publicKey, signer) };
}

/** What an encryptedOtpBundle to `target` carries, or why it is not one (the reason names no secret). */
export function openEncryptedOtp(masterKey: MasterKey, credentialId: string, target: OtpTarget, bundle: string): EncryptedOtp | { problem: string } {
  const privateKey = openPrivateKey(masterKey, sealingLabel(credentialId), target.sealedPrivateKey);
  try {
    return openOtpBundle(bundle, privateKey);
  } catch (err) {
    if (err instanceof BundleError) return { problem: err.reason };
    throw err;
  } finally {
    privateKey.fill(0);
  }
}

/** The header the widely deployed client libraries accept, exactly. */
const TOKEN_HEADER = { alg: 'ES256', typ: 'JWT' } as const;

/** The verificationToken: a compact JWS over the claims' JSON, ES256 by `signer`. */
export function signVerificationToken(signer: ExportSigner, claims: OtpVerificationClaims): Promise<string> {
  return new CompactSign(utf8.encode(JSON.stringify(claims))).setProtectedHeader(TOKEN_HEADER).sign(privateKeyObject(signer.privateKey));
}
