// Crash recovery: the service runs as a child process under concurrent writes and is
// killed with SIGKILL at a random moment, round after round. After each restart every
// acknowledged write is there, and nothing unacknowledged is half applied: a customer
// exists with all its accounts or not at all, a balance holds every acknowledged funding
// and at most the one that was in flight.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { basicHeader } from './support/service.js';
import { killAll, spawnService, type ServiceChild as Child } from './support/service-process.js';

const WRITERS = 8;
/** Both tests together take under 20 s on 2 cores; a hang fails the suite instead of blocking it. */
const SUITE_TIMEOUT_MS = 180_000;

interface Credentials {
  sandbox: { tokenId: string; clientSecret: string };
}

function client(baseUrl: string, auth: string) {
  return async (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: body === undefined ? { authorization: auth } : { authorization: auth, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
  };
}

interface WriterState {
  accountId: string;
  /** Balance the service must hold, counting acknowledged fundings only. */
  acknowledged: number;
  /** A funding sent but not answered when the service died. */
  inFlight: number;
  customersAcked: string[];
  customersInFlight: string[];
}

async function listAll(call: ReturnType<typeof client>, query: string): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | undefined;
  do {
    const page = await call('GET', `/customers?limit=100&${query}${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
    assert.equal(page.status, 200);
    out.push(...page.body.data);
    cursor = page.body.hasMore ? page.body.nextCursor : undefined;
  } while (cursor !== undefined);
  return out;
}

/** The most a snapshot round waits for its first snapshot before it kills anyway (the assertion after it then says so). */
const SNAPSHOT_WAIT_MS = 15_000;

/**
 * One round: writers create and fund until a SIGKILL 150-600 ms in. With `afterSnapshot`
 * that delay starts once this round's service has reported a completed snapshot, so a
 * loaded machine (fewer entries in the window) still crashes after one, mid-load.
 */
async function runRound(dataDir: string, round: number, writers: WriterState[], env: Record<string, string>, afterSnapshot = false): Promise<Child> {
  const child = await spawnService(dataDir, env);
  const creds = JSON.parse(readFileSync(join(dataDir, 'credentials.json'), 'utf8')) as Credentials;
  const call = client(child.baseUrl, basicHeader(creds.sandbox.tokenId, creds.sandbox.clientSecret));
  let killed = false;
  const loops = writers.map(async (w, index) => {
    for (let i = 0; !killed; i++) {
      const platformCustomerId = `r${round}-w${index}-${i}`;
      w.customersInFlight = [platformCustomerId];
      try {
        const created = await call('POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId });
        assert.equal(created.status, 201);
        w.customersAcked.push(platformCustomerId);
        w.customersInFlight = [];
        const amount = 1 + ((i * 7 + index) % 13);
        w.inFlight = amount;
        const funded = await call('POST', `/sandbox/internal-accounts/${w.accountId}/fund`, { amount });
        assert.equal(funded.status, 200);
        w.acknowledged += amount;
        w.inFlight = 0;
        assert.equal(funded.body.balance.amount >= w.acknowledged, true);
      } catch (err) {
        if (killed) return;
        throw err;
      }
    }
  });
  // Settled from the start, so a writer that fails early is reported here, not as unhandled.
  const outcomes = Promise.allSettled(loops);
  if (afterSnapshot) {
    const deadline = Date.now() + SNAPSHOT_WAIT_MS;
    while (!child.stderr.join('').includes('"event":"snapshot.written"') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await new Promise((resolve) => setTimeout(resolve, 150 + Math.floor(Math.random() * 450)));
  killed = true;
  child.proc.kill('SIGKILL');
  await child.exited;
  for (const outcome of await outcomes) if (outcome.status === 'rejected') throw outcome.reason;
  return child;
}

async function verify(dataDir: string, writers: WriterState[], env: Record<string, string>): Promise<Child> {
  const child = await spawnService(dataDir, env);
  const creds = JSON.parse(readFileSync(join(dataDir, 'credentials.json'), 'utf8')) as Credentials;
  const call = client(child.baseUrl, basicHeader(creds.sandbox.tokenId, creds.sandbox.clientSecret));
  for (const w of writers) {
    const account = await call('GET', `/internal-accounts/${w.accountId}`);
    assert.equal(account.status, 200);
    const balance: number = account.body.balance.amount;
    assert.ok(
      balance === w.acknowledged || balance === w.acknowledged + w.inFlight,
      `balance ${balance} must be the acknowledged ${w.acknowledged} or that plus the in-flight ${w.inFlight}`,
    );
    // What was in flight is now either applied or not; either way it is the new truth.
    w.acknowledged = balance;
    w.inFlight = 0;
    for (const platformCustomerId of w.customersAcked) {
      const found = await listAll(call, `platformCustomerId=${platformCustomerId}`);
      assert.equal(found.length, 1, `acknowledged customer ${platformCustomerId} must exist once`);
    }
    for (const platformCustomerId of w.customersInFlight) {
      const found = await listAll(call, `platformCustomerId=${platformCustomerId}`);
      assert.ok(found.length <= 1, `in-flight customer ${platformCustomerId} exists at most once`);
      if (found.length === 1) w.customersAcked.push(platformCustomerId);
    }
    w.customersInFlight = [];
  }
  // No customer is half made: each has exactly its three accounts.
  const customers = await listAll(call, '');
  for (const c of customers) {
    const accounts = await call('GET', `/customers/internal-accounts?customerId=${c.id}&limit=100`);
    assert.equal(accounts.body.totalCount, 3, `${c.id} has ${accounts.body.totalCount} accounts`);
  }
  const total = writers.reduce((s, w) => s + w.customersAcked.length, 0);
  assert.equal(customers.length, total + WRITERS, 'every customer is an acknowledged one (plus the writers own)');
  return child;
}

async function setUpWriters(dataDir: string): Promise<WriterState[]> {
  const child = await spawnService(dataDir);
  const creds = JSON.parse(readFileSync(join(dataDir, 'credentials.json'), 'utf8')) as Credentials;
  const call = client(child.baseUrl, basicHeader(creds.sandbox.tokenId, creds.sandbox.clientSecret));
  const writers: WriterState[] = [];
  for (let i = 0; i < WRITERS; i++) {
    const customer = await call('POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `writer-${i}` });
    const accounts = await call('GET', `/customers/internal-accounts?customerId=${customer.body.id}&currency=USD`);
    writers.push({ accountId: accounts.body.data[0].id, acknowledged: 0, inFlight: 0, customersAcked: [], customersInFlight: [] });
  }
  child.proc.kill('SIGTERM');
  assert.equal(await child.exited, 0, 'SIGTERM drains and exits 0');
  return writers;
}

async function stop(child: Child): Promise<void> {
  child.proc.kill('SIGTERM');
  assert.equal(await child.exited, 0);
}

describe('crash recovery under SIGKILL', { timeout: SUITE_TIMEOUT_MS }, () => {
  it('keeps every acknowledged write and half-applies nothing, over several rounds', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'crash-'));
    try {
      const writers = await setUpWriters(dataDir);
      for (let round = 0; round < 4; round++) {
        await runRound(dataDir, round, writers, {});
        await stop(await verify(dataDir, writers, {}));
      }
      assert.ok(writers.some((w) => w.acknowledged > 0), 'the rounds funded something');
    } finally {
      // An assertion that failed mid-round leaves a service running: kill it before the next test.
      await killAll();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('recovers the same way with snapshots taken during the load', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'crash-snap-'));
    const env = { SNAPSHOT_EVERY_ENTRIES: '50' };
    try {
      const writers = await setUpWriters(dataDir);
      let snapshots = 0;
      for (let round = 0; round < 3; round++) {
        const crashed = await runRound(dataDir, round, writers, env, true);
        snapshots += crashed.stderr.join('').split('"event":"snapshot.written"').length - 1;
        const verified = await verify(dataDir, writers, env);
        assert.match(verified.stderr.join(''), /"event":"recovery\.snapshot","seq":[1-9]/, 'recovery started from a snapshot');
        await stop(verified);
      }
      assert.ok(snapshots > 0, 'snapshots were written while writes were in flight');
    } finally {
      // An assertion that failed mid-round leaves a service running: kill it before the next test.
      await killAll();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
