// Command-line numbers shared by the benches: refused with the flag named, never guessed.

/** `raw` as an integer ≥ 1 (≥ 0 with `allowZero`), or an error naming `--name`. */
export function integerFlag(name: string, raw: string, allowZero = false): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < (allowZero ? 0 : 1)) throw new Error(`--${name} must be a ${allowZero ? 'non-negative' : 'positive'} integer, got ${raw}`);
  return n;
}

/** `raw` as a number > 0 (seconds may be fractional), or an error naming `--name`. */
export function positiveFlag(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got ${raw}`);
  return n;
}
