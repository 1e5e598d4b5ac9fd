// Cluster mode end to end: three JetStream servers clustered on loopback and three service
// nodes (child processes, NATS_URL set), under a load of payments on two platforms sent to
// all three nodes. Clients do what the API asks of them: every POST carries an
// Idempotency-Key, and a 503 (or a node that is gone) is retried with the same key. Then:
// the node owning a shard is killed with SIGKILL and another serves it within two lease
// periods, a document uploaded before it read back and freed by the new owner; a nats-server is killed and writes go on; an owner is stopped (SIGSTOP) until its
// lease has moved and continued, and it appends nothing more (the stream's writers never go
// back to an older term); everything is restarted and reads back the same. Throughout, every
// answer is the owner's or a 503 with Retry-After, every acknowledged payment is there
// exactly once, and every environment's balances add up to what was funded.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import { randomBytes } from 'node:crypto';
import { formBody, PDF } from './support/form-body.js';
import { BLOB_BUCKET } from '../src/cluster/blob-shelf.js';
import { basicHeader } from './support/service.js';
import { killAll, spawnService, type ServiceChild } from './support/service-process.js';
import { natsClusterForSuite } from './support/nats-cluster.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { shardOf } from '../src/cluster/placement.js';
import { DEFAULT_CLUSTER_SHARDS } from '../src/config.js';

const LEASE_SECONDS = 3;
const LEASE_MS = LEASE_SECONDS * 1000;
const CUSTOMERS = 4;
const FUNDS = 1_000_000;
/** How long one logical request may keep being retried before the test fails. */
const REQUEST_DEADLINE_MS = 60_000;

const nats = natsClusterForSuite(3);
const run = promisify(execFile);
const PLATFORM_CLI = fileURLToPath(new URL('../scripts/platform.js', import.meta.url));

interface Node {
  index: number;
  dataDir: string;
  child: ServiceChild | undefined;
  /** `http://127.0.0.1:PORT` while it runs. */
  origin: string | undefined;
}

const nodes: Node[] = [0, 1, 2].map((index) => ({ index, dataDir: mkdtempSync(join(tmpdir(), `cluster-node${index}-`)), child: undefined, origin: undefined }));

/** What the nodes logged (LOG_LEVEL=warn), for CLUSTER_TEST_LOGS. */
const nodeLogs: string[] = [];

async function startNode(node: Node): Promise<void> {
  const child = await spawnService(node.dataDir, {
    NATS_URL: nats.cluster.urls.join(','),
    NODE_ID: `node${node.index}`,
    CLUSTER_LEASE_SECONDS: String(LEASE_SECONDS),
    // Snapshots often: a takeover starts from its own snapshot when it has one, and replays the stream after it.
    SNAPSHOT_EVERY_ENTRIES: '100',
    LOG_LEVEL: process.env.CLUSTER_TEST_LOGS === undefined ? 'warn' : 'info',
  });
  node.child = child;
  child.proc.stderr!.on('data', (chunk: string) => nodeLogs.push(`[node${node.index}] ${chunk}`));
  node.origin = new URL(child.baseUrl).origin;
}

/** The node's credentials.json, if it wrote one. */
function credentialsFileOf(node: Node): string | undefined {
  try {
    return readFileSync(join(node.dataDir, 'credentials.json'), 'utf8');
  } catch {
    return undefined;
  }
}

async function killNode(node: Node, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  const child = node.child!;
  child.proc.kill(signal);
  await child.exited;
  node.child = undefined;
  node.origin = undefined;
}

interface Platform {
  name: string;
  envId: string;
  shard: string;
  auth: string;
  /** USD account ids of its customers. */
  accounts: string[];
}

/** Every status the clients saw, with whether a 503 said when to come back. */
const seen = { statuses: new Map<number, number>(), unavailableWithoutRetryAfter: 0 };

let nodeTurn = 0;
/** A running node, in turn (the load goes to all of them). */
function anyOrigin(): string {
  const running = nodes.filter((n) => n.origin !== undefined && !stopped.has(n.index));
  assert.ok(running.length > 0, 'a node runs');
  return running[nodeTurn++ % running.length]!.origin!;
}
const stopped = new Set<number>();

/**
 * One logical request: sent to the nodes in turn, again (same Idempotency-Key) after a 503 or
 * a connection that failed, until it gets another answer.
 */
