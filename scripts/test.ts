// The suite runner behind `npm test`: every dist/test/*.test.js file in a node process of
// its own (node:test runs a file's tests in the process that loads it: one process a suite,
// not the two of `node --test FILE`), several side by side. Suites use temporary directories and port 0,
// so they are independent; on 2 cores most of a suite's time is fsync, timers and child
// processes, which is why more suites than cores run at once. Two groups of suites run
// one at a time within the group (see APART), and the system packages suites need are installed once, up front,
// while the rest already run. A file's output is printed whole when it ends (a failing
// file's in full), so side-by-side suites never interleave their lines.
//
//   node dist/scripts/test.js [--concurrency N] [--changed [--since REF]] [NAME ...]
//
// NAME picks suites by file name (`quotes` or `quotes.test.js`); --changed picks those
// whose imports reach a source changed since REF (default HEAD), uncommitted work included.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserServer } from 'playwright-core';
import { parseCommandLine, UsageError } from './cli.js';
import { specifiers } from '../test/support/imports.js';
import { CHROMIUM_PACKAGE, NATS_SERVER_PACKAGE, type DebianPackage } from '../test/support/debian.js';
import { BROWSER_ENDPOINT_ENV, CHROMIUM_ARGS } from '../test/support/browser-launch.js';

const distDir = fileURLToPath(new URL('../', import.meta.url));
const repoDir = resolve(distDir, '..');
const testDir = join(distDir, 'test');

/**
 * Suites that never run beside another of their group, though they may run beside the light
 * suites and beside the other group:
 * - `processes`: the kill -9 and crash suites and the cluster service suite, which kill
 *   children under a load and wait on leases and restarts against deadlines: two of them at
 *   once would each starve the other's children (six of them for cluster-service) and turn
 *   a slow machine into a failed deadline;
 * - `cpu`: the property and simulation runs, deterministic but CPU-bound for tens of seconds
 *   each: together they would take both cores from every suite waiting on a timer or a child.
 */
const APART: ReadonlyMap<string, 'processes' | 'cpu'> = new Map([
  ['crash-recovery', 'processes'],
  ['payout-crash', 'processes'],
  ['webhook-crash', 'processes'],
  ['cluster-service', 'processes'],
  ['simulation', 'cpu'],
  ['ledger-property', 'cpu'],
]);

/** The longest suites (seconds on the 2-core machine), started first so none is left to run alone at the end. */
const LONGEST_FIRST = ['simulation', 'cluster-service', 'crash-recovery', 'wal-tool', 'cluster-log', 'store-identity', 'store', 'dashboard-operations', 'dashboard-customers', 'operations', 'crypto-cli', 'config-env', 'platform-cli'];

/** What a suite needs installed, told by the support module it imports. */
const NEEDS: ReadonlyArray<{ module: string; pkg: DebianPackage }> = [
  { module: 'test/support/browser.js', pkg: CHROMIUM_PACKAGE },
  { module: 'test/support/nats-cluster.js', pkg: NATS_SERVER_PACKAGE },
];

interface Suite {
  name: string;
  path: string;
  /** Every dist module the suite loads (its own file included), repository-relative. */
  reaches: Set<string>;
  needs: DebianPackage[];
}

interface Outcome {
  name: string;
  tests: number;
  pass: number;
  fail: number;
  ms: number;
  /** CPU of the suite's process and the children it waited for (0 where /proc is missing). */
  cpuMs: number;
  ok: boolean;
}

/**
 * CPU (ms) of the runner's children reaped so far: Linux adds a child's time, and that of the
 * children it waited for, to its parent's cutime and cstime when the parent reaps it. Read at
 * each suite's exit, the growth since the last read is that suite's CPU.
 */
function reapedChildrenCpuMs(): number {
  let stat: string;
  try {
    stat = readFileSync('/proc/self/stat', 'utf8');
  } catch {
    return 0;
  }
  // Fields after the command name (which may hold spaces) start at field 3; cutime and cstime are fields 16 and 17.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticksPerSecond = 100;
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / ticksPerSecond;
}
let reapedCpuMs = reapedChildrenCpuMs();

