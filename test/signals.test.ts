// Stopping the service by signal (README): SIGTERM and SIGINT both stop accepting, drain,
// make the final commit and exit 0, also when the signal comes the moment the service says
// it listens (a supervisor reading that line); what was acknowledged is there after a restart.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { basicHeader } from './support/service.js';
import { killAll, launchService, spawnService } from './support/service-process.js';

function sandboxAuth(dataDir: string): string {
  const creds = JSON.parse(readFileSync(join(dataDir, 'credentials.json'), 'utf8')) as { sandbox: { tokenId: string; clientSecret: string } };
  return basicHeader(creds.sandbox.tokenId, creds.sandbox.clientSecret);
}

describe('signals', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} drains, exits 0 and keeps what was acknowledged, even the moment the service listens`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'svc-signal-'));
      try {
        const first = await spawnService(dataDir);
        const res = await fetch(`${first.baseUrl}/customers`, {
          method: 'POST',
          headers: { authorization: sandboxAuth(dataDir), 'content-type': 'application/json' },
          body: JSON.stringify({ customerType: 'INDIVIDUAL', platformCustomerId: `kept-${signal}` }),
        });
        assert.equal(res.status, 201);
        const created = (await res.json()) as { id: string };
        first.proc.kill(signal);
        assert.equal(await first.exited, 0, `${signal} exits 0`);
        assert.match(first.stderr.join(''), new RegExp(`${signal}: draining`));

        // Signalled as soon as the listening line is read: handled, not the default exit.
        const second = await spawnService(dataDir);
        second.proc.kill(signal);
        assert.equal(await second.exited, 0, `${signal} right after "listening on" exits 0`);

        const third = await spawnService(dataDir);
        try {
          const read = await fetch(`${third.baseUrl}/customers/${created.id}`, { headers: { authorization: sandboxAuth(dataDir) } });
          assert.equal(read.status, 200);
          assert.equal(((await read.json()) as { platformCustomerId: string }).platformCustomerId, `kept-${signal}`);
        } finally {
          third.proc.kill('SIGTERM');
          assert.equal(await third.exited, 0);
        }
      } finally {
        await killAll();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  }
});

describe('what a start writes', () => {
  it('stdout carries only JSON lines, the first announcing the address and credentials.json; the log on stderr is JSON too', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-output-'));
    try {
      const { proc, stderr, exited } = launchService(dataDir, {});
      let stdout = '';
      proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      const deadline = Date.now() + 20_000;
      while (!stderr.join('').includes('"event":"service.ready"') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      // The announcement comes once the service is ready.
      while (!stdout.includes('\n') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      proc.kill('SIGTERM');
      assert.equal(await exited, 0, stderr.join(''));
      const parsed = (text: string, stream: string): Array<Record<string, unknown>> =>
        text.split('\n').filter((line) => line !== '').map((line) => {
          try {
            return JSON.parse(line) as Record<string, unknown>;
          } catch {
            throw new assert.AssertionError({ message: `a ${stream} line is not JSON: ${line}` });
          }
        });
      const announced = parsed(stdout, 'stdout');
      assert.equal(announced.length, 1, stdout);
      assert.equal(announced[0]!.event, 'service.started');
      assert.match(String(announced[0]!.baseUrl), /^http:\/\/127\.0\.0\.1:\d+\/2025-10-13$/);
      assert.equal(announced[0]!.credentialsPath, join(dataDir, 'credentials.json'));
      assert.equal(announced[0]!.level, 'info');
      assert.ok(parsed(stderr.join(''), 'stderr').some((line) => line.event === 'service.stopped'));
    } finally {
      await killAll();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
