// npm run sim -- --seed N --ops N [--crash-rate P] [--fault-rate P] [--immediate-share P] [--max-pending-webhooks N]: one deterministic
// simulation (src/sim/simulator.ts), one line `seed= ops= crashes= faults= digest=`; on a
// violation the seed, the step, what was violated and the command that replays it, exit 1.
//
// npm run sim:soak -- --minutes N [--ops N]: random seeds one after another until the time
// is up or one fails; prints every failing seed (exit 1 if any did).
import { randomInt } from 'node:crypto';
import { parseCommandLine, UsageError } from './cli.js';
import { DEFAULT_IMMEDIATE_SHARE, simulate, type SimulationOptions, type SimulationResult } from '../src/sim/simulator.js';

const USAGE = `usage: payments-sim --seed N [--ops N] [--crash-rate P] [--fault-rate P] [--immediate-share P] [--max-pending-webhooks N] [--stats]
       payments-sim --soak --minutes N [--ops N] [--crash-rate P] [--fault-rate P] [--immediate-share P] [--max-pending-webhooks N]`;

export const DEFAULT_OPS = 20_000;
export const DEFAULT_CRASH_RATE = 0.002;
export const DEFAULT_FAULT_RATE = 0.002;

function integer(name: string, value: string | undefined, fallback: number | undefined, min: number): number {
  if (value === undefined) {
    if (fallback === undefined) throw new UsageError(`--${name} is required`, true);
    return fallback;
  }
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value)) || Number(value) < min) throw new UsageError(`--${name} must be an integer of at least ${min}, got ${value}`);
  return Number(value);
}

function rate(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) throw new UsageError(`--${name} must be a probability from 0 to 1, got ${value}`);
  return n;
}

/** The line a run prints: the same seed and options give the same line, digest included. */
export function resultLine(result: SimulationResult): string {
  return `seed=${result.seed} ops=${result.ops} crashes=${result.crashes} faults=${result.faults} digest=${result.digest}`;
}

function replayCommand(options: SimulationOptions): string {
  const share = options.immediateShare === undefined ? '' : ` --immediate-share ${options.immediateShare}`;
  const cap = options.maxPendingWebhooks === undefined ? '' : ` --max-pending-webhooks ${options.maxPendingWebhooks}`;
  return `npm run sim -- --seed ${options.seed} --ops ${options.ops} --crash-rate ${options.crashRate} --fault-rate ${options.faultRate}${share}${cap}`;
}

function failureText(options: SimulationOptions, result: SimulationResult): string {
  const v = result.violation!;
  return `FAILED seed=${options.seed} step=${v.step}\n  ${v.message}\n  replay: ${replayCommand(options)}\n`;
}

async function once(options: SimulationOptions, stats: boolean): Promise<number> {
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const result = await simulate(options);
  const seconds = (performance.now() - started) / 1000;
  // CPU time as well as wall time: on a shared machine the wall time moves with the neighbours' load.
  const cpu = process.cpuUsage(cpuBefore);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  process.stdout.write(`${resultLine(result)}\n`);
  if (stats) {
    const s = result.stats;
    process.stderr.write(
      `${Math.round(result.ops / seconds)} ops/s (${seconds.toFixed(1)} s), ${Math.round(result.ops / cpuSeconds)} ops per CPU s (${cpuSeconds.toFixed(1)} s); ${s.entries} log entries, ${s.transactions} transactions, ${s.snapshots} snapshots, ` +
        `${s.lost} writes lost in crashes, ${s.flipsCaught} flipped bits refused, ${s.dropped} webhook events dropped from a full backlog, ${Math.round(s.simulatedMs / 1000)} simulated s\n`,
    );
  }
  if (result.violation === undefined) return 0;
  process.stdout.write(failureText(options, result));
  return 1;
}

async function soak(minutes: number, base: Omit<SimulationOptions, 'seed'>): Promise<number> {
  const deadline = performance.now() + minutes * 60_000;
  let runs = 0;
  let failed = 0;
  while (performance.now() < deadline) {
    const options = { ...base, seed: randomInt(0, 2 ** 31) };
    const result = await simulate(options);
    runs++;
    if (result.violation !== undefined) {
      failed++;
      process.stdout.write(failureText(options, result));
    }
  }
  process.stdout.write(`soak: ${runs} seeds of ${base.ops} operations in ${minutes} min, ${failed} failed\n`);
  return failed === 0 ? 0 : 1;
}

async function main(): Promise<number> {
  const { values } = parseCommandLine({
    options: {
      seed: { type: 'string' },
      ops: { type: 'string' },
      'crash-rate': { type: 'string' },
      'fault-rate': { type: 'string' },
      'immediate-share': { type: 'string' },
      'max-pending-webhooks': { type: 'string' },
      soak: { type: 'boolean' },
      minutes: { type: 'string' },
      stats: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const ops = integer('ops', values.ops, DEFAULT_OPS, 1);
  const crashRate = rate('crash-rate', values['crash-rate'], DEFAULT_CRASH_RATE);
  const faultRate = rate('fault-rate', values['fault-rate'], DEFAULT_FAULT_RATE);
  const immediateShare = rate('immediate-share', values['immediate-share'], DEFAULT_IMMEDIATE_SHARE);
  const cap = values['max-pending-webhooks'];
  const base = { ops, crashRate, faultRate, immediateShare, ...(cap === undefined ? {} : { maxPendingWebhooks: integer('max-pending-webhooks', cap, undefined, 1) }) };
  if (values.soak === true) return soak(integer('minutes', values.minutes, undefined, 1), base);
  return once({ seed: integer('seed', values.seed, undefined, 0), ...base }, values.stats === true);
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`payments-sim: ${err.message}\n${err.showUsage ? `${USAGE}\n` : ''}`);
      process.exit(2);
    }
    process.stderr.write(`payments-sim: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
