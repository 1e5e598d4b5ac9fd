// Charts drawn as SVG trees: plain data (a tag, its attributes, its children), no DOM and no
// strings parsed as markup. The dashboard turns a tree into elements (dom.ts, svg); the
// benchmarks write it as an .svg file (bench/support/svg-charts.ts, svgText). Colours and
// sizes are presentation attributes, never `style=`, so the dashboard's CSP (style-src 'self',
// no inline styles) holds and a file needs no stylesheet. Layout is integer arithmetic on the
// inputs alone: the same data draws the same bytes.

export interface SvgNode {
  readonly tag: string;
  readonly attrs: Readonly<Record<string, string | number>>;
  readonly children: ReadonlyArray<SvgNode | string>;
}

export interface Series {
  readonly name: string;
  readonly values: readonly number[];
  readonly colour: string;
}

export interface BarChartSpec {
  /** Read by screen readers: the SVG's accessible name, the figures in words. */
  readonly title: string;
  /** Drawn at the top left (default: the title). */
  readonly heading?: string;
  /** One label per bucket (x axis); long runs show every few. */
  readonly categories: readonly string[];
  /** Drawn side by side in each category, in this order, with a legend. */
  readonly series: readonly Series[];
  /** A value as a bar's label says it (`12.34 USD`, `850 req/s`). */
  readonly format: (value: number) => string;
  /** A value as the y axis says it, short (default: `format`). */
  readonly formatAxis?: (value: number) => string;
  readonly width?: number;
  readonly height?: number;
}

export interface LineChartSpec {
  readonly title: string;
  readonly heading?: string;
  /** The x of each point, shared by every series, ascending. */
  readonly xs: readonly number[];
  readonly series: readonly Series[];
  readonly formatX: (x: number) => string;
  readonly formatY: (y: number) => string;
  /** Spans of x shaded behind the lines, each with a name (when snapshots ran, say). */
  readonly bands?: ReadonlyArray<{ readonly from: number; readonly to: number; readonly name: string }>;
  readonly width?: number;
  readonly height?: number;
}

export interface MeterRow {
  readonly label: string;
  readonly value: number;
  readonly colour: string;
}

/** The palette the dashboard's stylesheet names too (style.css): one hue per meaning. */
export const COLOURS = {
  primary: '#4f46e5',
  secondary: '#0ea5e9',
  good: '#15803d',
  warning: '#b45309',
  bad: '#b91c1c',
  muted: '#64748b',
  grid: '#e2e8f0',
  ink: '#0f172a',
  inkSoft: '#475569',
} as const;

const FONT = 'system-ui, -apple-system, Segoe UI, Roboto, sans-serif';
const MARGIN = { top: 36, right: 16, bottom: 44, left: 72 };
const TICKS = 4;

export function node(tag: string, attrs: Readonly<Record<string, string | number>> = {}, ...children: Array<SvgNode | string>): SvgNode {
  return { tag, attrs, children };
}

function text(x: number, y: number, content: string, attrs: Readonly<Record<string, string | number>> = {}): SvgNode {
  return node('text', { x, y, 'font-family': FONT, 'font-size': 12, fill: COLOURS.inkSoft, ...attrs }, content);
}

/** A top for the y axis at or above `max`: 1, 2, 2.5 or 5 times a power of ten, so ticks fall on round values. */
export function niceCeiling(max: number): number {
  if (max <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= max) return step * power;
  return 10 * power;
}

