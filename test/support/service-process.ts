// The service as a child process (`node dist/src/main.bundle.js`, as `npm start` runs it),
// for tests that kill it, restart it, or expect it to refuse to start. Every child started
// here is remembered until it exits, so a suite's `finally` (or `after`) can kill whatever
// an assertion left running.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basicHeader } from './service.js';
import { SERVICE_BUNDLE } from '../../src/built-layout.js';

/**
 * How long a child may take to announce itself (stdout) or to exit: a guard against a hang,
 * not a measure of speed. A cluster node restarted with its three servers waits out their
 * elections, which on a 2-core machine busy with the other suites took past 20 s.
 */
const START_TIMEOUT_MS = 60_000;

export interface ServiceChild {
  proc: ChildProcess;
  baseUrl: string;
  /** The default platform's credentials file, as the service announces it. */
  credentialsPath: string;
  stderr: string[];
  exited: Promise<number | null>;
}

/**
 * Calls the child's API as its default platform in sandbox: a JSON body out, the parsed
 * answer back, which must be 2xx (else the assertion names the request and the answer).
 */
export function sandboxCaller(child: ServiceChild): (method: string, path: string, body?: unknown) => Promise<any> {
  const creds = JSON.parse(readFileSync(child.credentialsPath, 'utf8')) as { sandbox: { tokenId: string; clientSecret: string } };
  const auth = basicHeader(creds.sandbox.tokenId, creds.sandbox.clientSecret);
  return async (method, path, body) => {
    const res = await fetch(`${child.baseUrl}${path}`, {
      method,
      headers: body === undefined ? { authorization: auth } : { authorization: auth, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const parsed = await res.json();
    assert.ok(res.ok, `${method} ${path}: ${res.status} ${JSON.stringify(parsed)}`);
    return parsed;
  };
}

export interface RefusedStart {
  code: number | null;
  stderr: string;
}

const running = new Set<ChildProcess>();

/** The service as a child, remembered until it exits; it has not announced itself yet (a test may read its log for the port). */
export function launchService(dataDir: string, extraEnv: Record<string, string>): { proc: ChildProcess; stderr: string[]; exited: Promise<number | null> } {
  const proc = spawn(process.execPath, [SERVICE_BUNDLE], {
    env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(proc);
  const stderr: string[] = [];
  proc.stderr!.setEncoding('utf8').on('data', (chunk: string) => stderr.push(chunk));
  const exited = new Promise<number | null>((resolve) =>
    proc.on('exit', (code) => {
      running.delete(proc);
      resolve(code);
    }),
  );
  return { proc, stderr, exited };
}

/** What the service announces on stdout once it serves (src/ops/log.ts announceStart). */
interface Announcement {
  baseUrl: string;
  credentialsPath: string;
}

/** Calls `announced` with the start announcement, the JSON line on stdout whose event is service.started. */
function onAnnouncement(proc: ChildProcess, announced: (announcement: Announcement) => void): void {
  let out = '';
  proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    const lines = out.split('\n');
    out = lines.pop()!;
    // A line that is not JSON is not the announcement (signals.test.ts holds stdout to JSON).
    for (const line of lines.filter((candidate) => candidate.startsWith('{'))) {
      const parsed = JSON.parse(line) as { event?: string } & Announcement;
      if (parsed.event === 'service.started') announced(parsed);
    }
  });
}

/** Starts the service and resolves once it listens; rejects if it exits or hangs first. */
export async function spawnService(dataDir: string, extraEnv: Record<string, string> = {}): Promise<ServiceChild> {
  const { proc, stderr, exited } = launchService(dataDir, extraEnv);
  const [baseUrl, credentialsPath] = await new Promise<[string, string]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start: ${stderr.join('')}`)), START_TIMEOUT_MS);
    onAnnouncement(proc, (announced) => {
      clearTimeout(timer);
      resolve([announced.baseUrl, announced.credentialsPath]);
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`service exited with ${code}: ${stderr.join('')}`));
    });
  });
  return { proc, baseUrl, credentialsPath, stderr, exited };
}

/** Starts the service expecting it to refuse: resolves with its exit code and stderr. */
export async function spawnRefusedService(dataDir: string, extraEnv: Record<string, string> = {}): Promise<RefusedStart> {
  const { proc, stderr, exited } = launchService(dataDir, extraEnv);
  onAnnouncement(proc, () => proc.kill('SIGKILL'));
  const timer = setTimeout(() => proc.kill('SIGKILL'), START_TIMEOUT_MS);
  const code = await exited;
  clearTimeout(timer);
  return { code, stderr: stderr.join('') };
}

/** SIGKILLs every child still running; for a suite's `finally`. */
export async function killAll(): Promise<void> {
  const waits: Promise<void>[] = [];
  for (const proc of running) {
    waits.push(new Promise((resolve) => proc.once('exit', () => resolve())));
    proc.kill('SIGKILL');
  }
  await Promise.all(waits);
}
