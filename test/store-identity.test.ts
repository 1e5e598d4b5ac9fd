// A store bound to its data directory: the data.mdb, credentials.json or master key of another
// instance is refused at start with one line naming the files that disagree, and nothing in
// the directory changes; a store from before identities adopts one at its first start; the
// offline platform command makes the same checks.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startService } from '../src/app.js';
import type { CredentialsFile } from '../src/platforms.js';
import { basicHeader, startTestService } from './support/service.js';
import { killAll, spawnRefusedService, spawnService, type RefusedStart } from './support/service-process.js';

const SUITE_TIMEOUT_MS = 180_000;
const FIXTURE = fileURLToPath(new URL('../../test/fixtures/store-5fb4518', import.meta.url));
const CLI = fileURLToPath(new URL('../scripts/platform.js', import.meta.url));
const execFileAsync = promisify(execFile);

const dirs: string[] = [];
after(async () => {
  await killAll();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

function credentialsOf(dataDir: string): CredentialsFile {
  return JSON.parse(readFileSync(join(dataDir, 'credentials.json'), 'utf8')) as CredentialsFile;
}

interface Instance {
  dataDir: string;
  storeId: string;
  customerId: string;
}

/** A data directory made by the real service: its default platform and one customer, closed. */
async function instance(prefix: string, env: NodeJS.ProcessEnv = {}): Promise<Instance> {
  const dataDir = tempDir(prefix);
  const service = await startService({ dataDir, port: 0, env, report: () => undefined });
  try {
    const res = await fetch(`${service.baseUrl}/customers`, {
      method: 'POST',
      headers: { authorization: sandboxAuth(dataDir), 'content-type': 'application/json' },
      body: JSON.stringify({ customerType: 'INDIVIDUAL' }),
    });
    assert.equal(res.status, 201);
    return { dataDir, storeId: service.services.storeId, customerId: ((await res.json()) as { id: string }).id };
  } finally {
    await service.close();
  }
}

function sandboxAuth(dataDir: string): string {
  const { sandbox } = credentialsOf(dataDir);
  return basicHeader(sandbox.tokenId, sandbox.clientSecret);
}

/** Every file of the directory with its bytes and modification time: what "nothing changed" compares. */
/** Starts the service on the instance's directory, reads its customer with its own token, and stops it. */
async function assertServes(a: Instance, env: Record<string, string> = {}): Promise<void> {
  const child = await spawnService(a.dataDir, env);
  try {
    const res = await fetch(`${child.baseUrl}/customers/${a.customerId}`, { headers: { authorization: sandboxAuth(a.dataDir) } });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
  } finally {
    child.proc.kill('SIGTERM');
    assert.equal(await child.exited, 0);
  }
}

function filesOf(dataDir: string): Record<string, { bytes: string; mtimeMs: number }> {
  const files: Record<string, { bytes: string; mtimeMs: number }> = {};
  for (const name of readdirSync(dataDir).sort()) {
    const path = join(dataDir, name);
    if (!statSync(path).isFile()) continue;
    files[name] = { bytes: readFileSync(path).toString('base64'), mtimeMs: statSync(path).mtimeMs };
  }
  return files;
}

/** The one line a refused start prints: `cannot start: ...`, no stack. */
function refusalLine(refused: RefusedStart): string {
  assert.equal(refused.code, 1, refused.stderr);
  const lines = refused.stderr.split('\n').filter((line) => line !== '');
  assert.equal(lines.length, 1, `one line, got:\n${refused.stderr}`);
  assert.match(lines[0]!, /^cannot start: /);
  return lines[0]!;
}

/** Starts the service as a child expecting a refusal; asserts the directory is byte for byte as before. */
async function refusedUntouched(dataDir: string, extraEnv: Record<string, string> = {}): Promise<string> {
  const before = filesOf(dataDir);
  const line = refusalLine(await spawnRefusedService(dataDir, extraEnv));
  assert.deepEqual(filesOf(dataDir), before, 'nothing in the data directory changed');
  return line;
}

describe('a store bound to its data directory', { timeout: SUITE_TIMEOUT_MS }, () => {
  it('records an identity at creation that credentials.json carries, and restarts as usual', async () => {
    const a = await instance('identity-a-');
    assert.match(a.storeId, /^[0-9a-f-]{36}$/);
    assert.equal(credentialsOf(a.dataDir).storeId, a.storeId);
    await assertServes(a);
    assert.equal(credentialsOf(a.dataDir).storeId, a.storeId, 'a restart keeps the identity');
  });

  it("another instance's data.mdb: refused, naming data.mdb, credentials.json and master.key; nothing changed", async () => {
    const [a, b] = [await instance('identity-a-'), await instance('identity-b-')];
    copyFileSync(join(b.dataDir, 'data.mdb'), join(a.dataDir, 'data.mdb'));
    const line = await refusedUntouched(a.dataDir);
    assert.ok(line.includes(`${join(a.dataDir, 'data.mdb')} is store ${b.storeId}`), line);
    assert.ok(line.includes(`${join(a.dataDir, 'credentials.json')} belongs to store ${a.storeId}`), line);
    assert.ok(line.includes(`${join(a.dataDir, 'master.key')} does not open it`), line);
  });

  it("another instance's credentials.json: refused, naming it; nothing changed", async () => {
    const [a, b] = [await instance('identity-a-'), await instance('identity-b-')];
    copyFileSync(join(b.dataDir, 'credentials.json'), join(a.dataDir, 'credentials.json'));
    const line = await refusedUntouched(a.dataDir);
    assert.ok(line.includes(`${join(a.dataDir, 'data.mdb')} is store ${a.storeId}`), line);
    assert.ok(line.includes(`${join(a.dataDir, 'credentials.json')} belongs to store ${b.storeId}`), line);
    assert.ok(!line.includes('master.key'), `the key is right and not named: ${line}`);
  });

  it("another instance's master.key: refused, naming master.key, not as a decryption error; nothing changed", async () => {
    const [a, b] = [await instance('identity-a-'), await instance('identity-b-')];
    copyFileSync(join(b.dataDir, 'master.key'), join(a.dataDir, 'master.key'));
    const line = await refusedUntouched(a.dataDir);
    assert.equal(line.endsWith(`${join(a.dataDir, 'data.mdb')} is store ${a.storeId}, but ${join(a.dataDir, 'master.key')} does not open it: refusing to start (put back the files of this instance, or move the directory aside for a fresh start)`), true, line);
    assert.doesNotMatch(line, /Unsupported state|credentials\.json/);
  });

  it('a MASTER_KEY that does not open the store: refused, naming MASTER_KEY (and neither its value nor master.key)', async () => {
    const key = 'c3'.repeat(32);
    const a = await instance('identity-env-', { MASTER_KEY: key });
    assert.equal(existsSync(join(a.dataDir, 'master.key')), false, 'the key came from the environment');
    const wrong = 'd4'.repeat(32);
    const line = await refusedUntouched(a.dataDir, { MASTER_KEY: wrong });
    assert.ok(line.includes(`${join(a.dataDir, 'data.mdb')} is store ${a.storeId}, but MASTER_KEY does not open it`), line);
    assert.ok(!line.includes(wrong) && !line.includes('master.key'), line);
    // Without MASTER_KEY the key is not here: refused, and no new key file is made.
    const missing = await refusedUntouched(a.dataDir);
    assert.ok(missing.includes(`${join(a.dataDir, 'master.key')} is missing and MASTER_KEY is unset`), missing);
    assert.equal(existsSync(join(a.dataDir, 'master.key')), false);
    // The right key still starts it, and it serves.
    await assertServes(a, { MASTER_KEY: key });
  });

  it('the offline platform command makes the same check: refused with the same line, nothing changed', async () => {
    const [a, b] = [await instance('identity-cli-a-'), await instance('identity-cli-b-')];
    copyFileSync(join(b.dataDir, 'data.mdb'), join(a.dataDir, 'data.mdb'));
    const before = filesOf(a.dataDir);
    await assert.rejects(
      execFileAsync(process.execPath, [CLI, 'create'], { env: { PATH: process.env.PATH ?? '', DATA_DIR: a.dataDir }, timeout: 30_000, killSignal: 'SIGKILL' }),
      (err: { code?: number; stderr?: string }) => {
        assert.equal(err.code, 1);
        const lines = (err.stderr ?? '').split('\n').filter((line) => line !== '');
        assert.equal(lines.length, 1, err.stderr);
        assert.ok(lines[0]!.startsWith(`${join(a.dataDir, 'data.mdb')} is store ${b.storeId}, but ${join(a.dataDir, 'credentials.json')} belongs to store ${a.storeId}`), lines[0]);
        return true;
      },
    );
    assert.deepEqual(filesOf(a.dataDir), before);
  });
});

describe('a store written before identities', { timeout: SUITE_TIMEOUT_MS }, () => {
  function fixtureCopy(): string {
    const dataDir = tempDir('identity-legacy-');
    cpSync(FIXTURE, dataDir, { recursive: true });
    return dataDir;
  }

  it('adopts an identity at its first start (credentials.json gains storeId and the served address), keeps it, then refuses another store', async () => {
    const dataDir = fixtureCopy();
    const legacy = credentialsOf(dataDir);
    assert.equal(legacy.storeId, undefined);
    const first = await startTestService({ dataDir });
    const { storeId } = first.service.services;
    assert.ok(first.reportLines.includes(`store identity: ${join(dataDir, 'data.mdb')} is store ${storeId}`), first.reportLines.join('\n'));
    assert.equal((await first.request('GET', '/customers')).status, 200, "the fixture's tokens still work");
    await first.stop({ keepData: true });
    assert.deepEqual(credentialsOf(dataDir), { ...legacy, storeId, baseUrl: first.service.baseUrl }, 'credentials.json gained storeId and names the address served');
    const second = await startTestService({ dataDir });
    assert.equal(second.service.services.storeId, storeId, 'adopted once, kept after');
    await second.stop({ keepData: true });
    const other = await instance('identity-legacy-other-');
    copyFileSync(join(other.dataDir, 'data.mdb'), join(dataDir, 'data.mdb'));
    const line = await refusedUntouched(dataDir);
    assert.ok(line.includes(`${join(dataDir, 'data.mdb')} is store ${other.storeId}, but ${join(dataDir, 'credentials.json')} belongs to store ${storeId}`), line);
  });

  it('another instance in place of a store from before: refused, nothing changed', async () => {
    // A's store, identified, where the fixture's store and credentials were: a data.mdb without
    // identity beside credentials.json naming one is another store.
    const a = await instance('identity-legacy-a-');
    const dataDir = fixtureCopy();
    copyFileSync(join(a.dataDir, 'credentials.json'), join(dataDir, 'credentials.json'));
    const line = await refusedUntouched(dataDir);
    assert.ok(line.includes(`${join(dataDir, 'data.mdb')} has no store identity, but ${join(dataDir, 'credentials.json')} belongs to store ${a.storeId}`), line);
  });

  it('a credentials.json from before naming a platform this store lacks, or a master key that does not open it: refused before adopting', async () => {
    // Opening a store from before may upgrade its layout (the engine's own databases), so what
    // this asserts is the files the refusal names, unchanged, and that no identity was adopted.
    const a = await instance('identity-legacy-b-');
    const dataDir = fixtureCopy();
    const { storeId: _adoptedByA, ...credentialsFromBefore } = credentialsOf(a.dataDir);
    writeFileSync(join(dataDir, 'credentials.json'), JSON.stringify(credentialsFromBefore, null, 2) + '\n', { mode: 0o600 });
    const credentialsBefore = readFileSync(join(dataDir, 'credentials.json'));
    const refusedCredentials = await spawnRefusedService(dataDir);
    assert.equal(refusedCredentials.code, 1);
    assert.match(refusedCredentials.stderr, new RegExp(`^cannot start: ${escape(`${join(dataDir, 'credentials.json')} is for platform ${credentialsFromBefore.platformId}, which ${join(dataDir, 'data.mdb')} does not hold`)}`, 'm'));
    assert.deepEqual(readFileSync(join(dataDir, 'credentials.json')), credentialsBefore);

    copyFileSync(join(FIXTURE, 'credentials.json'), join(dataDir, 'credentials.json'));
    copyFileSync(join(a.dataDir, 'master.key'), join(dataDir, 'master.key'));
    const keyBefore = readFileSync(join(dataDir, 'master.key'));
    const refusedKey = await spawnRefusedService(dataDir);
    assert.equal(refusedKey.code, 1);
    assert.match(refusedKey.stderr, new RegExp(`^cannot start: ${escape(join(dataDir, 'master.key'))} does not open ${escape(join(dataDir, 'data.mdb'))} \\(the webhook key of Platform:`, 'm'));
    assert.doesNotMatch(refusedKey.stderr, /Unsupported state|\n\s+at /);
    assert.deepEqual(readFileSync(join(dataDir, 'master.key')), keyBefore);
    assert.equal(credentialsOf(dataDir).storeId, undefined);

    // With its own key back, the store adopts its identity now: it had none before.
    copyFileSync(join(FIXTURE, 'master.key'), join(dataDir, 'master.key'));
    const adopted = await startTestService({ dataDir });
    try {
      assert.ok(adopted.reportLines.some((line) => line.startsWith(`store identity: ${join(dataDir, 'data.mdb')} is store `)), adopted.reportLines.join('\n'));
      assert.equal(credentialsOf(dataDir).storeId, adopted.service.services.storeId);
    } finally {
      await adopted.stop({ keepData: true });
    }
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
