// RFC 9180 Hybrid Public Key Encryption, base mode (mode_base = 0x00), with
// KEM DHKEM(P-256, HKDF-SHA256) (0x0010), KDF HKDF-SHA256 (0x0001) and AEAD AES-128-GCM
// (0x0001) or AES-256-GCM (0x0002). The service seals with AES-256-GCM; AES-128-GCM is
// here because RFC 9180's published P-256 vector (Appendix A.3) uses it, and both share
// every other step, so the vector checks the KEM, the key schedule and the AEAD framing.
//
// The algorithm is written once over a small set of primitives. `nodePrimitives`
// (OpenSSL via node:crypto) is what the service runs; `noblePrimitives` in
// reference-noble.ts is a pure-JS implementation of the same interface, used as an
// independent cross-check in tests and as the "pure JS" column of the benchmark.
import { createCipheriv, createDecipheriv, createECDH, createHmac } from 'node:crypto';
import { concatBytes, i2osp, utf8 } from './bytes.js';
import { isValidPrivateKey, newPrivateKey, PRIVATE_KEY_BYTES } from './p256.js';

export const MODE_BASE = 0x00;
export const KEM_P256_HKDF_SHA256 = 0x0010;
export const KDF_HKDF_SHA256 = 0x0001;

const N_SECRET = 32; // Nsecret of DHKEM(P-256, HKDF-SHA256)
const N_ENC = 65; // Nenc: uncompressed SEC1 point
const N_H = 32; // Nh of HKDF-SHA256
const N_N = 12; // Nn of both AES-GCM AEADs
const N_T = 16; // Nt of both AES-GCM AEADs

export interface HpkeAead {
  readonly id: number;
  readonly name: 'AES-128-GCM' | 'AES-256-GCM';
  readonly keyLength: 16 | 32;
}

export const AEAD_AES_128_GCM: HpkeAead = { id: 0x0001, name: 'AES-128-GCM', keyLength: 16 };
export const AEAD_AES_256_GCM: HpkeAead = { id: 0x0002, name: 'AES-256-GCM', keyLength: 32 };

/** The primitive operations HPKE needs; two implementations exist (node, noble). */
export interface HpkePrimitives {
  readonly name: string;
  /**
   * DH with our own key: returns the 32-byte x-coordinate of sk * peer together with
   * our uncompressed (65-byte) public key. Must reject a peer that is not a valid point.
   */
  dh(privateKey: Uint8Array, peerPublicKey: Uint8Array): { dh: Uint8Array; publicKey: Uint8Array };
  /** Uncompressed (65-byte) public key of a private scalar. */
  publicKey(privateKey: Uint8Array): Uint8Array;
  /** HKDF-Extract with SHA-256. */
  extract(salt: Uint8Array, ikm: Uint8Array): Uint8Array;
  /** HKDF-Expand with SHA-256. */
  expand(prk: Uint8Array, info: Uint8Array, length: number): Uint8Array;
  /** AES-GCM (key length picks 128 or 256): ciphertext || 16-byte tag. */
  aeadSeal(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, plaintext: Uint8Array): Uint8Array;
  /** Inverse of aeadSeal; throws when the tag does not verify. */
  aeadOpen(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, ciphertext: Uint8Array): Uint8Array;
}

const ZERO_SALT = new Uint8Array(N_H);

function gcmName(key: Uint8Array): 'aes-128-gcm' | 'aes-256-gcm' {
  if (key.length === 16) return 'aes-128-gcm';
  if (key.length === 32) return 'aes-256-gcm';
  throw new RangeError(`AES-GCM key must be 16 or 32 bytes, got ${key.length}`);
}

export const nodePrimitives: HpkePrimitives = {
  name: 'node:crypto',
  dh(privateKey, peerPublicKey) {
    const ecdh = createECDH('prime256v1');
    ecdh.setPrivateKey(privateKey);
    // computeSecret validates the peer point and returns the x-coordinate (32 bytes).
    const dh = new Uint8Array(ecdh.computeSecret(peerPublicKey));
    return { dh, publicKey: new Uint8Array(ecdh.getPublicKey()) };
  },
  publicKey(privateKey) {
    const ecdh = createECDH('prime256v1');
    ecdh.setPrivateKey(privateKey);
    return new Uint8Array(ecdh.getPublicKey());
  },
  extract(salt, ikm) {
    return new Uint8Array(createHmac('sha256', salt.length === 0 ? ZERO_SALT : salt).update(ikm).digest());
  },
  expand(prk, info, length) {
    if (length > 255 * N_H) throw new RangeError('HKDF-Expand length too large');
    const out = new Uint8Array(length);
    let previous: Uint8Array = new Uint8Array(0);
    for (let i = 1, offset = 0; offset < length; i++) {
      previous = createHmac('sha256', prk).update(previous).update(info).update(Uint8Array.of(i)).digest();
      out.set(previous.subarray(0, Math.min(previous.length, length - offset)), offset);
      offset += previous.length;
    }
    return out;
  },
  aeadSeal(key, nonce, aad, plaintext) {
    const cipher = createCipheriv(gcmName(key), key, nonce, { authTagLength: N_T });
    cipher.setAAD(aad);
    return concatBytes(cipher.update(plaintext), cipher.final(), cipher.getAuthTag());
  },
  aeadOpen(key, nonce, aad, ciphertext) {
    if (ciphertext.length < N_T) throw new Error('ciphertext shorter than the AEAD tag');
    const decipher = createDecipheriv(gcmName(key), key, nonce, { authTagLength: N_T });
    decipher.setAAD(aad);
    decipher.setAuthTag(ciphertext.subarray(ciphertext.length - N_T));
    return concatBytes(decipher.update(ciphertext.subarray(0, ciphertext.length - N_T)), decipher.final());
  },
};

