// P-256 keys, SEC1 encodings, strict DER signatures and ECDSA-SHA256 over node:crypto.
//
// Division of labour (see docs/crypto.md for the measurements behind it):
// - node:crypto (OpenSSL) does every signature, verification and ECDH on the hot path;
//   it is an order of magnitude faster than the pure-JS curve. Under a seeded source (a
//   simulation) it also signs, with RFC 6979's nonce, so that a seed's signatures are
//   the same bytes on any machine.
// - @noble/curves parses and validates points (on-curve check, compression and
//   decompression) where a precise error matters more than microseconds, and serves
//   as the independent reference implementation in tests and benchmarks.
//
// Signature policy: verification accepts both low-S and high-S signatures (OpenSSL,
// WebCrypto and @turnkey/api-key-stamper's Node runtime emit high-S about half the
// time, and Turnkey's own verifier accepts them). Signatures this library produces are
// always normalised to low-S, so they also pass verifiers that insist on low-S.
import { createECDH, createHash, createHmac, createPrivateKey, createPublicKey, sign as nodeSign, verify as nodeVerify, type KeyObject } from 'node:crypto';
import { currentEntropy, drawBytes, systemEntropy } from '../engine/entropy.js';
import { p256 } from '@noble/curves/nist.js';
import { bigIntToBytes, bytesToBigInt, concatBytes, fromHex, toHex } from './bytes.js';
import { InvalidPublicKeyError } from './errors.js';

/** Group order n of P-256. */
export const P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
const HALF_N = P256_N >> 1n;

export const PRIVATE_KEY_BYTES = 32;
export const PUBLIC_KEY_UNCOMPRESSED_BYTES = 65;
export const PUBLIC_KEY_COMPRESSED_BYTES = 33;

/** `clientPublicKey` as the API accepts it: uncompressed SEC1, hex, 130 characters. */
export const CLIENT_PUBLIC_KEY_RE = /^04[0-9a-fA-F]{128}$/;
const COMPRESSED_HEX_RE = /^0[23][0-9a-fA-F]{64}$/;

export interface P256KeyPair {
  /** 32-byte big-endian scalar. */
  readonly privateKey: Uint8Array;
  /** 65-byte uncompressed SEC1 point (0x04 || x || y). */
  readonly publicKey: Uint8Array;
  /** 33-byte compressed SEC1 point (0x02/0x03 || x). */
  readonly publicKeyCompressed: Uint8Array;
}

export interface P256KeyPairHex {
  readonly privateKey: string;
  readonly publicKey: string;
  readonly publicKeyCompressed: string;
}

export function isValidPrivateKey(privateKey: Uint8Array): boolean {
  if (privateKey.length !== PRIVATE_KEY_BYTES) return false;
  const d = bytesToBigInt(privateKey);
  return d > 0n && d < P256_N;
}

function assertPrivateKey(privateKey: Uint8Array): void {
  if (!isValidPrivateKey(privateKey)) throw new RangeError('P-256 private key must be 32 bytes encoding a scalar in [1, n-1]');
}

/** A fresh random private key from the process's Entropy, the OS CSPRNG (rejection sampling, no modular bias). */
export function newPrivateKey(): Uint8Array {
  for (;;) {
    const candidate = new Uint8Array(drawBytes(PRIVATE_KEY_BYTES));
    if (isValidPrivateKey(candidate)) return candidate;
  }
}

export function generateP256KeyPair(): P256KeyPair {
  return keyPairFromPrivateKey(newPrivateKey());
}

export function keyPairFromPrivateKey(privateKey: Uint8Array): P256KeyPair {
  assertPrivateKey(privateKey);
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(privateKey);
  const publicKey = new Uint8Array(ecdh.getPublicKey());
  return { privateKey: Uint8Array.from(privateKey), publicKey, publicKeyCompressed: compressPublicKey(publicKey) };
}

export function keyPairToHex(pair: P256KeyPair): P256KeyPairHex {
  return { privateKey: toHex(pair.privateKey), publicKey: toHex(pair.publicKey), publicKeyCompressed: toHex(pair.publicKeyCompressed) };
}

/**
 * Parses a SEC1 point (33-byte compressed or 65-byte uncompressed) and checks that it is
 * on the curve and not the identity. Returns both encodings.
 */
export function parsePublicKey(bytes: Uint8Array): { uncompressed: Uint8Array; compressed: Uint8Array } {
  if (bytes.length !== PUBLIC_KEY_COMPRESSED_BYTES && bytes.length !== PUBLIC_KEY_UNCOMPRESSED_BYTES) {
    throw new InvalidPublicKeyError(`P-256 public key must be 33 (compressed) or 65 (uncompressed) bytes, got ${bytes.length}`);
  }
  let point: ReturnType<typeof p256.Point.fromBytes>;
  try {
    point = p256.Point.fromBytes(bytes);
    point.assertValidity();
  } catch {
    throw new InvalidPublicKeyError('public key is not a point on the P-256 curve');
  }
  return { uncompressed: point.toBytes(false), compressed: point.toBytes(true) };
}