/** The dist modules `entry` loads, transitively (relative imports only). */
function reachOf(entry: string, cache: Map<string, string[]>): Set<string> {
  const seen = new Set<string>();
  const stack = [entry];
  while (stack.length > 0) {
    const file = stack.pop()!;
    if (seen.has(file) || !existsSync(file)) continue;
    seen.add(file);
    let imports = cache.get(file);
    if (imports === undefined) {
      imports = specifiers(readFileSync(file, 'utf8'))
        .filter((spec) => spec.startsWith('.'))
        .map((spec) => resolve(dirname(file), spec));
      cache.set(file, imports);
    }
    stack.push(...imports);
  }
  return new Set([...seen].map((file) => relative(distDir, file)));
}

function suites(): Suite[] {
  const cache = new Map<string, string[]>();
  return readdirSync(testDir)
    .filter((name) => name.endsWith('.test.js'))
    .sort()
    .map((file) => {
      const path = join(testDir, file);
      const reaches = reachOf(path, cache);
      return { name: file.replace(/\.test\.js$/, ''), path, reaches, needs: NEEDS.filter((n) => reaches.has(n.module)).map((n) => n.pkg) };
    });
}

/** Sources changed since `ref`, committed or not, as the dist modules they become (and other files as they are). */
function changedSince(ref: string): string[] {
  const git = (...args: string[]): string[] => execFileSync('git', args, { cwd: repoDir, encoding: 'utf8' }).split('\n').filter((l) => l !== '');
  const files = [...git('diff', '--name-only', ref), ...git('ls-files', '--others', '--exclude-standard')];
  return files.map((file) => file.replace(/\.ts$/, '.js'));
}

/** The suites a change reaches: a suite whose imports include a changed module; browser code and data reach their users. */
function reachedBy(changed: readonly string[], all: readonly Suite[]): Suite[] {
  return all.filter((suite) =>
    changed.some((file) => {
      if (suite.reaches.has(file)) return true;
      if (file.startsWith('src/dashboard/')) return suite.needs.includes(CHROMIUM_PACKAGE);
      return file.startsWith('data/') || file === 'package.json' || (file === 'README.md' && suite.name === 'readme-quickstart');
    }),
  );
}

/** Installs what the chosen suites need and is missing, in one apt-get, in a child (the runner goes on meanwhile). */
function installMissing(needed: readonly DebianPackage[]): Promise<void> {
  const missing = needed.filter((p) => !existsSync(p.binary));
  if (missing.length === 0) return Promise.resolve();
  process.stdout.write(`installing ${missing.map((p) => p.pkg).join(', ')} for the suites that need them\n`);
  const child = spawn(process.execPath, [join(testDir, 'support/debian.js'), ...missing.map((p) => `${p.pkg}=${p.binary}`)], { stdio: ['ignore', 'ignore', 'inherit'] });
  // A failed install is reported by each suite that needs the package (it fails naming the command).
  return new Promise((done) => child.on('exit', () => done()));
}

