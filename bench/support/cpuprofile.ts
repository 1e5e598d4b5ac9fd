// Summarises a V8 .cpuprofile (from `node --cpu-prof`): self and inclusive time per
// function, and self time per area of the code (HTTP front, engine, lmdb, GC...).
// Run: node dist/bench/support/cpuprofile.js FILE.cpuprofile [top]
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { fmtMs, markdownTable } from './stats.js';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileSummary {
  totalMs: number;
  idleMs: number;
  areas: Array<{ area: string; ms: number }>;
  selfTop: Array<{ fn: string; ms: number }>;
  inclusiveTop: Array<{ fn: string; ms: number }>;
}

/** Which part of the system a frame belongs to. */
export function areaOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (url === '') {
    if (functionName === '(idle)') return '(idle)';
    if (functionName === '(garbage collector)') return 'GC';
    if (functionName === '(program)') return '(program: native, uWS C++, lmdb C++)';
    return `native: ${functionName}`;
  }
  if (url.includes('/node_modules/lmdb/')) return 'lmdb (JS side, incl. msgpack encode)';
  if (url.includes('/node_modules/msgpackr/')) return 'msgpackr';
  if (url.includes('/node_modules/@sinclair/typebox/')) return 'typebox (validation)';
  if (url.includes('/node_modules/uWebSockets.js/')) return 'uWebSockets.js (JS side)';
  if (url.includes('/node_modules/')) return `node_modules/${url.split('/node_modules/')[1]!.split('/')[0]}`;
  if (url.startsWith('node:')) return `node internals (${url.slice(5).split('/')[0]})`;
  const m = /\/dist\/((?:src\/[^/]+|actors|bench|scripts)(?:\/[^/]+)?)/.exec(url);
  if (m !== null) return m[1]!.replace(/\.js$/, '');
  return url;
}

function label(frame: CallFrame): string {
  const file = frame.url === '' ? '' : frame.url.replace(/^.*\/(dist|node_modules)\//, '$1/').replace(/^file:\/\//, '');
  return `${frame.functionName || '(anonymous)'}${file === '' ? '' : ` ${file}:${frame.lineNumber + 1}`}`;
}

export function summarise(profile: CpuProfile, top = 25): ProfileSummary {
  const byId = new Map<number, ProfileNode>();
  for (const node of profile.nodes) byId.set(node.id, node);
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  }
  // Inclusive time, counted once per function on each stack (recursion is not doubled).
  const inclusive = new Map<string, number>();
  const selfByFn = new Map<string, number>();
  const areas = new Map<string, number>();
  const root = profile.nodes[0]!;
  const walk = (node: ProfileNode, onStack: Map<string, number>): number => {
    const key = label(node.callFrame);
    let total = self.get(node.id) ?? 0;
    selfByFn.set(key, (selfByFn.get(key) ?? 0) + total);
    const area = areaOf(node.callFrame);
    areas.set(area, (areas.get(area) ?? 0) + total);
    onStack.set(key, (onStack.get(key) ?? 0) + 1);
    for (const childId of node.children ?? []) {
      const child = byId.get(childId);
      if (child !== undefined) total += walk(child, onStack);
    }
    const depth = onStack.get(key)! - 1;
    if (depth === 0) {
      onStack.delete(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + total);
    } else {
      onStack.set(key, depth);
    }
    return total;
  };
  // Iterative depth would be safer for huge stacks; profiles of this service are shallow.
  const totalMs = walk(root, new Map());
  const idleMs = areas.get('(idle)') ?? 0;
  const sorted = (m: Map<string, number>): Array<[string, number]> => [...m].sort((a, b) => b[1] - a[1]);
  return {
    totalMs,
    idleMs,
    areas: sorted(areas).map(([area, ms]) => ({ area, ms })),
    selfTop: sorted(selfByFn)
      .filter(([fn]) => !fn.startsWith('(idle)') && !fn.startsWith('(root)'))
      .slice(0, top)
      .map(([fn, ms]) => ({ fn, ms })),
    inclusiveTop: sorted(inclusive)
      .filter(([fn]) => !fn.startsWith('(root)') && !fn.startsWith('(idle)') && !fn.startsWith('(program)'))
      .slice(0, top)
      .map(([fn, ms]) => ({ fn, ms })),
  };
}

export function formatSummary(summary: ProfileSummary, perRequestDivisor?: number): string {
  const busy = summary.totalMs - summary.idleMs;
  const pct = (ms: number): string => `${((100 * ms) / busy).toFixed(1)}%`;
  const us = (ms: number): string => (perRequestDivisor === undefined ? '' : ((ms * 1000) / perRequestDivisor).toFixed(1));
  const head = perRequestDivisor === undefined ? ['ms', '% of busy'] : ['ms', '% of busy', 'µs/request'];
  const row = (name: string, ms: number): string[] => {
    const cells = [name, fmtMs(ms), pct(ms)];
    if (perRequestDivisor !== undefined) cells.push(us(ms));
    return cells;
  };
  const numeric = [false, true, true, true];
  const out: string[] = [];
  out.push(`profile: ${fmtMs(summary.totalMs)} ms sampled, ${fmtMs(busy)} ms busy (main thread; lmdb's write thread is not sampled)`);
  const areas = summary.areas.filter((a) => a.area !== '(idle)');
  const shown = areas.slice(0, 15).map((a) => row(a.area, a.ms));
  const rest = areas.slice(15).reduce((sum, a) => sum + a.ms, 0);
  if (rest > 0) shown.push(row(`(${areas.length - 15} other areas)`, rest));
  out.push('', 'Self time by area:', markdownTable(['area', ...head], shown, numeric));
  out.push('', 'Top functions by self time:', markdownTable(['function', ...head], summary.selfTop.map((f) => row(f.fn, f.ms)), numeric));
  out.push('', 'Top functions by inclusive time:', markdownTable(['function', ...head], summary.inclusiveTop.map((f) => row(f.fn, f.ms)), numeric));
  return out.join('\n');
}

export function summariseFile(path: string, top = 25): ProfileSummary {
  return summarise(JSON.parse(readFileSync(path, 'utf8')) as CpuProfile, top);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [file, top, requests] = process.argv.slice(2);
  if (file === undefined) {
    process.stderr.write('usage: node dist/bench/support/cpuprofile.js FILE.cpuprofile [top] [requests]\n');
    process.exit(2);
  }
  console.log(formatSummary(summariseFile(file, Number(top ?? 25)), requests === undefined ? undefined : Number(requests)));
}
