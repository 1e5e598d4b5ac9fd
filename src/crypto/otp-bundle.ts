// Encrypted OTP codes (CONTRACT.md "Real clients"), byte-compatible with @turnkey/crypto's
// encryptOtpCodeToBundle:
//
//   otpEncryptionTargetBundle = enclaveBundle (export-bundle.ts) of JSON {"targetPublic": hex}
//   encryptedOtpBundle        = JSON {encappedPublic, ciphertext} (hex)
//
// targetPublic is the uncompressed key of a pair the service makes for one issued code; the
// client checks the bundle's signature by the service signer before it trusts that key.
// The ciphertext is the Turnkey HPKE profile (session-bundle.ts) to targetPublic over the
// JSON {"otp_code", "public_key"}: the code the user typed and the client's key, which the
// verification token then names.
import { decodeUtf8Strict, fromHex, isHex, toHex, utf8 } from './bytes.js';
import { BundleError } from './errors.js';
import { enclaveBundle, parseJsonObject, publicKeyBytes, type ExportSigner } from './export-bundle.js';
import { checkSessionClientKey } from './p256.js';
import { turnkeyHpkeOpen } from './session-bundle.js';

/** The otpEncryptionTargetBundle naming `targetPublicKey` (65-byte uncompressed), signed by `signer`. */
export function otpTargetBundle(targetPublicKey: Uint8Array, signer: ExportSigner): string {
  return enclaveBundle(utf8.encode(JSON.stringify({ targetPublic: toHex(targetPublicKey) })), signer);
}

/** What an encryptedOtpBundle carries. */
export interface EncryptedOtp {
  readonly otpCode: string;
  /** The client's P-256 key, compressed or uncompressed hex, lowercase. */
  readonly publicKey: string;
}

function stringField(obj: Record<string, unknown>, name: string, what: string): string {
  const value = obj[name];
  if (typeof value !== 'string') throw new BundleError(`${what} must carry the string ${name}`);
  return value;
}

/** Opens an encryptedOtpBundle with the target's private key; BundleError says what is wrong with it. */
export function openOtpBundle(bundle: string, targetPrivateKey: Uint8Array): EncryptedOtp {
  const outer = parseJsonObject(bundle, 'encryptedOtpBundle');
  const enc = publicKeyBytes(stringField(outer, 'encappedPublic', 'encryptedOtpBundle'), 'encappedPublic');
  const ciphertextHex = stringField(outer, 'ciphertext', 'encryptedOtpBundle');
  if (!isHex(ciphertextHex)) throw new BundleError('ciphertext is not hex');
  let plaintext: Uint8Array;
  try {
    plaintext = turnkeyHpkeOpen(enc, fromHex(ciphertextHex), targetPrivateKey);
  } catch (cause) {
    // Most often a code encrypted to an earlier target: each create and challenge makes a new one.
    throw new BundleError('encryptedOtpBundle does not decrypt with the target key of the latest otpEncryptionTargetBundle', { cause });
  }
  let text: string;
  try {
    text = decodeUtf8Strict(plaintext);
  } catch (cause) {
    throw new BundleError('the decrypted OTP is not UTF-8 text', { cause });
  }
  const inner = parseJsonObject(text, 'the decrypted OTP');
  const otpCode = stringField(inner, 'otp_code', 'the decrypted OTP');
  const publicKey = stringField(inner, 'public_key', 'the decrypted OTP');
  if (!checkSessionClientKey(publicKey).ok) {
    throw new BundleError('public_key must be a P-256 public key on the curve: 66 hex characters starting with 02 or 03, or 130 starting with 04');
  }
  return { otpCode, publicKey: publicKey.toLowerCase() };
}
