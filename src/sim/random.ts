// The simulator's own draws (which operation, which fault, how long a step takes), from a
// seeded xoshiro128** stream kept apart from the service's Entropy, so the service's
// draws (ids, keys) and the simulator's do not shift each other.
import { seededEntropy, type Entropy } from '../engine/entropy.js';

export class Rng {
  readonly #source: Entropy;
  readonly #word = new Uint8Array(4);

  constructor(seed: number) {
    this.#source = seededEntropy(seed);
  }

  /** `n` drawn bytes, drawn again until `valid` takes them (a key must be a scalar in range). */
  bytes(n: number, valid: (bytes: Uint8Array) => boolean = () => true): Uint8Array {
    for (;;) {
      const bytes = new Uint8Array(n);
      this.#source.fill(bytes);
      if (valid(bytes)) return bytes;
    }
  }

  /** A 32-bit unsigned draw. */
  word(): number {
    this.#source.fill(this.#word);
    const w = this.#word;
    return (w[0]! | (w[1]! << 8) | (w[2]! << 16) | (w[3]! << 24)) >>> 0;
  }

  /** An integer in [0, below); the slight bias of a modulo does not matter to a workload. */
  int(below: number): number {
    return this.word() % below;
  }

  /** An integer in [min, max]. */
  between(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }

  chance(p: number): boolean {
    return this.word() < p * 2 ** 32;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from nothing');
    return items[this.int(items.length)]!;
  }

  /** A key by weight. */
  weighted<K extends string>(weights: Weights<K>): K {
    let at = this.int(weights.total);
    for (const [key, weight] of weights.entries) {
      if (at < weight) return key;
      at -= weight;
    }
    return weights.entries[weights.entries.length - 1]![0];
  }
}

/**
 * Keys and their weights, summed once: the endpoint draws from the same few tables at every
 * delivery, and listing and summing a table's entries at each draw was about 1% of a run.
 */
export class Weights<K extends string> {
  readonly entries: ReadonlyArray<readonly [K, number]>;
  readonly total: number;

  constructor(weights: Readonly<Record<K, number>>) {
    this.entries = Object.entries(weights) as Array<[K, number]>;
    this.total = this.entries.reduce((sum, [, w]) => sum + w, 0);
  }
}
