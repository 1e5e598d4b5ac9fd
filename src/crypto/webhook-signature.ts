// Webhook body signatures (`X-Service-Signature`, `X-Grid-Signature` for the envelope): base64 of the DER ECDSA P-256 SHA-256
// signature over the exact body bytes, made with the environment's webhook key. The
// public key is published as uncompressed SEC1 hex (`webhookPublicKey` in GET /config).
import type { KeyObject } from 'node:crypto';
import { asBytes, decodeBase64Loose, fromHex, isHex, toBase64 } from './bytes.js';
import { parseDerSignature, signP256, verifyP256 } from './p256.js';

/** The request header a webhook's signature travels in: delivery sets it, the OpenAPI document names it. */
export const WEBHOOK_SIGNATURE_HEADER = 'X-Service-Signature';
/** The same signature, over an ENVELOPE body (CONTRACT.md "Today's clients, second wave"): the vendor's header name. */
export const ENVELOPE_SIGNATURE_HEADER = 'X-Grid-Signature';

/** base64(DER ECDSA P-256 SHA-256 over `body`), low-S. */
export function signWebhookBody(body: Uint8Array | string, privateKey: Uint8Array | KeyObject): string {
  return toBase64(signP256(asBytes(body), privateKey));
}

/**
 * Receiver side: true when `signature` (base64 or base64url of DER) verifies over the
 * exact `body` bytes with `publicKey` (SEC1 bytes or hex, either encoding).
 */
export function verifyWebhookSignature(body: Uint8Array | string, signature: string, publicKey: Uint8Array | string): boolean {
  const der = decodeBase64Loose(signature.trim());
  if (der === undefined || parseDerSignature(der) === undefined) return false;
  let key: Uint8Array;
  if (typeof publicKey === 'string') {
    if (!isHex(publicKey)) return false;
    key = fromHex(publicKey);
  } else {
    key = publicKey;
  }
  try {
    return verifyP256(asBytes(body), der, key);
  } catch {
    return false;
  }
}
