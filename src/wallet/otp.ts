// One-time codes for EMAIL_OTP credentials. How long a code lives and how many tries it
// gets is the wallet state's business (actors/wallet*); this module makes codes, the
// value stored for them, and the comparison.
//
// What is stored is HMAC-SHA256(code) under a key derived from the master key, not a plain
// SHA-256: a code has at most 10^12 (usually 10^6) values, so an unkeyed hash in the log or a
// snapshot would give the code back to anyone who reads them in well under a second.
// Keyed, the stored value says nothing without the master key.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { drawInt } from '../engine/entropy.js';
import type { MasterKey } from '../crypto/master-key.js';
import { OTP_LENGTH } from '../../actors/platform.js';

const HASH_PURPOSE = 'wallet-otp-hash/v1';
const HASH_HEX = /^[0-9a-f]{64}$/;

/** A key for hashing codes; derive it once and keep it (derivation is an HKDF run). */
export class OtpHasher {
  readonly #key: Buffer;

  constructor(masterKey: MasterKey) {
    this.#key = masterKey.derive(HASH_PURPOSE);
  }

  /** Hex HMAC-SHA256 of the code's ASCII digits. */
  hash(code: string): string {
    return createHmac('sha256', this.#key).update(code, 'utf8').digest('hex');
  }
}

export interface NewOtp {
  /** Goes to the user only (sealed in the mail effect); never stored in the clear. */
  readonly code: string;
  /** What the wallet state keeps. */
  readonly codeHash: string;
}

/** `length` decimal digits, each drawn uniformly from the process's Entropy (drawInt rejects biased draws). */
export function newOtp(length: number, hasher: OtpHasher): NewOtp {
  if (!Number.isInteger(length) || length < OTP_LENGTH.min || length > OTP_LENGTH.max) {
    throw new RangeError(`OTP length must be ${OTP_LENGTH.min} to ${OTP_LENGTH.max}, got ${length}`);
  }
  let code = '';
  for (let i = 0; i < length; i++) code += String(drawInt(10));
  return { code, codeHash: hasher.hash(code) };
}

/**
 * Whether `presented` is the code behind `codeHash`. The comparison is of two HMACs in
 * constant time, so timing says nothing about how many leading characters matched; input
 * that is no code at all is hashed all the same and simply does not match.
 */
export function otpMatches(codeHash: string, presented: string, hasher: OtpHasher): boolean {
  if (!HASH_HEX.test(codeHash)) return false;
  const expected = Buffer.from(codeHash, 'hex');
  const actual = Buffer.from(hasher.hash(presented), 'hex');
  return timingSafeEqual(expected, actual);
}