/** Compressed encoding of a (validated) point given in either encoding. */
export function compressPublicKey(publicKey: Uint8Array): Uint8Array {
  if (publicKey.length === PUBLIC_KEY_UNCOMPRESSED_BYTES && publicKey[0] === 4) {
    // Cheap path for a key we produced ourselves: the parity of y picks the prefix.
    const out = publicKey.slice(0, PUBLIC_KEY_COMPRESSED_BYTES);
    out[0] = 2 | ((publicKey[PUBLIC_KEY_UNCOMPRESSED_BYTES - 1] ?? 0) & 1);
    return out;
  }
  return parsePublicKey(publicKey).compressed;
}

export function decompressPublicKey(publicKey: Uint8Array): Uint8Array {
  return parsePublicKey(publicKey).uncompressed;
}

export type ClientPublicKeyCheck =
  | { readonly ok: true; readonly publicKey: Uint8Array }
  | { readonly ok: false; readonly reason: string };

/**
 * Strict validation of a `clientPublicKey` request field: a string of exactly 130 hex
 * characters starting `04` (uncompressed SEC1) that encodes a point on P-256.
 */
export function checkClientPublicKey(value: unknown): ClientPublicKeyCheck {
  return checkPointHex(value, (text) => CLIENT_PUBLIC_KEY_RE.test(text), 'clientPublicKey must be an uncompressed P-256 public key: 130 hex characters starting with 04');
}

/** `value` as hex of a point on P-256, in a form `wellFormed` accepts (`shapeReason` when it does not). */
function checkPointHex(value: unknown, wellFormed: (text: string) => boolean, shapeReason: string): ClientPublicKeyCheck {
  if (typeof value !== 'string') return { ok: false, reason: 'clientPublicKey must be a string' };
  if (!wellFormed(value)) return { ok: false, reason: shapeReason };
  const bytes = fromHex(value);
  try {
    parsePublicKey(bytes);
  } catch {
    return { ok: false, reason: 'clientPublicKey is not a point on the P-256 curve' };
  }
  return { ok: true, publicKey: bytes };
}

/**
 * A session's `clientPublicKey`: uncompressed as {@link checkClientPublicKey} takes it (the
 * service seals a fresh session key to it), or compressed, 66 hex characters starting `02`
 * or `03` (the client keeps the matching private key as its session key). Either way a
 * point on P-256; the key's bytes come back as given.
 */
export function checkSessionClientKey(value: unknown): ClientPublicKeyCheck {
  return checkPointHex(
    value,
    (text) => CLIENT_PUBLIC_KEY_RE.test(text) || COMPRESSED_HEX_RE.test(text),
    'clientPublicKey must be a P-256 public key: 130 hex characters starting with 04 (uncompressed) or 66 starting with 02 or 03 (compressed)',
  );
}

/** Throwing form of {@link checkClientPublicKey}; returns the 65 key bytes. */
export function parseClientPublicKey(value: unknown): Uint8Array {
  const check = checkClientPublicKey(value);
  if (!check.ok) throw new InvalidPublicKeyError(check.reason);
  return check.publicKey;
}

/** True for `^0[23][0-9a-fA-F]{64}$` (shape only; the point is checked when used). */
export function isCompressedPublicKeyHex(value: string): boolean {
  return COMPRESSED_HEX_RE.test(value);
}

// ---------------------------------------------------------------------------------------
// node:crypto key objects

// SubjectPublicKeyInfo / PKCS#8 prefixes for id-ecPublicKey + prime256v1. OpenSSL accepts
// a compressed point inside SPKI and an ECPrivateKey without the optional public key.
const SPKI_COMPRESSED_PREFIX = fromHex('3039301306072a8648ce3d020106082a8648ce3d030107032200');
const SPKI_UNCOMPRESSED_PREFIX = fromHex('3059301306072a8648ce3d020106082a8648ce3d030107034200');

/** Bounded LRU of public KeyObjects: session keys sign several requests in a row. */
class KeyObjectCache {
  readonly #map = new Map<string, KeyObject>();
  constructor(readonly limit: number) {}
  get(key: string): KeyObject | undefined {
    const hit = this.#map.get(key);
    if (hit !== undefined) {
      this.#map.delete(key);
      this.#map.set(key, hit);
    }
    return hit;
  }
  set(key: string, value: KeyObject): void {
    this.#map.set(key, value);
    if (this.#map.size > this.limit) {
      const oldest = this.#map.keys().next();
      if (oldest.done !== true) this.#map.delete(oldest.value);
    }
  }
}

