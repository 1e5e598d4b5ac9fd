// The master key protects secrets at rest (wallet key material, webhook signing keys).
// It comes from MASTER_KEY (64 hex chars, parsed by src/config.ts) or, when unset, from a
// 0600 key file in the data directory that is created on first start. Secrets are sealed
// with AES-256-GCM; the additional data binds a ciphertext to the record it belongs to, so
// a sealed value copied onto another record does not open.
import { createCipheriv, createDecipheriv, hkdfSync } from 'node:crypto';
import { drawBytes } from '../engine/entropy.js';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const MASTER_KEY_FILE = 'master.key';
const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const SEALED_VERSION = 1;

export class MasterKey {
  readonly #key: Buffer;

  constructor(key: Uint8Array) {
    if (key.length !== KEY_BYTES) throw new Error(`master key must be ${KEY_BYTES} bytes, got ${key.length}`);
    this.#key = Buffer.from(key);
  }

  /** A key for one purpose (HKDF-SHA256, info = purpose): the same master key derives the same key. */
  derive(purpose: string): Buffer {
    return Buffer.from(hkdfSync('sha256', this.#key, Buffer.alloc(0), purpose, KEY_BYTES));
  }

  /** Sealed layout: version (1) | nonce (12) | ciphertext | tag (16). */
  seal(plaintext: Uint8Array, aad: string): Uint8Array {
    const nonce = drawBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, nonce);
    cipher.setAAD(Buffer.from(aad, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return Buffer.concat([Buffer.of(SEALED_VERSION), nonce, body, cipher.getAuthTag()]);
  }

  open(sealed: Uint8Array, aad: string): Uint8Array {
    if (sealed.length < 1 + NONCE_BYTES + TAG_BYTES || sealed[0] !== SEALED_VERSION) {
      throw new Error('sealed secret has an unknown layout');
    }
    const buf = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
    const nonce = buf.subarray(1, 1 + NONCE_BYTES);
    const tag = buf.subarray(buf.length - TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', this.#key, nonce);
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(buf.subarray(1 + NONCE_BYTES, buf.length - TAG_BYTES)), decipher.final()]);
  }
}

/** Where the master key comes from, as an operator names it: `MASTER_KEY` when given, else the key file's path. */
export function masterKeySource(dataDir: string, given: MasterKey | undefined): string {
  return given !== undefined ? 'MASTER_KEY' : join(dataDir, MASTER_KEY_FILE);
}

/**
 * The master key if there is one (the one given in MASTER_KEY, src/config.ts, else the key
 * file), reading only: undefined when neither is there. For checks that must change nothing.
 */
export function readMasterKey(dataDir: string, given: MasterKey | undefined): MasterKey | undefined {
  if (given !== undefined) return given;
  const path = join(dataDir, MASTER_KEY_FILE);
  if (!existsSync(path)) return undefined;
  const hex = readFileSync(path, 'utf8').trim();
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new Error(`${path} must hold 64 hex characters`);
  return new MasterKey(Buffer.from(hex, 'hex'));
}

/**
 * The key given in MASTER_KEY wins. Otherwise the key file in `dataDir` is read, or created
 * with mode 0600. A key file readable by others is tightened back to 0600: it would leak
 * every secret the service keeps.
 */
export function loadMasterKey(dataDir: string, given: MasterKey | undefined): MasterKey {
  if (given !== undefined) return given;
  const path = join(dataDir, MASTER_KEY_FILE);
  if (!existsSync(path)) writeFileSync(path, drawBytes(KEY_BYTES).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
  const key = readMasterKey(dataDir, undefined);
  if (key === undefined) throw new Error(`${path} disappeared while it was being read`);
  return key;
}