const HPKE_V1 = utf8.encode('HPKE-v1');
const label = (text: string): Uint8Array => utf8.encode(text);
const EMPTY = new Uint8Array(0);

/** Key-schedule outputs of one HPKE context; exposed so test vectors can check them. */
export interface HpkeKeySchedule {
  readonly sharedSecret: Uint8Array;
  readonly key: Uint8Array;
  readonly baseNonce: Uint8Array;
  readonly exporterSecret: Uint8Array;
}

/** An encryption context (RFC 9180 section 5.2): one key, a nonce per sequence number. */
export class HpkeContext implements HpkeKeySchedule {
  #seq = 0;
  #exporterSecret: Uint8Array | undefined;
  constructor(
    readonly suite: HpkeSuite,
    readonly sharedSecret: Uint8Array,
    readonly key: Uint8Array,
    readonly baseNonce: Uint8Array,
    readonly secret: Uint8Array,
    readonly keyScheduleContext: Uint8Array,
  ) {}

  /** Derived on first use: sealing a single message never needs it. */
  get exporterSecret(): Uint8Array {
    this.#exporterSecret ??= this.suite.labeledExpand(this.suite.suiteId, this.secret, 'exp', this.keyScheduleContext, N_H);
    return this.#exporterSecret;
  }

  get sequence(): number {
    return this.#seq;
  }

