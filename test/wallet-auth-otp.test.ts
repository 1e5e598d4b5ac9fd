// EMAIL_OTP codes (src/wallet/otp.ts): uniform random digits, a keyed hash at rest,
// constant-time matching.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { MasterKey } from '../src/crypto/master-key.js';
import { OtpHasher, newOtp, otpMatches } from '../src/wallet/otp.js';
import { OTP_TRIES } from '../actors/wallet.js';

const hasher = new OtpHasher(new MasterKey(randomBytes(32)));

describe('wallet-auth otp', () => {
  it('makes codes of the asked length, digits only, and a hash that matches only that code', () => {
    for (const length of [4, 6, 8, 12]) {
      const { code, codeHash } = newOtp(length, hasher);
      assert.match(code, new RegExp(`^[0-9]{${length}}$`));
      assert.match(codeHash, /^[0-9a-f]{64}$/);
      assert.equal(otpMatches(codeHash, code, hasher), true);
      const wrong = code.slice(0, -1) + String((Number(code.at(-1)) + 1) % 10);
      assert.equal(otpMatches(codeHash, wrong, hasher), false);
      assert.equal(otpMatches(codeHash, `${code}0`, hasher), false);
      assert.equal(otpMatches(codeHash, code.slice(1), hasher), false);
      assert.equal(otpMatches(codeHash, '', hasher), false);
    }
    assert.equal(OTP_TRIES, 5);
  });

  it('refuses lengths outside 4 to 12', () => {
    for (const length of [3, 13, 6.5, Number.NaN]) assert.throws(() => newOtp(length, hasher), RangeError);
  });

  it('the stored hash is keyed: not the plain SHA-256, and another master key does not match it', () => {
    const { code, codeHash } = newOtp(6, hasher);
    assert.notEqual(codeHash, createHash('sha256').update(code).digest('hex'));
    const other = new OtpHasher(new MasterKey(randomBytes(32)));
    assert.equal(otpMatches(codeHash, code, other), false);
    // The same master key derives the same hashing key (a restart keeps codes valid).
    const key = randomBytes(32);
    const a = newOtp(6, new OtpHasher(new MasterKey(key)));
    assert.equal(otpMatches(a.codeHash, a.code, new OtpHasher(new MasterKey(key))), true);
  });

  it('a malformed stored hash matches nothing', () => {
    const { code, codeHash } = newOtp(6, hasher);
    for (const bad of ['', codeHash.slice(2), codeHash.toUpperCase(), `${codeHash}00`, 'zz'.repeat(32)]) {
      assert.equal(otpMatches(bad, code, hasher), false, bad);
    }
  });

  it('digits are uniform (chi-square over 60,000 digits) and codes do not repeat in practice', () => {
    const counts = new Array<number>(10).fill(0);
    const codes = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const { code } = newOtp(12, hasher);
      codes.add(code);
      for (const digit of code) counts[Number(digit)]!++;
    }
    const expected = 60_000 / 10;
    const chiSquare = counts.reduce((sum, n) => sum + (n - expected) ** 2 / expected, 0);
    // 9 degrees of freedom: P(chi2 > 33.7) < 0.0001, so a fair source fails this 1 time in 10,000.
    assert.ok(chiSquare < 33.7, `chi-square ${chiSquare.toFixed(1)} for ${counts.join(',')}`);
    assert.equal(codes.size, 5000);
  });
});
