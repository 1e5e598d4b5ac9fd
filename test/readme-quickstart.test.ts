// The README's Quickstart, run as a reader runs it. Its shell blocks are the ones marked
// `<!-- quickstart: session -->` (terminal 2, one shell for all of them, so variables carry
// over) and `<!-- quickstart: receiver -->` (terminal 3), taken verbatim from README.md and
// run with bash in document order against a real service (a child process with its own
// data directory and port) from a directory where `dist` is this build. It asserts what the
// reader is told to look for: the payment listed and COMPLETED, and the receiver printing
// the signed OUTGOING_PAYMENT event of that transaction. A receiver that printed whatever
// arrived would pass that too, so a forged delivery must be refused and never printed.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { killAll, spawnService } from './support/service-process.js';

const README = fileURLToPath(new URL('../../README.md', import.meta.url));
/** This build's dist/ (the test runs from dist/test/), linked as the reader's `dist`. */
const DIST = fileURLToPath(new URL('..', import.meta.url));
/** How long one step (a block, the receiver's start, an awaited event) may take. */
const STEP_TIMEOUT_MS = 20_000;

interface QuickstartBlock {
  kind: 'session' | 'receiver';
  script: string;
}

/** The marked blocks in document order; a marker not followed by a sh block is an error, not a skipped step. */
function quickstartBlocks(markdown: string): QuickstartBlock[] {
  const markers = markdown.match(/<!-- quickstart: \w+ -->/g) ?? [];
  const blocks = [...markdown.matchAll(/<!-- quickstart: (session|receiver) -->\n```sh\n([\s\S]*?)\n```\n/g)].map((m) => ({
    kind: m[1] as QuickstartBlock['kind'],
    script: m[2]!,
  }));
  assert.equal(blocks.length, markers.length, 'every quickstart marker in README.md is followed by a ```sh block');
  assert.equal(blocks.filter((b) => b.kind === 'receiver').length, 1, 'README.md marks one receiver block');
  return blocks;
}

/** curl is what the reader runs; install it where this test may (root with apt-get), else say what is missing. */
function ensureCurl(): void {
  if (spawnSync('curl', ['--version']).status === 0) return;
  if (process.getuid?.() !== 0 || spawnSync('apt-get', ['--version']).status !== 0) {
    assert.fail('the quickstart test needs curl on PATH: install it (apt-get install curl, or your system\'s package)');
  }
  const install = (): number | null => spawnSync('apt-get', ['install', '-y', 'curl'], { stdio: 'inherit' }).status;
  // A fresh image may have no package lists yet.
  if (install() !== 0 && (spawnSync('apt-get', ['update'], { stdio: 'inherit' }).status !== 0 || install() !== 0)) {
    assert.fail('curl is missing and apt-get install -y curl failed');
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Resolves once `output()` satisfies `done`; rejects with what was seen when `child` exits first or time runs out. */
function waitFor(child: ChildProcess, what: string, output: () => string, done: (text: string) => boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (!done(output())) return;
      finish();
      resolve();
    };
    const exited = (code: number | null): void => {
      finish();
      reject(new Error(`${what}: the shell exited (${code}) first\n${output()}`));
    };
    const timer = setTimeout(() => {
      finish();
      reject(new Error(`${what}: not within ${STEP_TIMEOUT_MS} ms\n${output()}`));
    }, STEP_TIMEOUT_MS);
    const poll = setInterval(check, 50);
    const finish = (): void => {
      clearTimeout(timer);
      clearInterval(poll);
      child.off('exit', exited);
    };
    child.on('exit', exited);
    check();
  });
}

/** Terminal 2: one bash, fed one block at a time, each sourced from a file with stdin closed. */
class Session {
  readonly #bash: ChildProcess;
  #stdout = '';
  #stderr = '';
  #steps = 0;

  constructor(
    private readonly dir: string,
    env: NodeJS.ProcessEnv,
  ) {
    this.#bash = spawn('bash', ['--noprofile', '--norc'], { cwd: dir, env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.#bash.stdout!.setEncoding('utf8').on('data', (chunk: string) => (this.#stdout += chunk));
    this.#bash.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.#stderr += chunk));
    // A failing command stops the session, as a reader would stop at an error.
    this.#bash.stdin!.write('set -euo pipefail\n');
  }

  get stdout(): string {
    return this.#stdout;
  }

