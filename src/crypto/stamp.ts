// `Service-Wallet-Signature` stamps, the format @turnkey/api-key-stamper produces:
//
//   header = base64url( JSON {publicKey, scheme: "SIGNATURE_SCHEME_TK_API_P256", signature} )
//
// publicKey is the session key in compressed SEC1 hex, signature the DER hex of ECDSA
// P-256 SHA-256 over the exact payload bytes. Plain base64 (padded or not) is accepted
// as well as base64url. Unknown extra JSON members are ignored.
//
// Outcomes are values, not exceptions (they cross the worker boundary unchanged):
//   STAMP_MALFORMED          the header does not parse; `check` names the part
//   STAMP_KEY_MISMATCH       parses, but the stamped key is not one the caller accepts
//   STAMP_SIGNATURE_INVALID  parses, key accepted, signature does not verify
// The key check runs before the signature check: a stamp from a foreign key is refused
// as such whether or not its signature is valid for that key.
//
// High-S signatures are accepted (see p256.ts): signers in the wild produce them, and a
// requestId is single-use, so signature malleability gives an attacker nothing.
import { asBytes, decodeBase64Loose, decodeUtf8Strict, fromHex, isHex, toBase64Url, toHex, utf8 } from './bytes.js';
import type { StampFailure, StampMalformedCheck } from './errors.js';
import { StampError } from './errors.js';
import {
  CLIENT_PUBLIC_KEY_RE,
  compressPublicKey,
  isCompressedPublicKeyHex,
  keyPairFromPrivateKey,
  parseDerSignature,
  publicKeyObject,
  signP256,
} from './p256.js';
import { verify as nodeVerify, type KeyObject } from 'node:crypto';

export const STAMP_SCHEME = 'SIGNATURE_SCHEME_TK_API_P256';
/** Longest header accepted; a real stamp is about 400 characters. */
export const MAX_STAMP_HEADER_LENGTH = 2048;

export interface ParsedStamp {
  /** Lowercase compressed SEC1 hex of the stamping key. */
  readonly publicKey: string;
  readonly scheme: typeof STAMP_SCHEME;
  /** Strict DER signature bytes. */
  readonly signature: Uint8Array;
  /** OpenSSL key object for the stamped key (validated on-curve). */
  readonly key: KeyObject;
}

export type StampParseResult = { readonly ok: true; readonly stamp: ParsedStamp } | { readonly ok: false; readonly error: StampFailure };

export type StampVerification = { readonly ok: true; readonly publicKey: string } | { readonly ok: false; readonly error: StampFailure };

const malformed = (check: StampMalformedCheck, reason: string): { ok: false; error: StampFailure } => ({
  ok: false,
  error: { kind: 'STAMP_MALFORMED', check, reason },
});

/** Parses and validates the structure of a stamp header value (no signature check). */
export function parseStamp(header: unknown): StampParseResult {
  if (typeof header !== 'string' || header.trim() === '') return malformed('HEADER', 'Service-Wallet-Signature header is missing or empty');
  const text = header.trim();
  if (text.length > MAX_STAMP_HEADER_LENGTH) {
    return malformed('HEADER', `Service-Wallet-Signature header is longer than ${MAX_STAMP_HEADER_LENGTH} characters`);
  }
  const decoded = decodeBase64Loose(text);
  if (decoded === undefined) return malformed('BASE64', 'Service-Wallet-Signature is not base64url or base64');
  let json: unknown;
  try {
    json = JSON.parse(decodeUtf8Strict(decoded));
  } catch {
    return malformed('JSON', 'Service-Wallet-Signature does not decode to JSON');
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    return malformed('JSON', 'Service-Wallet-Signature does not decode to a JSON object');
  }
  const obj = json as Record<string, unknown>;
  const { publicKey, scheme, signature } = obj;
  const missing = (['publicKey', 'scheme', 'signature'] as const).filter((name) => typeof obj[name] !== 'string');
  if (missing.length > 0 || typeof publicKey !== 'string' || typeof scheme !== 'string' || typeof signature !== 'string') {
    return malformed('FIELDS', `stamp must carry string fields publicKey, scheme and signature (missing or not a string: ${missing.join(', ')})`);
  }
  if (scheme !== STAMP_SCHEME) return malformed('SCHEME', `stamp scheme must be ${STAMP_SCHEME}`);
  if (!isCompressedPublicKeyHex(publicKey)) {
    return malformed('PUBLIC_KEY', 'stamp publicKey must be a compressed P-256 public key: 66 hex characters starting with 02 or 03');
  }
  let key: KeyObject;
  try {
    key = publicKeyObject(fromHex(publicKey));
  } catch {
    return malformed('PUBLIC_KEY', 'stamp publicKey is not a point on the P-256 curve');
  }
  const derBytes = isHex(signature) ? fromHex(signature) : undefined;
  if (derBytes === undefined || parseDerSignature(derBytes) === undefined) {
    return malformed('SIGNATURE', 'stamp signature must be the hex of a DER-encoded ECDSA P-256 signature');
  }
  return { ok: true, stamp: { publicKey: publicKey.toLowerCase(), scheme: STAMP_SCHEME, signature: derBytes, key } };
}

