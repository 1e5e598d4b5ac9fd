// `payments-platform create` (scripts/platform.ts): further platforms, offline and against a
// running service; its stdout is the credentials' JSON and nothing else.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { startService } from '../src/app.js';
import { lockDataDir } from '../src/data-dir.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { basicHeader, startTestService } from './support/service.js';

const CLI = fileURLToPath(new URL('../scripts/platform.js', import.meta.url));
const execFileAsync = promisify(execFile);
/** A command that hangs is killed rather than hanging the suite. */
const COMMAND_TIMEOUT_MS = 30_000;
const run = (file: string, args: readonly string[], options: { env: NodeJS.ProcessEnv }) =>
  execFileAsync(file, args, { ...options, timeout: COMMAND_TIMEOUT_MS, killSignal: 'SIGKILL' });

interface Printed {
  platformId: string;
  baseUrl: string;
  sandbox: { tokenId: string; clientSecret: string };
  production: { tokenId: string; clientSecret: string };
}

describe('platform command', { timeout: 120_000 }, () => {
  it('creates a platform through the running service, usable at once and isolated from the first', async () => {
    const svc = await startTestService();
    try {
      const { stdout } = await run(process.execPath, [CLI, 'create', '--uma-domain', 'acme.example', '--regulated'], {
        env: { PATH: process.env.PATH ?? '', DATA_DIR: svc.dataDir },
      });
      const printed = JSON.parse(stdout) as Printed;
      assert.match(printed.platformId, /^Platform:/);
      assert.notEqual(printed.platformId, svc.credentials.platformId);
      const prod = { header: basicHeader(printed.production.tokenId, printed.production.clientSecret) };
      const config = await svc.request('GET', '/config', { auth: prod });
      assert.equal(config.status, 200);
      assert.equal(config.body.umaDomain, 'acme.example');
      assert.equal(config.body.isRegulatedFinancialInstitution, true);
      // The default platform's customer is invisible to the new platform.
      const created = await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL' } });
      const sandbox = { header: basicHeader(printed.sandbox.tokenId, printed.sandbox.clientSecret) };
      assert.equal((await svc.request('GET', `/customers/${created.body.id}`, { auth: sandbox })).status, 404);
      const own = await svc.request('GET', '/customers', { auth: sandbox });
      assert.equal(own.body.totalCount, 0);
    } finally {
      await svc.stop();
    }
  });

  it('creates a platform offline when no service owns the data directory (--data over DATA_DIR)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cli-'));
    try {
      const { stdout } = await run(process.execPath, [CLI, 'create', '--data', dataDir], { env: { PATH: process.env.PATH ?? '', DATA_DIR: '/nonexistent' } });
      const printed = JSON.parse(stdout) as Printed;
      const service = await startService({ dataDir, port: 0, env: {}, report: () => undefined });
      try {
        // The store was not empty, so no default platform was made beside this one.
        assert.equal(existsSync(join(dataDir, 'credentials.json')), false);
        const res = await fetch(`${service.baseUrl}/config`, {
          headers: { authorization: basicHeader(printed.sandbox.tokenId, printed.sandbox.clientSecret) },
        });
        assert.equal(res.status, 200);
        assert.equal(((await res.json()) as { umaDomain: string }).umaDomain, 'sandbox.uma.test');
      } finally {
        await service.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('creates a platform offline over a stale service.json naming a live, unrelated process', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cli-stale-'));
    try {
      writeFileSync(join(dataDir, 'service.json'), JSON.stringify({ pid: process.ppid, origin: 'http://127.0.0.1:9' }) + '\n');
      const { stdout } = await run(process.execPath, [CLI, 'create'], { env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir } });
      assert.match((JSON.parse(stdout) as Printed).platformId, /^Platform:/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('is refused, naming the directory and the endpoint, when the running service cannot be reached', async () => {
    const svc = await startTestService();
    try {
      // The service holds the lock, but what it recorded points nowhere.
      writeFileSync(join(svc.dataDir, 'service.json'), JSON.stringify({ pid: process.pid, origin: 'http://127.0.0.1:9' }) + '\n');
      await assert.rejects(
        run(process.execPath, [CLI, 'create'], { env: { PATH: process.env.PATH ?? '', DATA_DIR: svc.dataDir } }),
        (err: { code?: number; stderr?: string }) => {
          assert.equal(err.code, 1);
          assert.match(err.stderr ?? '', /is in use by another process/);
          assert.ok((err.stderr ?? '').includes(svc.dataDir));
          assert.match(err.stderr ?? '', /operator endpoint http:\/\/127\.0\.0\.1:9 did not answer/);
          return true;
        },
      );
      assert.equal((await svc.request('GET', '/customers')).status, 200, 'the service is untouched');
    } finally {
      await svc.stop();
    }
  });

  it('is refused while another process holds the directory and has not recorded where it listens', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cli-locked-'));
    // What a service looks like while it recovers: the lock taken, no service.json yet.
    const lock = await lockDataDir(dataDir);
    try {
      await assert.rejects(
        run(process.execPath, [CLI, 'create'], { env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir } }),
        (err: { code?: number; stderr?: string }) => {
          assert.equal(err.code, 1);
          assert.match(err.stderr ?? '', /is in use by another process/);
          assert.match(err.stderr ?? '', /has not recorded an operator endpoint yet/);
          return true;
        },
      );
      assert.equal(existsSync(join(dataDir, 'data.mdb')), false, 'the store was not opened');
    } finally {
      await lock.release();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('--help prints the usage on stdout; bad options and commands are usage errors with exit code 2', async () => {
    const env = { PATH: process.env.PATH ?? '', DATA_DIR: '/nonexistent' };
    const help = await run(process.execPath, [CLI, '--help'], { env });
    assert.match(help.stdout, /^Usage: payments-platform create \[--uma-domain DOMAIN\] \[--regulated\] \[--data DIR\]/);
    assert.equal(help.stderr, '');
    const cases: Array<[string[], RegExp]> = [
      [['create', '--bogus'], /Unknown option '--bogus'/],
      [['create', '--uma-domain'], /Option '--uma-domain <value>' argument missing/],
      [['create', 'extra'], /create takes no arguments/],
      [['frobnicate'], /unknown command "frobnicate"/],
      [[], /no command given/],
    ];
    for (const [args, message] of cases) {
      await assert.rejects(run(process.execPath, [CLI, ...args], { env }), (err: { code?: number; stdout?: string; stderr?: string }) => {
        assert.equal(err.code, 2, `${args.join(' ')}: ${err.stderr}`);
        assert.match(err.stderr ?? '', message);
        assert.match(err.stderr ?? '', /Run "payments-platform --help" for usage/);
        assert.equal(err.stdout, '');
        return true;
      });
    }
  });
});
