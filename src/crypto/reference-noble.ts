// Pure-JS (noble) implementations of the operations the service runs on node:crypto.
// They are not on the request path: tests use them as an independent implementation to
// cross-check the node:crypto code byte for byte, and bench/crypto.bench.ts measures them
// as the "pure JS" alternative.
import { gcm } from '@noble/ciphers/aes.js';
import { p256 } from '@noble/curves/nist.js';
import { expand, extract } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import type { HpkePrimitives } from './hpke.js';

export const noblePrimitives: HpkePrimitives = {
  name: '@noble',
  dh(privateKey, peerPublicKey) {
    return { dh: p256.getSharedSecret(privateKey, peerPublicKey, true).subarray(1), publicKey: p256.getPublicKey(privateKey, false) };
  },
  publicKey(privateKey) {
    return p256.getPublicKey(privateKey, false);
  },
  extract(salt, ikm) {
    return extract(sha256, ikm, salt);
  },
  expand(prk, info, length) {
    return expand(sha256, prk, info, length);
  },
  aeadSeal(key, nonce, aad, plaintext) {
    return gcm(key, nonce, aad).encrypt(plaintext);
  },
  aeadOpen(key, nonce, aad, ciphertext) {
    return gcm(key, nonce, aad).decrypt(ciphertext);
  },
};

/** ECDSA P-256 SHA-256 verification in pure JS, accepting high-S like the node path. */
export function nobleVerifyP256(message: Uint8Array, derSignature: Uint8Array, publicKey: Uint8Array): boolean {
  try {
    return p256.verify(derSignature, message, publicKey, { format: 'der', lowS: false, prehash: true });
  } catch {
    return false;
  }
}