const publicKeyCache = new KeyObjectCache(4096);

/**
 * node:crypto KeyObject for a SEC1 public key (33 or 65 bytes). OpenSSL checks the point
 * is on the curve; an invalid point throws InvalidPublicKeyError. Results are cached.
 */
export function publicKeyObject(publicKey: Uint8Array): KeyObject {
  const id = toHex(publicKey);
  const cached = publicKeyCache.get(id);
  if (cached !== undefined) return cached;
  let prefix: Uint8Array;
  if (publicKey.length === PUBLIC_KEY_COMPRESSED_BYTES && (publicKey[0] === 2 || publicKey[0] === 3)) prefix = SPKI_COMPRESSED_PREFIX;
  else if (publicKey.length === PUBLIC_KEY_UNCOMPRESSED_BYTES && publicKey[0] === 4) prefix = SPKI_UNCOMPRESSED_PREFIX;
  else throw new InvalidPublicKeyError('P-256 public key must be a 33-byte compressed or 65-byte uncompressed SEC1 point');
  let key: KeyObject;
  try {
    key = createPublicKey({ key: Buffer.from(concatBytes(prefix, publicKey)), format: 'der', type: 'spki' });
  } catch {
    throw new InvalidPublicKeyError('public key is not a point on the P-256 curve');
  }
  publicKeyCache.set(id, key);
  return key;
}

const privateKeyCache = new KeyObjectCache(256);

/**
 * node:crypto KeyObject for a 32-byte private scalar. Importing costs about as much as a
 * signature (OpenSSL derives the public point), so long-lived keys (webhook, export
 * signer) are cached, keyed by a SHA-256 of the scalar rather than the scalar itself.
 */
export function privateKeyObject(privateKey: Uint8Array): KeyObject {
  assertPrivateKey(privateKey);
  const id = createHash('sha256').update(privateKey).digest('hex');
  const cached = privateKeyCache.get(id);
  if (cached !== undefined) return cached;
  // JWK import with the public point precomputed is ~7x faster than PKCS#8 without it.
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(privateKey);
  const pub = ecdh.getPublicKey();
  const key = createPrivateKey({
    key: {
      kty: 'EC',
      crv: 'P-256',
      d: Buffer.from(privateKey).toString('base64url'),
      x: pub.subarray(1, 33).toString('base64url'),
      y: pub.subarray(33, 65).toString('base64url'),
    },
    format: 'jwk',
  });
  privateKeyCache.set(id, key);
  return key;
}

// ---------------------------------------------------------------------------------------
// DER signatures

export interface RawSignature {
  readonly r: bigint;
  readonly s: bigint;
}

/**
 * Strict DER decoding of `SEQUENCE { INTEGER r, INTEGER s }`: short-form lengths, minimal
 * positive integers, no trailing bytes, 1 <= r, s < n. Undefined when any rule fails.
 */
export function parseDerSignature(der: Uint8Array): RawSignature | undefined {
  if (der.length < 8 || der.length > 72) return undefined;
  if (der[0] !== 0x30 || der[1] !== der.length - 2) return undefined;
  let offset = 2;
  const readInt = (): bigint | undefined => {
    if (der[offset] !== 0x02) return undefined;
    const len = der[offset + 1];
    if (len === undefined || len < 1 || len > 33) return undefined;
    const start = offset + 2;
    const end = start + len;
    if (end > der.length) return undefined;
    const first = der[start] ?? 0;
    if ((first & 0x80) !== 0) return undefined; // negative
    if (first === 0 && len > 1 && ((der[start + 1] ?? 0) & 0x80) === 0) return undefined; // non-minimal
    offset = end;
    return bytesToBigInt(der.subarray(start, end));
  };
  const r = readInt();
  if (r === undefined) return undefined;
  const s = readInt();
  if (s === undefined || offset !== der.length) return undefined;
  if (r < 1n || r >= P256_N || s < 1n || s >= P256_N) return undefined;
  return { r, s };
}

export function encodeDerSignature(sig: RawSignature): Uint8Array {
  const body = concatBytes(derIntegerFromBytes(bigIntToBytes(sig.r, 32)), derIntegerFromBytes(bigIntToBytes(sig.s, 32)));
  return concatBytes(Uint8Array.of(0x30, body.length), body);
}

export function isHighS(sig: RawSignature): boolean {
  return sig.s > HALF_N;
}

/** The other valid encoding of the same signature (s <-> n - s). Used by tests. */
export function flipS(sig: RawSignature): RawSignature {
  return { r: sig.r, s: P256_N - sig.s };
}

// ---------------------------------------------------------------------------------------
// ECDSA P-256 / SHA-256

const HALF_N_BYTES = bigIntToBytes(HALF_N, 32);

