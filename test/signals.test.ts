// Stopping the service by signal (README): SIGTERM and SIGINT both stop accepting, drain,
// make the final commit and exit 0, also when the signal comes the moment the service says
// it listens (a supervisor reading that line); what was acknowledged is there after a restart.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { basicHeader } from './support/service.js';
import { killAll, spawnService } from './support/service-process.js';

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