  async run(script: string): Promise<void> {
    const step = ++this.#steps;
    const file = join(this.dir, `step-${step}.sh`);
    writeFileSync(file, `${script}\n`);
    const done = `@@quickstart step ${step} done@@`;
    this.#bash.stdin!.write(`source '${file}' < /dev/null\necho '${done}'\n`);
    await waitFor(this.#bash, `quickstart step ${step}`, () => `stdout:\n${this.#stdout}\nstderr:\n${this.#stderr}`, () => this.#stdout.includes(done));
  }

  stop(): void {
    if (this.#bash.exitCode === null) this.#bash.kill('SIGKILL');
  }
}

/** Terminal 3: the receiver block in its own bash (its own process group, so stopping it stops node too). */
class ReceiverShell {
  readonly #bash: ChildProcess;
  #stdout = '';
  #stderr = '';

  constructor(dir: string, env: NodeJS.ProcessEnv, script: string) {
    this.#bash = spawn('bash', ['--noprofile', '--norc', '-c', script], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.#bash.stdout!.setEncoding('utf8').on('data', (chunk: string) => (this.#stdout += chunk));
    this.#bash.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.#stderr += chunk));
  }

  started(): Promise<void> {
    return waitFor(this.#bash, 'the webhook receiver', () => this.#stderr, (text) => text.includes('listening on'));
  }

  /** Every complete line it printed, parsed: it promises one JSON event a line. */
  events(): any[] {
    return this.#stdout
      .split('\n')
      .slice(0, -1)
      .map((line) => JSON.parse(line));
  }

  waitForEvent(what: string, match: (event: any) => boolean): Promise<void> {
    return waitFor(this.#bash, what, () => `stdout:\n${this.#stdout}\nstderr:\n${this.#stderr}`, () => this.events().some(match));
  }

  stop(): void {
    if (this.#bash.exitCode === null) process.kill(-this.#bash.pid!, 'SIGKILL');
  }
}

/** The JSON objects the session printed, one a line (curl's -w '\n' and echo end each answer). */
function printedObjects(stdout: string): any[] {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));
}

async function postToReceiver(port: number, body: string, signature: string | undefined): Promise<number> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (signature !== undefined) headers['x-service-signature'] = signature;
  const res = await fetch(`http://127.0.0.1:${port}/webhooks`, { method: 'POST', headers, body });
  return res.status;
}

describe('the README quickstart', () => {
  const work = mkdtempSync(join(tmpdir(), 'readme-quickstart-'));
  const running: Array<{ stop(): void }> = [];
  after(async () => {
    for (const shell of running) shell.stop();
    await killAll();
    rmSync(work, { recursive: true, force: true });
  });

  it('pays one customer from another, lists the payment COMPLETED, and the receiver prints its verified webhook', { timeout: 120_000 }, async () => {
    ensureCurl();
    const blocks = quickstartBlocks(readFileSync(README, 'utf8'));
    const service = await spawnService(join(work, 'db'));
    symlinkSync(DIST, join(work, 'dist'));
    const receiverPort = await freePort();
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', HOME: work, DATA_DIR: join(work, 'db'), BASE: service.baseUrl, RECEIVER_PORT: String(receiverPort) };

    const session = new Session(work, env);
    running.push(session);
    let receiver: ReceiverShell | undefined;
    for (const block of blocks) {
      if (block.kind === 'session') {
        await session.run(block.script);
        continue;
      }
      receiver = new ReceiverShell(work, env, block.script);
      running.push(receiver);
      await receiver.started();
    }
    assert.ok(receiver !== undefined);

    const printed = printedObjects(session.stdout);
    const executed = printed.find((o) => typeof o.id === 'string' && o.id.startsWith('Quote:') && o.transactionId !== undefined);
    assert.ok(executed !== undefined, `the execute answer is printed:\n${session.stdout}`);
    assert.equal(executed.status, 'COMPLETED');
    const listed = printed.filter((o) => Array.isArray(o.data)).flatMap((o) => o.data as any[]);
    const payment = listed.find((tx) => tx.id === executed.transactionId);
    assert.ok(payment !== undefined, `the transaction list shows ${executed.transactionId}:\n${session.stdout}`);
    assert.equal(payment.status, 'COMPLETED');
    assert.equal(payment.type, 'OUTGOING');

    await receiver.waitForEvent('the payment webhook', (e) => e.type === 'OUTGOING_PAYMENT' && e.transaction?.id === executed.transactionId);
    const event = receiver.events().find((e) => e.type === 'OUTGOING_PAYMENT' && e.transaction?.id === executed.transactionId);
    assert.equal(event.transaction.status, 'COMPLETED');
    assert.match(event.id, /^Webhook:/);

    // The receiver verifies: a delivery signed by another key, or not signed, is refused and not printed.
    const forged = JSON.stringify({ id: 'Webhook:forged', type: 'OUTGOING_PAYMENT', timestamp: new Date().toISOString() });
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    assert.equal(await postToReceiver(receiverPort, forged, sign('sha256', Buffer.from(forged), privateKey).toString('base64')), 401);
    assert.equal(await postToReceiver(receiverPort, forged, undefined), 401);
    assert.ok(!receiver.events().some((e) => e.id === 'Webhook:forged'), 'a forged event is never printed');
  });
});