/**
 * Normalises a public key given as compressed or uncompressed hex to lowercase compressed
 * hex, for comparison only (the point itself is not validated here). Undefined when the
 * text is neither shape.
 */
export function normalizePublicKeyHex(hex: string): string | undefined {
  if (isCompressedPublicKeyHex(hex)) return hex.toLowerCase();
  if (CLIENT_PUBLIC_KEY_RE.test(hex)) return toHex(compressPublicKey(fromHex(hex)));
  return undefined;
}

export interface VerifyStampInput {
  /** The raw `Service-Wallet-Signature` header value. */
  readonly header: unknown;
  /** The exact payloadToSign the service stored (string = its UTF-8 bytes). */
  readonly payload: string | Uint8Array;
  /**
   * Session public keys allowed to sign (compressed or uncompressed hex). Omit to accept
   * any key (the caller then looks the returned publicKey up itself).
   */
  readonly expectedPublicKeys?: readonly string[];
}

export function verifyStamp(input: VerifyStampInput): StampVerification {
  const parsed = parseStamp(input.header);
  if (!parsed.ok) return parsed;
  const { stamp } = parsed;
  if (input.expectedPublicKeys !== undefined) {
    const accepted = input.expectedPublicKeys.some((k) => normalizePublicKeyHex(k) === stamp.publicKey);
    if (!accepted) {
      return {
        ok: false,
        error: { kind: 'STAMP_KEY_MISMATCH', reason: 'stamp was signed by a key that is not an active session key for this request' },
      };
    }
  }
  const valid = nodeVerify('sha256', asBytes(input.payload), { key: stamp.key, dsaEncoding: 'der' }, stamp.signature);
  if (!valid) {
    return { ok: false, error: { kind: 'STAMP_SIGNATURE_INVALID', reason: 'stamp signature does not verify over payloadToSign' } };
  }
  return { ok: true, publicKey: stamp.publicKey };
}

/** Throwing form of {@link verifyStamp}: returns the stamping key, or throws StampError. */
export function assertStamp(input: VerifyStampInput): string {
  const result = verifyStamp(input);
  if (!result.ok) throw new StampError(result.error);
  return result.publicKey;
}

/**
 * Client side: the header value for `payload` signed with a session private key, in
 * the same shape as ApiKeyStamper (base64url without padding, same member order).
 */
export function createStamp(payload: string | Uint8Array, sessionPrivateKey: Uint8Array): string {
  const pair = keyPairFromPrivateKey(sessionPrivateKey);
  const stamp = {
    publicKey: toHex(pair.publicKeyCompressed),
    scheme: STAMP_SCHEME,
    signature: toHex(signP256(asBytes(payload), sessionPrivateKey)),
  };
  return toBase64Url(utf8.encode(JSON.stringify(stamp)));
}
