// The data directory: one writer at a time (an OS lock, not a pid file), directories whose
// name has a dot, refusing a store that is gone or cut short instead of starting over it,
// and the configuration read with the store (crypto routes, drain limit).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, type Key } from 'lmdb';
import { openServices, startService } from '../src/app.js';
import { configFromEnv } from '../src/config.js';
import { checkLockSupported, DataDirInUseError, lockDataDir, LockUnsupportedError, OWNER_FILE } from '../src/data-dir.js';
import { SNAPSHOT_DIR, StoreDamagedError } from '../src/engine/store.js';
import { StoreIdentityError } from '../src/store-identity.js';
import { basicHeader, startTestService } from './support/service.js';
import { killAll, spawnRefusedService, spawnService } from './support/service-process.js';

const SUITE_TIMEOUT_MS = 120_000;
const quiet = { port: 0, env: {}, report: () => undefined };

function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

interface Credentials {
  sandbox: { tokenId: string; clientSecret: string };
}

async function createCustomer(baseUrl: string, dataDir: string, platformCustomerId: string): Promise<string> {
  const creds = JSON.parse(readFileSync(join(dataDir, 'credentials.json'), 'utf8')) as Credentials;
  const res = await fetch(`${baseUrl}/customers`, {
    method: 'POST',
    headers: { authorization: basicHeader(creds.sandbox.tokenId, creds.sandbox.clientSecret), 'content-type': 'application/json' },
    body: JSON.stringify({ customerType: 'INDIVIDUAL', platformCustomerId }),
  });
  assert.equal(res.status, 201);
  return ((await res.json()) as { id: string }).id;
}

async function customerStatus(baseUrl: string, dataDir: string, id: string): Promise<number> {
  const creds = JSON.parse(readFileSync(join(dataDir, 'credentials.json'), 'utf8')) as Credentials;
  const res = await fetch(`${baseUrl}/customers/${id}`, {
    headers: { authorization: basicHeader(creds.sandbox.tokenId, creds.sandbox.clientSecret) },
  });
  await res.arrayBuffer();
  return res.status;
}

