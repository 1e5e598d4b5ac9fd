// Where randomness comes from. The service draws from the system's CSPRNG; a deterministic
// simulation swaps in a seeded source (`useEntropy`), so one seed gives the same ids, keys,
// nonces, tokens and codes (and the same run) on any machine. Nothing in actors/, the
// engine, the crypto or the wallet draws randomness any other way
// (test/determinism-seams.test.ts keeps it so).
import { randomFillSync } from 'node:crypto';

export interface Entropy {
  /** Fills `target` with random bytes. */
  fill(target: Uint8Array): void;
}

export const systemEntropy: Entropy = {
  fill: (target) => {
    randomFillSync(target);
  },
};

/**
 * xoshiro128** (Blackman and Vigna), its state expanded from `seed` by splitmix32: fast,
 * well distributed, and the same bytes for the same seed everywhere. Not for secrets: only
 * a simulation uses it.
 */
export function seededEntropy(seed: number): Entropy {
  let mix = seed >>> 0;
  const splitmix32 = (): number => {
    mix = (mix + 0x9e3779b9) >>> 0;
    let z = mix;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  const s = [splitmix32(), splitmix32(), splitmix32(), splitmix32()];
  const rotl = (x: number, k: number): number => ((x << k) | (x >>> (32 - k))) >>> 0;
  const next = (): number => {
    const result = Math.imul(rotl(Math.imul(s[1]!, 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1]! << 9) >>> 0;
    s[2] = (s[2]! ^ s[0]!) >>> 0;
    s[3] = (s[3]! ^ s[1]!) >>> 0;
    s[1] = (s[1]! ^ s[2]!) >>> 0;
    s[0] = (s[0]! ^ s[3]!) >>> 0;
    s[2] = (s[2]! ^ t) >>> 0;
    s[3] = rotl(s[3]!, 11);
    return result;
  };
  return {
    fill: (target) => {
      for (let i = 0; i < target.length; i += 4) {
        const word = next();
        for (let j = 0; j < 4 && i + j < target.length; j++) target[i + j] = (word >>> (8 * j)) & 0xff;
      }
    },
  };
}

let current: Entropy = systemEntropy;

/** The process's source from now on (ids restart their sequence on it: ids.ts). */
export function useEntropy(source: Entropy): void {
  current = source;
}

export function currentEntropy(): Entropy {
  return current;
}

/** `n` bytes from the process's source. */
export function drawBytes(n: number): Buffer {
  const bytes = Buffer.alloc(n);
  current.fill(bytes);
  return bytes;
}

const WORD = 2 ** 32;

/** An integer in [0, below), uniform: 32-bit draws past the last whole multiple of `below` are drawn again. */
export function drawInt(below: number): number {
  if (!Number.isInteger(below) || below < 1 || below > WORD) throw new RangeError(`drawInt needs an integer bound from 1 to 2^32, got ${below}`);
  const limit = WORD - (WORD % below);
  const word = new Uint8Array(4);
  for (;;) {
    current.fill(word);
    const drawn = (word[0]! | (word[1]! << 8) | (word[2]! << 16) | (word[3]! << 24)) >>> 0;
    if (drawn < limit) return drawn % below;
  }
}
