// Session key sealing in the embedded-wallet ("Turnkey") HPKE profile:
//   HPKE base mode, DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-256-GCM,
//   info = ASCII "turnkey_hpke", aad = enc (65-byte uncompressed) || recipient key (65 bytes),
//   bundle = base58check(compressed enc (33 bytes) || ciphertext).
// The plaintext of a session bundle is the 32-byte session private key; the client opens
// it with @turnkey/crypto's decryptCredentialBundle(bundle, clientPrivateKeyHex).
import bs58check from 'bs58check';
import { concatBytes, toHex, utf8 } from './bytes.js';
import { BundleError, InvalidPublicKeyError } from './errors.js';
import { AEAD_AES_256_GCM, HpkeSuite, nodePrimitives, type HpkePrimitives, type SetupOptions } from './hpke.js';
import {
  compressPublicKey,
  decompressPublicKey,
  generateP256KeyPair,
  isValidPrivateKey,
  parseClientPublicKey,
  PUBLIC_KEY_COMPRESSED_BYTES,
  type P256KeyPair,
} from './p256.js';

export const TURNKEY_HPKE_INFO = utf8.encode('turnkey_hpke');

const suites = new Map<HpkePrimitives, HpkeSuite>();
function suiteFor(primitives: HpkePrimitives): HpkeSuite {
  let suite = suites.get(primitives);
  if (suite === undefined) {
    suite = new HpkeSuite(AEAD_AES_256_GCM, primitives);
    suites.set(primitives, suite);
  }
  return suite;
}

export interface TurnkeyHpkeOptions extends SetupOptions {
  /** Defaults to node:crypto; the noble primitives exist for cross-checks and benchmarks. */
  readonly primitives?: HpkePrimitives;
}

/** Seals `plaintext` to a 65-byte uncompressed P-256 key in the Turnkey HPKE profile. */
export function turnkeyHpkeSeal(
  recipientPublicKey: Uint8Array,
  plaintext: Uint8Array,
  options: TurnkeyHpkeOptions = {},
): { enc: Uint8Array; ciphertext: Uint8Array } {
  const suite = suiteFor(options.primitives ?? nodePrimitives);
  const { enc, context } = suite.setupBaseS(recipientPublicKey, TURNKEY_HPKE_INFO, options);
  const ciphertext = context.seal(concatBytes(enc, recipientPublicKey), plaintext);
  return { enc, ciphertext };
}

/** Opens a Turnkey-profile HPKE ciphertext; `enc` is the 65-byte uncompressed ephemeral key. */
export function turnkeyHpkeOpen(
  enc: Uint8Array,
  ciphertext: Uint8Array,
  recipientPrivateKey: Uint8Array,
  primitives: HpkePrimitives = nodePrimitives,
): Uint8Array {
  if (!isValidPrivateKey(recipientPrivateKey)) throw new BundleError('recipient private key must be a 32-byte P-256 scalar');
  const suite = suiteFor(primitives);
  try {
    const { context, recipientPublicKey } = suite.setupBaseRWithKey(enc, recipientPrivateKey, TURNKEY_HPKE_INFO);
    return context.open(concatBytes(enc, recipientPublicKey), ciphertext);
  } catch (cause) {
    throw new BundleError('bundle does not decrypt with this private key (wrong key or corrupted bundle)', { cause });
  }
}

/** base58check(compressed enc || ciphertext) sealing `secret` to `clientPublicKey`. */
export function sealToBundle(clientPublicKey: string | Uint8Array, secret: Uint8Array, options: TurnkeyHpkeOptions = {}): string {
  const recipient = typeof clientPublicKey === 'string' ? parseClientPublicKey(clientPublicKey) : clientPublicKey;
  const { enc, ciphertext } = turnkeyHpkeSeal(recipient, secret, options);
  return bs58check.encode(concatBytes(compressPublicKey(enc), ciphertext));
}

/** Opens a base58check bundle made by {@link sealToBundle}. */
export function openBundle(bundle: string, recipientPrivateKey: Uint8Array): Uint8Array {
  let bytes: Uint8Array;
  try {
    bytes = bs58check.decode(bundle.trim());
  } catch (cause) {
    throw new BundleError('bundle is not valid base58check', { cause });
  }
  if (bytes.length <= PUBLIC_KEY_COMPRESSED_BYTES + 16) throw new BundleError('bundle is too short to hold an encapsulated key and a ciphertext');
  let enc: Uint8Array;
  try {
    enc = decompressPublicKey(bytes.subarray(0, PUBLIC_KEY_COMPRESSED_BYTES));
  } catch (cause) {
    if (cause instanceof InvalidPublicKeyError) throw new BundleError('bundle does not start with a compressed P-256 key', { cause });
    throw cause;
  }
  return turnkeyHpkeOpen(enc, bytes.subarray(PUBLIC_KEY_COMPRESSED_BYTES), recipientPrivateKey);
}

export interface IssuedSessionKey {
  /** The session's public key, compressed SEC1 hex: the `publicKey` its stamps carry. */
  readonly sessionPublicKey: string;
  /** Uncompressed SEC1 hex of the same key. */
  readonly sessionPublicKeyUncompressed: string;
  /** `encryptedSessionSigningKey`: the session private key sealed to the client key. */
  readonly encryptedSessionSigningKey: string;
}

/**
 * Makes a fresh session key pair and seals its private key to `clientPublicKey`
 * (validated: 130 hex characters, `04` prefix, point on P-256). The private key is not
 * returned: the service only needs the public key to verify the session's stamps.
 */
export function issueSessionKey(clientPublicKey: string, options: TurnkeyHpkeOptions & { sessionKey?: P256KeyPair } = {}): IssuedSessionKey {
  const recipient = parseClientPublicKey(clientPublicKey);
  const session = options.sessionKey ?? generateP256KeyPair();
  return {
    sessionPublicKey: toHex(session.publicKeyCompressed),
    sessionPublicKeyUncompressed: toHex(session.publicKey),
    encryptedSessionSigningKey: sealToBundle(recipient, session.privateKey, options),
  };
}

/** Client side of {@link issueSessionKey}: the 32-byte session private key. */
export function openSessionBundle(bundle: string, clientPrivateKey: Uint8Array): Uint8Array {
  const secret = openBundle(bundle, clientPrivateKey);
  if (!isValidPrivateKey(secret)) throw new BundleError('bundle plaintext is not a 32-byte P-256 private key');
  return secret;
}