/** Minimal DER INTEGER body for a 32-byte big-endian unsigned value. */
function derIntegerFromBytes(bytes: Uint8Array): Uint8Array {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  const pad = ((bytes[i] ?? 0) & 0x80) !== 0 ? 1 : 0;
  const len = bytes.length - i + pad;
  const out = new Uint8Array(2 + len);
  out[0] = 0x02;
  out[1] = len;
  out.set(bytes.subarray(i), 2 + pad);
  return out;
}

function greaterThan(a: Uint8Array, b: Uint8Array): boolean {
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x > y;
  }
  return false;
}

/** DER ECDSA P-256 SHA-256 signature in pure JS (@noble/curves: RFC 6979 deterministic nonce, low-S): the reference {@link signP256Deterministic} is held to. */
export function signP256Rfc6979(message: Uint8Array, privateKey: Uint8Array): Uint8Array {
  return p256.sign(message, privateKey, { format: 'der', lowS: true, prehash: true });
}

/**
 * The signature {@link signP256Rfc6979} makes, byte for byte, at a sixth of its cost: the
 * nonce k is RFC 6979's (section 3.2: HMAC-DRBG over SHA-256, seeded with the key and the
 * message's hash), and k·G comes from OpenSSL, as the public point of an ECDH key whose
 * private scalar is k, where @noble/curves multiplies in pure JS (about 1 ms a signature).
 */
export function signP256Deterministic(message: Uint8Array, privateKey: Uint8Array): Uint8Array {
  assertPrivateKey(privateKey);
  const Fn = p256.Point.Fn;
  const e = Fn.create(bytesToBigInt(createHash('sha256').update(message).digest()));
  const d = bytesToBigInt(privateKey);
  const seed = concatBytes(privateKey, bigIntToBytes(e, PRIVATE_KEY_BYTES));
  let K: Uint8Array = new Uint8Array(32);
  let V: Uint8Array = new Uint8Array(32).fill(1);
  const mac = (...parts: readonly Uint8Array[]): Uint8Array => {
    const hmac = createHmac('sha256', K);
    for (const part of parts) hmac.update(part);
    return hmac.digest();
  };
  K = mac(V, Uint8Array.of(0), seed);
  V = mac(V);
  K = mac(V, Uint8Array.of(1), seed);
  V = mac(V);
  const ecdh = createECDH('prime256v1');
  for (;;) {
    V = mac(V);
    const k = bytesToBigInt(V);
    if (Fn.isValidNot0(k)) {
      ecdh.setPrivateKey(V);
      const r = Fn.create(bytesToBigInt(ecdh.getPublicKey().subarray(1, 33)));
      const s = r === 0n ? 0n : Fn.mul(Fn.inv(k), Fn.add(e, Fn.mul(r, d)));
      if (s !== 0n) return encodeDerSignature({ r, s: s > HALF_N ? Fn.neg(s) : s });
    }
    // RFC 6979 3.2 h.3: a candidate that gives no signature moves the generator on.
    K = mac(V, Uint8Array.of(0));
    V = mac(V);
  }
}

/** DER ECDSA P-256 SHA-256 signature over `message`, normalised to low-S. */
export function signP256(message: Uint8Array, privateKey: Uint8Array | KeyObject): Uint8Array {
  // OpenSSL draws each signature's nonce itself; under a seeded source (a simulation) the
  // nonce comes from the key and the message (RFC 6979), so a seed gives the same bytes.
  if (currentEntropy() !== systemEntropy && privateKey instanceof Uint8Array) return signP256Deterministic(message, privateKey);
  const key = privateKey instanceof Uint8Array ? privateKeyObject(privateKey) : privateKey;
  const p1363 = nodeSign('sha256', message, { key, dsaEncoding: 'ieee-p1363' });
  let s: Uint8Array = p1363.subarray(32, 64);
  if (greaterThan(s, HALF_N_BYTES)) s = bigIntToBytes(P256_N - bytesToBigInt(s), 32);
  const r = derIntegerFromBytes(p1363.subarray(0, 32));
  const sInt = derIntegerFromBytes(s);
  return concatBytes(Uint8Array.of(0x30, r.length + sInt.length), r, sInt);
}

/**
 * Verifies a DER ECDSA P-256 SHA-256 signature (low-S or high-S). Returns false for a
 * signature that is not strict DER; throws InvalidPublicKeyError for an invalid key.
 */
export function verifyP256(message: Uint8Array, derSignature: Uint8Array, publicKey: Uint8Array | KeyObject): boolean {
  if (parseDerSignature(derSignature) === undefined) return false;
  const key = publicKey instanceof Uint8Array ? publicKeyObject(publicKey) : publicKey;
  return nodeVerify('sha256', message, { key, dsaEncoding: 'der' }, derSignature);
}