function isJson(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

/** A data directory holding a store with a platform and a few customers, closed. */
async function populatedStore(prefix: string): Promise<string> {
  const svc = await startTestService({ dataDir: tempDir(prefix) });
  for (let i = 0; i < 20; i++) await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL' } });
  await svc.stop({ keepData: true });
  return svc.dataDir;
}

describe('one writer per data directory', { timeout: SUITE_TIMEOUT_MS }, () => {
  after(killAll);

  it('refuses a second service on the same directory in the same process, naming it', async () => {
    const svc = await startTestService();
    try {
      await assert.rejects(startService({ ...quiet, dataDir: svc.dataDir }), (err: unknown) => {
        assert.ok(err instanceof DataDirInUseError);
        assert.match(err.message, /in use by another process/);
        assert.ok(err.message.includes(svc.dataDir));
        return true;
      });
      // The same directory reached through a symbolic link is the same directory.
      const link = join(tempDir('lock-link-'), 'db');
      symlinkSync(svc.dataDir, link);
      try {
        await assert.rejects(startService({ ...quiet, dataDir: link }), DataDirInUseError);
      } finally {
        rmSync(join(link, '..'), { recursive: true, force: true });
      }
      assert.equal((await svc.request('GET', '/customers')).status, 200, 'the first service still serves');
    } finally {
      await svc.stop();
    }
  });

  it('refuses a second service process while the first runs, and starts right after the first is SIGKILLed', async () => {
    const dataDir = tempDir('lock-');
    try {
      const first = await spawnService(dataDir);
      const id = await createCustomer(first.baseUrl, dataDir, 'before-kill');
      const refused = await spawnRefusedService(dataDir);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /in use by another process/);
      assert.equal(await customerStatus(first.baseUrl, dataDir, id), 200, 'the first service still serves');
      first.proc.kill('SIGKILL');
      await first.exited;
      // service.json of the killed process is still there; the lock went with the process.
      assert.ok(existsSync(join(dataDir, OWNER_FILE)));
      const second = await spawnService(dataDir);
      assert.equal(await customerStatus(second.baseUrl, dataDir, id), 200);
      second.proc.kill('SIGTERM');
      assert.equal(await second.exited, 0);
    } finally {
      await killAll();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('starts over a stale service.json whose pid now belongs to a live, unrelated process', async () => {
    const dataDir = await populatedStore('stale-owner-');
    try {
      writeFileSync(join(dataDir, OWNER_FILE), JSON.stringify({ pid: process.ppid, origin: 'http://127.0.0.1:9' }) + '\n');
      const service = await startService({ ...quiet, dataDir });
      try {
        const owner = JSON.parse(readFileSync(join(dataDir, OWNER_FILE), 'utf8')) as { pid: number; origin: string };
        assert.equal(owner.pid, process.pid, 'service.json now names the running service');
        assert.equal(owner.origin, `http://127.0.0.1:${service.http.port}`);
      } finally {
        await service.close();
      }
      assert.equal(existsSync(join(dataDir, OWNER_FILE)), false, 'a clean stop removes service.json');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a system without abstract Unix sockets is refused before anything is created, naming Linux', async () => {
    assert.doesNotThrow(() => checkLockSupported('linux'));
    for (const platform of ['darwin', 'win32'] as const) {
      assert.throws(() => checkLockSupported(platform), (err: unknown) => err instanceof LockUnsupportedError && err.message.includes(`needs Linux`) && err.message.includes(platform));
    }
    const real = Object.getOwnPropertyDescriptor(process, 'platform')!;
    const dataDir = join(mkdtempSync(join(tmpdir(), 'not-linux-')), 'db');
    Object.defineProperty(process, 'platform', { value: 'darwin' });
    try {
      await assert.rejects(startService({ ...quiet, dataDir }), LockUnsupportedError);
    } finally {
      Object.defineProperty(process, 'platform', real);
    }
    assert.equal(existsSync(dataDir), false, 'the data directory was not created');
  });

  it('frees the directory on close, so the same process can open it again', async () => {
    const dataDir = await populatedStore('reopen-');
    try {
      const again = await startService({ ...quiet, dataDir });
      await again.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('a data directory with a dot in its name', { timeout: SUITE_TIMEOUT_MS }, () => {
  it('starts, serves and restarts with its data (x.db)', async () => {
    const parent = tempDir('dotted-');
    const dataDir = join(parent, 'x.db');
    try {
      const first = await startTestService({ dataDir });
      const created = await first.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL' } });
      assert.equal(created.status, 201);
      await first.stop({ keepData: true });
      assert.ok(statSync(join(dataDir, 'data.mdb')).isFile(), 'the store is inside the directory');
      const second = await startTestService({ dataDir });
      try {
        assert.equal((await second.request('GET', `/customers/${created.body.id}`)).status, 200);
      } finally {
        await second.stop({ keepData: true });
      }
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});

describe('a store that is gone or damaged is refused, not replaced', { timeout: SUITE_TIMEOUT_MS }, () => {
  after(killAll);

  it('zero-byte data.mdb beside credentials.json: refused, naming the file, credentials unchanged', async () => {
    const dataDir = await populatedStore('zero-');
    try {
      const credentialsBefore = readFileSync(join(dataDir, 'credentials.json'));
      truncateSync(join(dataDir, 'data.mdb'), 0);
      const refused = await spawnRefusedService(dataDir);
      assert.notEqual(refused.code, 0);
      assert.ok(refused.stderr.includes(join(dataDir, 'data.mdb')), refused.stderr);
      assert.match(refused.stderr, /is empty \(0 bytes\)/);
      assert.deepEqual(readFileSync(join(dataDir, 'credentials.json')), credentialsBefore);
      assert.equal(statSync(join(dataDir, 'data.mdb')).size, 0, 'the store was not touched');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('data.mdb truncated to half: refused with a message, not a SIGBUS', async () => {
    const dataDir = await populatedStore('truncated-');
    try {
      const path = join(dataDir, 'data.mdb');
      const size = statSync(path).size;
      truncateSync(path, Math.floor(size / 2));
      const refused = await spawnRefusedService(dataDir);
      assert.equal(refused.code, 1, `exit code ${refused.code}: ${refused.stderr}`);
      assert.ok(refused.stderr.includes(path), refused.stderr);
      assert.match(refused.stderr, /is truncated/);
      assert.equal(statSync(path).size, Math.floor(size / 2), 'the store was not touched');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a snapshot chunk with a flipped byte: refused with one line naming the chunk, no stack', async () => {
    const svc = await startTestService({ dataDir: tempDir('damaged-chunk-') });
    const dataDir = svc.dataDir;
    try {
      for (let i = 0; i < 5; i++) await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL' } });
      await svc.service.services.engine.snapshot();
      await svc.stop({ keepData: true });
      const root = open({ path: join(dataDir, SNAPSHOT_DIR) });
      const chunks = root.openDB<Buffer, Key>({ name: 'snapshots', encoding: 'binary' });
      // The first key is a lazy chunk's (negative chunk numbers, snapshot-lazy.ts), whose customers a
      // restore decodes only when asked for one: it must be refused at start all the same.
      const key = [...chunks.getKeys()].find((candidate) => Array.isArray(candidate));
      assert.ok(key !== undefined, 'the store holds a snapshot chunk');
      const stored = Buffer.from(chunks.get(key)!);
      stored[stored.length - 1] ^= 0x01;
      chunks.putSync(key, stored);
      await root.close();
      const refused = await spawnRefusedService(dataDir);
      assert.equal(refused.code, 1, refused.stderr);
      // The service listens before it recovers, so its log (JSON lines) has begun: beside it, one plain line.
      const lines = refused.stderr.split('\n').filter((line) => line !== '' && !isJson(line));
      assert.equal(lines.length, 1, refused.stderr);
      assert.match(lines[0]!, /^cannot start: snapshot at \d+ \(generation \d+\), lazy chunk \d+ of generation \d+: checksum mismatch; the store is damaged, refusing to start$/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('data.mdb that is not an LMDB file: refused, naming it', async () => {
    const dataDir = await populatedStore('garbage-');
    try {
      const path = join(dataDir, 'data.mdb');
      writeFileSync(path, Buffer.alloc(8192, 0x5a));
      await assert.rejects(startService({ ...quiet, dataDir }), (err: Error) => {
        assert.ok(err instanceof StoreDamagedError);
        assert.equal(err.message.startsWith(`${path} is not an LMDB data file`), true, err.message);
        return true;
      });
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('missing data.mdb beside master.key: refused', async () => {
    const dataDir = tempDir('missing-');
    try {
      writeFileSync(join(dataDir, 'master.key'), 'ab'.repeat(32) + '\n', { mode: 0o600 });
      const refused = await spawnRefusedService(dataDir);
      assert.equal(refused.code, 1);
      assert.ok(refused.stderr.includes(join(dataDir, 'data.mdb')), refused.stderr);
      assert.match(refused.stderr, /is missing/);
      assert.equal(existsSync(join(dataDir, 'data.mdb')), false);
      assert.equal(existsSync(join(dataDir, 'credentials.json')), false);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('data.mdb replaced by a fresh store beside credentials.json: refused, credentials unchanged', async () => {
    const dataDir = await populatedStore('replaced-');
    const fresh = tempDir('replacement-');
    try {
      await (await openServices({ ...quiet, dataDir: fresh })).close();
      for (const file of ['data.mdb', 'lock.mdb']) copyFileSync(join(fresh, file), join(dataDir, file));
      const credentialsBefore = readFileSync(join(dataDir, 'credentials.json'));
      // The fresh store has its own identity, which credentials.json does not name.
      await assert.rejects(startService({ ...quiet, dataDir }), (err: Error) => {
        assert.ok(err instanceof StoreIdentityError);
        assert.ok(err.message.includes(join(dataDir, 'data.mdb')));
        assert.ok(err.message.includes(`${join(dataDir, 'credentials.json')} belongs to store`), err.message);
        return true;
      });
      assert.deepEqual(readFileSync(join(dataDir, 'credentials.json')), credentialsBefore);
      // Refused cleanly: the directory's lock was released.
      await (await lockDataDir(dataDir)).release();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(fresh, { recursive: true, force: true });
    }
  });

  it("another store's snapshots/ copied in: refused, naming it; the store's own opens again once they are back", async () => {
    const dataDir = await populatedStore('foreign-snapshots-');
    const other = tempDir('other-store-');
    const own = tempDir('own-snapshots-');
    try {
      await (await openServices({ ...quiet, dataDir: other })).close();
      for (const file of ['data.mdb', 'lock.mdb']) copyFileSync(join(dataDir, SNAPSHOT_DIR, file), join(own, file));
      for (const file of ['data.mdb', 'lock.mdb']) copyFileSync(join(other, SNAPSHOT_DIR, file), join(dataDir, SNAPSHOT_DIR, file));
      // A service that did start is closed again, so the assertion below reports it rather than hanging the suite.
      const refused = await startService({ ...quiet, dataDir }).then(
        (started) => started.close().then(() => undefined),
        (err: unknown) => err,
      );
      assert.ok(refused instanceof StoreDamagedError, `expected a refusal, got ${String(refused)}`);
      assert.ok(refused.message.includes(join(dataDir, SNAPSHOT_DIR)), refused.message);
      for (const file of ['data.mdb', 'lock.mdb']) copyFileSync(join(own, file), join(dataDir, SNAPSHOT_DIR, file));
      const again = await startTestService({ dataDir });
      assert.equal((await again.request('GET', '/customers')).body.totalCount, 20);
      await again.stop();
    } finally {
      for (const dir of [dataDir, other, own]) rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an existing store keeps opening, and a fresh directory still starts a new one', async () => {
    const dataDir = await populatedStore('healthy-');
    const fresh = join(tempDir('fresh-'), 'db');
    try {
      const again = await startTestService({ dataDir });
      assert.equal((await again.request('GET', '/customers')).body.totalCount, 20);
      await again.stop();
      mkdirSync(fresh, { mode: 0o700 });
      const created = await startTestService({ dataDir: fresh });
      assert.equal((await created.request('GET', '/customers')).body.totalCount, 0);
      await created.stop();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(join(fresh, '..'), { recursive: true, force: true });
    }
  });
});

describe('the data directory is private to the service', { timeout: SUITE_TIMEOUT_MS }, () => {
  after(killAll);

  const modeOf = (path: string): string => (statSync(path).mode & 0o777).toString(8).padStart(4, '0');

  it('a fresh data directory is created 0700, and the store and every file in it 0600 (the snapshots\' environment a 0700 directory of 0600 files)', async () => {
    const parent = tempDir('private-');
    const dataDir = join(parent, 'db');
    try {
      const child = await spawnService(dataDir);
      child.proc.kill('SIGTERM');
      assert.equal(await child.exited, 0, child.stderr.join(''));
      assert.equal(modeOf(dataDir), '0700');
      const files = readdirSync(dataDir);
      for (const name of ['data.mdb', 'lock.mdb', 'credentials.json', 'master.key', SNAPSHOT_DIR]) assert.ok(files.includes(name), `${name} in ${files.join(', ')}`);
      const snapshotDir = join(dataDir, SNAPSHOT_DIR);
      assert.equal(modeOf(snapshotDir), '0700');
      assert.deepEqual(readdirSync(snapshotDir).sort(), ['data.mdb', 'lock.mdb']);
      for (const name of readdirSync(snapshotDir)) assert.equal(modeOf(join(snapshotDir, name)), '0600', `${SNAPSHOT_DIR}/${name}`);
      for (const name of files.filter((file) => file !== SNAPSHOT_DIR)) assert.equal(modeOf(join(dataDir, name)), '0600', name);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it('a data directory group or others may read is refused with one line saying how to fix it, and nothing is written', async () => {
    const dataDir = join(tempDir('exposed-'), 'db');
    try {
      mkdirSync(dataDir);
      chmodSync(dataDir, 0o755);
      const refused = await spawnRefusedService(dataDir);
      assert.equal(refused.code, 2, refused.stderr);
      assert.deepEqual(refused.stderr.split('\n').filter((line) => line !== ''), [
        `cannot start: ${dataDir} is open to group or others (mode 0755), but it holds the store, its keys and credentials: run chmod -R go-rwx ${dataDir}`,
      ]);
      assert.deepEqual(readdirSync(dataDir), [], 'something was written');
      // What the line says to do is enough.
      chmodSync(dataDir, 0o700);
      const child = await spawnService(dataDir);
      child.proc.kill('SIGTERM');
      assert.equal(await child.exited, 0, child.stderr.join(''));
    } finally {
      rmSync(join(dataDir, '..'), { recursive: true, force: true });
    }
  });
});

describe('configuration read at start', { timeout: SUITE_TIMEOUT_MS }, () => {
  it('CRYPTO_ROUTES sends an operation to the worker pool', async () => {
    const dataDir = tempDir('crypto-routes-');
    const service = await startService({ ...quiet, dataDir, env: { CRYPTO_ROUTES: 'verifyStamp=pool, issueSessionKey=inline' } });
    try {
      const { crypto } = service.services;
      assert.equal(crypto.routes.verifyStamp, 'pool');
      assert.equal(crypto.routes.issueSessionKey, 'inline');
      const verifying = crypto.verifyStamp({ header: undefined, payload: 'payload' });
      assert.equal(crypto.stats().inFlight, 1, 'the stamp is being verified on a worker');
      const result = await verifying;
      assert.equal(result.ok, false, 'no stamp: not verified');
      assert.equal(crypto.stats().completed, 1);
    } finally {
      await service.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('without CRYPTO_ROUTES every operation runs inline (the measured default)', async () => {
    const service = await startTestService();
    try {
      const { crypto } = service.service.services;
      assert.deepEqual(Object.values(crypto.routes), ['inline', 'inline', 'inline', 'inline']);
      const verifying = crypto.verifyStamp({ header: undefined, payload: 'payload' });
      assert.equal(crypto.stats().inFlight, 0);
      await verifying;
    } finally {
      await service.stop();
    }
  });

  it('a bad CRYPTO_ROUTES refuses to start, naming the variable, and creates nothing', async () => {
    const parent = tempDir('crypto-bad-');
    const dataDir = join(parent, 'db');
    try {
      for (const value of ['verifyStamp=gpu', 'signStuff=pool', 'verifyStamp', 'verifyStamp=pool=inline']) {
        await assert.rejects(startService({ ...quiet, dataDir, env: { CRYPTO_ROUTES: value } }), (err: Error) => {
          assert.match(err.message, /^CRYPTO_ROUTES: /);
          assert.match(err.message, /verifyStamp, issueSessionKey/);
          return true;
        });
      }
      assert.equal(existsSync(dataDir), false);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it('DRAIN_TIMEOUT_SECONDS sets the drain limit, 10 s by default; a bad value names the variable', () => {
    assert.equal(configFromEnv({}).drainTimeoutMs, 10_000);
    assert.equal(configFromEnv({ DRAIN_TIMEOUT_SECONDS: '3' }).drainTimeoutMs, 3_000);
    assert.throws(() => configFromEnv({ DRAIN_TIMEOUT_SECONDS: 'soon' }), /DRAIN_TIMEOUT_SECONDS=soon is not accepted: it must be an integer of at least 0$/);
  });
});