function runSuite(suite: Suite, env: NodeJS.ProcessEnv): Promise<Outcome> {
  const started = performance.now();
  const child = spawn(process.execPath, ['--test-reporter=spec', suite.path], { cwd: repoDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const chunks: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
  return new Promise((done) => {
    let cpuMs = 0;
    child.on('exit', () => {
      const reaped = reapedChildrenCpuMs();
      cpuMs = reaped - reapedCpuMs;
      reapedCpuMs = reaped;
    });
    child.on('close', (code) => {
      const output = Buffer.concat(chunks).toString('utf8');
      const count = (label: string): number => Number(new RegExp(`^ℹ ${label} (\\d+)$`, 'm').exec(output)?.[1] ?? 0);
      const outcome = { name: suite.name, tests: count('tests'), pass: count('pass'), fail: count('fail'), ms: performance.now() - started, cpuMs, ok: code === 0 };
      const mark = outcome.ok ? '✔' : '✖';
      const seconds = (ms: number): string => (ms / 1000).toFixed(1).padStart(6);
      process.stdout.write(`${mark} ${suite.name.padEnd(32)} ${String(outcome.pass).padStart(3)}/${String(outcome.tests).padEnd(3)} ${seconds(outcome.ms)} s, cpu ${seconds(cpuMs)} s\n`);
      if (!outcome.ok) process.stdout.write(`${output}\n${mark} ${suite.name}: exit code ${code}\n`);
      done(outcome);
    });
  });
}

/** Runs `chosen` `concurrency` at a time, longest first, one at a time within each APART group, each after what it needs is installed. */
async function runAll(chosen: Suite[], concurrency: number): Promise<Outcome[]> {
  const rank = (s: Suite): number => (LONGEST_FIRST.includes(s.name) ? LONGEST_FIRST.indexOf(s.name) : LONGEST_FIRST.length);
  const queue = [...chosen].sort((a, b) => rank(a) - rank(b));
  const installed = installMissing([...new Set(chosen.flatMap((s) => s.needs))]);
  let ready = false;
  void installed.then(() => (ready = true));
  let browser: Promise<BrowserServer> | undefined;
  const outcomes: Outcome[] = [];
  const groupsRunning = new Set<string>();
  let running = 0;
  await new Promise<void>((allDone) => {
    const next = (): void => {
      while (running < concurrency) {
        const at = queue.findIndex((s) => (s.needs.length === 0 || ready) && !groupsRunning.has(APART.get(s.name) ?? ''));
        if (at < 0) break;
        const [suite] = queue.splice(at, 1) as [Suite];
        const group = APART.get(suite.name);
        running++;
        if (group !== undefined) groupsRunning.add(group);
        void (async () => {
          const env = { ...process.env };
          if (suite.needs.includes(CHROMIUM_PACKAGE)) {
            browser ??= chromium.launchServer({ executablePath: CHROMIUM_PACKAGE.binary, args: CHROMIUM_ARGS });
            env[BROWSER_ENDPOINT_ENV] = (await browser).wsEndpoint();
          }
          outcomes.push(await runSuite(suite, env));
          running--;
          if (group !== undefined) groupsRunning.delete(group);
          if (queue.length === 0 && running === 0) allDone();
          else next();
        })();
      }
    };
    void installed.then(next);
    next();
    if (queue.length === 0 && running === 0) allDone();
  });
  await (await browser)?.close();
  return outcomes;
}

async function main(): Promise<void> {
  const { values, positionals } = parseCommandLine({
    allowPositionals: true,
    options: { concurrency: { type: 'string' }, changed: { type: 'boolean' }, since: { type: 'string' } },
  });
  const concurrency = Number(values.concurrency ?? process.env.TEST_CONCURRENCY ?? Math.max(2, availableParallelism() * 3));
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new UsageError(`--concurrency must be a positive integer, not ${values.concurrency}`);
  const all = suites();
  let chosen = all;
  if (values.changed === true) chosen = reachedBy(changedSince(values.since ?? 'HEAD'), all);
  if (positionals.length > 0) {
    const names = new Set(positionals.map((p) => p.replace(/\.test\.(js|ts)$/, '').replace(/^.*\//, '')));
    for (const name of names) if (!all.some((s) => s.name === name)) throw new UsageError(`no suite named ${name} in dist/test`);
    chosen = chosen.filter((s) => names.has(s.name));
  }
  const started = performance.now();
  process.stdout.write(`${chosen.length} suites, ${concurrency} at a time\n`);
  const outcomes = await runAll(chosen, concurrency);
  const sum = (key: 'tests' | 'pass' | 'fail'): number => outcomes.reduce((n, o) => n + o[key], 0);
  const failed = outcomes.filter((o) => !o.ok).length;
  const slowest = [...outcomes].sort((a, b) => b.ms - a.ms).slice(0, 5);
  process.stdout.write(`\nslowest: ${slowest.map((o) => `${o.name} ${(o.ms / 1000).toFixed(1)} s`).join(', ')}`);
  const cpu = outcomes.reduce((n, o) => n + o.cpuMs, 0);
  process.stdout.write(`\nsuites ${outcomes.length} (${failed} failed), tests ${sum('tests')}, pass ${sum('pass')}, fail ${sum('fail')}, ${((performance.now() - started) / 1000).toFixed(1)} s, cpu ${(cpu / 1000).toFixed(1)} s\n`);
  if (failed > 0) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = err instanceof UsageError ? 2 : 1;
});
