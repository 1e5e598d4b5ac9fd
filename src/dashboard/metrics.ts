// The service's own metrics as the operators' page reads them: GET /metrics (Prometheus's
// text format, served by src/ops/metrics.ts on this origin), parsed into samples, and the
// figures the page shows worked out between two scrapes: a counter's rate, a histogram's
// quantile (as Prometheus's histogram_quantile interpolates within a bucket).

export interface Sample {
  name: string;
  labels: Readonly<Record<string, string>>;
  value: number;
}

/** `name{a="x",b="y"} value`: one sample per line; comments and blank lines skipped. */
const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = SAMPLE_LINE.exec(line);
    if (match === null) continue;
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(LABEL)) labels[name!] = value!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The sum of every sample named `name` whose labels `keep` accepts. */
export function total(samples: readonly Sample[], name: string, keep: (labels: Readonly<Record<string, string>>) => boolean = () => true): number {
  return samples.reduce((sum, sample) => (sample.name === name && keep(sample.labels) ? sum + sample.value : sum), 0);
}

/** A histogram's cumulative counts by upper bound (+Inf last), summed over the series `keep` accepts. */
export function histogram(samples: readonly Sample[], name: string, keep: (labels: Readonly<Record<string, string>>) => boolean = () => true): Map<number, number> {
  const buckets = new Map<number, number>();
  for (const sample of samples) {
    if (sample.name !== `${name}_bucket` || !keep(sample.labels)) continue;
    const le = sample.labels.le === '+Inf' ? Infinity : Number(sample.labels.le);
    buckets.set(le, (buckets.get(le) ?? 0) + sample.value);
  }
  return new Map([...buckets].sort(([a], [b]) => a - b));
}

/** What was observed between two readings of a histogram: each bucket's later count less its earlier one. */
export function since(later: ReadonlyMap<number, number>, earlier: ReadonlyMap<number, number> | undefined): Map<number, number> {
  return new Map([...later].map(([le, count]) => [le, count - (earlier?.get(le) ?? 0)]));
}

/**
 * The `q` quantile (0..1) of cumulative buckets, interpolated linearly within its bucket;
 * past the last finite bound, that bound. Undefined when nothing was observed.
 */
export function quantile(buckets: ReadonlyMap<number, number>, q: number): number | undefined {
  const entries = [...buckets];
  const count = entries.at(-1)?.[1] ?? 0;
  if (count <= 0) return undefined;
  const rank = q * count;
  let lower = 0;
  let below = 0;
  for (const [le, cumulative] of entries) {
    if (cumulative >= rank) {
      if (le === Infinity) return lower;
      const inBucket = cumulative - below;
      return inBucket === 0 ? le : lower + ((le - lower) * (rank - below)) / inBucket;
    }
    if (le !== Infinity) lower = le;
    below = cumulative;
  }
  return lower;
}