/** The frame every chart shares: its accessible name, the title, and the y axis's grid and labels. */
function frame(title: string, heading: string, width: number, height: number, top: number, formatY: (y: number) => string): { root: SvgNode[]; y: (value: number) => number } {
  const plotHeight = height - MARGIN.top - MARGIN.bottom;
  const y = (value: number): number => round(MARGIN.top + plotHeight - (value / top) * plotHeight);
  const grid: SvgNode[] = [];
  for (let tick = 0; tick <= TICKS; tick++) {
    const value = (top * tick) / TICKS;
    grid.push(node('line', { x1: MARGIN.left, x2: width - MARGIN.right, y1: y(value), y2: y(value), stroke: COLOURS.grid, 'stroke-width': 1 }));
    grid.push(text(MARGIN.left - 8, y(value) + 4, formatY(value), { 'text-anchor': 'end' }));
  }
  const drawn = text(MARGIN.left, 20, heading, { 'font-size': 14, 'font-weight': 600, fill: COLOURS.ink });
  return { root: [node('title', {}, title), drawn, ...grid], y };
}

function svg(title: string, width: number, height: number, children: SvgNode[]): SvgNode {
  return node('svg', { xmlns: 'http://www.w3.org/2000/svg', viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-label': title }, node('rect', { width, height, fill: '#ffffff' }), ...children);
}

function legend(series: readonly Series[], width: number): SvgNode[] {
  const out: SvgNode[] = [];
  let x = width - MARGIN.right;
  for (const item of [...series].reverse()) {
    const labelWidth = item.name.length * 7 + 8;
    x -= labelWidth;
    out.push(text(x, 20, item.name, { fill: COLOURS.ink }));
    x -= 16;
    out.push(node('rect', { x, y: 10, width: 12, height: 12, rx: 2, fill: item.colour }));
    x -= 12;
  }
  return out;
}

/** Every `step`-th label of `count` is drawn so that labels about `room` pixels apart do not overlap. */
function labelStep(count: number, room: number): number {
  return Math.max(1, Math.ceil(count / Math.max(1, Math.floor(room / 64))));
}

/** Grouped vertical bars: one group per category, one bar per series. */
export function barChart(spec: BarChartSpec): SvgNode {
  const { title, heading = title, categories, series, format, formatAxis = format, width = 640, height = 240 } = spec;
  const top = niceCeiling(Math.max(0, ...series.flatMap((s) => s.values)));
  const { root, y } = frame(title, heading, width, height, top, formatAxis);
  const plotWidth = width - MARGIN.left - MARGIN.right;
  const slot = plotWidth / Math.max(1, categories.length);
  const bar = Math.max(1, Math.floor((slot * 0.7) / Math.max(1, series.length)));
  const bars: SvgNode[] = [];
  const step = labelStep(categories.length, plotWidth);
  categories.forEach((category, i) => {
    const groupLeft = MARGIN.left + i * slot + (slot - bar * series.length) / 2;
    series.forEach((s, k) => {
      const value = s.values[i] ?? 0;
      const x = round(groupLeft + k * bar);
      const label = `${s.name}, ${category}: ${format(value)}`;
      bars.push(node('rect', { x, y: y(value), width: bar, height: y(0) - y(value), rx: 1, fill: s.colour }, node('title', {}, label)));
    });
    if (i % step === 0) bars.push(text(round(MARGIN.left + i * slot + slot / 2), height - MARGIN.bottom + 18, category, { 'text-anchor': 'middle' }));
  });
  const axis = node('line', { x1: MARGIN.left, x2: width - MARGIN.right, y1: y(0), y2: y(0), stroke: COLOURS.muted, 'stroke-width': 1 });
  return svg(title, width, height, [...root, ...(series.length > 1 ? legend(series, width) : []), ...bars, axis]);
}

/** Lines over a numeric x axis, a dot at each point. */
export function lineChart(spec: LineChartSpec): SvgNode {
  const { title, heading = title, xs, series, formatX, formatY, width = 640, height = 240 } = spec;
  const top = niceCeiling(Math.max(0, ...series.flatMap((s) => s.values)));
  const { root, y } = frame(title, heading, width, height, top, formatY);
  const plotWidth = width - MARGIN.left - MARGIN.right;
  const first = xs[0] ?? 0;
  const span = (xs[xs.length - 1] ?? 1) - first || 1;
  const x = (value: number): number => round(MARGIN.left + ((value - first) / span) * plotWidth);
  const drawn: SvgNode[] = [];
  for (const band of spec.bands ?? []) {
    const left = x(Math.max(first, band.from));
    const right = x(Math.min(first + span, band.to));
    if (right > left) drawn.push(node('rect', { x: left, y: MARGIN.top, width: round(right - left), height: y(0) - MARGIN.top, fill: COLOURS.warning, 'fill-opacity': 0.15 }, node('title', {}, band.name)));
  }
  for (const s of series) {
    const points = xs.map((at, i) => `${x(at)},${y(s.values[i] ?? 0)}`).join(' ');
    drawn.push(node('polyline', { points, fill: 'none', stroke: s.colour, 'stroke-width': 2, 'stroke-linejoin': 'round' }));
    xs.forEach((at, i) => drawn.push(node('circle', { cx: x(at), cy: y(s.values[i] ?? 0), r: 3, fill: s.colour }, node('title', {}, `${s.name}, ${formatX(at)}: ${formatY(s.values[i] ?? 0)}`))));
  }
  const step = labelStep(xs.length, plotWidth);
  xs.forEach((at, i) => {
    const anchor = i === 0 ? 'start' : i === xs.length - 1 ? 'end' : 'middle';
    if (i % step === 0 || i === xs.length - 1) drawn.push(text(x(at), height - MARGIN.bottom + 18, formatX(at), { 'text-anchor': anchor }));
  });
  return svg(title, width, height, [...root, ...legend(series, width), ...drawn]);
}

/** Horizontal bars, one per row, each with its label and value: counts by outcome or state (the title is the accessible name only: the page heads it). */
export function meterChart(title: string, rows: readonly MeterRow[], width = 320): SvgNode {
  const rowHeight = 30;
  const height = 8 + rows.length * rowHeight;
  const labelWidth = 96;
  const valueWidth = 48;
  const room = width - labelWidth - valueWidth - 16;
  const top = Math.max(1, ...rows.map((row) => row.value));
  const drawn: SvgNode[] = [node('title', {}, title)];
  rows.forEach((row, i) => {
    const at = 4 + i * rowHeight;
    const length = row.value === 0 ? 0 : Math.max(2, round((row.value / top) * room));
    drawn.push(text(0, at + 14, row.label, { fill: COLOURS.ink }));
    drawn.push(node('rect', { x: labelWidth, y: at + 3, width: room, height: 14, rx: 3, fill: COLOURS.grid }));
    drawn.push(node('rect', { x: labelWidth, y: at + 3, width: length, height: 14, rx: 3, fill: row.colour }, node('title', {}, `${row.label}: ${row.value}`)));
    drawn.push(text(width, at + 14, String(row.value), { 'text-anchor': 'end', fill: COLOURS.ink, 'font-weight': 600 }));
  });
  return node('svg', { xmlns: 'http://www.w3.org/2000/svg', viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-label': title }, ...drawn);
}

const COMPACT = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 2 });

/** A number as an axis says it, short: 0, 250, 1.5K, 12M. */
export function compact(value: number): string {
  return COMPACT.format(value);
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };

/** The tree as SVG markup, every text and attribute value escaped: what a benchmark writes to a file. */
export function svgText(tree: SvgNode | string): string {
  if (typeof tree === 'string') return tree.replace(/[&<>"]/g, (c) => ESCAPES[c]!);
  const attrs = Object.entries(tree.attrs)
    .map(([name, value]) => ` ${name}="${String(value).replace(/[&<>"]/g, (c) => ESCAPES[c]!)}"`)
    .join('');
  const inner = tree.children.map(svgText).join('');
  return inner === '' ? `<${tree.tag}${attrs}/>` : `<${tree.tag}${attrs}>${inner}</${tree.tag}>`;
}
