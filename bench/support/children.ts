// Child processes of the benches: every one is tracked and killed when the bench exits,
// however it exits (normal end, error, Ctrl-C). Also: free ports, waiting for an HTTP
// endpoint, and reading a process's CPU time from /proc.
import { fork, spawn, type ChildProcess, type ForkOptions, type SpawnOptions } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';

const live = new Set<ChildProcess>();
const tempDirs = new Set<string>();
let hooked = false;

function killAll(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  live.clear();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

function hook(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      process.stderr.write(`\n${signal}: stopping the bench and its child processes\n`);
      killAll();
      process.exit(130);
    });
  }
}

function track(child: ChildProcess): ChildProcess {
  hook();
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

export function forkTracked(module: string, args: string[], options: ForkOptions): ChildProcess {
  return track(fork(module, args, options));
}

export function spawnTracked(command: string, args: string[], options: SpawnOptions): ChildProcess {
  return track(spawn(command, args, options));
}

/** Removed when the bench exits, unless `keep` is called for it. */
export function removeOnExit(dir: string): void {
  hook();
  tempDirs.add(dir);
}

export function keep(dir: string): void {
  tempDirs.delete(dir);
}

/** Resolves with the exit code (or signal name) of a child. */
export function exited(child: ChildProcess): Promise<number | string> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  if (child.signalCode !== null) return Promise.resolve(child.signalCode);
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
}

/** Sends `signal`; after `graceMs` without an exit, SIGKILL. Resolves with how it ended. */
export async function stop(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000): Promise<number | string> {
  if (child.exitCode !== null || child.signalCode !== null) return exited(child);
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  const how = await exited(child);
  clearTimeout(timer);
  return how;
}

/** A port that was free a moment ago (the OS picks it; the race window is tiny). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Polls `url` until it answers 200; fails if the child exits or the time runs out. */
export async function waitForHttp(url: string, child: ChildProcess, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${url}: the server exited (${child.exitCode ?? child.signalCode}) before answering`);
    }
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
      last = `status ${res.status}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms (last: ${last})`);
}

/** Linux USER_HZ: /proc times are in these ticks (100 on every common build). */
const USER_HZ = 100;

/**
 * User + system CPU time (ms) from /proc: of a process and all its threads, or with
 * `thread` of that one thread (the main thread's id is the process id). Undefined if unreadable.
 */
export function processCpuMs(pid: number | undefined, thread?: number): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'latin1');
    // Fields after "(comm)": state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1000) / USER_HZ;
  } catch {
    return undefined;
  }
}

/**
 * A process's resident memory split as /proc/<pid>/status does (bytes): anonymous (its heap,
 * native allocations) and file-backed (mapped files such as lmdb's data.mdb, shared code).
 * Undefined if unreadable.
 */
export function processRss(pid: number | undefined): { anon: number; file: number } | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'latin1');
    const kib = (field: string): number | undefined => {
      const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
      return m === null ? undefined : Number(m[1]) * 1024;
    };
    const anon = kib('RssAnon');
    const file = kib('RssFile');
    return anon === undefined || file === undefined ? undefined : { anon, file };
  } catch {
    return undefined;
  }
}

/** Busy CPU time of the whole machine (all cores, ms) from /proc/stat; undefined if unreadable. */
export function machineBusyMs(): number | undefined {
  try {
    const line = readFileSync('/proc/stat', 'latin1').split('\n', 1)[0]!;
    const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
    return (((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) * 1000) / USER_HZ;
  } catch {
    return undefined;
  }
}

/** Cores' worth of CPU the machine is using over `ms` (all processes), for a quietness check. */
export async function machineLoad(ms = 500): Promise<number | undefined> {
  const a = machineBusyMs();
  const t0 = performance.now();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const b = machineBusyMs();
  if (a === undefined || b === undefined) return undefined;
  return (b - a) / (performance.now() - t0);
}

/**
 * Runs a bench's `main`, which returns what went wrong (empty: nothing): prints that under
 * `FAILED:` and exits 1, or exits 0; a throw is printed and exits 1.
 */
export function runBench(name: string, main: () => Promise<readonly string[]>): void {
  main().then(
    (failures) => {
      if (failures.length > 0) console.error(`\nFAILED:\n  ${failures.join('\n  ')}`);
      process.exit(failures.length > 0 ? 1 : 0);
    },
    (err: unknown) => {
      console.error(`${name} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      process.exit(1);
    },
  );
}