async function call(platform: Platform, method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; body: any }> {
  const deadline = Date.now() + REQUEST_DEADLINE_MS;
  // A multipart form goes as fetch made its bytes (formBody); anything else as JSON.
  const form = body instanceof Object && 'raw' in body && 'contentType' in body ? (body as Awaited<ReturnType<typeof formBody>>) : undefined;
  for (;;) {
    assert.ok(Date.now() < deadline, `${method} ${path} was not answered within ${REQUEST_DEADLINE_MS} ms`);
    const headers: Record<string, string> = { authorization: platform.auth };
    if (body !== undefined) headers['content-type'] = form?.contentType ?? 'application/json';
    if (key !== undefined) headers['idempotency-key'] = key;
    let res: Response;
    try {
      res = await fetch(`${anyOrigin()}/2025-10-13${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body: form === undefined ? JSON.stringify(body) : new Blob([new Uint8Array(form.raw)]) }),
        signal: AbortSignal.timeout(4 * LEASE_MS),
      });
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
      continue;
    }
    const text = await res.text();
    seen.statuses.set(res.status, (seen.statuses.get(res.status) ?? 0) + 1);
    if (res.status === 503) {
      if (res.headers.get('retry-after') === null) seen.unavailableWithoutRetryAfter++;
      await new Promise((resolve) => setTimeout(resolve, 100));
      continue;
    }
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
  }
}

async function ok(platform: Platform, method: string, path: string, body?: unknown, key?: string): Promise<any> {
  const res = await call(platform, method, path, body, key);
  assert.ok(res.status >= 200 && res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

interface Payment {
  from: number;
  to: number;
  amount: number;
  transactionId: string;
}

const platforms: Platform[] = [];
const payments = new Map<string, Payment[]>();
let loadRunning = false;
/** Each start of the load is a new round, so its idempotency keys are new too. */
let loadRound = 0;
let loadDone: Promise<void> = Promise.resolve();

/** Writers per platform paying each other in a ring, each payment a quote and its execution, keys and all. */
function startLoad(): void {
  loadRunning = true;
  const round = loadRound++;
  const writers = platforms.flatMap((platform) =>
    [0, 1].map(async (writer) => {
      for (let n = 0; loadRunning; n++) {
        const from = (writer * 2 + n) % CUSTOMERS;
        const to = (from + 1) % CUSTOMERS;
        const amount = 1 + ((n * 7 + writer) % 50);
        const key = `${platform.name}-r${round}-w${writer}-${n}`;
        const quote = await ok(platform, 'POST', '/quotes', {
          source: { sourceType: 'ACCOUNT', accountId: platform.accounts[from] },
          destination: { destinationType: 'ACCOUNT', accountId: platform.accounts[to] },
          lockedCurrencySide: 'SENDING',
          lockedCurrencyAmount: amount,
        }, `${key}-quote`);
        const executed = await ok(platform, 'POST', `/quotes/${quote.id}/execute`, undefined, `${key}-execute`);
        assert.equal(executed.status, 'COMPLETED');
        payments.get(platform.name)!.push({ from, to, amount, transactionId: executed.transactionId });
      }
    }),
  );
  loadDone = Promise.all(writers).then(() => undefined);
}

async function stopLoad(): Promise<void> {
  loadRunning = false;
  await loadDone;
}

const acknowledged = (): number => [...payments.values()].reduce((n, list) => n + list.length, 0);

async function untilMorePayments(than: number, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (acknowledged() <= than + 5) {
    assert.ok(Date.now() < deadline, `${what}: payments stopped being acknowledged (${acknowledged()})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function healthOf(node: Node): Promise<{ nodeId: string; owned: string[]; nodes: string[] }> {
  const res = await fetch(`${node.origin}/healthz`, { headers: { authorization: `Bearer ${readFileSync(join(node.dataDir, 'operator.key'), 'utf8').trim()}` } });
  return ((await res.json()) as { cluster: { nodeId: string; owned: string[]; nodes: string[] } }).cluster;
}

/** wal_entries_total on `node`'s GET /metrics. */
async function walEntriesOf(node: Node): Promise<number> {
  const text = await (await fetch(`${node.origin}/metrics`)).text();
  const line = /^wal_entries_total (\d+)$/m.exec(text);
  assert.ok(line, `node ${node.index} reports wal_entries_total`);
  return Number(line[1]);
}

/** The running node serving `shard`, waiting until one does. */
async function ownerOf(shard: string, except?: Node): Promise<Node> {
  const deadline = Date.now() + 8 * LEASE_MS;
  for (;;) {
    for (const node of nodes) {
      if (node.origin === undefined || node === except || stopped.has(node.index)) continue;
      if ((await healthOf(node)).owned.includes(shard)) return node;
    }
    assert.ok(Date.now() < deadline, `no node serves ${shard}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** What an integrator can read of a platform: every account's balance and every customer's transactions. */
async function stateOf(platform: Platform): Promise<{ balances: number[]; transactions: string[][] }> {
  const balances: number[] = [];
  const transactions: string[][] = [];
  for (const account of platform.accounts) {
    balances.push((await ok(platform, 'GET', `/internal-accounts/${account}`)).balance.amount);
  }
  for (let c = 0; c < CUSTOMERS; c++) {
    const ids: string[] = [];
    let cursor: string | undefined;
    const customerId = (await ok(platform, 'GET', `/internal-accounts/${platform.accounts[c]}`)).customerId as string;
    do {
      const page = await ok(platform, 'GET', `/transactions?customerId=${customerId}&type=OUTGOING&limit=100${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
      ids.push(...page.data.map((tx: { id: string }) => tx.id));
      cursor = page.hasMore ? page.nextCursor : undefined;
    } while (cursor !== undefined);
    transactions.push(ids.sort());
  }
  return { balances, transactions };
}

/**
 * Every acknowledged payment is there once and nothing else moved: balances and outgoing
 * transactions follow from them. Read with the load paused (a payment in flight would be in
 * the balances and not yet in the list); the load goes on after it if it was running.
 */
async function assertPaymentsHold(): Promise<void> {
  const resume = loadRunning;
  await stopLoad();
  for (const platform of platforms) {
    const state = await stateOf(platform);
    const list = payments.get(platform.name)!;
    const expected = Array.from({ length: CUSTOMERS }, () => FUNDS);
    for (const p of list) {
      expected[p.from]! -= p.amount;
      expected[p.to]! += p.amount;
    }
    for (let c = 0; c < CUSTOMERS; c++) {
      const sent = list.filter((p) => p.from === c).map((p) => p.transactionId).sort();
      const missing = sent.filter((id) => !state.transactions[c]!.includes(id));
      const extra = state.transactions[c]!.filter((id) => !sent.includes(id));
      assert.deepEqual({ missing, extra }, { missing: [], extra: [] }, `${platform.name}: customer ${c}'s outgoing transactions are its ${sent.length} acknowledged payments`);
      assert.deepEqual(state.transactions[c], sent, `${platform.name}: customer ${c}'s acknowledged payments are there once each`);
    }
    assert.deepEqual(state.balances, expected, `${platform.name}: balances follow from the ${list.length} acknowledged payments`);
    assert.equal(state.balances.reduce((a, b) => a + b, 0), CUSTOMERS * FUNDS, `${platform.name}: the money adds up`);
  }
  if (resume) startLoad();
}

/** The bytes of every document of `shard` in the cluster's blob bucket, where any owner of the shard reads them. */
async function documentBytesOf(shard: string): Promise<Buffer[]> {
  const bucket = await new Objm(nats.nc).open(BLOB_BUCKET);
  const found: Buffer[] = [];
  for (const info of await bucket.list()) {
    if (!info.name.startsWith(`${shard}.document-bytes.`)) continue;
    const bytes = await bucket.getBlob(info.name);
    if (bytes !== null) found.push(Buffer.from(bytes));
  }
  return found;
}

/** The writers of a shard's stream, in order: each `node:term` of its messages' ids. */
async function writersOf(shard: string): Promise<string[]> {
  const jsm = await jetstreamManager(nats.nc);
  const info = await jsm.streams.info(shard);
  const writers: string[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const message = await jsm.streams.getMessage(shard, { seq });
    // Trimmed under a snapshot while this reads: its writer is no longer the stream's to tell.
    if (message === null) continue;
    const id = message.header.get('Nats-Msg-Id') ?? '';
    const writer = id.slice(0, id.lastIndexOf(':'));
    if (writers[writers.length - 1] !== writer) writers.push(writer);
  }
  return writers;
}

describe('cluster mode: three nodes on a three-server JetStream cluster', { timeout: 600_000 }, () => {
  before(async () => {
    for (const node of nodes) await startNode(node);
  });
  after(async () => {
    loadRunning = false;
    if (process.env.CLUSTER_TEST_LOGS !== undefined) {
      const { writeFileSync } = await import('node:fs');
      writeFileSync(process.env.CLUSTER_TEST_LOGS, nodeLogs.join(''));
    }
    for (const index of stopped) nodes[index]!.child?.proc.kill('SIGCONT');
    await killAll();
    for (const node of nodes) rmSync(node.dataDir, { recursive: true, force: true });
  });

  it('serves two platforms from any node, under load', async () => {
    const first = nodes.find((node) => credentialsFileOf(node) !== undefined);
    assert.ok(first, 'one node made the default platform and wrote credentials.json');
    const made = [JSON.parse(readFileSync(join(first.dataDir, 'credentials.json'), 'utf8'))];
    // The second with the platform command, against another node (its operator endpoint).
    const other = nodes.find((node) => node !== first)!;
    const { stdout } = await run(process.execPath, [PLATFORM_CLI, 'create', '--data', other.dataDir], {
      env: { PATH: process.env.PATH ?? '', NATS_URL: nats.cluster.urls.join(',') },
    });
    made.push(JSON.parse(stdout));
    for (const [n, credentials] of made.entries()) {
      const envId = `${credentials.platformId}#sandbox`;
      const platform: Platform = { name: `p${n}`, envId, shard: shardOf(envId, DEFAULT_CLUSTER_SHARDS), auth: basicHeader(credentials.sandbox.tokenId, credentials.sandbox.clientSecret), accounts: [] };
      for (let c = 0; c < CUSTOMERS; c++) {
        const customer = await ok(platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `c${c}` }, `${platform.name}-customer-${c}`);
        const usd = (await ok(platform, 'GET', `/customers/internal-accounts?customerId=${customer.id}&currency=USD`)).data[0].id as string;
        await ok(platform, 'POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: FUNDS }, `${platform.name}-fund-${c}`);
        platform.accounts.push(usd);
      }
      platforms.push(platform);
      payments.set(platform.name, []);
    }
    startLoad();
    await untilMorePayments(0, 'under load');
    // Every node knows every node, and the four environments are spread over them.
    for (const node of nodes) assert.equal((await healthOf(node)).nodes.length, 3);
    // Unauthenticated, /healthz names no shard (a shard is a tenant's environment).
    for (const node of nodes) assert.deepEqual(await (await fetch(`${node.origin}/healthz`)).json(), { status: 'ok' });
    // A node's data directory and its shards' local stores are private to it.
    const modeOf = (path: string): number => statSync(path).mode & 0o777;
    for (const node of nodes) {
      assert.equal(modeOf(node.dataDir), 0o700);
      for (const shard of readdirSync(join(node.dataDir, 'shards'))) {
        const shardDir = join(node.dataDir, 'shards', shard);
        assert.equal(modeOf(shardDir), 0o700, shardDir);
        // A shard the node is opening right now has its directory before its store's files.
        if (!existsSync(join(shardDir, 'data.mdb'))) continue;
        for (const file of ['data.mdb', 'lock.mdb']) assert.equal(modeOf(join(shardDir, file)), 0o600, join(shardDir, file));
      }
    }
    // A node's metrics count the log commits of the shards it serves.
    for (const platform of platforms) {
      const owner = await ownerOf(platform.shard);
      const before = await walEntriesOf(owner);
      await ok(platform, 'POST', '/customers', { customerType: 'INDIVIDUAL' }, `${platform.name}-metrics`);
      assert.ok((await walEntriesOf(owner)) > before, `node ${owner.index}'s wal_entries_total grows as its shard ${platform.shard} commits`);
    }
  });

  it('kill -9 of the node owning a shard: another node serves it within two lease periods, nothing acknowledged is lost', async () => {
    const platform = platforms[0]!;
    const shard = platform.shard;
    const owner = await ownerOf(shard);
    // A document uploaded through any node: its bytes must outlive the owner that stored them.
    const holder = (await ok(platform, 'GET', `/internal-accounts/${platform.accounts[0]}`)).customerId as string;
    const fileBytes = Buffer.concat([PDF, randomBytes(200 * 1024)]);
    const form = await formBody({ documentHolder: holder, documentType: 'PASSPORT', country: 'US' }, { bytes: fileBytes, name: 'passport.pdf', type: 'application/pdf' });
    const uploaded = await ok(platform, 'POST', '/documents', form, `${platform.name}-document`);
    const before = acknowledged();
    await killNode(owner);
    const killedAt = Date.now();
    const next = await ownerOf(shard, owner);
    const took = Date.now() - killedAt;
    assert.ok(took <= 2 * LEASE_MS, `${shard} was served again after ${took} ms (two lease periods: ${2 * LEASE_MS} ms)`);
    assert.notEqual(next, owner);
    assert.deepEqual(await ok(platform, 'GET', `/documents/${uploaded.id}`), uploaded, 'the document as the new owner reads it');
    assert.deepEqual(await documentBytesOf(shard), [fileBytes], "the shard's document bytes are whole where the new owner reads them");
    await ok(platform, 'DELETE', `/documents/${uploaded.id}`);
    assert.deepEqual(await documentBytesOf(shard), [], 'the new owner freed them');
    await untilMorePayments(before, 'after the owner was killed');
    await startNode(owner);
    await assertPaymentsHold();
  });

  it('kill -9 of a nats-server: writes go on', async () => {
    const before = acknowledged();
    await nats.cluster.kill(1, 'SIGKILL');
    await untilMorePayments(acknowledged(), 'with one nats-server down');
    assert.ok(acknowledged() > before);
    nats.cluster.start(1);
    await untilMorePayments(acknowledged(), 'with the nats-server back');
  });

  it('SIGSTOP of an owner until its lease moves, then SIGCONT: it appends nothing more and stops serving the shard', async () => {
    const shard = platforms[1]!.shard;
    const owner = await ownerOf(shard);
    owner.child!.proc.kill('SIGSTOP');
    stopped.add(owner.index);
    const next = await ownerOf(shard, owner);
    const before = acknowledged();
    await untilMorePayments(before, 'with the old owner stopped');
    owner.child!.proc.kill('SIGCONT');
    stopped.delete(owner.index);
    // Within a turn of its loop it finds its lease gone and drops the shard.
    const deadline = Date.now() + 2 * LEASE_MS;
    while ((await healthOf(owner)).owned.includes(shard)) {
      assert.ok(Date.now() < deadline, `the continued node still serves ${shard}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await untilMorePayments(acknowledged(), 'after the old owner continued');
    // The stream's writers take turns and never come back: the old term wrote nothing after the new one began.
    const writers = await writersOf(shard);
    assert.equal(new Set(writers).size, writers.length, `writers of ${shard} in order: ${writers.join(', ')}`);
    assert.ok((await healthOf(next)).nodeId !== undefined);
    await assertPaymentsHold();
  });

  it('restart everything: the state is the same as before', async () => {
    // Published snapshots let the streams be trimmed (an owner snapshots every 100 entries): the
    // load goes on until each payment shard's stream has been, however slowly this machine pays.
    const jsm = await jetstreamManager(nats.nc);
    const deadline = Date.now() + 60_000;
    for (const platform of platforms) {
      while ((await jsm.streams.info(platform.shard)).state.first_seq <= 1) {
        assert.ok(Date.now() < deadline, `${platform.shard} was not trimmed while ${acknowledged()} payments were acknowledged`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    await stopLoad();
    await assertPaymentsHold();
    const before = await Promise.all(platforms.map((platform) => stateOf(platform)));
    const credentialsBefore = nodes.map(credentialsFileOf);
    for (const node of nodes) await killNode(node, 'SIGTERM');
    for (const index of [0, 1, 2]) await nats.cluster.kill(index, 'SIGTERM');
    for (const index of [0, 1, 2]) nats.cluster.start(index);
    for (const node of nodes) await startNode(node);
    const afterRestart = await Promise.all(platforms.map((platform) => stateOf(platform)));
    assert.deepEqual(afterRestart, before);
    assert.deepEqual(nodes.map(credentialsFileOf), credentialsBefore, 'no node made the default platform again');
    await assertPaymentsHold();
    assert.equal(seen.unavailableWithoutRetryAfter, 0, 'every 503 said when to retry');
    // The trimmed streams stay trimmed: the payment shards' first messages are gone.
    for (const platform of platforms) assert.ok((await jsm.streams.info(platform.shard)).state.first_seq > 1, `${platform.shard} was trimmed`);
    for (const status of seen.statuses.keys()) assert.ok((status >= 200 && status < 300) || status === 503, `a client saw ${status}`);
  });
});