  #nextNonce(): Uint8Array {
    if (this.#seq >= Number.MAX_SAFE_INTEGER) throw new Error('HPKE message limit reached');
    const seqBytes = i2osp(this.#seq, N_N);
    const nonce = new Uint8Array(N_N);
    for (let i = 0; i < N_N; i++) nonce[i] = (this.baseNonce[i] ?? 0) ^ (seqBytes[i] ?? 0);
    return nonce;
  }

  seal(aad: Uint8Array, plaintext: Uint8Array): Uint8Array {
    const ct = this.suite.primitives.aeadSeal(this.key, this.#nextNonce(), aad, plaintext);
    this.#seq++;
    return ct;
  }

  open(aad: Uint8Array, ciphertext: Uint8Array): Uint8Array {
    const pt = this.suite.primitives.aeadOpen(this.key, this.#nextNonce(), aad, ciphertext);
    this.#seq++;
    return pt;
  }
}

export interface SetupOptions {
  /**
   * The sender's ephemeral private key (default: a new one from the process's Entropy).
   * Only for deterministic tests (RFC vectors): reusing one across messages breaks HPKE's security.
   */
  readonly ephemeralPrivateKey?: Uint8Array;
}

/** DHKEM(P-256, HKDF-SHA256) + HKDF-SHA256 + one AES-GCM AEAD, base mode. */
export class HpkeSuite {
  readonly kemSuiteId: Uint8Array;
  readonly suiteId: Uint8Array;

  constructor(
    readonly aead: HpkeAead,
    readonly primitives: HpkePrimitives = nodePrimitives,
  ) {
    this.kemSuiteId = concatBytes(label('KEM'), i2osp(KEM_P256_HKDF_SHA256, 2));
    this.suiteId = concatBytes(label('HPKE'), i2osp(KEM_P256_HKDF_SHA256, 2), i2osp(KDF_HKDF_SHA256, 2), i2osp(aead.id, 2));
  }

  labeledExtract(suiteId: Uint8Array, salt: Uint8Array, lbl: string, ikm: Uint8Array): Uint8Array {
    return this.primitives.extract(salt, concatBytes(HPKE_V1, suiteId, label(lbl), ikm));
  }

  labeledExpand(suiteId: Uint8Array, prk: Uint8Array, lbl: string, info: Uint8Array, length: number): Uint8Array {
    return this.primitives.expand(prk, concatBytes(i2osp(length, 2), HPKE_V1, suiteId, label(lbl), info), length);
  }

  /** RFC 9180 section 7.1.3 DeriveKeyPair for P-256 (bitmask 0xff). */
  deriveKeyPair(ikm: Uint8Array): { privateKey: Uint8Array; publicKey: Uint8Array } {
    const dkpPrk = this.labeledExtract(this.kemSuiteId, EMPTY, 'dkp_prk', ikm);
    for (let counter = 0; counter <= 255; counter++) {
      const bytes = this.labeledExpand(this.kemSuiteId, dkpPrk, 'candidate', i2osp(counter, 1), PRIVATE_KEY_BYTES);
      bytes[0] = (bytes[0] ?? 0) & 0xff;
      if (isValidPrivateKey(bytes)) return { privateKey: bytes, publicKey: this.primitives.publicKey(bytes) };
    }
    throw new Error('DeriveKeyPairError');
  }

  #extractAndExpand(dh: Uint8Array, kemContext: Uint8Array): Uint8Array {
    const eaePrk = this.labeledExtract(this.kemSuiteId, EMPTY, 'eae_prk', dh);
    return this.labeledExpand(this.kemSuiteId, eaePrk, 'shared_secret', kemContext, N_SECRET);
  }

  /** mode || psk_id_hash || info_hash depends only on the info in base mode: cached. */
  #contextCache = new Map<string, Uint8Array>();

  #keyScheduleContext(info: Uint8Array): Uint8Array {
    const id = Buffer.from(info).toString('latin1');
    let context = this.#contextCache.get(id);
    if (context === undefined) {
      const pskIdHash = this.labeledExtract(this.suiteId, EMPTY, 'psk_id_hash', EMPTY);
      const infoHash = this.labeledExtract(this.suiteId, EMPTY, 'info_hash', info);
      context = concatBytes(Uint8Array.of(MODE_BASE), pskIdHash, infoHash);
      if (this.#contextCache.size < 16) this.#contextCache.set(id, context);
    }
    return context;
  }

  #keySchedule(sharedSecret: Uint8Array, info: Uint8Array): HpkeContext {
    const context = this.#keyScheduleContext(info);
    const secret = this.labeledExtract(this.suiteId, sharedSecret, 'secret', EMPTY);
    const key = this.labeledExpand(this.suiteId, secret, 'key', context, this.aead.keyLength);
    const baseNonce = this.labeledExpand(this.suiteId, secret, 'base_nonce', context, N_N);
    return new HpkeContext(this, sharedSecret, key, baseNonce, secret, context);
  }

  /** SetupBaseS: encapsulates to `recipientPublicKey` (65-byte uncompressed). */
  setupBaseS(recipientPublicKey: Uint8Array, info: Uint8Array, options: SetupOptions = {}): { enc: Uint8Array; context: HpkeContext } {
    if (recipientPublicKey.length !== N_ENC || recipientPublicKey[0] !== 4) {
      throw new RangeError('HPKE recipient public key must be a 65-byte uncompressed P-256 point');
    }
    const given = options.ephemeralPrivateKey;
    if (given !== undefined && !isValidPrivateKey(given)) throw new RangeError('ephemeral private key out of range');
    // Drawn from the process's Entropy, as every key is (a seeded simulation gets the same one).
    const skE = given ?? newPrivateKey();
    const { dh, publicKey: enc } = this.primitives.dh(skE, recipientPublicKey);
    const sharedSecret = this.#extractAndExpand(dh, concatBytes(enc, recipientPublicKey));
    return { enc, context: this.#keySchedule(sharedSecret, info) };
  }

  /** SetupBaseR: decapsulates `enc` (65-byte uncompressed) with the recipient's private key. */
  setupBaseR(enc: Uint8Array, recipientPrivateKey: Uint8Array, info: Uint8Array): HpkeContext {
    return this.setupBaseRWithKey(enc, recipientPrivateKey, info).context;
  }

  /** SetupBaseR that also returns the recipient's public key (pkRm), computed on the way. */
  setupBaseRWithKey(enc: Uint8Array, recipientPrivateKey: Uint8Array, info: Uint8Array): { context: HpkeContext; recipientPublicKey: Uint8Array } {
    if (enc.length !== N_ENC || enc[0] !== 4) throw new RangeError('HPKE enc must be a 65-byte uncompressed P-256 point');
    if (!isValidPrivateKey(recipientPrivateKey)) throw new RangeError('HPKE recipient private key out of range');
    const { dh, publicKey: pkRm } = this.primitives.dh(recipientPrivateKey, enc);
    const sharedSecret = this.#extractAndExpand(dh, concatBytes(enc, pkRm));
    return { context: this.#keySchedule(sharedSecret, info), recipientPublicKey: pkRm };
  }

  /** Single-shot SealBase. */
  seal(
    recipientPublicKey: Uint8Array,
    info: Uint8Array,
    aad: Uint8Array,
    plaintext: Uint8Array,
    options: SetupOptions = {},
  ): { enc: Uint8Array; ciphertext: Uint8Array } {
    const { enc, context } = this.setupBaseS(recipientPublicKey, info, options);
    return { enc, ciphertext: context.seal(aad, plaintext) };
  }

  /** Single-shot OpenBase. */
  open(enc: Uint8Array, recipientPrivateKey: Uint8Array, info: Uint8Array, aad: Uint8Array, ciphertext: Uint8Array): Uint8Array {
    return this.setupBaseR(enc, recipientPrivateKey, info).open(aad, ciphertext);
  }
}
