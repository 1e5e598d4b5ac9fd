// Latency histogram and table formatting shared by the benches. The histogram has
// log-spaced buckets (1% wide, 1 µs to 60 s), so percentiles are within ±0.5% and
// histograms from several load-generator processes merge by adding counts.

const MIN_MS = 0.001;
const GROWTH = 1.01;
const LOG_GROWTH = Math.log(GROWTH);
const BUCKETS = Math.ceil(Math.log(60_000 / MIN_MS) / LOG_GROWTH) + 1;

export interface HistogramData {
  counts: number[];
  count: number;
  sum: number;
  min: number;
  max: number;
}

export class LatencyHistogram {
  readonly counts = new Float64Array(BUCKETS);
  count = 0;
  sum = 0;
  min = Infinity;
  max = 0;

  record(ms: number): void {
    const i = ms <= MIN_MS ? 0 : Math.min(BUCKETS - 1, Math.floor(Math.log(ms / MIN_MS) / LOG_GROWTH));
    this.counts[i]!++;
    this.count++;
    this.sum += ms;
    if (ms < this.min) this.min = ms;
    if (ms > this.max) this.max = ms;
  }

  merge(other: HistogramData): void {
    for (let i = 0; i < BUCKETS; i++) this.counts[i]! += other.counts[i] ?? 0;
    this.count += other.count;
    this.sum += other.sum;
    if (other.min < this.min) this.min = other.min;
    if (other.max > this.max) this.max = other.max;
  }

  /** The latency (ms) below which a fraction `q` (0..1) of the samples fall. */
  percentile(q: number): number {
    if (this.count === 0) return 0;
    const rank = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.counts[i]!;
      if (seen >= rank) {
        const mid = MIN_MS * Math.pow(GROWTH, i + 0.5);
        return Math.min(this.max, Math.max(this.min, mid));
      }
    }
    return this.max;
  }

  get mean(): number {
    return this.count === 0 ? 0 : this.sum / this.count;
  }

  toData(): HistogramData {
    return { counts: Array.from(this.counts), count: this.count, sum: this.sum, min: this.min, max: this.max };
  }
}

/** A Markdown table with right-aligned numeric columns. */
export function markdownTable(header: readonly string[], rows: ReadonlyArray<readonly string[]>, numeric: readonly boolean[] = []): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    `| ${cells.map((c, i) => (numeric[i] === true ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (numeric[i] === true ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

export function fmtMs(ms: number): string {
  return ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2);
}

export function fmtRatio(r: number): string {
  return Number.isFinite(r) ? `${r.toFixed(2)}×` : 'n/a';
}

/** The middle value (the mean of the two middle ones for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
