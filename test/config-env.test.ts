// Strict configuration (issue 17): every setting is checked before anything is opened or
// written; a bad one stops the start with one line naming the variable, the value and what
// is accepted, exit status 2 and no stack trace.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configFromEnv, ConfigError } from '../src/app.js';
import { killAll, spawnRefusedService } from './support/service-process.js';

describe('settings from the environment', () => {
  const parent = mkdtempSync(join(tmpdir(), 'config-env-'));
  after(async () => {
    await killAll();
    rmSync(parent, { recursive: true, force: true });
  });

  it('a bad value is a ConfigError naming the variable and the value', () => {
    const cases: Array<[string, string]> = [
      ['PORT', '70000'],
      ['PORT', '-1'],
      ['PORT', '80.5'],
      ['PORT', '8080abc'],
      ['PORT', '1e3'],
      ['SNAPSHOT_EVERY_SECONDS', '0'],
      ['SNAPSHOT_EVERY_ENTRIES', '0'],
      ['MAX_PENDING_WEBHOOKS', '0'],
      ['DRAIN_TIMEOUT_SECONDS', 'ten'],
      ['HOST', 'not a host!'],
      ['HOST', 'exa_mple.com'],
    ];
    for (const [name, value] of cases) {
      assert.throws(
        () => configFromEnv({ [name]: value }),
        (err: unknown) => err instanceof ConfigError && err.message.startsWith(`${name}=${value} is not accepted: it must be `),
        `${name}=${value}`,
      );
    }
  });

  it('the edges of each range, and host names and addresses, are accepted', () => {
    assert.equal(configFromEnv({ PORT: '0' }).port, 0);
    assert.equal(configFromEnv({ PORT: '65535' }).port, 65_535);
    assert.equal(configFromEnv({ SNAPSHOT_EVERY_SECONDS: '1' }).snapshotEveryMs, 1_000);
    assert.equal(configFromEnv({ DRAIN_TIMEOUT_SECONDS: '0' }).drainTimeoutMs, 0);
    for (const host of ['localhost', '0.0.0.0', '::1', 'api.example.com']) assert.equal(configFromEnv({ HOST: host }).host, host);
    assert.equal(configFromEnv({}).port, 8080);
  });

  it('the service refuses to start with one line, exit status 2, and writes nothing', async () => {
    for (const [name, value] of [
      ['PORT', '70000'],
      ['HOST', 'not a host!'],
      ['SNAPSHOT_EVERY_SECONDS', '0'],
    ] as const) {
      const dataDir = join(parent, `never-${name}`);
      const refused = await spawnRefusedService(dataDir, { [name]: value });
      assert.equal(refused.code, 2, refused.stderr);
      const lines = refused.stderr.trim().split('\n');
      assert.equal(lines.length, 1, refused.stderr);
      assert.match(lines[0]!, new RegExp(`^cannot start: ${name}=${value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not accepted: it must be `));
      assert.equal(existsSync(dataDir), false, `${name}: the data directory was created`);
    }
  });
});
